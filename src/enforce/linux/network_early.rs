//! The loopback-only network namespace of `deny` and `hosts`, made early:
//! by the jail's original process while PID 1 builds the view (they run on
//! two cores), instead of by magus proper once the view is built, where
//! `unshare(CLONE_NEWNET)` (about 0.35 ms) sat on the path to the spell.
//! The original hands the namespace to magus proper over the jail's
//! socket pair ([`Meanwhile`]); magus proper joins it with `setns` before
//! anything else touches the network. It decides nothing: whatever fails
//! here is left to magus proper, which then makes the namespace itself as
//! before and says why it could not.

use super::jail::{take_handoff, Meanwhile};
use nix::sched::{setns, CloneFlags};
use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// The one byte that carries the namespace (as `SCM_RIGHTS`).
const NAMESPACE_TAG: u8 = b'N';

/// The work for the jail's original process: make the namespace, then
/// send it (a descriptor of it) to magus proper. On any failure nothing
/// is sent, and magus proper finds only the channel's end.
pub fn make_meanwhile<'a>() -> Meanwhile<'a> {
    Box::new(|channel: UnixStream| {
        if super::network::enter_loopback_namespace().is_ok() {
            send_own_namespace(&channel);
        }
    })
}

fn send_own_namespace(channel: &UnixStream) {
    let Ok(namespace) = std::fs::File::open("/proc/thread-self/ns/net") else {
        return;
    };
    let fds = [namespace.as_raw_fd()];
    let rights = [ControlMessage::ScmRights(&fds)];
    let tag = [NAMESPACE_TAG];
    let iov = [IoSlice::new(&tag)];
    let _ = sendmsg::<()>(channel.as_raw_fd(), &iov, &rights, MsgFlags::empty(), None);
}

/// In magus proper: joins the namespace the original made, if it made
/// one. `false` when there is none to join (no jail of this run's own, no
/// early work, or it failed): the caller then makes the namespace itself.
pub fn join() -> bool {
    let Some(channel) = take_handoff() else {
        return false;
    };
    receive_namespace(&channel).is_some_and(|ns| setns(ns, CloneFlags::CLONE_NEWNET).is_ok())
}

/// Waits for the original's [`NAMESPACE_TAG`] and the descriptor it
/// carries; `None` when the original sent nothing (its end is closed).
fn receive_namespace(channel: &UnixStream) -> Option<OwnedFd> {
    let mut tag = [0u8; 1];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let mut iov = [IoSliceMut::new(&mut tag)];
    let message = recvmsg::<()>(
        channel.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )
    .ok()?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for cmsg in message.cmsgs().ok()? {
        if let ControlMessageOwned::ScmRights(received) = cmsg {
            // SAFETY: the kernel just installed these descriptors in this
            // process for us; nothing else owns them.
            fds.extend(
                received
                    .into_iter()
                    .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
            );
        }
    }
    if message.bytes != 1 || tag[0] != NAMESPACE_TAG || fds.len() != 1 {
        return None;
    }
    fds.pop()
}

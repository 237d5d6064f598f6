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
use std::os::fd::{AsRawFd, OwnedFd};
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
    let _ = super::handover::send(channel, NAMESPACE_TAG, &[namespace.as_raw_fd()]);
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
    super::handover::receive::<1>(channel, NAMESPACE_TAG).map(|[ns]| ns)
}

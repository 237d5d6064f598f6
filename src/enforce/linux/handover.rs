//! Descriptors handed between magus's processes over a Unix socket pair
//! (`SCM_RIGHTS`), each message one tag byte saying what it carries (the
//! proxy's listeners, magus to the proxy). One place for the
//! `recvmsg` bookkeeping, so that every receiver takes ownership of what
//! the kernel installed and checks the tag and the count alike.

use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Sends `fds` with the one byte `tag`. The receiver gets its own copies;
/// the caller's stay open until it drops them.
pub(crate) fn send(channel: &UnixStream, tag: u8, fds: &[RawFd]) -> nix::Result<()> {
    let rights = [ControlMessage::ScmRights(fds)];
    let tag = [tag];
    let iov = [IoSlice::new(&tag)];
    sendmsg::<()>(channel.as_raw_fd(), &iov, &rights, MsgFlags::empty(), None).map(drop)
}

/// Waits for one message and returns its descriptors (close-on-exec, in
/// the order sent) when it is `tag` with exactly `N` of them; `None` when
/// the other end closed or sent anything else.
pub(crate) fn receive<const N: usize>(channel: &UnixStream, tag: u8) -> Option<[OwnedFd; N]> {
    let mut byte = [0u8; 1];
    // Room for more than expected, so that a surplus is seen (and closed)
    // rather than truncated away.
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let mut iov = [IoSliceMut::new(&mut byte)];
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
    if message.bytes != 1 || byte[0] != tag {
        return None;
    }
    fds.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn what_is_sent_arrives_and_a_wrong_tag_or_count_is_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        let (mine, mut peer) = UnixStream::pair().unwrap();
        send(&a, b'X', &[mine.as_raw_fd(), mine.as_raw_fd()]).unwrap();
        let [copy, _] = receive::<2>(&b, b'X').expect("two descriptors");
        drop(mine);
        peer.write_all(b"ok").unwrap();
        drop(peer);
        let mut text = String::new();
        UnixStream::from(copy).read_to_string(&mut text).unwrap();
        assert_eq!(
            text, "ok",
            "the received descriptor is a copy of the sent one"
        );

        send(&a, b'Y', &[a.as_raw_fd()]).unwrap();
        assert!(receive::<1>(&b, b'X').is_none(), "a wrong tag is refused");
        send(&a, b'X', &[a.as_raw_fd(), a.as_raw_fd()]).unwrap();
        assert!(receive::<1>(&b, b'X').is_none(), "a wrong count is refused");
        drop(a);
        assert!(receive::<1>(&b, b'X').is_none(), "a closed end is refused");
    }
}

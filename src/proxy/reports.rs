//! magus's end of the proxy's report channel, read as the reports come.
//!
//! The proxy writes a refusal to magus before it answers the client, so
//! that MGS2011 is there when the `sh.*` call whose child asked for it
//! returns. magus used to read the channel only then: a child that made a
//! few hundred connections in one call filled the socket's buffer with
//! their reports, the next refusal blocked the proxy before its answer,
//! and the child, the call and the run waited for each other for ever.
//! Now a thread of magus's reads whatever arrives into an [`Inbox`]; the
//! main thread reads too, under the same lock, when it looks (so what the
//! proxy wrote before the child ended is seen then, whichever thread
//! reads it first). Every event is counted in the summary as it is read;
//! only those said to the user are kept until taken.

use super::events::{EgressSummary, Event};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What has been read of the channel.
#[derive(Debug, Default)]
struct Inbox {
    /// The start of a line not whole yet.
    partial: Vec<u8>,
    /// Events to say ([`Event::is_said`]), oldest first.
    said: Vec<Event>,
    summary: EgressSummary,
    /// `End` read, or the channel closed: nothing more will come.
    ended: bool,
}

impl Inbox {
    /// Reads all that `stream` (non-blocking) holds now.
    fn read_from(&mut self, mut stream: &UnixStream) {
        let mut buf = [0u8; 4096];
        while !self.ended {
            match stream.read(&mut buf) {
                Ok(0) => self.ended = true,
                Ok(n) => self.partial.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => self.ended = true,
            }
            self.take_lines();
        }
    }

    fn take_lines(&mut self) {
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let Ok(event) = serde_json::from_slice::<Event>(&line) else {
                continue;
            };
            self.summary.record(&event);
            match event {
                Event::End => self.ended = true,
                event if event.is_said() => self.said.push(event),
                _ => {}
            }
        }
    }
}

type Shared = (Mutex<Inbox>, Condvar);

/// The channel of a proxy that serves, and the thread that reads it.
#[derive(Debug)]
pub(super) struct Reports {
    stream: UnixStream,
    inbox: Arc<Shared>,
}

impl Reports {
    /// Starts reading `stream`; call once the proxy has its listeners.
    pub(super) fn start(stream: UnixStream) -> io::Result<Reports> {
        stream.set_nonblocking(true)?;
        let inbox: Arc<Shared> = Arc::default();
        let (reader, shared) = (stream.try_clone()?, Arc::clone(&inbox));
        std::thread::Builder::new()
            .name("proxy-reports".into())
            .spawn(move || read_until_ended(&reader, &shared))?;
        Ok(Reports { stream, inbox })
    }

    /// The inbox, with all the channel holds now read into it.
    fn inbox(&self) -> MutexGuard<'_, Inbox> {
        let mut inbox = lock(&self.inbox);
        inbox.read_from(&self.stream);
        inbox
    }

    /// The events to say that were read since the last call.
    pub(super) fn take_to_say(&self) -> Vec<Event> {
        std::mem::take(&mut self.inbox().said)
    }

    /// Ends the proxy. `wait`: ask it to finish and wait (at most
    /// `timeout`) for its last reports; otherwise close the channel,
    /// which ends it. Returns the summary and the events not yet taken.
    pub(super) fn finish(self, wait: bool, timeout: Duration) -> (EgressSummary, Vec<Event>) {
        if !wait || (&self.stream).write_all(b"finish\n").is_err() {
            // Shut the socket, not just this descriptor: a process forked
            // since may hold a copy, and would keep the proxy waiting.
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
        } else {
            let deadline = Instant::now() + timeout;
            let (_, wake) = &*self.inbox;
            let mut inbox = self.inbox();
            while !inbox.ended {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                inbox = match wake.wait_timeout(inbox, left) {
                    Ok((inbox, _)) => inbox,
                    Err(poisoned) => poisoned.into_inner().0,
                };
            }
        }
        let mut inbox = self.inbox();
        (
            std::mem::take(&mut inbox.summary),
            std::mem::take(&mut inbox.said),
        )
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Inbox> {
    shared
        .0
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The reading thread: wakes when the channel has something, reads it
/// under the lock, and stops once nothing more will come.
fn read_until_ended(stream: &UnixStream, shared: &Shared) {
    loop {
        let mut fds = [PollFd::new(stream.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
        let ended = {
            let mut inbox = lock(shared);
            inbox.read_from(stream);
            inbox.ended
        };
        shared.1.notify_all();
        if ended {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::events::RefusalReason;

    fn line(event: &Event) -> Vec<u8> {
        let mut line = serde_json::to_vec(event).unwrap();
        line.push(b'\n');
        line
    }

    fn refused(port: u16) -> Event {
        Event::Refused {
            host: "example.com".into(),
            port,
            reason: RefusalReason::NotListed,
            via: "http".into(),
            resolved: Vec::new(),
        }
    }

    /// A writer that blocks once the channel is full never blocks for
    /// long: 20,000 reports (about 2 MB, ten times a socket's buffer) go
    /// through while nobody asks for them, the refusal after them is
    /// there when asked, and every one is counted.
    #[test]
    fn reports_never_fill_the_channel_and_none_is_lost() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let reports = Reports::start(ours).unwrap();
        let closed = line(&Event::Closed {
            host: "localhost".into(),
            port: 8080,
            sent: 1,
            received: 2,
        });
        // Without the reading thread this write would block: fail instead.
        theirs
            .set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let writer = std::thread::spawn(move || {
            for _ in 0..20_000 {
                theirs.write_all(&closed).unwrap();
            }
            theirs.write_all(&line(&refused(9))).unwrap();
            theirs
        });
        let mut theirs = writer.join().unwrap();
        assert_eq!(reports.take_to_say(), vec![refused(9)]);
        theirs.write_all(&line(&Event::End)).unwrap();
        let (summary, left) = reports.finish(true, Duration::from_secs(10));
        assert!(left.is_empty());
        let localhost = &summary.by_destination[&("localhost".to_string(), 8080)];
        assert_eq!(localhost.connections, 20_000);
        assert_eq!(
            summary.by_destination[&("example.com".to_string(), 9)].refused,
            1
        );
    }

    /// A line split across reads is read whole; `finish` waits for `End`.
    #[test]
    fn a_line_in_pieces_is_one_event() {
        let (ours, mut theirs) = UnixStream::pair().unwrap();
        let reports = Reports::start(ours).unwrap();
        let whole = line(&refused(1));
        theirs.write_all(&whole[..5]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(reports.take_to_say().is_empty());
        theirs.write_all(&whole[5..]).unwrap();
        let peer = std::thread::spawn(move || {
            let mut asked = [0u8; 7];
            theirs.read_exact(&mut asked).unwrap();
            assert_eq!(&asked, b"finish\n");
            theirs.write_all(&line(&refused(2))).unwrap();
            theirs.write_all(&line(&Event::End)).unwrap();
        });
        let (_, left) = reports.finish(true, Duration::from_secs(10));
        peer.join().unwrap();
        assert_eq!(left, vec![refused(1), refused(2)]);
    }
}

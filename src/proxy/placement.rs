//! Where a busy relay thread runs.
//!
//! A tunnel that moves bulk data between two programs of this machine has
//! three busy parties: the sender, the relay and the receiver. Left to
//! itself, the scheduler keeps pulling the relay onto its sender's CPU (a
//! TCP wake-up asks for the waker's CPU when the waker is alone there),
//! where the two take turns; on two CPUs that made a 100 MiB transfer
//! 25–45% slower than a direct one in most runs (docs/benchmarks.md, "The
//! proxy transfer"). So once a direction has moved [`BULK`] bytes, its thread
//! binds itself to one CPU that its sender is not on, and stays there for
//! the tunnel's life: the kernel then places the two endpoints around it.
//!
//! It is a hint, and it is kept modest: a short exchange (a request, an
//! API call) never reaches [`BULK`]; at most one relay thread holds each
//! CPU, so parallel downloads never pile onto one; where only one CPU is
//! allowed, or every other one is held, the thread is left to the
//! scheduler. The CPUs come from the thread's own affinity mask, so a
//! `taskset` or cpuset around magus is respected.

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Mutex;

/// Bytes a direction moves before its thread settles on a CPU.
pub(super) const BULK: u64 = 4 << 20;

/// The CPUs a settled relay thread holds, process-wide.
static HELD: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// A relay thread's CPU, held until dropped (when the direction ends).
#[derive(Debug)]
pub(super) struct Settled {
    cpu: Option<usize>,
}

impl Settled {
    /// The CPU this thread is bound to, if it settled.
    #[cfg(test)]
    pub(super) fn cpu(&self) -> Option<usize> {
        self.cpu
    }
}

impl Drop for Settled {
    fn drop(&mut self) {
        if let (Some(cpu), Ok(mut held)) = (self.cpu, HELD.lock()) {
            held.remove(&cpu);
        }
    }
}

/// Binds the calling thread to a CPU other than the one `sender`'s
/// packets arrive on, if one is free (see the module doc); never fails:
/// where anything is refused, the thread stays where the scheduler puts it.
pub(super) fn settle(sender: BorrowedFd<'_>) -> Settled {
    let unsettled = Settled { cpu: None };
    let (Ok(allowed), Some(incoming)) = (sched_getaffinity(Pid::from_raw(0)), incoming_cpu(sender))
    else {
        return unsettled;
    };
    let allowed: Vec<usize> = (0..CpuSet::count())
        .filter(|&cpu| allowed.is_set(cpu).unwrap_or(false))
        .collect();
    let Ok(mut held) = HELD.lock() else {
        return unsettled;
    };
    let Some(cpu) = choose(&allowed, incoming, &held) else {
        return unsettled;
    };
    let mut only = CpuSet::new();
    if only.set(cpu).is_err() || sched_setaffinity(Pid::from_raw(0), &only).is_err() {
        return unsettled;
    }
    held.insert(cpu);
    Settled { cpu: Some(cpu) }
}

/// The first allowed CPU after `incoming`, in a circle, that no other
/// relay holds; none if fewer than two CPUs are allowed.
fn choose(allowed: &[usize], incoming: usize, held: &BTreeSet<usize>) -> Option<usize> {
    if allowed.len() < 2 {
        return None;
    }
    let start = allowed.partition_point(|&cpu| cpu <= incoming);
    allowed[start..]
        .iter()
        .chain(&allowed[..start])
        .copied()
        .find(|cpu| *cpu != incoming && !held.contains(cpu))
}

/// The CPU that processed the socket's last incoming packet
/// (`SO_INCOMING_CPU`; `nix` has no wrapper for it); none if unknown.
fn incoming_cpu(socket: BorrowedFd<'_>) -> Option<usize> {
    let mut cpu: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the descriptor is borrowed for the call, and `cpu`/`len`
    // are a valid `int` and its size, which is what this option writes.
    let status = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_INCOMING_CPU,
            (&mut cpu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (status == 0 && cpu >= 0).then_some(cpu as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsFd;

    fn set(cpus: &[usize]) -> BTreeSet<usize> {
        cpus.iter().copied().collect()
    }

    #[test]
    fn the_cpu_after_the_senders_is_chosen_in_a_circle() {
        assert_eq!(choose(&[0, 1], 0, &set(&[])), Some(1));
        assert_eq!(choose(&[0, 1], 1, &set(&[])), Some(0));
        assert_eq!(choose(&[0, 1, 2, 3], 3, &set(&[])), Some(0));
        // A sender on a CPU outside the mask still gets the next one in it.
        assert_eq!(choose(&[2, 5, 7], 4, &set(&[])), Some(5));
        assert_eq!(choose(&[2, 5, 7], 9, &set(&[])), Some(2));
    }

    #[test]
    fn held_cpus_are_skipped_and_a_full_or_single_mask_settles_nowhere() {
        assert_eq!(choose(&[0, 1, 2, 3], 0, &set(&[1, 2])), Some(3));
        assert_eq!(choose(&[0, 1, 2], 0, &set(&[1, 2])), None);
        assert_eq!(choose(&[0, 1], 0, &set(&[1])), None);
        assert_eq!(choose(&[3], 0, &set(&[])), None);
        assert_eq!(choose(&[], 0, &set(&[])), None);
    }

    /// Runs in its own thread: the binding is the thread's, and ends with it.
    #[test]
    fn a_settled_thread_is_bound_off_its_senders_cpu_and_frees_it_after() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut receiver, _) = listener.accept().unwrap();
        sender.write_all(b"x").unwrap();
        receiver.read_exact(&mut [0u8; 1]).unwrap();
        std::thread::spawn(move || {
            let allowed = sched_getaffinity(Pid::from_raw(0)).unwrap();
            let count = (0..CpuSet::count())
                .filter(|&c| allowed.is_set(c).unwrap())
                .count();
            let incoming = incoming_cpu(receiver.as_fd()).expect("SO_INCOMING_CPU");
            let settled = settle(receiver.as_fd());
            let now = sched_getaffinity(Pid::from_raw(0)).unwrap();
            match settled.cpu() {
                Some(cpu) => {
                    assert!(count >= 2);
                    assert_ne!(cpu, incoming);
                    let bound: Vec<usize> = (0..CpuSet::count())
                        .filter(|&c| now.is_set(c).unwrap())
                        .collect();
                    assert_eq!(bound, vec![cpu]);
                    assert!(HELD.lock().unwrap().contains(&cpu));
                    drop(settled);
                    assert!(!HELD.lock().unwrap().contains(&cpu));
                }
                // One CPU (or every other one held by a parallel test):
                // the thread keeps its whole mask.
                None => assert_eq!(now, allowed),
            }
        })
        .join()
        .unwrap();
    }
}

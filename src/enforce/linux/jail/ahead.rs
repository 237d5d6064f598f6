//! The jail's user and network namespaces, made ahead by a helper while
//! magus plans the view, for `network: deny` and `hosts`.
//!
//! Why: `unshare(CLONE_NEWNET)` costs about half a millisecond of CPU.
//! Made once the jail's processes exist (by the original while PID 1
//! builds the view), it took a core from PID 1 and magus proper, which are
//! the path to the spell, on a two-core machine. While the view's plan is
//! compiled (a single-threaded stretch of about a millisecond), the other
//! core is idle: the helper makes both namespaces there.
//!
//! The helper is a `clone(CLONE_VM | CLONE_FILES)`: a process of its own
//! (a thread may not make a user namespace), sharing magus's memory and
//! descriptor table. A `fork` would write-protect every page of magus, and
//! each page planning writes afterwards would be copied: that costs more
//! than the namespace. Sharing the memory while both run, the helper makes
//! only system calls that touch no `errno` (`rustix`), allocates nothing
//! and takes no lock; the descriptors of the namespaces it opens land in
//! magus's table, and it stores their numbers in atomics.
//!
//! They are joined where they would have been made: the user namespace
//! by the original, with `setns` instead of `unshare` (the same user owns
//! it, and the id maps are the same); the network namespace by PID 1,
//! first thing, so magus proper and every child are born in it, while the
//! original stays in the host's (it forks the proxy there). The helper
//! decides nothing: whatever the helper could not make, the original (or
//! magus proper, for the network) makes as before, and says why it could
//! not.

use std::ffi::{c_int, c_void, CStr};
use std::io;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sched::{setns, CloneFlags};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getegid, geteuid, Pid};
use rustix::fs::{Mode, OFlags};
use rustix::thread::UnshareFlags;

use crate::enforce::child::{with_signals_blocked, Stack};

/// The helper at work; [`Ahead::take`] collects what it made.
pub(crate) struct Ahead {
    helper: Pid,
    /// Read and written by the helper until it has exited (boxed, so it
    /// stays put when `Ahead` moves).
    shared: Box<Shared>,
    /// The helper runs on it until it has exited.
    _stack: Stack,
}

/// What the helper reads, and the two numbers it writes.
struct Shared {
    /// The lines of `uid_map` and `gid_map`, formatted before the clone
    /// (the helper only reads their bytes).
    uid_map: String,
    gid_map: String,
    /// Root goes on without a user namespace where the kernel refuses one,
    /// as the jail does (`userns`).
    root: bool,
    /// The descriptors of the namespaces made, `-1` until then.
    user: AtomicI32,
    network: AtomicI32,
}

/// What the helper made, as descriptors of the namespaces (none at all
/// without a helper: [`Made::default`]).
#[derive(Default)]
pub(crate) struct Made {
    pub(super) user: Option<OwnedFd>,
    pub(super) network: Option<OwnedFd>,
}

/// Set in the original once it joined the network namespace made ahead;
/// PID 1 and magus proper inherit it with the namespace. Global: it is set
/// in the original before the forks, and read by magus proper's network
/// step (`network::enter`), past the jail's own types.
static JOINED_NETWORK: AtomicBool = AtomicBool::new(false);

/// How long [`Ahead::take`] polls for the helper's exit before it blocks:
/// the namespaces take well under a millisecond.
const POLL_FOR: Duration = Duration::from_millis(5);

// SAFETY: `Ahead` owns its stack mapping and its `Shared` outright; the
// raw pointer inside `Stack` is never shared with another owner, so the
// value may move to (and be dropped on) another thread.
unsafe impl Send for Ahead {}

/// Starts the helper as soon as the policy says the run needs both
/// namespaces (before its grants are resolved); the caller hands what it
/// returns to the jail ([`Ahead::take`]). Dropped untaken, the helper is
/// reaped. `None` when no helper could start: the jail makes the
/// namespaces itself.
pub(crate) fn start() -> Option<Ahead> {
    spawn()
}

/// Clones the helper; `None` when it cannot, or where `rustix` would make
/// its calls through libc (and `errno`).
fn spawn() -> Option<Ahead> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return None;
    }
    let (uid, gid) = (geteuid(), getegid());
    let shared = Box::new(Shared {
        uid_map: super::userns::to_itself(uid.as_raw()),
        gid_map: super::userns::to_itself(gid.as_raw()),
        root: uid.is_root(),
        user: AtomicI32::new(-1),
        network: AtomicI32::new(-1),
    });
    let stack = Stack::map().ok()?;
    let helper = with_signals_blocked(|| {
        let flags = libc::CLONE_VM | libc::CLONE_FILES | libc::SIGCHLD;
        let arg = ptr::from_ref::<Shared>(&shared).cast_mut().cast::<c_void>();
        // SAFETY: `helper_main` reads `shared` and stores only into its
        // atomics; `shared` and the stack outlive the helper (`take` reaps
        // it before dropping them, and `Drop` does if `take` never ran).
        // It makes raw system calls only: no allocation, lock or unwinding.
        // Every signal is blocked in it (inherited mask) so no handler of
        // magus runs on its stack.
        let pid = unsafe { libc::clone(helper_main, stack.top(), flags, arg) };
        match pid {
            -1 => Err(io::Error::last_os_error()),
            pid => Ok(Pid::from_raw(pid)),
        }
    })
    .ok()?;
    // The scheduler tends to put a clone that shares the memory beside
    // its parent, where it would wait for magus to block instead of using
    // the idle core.
    super::cores::elsewhere(helper);
    Some(Ahead {
        helper,
        shared,
        _stack: stack,
    })
}

impl Ahead {
    /// Waits for the helper to exit and takes what it made. A process
    /// forked meanwhile gets a copy of the descriptor table the helper
    /// shares, with whatever it opened so far: it must close what it does
    /// not know (the proxy does).
    pub(crate) fn take(mut self) -> Made {
        self.reap();
        Made {
            user: own(&self.shared.user),
            network: own(&self.shared.network),
        }
    }

    /// Waits for the helper's exit. Polled first, yielding the core: the
    /// helper is about to be done, and a blocking wait would let this core
    /// go idle, which on a virtual machine costs a wake-up of about 0.2 ms
    /// when the helper exits. A helper that takes longer (a loaded
    /// machine) is waited for blocking.
    fn reap(&mut self) {
        let polling = Instant::now();
        while polling.elapsed() < POLL_FOR {
            match waitpid(self.helper, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => {
                    let _ = nix::sched::sched_yield();
                }
                _ => {
                    self.helper = Pid::from_raw(0);
                    return;
                }
            }
        }
        while let Err(Errno::EINTR) = waitpid(self.helper, None) {}
        self.helper = Pid::from_raw(0);
    }
}

impl Drop for Ahead {
    /// The stack and `shared` must outlive the helper.
    fn drop(&mut self) {
        if self.helper.as_raw() > 0 {
            self.reap();
        }
        // What `take` did not take is closed.
        drop(own(&self.shared.user));
        drop(own(&self.shared.network));
    }
}

/// The descriptor the helper stored in `slot`, once; call after the
/// helper has exited.
fn own(slot: &AtomicI32) -> Option<OwnedFd> {
    match slot.swap(-1, Ordering::Acquire) {
        fd @ 0.. => {
            // SAFETY: the helper opened it in this process's descriptor
            // table (CLONE_FILES) and nothing else owns it.
            Some(unsafe { OwnedFd::from_raw_fd(fd) })
        }
        _ => None,
    }
}

/// Joins the network namespace made ahead, if there is one; call after
/// joining (or making) the user namespace that owns it.
pub(super) fn join_network(network: Option<OwnedFd>) {
    if let Some(ns) = network {
        if setns(&ns, CloneFlags::CLONE_NEWNET).is_ok() {
            JOINED_NETWORK.store(true, Ordering::Relaxed);
        }
    }
}

/// Whether this process lives in the network namespace made ahead (the
/// caller then need not make one).
pub(crate) fn joined_network() -> bool {
    JOINED_NETWORK.load(Ordering::Relaxed)
}

/// The helper's entry (see the module doc for what it may do).
extern "C" fn helper_main(arg: *mut c_void) -> c_int {
    // SAFETY: `start` passes a `Shared` that outlives this process.
    let shared = unsafe { &*arg.cast_const().cast::<Shared>() };
    make(shared);
    0
}

/// A user namespace (or none, for root where the kernel refuses one) and
/// a loopback-only network namespace in it; each one's descriptor is
/// stored once made. A failure stops there: the original makes the rest.
fn make(shared: &Shared) {
    // SAFETY (both `unshare_unsafe`): neither flag unshares the descriptor
    // table this process shares with magus.
    let user = match unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWUSER) } {
        Ok(()) if map_ids(shared).is_ok() => true,
        Ok(()) => return,
        Err(_) if shared.root => false,
        Err(_) => return,
    };
    if user {
        match open_own_namespace(c"/proc/self/ns/user") {
            Some(fd) => shared.user.store(fd, Ordering::Release),
            None => return,
        }
    }
    let network = unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNET) };
    if network.is_ok() && loopback_up().is_ok() {
        if let Some(fd) = open_own_namespace(c"/proc/self/ns/net") {
            shared.network.store(fd, Ordering::Release);
        }
    }
}

/// The maps `userns` writes, written by the helper for its namespace.
fn map_ids(shared: &Shared) -> rustix::io::Result<()> {
    write_file(c"/proc/self/setgroups", b"deny")?;
    write_file(c"/proc/self/uid_map", shared.uid_map.as_bytes())?;
    write_file(c"/proc/self/gid_map", shared.gid_map.as_bytes())
}

fn write_file(path: &CStr, text: &[u8]) -> rustix::io::Result<()> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())?;
    let written = rustix::io::write(&fd, text);
    close(fd);
    match written {
        Ok(n) if n == text.len() => Ok(()),
        Ok(_) => Err(rustix::io::Errno::IO),
        Err(e) => Err(e),
    }
}

fn open_own_namespace(path: &CStr) -> Option<RawFd> {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    Some(fd.into_raw_fd())
}

/// `SIOCGIFFLAGS` and `SIOCSIFFLAGS` (`<linux/sockios.h>`).
const GET_FLAGS: rustix::ioctl::Opcode = 0x8913;
const SET_FLAGS: rustix::ioctl::Opcode = 0x8914;

/// `ip link set lo up`, as `network::bring_loopback_up` does it.
fn loopback_up() -> rustix::io::Result<()> {
    use rustix::net::{socket_with, AddressFamily, SocketFlags, SocketType};
    let socket = socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let mut request = crate::enforce::linux::network::loopback_request();
    // SAFETY: both opcodes take a `struct ifreq` naming the interface; the
    // first fills in its flags, the second only reads it.
    let result = unsafe {
        rustix::ioctl::ioctl(
            &socket,
            rustix::ioctl::Updater::<GET_FLAGS, _>::new(&mut request),
        )
        .and_then(|()| {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rustix::ioctl::ioctl(
                &socket,
                rustix::ioctl::Updater::<SET_FLAGS, _>::new(&mut request),
            )
        })
    };
    close(socket);
    result
}

/// Closes without libc (whose `close` would set `errno` on a failure).
fn close(fd: OwnedFd) {
    // SAFETY: `fd` is ours, and consumed here.
    unsafe { rustix::io::close(fd.into_raw_fd()) };
}

#[cfg(test)]
mod tests {
    use super::super::{probe, JailStatus, UsernsRequest};
    use super::*;
    use nix::sys::wait::{waitpid, WaitStatus};
    use nix::unistd::{fork, ForkResult};

    const AS_EXPECTED: i32 = 0;
    const NO_NAMESPACE: i32 = 77;

    /// In a child (joining namespaces changes the process for good): the
    /// helper makes a user and a network namespace, the caller joins both,
    /// and its network is then another one (the control: the namespace it
    /// started in), holding `lo` alone, up.
    #[test]
    fn the_helper_makes_both_namespaces_and_the_caller_joins_them() {
        // SAFETY: the child makes system calls and `_exit`s.
        match unsafe { fork() }.expect("fork") {
            ForkResult::Child => {
                let code = in_child();
                // SAFETY: _exit is always safe.
                unsafe { libc::_exit(code) }
            }
            ForkResult::Parent { child } => match waitpid(child, None).expect("wait") {
                WaitStatus::Exited(_, NO_NAMESPACE) => {
                    eprintln!("skipped: no user namespace for the test");
                }
                status => assert_eq!(status, WaitStatus::Exited(child, AS_EXPECTED)),
            },
        }
    }

    fn in_child() -> i32 {
        let started_in = own_network();
        let Some(ahead) = start() else {
            return 1;
        };
        let made = ahead.take();
        let (Some(user), network) = (made.user, made.network) else {
            // Nothing made: right only where user namespaces are refused.
            return match probe(UsernsRequest::Allowed) {
                JailStatus::Entered { .. } => 7,
                JailStatus::Unavailable { .. } => NO_NAMESPACE,
            };
        };
        if network.is_none() || own_network() != started_in {
            return 2;
        }
        if setns(&user, CloneFlags::CLONE_NEWUSER).is_err() {
            return 3;
        }
        join_network(network);
        if !joined_network() || own_network() == started_in {
            return 4;
        }
        if interfaces() != ["lo"] {
            return 5;
        }
        match lo_is_up() {
            true => AS_EXPECTED,
            false => 6,
        }
    }

    /// The inode of this process's network namespace.
    fn own_network() -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self/ns/net").map_or(0, |m| m.ino())
    }

    fn interfaces() -> Vec<String> {
        nix::net::if_::if_nameindex()
            .map(|all| {
                all.iter()
                    .map(|i| i.name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn lo_is_up() -> bool {
        let Ok(socket) = rustix::net::socket_with(
            rustix::net::AddressFamily::INET,
            rustix::net::SocketType::DGRAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        ) else {
            return false;
        };
        let mut request = crate::enforce::linux::network::loopback_request();
        // SAFETY: SIOCGIFFLAGS fills in the flags of the named interface.
        let got = unsafe {
            rustix::ioctl::ioctl(
                &socket,
                rustix::ioctl::Updater::<GET_FLAGS, _>::new(&mut request),
            )
        };
        // SAFETY: reading the union member the kernel just wrote.
        got.is_ok() && unsafe { request.ifr_ifru.ifru_flags } & libc::IFF_UP as libc::c_short != 0
    }
}

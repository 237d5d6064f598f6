//! Enforces `sandbox.limits` (docs/configuration.md, "limits") once, at start-up,
//! for magus and everything it starts. It decides nothing: the bounds come
//! parsed from `policy::limits`, and each is applied where it must be:
//!
//! - `processes`: as real root `RLIMIT_NPROC` is ignored by the kernel, so
//!   the PID namespace's own `pid_max` (per namespace since Linux 6.14) caps
//!   it; otherwise `RLIMIT_NPROC`, which in magus's user namespace counts
//!   only this run's processes. See [`in_new_pid_namespace`], [`apply_to_self`].
//!   Without a PID namespace the supervisor also bounds it, declared or
//!   not ([`supervised_processes`]): a `pids` cgroup of the run's own where
//!   one can be made, else its own count ([`super::survivors`]).
//! - `memory`: `RLIMIT_DATA` (private writable memory) of each child, set
//!   between clone and exec ([`apply_to_child`]). magus's own interpreter
//!   has its own budget (`buzz::heap`), so magus is never the one aborted.
//! - `wall_time`: an alarm in the process that waits for magus (the
//!   namespace's init, or the fallback [`super::survivors`] supervisor);
//!   when it rings, everything is killed and the run exits [`EXIT_OVER_TIME`].

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

use crate::policy::limits::{Bytes, Seconds};
use crate::policy::Limits;

/// Exit status of a run stopped by `sandbox.limits.wall_time`.
pub(crate) const EXIT_OVER_TIME: i32 = 123;

/// Exit status of a run the supervisor stopped for holding more processes
/// than its bound (where no `pids` cgroup makes the fork itself fail).
pub(crate) const EXIT_OVER_PROCESSES: i32 = 122;

/// The bound on a run's processes and threads without a PID namespace
/// when `processes` is not declared (docs/survivors.md): at most this, and
/// at most a quarter of the machine's `pid_max`, so that a run filling
/// its share leaves the rest of the machine able to fork.
pub(crate) const DEFAULT_PROCESSES: u32 = 8192;

/// The kernel never hands out PIDs below this one again after wrapping
/// (`RESERVED_PIDS` in kernel/pid.c), so the namespace's PIDs are moved
/// past it before magus proper is forked; `pid_max` then leaves exactly
/// the declared number of PIDs, `[300, 300 + processes)`.
const RESERVED_PIDS: u32 = 300;

/// Tasks of magus proper's own that the declared count leaves out: the
/// interpreter's thread (a large stack for deep recursion) and the thread
/// relaying a running child's output.
const MAGUS_OWN_TASKS: u32 = 2;

/// One more under `network: hosts`: the thread reading the proxy's
/// reports ([`crate::proxy`]), which lives in magus proper from before
/// the first child to the end of the run. Uncounted, it took one of the
/// tasks `processes` declares for the spell (measured: a fork probe under
/// `processes: 8` started 5 children without `hosts`, 4 with it).
const PROXY_REPORTS_TASK: u32 = 1;

/// The first kernel where `/proc/sys/kernel/pid_max` belongs to the PID
/// namespace; before it, writing it would change the whole machine's.
const PER_NAMESPACE_PID_MAX: (u32, u32) = (6, 14);

/// The run's `sandbox.limits` as the processes that hold them need them:
/// the declared bounds and what is said when one ends the run. Made once
/// at start-up ([`LimitsPlan::new`]) and handed to the process that waits
/// for magus (the jail's PID 1, or the supervisor), which gets its own
/// copy at the fork, and to [`LimitsPlan::apply_to_self`] in magus proper.
#[derive(Debug, Clone, Default)]
pub(crate) struct LimitsPlan {
    limits: Limits,
    over_time_message: String,
    over_processes_message: String,
    /// magus proper's own tasks beyond the declared count.
    own_tasks: u32,
}

impl LimitsPlan {
    /// The declared bounds, with what is said when the wall time runs out
    /// (rendered by the caller; empty where none is declared).
    pub(crate) fn new(limits: Limits, over_time_message: String) -> LimitsPlan {
        LimitsPlan {
            limits,
            over_time_message,
            over_processes_message: String::new(),
            own_tasks: MAGUS_OWN_TASKS,
        }
    }

    /// The same plan for a run whose magus proper reads a network proxy's
    /// reports (`network: hosts`): one more task of its own.
    pub(crate) fn reading_proxy_reports(self) -> LimitsPlan {
        LimitsPlan {
            own_tasks: MAGUS_OWN_TASKS + PROXY_REPORTS_TASK,
            ..self
        }
    }

    /// The tasks magus proper runs beside the declared count (its threads).
    pub(crate) fn own_tasks(&self) -> u32 {
        self.own_tasks
    }

    /// What the supervisor says when the run holds more processes than
    /// its bound (rendered by the caller, only where it supervises).
    pub(crate) fn supervised(self, over_processes_message: String) -> LimitsPlan {
        LimitsPlan {
            over_processes_message,
            ..self
        }
    }

    /// The declared bounds.
    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }
}

// The statics below are the ones a signal handler, a forked child or a
// launch (`crate::enforce::child`, which holds no run value and may not
// allocate between clone and exec) must reach; each says which.

/// The default bound a `pids` cgroup holds for this run, when
/// `processes` is not declared; 0 otherwise. Written in magus proper when
/// the supervisor (a forked process) says the cgroup holds it, read at a
/// refused launch ([`launch_refused`]), which holds no run value.
static DEFAULT_HELD: AtomicU32 = AtomicU32::new(0);

/// How the `processes` bound is held, a [`ProcessBound`] as a byte:
/// written in the namespace's init before it forks magus proper (which
/// inherits it), and read at a refused launch ([`launch_refused`]).
static PROCESS_BOUND: AtomicU8 = AtomicU8::new(0);

/// `RLIMIT_DATA` for children, in bytes; 0 for none. Global: each child
/// applies it between clone and exec ([`apply_to_child`]), where it may not
/// allocate, and every launch site reaches it.
static CHILD_DATA: AtomicU64 = AtomicU64::new(0);

/// Set by the `SIGALRM` handler when the wall time has run out (global:
/// the handler writes it).
static OVER_TIME: AtomicBool = AtomicBool::new(false);

/// How the `processes` bound is enforced in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessBound {
    /// Not declared, or not applied (yet).
    None,
    /// The private PID namespace's `pid_max`: exact, root included.
    NamespacePidMax,
    /// `RLIMIT_NPROC` inside magus's own user namespace: counts this run.
    RlimitInUserNamespace,
    /// `RLIMIT_NPROC` without a user namespace: counts every process of
    /// the user on the machine.
    RlimitForUser,
    /// Real root without a per-namespace `pid_max`: nothing caps it.
    Unenforced,
    /// A `pids` cgroup of the run's own (no PID namespace): exact, root
    /// included.
    PidsCgroup,
    /// Without a PID namespace, where no `pids` cgroup could be made: the
    /// supervisor counts the run's tasks and ends the run past the bound.
    Supervisor,
}

impl ProcessBound {
    fn from_byte(b: u8) -> ProcessBound {
        match b {
            1 => ProcessBound::NamespacePidMax,
            2 => ProcessBound::RlimitInUserNamespace,
            3 => ProcessBound::RlimitForUser,
            4 => ProcessBound::Unenforced,
            5 => ProcessBound::PidsCgroup,
            6 => ProcessBound::Supervisor,
            _ => ProcessBound::None,
        }
    }

    fn store(self) {
        let b = match self {
            ProcessBound::None => 0,
            ProcessBound::NamespacePidMax => 1,
            ProcessBound::RlimitInUserNamespace => 2,
            ProcessBound::RlimitForUser => 3,
            ProcessBound::Unenforced => 4,
            ProcessBound::PidsCgroup => 5,
            ProcessBound::Supervisor => 6,
        };
        PROCESS_BOUND.store(b, Ordering::Relaxed);
    }
}

/// Where a supervised run's process bound comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BoundSource {
    /// `sandbox.limits.processes`.
    Declared,
    /// [`DEFAULT_PROCESSES`], at most a quarter of `pid_max`.
    Default,
}

/// How many processes (threads included, magus proper among them) a run
/// without a PID namespace may hold, and where that number comes from.
pub(crate) fn supervised_processes(limits: &Limits) -> (u32, BoundSource) {
    match limits.processes {
        Some(count) => (count, BoundSource::Declared),
        None => (default_processes(), BoundSource::Default),
    }
}

fn default_processes() -> u32 {
    let pid_max = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        .unwrap_or(32_768);
    DEFAULT_PROCESSES.min(pid_max / 4).max(1)
}

/// In magus proper, forked by the supervisor: a declared bound is held by
/// the supervisor, which counts, until it says a cgroup holds it
/// ([`placed_in_pids_cgroup`]).
pub(crate) fn held_by_supervisor(limits: &Limits) {
    if limits.processes.is_some() {
        ProcessBound::Supervisor.store();
    }
}

/// In magus proper, once the supervisor has moved it into a `pids` cgroup
/// of the run's own: the cgroup holds the declared bound, or, where
/// none was declared, the `default` it says.
pub(crate) fn placed_in_pids_cgroup(default: Option<u32>) {
    match default {
        None => ProcessBound::PidsCgroup.store(),
        Some(count) => DEFAULT_HELD.store(count, Ordering::Relaxed),
    }
}

/// What to add to the error of a launch that failed with `errno`: where
/// `EAGAIN` comes from the run's own process bound, the setting's name.
pub(crate) fn launch_refused(errno: i32, limits: &Limits) -> Option<String> {
    if errno != libc::EAGAIN {
        return None;
    }
    let bound = process_bound();
    let held = !matches!(
        bound,
        ProcessBound::None | ProcessBound::Unenforced | ProcessBound::Supervisor
    );
    if let (Some(count), true) = (limits.processes, held) {
        return Some(format!(
            "the run holds as many processes as `sandbox.limits.processes: {count}` allows (threads count)"
        ));
    }
    match DEFAULT_HELD.load(Ordering::Relaxed) {
        0 => None,
        count => Some(format!(
            "the run holds as many processes as its default bound allows ({count}, threads count, without a PID namespace); `sandbox.limits.processes` sets another"
        )),
    }
}

/// Says the run held more processes than its bound, then exits
/// [`EXIT_OVER_PROCESSES`]. The caller kills what is left first.
pub(crate) fn exit_over_processes(plan: &LimitsPlan) -> ! {
    let text = plan.over_processes_message.as_bytes();
    let _ = nix::unistd::write(std::io::stderr(), text);
    // SAFETY: _exit skips atexit handlers, which belong to magus proper.
    unsafe { libc::_exit(EXIT_OVER_PROCESSES) }
}

/// Hook 2 (the PID namespace's init, before the view is built, which
/// makes `/proc` read-only, and before magus proper is forked): caps
/// the namespace's PIDs when the kernel
/// keeps `pid_max` per namespace and this process may write it (root;
/// an unprivileged user's namespace-`root` is not mapped, so its sysctl
/// is not writable).
pub(crate) fn in_new_pid_namespace(plan: &LimitsPlan) {
    let Some(count) = plan.limits.processes else {
        return;
    };
    if !kernel_at_least(PER_NAMESPACE_PID_MAX) {
        return;
    }
    let pid_max = (RESERVED_PIDS + count + plan.own_tasks).to_string();
    let written = std::fs::write("/proc/sys/kernel/pid_max", pid_max).is_ok()
        && std::fs::write("/proc/sys/kernel/ns_last_pid", RESERVED_PIDS.to_string()).is_ok();
    if written {
        ProcessBound::NamespacePidMax.store();
    }
}

/// Whether the running kernel's release is at least `(major, minor)`.
fn kernel_at_least(want: (u32, u32)) -> bool {
    let Ok(uts) = nix::sys::utsname::uname() else {
        return false;
    };
    let release = uts.release().to_string_lossy();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(a), Some(b)) if (a, b) >= want)
}

/// Whether magus proper lives in a user namespace of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OwnUserNamespace {
    Yes,
    No,
}

/// Hook 3 (magus proper, after the namespace step, before seccomp and
/// Landlock): the per-process bounds that children inherit.
///
/// In its own user namespace `RLIMIT_NPROC` counts the processes of this
/// uid in that namespace: magus's waiting parent and the namespace's init
/// are two of them, so two are added to the declared count (and, either
/// way, the plan's own tasks). Returns how `processes` is held.
pub(crate) fn apply_to_self(plan: &LimitsPlan, user_namespace: OwnUserNamespace) -> ProcessBound {
    set_bounds(plan, user_namespace);
    process_bound()
}

fn set_bounds(plan: &LimitsPlan, user_namespace: OwnUserNamespace) {
    let limits = &plan.limits;
    if let Some(bytes) = limits.memory {
        CHILD_DATA.store(bytes, Ordering::Relaxed);
    }
    let Some(count) = limits.processes else {
        return;
    };
    let held = process_bound();
    if held == ProcessBound::NamespacePidMax || held == ProcessBound::PidsCgroup {
        return;
    }
    if nix::unistd::getuid().is_root() {
        if held != ProcessBound::Supervisor {
            ProcessBound::Unenforced.store();
        }
        return;
    }
    let (extra, bound) = match user_namespace {
        OwnUserNamespace::Yes => (2, ProcessBound::RlimitInUserNamespace),
        OwnUserNamespace::No => (0, ProcessBound::RlimitForUser),
    };
    let n = u64::from(count) + extra + u64::from(plan.own_tasks);
    if setrlimit(Resource::RLIMIT_NPROC, n, n).is_ok() {
        bound.store();
    }
}

/// No process of the run leaves a core dump: `RLIMIT_CORE` 0, soft and
/// hard, set in magus proper before its first child, so every child
/// inherits it and none can raise it (that needs `CAP_SYS_RESOURCE`).
///
/// Why: where `kernel.core_pattern` is a pipe (systemd-coredump, apport),
/// the kernel hands a crashing child's memory (whatever it read from the
/// workspace) to a root helper outside the sandbox, which keeps it after
/// the run (the journal, `/var/crash`), and with error reporting on, sends
/// it off the machine: a way out under `network: deny`. systemd-coredump
/// stores nothing for a process whose limit is below a page. Where the
/// pattern is a file (`core`), the dump is written as the crashing child,
/// in the view and under Landlock, so only where the child could write
/// anyway; with 0 it is not written at all. magus's own processes are
/// not dumpable (`untraceable`) and dump nothing either way.
pub(crate) fn refuse_core_dumps() -> nix::Result<()> {
    setrlimit(Resource::RLIMIT_CORE, 0, 0)
}

/// Hook 4 (a child, between clone and exec; must not allocate): the
/// `memory` bound. `RLIMIT_DATA` counts private writable mappings (heap,
/// anonymous `mmap`) since Linux 4.7, not address space merely reserved.
pub(crate) fn apply_to_child() {
    let bytes = CHILD_DATA.load(Ordering::Relaxed);
    if bytes > 0 {
        let _ = setrlimit(Resource::RLIMIT_DATA, bytes, bytes);
    }
}

/// How `processes` would be enforced by a run, for `magus sandbox check`
/// (which may not enter namespaces itself).
pub(crate) fn predict_process_bound(
    limits: &Limits,
    pid_namespace: bool,
    own_user_ns: OwnUserNamespace,
) -> ProcessBound {
    if limits.processes.is_none() {
        return ProcessBound::None;
    }
    let root = nix::unistd::getuid().is_root();
    match (root, pid_namespace, own_user_ns) {
        (true, true, _) if kernel_at_least(PER_NAMESPACE_PID_MAX) => ProcessBound::NamespacePidMax,
        (true, true, _) => ProcessBound::Unenforced,
        (true, false, _) => ProcessBound::Supervisor,
        (false, _, OwnUserNamespace::Yes) => ProcessBound::RlimitInUserNamespace,
        (false, _, OwnUserNamespace::No) => ProcessBound::RlimitForUser,
    }
}

/// How `processes` is enforced, as noted so far.
fn process_bound() -> ProcessBound {
    ProcessBound::from_byte(PROCESS_BOUND.load(Ordering::Relaxed))
}

/// Rings again every second: a ring that lands while the waiter is between
/// two waits (reaping a stream of orphans, say) interrupts nothing, and
/// the waiter, back in `waitpid`, would otherwise sleep past it for ever.
extern "C" fn on_alarm(_: libc::c_int) {
    OVER_TIME.store(true, Ordering::Relaxed);
    // SAFETY: `alarm` is async-signal-safe.
    unsafe { libc::alarm(1) };
}

/// Hook 5 (the process that waits for magus, right before it waits):
/// starts the wall-time alarm. Without `SA_RESTART`, so the wait returns
/// `EINTR` when it rings and the waiter asks [`over_time`].
pub(crate) fn arm_deadline(plan: &LimitsPlan) {
    let Some(wall) = plan.limits.wall_time else {
        return;
    };
    let action = SigAction::new(
        SigHandler::Handler(on_alarm),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic.
    if unsafe { sigaction(Signal::SIGALRM, &action) }.is_ok() {
        let secs = u32::try_from(wall.as_secs()).unwrap_or(u32::MAX);
        nix::unistd::alarm::set(secs);
    }
}

/// Whether the wall-time alarm has rung.
pub(crate) fn over_time() -> bool {
    OVER_TIME.load(Ordering::Relaxed)
}

/// Says why the run is ending, then exits [`EXIT_OVER_TIME`]. The caller
/// kills what is left first (or, as a namespace's init, by exiting).
pub(crate) fn exit_over_time(plan: &LimitsPlan) -> ! {
    let text = plan.over_time_message.as_bytes();
    let _ = nix::unistd::write(std::io::stderr(), text);
    // SAFETY: _exit skips atexit handlers, which belong to magus proper.
    unsafe { libc::_exit(EXIT_OVER_TIME) }
}

/// One line per declared bound and how it is held, for `magus sandbox
/// check` and the run's warnings.
pub(crate) fn describe(limits: &Limits, bound: ProcessBound) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(wall) = limits.wall_time {
        lines.push(format!(
            "wall_time {}: every process of the run is killed when it runs out (exit status {EXIT_OVER_TIME})",
            Seconds(wall.as_secs())
        ));
    }
    if let Some(count) = limits.processes {
        lines.push(format!("processes {count}: {}", process_how(bound)));
    }
    if let Some(bytes) = limits.memory {
        lines.push(format!(
            "memory {}: RLIMIT_DATA of each child process, and the interpreter's own heap",
            Bytes(bytes)
        ));
    }
    lines
}

fn process_how(bound: ProcessBound) -> &'static str {
    match bound {
        ProcessBound::NamespacePidMax => "pid_max of the run's PID namespace (threads count)",
        ProcessBound::RlimitInUserNamespace => {
            "RLIMIT_NPROC in the run's user namespace (threads count)"
        }
        ProcessBound::RlimitForUser => {
            "RLIMIT_NPROC, which counts every process of this user on the machine"
        }
        ProcessBound::PidsCgroup => "a pids cgroup of the run's own (threads count)",
        ProcessBound::Supervisor => {
            "a pids cgroup of the run's own where one can be made (threads count), else the supervisor counts and ends the run past it"
        }
        ProcessBound::Unenforced | ProcessBound::None => {
            "NOT enforced: real root ignores RLIMIT_NPROC and this kernel has no per-namespace pid_max (Linux 6.14+)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn kernel_versions_compare_by_major_then_minor() {
        assert!(kernel_at_least((2, 6)));
        assert!(!kernel_at_least((999, 0)));
    }

    #[test]
    fn each_declared_bound_is_described_with_its_mechanism() {
        let limits = Limits {
            wall_time: Some(Duration::from_secs(1800)),
            processes: Some(64),
            memory: Some(2 << 30),
        };
        let lines = describe(&limits, ProcessBound::Unenforced);
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("wall_time 30m:"), "{lines:?}");
        assert!(lines[1].contains("NOT enforced"), "{lines:?}");
        assert!(lines[2].starts_with("memory 2GiB:"), "{lines:?}");
        assert!(describe(&Limits::default(), ProcessBound::None).is_empty());
    }
}

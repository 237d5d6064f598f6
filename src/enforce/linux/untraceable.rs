//! magus's own processes refuse to be traced by the children they run.
//!
//! Landlock's ptrace scoping is what keeps a child out of magus's memory
//! (a child's nested domain may not trace a less restricted process).
//! Without Landlock (an old kernel, the LSM not enabled, or
//! `MAGUS_SANDBOX_LANDLOCK=0`), nothing did: a child of the same uid, with
//! no capability, could `ptrace`, `process_vm_writev`, `pidfd_getfd` or
//! write `/proc/<pid>/mem` of:
//! - magus proper, whose syscall guard allows `openat2` (the gate needs
//!   it; children get `ENOSYS`), so an injected `openat2` with mode
//!   `04755` left a set-uid file in the workspace (jail without Landlock,
//!   and no jail at all, root or not);
//! - the survivor supervisor and the host proxy, which run outside the
//!   syscall guard and the children's network namespace, so an injected
//!   `socket`+`connect` left the machine under `network: deny` or past
//!   `hosts` (no jail, an ordinary user).
//!
//! A process that is not dumpable can be traced only with
//! `CAP_SYS_PTRACE`, which no child holds, and its `/proc/<pid>` entries
//! belong to root. Children are dumpable again after their `exec`, so
//! debuggers inside a spell still trace their own children.

/// Marks the calling process not dumpable. Call it after the last write
/// to its own `/proc/self` (the user namespace's maps need it dumpable).
pub(crate) fn refuse_tracing() -> nix::Result<()> {
    nix::sys::prctl::set_dumpable(false)
}

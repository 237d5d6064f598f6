//! The terminal guard (DESIGN §7): a seccomp filter that makes
//! `ioctl(fd, TIOCSTI)` and `ioctl(fd, TIOCLINUX)` fail with `EPERM`, so no
//! sandboxed process can push input into the user's terminal, root
//! included (a new session alone does not stop root; Flatpak filters the
//! same way). Built with `seccompiler` before any fork; installing it
//! allocates nothing. Every other syscall is allowed.

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::error::EnforceError;

/// `TIOCSTI` and `TIOCLINUX` from `<asm-generic/ioctls.h>`; the same on
/// x86_64, aarch64 and riscv64.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// x32 syscalls share the x86_64 audit arch but set this bit; x32's
/// `ioctl` is number 514 (and 16 is reachable with the bit too), so both
/// are filtered lest an x32 binary slip past a rule keyed on 16.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Whether the terminal guard is in force, for `magus sandbox check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalGuardStatus {
    /// `TIOCSTI`/`TIOCLINUX` fail with `EPERM` for this process and every
    /// descendant.
    Installed,
    /// Not installed (the caller chose not to, or it failed).
    Absent,
}

/// A compiled filter, ready to install.
#[derive(Debug, Clone)]
pub struct TerminalGuard {
    program: BpfProgram,
}

impl TerminalGuard {
    /// Compiles the filter for the running architecture.
    pub fn build() -> Result<Self, EnforceError> {
        let filter = SeccompFilter::new(
            ioctl_rules()?,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            target_arch()?,
        )?;
        let program = BpfProgram::try_from(filter)?;
        Ok(TerminalGuard { program })
    }

    /// Installs the filter on the calling thread; it is inherited across
    /// `fork`, `clone` and `execve` and cannot be removed. Sets
    /// `no_new_privs` first, as seccomp requires. Allocates nothing, so it
    /// may run between `fork` and `exec`.
    pub fn install_on_self(&self) -> Result<TerminalGuardStatus, EnforceError> {
        self.install_raw()
            .map(|()| TerminalGuardStatus::Installed)
            .map_err(|source| EnforceError::SeccompInstall { source })
    }

    /// [`Self::install_on_self`] with a plain `io::Error`, for `pre_exec`.
    pub fn install_raw(&self) -> io::Result<()> {
        seccompiler::apply_filter(&self.program).map_err(|e| match e {
            seccompiler::Error::Prctl(source) | seccompiler::Error::Seccomp(source) => source,
            _ => io::Error::from_raw_os_error(libc::EINVAL),
        })
    }
}

fn ioctl_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, EnforceError> {
    let mut rules = BTreeMap::new();
    for nr in ioctl_numbers() {
        rules.insert(nr, vec![request_is(TIOCSTI)?, request_is(TIOCLINUX)?]);
    }
    Ok(rules)
}

/// A rule matching `ioctl(_, request, ..)`. The kernel's `ioctl` takes
/// `request` as `unsigned int`, so only the low 32 bits are compared: a
/// caller cannot dodge the rule by setting high bits.
fn request_is(request: u64) -> Result<SeccompRule, EnforceError> {
    let cond = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)?;
    Ok(SeccompRule::new(vec![cond])?)
}

#[cfg(target_arch = "x86_64")]
fn ioctl_numbers() -> Vec<i64> {
    vec![
        libc::SYS_ioctl,
        X32_SYSCALL_BIT | libc::SYS_ioctl,
        X32_SYSCALL_BIT | 514,
    ]
}

#[cfg(not(target_arch = "x86_64"))]
fn ioctl_numbers() -> Vec<i64> {
    vec![libc::SYS_ioctl]
}

fn target_arch() -> Result<TargetArch, EnforceError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| EnforceError::SeccompArch {
        arch: std::env::consts::ARCH,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_compiles_for_this_arch() {
        let guard = TerminalGuard::build().expect("filter builds");
        // Arch check (3) + syscall load (1) + per syscall: jump, two rules of
        // (load, compare, return) and the fall-through return.
        assert!(guard.program.len() > 4 + ioctl_numbers().len());
    }
}

//! The syscall guard: a seccomp filter that makes a few system calls fail
//! with `EPERM` for magus and every descendant, root included, because
//! Landlock cannot see them:
//!
//! - `ioctl(fd, TIOCSTI)` and `ioctl(fd, TIOCLINUX)`, which push input into
//!   the user's terminal (docs/design.md; Flatpak filters the same way), and
//!   `ioctl(fd, TIOCSETD)`, which changes the terminal's line discipline:
//!   no privilege needed, and it outlives the run (`N_NULL` leaves the
//!   user's terminal dead), while every other discipline is kernel code
//!   no build needs (`n_gsm`, `n_hdlc` have had exploitable bugs);
//! - the calls that reach into the kernel itself, where a root child would
//!   read any file from memory or from the disk: loading a module or a new
//!   kernel, BPF programs and perf events (which read kernel memory, the
//!   page cache included), port I/O, and making device nodes (a block
//!   device node in the workspace is the whole disk).
//!
//! - what reaches around the jail's view (docs/jail.md): file handles, new
//!   mounts and namespaces, keyrings, fanotify, io_uring (whose requests
//!   seccomp cannot read); and `clone3`, whose flags
//!   seccomp cannot read, fails with `ENOSYS` so libc falls back to
//!   `clone`, whose flags it can. Without a jail, System V IPC and POSIX
//!   message queues too (the
//!   IPC namespace is the user's session's). See [`jail_rules`].
//! - on x86_64, every x32 system call fails with `ENOSYS`, as on a kernel
//!   built without x32 (systemd's `SystemCallArchitectures=native` does
//!   the same): an x32 binary cannot slip past a rule keyed on the x86_64
//!   number, and the rules need no x32 twins, which halves the filter the
//!   kernel compiles at every start-up. See [`enosys_program`].
//! - the network rules of `network: deny` and of port lists, which
//!   `super::network` owns.
//! - for children only, `openat2` fails with `ENOSYS` (see
//!   [`children_program`]): its mode is out of seccomp's sight, so it is the
//!   one way left to create a set-uid file. Magus keeps it for the gate.
//!   Without a jail, children's unix sockets too (`super::unix_sockets`).
//!
//! Built with `seccompiler` before any fork; installing it allocates
//! nothing. Every other syscall is allowed.

use std::collections::BTreeMap;
use std::io;
use std::sync::OnceLock;

use seccompiler::{
    sock_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use super::error::EnforceError;
use super::network::NetworkSeccomp;

/// `TIOCSTI`, `TIOCLINUX` and `TIOCSETD` from `<asm-generic/ioctls.h>`;
/// the same on x86_64, aarch64 and riscv64.
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
const TIOCSETD: u64 = 0x5423;

/// The file-type bits of a `mode_t`, and the two types of device node.
const S_IFMT: u64 = libc::S_IFMT as u64;
const DEVICE_TYPES: [u64; 2] = [libc::S_IFCHR as u64, libc::S_IFBLK as u64];

/// x32 syscalls share the x86_64 audit arch but set this bit in the
/// number; [`enosys_program`] refuses them all.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Whether the syscall guard is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallGuardStatus {
    /// The guarded calls fail with `EPERM` for this process and every
    /// descendant.
    Installed,
    /// Not installed (the caller chose not to, or it failed).
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    Absent,
}

/// Whether the process lives in the jail, which decides what else the
/// guard must close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardMode {
    /// In the jail (or no jail wanted): System V IPC and POSIX message
    /// queues are the jail's own.
    Jailed,
    /// No jail: System V IPC and POSIX message queues are refused, for
    /// they are the user's session's.
    Unjailed,
}

/// A compiled filter, ready to install: the `EPERM` rules and the `ENOSYS`
/// one for `clone3` and x32 (one action per seccomp filter, so two
/// programs).
#[derive(Debug, Clone)]
pub struct SyscallGuard {
    program: BpfProgram,
    enosys: BpfProgram,
    for_children: BpfProgram,
}

/// The children's addition, set once the guard is in force on magus; a
/// child applies it between clone and exec ([`apply_to_child`]). Global:
/// that child may not allocate or lock, and every launch site reaches it.
static FOR_CHILDREN: OnceLock<BpfProgram> = OnceLock::new();

impl SyscallGuard {
    /// Compiles the filter for the running architecture: the guard's own
    /// rules, the jail's (IPC's too when unjailed), and the rules
    /// the network setting needs (see [`super::network::seccomp_rules`]).
    pub fn build(mode: GuardMode, network: NetworkSeccomp) -> Result<Self, EnforceError> {
        let mut rules = ioctl_rules()?;
        merge(&mut rules, kernel_rules()?);
        merge(&mut rules, jail_rules()?);
        if mode == GuardMode::Unjailed {
            merge(&mut rules, session_ipc_rules());
        }
        merge(&mut rules, super::network::seccomp_rules(network)?);
        let program = compile(rules, libc::EPERM)?;
        Ok(SyscallGuard {
            program,
            enosys: enosys_program(),
            for_children: children_program()?,
        })
    }

    /// Installs the filter on the calling thread; it is inherited across
    /// `fork`, `clone` and `execve` and cannot be removed. Sets
    /// `no_new_privs` first, as seccomp requires. Allocates nothing, so it
    /// may run between `fork` and `exec`.
    /// Children started after this add [`children_program`] on top.
    pub fn install_on_self(&self) -> Result<SyscallGuardStatus, EnforceError> {
        self.install_raw()
            .map_err(|source| EnforceError::SeccompInstall { source })?;
        // A second install (never made) would keep the first program: the same.
        let _ = FOR_CHILDREN.set(self.for_children.clone());
        Ok(SyscallGuardStatus::Installed)
    }

    /// [`Self::install_on_self`] with a plain `io::Error`, for `pre_exec`.
    pub fn install_raw(&self) -> io::Result<()> {
        apply(&self.enosys)?;
        apply(&self.program)
    }
}

/// Adds `more` to `rules`; where both hold a syscall, a call is refused
/// when either refuses it (an empty list already refuses every call).
fn merge(rules: &mut BTreeMap<i64, Vec<SeccompRule>>, more: BTreeMap<i64, Vec<SeccompRule>>) {
    for (nr, list) in more {
        match rules.get_mut(&nr) {
            Some(existing) if existing.is_empty() => {}
            Some(existing) if list.is_empty() => existing.clear(),
            Some(existing) => existing.extend(list),
            None => {
                rules.insert(nr, list);
            }
        }
    }
}

pub(super) fn apply(program: &BpfProgram) -> io::Result<()> {
    seccompiler::apply_filter(program).map_err(|e| match e {
        seccompiler::Error::Prctl(source) | seccompiler::Error::Seccomp(source) => source,
        _ => io::Error::from_raw_os_error(libc::EINVAL),
    })
}

pub(super) fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: i32,
) -> Result<BpfProgram, EnforceError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        target_arch()?,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

/// The namespace flags of `clone` and `unshare`: a child may make none.
const NAMESPACE_FLAGS: [u64; 8] = [
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWTIME as u64,
];

/// The jail's rules (docs/jail.md): no way around the view. File handles
/// open any inode of a mounted filesystem (`open_by_handle_at`), mounts
/// and new namespaces rebuild or peel the view, `setns` joins another,
/// keyrings hold the session's secrets, fanotify watches whole
/// filesystems; `clone`/`unshare` are refused only with a namespace flag.
fn jail_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, EnforceError> {
    let mut rules = BTreeMap::new();
    for nr in jail_refused() {
        rules.insert(nr, Vec::new());
    }
    rules.extend(set_id_rules()?);
    for (nr, flags_arg) in [(libc::SYS_unshare, 0), (libc::SYS_clone, CLONE_FLAGS_ARG)] {
        let any_flag = NAMESPACE_FLAGS
            .iter()
            .map(|&flag| flag_set(flags_arg, flag))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(nr, any_flag);
    }
    Ok(rules)
}

/// The set-uid and set-gid bits: a program a child marks so would run as
/// its owner for whoever starts it later, outside the sandbox.
const SET_ID_BITS: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

/// The `open` flags under which the kernel uses the mode argument:
/// `O_CREAT`, and `O_TMPFILE`'s own bit (`__O_TMPFILE`, `O_TMPFILE`
/// without `O_DIRECTORY`), whose unnamed file a child can then link into
/// the workspace with its set-uid bit (`linkat` of `/proc/self/fd/N`).
const MODE_USING_FLAGS: [u64; 2] = [
    libc::O_CREAT as u64,
    (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64,
];

/// No set-uid or set-gid file from a child (Flatpak-style): `chmod` with
/// either bit, and creating a file with one (`open`/`creat`/`mknod`, with
/// `O_CREAT` or `O_TMPFILE`). `openat2` passes its mode in memory:
/// children cannot call it at all ([`children_program`]); nor can anyone
/// call io_uring, whose `OPENAT` does the same ([`jail_refused`]).
fn set_id_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, EnforceError> {
    let mut rules = BTreeMap::new();
    for (nr, mode_arg, create_flag_arg) in set_id_calls() {
        let mut any = Vec::new();
        for bit in SET_ID_BITS {
            let mode = masked(mode_arg, bit)?;
            match create_flag_arg {
                None => any.push(SeccompRule::new(vec![mode])?),
                Some(arg) => {
                    for flag in MODE_USING_FLAGS {
                        any.push(SeccompRule::new(vec![mode.clone(), masked(arg, flag)?])?);
                    }
                }
            }
        }
        rules.insert(nr, any);
    }
    Ok(rules)
}

/// A condition matching a call whose argument `arg` has every bit of
/// `bits` set (the low 32 bits: modes and open flags are `int`s).
fn masked(arg: u8, bits: u64) -> Result<SeccompCondition, EnforceError> {
    let op = SeccompCmpOp::MaskedEq(bits);
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        bits,
    )?)
}

/// `(number, mode argument, O_CREAT flags argument if the mode needs it)`;
/// `mknod`s are in [`kernel_rules`], which refuse set-id regular files too.
#[cfg(target_arch = "x86_64")]
fn set_id_calls() -> Vec<(i64, u8, Option<u8>)> {
    vec![
        (libc::SYS_chmod, 1, None),
        (libc::SYS_fchmod, 1, None),
        (libc::SYS_fchmodat, 2, None),
        (libc::SYS_fchmodat2, 2, None),
        (libc::SYS_creat, 1, None),
        (libc::SYS_open, 2, Some(1)),
        (libc::SYS_openat, 3, Some(2)),
    ]
}

#[cfg(not(target_arch = "x86_64"))]
fn set_id_calls() -> Vec<(i64, u8, Option<u8>)> {
    vec![
        (libc::SYS_fchmod, 1, None),
        (libc::SYS_fchmodat, 2, None),
        (libc::SYS_fchmodat2, 2, None),
        (libc::SYS_openat, 3, Some(2)),
    ]
}

/// `clone`'s flags are its first argument on every architecture we build.
const CLONE_FLAGS_ARG: u8 = 0;

fn jail_refused() -> Vec<i64> {
    vec![
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_setns,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_fanotify_init,
        // An io_uring request carries its arguments in shared memory, out
        // of seccomp's sight: `IORING_OP_OPENAT` creates set-uid files
        // (the `open` rules above never see its mode), `SOCKET` and
        // `CONNECT` go around the network rules. Docker's default profile
        // refuses it too; no build tool we know needs it.
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ]
}

/// The `ENOSYS` filter, written by hand because seccompiler keys rules on
/// exact numbers and x32 is a bit of the number. `clone3` passes its flags
/// in memory, out of seccomp's sight: `ENOSYS` makes glibc and musl fall
/// back to `clone`, which the rules above read. On x86_64 every x32 call
/// (the bit set) fails the same way. The architecture is not checked: the
/// number of `clone3` is 435 in every ABI of these machines, and the main
/// filter kills any call of a foreign architecture.
fn enosys_program() -> BpfProgram {
    let code = |bits: u32| bits as u16;
    let stmt = |bits: u32, k: u32| sock_filter {
        code: code(bits),
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |bits: u32, k: u32, jt: u8| sock_filter {
        code: code(bits),
        jt,
        jf: 0,
        k,
    };
    let refuse = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    let clone3 = libc::SYS_clone3 as u32;
    let mut program = vec![stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0)];
    #[cfg(target_arch = "x86_64")]
    program.push(jump(
        libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
        X32_SYSCALL_BIT,
        2,
    ));
    program.extend([
        jump(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, clone3, 1),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(libc::BPF_RET | libc::BPF_K, refuse),
    ]);
    program
}

/// What each child adds to the guard: `openat2` fails with `ENOSYS`, as on
/// a kernel older than 5.6, so libc and programs fall back to `openat`,
/// whose mode the guard reads ([`set_id_rules`]). Magus itself keeps
/// `openat2`, which its gate needs for `RESOLVE_BENEATH` and only ever
/// calls with a fixed mode.
fn children_program() -> Result<BpfProgram, EnforceError> {
    compile(
        BTreeMap::from([(libc::SYS_openat2, Vec::new())]),
        libc::ENOSYS,
    )
}

/// Adds the children's program to the calling process, once the guard is in
/// force on magus (nothing otherwise), and the refusal of unix sockets
/// where the run has one ([`super::unix_sockets`]). For the child between
/// clone and exec: it reads values set before any child existed and
/// allocates nothing. Returns the errno of a refused install.
pub(crate) fn apply_to_child() -> Result<(), libc::c_int> {
    if let Some(program) = FOR_CHILDREN.get() {
        apply(program).map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL))?;
    }
    super::unix_sockets::apply_to_child()
}

/// Without the jail's IPC namespace, System V IPC and POSIX message
/// queues (which live in the IPC namespace too, in its internal `mqueue`
/// mount) are the user's session's: a child would read, post to or remove
/// an application's queues. Landlock refuses `mq_open` where it is in
/// force; without it only this rule does.
fn session_ipc_rules() -> BTreeMap<i64, Vec<SeccompRule>> {
    let calls = [
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_shmdt,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semctl,
        libc::SYS_semtimedop,
        libc::SYS_mq_open,
        libc::SYS_mq_unlink,
        libc::SYS_mq_timedsend,
        libc::SYS_mq_timedreceive,
        libc::SYS_mq_notify,
        libc::SYS_mq_getsetattr,
    ];
    calls.into_iter().map(|nr| (nr, Vec::new())).collect()
}

/// A rule matching a call whose argument `arg` has `flag` set. Every
/// namespace flag lies in the low 32 bits, so one word is compared.
fn flag_set(arg: u8, flag: u64) -> Result<SeccompRule, EnforceError> {
    let op = SeccompCmpOp::MaskedEq(flag);
    let cond = SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, flag)?;
    Ok(SeccompRule::new(vec![cond])?)
}

fn ioctl_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, EnforceError> {
    let mut rules = BTreeMap::new();
    for nr in ioctl_numbers() {
        let refused = [TIOCSTI, TIOCLINUX, TIOCSETD].map(request_is);
        rules.insert(nr, refused.into_iter().collect::<Result<_, _>>()?);
    }
    Ok(rules)
}

/// The calls refused outright, and `mknod`/`mknodat` of a device node (the
/// `mode` argument's type bits; FIFOs, sockets and files stay allowed).
fn kernel_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, EnforceError> {
    let mut rules = BTreeMap::new();
    for nr in refused_outright() {
        // An empty rule list matches every call of that number.
        rules.insert(nr, Vec::new());
    }
    for (nr, mode_arg) in mknod_calls() {
        let mut refused = DEVICE_TYPES
            .iter()
            .map(|&kind| mode_is(mode_arg, kind))
            .collect::<Result<Vec<_>, _>>()?;
        for bit in SET_ID_BITS {
            let op = SeccompCmpOp::MaskedEq(bit);
            let cond = SeccompCondition::new(mode_arg, SeccompCmpArgLen::Dword, op, bit)?;
            refused.push(SeccompRule::new(vec![cond])?);
        }
        rules.insert(nr, refused);
    }
    Ok(rules)
}

fn mode_is(arg: u8, kind: u64) -> Result<SeccompRule, EnforceError> {
    let op = SeccompCmpOp::MaskedEq(S_IFMT);
    let cond = SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, kind)?;
    Ok(SeccompRule::new(vec![cond])?)
}

#[cfg(target_arch = "x86_64")]
fn refused_outright() -> Vec<i64> {
    let mut calls = portable_refused();
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm]);
    calls
}

#[cfg(not(target_arch = "x86_64"))]
fn refused_outright() -> Vec<i64> {
    portable_refused()
}

fn portable_refused() -> Vec<i64> {
    vec![
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
    ]
}

/// `(number, index of the mode argument)`.
#[cfg(target_arch = "x86_64")]
fn mknod_calls() -> Vec<(i64, u8)> {
    vec![(libc::SYS_mknod, 1), (libc::SYS_mknodat, 2)]
}

#[cfg(not(target_arch = "x86_64"))]
fn mknod_calls() -> Vec<(i64, u8)> {
    vec![(libc::SYS_mknodat, 2)]
}

/// A rule matching `ioctl(_, request, ..)`. The kernel's `ioctl` takes
/// `request` as `unsigned int`, so only the low 32 bits are compared: a
/// caller cannot dodge the rule by setting high bits.
fn request_is(request: u64) -> Result<SeccompRule, EnforceError> {
    let cond = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)?;
    Ok(SeccompRule::new(vec![cond])?)
}

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
        let guard =
            SyscallGuard::build(GuardMode::Jailed, NetworkSeccomp::None).expect("filter builds");
        // Arch check (3) + syscall load (1) + per syscall: jump, two rules of
        // (load, compare, return) and the fall-through return.
        assert!(guard.program.len() > 4 + ioctl_numbers().len());
    }

    #[test]
    fn every_network_variant_compiles_and_adds_rules() {
        use super::super::network::Listen;
        let base = SyscallGuard::build(GuardMode::Jailed, NetworkSeccomp::None)
            .expect("filter builds")
            .program
            .len();
        let variants = [
            NetworkSeccomp::NamespacedOnly,
            NetworkSeccomp::UnixOnly,
            NetworkSeccomp::TcpOnly {
                listen: Listen::Refused,
            },
            NetworkSeccomp::TcpOnly {
                listen: Listen::Allowed,
            },
        ];
        for network in variants {
            let guard = SyscallGuard::build(GuardMode::Jailed, network).expect("filter builds");
            assert!(guard.program.len() > base, "{network:?}");
        }
    }

    #[test]
    fn merging_keeps_the_stricter_rule() {
        let rule = || request_is(TIOCSTI).unwrap();
        let mut rules = BTreeMap::from([(1, vec![rule()]), (2, Vec::new()), (3, vec![rule()])]);
        let more = BTreeMap::from([
            (1, Vec::new()),
            (2, vec![rule()]),
            (3, vec![rule()]),
            (4, vec![]),
        ]);
        merge(&mut rules, more);
        let lens: Vec<usize> = rules.values().map(Vec::len).collect();
        assert_eq!(
            lens,
            [0, 0, 2, 0],
            "an empty list refuses every call and wins"
        );
    }
}

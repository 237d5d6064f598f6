//! What the start-up says about the kernel's part: every warning of a
//! layer that is missing or partial (MGS2005, MGS2012, the partial jail),
//! and the messages `sandbox.limits` has said when it ends a run. Built
//! here, said through the start-up report (`report`), and shown in full
//! by `magus sandbox check`.

#[cfg(kernel_layer)]
pub(crate) use kernel::*;
#[cfg(not(kernel_layer))]
pub(crate) use portable::*;

/// The kernel layer's notices.
#[cfg(kernel_layer)]
mod kernel {
    use super::super::kernel::Jail;
    use crate::diag::{Code, Diagnostic};
    use crate::enforce::jail::{UserNamespace, USERNS_VAR};
    use crate::enforce::limits::BoundSource;
    use crate::enforce::network::{NetnsUnavailable, NetworkPlan};
    use crate::enforce::unix_sockets::UnixSockets;
    use crate::enforce::{self, JailUnavailable, LandlockStatus, Unavailable, Unenforced};
    use crate::policy::limits::Seconds;
    use crate::policy::Limits;

    /// Said by the process that waits for magus when the wall time runs out.
    pub(crate) fn over_time_diagnostic(limits: &Limits) -> Diagnostic {
        let wall = limits.wall_time.map_or(0, |d| d.as_secs());
        Diagnostic::error(format!(
            "the run exceeded sandbox.limits.wall_time ({}); magus and every process it started were killed",
            Seconds(wall)
        ))
        .with_help("raise `limits.wall_time` in magus.yaml (and re-lock) if the spell needs longer")
    }

    /// Said by the supervisor (no PID namespace) when the run holds more
    /// processes than its bound and no `pids` cgroup made the forks fail.
    pub(crate) fn over_processes_diagnostic(limits: &Limits) -> Diagnostic {
        let (count, source) = enforce::limits::supervised_processes(limits);
        let bound = match source {
            BoundSource::Declared => format!("sandbox.limits.processes ({count})"),
            BoundSource::Default => {
                format!("the run's default bound of {count} processes (no PID namespace)")
            }
        };
        Diagnostic::error(format!(
            "the run exceeded {bound}, threads included; magus and every process it started were killed"
        ))
        .with_help("raise `limits.processes` in magus.yaml (and re-lock) if the spell needs more")
    }

    pub(crate) fn unenforced_processes() -> Diagnostic {
        Diagnostic::warning(
            "sandbox.limits.processes is not enforced: real root ignores RLIMIT_NPROC and this kernel keeps no per-namespace pid_max",
        )
        .with_help("run on Linux 6.14 or newer, or as an ordinary user")
    }

    /// The repository search hit its limit: say so, every run, since deeper
    /// hooks and config stay writable for children.
    pub(crate) fn search_truncated() -> Diagnostic {
        Diagnostic::warning(format!(
            "the search for git repositories in writable grants stopped after {} directories: \
             the hooks and config of deeper repositories are not protected from children",
            enforce::jail::protect::MAX_DIRS
        ))
        .with_help("grant narrower `rw` directories in magus.yaml")
    }

    /// The warning said at every run when part of the sandbox is not in force:
    /// Landlock rights the kernel lacks, no jail (and so no PID namespace).
    pub(crate) fn partial_enforcement(
        landlock: &LandlockStatus,
        jail: &Jail,
        sockets: &UnixSockets,
    ) -> Option<Diagnostic> {
        let mut missing = Vec::new();
        let mut help = Vec::new();
        if let LandlockStatus::Enforced { abi, unenforced } = landlock {
            let rights: Vec<String> = unenforced
                .iter()
                .filter(|u| !covered_by_jail(u, jail))
                .map(ToString::to_string)
                .collect();
            if !rights.is_empty() {
                missing.push(format!("Landlock ABI {abi} lacks: {}", rights.join(", ")));
                help.push("a newer kernel enforces the missing Landlock rights".to_string());
            }
        }
        if let Jail::Missing(reason) = jail {
            missing.push(format!(
                "no jail ({reason}): children see the host's filesystem outside the grants \
                 (unix sockets in /tmp and /run/user, metadata of ungranted paths), \
                 no /tmp or /dev/shm (the host's are not granted: $TMPDIR is a directory \
                 of the run's own), \
                 every process in /proc with its command line (no PID namespace), \
                 and protected paths inside writable grants; {}",
                unjailed_refusals(sockets)
            ));
            help.push(jail_help(reason));
        }
        if let Jail::Entered(UserNamespace::NotNeeded) = jail {
            missing.push(
                "no user namespace (refused to root): the jail's mounts are not locked; \
                 children hold no capability and the syscall guard refuses mount and umount, \
                 so they cannot peel them"
                    .to_string(),
            );
            help.push(
                "allow user namespaces for root (sysctl user.max_user_namespaces > 0)".to_string(),
            );
        }
        if missing.is_empty() {
            return None;
        }
        Some(
            Diagnostic::warning(format!(
                "the sandbox is only partly in force: {}",
                missing.join("; ")
            ))
            .with_help(help.join("; ")),
        )
    }

    /// What the syscall guard refuses children where there is no jail, and
    /// what stays open to them for want of it.
    fn unjailed_refusals(sockets: &UnixSockets) -> String {
        const IPC: &str = "System V IPC, POSIX message queues and keyrings";
        match sockets {
            UnixSockets::Refused => format!(
                "unix sockets (stream socketpairs aside), {IPC} are refused instead, \
                 except a socket magus.yaml grants by name"
            ),
            UnixSockets::OpenedBy(path) => format!(
                "{IPC} are refused instead; unix sockets are not, because magus.yaml grants \
                 the socket {}, and seccomp cannot tell one socket from another: children can \
                 reach every socket the user can (tmux, ssh-agent, the session bus)",
                path.display()
            ),
            UnixSockets::Confined => {
                format!("{IPC} are refused instead, and Landlock keeps unix sockets to the grants")
            }
        }
    }

    /// What the jail makes up for: without `resolve_unix` (ABI 9) Landlock
    /// lets a child connect to any pathname socket it can name, but in the
    /// jail only sockets inside the grants exist.
    fn covered_by_jail(missing: &Unenforced, jail: &Jail) -> bool {
        let jailed = matches!(jail, Jail::Entered(_) | Jail::Inherited);
        jailed
            && matches!(
                missing,
                Unenforced::FsRight {
                    name: "resolve_unix",
                    ..
                }
            )
    }

    fn jail_help(reason: &JailUnavailable) -> String {
        match reason {
            JailUnavailable::UsernsForcedOff => {
                format!("unset {USERNS_VAR} (it is meant for testing)")
            }
            JailUnavailable::Unshare(_) | JailUnavailable::IdMap(_) => {
                "allow user namespaces for magus: install contrib/apparmor/magus \
                 (README, \"User namespaces\"), or set the sysctl \
                 kernel.apparmor_restrict_unprivileged_userns=0 / \
                 kernel.unprivileged_userns_clone=1"
                    .to_string()
            }
            _ => "`magus sandbox check` shows the kernel's state".to_string(),
        }
    }

    /// MGS2012, at every run: `deny` enforced by the seccomp fallback, or port
    /// lists on a kernel whose Landlock cannot restrict TCP ports.
    pub(crate) fn network_fallback(
        plan: NetworkPlan,
        landlock: &LandlockStatus,
    ) -> Option<Diagnostic> {
        match plan {
            NetworkPlan::UnixSocketsOnly { why } => Some(deny_by_seccomp(why)),
            NetworkPlan::TcpPorts { .. } if !landlock_restricts_tcp(landlock) => {
                Some(ports_unenforced(landlock))
            }
            _ => None,
        }
    }

    fn landlock_restricts_tcp(landlock: &LandlockStatus) -> bool {
        match landlock {
            LandlockStatus::Enforced { unenforced, .. } => !unenforced
                .iter()
                .any(|u| matches!(u, Unenforced::Network { .. })),
            LandlockStatus::Unavailable { .. } => false,
        }
    }

    fn deny_by_seccomp(why: NetnsUnavailable) -> Diagnostic {
        Diagnostic::warning(format!(
            "`network: deny` is enforced by seccomp, not a network namespace ({why})"
        ))
        .with_code(Code::Mgs2012)
        .with_note("children can create no socket but AF_UNIX, loopback included, and cannot use io_uring")
        .with_help("allow unprivileged user namespaces for magus (`magus explain MGS2012` shows how) to get a loopback-only namespace instead")
    }

    fn ports_unenforced(landlock: &LandlockStatus) -> Diagnostic {
        let why = match landlock.abi() {
            Some(abi) => {
                format!("Landlock ABI {abi} has no TCP rights; they need ABI 4, Linux 6.7")
            }
            None => "Landlock is unavailable".to_string(),
        };
        Diagnostic::warning(format!(
            "the TCP port lists of `network:` are not enforced ({why})"
        ))
        .with_code(Code::Mgs2012)
        .with_note("children may connect to and bind any TCP port; UDP, ICMP, raw, packet and MPTCP sockets, TCP Fast Open and io_uring stay refused (seccomp)")
        .with_help("run on Linux 6.7 or newer with Landlock enabled, or use `network: deny`")
    }

    /// MGS2005: said once, at startup, whenever no kernel domain is in force.
    pub(crate) fn landlock_unavailable(reason: Unavailable) -> Diagnostic {
        Diagnostic::warning(format!(
            "Landlock is unavailable ({reason}): only the interpreter-level gate is in force"
        ))
        .with_code(Code::Mgs2005)
        .with_note("spells' fs.*, sh.* and env.* are still checked, but programs they start are not confined by the kernel")
        .with_help("run on Linux 5.13 or newer with Landlock enabled (`magus sandbox check` shows the kernel's state)")
    }
}

/// Without the kernel layer: the one notice.
#[cfg(not(kernel_layer))]
mod portable {
    use crate::diag::{Code, Diagnostic};
    use crate::enforce;

    /// MGS2005 of a magus built without the kernel layer: the platform, and
    /// what is and is not confined.
    pub(crate) fn interpreter_only() -> Diagnostic {
        Diagnostic::warning(format!(
            "no kernel confinement on {}: only the interpreter layer is in force",
            enforce::platform()
        ))
        .with_code(Code::Mgs2005)
        .with_note("children can read any file you can; only fs.* is confined")
        .with_note("sh.* still refuses programs outside the grants and children get only the allowed environment; `network:` and `sandbox.limits` are not enforced")
        .with_help("run spells you do not trust on Linux, with a magus built with the default `kernel` feature (Landlock and the jail)")
    }
}

//! The Landlock domain compiled from the resolved policy (docs/design.md): the
//! ruleset built from `[Grant]` + [`Network`] with the official `landlock`
//! crate, its installation on magus itself, a descriptor kept for nesting
//! every child one level deeper, and the typed report of what the running
//! kernel could not enforce. Nothing here decides policy or prints.

use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

use ::landlock::{
    Access, AccessFs, AccessNet, BitFlags, NetPort, PathBeneath, PathFd, PathFdError, RestrictSelf,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::error::EnforceError;
use super::process::thread_count;
use crate::policy::{Grant, Mode, Network};

/// The newest ABI this build knows. Every right up to it is requested; the
/// crate's best-effort mode drops what the running kernel lacks, and
/// [`LandlockStatus`] names each dropped right.
const TARGET_ABI: ABI = ABI::V10;

/// Every ABI the crate defines, oldest first, to find when a right appeared.
const KNOWN_ABIS: [ABI; 10] = [
    ABI::V1,
    ABI::V2,
    ABI::V3,
    ABI::V4,
    ABI::V5,
    ABI::V6,
    ABI::V7,
    ABI::V8,
    ABI::V9,
    ABI::V10,
];

/// Whether the caller wants Landlock at all. `MAGUS_SANDBOX_LANDLOCK=0`
/// maps to [`LandlockRequest::ForcedOff`] (interpreter-only mode, MGS2005).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockRequest {
    /// Install Landlock where the kernel has it.
    Enforce,
    /// Do not install Landlock, as if the kernel lacked it.
    ForcedOff,
}

impl LandlockRequest {
    /// Reads the value of `MAGUS_SANDBOX_LANDLOCK` (the caller fetches it):
    /// exactly `0` forces Landlock off, anything else (or unset) enforces.
    pub fn from_env_value(value: Option<&OsStr>) -> Self {
        match value {
            Some(v) if v == "0" => LandlockRequest::ForcedOff,
            _ => LandlockRequest::Enforce,
        }
    }
}

/// Why no Landlock domain is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// `MAGUS_SANDBOX_LANDLOCK=0`.
    ForcedOff,
    /// The kernel is built without Landlock (`ENOSYS`).
    NotImplemented,
    /// Landlock is built in but not enabled at boot (`EOPNOTSUPP`).
    NotEnabled,
    /// The kernel took the ruleset but enforces none of it.
    NotEnforced,
    /// Asking the kernel for its Landlock ABI failed, with the OS error
    /// when the crate reported one (never a guessed cause).
    ProbeFailed(Option<nix::errno::Errno>),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unavailable::ForcedOff => "disabled by MAGUS_SANDBOX_LANDLOCK=0",
            Unavailable::NotImplemented => "the kernel is built without Landlock",
            Unavailable::NotEnabled => "Landlock is not enabled at boot (see the `lsm=` parameter)",
            Unavailable::NotEnforced => "the kernel accepted the ruleset but enforces none of it",
            Unavailable::ProbeFailed(Some(errno)) => {
                return write!(
                    f,
                    "asking the kernel for its Landlock ABI failed: {}",
                    errno.desc()
                )
            }
            Unavailable::ProbeFailed(None) => "asking the kernel for its Landlock ABI failed",
        })
    }
}

/// One restriction the policy asked for that the running kernel cannot
/// enforce, with the Landlock ABI that introduced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unenforced {
    /// A filesystem right, named as the kernel names it (e.g. `refer`).
    FsRight { name: &'static str, since_abi: u8 },
    /// TCP bind/connect restrictions (`network:` in `magus.yaml`).
    Network { since_abi: u8 },
    /// A scope: abstract unix sockets or signals.
    Scope { name: &'static str, since_abi: u8 },
}

impl fmt::Display for Unenforced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unenforced::FsRight { name, since_abi } => write!(f, "{name} (ABI {since_abi})"),
            Unenforced::Network { since_abi } => write!(f, "network (ABI {since_abi})"),
            Unenforced::Scope { name, since_abi } => write!(f, "{name} scoping (ABI {since_abi})"),
        }
    }
}

/// How much of the requested restriction is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    Partial,
    None,
}

/// What the kernel enforces for this policy: for `magus sandbox check`
/// and for MGS2005.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LandlockStatus {
    /// A domain is (or would be) in force. `unenforced` lists every right
    /// or scope the kernel's ABI lacks; empty means fully enforced.
    Enforced {
        abi: u8,
        unenforced: Vec<Unenforced>,
    },
    /// No domain at all: interpreter-level protection only.
    Unavailable { reason: Unavailable },
}

impl LandlockStatus {
    /// Full, partial, or none.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn enforcement(&self) -> Enforcement {
        match self {
            LandlockStatus::Enforced { unenforced, .. } if unenforced.is_empty() => {
                Enforcement::Full
            }
            LandlockStatus::Enforced { .. } => Enforcement::Partial,
            LandlockStatus::Unavailable { .. } => Enforcement::None,
        }
    }

    /// The kernel's Landlock ABI, when it has one and it was asked for.
    pub fn abi(&self) -> Option<u8> {
        match self {
            LandlockStatus::Enforced { abi, .. } => Some(*abi),
            LandlockStatus::Unavailable { .. } => None,
        }
    }
}

/// What the running kernel supports, and what of this policy it could not
/// enforce, without restricting anything (for `magus sandbox check`).
pub(crate) fn probe(network: &Network, request: LandlockRequest) -> LandlockStatus {
    if request == LandlockRequest::ForcedOff {
        return LandlockStatus::Unavailable {
            reason: Unavailable::ForcedOff,
        };
    }
    // A domain-less RestrictSelf with no flags and no_new_privs off makes no
    // syscall but the version query: the crate's public way to read the ABI.
    let kernel = RestrictSelf::default().no_new_privs(false).apply();
    match kernel {
        Ok(status) => status_for(status.landlock, network),
        Err(e) => LandlockStatus::Unavailable {
            reason: Unavailable::ProbeFailed(os_error_in(&e)),
        },
    }
}

/// The OS error at the root of `error`, if the chain carries one.
fn os_error_in(error: &(dyn std::error::Error + 'static)) -> Option<nix::errno::Errno> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(raw) = e
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error)
        {
            return Some(nix::errno::Errno::from_raw(raw));
        }
        current = e.source();
    }
    None
}

fn status_for(kernel: ::landlock::LandlockStatus, network: &Network) -> LandlockStatus {
    match kernel {
        ::landlock::LandlockStatus::NotEnabled => LandlockStatus::Unavailable {
            reason: Unavailable::NotEnabled,
        },
        ::landlock::LandlockStatus::NotImplemented => LandlockStatus::Unavailable {
            reason: Unavailable::NotImplemented,
        },
        ::landlock::LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => LandlockStatus::Enforced {
            abi: abi_number(kernel_abi.unwrap_or(effective_abi as i32)),
            unenforced: unenforced(effective_abi, network),
        },
    }
}

fn abi_number(raw: i32) -> u8 {
    u8::try_from(raw).unwrap_or(u8::MAX)
}

/// Everything requested from `TARGET_ABI` that `abi` lacks.
fn unenforced(abi: ABI, network: &Network) -> Vec<Unenforced> {
    let mut out = Vec::new();
    for right in AccessFs::from_all(TARGET_ABI) & !AccessFs::from_all(abi) {
        out.push(Unenforced::FsRight {
            name: fs_right_name(right),
            since_abi: since_abi(|a| AccessFs::from_all(a).contains(right)),
        });
    }
    if let Some(net) = handled_net(network) {
        if !AccessNet::from_all(abi).contains(net) {
            out.push(Unenforced::Network {
                since_abi: since_abi(|a| AccessNet::from_all(a).contains(net)),
            });
        }
    }
    for scope in Scope::from_all(TARGET_ABI) & !Scope::from_all(abi) {
        out.push(Unenforced::Scope {
            name: scope_name(scope),
            since_abi: since_abi(|a| Scope::from_all(a).contains(scope)),
        });
    }
    out
}

fn since_abi(has: impl Fn(ABI) -> bool) -> u8 {
    KNOWN_ABIS
        .iter()
        .position(|abi| has(*abi))
        .map_or(u8::MAX, |i| abi_number(i as i32 + 1))
}

fn fs_right_name(right: AccessFs) -> &'static str {
    match right {
        AccessFs::Execute => "execute",
        AccessFs::WriteFile => "write_file",
        AccessFs::ReadFile => "read_file",
        AccessFs::ReadDir => "read_dir",
        AccessFs::RemoveDir => "remove_dir",
        AccessFs::RemoveFile => "remove_file",
        AccessFs::MakeChar => "make_char",
        AccessFs::MakeDir => "make_dir",
        AccessFs::MakeReg => "make_reg",
        AccessFs::MakeSock => "make_sock",
        AccessFs::MakeFifo => "make_fifo",
        AccessFs::MakeBlock => "make_block",
        AccessFs::MakeSym => "make_sym",
        AccessFs::Refer => "refer",
        AccessFs::Truncate => "truncate",
        AccessFs::IoctlDev => "ioctl_dev",
        AccessFs::ResolveUnix => "resolve_unix",
        _ => "unknown filesystem right",
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::AbstractUnixSocket => "abstract unix socket",
        Scope::Signal => "signal",
        _ => "unknown",
    }
}

/// The TCP rights a [`Network`] setting restricts: only port lists.
/// `deny` is enforced whole by a network namespace or by seccomp
/// (`super::network`), which leave loopback inside the namespace usable.
fn handled_net(network: &Network) -> Option<BitFlags<AccessNet>> {
    match network {
        Network::Allow | Network::Deny => None,
        Network::Ports { .. } | Network::Hosts(_) => {
            Some(AccessNet::BindTcp | AccessNet::ConnectTcp)
        }
    }
}

/// The rights a grant of `mode` gives, trimmed to what a non-directory
/// accepts when the grant is a file (the kernel rejects directory rights
/// on files; the crate would trim them too, but report "partial").
///
/// `rw` is every right but making device nodes, which no grant gives: a
/// block device node in the workspace would be the whole disk. (The
/// syscall guard refuses them too, for interpreter-only mode.)
fn rights(mode: Mode, is_dir: bool) -> BitFlags<AccessFs> {
    let all = match mode {
        Mode::Ro => AccessFs::from_read(TARGET_ABI),
        Mode::Rw => AccessFs::from_all(TARGET_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock),
    };
    if is_dir {
        all
    } else {
        all & AccessFs::from_file(TARGET_ABI)
    }
}

fn path_rule(grant: &Grant) -> Result<PathBeneath<PathFd>, EnforceError> {
    let fd = PathFd::new(&grant.path).map_err(|e| match e {
        PathFdError::OpenCall { source, path, .. } => EnforceError::OpenGrant { path, source },
        other => EnforceError::OpenGrant {
            path: grant.path.clone(),
            source: io::Error::other(other.to_string()),
        },
    })?;
    rule_on(grant, fd)
}

/// The rule for `grant`, on the file `fd` opened for it.
fn rule_on<F: AsFd>(grant: &Grant, fd: F) -> Result<PathBeneath<F>, EnforceError> {
    let stat = nix::sys::stat::fstat(fd.as_fd()).map_err(|errno| EnforceError::OpenGrant {
        path: grant.path.clone(),
        source: io::Error::from(errno),
    })?;
    let is_dir = stat.st_mode & libc::S_IFMT == libc::S_IFDIR;
    Ok(PathBeneath::new(fd, rights(grant.mode, is_dir)))
}

fn port_rules(network: &Network) -> Vec<NetPort> {
    let Network::Ports {
        connect_tcp,
        bind_tcp,
    } = network
    else {
        return Vec::new();
    };
    let connect = connect_tcp
        .iter()
        .map(|p| NetPort::new(*p, AccessNet::ConnectTcp));
    let bind = bind_tcp
        .iter()
        .map(|p| NetPort::new(*p, AccessNet::BindTcp));
    connect.chain(bind).collect()
}

/// Builds (but does not install) the ruleset of a policy: every
/// filesystem right handled, `ro` = read + execute, `rw` = everything,
/// TCP handled unless the network is allowed, both scopes handled.
pub(crate) fn build_ruleset(
    grants: &[Grant],
    network: &Network,
) -> Result<RulesetCreated, EnforceError> {
    let mut created = empty_ruleset(network)?;
    for grant in grants {
        created = created.add_rule(path_rule(grant)?)?;
    }
    for port in port_rules(network) {
        created = created.add_rule(port)?;
    }
    Ok(created)
}

/// A ruleset handling every right of `network` and the filesystem, with
/// no rule yet.
fn empty_ruleset(network: &Network) -> Result<RulesetCreated, EnforceError> {
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(TARGET_ABI))?;
    if let Some(net) = handled_net(network) {
        ruleset = ruleset.handle_access(net)?;
    }
    Ok(ruleset.scope(Scope::from_all(TARGET_ABI))?.create()?)
}

/// The Landlock domain magus runs in, and the means to nest each child
/// one level deeper.
#[derive(Debug)]
pub struct Domain {
    status: LandlockStatus,
    /// The same ruleset, kept open so each child can restrict itself again
    /// between fork and exec. `None` when no domain is in force.
    for_children: Option<RulesetCreated>,
}

impl Domain {
    /// A domain that confines nothing (Landlock unavailable or forced off).
    pub fn unconfined(reason: Unavailable) -> Self {
        Domain {
            status: LandlockStatus::Unavailable { reason },
            for_children: None,
        }
    }

    /// What the kernel enforces.
    pub fn status(&self) -> &LandlockStatus {
        &self.status
    }

    /// A restriction for one child, prepared in the parent (one `dup`), to
    /// be applied with [`ChildRestriction::restrict_self`] after `fork`.
    pub fn child_restriction(&self) -> Result<ChildRestriction, EnforceError> {
        let ruleset = match &self.for_children {
            Some(r) => Some(
                r.try_clone()
                    .map_err(|source| EnforceError::DupRuleset { source })?,
            ),
            None => None,
        };
        Ok(ChildRestriction { ruleset })
    }
}

/// Installs the policy's Landlock domain on the calling process.
///
/// Call it on the main thread before any other thread exists (Landlock
/// restricts only the calling thread and what it later creates) and after
/// [`super::jail::enter`], because a restricted
/// process can no longer mount the private `/proc`.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn install_on_self(
    grants: &[Grant],
    network: &Network,
    request: LandlockRequest,
) -> Result<Domain, EnforceError> {
    begin(&[], network, request, |_| None)?.finish(grants)
}

/// [`install_on_self`] in two steps, for a jail whose view is still being
/// built: the rules of `ahead` are made now, each on the file `open`
/// gives for its grant (the host's inode, which the view binds: a rule
/// follows the inode through every mount of it), and the rest, with the
/// restriction itself, by [`Building::finish`] once the view is there.
/// A grant `open` gives nothing for waits for `finish` too.
pub(crate) fn begin(
    ahead: &[Grant],
    network: &Network,
    request: LandlockRequest,
    open: impl Fn(&Grant) -> Option<OwnedFd>,
) -> Result<Building, EnforceError> {
    let status = probe(network, request);
    if let LandlockStatus::Unavailable { reason } = status {
        return Ok(Building::Unavailable(reason));
    }
    let mut created = empty_ruleset(network)?;
    let mut left = Vec::new();
    for grant in ahead {
        match open(grant) {
            Some(fd) => created = created.add_rule(rule_on(grant, fd)?)?,
            None => left.push(grant.clone()),
        }
    }
    for port in port_rules(network) {
        created = created.add_rule(port)?;
    }
    Ok(Building::Started {
        status,
        created,
        left,
    })
}

/// A domain [`begin`] has started: its ruleset, not yet in force.
#[derive(Debug)]
pub(crate) enum Building {
    /// Landlock is not there (or forced off): nothing to put in force.
    Unavailable(Unavailable),
    Started {
        status: LandlockStatus,
        created: RulesetCreated,
        /// The grants of `begin` it could not open.
        left: Vec<Grant>,
    },
}

impl Building {
    /// Adds the rules of `grants` (opened by path, here and now) and of
    /// those `begin` could not open, and puts the domain in force on the
    /// calling process (see [`install_on_self`]).
    pub(crate) fn finish(self, grants: &[Grant]) -> Result<Domain, EnforceError> {
        let (status, mut created, left) = match self {
            Building::Unavailable(reason) => return Ok(Domain::unconfined(reason)),
            Building::Started {
                status,
                created,
                left,
            } => (status, created, left),
        };
        if let Some(count) = thread_count().filter(|n| *n > 1) {
            return Err(EnforceError::ThreadsRunning { count });
        }
        for grant in left.iter().chain(grants) {
            created = created.add_rule(path_rule(grant)?)?;
        }
        let for_children = created
            .try_clone()
            .map_err(|source| EnforceError::DupRuleset { source })?;
        let restriction = created.restrict_self()?;
        if restriction.ruleset == RulesetStatus::NotEnforced {
            return Ok(Domain::unconfined(Unavailable::NotEnforced));
        }
        Ok(Domain {
            status,
            for_children: Some(for_children),
        })
    }
}

/// A prepared, not yet applied, nested restriction for one child.
#[derive(Debug)]
pub struct ChildRestriction {
    ruleset: Option<RulesetCreated>,
}

impl ChildRestriction {
    /// Enters the nested domain. Meant for the child between `fork` and
    /// `exec`: it makes two syscalls (`prctl(PR_SET_NO_NEW_PRIVS)` and
    /// `landlock_restrict_self`), closes the descriptor, and allocates
    /// nothing, so it is async-signal-safe. A second call does nothing.
    pub fn restrict_self(&mut self) -> Result<(), nix::errno::Errno> {
        let Some(ruleset) = self.ruleset.take() else {
            return Ok(());
        };
        match ruleset.restrict_self() {
            Ok(_) => Ok(()),
            // errno is still that of the failed call; reading it allocates nothing.
            Err(_) => Err(nix::errno::Errno::last()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_value_zero_forces_off() {
        let cases: [(Option<&str>, LandlockRequest); 4] = [
            (Some("0"), LandlockRequest::ForcedOff),
            (Some("1"), LandlockRequest::Enforce),
            (Some(""), LandlockRequest::Enforce),
            (None, LandlockRequest::Enforce),
        ];
        for (value, expected) in cases {
            assert_eq!(
                LandlockRequest::from_env_value(value.map(OsStr::new)),
                expected,
                "{value:?}"
            );
        }
    }

    #[test]
    fn older_abis_report_what_they_lack() {
        let names = |abi, net: &Network| -> Vec<String> {
            unenforced(abi, net).iter().map(|u| u.to_string()).collect()
        };
        let ports = Network::Ports {
            connect_tcp: vec![443],
            bind_tcp: vec![],
        };
        assert_eq!(
            names(ABI::V1, &ports),
            [
                "refer (ABI 2)",
                "truncate (ABI 3)",
                "ioctl_dev (ABI 5)",
                "resolve_unix (ABI 9)",
                "network (ABI 4)",
                "abstract unix socket scoping (ABI 6)",
                "signal scoping (ABI 6)",
            ]
        );
        assert_eq!(names(ABI::V7, &Network::Allow), ["resolve_unix (ABI 9)"]);
        assert!(names(ABI::V10, &ports).is_empty());
        assert_eq!(
            names(ABI::V1, &Network::Deny).len(),
            6,
            "deny needs no TCP right"
        );
    }

    #[test]
    fn file_grants_get_only_file_rights() {
        let file_rw = rights(Mode::Rw, false);
        assert!(file_rw.contains(AccessFs::WriteFile | AccessFs::Truncate));
        assert!(!file_rw.contains(AccessFs::ReadDir));
        assert!(!file_rw.contains(AccessFs::MakeReg));
        assert_eq!(rights(Mode::Ro, true), AccessFs::from_read(TARGET_ABI));
        let dir_rw = rights(Mode::Rw, true);
        assert!(dir_rw.contains(AccessFs::MakeReg | AccessFs::MakeFifo | AccessFs::MakeSock));
        assert!(!dir_rw.intersects(AccessFs::MakeChar | AccessFs::MakeBlock));
    }

    #[test]
    fn forced_off_is_unavailable_without_probing() {
        let status = probe(&Network::Allow, LandlockRequest::ForcedOff);
        assert_eq!(status.enforcement(), Enforcement::None);
        assert_eq!(status.abi(), None);
    }

    #[test]
    fn ports_become_rules_for_their_direction() {
        let net = Network::Ports {
            connect_tcp: vec![443, 80],
            bind_tcp: vec![8080],
        };
        assert_eq!(port_rules(&net).len(), 3);
        assert!(port_rules(&Network::Deny).is_empty());
        assert_eq!(handled_net(&Network::Allow), None);
        assert_eq!(handled_net(&Network::Deny), None);
    }

    /// What `begin` relies on: a rule made on a file opened one way covers
    /// the same inode reached through a bind mount of it (the jail's view),
    /// and a grant the opener gives nothing for is opened by path at
    /// `finish`. In a child with namespaces of its own (Landlock is for
    /// good, and the mount is the child's). The control: before the domain,
    /// the ungranted directory reads.
    #[test]
    fn a_rule_made_ahead_follows_its_inode_through_a_bind() {
        use nix::sys::wait::{waitpid, WaitStatus};
        use nix::unistd::{fork, ForkResult};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for name in ["host", "view", "other", "late"] {
            std::fs::create_dir(root.join(name)).unwrap();
            std::fs::write(root.join(name).join("file"), name).unwrap();
        }
        // SAFETY: the child makes system calls, reads files and `_exit`s.
        match unsafe { fork() }.expect("fork") {
            ForkResult::Child => {
                let code = rule_through_bind(&root);
                // SAFETY: _exit is always safe.
                unsafe { libc::_exit(code) }
            }
            ForkResult::Parent { child } => match waitpid(child, None).expect("wait") {
                WaitStatus::Exited(_, 77) => eprintln!("skipped: no namespaces or Landlock"),
                status => assert_eq!(status, WaitStatus::Exited(child, 0)),
            },
        }
    }

    fn rule_through_bind(root: &std::path::Path) -> i32 {
        use nix::mount::{mount, MsFlags};
        use nix::sched::{unshare, CloneFlags};
        let probe_status = probe(&Network::Allow, LandlockRequest::Enforce);
        let none: Option<&str> = None;
        let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
        if matches!(probe_status, LandlockStatus::Unavailable { .. })
            || unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).is_err()
            || mount(none, "/", none, private, none).is_err()
        {
            return 77;
        }
        let (host, view) = (root.join("host"), root.join("view"));
        if mount(Some(&host), &view, none, MsFlags::MS_BIND, none).is_err() {
            return 1;
        }
        let read = |name: &str| std::fs::read_to_string(root.join(name).join("file")).ok();
        if read("other").as_deref() != Some("other") {
            return 2;
        }
        let grant = |name: &str| Grant {
            path: root.join(name),
            mode: Mode::Ro,
            source: crate::policy::GrantSource::Builtin("test"),
        };
        // The rule for `view` is made on `host`'s directory, as `begin`
        // gets the host's inode for what the view binds; `late` is left
        // to `finish`.
        let open = |g: &Grant| match g.path.ends_with("view") {
            true => std::fs::File::open(&host).ok().map(OwnedFd::from),
            false => None,
        };
        let building = begin(
            &[grant("view"), grant("late")],
            &Network::Allow,
            LandlockRequest::Enforce,
            open,
        );
        let Ok(domain) = building.and_then(|b| b.finish(&[])) else {
            return 3;
        };
        if domain.status().enforcement() == Enforcement::None {
            return 77;
        }
        match (
            read("view").as_deref(),
            read("late").as_deref(),
            read("other"),
        ) {
            (Some("host"), Some("late"), None) => 0,
            (_, _, Some(_)) => 6,
            (_, None, _) => 5,
            _ => 4,
        }
    }
}

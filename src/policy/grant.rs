//! The vocabulary of a resolved policy: what a grant is, what it allows and
//! where it came from. Both enforcement layers are built from these types,
//! so they are the contract between `policy`, `enforce` and `diag`.

use std::fmt;
use std::path::PathBuf;

/// The rights of one grant, as `magus.yaml` spells them.
///
/// `Ro` is read + execute; `Rw` is every filesystem right. `Rw` includes
/// `Ro`, so the rights of a path are the greatest mode over all granted
/// ancestors, which is exactly what Landlock enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Read files, list directories, execute programs.
    Ro,
    /// Everything: also create, write, truncate, rename, remove.
    Rw,
}

impl Mode {
    /// Whether this mode permits `access`.
    pub fn permits(self, access: Access) -> bool {
        match access {
            Access::Read | Access::Execute => true,
            Access::Write => self == Mode::Rw,
        }
    }

    /// The spelling used in `magus.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Ro => "ro",
            Mode::Rw => "rw",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = UnknownMode;

    /// `ro` or `rw`, as `magus.yaml` and `magus.lock` both spell them.
    fn from_str(word: &str) -> Result<Mode, UnknownMode> {
        match word {
            "ro" => Ok(Mode::Ro),
            "rw" => Ok(Mode::Rw),
            _ => Err(UnknownMode),
        }
    }
}

/// A word that is neither `ro` nor `rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("expected `ro` or `rw`")]
pub struct UnknownMode;

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One kind of operation a gate asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read a file, list a directory, test existence, stat.
    Read,
    /// Create, write, truncate, rename, remove, make a directory.
    Write,
    /// Execute a program.
    Execute,
}

impl Access {
    /// The mode a grant needs for this access.
    pub fn needed_mode(self) -> Mode {
        match self {
            Access::Read | Access::Execute => Mode::Ro,
            Access::Write => Mode::Rw,
        }
    }
}

/// Where a grant came from, so every decision can be explained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantSource {
    /// Part of the default allowlist (docs/configuration.md); the text says why.
    Builtin(&'static str),
    /// The workspace root.
    Workspace,
    /// A `sandbox.allow` entry of `magus.yaml`.
    Config {
        /// The path as written in `magus.yaml`.
        spelled: String,
        /// 1-based line of the entry's `path:` value.
        line: u32,
        /// 1-based column of the entry's `path:` value.
        column: u32,
        /// The spell whose `spells:` section holds the entry; `None` for
        /// the workspace's `sandbox.allow`.
        spell: Option<String>,
    },
}

impl fmt::Display for GrantSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantSource::Builtin(why) => write!(f, "built-in ({why})"),
            GrantSource::Workspace => f.write_str("workspace root"),
            GrantSource::Config {
                line, spell: None, ..
            } => write!(f, "magus.yaml line {line}"),
            GrantSource::Config {
                line,
                spell: Some(name),
                ..
            } => write!(f, "magus.yaml line {line}, `spells: {name}:`"),
        }
    }
}

/// One granted path: real (symlink-free, absolute), with its mode and source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The granted path (real, absolute).
    pub path: PathBuf,
    /// What the grant allows beneath it.
    pub mode: Mode,
    /// Where the grant came from, for diagnostics.
    pub source: GrantSource,
}

impl Grant {
    /// Whether the jail gives this grant a filesystem of the run's own
    /// ([`super::builtin::PRIVATE_PER_RUN`]) instead of the host's path.
    pub fn is_private_per_run(&self) -> bool {
        matches!(&self.source, GrantSource::Builtin(why) if super::builtin::PRIVATE_PER_RUN.contains(why))
    }

    /// Whether the jail gives this grant a fresh, empty directory of the
    /// run's own ([`super::builtin::PRIVATE_TMPFS`]: `/tmp`, `/dev/shm`,
    /// `$TMPDIR`).
    pub(crate) fn is_fresh_tmpfs(&self) -> bool {
        matches!(&self.source, GrantSource::Builtin(why) if super::builtin::PRIVATE_TMPFS.contains(why))
    }
}

/// The `network` setting (docs/network.md), enforced by Landlock ABI ≥ 4.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// No network restriction (the default).
    #[default]
    Allow,
    /// No TCP connect or bind at all.
    Deny,
    /// Only these TCP ports may be connected to or bound.
    Ports {
        connect_tcp: Vec<u16>,
        bind_tcp: Vec<u16>,
    },
    /// Only these hosts, by name, through magus's filtering proxy; no
    /// direct TCP connect or bind (`network: {hosts: [...]}`).
    Hosts(crate::policy::HostList),
}

impl Network {
    /// The setting a single word names (`allow`, `deny`), as `magus.yaml`
    /// and `magus.lock` both spell it; port lists are not words.
    pub fn from_word(word: &str) -> Option<Network> {
        match word {
            "allow" => Some(Network::Allow),
            "deny" => Some(Network::Deny),
            _ => None,
        }
    }
}

/// Whether the sandbox is on for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxState {
    /// Both layers enforce the policy.
    On,
    /// Nothing is confined: the sandbox is turned off for this run.
    Off,
}

/// Whether `path` is `ancestor` or lies below it, as [`std::path::Path::starts_with`]
/// answers. Start-up compares every grant with every other and with each
/// mount point (thousands of pairs), nearly all unrelated: two absolute
/// Unix paths are compared name by name in one pass over their bytes that
/// stops at the first name that differs, usually the first or second,
/// where checking both paths whole before comparing cost 0.2 ms a run.
pub(crate) fn lies_within(path: &std::path::Path, ancestor: &std::path::Path) -> bool {
    let (p, a) = (
        path.as_os_str().as_encoded_bytes(),
        ancestor.as_os_str().as_encoded_bytes(),
    );
    match (p.first(), a.first()) {
        (Some(b'/'), Some(b'/')) if cfg!(unix) => names_within(p, a),
        _ => path.starts_with(ancestor),
    }
}

/// [`lies_within`] for two absolute Unix paths: `Path::starts_with`
/// compares their names, which skip empty names (`//`, a trailing `/`)
/// and `.`, and keep `..` as a name.
fn names_within(mut path: &[u8], mut ancestor: &[u8]) -> bool {
    loop {
        let Some(want) = next_name(&mut ancestor) else {
            return true;
        };
        if next_name(&mut path) != Some(want) {
            return false;
        }
    }
}

/// The next name of `rest` that `Path::components` would yield, and
/// `rest` moved past it.
fn next_name<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    loop {
        let trimmed = rest.iter().position(|&b| b != b'/').map(|i| &rest[i..])?;
        let end = trimmed
            .iter()
            .position(|&b| b == b'/')
            .unwrap_or(trimmed.len());
        let (name, after) = trimmed.split_at(end);
        *rest = after;
        if name != b"." {
            return Some(name);
        }
    }
}

#[cfg(test)]
mod within_tests {
    use super::lies_within;
    use std::path::Path;

    #[test]
    fn lies_within_agrees_with_path_starts_with() {
        let paths = [
            "/", "/a", "/a/b", "/a-b", "/ab", "/a/b/c", "/a//b", "/a/./b", "/a/../b", "/a/", "a/b",
            "", "/a/b/", "//", "/.", "/./", "/./a", "/a/.", "/a/..", "/..", "/a/b/.", "//a//b//",
            "/.a", "/a/.b", "/...", "./a", "a", ".",
        ];
        for p in paths {
            for a in paths {
                let want = Path::new(p).starts_with(a);
                assert_eq!(
                    lies_within(Path::new(p), Path::new(a)),
                    want,
                    "{p:?} in {a:?}"
                );
            }
        }
    }

    proptest::proptest! {
        /// Any spelling made of `/`, `.` and two names, against the
        /// standard library's component-wise answer.
        #[test]
        fn lies_within_agrees_on_any_spelling(p in "/[/.ab]{0,12}", a in "/[/.ab]{0,12}") {
            proptest::prop_assert_eq!(
                lies_within(Path::new(&p), Path::new(&a)),
                Path::new(&p).starts_with(&a)
            );
        }
    }
}

//! The environment allowlist: which variables a sandboxed child receives.
//!
//! A child gets the fixed allowlist (docs/configuration.md) plus the configured
//! passthrough, never `MAGUS_DAEMON_SOCKET`. The names of everything else are
//! recorded (names only: a value must never reach any output).

use crate::diag::{Code, Diagnostic};
use std::ffi::OsString;
use std::fmt;

/// The variable that is always withheld from sandboxed children (MGS2008).
pub(crate) const DAEMON_SOCKET_VAR: &str = "MAGUS_DAEMON_SOCKET";

/// Variables every child receives when they are set.
const KEPT_NAMES: [&str; 11] = [
    "HOME",
    "PATH",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "COLUMNS",
    "LINES",
];

/// Prefixes every child receives (locale and magus's own coordination vars).
const KEPT_PREFIXES: [&str; 2] = ["LC_", "MAGUS_"];

/// One `sandbox.env.passthrough` entry: an exact name or a `NAME_*` prefix.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EnvPattern {
    /// The variable with exactly this name.
    Exact(String),
    /// Every variable whose name starts with this text (which ends in `_`).
    Prefix(String),
}

/// Why a passthrough entry is not a valid pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PatternError {
    #[error("an empty name")]
    Empty,
    #[error("a name cannot contain `=`")]
    Equals,
    #[error("a name cannot contain a NUL byte")]
    Nul,
    #[error("a name cannot contain whitespace or control characters")]
    Whitespace,
    #[error("`*` is only allowed at the end, after `NAME_`")]
    MisplacedStar,
    #[error("a glob must be `NAME_*`: a non-empty prefix ending in `_`, then `*`")]
    BarePrefix,
}

impl EnvPattern {
    /// Parses one passthrough entry as written in `magus.yaml`.
    pub fn parse(text: &str) -> Result<EnvPattern, PatternError> {
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        if text.contains('\0') {
            return Err(PatternError::Nul);
        }
        if text.contains('=') {
            return Err(PatternError::Equals);
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(PatternError::Whitespace);
        }
        match text.find('*') {
            None => Ok(EnvPattern::Exact(text.to_string())),
            Some(at) if at + 1 != text.len() => Err(PatternError::MisplacedStar),
            Some(at) => {
                let prefix = &text[..at];
                if prefix.len() < 2 || !prefix.ends_with('_') {
                    return Err(PatternError::BarePrefix);
                }
                Ok(EnvPattern::Prefix(prefix.to_string()))
            }
        }
    }

    /// Whether the variable `name` matches.
    pub fn matches(&self, name: &[u8]) -> bool {
        match self {
            EnvPattern::Exact(exact) => name == exact.as_bytes(),
            EnvPattern::Prefix(prefix) => name.starts_with(prefix.as_bytes()),
        }
    }
}

impl fmt::Display for EnvPattern {
    /// The spelling used in `magus.yaml`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvPattern::Exact(name) => f.write_str(name),
            EnvPattern::Prefix(prefix) => write!(f, "{prefix}*"),
        }
    }
}

/// Whether `MAGUS_DAEMON_SOCKET` was set and withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaemonSocket {
    /// The variable was not in the environment.
    Absent,
    /// It was set and removed (MGS2008).
    Withheld,
}

/// The environment of a sandboxed child, and what was left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildEnv {
    /// The variables the child receives, in the input's order; the first of
    /// repeated names wins (as `getenv` does).
    pub vars: Vec<(OsString, OsString)>,
    /// Names of stripped variables, sorted and unique; never their values.
    /// `MAGUS_DAEMON_SOCKET` is not listed here: see `daemon_socket`.
    pub stripped: Vec<String>,
    pub daemon_socket: DaemonSocket,
}

impl ChildEnv {
    /// Filters `env` through the allowlist and `passthrough`.
    pub fn build(env: &[(OsString, OsString)], passthrough: &[EnvPattern]) -> ChildEnv {
        let mut child = ChildEnv {
            vars: Vec::new(),
            stripped: Vec::new(),
            daemon_socket: DaemonSocket::Absent,
        };
        for (name, value) in env {
            let bytes = name.as_encoded_bytes();
            if bytes == DAEMON_SOCKET_VAR.as_bytes() {
                child.daemon_socket = DaemonSocket::Withheld;
            } else if !is_kept(bytes, passthrough) {
                child.stripped.push(name.to_string_lossy().into_owned());
            } else if !child.vars.iter().any(|(n, _)| n == name) {
                child.vars.push((name.clone(), value.clone()));
            }
        }
        child.stripped.sort();
        child.stripped.dedup();
        child
    }

    /// Moves each variable named in `names` out of what the child gets,
    /// whatever the allowlist or `passthrough` said: the secrets' source
    /// variables ([`super::Policy::child_env`]).
    pub(crate) fn withhold(&mut self, names: &[String]) {
        let named = |n: &OsString| names.iter().any(|w| n.as_encoded_bytes() == w.as_bytes());
        let before = self.vars.len();
        for (name, _) in self.vars.iter().filter(|(n, _)| named(n)) {
            self.stripped.push(name.to_string_lossy().into_owned());
        }
        self.vars.retain(|(n, _)| !named(n));
        if self.vars.len() != before {
            self.stripped.sort();
            self.stripped.dedup();
        }
    }

    pub fn daemon_socket_withheld(&self) -> bool {
        self.daemon_socket == DaemonSocket::Withheld
    }

    /// The notes a run prints once: MGS2003 (names stripped) and MGS2008
    /// (daemon socket withheld), each only when it happened.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        if !self.stripped.is_empty() {
            let names = self.stripped.join(", ");
            let note = Diagnostic::note(format!(
                "{} environment variable(s) are withheld from child processes",
                self.stripped.len()
            ))
            .with_code(Code::Mgs2003)
            .with_note(format!("withheld: {names}"))
            .with_help("to pass one through, add it to `sandbox.env.passthrough` in magus.yaml");
            out.push(note);
        }
        if self.daemon_socket_withheld() {
            let note = Diagnostic::note(format!(
                "`{DAEMON_SOCKET_VAR}` is withheld from sandboxed child processes"
            ))
            .with_code(Code::Mgs2008)
            .with_note("a sandboxed child cannot ask the magus daemon to act outside the sandbox");
            out.push(note);
        }
        out
    }
}

/// Windows' own variables a child needs to start at all (`SystemRoot`:
/// Winsock and the loader; `PATHEXT`, `ComSpec`: finding programs and the
/// shell; the temporary directory; `USERPROFILE`, Windows' `HOME`;
/// `USERNAME`, its `USER`), none of them a secret. Kept on Windows only.
const KEPT_WINDOWS_NAMES: [&str; 12] = [
    "SystemRoot",
    "windir",
    "SystemDrive",
    "ComSpec",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "OS",
    "PROCESSOR_ARCHITECTURE",
    "NUMBER_OF_PROCESSORS",
];

/// Whether `name` is `kept`: byte for byte, except on Windows, whose
/// variable names are case-insensitive (`Path` is `PATH`).
fn same_name(name: &[u8], kept: &str) -> bool {
    match cfg!(windows) {
        true => name.eq_ignore_ascii_case(kept.as_bytes()),
        false => name == kept.as_bytes(),
    }
}

fn is_kept(name: &[u8], passthrough: &[EnvPattern]) -> bool {
    let windows = cfg!(windows) && KEPT_WINDOWS_NAMES.iter().any(|k| same_name(name, k));
    windows
        || KEPT_NAMES.iter().any(|k| same_name(name, k))
        || KEPT_PREFIXES.iter().any(|p| name.starts_with(p.as_bytes()))
        || passthrough.iter().any(|p| p.matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On Windows, names match in any case and Windows' own start-up
    /// variables are kept; a secret is still withheld.
    #[cfg(windows)]
    #[test]
    fn windows_names_are_kept_in_any_case() {
        let env: Vec<(OsString, OsString)> = [
            ("Path", r"C:\Windows\System32"),
            ("SystemRoot", r"C:\Windows"),
            ("pathext", ".EXE"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
        ]
        .iter()
        .map(|(n, v)| (n.into(), v.into()))
        .collect();
        let child = ChildEnv::build(&env, &[]);
        let kept: Vec<_> = child
            .vars
            .iter()
            .map(|(n, _)| n.to_string_lossy())
            .collect();
        assert_eq!(kept, ["Path", "SystemRoot", "pathext"]);
        assert_eq!(child.stripped, ["AWS_SECRET_ACCESS_KEY"]);
    }

    #[test]
    fn pattern_table() {
        let cases: [(&str, Result<EnvPattern, PatternError>); 12] = [
            ("GOPATH", Ok(EnvPattern::Exact("GOPATH".into()))),
            ("MISE_*", Ok(EnvPattern::Prefix("MISE_".into()))),
            ("A_B_*", Ok(EnvPattern::Prefix("A_B_".into()))),
            ("", Err(PatternError::Empty)),
            ("*", Err(PatternError::BarePrefix)),
            ("_*", Err(PatternError::BarePrefix)),
            ("MISE*", Err(PatternError::BarePrefix)),
            ("*_X", Err(PatternError::MisplacedStar)),
            ("A*_*", Err(PatternError::MisplacedStar)),
            ("A=B", Err(PatternError::Equals)),
            ("A\0B", Err(PatternError::Nul)),
            ("A B", Err(PatternError::Whitespace)),
        ];
        for (text, want) in cases {
            assert_eq!(EnvPattern::parse(text), want, "{text:?}");
        }
    }

    #[test]
    fn prefix_glob_does_not_match_the_bare_prefix_word() {
        let p = EnvPattern::Prefix("MISE_".into());
        assert!(p.matches(b"MISE_DATA_DIR"));
        assert!(!p.matches(b"MISE"));
        assert!(!p.matches(b"XMISE_A"));
    }
}

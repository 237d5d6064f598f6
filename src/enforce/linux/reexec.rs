//! The scrubbing re-exec (docs/design.md): before any spell code runs, magus
//! executes itself again (`/proc/self/exe`, same argv) with the scrubbed
//! environment, so its `/proc/<pid>/environ` holds no secret. The names of
//! the stripped variables ride along in `MAGUS_SANDBOX_STRIPPED` (for
//! MGS2003) and a marker stops a second re-exec; both are taken out of the
//! environment by [`take_reexec_state`] before any child can inherit them.

use std::convert::Infallible;
use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::OnceLock;

use super::error::EnforceError;

/// Carries the stripped names across the re-exec.
pub(crate) const STRIPPED_VAR: &str = "MAGUS_SANDBOX_STRIPPED";
/// Set in the re-executed process; its presence means "do not re-exec".
pub(crate) const MARKER_VAR: &str = "MAGUS_SANDBOX_REEXECUTED";

const SELF_EXE: &str = "/proc/self/exe";

/// What the process before the re-exec handed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReexecState {
    /// Names of the variables the scrub removed, in the order given.
    pub stripped: Vec<OsString>,
}

/// What the re-exec left in the environment, read and removed once, first
/// thing in `main`. Global: a fact of the process's start (as its
/// arguments are), which the re-exec also asks to refuse a loop.
static STATE: OnceLock<Option<ReexecState>> = OnceLock::new();

/// Reads and removes the re-exec marker and the stripped names from this
/// process's environment; `Some` when this process is the re-executed one.
///
/// Call it first thing in `main`, on the lone main thread (it edits the
/// environment). Later calls return the same answer.
pub fn take_reexec_state() -> Option<ReexecState> {
    STATE.get_or_init(read_and_clear).clone()
}

fn read_and_clear() -> Option<ReexecState> {
    std::env::var_os(MARKER_VAR)?;
    let stripped = std::env::var_os(STRIPPED_VAR)
        .map(|v| decode_names(&v))
        .unwrap_or_default();
    // Edition 2021: safe to call; sound here because no other thread runs.
    std::env::remove_var(MARKER_VAR);
    std::env::remove_var(STRIPPED_VAR);
    Some(ReexecState { stripped })
}

/// Replaces the process image with a fresh magus whose whole environment
/// is `env` (plus the marker and the stripped names). Returns only on
/// failure. Refuses when this process is itself the re-executed one.
pub fn reexec_scrubbed(
    env: &[(OsString, OsString)],
    stripped: &[OsString],
) -> Result<Infallible, EnforceError> {
    if take_reexec_state().is_some() {
        return Err(EnforceError::ReexecLoop);
    }
    let argv = std::env::args_os()
        .map(|a| cstring(a.into_vec(), "an argument"))
        .collect::<Result<Vec<_>, _>>()?;
    let envp = scrubbed_envp(env, stripped)?;
    let path = cstring(SELF_EXE.as_bytes().to_vec(), "the program path")?;
    let errno = nix::unistd::execve(&path, &argv, &envp).unwrap_err_or_errno();
    Err(EnforceError::Reexec {
        path: Path::new(SELF_EXE).to_path_buf(),
        source: std::io::Error::from(errno),
    })
}

/// `execve` returns only with an error; this names that fact.
trait ExecOutcome {
    fn unwrap_err_or_errno(self) -> nix::errno::Errno;
}

impl ExecOutcome for nix::Result<Infallible> {
    fn unwrap_err_or_errno(self) -> nix::errno::Errno {
        match self {
            Err(errno) => errno,
            Ok(never) => match never {},
        }
    }
}

/// The `KEY=VALUE` strings of the new environment. Our own two variables
/// are always set by us, never taken from `env`.
fn scrubbed_envp(
    env: &[(OsString, OsString)],
    stripped: &[OsString],
) -> Result<Vec<CString>, EnforceError> {
    let ours = |k: &OsStr| k == MARKER_VAR || k == STRIPPED_VAR;
    let mut out = Vec::with_capacity(env.len() + 2);
    for (key, value) in env.iter().filter(|(k, _)| !ours(k)) {
        out.push(entry(key, value)?);
    }
    out.push(entry(OsStr::new(MARKER_VAR), OsStr::new("1"))?);
    out.push(entry(OsStr::new(STRIPPED_VAR), &encode_names(stripped))?);
    Ok(out)
}

fn entry(key: &OsStr, value: &OsStr) -> Result<CString, EnforceError> {
    let mut bytes = Vec::with_capacity(key.len() + value.len() + 1);
    bytes.extend_from_slice(key.as_bytes());
    bytes.push(b'=');
    bytes.extend_from_slice(value.as_bytes());
    cstring(bytes, "an environment entry")
}

fn cstring(bytes: Vec<u8>, what: &'static str) -> Result<CString, EnforceError> {
    CString::new(bytes).map_err(|_| EnforceError::NulByte { what })
}

/// Names joined by `,`; a `%` or `,` inside a name (legal, if odd) is
/// percent-escaped so every name comes back intact.
fn encode_names(names: &[OsString]) -> OsString {
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        for &b in name.as_bytes() {
            match b {
                b'%' => out.extend_from_slice(b"%25"),
                b',' => out.extend_from_slice(b"%2C"),
                _ => out.push(b),
            }
        }
    }
    OsString::from_vec(out)
}

fn decode_names(value: &OsStr) -> Vec<OsString> {
    if value.is_empty() {
        return Vec::new();
    }
    value
        .as_bytes()
        .split(|&b| b == b',')
        .map(|part| OsString::from_vec(unescape(part)))
        .collect()
}

fn unescape(part: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(part.len());
    let mut i = 0;
    while i < part.len() {
        let (byte, width) = match &part[i..] {
            [b'%', b'2', b'5', ..] => (b'%', 3),
            [b'%', b'2', b'C', ..] => (b',', 3),
            rest => (rest[0], 1),
        };
        out.push(byte);
        i += width;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let cases: [&[&str]; 5] = [
            &[],
            &["GITHUB_TOKEN"],
            &["AWS_SECRET_ACCESS_KEY", "NPM_TOKEN", "VAULT_ADDR"],
            &["ODD,NAME", "PCT%2CNAME", "%"],
            &["", "X"],
        ];
        for names in cases {
            let names: Vec<OsString> = names.iter().map(OsString::from).collect();
            assert_eq!(decode_names(&encode_names(&names)), names);
        }
    }

    #[test]
    fn envp_overrides_our_own_variables() {
        let env = vec![
            (OsString::from("PATH"), OsString::from("/usr/bin")),
            (OsString::from(MARKER_VAR), OsString::from("0")),
            (OsString::from(STRIPPED_VAR), OsString::from("FAKE")),
        ];
        let envp = scrubbed_envp(&env, &[OsString::from("GITHUB_TOKEN")]).unwrap();
        let texts: Vec<&str> = envp.iter().map(|c| c.to_str().unwrap()).collect();
        assert_eq!(
            texts,
            [
                "PATH=/usr/bin",
                "MAGUS_SANDBOX_REEXECUTED=1",
                "MAGUS_SANDBOX_STRIPPED=GITHUB_TOKEN"
            ]
        );
    }

    #[test]
    fn nul_bytes_are_an_error() {
        let env = vec![(OsString::from("A"), OsString::from_vec(b"x\0y".to_vec()))];
        assert!(matches!(
            scrubbed_envp(&env, &[]),
            Err(EnforceError::NulByte { .. })
        ));
    }
}

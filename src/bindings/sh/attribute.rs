//! Attributing a child's failure to the sandbox: a child denied by the
//! kernel only says "Permission denied" (or, in the jail, that the path
//! does not exist); if the path it names is one the policy does not grant
//! and the host has something there, magus says which rule refused it and
//! how to fix it, so a kernel denial is not a mystery.

use crate::diag::{Code, Diagnostic};
use crate::enforce::gate::allow_entry_in;
use crate::enforce::gate::Gate;
use crate::enforce::host::host_entry;
use crate::policy::{normalize, Access, NormalPath};
use std::collections::BTreeSet;
use std::path::Path;

/// Phrases with which programs report an `EACCES` / `EPERM`, and the
/// `ENOENT` of a path the jail's view does not hold or the `EROFS` of a
/// write where it holds only a read-only skeleton (only an ungranted path
/// that exists outside gets a note, so a file missing inside a grant, or
/// everywhere, gets none).
const DENIAL_PHRASES: [&str; 4] = [
    "Permission denied",
    "Operation not permitted",
    "No such file or directory",
    "Read-only file system",
];

/// Words with which programs say a refused operation was a write.
const WRITE_WORDS: [&str; 8] = [
    "cannot create",
    "cannot touch",
    "cannot remove",
    "cannot make directory",
    "cannot move",
    "cannot overwrite",
    "cannot open for writing",
    "Read-only",
];

/// At most this many notes per failing child.
const MAX_NOTES: usize = 3;

/// Notes for the ungranted paths named on denial lines of `stderr`; the
/// fix goes in `spell`'s own section when the run names one.
pub(super) fn denials_in(
    gate: &Gate,
    stderr: &[u8],
    home: Option<&Path>,
    spell: Option<&str>,
) -> Vec<Diagnostic> {
    let text = String::from_utf8_lossy(stderr);
    let mut seen = BTreeSet::new();
    text.lines()
        .filter(|line| DENIAL_PHRASES.iter().any(|p| line.contains(p)))
        .flat_map(|line| {
            let wanted = wanted_access(line);
            reported_paths(gate, line)
                .into_iter()
                .map(move |p| (p, wanted))
        })
        .filter(|(p, _)| seen.insert(p.clone()))
        .filter_map(|(p, wanted)| note_for(gate, p, wanted, (home, spell)))
        .take(MAX_NOTES)
        .collect()
}

/// The paths a denial line names. A leading `program:` token is the name
/// of the program reporting (`/usr/bin/cat: /x: Permission denied`): when
/// the policy lets it execute, it ran and is not what was refused.
fn reported_paths(gate: &Gate, line: &str) -> Vec<NormalPath> {
    let cwd = gate.current_directory();
    let reporter = line
        .split_whitespace()
        .next()
        .and_then(|t| t.strip_suffix(':'))
        .and_then(|t| normalize(cwd, Path::new(t)).ok())
        .filter(|p| gate.policy().check(p, Access::Execute).is_allowed());
    candidate_paths(line)
        .into_iter()
        .filter_map(|p| normalize(cwd, Path::new(&p)).ok())
        .filter(|p| Some(p) != reporter.as_ref())
        .collect()
}

/// Tokens of a line that look like paths: quoted or bare, absolute or
/// relative with a `/`, with trailing punctuation removed.
fn candidate_paths(line: &str) -> Vec<String> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '‘' | '’'))
        .map(|t| {
            t.trim_end_matches([':', ',', ';', ')'])
                .trim_start_matches('(')
        })
        .filter(|t| {
            t.starts_with('/') || t.starts_with("~/") || t.starts_with("./") || t.contains('/')
        })
        .map(str::to_string)
        .collect()
}

/// Whether a denial line reports a write (then the fix is `rw`) or, as
/// far as the words tell, a read.
fn wanted_access(line: &str) -> Access {
    if WRITE_WORDS.iter().any(|w| line.contains(w)) {
        Access::Write
    } else {
        Access::Read
    }
}

fn note_for(
    gate: &Gate,
    path: NormalPath,
    wanted: Access,
    (home, spell): (Option<&Path>, Option<&str>),
) -> Option<Diagnostic> {
    let policy = gate.policy();
    let readable = policy.check(&path, Access::Read).is_allowed();
    let (code, access) =
        if wanted == Access::Write && !policy.check(&path, Access::Write).is_allowed() {
            (Code::Mgs2002, Access::Write)
        } else if !readable {
            (Code::Mgs2001, Access::Read)
        } else if !policy.check(&path, Access::Write).is_allowed() {
            (Code::Mgs2002, Access::Write)
        } else {
            return None;
        };
    if !exists_outside(&path, access) {
        return None;
    }
    let shown = path.display();
    let message = match access {
        Access::Write => {
            format!("the child's failure on `{shown}` is the sandbox: writes there are not granted")
        }
        _ => format!("the child's failure on `{shown}` is the sandbox: it is not granted"),
    };
    Some(
        Diagnostic::note(message)
            .with_code(code)
            .with_path(shown.to_string())
            .with_help(allow_entry_in(&path, access.needed_mode(), home, spell)),
    )
}

/// Whether the sandbox is what the child met at `path`: the host has
/// something there (for a write, at least the directory it would be made
/// in). A child that fails on a file that exists nowhere failed on its
/// own, even where the path is not granted: in the jail both look alike to
/// the child ("No such file or directory"), so the host is asked.
fn exists_outside(path: &NormalPath, access: Access) -> bool {
    let path = path.as_path();
    if host_entry(path).is_present() {
        return true;
    }
    access == Access::Write
        && path
            .parent()
            .is_some_and(|dir| host_entry(dir).is_present())
}

#[cfg(test)]
mod tests {
    use super::candidate_paths;

    #[test]
    fn write_words_ask_for_rw() {
        use super::wanted_access;
        use crate::policy::Access;
        let cases = [
            (
                "touch: cannot touch '/h/.bashrc': Permission denied",
                Access::Write,
            ),
            (
                "sh: 1: cannot create /h/x: Permission denied",
                Access::Write,
            ),
            (
                "mkdir: cannot make directory '/h/d': Permission denied",
                Access::Write,
            ),
            ("cat: /h/.ssh/id_rsa: Permission denied", Access::Read),
        ];
        for (line, want) in cases {
            assert_eq!(wanted_access(line), want, "{line}");
        }
    }

    #[test]
    fn finds_paths_in_common_denial_lines() {
        let cases = [
            (
                "cat: /root/.ssh/id_rsa: Permission denied",
                vec!["/root/.ssh/id_rsa"],
            ),
            (
                "touch: cannot touch '/etc/x': Permission denied",
                vec!["/etc/x"],
            ),
            (
                "sh: 1: cannot create out/log: Permission denied",
                vec!["out/log"],
            ),
            (
                "PermissionError: [Errno 13] Permission denied: '/home/u/.aws/credentials'",
                vec!["/home/u/.aws/credentials"],
            ),
            ("Permission denied", vec![]),
        ];
        for (line, want) in cases {
            assert_eq!(candidate_paths(line), want, "{line}");
        }
    }
}

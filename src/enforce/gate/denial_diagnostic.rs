//! How a gate denial reads to a user: the one-line message (also the
//! `message` field of `SandboxError`), the rustc-style diagnostic, and the
//! fix: the exact `magus.yaml` lines that would allow it, or why no entry
//! can (protected paths, other processes, credential stores).

use super::{Denial, DenialReason, Protection};
use crate::diag::Diagnostic;
use crate::policy::credentials::{credential_help, credential_store};
use crate::policy::native::{folded, to_os};
use crate::policy::{Access, Mode};
use std::path::Path;

impl Denial {
    /// The one-line message, also the `message` field of `SandboxError`.
    pub fn message(&self) -> String {
        let verb = match self.access {
            Access::Read => "read of",
            Access::Write => "write to",
            Access::Execute => "launch of",
        };
        let why = match self.reason {
            DenialReason::NotGranted => "denied by the sandbox".to_string(),
            DenialReason::Protected => match self.protection.as_deref() {
                Some(Protection::Repository { dir, holds }) => format!(
                    "denied: it is a protected path, since git would take `{}` for a \
                     repository (it holds {})",
                    to_os(dir).display(),
                    names_of(holds)
                ),
                Some(Protection::HoldsStore { store }) => format!(
                    "denied: it holds `{}`, a credential store the sandbox hides",
                    to_os(store).display()
                ),
                None => "denied: it is a protected path".to_string(),
            },
            DenialReason::ForeignProcess => "denied: it belongs to another process".to_string(),
            DenialReason::WindowsPath(kind) => format!("denied: it is {kind}"),
        };
        match &self.leads_to {
            Some(real) => format!(
                "{verb} `{}` (which leads to `{}`) {why}",
                self.spelled,
                to_os(real).display()
            ),
            None => format!("{verb} `{}` {why}", self.spelled),
        }
    }

    /// The diagnostic shown when the spell does not catch the error.
    /// `home` lets the suggested entry use `~`.
    pub fn to_diagnostic(&self, home: Option<&Path>) -> Diagnostic {
        self.to_diagnostic_in(home, None)
    }

    /// [`Denial::to_diagnostic`] for a run of the spell `spell`, whose own
    /// `spells:` section the suggested entry goes in.
    pub fn to_diagnostic_in(&self, home: Option<&Path>, spell: Option<&str>) -> Diagnostic {
        let real = self.leads_to.as_deref().unwrap_or(&self.checked);
        let mut d = Diagnostic::error(self.message())
            .with_code(self.code())
            .with_path(self.spelled.clone())
            .with_label(format!("`{}` denied here", self.op));
        if let Some(real) = &self.leads_to {
            d = d.with_note(format!(
                "`{}` is a symlink into `{}`",
                self.spelled,
                to_os(real).display()
            ));
        }
        if self.checked.as_os_str() != self.spelled.as_str() && self.leads_to.is_none() {
            let checked = to_os(&self.checked);
            d = d.with_note(format!("checked as `{}`", checked.display()));
        }
        d.with_help(self.fix(real, home, spell))
    }

    fn fix(&self, real: &Path, home: Option<&Path>, spell: Option<&str>) -> String {
        match self.reason {
            DenialReason::Protected => match self.protection.as_deref() {
                Some(Protection::HoldsStore { .. }) => {
                    "a spell may not move or remove a directory that holds a credential \
                     store: moved, the store would no longer be where the sandbox hides it; \
                     no magus.yaml entry can allow this"
                }
                Some(Protection::Repository { .. }) => {
                    "a spell may not make a directory into a git repository (`HEAD` beside \
                     `objects` and `refs`, or beside `commondir`) nor write such a \
                     directory's `config`: the next git command there, outside the sandbox, \
                     would run what that config names; no magus.yaml entry can allow this"
                }
                None => {
                    "a spell may not change the sandbox policy or a repository's \
                     hooks and config (`.git`, `.hg`); no magus.yaml entry can allow this"
                }
            }
            .to_string(),
            DenialReason::ForeignProcess => "another process's /proc entries are never reachable \
                 from a spell; no magus.yaml entry can allow this"
                .to_string(),
            DenialReason::WindowsPath(_) => "the sandbox takes drive paths (`C:\\dir\\file`) and \
                 relative ones; no magus.yaml entry can allow this spelling"
                .to_string(),
            DenialReason::NotGranted if is_process_entry(real) => match self.access {
                Access::Write => {
                    format!("{PROCESS_ENTRY_HELP}; to write to the run's output, use `std\\print`")
                }
                _ => PROCESS_ENTRY_HELP.to_string(),
            },
            DenialReason::NotGranted => {
                allow_entry_in(real, self.access.needed_mode(), home, spell)
            }
        }
    }
}

/// Why no grant is offered for a process's own `/proc` entry.
const PROCESS_ENTRY_HELP: &str = "`/proc/<pid>/...` names this run's process, whose number \
     changes from run to run (and `fd/N` a handle it holds, not a file), so no magus.yaml \
     entry can name it";

/// Whether `path` is in a process's `/proc` directory (`/proc/2/fd/1`):
/// a path no grant can usefully name.
fn is_process_entry(path: &Path) -> bool {
    super::confined::proc_dir(path).is_some_and(|first| {
        first == "self" || first == "thread-self" || first.parse::<u32>().is_ok()
    })
}

/// `` `a` and `b` `` (each name quoted, the last two joined by "and").
fn names_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// The `magus.yaml` lines that would grant `path` with `mode` to every
/// spell (`spell` is `None`), or to the spell `spell` only (in its own
/// `spells:` section, so no other spell gets the grant); for a credential
/// store, why no such lines are offered instead.
pub(crate) fn allow_entry_in(
    path: &Path,
    mode: Mode,
    home: Option<&Path>,
    spell: Option<&str>,
) -> String {
    // Windows compares paths without regard to case (a no-op elsewhere).
    let (path, home) = (folded(path), home.map(folded));
    let home = home.as_deref();
    if let Some(store) = credential_store(&path, home) {
        return credential_help(&store);
    }
    let shown = shown_path(&path, home);
    if holds_home(&path, home) {
        return whole_home_help(&shown);
    }
    if mode == Mode::Rw && is_system_path(&path) {
        return system_write_help(&shown);
    }
    match spell.map(yaml_key) {
        Some(name) => format!(
            "to allow it, add under `spells: {name}:` in magus.yaml (only if you trust \
             this spell with it):\n\
             spells:\n  {name}:\n    allow:\n      - path: {shown}\n        mode: {mode}"
        ),
        None => format!(
            "to allow it, add to magus.yaml (only if you trust this spell with it):\n\
             sandbox:\n  allow:\n    - path: {shown}\n      mode: {mode}"
        ),
    }
}

/// Whether `path` is the home directory or a directory above it (`/`,
/// `/home`): a grant of it would hand every spell every file a tool keeps
/// there. Such a help is offered for no denial, since what is denied can
/// be put there by a program the spell starts (a child printing
/// `/home/you: Permission denied` made magus offer `- path: ~`).
fn holds_home(path: &Path, home: Option<&Path>) -> bool {
    path == Path::new("/") || home.is_some_and(|home| home.starts_with(path))
}

fn whole_home_help(shown: &str) -> String {
    format!(
        "`{shown}` holds your whole home directory: magus offers no grant for it, because a\n\
         grant reaches every program the spell starts, and every file your tools keep\n\
         there with it; grant only the directory inside it that the task needs"
    )
}

/// Directories of system code and configuration, read-only to every
/// spell ([`crate::policy::builtin`]); no task needs to change them.
const SYSTEM_DIRS: [&str; 10] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/boot", "/opt", "/nix",
];

fn is_system_path(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
}

fn system_write_help(shown: &str) -> String {
    format!(
        "`{shown}` is system code or configuration: magus offers no write grant for it (a\n\
         spell that could change it could change what every later program runs); build\n\
         or install into the workspace instead"
    )
}

/// A spell's name as a YAML mapping key: as it is when plain, else
/// double-quoted (a JSON string is a YAML one).
pub(crate) fn yaml_key(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    match plain {
        true => name.to_string(),
        false => serde_json::to_string(name).unwrap_or_else(|_| format!("{name:?}")),
    }
}

/// `path` as a user writes it in `magus.yaml`: `~/...` under `home`.
pub(crate) fn shown_path(path: &Path, home: Option<&Path>) -> String {
    match home.and_then(|h| path.strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_string(),
        Some(rest) => format!("~/{}", rest.display()),
        None => to_os(path).display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Denial, DenialReason, FsOp};
    use crate::diag::{render, MessageFormat};
    use crate::policy::{Access, Mode};
    use std::path::{Path, PathBuf};

    fn help_for(access: Access, spelled: &str, real: &str) -> String {
        let op = match access {
            Access::Write => FsOp::Write,
            _ => FsOp::Read,
        };
        let leads_to = (spelled != real).then(|| PathBuf::from(real));
        let reason = DenialReason::NotGranted;
        let d = Denial::new(op, access, spelled, Path::new(spelled), leads_to, reason);
        render(&d.to_diagnostic(None), MessageFormat::Human)
    }

    /// A process's own `/proc` entry changes from run to run, and `fd/N`
    /// resolves to no file: a grant naming it would be useless.
    #[test]
    fn a_process_entry_is_offered_no_grant() {
        let text = help_for(
            Access::Write,
            "/proc/self/fd/1",
            "/proc/2/fd/pipe:[7132734]",
        );
        assert!(!text.contains("mode: rw"), "{text}");
        assert!(text.contains("no magus.yaml entry can name it"), "{text}");
        assert!(text.contains("std\\print"), "{text}");
        let text = help_for(Access::Read, "/proc/self/environ", "/proc/7/environ");
        assert!(!text.contains("mode: ro"), "{text}");
        assert!(!text.contains("std\\print"), "{text}");
    }

    /// The home directory, or a directory above it, is offered no grant:
    /// it would hand over every file tools keep there (and a child can
    /// print the message that would make magus offer it).
    #[test]
    fn the_whole_home_is_offered_no_grant() {
        let home = Some(Path::new("/home/u"));
        for (path, shown) in [("/home/u", "~"), ("/home", "/home"), ("/", "/")] {
            for mode in [Mode::Ro, Mode::Rw] {
                let text = super::allow_entry_in(Path::new(path), mode, home, None);
                assert!(!text.contains("- path:"), "{path}: {text}");
                assert!(
                    text.contains(&format!("`{shown}` holds your whole home")),
                    "{text}"
                );
            }
        }
        let inside = super::allow_entry_in(Path::new("/home/u/src"), Mode::Ro, home, None);
        assert!(inside.contains("- path: ~/src"), "{inside}");
    }

    /// System code is offered a read grant where it is not granted, never
    /// a write grant.
    #[test]
    fn system_code_is_offered_no_write_grant() {
        for path in ["/bin/sh", "/usr/lib/x", "/etc/profile", "/opt"] {
            let text = super::allow_entry_in(Path::new(path), Mode::Rw, None, Some("s"));
            assert!(!text.contains("- path:"), "{path}: {text}");
            assert!(text.contains("offers no write grant"), "{text}");
            let text = super::allow_entry_in(Path::new(path), Mode::Ro, None, Some("s"));
            assert!(text.contains(&format!("- path: {path}")), "{text}");
        }
        let text = super::allow_entry_in(Path::new("/usrx/y"), Mode::Rw, None, None);
        assert!(text.contains("- path: /usrx/y"), "{text}");
    }

    /// Elsewhere, and in `/proc` outside a process's directory, the grant
    /// that would allow it is offered.
    #[test]
    fn other_paths_are_offered_their_grant() {
        for path in ["/opt/data/x", "/proc/sys/kernel/hostname"] {
            let text = help_for(Access::Read, path, path);
            assert!(text.contains(&format!("- path: {path}")), "{text}");
        }
    }
}

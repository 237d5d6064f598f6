//! Resolving the program a spell launches, and checking it may be executed.
//!
//! The lookup follows the shell: a name with a `/` is a path, any other
//! name is searched on the *scrubbed* `PATH` the child will see, first match
//! wins. The match is then resolved to its real file, because that is what
//! Landlock checks on `execve`, and refused with MGS2007 when ungranted.
//!
//! In the jail an ungranted `PATH` directory does not exist, so a lookup
//! there would silently fall through to a later directory: a version
//! manager's shim would give way to the system's program of the same name.
//! [`HiddenPrograms`], taken before the jail is entered, keeps what those
//! directories held, so the lookup finds what the user's `PATH` names and
//! refuses it as it would outside the jail; for what the snapshot never saw
//! (a `PATH` the spell set, a link to a hidden file) the host is asked
//! (`enforce::host`). A program found nowhere is "not found", never a
//! refusal.

use super::{Backend, Denial, DenialReason, FsOp, Gate, GateError};
use crate::enforce::host::{host_entry, HostEntry};
use crate::policy::Access;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Where a program name was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramLookup {
    /// The path the program is started by (what `sh.which` returns): where
    /// it was found, or its real path where the view lacks that.
    pub found: PathBuf,
    /// Its real, symlink-free path (what is executed and checked).
    pub real: PathBuf,
    /// Where it was found: the `PATH` directory's entry, as the user's
    /// `PATH` spells it (a version manager's shim, say).
    pub on_path: PathBuf,
}

/// What the ungranted directories of the child's `PATH` held when the run
/// started: each executable's name and real path.
#[derive(Debug, Clone, Default)]
pub(crate) struct HiddenPrograms {
    dirs: BTreeMap<PathBuf, BTreeMap<OsString, PathBuf>>,
}

/// More entries than any `PATH` directory of programs has; a bound on what
/// a run reads at start-up.
const MAX_HIDDEN_ENTRIES: usize = 10_000;

/// The entries of `dir` (a real path), each with where it leads: itself,
/// or for a symlink (shims often are) its target, read with one call and
/// resolved only when a launch needs it. Nothing else is asked per entry,
/// so a large directory costs one `getdents` pass.
fn programs_in(dir: &Path) -> Option<BTreeMap<OsString, PathBuf>> {
    let entries = std::fs::read_dir(dir).ok()?;
    let programs = entries
        .filter_map(Result::ok)
        .take(MAX_HIDDEN_ENTRIES)
        .filter_map(|entry| {
            let path = entry.path();
            let leads_to = match entry.file_type().ok()? {
                kind if kind.is_symlink() => dir.join(std::fs::read_link(&path).ok()?),
                kind if kind.is_dir() => return None,
                _ => path,
            };
            Some((entry.file_name(), leads_to))
        })
        .collect();
    Some(programs)
}

impl HiddenPrograms {
    /// Reads the directories of `path_var` that `policy` does not let run,
    /// as they are now (call it before entering the jail).
    pub(crate) fn snapshot(
        policy: &crate::policy::Policy,
        path_var: Option<&OsStr>,
    ) -> HiddenPrograms {
        let mut dirs = BTreeMap::new();
        let Some(path_var) = path_var else {
            return HiddenPrograms { dirs };
        };
        for dir in std::env::split_paths(path_var).filter(|d| d.is_absolute()) {
            // Checked by its real path, as Landlock and the view see it
            // (`/bin` is `/usr/bin` on merged-usr systems).
            let real = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
            let granted = crate::policy::native::from_os(&real)
                .is_ok_and(|d| policy.check(&d, Access::Execute).is_allowed());
            if granted || dirs.contains_key(&dir) {
                continue;
            }
            if let Some(programs) = programs_in(&real) {
                dirs.insert(dir, programs);
            }
        }
        HiddenPrograms { dirs }
    }

    /// Where `path` led, when its directory is a hidden one that held it.
    fn lookup_path(&self, path: &Path) -> Option<&Path> {
        let (dir, name) = (path.parent()?, path.file_name()?);
        self.dirs.get(dir)?.get(name).map(PathBuf::as_path)
    }

    /// Whether `path`'s directory is one the snapshot read (so what it did
    /// not hold is not there).
    fn covers(&self, path: &Path) -> bool {
        path.parent().is_some_and(|dir| self.dirs.contains_key(dir))
    }
}

impl Gate {
    /// Finds `program` on `path_var` (the child's `PATH`), without checking:
    /// the first directory that holds it, counting one the jail hides.
    pub fn which(&self, program: &str, path_var: Option<&OsStr>) -> Option<PathBuf> {
        if program.is_empty() {
            return None;
        }
        let names = file_names(program, native_pathext().as_deref());
        if is_spelled_path(program) {
            return names
                .iter()
                .map(|name| self.cwd.join(name))
                .find(|abs| self.is_program(abs));
        }
        // `split_paths` splits on `;` on Windows, `:` elsewhere.
        std::env::split_paths(path_var?)
            .filter(|dir| dir.is_absolute())
            .find_map(|dir| {
                names
                    .iter()
                    .map(|name| dir.join(name))
                    .find(|found| self.is_program(found))
            })
    }

    /// Whether `candidate` is a program: as the snapshot of a hidden
    /// `PATH` directory has it, as this process sees it, or, where the
    /// view lacks it (a directory or a link's target the jail hides), as
    /// the host has it: the shell would find it there, so the lookup must
    /// too, and then refuse it, rather than go on to a later directory or
    /// call it missing.
    fn is_program(&self, candidate: &Path) -> bool {
        if self.hidden.lookup_path(candidate).is_some() || is_executable(candidate) {
            return true;
        }
        if self.hidden.covers(candidate) || !self.may_be_hidden(candidate) {
            return false;
        }
        matches!(
            host_entry(candidate),
            HostEntry::Present {
                executable: true,
                ..
            }
        )
    }

    /// The real path of `found`. One the jail hides is resolved from the
    /// snapshot (a symlink's target is resolved in the view, where it
    /// exists when it is granted, else it stands for itself and is
    /// checked, and refused, as it is), or else from the host.
    fn real_path(&self, found: &Path) -> std::io::Result<PathBuf> {
        if let Some(leads_to) = self.hidden.lookup_path(found) {
            return Ok(crate::policy::normalize(Path::new("/"), leads_to)
                .ok()
                .and_then(|target| std::fs::canonicalize(target).ok())
                .unwrap_or_else(|| leads_to.to_path_buf()));
        }
        std::fs::canonicalize(found).or_else(|e| match host_entry(found) {
            HostEntry::Present { real, .. } => Ok(real),
            HostEntry::Absent => Err(e),
        })
    }

    /// Finds `program` and checks that the sandbox lets it run. A program
    /// found nowhere on `PATH` is an I/O error ("not found"); one found
    /// first where the policy does not let it run is a denial (MGS2007)
    /// naming where it was found, which exists.
    pub fn resolve_program(
        &self,
        program: &str,
        path_var: Option<&OsStr>,
    ) -> Result<ProgramLookup, GateError> {
        let op = FsOp::Exec;
        let found = self.which(program, path_var).ok_or_else(|| {
            let why = match is_spelled_path(program) {
                true => "no such program",
                false => "program not found on the sandboxed PATH",
            };
            let e = std::io::Error::new(std::io::ErrorKind::NotFound, why);
            GateError::io(op, program, e)
        })?;
        let real = self
            .real_path(&found)
            .map_err(|e| GateError::io(op, program, e))?;
        let allowed = match &self.backend {
            Backend::Confined(confined) => confined.may_execute(&real),
            Backend::Ambient(_) => true,
        };
        if !allowed {
            let leads_to = (real != found).then(|| real.clone());
            let denial = Denial::new(
                op,
                Access::Execute,
                program,
                &found,
                leads_to,
                DenialReason::NotGranted,
            );
            return Err(denial.into());
        }
        // A program found where the view has nothing (a hidden directory,
        // or a link to a granted file) is started by its real path, the
        // only one that exists in the jail.
        let on_path = found.clone();
        let found = match std::fs::metadata(&found) {
            Ok(_) => found,
            Err(_) => real.clone(),
        };
        Ok(ProgramLookup {
            found,
            real,
            on_path,
        })
    }
}

impl Gate {
    /// Whether the jail's view may lack a program at `candidate` that the
    /// host has: the path is not granted (the view shows a granted path
    /// as the host has it), or it is a link whose target the view lacks.
    /// (Without a jail the host's answer is this process's own.)
    fn may_be_hidden(&self, candidate: &Path) -> bool {
        let Backend::Confined(confined) = &self.backend else {
            return false;
        };
        let dangling =
            std::fs::symlink_metadata(candidate).is_ok() && std::fs::metadata(candidate).is_err();
        dangling || !confined.may_execute(candidate)
    }
}

/// A program spelled as a path, not a name to look up on `PATH`: it has
/// a separator (on Windows also `\\` or a drive's `:`).
fn is_spelled_path(program: &str) -> bool {
    match cfg!(windows) {
        true => program.contains(['/', '\\', ':']),
        false => program.contains('/'),
    }
}

/// What cmd.exe tries when `PATHEXT` is unset.
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// On Windows, `PATHEXT` as magus started with it (else cmd.exe's
/// default); `None` elsewhere, where a program's name is its file's.
fn native_pathext() -> Option<OsString> {
    match cfg!(windows) {
        true => Some(std::env::var_os("PATHEXT").unwrap_or_else(|| DEFAULT_PATHEXT.into())),
        false => None,
    }
}

/// The file names `program` is looked for as, in order. Without
/// `pathext` (POSIX) the name itself. With it (Windows), as cmd.exe does:
/// a name with an extension as it is first, then the name with each of
/// `pathext`'s extensions (`cc` finds `cc.exe`). An extensionless file is
/// not a program there, so it is never found by a bare name.
fn file_names(program: &str, pathext: Option<&OsStr>) -> Vec<String> {
    let Some(pathext) = pathext else {
        return vec![program.to_string()];
    };
    let last = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let mut names = Vec::new();
    if last.contains('.') {
        names.push(program.to_string());
    }
    let exts = pathext.to_string_lossy();
    let exts = exts
        .split(';')
        .map(str::trim)
        .filter(|e| e.starts_with('.') && e.len() > 1);
    names.extend(exts.map(|ext| format!("{program}{}", ext.to_ascii_lowercase())));
    names
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Windows has no execute bit: any file may be started (what it runs is
/// decided by the policy's `Execute` check alone).
#[cfg(windows)]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::file_names;
    use std::ffi::OsStr;

    #[test]
    fn file_names_table() {
        let win = Some(OsStr::new(".COM;.EXE; .BAT;;CMD;."));
        let cases: [(&str, Option<&OsStr>, &[&str]); 6] = [
            ("cc", None, &["cc"]),
            ("my.tool", None, &["my.tool"]),
            ("cc", win, &["cc.com", "cc.exe", "cc.bat"]),
            (
                "cc.exe",
                win,
                &["cc.exe", "cc.exe.com", "cc.exe.exe", "cc.exe.bat"],
            ),
            (
                r"tools.d\build",
                win,
                &[
                    r"tools.d\build.com",
                    r"tools.d\build.exe",
                    r"tools.d\build.bat",
                ],
            ),
            ("cc", Some(OsStr::new("")), &[]),
        ];
        for (program, pathext, want) in cases {
            assert_eq!(file_names(program, pathext), want, "{program} {pathext:?}");
        }
    }
}

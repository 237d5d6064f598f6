//! What the host holds at a path, on either side of the jail: magus proper
//! asks the jail's original process (`jail::host_paths`), since its own
//! view hides every ungranted path; without a jail of the run's own its
//! view is the host's, and it looks itself. Used to tell "the sandbox
//! hides it" from "it is nowhere" (a program not on `PATH`, a child's
//! failure on a missing file); it never reads a file's content.

use std::path::{Path, PathBuf};

/// What the host holds at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostEntry {
    /// Nothing, or nothing this user could reach without the sandbox.
    Absent,
    /// A file or directory, with its real (symlink-free) path.
    Present { real: PathBuf, executable: bool },
}

impl HostEntry {
    /// Whether something is there.
    pub(crate) fn is_present(&self) -> bool {
        matches!(self, HostEntry::Present { .. })
    }
}

/// What the host holds at `path` (absolute).
pub(crate) fn host_entry(path: &Path) -> HostEntry {
    #[cfg(kernel_layer)]
    if let Some(answer) = super::jail::host_paths::ask(path) {
        return answer;
    }
    look_up(path)
}

/// [`host_entry`] as this process sees it.
pub(crate) fn look_up(path: &Path) -> HostEntry {
    let Ok(real) = std::fs::canonicalize(path) else {
        return HostEntry::Absent;
    };
    let executable = std::fs::metadata(&real).is_ok_and(|m| m.is_file() && is_executable(&m));
    HostEntry::Present { real, executable }
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// Windows has no execute bit: any file may be started.
#[cfg(windows)]
fn is_executable(_: &std::fs::Metadata) -> bool {
    true
}

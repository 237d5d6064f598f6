//! The protected paths of DESIGN §4 that children may not write even
//! inside a writable grant, found once per run: the workspace's config and
//! lock, what makes git run code in every repository under a writable
//! grant, magus's own executable, `PATH` directories and the start-up files
//! of shells, git and ssh. Each becomes a read-only bind over itself.
//!
//! A protected *file* that does not exist when the run starts cannot be
//! bound (a bind needs an inode) and is not protected; a protected
//! *directory* that is missing (`.git/hooks`, a `PATH` directory) is
//! created empty first, which changes nothing for git or the shell.

use std::fmt;
use std::path::{Path, PathBuf};

use super::plan::ViewInputs;
use crate::policy::{Access, GrantSource, Mode, NormalPath, Policy};

/// Why a path is re-bound read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarveReason {
    /// `magus.yaml` or `magus.lock`: a child must not widen the next run.
    PolicyFile,
    /// A repository's hooks or config: git runs what they name.
    GitCode,
    /// The running magus executable.
    MagusExecutable,
    /// A directory on `PATH`: what is planted there runs unconfined later.
    PathDirectory,
    /// A file a shell, git or ssh reads at start-up.
    StartupFile,
}

impl fmt::Display for CarveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CarveReason::PolicyFile => "magus policy file: a child must not widen the next run",
            CarveReason::GitCode => "git hooks/config: git runs the commands they name",
            CarveReason::MagusExecutable => "the running magus executable",
            CarveReason::PathDirectory => {
                "directory on PATH: a program planted here would run unconfined later"
            }
            CarveReason::StartupFile => {
                "start-up file of a shell, git or ssh: it would run code unconfined later"
            }
        })
    }
}

/// One path to re-bind read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carve {
    pub path: PathBuf,
    pub reason: CarveReason,
    /// A directory that does not exist yet and is created empty.
    pub missing: bool,
}

/// What the search found.
#[derive(Debug, Default)]
pub struct Found {
    pub carves: Vec<Carve>,
    /// The repository search hit [`MAX_DIRS`].
    pub truncated: bool,
}

/// How many directories the repository search reads at most, so a huge
/// writable grant cannot make every run slow; beyond it, `truncated`.
pub const MAX_DIRS: usize = 50_000;

/// Start-up files, relative to `$HOME`.
pub const STARTUP_FILES: [&str; 20] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".config/fish",
    ".gitconfig",
    ".config/git",
    ".ssh/config",
    ".ssh/rc",
    ".ssh/authorized_keys",
    ".ssh/environment",
    ".pam_environment",
];

/// What git reads from a git directory and runs code from.
const GIT_CODE: [&str; 3] = ["hooks", "config", "config.worktree"];

pub fn carve_outs(policy: &Policy, inputs: &ViewInputs) -> Found {
    let writable = |p: &Path| is_writable_bind(policy, p);
    let mut found = Found::default();
    for name in ["magus.yaml", "magus.lock"] {
        push_existing(
            &mut found,
            &policy.workspace().join(name),
            CarveReason::PolicyFile,
            &writable,
        );
    }
    if let Some(config) = &policy.config_file() {
        push_existing(&mut found, config, CarveReason::PolicyFile, &writable);
    }
    if let Some(exe) = inputs.exe.as_deref() {
        push_existing(&mut found, exe, CarveReason::MagusExecutable, &writable);
    }
    path_dirs(policy, inputs, &mut found);
    if let Some(home) = &inputs.home {
        for rel in STARTUP_FILES {
            push_existing(
                &mut found,
                &home.join(rel),
                CarveReason::StartupFile,
                &writable,
            );
        }
    }
    let mut budget = MAX_DIRS;
    for root in repository_roots(policy) {
        find_repositories(&root, &mut found, &mut budget);
    }
    found.truncated = budget == 0;
    found
}

/// Whether `path` (real) would be writable through a bind of the view: the
/// policy allows the write, and what shows `path` in the view (the deepest
/// grant above it) is not a private tmpfs (`/tmp` is not the host's).
fn is_writable_bind(policy: &Policy, path: &Path) -> bool {
    let Ok(normal) = NormalPath::new(path.to_path_buf()) else {
        return false;
    };
    if !policy.check(&normal, Access::Write).is_allowed() {
        return false;
    }
    let shown_by = policy
        .grants()
        .iter()
        .filter(|g| path.starts_with(&g.path))
        .max_by_key(|g| g.path.components().count());
    shown_by.is_some_and(|g| match g.source {
        GrantSource::Builtin(why) => why == crate::policy::CACHE_WHY,
        _ => true,
    })
}

fn push_existing(
    found: &mut Found,
    path: &Path,
    reason: CarveReason,
    writable: &dyn Fn(&Path) -> bool,
) {
    let Ok(real) = path.canonicalize() else {
        return;
    };
    if writable(&real) && !found.carves.iter().any(|c| c.path == real) {
        found.carves.push(Carve {
            path: real,
            reason,
            missing: false,
        });
    }
}

/// `PATH` directories under a writable grant; a missing one is created.
/// One holding the workspace (or equal to it) is left alone: making it
/// read-only would make the workspace read-only.
fn path_dirs(policy: &Policy, inputs: &ViewInputs, found: &mut Found) {
    let Some(path_var) = &inputs.path_var else {
        return;
    };
    for dir in std::env::split_paths(path_var).filter(|d| d.is_absolute()) {
        let (real, missing) = match dir.canonicalize() {
            Ok(real) => (real, false),
            Err(_) => match crate::policy::normalize(Path::new("/"), &dir) {
                Ok(normal) => (normal.into_path_buf(), true),
                Err(_) => continue,
            },
        };
        let holds_workspace = policy.workspace().starts_with(&real);
        if holds_workspace || !is_writable_bind(policy, &real) {
            continue;
        }
        if missing && !real.parent().is_some_and(Path::is_dir) {
            continue;
        }
        if !found.carves.iter().any(|c| c.path == real) {
            found.carves.push(Carve {
                path: real,
                reason: CarveReason::PathDirectory,
                missing,
            });
        }
    }
}

/// Where repositories are searched: the workspace and every writable
/// `sandbox.allow` entry.
fn repository_roots(policy: &Policy) -> Vec<PathBuf> {
    policy
        .grants()
        .iter()
        .filter(|g| g.mode == Mode::Rw)
        .filter(|g| {
            matches!(
                g.source,
                GrantSource::Workspace | GrantSource::Config { .. }
            )
        })
        .filter(|g| g.path.is_dir())
        .map(|g| g.path.clone())
        .collect()
}

/// Walks `dir` (directories only, never following a symlink) for git
/// directories: a `.git` directory, a bare repository, a submodule's or a
/// worktree's git directory under `.git/modules` or `.git/worktrees`.
fn find_repositories(dir: &Path, found: &mut Found, budget: &mut usize) {
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        let mut subdirs = Vec::new();
        let mut has_head = false;
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            has_head |= kind.is_file() && name == "HEAD";
            if kind.is_dir() {
                subdirs.push(entry.path());
            }
        }
        // A `.git` directory is git's even when incomplete: `git init` keeps
        // the hooks it finds there.
        let dot_git = next.file_name().is_some_and(|n| n == ".git");
        let in_worktrees = next.parent().is_some_and(|p| p.ends_with("worktrees"));
        if dot_git || has_head && (in_worktrees || subdirs.iter().any(|d| d.ends_with("objects"))) {
            protect_gitdir(&next, found);
            subdirs.retain(|d| d.ends_with("modules") || d.ends_with("worktrees"));
        }
        pending.extend(subdirs);
    }
}

fn protect_gitdir(gitdir: &Path, found: &mut Found) {
    for name in GIT_CODE {
        let path = gitdir.join(name);
        let exists = path.symlink_metadata().is_ok();
        // A missing hooks directory is created; a missing config file cannot
        // be bound (git would not read `config.worktree` unless the bound
        // `config` enables it).
        if !exists && name != "hooks" {
            continue;
        }
        if found.carves.iter().any(|c| c.path == path) {
            continue;
        }
        found.carves.push(Carve {
            path,
            reason: CarveReason::GitCode,
            missing: !exists,
        });
    }
}

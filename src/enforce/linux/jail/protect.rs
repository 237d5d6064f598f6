//! The protected paths (docs/jail.md) that children may not write even
//! inside a writable grant, found once per run: the workspace's config and
//! lock, what makes git or Mercurial run code in every repository under a
//! writable grant, magus's own executable, `PATH` directories and the start-up files
//! of shells, git and ssh. Each becomes a read-only bind over itself.
//!
//! A protected *file* that does not exist when the run starts cannot be
//! bound (a bind needs an inode) and is not protected; a protected
//! *directory* that is missing (`.git/hooks`, a `PATH` directory) is
//! created empty first, which changes nothing for git or the shell.

use std::fmt;
use std::path::{Path, PathBuf};

use super::gitconfig;
use super::plan::{IfMissing, ViewInputs};
use crate::enforce::leftovers;
use crate::policy::{Access, GrantSource, Mode, NormalPath, Policy, RealPaths};

/// Why a path is re-bound read-only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CarveReason {
    /// `magus.yaml` or `magus.lock`: a child must not widen the next run.
    PolicyFile,
    /// A repository's hooks or config: git runs what they name.
    GitCode,
    /// The workspace's `spells/`: a spell must not rewrite one that runs
    /// later under a wider policy of its own.
    SpellCode,
    /// The running magus executable.
    MagusExecutable,
    /// A directory on `PATH`: what is planted there runs unconfined later.
    PathDirectory,
    /// A file a shell, git or ssh reads at start-up.
    StartupFile,
    /// A hooks directory, included config or program that a git config
    /// names by path (`super::gitconfig`).
    GitConfigNamed,
    /// A Mercurial repository's config or requirements: hg runs the hooks
    /// and loads the extensions its config names.
    HgCode,
}

impl fmt::Display for CarveReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CarveReason::PolicyFile => "magus policy file: a child must not widen the next run",
            CarveReason::GitCode => "git hooks/config: git runs the commands they name",
            CarveReason::SpellCode => {
                "the workspace's spells: each runs under its own policy, so a rewritten one would run with another's grants"
            }
            CarveReason::MagusExecutable => "the running magus executable",
            CarveReason::PathDirectory => {
                "directory on PATH: a program planted here would run unconfined later"
            }
            CarveReason::StartupFile => {
                "start-up file of a shell, git, ssh or a build tool: it would run code unconfined later"
            }
            CarveReason::GitConfigNamed => {
                "named by a git config (core.hooksPath, include.path, a program): git runs or reads it"
            }
            CarveReason::HgCode => {
                "Mercurial config/requirements: hg runs the hooks and loads the extensions it names"
            }
        })
    }
}

/// One path to re-bind read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Carve {
    pub path: PathBuf,
    pub reason: CarveReason,
    /// What to create when the path does not exist yet (a bind needs an
    /// inode).
    pub missing: IfMissing,
}

/// `IfMissing::MakeDir` where `missing`, else `IfMissing::Fail`.
fn make_dir_if(missing: bool) -> IfMissing {
    match missing {
        true => IfMissing::MakeDir,
        false => IfMissing::Fail,
    }
}

/// A symbolic link to a protected path, under a writable grant: a
/// repository's `.git` (Android's `repo` makes them), a git directory's
/// `hooks` (`ln -s ../scripts/hooks .git/hooks`) or `config`, a start-up
/// file or `PATH` directory kept by a dotfile manager (`~/.bashrc ->
/// dotfiles/bashrc`, home-manager's links into `/nix/store`). The link
/// itself cannot be bound (a mount follows it; its target is), so a child
/// could put a file or directory of its own in its place; `super::sweep`
/// puts it back after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLink {
    /// The directory holding the link (real, symlink-free).
    pub dir: PathBuf,
    /// The link's name in `dir`.
    pub name: String,
    /// What the link said when the run started.
    pub target: PathBuf,
    /// Why what it leads to is protected.
    pub reason: CarveReason,
}

/// Notes `path`, and each directory on the way to it, that is a symbolic
/// link in a writable directory (a `~/.config` linked by a dotfile
/// manager leads to `~/.config/git` as surely as a linked file does).
fn push_link(
    found: &mut Found,
    path: &Path,
    reason: CarveReason,
    writable: &dyn Fn(&Path) -> bool,
) {
    for step in path.ancestors() {
        if step
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            push_one_link(found, step, reason, writable);
        }
    }
}

fn push_one_link(
    found: &mut Found,
    path: &Path,
    reason: CarveReason,
    writable: &dyn Fn(&Path) -> bool,
) {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let Ok(dir) = parent.canonicalize() else {
        return;
    };
    if !writable(&dir) || found.links.iter().any(|l| l.dir == dir && *l.name == *name) {
        return;
    }
    if let Ok(target) = std::fs::read_link(path) {
        found.links.push(KeptLink {
            dir,
            name: name.to_string_lossy().into_owned(),
            target,
            reason,
        });
    }
}

/// What the search found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub carves: Vec<Carve>,
    pub links: Vec<KeptLink>,
    /// Every git directory, and `.git` file or link, the search met: what
    /// the sweep after the run does not take for a new repository.
    pub repositories: Vec<PathBuf>,
    /// The run-later files and directories the search met
    /// (`leftovers::is_run_later`): the sweep compares them with what
    /// they were, not with the time the run started.
    pub run_later: Vec<PathBuf>,
    /// The workspace's directories the search read: after the run the
    /// sweep reads again only those changed since, and new ones.
    pub directories: Vec<PathBuf>,
    /// The repository search hit [`MAX_DIRS`].
    pub truncated: bool,
}

/// How many directories the repository search reads at most, so a huge
/// writable grant cannot make every run slow; beyond it, `truncated`.
pub(crate) const MAX_DIRS: usize = 50_000;

/// Start-up files, relative to `$HOME`: the shells', git's, Mercurial's
/// and ssh's, and
/// the user-wide configs of build tools that name programs to run (a
/// grant of `~/.cargo`, as a Rust build needs, let a child add
/// `build.rustc-wrapper` to `~/.cargo/config.toml`, run by every later
/// `cargo build` of the user; Gradle runs every script in `init.d`).
/// Also what the desktop session runs at the next login, without the user
/// touching the workspace again: XDG autostart entries, systemd user units
/// (either place) and `environment.d` (whose `LD_PRELOAD=` reaches every
/// user service), the X session scripts, and the files Debian's and
/// Fedora's default `~/.bashrc` sources. Found by a red-team run
/// (2026-12-07): rustup's `~/.cargo/env`, which the `~/.profile` and
/// `~/.bashrc` it edits source at every shell (under `~/.cargo` `rw`, what
/// a Rust build needs); readline's `~/.inputrc` (a macro types commands
/// into every interactive bash); tmux's `~/.config/tmux/tmux.conf`
/// (`run-shell`); `~/.local/bin`, which Debian's `~/.profile` puts first
/// on `PATH` once it exists; D-Bus session services, which the session
/// bus starts on a first call to their name. Found by another
/// (2026-12-08), each run by its real tool: Go's `~/.config/go/env`
/// (`GOFLAGS=-toolexec=` at every `go build`), mypy's and RuboCop's user
/// configs (plugins), gdb's `~/.config/gdb/gdbinit`, direnv's
/// `direnvrc` (sourced before every allowed `.envrc`), Jupyter's user
/// kernels (their `argv` is the kernel's command), bash-completion's user
/// completions, Neovim's and fish's `~/.local/share` plugins and
/// snippets; beside them, by their documentation: `~/.gdbinit`, direnv's
/// allow list, IPython's start-up scripts, Jupyter's user config, pip's
/// user config (what `pip install` fetches), starship's prompt commands,
/// Helix's and Zed's language-server commands, Emacs's init files, and
/// the desktop's application entries and default applications
/// (`xdg-open`).
pub(crate) const STARTUP_FILES: [&str; 72] = [
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
    ".hgrc",
    ".config/hg",
    ".ssh/config",
    ".ssh/rc",
    ".ssh/authorized_keys",
    ".ssh/environment",
    ".pam_environment",
    ".cargo/config.toml",
    ".cargo/config",
    ".gradle/init.d",
    ".gradle/init.gradle",
    ".yarnrc.yml",
    ".vimrc",
    ".config/nvim",
    ".tmux.conf",
    ".bash_aliases",
    ".bashrc.d",
    ".xprofile",
    ".xsessionrc",
    ".xsession",
    ".xinitrc",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".config/plasma-workspace",
    ".local/share/systemd",
    ".kde/Autostart",
    ".cargo/env",
    ".cargo/env.fish",
    ".cargo/env.nu",
    ".inputrc",
    ".config/tmux",
    ".local/bin",
    ".local/share/dbus-1",
    ".config/go",
    ".config/mypy",
    ".config/rubocop",
    ".config/gdb",
    ".gdbinit",
    ".config/direnv",
    ".local/share/direnv",
    ".local/share/jupyter",
    ".jupyter",
    ".ipython",
    ".local/share/bash-completion",
    ".local/share/nvim",
    ".local/share/fish",
    ".config/pip",
    ".pip",
    ".config/starship.toml",
    ".config/helix",
    ".config/zed",
    ".config/emacs",
    ".emacs.d",
    ".emacs",
    ".config/mimeapps.list",
    ".local/share/applications",
];

/// Start-up directories, relative to `$HOME`, that are created empty
/// when missing (an empty one changes nothing for git or fish), so that a
/// child cannot create `~/.config/git/config` (read by every later git),
/// a first autostart entry or user unit (run at the next login), a
/// `~/.bashrc.d` (Fedora's `~/.bashrc` sources it once it exists), a
/// first `tmux.conf`, D-Bus service, or program in `~/.local/bin`.
const STARTUP_DIRS: [&str; 10] = [
    ".config/git",
    ".config/fish",
    ".config/autostart",
    ".config/systemd",
    ".config/environment.d",
    ".local/share/systemd",
    ".bashrc.d",
    ".config/tmux",
    ".local/bin",
    ".local/share/dbus-1",
];

/// A missing start-up directory under a writable grant: carved as a
/// directory to create, at its real place (an existing `~/.config` may be
/// a link; it is followed here, once, and never again by the bind).
fn push_startup_dir(
    found: &mut Found,
    home: &Path,
    rel: &str,
    writable: &dyn Fn(&Path) -> bool,
    parents: &mut RealPaths,
) {
    let path = home.join(rel);
    if path.symlink_metadata().is_ok() {
        return; // Exists: a start-up file like the others.
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let real = match parents.of(parent) {
        Some(parent) => parent.join(name),
        None => match parents.of(home) {
            // `~/.config` is missing too: both are made.
            Some(home) if parent.symlink_metadata().is_err() => home.join(rel),
            _ => return,
        },
    };
    if writable(&real) && !found.carves.iter().any(|c| c.path == real) {
        found.carves.push(Carve {
            path: real,
            reason: CarveReason::StartupFile,
            missing: IfMissing::MakeDir,
        });
    }
}

/// What git reads from a git directory and runs code from; `commondir`
/// names another directory whose `config` and `hooks` git then uses
/// instead (a worktree's has one; one a child creates is removed after
/// the run, see `super::sweep`); `remotes/` and `branches/` name remotes,
/// and a remote's own hooks run at a `git push` to it.
const GIT_CODE: [&str; 6] = [
    "hooks",
    "config",
    "config.worktree",
    "commondir",
    "remotes",
    "branches",
];

pub(crate) fn carve_outs(policy: &Policy, inputs: &ViewInputs) -> Found {
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
    let spells = policy.workspace().join(crate::policy::SPELLS_DIR);
    push_existing(&mut found, &spells, CarveReason::SpellCode, &writable);
    if let Some(exe) = inputs.exe.as_deref() {
        push_existing(&mut found, exe, CarveReason::MagusExecutable, &writable);
    }
    path_dirs(policy, inputs, &mut found);
    if let Some(home) = &inputs.home {
        let mut parents = RealPaths::default();
        for rel in STARTUP_DIRS {
            push_startup_dir(&mut found, home, rel, &writable, &mut parents);
        }
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
    for (root, depth) in repository_roots(policy) {
        find_repositories(&root, depth, &mut found, &mut budget, &writable);
    }
    found.truncated = budget == 0;
    git_config_named(policy, inputs.home.as_deref(), &mut found, &writable);
    found
}

/// Home files, besides [`STARTUP_FILES`], that a tool obeys later: the
/// sweep after the run sets aside a new or changed one.
const HOME_RUN_LATER: [&str; 2] = [".npmrc", ".mcp.json"];

/// Where the sweep after the run looks (`crate::enforce::leftovers`):
/// the workspace, the other writable grants of the user's, the home
/// directory's start-up files under a writable grant, and what the search
/// found when the run started.
pub(crate) fn leftover_inputs(
    policy: &Policy,
    inputs: &ViewInputs,
    found: &Found,
) -> leftovers::Inputs {
    let writable = |p: &Path| is_writable_bind(policy, p);
    let grants = policy
        .grants()
        .iter()
        .filter(|g| g.mode == Mode::Rw && matches!(g.source, GrantSource::Config { .. }))
        .filter(|g| g.path.is_dir() && g.path != policy.workspace())
        .map(|g| g.path.clone())
        .collect();
    let home = inputs.home.as_deref().and_then(|h| h.canonicalize().ok());
    let home_files = home
        .iter()
        .flat_map(|home| {
            STARTUP_FILES
                .iter()
                .chain(&HOME_RUN_LATER)
                .map(|rel| home.join(rel))
        })
        .filter(|path| writable(path))
        .collect();
    leftovers::Inputs {
        workspace: policy.workspace().to_path_buf(),
        grants,
        home_files,
        repositories: found.repositories.clone(),
        existing: found.run_later.clone(),
        directories: (!found.truncated).then(|| found.directories.clone()),
        protected: found.carves.iter().map(|c| c.path.clone()).collect(),
    }
}

/// How many paths git configs may add to the view, so a config naming
/// thousands of files cannot make every start slow.
const MAX_GIT_NAMED: usize = 64;

/// What the protected git configs (and the user's global ones) name by
/// path under a writable grant: bound read-only too (see `gitconfig`).
fn git_config_named(
    policy: &Policy,
    home: Option<&Path>,
    found: &mut Found,
    writable: &dyn Fn(&Path) -> bool,
) {
    let repository_configs: Vec<PathBuf> = found
        .carves
        .iter()
        .filter(|c| c.reason == CarveReason::GitCode)
        .filter(|c| c.path.ends_with("config") || c.path.ends_with("config.worktree"))
        .map(|c| c.path.clone())
        .collect();
    let mut configs: Vec<(PathBuf, Option<PathBuf>)> = repository_configs
        .into_iter()
        .map(|config| {
            let gitdir = config.parent().unwrap_or(Path::new("/")).to_path_buf();
            // Hooks and commands run in the work tree; a bare repository's
            // (and, approximately, a submodule's) in the git directory.
            let work_tree = match gitdir.file_name() == Some(".git".as_ref()) {
                true => gitdir.parent().map(Path::to_path_buf),
                false => Some(gitdir),
            };
            (config, work_tree)
        })
        .collect();
    if let Some(home) = home {
        for rel in [".gitconfig", ".config/git/config"] {
            configs.push((home.join(rel), None));
        }
    }
    let mut added = 0;
    for (config, work_tree) in configs {
        let bases = gitconfig::Bases {
            home,
            work_tree: work_tree.as_deref(),
        };
        let named = gitconfig::named_paths(&config, bases);
        let dirs = named.hook_dirs.iter().map(|d| (d, true));
        for (path, is_dir) in dirs.chain(named.files.iter().map(|f| (f, false))) {
            if added < MAX_GIT_NAMED && push_named(policy, path, is_dir, found, writable) {
                added += 1;
            }
        }
    }
}

/// Carves one named path at its real place when it lies under a writable
/// grant; a missing hooks directory is made where its parent exists (as
/// `.git/hooks` is). Never a grant's root or a directory holding the
/// workspace (`core.hooksPath = .` must not make the workspace read-only).
fn push_named(
    policy: &Policy,
    path: &Path,
    is_dir: bool,
    found: &mut Found,
    writable: &dyn Fn(&Path) -> bool,
) -> bool {
    let (real, missing) = match path.canonicalize() {
        Ok(real) if real.is_dir() == is_dir => (real, false),
        Ok(_) => return false,
        Err(_) if is_dir => {
            let Ok(normal) = crate::policy::normalize(Path::new("/"), path) else {
                return false;
            };
            let normal = normal.into_path_buf();
            let (Some(parent), Some(name)) = (normal.parent(), normal.file_name()) else {
                return false;
            };
            match parent.canonicalize() {
                Ok(parent) if parent.is_dir() => (parent.join(name), true),
                _ => return false,
            }
        }
        Err(_) => return false,
    };
    let grant_root = policy.grants().iter().any(|g| g.path == real);
    if grant_root || policy.workspace().starts_with(&real) || !writable(&real) {
        return false;
    }
    if found.carves.iter().any(|c| c.path == real) {
        return false;
    }
    // A hooks directory or program reached through a link (husky's
    // `.husky` linked from elsewhere): the link is put back after the run.
    push_link(found, path, CarveReason::GitConfigNamed, writable);
    found.carves.push(Carve {
        path: real,
        reason: CarveReason::GitConfigNamed,
        missing: make_dir_if(missing),
    });
    true
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
        .filter(|g| crate::policy::lies_within(path, &g.path))
        .max_by_key(|g| g.path.as_os_str().len());
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
    // Most start-up files do not exist: one `lstat` says so, where
    // `canonicalize` reads every component's link first.
    if path.symlink_metadata().is_err() {
        return;
    }
    let Ok(real) = path.canonicalize() else {
        return;
    };
    push_link(found, path, reason, writable);
    if writable(&real) && !found.carves.iter().any(|c| c.path == real) {
        found.carves.push(Carve {
            path: real,
            reason,
            missing: IfMissing::Fail,
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
        push_link(found, &dir, CarveReason::PathDirectory, &|p| {
            is_writable_bind(policy, p)
        });
        if missing && !real.parent().is_some_and(Path::is_dir) {
            continue;
        }
        if !found.carves.iter().any(|c| c.path == real) {
            found.carves.push(Carve {
                path: real,
                reason: CarveReason::PathDirectory,
                missing: make_dir_if(missing),
            });
        }
    }
}

/// Where repositories are searched at any depth: the workspace. Another
/// writable grant (a tool's cache such as `~/.cargo/registry`, often huge)
/// is only searched at its top: the grant itself and its direct entries,
/// so a repository granted `rw` as a whole is still covered.
fn repository_roots(policy: &Policy) -> Vec<(PathBuf, Depth)> {
    policy
        .grants()
        .iter()
        .filter(|g| g.mode == Mode::Rw && g.path.is_dir())
        .filter_map(|g| match g.source {
            GrantSource::Workspace => Some((g.path.clone(), Depth::Any)),
            GrantSource::Config { .. } => Some((g.path.clone(), Depth::Top)),
            GrantSource::Builtin(_) => None,
        })
        .collect()
}

/// How deep the repository search goes below a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Depth {
    Any,
    /// The root and its direct entries.
    Top,
}

/// Walks `dir` (directories only, never following a symlink) for git
/// directories: a `.git` directory, a bare repository, a submodule's or a
/// worktree's git directory under `.git/modules` or `.git/worktrees`.
fn find_repositories(
    dir: &Path,
    depth: Depth,
    found: &mut Found,
    budget: &mut usize,
    writable: &dyn Fn(&Path) -> bool,
) {
    let mut pending = vec![Visit {
        path: dir.to_path_buf(),
        level: 0,
        in_git: false,
    }];
    while let Some(visit) = pending.pop() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Some(Listing {
            subdirs,
            has_head,
            git_file,
            git_link,
            hg_dir,
            run_later,
        }) = read_subdirs(&visit.path)
        else {
            continue;
        };
        found.run_later.extend(run_later);
        if depth == Depth::Any {
            found.directories.push(visit.path.clone());
        }
        if hg_dir {
            // Known to the sweep after the run: a `.hg` not found here is new.
            found.repositories.push(visit.path.join(".hg"));
            protect_hg(&visit.path.join(".hg"), found, writable);
        }
        if git_file || git_link {
            found.repositories.push(visit.path.join(".git"));
        }
        if git_file {
            // A worktree's or submodule's `.git` file ("gitdir: ..."): git
            // takes its hooks and config from wherever it points.
            let dot_git = visit.path.join(".git");
            push_code(
                &dot_git,
                IfMissing::Fail,
                CarveReason::GitCode,
                found,
                writable,
            );
        }
        if git_link {
            push_link(
                found,
                &visit.path.join(".git"),
                CarveReason::GitCode,
                writable,
            );
        }
        if is_gitdir(&visit.path, &subdirs, has_head) {
            found.repositories.push(visit.path.clone());
            protect_gitdir(&visit.path, found, writable);
            let inner = subdirs
                .into_iter()
                .filter(|d| d.ends_with("modules") || d.ends_with("worktrees"));
            pending.extend(inner.map(|path| visit.child(path, true)));
        } else if visit.in_git || depth == Depth::Any || visit.level == 0 {
            // `.git` last, so that it is searched next: the search stops
            // at its budget, and a child that made 100,000 directories in
            // one run otherwise had it spent before the workspace's own
            // `.git` was reached, whose `config` and `hooks` the next run
            // then wrote (and the user's `git status` ran).
            let in_git = visit.in_git;
            let (git, other): (Vec<_>, Vec<_>) =
                subdirs.into_iter().partition(|d| d.ends_with(".git"));
            pending.extend(other.into_iter().map(|path| visit.child(path, in_git)));
            pending.extend(git.into_iter().map(|path| visit.child(path, in_git)));
        } else {
            // Below the top of a grant searched at its top only: a
            // repository rooted here still has its `.git` found.
            let dot_git = subdirs.into_iter().filter(|d| d.ends_with(".git"));
            pending.extend(dot_git.map(|path| visit.child(path, false)));
        }
    }
}

/// One directory to read in the repository search.
struct Visit {
    path: PathBuf,
    level: usize,
    /// Inside a git directory's `modules` or `worktrees`.
    in_git: bool,
}

impl Visit {
    fn child(&self, path: PathBuf, in_git: bool) -> Visit {
        Visit {
            path,
            level: self.level + 1,
            in_git,
        }
    }
}

/// What the search needs of one directory.
struct Listing {
    subdirs: Vec<PathBuf>,
    /// It holds a `HEAD` file.
    has_head: bool,
    /// It holds a `.git` regular file (a gitlink).
    git_file: bool,
    /// Its `.git` is a symbolic link.
    git_link: bool,
    /// It holds a `.hg` directory (a Mercurial repository).
    hg_dir: bool,
    /// Its run-later entries (`leftovers::is_run_later`).
    run_later: Vec<PathBuf>,
}

fn read_subdirs(dir: &Path) -> Option<Listing> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut listing = Listing {
        subdirs: Vec::new(),
        has_head: false,
        git_file: false,
        git_link: false,
        hg_dir: false,
        run_later: Vec::new(),
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        listing.has_head |= kind.is_file() && name == "HEAD";
        listing.git_file |= kind.is_file() && name == ".git";
        listing.git_link |= kind.is_symlink() && name == ".git";
        listing.hg_dir |= kind.is_dir() && name == ".hg";
        if leftovers::is_run_later_in(dir, &name) {
            listing.run_later.push(entry.path());
        }
        if kind.is_dir() {
            listing.subdirs.push(entry.path());
        }
    }
    Some(listing)
}

/// A `.git` directory is git's even when incomplete (`git init` keeps the
/// hooks it finds there); otherwise `HEAD` with `objects/` (a bare or
/// submodule repository), or `HEAD` in a worktree's directory.
fn is_gitdir(dir: &Path, subdirs: &[PathBuf], has_head: bool) -> bool {
    let dot_git = dir.file_name().is_some_and(|n| n == ".git");
    let in_worktrees = dir.parent().is_some_and(|p| p.ends_with("worktrees"));
    dot_git || has_head && (in_worktrees || subdirs.iter().any(|d| d.ends_with("objects")))
}

fn protect_gitdir(gitdir: &Path, found: &mut Found, writable: &dyn Fn(&Path) -> bool) {
    for name in GIT_CODE {
        // A missing hooks directory is created; a missing `config.worktree`
        // is created empty where the repository's config enables it (`git
        // sparse-checkout` does: a planted one set `core.fsmonitor` for the
        // next `git status`), and is ignored by git elsewhere; a new
        // `commondir` is swept after the run.
        let make = match name {
            // `remotes/` and `branches/` name remotes as the config does
            // (`git push` to a bare repository planted inside `.git` ran its
            // hooks: a red-team run); git itself no longer writes them.
            "hooks" | "remotes" | "branches" => IfMissing::MakeDir,
            "config.worktree" if worktree_config_enabled(gitdir) => IfMissing::MakeFile,
            _ => IfMissing::Fail,
        };
        push_code(
            &gitdir.join(name),
            make,
            CarveReason::GitCode,
            found,
            writable,
        );
    }
}

/// What Mercurial reads from a repository's `.hg` and runs code from:
/// `hgrc` (`[hooks]` run commands; `[extensions]` load Python from any
/// path), `hgrc-not-shared` (read like `hgrc`, in a share and, with
/// `share-safe` in `requires` as `hg init` writes it, in any repository:
/// hg 6.3 ran its `[hooks]`), `requires`, which, with
/// `shared` or `share-safe` added, makes hg follow `sharedpath` to another
/// directory and read the config there, and `sharedpath` itself: in a
/// repository made by `hg share` (with `share-safe`, the default since hg
/// 6.1) it names the source's `.hg`, whose `hgrc` hg reads, so a child
/// re-pointing it at a directory of its own chose the config of the
/// user's next hg command. A missing one is left missing: hg reads it
/// only when `requires` (read-only) says `shared`.
const HG_CODE: [&str; 4] = ["hgrc", "hgrc-not-shared", "requires", "sharedpath"];

/// Carves a Mercurial repository's code read-only. A missing `hgrc` or
/// `hgrc-not-shared` is created empty (hg reads it once it exists; empty,
/// it sets nothing), so a child cannot plant the first one; `.hg` itself
/// stays writable, for `hg commit`.
fn protect_hg(hg: &Path, found: &mut Found, writable: &dyn Fn(&Path) -> bool) {
    for name in HG_CODE {
        let make = match name {
            "hgrc" | "hgrc-not-shared" => IfMissing::MakeFile,
            _ => IfMissing::Fail,
        };
        push_code(&hg.join(name), make, CarveReason::HgCode, found, writable);
    }
}

/// Whether git reads `config.worktree` in `gitdir`: its repository's
/// config (for a linked worktree's directory, `.git/worktrees/NAME`, the
/// common one two levels up) mentions `extensions.worktreeConfig`. Any
/// mention counts, whatever its value: the cost of being wrong is one
/// empty file.
fn worktree_config_enabled(gitdir: &Path) -> bool {
    let common = gitdir
        .parent()
        .filter(|p| p.ends_with("worktrees"))
        .and_then(Path::parent);
    [Some(gitdir), common]
        .into_iter()
        .flatten()
        .any(|dir| gitconfig::mentions(&dir.join("config"), "worktreeconfig"))
}

/// Carves `path` read-only: itself when it is no symbolic link; when it
/// is one, the real path it leads to, if that is writable (a bind would
/// follow the link at set-up, so a planted `hooks -> ../../../home` would
/// show a directory that is not granted in the view); when it is missing,
/// what `make` says (else nothing: a bind needs an inode).
fn push_code(
    path: &Path,
    make: IfMissing,
    reason: CarveReason,
    found: &mut Found,
    writable: &dyn Fn(&Path) -> bool,
) {
    let (path, missing) = match path.symlink_metadata() {
        Err(_) if make != IfMissing::Fail => (path.to_path_buf(), make),
        Err(_) => return,
        Ok(meta) if meta.file_type().is_symlink() => match path.canonicalize() {
            Ok(real) if writable(&real) => {
                push_link(found, path, reason, writable);
                (real, IfMissing::Fail)
            }
            _ => return,
        },
        Ok(_) => (path.to_path_buf(), IfMissing::Fail),
    };
    if !found.carves.iter().any(|c| c.path == path) {
        found.carves.push(Carve {
            path,
            reason,
            missing,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Makes `dirs` (and a `HEAD` where a path ends in `!`) under `root`.
    fn tree(root: &Path, dirs: &[&str]) {
        for dir in dirs {
            let (dir, head) = match dir.strip_suffix('!') {
                Some(d) => (d, true),
                None => (*dir, false),
            };
            std::fs::create_dir_all(root.join(dir)).unwrap();
            if head {
                std::fs::write(root.join(dir).join("HEAD"), "x").unwrap();
            }
        }
    }

    #[test]
    fn a_git_link_is_noted_with_its_target() {
        let root = tempfile::tempdir().unwrap();
        tree(root.path(), &["store/objects!", "sub"]);
        std::os::unix::fs::symlink("store", root.path().join(".git")).unwrap();
        std::os::unix::fs::symlink("/elsewhere/x.git", root.path().join("sub/.git")).unwrap();
        let mut found = Found::default();
        let mut budget = MAX_DIRS;
        find_repositories(root.path(), Depth::Any, &mut found, &mut budget, &|_| true);
        let mut links: Vec<_> = found
            .links
            .iter()
            .map(|l| (l.dir.join(&l.name), l.target.clone()))
            .collect();
        links.sort();
        assert_eq!(
            links,
            [
                (root.path().join(".git"), PathBuf::from("store")),
                (
                    root.path().join("sub/.git"),
                    PathBuf::from("/elsewhere/x.git")
                ),
            ]
        );
    }

    #[test]
    fn config_worktree_is_made_where_the_common_config_enables_it() {
        let root = tempfile::tempdir().unwrap();
        let git = root.path().join(".git");
        tree(root.path(), &[".git/hooks", ".git/worktrees/w/hooks"]);
        std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        assert!(!worktree_config_enabled(&git));
        std::fs::write(git.join("config"), "[extensions]\n\tworktreeConfig\n").unwrap();
        assert!(worktree_config_enabled(&git));
        assert!(worktree_config_enabled(&git.join("worktrees/w")));
        let mut found = Found::default();
        protect_gitdir(&git.join("worktrees/w"), &mut found, &|_| true);
        let made: Vec<_> = found
            .carves
            .iter()
            .map(|c| (c.path.clone(), c.missing))
            .collect();
        assert!(
            made.contains(&(git.join("worktrees/w/config.worktree"), IfMissing::MakeFile)),
            "{made:?}"
        );
    }

    fn search(root: &Path, depth: Depth) -> Vec<PathBuf> {
        let mut found = Found::default();
        let mut budget = MAX_DIRS;
        find_repositories(root, depth, &mut found, &mut budget, &|_| true);
        let mut paths: Vec<PathBuf> = found
            .carves
            .into_iter()
            .map(|c| c.path.strip_prefix(root).unwrap().to_path_buf())
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn repositories_are_found_at_any_depth_or_at_the_top() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        tree(
            root,
            &[
                ".git/hooks",
                ".git/modules/m/objects",
                ".git/modules/m/hooks",
                ".git/modules/m!",
                "direct/.git",
                "deep/er/.git",
                "bare.git/objects",
                "bare.git!",
            ],
        );
        // Each git directory's code that is made when missing: its hooks,
        // and the remotes named outside its config.
        let code = |dirs: &[&str]| {
            let mut paths: Vec<PathBuf> = dirs
                .iter()
                .flat_map(|d| ["branches", "hooks", "remotes"].map(|n| PathBuf::from(d).join(n)))
                .collect();
            paths.sort();
            paths
        };
        let any = search(root, Depth::Any);
        assert_eq!(
            any,
            code(&[
                ".git",
                ".git/modules/m",
                "bare.git",
                "deep/er/.git",
                "direct/.git",
            ])
        );
        let top = search(root, Depth::Top);
        assert_eq!(
            top,
            code(&[".git", ".git/modules/m", "bare.git", "direct/.git"])
        );
    }

    /// A flood of directories spends the budget, but never before the
    /// `.git` of a directory the search read: before, the search went
    /// into the last directory listed first, and a workspace a child had
    /// filled with 100,000 directories got no bind of its own `.git`'s
    /// `config` and `hooks`.
    #[test]
    fn a_flood_of_directories_does_not_hide_the_git_of_a_directory_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut dirs = vec![".git/hooks".to_string()];
        dirs.extend((0..10).flat_map(|t| (0..5).map(move |i| format!("f{t}/d{i}"))));
        let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        tree(dir.path(), &dirs);
        let mut found = Found::default();
        let mut budget = 20;
        find_repositories(dir.path(), Depth::Any, &mut found, &mut budget, &|_| true);
        assert_eq!(budget, 0);
        let carved: Vec<_> = found.carves.iter().map(|c| c.path.clone()).collect();
        assert!(
            carved.contains(&dir.path().join(".git/hooks")),
            "{carved:?}"
        );
    }

    #[test]
    fn the_search_stops_at_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), &["a/b/c/.git", "d/e"]);
        let mut found = Found::default();
        let mut budget = 2;
        find_repositories(dir.path(), Depth::Any, &mut found, &mut budget, &|_| true);
        assert_eq!(budget, 0);
        assert!(found.carves.is_empty());
    }
}

//! What a run leaves behind that would run later, unconfined: a
//! repository git would find, a hook, a tool's configuration, a changed
//! protected file. Binds protect what exists when a run starts; this
//! module looks after the rest once every process of the run has ended.
//!
//! [`Watch::before`] notes, before any child exists, when the run started
//! (the file system's coarse clock, which stamps every change's `ctime`),
//! the repositories there were, each repository's `HEAD`, and the
//! protected files' contents.
//! [`Watch::after`] walks the writable grants and sets aside, into the
//! workspace's quarantine (`.magus/quarantine/`), what the run created or
//! changed among those names ([`names`]), puts noted files back, and lists
//! the executables the run wrote in the workspace. It never follows a
//! symbolic link, and it runs only once no process of the run is left;
//! another run of the same workspace may still be going, so the
//! directories it reads and moves things out of are opened following no
//! link on the way either ([`nofollow`]). The user is told what moved, where, and how to
//! take it back ([`report`]).
//!
//! Python's bytecode is set aside file by file: each `.pyc` in a
//! `__pycache__` that the run created or changed, never the directory.
//! A directory rule would still need the file rule, for a `__pycache__`
//! there at the start where the user's own bytecode sits beside a planted
//! file; a directory the run made holds only new files, which the file
//! rule finds each; and that a directory was made by the run (not only
//! given a new entry, which moves its `ctime` too) needs the start-up
//! listing, which may have stopped at its budget. The empty `__pycache__`
//! left runs nothing: Python compiles the sources into it again.

mod aside;
mod inert;
mod names;
pub(crate) mod nofollow;
mod noted;
pub(crate) mod report;
mod scan;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

pub(crate) use names::is_run_later_in;
use noted::Noted;

/// Where the sweep looks, decided from the policy when the run starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    /// The workspace root (real): searched at any depth.
    pub workspace: PathBuf,
    /// The other writable grants that outlive the run (real): searched at
    /// their top and their direct entries, as the jail's repository search
    /// does (a tool's cache may hold millions of files).
    pub grants: Vec<PathBuf>,
    /// Start-up files and directories in `$HOME` that lie under a writable
    /// grant (real): a new or changed one is set aside.
    pub home_files: Vec<PathBuf>,
    /// Git directories, and `.git` files or links, there when the run
    /// started: not new, and never walked into.
    pub repositories: Vec<PathBuf>,
    /// The protected paths (the jail's carve-outs): noted and put back
    /// after the run. Binds hold them during it, but only by their
    /// spelling: on a case-insensitive disk another spelling reaches the
    /// same file, and without a jail nothing holds them.
    pub protected: Vec<PathBuf>,
    /// Run-later files and directories there at the start
    /// ([`names::is_run_later`]): each is noted by its `ctime`, so that one
    /// changed just before the run (in the clock's last tick) is not taken
    /// for the run's.
    pub existing: Vec<PathBuf>,
    /// The workspace's directories when the run started, where the
    /// start-up search read them all (`None` where it stopped at its
    /// budget, or was not made): the sweep then reads only those changed
    /// since (an entry made, renamed or removed in a directory changes
    /// its `ctime`) and the new ones, not the whole tree.
    pub directories: Option<Vec<PathBuf>>,
}

/// The coarsest step a file system stores a timestamp in, in seconds
/// (FAT's; [`Stamp::at_or_after`] floors to it).
const COARSEST_STEP_SECS: i64 = 2;

/// A point in time as file timestamps count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Stamp {
    secs: i64,
    nanos: i64,
}

impl Stamp {
    /// The clock the kernel stamps `ctime` with: a change made after this
    /// call has a `ctime` at or after it, where the file system keeps
    /// sub-second timestamps ([`Stamp::at_or_after`] for the others). (A
    /// change in the same tick just before it counts as the run's too,
    /// which errs on the safe side.)
    fn now() -> Stamp {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let clock = nix::time::ClockId::CLOCK_REALTIME_COARSE;
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let clock = nix::time::ClockId::CLOCK_REALTIME;
        match nix::time::clock_gettime(clock) {
            Ok(t) => Stamp {
                secs: t.tv_sec(),
                nanos: t.tv_nsec(),
            },
            // No clock: everything counts as changed by the run, so the
            // sweep errs towards setting aside (never towards missing).
            Err(_) => Stamp { secs: 0, nanos: 0 },
        }
    }

    /// Whether this `ctime` was stamped at or after `since`. A stamp of
    /// whole seconds comes from a file system that keeps no more (ext4
    /// with 128-byte inodes, which `mke2fs` makes for file systems under
    /// 512 MiB; ext3; FAT, in steps of two): it is compared with `since`
    /// floored to that step. Compared as is, a file planted in the run's
    /// first second there was stamped before the start, and stayed (5
    /// runs in 5). A change in the two seconds before the start counts as
    /// the run's there, which errs on the safe side; a sub-second stamp
    /// is whole seconds once in a billion, and is then judged the same.
    fn at_or_after(self, since: Stamp) -> bool {
        match self.nanos {
            0 => {
                let floored = since.secs - since.secs.rem_euclid(COARSEST_STEP_SECS);
                self.secs >= floored
            }
            _ => self >= since,
        }
    }

    /// When `meta`'s inode last changed (content, name, mode or links).
    fn changed(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            secs: meta.ctime(),
            nanos: meta.ctime_nsec(),
        }
    }
}

/// The state of the grants when the run started.
#[derive(Debug)]
pub struct Watch {
    since: Stamp,
    inputs: Inputs,
    /// The repositories there at the start, by path, with the identity
    /// (device, inode) of what stood there: one swapped for another (or
    /// for a link) is new.
    known: HashMap<PathBuf, Identity>,
    heads: Vec<(PathBuf, Vec<u8>)>,
    noted: Vec<Noted>,
    /// The `ctime` of each existing run-later file and home start-up file
    /// (and of what their directories hold) when the run started.
    stamps: HashMap<PathBuf, Seen>,
}

impl Watch {
    /// Call before any process of the run exists.
    pub fn before(inputs: Inputs) -> Watch {
        let since = Stamp::now();
        let known = inputs
            .repositories
            .iter()
            .filter_map(|repo| Some((repo.clone(), Identity::of(repo)?)))
            .collect();
        let heads = inputs
            .repositories
            .iter()
            .filter_map(|repo| noted::small_file(&repo.join("HEAD")).map(|t| (repo.clone(), t)))
            .collect();
        let noted = inputs
            .protected
            .iter()
            .filter_map(|p| Noted::take(p))
            .collect();
        let mut stamps = HashMap::new();
        for path in inputs.existing.iter().chain(&inputs.home_files) {
            noted::stamps(path, &mut stamps);
            // A run-later name that is a link (`crate/.cargo ->
            // ../shared/cargo`): what it leads to, where the sweep looks
            // after the run (`Scan::linked_run_later_dir`).
            let linked = path.symlink_metadata().is_ok_and(|m| m.is_symlink());
            if let (true, Ok(target)) = (linked, path.canonicalize()) {
                noted::stamps(&target, &mut stamps);
            }
        }
        noted::package_inits(&inputs.workspace, &mut stamps);
        Watch {
            since,
            inputs,
            known,
            heads,
            noted,
            stamps,
        }
    }

    /// Call once no process of the run is left: sets aside and puts back
    /// (see the module doc), lists the executables the run wrote where
    /// `executables` asks, and returns what it did.
    pub fn after(&self, executables: Executables) -> Findings {
        // No workspace: a plan made for the kernel tests, nothing to sweep.
        if !self.inputs.workspace.is_absolute() {
            return Findings::default();
        }
        let mut quarantine = aside::Quarantine::new(&self.inputs.workspace);
        let mut findings = Findings::default();
        for noted in &self.noted {
            noted.put_back(self.since, &mut quarantine, &mut findings);
        }
        self.put_back_heads(&mut findings);
        // Protected paths are bound read-only, or noted and put back above.
        let skip: HashSet<&Path> = self.inputs.protected.iter().map(PathBuf::as_path).collect();
        let mut scan = scan::Scan::new(self, &skip, &mut quarantine, &mut findings, executables);
        scan.workspace(&self.inputs.workspace, self.inputs.directories.as_deref());
        for repository in &self.inputs.repositories {
            scan.submodules(repository);
            scan.rebase_state(repository);
        }
        for path in &self.inputs.existing {
            scan.existing_run_later(path);
        }
        for grant in &self.inputs.grants {
            scan.grant(grant);
        }
        for path in &self.inputs.home_files {
            scan.home_file(path);
        }
        quarantine.finish(&mut findings);
        findings
    }

    /// A noted repository's `HEAD` that git would no longer accept (so it
    /// would look above it for another repository) gets its noted text
    /// back. A valid one is left as the run made it (`git checkout`).
    fn put_back_heads(&self, findings: &mut Findings) {
        for (repo, text) in &self.heads {
            let head = repo.join("HEAD");
            if !unmoved(&head) {
                continue;
            }
            let now = noted::small_file(&head);
            if now.as_deref().is_some_and(names::is_valid_head) {
                continue;
            }
            let outcome = match noted::rewrite(&head, text, 0o644) {
                Ok(()) => Outcome::PutBack,
                Err(e) => Outcome::Failed(e.to_string()),
            };
            findings.items.push(Item {
                path: head,
                left: Left::BrokenHead,
                outcome,
            });
        }
    }
}

/// What a path is, for telling one entry from another in its place: a
/// link by what it says (one `jail::sweep` put back is the same link), any
/// other entry by its device and inode.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Link(PathBuf),
}

impl Identity {
    fn of(path: &Path) -> Option<Identity> {
        use std::os::unix::fs::MetadataExt;
        let meta = path.symlink_metadata().ok()?;
        match meta.file_type().is_symlink() {
            true => std::fs::read_link(path).ok().map(Identity::Link),
            false => Some(Identity::Inode(meta.dev(), meta.ino())),
        }
    }
}

/// What stood at a path when the run started, for telling whether the
/// run changed it: an entry by its `ctime`, a link by what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Entry(Stamp),
    Link(PathBuf),
}

impl Seen {
    fn of(path: &Path, meta: &std::fs::Metadata) -> Option<Seen> {
        match meta.file_type().is_symlink() {
            true => std::fs::read_link(path).ok().map(Seen::Link),
            false => Some(Seen::Entry(Stamp::changed(meta))),
        }
    }

    /// Whether `meta`, now at `path`, changed during the run: it differs
    /// from what was seen at the start, or, where nothing was, its `ctime`
    /// is at or after the start.
    fn changed(seen: Option<&Seen>, path: &Path, meta: &std::fs::Metadata, since: Stamp) -> bool {
        match seen {
            Some(seen) => Seen::of(path, meta).as_ref() != Some(seen),
            None => Stamp::changed(meta).at_or_after(since),
        }
    }
}

/// Whether the directories above `path` (real when noted) are still what
/// they were, with no link among them: a child may have put a link to
/// anywhere in place of one, and the sweep may run as root.
fn unmoved(path: &Path) -> bool {
    path.parent()
        .is_some_and(|parent| parent.canonicalize().is_ok_and(|real| real == parent))
}

/// Whether the sweep lists the executables the run wrote. Listing them
/// costs an `lstat` of every file of the workspace (about 1 µs each: 10
/// ms for 10,000 files), where the rest of the walk reads directories
/// only; they are shown only under `-v` and in JSON
/// ([`report::executables_wanted`], as the run's output options ask), so other runs skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executables {
    List,
    Skip,
}

/// What the sweep did.
#[derive(Debug, Default)]
pub struct Findings {
    pub items: Vec<Item>,
    /// Executable files the run created or changed in the workspace (left
    /// in place: the user may have asked for them).
    pub executables: Vec<PathBuf>,
    /// Where the quarantine's list of what it holds was written.
    pub manifest: Option<PathBuf>,
    /// The walk stopped at its budget: deeper entries were not looked at.
    pub truncated: bool,
    /// How many directory entries the walk looked at.
    pub entries: usize,
}

/// One thing set aside or put back.
#[derive(Debug)]
pub struct Item {
    /// Where it was.
    pub path: PathBuf,
    pub left: Left,
    pub outcome: Outcome,
}

/// What the run left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// A `.git` that was not there: git would take it for a repository.
    Repository,
    /// `HEAD` (and its `config` or `commondir`) beside `objects` and
    /// `refs`: git takes the directory for a bare repository.
    BareRepository,
    /// A file a tool obeys later (see [`names`]).
    RunLater,
    /// A start-up file in the home directory.
    StartupFile,
    /// A protected file or directory entry a child changed.
    Protected,
    /// A repository's `HEAD` made invalid.
    BrokenHead,
    /// A git directory (or a link) new in a repository's `modules/`:
    /// `git submodule update` would use it instead of cloning.
    Submodule,
    /// A protected directory a child filled past what the sweep compares
    /// ([`noted::MAX_COMPARED`] entries): set aside whole, made again.
    Flooded,
    /// Python bytecode (`__pycache__/*.pyc`) the run wrote: a cache
    /// Python rebuilds from the sources, so it is removed, not kept.
    Bytecode,
}

/// What became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Moved to this path.
    Moved(PathBuf),
    /// Moved to this path, and the noted version put back.
    Replaced(PathBuf),
    /// The noted version put back over what stood there.
    PutBack,
    /// Deleted: a cache its tool makes again (Python's bytecode).
    Removed,
    /// Could not be moved or put back: why.
    Failed(String),
}

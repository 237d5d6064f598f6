//! A cgroup of the run's own for the supervisor used without a PID
//! namespace, where this user may make one (root, a delegated cgroup v2
//! subtree): cgroup v2's `cgroup.kill` ends every process in it at once,
//! and a `pids` controller (v2's, or the v1 `pids` hierarchy) bounds the
//! run's tasks, real root included. The supervisor moves magus proper in
//! and stays outside.

use std::path::{Path, PathBuf};

use nix::unistd::Pid;

/// The prefix of the directories made here, followed by the supervisor's
/// PID (how a stale one is recognised, see [`remove_stale`]).
const PREFIX: &str = "magus-run-";

/// The run's cgroup directories, where they could be made.
#[derive(Debug, Default)]
pub(super) struct RunCgroup {
    /// In the cgroup v2 hierarchy: `cgroup.kill`, and `pids.max` where the
    /// parent delegates the `pids` controller.
    v2: Option<PathBuf>,
    /// Whether `v2` holds the bound in its `pids.max`.
    v2_pids: bool,
    /// In the cgroup v1 `pids` hierarchy, its `pids.max` written.
    pids_v1: Option<PathBuf>,
}

impl RunCgroup {
    /// Makes the directories (none where this user may not) and writes
    /// `bound` tasks as their `pids.max`.
    pub(super) fn make(bound: u32) -> RunCgroup {
        let (v2_parent, pids_parent) = own_cgroups();
        let mut run = RunCgroup::default();
        if let Some(dir) = v2_parent.and_then(|p| make_in(&p)) {
            // Only where the parent delegates the controller.
            run.v2_pids =
                dir.join("pids.max").exists() && write(&dir, "pids.max", &bound.to_string());
            run.v2 = Some(dir);
        }
        if let Some(dir) = pids_parent.and_then(|p| make_in(&p)) {
            if write(&dir, "pids.max", &bound.to_string()) {
                run.pids_v1 = Some(dir);
            } else {
                let _ = std::fs::remove_dir(&dir);
            }
        }
        run
    }

    /// Whether a `pids.max` will bound the run once magus is moved in.
    pub(super) fn bounds(&self) -> bool {
        (self.v2.is_some() && self.v2_pids) || self.pids_v1.is_some()
    }

    /// Moves `child` (magus proper, before its first child) into each
    /// directory; one that refuses it is given up. Returns whether a
    /// `pids.max` now bounds the child and all it will start.
    pub(super) fn adopt(&mut self, child: Pid) -> bool {
        let pid = child.as_raw().to_string();
        for slot in [&mut self.v2, &mut self.pids_v1] {
            if let Some(dir) = slot.take_if(|dir| !write(dir, "cgroup.procs", &pid)) {
                let _ = std::fs::remove_dir(dir);
            }
        }
        self.bounds()
    }

    /// Whether it can kill the whole run at once (cgroup v2, Linux 5.14+).
    pub(super) fn can_kill(&self) -> bool {
        self.v2
            .as_ref()
            .is_some_and(|d| d.join("cgroup.kill").exists())
    }

    /// `cgroup.kill`: `SIGKILL` to every process in the cgroup, new ones
    /// included (a fork racing it fails).
    pub(super) fn kill(&self) {
        if let Some(dir) = &self.v2 {
            write(dir, "cgroup.kill", "1");
        }
    }

    /// Removes the directories, once every process of the run is reaped.
    pub(super) fn remove(&self) {
        for dir in [&self.v2, &self.pids_v1].into_iter().flatten() {
            // A v1 cgroup empties as its last tasks are released.
            for _ in 0..50 {
                match std::fs::remove_dir(dir) {
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    _ => break,
                }
            }
        }
    }
}

fn write(dir: &Path, file: &str, value: &str) -> bool {
    std::fs::write(dir.join(file), value).is_ok()
}

/// `magus-run-<pid>` in `parent`, after removing those of supervisors
/// that are gone.
fn make_in(parent: &Path) -> Option<PathBuf> {
    remove_stale(parent);
    let dir = parent.join(format!("{PREFIX}{}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    Some(dir)
}

/// Removes the empty directories a killed supervisor left (`rmdir` of a
/// cgroup that still holds a process fails, so a live run keeps its own).
fn remove_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|n| n.strip_prefix(PREFIX));
        let gone = pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists());
        if gone {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// This process's own directory in the cgroup v2 hierarchy and in the v1
/// `pids` hierarchy, where they are mounted.
fn own_cgroups() -> (Option<PathBuf>, Option<PathBuf>) {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let v2 = own_path(&cgroups, |controllers, id| {
        id == "0" && controllers.is_empty()
    })
    .and_then(|path| mounted_at(&mounts, &path, |fs, _| fs == "cgroup2"));
    let pids = own_path(&cgroups, |controllers, _| {
        controllers.split(',').any(|c| c == "pids")
    })
    .and_then(|path| {
        mounted_at(&mounts, &path, |fs, options| {
            fs == "cgroup" && options.split(',').any(|o| o == "pids")
        })
    });
    (v2, pids)
}

/// The path of the line of `/proc/self/cgroup` (`id:controllers:path`)
/// that `wanted(controllers, id)` picks.
fn own_path(cgroups: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<String> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        wanted(controllers, id).then(|| path.to_string())
    })
}

/// Where `path` of the hierarchy that `is_it(fstype, super_options)` picks
/// lies in this mount namespace, from `/proc/self/mountinfo`.
fn mounted_at(mountinfo: &str, path: &str, is_it: impl Fn(&str, &str) -> bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let dash = fields.iter().position(|f| *f == "-")?;
        let (fstype, options) = (*fields.get(dash + 1)?, *fields.get(dash + 3)?);
        let (root, point) = (*fields.get(3)?, *fields.get(4)?);
        // Octal escapes (`\040` for a space) are left to other mounts.
        if !is_it(fstype, options) || point.contains('\\') {
            return None;
        }
        let below = Path::new(path).strip_prefix(root).ok()?;
        Some(Path::new(point).join(below))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CGROUPS: &str = "9:name=systemd:/\n8:pids:/user.slice\n0::/user.slice/app.scope\n";
    const MOUNTS: &str = "\
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 /user.slice /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn each_hierarchy_is_found_where_it_is_mounted() {
        let v2 = own_path(CGROUPS, |c, id| id == "0" && c.is_empty()).unwrap();
        assert_eq!(v2, "/user.slice/app.scope");
        let at = mounted_at(MOUNTS, &v2, |fs, _| fs == "cgroup2");
        assert_eq!(at, Some(PathBuf::from("/sys/fs/cgroup/unified/app.scope")));
        let pids = own_path(CGROUPS, |c, _| c.split(',').any(|c| c == "pids")).unwrap();
        let at = mounted_at(MOUNTS, &pids, |fs, o| {
            fs == "cgroup" && o.split(',').any(|o| o == "pids")
        });
        assert_eq!(at, Some(PathBuf::from("/sys/fs/cgroup/pids/user.slice")));
    }

    #[test]
    fn a_path_outside_the_mounted_root_is_not_guessed() {
        let at = mounted_at(MOUNTS, "/system.slice", |fs, _| fs == "cgroup2");
        assert_eq!(at, None);
    }
}

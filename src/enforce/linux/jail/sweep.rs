//! After the run, what no bind can hold: a git directory's `commondir`
//! that did not exist when the run started. git reads `config` and
//! `hooks` from the directory it names instead of its own, so a child
//! that writes one (the rest of `.git` stays writable, for `git commit`)
//! would make git run its code, unconfined, at the user's next `git
//! status`. A missing file cannot be bound read-only (a bind needs an
//! inode), so the original process, outside the jail, removes such a file
//! once every process of the run has ended, and says so.

use std::path::{Path, PathBuf};

use super::plan::JailPlan;
use super::protect::CarveReason;

/// The `commondir` files that did not exist when the run started.
#[derive(Debug, Default)]
pub struct Sweep {
    absent: Vec<PathBuf>,
}

impl Sweep {
    /// Notes, before any child exists, each protected git directory (one
    /// per carved `hooks`) that has no `commondir`.
    pub fn before(plan: &JailPlan) -> Sweep {
        let absent = plan
            .carve_outs()
            .filter(|(path, reason)| **reason == CarveReason::GitCode && path.ends_with("hooks"))
            .filter_map(|(hooks, _)| hooks.parent())
            .map(|gitdir| gitdir.join("commondir"))
            .filter(|file| file.symlink_metadata().is_err())
            .collect();
        Sweep { absent }
    }

    /// Once the run's PID namespace is gone: removes every noted
    /// `commondir` that now exists (a file or a symlink; a directory makes
    /// git stop, which runs nothing) and says so on stderr.
    pub fn after(&self) {
        for file in &self.absent {
            let Ok(meta) = file.symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                continue;
            }
            let outcome = match std::fs::remove_file(file) {
                Ok(()) => "magus removed it".to_string(),
                Err(e) => format!("magus could not remove it ({e}): remove it before running git"),
            };
            say(file, &outcome);
        }
    }
}

fn say(file: &Path, outcome: &str) {
    let text = format!(
        "warning[MGS2002]: a child created `{}`, which would make git take its config and \
         hooks from another directory and run their commands outside the sandbox; {outcome}\n",
        file.display()
    );
    let _ = nix::unistd::write(std::io::stderr(), text.as_bytes());
}

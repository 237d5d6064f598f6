//! Saying, once per run, that the spell wrote with `fs.*` into a directory
//! the jail gives each run of its own (`/tmp`, `/dev/shm`, `$TMPDIR`), or
//! into the directory a run without a jail is given instead
//! (`policy::unjailed`): what lands there is gone when the run ends
//! (docs/spells.md, "Temporary files").

use super::Session;
use crate::diag::Diagnostic;
use crate::policy::{lies_within, normalize, Grant, GrantSource, Policy, RUN_TEMP_WHY};
use std::path::Path;

/// Where the run's temporary directories live, and whether the note that
/// they are discarded has been said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TempDirs {
    /// The host's own (no jail and no directory of the run's own, or
    /// nested in another run): they outlive the run.
    Host,
    /// The run's own, and nothing has been written there yet.
    PerRun,
    /// The run's own, and the note has been said.
    PerRunNoted,
}

impl Session {
    /// After a write through the gate to `spelled` succeeded: the note,
    /// the first time a write lands in a directory of the run's own.
    pub(super) fn wrote(&self, spelled: &str) {
        if self.temp_dirs.get() != TempDirs::PerRun {
            return;
        }
        let gate = self.gate();
        let Ok(path) = normalize(gate.current_directory(), spelled) else {
            return;
        };
        let Some(grant) = per_run_grant(gate.policy(), path.as_path()) else {
            return;
        };
        self.temp_dirs.set(TempDirs::PerRunNoted);
        self.emit(&discarded_note(path.as_path(), &grant.path));
    }
}

/// The grant `path` is reached through, when the jail makes that grant a
/// directory of the run's own: the deepest grant holding `path` (a grant
/// inside `/tmp` is the host's directory, bound over the run's `/tmp`).
fn per_run_grant<'p>(policy: &'p Policy, path: &Path) -> Option<&'p Grant> {
    let deepest = policy
        .grants()
        .iter()
        .filter(|g| lies_within(path, &g.path))
        .max_by_key(|g| g.path.as_os_str().len())?;
    // A fresh tmpfs of the run's own; not the run's own devpts, whose
    // entries are terminals, not files a spell keeps.
    let fresh = deepest.is_fresh_tmpfs()
        || matches!(&deepest.source, GrantSource::Builtin(why) if *why == RUN_TEMP_WHY);
    fresh.then_some(deepest)
}

fn discarded_note(path: &Path, dir: &Path) -> Diagnostic {
    Diagnostic::note(format!(
        "`{}` is in this run's own `{}`, which is discarded when the run ends",
        path.display(),
        dir.display()
    ))
    .with_help("write what must outlive the run under the workspace (said once per run)")
}

// Unix paths, as the policy spells them there.
#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::policy::{Mode, SandboxState};
    use std::path::PathBuf;

    fn grant(path: &str, source: GrantSource) -> Grant {
        Grant {
            path: PathBuf::from(path),
            mode: Mode::Rw,
            source,
        }
    }

    #[test]
    fn the_deepest_grant_decides() {
        let shared = GrantSource::Config {
            spelled: "/tmp/shared".into(),
            line: 3,
            column: 9,
            spell: None,
        };
        let policy = crate::policy::Policy::new(
            SandboxState::On,
            PathBuf::from("/ws"),
            vec![
                grant("/ws", GrantSource::Workspace),
                grant("/tmp", GrantSource::Builtin("temporary files")),
                grant("/tmp/shared", shared),
                grant("/dev/shm", GrantSource::Builtin("shared memory")),
                grant("/dev/pts", GrantSource::Builtin("pseudo-terminals")),
            ],
            Default::default(),
            Vec::new(),
        );
        let cases = [
            ("/tmp/out.txt", Some("/tmp")),
            ("/tmp", Some("/tmp")),
            ("/dev/shm/x", Some("/dev/shm")),
            ("/tmp/shared/out.txt", None),
            ("/tmpx/out.txt", None),
            ("/ws/tmp/out.txt", None),
            ("/dev/pts/3", None),
        ];
        for (path, want) in cases {
            let got = per_run_grant(&policy, Path::new(path)).map(|g| g.path.clone());
            assert_eq!(got, want.map(PathBuf::from), "{path}");
        }
    }
}

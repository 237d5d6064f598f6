//! The policy of a run with no jail of its own (user namespaces refused:
//! docs/without-user-namespaces.md).
//!
//! Why: the jail gives each run its own `/tmp`, `/dev/shm` and `$TMPDIR`.
//! Without it those are the host's, where other sessions keep what they
//! share with no one: a Kerberos ticket cache (`/tmp/krb5cc_UID`), an
//! application's shared memory, another tool's temporary files. Landlock
//! cannot grant a directory minus the files already in it, so there they
//! are not granted at all: a directory made for the run alone
//! (`enforce::run_temp`) is granted in their place, and children find it
//! as `$TMPDIR`. The gate and Landlock are compiled from the policy this
//! returns, so they still agree; a path the user's own `magus.yaml`
//! grants is granted as declared (the user chose the host's directory).

use super::{lies_within, trie_of, Grant, GrantSource, Mode, Policy, RUN_TEMP_WHY};
use std::path::{Path, PathBuf};

/// What a run without a jail gets instead of the host's temporary
/// directories.
#[derive(Debug, Clone)]
pub(crate) struct Withheld {
    /// The host's directories that are not granted.
    host: Vec<PathBuf>,
    /// The run's own directory, granted in their place (none when it
    /// could not be made).
    run_temp: Option<PathBuf>,
}

impl Policy {
    /// This policy for a run with no jail of its own: the host's `/tmp`,
    /// `/dev/shm` and `$TMPDIR` withheld, `run_temp` granted `rw` instead.
    /// (Only the kernel layer confines children, so only it calls this:
    /// elsewhere withholding from the gate alone would protect nothing.)
    #[cfg_attr(not(kernel_layer), allow(dead_code))]
    pub(crate) fn without_jail(&self, run_temp: Option<PathBuf>) -> Policy {
        let (host, mut grants): (Vec<Grant>, Vec<Grant>) =
            self.grants.iter().cloned().partition(Grant::is_fresh_tmpfs);
        grants.extend(self.stood_in.iter().cloned());
        if let Some(dir) = &run_temp {
            grants.push(Grant {
                path: dir.clone(),
                mode: Mode::Rw,
                source: GrantSource::Builtin(RUN_TEMP_WHY),
            });
        }
        let host = host.into_iter().map(|g| g.path).collect();
        Policy {
            trie: trie_of(&grants),
            grants,
            withheld: Some(Withheld { host, run_temp }),
            ..self.clone()
        }
    }

    /// The directory this run has in place of the host's temporary
    /// directories, when it has no jail of its own.
    pub(crate) fn run_temp(&self) -> Option<&Path> {
        self.withheld.as_ref()?.run_temp.as_deref()
    }

    /// The host's temporary directory `path` lies in, when it was withheld
    /// for want of a jail.
    pub(crate) fn withheld_temp(&self, path: &Path) -> Option<&Path> {
        let withheld = self.withheld.as_ref()?;
        withheld
            .host
            .iter()
            .find(|dir| lies_within(path, dir))
            .map(PathBuf::as_path)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::policy::{Access, NormalPath, SandboxState};

    fn grant(path: &str, source: GrantSource) -> Grant {
        Grant {
            path: PathBuf::from(path),
            mode: Mode::Rw,
            source,
        }
    }

    fn allowed(policy: &Policy, path: &str, access: Access) -> bool {
        let path = NormalPath::new(PathBuf::from(path)).unwrap();
        policy.check(&path, access).is_allowed()
    }

    fn policy() -> Policy {
        let grants = vec![
            grant("/ws", GrantSource::Workspace),
            grant("/tmp", GrantSource::Builtin("temporary files")),
            grant("/dev/shm", GrantSource::Builtin("shared memory")),
            grant(
                "/home/u/tmp",
                GrantSource::Builtin(crate::policy::builtin::TMPDIR_WHY),
            ),
            grant(
                "/tmp/shared",
                GrantSource::Config {
                    spelled: "/tmp/shared".into(),
                    line: 4,
                    column: 13,
                    spell: None,
                },
            ),
        ];
        Policy::new(
            SandboxState::On,
            "/ws".into(),
            grants,
            Default::default(),
            vec![],
        )
    }

    #[test]
    fn the_hosts_temporary_directories_give_way_to_the_runs_own() {
        let before = policy();
        for path in ["/tmp/krb5cc_1000", "/dev/shm/app", "/home/u/tmp/x"] {
            assert!(allowed(&before, path, Access::Read), "{path}");
        }
        let after = before.without_jail(Some("/tmp/magus-run-ab12".into()));
        for path in ["/tmp/krb5cc_1000", "/tmp", "/dev/shm/app", "/home/u/tmp/x"] {
            assert!(!allowed(&after, path, Access::Read), "{path}");
            assert!(!allowed(&after, path, Access::Write), "{path}");
        }
        assert!(allowed(&after, "/tmp/magus-run-ab12/f", Access::Write));
        assert!(allowed(&after, "/tmp/shared/f", Access::Write));
        assert!(allowed(&after, "/ws/f", Access::Write));
        assert_eq!(after.run_temp(), Some(Path::new("/tmp/magus-run-ab12")));
        assert_eq!(
            after.withheld_temp(Path::new("/dev/shm/app")),
            Some(Path::new("/dev/shm"))
        );
        assert_eq!(after.withheld_temp(Path::new("/ws/f")), None);
        assert_eq!(before.withheld_temp(Path::new("/tmp/x")), None);
        assert_eq!(
            after.grants().len(),
            after
                .grants()
                .iter()
                .filter(|g| !g.is_fresh_tmpfs())
                .count()
        );
    }

    #[test]
    fn the_users_own_entry_for_tmp_is_granted_as_declared() {
        let mut declared = policy();
        declared.stood_in = vec![grant(
            "/tmp",
            GrantSource::Config {
                spelled: "/tmp".into(),
                line: 3,
                column: 13,
                spell: None,
            },
        )];
        let after = declared.without_jail(None);
        assert!(allowed(&after, "/tmp/x", Access::Write));
        assert!(!allowed(&after, "/dev/shm/app", Access::Read));
        assert_eq!(after.run_temp(), None);
    }
}

//! Credential stores: the files the overview names as the targets of
//! supply-chain malware. A denial of one of them explains itself and never
//! offers a paste-ready grant, because the fix for "a spell wants my SSH
//! key" is almost never "give every spell my SSH key" (`magus explain
//! MGS2001` says the same).

use std::path::Path;

/// Directories under `$HOME` whose whole contents are credentials: the
/// overview's, and the other clouds' counterparts of `~/.aws` (Google
/// Cloud's `gcloud` keeps its refresh tokens and service-account keys
/// there, Azure's CLI its token cache).
pub(crate) const HOME_DIRS: [&str; 8] = [
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/op",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".azure",
];

/// Single files under `$HOME` that hold credentials. Beside the
/// overview's: git's other credential file (`~/.config/git/credentials`,
/// which `git credential-store` reads when `~/.git-credentials` is
/// missing), podman's and skopeo's registry logins (the counterpart of
/// `~/.docker`), Gradle's and Maven's user settings (repository passwords
/// and signing keys, where `~/.gradle` or `~/.m2` is granted for a build),
/// and the tokens of command-line tools a red-team run found readable
/// under a grant of `~/.config` (2026-12-08).
pub(crate) const HOME_FILES: [&str; 24] = [
    ".vault-token",
    ".npmrc",
    ".netrc",
    ".git-credentials",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".config/gh/hosts.yml",
    ".pypirc",
    ".config/git/credentials",
    ".config/containers/auth.json",
    ".gradle/gradle.properties",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".terraform.d/credentials.tfrc.json",
    ".config/hub",
    ".config/glab-cli/config.yml",
    ".config/rclone/rclone.conf",
    ".config/helm/registry/config.json",
    ".config/doctl/config.yaml",
    ".config/hcloud/cli.toml",
    ".pulumi/credentials.json",
    ".config/sops/age/keys.txt",
    ".config/configstore/firebase-tools.json",
    ".cache/huggingface/token",
];

/// System files that hold credentials.
pub(crate) const SYSTEM_FILES: [&str; 2] = ["/etc/shadow", "/etc/gshadow"];

/// The credential store `path` is or lies in (as the user would write it,
/// e.g. `~/.ssh`), if it is one.
pub(crate) fn credential_store(path: &Path, home: Option<&Path>) -> Option<String> {
    if let Some(system) = SYSTEM_FILES.iter().find(|f| path == Path::new(f)) {
        return Some((*system).to_string());
    }
    let rest = path.strip_prefix(home?).ok()?;
    if let Some(dir) = HOME_DIRS.iter().find(|d| rest.starts_with(d)) {
        return Some(format!("~/{dir}"));
    }
    let file = HOME_FILES.iter().find(|f| rest == Path::new(f))?;
    Some(format!("~/{file}"))
}

/// The help of a denial of a credential store: why no grant is offered,
/// and what to do instead.
pub(crate) fn credential_help(store: &str) -> String {
    format!(
        "`{store}` is a credential store: magus offers no grant for it, because a grant\n\
         reaches every program the spell starts, a compromised one included; if a task\n\
         needs a credential, bind a narrowly scoped token to that spell's hosts (`secrets:`\n\
         under `spells: NAME:`, docs/secrets.md), or run that one command outside magus"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_recognised_under_home_only() {
        let home = Some(Path::new("/home/u"));
        let store = |p: &str| credential_store(Path::new(p), home);
        assert_eq!(store("/home/u/.ssh/id_rsa").as_deref(), Some("~/.ssh"));
        assert_eq!(store("/home/u/.ssh").as_deref(), Some("~/.ssh"));
        assert_eq!(store("/home/u/.aws/credentials").as_deref(), Some("~/.aws"));
        assert_eq!(
            store("/home/u/.config/op/x").as_deref(),
            Some("~/.config/op")
        );
        assert_eq!(store("/home/u/.gnupg/a/b").as_deref(), Some("~/.gnupg"));
        assert_eq!(
            store("/home/u/.docker/config.json").as_deref(),
            Some("~/.docker")
        );
        assert_eq!(store("/home/u/.npmrc").as_deref(), Some("~/.npmrc"));
        assert_eq!(store("/etc/shadow").as_deref(), Some("/etc/shadow"));
        assert_eq!(store("/home/u/.sshx"), None);
        assert_eq!(store("/home/u/.npmrc.bak"), None);
        assert_eq!(store("/srv/.ssh/id_rsa"), None);
        assert_eq!(credential_store(Path::new("/home/u/.ssh"), None), None);
    }

    /// The MGS2001 page (`magus explain`) names every store this module
    /// knows. (Moved from `tests/cli/help_agrees.rs`.)
    #[test]
    fn credential_stores_in_the_page_are_the_ones_the_code_knows() {
        let page = crate::diag::explain_page(crate::diag::Code::Mgs2001);
        for dir in HOME_DIRS {
            assert!(page.contains(&format!("`~/{dir}`")), "{dir}");
        }
        for file in HOME_FILES {
            assert!(page.contains(&format!("`~/{file}`")), "{file}");
        }
        for file in SYSTEM_FILES {
            assert!(page.contains(&format!("`{file}`")), "{file}");
        }
    }
}

//! The part that decides: `magus.yaml` is loaded, resolved against the
//! machine (home, workspace, real paths) into one [`Policy`], and compiled
//! into the structures both enforcement layers consult. Nothing here
//! enforces anything or prints anything.
//!
//! Start with [`startup`]: (start dir or `--workspace`, environment) →
//! [`Policy`] + diagnostics. The gate then calls [`normalize`] and
//! [`Policy::check`]; child launches use [`Policy::child_env`].

mod builtin;
pub(crate) mod config;
pub(crate) mod credentials;
mod env;
// Unix paths and modes (as the integration tests they were).
#[cfg(all(test, unix))]
mod env_tests;
mod fingerprint;
mod grant;
pub(crate) mod hosts;
pub(crate) mod limits;
mod load;
pub(crate) mod lock_file;
pub(crate) mod names;
pub(crate) mod native;
pub(crate) mod path;
pub(crate) mod presets;
pub(crate) mod real_paths;
// The naive oracle the trie is tested against (unit tests, benches, fuzz).
#[cfg(any(test, feature = "internals"))]
pub(crate) mod reference;
mod resolve_grants;
pub(crate) mod secrets;
pub(crate) mod shims;
mod trie;
mod unjailed;
pub(crate) mod winpath;
mod workspace;

pub(crate) use builtin::RUN_TEMP_WHY;
#[cfg(kernel_layer)]
pub(crate) use builtin::{BUILTIN_RO, BUILTIN_RW, CACHE_WHY, PSEUDO_TERMINALS_WHY};
pub(crate) use config::Position;
pub use env::ChildEnv;
#[cfg(kernel_layer)]
pub(crate) use env::DAEMON_SOCKET_VAR;
pub(crate) use env::{DaemonSocket, EnvPattern};
pub(crate) use fingerprint::{CanonicalPolicy, CanonicalSection, Fingerprint};
pub(crate) use grant::lies_within;
pub use grant::{Access, Grant, GrantSource, Mode, Network, SandboxState};
pub(crate) use hosts::HostError;
pub use hosts::{HostList, HostRule};
pub(crate) use limits::Limits;
#[cfg(any(test, feature = "internals"))]
pub use load::startup;
pub(crate) use load::Startup;
#[cfg(all(test, kernel_layer))]
pub(crate) use load::StartupError;
pub use load::StartupInput;
pub(crate) use load::{declare, Declared};
pub(crate) use lock_file::{check_lock, check_nested, effective_fingerprint, FINGERPRINT_VAR};
pub use path::{normalize, NormalPath};
pub(crate) use path::{PathError, PlainRelative};
pub(crate) use real_paths::RealPaths;
pub(crate) use secrets::SecretBinding;
#[cfg(kernel_layer)]
pub(crate) use secrets::SecretSource;
pub(crate) use trie::TrieCursor;
pub use trie::{Decision, PathTrie};
pub(crate) use winpath::WinPathError;
pub(crate) use winpath::WinRefusal;
pub use workspace::WorkspaceArg;
#[cfg(kernel_layer)]
pub(crate) use workspace::SPELLS_DIR;
pub(crate) use workspace::{find_workspace, lookup, spell_name, spell_names, ENABLED_VAR};

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What decided whether the sandbox is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateSource {
    /// Nothing said: the sandbox is off by default.
    Default,
    /// `sandbox.enabled` in `magus.yaml`, at this position.
    Config(Position),
    /// `MAGUS_SANDBOX_ENABLED`.
    Environment,
}

/// One resolved policy: what the sandbox allows on this machine.
///
/// Its fields are private so that the grants, the trie the gate checks and
/// the Landlock rules built from the grants can never drift apart: a
/// policy is made by resolution ([`crate::Sandbox::load`]) or by [`Policy::new`], which
/// builds the trie from the grants, and is read through accessors.
#[derive(Debug, Clone)]
pub struct Policy {
    state: SandboxState,
    state_source: StateSource,
    /// The workspace root (real path).
    workspace: PathBuf,
    /// The workspace as the policy compares paths: on Windows its key,
    /// folded (`/c:/users/me/ws`, see [`winpath`]); elsewhere `workspace`.
    workspace_key: PathBuf,
    /// `magus.yaml`, when the workspace has one.
    config_file: Option<PathBuf>,
    /// Every granted path, real and absolute, one grant per path: the
    /// workspace, the built-ins, then `sandbox.allow` entries.
    grants: Vec<Grant>,
    network: Network,
    /// `sandbox.env.passthrough`, sorted and unique.
    passthrough: Vec<EnvPattern>,
    /// The declared `sandbox:` section in canonical form; `None` when the
    /// config has none.
    declared: Option<CanonicalPolicy>,
    /// `sandbox.limits` as declared (enforced only with the sandbox on).
    limits: Limits,
    /// The spell whose effective policy this is (`spells/NAME.buzz`), so
    /// that a denial can name the section that would allow it.
    spell: Option<String>,
    /// Whether `magus.yaml` has a `spells:` section for [`Policy::spell`].
    own_section: bool,
    /// The spell's `secrets:` (docs/secrets.md); empty for most.
    secrets: Vec<SecretBinding>,
    /// The variables any spell of the workspace reads a secret from
    /// (`from: {env: VAR}`): no child of any spell gets them.
    pub(crate) secret_sources: Vec<String>,
    /// Credential stores inside a grant that does not name them: hidden
    /// from children by the jail and refused to `fs.*` by the gate
    /// (`resolve_grants::hidden_stores`).
    pub(crate) hidden: Vec<PathBuf>,
    /// The user's own entries for a path the jail makes the run's own
    /// (`/tmp`, `/dev/shm`, `$TMPDIR`), which the built-in grant stands
    /// for; granted as declared where there is no jail ([`unjailed`]).
    pub(crate) stood_in: Vec<Grant>,
    /// Without a jail of the run's own: the host's directories withheld,
    /// and the run's own directory granted instead ([`unjailed`]).
    withheld: Option<unjailed::Withheld>,
    trie: PathTrie,
}

#[deny(missing_docs)] // re-exported by the crate: public API
impl Policy {
    /// A policy from already-resolved grants (for tests, benches, and
    /// callers that resolve elsewhere). Nothing is declared. Not API: the
    /// package's benches and kernel harness reach it through `testing`
    /// (`internals`); an embedder gets its policy from
    /// [`crate::Sandbox::load`], so only resolution builds one.
    pub(crate) fn new(
        state: SandboxState,
        workspace: PathBuf,
        grants: Vec<Grant>,
        network: Network,
        passthrough: Vec<EnvPattern>,
    ) -> Policy {
        let trie = trie_of(&grants);
        let workspace_key = native::from_os(&workspace)
            .map(|key| native::folded(&key).into_owned())
            .unwrap_or_else(|_| workspace.clone());
        Policy {
            state,
            state_source: StateSource::Default,
            workspace,
            workspace_key,
            config_file: None,
            grants,
            network,
            passthrough,
            declared: None,
            limits: Limits::default(),
            spell: None,
            own_section: false,
            secrets: Vec::new(),
            secret_sources: Vec::new(),
            hidden: Vec::new(),
            stood_in: Vec::new(),
            withheld: None,
            trie,
        }
    }

    /// May `access` happen at `path` (normalised, absolute)? Pure trie
    /// lookup: no allocation, no system call (on Windows a path with an
    /// upper-case letter is folded first, in one allocation). This answers
    /// for the sandbox as configured; callers check [`Policy::state`] for
    /// whether to ask.
    pub fn check(&self, path: &NormalPath, access: Access) -> Decision {
        #[cfg(windows)]
        if let std::borrow::Cow::Owned(folded) = native::folded(path) {
            // Folding a normal path leaves a normal path.
            return self.trie.check(
                &NormalPath::new(folded).unwrap_or_else(|_| NormalPath::root()),
                access,
            );
        }
        self.trie.check(path, access)
    }

    /// This policy, recording `declared` as the `sandbox:` section it came
    /// from and `source` as what decided its state. Neither changes what is
    /// granted, so the trie and the grants still agree.
    #[cfg(all(test, kernel_layer))] // the diagnostic snapshots'
    pub(crate) fn declaring(
        mut self,
        declared: Option<CanonicalPolicy>,
        source: StateSource,
    ) -> Policy {
        self.declared = declared;
        self.state_source = source;
        self
    }

    /// Whether the sandbox is on for this run.
    pub fn state(&self) -> SandboxState {
        self.state
    }

    /// What decided [`Policy::state`].
    pub fn state_source(&self) -> StateSource {
        self.state_source
    }

    /// The workspace root (real path).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The workspace as the policy compares paths: on Windows the folded
    /// key of the Windows path model; elsewhere [`Policy::workspace`].
    pub(crate) fn workspace_key(&self) -> &Path {
        &self.workspace_key
    }

    /// `magus.yaml`, when the workspace has one.
    pub fn config_file(&self) -> Option<&Path> {
        self.config_file.as_deref()
    }

    /// Every granted path, real and absolute, one grant per path: the
    /// workspace, the built-ins, then `sandbox.allow` entries.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Credential stores that lie inside a grant which does not name them
    /// (`~/.cargo/credentials.toml` under `~/.cargo`): never shown.
    pub fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// The `network` setting.
    pub fn network(&self) -> &Network {
        &self.network
    }

    /// `sandbox.env.passthrough`, sorted and unique.
    pub fn passthrough(&self) -> &[EnvPattern] {
        &self.passthrough
    }

    /// The declared `sandbox:` section in canonical form; `None` when the
    /// config has none.
    pub fn declared(&self) -> Option<&CanonicalPolicy> {
        self.declared.as_ref()
    }

    /// `sandbox.limits` as declared (enforced only with the sandbox on).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The spell's secrets by reference (docs/secrets.md).
    pub fn secrets(&self) -> &[SecretBinding] {
        &self.secrets
    }

    /// The spell this policy is for (`NAME` of `spells/NAME.buzz`), when
    /// the run names one: its grants are the workspace's plus its own
    /// `spells: NAME:` section.
    pub fn spell_name(&self) -> Option<&str> {
        self.spell.as_deref()
    }

    /// Where the trie walk of `dir` ends, for [`Policy::check_below`].
    pub(crate) fn cursor(&self, dir: &NormalPath) -> TrieCursor {
        self.trie.cursor(dir)
    }

    /// [`Policy::check`] of `rel` joined below the directory `at` was made
    /// from, walking only the names `rel` adds.
    pub(crate) fn check_below(
        &self,
        at: TrieCursor,
        rel: PlainRelative<'_>,
        access: Access,
    ) -> Decision {
        self.trie.check_below(at, rel, access)
    }

    /// The fingerprint of the declared policy, when one is declared.
    pub fn fingerprint(&self) -> Option<Fingerprint> {
        self.declared.as_ref().map(CanonicalPolicy::fingerprint)
    }

    /// The environment a sandboxed child gets from `env`. A secret's
    /// source variable is withheld from every spell's children, not only
    /// from its own spell's: a `passthrough` such as `GITHUB_*`, or the
    /// `MAGUS_*` every child gets, would otherwise hand another spell's
    /// token, the real value, to a spell it was never granted to.
    pub(crate) fn child_env(&self, env: &[(OsString, OsString)]) -> ChildEnv {
        let mut child = ChildEnv::build(env, &self.passthrough);
        child.withhold(&self.secret_sources);
        child
    }
}

/// The trie the gate checks, from exactly `grants`.
fn trie_of(grants: &[Grant]) -> PathTrie {
    match cfg!(windows) {
        true => PathTrie::new(&folded_grants(grants)),
        false => PathTrie::new(grants),
    }
}

/// `grants` with their paths as the policy compares them (Windows: keys
/// folded to lower case), for the trie.
fn folded_grants(grants: &[Grant]) -> Vec<Grant> {
    let fold = |g: &Grant| Grant {
        path: native::folded(&g.path).into_owned(),
        ..g.clone()
    };
    grants.iter().map(fold).collect()
}

//! Startup: from a start directory (or `--workspace`) and an environment to
//! one [`Policy`] plus every startup diagnostic. This is the only entry
//! point the CLI needs; it reads the file system but never the process
//! environment (that is passed in).

use super::config::{load_config, ConfigError, ConfigFile, SandboxConfig};
use super::fingerprint::CanonicalPolicy;
use super::resolve_grants::{hidden_secret_files, resolve, Inputs};
use super::workspace::{
    enabled_override, find_workspace, spell_name, spell_names, BadOverride, WorkspaceArg,
    WorkspaceError, ENABLED_VAR,
};
use super::{Policy, SandboxState, StateSource};
use crate::diag::{Code, Diagnostic};
use std::borrow::Cow;
use std::ffi::OsString;

/// What [`startup`] needs.
#[derive(Debug, Clone, Copy)]
pub struct StartupInput<'a> {
    pub workspace: WorkspaceArg<'a>,
    /// The environment magus was started with.
    pub env: &'a [(OsString, OsString)],
    /// The spell to run as given (`build`, `build.buzz` or a path), whose
    /// `spells:` section joins the workspace's policy; `None` for the
    /// workspace's policy alone (`magus list`, `sandbox check`).
    pub spell: Option<&'a str>,
}

/// A resolved policy and the diagnostics resolution produced (warnings and
/// notes only: errors are [`StartupError`]s).
#[derive(Debug, Clone)]
pub struct Startup {
    pub policy: Policy,
    /// The loaded `magus.yaml`, when the workspace has one.
    pub config: Option<ConfigFile>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Why no policy could be built; no spell may run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartupError {
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Override(#[from] BadOverride),
    /// See [`refuse_planted_nested`].
    #[error("`{}` turns the sandbox off inside the sandboxed workspace `{}`, where spells' programs can write: a run there could have planted it", inner.display(), outer.display())]
    NestedOff {
        inner: std::path::PathBuf,
        outer: std::path::PathBuf,
    },
}

impl StartupError {
    /// The error as a diagnostic (with `magus.yaml` line and column for
    /// config errors).
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            StartupError::Config(e) => e.to_diagnostic(),
            StartupError::Workspace(e @ WorkspaceError::NotFound { .. }) => {
                Diagnostic::error(e.to_string())
                    .with_code(Code::Mgs3001)
                    .with_help(
                        "run `magus init` to start a workspace here (it writes magus.yaml and \
                         spells/hello.buzz), or pass `--workspace DIR`",
                    )
            }
            StartupError::Workspace(e @ WorkspaceError::ConfigNotAFile(_)) => {
                Diagnostic::error(e.to_string())
                    .with_code(Code::Mgs3002)
                    .with_help("magus.yaml must be a file; rename or remove what is there")
            }
            StartupError::Workspace(e) => Diagnostic::error(e.to_string()).with_code(Code::Mgs3001),
            StartupError::Override(e) => Diagnostic::error(e.to_string())
                .with_code(Code::Mgs3007)
                .with_help(format!("unset {ENABLED_VAR}, or set it to 1 or 0")),
            StartupError::NestedOff { inner, .. } => {
                let root = inner.parent().unwrap_or(inner);
                Diagnostic::error(self.to_string())
                    .with_code(Code::Mgs3008)
                    .with_path(inner.display().to_string())
                    .with_help(format!(
                        "if this magus.yaml is yours, name its workspace: `magus --workspace {} ...`",
                        root.display()
                    ))
            }
        }
    }
}

/// Finds the workspace, loads `magus.yaml`, applies
/// `MAGUS_SANDBOX_ENABLED`, and resolves the policy.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub fn startup(input: StartupInput<'_>) -> Result<Startup, StartupError> {
    Ok(declare(input)?.resolve(input.env))
}

/// The first half of [`startup`]: the workspace, its `magus.yaml` and
/// whether the sandbox is on, with no grant resolved yet. Enough to tell
/// what a sandboxed child's environment lacks ([`Declared::without_grants`]),
/// which is all the process before the scrubbing re-exec needs, so only
/// the re-executed process canonicalises the grants.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    workspace: super::workspace::Workspace,
    config: Option<ConfigFile>,
    state: SandboxState,
    state_source: StateSource,
    /// The spell whose section applies (see [`Declared::for_spell`]).
    spell: Option<String>,
}

/// Finds the workspace, loads `magus.yaml` and applies
/// `MAGUS_SANDBOX_ENABLED`.
pub(crate) fn declare(input: StartupInput<'_>) -> Result<Declared, StartupError> {
    let workspace = find_workspace(input.workspace)?;
    let config = workspace.config.as_deref().map(load_config).transpose()?;
    if let Some(config) = config.as_ref().filter(|c| !c.spells.is_empty()) {
        config.check_spell_names(&spell_names(&workspace.root))?;
    }
    let sandbox = config.as_ref().and_then(|c| c.sandbox.as_ref());
    let (state, state_source) = match enabled_override(input.env)? {
        Some(on) => (state_of(on), StateSource::Environment),
        None => match sandbox.and_then(|s| s.enabled_at.map(|at| (s.enabled, at))) {
            Some((on, at)) => (state_of(on), StateSource::Config(at)),
            None => (SandboxState::Off, StateSource::Default),
        },
    };
    let spell = input.spell.and_then(|arg| spell_name(&workspace.root, arg));
    Ok(Declared {
        workspace,
        config,
        state,
        state_source,
        spell,
    })
}

/// A workspace discovered inside another one: children of runs in the
/// enclosing workspace may write anywhere in it, `magus.yaml` files of
/// subdirectories included (only the enclosing root's is read-only to
/// them). One planted with `enabled: false` and a spell beside it made
/// the user's next `magus run` started in that subdirectory run the
/// spell unconfined (`tests/escape_planted.rs`). So a nested config that
/// turns the sandbox off (or leaves it off) inside an enclosing workspace
/// whose sandbox is on (at any level up, the nearest or not) is refused
/// unless the user names it with
/// `--workspace` or `MAGUS_SANDBOX_ENABLED`. A nested config with the
/// sandbox on is used as it is, without a word: a warning would fire in
/// every workspace kept inside another (test fixtures in a repository's
/// `target/`), and its grants are the README's residue.
fn refuse_planted_nested(
    workspace: &super::workspace::Workspace,
    sandbox: Option<&super::config::SandboxConfig>,
    state_source: StateSource,
) -> Result<(), StartupError> {
    let Some(inner) = &workspace.config else {
        return Ok(());
    };
    // Every level up, not only the nearest: a child may plant a config
    // that turns the sandbox off at each level between its workspace and
    // this one. An enclosing config that cannot be read counts as
    // sandboxed.
    let sandboxed = |outer: &&std::path::PathBuf| {
        load_config(outer).map_or(true, |c| c.sandbox.is_some_and(|s| s.enabled))
    };
    let Some(outer) = workspace.enclosing.iter().find(sandboxed) else {
        return Ok(());
    };
    let inner_on = sandbox.is_some_and(|s| s.enabled);
    if !inner_on && state_source != StateSource::Environment {
        return Err(StartupError::NestedOff {
            inner: inner.clone(),
            outer: outer.parent().unwrap_or(outer).to_path_buf(),
        });
    }
    Ok(())
}

impl Declared {
    /// Before spells run (`magus run`, `magus test`, an embedder): refuses
    /// a nested `magus.yaml` that may have been planted
    /// ([`refuse_planted_nested`]). Commands that run nothing skip it.
    pub(crate) fn refuse_planted_nested(&self) -> Result<(), StartupError> {
        let sandbox = self.config.as_ref().and_then(|c| c.sandbox.as_ref());
        refuse_planted_nested(&self.workspace, sandbox, self.state_source)
    }

    /// The workspace root (real path) and its `magus.yaml`, when it has one.
    pub(crate) fn workspace_and_config(&self) -> (&std::path::Path, Option<&ConfigFile>) {
        (&self.workspace.root, self.config.as_ref())
    }

    /// The same declaration for another spell (`magus test` and `magus
    /// check` take each spell under its own policy): `name` is a spell's
    /// name, or `None` for the workspace's policy alone.
    pub(crate) fn for_spell(&self, name: Option<&str>) -> Declared {
        Declared {
            spell: name.map(str::to_string),
            ..self.clone()
        }
    }

    /// The effective `sandbox:` section: the workspace's, with the
    /// spell's own section merged in when it has one.
    fn sandbox(&self) -> Option<Cow<'_, SandboxConfig>> {
        let config = self.config.as_ref()?;
        let sandbox = config.sandbox.as_ref()?;
        match self.spell.as_deref().and_then(|name| config.spell(name)) {
            Some(section) => Some(Cow::Owned(sandbox.for_spell(section))),
            None => Some(Cow::Borrowed(sandbox)),
        }
    }

    fn passthrough(sandbox: Option<&SandboxConfig>) -> Vec<super::EnvPattern> {
        let mut passthrough: Vec<_> = sandbox
            .map(|s| s.passthrough.iter().map(|p| p.pattern.clone()).collect())
            .unwrap_or_default();
        passthrough.sort();
        passthrough.dedup();
        passthrough
    }

    /// The declared policy with no grant resolved: it grants nothing, and
    /// serves only to decide a child's environment before resolution.
    #[cfg(kernel_layer)]
    pub(crate) fn without_grants(&self) -> Policy {
        let sandbox = self.sandbox();
        let network = sandbox
            .as_ref()
            .map(|s| s.network.clone())
            .unwrap_or_default();
        let root = self.workspace.root.clone();
        let passthrough = Self::passthrough(sandbox.as_deref());
        let mut policy = Policy::new(self.state, root, Vec::new(), network, passthrough);
        policy.state_source = self.state_source;
        policy.spell = self.spell.clone();
        policy.secrets = sandbox.map(|s| s.secrets.clone()).unwrap_or_default();
        policy.secret_sources = secret_sources(self.config.as_ref());
        policy
    }

    /// The second half of [`startup`]: resolves the grants.
    pub(crate) fn resolve(self, env: &[(OsString, OsString)]) -> Startup {
        let effective = self.sandbox().map(Cow::into_owned);
        let Declared {
            workspace,
            config,
            state,
            state_source,
            spell,
        } = self;
        let sandbox = effective.as_ref();
        let resolution = resolve(&Inputs {
            workspace: &workspace.root,
            config_file: workspace.config.as_deref(),
            sandbox,
            env,
        });
        let mut policy = Policy::new(
            state,
            workspace.root,
            resolution.grants,
            sandbox.map(|s| s.network.clone()).unwrap_or_default(),
            Self::passthrough(sandbox),
        );
        policy.state_source = state_source;
        policy.config_file = workspace.config;
        policy.declared = sandbox.map(CanonicalPolicy::from_declared);
        policy.limits = sandbox.map(|s| s.limits).unwrap_or_default();
        policy.secrets = sandbox.map(|s| s.secrets.clone()).unwrap_or_default();
        policy.secret_sources = secret_sources(config.as_ref());
        policy.hidden = resolution.hidden;
        policy.stood_in = resolution.stood_in;
        let others = others_secret_files(config.as_ref(), spell.as_deref());
        let home = super::workspace::lookup(env, "HOME").map(std::path::PathBuf::from);
        policy.hidden.extend(hidden_secret_files(
            &others,
            home.as_deref(),
            &policy.grants,
        ));
        policy.hidden.sort();
        policy.hidden.dedup();
        policy.own_section = spell
            .as_deref()
            .is_some_and(|name| config.as_ref().is_some_and(|c| c.spell(name).is_some()));
        policy.spell = spell;
        Startup {
            policy,
            config,
            diagnostics: resolution.diagnostics,
        }
    }
}

/// The variables every spell's secrets are read from (`from: {env: VAR}`),
/// sorted and unique: [`Policy::child_env`] withholds them from the
/// children of every spell.
fn secret_sources(config: Option<&ConfigFile>) -> Vec<String> {
    let mut names: Vec<String> = config
        .iter()
        .flat_map(|c| &c.spells)
        .flat_map(|section| &section.secrets)
        .filter_map(|secret| match &secret.source {
            super::secrets::SecretSource::Env(var) => Some(var.clone()),
            super::secrets::SecretSource::File(_) => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The files the secrets of every spell but `spell` are read from, as
/// written (`from: {file: PATH}`).
fn others_secret_files<'c>(config: Option<&'c ConfigFile>, spell: Option<&str>) -> Vec<&'c str> {
    config
        .iter()
        .flat_map(|c| &c.spells)
        .filter(|section| Some(section.name.as_str()) != spell)
        .flat_map(|section| &section.secrets)
        .filter_map(|secret| match &secret.source {
            super::secrets::SecretSource::File(file) => Some(file.as_str()),
            super::secrets::SecretSource::Env(_) => None,
        })
        .collect()
}

fn state_of(on: bool) -> SandboxState {
    if on {
        SandboxState::On
    } else {
        SandboxState::Off
    }
}

//! Errors of the `magus.yaml` loader: each one carries the file, a 1-based
//! line and column, what is wrong and a hint, and turns into a
//! [`Diagnostic`]. The loader never panics and never ignores a key under
//! `sandbox:`; every failure ends up here.

use super::MAX_CONFIG_BYTES;
use crate::diag::{edit_distance, Code, Diagnostic, Location, SourceKind};
use crate::policy::env::PatternError;
use crate::policy::limits::LimitError;
use std::path::PathBuf;

/// A malformed (or unreadable) `magus.yaml`, with where and why.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}:{column}: {kind}", file.display())]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based; whole-file problems (unreadable, too large) point at 1:1.
    pub line: u32,
    pub column: u32,
    pub kind: ConfigErrorKind,
}

/// What is wrong with the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    #[error("cannot read the file: {0}")]
    Read(#[source] std::io::Error),
    /// A link, FIFO or device: see `crate::regular_file`.
    #[error("the file is not a regular file (a symbolic link, FIFO or device)")]
    NotRegular,
    #[error("the file is {size} bytes; magus.yaml may be at most {MAX_CONFIG_BYTES} bytes")]
    TooLarge { size: u64 },
    #[error("the file is not valid UTF-8")]
    NotUtf8,
    #[error("YAML syntax error: {0}")]
    Syntax(String),
    #[error("unknown key `{key}` in `{section}`")]
    UnknownKey {
        key: String,
        section: &'static str,
        allowed: Vec<&'static str>,
    },
    #[error("duplicate key `{0}`")]
    DuplicateKey(String),
    #[error("unknown top-level key `{0}`, which would leave the sandbox off")]
    NearSandbox(String),
    #[error("missing key `{key}` in `{section}`")]
    MissingKey { key: String, section: &'static str },
    #[error("wrong type: {0}")]
    WrongType(String),
    #[error("invalid mode `{0}`")]
    BadMode(String),
    #[error("invalid path `{spelled}`: {why}")]
    BadPath { spelled: String, why: &'static str },
    #[error("invalid passthrough entry `{pattern}`: {problem}")]
    BadGlob {
        pattern: String,
        problem: PatternError,
    },
    #[error("invalid network setting `{0}`")]
    BadNetwork(String),
    #[error("invalid port {0}: a port is a number from 1 to 65535")]
    BadPort(i64),
    #[error("invalid `limits.{key}` value `{spelled}`: {problem}")]
    BadLimit {
        key: &'static str,
        spelled: String,
        problem: LimitError,
    },
    #[error("invalid host entry `{spelled}`: {problem}")]
    BadHost {
        spelled: String,
        problem: crate::policy::HostError,
    },
    #[error("invalid host entry: {0}")]
    UnknownPreset(crate::policy::presets::UnknownPreset),
    /// `hosts: [@crates-io]`: YAML reserves `@` at the start of a plain
    /// value, so the parser stops there.
    #[error("YAML syntax error: a value cannot start with `@` unless it is quoted")]
    UnquotedPreset,
    #[error("`hosts` cannot be combined with `connect_tcp` or `bind_tcp`")]
    HostsWithPorts,
    #[error("`hosts` is empty")]
    NoHosts,
    #[error(
        "unknown top-level key `{0}`, which would leave every spell with the workspace's policy"
    )]
    NearSpells(String),
    #[error("`spells:` without a `sandbox:` section")]
    SpellsWithoutSandbox,
    #[error("a spell's section cannot turn the sandbox on or off")]
    SpellSwitch,
    #[error("invalid spell name `{0}`")]
    BadSpellName(String),
    #[error("no spell `{name}` in spells/")]
    UnknownSpell {
        name: String,
        near: Option<String>,
        /// How many spells the workspace has.
        known: usize,
    },
    #[error("invalid secret entry `{spelled}`: {why}")]
    BadSecret { spelled: String, why: &'static str },
    #[error("the secret `{0}` is declared twice")]
    DuplicateSecret(String),
}

impl ConfigErrorKind {
    /// The diagnostic code (MGS3002–MGS3006) of this kind of mistake.
    pub fn code(&self) -> Code {
        match self {
            ConfigErrorKind::Read(_)
            | ConfigErrorKind::NotRegular
            | ConfigErrorKind::TooLarge { .. }
            | ConfigErrorKind::NotUtf8 => Code::Mgs3002,
            ConfigErrorKind::Syntax(_) | ConfigErrorKind::DuplicateKey(_) => Code::Mgs3003,
            ConfigErrorKind::UnknownKey { .. }
            | ConfigErrorKind::NearSandbox(_)
            | ConfigErrorKind::NearSpells(_) => Code::Mgs3004,
            ConfigErrorKind::WrongType(_) | ConfigErrorKind::MissingKey { .. } => Code::Mgs3005,
            // Every other kind is a value the schema accepts in shape but
            // not in content (a mode, a path, a host, a limit...), and so
            // is any kind added later unless it says otherwise.
            _ => Code::Mgs3006,
        }
    }

    /// How to fix it, in one or two lines.
    pub fn hint(&self) -> String {
        match self {
            ConfigErrorKind::Read(_) => "check that magus.yaml exists and is readable".into(),
            ConfigErrorKind::TooLarge { .. } => {
                "magus.yaml is a small settings file; is this the right file?".into()
            }
            ConfigErrorKind::NotRegular => {
                "magus reads magus.yaml only as a plain file in the workspace (a link could \
                 lead a parse error to quote a file outside it): replace the link with the file"
                    .into()
            }
            ConfigErrorKind::NotUtf8 => "save magus.yaml as UTF-8".into(),
            ConfigErrorKind::Syntax(_) => "fix the YAML syntax at this position".into(),
            ConfigErrorKind::UnknownKey { key, allowed, .. } => unknown_key_hint(key, allowed),
            ConfigErrorKind::DuplicateKey(key) => {
                format!("`{key}` appears twice in the same mapping; keep one of them")
            }
            ConfigErrorKind::MissingKey { key, .. } => missing_key_hint(key),
            ConfigErrorKind::NearSandbox(_) => {
                "did you mean `sandbox`? (the key is lowercase: `sandbox:`)".into()
            }
            ConfigErrorKind::WrongType(_) => SCHEMA_HINT.into(),
            ConfigErrorKind::BadMode(_) => {
                "`mode` is `ro` (read + execute) or `rw` (read + write)".into()
            }
            ConfigErrorKind::BadPath { .. } => {
                "write an absolute path, `~/...`, or a path relative to the workspace".into()
            }
            ConfigErrorKind::BadGlob { .. } => {
                "write a variable name (`GOPATH`) or a suffix glob (`MISE_*`)".into()
            }
            ConfigErrorKind::BadNetwork(_) => {
                "`network` is `allow`, `deny`, `{connect_tcp: [443], bind_tcp: []}` or `{hosts: [crates.io]}`".into()
            }
            ConfigErrorKind::BadPort(_) => "list TCP ports as numbers, e.g. `[443, 8080]`".into(),
            ConfigErrorKind::BadLimit { key, .. } => limit_hint(key).into(),
            ConfigErrorKind::BadHost { .. } => {
                "write a name (`crates.io`), sub-domains (`*.crates.io`), either with a port (`github.com:443`), or a preset (`\"@crates-io\"`)".into()
            }
            ConfigErrorKind::UnknownPreset(unknown) => unknown.hint(),
            ConfigErrorKind::UnquotedPreset => {
                "quote a preset, as in `hosts: [\"@crates-io\"]` (YAML reserves `@`)".into()
            }
            ConfigErrorKind::HostsWithPorts => {
                "with `hosts`, every connection goes through magus's proxy: keep `hosts` or the port lists, not both".into()
            }
            ConfigErrorKind::NoHosts => {
                "list at least one host, or write `network: deny` for no network".into()
            }
            ConfigErrorKind::NearSpells(_) => {
                "did you mean `spells`? (per-spell sections live under `spells:`)".into()
            }
            ConfigErrorKind::SpellsWithoutSandbox => {
                "a spell's section adds to the workspace's: add `sandbox: {enabled: true}` above it".into()
            }
            ConfigErrorKind::SpellSwitch => {
                "`enabled` belongs to the `sandbox:` section and holds for every spell; remove it here".into()
            }
            ConfigErrorKind::BadSpellName(_) => {
                "a key under `spells:` is a spell's name, `NAME` for spells/NAME.buzz".into()
            }
            ConfigErrorKind::UnknownSpell { near: Some(near), .. } => {
                format!("did you mean `{near}`? (a key under `spells:` names spells/NAME.buzz)")
            }
            ConfigErrorKind::UnknownSpell { known: 0, .. } => {
                "the workspace has no spells yet: a key under `spells:` names spells/NAME.buzz".into()
            }
            ConfigErrorKind::UnknownSpell { .. } => {
                "a key under `spells:` names spells/NAME.buzz; `magus list` shows the spells".into()
            }
            ConfigErrorKind::BadSecret { .. } => {
                "a secret is `{name: VAR, from: {env: VAR} or {file: /path}, hosts: [api.example.com], rules: [{methods: [GET], paths: [\"/api/*\"]}]}` (docs/secrets.md)".into()
            }
            ConfigErrorKind::DuplicateSecret(name) => {
                format!("keep one `{name}` entry in this spell's `secrets:`")
            }
        }
    }
}

const SCHEMA_HINT: &str = "the `sandbox` section is: `enabled: true|false`, \
`allow: [{path: ..., mode: ro|rw}]`, `env: {passthrough: [NAME, NAME_*]}`, \
`network: allow|deny|{connect_tcp: [...], bind_tcp: [...]}|{hosts: [...]}`, \
`limits: {wall_time: 30m, processes: 256, memory: 2GiB}`";

fn limit_hint(key: &str) -> &'static str {
    match key {
        "wall_time" => "`wall_time` is a whole number and a unit: `90s`, `30m`, `2h` or `1d`",
        "memory" => {
            "`memory` is a whole number and a binary unit: `512MiB`, `2GiB` (KiB, MiB, GiB, TiB)"
        }
        _ => "`processes` is a whole number of processes, e.g. `256`",
    }
}

fn unknown_key_hint(key: &str, allowed: &[&'static str]) -> String {
    let keys: Vec<String> = allowed.iter().map(|k| format!("`{k}`")).collect();
    let listed = format!("the allowed keys here are {}", keys.join(", "));
    match nearest_key(key, allowed) {
        Some(near) => format!("did you mean `{near}`? ({listed})"),
        None => listed,
    }
}

/// The allowed key `key` is most likely a typo of: the same but for case,
/// `-` for `_` or a plural `s`, or one within a third of its length in
/// edits (at least one).
fn nearest_key(key: &str, allowed: &[&'static str]) -> Option<&'static str> {
    let plain = |k: &str| k.to_lowercase().replace('-', "_");
    let wanted = plain(key);
    let same = allowed.iter().find(|k| {
        let k = plain(k);
        k == wanted || k.trim_end_matches('s') == wanted.trim_end_matches('s')
    });
    if let Some(k) = same {
        return Some(k);
    }
    allowed
        .iter()
        .map(|k| (edit_distance(&wanted, k), *k))
        .filter(|(d, k)| *d <= (k.chars().count() / 3).max(1))
        .min()
        .map(|(_, k)| k)
}

fn missing_key_hint(key: &str) -> String {
    match key {
        "mode" => "add `mode: ro` (read + execute) or `mode: rw` (read + write)".into(),
        "path" => "add `path: ~/some/dir` to the entry".into(),
        _ => format!("add `{key}`"),
    }
}

impl ConfigError {
    /// The error as a diagnostic pointing into `magus.yaml`.
    pub fn to_diagnostic(&self) -> Diagnostic {
        Diagnostic::error(format!("invalid magus.yaml: {}", self.kind))
            .with_code(self.kind.code())
            .with_location(Location {
                kind: SourceKind::Config,
                file: self.file.clone(),
                line: self.line,
                column: self.column,
            })
            .with_help(self.kind.hint())
    }

    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn hint(&self) -> String {
        self.kind.hint()
    }
}

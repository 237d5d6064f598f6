//! The `magus.yaml` loader: the schema of the README's "Configuration", parsed with
//! `serde-saphyr` (line and column on every error, duplicate keys rejected)
//! and validated into a [`SandboxConfig`] as declared, before anything is
//! resolved against the machine.
//!
//! `magus.yaml` belongs to the whole task runner, so top-level keys other
//! than `sandbox` and `spells` are ignored; everything under them is
//! strict. A spell's section is merged into the workspace's by
//! [`SandboxConfig::for_spell`] (docs/configuration.md, "Per-spell policy").

#[cfg(test)]
mod corpus_tests;
mod error;
mod schema;

pub(crate) use error::{ConfigError, ConfigErrorKind};

use super::env::EnvPattern;
use super::grant::{Mode, Network};
use super::hosts::{HostList, HostRule};
use super::limits::{check_processes, parse_memory, parse_wall_time, LimitError, Limits};
use super::presets;
use crate::policy::secrets::SecretBinding;
use schema::{RawAllow, RawFile, RawLimits, RawNetwork, RawPorts, RawSandbox, RawSpell};
use serde_saphyr::{MessageFormatter, Spanned, UserMessageFormatter};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The name of the workspace's configuration file.
pub(crate) const CONFIG_FILE_NAME: &str = "magus.yaml";

/// The largest `magus.yaml` the loader reads.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// A 1-based line and column in `magus.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    pub line: u32,
    pub column: u32,
}

/// One `allow` entry as written, in `sandbox:` or in a spell's section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    /// The path exactly as written (`~/.cargo`, `tools`, `/opt/x`).
    pub path: String,
    pub mode: Mode,
    /// Where the `path:` value is.
    pub at: Position,
    /// The spell whose section holds the entry; `None` for `sandbox:`.
    pub spell: Option<String>,
}

/// One `sandbox.env.passthrough` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassthroughEntry {
    pub pattern: EnvPattern,
    pub at: Position,
}

/// The `sandbox:` section as declared, validated but not resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxConfig {
    pub enabled: bool,
    /// Where `enabled:` is, when it is written.
    pub enabled_at: Option<Position>,
    pub allow: Vec<AllowEntry>,
    pub passthrough: Vec<PassthroughEntry>,
    pub network: Network,
    /// `sandbox.limits`; every bound `None` when absent.
    pub limits: Limits,
    /// The spell's `secrets:` (only a spell's section has them; merged in
    /// by [`SandboxConfig::for_spell`]).
    pub secrets: Vec<SecretBinding>,
}

/// One spell's section under `spells:`, as declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpellSection {
    /// The spell's name (`spells/NAME.buzz`).
    pub name: String,
    /// Where the name is written.
    pub at: Position,
    /// Added to the workspace's `sandbox.allow`.
    pub allow: Vec<AllowEntry>,
    /// Added to the workspace's passthrough.
    pub passthrough: Vec<PassthroughEntry>,
    /// In place of the workspace's `network`, except that a `hosts` list
    /// is added to a workspace `hosts` list.
    pub network: Option<Network>,
    /// Secrets by reference (docs/secrets.md).
    pub secrets: Vec<SecretBinding>,
}

/// A loaded `magus.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub file: PathBuf,
    /// `None` when the file has no `sandbox:` section (or it is empty).
    pub sandbox: Option<SandboxConfig>,
    /// The `spells:` sections, in file order.
    pub spells: Vec<SpellSection>,
}

impl ConfigFile {
    /// The section of spell `name`, if it has one.
    pub fn spell(&self, name: &str) -> Option<&SpellSection> {
        self.spells.iter().find(|s| s.name == name)
    }

    /// Refuses a section whose spell is not among `known` (the names of
    /// `spells/*.buzz`): a misspelt name would leave the spell with less
    /// than its author meant, or a renamed spell with nothing, silently.
    pub fn check_spell_names(&self, known: &[String]) -> Result<(), ConfigError> {
        let Some(unknown) = self.spells.iter().find(|s| !known.contains(&s.name)) else {
            return Ok(());
        };
        let kind = ConfigErrorKind::UnknownSpell {
            name: unknown.name.escape_debug().to_string(),
            near: crate::diag::nearest(&unknown.name, known.iter().map(String::as_str))
                .map(str::to_string),
            known: known.len(),
        };
        Err(at(&self.file, unknown.at, kind))
    }
}

impl SandboxConfig {
    /// The effective configuration of a spell with `section`: its `allow`
    /// and passthrough entries added to the workspace's, its `network` in
    /// place of the workspace's, except that `hosts` lists add up. Nothing
    /// else (enabled, limits) can differ between spells.
    pub fn for_spell(&self, section: &SpellSection) -> SandboxConfig {
        let mut merged = self.clone();
        merged.allow.extend(section.allow.iter().cloned());
        merged
            .passthrough
            .extend(section.passthrough.iter().cloned());
        if let Some(network) = &section.network {
            merged.network = merged_network(&self.network, network);
        }
        merged.secrets = section.secrets.clone();
        merged
    }
}

/// A spell's `network` over the workspace's: replaced, except two `hosts`
/// lists, which are joined.
pub(crate) fn merged_network(workspace: &Network, spell: &Network) -> Network {
    match (workspace, spell) {
        (Network::Hosts(ours), Network::Hosts(theirs)) => {
            let mut list = ours.clone();
            list.rules.extend(theirs.rules.iter().cloned());
            list.rules.sort();
            list.rules.dedup();
            for preset in &theirs.presets {
                if !list.presets.contains(preset) {
                    list.presets.push(*preset);
                }
            }
            Network::Hosts(list)
        }
        (_, spell) => spell.clone(),
    }
}

/// Reads and validates `file`.
pub(crate) fn load_config(file: &Path) -> Result<ConfigFile, ConfigError> {
    let bytes = read_bounded(file).map_err(|kind| whole_file(file, kind))?;
    parse_config(file, &bytes)
}

/// Validates the contents of a `magus.yaml`; `file` is only used in errors.
pub fn parse_config(file: &Path, bytes: &[u8]) -> Result<ConfigFile, ConfigError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(bytes, e.valid_up_to());
        at(file, Position { line, column }, ConfigErrorKind::NotUtf8)
    })?;
    let options = serde_saphyr::options! { with_snippet: false, strict_booleans: true };
    let raw: RawFile = serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| from_yaml(file, text, &e))?;
    if let Some(near) = raw.other_keys.iter().find(|k| near_sandbox(&k.value)) {
        let kind = ConfigErrorKind::NearSandbox(near.value.escape_debug().to_string());
        return Err(at(file, position(near), kind));
    }
    if let Some(near) = raw.other_keys.iter().find(|k| near_spells(&k.value)) {
        let kind = ConfigErrorKind::NearSpells(near.value.escape_debug().to_string());
        return Err(at(file, position(near), kind));
    }
    let sandbox = raw
        .sandbox
        .map(|s| validate(s).map_err(|(pos, kind)| at(file, pos, kind)))
        .transpose()?;
    let spells = match raw.spells {
        None => Vec::new(),
        Some((key, _)) if sandbox.is_none() => {
            return Err(at(
                file,
                position(&key),
                ConfigErrorKind::SpellsWithoutSandbox,
            ));
        }
        Some((_, sections)) => sections
            .0
            .into_iter()
            .map(|(name, raw)| validate_spell(name, raw).map_err(|(pos, kind)| at(file, pos, kind)))
            .collect::<Result<_, _>>()?,
    };
    Ok(ConfigFile {
        file: file.to_path_buf(),
        sandbox,
        spells,
    })
}

/// A top-level key that is surely a misspelt `spells` (`spell`, `Spells`):
/// ignored, it would leave every spell with the workspace's policy only.
fn near_spells(key: &str) -> bool {
    let lower = key.trim().to_lowercase();
    lower == "spells" || crate::diag::edit_distance(&lower, "spells") <= 1
}

/// Whether a top-level key other than `sandbox` is so close to it that it
/// is surely a typo: another spelling of it, or at most two edits away,
/// case aside. Such a key would leave the sandbox off without a word.
fn near_sandbox(key: &str) -> bool {
    let lower = key.to_lowercase();
    let lower = lower.trim();
    lower == "sandbox" || (lower.len() >= 5 && crate::diag::edit_distance(lower, "sandbox") <= 2)
}

fn read_bounded(file: &Path) -> Result<Vec<u8>, ConfigErrorKind> {
    use crate::regular_file::{open_regular, OpenFailure};
    let handle = open_regular(file).map_err(|e| match e {
        OpenFailure::NotRegular => ConfigErrorKind::NotRegular,
        OpenFailure::Io(e) => ConfigErrorKind::Read(e),
    })?;
    let mut bytes = Vec::new();
    handle
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ConfigErrorKind::Read)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        let size = std::fs::metadata(file).map_or(bytes.len() as u64, |m| m.len());
        return Err(ConfigErrorKind::TooLarge { size });
    }
    Ok(bytes)
}

fn at(file: &Path, pos: Position, kind: ConfigErrorKind) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        line: pos.line,
        column: pos.column,
        kind,
    }
}

fn whole_file(file: &Path, kind: ConfigErrorKind) -> ConfigError {
    at(file, Position { line: 1, column: 1 }, kind)
}

/// 1-based line and column (in characters) of byte `offset`.
fn line_column(bytes: &[u8], offset: usize) -> (u32, u32) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (to_u32(line), to_u32(column))
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn position<T>(spanned: &Spanned<T>) -> Position {
    Position {
        line: clamp(spanned.referenced.line()),
        column: clamp(spanned.referenced.column()),
    }
}

/// Maps a parser error to our kinds, keeping its position.
fn from_yaml(file: &Path, text: &str, err: &serde_saphyr::Error) -> ConfigError {
    let pos =
        err.location()
            .filter(|l| l.line() > 0)
            .map_or(Position { line: 1, column: 1 }, |l| Position {
                line: clamp(l.line()),
                column: clamp(l.column()),
            });
    let kind = match classify(innermost(err)) {
        ConfigErrorKind::Syntax(_) if char_at(text, pos) == Some(presets::PRESET_SIGIL) => {
            ConfigErrorKind::UnquotedPreset
        }
        kind => kind,
    };
    at(file, pos, kind)
}

/// The character at a 1-based line and column (in characters).
fn char_at(text: &str, pos: Position) -> Option<char> {
    let line = text
        .lines()
        .nth(usize::try_from(pos.line).ok()?.checked_sub(1)?)?;
    line.chars()
        .nth(usize::try_from(pos.column).ok()?.checked_sub(1)?)
}

fn innermost(mut err: &serde_saphyr::Error) -> &serde_saphyr::Error {
    loop {
        match err {
            serde_saphyr::Error::WithSnippet { error, .. }
            | serde_saphyr::Error::AliasError { error, .. } => err = error,
            other => return other,
        }
    }
}

fn classify(err: &serde_saphyr::Error) -> ConfigErrorKind {
    use serde_saphyr::Error as E;
    match err {
        E::SerdeUnknownField {
            field, expected, ..
        } => ConfigErrorKind::UnknownKey {
            key: field.clone(),
            section: schema::section_of(expected),
            allowed: expected.clone(),
        },
        E::DuplicateMappingKey { key, .. } => {
            ConfigErrorKind::DuplicateKey(key.clone().unwrap_or_else(|| "(complex key)".into()))
        }
        E::SerdeMissingField { field, .. } => ConfigErrorKind::MissingKey {
            key: field.to_string(),
            section: schema::section_of_missing(field),
        },
        E::SerdeInvalidType {
            unexpected,
            expected,
            ..
        }
        | E::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => wrong_type(expected, Some(unexpected)),
        E::InvalidBooleanStrict { .. } => wrong_type("`true` or `false`", None),
        E::InvalidScalar { ty, .. } => wrong_type(&scalar_name(ty), None),
        E::NullIntoString { .. } => wrong_type("a string", Some("nothing (null)")),
        E::Unexpected { expected, .. } => wrong_type(expected, None),
        E::InvalidUtf8Input => ConfigErrorKind::NotUtf8,
        other => ConfigErrorKind::Syntax(user_message(other)),
    }
}

fn wrong_type(expected: &str, found: Option<&str>) -> ConfigErrorKind {
    let expected = schema::plain(expected);
    ConfigErrorKind::WrongType(match found {
        Some(found) => format!("expected {expected}, found {found}"),
        None => format!("expected {expected}"),
    })
}

fn scalar_name(ty: &str) -> String {
    match ty {
        "bool" => "`true` or `false`".into(),
        t if t.starts_with('i') || t.starts_with('u') => "a whole number".into(),
        t => format!("a value of type {t}"),
    }
}

/// The parser's own wording without the "at line, column" suffix, with
/// control characters made visible.
fn user_message(err: &serde_saphyr::Error) -> String {
    UserMessageFormatter
        .format_message(err)
        .chars()
        .flat_map(char::escape_debug)
        .collect::<String>()
        .replace("\\'", "'")
        .replace("\\\"", "\"")
}

type Invalid = (Position, ConfigErrorKind);

fn validate_spell(name: Spanned<String>, raw: RawSpell) -> Result<SpellSection, Invalid> {
    if let Some(enabled) = &raw.enabled {
        return Err((position(enabled), ConfigErrorKind::SpellSwitch));
    }
    let spelled = name.value.clone();
    let valid = !spelled.is_empty()
        && !spelled.contains(['/', '\\', '\0'])
        && spelled != "."
        && spelled != "..";
    if !valid {
        let shown = spelled.escape_debug().to_string();
        return Err((position(&name), ConfigErrorKind::BadSpellName(shown)));
    }
    let tag = |mut entry: AllowEntry| {
        entry.spell = Some(spelled.clone());
        entry
    };
    let allow = raw.allow.unwrap_or_default();
    let passthrough = raw.env.and_then(|e| e.passthrough).unwrap_or_default();
    Ok(SpellSection {
        at: position(&name),
        allow: allow
            .into_iter()
            .map(|a| validate_allow(a).map(tag))
            .collect::<Result<_, _>>()?,
        passthrough: passthrough
            .into_iter()
            .map(validate_passthrough)
            .collect::<Result<_, _>>()?,
        network: raw.network.map(validate_network).transpose()?,
        secrets: crate::policy::secrets::validate_secrets(raw.secrets.unwrap_or_default())?,
        name: spelled,
    })
}

fn validate(raw: RawSandbox) -> Result<SandboxConfig, Invalid> {
    let allow = raw.allow.unwrap_or_default();
    let passthrough = raw.env.and_then(|e| e.passthrough).unwrap_or_default();
    Ok(SandboxConfig {
        enabled: raw.enabled.as_ref().is_some_and(|e| e.value),
        enabled_at: raw.enabled.as_ref().map(position),
        allow: allow
            .into_iter()
            .map(validate_allow)
            .collect::<Result<_, _>>()?,
        passthrough: passthrough
            .into_iter()
            .map(validate_passthrough)
            .collect::<Result<_, _>>()?,
        network: raw.network.map_or(Ok(Network::Allow), validate_network)?,
        limits: raw.limits.map_or(Ok(Limits::default()), validate_limits)?,
        secrets: Vec::new(),
    })
}

fn validate_limits(raw: RawLimits) -> Result<Limits, Invalid> {
    let bad = |key, spanned: &Spanned<String>, problem| {
        let spelled = spanned.value.escape_debug().to_string();
        let kind = ConfigErrorKind::BadLimit {
            key,
            spelled,
            problem,
        };
        (position(spanned), kind)
    };
    let wall_time = raw
        .wall_time
        .map(|w| parse_wall_time(&w.value).map_err(|e| bad("wall_time", &w, e)))
        .transpose()?;
    let memory = raw
        .memory
        .map(|m| parse_memory(&m.value).map_err(|e| bad("memory", &m, e)))
        .transpose()?;
    let processes = raw
        .processes
        .map(|p| check_processes(p.value).map_err(|e| processes_error(&p, e)))
        .transpose()?;
    Ok(Limits {
        wall_time,
        processes,
        memory,
    })
}

fn processes_error(raw: &Spanned<i64>, problem: LimitError) -> Invalid {
    let kind = ConfigErrorKind::BadLimit {
        key: "processes",
        spelled: raw.value.to_string(),
        problem,
    };
    (position(raw), kind)
}

fn validate_allow(raw: RawAllow) -> Result<AllowEntry, Invalid> {
    let path_at = position(&raw.path);
    let why = if raw.path.value.is_empty() {
        Some("the path is empty")
    } else if raw.path.value.contains('\0') {
        Some("the path contains a NUL byte")
    } else {
        None
    };
    if let Some(why) = why {
        let spelled = raw.path.value.escape_debug().to_string();
        return Err((path_at, ConfigErrorKind::BadPath { spelled, why }));
    }
    let Ok(mode) = raw.mode.value.parse::<Mode>() else {
        let shown = raw.mode.value.escape_debug().to_string();
        return Err((position(&raw.mode), ConfigErrorKind::BadMode(shown)));
    };
    Ok(AllowEntry {
        path: raw.path.value,
        mode,
        at: path_at,
        spell: None,
    })
}

fn validate_passthrough(raw: Spanned<String>) -> Result<PassthroughEntry, Invalid> {
    let at = position(&raw);
    match EnvPattern::parse(&raw.value) {
        Ok(pattern) => Ok(PassthroughEntry { pattern, at }),
        Err(problem) => {
            let pattern = raw.value.escape_debug().to_string();
            Err((at, ConfigErrorKind::BadGlob { pattern, problem }))
        }
    }
}

fn validate_network(raw: Spanned<RawNetwork>) -> Result<Network, Invalid> {
    let at = position(&raw);
    match raw.value {
        RawNetwork::Word(word) => Network::from_word(&word).ok_or_else(|| {
            (
                at,
                ConfigErrorKind::BadNetwork(word.escape_debug().to_string()),
            )
        }),
        RawNetwork::Ports(mut ports) => match ports.hosts.take() {
            Some(hosts) => validate_hosts(at, hosts, &ports),
            None => validate_ports(ports),
        },
    }
}

/// `{hosts: [...]}`: with host rules every TCP connection goes through the
/// proxy, so a port list beside it would be a second, contradictory rule;
/// the combination is an error at the first port (or at the mapping).
fn validate_hosts(
    at: Position,
    hosts: Vec<Spanned<String>>,
    raw: &RawPorts,
) -> Result<Network, Invalid> {
    if let Some(ports) = raw.connect_tcp.as_ref().or(raw.bind_tcp.as_ref()) {
        let first = ports.first().map_or(at, position);
        return Err((first, ConfigErrorKind::HostsWithPorts));
    }
    if hosts.is_empty() {
        return Err((at, ConfigErrorKind::NoHosts));
    }
    let mut list = HostList::default();
    for h in &hosts {
        add_host_entry(&mut list, h)?;
    }
    list.rules.sort();
    list.rules.dedup();
    Ok(Network::Hosts(list))
}

/// One `hosts:` entry: a host rule, or a preset (`"@crates-io"`), whose
/// rules are added in its stead.
fn add_host_entry(list: &mut HostList, h: &Spanned<String>) -> Result<(), Invalid> {
    if presets::is_preset(&h.value) {
        let preset = presets::lookup(&h.value)
            .map_err(|unknown| (position(h), ConfigErrorKind::UnknownPreset(unknown)))?;
        if !list.presets.contains(&preset) {
            list.presets.push(preset);
        }
        list.rules.extend(preset.rules());
        return Ok(());
    }
    let rule = HostRule::parse(&h.value).map_err(|problem| {
        let spelled = h.value.escape_debug().to_string();
        (position(h), ConfigErrorKind::BadHost { spelled, problem })
    })?;
    list.rules.push(rule);
    Ok(())
}

fn validate_ports(raw: RawPorts) -> Result<Network, Invalid> {
    let list = |ports: Option<Vec<Spanned<i64>>>| -> Result<Vec<u16>, Invalid> {
        let ports = ports.unwrap_or_default();
        let mut out = ports
            .iter()
            .map(|p| match u16::try_from(p.value) {
                Ok(port) if port > 0 => Ok(port),
                _ => Err((position(p), ConfigErrorKind::BadPort(p.value))),
            })
            .collect::<Result<Vec<u16>, Invalid>>()?;
        out.sort_unstable();
        out.dedup();
        Ok(out)
    };
    Ok(Network::Ports {
        connect_tcp: list(raw.connect_tcp)?,
        bind_tcp: list(raw.bind_tcp)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ConfigFile, ConfigError> {
        parse_config(Path::new("magus.yaml"), text.as_bytes())
    }

    #[test]
    fn a_full_config_is_read_as_declared() {
        let text = "name: ignored\nsandbox:\n  enabled: true\n  allow:\n    - path: ~/.cargo\n      mode: rw\n  env:\n    passthrough: [GOPATH, \"MISE_*\"]\n  network: {connect_tcp: [443, 80, 443]}\n";
        let sandbox = parse(text).unwrap().sandbox.unwrap();
        assert!(sandbox.enabled);
        assert_eq!(
            sandbox.enabled_at,
            Some(Position {
                line: 3,
                column: 12
            })
        );
        assert_eq!(
            sandbox.allow,
            vec![AllowEntry {
                path: "~/.cargo".into(),
                mode: Mode::Rw,
                at: Position {
                    line: 5,
                    column: 13
                },
                spell: None,
            }]
        );
        let patterns: Vec<String> = sandbox
            .passthrough
            .iter()
            .map(|p| p.pattern.to_string())
            .collect();
        assert_eq!(patterns, ["GOPATH", "MISE_*"]);
        assert_eq!(
            sandbox.network,
            Network::Ports {
                connect_tcp: vec![80, 443],
                bind_tcp: vec![]
            }
        );
    }

    #[test]
    fn limits_are_read_in_their_units() {
        let text = "sandbox:\n  limits: {wall_time: 10m, processes: 256, memory: 2GiB}\n";
        let limits = parse(text).unwrap().sandbox.unwrap().limits;
        let want = Limits {
            wall_time: Some(std::time::Duration::from_secs(600)),
            processes: Some(256),
            memory: Some(2 << 30),
        };
        assert_eq!(limits, want);
        let none = parse("sandbox:\n  limits: {}\n").unwrap().sandbox.unwrap();
        assert!(none.limits.is_empty());
    }

    #[test]
    fn hosts_parse_and_refuse_port_lists_beside_them() {
        let text = "sandbox:\n  network:\n    hosts: [GitHub.com:443, \"*.crates.io\", crates.io, crates.io]\n";
        let Network::Hosts(list) = parse(text).unwrap().sandbox.unwrap().network else {
            panic!("not hosts");
        };
        let spelled: Vec<String> = list.rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(spelled, ["crates.io", "github.com:443", "*.crates.io"]);
        for (text, at) in [
            (
                "sandbox:\n  network: {hosts: [a.io], bind_tcp: [8080]}\n",
                (2, 39),
            ),
            (
                "sandbox:\n  network: {bind_tcp: [], hosts: [a.io]}\n",
                (2, 12),
            ),
            (
                "sandbox:\n  network: {connect_tcp: [443], hosts: [a.io]}\n",
                (2, 27),
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(
                matches!(err.kind, ConfigErrorKind::HostsWithPorts),
                "{text}: {err}"
            );
            assert_eq!((err.line, err.column), at, "{text}");
        }
    }

    #[test]
    fn a_preset_expands_to_its_rules_and_is_remembered() {
        let text =
            "sandbox:\n  network:\n    hosts: [\"@pypi\", pypi.org:443, \"@PyPI\", localhost]\n";
        let Network::Hosts(list) = parse(text).unwrap().sandbox.unwrap().network else {
            panic!("not hosts");
        };
        let spelled: Vec<String> = list.rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            spelled,
            ["files.pythonhosted.org:443", "localhost", "pypi.org:443"]
        );
        let names: Vec<&str> = list.presets.iter().map(|p| p.name).collect();
        assert_eq!(names, ["pypi"]);
    }

    #[test]
    fn an_unknown_or_unquoted_preset_is_an_error_at_its_entry() {
        let err = parse("sandbox:\n  network:\n    hosts: [a.io, \"@crate-io\"]\n").unwrap_err();
        assert!(
            matches!(&err.kind, ConfigErrorKind::UnknownPreset(u) if u.spelled == "@crate-io"),
            "{err}"
        );
        assert_eq!((err.line, err.column), (3, 19));
        assert!(
            err.hint().starts_with("did you mean `@crates-io`?"),
            "{}",
            err.hint()
        );
        for text in [
            "sandbox:\n  network:\n    hosts: [@npm]\n",
            "sandbox:\n  network:\n    hosts:\n      - @npm\n",
        ] {
            let err = parse(text).unwrap_err();
            assert!(matches!(err.kind, ConfigErrorKind::UnquotedPreset), "{err}");
            assert!(err.hint().contains("\"@crates-io\""), "{}", err.hint());
        }
        // Any other syntax error keeps its own words.
        let err = parse("sandbox:\n  network:\n    hosts: [`npm]\n").unwrap_err();
        assert!(matches!(err.kind, ConfigErrorKind::Syntax(_)), "{err}");
    }

    #[test]
    fn no_sandbox_section_is_none() {
        assert_eq!(parse("").unwrap().sandbox, None);
        assert_eq!(parse("tasks: {a: 1}\n").unwrap().sandbox, None);
        let empty = parse("sandbox: {}\n").unwrap().sandbox.unwrap();
        assert_eq!(empty, SandboxConfig::default());
    }

    #[test]
    fn a_key_near_sandbox_is_an_error() {
        for (text, key, line) in [
            ("sandbx:\n  enabled: true\n", "sandbx", 1),
            ("tasks: {}\nSandbox:\n  enabled: true\n", "Sandbox", 2),
            ("sandboxes: {}\n", "sandboxes", 1),
            ("snadbox: {}\n", "snadbox", 1),
            ("sandbox: {enabled: true}\nSANDBOX: {}\n", "SANDBOX", 2),
        ] {
            let err = parse(text).unwrap_err();
            match &err.kind {
                ConfigErrorKind::NearSandbox(k) => assert_eq!(k, key, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
            assert_eq!((err.line, err.column), (line, 1), "{text}");
            assert!(
                err.hint().contains("did you mean `sandbox`?"),
                "{}",
                err.hint()
            );
        }
        for text in [
            "tasks: {}\n",
            "band: 1\n",
            "sand: 1\n",
            "1: x\n",
            "[a]: b\n",
        ] {
            assert!(parse(text).is_ok(), "{text}");
        }
    }

    const SPELLS: &str = "sandbox:\n  enabled: true\n  allow: [{path: ~/.cargo, mode: ro}]\n  env: {passthrough: [GOPATH]}\n  network: {hosts: [crates.io]}\nspells:\n  deps:\n    allow:\n      - path: ~/.cache/pip\n        mode: rw\n    env: {passthrough: [\"PIP_*\"]}\n    network: {hosts: [pypi.org, crates.io]}\n  lint: {network: deny}\n  fmt:\n";

    #[test]
    fn a_spell_section_adds_grants_and_names_and_joins_hosts() {
        let file = parse(SPELLS).unwrap();
        let names: Vec<&str> = file.spells.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["deps", "lint", "fmt"]);
        let sandbox = file.sandbox.as_ref().unwrap();
        let deps = sandbox.for_spell(file.spell("deps").unwrap());
        let paths: Vec<(&str, Option<&str>)> = deps
            .allow
            .iter()
            .map(|a| (a.path.as_str(), a.spell.as_deref()))
            .collect();
        assert_eq!(paths, [("~/.cargo", None), ("~/.cache/pip", Some("deps"))]);
        assert_eq!(
            deps.allow[1].at,
            Position {
                line: 9,
                column: 15
            }
        );
        let names: Vec<String> = deps
            .passthrough
            .iter()
            .map(|p| p.pattern.to_string())
            .collect();
        assert_eq!(names, ["GOPATH", "PIP_*"]);
        let Network::Hosts(hosts) = &deps.network else {
            panic!("{:?}", deps.network)
        };
        let hosts: Vec<String> = hosts.rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(hosts, ["crates.io", "pypi.org"]);
        // `network` in a section replaces the workspace's; an empty
        // section changes nothing; `enabled` and `limits` never differ.
        let lint = sandbox.for_spell(file.spell("lint").unwrap());
        assert_eq!(lint.network, Network::Deny);
        assert_eq!(lint.allow, sandbox.allow);
        assert_eq!(&sandbox.for_spell(file.spell("fmt").unwrap()), sandbox);
    }

    #[test]
    fn spell_sections_are_strict() {
        for (text, at, what) in [
            (
                "sandbox: {}\nspells:\n  a: {enabled: false}\n",
                (3, 16),
                "cannot turn the sandbox",
            ),
            (
                "sandbox: {}\nspells:\n  a: {limits: {memory: 1GiB}}\n",
                (3, 7),
                "unknown key `limits`",
            ),
            (
                "sandbox: {}\nspells:\n  a: {allow: [{path: x, mode: rx}]}\n",
                (3, 31),
                "invalid mode",
            ),
            ("spells:\n  a: {}\n", (1, 1), "without a `sandbox:`"),
            (
                "sandbox: {}\nspell:\n  a: {}\n",
                (2, 1),
                "unknown top-level key `spell`",
            ),
            (
                "sandbox: {}\nspells:\n  ../x: {}\n",
                (3, 3),
                "invalid spell name",
            ),
            (
                "sandbox: {}\nspells:\n  a: {}\n  a: {}\n",
                (4, 3),
                "duplicate",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.to_string().contains(what), "{text}: {err}");
            assert_eq!((err.line, err.column), at, "{text}: {err}");
        }
    }

    #[test]
    fn a_section_for_no_spell_is_an_error_with_the_nearest_name() {
        let file = parse(SPELLS).unwrap();
        let known = ["deps".to_string(), "fmt".to_string(), "lint".to_string()];
        file.check_spell_names(&known).unwrap();
        let err = file.check_spell_names(&known[..2]).unwrap_err();
        assert!(err.to_string().contains("no spell `lint`"), "{err}");
        assert_eq!((err.line, err.column), (13, 3));
        let file = parse("sandbox: {}\nspells:\n  dpes: {}\n").unwrap();
        let err = file.check_spell_names(&known).unwrap_err();
        assert!(
            err.hint().starts_with("did you mean `deps`?"),
            "{}",
            err.hint()
        );
        assert_eq!(err.kind.code(), crate::diag::Code::Mgs3006);
    }

    #[test]
    fn non_utf8_points_at_the_bad_byte() {
        let err =
            parse_config(Path::new("m.yaml"), b"sandbox:\n  en\xffabled: true\n").unwrap_err();
        assert!(matches!(err.kind, ConfigErrorKind::NotUtf8));
        assert_eq!((err.line, err.column), (2, 5));
    }

    #[test]
    fn an_oversized_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("magus.yaml");
        let mut text = String::from("# padding\n");
        text.push_str(&"#".repeat(MAX_CONFIG_BYTES as usize));
        std::fs::write(&file, text).unwrap();
        let err = load_config(&file).unwrap_err();
        assert!(
            matches!(err.kind, ConfigErrorKind::TooLarge { .. }),
            "{err}"
        );
    }
}

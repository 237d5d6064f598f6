//! The canonical form of the policy *as declared* and its SHA-256
//! fingerprint (docs/configuration.md). Only what `magus.yaml` says goes in (entries as
//! written, never resolved paths), so the fingerprint is the same on every
//! machine. `magus.lock` stores both; this module does not read or write it.

use super::config::{merged_network, SandboxConfig, SpellSection};
use super::grant::{Mode, Network};
use super::hosts::HostList;
use super::limits::Limits;
use super::secrets::SecretBinding;
use sha2::{Digest, Sha256};
use std::fmt;

/// The first line of the canonical text; bump it if the format changes.
pub(crate) const CANONICAL_HEADER: &str = "magus-sandbox-policy v1";

/// The declared policy in a canonical order: allow entries sorted by path
/// then mode (exact repeats collapse), passthrough sorted and unique, ports
/// sorted and unique.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalPolicy {
    /// `sandbox.enabled` as written (not the environment override).
    pub enabled: bool,
    /// `(path as written, mode)`.
    pub allow: Vec<(String, Mode)>,
    /// Passthrough patterns as written (`GOPATH`, `MISE_*`).
    pub passthrough: Vec<String>,
    pub network: Network,
    /// `sandbox.limits`, in canonical units (seconds, bytes). Written only
    /// when a bound is set, so locks made before limits existed still hold.
    pub limits: Limits,
    /// The spell's secrets, each [`SecretBinding::canonical`] (names,
    /// sources, hosts, rules; never a value), sorted. Only an effective
    /// policy has them; written only when there are some.
    pub secrets: Vec<String>,
}

/// A hex SHA-256 of a [`CanonicalPolicy`]'s text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// 64 lowercase hex digits.
    pub fn as_hex(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.0)
    }
}

impl CanonicalPolicy {
    /// The canonical form of a declared `sandbox:` section.
    pub fn from_declared(config: &SandboxConfig) -> CanonicalPolicy {
        let mut allow: Vec<(String, Mode)> = config
            .allow
            .iter()
            .map(|e| (e.path.clone(), e.mode))
            .collect();
        allow.sort();
        allow.dedup();
        let mut passthrough: Vec<String> = config
            .passthrough
            .iter()
            .map(|p| p.pattern.to_string())
            .collect();
        passthrough.sort();
        passthrough.dedup();
        CanonicalPolicy {
            enabled: config.enabled,
            allow,
            passthrough,
            network: canonical_network(&config.network),
            limits: config.limits,
            secrets: canonical_secrets(&config.secrets),
        }
    }

    /// SHA-256 over [`CanonicalPolicy`]'s `Display` text.
    pub fn fingerprint(&self) -> Fingerprint {
        let digest = Sha256::digest(self.to_string().as_bytes());
        let hex = digest.iter().map(|b| format!("{b:02x}")).collect();
        Fingerprint(hex)
    }
}

/// One spell's section (`spells: NAME:`) in canonical form: what it adds
/// to the workspace's policy, sorted like [`CanonicalPolicy`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalSection {
    pub name: String,
    pub allow: Vec<(String, Mode)>,
    pub passthrough: Vec<String>,
    /// `None` when the section keeps the workspace's `network`.
    pub network: Option<Network>,
    /// Canonical lines of the section's secrets, sorted.
    pub secrets: Vec<String>,
}

impl CanonicalSection {
    /// The canonical form of a declared section.
    pub fn from_declared(section: &SpellSection) -> CanonicalSection {
        let mut canonical = CanonicalSection {
            name: section.name.clone(),
            allow: section
                .allow
                .iter()
                .map(|e| (e.path.clone(), e.mode))
                .collect(),
            passthrough: section
                .passthrough
                .iter()
                .map(|p| p.pattern.to_string())
                .collect(),
            network: section.network.as_ref().map(canonical_network),
            secrets: canonical_secrets(&section.secrets),
        };
        canonical.sort();
        canonical
    }

    /// Sorts and deduplicates, as a lock read back must be.
    pub(crate) fn sort(&mut self) {
        self.allow.sort();
        self.allow.dedup();
        self.passthrough.sort();
        self.passthrough.dedup();
        self.secrets.sort();
        self.secrets.dedup();
        if let Some(network) = &mut self.network {
            *network = canonical_network(network);
        }
    }
}

impl CanonicalPolicy {
    /// The effective policy of a spell with `section`, exactly as
    /// [`SandboxConfig::for_spell`] merges the declared forms, so the
    /// lock's record of a spell and the run's policy fingerprint alike.
    pub fn with_section(&self, section: &CanonicalSection) -> CanonicalPolicy {
        let mut merged = self.clone();
        merged.allow.extend(section.allow.iter().cloned());
        merged.allow.sort();
        merged.allow.dedup();
        merged
            .passthrough
            .extend(section.passthrough.iter().cloned());
        merged.passthrough.sort();
        merged.passthrough.dedup();
        if let Some(network) = &section.network {
            merged.network = canonical_network(&merged_network(&self.network, network));
        }
        merged.secrets = section.secrets.clone();
        merged
    }
}

impl fmt::Display for CanonicalSection {
    /// `spell "NAME"`, then its facts one per line as in the policy.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "spell {}", quoted(&self.name))?;
        for (path, mode) in &self.allow {
            writeln!(f, "allow {mode} {}", quoted(path))?;
        }
        for name in &self.passthrough {
            writeln!(f, "passthrough {}", quoted(name))?;
        }
        if let Some(network) = &self.network {
            write_network(f, network)?;
        }
        write_secrets(f, &self.secrets)
    }
}

fn canonical_secrets(secrets: &[SecretBinding]) -> Vec<String> {
    let mut lines: Vec<String> = secrets.iter().map(SecretBinding::canonical).collect();
    lines.sort();
    lines.dedup();
    lines
}

/// `secret "secret NAME from env:VAR hosts [...] rules [...]"`.
fn write_secrets(f: &mut fmt::Formatter<'_>, secrets: &[String]) -> fmt::Result {
    for line in secrets {
        writeln!(f, "secret {}", quoted(line))?;
    }
    Ok(())
}

fn canonical_network(network: &Network) -> Network {
    match network {
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => {
            let sorted = |ports: &[u16]| {
                let mut v = ports.to_vec();
                v.sort_unstable();
                v.dedup();
                v
            };
            Network::Ports {
                connect_tcp: sorted(connect_tcp),
                bind_tcp: sorted(bind_tcp),
            }
        }
        Network::Hosts(list) => {
            let mut rules = list.rules.clone();
            rules.sort();
            rules.dedup();
            Network::Hosts(HostList::of(rules))
        }
        other => other.clone(),
    }
}

/// `["*.crates.io", "github.com:443"]`: each rule in its canonical spelling.
pub(crate) fn host_list_text(list: &HostList) -> String {
    let items: Vec<String> = list.rules.iter().map(|r| quoted(&r.to_string())).collect();
    format!("[{}]", items.join(", "))
}

/// A JSON string literal: unambiguous for any path or name, on one line.
fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn ports(list: &[u16]) -> String {
    let items: Vec<String> = list.iter().map(u16::to_string).collect();
    format!("[{}]", items.join(", "))
}

impl fmt::Display for CanonicalPolicy {
    /// One fact per line, e.g. `allow rw "~/.cargo"`, ending with a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{CANONICAL_HEADER}")?;
        writeln!(f, "enabled {}", self.enabled)?;
        for (path, mode) in &self.allow {
            writeln!(f, "allow {mode} {}", quoted(path))?;
        }
        for name in &self.passthrough {
            writeln!(f, "passthrough {}", quoted(name))?;
        }
        write_network(f, &self.network)?;
        write_limits(f, &self.limits)?;
        write_secrets(f, &self.secrets)
    }
}

fn write_network(f: &mut fmt::Formatter<'_>, network: &Network) -> fmt::Result {
    match network {
        Network::Allow => writeln!(f, "network allow"),
        Network::Deny => writeln!(f, "network deny"),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => writeln!(
            f,
            "network connect_tcp {} bind_tcp {}",
            ports(connect_tcp),
            ports(bind_tcp)
        ),
        Network::Hosts(list) => writeln!(f, "network hosts {}", host_list_text(list)),
    }
}

/// `limit wall_time 600s`, `limit processes 256`, `limit memory <bytes>`.
fn write_limits(f: &mut fmt::Formatter<'_>, limits: &Limits) -> fmt::Result {
    if let Some(wall) = limits.wall_time {
        writeln!(f, "limit wall_time {}s", wall.as_secs())?;
    }
    if let Some(count) = limits.processes {
        writeln!(f, "limit processes {count}")?;
    }
    if let Some(bytes) = limits.memory {
        writeln!(f, "limit memory {bytes}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::config::parse_config;
    use std::path::Path;

    fn canonical(text: &str) -> CanonicalPolicy {
        let file = parse_config(Path::new("magus.yaml"), text.as_bytes()).unwrap();
        CanonicalPolicy::from_declared(&file.sandbox.unwrap())
    }

    #[test]
    fn order_and_repeats_do_not_change_the_fingerprint() {
        let a = canonical(
            "sandbox:\n  enabled: true\n  allow:\n    - {path: ~/b, mode: ro}\n    - {path: ~/a, mode: rw}\n  env: {passthrough: [B, A_*, B]}\n  network: {connect_tcp: [443, 80]}\n",
        );
        let b = canonical(
            "other: 1\nsandbox:\n  network: {bind_tcp: [], connect_tcp: [80, 443, 80]}\n  env: {passthrough: [A_*, B]}\n  allow:\n    - {path: ~/a, mode: rw}\n    - {path: ~/b, mode: ro}\n    - {path: ~/a, mode: rw}\n  enabled: true\n",
        );
        assert_eq!(a, b);
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().as_hex().len(), 64);
    }

    #[test]
    fn every_declared_fact_changes_the_fingerprint() {
        let base = "sandbox:\n  enabled: true\n  allow: [{path: ~/a, mode: ro}]\n  env: {passthrough: [A]}\n  network: deny\n";
        let variants = [
            base.replace("enabled: true", "enabled: false"),
            base.replace("mode: ro", "mode: rw"),
            base.replace("~/a", "~/b"),
            base.replace("[A]", "[A_*]"),
            base.replace("deny", "allow"),
            format!("{base}  limits: {{wall_time: 30s}}\n"),
            format!("{base}  limits: {{processes: 64}}\n"),
            format!("{base}  limits: {{memory: 1GiB}}\n"),
            base.replace("deny", "{hosts: [crates.io]}"),
        ];
        let fp = canonical(base).fingerprint();
        for v in variants {
            assert_ne!(canonical(&v).fingerprint(), fp, "{v}");
        }
    }

    #[test]
    fn canonical_text_is_stable() {
        let c = canonical(
            "sandbox:\n  enabled: true\n  allow: [{path: \"~/.cargo\", mode: rw}]\n  env: {passthrough: [\"MISE_*\"]}\n  network: {connect_tcp: [443]}\n",
        );
        let want = "magus-sandbox-policy v1\nenabled true\nallow rw \"~/.cargo\"\npassthrough \"MISE_*\"\nnetwork connect_tcp [443] bind_tcp []\n";
        assert_eq!(c.to_string(), want);
    }

    #[test]
    fn limits_are_canonical_in_seconds_and_bytes() {
        let a = canonical("sandbox:\n  limits: {wall_time: 10m, processes: 8, memory: 1GiB}\n");
        let b =
            canonical("sandbox:\n  limits: {memory: 1048576KiB, wall_time: 600s, processes: 8}\n");
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert!(a.to_string().ends_with(
            "network allow\nlimit wall_time 600s\nlimit processes 8\nlimit memory 1073741824\n"
        ));
        let empty = canonical("sandbox:\n  limits: {}\n");
        assert_eq!(
            empty.fingerprint(),
            canonical("sandbox: {}\n").fingerprint()
        );
    }

    /// The lock pins what a preset opens, not its name: written out, the
    /// same hosts give the same fingerprint, and another preset (or a
    /// preset whose hosts changed) another one.
    #[test]
    fn a_preset_is_fingerprinted_as_its_hosts() {
        let preset = canonical("sandbox:\n  network: {hosts: [\"@crates-io\"]}\n");
        let written = canonical(
            "sandbox:\n  network: {hosts: [static.crates.io:443, crates.io:443, index.crates.io:443]}\n",
        );
        assert_eq!(preset, written);
        assert_eq!(preset.fingerprint(), written.fingerprint());
        assert!(
            preset.to_string().ends_with(
                "network hosts [\"crates.io:443\", \"index.crates.io:443\", \"static.crates.io:443\"]\n"
            ),
            "{preset}"
        );
        let other = canonical("sandbox:\n  network: {hosts: [\"@pypi\"]}\n");
        assert_ne!(preset.fingerprint(), other.fingerprint());
    }

    #[test]
    fn hosts_are_canonical_and_fingerprinted() {
        let a = canonical("sandbox:\n  network: {hosts: [GitHub.com:443, \"*.crates.io\", crates.io, crates.io]}\n");
        let b = canonical(
            "sandbox:\n  network: {hosts: [crates.io, \"*.crates.io\", \"github.com:443\"]}\n",
        );
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert!(
            a.to_string()
                .ends_with("network hosts [\"crates.io\", \"github.com:443\", \"*.crates.io\"]\n"),
            "{a}"
        );
        let c = canonical(
            "sandbox:\n  network: {hosts: [crates.io, \"*.crates.io\", \"github.com\"]}\n",
        );
        assert_ne!(a.fingerprint(), c.fingerprint());
    }
}

//! The raw serde shape of `magus.yaml`: every value the user may get wrong
//! keeps its position (`Spanned`) so validation can point at it. Nothing
//! here decides what a value means; `config::validate` does.

use serde::de::{self, value::MapAccessDeserializer, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::fmt;

/// The whole file: `sandbox` and `spells` are ours, other top-level keys
/// belong to the rest of the task runner and are ignored, but their names
/// and positions are kept so that a misspelt `sandbox` can be caught.
#[derive(Debug, Default)]
pub(super) struct RawFile {
    pub sandbox: Option<RawSandbox>,
    /// Where `spells:` is, and its sections in file order.
    pub spells: Option<(Spanned<String>, RawSpells)>,
    pub other_keys: Vec<Spanned<String>>,
}

impl<'de> Deserialize<'de> for RawFile {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FileVisitor)
    }
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = RawFile;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct RawFile")
    }

    /// An empty file.
    fn visit_unit<E: de::Error>(self) -> Result<RawFile, E> {
        Ok(RawFile::default())
    }

    fn visit_none<E: de::Error>(self) -> Result<RawFile, E> {
        Ok(RawFile::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile, A::Error> {
        let mut file = RawFile::default();
        while let Some(key) = map.next_key::<Spanned<TopKey>>()? {
            match key.value {
                TopKey::Name(name) if name == "sandbox" => {
                    if file.sandbox.is_some() {
                        return Err(de::Error::custom("duplicate key `sandbox`"));
                    }
                    file.sandbox = map.next_value::<Option<RawSandbox>>()?;
                }
                TopKey::Name(name) if name == "spells" => {
                    if file.spells.is_some() {
                        return Err(de::Error::custom("duplicate key `spells`"));
                    }
                    let sections = map.next_value::<Option<RawSpells>>()?.unwrap_or_default();
                    let key = Spanned {
                        value: name,
                        referenced: key.referenced,
                        defined: key.defined,
                    };
                    file.spells = Some((key, sections));
                }
                TopKey::Name(name) => {
                    map.next_value::<de::IgnoredAny>()?;
                    file.other_keys.push(Spanned {
                        value: name,
                        referenced: key.referenced,
                        defined: key.defined,
                    });
                }
                TopKey::Other => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(file)
    }
}

/// A top-level key: a name, or anything else (a number, a list), which
/// cannot be a misspelt `sandbox`.
#[derive(Debug)]
enum TopKey {
    Name(String),
    Other,
}

impl<'de> Deserialize<'de> for TopKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = TopKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TopKey, E> {
                Ok(TopKey::Name(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<TopKey, E> {
                Ok(TopKey::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<TopKey, E> {
                Ok(TopKey::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<TopKey, E> {
                Ok(TopKey::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<TopKey, E> {
                Ok(TopKey::Other)
            }
            fn visit_unit<E: de::Error>(self) -> Result<TopKey, E> {
                Ok(TopKey::Other)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<TopKey, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(TopKey::Other)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopKey, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(TopKey::Other)
            }
        }
        deserializer.deserialize_any(KeyVisitor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSandbox {
    #[serde(default)]
    pub enabled: Option<Spanned<bool>>,
    #[serde(default)]
    pub allow: Option<Vec<RawAllow>>,
    #[serde(default)]
    pub env: Option<RawEnv>,
    #[serde(default)]
    pub network: Option<Spanned<RawNetwork>>,
    #[serde(default)]
    pub limits: Option<RawLimits>,
}

/// `spells:`: each spell's own section, keyed by the spell's name, in the
/// order written (the names keep their positions for "unknown spell").
#[derive(Debug, Default)]
pub(super) struct RawSpells(pub Vec<(Spanned<String>, RawSpell)>);

impl<'de> Deserialize<'de> for RawSpells {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpellsVisitor;
        impl<'de> Visitor<'de> for SpellsVisitor {
            type Value = RawSpells;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a mapping from spell names to their sections")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawSpells, A::Error> {
                let mut sections: Vec<(Spanned<String>, RawSpell)> = Vec::new();
                while let Some(name) = map.next_key::<Spanned<String>>()? {
                    if sections.iter().any(|(n, _)| n.value == name.value) {
                        let shown = name.value.escape_debug();
                        return Err(de::Error::custom(format!("duplicate key `{shown}`")));
                    }
                    let section = map.next_value::<Option<RawSpell>>()?.unwrap_or_default();
                    sections.push((name, section));
                }
                Ok(RawSpells(sections))
            }
        }
        deserializer.deserialize_map(SpellsVisitor)
    }
}

/// One spell's section: what it adds to (or, for `network`, puts in place
/// of) the workspace's `sandbox:` section. `enabled` is read only to be
/// refused with its own message: a spell cannot switch the sandbox.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpell {
    #[serde(default)]
    pub enabled: Option<Spanned<bool>>,
    #[serde(default)]
    pub allow: Option<Vec<RawAllow>>,
    #[serde(default)]
    pub env: Option<RawEnv>,
    #[serde(default)]
    pub network: Option<Spanned<RawNetwork>>,
    /// Secrets by reference (docs/secrets.md), validated by
    /// `policy::secrets`.
    #[serde(default)]
    pub secrets: Option<Vec<crate::policy::secrets::RawSecret>>,
}

/// `limits:` values stay strings (or a number) here; their units are
/// checked in `config::validate`, which can point at the value.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    #[serde(default)]
    pub wall_time: Option<Spanned<String>>,
    #[serde(default)]
    pub processes: Option<Spanned<i64>>,
    #[serde(default)]
    pub memory: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAllow {
    pub path: Spanned<String>,
    pub mode: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawEnv {
    #[serde(default)]
    pub passthrough: Option<Vec<Spanned<String>>>,
}

/// `network:` is a word (`allow`, `deny`) or a mapping of port lists.
#[derive(Debug)]
pub(super) enum RawNetwork {
    Word(String),
    Ports(RawPorts),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPorts {
    #[serde(default)]
    pub connect_tcp: Option<Vec<Spanned<i64>>>,
    #[serde(default)]
    pub bind_tcp: Option<Vec<Spanned<i64>>>,
    #[serde(default)]
    pub hosts: Option<Vec<Spanned<String>>>,
}

impl<'de> Deserialize<'de> for RawNetwork {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NetworkVisitor)
    }
}

struct NetworkVisitor;

impl<'de> Visitor<'de> for NetworkVisitor {
    type Value = RawNetwork;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`allow`, `deny`, a mapping with `connect_tcp` and `bind_tcp`, or a mapping with `hosts`")
    }

    fn visit_str<E: de::Error>(self, word: &str) -> Result<RawNetwork, E> {
        Ok(RawNetwork::Word(word.to_string()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawNetwork, A::Error> {
        RawPorts::deserialize(MapAccessDeserializer::new(map)).map(RawNetwork::Ports)
    }
}

/// Which section a list of allowed keys belongs to, for messages.
pub(super) fn section_of(allowed: &[&'static str]) -> &'static str {
    let has = |k: &str| allowed.contains(&k);
    if has("enabled") && has("limits") {
        "sandbox"
    } else if has("enabled") {
        "a spell's section under `spells:`"
    } else if has("mode") {
        "sandbox.allow entry"
    } else if has("passthrough") {
        "sandbox.env"
    } else if has("connect_tcp") {
        "sandbox.network"
    } else if has("wall_time") {
        "sandbox.limits"
    } else {
        "magus.yaml"
    }
}

/// The section a required key lives in.
pub(super) fn section_of_missing(key: &str) -> &'static str {
    match key {
        "path" | "mode" => "sandbox.allow entry",
        _ => "sandbox",
    }
}

/// serde's description of an expected type, in the user's words.
pub(super) fn plain(expected: &str) -> String {
    if expected.starts_with("struct ") || expected.contains("mapping start") {
        return "a mapping (`key: value` lines)".into();
    }
    match expected {
        "a sequence" | "sequence start" => "a list (`- item` lines or `[a, b]`)".into(),
        "a string" | "string scalar" => "a string".into(),
        "a boolean" => "`true` or `false`".into(),
        "i64" => "a whole number".into(),
        other => other.to_string(),
    }
}

//! Named presets for `network.hosts`: `"@crates-io"` in the list stands
//! for the hosts cargo contacts, and so on. Each preset's entries were
//! found by running the tool through a logging proxy, or, where this could
//! not be done, from the service's own documentation (docs/hosts.md says
//! which, and what was run). A preset is expanded where `magus.yaml` is
//! read, so the proxy, `sandbox check` and the lock see only host rules.

use super::hosts::HostRule;

/// What a preset entry in `hosts:` starts with.
pub(crate) const PRESET_SIGIL: char = '@';

/// One named preset.
#[derive(Debug, PartialEq, Eq)]
pub struct Preset {
    /// The name without the sigil (`crates-io`).
    pub name: &'static str,
    /// Which tool needs it and for what, for `sandbox check` and the docs.
    pub purpose: &'static str,
    /// Host entries, in `hosts:` syntax.
    pub entries: &'static [&'static str],
}

impl Preset {
    /// The host rules the preset stands for.
    pub fn rules(&self) -> Vec<HostRule> {
        self.entries
            .iter()
            .filter_map(|e| HostRule::parse(e).ok())
            .collect()
    }

    /// `@crates-io`.
    pub fn spelled(&self) -> String {
        format!("{PRESET_SIGIL}{}", self.name)
    }
}

/// Every preset. Only port 443: each tool reaches its registry over
/// HTTPS, and an entry without a port would also open plain HTTP.
pub(crate) const PRESETS: &[Preset] = &[
    Preset {
        name: "crates-io",
        purpose: "cargo: the sparse index, crate downloads, the web API for search and publish",
        entries: &[
            "index.crates.io:443",
            "static.crates.io:443",
            "crates.io:443",
        ],
    },
    Preset {
        name: "github",
        purpose: "GitHub: git over HTTPS, the REST API, archives, raw files, release downloads",
        entries: &[
            "github.com:443",
            "api.github.com:443",
            "codeload.github.com:443",
            "raw.githubusercontent.com:443",
            "objects.githubusercontent.com:443",
            "release-assets.githubusercontent.com:443",
        ],
    },
    Preset {
        name: "npm",
        purpose: "npm: package metadata, tarballs, audit",
        entries: &["registry.npmjs.org:443"],
    },
    Preset {
        name: "pypi",
        purpose: "pip: the package index, distribution files",
        entries: &["pypi.org:443", "files.pythonhosted.org:443"],
    },
];

/// Why a `@...` entry names no preset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("there is no preset `{spelled}`")]
pub struct UnknownPreset {
    /// The entry as written, escaped for display.
    pub spelled: String,
    /// The preset it is nearest to, if any is near.
    pub near: Option<&'static Preset>,
}

impl UnknownPreset {
    /// "did you mean `@crates-io`? The presets are ...".
    pub fn hint(&self) -> String {
        let all: Vec<String> = PRESETS
            .iter()
            .map(|p| format!("`{}`", p.spelled()))
            .collect();
        let all = all.join(", ");
        match self.near {
            Some(p) => format!(
                "did you mean `{}`? The presets are {all} (docs/hosts.md)",
                p.spelled()
            ),
            None => format!("the presets are {all} (docs/hosts.md)"),
        }
    }
}

/// Whether an entry as written is a preset rather than a host.
pub(crate) fn is_preset(entry: &str) -> bool {
    entry.trim_start().starts_with(PRESET_SIGIL)
}

/// The preset an entry (`@crates-io`, case and spaces aside) names.
pub(crate) fn lookup(entry: &str) -> Result<&'static Preset, UnknownPreset> {
    let name = entry.trim().trim_start_matches(PRESET_SIGIL).to_lowercase();
    if let Some(p) = PRESETS.iter().find(|p| p.name == name) {
        return Ok(p);
    }
    Err(UnknownPreset {
        spelled: entry.trim().escape_debug().to_string(),
        near: nearest(&name),
    })
}

/// The preset a misspelt name is close to: at most two edits, or a name
/// that only drops or adds punctuation (`cratesio`, `crates.io`), or the
/// start of a name (`crates`); a port written after it is ignored.
fn nearest(name: &str) -> Option<&'static Preset> {
    let bare = |s: &str| -> String { s.chars().filter(|c| c.is_ascii_alphanumeric()).collect() };
    // `@crates-io:443`: a preset takes no port (its entries have theirs).
    let wanted = bare(name.split(':').next().unwrap_or(name));
    PRESETS
        .iter()
        .map(|p| (crate::diag::edit_distance(&wanted, &bare(p.name)), p))
        .filter(|(d, p)| *d <= 2 || (wanted.len() >= 3 && bare(p.name).starts_with(&wanted)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_a_host_rule_on_port_443() {
        for preset in PRESETS {
            assert_eq!(
                preset.rules().len(),
                preset.entries.len(),
                "{}",
                preset.name
            );
            for rule in preset.rules() {
                assert_eq!(rule.port, Some(443), "{rule}");
            }
        }
    }

    #[test]
    fn presets_are_found_and_misspellings_get_the_near_one() {
        assert_eq!(lookup("@crates-io").unwrap().name, "crates-io");
        assert_eq!(lookup(" @PyPI ").unwrap().name, "pypi");
        for (written, near) in [
            ("@crates", Some("crates-io")),
            ("@cratesio", Some("crates-io")),
            ("@crates.io", Some("crates-io")),
            ("@pipy", Some("pypi")),
            ("@npmjs", Some("npm")),
            ("@gihtub", Some("github")),
            ("@crates-io:443", Some("crates-io")),
            ("@maven", None),
            ("@", None),
        ] {
            let err = lookup(written).unwrap_err();
            assert_eq!(err.near.map(|p| p.name), near, "{written}");
            assert!(err.hint().contains("`@pypi`"), "{}", err.hint());
        }
    }
}

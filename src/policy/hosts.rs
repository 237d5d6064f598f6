//! `network: {hosts: [...]}` entries: what a host rule is, how one is
//! written in `magus.yaml`, and whether a name a client asked for matches.
//! The proxy (`crate::proxy`) asks [`HostList::permits`] with the name
//! exactly as the client sent it, before anything is resolved.

use super::presets::Preset;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

/// The longest DNS name (RFC 1035), without the trailing dot.
const MAX_NAME: usize = 253;
/// The longest DNS label.
const MAX_LABEL: usize = 63;

/// Which names an entry covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostPattern {
    /// Exactly this name (lower case, no trailing dot) or IP literal
    /// (canonical text: `127.0.0.1`, `::1`).
    Exact(String),
    /// `*.suffix`: every name that ends in `.suffix`, not `suffix` itself.
    Subdomains(String),
}

/// One `hosts:` entry: a pattern, and the one port it allows (`None`: any).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostRule {
    pub pattern: HostPattern,
    pub port: Option<u16>,
}

/// Why an entry is not a host rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("the entry is empty")]
    Empty,
    #[error("a host entry is a name, not a URL (remove `{0}://`)")]
    Scheme(String),
    #[error("a host entry has no path (remove everything from `/`)")]
    Path,
    #[error("a bare `*` would allow every host; use `network: allow` for that")]
    BareStar,
    #[error("`*` is only allowed as a whole first label (`*.example.com`)")]
    MisplacedStar,
    #[error("the port `{0}` is not a number from 1 to 65535")]
    Port(String),
    #[error("the host name is empty")]
    EmptyName,
    #[error("the name is longer than {MAX_NAME} characters")]
    TooLong,
    #[error("the name has an empty label (two dots in a row, or a leading dot)")]
    EmptyLabel,
    #[error("a label is longer than {MAX_LABEL} characters")]
    LongLabel,
    #[error("`{0}` is not allowed in a host name (letters, digits, `-`, `_` and `.`)")]
    BadCharacter(char),
}

impl HostRule {
    /// Parses one entry as written: `name`, `*.suffix`, either with
    /// `:port`; IPv6 literals in brackets (`[::1]:443`).
    pub fn parse(text: &str) -> Result<HostRule, HostError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(HostError::Empty);
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(HostError::Scheme(scheme.to_string()));
        }
        if text.contains('/') {
            return Err(HostError::Path);
        }
        let (host, port) = split_port(text)?;
        Ok(HostRule {
            pattern: parse_pattern(host)?,
            port,
        })
    }

    /// Whether this rule lets a client reach `host:port`; `host` must be
    /// normalised by [`normalize_host`].
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.pattern {
            HostPattern::Exact(name) => name == host,
            HostPattern::Subdomains(suffix) => {
                host.parse::<IpAddr>().is_err()
                    && host.len() > suffix.len() + 1
                    && host.ends_with(suffix.as_str())
                    && host.as_bytes()[host.len() - suffix.len() - 1] == b'.'
            }
        }
    }
}

impl fmt::Display for HostRule {
    /// The canonical spelling, which parses back to the same rule.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pattern {
            HostPattern::Exact(name) if name.contains(':') => write!(f, "[{name}]")?,
            HostPattern::Exact(name) => f.write_str(name)?,
            HostPattern::Subdomains(suffix) => write!(f, "*.{suffix}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

fn split_port(text: &str) -> Result<(&str, Option<u16>), HostError> {
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or(HostError::BadCharacter('['))?;
        return match after {
            "" => Ok((inside, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((inside, Some(parse_port(port)?))),
                None => Err(HostError::BadCharacter(after.chars().next().unwrap_or(']'))),
            },
        };
    }
    if text.parse::<Ipv6Addr>().is_ok() {
        return Ok((text, None));
    }
    match text.rsplit_once(':') {
        Some((host, port)) => Ok((host, Some(parse_port(port)?))),
        None => Ok((text, None)),
    }
}

fn parse_port(text: &str) -> Result<u16, HostError> {
    match text.parse::<u16>() {
        Ok(port) if port > 0 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(port),
        _ => Err(HostError::Port(text.escape_debug().to_string())),
    }
}

fn parse_pattern(host: &str) -> Result<HostPattern, HostError> {
    if host == "*" {
        return Err(HostError::BareStar);
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(HostPattern::Exact(ip.to_string()));
    }
    match host.strip_prefix("*.") {
        Some(suffix) => Ok(HostPattern::Subdomains(checked_name(suffix)?)),
        None => Ok(HostPattern::Exact(checked_name(host)?)),
    }
}

/// A DNS name, lower-cased, without a trailing dot.
fn checked_name(name: &str) -> Result<String, HostError> {
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return Err(HostError::EmptyName);
    }
    if name.len() > MAX_NAME {
        return Err(HostError::TooLong);
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(HostError::EmptyLabel);
        }
        if label.len() > MAX_LABEL {
            return Err(HostError::LongLabel);
        }
        if label.contains('*') {
            return Err(HostError::MisplacedStar);
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_')))
        {
            return Err(HostError::BadCharacter(c));
        }
    }
    Ok(name.to_ascii_lowercase())
}

/// The form a client's requested host is compared in: lower case, no
/// trailing dot, no IPv6 brackets, IP literals in canonical text. `None`
/// for a name no rule could ever match (empty, bad characters).
pub fn normalize_host(requested: &str) -> Option<String> {
    let bare = requested
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(requested);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Some(ip.to_string());
    }
    checked_name(bare).ok()
}

/// The `hosts:` list of a policy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostList {
    /// Every rule, the presets' entries included.
    pub rules: Vec<HostRule>,
    /// The presets named in `magus.yaml` (`"@crates-io"`), in the order
    /// written, for `sandbox check`; their rules are in `rules` already.
    pub presets: Vec<&'static Preset>,
}

impl HostList {
    /// A list of these rules, named by no preset.
    pub fn of(rules: Vec<HostRule>) -> HostList {
        HostList {
            rules,
            presets: Vec::new(),
        }
    }

    /// Whether a client may reach `requested:port`, judged on the name as
    /// asked (see [`normalize_host`]).
    pub fn permits(&self, requested: &str, port: u16) -> bool {
        let Some(host) = normalize_host(requested) else {
            return false;
        };
        self.rules.iter().any(|r| r.matches(&host, port))
    }

    /// Whether some entry names `requested`, whatever its port.
    pub fn lists_name(&self, requested: &str) -> bool {
        let Some(host) = normalize_host(requested) else {
            return false;
        };
        self.rules.iter().any(|r| {
            let any_port = HostRule {
                pattern: r.pattern.clone(),
                port: None,
            };
            any_port.matches(&host, 0)
        })
    }

    /// The entry that would let a client reach `host:port`, for MGS2011's
    /// fix: the host with the port when one was given.
    pub fn entry_to_add(host: &str, port: u16) -> String {
        match normalize_host(host) {
            Some(h) if h.contains(':') => format!("\"[{h}]:{port}\""),
            Some(h) => format!("\"{h}:{port}\""),
            None => format!("\"{}:{port}\"", host.escape_debug()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> HostRule {
        HostRule::parse(text).unwrap()
    }

    #[test]
    fn entries_parse_into_patterns_and_ports() {
        assert_eq!(
            rule("Crates.IO."),
            HostRule {
                pattern: HostPattern::Exact("crates.io".into()),
                port: None
            }
        );
        assert_eq!(
            rule("*.crates.io:443"),
            HostRule {
                pattern: HostPattern::Subdomains("crates.io".into()),
                port: Some(443)
            }
        );
        assert_eq!(rule("[::1]:8080").to_string(), "[::1]:8080");
        assert_eq!(rule("::1").to_string(), "[::1]");
        assert_eq!(rule("127.0.0.1:80").to_string(), "127.0.0.1:80");
        for text in ["github.com:443", "*.crates.io", "localhost"] {
            assert_eq!(rule(text).to_string(), text);
            assert_eq!(rule(&rule(text).to_string()), rule(text));
        }
    }

    #[test]
    fn malformed_entries_say_why() {
        for (text, want) in [
            ("", HostError::Empty),
            ("https://crates.io", HostError::Scheme("https".into())),
            ("crates.io/api", HostError::Path),
            ("*", HostError::BareStar),
            ("*:443", HostError::BareStar),
            ("a.*.io", HostError::MisplacedStar),
            ("*crates.io", HostError::MisplacedStar),
            ("crates.io:0", HostError::Port("0".into())),
            ("crates.io:65536", HostError::Port("65536".into())),
            ("crates.io:", HostError::Port("".into())),
            ("crates.io:+1", HostError::Port("+1".into())),
            (":443", HostError::EmptyName),
            ("*.", HostError::EmptyName),
            ("a..b", HostError::EmptyLabel),
            ("a b", HostError::BadCharacter(' ')),
        ] {
            assert_eq!(HostRule::parse(text), Err(want), "{text:?}");
        }
    }

    #[test]
    fn subdomain_rules_cover_subdomains_only() {
        let list = HostList::of(vec![rule("*.crates.io"), rule("github.com:443")]);
        assert!(list.permits("static.crates.io", 443));
        assert!(list.permits("A.B.Crates.IO.", 80));
        assert!(!list.permits("crates.io", 443));
        assert!(!list.permits("evilcrates.io", 443));
        assert!(list.permits("github.com", 443));
        assert!(!list.permits("github.com", 22));
        assert!(!list.permits("api.github.com", 443));
        assert!(!list.permits("github.com.evil.net", 443));
    }

    #[test]
    fn ip_literals_match_only_when_listed() {
        let list = HostList::of(vec![rule("localhost"), rule("*.0.1"), rule("[::1]")]);
        assert!(list.permits("localhost", 1));
        assert!(!list.permits("127.0.0.1", 1));
        assert!(list.permits("[::1]", 1));
        assert!(list.permits("0:0::1", 1));
        assert!(!list.permits("", 1));
        assert!(!list.permits("local host", 1));
    }
}

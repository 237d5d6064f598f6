//! Secrets by reference (docs/secrets.md): a spell's `secrets:` entries as
//! written (the raw serde types, with positions) and as validated
//! ([`SecretBinding`]): the variable the spell sees, where magus reads the
//! value, the hosts it may be sent to and the request rules for them.
//! Values never appear here; the canonical text (for the lock fingerprint)
//! holds names, sources, hosts and rules only.

use super::config::{ConfigErrorKind, Position};
use super::hosts::HostRule;
use serde::Deserialize;
use serde_saphyr::Spanned;
use std::fmt;

/// The variables magus itself sets for children of a run with secrets
/// (and the proxy's); a secret may not take one of their names.
pub(crate) const RESERVED_NAMES: [&str; 15] = [
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "PIP_CERT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "PATH",
    "HOME",
    "TMPDIR",
    "MAGUS_SANDBOX_FINGERPRINT",
];

/// The HTTP methods a rule may name.
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// One `secrets:` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSecret {
    pub name: Spanned<String>,
    pub from: Spanned<RawSource>,
    pub hosts: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    pub rules: Option<Vec<Spanned<RawRule>>>,
}

/// `from: {env: VAR}` or `from: {file: PATH}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSource {
    #[serde(default)]
    pub env: Option<Spanned<String>>,
    #[serde(default)]
    pub file: Option<Spanned<String>>,
}

/// `{methods: [GET], paths: ["/repos/*"]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRule {
    #[serde(default)]
    pub methods: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub paths: Option<Vec<Spanned<String>>>,
}

/// Where magus reads a secret's value, before the jail.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecretSource {
    /// A variable of magus's own environment.
    Env(String),
    /// A file, as written (absolute or `~/...`); it must lie outside the
    /// workspace, which is checked when it is read.
    File(String),
}

impl fmt::Display for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::Env(var) => write!(f, "env:{var}"),
            SecretSource::File(path) => write!(f, "file:{path}"),
        }
    }
}

/// One path pattern of a rule: a prefix (`/repos/o/n`: that path and
/// everything beneath it) or a glob (`/repos/*/releases*`: `*` matches any
/// run of characters, `/` included).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathRule {
    Prefix(String),
    Glob(String),
}

impl PathRule {
    /// Whether `path` (no query, no fragment) matches.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            PathRule::Prefix(p) => {
                path == p
                    || p.ends_with('/') && path.starts_with(p.as_str())
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            }
            PathRule::Glob(g) => glob_matches(g.as_bytes(), path.as_bytes()),
        }
    }

    fn text(&self) -> &str {
        match self {
            PathRule::Prefix(p) | PathRule::Glob(p) => p,
        }
    }
}

/// `*` matches any run of bytes; everything else matches itself.
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// One request rule: a request fits it when its method is listed (or none
/// is) and its path matches a listed pattern (or none is).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestRule {
    pub methods: Vec<String>,
    pub paths: Vec<PathRule>,
}

impl RequestRule {
    pub fn permits(&self, method: &str, path: &str) -> bool {
        let method_ok = self.methods.is_empty() || self.methods.iter().any(|m| m == method);
        let path_ok = self.paths.is_empty() || self.paths.iter().any(|p| p.matches(path));
        method_ok && path_ok
    }
}

impl fmt::Display for RequestRule {
    /// `{methods: [GET, POST], paths: ["/repos/*"]}`, as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.methods.is_empty() {
            parts.push(format!("methods: [{}]", self.methods.join(", ")));
        }
        if !self.paths.is_empty() {
            let paths: Vec<String> = self
                .paths
                .iter()
                .map(|p| format!("\"{}\"", p.text()))
                .collect();
            parts.push(format!("paths: [{}]", paths.join(", ")));
        }
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// One validated `secrets:` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SecretBinding {
    /// The variable the spell and its children see (with the placeholder).
    pub name: String,
    pub source: SecretSource,
    /// Where the value may be sent (never empty).
    pub hosts: Vec<HostRule>,
    /// Request rules for those hosts; empty: any request.
    pub rules: Vec<RequestRule>,
    /// Where `name:` is.
    pub at: Position,
}

impl SecretBinding {
    /// Whether the value may go to `host:port`.
    pub fn bound_to(&self, host: &str, port: u16) -> bool {
        self.hosts.iter().any(|r| r.matches(host, port))
    }

    /// `None` when a request fits the rules, else the rules it broke, as
    /// written (for the refusal).
    pub fn refuses(&self, method: &str, path: &str) -> Option<String> {
        if self.rules.is_empty() || self.rules.iter().any(|r| r.permits(method, path)) {
            return None;
        }
        let rules: Vec<String> = self.rules.iter().map(ToString::to_string).collect();
        Some(rules.join(" or "))
    }

    /// One line for the lock fingerprint: name, source, hosts and rules in
    /// a fixed order; never the value.
    pub fn canonical(&self) -> String {
        let mut hosts: Vec<String> = self.hosts.iter().map(ToString::to_string).collect();
        hosts.sort();
        let rules: Vec<String> = self.rules.iter().map(ToString::to_string).collect();
        format!(
            "secret {} from {} hosts [{}] rules [{}]",
            self.name,
            self.source,
            hosts.join(", "),
            rules.join("; ")
        )
    }
}

type Invalid = (Position, ConfigErrorKind);

fn position<T>(spanned: &Spanned<T>) -> Position {
    let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    Position {
        line: clamp(spanned.referenced.line()),
        column: clamp(spanned.referenced.column()),
    }
}

/// A spell's whole `secrets:` list: each entry, and no name twice.
pub(crate) fn validate_secrets(raw: Vec<RawSecret>) -> Result<Vec<SecretBinding>, Invalid> {
    let mut out: Vec<SecretBinding> = Vec::new();
    for entry in raw {
        let binding = validate_secret(entry)?;
        if out.iter().any(|b| b.name == binding.name) {
            return Err((binding.at, ConfigErrorKind::DuplicateSecret(binding.name)));
        }
        out.push(binding);
    }
    Ok(out)
}

/// One `secrets:` entry, checked: a variable name, exactly one source, at
/// least one valid host, and rules of known methods and `/`-paths.
pub(crate) fn validate_secret(raw: RawSecret) -> Result<SecretBinding, Invalid> {
    let at = position(&raw.name);
    let name = raw.name.value;
    if !is_variable_name(&name) || RESERVED_NAMES.contains(&name.as_str()) {
        return Err((at, bad_secret(&name, name_problem(&name))));
    }
    let source = validate_source(raw.from)?;
    let hosts = validate_secret_hosts(raw.hosts)?;
    let rules = raw
        .rules
        .unwrap_or_default()
        .into_iter()
        .map(validate_rule)
        .collect::<Result<_, _>>()?;
    Ok(SecretBinding {
        name,
        source,
        hosts,
        rules,
        at,
    })
}

fn bad_secret(spelled: &str, why: &'static str) -> ConfigErrorKind {
    ConfigErrorKind::BadSecret {
        spelled: spelled.escape_debug().to_string(),
        why,
    }
}

fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn name_problem(name: &str) -> &'static str {
    match is_variable_name(name) {
        true => "magus sets this variable itself for a run with secrets",
        false => {
            "a secret's `name` is a variable name (letters, digits and `_`, not first a digit)"
        }
    }
}

fn validate_source(raw: Spanned<RawSource>) -> Result<SecretSource, Invalid> {
    let at = position(&raw);
    match (raw.value.env, raw.value.file) {
        (Some(var), None) if is_variable_name(&var.value) => Ok(SecretSource::Env(var.value)),
        (Some(var), None) => Err((
            position(&var),
            bad_secret(&var.value, "`env` names a variable of magus's environment"),
        )),
        (None, Some(file)) if file.value.starts_with('/') || file.value.starts_with("~/") => {
            Ok(SecretSource::File(file.value))
        }
        (None, Some(file)) => Err((
            position(&file),
            bad_secret(
                &file.value,
                "`file` is an absolute path or `~/...` (outside the workspace)",
            ),
        )),
        _ => Err((
            at,
            bad_secret(
                "from",
                "`from` has exactly one of `env: VAR` or `file: PATH`",
            ),
        )),
    }
}

fn validate_secret_hosts(raw: Spanned<Vec<Spanned<String>>>) -> Result<Vec<HostRule>, Invalid> {
    if raw.value.is_empty() {
        return Err((position(&raw), ConfigErrorKind::NoHosts));
    }
    let mut rules = Vec::new();
    for h in &raw.value {
        let rule = HostRule::parse(&h.value).map_err(|problem| {
            let spelled = h.value.escape_debug().to_string();
            (position(h), ConfigErrorKind::BadHost { spelled, problem })
        })?;
        rules.push(rule);
    }
    rules.sort();
    rules.dedup();
    Ok(rules)
}

fn validate_rule(raw: Spanned<RawRule>) -> Result<RequestRule, Invalid> {
    let at = position(&raw);
    let methods = raw.value.methods.unwrap_or_default();
    let paths = raw.value.paths.unwrap_or_default();
    if methods.is_empty() && paths.is_empty() {
        return Err((
            at,
            bad_secret("rules", "a rule names `methods`, `paths` or both"),
        ));
    }
    let mut rule = RequestRule {
        methods: Vec::new(),
        paths: Vec::new(),
    };
    for m in methods {
        let upper = m.value.to_ascii_uppercase();
        if !METHODS.contains(&upper.as_str()) {
            let why = "a method is one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";
            return Err((position(&m), bad_secret(&m.value, why)));
        }
        rule.methods.push(upper);
    }
    for p in paths {
        rule.paths.push(validate_path(&p)?);
    }
    Ok(rule)
}

fn validate_path(raw: &Spanned<String>) -> Result<PathRule, Invalid> {
    let text = &raw.value;
    let why = if !text.starts_with('/') {
        Some("a path starts with `/`")
    } else if text.contains(['?', '#']) || text.chars().any(|c| c.is_whitespace()) {
        Some("a path has no query, fragment or spaces")
    } else if text.split('/').any(|s| s == "." || s == "..") {
        Some("a path has no `.` or `..` segment")
    } else {
        None
    };
    if let Some(why) = why {
        return Err((position(raw), bad_secret(text, why)));
    }
    Ok(match text.contains('*') {
        true => PathRule::Glob(text.clone()),
        false => PathRule::Prefix(text.clone()),
    })
}

/// A binding for unit tests elsewhere: `name` from `env: name`, bound to
/// `host`, no rules.
#[cfg(all(test, kernel_layer))]
pub(crate) fn tests_binding(name: &str, host: &str) -> SecretBinding {
    SecretBinding {
        name: name.to_string(),
        source: SecretSource::Env(name.to_string()),
        hosts: vec![HostRule::parse(host).expect("host")],
        rules: Vec::new(),
        at: Position { line: 1, column: 1 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<SecretBinding, Invalid> {
        let raw: RawSecret = serde_saphyr::from_str(yaml).expect("yaml");
        validate_secret(raw)
    }

    const GOOD: &str = "name: GITHUB_TOKEN\nfrom: {env: GH_TOKEN}\nhosts: [api.github.com]\nrules: [{methods: [get, POST], paths: [\"/repos/o/n/releases*\", /user]}]\n";

    #[test]
    fn a_full_entry_is_validated_and_its_canonical_text_has_no_value() {
        let b = parse(GOOD).expect("valid");
        assert_eq!(b.name, "GITHUB_TOKEN");
        assert_eq!(b.source, SecretSource::Env("GH_TOKEN".into()));
        assert_eq!(b.rules[0].methods, ["GET", "POST"]);
        assert_eq!(
            b.canonical(),
            "secret GITHUB_TOKEN from env:GH_TOKEN hosts [api.github.com] rules [{methods: [GET, POST], paths: [\"/repos/o/n/releases*\", \"/user\"]}]"
        );
        assert_eq!(b.at, Position { line: 1, column: 7 });
    }

    #[test]
    fn rules_decide_by_method_and_path() {
        let b = parse(GOOD).expect("valid");
        assert_eq!(b.refuses("GET", "/repos/o/n/releases/1"), None);
        assert_eq!(b.refuses("POST", "/user"), None);
        assert_eq!(b.refuses("GET", "/user/keys"), None);
        assert!(b.refuses("GET", "/users").is_some());
        assert!(b.refuses("DELETE", "/user").is_some());
        assert!(b.refuses("GET", "/repos/o/other").is_some());
    }

    #[test]
    fn globs_match_any_run_including_slashes() {
        let g = PathRule::Glob("/a/*/c*".into());
        assert!(g.matches("/a/b/c"));
        assert!(g.matches("/a/b/x/cde"));
        assert!(!g.matches("/a/b"));
        assert!(!g.matches("/x/b/c"));
    }

    #[test]
    fn bad_entries_are_located_errors() {
        let cases = [
            ("name: 1X\nfrom: {env: A}\nhosts: [a.b]\n", (1, 7)),
            ("name: PATH\nfrom: {env: A}\nhosts: [a.b]\n", (1, 7)),
            ("name: X\nfrom: {}\nhosts: [a.b]\n", (2, 7)),
            ("name: X\nfrom: {env: A, file: /f}\nhosts: [a.b]\n", (2, 7)),
            ("name: X\nfrom: {file: rel/f}\nhosts: [a.b]\n", (2, 14)),
            ("name: X\nfrom: {env: A}\nhosts: []\n", (3, 8)),
            ("name: X\nfrom: {env: A}\nhosts: [\"http://a.b\"]\n", (3, 9)),
            (
                "name: X\nfrom: {env: A}\nhosts: [a.b]\nrules: [{}]\n",
                (4, 9),
            ),
            (
                "name: X\nfrom: {env: A}\nhosts: [a.b]\nrules: [{methods: [FETCH]}]\n",
                (4, 20),
            ),
            (
                "name: X\nfrom: {env: A}\nhosts: [a.b]\nrules: [{paths: [\"/a/../b\"]}]\n",
                (4, 18),
            ),
        ];
        for (yaml, (line, column)) in cases {
            let (at, kind) = parse(yaml).expect_err(yaml);
            assert_eq!((at.line, at.column), (line, column), "{yaml}: {kind}");
        }
    }

    #[test]
    fn unknown_keys_are_refused_by_the_schema() {
        let yaml = "name: X\nfrom: {env: A}\nhosts: [a.b]\nvalue: leaked\n";
        assert!(serde_saphyr::from_str::<RawSecret>(yaml).is_err());
    }

    #[test]
    fn a_name_twice_is_an_error() {
        let one = "name: X\nfrom: {env: A}\nhosts: [a.b]\n";
        let raws = vec![
            serde_saphyr::from_str::<RawSecret>(one).expect("yaml"),
            serde_saphyr::from_str::<RawSecret>(one).expect("yaml"),
        ];
        let (_, kind) = validate_secrets(raws).expect_err("duplicate");
        assert!(matches!(kind, ConfigErrorKind::DuplicateSecret(n) if n == "X"));
    }
}

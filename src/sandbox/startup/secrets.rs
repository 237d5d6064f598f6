//! `magus run`'s part of secrets by reference (docs/secrets.md): refuse a
//! spell with `secrets:` where the kernel layer cannot force its traffic
//! through the proxy, read each value before the jail (from magus's own
//! environment or a file outside the spell's view), give children the
//! placeholders and the per-run CA, and hand the values to the proxy only.

use crate::diag::Diagnostic;
use crate::policy::{lookup, Grant, Network, Policy, SandboxState, SecretBinding, SecretSource};
use crate::proxy::vault::Vault;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A run's secrets, ready before the jail: the vault for the proxy, the
/// placeholders and CA bundle for children.
pub(crate) struct Prepared {
    pub vault: Arc<Vault>,
    pub placeholders: Vec<(String, String)>,
    pub bundle: String,
}

/// Reads the values and makes the vault (placeholders and per-run CA).
pub(crate) fn prepare(
    policy: &Policy,
    env: &[(OsString, OsString)],
) -> Result<Prepared, Box<Diagnostic>> {
    let values = read_values(policy, env)?;
    let roots = lookup(env, "SSL_CERT_FILE").map(PathBuf::from);
    let vault = Vault::new(values, roots).map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot prepare the secrets: {e}"
        )))
    })?;
    Ok(Prepared {
        bundle: bundle(vault.authority.cert_pem(), env),
        placeholders: vault.child_vars(),
        vault: Arc::new(vault),
    })
}

/// The largest secret file magus reads.
const MAX_SECRET_FILE: u64 = 64 * 1024;

/// Variables magus itself reads for a run with secrets (kept for magus,
/// never given to children, through the scrubbing re-exec): the value
/// sources and the roots to verify bound hosts against.
pub(crate) fn kept_for_magus(policy: &Policy) -> Vec<String> {
    if policy.secrets().is_empty() {
        return Vec::new();
    }
    let mut names: Vec<String> = policy
        .secrets()
        .iter()
        .filter_map(|s| match &s.source {
            SecretSource::Env(var) => Some(var.clone()),
            SecretSource::File(_) => None,
        })
        .collect();
    names.extend(["SSL_CERT_FILE".to_string(), "SSL_CERT_DIR".to_string()]);
    names
}

/// The CA variables children get, all naming the bundle.
pub(crate) const CA_VARS: [&str; 7] = [
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "PIP_CERT",
];

/// Where the bundle is written in the jail's private `/tmp`.
const BUNDLE_NAME: &str = "magus-secrets-ca.pem";

/// Why a spell with secrets cannot run here.
pub(crate) fn unsupported(why: &str) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(format!("this spell declares `secrets:`, which cannot be kept from it here: {why}"))
            .with_note("magus hands a secret only to its proxy, outside the sandbox, which is reachable only where children live in a network namespace of their own; without it a child could reach the network around the proxy, and magus never falls back to passing the value")
            .with_help("run it on Linux with magus's kernel layer (the default `kernel` feature) and user namespaces allowed (README, \"User namespaces\"), or remove the spell's `secrets:`"),
    )
}

/// The secrets' values, read by magus before the jail, in the order of
/// the policy's bindings; their `env` sources are then wiped from this
/// process's environment block.
pub(crate) fn read_values(
    policy: &Policy,
    env: &[(OsString, OsString)],
) -> Result<Vec<(SecretBinding, Vec<u8>)>, Box<Diagnostic>> {
    if !matches!(policy.network(), Network::Hosts(_)) {
        return Err(Box::new(
            Diagnostic::error("a spell with `secrets:` needs `network: {hosts: [...]}`")
                .with_note("the value reaches its hosts only through magus's host-filtering proxy")
                .with_help("give the spell's section `network: {hosts: [...]}` listing at least the secrets' hosts (docs/secrets.md)"),
        ));
    }
    let mut out = Vec::new();
    for binding in policy.secrets() {
        let value = match &binding.source {
            SecretSource::Env(var) => from_env(binding, var, env)?,
            SecretSource::File(path) => from_file(binding, path, policy, env)?,
        };
        if value.iter().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(missing(binding, BROKEN_LINE.to_string()));
        }
        out.push((binding.clone(), value));
    }
    for binding in policy.secrets() {
        if let SecretSource::Env(var) = &binding.source {
            wipe_environ_value(var);
        }
    }
    Ok(out)
}

/// Why a value with a line break (or NUL) is refused: the proxy puts a
/// value only in request headers, where a line break would end the header
/// early and send the rest of the value as a line of its own (a header of
/// another name, or the head's end), which a host can quote back in an
/// error page, past the mask on whole values.
const BROKEN_LINE: &str = "its value holds a line break or a NUL byte (a trailing newline is dropped), which no request header can carry: magus puts a secret only in headers";

fn missing(binding: &SecretBinding, what: String) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(format!("cannot read the secret `{}`: {what}", binding.name)).with_help(
            "set it where magus is started (never in magus.yaml), or change the secret's `from:`",
        ),
    )
}

fn from_env(
    binding: &SecretBinding,
    var: &str,
    env: &[(OsString, OsString)],
) -> Result<Vec<u8>, Box<Diagnostic>> {
    use std::os::unix::ffi::OsStrExt;
    match lookup(env, var) {
        Some(v) if !v.is_empty() => Ok(v.as_bytes().to_vec()),
        _ => Err(missing(
            binding,
            format!("`{var}` is not set in magus's environment"),
        )),
    }
}

fn from_file(
    binding: &SecretBinding,
    spelled: &str,
    policy: &Policy,
    env: &[(OsString, OsString)],
) -> Result<Vec<u8>, Box<Diagnostic>> {
    let path = match spelled.strip_prefix("~/") {
        Some(rest) => match lookup(env, "HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => return Err(missing(binding, "`HOME` is not set to expand `~`".into())),
        },
        None => PathBuf::from(spelled),
    };
    let real = std::fs::canonicalize(&path)
        .map_err(|e| missing(binding, format!("{}: {e}", path.display())))?;
    if real.starts_with(policy.workspace()) {
        return Err(missing(
            binding,
            format!(
                "{} lies inside the workspace, where spells can read it",
                real.display()
            ),
        ));
    }
    if let Some(grant) = showing(policy, &real) {
        return Err(missing(
            binding,
            format!(
                "{} lies under `{}` ({}), which the spell's view shows: the spell can read it",
                real.display(),
                grant.path.display(),
                grant.source
            ),
        ));
    }
    let bytes =
        read_bounded(&real).map_err(|e| missing(binding, format!("{}: {e}", real.display())))?;
    let trimmed = bytes.trim_ascii_end().to_vec();
    if trimmed.is_empty() {
        return Err(missing(binding, format!("{} is empty", real.display())));
    }
    Ok(trimmed)
}

/// The grant under which the spell's view shows `real`, if one does: a
/// value in a file the spell can read would reach it around the proxy
/// (a `sandbox.allow` entry over `~/.config/gh`, a built-in such as
/// `/opt`). The run's private `/tmp` and `/dev/shm` show nothing of the
/// host's, and a credential store the jail hides is not shown.
fn showing<'p>(policy: &'p Policy, real: &Path) -> Option<&'p Grant> {
    if policy.hidden().iter().any(|h| real.starts_with(h)) {
        return None;
    }
    policy
        .grants()
        .iter()
        .filter(|g| real.starts_with(&g.path) && !g.is_private_per_run())
        .max_by_key(|g| g.path.components().count())
}

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_SECRET_FILE + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SECRET_FILE {
        return Err(std::io::Error::other("larger than 64 KiB"));
    }
    Ok(bytes)
}

/// Overwrites `NAME`'s value in this process's environment block, in
/// place: `/proc/PID/environ` reads that memory, and a copy `std` made
/// earlier is not the one the kernel shows.
fn wipe_environ_value(name: &str) {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    let prefix = format!("{name}=");
    // SAFETY: magus is single-threaded here (before the jail); `environ`
    // is a NULL-terminated array of NUL-terminated strings, each written
    // only within its own length.
    unsafe {
        let mut entry = environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            if text.starts_with(prefix.as_bytes()) {
                let value = (*entry).add(prefix.len());
                let len = text.len() - prefix.len();
                std::ptr::write_bytes(value, b'x', len);
            }
            entry = entry.add(1);
        }
    }
}

/// The bundle children trust: the per-run CA, then the roots magus
/// trusts (its `SSL_CERT_FILE`, else the system's bundle), so that
/// clients reading one file still reach unbound hosts.
pub(crate) fn bundle(ca_pem: &str, env: &[(OsString, OsString)]) -> String {
    let roots = lookup(env, "SSL_CERT_FILE")
        .map(PathBuf::from)
        .into_iter()
        .chain(SYSTEM_BUNDLES.iter().map(PathBuf::from))
        .find_map(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    format!("{ca_pem}\n{roots}")
}

/// Where distributions keep the system's roots as one file.
const SYSTEM_BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// Writes the bundle into the jail's private `/tmp` (magus is in the
/// jail) and points children at it; sets each secret's variable to its
/// placeholder and keeps its source variable from them.
pub(crate) fn give_children(
    policy: &Policy,
    placeholders: &[(String, String)],
    bundle: &str,
    child_env: &mut crate::policy::ChildEnv,
) -> Result<(), Box<Diagnostic>> {
    if policy.state() != SandboxState::On {
        return Ok(());
    }
    let path = Path::new("/tmp").join(BUNDLE_NAME);
    std::fs::write(&path, bundle).map_err(|e| {
        Box::new(Diagnostic::error(format!(
            "cannot write the secrets' CA bundle to {}: {e}",
            path.display()
        )))
    })?;
    let sources: Vec<&str> = policy
        .secrets()
        .iter()
        .filter_map(|s| match &s.source {
            SecretSource::Env(var) => Some(var.as_str()),
            SecretSource::File(_) => None,
        })
        .collect();
    let ours = |k: &OsString| {
        let k = k.to_string_lossy();
        CA_VARS.contains(&k.as_ref())
            || sources.contains(&k.as_ref())
            || placeholders.iter().any(|(name, _)| *name == k)
    };
    child_env.vars.retain(|(k, _)| !ours(k));
    for var in CA_VARS {
        child_env
            .vars
            .push((var.into(), path.clone().into_os_string()));
    }
    for (name, placeholder) in placeholders {
        child_env.vars.push((name.into(), placeholder.into()));
    }
    let names: Vec<&str> = placeholders.iter().map(|(n, _)| n.as_str()).collect();
    child_env
        .stripped
        .retain(|n| !CA_VARS.contains(&n.as_str()) && !names.contains(&n.as_str()));
    Ok(())
}

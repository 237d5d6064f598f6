//! What the proxy holds for secrets by reference (docs/secrets.md): each
//! secret's binding, its per-run placeholder and its real value, and the
//! per-run certificate authority (made in memory with `rcgen`) that signs
//! a leaf certificate for each bound host the proxy terminates TLS for.
//! Children get only the placeholders and the CA's certificate.

use crate::policy::secrets::SecretBinding;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::fmt;
use std::path::PathBuf;

/// What every placeholder starts with.
pub(crate) const PLACEHOLDER_PREFIX: &str = "magus-secret-";
/// Random characters after the prefix: 40 of a 32-letter alphabet, 200 bits.
const PLACEHOLDER_RANDOM: usize = 40;
/// The alphabet (RFC 4648 base32, lower case): a power of two, so every
/// character is equally likely, and nothing a shell or URL must quote.
const ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Why the secrets cannot be prepared.
#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("cannot read random bytes for a placeholder: {0}")]
    Random(#[source] std::io::Error),
    #[error("cannot make the per-run certificate authority: {0}")]
    Authority(#[from] rcgen::Error),
}

/// One secret in the proxy: its binding, placeholder and value.
pub struct Held {
    pub binding: SecretBinding,
    pub placeholder: String,
    value: Vec<u8>,
}

impl Held {
    pub fn value(&self) -> &[u8] {
        &self.value
    }
}

impl fmt::Debug for Held {
    /// Never the value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Held")
            .field("name", &self.binding.name)
            .field("placeholder", &self.placeholder)
            .finish_non_exhaustive()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        wipe(&mut self.value);
    }
}

/// Overwrites `bytes` with zeros in a way the optimiser keeps.
fn wipe(bytes: &mut [u8]) {
    for b in bytes.iter_mut() {
        // SAFETY: `b` is a valid, aligned, exclusive reference.
        unsafe { std::ptr::write_volatile(b, 0) };
    }
}

/// The per-run certificate authority: its certificate (for children) and
/// its key (for signing leaves, in the proxy only).
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    cert_der: CertificateDer<'static>,
    cert_pem: String,
}

impl fmt::Debug for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Authority { .. }")
    }
}

impl Authority {
    /// A new CA. rcgen's default validity is kept: the key exists only
    /// in memory for one run, and only that run's children trust it.
    pub fn new() -> Result<Authority, VaultError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, "magus per-run secrets CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(Authority {
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA's certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A leaf certificate for `host` (a name or IP literal) and its key.
    pub fn leaf(
        &self,
        host: &str,
    ) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), VaultError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![host.to_string()])?;
        params.distinguished_name.push(DnType::CommonName, host);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params.signed_by(&key, &self.issuer)?;
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok((vec![cert.der().clone(), self.cert_der.clone()], key_der))
    }
}

/// Everything the proxy needs for a run's secrets.
#[derive(Debug)]
pub struct Vault {
    pub secrets: Vec<Held>,
    pub authority: Authority,
    /// The roots file magus was started with (`SSL_CERT_FILE`), read by
    /// the proxy before it confines itself; `None`: the system's roots.
    pub roots_file: Option<PathBuf>,
    /// The search for [`PLACEHOLDER_PREFIX`], built once: a body is
    /// searched record by record, and building it costs a sixth of a
    /// 16 KiB record's search.
    prefix: memchr::memmem::Finder<'static>,
}

impl Vault {
    /// A placeholder for each binding, and a new CA. `values` are in the
    /// order of `bindings`.
    pub fn new(
        bindings: Vec<(SecretBinding, Vec<u8>)>,
        roots_file: Option<PathBuf>,
    ) -> Result<Vault, VaultError> {
        let mut secrets = Vec::with_capacity(bindings.len());
        for (binding, value) in bindings {
            secrets.push(Held {
                binding,
                placeholder: placeholder()?,
                value,
            });
        }
        Ok(Vault {
            secrets,
            authority: Authority::new()?,
            roots_file,
            prefix: memchr::memmem::Finder::new(PLACEHOLDER_PREFIX),
        })
    }

    /// Whether some secret is bound to `host:port` (its TLS is terminated).
    pub fn binds(&self, host: &str, port: u16) -> bool {
        self.secrets.iter().any(|s| s.binding.bound_to(host, port))
    }

    /// The first secret whose placeholder occurs in `bytes`. Every
    /// placeholder starts with [`PLACEHOLDER_PREFIX`]: one vectorised
    /// search for it, then a comparison per secret where it occurs, keeps
    /// a body's scan at memory speed whatever the number of secrets.
    pub fn found_in(&self, bytes: &[u8]) -> Option<&Held> {
        self.prefix.find_iter(bytes).find_map(|at| {
            self.secrets
                .iter()
                .find(|s| bytes[at..].starts_with(s.placeholder.as_bytes()))
        })
    }

    /// The variables children see: each secret's name and placeholder.
    pub fn child_vars(&self) -> Vec<(String, String)> {
        self.secrets
            .iter()
            .map(|s| (s.binding.name.clone(), s.placeholder.clone()))
            .collect()
    }

    /// Forgets the values (magus proper's copy, once the proxy has its
    /// own): placeholders and the CA certificate stay.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    pub fn forget_values(&mut self) {
        for s in &mut self.secrets {
            wipe(&mut s.value);
            s.value.clear();
        }
    }
}

/// `magus-secret-` and 40 random characters.
pub(crate) fn placeholder() -> Result<String, VaultError> {
    let mut random = [0u8; PLACEHOLDER_RANDOM];
    fill_random(&mut random).map_err(VaultError::Random)?;
    let tail: String = random
        .iter()
        .map(|b| ALPHABET[usize::from(b % 32)] as char)
        .collect();
    Ok(format!("{PLACEHOLDER_PREFIX}{tail}"))
}

fn fill_random(buf: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: writes at most `rest.len()` bytes into `rest`.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        match n {
            n if n > 0 => filled += n.unsigned_abs(),
            _ => {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// Whether `needle` occurs in `haystack`.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_have_the_shape_and_differ() {
        let a = placeholder().expect("random");
        let b = placeholder().expect("random");
        assert_ne!(a, b);
        assert_eq!(a.len(), PLACEHOLDER_PREFIX.len() + PLACEHOLDER_RANDOM);
        assert!(a.starts_with(PLACEHOLDER_PREFIX));
        assert!(a[PLACEHOLDER_PREFIX.len()..]
            .bytes()
            .all(|c| ALPHABET.contains(&c)));
    }

    #[test]
    fn the_debug_form_never_shows_the_value() {
        let held = Held {
            binding: crate::policy::secrets::tests_binding("T", "a.example"),
            placeholder: "magus-secret-x".into(),
            value: b"hunter2-real".to_vec(),
        };
        assert!(!format!("{held:?}").contains("hunter2"));
    }
}

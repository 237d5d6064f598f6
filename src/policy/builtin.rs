//! The default allowlist (docs/configuration.md): what every sandboxed run may touch
//! besides the workspace. Each entry says why it is there; `sandbox check`
//! prints that reason. Paths that do not exist on this machine are skipped
//! by resolution, quietly.
//!
//! From `/etc` only what ordinary programs read is granted. Left out on
//! purpose: `shadow`, `gshadow`, `sudoers`, `ssh` (secrets or their policy);
//! `ssl/private` and `pki/tls/private` (server keys: hence `ssl/certs`, not
//! `ssl`); `environment` and `default` (service settings that may hold
//! credentials, and programs do not read them); `ld.so.preload`.

use super::grant::Mode;

/// One fixed default grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Builtin {
    pub path: &'static str,
    pub mode: Mode,
    pub why: &'static str,
}

const fn rw(path: &'static str, why: &'static str) -> Builtin {
    Builtin {
        path,
        mode: Mode::Rw,
        why,
    }
}

const fn ro(path: &'static str, why: &'static str) -> Builtin {
    Builtin {
        path,
        mode: Mode::Ro,
        why,
    }
}

/// Why `$TMPDIR` is granted.
pub(crate) const TMPDIR_WHY: &str = "$TMPDIR";
/// Why `/dev/pts` is granted (a `devpts` of the run's own in the jail;
/// without one, only the run's own terminals: `enforce::terminal`).
pub(crate) const PSEUDO_TERMINALS_WHY: &str = "pseudo-terminals";
/// Why magus's cache directory is granted.
pub(crate) const CACHE_WHY: &str = "magus cache";

/// Why a run without a jail of its own is granted the directory made for
/// it in place of the host's `/tmp`, `/dev/shm` and `$TMPDIR`
/// (`Policy::without_jail`).
pub(crate) const RUN_TEMP_WHY: &str = "this run's temporary directory";

/// The built-in `rw` grants the jail gives a fresh tmpfs of the run's
/// own, never the host's directory.
pub(crate) const PRIVATE_TMPFS: [&str; 3] = ["temporary files", "shared memory", TMPDIR_WHY];

/// The built-in `rw` grants the jail replaces with a filesystem of the
/// run's own ([`PRIVATE_TMPFS`], and its own devpts): in the view nothing
/// under them is the host's, so nothing a child writes there outlives the
/// run, and a path the host has under them is not "a place children
/// write".
pub(super) const PRIVATE_PER_RUN: [&str; 4] = [
    PRIVATE_TMPFS[0],
    PRIVATE_TMPFS[1],
    PRIVATE_TMPFS[2],
    PSEUDO_TERMINALS_WHY,
];

/// Fixed `rw` defaults (the workspace, `$TMPDIR` and the cache are added by
/// resolution because they depend on the machine).
pub(crate) const BUILTIN_RW: [Builtin; 5] = [
    rw("/tmp", "temporary files"),
    rw("/dev/null", "null device"),
    rw("/dev/tty", "controlling terminal"),
    rw("/dev/pts", PSEUDO_TERMINALS_WHY),
    rw("/dev/shm", "shared memory"),
];

const SYSTEM: &str = "system code";
const LOADER: &str = "dynamic loader";
const USERS: &str = "user and group names";
const NAMES: &str = "name resolution";
const TIME: &str = "time zone";
const TLS: &str = "TLS certificates";
const LOCALE: &str = "locale";
const OS: &str = "OS identification";
const TERMINAL: &str = "terminal settings";

/// Fixed `ro` (read + execute) defaults.
pub(crate) const BUILTIN_RO: [Builtin; 44] = [
    ro("/usr", SYSTEM),
    ro("/bin", SYSTEM),
    ro("/sbin", SYSTEM),
    ro("/lib", SYSTEM),
    ro("/lib32", SYSTEM),
    ro("/lib64", SYSTEM),
    ro("/opt", "optional software"),
    ro("/nix/store", "Nix store"),
    ro("/proc", "process information"),
    ro("/sys", "kernel information"),
    ro("/dev/zero", "zero device"),
    ro("/dev/random", "random numbers"),
    ro("/dev/urandom", "random numbers"),
    ro("/etc/ld.so.cache", LOADER),
    ro("/etc/ld.so.conf", LOADER),
    ro("/etc/ld.so.conf.d", LOADER),
    ro("/etc/passwd", USERS),
    ro("/etc/group", USERS),
    ro("/etc/nsswitch.conf", NAMES),
    ro("/etc/hosts", NAMES),
    ro("/etc/host.conf", NAMES),
    ro("/etc/resolv.conf", NAMES),
    ro("/etc/gai.conf", NAMES),
    ro("/etc/services", NAMES),
    ro("/etc/protocols", NAMES),
    ro("/etc/localtime", TIME),
    ro("/etc/timezone", TIME),
    ro("/etc/ssl/certs", TLS),
    ro("/etc/ssl/cert.pem", TLS),
    ro("/etc/ssl/openssl.cnf", TLS),
    ro("/etc/ca-certificates", TLS),
    ro("/etc/ca-certificates.conf", TLS),
    ro("/etc/pki/ca-trust", TLS),
    ro("/etc/pki/tls/certs", TLS),
    ro("/etc/alternatives", "alternative programs"),
    ro("/etc/mime.types", "MIME types"),
    ro("/etc/locale.alias", LOCALE),
    ro("/etc/locale.conf", LOCALE),
    ro("/etc/os-release", OS),
    ro("/etc/lsb-release", OS),
    ro("/etc/debian_version", OS),
    ro("/etc/gitconfig", "system git settings"),
    ro("/etc/inputrc", TERMINAL),
    ro("/etc/terminfo", TERMINAL),
];

/// Windows' fixed `rw` defaults: none. The null device is a reserved name
/// the path model refuses (`NUL`), and the temporary directory and the
/// cache are the machine's (`%TEMP%`, `%LOCALAPPDATA%\magus`).
#[cfg(any(windows, test))]
pub(crate) const WINDOWS_RW: [Builtin; 0] = [];

/// Windows' fixed `ro` (read + execute) defaults, each below a variable of
/// the environment magus started with, as `/usr` and `/opt` are on Unix:
/// the system's programs and libraries and installed software. Left out
/// on purpose: `%SystemRoot%` itself (`Panther` and other set-up logs can
/// hold passwords), `%ProgramData%` (services' data and keys), and every
/// part of the user's profile.
#[cfg(any(windows, test))]
pub(crate) const WINDOWS_RO: [Builtin; 4] = [
    ro("%SystemRoot%\\System32", SYSTEM),
    ro("%SystemRoot%\\SysWOW64", "32-bit system code"),
    ro("%ProgramFiles%", "installed programs"),
    ro("%ProgramFiles(x86)%", "installed 32-bit programs"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_never_builtin() {
        let forbidden = [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/sudoers",
            "/etc/ssh",
            "/etc/ssl/private",
            "/etc",
            "/",
            "/root",
            "/home",
        ];
        for b in BUILTIN_RW.iter().chain(BUILTIN_RO.iter()) {
            for f in forbidden {
                let p = std::path::Path::new(f);
                assert!(!p.starts_with(b.path), "{} covers {f}", b.path);
            }
        }
    }

    /// Windows' built-ins name no profile, no whole Windows directory and
    /// no service data, and none is writable.
    #[test]
    fn windows_builtins_expose_no_profile() {
        assert!(WINDOWS_RW.is_empty());
        for b in WINDOWS_RO {
            let upper = b.path.to_ascii_uppercase();
            assert_eq!(b.mode, Mode::Ro, "{}", b.path);
            assert!(upper.starts_with('%'), "{}: below a variable", b.path);
            for f in [
                "%USERPROFILE%",
                "%APPDATA%",
                "%LOCALAPPDATA%",
                "%PROGRAMDATA%",
                "%HOMEDRIVE%",
            ] {
                assert!(!upper.starts_with(f), "{} is below {f}", b.path);
            }
            assert_ne!(upper, "%SYSTEMROOT%", "the whole Windows directory");
        }
    }
}

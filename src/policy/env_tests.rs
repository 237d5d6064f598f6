//! The child environment carries exactly the allowlisted variables; secrets
//! are stripped, recorded by name only, and the daemon socket is withheld
//! even when passthrough tries to re-admit it.

use crate::policy::{ChildEnv, DaemonSocket, EnvPattern};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

const SECRET: &str = "s3cr3t-value-never-shown";

fn planted() -> Vec<(OsString, OsString)> {
    let pairs = [
        ("HOME", "/home/u"),
        ("PATH", "/usr/bin:/bin"),
        ("USER", "u"),
        ("LOGNAME", "u"),
        ("LANG", "C.UTF-8"),
        ("LANGUAGE", "en"),
        ("LC_ALL", "C"),
        ("LC_TIME", "C"),
        ("TERM", "xterm"),
        ("COLORTERM", "truecolor"),
        ("NO_COLOR", "1"),
        ("COLUMNS", "80"),
        ("LINES", "24"),
        ("MAGUS_SANDBOX_FINGERPRINT", "abc"),
        ("MAGUS_DAEMON_SOCKET", SECRET),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_ACCESS_KEY_ID", SECRET),
        ("GITHUB_TOKEN", SECRET),
        ("VAULT_TOKEN", SECRET),
        ("OP_SESSION_x", SECRET),
        ("NPM_TOKEN", SECRET),
        ("ANTHROPIC_API_KEY", SECRET),
        ("GOPATH", "/go"),
        ("MISE_DATA_DIR", "/mise"),
        ("MISE_SHIMS", "/mise/shims"),
        ("MISE", SECRET),
        ("XMISE_A", SECRET),
        ("LD_PRELOAD", SECRET),
        ("PATH", "/second/path/ignored"),
    ];
    let mut env: Vec<(OsString, OsString)> =
        pairs.iter().map(|(n, v)| (n.into(), v.into())).collect();
    env.push((OsString::from_vec(b"BAD\xffNAME".to_vec()), SECRET.into()));
    env
}

fn passthrough() -> Vec<EnvPattern> {
    ["GOPATH", "MISE_*", "MAGUS_DAEMON_SOCKET"]
        .iter()
        .map(|p| EnvPattern::parse(p).unwrap())
        .collect()
}

#[test]
fn child_gets_exactly_the_allowlist() {
    let child = ChildEnv::build(&planted(), &passthrough());
    let names: Vec<String> = child
        .vars
        .iter()
        .map(|(n, _)| n.to_string_lossy().into_owned())
        .collect();
    let want = [
        "HOME",
        "PATH",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_TIME",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "COLUMNS",
        "LINES",
        "MAGUS_SANDBOX_FINGERPRINT",
        "GOPATH",
        "MISE_DATA_DIR",
        "MISE_SHIMS",
    ];
    assert_eq!(names, want);
    let path = child.vars.iter().find(|(n, _)| n == "PATH").unwrap();
    assert_eq!(path.1, "/usr/bin:/bin", "the first PATH wins");
    for (_, value) in &child.vars {
        assert_ne!(value, SECRET);
    }
}

#[test]
fn stripped_holds_sorted_names_and_no_values() {
    let child = ChildEnv::build(&planted(), &passthrough());
    let want = [
        "ANTHROPIC_API_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "BAD\u{fffd}NAME",
        "GITHUB_TOKEN",
        "LD_PRELOAD",
        "MISE",
        "NPM_TOKEN",
        "OP_SESSION_x",
        "VAULT_TOKEN",
        "XMISE_A",
    ];
    assert_eq!(child.stripped, want);
    let vars = format!("{:?}", child.vars);
    let reported = format!("{:?}{:?}", child.stripped, child.diagnostics());
    assert!(
        !vars.contains(SECRET),
        "a secret value reached the child: {vars}"
    );
    assert!(
        !reported.contains(SECRET),
        "a secret value was reported: {reported}"
    );
}

#[test]
fn daemon_socket_is_withheld_even_from_passthrough() {
    let child = ChildEnv::build(&planted(), &passthrough());
    assert_eq!(child.daemon_socket, DaemonSocket::Withheld);
    assert!(child.daemon_socket_withheld());
    assert!(!child.vars.iter().any(|(n, _)| n == "MAGUS_DAEMON_SOCKET"));
    assert!(!child.stripped.iter().any(|n| n == "MAGUS_DAEMON_SOCKET"));
    let codes: Vec<String> = child
        .diagnostics()
        .iter()
        .filter_map(|d| d.code.map(|c| c.to_string()))
        .collect();
    assert_eq!(codes, ["MGS2003", "MGS2008"]);
    let clean = ChildEnv::build(&[("HOME".into(), "/h".into())], &[]);
    assert_eq!(clean.daemon_socket, DaemonSocket::Absent);
    assert!(clean.diagnostics().is_empty());
}

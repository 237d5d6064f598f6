//! `network.hosts` presets (`"@crates-io"`, `"@pypi"`, `"@npm"`,
//! `"@github"`) through the real `magus` binary, as root and as uid 65534,
//! with and without the children's network namespace. In a network and
//! mount namespace of the test's own, every registry name is `127.0.0.1`
//! (`/etc/hosts`), where a server stands in for the registries on port
//! 443: a child reaches exactly the hosts its presets name, and nothing
//! else. Also: `sandbox check` shows presets expanded, the lock pins their
//! hosts, and an unknown or unquoted preset is an error that says the fix.
//! No traffic leaves the namespace's loopback.

mod support;

use std::path::Path;
use std::process::Command;
use support::{can_switch_user, capture, open_to_everyone, Harness, RunOutput};

/// Each preset and the hosts it must open, all on port 443 (what was run
/// to find them is in docs/hosts.md).
const PRESETS: [(&str, &[&str]); 4] = [
    (
        "@crates-io",
        &["index.crates.io", "static.crates.io", "crates.io"],
    ),
    (
        "@github",
        &[
            "github.com",
            "api.github.com",
            "codeload.github.com",
            "raw.githubusercontent.com",
            "objects.githubusercontent.com",
            "release-assets.githubusercontent.com",
        ],
    ),
    ("@npm", &["registry.npmjs.org"]),
    ("@pypi", &["pypi.org", "files.pythonhosted.org"]),
];

/// A name in no preset, pointed at the same server.
const UNLISTED: &str = "evil.test";

/// Sets up the namespace: loopback up, every name of `$NAMES` at
/// 127.0.0.1, a web server on 127.0.0.1:443; then runs its arguments.
const REGISTRIES: &str = r#"set -e
ip link set lo up
for name in $NAMES; do printf '127.0.0.1 %s\n' "$name"; done > "$OWN_DIR/hosts"
mount --bind "$OWN_DIR/hosts" /etc/hosts
/usr/bin/python3 -m http.server --bind 127.0.0.1 443 --directory "$OWN_DIR/www" >/dev/null 2>&1 &
server=$!
for i in $(seq 50); do curl -s --noproxy '*' -o /dev/null http://127.0.0.1:443/ && break; sleep 0.1; done
set +e
"$@"; status=$?
kill $server
exit $status
"#;

/// A spell running the workspace's `net.sh`.
const SHELL_SPELL: &str =
    "import \"sh\";\nfun main(args: [str]) > int {\n    return sh.run([\"/bin/sh\", \"net.sh\"]);\n}\n";

fn all_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = PRESETS
        .iter()
        .flat_map(|(_, h)| h.iter().copied())
        .collect();
    names.push(UNLISTED);
    names
}

/// For every name, `reached NAME` or `failed NAME` (a tunnel to NAME:443,
/// `-p`, as a client of an HTTPS registry asks for it); then
/// `port80 reached|failed` for `index.crates.io:80`.
fn probe_script() -> String {
    let curl = "curl -fsS -p --max-time 10 -o /dev/null";
    let mut script = String::new();
    for name in all_names() {
        script.push_str(&format!(
            "if {curl} http://{name}:443/registry.txt; then echo reached {name}; else echo failed {name}; fi\n"
        ));
    }
    script.push_str(&format!(
        "if {curl} http://index.crates.io:80/registry.txt; then echo port80 reached; else echo port80 failed; fi\n"
    ));
    script
}

fn hosts_config(hosts: &str) -> String {
    format!("sandbox:\n  enabled: true\n  network:\n    hosts: {hosts}\n")
}

/// Who runs magus, and whether children get a network namespace.
#[derive(Debug, Clone, Copy)]
struct Case {
    nobody: bool,
    partial: bool,
}

fn cases() -> Vec<Case> {
    let nobody = if can_switch_user() {
        vec![false, true]
    } else {
        eprintln!("uid 65534 part skipped: no setpriv");
        vec![false]
    };
    nobody
        .into_iter()
        .flat_map(|nobody| [false, true].map(|partial| Case { nobody, partial }))
        .collect()
}

/// `magus run net` under `config` in the registries' namespace.
fn run(config: &str, case: Case, site: &Path) -> RunOutput {
    let h = Harness::with_config(config);
    h.write_spell("net", SHELL_SPELL);
    std::fs::write(h.ws_path("net.sh"), probe_script()).unwrap();
    open_to_everyone(&h.root);
    let magus = h.command();
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "--mount", "--", "/bin/sh", "-c", REGISTRIES, "sh"]);
    if case.nobody {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ]);
    }
    cmd.arg(magus.get_program()).args(magus.get_args());
    cmd.arg("--workspace").arg(&h.ws).args(["run", "net"]);
    cmd.env_clear().current_dir(&h.root);
    for (k, v) in magus.get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    if case.partial {
        cmd.env("MAGUS_SANDBOX_USERNS", "0");
    }
    cmd.env("OWN_DIR", site).env("NAMES", all_names().join(" "));
    let out = capture(&mut cmd);
    h.assert_no_leak(&out);
    out
}

fn reached(out: &RunOutput) -> Vec<&str> {
    out.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("reached "))
        .collect()
}

fn site() -> Option<tempfile::TempDir> {
    if !nix::unistd::geteuid().is_root() || !Path::new("/usr/sbin/ip").exists() {
        eprintln!("skipped: needs root and ip(8)");
        return None;
    }
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir(site.path().join("www")).unwrap();
    std::fs::write(site.path().join("www/registry.txt"), "registry\n").unwrap();
    Some(site)
}

/// The four presets together reach every host they name, on 443, and
/// not the unlisted name nor another port. `"127.0.0.1:443"` is listed
/// because the registries are at 127.0.0.1 here, which the DNS-rebinding
/// rule refuses to a listed name otherwise. The control, sandbox off,
/// reaches every name, the unlisted one included.
#[test]
fn presets_reach_the_hosts_their_tools_contact_and_nothing_else() {
    let Some(site) = site() else { return };
    let every: Vec<&str> = PRESETS
        .iter()
        .flat_map(|(_, h)| h.iter().copied())
        .collect();
    let config = hosts_config(r#"["@crates-io", "@pypi", "@npm", "@github", "127.0.0.1:443"]"#);
    for case in cases() {
        let control = run("sandbox:\n  enabled: false\n", case, site.path());
        assert_eq!(
            reached(&control),
            all_names(),
            "control: {}",
            control.dump()
        );
        let out = run(&config, case, site.path());
        assert_eq!(reached(&out), every, "{case:?}: {}", out.dump());
        assert!(out.stdout.contains("port80 failed"), "{}", out.dump());
        for said in [
            format!("connection to `{UNLISTED}:443` refused"),
            "connection to `index.crates.io:80` refused".to_string(),
            "the host is listed for other ports only".to_string(),
        ] {
            assert!(
                out.stderr.contains(&said),
                "{case:?}: {said}\n{}",
                out.dump()
            );
        }
    }
}

/// Each preset alone opens its own hosts and none of another's.
#[test]
fn each_preset_opens_only_its_own_hosts() {
    let Some(site) = site() else { return };
    let case = Case {
        nobody: false,
        partial: false,
    };
    for (preset, hosts) in PRESETS {
        let out = run(
            &hosts_config(&format!(r#"["{preset}", "127.0.0.1:443"]"#)),
            case,
            site.path(),
        );
        assert_eq!(reached(&out), hosts, "{preset}: {}", out.dump());
    }
    let none = run(&hosts_config(r#"["127.0.0.1:443"]"#), case, site.path());
    assert_eq!(reached(&none), Vec::<&str>::new(), "{}", none.dump());
}

fn magus(h: &Harness, args: &[&str]) -> RunOutput {
    capture(h.command().arg("--workspace").arg(&h.ws).args(args))
}

/// `sandbox check` shows each preset with the hosts it stands for, in
/// human output and JSON; the hosts line holds them all.
#[test]
fn sandbox_check_shows_presets_expanded() {
    let h = Harness::with_config(&hosts_config(r#"["@pypi", "@crates-io", localhost]"#));
    let out = magus(&h, &["sandbox", "check"]);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    for line in [
        "hosts [crates.io:443, files.pythonhosted.org:443, index.crates.io:443, localhost, pypi.org:443, static.crates.io:443] via magus's proxy",
        "  @pypi          = pypi.org:443, files.pythonhosted.org:443  (pip: ",
        "  @crates-io     = index.crates.io:443, static.crates.io:443, crates.io:443  (cargo: ",
    ] {
        assert!(out.stdout.contains(line), "{line}\n{}", out.dump());
    }
    let json = magus(&h, &["--message-format", "json", "sandbox", "check"]);
    let v: serde_json::Value = serde_json::from_str(json.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        v["network"]["presets"]["@pypi"],
        serde_json::json!(["pypi.org:443", "files.pythonhosted.org:443"]),
        "{v}"
    );
    assert_eq!(
        v["network"]["hosts"].as_array().map(Vec::len),
        Some(6),
        "{v}"
    );
}

/// The lock pins the hosts a preset opens: the lock file lists them, and
/// trading one preset for another is MGS2010 naming each host that came
/// and went.
#[test]
fn the_lock_pins_the_hosts_of_a_preset() {
    let h = Harness::with_config(&hosts_config(r#"["@crates-io"]"#));
    h.write_spell("noop", "fun main(args: [str]) > void {}\n");
    let lock = magus(&h, &["sandbox", "lock"]);
    assert_eq!(lock.status, Some(0), "{}", lock.dump());
    let text = std::fs::read_to_string(h.ws_path("magus.lock")).unwrap();
    assert!(
        text.contains(
            r#"network hosts ["crates.io:443", "index.crates.io:443", "static.crates.io:443"]"#
        ),
        "{text}"
    );
    assert_eq!(h.run("noop", &[]).status, Some(0));
    h.write_config(&hosts_config(r#"["@pypi"]"#));
    let out = h.run("noop", &[]);
    assert_ne!(out.status, Some(0), "{}", out.dump());
    for said in [
        "error[MGS2010]",
        "widened: + network host pypi.org:443",
        "widened: + network host files.pythonhosted.org:443",
        "narrowed: - network host index.crates.io:443",
    ] {
        assert!(out.stderr.contains(said), "{said}\n{}", out.dump());
    }
}

/// An unknown preset stops the run at its entry with "did you mean"; an
/// unquoted one (YAML reserves `@`) says to quote it.
#[test]
fn an_unknown_or_unquoted_preset_is_an_error_with_the_fix() {
    for (hosts, said) in [
        (
            r#"[localhost, "@crate-io"]"#,
            "there is no preset `@crate-io`",
        ),
        (
            "[localhost, @npm]",
            "a value cannot start with `@` unless it is quoted",
        ),
    ] {
        let h = Harness::with_config(&hosts_config(hosts));
        h.write_spell("noop", "fun main(args: [str]) > void {}\n");
        let out = h.run("noop", &[]);
        assert_ne!(out.status, Some(0), "{}", out.dump());
        assert!(out.stderr.contains(said), "{said}\n{}", out.dump());
        assert!(out.stderr.contains("magus.yaml:4:24"), "{}", out.dump());
        assert!(
            out.stderr.contains("did you mean `@crates-io`?")
                || out.stderr.contains(r#"hosts: ["@crates-io"]"#),
            "{}",
            out.dump()
        );
    }
}

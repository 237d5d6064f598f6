//! For every diagnostic code, the help a real run prints agrees with the
//! code's `magus explain` page: every `magus.yaml` key, mode, variable glob
//! and `magus` command the help offers is one the page teaches, a
//! credential store gets no grant in either, and a code whose page says
//! there is nothing to fix prints no fix.

use crate::support::{self, capture, Harness};
use magus_sandbox::Code;
use serde_json::Value;
use std::collections::BTreeMap;

/// (code, help) of every diagnostic of a JSON-mode run.
fn helps(stderr: &str) -> Vec<(String, Option<String>)> {
    stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|o| {
            let code = o["code"].as_str()?.to_string();
            Some((code, o["help"].as_str().map(str::to_string)))
        })
        .collect()
}

fn read_spell(path: &std::path::Path) -> String {
    format!(
        "import \"fs\";\nfun main(args: [str]) > void {{ fs.read({}); }}\n",
        support::buzz_str(path.to_str().unwrap())
    )
}

fn run_json(h: &Harness, source: &str) -> Vec<(String, Option<String>)> {
    h.write_spell("probe", source);
    let out = h.run_with("probe", &[], &["--message-format", "json", "-v"]);
    helps(&out.stderr)
}

/// Runs that, between them, say every code.
fn every_code() -> BTreeMap<String, Vec<Option<String>>> {
    let mut seen: Vec<(String, Option<String>)> = Vec::new();
    let mut h = Harness::with_config(
        "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.missing\n      mode: ro\n",
    );
    let plain = h.home_path(".terraform.d/plugins/x");
    std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
    std::fs::write(&plain, "x").unwrap();
    seen.extend(run_json(&h, &read_spell(&plain)));
    seen.extend(run_json(&h, &read_spell(&h.home_path(".ssh/id_rsa"))));
    let write = format!(
        "import \"fs\";\nfun main(args: [str]) > void {{ fs.write({}, \"x\"); }}\n",
        support::buzz_str(h.home_path(".profile").to_str().unwrap())
    );
    seen.extend(run_json(&h, &write));
    // A child: MGS2003, MGS2008; a tool outside the allowlist: MGS2007.
    let tool = h.home_path("bin/tool");
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let launch = format!(
        "import \"sh\";\nfun main(args: [str]) > void {{ sh.run([\"true\"]); sh.run([{}]); }}\n",
        support::buzz_str(tool.to_str().unwrap())
    );
    seen.extend(run_json(&h, &launch));
    // A version manager's shim: MGS2006, and MGS2007 for its denied exec.
    let shims = h.home_path(".pyenv/shims");
    std::fs::create_dir_all(&shims).unwrap();
    std::fs::copy(&tool, shims.join("python")).unwrap();
    h.set_env("PATH", format!("{}:/usr/bin:/bin", shims.display()));
    h.set_env("PYENV_VERSION", "3.12");
    let shim = "import \"sh\";\nfun main(args: [str]) > void { sh.run([\"python\"]); }\n";
    seen.extend(run_json(&h, shim));
    h.write_config("sandbox:\n  enabled: true\n  allow:\n    - path: ~/.pyenv\n      mode: ro\n");
    seen.extend(run_json(&h, shim));
    h.set_env("MAGUS_SANDBOX_LANDLOCK", "0");
    seen.extend(run_json(&h, "fun main(args: [str]) > void {}\n"));
    h.remove_env("MAGUS_SANDBOX_LANDLOCK");
    // MGS2012: `network: deny` enforced by the seccomp fallback.
    let pyenv_ro = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/.pyenv\n      mode: ro\n";
    h.write_config(&format!("{pyenv_ro}  network: deny\n"));
    h.set_env("MAGUS_SANDBOX_USERNS", "0");
    seen.extend(run_json(&h, "fun main(args: [str]) > void {}\n"));
    h.remove_env("MAGUS_SANDBOX_USERNS");
    h.write_config(pyenv_ro);
    // MGS2014: a run-later file a child left is set aside after the run.
    let envrc = h.ws_path(".envrc");
    let plant = format!(
        "import \"sh\";\nfun main(args: [str]) > void {{ sh.shell({}); }}\n",
        support::buzz_str(format!("echo x > {}", envrc.display()))
    );
    seen.extend(run_json(&h, &plant));
    // MGS2010: lock, then widen.
    let lock = capture(
        h.command()
            .arg("--workspace")
            .arg(&h.ws)
            .args(["sandbox", "lock"]),
    );
    assert_eq!(lock.status, Some(0), "{}", lock.dump());
    h.write_config("sandbox:\n  enabled: true\n  network: allow\n  allow:\n    - path: ~/.pyenv\n      mode: rw\n");
    seen.extend(run_json(&h, "fun main(args: [str]) > void {}\n"));
    // MGS2011: a host the proxy refuses (nothing listens on port 9; the
    // proxy refuses before connecting).
    std::fs::remove_file(h.ws_path("magus.lock")).unwrap();
    h.write_config("sandbox:\n  enabled: true\n  network:\n    hosts: [localhost]\n");
    let refused = "import \"sh\";\nfun main(args: [str]) > void { sh.run([\"curl\", \"-fsS\", \"http://127.0.0.1:9/\"]); }\n";
    seen.extend(run_json(&h, refused));
    // MGS2013: a secret's placeholder on its way to a host it is not
    // bound to (plain HTTP, which the proxy reads).
    h.write_config("sandbox:\n  enabled: true\n  network:\n    hosts: [localhost]\nspells:\n  probe:\n    secrets:\n      - name: TOKEN\n        from: {env: MAGUS_TEST_TOKEN}\n        hosts: [\"localhost:1\"]\n");
    h.set_env("MAGUS_TEST_TOKEN", "planted-token-value");
    let exfil = "import \"sh\";\nfun main(args: [str]) > void { sh.shell(\"curl -fsS http://localhost:9/?t=$TOKEN\"); }\n";
    seen.extend(run_json(&h, exfil));
    let mut by_code: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    for (code, help) in seen {
        by_code.entry(code).or_default().push(help);
    }
    by_code
}

/// What a help offers that the page must also teach.
fn offered(help: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut after_spells = false;
    for line in help.lines().map(str::trim) {
        // The key under `spells:` is the spell's own name, which no page
        // can know.
        if std::mem::replace(&mut after_spells, line == "spells:") {
            continue;
        }
        let line = line.trim_start_matches("- ");
        if let Some((key, value)) = line.split_once(':') {
            // A quoted list item (`- "host:443"`) is a value, not a key.
            let quoted = key.starts_with('`') || key.starts_with('"');
            if !key.contains(' ') && !key.is_empty() && !quoted {
                items.push(format!("{key}:"));
                if key == "mode" {
                    items.push(format!("mode: {}", value.trim()));
                }
            }
        }
        if line.starts_with('"') && line.ends_with("*\"") {
            // The manager's own prefix varies; the page must teach globs.
            items.push("_*\"".to_string());
        }
    }
    for piece in help.split('`').skip(1).step_by(2) {
        if piece.starts_with("magus ") {
            items.push(piece.to_string());
        }
    }
    items
}

#[test]
fn every_codes_help_agrees_with_its_explain_page() {
    let by_code = every_code();
    for code in Code::SANDBOX {
        // Only the kernel layer (the proxy, the network rules, the sweep
        // after the run) raises these.
        #[cfg(not(kernel_layer))]
        if matches!(
            code,
            Code::Mgs2011 | Code::Mgs2012 | Code::Mgs2013 | Code::Mgs2014
        ) {
            continue;
        }
        let helps = by_code
            .get(code.as_str())
            .unwrap_or_else(|| panic!("no run said {code}: {by_code:?}"));
        let page = code.explain();
        let fix = page
            .split("## How to fix it")
            .nth(1)
            .unwrap_or_else(|| panic!("{code}'s page has no fix section"));
        for help in helps {
            let Some(help) = help else {
                assert!(
                    fix.trim_start().starts_with("Nothing")
                        || fix.trim_start().starts_with("Usually nothing"),
                    "{code} prints no fix, but its page offers one"
                );
                continue;
            };
            for item in offered(help) {
                assert!(
                    page.contains(&item),
                    "{code}: the help offers `{item}`, which its page never mentions\nhelp: {help}"
                );
            }
            if help.contains("credential store") {
                assert!(page.contains("**Never** grant credential stores"), "{code}");
                assert!(!help.contains("- path:"), "{code}: {help}");
            }
            if code == Code::Mgs2007 && help.contains("PYENV_") {
                assert!(
                    page.contains("MGS2006"),
                    "MGS2007's page must send shims to MGS2006"
                );
                assert!(Code::Mgs2006.explain().contains("passthrough"));
            }
        }
    }
}

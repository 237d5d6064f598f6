//! The `fs.*` bindings under the sandbox, end to end through the `magus`
//! binary: every secret of the threat model is refused (MGS2001) however it
//! is spelled, writes outside the workspace and to protected files are
//! refused (MGS2002), grants behave as declared, and no secret byte reaches
//! any output or workspace file. A sandbox-off run is the control.

mod support;

use std::os::unix::fs::symlink;
use support::{buzz_list, buzz_str, capture, Harness, RunOutput, SECRET_FILES};

/// Spell helpers: each `probe` prints one `RESULT <op> <target> <outcome>`
/// line, where the outcome is the caught code, `FS <message>`, or `LEAK`.
const PRELUDE: &str = r#"import "std";
import "fs";

fun attempt(op: str, target: str, other: str) > void {
    if (op == "read") { std.print("LEAK read {target} {fs.read(target)}"); }
    if (op == "exists") { std.print("LEAK exists {target} {fs.exists(target)}"); }
    if (op == "list") { std.print("LEAK list {target} {fs.list(target)}"); }
    if (op == "copy") { fs.copy(target, other); std.print("LEAK copy {target}"); }
    if (op == "write") { fs.write(target, "pwned\n"); std.print("LEAK write {target}"); }
    if (op == "append") { fs.append(target, "pwned\n"); std.print("LEAK append {target}"); }
    if (op == "mkdir") { fs.makeDirectory(target); std.print("LEAK mkdir {target}"); }
    if (op == "delete") { fs.delete(target); std.print("LEAK delete {target}"); }
    if (op == "move") { fs.move(target, other); std.print("LEAK move {target}"); }
}

fun probe(op: str, target: str, other: str) > void {
    try {
        attempt(op, target, other);
    } catch (e: SandboxError) {
        std.print("RESULT {op} {target} {e.code} {e.op}");
        std.print("MESSAGE {e.message}");
    } catch (e: FileSystemError) {
        std.print("RESULT {op} {target} FS {e.message}");
    }
}
"#;

/// A spell that runs `probe(op, target, other)` for each triple.
fn probe_spell(probes: &[(&str, String, String)]) -> String {
    let mut body = String::new();
    for (op, target, other) in probes {
        body.push_str(&format!(
            "    probe({}, {}, {});\n",
            buzz_str(op),
            buzz_str(target),
            buzz_str(other)
        ));
    }
    format!("{PRELUDE}\nfun main(args: [str]) > int {{\n{body}    std.print(\"DONE\");\n    return 0;\n}}\n")
}

/// The outcome printed for `op` on `target`.
fn outcome<'a>(out: &'a RunOutput, op: &str, target: &str) -> &'a str {
    let prefix = format!("RESULT {op} {target} ");
    out.stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no result for {op} {target}\n{}", out.dump()))
}

fn assert_code(out: &RunOutput, op: &str, target: &str, code: &str) {
    let got = outcome(out, op, target);
    assert!(
        got.starts_with(&format!("{code} ")),
        "{op} {target}: expected {code}, got `{got}`\n{}",
        out.dump()
    );
}

fn assert_completed(out: &RunOutput) {
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("DONE"), "{}", out.dump());
    assert!(!out.stdout.contains("LEAK"), "{}", out.dump());
}

/// Every threat-model target: the planted files and `/etc/shadow`.
fn targets(h: &Harness) -> Vec<String> {
    let mut all: Vec<String> = SECRET_FILES
        .iter()
        .map(|rel| h.home_path(rel).display().to_string())
        .collect();
    all.push("/etc/shadow".into());
    all
}

fn read_matrix(h: &Harness) -> Vec<(&'static str, String, String)> {
    let mut probes = Vec::new();
    for (i, target) in targets(h).into_iter().enumerate() {
        let dir = std::path::Path::new(&target)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        probes.push(("read", target.clone(), String::new()));
        probes.push(("exists", target.clone(), String::new()));
        probes.push(("list", dir, String::new()));
        probes.push(("copy", target, format!("stolen-{i}.txt")));
    }
    probes
}

fn check_read_matrix(h: &Harness, out: &RunOutput) {
    assert_completed(out);
    for (op, target, _) in read_matrix(h) {
        assert_code(out, op, &target, "MGS2001");
    }
    h.assert_no_leak(out);
    h.assert_secrets_intact();
    for i in 0..targets(h).len() {
        let stolen = h.ws_path(&format!("stolen-{i}.txt"));
        assert!(!stolen.exists(), "{} was created", stolen.display());
    }
}

#[test]
fn every_target_is_refused_through_every_read_binding() {
    let h = Harness::new();
    h.write_spell("steal", &probe_spell(&read_matrix(&h)));
    let out = h.run("steal", &[]);
    check_read_matrix(&h, &out);
}

/// The gate alone, without the kernel layer behind it, refuses the same.
#[test]
fn the_gate_alone_refuses_every_target() {
    let mut h = Harness::new();
    h.set_env("MAGUS_SANDBOX_LANDLOCK", "0");
    h.write_spell("steal", &probe_spell(&read_matrix(&h)));
    let out = h.run("steal", &[]);
    assert!(out.stderr.contains("MGS2005"), "{}", out.dump());
    check_read_matrix(&h, &out);
}

/// The 1-based line and column of the first `needle` in `source`.
fn position(source: &str, needle: &str) -> (usize, usize) {
    source
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find(needle).map(|c| (i + 1, c + 1)))
        .unwrap_or_else(|| panic!("`{needle}` is not in the spell"))
}

fn uncaught_spell(target: &str) -> String {
    format!(
        "import \"std\";\nimport \"fs\";\n\nfun main(args: [str]) > int {{\n    std.print(\"before\");\n    final text = fs.read({});\n    std.print(\"after {{text}}\");\n    return 0;\n}}\n",
        buzz_str(target)
    )
}

/// [`uncaught_spell`] reading the path given as its first argument.
fn uncaught_spell_of_arg() -> String {
    "import \"std\";\nimport \"fs\";\n\nfun main(args: [str]) > int {\n    std.print(\"before\");\n    final text = fs.read(args[0]);\n    std.print(\"after {text}\");\n    return 0;\n}\n".to_string()
}

#[test]
fn an_uncaught_denial_stops_the_run_with_location_and_fix() {
    let h = Harness::new();
    for (i, rel) in SECRET_FILES.iter().enumerate() {
        let target = h.home_path(rel).display().to_string();
        // A literal path is refused by the check before the run (nothing
        // of the spell runs); one given as an argument by the run itself,
        // after line 5. Both at the argument, with the same fix.
        for (source, args, before) in [
            (uncaught_spell(&target), vec![], ""),
            (uncaught_spell_of_arg(), vec![target.as_str()], "before\n"),
        ] {
            let spell = h.write_spell(&format!("uncaught{i}"), &source);
            let out = h.run(&format!("uncaught{i}"), &args);
            assert_eq!(out.status, Some(124), "{}", out.dump());
            assert_eq!(out.stdout, before, "{}", out.dump());
            assert!(out.stderr.contains("error[MGS2001]"), "{}", out.dump());
            // Placed on the refused argument, and underlined whole.
            let argument = match args.is_empty() {
                true => buzz_str(&target),
                false => "args[0]".to_string(),
            };
            let (line, col) = position(&source, &argument);
            let at = format!("{}:{line}:{col}", spell.display());
            assert!(out.stderr.contains(&at), "no `{at}`\n{}", out.dump());
            let underline = format!(
                "| {}{} `read` denied here\n",
                " ".repeat(col - 1),
                "^".repeat(argument.chars().count())
            );
            assert!(
                out.stderr.contains(&underline),
                "no `{underline}`\n{}",
                out.dump()
            );
            // Every planted file is a credential store: explained, no grant.
            assert!(
                out.stderr
                    .contains("is a credential store: magus offers no grant"),
                "{}",
                out.dump()
            );
            assert!(!out.stderr.contains("- path:"), "{}", out.dump());
            h.assert_no_leak(&out);
        }
    }
    let out = {
        h.write_spell("shadow", &uncaught_spell("/etc/shadow"));
        h.run("shadow", &[])
    };
    assert_eq!(out.status, Some(124), "{}", out.dump());
    assert!(out.stderr.contains("error[MGS2001]"), "{}", out.dump());
    assert!(
        out.stderr.contains("`/etc/shadow` is a credential store"),
        "{}",
        out.dump()
    );
    h.assert_no_leak(&out);
}

#[test]
fn json_format_gives_the_uncaught_denial_as_one_line() {
    let h = Harness::new();
    let target = h.home_path(".ssh/id_rsa").display().to_string();
    let source = uncaught_spell(&target);
    let spell = h.write_spell("uncaught", &source);
    let out = h.run_with("uncaught", &[], &["--message-format", "json"]);
    assert_eq!(out.status, Some(124), "{}", out.dump());
    let errors: Vec<serde_json::Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: `{l}`")))
        .filter(|v: &serde_json::Value| v["code"] == "MGS2001")
        .collect();
    assert_eq!(errors.len(), 1, "{}", out.dump());
    let e = &errors[0];
    let (line, col) = position(&source, &buzz_str(&target));
    assert_eq!(e["severity"], "error");
    assert_eq!(e["path"], target.as_str());
    assert!(e["message"].as_str().unwrap().contains(&target), "{e}");
    assert_eq!(e["spell"]["file"], spell.display().to_string().as_str());
    assert_eq!(e["spell"]["line"], line);
    assert_eq!(e["spell"]["column"], col);
    let help = e["help"].as_str().unwrap();
    assert!(help.contains("`~/.ssh` is a credential store") && !help.contains("- path:"));
    h.assert_no_leak(&out);
}

#[test]
fn writes_outside_the_workspace_are_refused() {
    let h = Harness::new();
    let bashrc = h.home_path(".bashrc").display().to_string();
    let key = h.home_path(".ssh/id_rsa").display().to_string();
    let newdir = h.home_path(".config/autostart").display().to_string();
    let probes = vec![
        ("write", bashrc.clone(), String::new()),
        ("append", bashrc.clone(), String::new()),
        ("write", key.clone(), String::new()),
        ("delete", key.clone(), String::new()),
        ("mkdir", newdir.clone(), String::new()),
        ("write", "/etc/profile.d/evil.sh".into(), String::new()),
    ];
    h.write_spell("plant", &probe_spell(&probes));
    let out = h.run("plant", &[]);
    assert_completed(&out);
    for (op, target, _) in &probes {
        assert_code(&out, op, target, "MGS2002");
    }
    assert!(!h.home_path(".bashrc").exists());
    assert!(!h.home_path(".config/autostart").exists());
    h.assert_secrets_intact();
    h.assert_no_leak(&out);
}

#[test]
fn protected_workspace_files_are_refused_even_through_symlinks() {
    let h = Harness::new();
    let config = std::fs::read_to_string(h.ws_path("magus.yaml")).unwrap();
    let ws = h.ws_path("").display().to_string();
    let locked = capture(h.command().args(["--workspace", &ws, "sandbox", "lock"]));
    assert_eq!(locked.status, Some(0), "{}", locked.dump());
    let lock = std::fs::read_to_string(h.ws_path("magus.lock")).unwrap();
    std::fs::create_dir_all(h.ws_path(".git/hooks")).unwrap();
    std::fs::write(h.ws_path(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    std::fs::write(h.ws_path("payload.txt"), "payload\n").unwrap();
    symlink(h.ws_path("magus.yaml"), h.ws_path("conf-link")).unwrap();
    symlink("magus.lock", h.ws_path("lock-link")).unwrap();
    symlink(".git/hooks", h.ws_path("hooks-link")).unwrap();
    symlink(".git", h.ws_path("git-link")).unwrap();
    let ws = |rel: &str| h.ws_path(rel).display().to_string();
    let mut probes = Vec::new();
    for target in [
        "magus.yaml".to_string(),
        "./spells/../magus.yaml".to_string(),
        ws("magus.yaml"),
        "magus.lock".into(),
        ".git/hooks/pre-commit".into(),
        ".git/hooks/post-checkout".into(),
        "conf-link".into(),
        "lock-link".into(),
        "hooks-link/pre-commit".into(),
        "hooks-link/post-merge".into(),
    ] {
        probes.push(("write", target.clone(), String::new()));
        probes.push(("append", target.clone(), String::new()));
    }
    probes.push(("copy", "payload.txt".into(), "magus.yaml".into()));
    probes.push(("copy", "payload.txt".into(), "hooks-link/pre-commit".into()));
    probes.push(("move", "payload.txt".into(), ".git/hooks/pre-push".into()));
    probes.push(("delete", "magus.lock".into(), String::new()));
    probes.push(("mkdir", ".git/hooks/sub".into(), String::new()));
    // Moving a directory that holds a protected path aside (to write into
    // it there and move it back), directly or through a symlinked parent.
    probes.push(("move", ".git".into(), "git-aside".into()));
    probes.push(("move", "git-link/hooks".into(), "hooks-aside".into()));
    probes.push(("delete", "git-link/hooks".into(), String::new()));
    h.write_spell("widen", &probe_spell(&probes));
    let out = h.run("widen", &[]);
    assert_completed(&out);
    for (op, target, _) in &probes {
        assert_code(&out, op, target, "MGS2002");
    }
    assert!(out.stdout.contains("protected path"), "{}", out.dump());
    assert_eq!(
        std::fs::read_to_string(h.ws_path("magus.yaml")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(h.ws_path("magus.lock")).unwrap(),
        lock
    );
    assert_eq!(
        std::fs::read_to_string(h.ws_path(".git/hooks/pre-commit")).unwrap(),
        "#!/bin/sh\n"
    );
    let hooks: Vec<_> = std::fs::read_dir(h.ws_path(".git/hooks"))
        .unwrap()
        .collect();
    assert_eq!(hooks.len(), 1, "a hook was planted");
    assert!(!h.ws_path("git-aside").exists() && !h.ws_path("hooks-aside").exists());
    assert!(h.ws_path("payload.txt").exists());
}

/// Mercurial's `.hg` is protected like `.git`, at any depth: its `hgrc`
/// runs hooks and loads extensions at the user's next `hg` command.
#[test]
fn a_mercurial_repository_is_protected_like_git() {
    let h = Harness::new();
    for dir in [".hg/store", "vendor/lib/.hg"] {
        std::fs::create_dir_all(h.ws_path(dir)).unwrap();
    }
    std::fs::write(h.ws_path(".hg/requires"), "store\n").unwrap();
    std::fs::write(h.ws_path("payload.txt"), "[hooks]\n").unwrap();
    let mut probes = Vec::new();
    for target in [".hg/hgrc", ".hg/requires", "vendor/lib/.hg/hgrc"] {
        probes.push(("write", target.to_string(), String::new()));
        probes.push(("append", target.to_string(), String::new()));
    }
    probes.push(("copy", "payload.txt".into(), ".hg/hgrc".into()));
    probes.push(("move", ".hg".into(), "hg-aside".into()));
    h.write_spell("hg", &probe_spell(&probes));
    let out = h.run("hg", &[]);
    assert_completed(&out);
    for (op, target, _) in &probes {
        assert_code(&out, op, target, "MGS2002");
    }
    // The jail makes a missing `hgrc` empty (a bind needs an inode).
    for hgrc in [".hg/hgrc", "vendor/lib/.hg/hgrc"] {
        let left = std::fs::read(h.ws_path(hgrc)).unwrap_or_default();
        assert!(
            left.is_empty(),
            "{hgrc}: {}",
            String::from_utf8_lossy(&left)
        );
    }
    assert_eq!(
        std::fs::read_to_string(h.ws_path(".hg/requires")).unwrap(),
        "store\n"
    );
    assert!(!h.ws_path("hg-aside").exists());
}

#[test]
fn a_workspace_symlink_to_a_secret_is_refused_naming_both_paths() {
    let h = Harness::new();
    let key = h.home_path(".ssh/id_rsa");
    symlink(&key, h.ws_path("key")).unwrap();
    symlink("../home/.ssh/id_rsa", h.ws_path("relkey")).unwrap();
    symlink(h.home_path(".ssh"), h.ws_path("dotssh")).unwrap();
    symlink(h.home_path(".aws"), h.ws_path("spells/aws")).unwrap();
    let mut probes = Vec::new();
    for target in ["key", "relkey", "dotssh/id_rsa", "spells/aws/credentials"] {
        for op in ["read", "exists", "copy"] {
            probes.push((op, target.to_string(), "stolen.txt".to_string()));
        }
    }
    probes.push(("list", "dotssh".into(), String::new()));
    h.write_spell("links", &probe_spell(&probes));
    let out = h.run("links", &[]);
    assert_completed(&out);
    for (op, target, _) in &probes {
        assert_code(&out, op, target, "MGS2001");
    }
    let message = format!(
        "MESSAGE read of `key` (which leads to `{}`) denied by the sandbox",
        key.display()
    );
    assert!(
        out.stdout.contains(&message),
        "no `{message}`\n{}",
        out.dump()
    );
    assert!(!h.ws_path("stolen.txt").exists());
    h.assert_no_leak(&out);

    let source = uncaught_spell("key");
    h.write_spell("uncaught", &source);
    let out = h.run("uncaught", &[]);
    assert_eq!(out.status, Some(124), "{}", out.dump());
    assert!(out.stderr.contains("`key`"), "{}", out.dump());
    assert!(
        out.stderr.contains(&key.display().to_string()),
        "{}",
        out.dump()
    );
    assert!(
        out.stderr.contains("`~/.ssh` is a credential store"),
        "{}",
        out.dump()
    );
    h.assert_no_leak(&out);
}

#[test]
fn dotdot_and_magic_link_spellings_are_refused() {
    let h = Harness::new();
    let home = h.home.display().to_string();
    let depth = h.ws.components().count() - 1;
    let to_root = "../".repeat(depth + 2);
    let targets = [
        "../home/.ssh/id_rsa".to_string(),
        "spells/../../home/.ssh/id_rsa".to_string(),
        format!("{to_root}{}", home.trim_start_matches('/')) + "/.ssh/id_rsa",
        format!("{}/../home/.aws/credentials", h.ws.display()),
        format!("/proc/self/root{home}/.ssh/id_rsa"),
        "/proc/self/cwd/../home/.ssh/id_rsa".to_string(),
        format!("/proc/thread-self/root{home}/.vault-token"),
        "/proc/self/root/etc/shadow".to_string(),
        "/etc/../etc/shadow".to_string(),
    ];
    let mut probes = Vec::new();
    for target in &targets {
        probes.push(("read", target.clone(), String::new()));
        probes.push(("copy", target.clone(), "stolen.txt".to_string()));
    }
    h.write_spell("dots", &probe_spell(&probes));
    let out = h.run("dots", &[]);
    assert_completed(&out);
    for (op, target, _) in &probes {
        let got = outcome(&out, op, target);
        // `/proc/self/cwd/..` is normalised lexically to `/proc/self/home`,
        // which does not exist: a refusal or a missing file, never content.
        assert!(
            got.starts_with("MGS2001 ")
                || target.starts_with("/proc/self/cwd") && got.starts_with("FS "),
            "{op} {target}: {got}\n{}",
            out.dump()
        );
    }
    assert!(!h.ws_path("stolen.txt").exists());
    h.assert_no_leak(&out);
}

/// `/proc/<pid>/environ` of magus's parent (a shell holding every secret
/// variable), of PID 1 and of the namespace's parent are refused. (The
/// namespace's parent exists only in the kernel layer's jail.)
#[cfg(kernel_layer)]
#[test]
fn other_processes_environ_is_refused() {
    let h = Harness::new();
    let spell = format!(
        r#"{PRELUDE}
fun main(args: [str]) > int {{
    final stat = fs.read("/proc/self/stat");
    final fields = stat.split(") ")[1].split(" ");
    final ppid = fields[1];
    std.print("PPID {{ppid}}");
    probe("read", "/proc/{{ppid}}/environ", "");
    probe("read", "/proc/1/environ", "");
    probe("read", "/proc/{{args[0]}}/environ", "");
    probe("read", "/proc/{{ppid}}/cmdline", "");
    probe("copy", "/proc/{{ppid}}/environ", "stolen.txt");
    // Its own environment is readable, and was scrubbed by the re-exec.
    std.print("SELF {{fs.read("/proc/self/environ").len()}}");
    fs.copy("/proc/self/environ", "self-environ.txt");
    std.print("DONE");
    return 0;
}}
"#
    );
    h.write_spell("environ", &spell);
    // A parent shell that holds every secret variable and waits for magus;
    // it passes its own pid (`$$`) as the spell's argument.
    let magus = env!("CARGO_BIN_EXE_magus");
    let mut wrapper = std::process::Command::new("/bin/sh");
    wrapper
        .env_clear()
        .envs(h.command().get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(&h.root)
        .arg("-c")
        .arg("\"$1\" --workspace \"$2\" run environ $$; exit $?")
        .arg("sh")
        .arg(magus)
        .arg(&h.ws);
    let out = support::capture(&mut wrapper);
    assert_completed(&out);
    let ppid = out.lines_starting("PPID ")[0].trim_start_matches("PPID ");
    for target in [
        format!("/proc/{ppid}/environ"),
        "/proc/1/environ".to_string(),
        format!("/proc/{ppid}/cmdline"),
    ] {
        assert_code(&out, "read", &target, "MGS2001");
    }
    let direct = out
        .stdout
        .lines()
        .find(|l| {
            l.starts_with("RESULT read /proc/")
                && !l.contains(&format!("/proc/{ppid}/"))
                && !l.contains("/proc/1/")
        })
        .unwrap_or_else(|| panic!("{}", out.dump()));
    assert!(
        direct.contains(" MGS2001 ") || direct.contains(" FS "),
        "{direct}"
    );
    assert!(!h.ws_path("stolen.txt").exists());
    let own = std::fs::read(h.ws_path("self-environ.txt")).unwrap();
    assert!(own.starts_with(b"HOME=") || own.windows(5).any(|w| w == b"HOME="));
    h.assert_no_leak(&out);
}

const GRANTS: &str = "sandbox:\n  enabled: true\n  allow:\n    - path: ~/shared-ro\n      mode: ro\n    - path: ~/shared-rw\n      mode: rw\n";

#[test]
fn ro_grants_are_readable_not_writable_and_rw_grants_are_writable() {
    let h = Harness::with_config(GRANTS);
    for dir in ["shared-ro", "shared-rw"] {
        std::fs::create_dir_all(h.home_path(dir)).unwrap();
        std::fs::write(
            h.home_path(&format!("{dir}/data.txt")),
            format!("{dir} data\n"),
        )
        .unwrap();
    }
    let ro = h.home_path("shared-ro").display().to_string();
    let rw = h.home_path("shared-rw").display().to_string();
    let spell = format!(
        r#"{PRELUDE}
fun main(args: [str]) > int {{
    final ro = {ro};
    final rw = {rw};
    std.print("READ {{fs.read("{{ro}}/data.txt").trim()}}");
    std.print("LIST {{fs.list(ro)}}");
    std.print("EXISTS {{fs.exists("{{ro}}/data.txt")}}");
    probe("write", "{{ro}}/data.txt", "");
    probe("write", "{{ro}}/new.txt", "");
    probe("mkdir", "{{ro}}/sub", "");
    probe("delete", "{{ro}}/data.txt", "");
    probe("copy", "{{rw}}/data.txt", "{{ro}}/copied.txt");
    fs.write("{{rw}}/new.txt", "written\n");
    fs.append("{{rw}}/data.txt", "more\n");
    fs.makeDirectory("{{rw}}/a/b");
    fs.copy("{{ro}}/data.txt", "{{rw}}/a/b/copied.txt");
    std.print("RW {{fs.read("{{rw}}/new.txt").trim()}}");
    std.print("DONE");
    return 0;
}}
"#,
        ro = buzz_str(&ro),
        rw = buzz_str(&rw)
    );
    h.write_spell("grants", &spell);
    let out = h.run("grants", &[]);
    assert_completed(&out);
    assert!(
        out.stdout.contains("READ shared-ro data\n"),
        "{}",
        out.dump()
    );
    assert!(out.stdout.contains("LIST [data.txt]"), "{}", out.dump());
    assert!(out.stdout.contains("EXISTS true"), "{}", out.dump());
    assert!(out.stdout.contains("RW written\n"), "{}", out.dump());
    for (op, target) in [
        ("write", format!("{ro}/data.txt")),
        ("write", format!("{ro}/new.txt")),
        ("mkdir", format!("{ro}/sub")),
        ("delete", format!("{ro}/data.txt")),
        ("copy", format!("{rw}/data.txt")),
    ] {
        assert_code(&out, op, &target, "MGS2002");
    }
    let ro_files: Vec<_> = std::fs::read_dir(h.home_path("shared-ro"))
        .unwrap()
        .collect();
    assert_eq!(ro_files.len(), 1);
    assert_eq!(
        std::fs::read_to_string(h.home_path("shared-ro/data.txt")).unwrap(),
        "shared-ro data\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.home_path("shared-rw/data.txt")).unwrap(),
        "shared-rw data\nmore\n"
    );
    assert_eq!(
        std::fs::read_to_string(h.home_path("shared-rw/a/b/copied.txt")).unwrap(),
        "shared-ro data\n"
    );
    h.assert_no_leak(&out);
}

#[test]
fn denied_moves_and_copies_leave_their_source_intact() {
    let h = Harness::new();
    std::fs::write(h.ws_path("data.txt"), "precious\n").unwrap();
    let key = h.home_path(".ssh/id_rsa").display().to_string();
    let dest = h.home_path("data.txt").display().to_string();
    let probes = vec![
        ("move", "data.txt".to_string(), dest.clone()),
        ("copy", "data.txt".to_string(), dest.clone()),
        ("move", key.clone(), "key.txt".to_string()),
        ("move", "data.txt".to_string(), "magus.yaml".to_string()),
    ];
    h.write_spell("moves", &probe_spell(&probes));
    let out = h.run("moves", &[]);
    assert_completed(&out);
    for (op, target, _) in &probes {
        assert_code(&out, op, target, "MGS2002");
    }
    assert_eq!(
        std::fs::read_to_string(h.ws_path("data.txt")).unwrap(),
        "precious\n"
    );
    assert!(!h.home_path("data.txt").exists());
    assert!(!h.ws_path("key.txt").exists());
    h.assert_secrets_intact();
    h.assert_no_leak(&out);
}

/// A spell that prints every target's content: under the sandbox it must
/// show nothing; with the sandbox off it shows the secrets.
fn dump_spell(h: &Harness) -> String {
    format!(
        r#"import "std";
import "fs";
fun main(args: [str]) > int {{
    foreach (target in {}) {{
        try {{
            std.print("CONTENT {{fs.read(target)}}");
        }} catch (e: SandboxError) {{
            std.print("DENIED {{e.code}}");
        }}
    }}
    return 0;
}}
"#,
        buzz_list(
            SECRET_FILES
                .iter()
                .map(|rel| h.home_path(rel).display().to_string())
        )
    )
}

#[test]
fn with_the_sandbox_off_the_same_spell_leaks_proving_the_harness_sees_it() {
    let h = Harness::new();
    h.write_spell("dump", &dump_spell(&h));
    let on = h.run("dump", &[]);
    assert_eq!(on.status, Some(0), "{}", on.dump());
    assert_eq!(
        on.lines_starting("DENIED MGS2001").len(),
        SECRET_FILES.len()
    );
    h.assert_no_leak(&on);

    h.write_config("sandbox:\n  enabled: false\n");
    let off = h.run("dump", &[]);
    assert_eq!(off.status, Some(0), "{}", off.dump());
    assert_eq!(off.lines_starting("CONTENT ").len(), SECRET_FILES.len());
    for rel in SECRET_FILES {
        assert!(off.stdout.contains(h.secret(&format!("~/{rel}"))), "{rel}");
    }
    assert!(h.find_secret(off.stdout.as_bytes()).is_some());

    let mut h = h;
    h.write_config(support::SANDBOX_ON);
    h.set_env("MAGUS_SANDBOX_ENABLED", "0");
    let overridden = h.run("dump", &[]);
    assert_eq!(overridden.status, Some(0), "{}", overridden.dump());
    assert!(h.find_secret(overridden.stdout.as_bytes()).is_some());
}

/// A workspace whose own path is not UTF-8 (legal on Linux) still moves,
/// deletes and makes directories: the parent of a path used to round-trip
/// through a lossy string and be refused as MGS2002.
#[test]
fn a_workspace_whose_path_is_not_utf8_still_moves_and_deletes() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let h = Harness::new();
    let ws = h.ws_path("").join(OsStr::from_bytes(b"inner-\xff-ws"));
    std::fs::create_dir_all(ws.join("spells")).unwrap();
    std::fs::write(ws.join("magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
    let spell = r#"import "std";
import "fs";

fun main(args: [str]) > int {
    fs.write("a.txt", "hello");
    fs.move("a.txt", "b.txt");
    std.print("moved {fs.read("b.txt")}");
    fs.makeDirectory("d/e");
    fs.delete("b.txt");
    std.print("deleted {fs.exists("b.txt")}");
    return 0;
}
"#;
    std::fs::write(ws.join("spells/moves.buzz"), spell).unwrap();
    let mut cmd = h.command();
    cmd.arg("--workspace").arg(&ws).arg("run").arg("moves");
    let out = capture(&mut cmd);
    assert_eq!(out.status, Some(0), "{}", out.dump());
    assert!(out.stdout.contains("moved hello\n"), "{}", out.dump());
    assert!(out.stdout.contains("deleted false\n"), "{}", out.dump());
    assert!(ws.join("d/e").is_dir() && !ws.join("b.txt").exists());
}

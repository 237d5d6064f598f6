//! A child confined by the policy's ruleset (workspace rw, system ro, no
//! `/tmp`, a fake HOME with planted secrets outside every grant) cannot
//! read, write, execute or hard-link outside its grants, cannot reach the
//! network when it is denied, and ordinary work (cc, git, rename) still works.

mod kernel_support;

use std::fs;
use std::path::{Path, PathBuf};

use kernel_support::*;

fn main() {
    main_with(
        "kernel_confine",
        &[
            ("secrets_stay_unreadable", secrets_stay_unreadable),
            ("control_unconfined_child_reads_secret", control_unconfined),
            ("writes_outside_grants_fail", writes_outside_grants_fail),
            (
                "exec_from_ungranted_dir_fails",
                exec_from_ungranted_dir_fails,
            ),
            ("hard_link_of_secret_fails", hard_link_of_secret_fails),
            ("spawn_failures_are_typed", spawn_failures_are_typed),
            ("no_descriptor_leaks", no_descriptor_leaks),
            ("ordinary_work_works", ordinary_work_works),
            ("network_deny_blocks_loopback_connect", network_deny),
            ("network_allow_permits_loopback_connect", network_allow),
        ],
    );
}

/// A workspace and a fake HOME with secrets, both outside `/tmp`.
struct Fixture {
    _root: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
    secret: String,
}

const SECRET_FILES: [&str; 5] = [
    ".aws/credentials",
    ".ssh/id_rsa",
    ".vault-token",
    ".npmrc",
    ".kube/config",
];

impl Fixture {
    fn new() -> Self {
        let root = scratch_dir("confine");
        let home = root.path().join("home");
        let ws = root.path().join("ws");
        let secret = format!("SECRET-{}-{}", std::process::id(), Rng::new(7).next());
        for rel in SECRET_FILES {
            let file = home.join(rel);
            fs::create_dir_all(file.parent().unwrap()).unwrap();
            fs::write(&file, format!("{secret}\n")).unwrap();
        }
        fs::create_dir_all(ws.join("tmp")).unwrap();
        Fixture {
            _root: root,
            home,
            ws,
            secret,
        }
    }

    fn spec(&self, script: &str) -> Spec {
        let mut grants = system_grants();
        grants.push((self.ws.clone(), "rw".into()));
        Spec {
            pidns: true,
            guard: true,
            landlock: true,
            nested: true,
            grants,
            argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
            env: vec![
                ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
                ("HOME".into(), self.home.display().to_string()),
                ("TMPDIR".into(), self.ws.join("tmp").display().to_string()),
            ],
            cwd: Some(self.ws.clone()),
            ..Spec::default()
        }
    }

    fn run(&self, spec: &Spec) -> Result<(bool, String), String> {
        let out = Launch::new(spec).run()?;
        let all = text(&out);
        check(!all.contains("KTEST role error"), || all.clone())?;
        Ok((out.status.success(), all))
    }

    fn no_secret(&self, all: &str) -> Result<(), String> {
        check(!all.contains(&self.secret), || {
            format!("secret leaked:\n{all}")
        })
    }
}

fn secrets_stay_unreadable() -> CaseResult {
    let fx = Fixture::new();
    let home = fx.home.display();
    let attempts = [
        format!("cat {home}/.aws/credentials"),
        format!("sh -c 'cat {home}/.ssh/id_rsa'"),
        format!("/usr/bin/python3 -c 'print(open(\"{home}/.vault-token\").read())'"),
        format!("cat {home}/.npmrc {home}/.kube/config"),
        format!("ls -la {home} {home}/.ssh"),
        "cat ../home/.aws/credentials".to_owned(),
        "cat /proc/self/root/$HOME/.ssh/id_rsa".to_owned(),
    ];
    for attempt in attempts {
        let (ok, all) = fx.run(&fx.spec(&attempt))?;
        fx.no_secret(&all)?;
        check(!ok, || format!("`{attempt}` succeeded:\n{all}"))?;
    }
    Ok(Outcome::Pass)
}

/// Without Landlock the same read works: the tests above test something.
fn control_unconfined() -> CaseResult {
    let fx = Fixture::new();
    let mut spec = fx.spec(&format!("cat {}/.aws/credentials", fx.home.display()));
    spec.landlock = false;
    let (ok, all) = fx.run(&spec)?;
    check(ok && all.contains(&fx.secret), || {
        format!("control read failed:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn writes_outside_grants_fail() -> CaseResult {
    let fx = Fixture::new();
    let home = fx.home.display();
    let targets = [
        format!("{home}/pwned"),
        format!("{home}/.ssh/authorized_keys"),
        "/etc/magus-ktest-pwned".to_owned(),
        "/usr/magus-ktest-pwned".to_owned(),
        "/var/tmp/magus-ktest-pwned".to_owned(),
    ];
    for target in &targets {
        let (ok, all) = fx.run(&fx.spec(&format!("echo x > {target}")))?;
        check(!ok && !Path::new(target).exists(), || {
            format!("write to {target} succeeded:\n{all}")
        })?;
    }
    let script = format!("echo moved > a && mv a {home}/moved");
    let (ok, all) = fx.run(&fx.spec(&script))?;
    check(!ok && !fx.home.join("moved").exists(), || {
        format!("rename out of the workspace succeeded:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn exec_from_ungranted_dir_fails() -> CaseResult {
    let fx = Fixture::new();
    let bin = fx.home.join("bin");
    fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    fs::copy("/bin/true", bin.join("true")).map_err(|e| e.to_string())?;
    let (ok, all) = fx.run(&fx.spec(&format!("{}/true", bin.display())))?;
    check(!ok && all.contains("ermission denied"), || {
        format!("exec from ungranted dir:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

/// A failed exec in the nested domain comes back to the role as
/// `EnforceError::Spawn` with the child's errno: ENOENT for a missing
/// program, EACCES for one Landlock refuses to execute.
fn spawn_failures_are_typed() -> CaseResult {
    let fx = Fixture::new();
    let bin = fx.home.join("bin");
    fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    fs::copy("/bin/true", bin.join("true")).map_err(|e| e.to_string())?;
    let ungranted = bin.join("true").display().to_string();
    let cases = [
        ("/nonexistent/prog".to_owned(), "(os error 2)"),
        (ungranted, "(os error 13)"),
    ];
    for (program, errno) in cases {
        let mut spec = fx.spec("");
        spec.argv = vec![program.clone()];
        let out = Launch::new(&spec).run()?;
        let all = text(&out);
        let want = format!("KTEST role error: cannot start {program}: ");
        check(all.contains(&want) && all.contains(errno), || {
            format!("expected `{want}... {errno}`:\n{all}")
        })?;
    }
    Ok(Outcome::Pass)
}

/// The confined child holds only its stdio, what the test driver itself
/// lets every child inherit, and ls's own directory handle; the spawn
/// leaves magus with as many descriptors as before.
fn no_descriptor_leaks() -> CaseResult {
    let fx = Fixture::new();
    let mut spec = fx.spec("");
    spec.argv = vec!["/bin/ls".into(), "/proc/self/fd".into()];
    let mut expected = inheritable_fds();
    let (ok, all) = fx.run(&spec)?;
    expected.extend([0, 1, 2]);
    expected.sort_unstable();
    expected.dedup();
    let extra: Vec<i32> = all
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|fd| !expected.contains(fd))
        .collect();
    check(ok && extra.len() == 1, || {
        format!("child descriptors beyond {expected:?} and ls's own: {extra:?}\n{all}")
    })?;
    let counts = all
        .lines()
        .find_map(|l| l.strip_prefix("KTEST parent_fds_before="))
        .and_then(|rest| rest.split_once(" after="));
    check(matches!(counts, Some((a, b)) if a == b), || {
        format!("the spawn changed magus's descriptors:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

/// This process's descriptors without FD_CLOEXEC: every child inherits them.
fn inheritable_fds() -> Vec<i32> {
    let listed: Vec<i32> = fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    listed
        .into_iter()
        // SAFETY: F_GETFD only reads the flags; a closed number gives -1.
        .filter(|fd| unsafe { libc::fcntl(*fd, libc::F_GETFD) } == 0)
        .collect()
}

fn hard_link_of_secret_fails() -> CaseResult {
    let fx = Fixture::new();
    let script = format!("ln {}/.ssh/id_rsa stolen; cat stolen", fx.home.display());
    let (ok, all) = fx.run(&fx.spec(&script))?;
    fx.no_secret(&all)?;
    check(!ok && !fx.ws.join("stolen").exists(), || {
        format!("hard link into the workspace:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

fn ordinary_work_works() -> CaseResult {
    let fx = Fixture::new();
    fs::write(
        fx.ws.join("hello.c"),
        "#include <stdio.h>\nint main(void){puts(\"hello-from-cc\");return 0;}\n",
    )
    .map_err(|e| e.to_string())?;
    let script = "set -e
        cc -o hello hello.c && ./hello
        git init -q repo && cd repo
        echo one > a.txt && mv a.txt b.txt && mkdir d && mv b.txt d/c.txt
        git add -A
        git -c user.name=k -c user.email=k@example.com commit -qm first
        git log --oneline | wc -l | sed 's/^/commits=/'";
    let (ok, all) = fx.run(&fx.spec(script))?;
    check(ok, || format!("ordinary work failed:\n{all}"))?;
    check(
        all.contains("hello-from-cc") && all.contains("commits=1"),
        || format!("unexpected output:\n{all}"),
    )?;
    check(fx.ws.join("repo/d/c.txt").exists(), || "rename lost".into())?;
    Ok(Outcome::Pass)
}

fn connect_script(port: u16) -> String {
    format!(
        "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 5); print(\"connected\")'"
    )
}

fn network_case(net: NetSpec) -> Result<(bool, String), String> {
    let fx = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let mut spec = fx.spec(&connect_script(port));
    spec.network = net;
    fx.run(&spec)
}

fn network_deny() -> CaseResult {
    let (ok, all) = network_case(NetSpec::Deny)?;
    check(
        // Refused by the loopback-only namespace (nothing listens there),
        // or by the seccomp fallback where namespaces are refused.
        !ok && !all.contains("connected")
            && (all.contains("ConnectionRefusedError") || all.contains("PermissionError")),
        || format!("connect with network deny:\n{all}"),
    )?;
    Ok(Outcome::Pass)
}

fn network_allow() -> CaseResult {
    let (ok, all) = network_case(NetSpec::Allow)?;
    check(ok && all.contains("connected"), || {
        format!("connect with network allow:\n{all}")
    })?;
    Ok(Outcome::Pass)
}

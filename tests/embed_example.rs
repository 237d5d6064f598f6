//! `examples/embed.rs`, executed: its own `main` is compiled into this
//! binary and run in a child process (this binary again, with
//! `--embed-example`), from inside a temporary workspace with a fake HOME
//! of planted secrets, as root and as uid 65534. The workspace's `hello`
//! spell prints a greeting and tries to read `~/.ssh/id_rsa`; a control
//! run with the sandbox off shows that read succeeding, so the refusal
//! under the sandbox means something.
//!
//! `harness = false`: the child must be a single-threaded process of our
//! own (the facade installs the sandbox on the whole process, and may
//! re-execute it with the same arguments to scrub the environment).

#[path = "../examples/embed.rs"]
mod embed;
mod support;

use std::process::{Command, ExitCode};
use support::{can_switch_user, capture, open_to_everyone, Harness, RunOutput};

/// The argument that makes this binary play the example.
const CHILD: &str = "--embed-example";
/// The argument that makes it install with `CompatLevel::HardRequirement`
/// and say what happened (`installed`, or the refusal).
const HARD: &str = "--hard-requirement";
/// The argument that makes it run the README's snippet, whose errors `?`
/// returns from a `main` (Rust prints them with `Debug`).
const SNIPPET: &str = "--readme-snippet";

const HELLO: &str = r#"import "buzz:std";
import "fs";
import "env";

fun main(args: [str]) > void {
    std\print("hello from the embedded sandbox");
    final home = env\get("HOME") ?? "/nonexistent";
    try {
        final text = fs\read("{home}/.ssh/id_rsa");
        std\print("read the key: {text}");
    } catch (e: SandboxError) {
        std\print("key refused: {e.code}");
    }
}
"#;

/// A named case, run once per user.
type Case = (&'static str, fn(&User) -> Result<(), String>);

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some(CHILD) => return embed::main(),
        Some(HARD) => return install_hard(),
        Some(SNIPPET) => return std::process::Termination::report(readme_snippet()),
        _ => {}
    }
    let mut cases: Vec<Case> = vec![
        (
            "runs_hello_and_refuses_the_key",
            runs_hello_and_refuses_the_key,
        ),
        (
            "control_without_the_sandbox_reads_the_key",
            control_reads_the_key,
        ),
    ];
    cases.push((
        "an_error_prints_as_one_sentence_not_a_dump",
        errors_print_as_sentences,
    ));
    if cfg!(kernel_layer) {
        cases.push((
            "hard_requirement_refuses_a_sandbox_turned_off",
            hard_refuses_off,
        ));
        cases.push((
            "hard_requirement_refuses_no_landlock",
            hard_refuses_no_landlock,
        ));
    } else {
        cases.push((
            "hard_requirement_refuses_the_interpreter_layer_alone",
            hard_refuses_interpreter_only,
        ));
    }
    let (mut failed, mut skipped) = (0, 0);
    for user in users() {
        let User::Skipped(why) = &user else {
            for (name, case) in &cases {
                let result = case(&user);
                println!(
                    "{} {name} as {}: {}",
                    mark(&result),
                    user.name(),
                    verdict(&result)
                );
                failed += usize::from(result.is_err());
            }
            continue;
        };
        println!("SKIP every case as uid 65534: {why}");
        skipped += cases.len();
    }
    println!("embed_example: {failed} failed, {skipped} skipped");
    if failed > 0 || (skipped > 0 && skips_fail()) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn mark(result: &Result<(), String>) -> &'static str {
    if result.is_ok() {
        "ok  "
    } else {
        "FAIL"
    }
}

fn verdict(result: &Result<(), String>) -> String {
    match result {
        Ok(()) => "passed".into(),
        Err(why) => why.clone(),
    }
}

/// Who the example runs as.
enum User {
    Current,
    Nobody,
    Skipped(String),
}

impl User {
    fn name(&self) -> &'static str {
        match self {
            User::Current => "the current user",
            User::Nobody | User::Skipped(_) => "uid 65534",
        }
    }
}

fn users() -> Vec<User> {
    let nobody = if !nix::unistd::geteuid().is_root() {
        User::Skipped("not root".into())
    } else if !can_switch_user() {
        User::Skipped("setpriv cannot switch to uid 65534".into())
    } else {
        User::Nobody
    };
    vec![User::Current, nobody]
}

/// As the kernel tests: under CI as root every case can run, so a skip
/// is a failure there.
fn skips_fail() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    ci && nix::unistd::geteuid().is_root()
}

fn runs_hello_and_refuses_the_key(user: &User) -> Result<(), String> {
    let h = workspace("sandbox:\n  enabled: true\n");
    let out = run_child(&h, user, CHILD, &[]);
    check(
        out.status == Some(0),
        || format!("exit status {:?}", out.status),
        &out,
    )?;
    check(
        out.stdout.contains("hello from the embedded sandbox"),
        || "no greeting".into(),
        &out,
    )?;
    check(
        out.stdout.contains("key refused: MGS2001"),
        || "the key was not refused".into(),
        &out,
    )?;
    match h.find_secret(format!("{}{}", out.stdout, out.stderr).as_bytes()) {
        Some(secret) => Err(format!("{} leaked\n{}", secret.origin, out.dump())),
        None => Ok(()),
    }
}

fn control_reads_the_key(user: &User) -> Result<(), String> {
    let h = workspace("sandbox:\n  enabled: false\n");
    let out = run_child(&h, user, CHILD, &[]);
    let key = h.secret("~/.ssh/id_rsa");
    check(
        out.status == Some(0),
        || format!("exit status {:?}", out.status),
        &out,
    )?;
    check(
        out.stdout.contains(&format!("read the key: {key}")),
        || "the key was not read".into(),
        &out,
    )
}

/// The child of the `HardRequirement` cases: exits 0 once installed, 125
/// with the refusal's diagnostic on stderr otherwise.
fn install_hard() -> ExitCode {
    use magus_sandbox::{CompatLevel, Sandbox};
    let sandbox = match Sandbox::discover(".") {
        Ok(sandbox) => sandbox,
        Err(e) => return refused(e.diagnostic()),
    };
    match sandbox.install(CompatLevel::HardRequirement) {
        Ok(_) => {
            println!("installed");
            ExitCode::SUCCESS
        }
        Err(e) => refused(e.diagnostic()),
    }
}

fn refused(diagnostic: &magus_sandbox::Diagnostic) -> ExitCode {
    eprint!("{diagnostic}");
    ExitCode::from(125)
}

fn hard_refuses_off(user: &User) -> Result<(), String> {
    let h = workspace("sandbox:\n  enabled: false\n");
    let out = run_child(&h, user, HARD, &[]);
    check(
        out.status == Some(125),
        || format!("exit status {:?}", out.status),
        &out,
    )?;
    check(
        out.stderr.contains("the policy turns it off"),
        || "no refusal".into(),
        &out,
    )?;
    // Control: the same workspace with the sandbox on installs.
    h.write_config("sandbox:\n  enabled: true\n");
    let out = run_child(&h, user, HARD, &[]);
    check(
        out.status == Some(0),
        || format!("control: exit status {:?}", out.status),
        &out,
    )?;
    check(
        out.stdout.contains("installed"),
        || "control: not installed".into(),
        &out,
    )
}

/// `MAGUS_SANDBOX_LANDLOCK=0` is a kernel without Landlock to magus.
fn hard_refuses_no_landlock(user: &User) -> Result<(), String> {
    let h = workspace("sandbox:\n  enabled: true\n");
    let out = run_child(&h, user, HARD, &[("MAGUS_SANDBOX_LANDLOCK", "0")]);
    check(
        out.status == Some(125),
        || format!("exit status {:?}", out.status),
        &out,
    )?;
    check(
        out.stderr.contains("Landlock is unavailable"),
        || "no refusal".into(),
        &out,
    )?;
    check(
        out.stderr.contains("nothing was restricted"),
        || "no note".into(),
        &out,
    )?;
    check(
        !out.stdout.contains("installed"),
        || "installed anyway".into(),
        &out,
    )
}

/// A magus built without the kernel layer has no Landlock to offer.
fn hard_refuses_interpreter_only(user: &User) -> Result<(), String> {
    let h = workspace("sandbox:\n  enabled: true\n");
    let out = run_child(&h, user, HARD, &[]);
    check(
        out.status == Some(125),
        || format!("exit status {:?}", out.status),
        &out,
    )?;
    check(
        out.stderr.contains("MGS2005") && out.stderr.contains("interpreter layer"),
        || "no refusal naming the interpreter layer".into(),
        &out,
    )?;
    check(
        !out.stdout.contains("installed"),
        || "installed anyway".into(),
        &out,
    )
}

/// The README's library example as a user pastes it into their `main`:
/// every error returned with `?`.
fn readme_snippet() -> Result<(), Box<dyn std::error::Error>> {
    use magus_sandbox::{CompatLevel, Sandbox};
    let sandbox = Sandbox::discover(".")?;
    let spell = sandbox.spell("hello")?;
    let installed = sandbox.install(CompatLevel::BestEffort)?;
    for warning in installed.diagnostics() {
        eprint!("{warning}");
    }
    let status = installed.enter(|runtime| runtime.run(&spell, Vec::new()))??;
    println!("status {status}");
    Ok(())
}

/// Issue 35: errors returned to an embedder printed as `Debug` dumps of
/// their fields. A workspace without the `hello` spell: the example says
/// the error's `Display` (one sentence, one line) and exits 127 as
/// `magus run` would; the README's snippet, returning it from `main`,
/// prints the diagnostic as `magus` does. The control: with the spell
/// there, both run it.
fn errors_print_as_sentences(user: &User) -> Result<(), String> {
    let h = workspace("sandbox:\n  enabled: true\n");
    std::fs::rename(
        h.ws_path("spells/hello.buzz"),
        h.ws_path("spells/later.buzz"),
    )
    .map_err(|e| e.to_string())?;
    let out = run_child(&h, user, CHILD, &[]);
    check(
        out.status == Some(127),
        || format!("exit status {:?}", out.status),
        &out,
    )?;
    let lines: Vec<&str> = out.stderr.lines().collect();
    check(
        lines.len() == 1
            && lines[0].starts_with("error: cannot read spell `hello`")
            && out.stderr.ends_with('\n'),
        || "not one sentence on one line".into(),
        &out,
    )?;
    let out = run_child(&h, user, SNIPPET, &[]);
    check(
        out.status == Some(1),
        || "the snippet did not fail".into(),
        &out,
    )?;
    check(
        out.stderr
            .starts_with("Error: error: cannot read spell `hello`")
            && !out.stderr.contains("diagnostic:")
            && !out.stderr.contains("Diagnostic {"),
        || "the snippet's error is a dump".into(),
        &out,
    )?;
    std::fs::rename(
        h.ws_path("spells/later.buzz"),
        h.ws_path("spells/hello.buzz"),
    )
    .map_err(|e| e.to_string())?;
    for role in [CHILD, SNIPPET] {
        let out = run_child(&h, user, role, &[]);
        check(
            out.status == Some(0) && out.stdout.contains("hello from the embedded sandbox"),
            || format!("control {role}: exit status {:?}", out.status),
            &out,
        )?;
    }
    Ok(())
}

fn check(cond: bool, why: impl FnOnce() -> String, out: &RunOutput) -> Result<(), String> {
    if cond {
        return Ok(());
    }
    Err(format!("{}\n{}", why(), out.dump()))
}

/// A workspace holding `magus.yaml` (`config`) and the `hello` spell,
/// usable by uid 65534.
fn workspace(config: &str) -> Harness {
    let h = Harness::with_config(config);
    h.write_spell("hello", HELLO);
    open_to_everyone(&h.root);
    h
}

/// This binary in the role `role`, from inside the workspace, with the
/// harness's environment (secrets included) and `extra` variables.
fn run_child(h: &Harness, user: &User, role: &str, extra: &[(&str, &str)]) -> RunOutput {
    let me = std::env::current_exe().expect("the test binary's path");
    let mut cmd = match user {
        User::Nobody => {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            cmd.arg(me);
            cmd
        }
        _ => Command::new(me),
    };
    cmd.arg(role).env_clear().current_dir(&h.ws);
    for (k, v) in h.command().get_envs() {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.envs(extra.iter().copied());
    capture(&mut cmd)
}

//! No false positives: over every `.buzz` file of the repository (its
//! spells, the test and fuzz corpora, the escape suite's attacks, the
//! libraries) and, when `MAGUS_UPSTREAM_BUZZ` names a checkout of
//! upstream Buzz, over upstream's files, each denial foreseen under a
//! sandboxed policy is one the run meets: a read is made for real through
//! the gate and must be refused with the same code; a write, removal or
//! launch must be one the policy refuses (writes are not made).

use super::{calls, foreseen, Gated};
use crate::bindings::Session;
use crate::diag::Diagnostic;
use crate::enforce::gate::{Denial, DenialReason, FsOp, GateError, PathUse};
use crate::policy::{native, Access, StartupInput, WorkspaceArg};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Every `.buzz` file under `dir`, at any depth.
fn buzz_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.ends_with("target") && !path.ends_with(".git") {
            buzz_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "buzz") {
            out.push(path);
        }
    }
}

/// A session over a sandboxed workspace of its own, as `magus check`
/// makes one.
fn session(workspace: &Path, env: &[(OsString, OsString)]) -> Rc<Session> {
    std::fs::write(workspace.join("magus.yaml"), "sandbox:\n  enabled: true\n")
        .expect("magus.yaml");
    let input = StartupInput {
        workspace: WorkspaceArg::Explicit(workspace),
        env,
        spell: None,
    };
    let policy = crate::policy::declare(input)
        .expect("a policy")
        .resolve(env)
        .policy;
    let sink: super::super::DiagnosticSink = Rc::new(|_: &Diagnostic| {});
    crate::sandbox::spell_checker::checking_session(policy, env, sink)
}

/// Whether `denial`, foreseen for `gated`, is what the run meets.
fn is_real(gated: &Gated, denial: &Denial, session: &Session) -> bool {
    let gate = session.gate();
    let refused = |e: GateError| matches!(e, GateError::Denied(d) if d.code() == denial.code());
    match gated {
        Gated::Path {
            op,
            usage: PathUse::Read,
            spelled,
        } => match op {
            FsOp::Exists => gate.exists(spelled).err().is_some_and(refused),
            FsOp::List => gate.list(spelled).err().is_some_and(refused),
            _ => gate.read(spelled).err().is_some_and(refused),
        },
        Gated::Path { .. } => policy_refuses(denial, session),
        Gated::Program(name) => {
            let path = session.child_path();
            let found = gate.resolve_program(name, path.as_deref());
            found.err().is_some_and(refused)
        }
        Gated::Variable(_) => false,
    }
}

/// A write's denial, checked against the policy rather than made.
fn policy_refuses(denial: &Denial, session: &Session) -> bool {
    let policy = session.gate().policy();
    match denial.reason {
        DenialReason::Protected => {
            let rest = denial.checked.strip_prefix(policy.workspace());
            rest.is_ok_and(|rest| {
                rest.components().any(|c| {
                    let name = c.as_os_str().to_string_lossy().to_lowercase();
                    matches!(name.as_str(), "magus.yaml" | "magus.lock" | ".git" | ".hg")
                })
            })
        }
        DenialReason::NotGranted => {
            let real = denial.leads_to.as_deref().unwrap_or(&denial.checked);
            let hidden = policy.hidden().iter().any(|h| real.starts_with(h));
            let granted =
                native::from_os(real).is_ok_and(|p| policy.check(&p, Access::Write).is_allowed());
            hidden || !granted
        }
        _ => true,
    }
}

/// Literal calls whose refusals are known: four refused, the rest not.
const PROBE: &str = r#"import "fs";
import "sh";
fun main(args: [str]) > void {
    fs.read("/etc/shadow");
    fs.exists("/proc/1/environ");
    fs.write("magus.yaml", "x");
    fs.delete(".git/config");
    fs.read("magus.yaml");
    fs.write("out/x.txt", "x");
    sh.run(["/bin/sh", "-c", "true"]);
}
"#;

#[test]
fn every_denial_foreseen_in_the_corpora_is_real() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["spells", "tests", "fuzz", "benches", "src"] {
        buzz_files(&root.join(dir), &mut files);
    }
    let upstream = std::env::var_os("MAGUS_UPSTREAM_BUZZ").map(PathBuf::from);
    if let Some(upstream) = &upstream {
        buzz_files(upstream, &mut files);
    }
    let scratch = tempfile::tempdir().expect("a workspace");
    let workspace = scratch.path().canonicalize().expect("canonical");
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let session = session(&workspace, &env);
    let (mut parsed, mut literal, mut foreseen_count, mut fatal) = (0, 0, 0, 0);
    let probe = workspace.join("spells/probe.buzz");
    std::fs::create_dir_all(workspace.join("spells")).expect("spells/");
    std::fs::write(&probe, PROBE).expect("the probe");
    files.push(probe);
    for file in &files {
        let Ok(source) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(program) = crate::buzz::parse(file, &source) else {
            continue;
        };
        parsed += 1;
        for call in calls(&program) {
            literal += usize::from(!call.checks.is_empty());
            let Some((gated, denial)) = call
                .checks
                .iter()
                .find_map(|(g, _)| Some((g, foreseen(g, &session)?)))
            else {
                continue;
            };
            foreseen_count += 1;
            eprintln!("{}: {}", file.display(), denial.message());
            fatal += usize::from(call.fatal);
            assert!(
                is_real(gated, &denial, &session),
                "{}: {gated:?} foreseen as {}, but the run would not refuse it",
                file.display(),
                denial.message()
            );
        }
    }
    assert!(parsed >= 200, "only {parsed} files parsed");
    // The probe's four refusals at least, so the check above means
    // something even where the corpora spell none.
    assert!(
        foreseen_count >= 4,
        "only {foreseen_count} denials foreseen"
    );
    eprintln!(
        "{parsed} files ({} upstream), {literal} calls with a literal, \
         {foreseen_count} denials foreseen, {fatal} fatal",
        match upstream {
            Some(dir) => dir.display().to_string(),
            None => "none".to_string(),
        }
    );
}

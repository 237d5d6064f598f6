//! Differential test of the three things compiled from one policy: for
//! random policies over a real directory tree, what the kernel allows a
//! process confined by our ruleset equals the policy trie's decision
//! (`kernel_support::expected`), and — for every other policy, run inside
//! the jail — a path exists in the view exactly when it lies under a grant
//! or on the way to one. One confined child per policy probes many (path,
//! access) cases in-process.

mod kernel_support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use kernel_support::*;
use magus_sandbox::testing::policy::{Access, Mode};

fn main() {
    main_with(
        "kernel_differential",
        &[("kernel_agrees_with_reference", kernel_agrees)],
    );
}

const POLICIES: usize = 30;
const PROBES_PER_POLICY: usize = 40;

struct Node {
    path: PathBuf,
    is_dir: bool,
}

/// A tree three levels deep with a few directories and files per level.
/// Files are executable garbage, so `execve` reports ENOEXEC when allowed.
fn build_tree(root: &std::path::Path, rng: &mut Rng) -> Vec<Node> {
    let mut nodes = vec![Node {
        path: root.to_path_buf(),
        is_dir: true,
    }];
    let mut frontier = vec![root.to_path_buf()];
    for _depth in 0..3 {
        let mut next = Vec::new();
        for dir in &frontier {
            for i in 0..1 + rng.below(3) {
                let sub = dir.join(format!("d{i}"));
                fs::create_dir(&sub).expect("mkdir");
                nodes.push(Node {
                    path: sub.clone(),
                    is_dir: true,
                });
                next.push(sub);
            }
            for i in 0..1 + rng.below(2) {
                let file = dir.join(format!("f{i}"));
                fs::write(&file, "garbage, not a program\n").expect("write");
                fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).expect("chmod");
                nodes.push(Node {
                    path: file,
                    is_dir: false,
                });
            }
        }
        frontier = next;
    }
    nodes
}

fn random_grants(nodes: &[Node], rng: &mut Rng) -> Vec<(PathBuf, Mode)> {
    (0..1 + rng.below(5))
        .map(|_| {
            let mode = if rng.below(2) == 0 {
                Mode::Ro
            } else {
                Mode::Rw
            };
            (nodes[rng.below(nodes.len())].path.clone(), mode)
        })
        .collect()
}

fn random_probes(nodes: &[Node], rng: &mut Rng) -> Vec<(Probe, Access)> {
    (0..PROBES_PER_POLICY)
        .map(|_| {
            let node = &nodes[rng.below(nodes.len())];
            let choices: &[Access] = if node.is_dir {
                &[Access::Read, Access::Write]
            } else {
                &[Access::Read, Access::Write, Access::Execute]
            };
            let access = choices[rng.below(choices.len())];
            let name = match access {
                Access::Read => "read",
                Access::Write => "write",
                Access::Execute => "execute",
            };
            let probe = Probe {
                path: node.path.clone(),
                is_dir: node.is_dir,
                access: name.into(),
            };
            (probe, access)
        })
        .collect()
}

/// Runs one confined child over the probes (in the jail's view when
/// `view`); the kernel's answers.
fn kernel_answers(
    grants: &[(PathBuf, Mode)],
    probes: &[Probe],
    view: bool,
) -> Result<ProbeAnswers, String> {
    let spec = Spec {
        landlock: true,
        view,
        grants: grants
            .iter()
            .map(|(p, m)| (p.clone(), m.as_str().to_owned()))
            .collect(),
        probes: probes.to_vec(),
        ..Spec::default()
    };
    let out = Launch::new(&spec).run()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.trim()).map_err(|e| format!("{e}:\n{}", text(&out)))
}

/// What the view shows: everything under a grant, and the directories on
/// the way to one (mount points), nothing else.
fn in_the_view(grants: &[(PathBuf, Mode)], path: &std::path::Path) -> bool {
    grants
        .iter()
        .any(|(g, _)| path.starts_with(g) || g.starts_with(path))
}

fn kernel_agrees() -> CaseResult {
    let seed = std::env::var("KTEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut rng = Rng::new(seed);
    let dir = scratch_dir("diff");
    let root = dir.path().canonicalize().map_err(|e| e.to_string())?;
    let nodes = build_tree(&root.join("t"), &mut {
        fs::create_dir(root.join("t")).map_err(|e| e.to_string())?;
        Rng::new(seed ^ 0xabcdef)
    });
    let (mut cases, mut allowed, mut visible, mut in_view) = (0, 0, 0, 0);
    let mut disagreements = Vec::new();
    for index in 0..POLICIES {
        let view = index % 2 == 1;
        let grants = random_grants(&nodes, &mut rng);
        let probes = random_probes(&nodes, &mut rng);
        let only: Vec<Probe> = probes.iter().map(|(p, _)| p.clone()).collect();
        let kernel = kernel_answers(&grants, &only, view)?;
        check(kernel.allowed.len() == probes.len(), || {
            "short answer".into()
        })?;
        let answers = kernel.allowed.iter().zip(&kernel.exists);
        for ((probe, access), (&got, &exists)) in probes.iter().zip(answers) {
            cases += 1;
            allowed += usize::from(got);
            let want = expected(&grants, &probe.path, *access);
            if want != got {
                disagreements.push(format!(
                    "{grants:?}: {access:?} {} kernel={got} trie={want} (view: {view})",
                    probe.path.display()
                ));
            }
            if view {
                in_view += 1;
                visible += usize::from(exists);
                let shown = in_the_view(&grants, &probe.path);
                if shown != exists {
                    disagreements.push(format!(
                        "{grants:?}: {} exists in the view: {exists}, expected {shown}",
                        probe.path.display()
                    ));
                }
            }
        }
    }
    check(visible > 0 && visible < in_view, || {
        format!("{visible} of {in_view} paths in the view exist: not a mix")
    })?;
    check(cases >= 500, || format!("only {cases} cases"))?;
    // A degenerate run (all allowed, or all denied) would prove nothing.
    check(allowed > cases / 10 && allowed < cases * 9 / 10, || {
        format!("{allowed} of {cases} allowed: not a mix")
    })?;
    check(disagreements.is_empty(), || {
        format!(
            "seed {seed}: {} of {cases} disagree:\n{}",
            disagreements.len(),
            disagreements.join("\n")
        )
    })?;
    println!("  {cases} cases ({allowed} allowed, {in_view} in the jail's view of which {visible} exist) over {POLICIES} policies, seed {seed}: zero disagreements");
    Ok(Outcome::Pass)
}

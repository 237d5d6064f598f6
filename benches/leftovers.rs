//! The sweep after a run (`enforce::leftovers`) on a workspace of 10,000
//! files in 500 directories with a repository: what noting the state
//! costs at start-up, and what the walk costs once the run has ended
//! (nothing changed, so nothing moves: the price every run pays), with
//! and without the listing of executables that `-v` and JSON ask for;
//! then the same workspace with a `__pycache__` of bytecode in each
//! directory, which the sweep compares file by file.
//!
//! Run: `cargo bench --bench leftovers -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, Criterion};
use magus_sandbox::testing::enforce::leftovers::{Executables, Inputs, Watch};
use std::hint::black_box;
use std::path::Path;

const DIRS: usize = 500;
const FILES_PER_DIR: usize = 20;

/// `DIRS` directories two levels deep, `FILES_PER_DIR` files in each, and
/// a `.git` at the root.
fn workspace(root: &Path) -> Inputs {
    for d in 0..DIRS {
        let dir = root.join(format!("d{}", d % 25)).join(format!("e{d}"));
        std::fs::create_dir_all(&dir).expect("a directory");
        for f in 0..FILES_PER_DIR {
            std::fs::write(dir.join(format!("f{f}.rs")), "x").expect("a file");
        }
    }
    let git = root.join(".git");
    for sub in ["objects", "refs/heads", "hooks"] {
        std::fs::create_dir_all(git.join(sub)).expect("the repository");
    }
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    // The directories the jail's start-up search lists.
    let mut directories = vec![root.to_path_buf()];
    for d in 0..DIRS {
        let parent = root.join(format!("d{}", d % 25));
        if d < 25 {
            directories.push(parent.clone());
        }
        directories.push(parent.join(format!("e{d}")));
    }
    Inputs {
        workspace: root.to_path_buf(),
        repositories: vec![git],
        directories: Some(directories),
        ..Inputs::default()
    }
}

fn sweep(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let inputs = workspace(dir.path());
    let mut group = c.benchmark_group("leftovers");
    // (Each iteration clones the inputs, which a run does not.)
    group.bench_function("note at start (10,000 files)", |b| {
        b.iter(|| black_box(Watch::before(inputs.clone())))
    });
    let watch = Watch::before(inputs.clone());
    for (name, executables) in [
        ("sweep after the run (10,000 files)", Executables::Skip),
        (
            "sweep after the run, listing executables (-v, JSON)",
            Executables::List,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let found = watch.after(executables);
                assert!(found.items.is_empty());
                // Listing executables reads every file; otherwise only
                // what changed is read (here, next to nothing).
                assert_eq!(executables == Executables::List, found.entries > 10_000);
                black_box(found)
            })
        });
    }
    group.finish();
    bytecode(c);
}

/// The same workspace after the user imported it in Python: each of its
/// directories holds a `__pycache__` of `FILES_PER_DIR` bytecode files,
/// which the sweep notes at start-up and compares one by one after the
/// run (a child may rewrite one in place, which changes no directory).
fn bytecode(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut inputs = workspace(dir.path());
    for listed in inputs
        .directories
        .clone()
        .unwrap_or_default()
        .iter()
        .skip(1)
    {
        if !listed
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('e'))
        {
            continue;
        }
        let cache = listed.join("__pycache__");
        std::fs::create_dir_all(&cache).expect("a __pycache__");
        for f in 0..FILES_PER_DIR {
            std::fs::write(cache.join(format!("f{f}.cpython-312.pyc")), "x").expect("bytecode");
        }
        inputs.existing.push(cache);
    }
    let mut group = c.benchmark_group("leftovers with bytecode");
    group.bench_function("note at start (10,000 files, 10,000 .pyc)", |b| {
        b.iter(|| black_box(Watch::before(inputs.clone())))
    });
    let watch = Watch::before(inputs.clone());
    group.bench_function("sweep after the run (10,000 files, 10,000 .pyc)", |b| {
        b.iter(|| {
            let found = watch.after(Executables::Skip);
            assert!(found.items.is_empty());
            black_box(found)
        })
    });
    group.finish();
}

criterion_group!(benches, sweep);
criterion_main!(benches);

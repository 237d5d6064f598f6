//! Where tests put fake `HOME`s and workspaces: never under `/tmp`, which
//! the sandbox grants read-write by default, or planted secrets would be
//! readable by design and the leak checks would test nothing.

use std::path::PathBuf;

/// `target/tmp` normally; `/var/tmp/magus-sandbox-tests` when the checkout
/// itself lives under `/tmp`, or inside a magus workspace (this repository
/// has a `magus.yaml`): discovery refuses a workspace nested in a
/// sandboxed one whose `magus.yaml` turns the sandbox off (a child could
/// have planted it), and fixtures are such workspaces. (Unit tests in
/// `src/` include this file too: Cargo gives them no `CARGO_TARGET_TMPDIR`,
/// so they use the package's `target/tmp`.)
pub(super) fn base() -> PathBuf {
    let target = option_env!("CARGO_TARGET_TMPDIR").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/tmp")),
        PathBuf::from,
    );
    std::fs::create_dir_all(&target).expect("create the scratch base");
    let real = std::fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
    let in_workspace = real.ancestors().any(|dir| dir.join("magus.yaml").is_file());
    if !real.starts_with("/tmp") && !in_workspace {
        return target;
    }
    let fallback = PathBuf::from("/var/tmp/magus-sandbox-tests");
    std::fs::create_dir_all(&fallback).expect("create /var/tmp/magus-sandbox-tests");
    fallback
}

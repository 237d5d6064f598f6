//! Where tests put fake `HOME`s and workspaces: never under `/tmp`, which
//! the sandbox grants read-write by default, or planted secrets would be
//! readable by design and the leak checks would test nothing.

use std::path::PathBuf;

/// `target/tmp` normally; `/var/tmp/magus-sandbox-tests` when the checkout
/// itself lives under `/tmp`.
pub fn base() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let real = std::fs::canonicalize(&target).unwrap_or_else(|_| target.clone());
    if !real.starts_with("/tmp") {
        return target;
    }
    let fallback = PathBuf::from("/var/tmp/magus-sandbox-tests");
    std::fs::create_dir_all(&fallback).expect("create /var/tmp/magus-sandbox-tests");
    fallback
}

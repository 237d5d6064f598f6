//! The spell's own files it imports (`import "lib/common";`), read through
//! the gate as the run reads them, so their literal calls are looked at
//! too: they run under the importing spell's policy.

use super::Session;
use crate::buzz::syntax::ast::StmtKind;
use crate::buzz::Program;
use std::path::{Path, PathBuf};

/// More imported files than a spell has; a bound on what a check reads.
const MAX_FILES: usize = 64;

/// The names a bare `import "name";` means a module by, never a file
/// (magus's and upstream's libraries).
const MODULES: [&str; 15] = [
    "std",
    "math",
    "fs",
    "sh",
    "env",
    "os",
    "io",
    "test",
    "crypto",
    "serialize",
    "buffer",
    "ioraw",
    "bufraw",
    "cryptoraw",
    "jsonraw",
];

/// The files `program` imports, and theirs, each parsed once; a file the
/// gate refuses or that does not parse is left to the checker, which
/// reports it.
pub(super) fn imported(program: &Program, session: &Session) -> Vec<Program> {
    let mut seen: Vec<PathBuf> = vec![program.file.clone()];
    let mut found: Vec<Program> = Vec::new();
    let mut queue: Vec<PathBuf> = files_of(program);
    while let Some(path) = queue.pop() {
        if seen.contains(&path) || seen.len() > MAX_FILES {
            continue;
        }
        seen.push(path.clone());
        let Ok(bytes) = session.gate().read(&path.to_string_lossy()) else {
            continue;
        };
        let Ok(source) = String::from_utf8(bytes) else {
            continue;
        };
        if let Ok(file) = crate::buzz::parse(&path, &source) {
            queue.extend(files_of(&file));
            found.push(file);
        }
    }
    found
}

/// Where the file imports of `program`'s top level lie, as the
/// interpreter finds them: beside the importing file, `.buzz` added.
fn files_of(program: &Program) -> Vec<PathBuf> {
    let dir = program.file.parent().unwrap_or(Path::new(""));
    program
        .statements
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Import { module, .. } if is_file(module) => {
                let name = match module.ends_with(".buzz") {
                    true => module.to_string(),
                    false => format!("{module}.buzz"),
                };
                Some(dir.join(name))
            }
            _ => None,
        })
        .collect()
}

/// Whether `spec` names a file rather than a library.
fn is_file(spec: &str) -> bool {
    !spec.contains(':') && !MODULES.contains(&spec)
}

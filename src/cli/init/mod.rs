//! `magus init`: a new workspace in the current directory (or
//! `--workspace DIR`): a commented `magus.yaml` with the sandbox on and
//! `spells/hello.buzz` with a `test` block, then the next commands to type.
//! It overwrites nothing: a file already there stops it before it writes.

use super::{GlobalArgs, EXIT_CONFIG};
use crate::diag::Diagnostic;
use crate::policy::{find_workspace, WorkspaceArg};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The `magus.yaml` `magus init` writes.
pub(crate) const CONFIG: &str = include_str!("magus.yaml.in");
/// The `spells/hello.buzz` `magus init` writes.
pub(crate) const HELLO: &str = include_str!("hello.buzz");

/// The files `magus init` writes, relative to the new workspace.
const FILES: [(&str, &str); 2] = [("magus.yaml", CONFIG), ("spells/hello.buzz", HELLO)];

/// `magus init`: exit status 0, or 125 when a file is in the way or
/// cannot be written.
pub(super) fn init(global: &GlobalArgs) -> i32 {
    let renderer = global.renderer();
    let dir = match &global.workspace {
        Some(dir) => dir.clone(),
        None => match super::current_dir(&renderer) {
            Ok(cwd) => cwd,
            Err(status) => return status,
        },
    };
    match write_files(&dir) {
        Ok(()) => {
            if let Some(note) = nested_note(&dir) {
                renderer.emit(&note);
            }
            say_next();
            0
        }
        Err(d) => {
            renderer.emit(&d);
            EXIT_CONFIG
        }
    }
}

/// Writes [`FILES`] into `dir`, each created new: any of them already
/// there (a link included) stops it before the first is written.
fn write_files(dir: &Path) -> Result<(), Box<Diagnostic>> {
    for (name, _) in FILES {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(Box::new(
                Diagnostic::error(format!(
                    "`{}` already exists; `magus init` overwrites nothing",
                    path.display()
                ))
                .with_path(path.display().to_string())
                .with_help("this directory is already set up: `magus` lists its spells"),
            ));
        }
    }
    for (name, text) in FILES {
        create_new(&dir.join(name), text).map_err(|(path, e)| {
            Box::new(
                Diagnostic::error(format!("cannot write `{}`: {e}", path.display()))
                    .with_path(path.display().to_string()),
            )
        })?;
    }
    Ok(())
}

/// Creates `path` (and its parent) with `text`; never replaces a file.
fn create_new(path: &Path, text: &str) -> Result<(), (PathBuf, std::io::Error)> {
    let fail = |e| (path.to_path_buf(), e);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(fail)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

/// A note when the new workspace lies inside another one: from here on,
/// commands run below `dir` use the new one.
fn nested_note(dir: &Path) -> Option<Diagnostic> {
    let parent = dir.canonicalize().ok()?.parent()?.to_path_buf();
    let outer = find_workspace(WorkspaceArg::Discover { start: &parent }).ok()?;
    Some(Diagnostic::note(format!(
        "this directory lies inside the workspace `{}`; magus commands run here now use the new one",
        outer.root.display()
    )))
}

fn say_next() {
    let text = "\
created magus.yaml         the sandbox on; grants you may need are commented in it
created spells/hello.buzz  a first spell, with a test block

next:
  magus run hello        run it
  magus test             run its test block
  magus sandbox check    see what spells may read, write and run
";
    let _ = std::io::stdout().write_all(text.as_bytes());
}

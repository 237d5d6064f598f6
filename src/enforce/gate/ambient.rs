//! The ambient backend: with the sandbox off, the spell's `fs.*` act on
//! spelled paths directly through `std::fs`, with the process's own
//! authority. This module is the only place the gate does so; a gate built
//! for a sandboxed run never holds this backend (see [`super::Gate::new`]).

use super::{FsOp, GateError, WriteMode};
use std::io::Write;
use std::path::Path;

/// The process's own authority over the file system.
#[derive(Debug)]
pub(super) struct Ambient;

impl Ambient {
    pub(super) fn read(&self, spelled: &str) -> Result<Vec<u8>, GateError> {
        std::fs::read(spelled).map_err(|e| GateError::io(FsOp::Read, spelled, e))
    }

    pub(super) fn open_file(&self, spelled: &str) -> Result<std::fs::File, GateError> {
        std::fs::File::open(spelled).map_err(|e| GateError::io(FsOp::Read, spelled, e))
    }

    pub(super) fn write(
        &self,
        spelled: &str,
        data: &[u8],
        mode: WriteMode,
    ) -> Result<(), GateError> {
        let op = FsOp::of_write(mode);
        let mut options = std::fs::OpenOptions::new();
        options.create(true).write(true);
        match mode {
            WriteMode::Truncate => options.truncate(true),
            WriteMode::Append => options.append(true),
        };
        options
            .open(spelled)
            .and_then(|mut file| file.write_all(data))
            .map_err(|e| GateError::io(op, spelled, e))
    }

    pub(super) fn exists(&self, spelled: &str) -> Result<bool, GateError> {
        Ok(Path::new(spelled).exists())
    }

    pub(super) fn list(&self, spelled: &str) -> Result<Vec<String>, GateError> {
        std::fs::read_dir(spelled)
            .and_then(|entries| {
                entries
                    .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .map_err(|e| GateError::io(FsOp::List, spelled, e))
    }

    pub(super) fn make_directory(&self, spelled: &str) -> Result<(), GateError> {
        std::fs::create_dir_all(spelled).map_err(|e| GateError::io(FsOp::MakeDirectory, spelled, e))
    }

    pub(super) fn delete(&self, spelled: &str) -> Result<(), GateError> {
        let path = Path::new(spelled);
        let removed = std::fs::symlink_metadata(path).and_then(|meta| match meta.is_dir() {
            true => std::fs::remove_dir(path),
            false => std::fs::remove_file(path),
        });
        removed.map_err(|e| GateError::io(FsOp::Delete, spelled, e))
    }

    pub(super) fn rename(&self, from: &str, to: &str) -> Result<(), GateError> {
        std::fs::rename(from, to).map_err(|e| GateError::io(FsOp::Move, from, e))
    }

    pub(super) fn copy(&self, from: &str, to: &str) -> Result<(), GateError> {
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| GateError::io(FsOp::Copy, from, e))
    }
}

//! Opening the workspace files magus reads before anything is confined
//! (`magus.yaml`, `magus.lock`) only when they are regular files: a child
//! of an earlier run can plant either as a link to `~/.npmrc` (when it was
//! absent at that run's start), and a parse error quoting line 1 would
//! print the token; a FIFO there would make the next run wait for ever.

use std::fs::File;
use std::io;
use std::path::Path;

/// Why the file could not be opened.
#[derive(Debug)]
pub(crate) enum OpenFailure {
    /// No regular file there: a link, FIFO, device or directory.
    NotRegular,
    Io(io::Error),
}

/// Opens `file` for reading only if it is a regular file, following no
/// symbolic link in its last component and never waiting on a FIFO.
pub(crate) fn open_regular(file: &Path) -> Result<File, OpenFailure> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let handle = options.open(file).map_err(|e| match e.raw_os_error() {
        #[cfg(unix)]
        Some(libc::ELOOP) => OpenFailure::NotRegular,
        _ => OpenFailure::Io(e),
    })?;
    #[cfg(windows)]
    if std::fs::symlink_metadata(file)
        .map_err(OpenFailure::Io)?
        .file_type()
        .is_symlink()
    {
        return Err(OpenFailure::NotRegular);
    }
    match handle.metadata().map_err(OpenFailure::Io)?.is_file() {
        true => Ok(handle),
        false => Err(OpenFailure::NotRegular),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(open_regular(&file).is_ok());
        let link = dir.path().join("l");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(open_regular(&link), Err(OpenFailure::NotRegular)));
        let fifo = dir.path().join("p");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(open_regular(&fifo), Err(OpenFailure::NotRegular)));
        assert!(matches!(
            open_regular(dir.path()),
            Err(OpenFailure::NotRegular)
        ));
        let missing = open_regular(&dir.path().join("none"));
        assert!(matches!(missing, Err(OpenFailure::Io(e)) if e.kind() == io::ErrorKind::NotFound));
    }
}

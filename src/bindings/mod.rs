//! The Buzz native modules `fs`, `sh` and `env`: they adapt Buzz values to
//! the gate in `enforce` and turn its denials into catchable `SandboxError`s.
//!
//! Every binding goes through one [`Session`]; there is no other path from
//! a spell to the filesystem, the environment or a process. Upstream's
//! `buzz:fs`, `buzz:os` and `buzz:io` are a second face over the same
//! session (see `upstream`).

#[cfg(kernel_layer)]
pub(crate) mod egress;
mod env;
mod errors;
pub(crate) mod foresee;
mod fs;
// Unix paths and modes (as the integration tests they were).
#[cfg(all(test, unix))]
mod gate_coverage_tests;
mod scratch;
mod session;
mod sh;
mod upstream;

pub(crate) use scratch::TempDirs;
pub(crate) use session::ShimNote;
pub use session::{DiagnosticSink, Session};
pub(crate) use sh::prepare_terminal;

use crate::buzz::NativeModule;
use std::rc::Rc;

/// The `fs`, `sh` and `env` modules of one run, all bound to `session`.
pub fn modules(session: &Rc<Session>) -> Vec<NativeModule> {
    vec![
        fs::module(session),
        sh::module(session),
        env::module(session),
        upstream::fs_module(session),
        upstream::os_module(session),
        upstream::io_natives(session),
    ]
}

/// The libraries written in Buzz over these modules: `buzz:io` and
/// `buzz:test`.
pub(crate) fn libraries() -> &'static [(&'static str, &'static str)] {
    &[
        ("buzz:io", upstream::IO_LIBRARY),
        ("buzz:test", upstream::TEST_LIBRARY),
    ]
}

/// Bytes as Buzz text: the bytes themselves when they are UTF-8, found by
/// `str::from_utf8`'s word-at-a-time check; only invalid input pays for
/// `from_utf8_lossy`'s byte-by-byte walk (about 7 instructions a byte, most
/// of a 1 KiB `fs.read`'s cost in the bindings). Invalid sequences become
/// U+FFFD either way.
pub(crate) fn text_of(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// How `import "lib/common";` reads the spell's own files: through the
/// gate, so an import is allowed or denied exactly as `fs.read` would be.
pub(crate) fn source_loader(session: &Rc<Session>) -> crate::buzz::SourceLoader {
    let session = Rc::clone(session);
    Rc::new(move |path: &std::path::Path| {
        let bytes = session.check(session.gate().read(&path.to_string_lossy()))?;
        String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let kind = crate::diag::SourceKind::Spell;
            let at = crate::diag::Location::at_byte(kind, path.to_path_buf(), e.as_bytes(), offset);
            crate::buzz::Raise::type_error(format!(
                "{}:{}:{}: not valid UTF-8 (first bad byte at offset {offset})",
                path.display(),
                at.line,
                at.column
            ))
        })
    })
}

#[cfg(test)]
mod text_tests {
    use super::text_of;
    use std::borrow::Cow;

    /// UTF-8 is lent as it is; anything else reads as `from_utf8_lossy`
    /// reads it, U+FFFD for each bad sequence.
    #[test]
    fn text_is_borrowed_when_valid_and_lossy_when_not() {
        for valid in [&b""[..], b"plain ascii", "caf\u{e9} \u{2728}".as_bytes()] {
            assert!(matches!(text_of(valid), Cow::Borrowed(t) if t.as_bytes() == valid));
        }
        for invalid in [&b"\xff"[..], b"ok\xc3(", b"\xe2\x82", b"a\xf0\x9f\x98b"] {
            assert_eq!(
                text_of(invalid),
                String::from_utf8_lossy(invalid),
                "{invalid:?}"
            );
            assert!(text_of(invalid).contains('\u{fffd}'), "{invalid:?}");
        }
    }
}

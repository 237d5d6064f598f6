//! Everything the sandbox says to the user.
//!
//! Other layers build [`Diagnostic`] values and never format them; this
//! module renders them, rustc-style for people ([`render_human`]) or as one
//! JSON object per line for tools ([`render_json`]). It also owns the
//! diagnostic codes and the explain pages.

mod code;
mod explain;
mod output;
mod render;
mod shown;
mod suggest;

pub use code::Code;
pub(crate) use explain::explain_page;
pub(crate) use output::{ColorChoice, OutputOptions, Verbosity};
#[cfg(any(kernel_layer, test))]
pub(crate) use render::render;
#[cfg(kernel_layer)]
pub(crate) use render::terminal_reset;
pub use render::MessageFormat;
pub(crate) use render::{render_child_line_json, Renderer};
#[cfg(kernel_layer)]
pub(crate) use shown::{shell_word, shown, shown_name};
pub(crate) use suggest::{edit_distance, nearest};

use std::path::PathBuf;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something the user should know; nothing went wrong.
    Note,
    /// The run goes on, but probably not as the user meant.
    Warning,
    /// The operation (or the run) did not happen.
    Error,
}

impl Severity {
    /// The lowercase word rustc uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Which kind of file a [`Location`] points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A Buzz spell.
    Spell,
    /// `magus.yaml` or `magus.lock`.
    Config,
}

/// A 1-based line and column in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[deny(missing_docs)] // re-exported by the crate: public API
pub struct Location {
    /// A spell, or the workspace's configuration.
    pub kind: SourceKind,
    /// The file, as the diagnostic names it.
    pub file: PathBuf,
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1.
    pub column: u32,
}

impl Location {
    /// Where byte `offset` of `bytes` lies, as a 1-based line and column
    /// (the column counts characters of the valid text before it, so a
    /// bad byte in a UTF-8 file is placed where an editor shows it).
    pub fn at_byte(kind: SourceKind, file: PathBuf, bytes: &[u8], offset: usize) -> Location {
        let before = &bytes[..offset.min(bytes.len())];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let newlines = before.iter().filter(|&&b| b == b'\n').count();
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count();
        Location {
            kind,
            file,
            line: u32::try_from(newlines + 1).unwrap_or(u32::MAX),
            column: u32::try_from(column + 1).unwrap_or(u32::MAX),
        }
    }
}

/// One message for the user: a code (when the event has one), what
/// happened, where, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[deny(missing_docs)] // re-exported by the crate: public API
pub struct Diagnostic {
    /// The `MGSxxxx` code, for events `magus explain` has a page for.
    pub code: Option<Code>,
    /// Error, warning or note.
    pub severity: Severity,
    /// What happened, in one sentence.
    pub message: String,
    /// The path the event is about, as the user spelled it.
    pub path: Option<String>,
    /// The line and column the event points at (a spell, `magus.yaml`).
    pub location: Option<Location>,
    /// A short text printed under the caret.
    pub label: Option<String>,
    /// How many characters from the location the caret underlines (at
    /// least one).
    pub span: u32,
    /// Facts that explain the event (`= note: ...`).
    pub notes: Vec<String>,
    /// How to fix it; may span several lines (e.g. `magus.yaml` lines).
    pub help: Option<String>,
}

#[deny(missing_docs)] // re-exported by the crate: public API
impl Diagnostic {
    /// A diagnostic with only a severity and a message.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            code: None,
            severity,
            message: message.into(),
            path: None,
            location: None,
            label: None,
            span: 1,
            notes: Vec::new(),
            help: None,
        }
    }

    /// An error: something stopped.
    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    /// A warning: the run goes on, with less than asked for.
    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    /// A note: a fact worth knowing.
    pub fn note(message: impl Into<String>) -> Self {
        Self::new(Severity::Note, message)
    }

    /// Sets the code.
    pub fn with_code(mut self, code: Code) -> Self {
        self.code = Some(code);
        self
    }

    /// Sets the path the event is about.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Sets the line and column.
    pub fn with_location(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets the text under the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Underlines `chars` characters from the location, not just one.
    pub fn with_span(mut self, chars: u32) -> Self {
        self.span = chars.max(1);
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets how to fix it.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

#[cfg(test)]
mod location_tests {
    use super::{Location, SourceKind};
    use std::path::PathBuf;

    #[test]
    fn a_byte_offset_becomes_a_line_and_a_character_column() {
        let bytes = "ab\n\u{e9}\u{e9}x\ny".as_bytes();
        let at = |offset| Location::at_byte(SourceKind::Spell, PathBuf::from("f"), bytes, offset);
        assert_eq!((at(0).line, at(0).column), (1, 1));
        assert_eq!((at(3).line, at(3).column), (2, 1));
        // Two two-byte characters before `x`: column 3, not 5.
        assert_eq!((at(7).line, at(7).column), (2, 3));
        assert_eq!((at(99).line, at(99).column), (3, 2));
    }
}

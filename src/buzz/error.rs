//! Errors of the Buzz interpreter, each with the spell position it is about,
//! and their conversion to rustc-style diagnostics.

use super::native::CallSite;
use crate::diag::{Diagnostic, Location, SourceKind};
use std::path::PathBuf;

/// Why a spell could not be parsed or did not run to completion.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
#[deny(missing_docs)] // re-exported by the crate: public API
pub enum BuzzError {
    /// The source is not valid Buzz (or not in the supported subset).
    #[error("{}:{}:{}: syntax error: {message}", site.file.display(), site.line, site.column)]
    Syntax {
        /// Where.
        site: CallSite,
        /// What the parser expected.
        message: String,
    },
    /// An unknown name, a wrong type, a bad subscript, an overflow, runaway
    /// recursion and the like.
    #[error("{}:{}:{}: runtime error: {message}", site.file.display(), site.line, site.column)]
    Runtime {
        /// Where.
        site: CallSite,
        /// What went wrong.
        message: String,
    },
    /// A `throw` (or a native's raise) that no `catch` handled.
    #[error("{}:{}:{}: uncaught error: {value}", site.file.display(), site.line, site.column)]
    Uncaught {
        /// The thrown value as `toString` shows it.
        value: String,
        /// Where it was thrown.
        site: CallSite,
        /// The diagnostic a sandbox denial carries, said as is.
        diagnostic: Option<Box<Diagnostic>>,
    },
    /// The source file is larger than the interpreter accepts.
    #[error("{}: spell is {size} bytes, more than the {limit}-byte limit", file.display())]
    SourceTooLarge {
        /// The spell.
        file: PathBuf,
        /// Its size in bytes.
        size: usize,
        /// The largest size accepted, in bytes.
        limit: usize,
    },
}

impl BuzzError {
    /// Where the error points, if anywhere in particular.
    pub fn site(&self) -> Option<&CallSite> {
        match self {
            BuzzError::Syntax { site, .. }
            | BuzzError::Runtime { site, .. }
            | BuzzError::Uncaught { site, .. } => Some(site),
            BuzzError::SourceTooLarge { .. } => None,
        }
    }

    /// The message without the position prefix.
    pub fn message(&self) -> String {
        match self {
            BuzzError::Syntax { message, .. } | BuzzError::Runtime { message, .. } => {
                message.clone()
            }
            BuzzError::Uncaught { value, .. } => format!("uncaught error: {value}"),
            BuzzError::SourceTooLarge { size, limit, .. } => {
                format!("spell is {size} bytes, more than the {limit}-byte limit")
            }
        }
    }

    /// A rustc-style diagnostic pointing into the spell. For an uncaught
    /// native error that carries its own diagnostic, that diagnostic is
    /// returned, located at the raise site if it had no location.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let location = self.site().map(location_of);
        match self {
            BuzzError::Uncaught {
                diagnostic: Some(d),
                ..
            } => {
                let mut d = (**d).clone();
                if d.location.is_none() {
                    d.location = location;
                }
                d
            }
            _ => {
                let mut d = Diagnostic::error(self.message());
                d.location = location;
                if let Some(label) = self.label() {
                    d = d.with_label(label);
                }
                if let BuzzError::SourceTooLarge { file, .. } = self {
                    d = d.with_path(file.display().to_string());
                }
                d
            }
        }
    }

    fn label(&self) -> Option<&'static str> {
        match self {
            BuzzError::Uncaught { .. } => Some("thrown here"),
            _ => None,
        }
    }
}

fn location_of(site: &CallSite) -> Location {
    Location {
        kind: SourceKind::Spell,
        file: site.file.clone(),
        line: site.line,
        column: site.column,
    }
}

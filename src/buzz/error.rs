//! Errors of the Buzz interpreter, each with the spell position it is about,
//! and their conversion to rustc-style diagnostics.

use crate::diag::{Code, Diagnostic, Location, SourceKind};
use std::path::PathBuf;

/// Where in the spell something happened: the start of a native function's
/// call, or of a syntax or runtime error.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallSite {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
}

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
        /// How to fix it, when the parser can tell.
        help: Option<String>,
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
                if let Some(code) = self.runtime_code() {
                    d = d.with_code(code);
                }
                if let Some(label) = self.label() {
                    d = d.with_label(label);
                }
                if let BuzzError::Syntax { help: Some(h), .. } = self {
                    d = d.with_help(h.clone());
                }
                if let BuzzError::SourceTooLarge { file, .. } = self {
                    d = d.with_path(file.display().to_string());
                }
                d
            }
        }
    }

    /// The code of a run-time error the checker cannot rule out: an index
    /// out of range (MGS1020), `!` of null (MGS1021), integer overflow or
    /// division by zero (MGS1022), an error the spell threw and nothing
    /// caught (MGS1024; a failed cast carries MGS1023 itself). Read from
    /// the interpreter's own messages (`lib/methods.rs`, `vm/`), pinned
    /// by the tests below.
    fn runtime_code(&self) -> Option<Code> {
        let message = match self {
            BuzzError::Runtime { message, .. } => message,
            BuzzError::Uncaught { .. } => return Some(Code::Mgs1024),
            _ => return None,
        };
        if message.contains(" out of range for ") {
            Some(Code::Mgs1020)
        } else if message.starts_with("force unwrap (`!`) of a null value") {
            Some(Code::Mgs1021)
        } else if message.starts_with("integer overflow") || message == "division by zero" {
            Some(Code::Mgs1022)
        } else {
            None
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

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(source: &str) -> Option<Code> {
        let file = std::path::Path::new("probe.buzz");
        let program = crate::buzz::parse(file, source).unwrap();
        let error = crate::buzz::Interpreter::new(file, Vec::new())
            .with_output(Box::new(std::io::sink()))
            .run(&program, Vec::new())
            .unwrap_err();
        error.to_diagnostic().code
    }

    #[test]
    fn run_time_errors_keep_their_place_and_gain_a_code() {
        let main = |body: &str| format!("fun main(args: [str]) > void {{\n{body}\n}}\n");
        for (body, code) in [
            ("    final xs = [1];\n    _ = xs[3];", Some(Code::Mgs1020)),
            ("    _ = \"ab\".byte(5);", Some(Code::Mgs1020)),
            (
                "    final n: int? = null;\n    _ = n!;",
                Some(Code::Mgs1021),
            ),
            (
                "    final big = 9223372036854775807;\n    _ = big + 1;",
                Some(Code::Mgs1022),
            ),
            (
                "    final zero = 0;\n    _ = 1 / zero;",
                Some(Code::Mgs1022),
            ),
            ("    throw \"plain\";", Some(Code::Mgs1024)),
            (
                "    final v: any = 1;\n    _ = v as str;",
                Some(Code::Mgs1023),
            ),
        ] {
            assert_eq!(code_of(&main(body)), code, "{body}");
        }
    }
}

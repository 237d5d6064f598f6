//! What the checker finds, as types: one variant per kind of mistake, each
//! with its `MGS1xxx` code, message, label and mechanical fix. Only
//! [`Problem::to_diagnostic`] turns them into words for the user.

use crate::diag::{Code, Diagnostic, Location, Severity, SourceKind};
use std::path::Path;

/// One mistake found before the spell runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    #[error("unknown name `{name}`")]
    UnknownName {
        name: String,
        near: Option<String>,
        module: bool,
    },
    #[error("{owner} has no member `{name}`")]
    UnknownMember {
        owner: String,
        name: String,
        near: Option<String>,
    },
    #[error("`{function}` takes {expected} argument(s), got {found}")]
    Arity {
        function: String,
        expected: String,
        found: usize,
        signature: String,
    },
    #[error("`{function}` has no parameter `{name}`")]
    UnknownArgument {
        function: String,
        name: String,
        near: Option<String>,
        signature: String,
    },
    #[error("missing argument `{name}` in call to `{function}`")]
    MissingArgument {
        function: String,
        name: String,
        signature: String,
    },
    #[error("cannot assign to `{name}`: it is {what}")]
    Final { name: String, what: &'static str },
    #[error("`{method}` changes the {kind}, which is not `mut`")]
    Immutable { method: String, kind: &'static str },
    #[error("mismatched types: {context} expects `{expected}`, found `{found}`")]
    Mismatch {
        context: String,
        expected: String,
        found: String,
        help: Option<String>,
    },
    #[error("cannot apply `{op}` to `{left}` and `{right}`")]
    Operator {
        op: &'static str,
        left: String,
        right: String,
    },
    #[error("{what} may be null (`{ty}`) and {use_} needs a value")]
    Optional {
        what: String,
        ty: String,
        use_: String,
        name: Option<String>,
    },
    #[error("unreachable code")]
    Unreachable { after_line: u32 },
    #[error("`{function}` may end without returning `{ty}`")]
    MissingReturn { function: String, ty: String },
    #[error("`main` must be `fun main(args: [str]) > void` (or `> int`), found `{found}`")]
    MainSignature { found: String },
    #[error("cannot import `{spec}`: {why}")]
    Import {
        spec: String,
        why: String,
        near: Option<String>,
    },
    #[error("`{ty}` cannot be called")]
    NotCallable { ty: String },
    #[error("{message}")]
    Jump {
        message: String,
        near: Option<String>,
    },
    #[error("`final {name}` has no value: a `final` is given its value where it is declared")]
    NoValue { name: String },
    #[error("not every path of this `from` block ends with `out`")]
    MissingOut,
    #[error("{what}")]
    NonExhaustive { what: String, missing: Vec<String> },
    #[error("a local named `{name}` already exists in an enclosing block")]
    Shadowing { name: String, line: u32 },
    #[error("{what}: this instance of `{object}` is not `mut`")]
    NotMutInstance { object: String, what: String },
    #[error("object `{object}` is declared to conform to protocol `{protocol}` but does not implement method `{method}`")]
    ProtocolMethod {
        object: String,
        protocol: String,
        method: String,
    },
    #[error("{} `match` condition", if *duplicate { "duplicate" } else { "overlapping" })]
    MatchOverlap { duplicate: bool, line: u32 },
    #[error("a default value must be constant, and this one is a mutable `{ty}`")]
    MutableDefault { ty: String },
    #[error("{message}")]
    NotAllowed {
        message: String,
        help: Option<String>,
    },
    #[error("could not compile pattern: {why}")]
    BadPattern { why: String },
    #[error("unused local `{name}` of type `{ty}`")]
    UnusedLocal { name: String, ty: String },
    #[error("local `{name}` is declared `var` but is never assigned")]
    NeverAssigned { name: String },
    #[error("unused import `{name}`")]
    UnusedImport { name: String },
}

impl CheckError {
    /// How serious it is: unreachable code is a warning, as upstream says
    /// it; everything else stops the spell.
    pub fn severity(&self) -> Severity {
        match self {
            // Upstream rejects shadowing; magus has always run it, so it
            // warns rather than stop spells that worked.
            CheckError::Unreachable { .. }
            | CheckError::Shadowing { .. }
            | CheckError::UnusedLocal { .. }
            | CheckError::NeverAssigned { .. }
            | CheckError::UnusedImport { .. } => Severity::Warning,
            _ => Severity::Error,
        }
    }

    /// The diagnostic code of this kind of mistake.
    pub fn code(&self) -> Code {
        match self {
            CheckError::UnknownName { .. } => Code::Mgs1001,
            CheckError::UnknownMember { .. } => Code::Mgs1002,
            CheckError::Arity { .. }
            | CheckError::UnknownArgument { .. }
            | CheckError::MissingArgument { .. } => Code::Mgs1003,
            CheckError::Final { .. } => Code::Mgs1004,
            CheckError::Immutable { .. } => Code::Mgs1005,
            CheckError::Mismatch { .. } | CheckError::Operator { .. } => Code::Mgs1006,
            CheckError::Optional { .. } => Code::Mgs1007,
            CheckError::Unreachable { .. } => Code::Mgs1008,
            CheckError::MissingReturn { .. } => Code::Mgs1009,
            CheckError::MainSignature { .. } => Code::Mgs1010,
            CheckError::Import { .. } => Code::Mgs1011,
            CheckError::NotCallable { .. } => Code::Mgs1012,
            CheckError::Jump { .. } => Code::Mgs1013,
            CheckError::NoValue { .. } => Code::Mgs1004,
            CheckError::MissingOut => Code::Mgs1009,
            CheckError::NonExhaustive { .. } => Code::Mgs1014,
            CheckError::Shadowing { .. } => Code::Mgs1015,
            CheckError::NotMutInstance { .. } => Code::Mgs1005,
            CheckError::ProtocolMethod { .. } => Code::Mgs1016,
            CheckError::MatchOverlap { .. } => Code::Mgs1017,
            CheckError::MutableDefault { .. } => Code::Mgs1018,
            CheckError::NotAllowed { .. } => Code::Mgs1019,
            CheckError::BadPattern { .. } => Code::Mgs1025,
            CheckError::UnusedLocal { .. }
            | CheckError::NeverAssigned { .. }
            | CheckError::UnusedImport { .. } => Code::Mgs1026,
        }
    }

    fn label(&self) -> Option<String> {
        Some(match self {
            CheckError::UnknownName { .. } => "not found in this scope".into(),
            CheckError::UnknownMember { .. } => "unknown member".into(),
            CheckError::Arity { .. } => "this call".into(),
            CheckError::UnknownArgument { .. } => "unknown argument name".into(),
            CheckError::MissingArgument { .. } => "this call".into(),
            CheckError::Final { .. } => "assigned here".into(),
            CheckError::Immutable { kind, .. } => format!("needs a `mut` {kind}"),
            CheckError::Mismatch { found, .. } => format!("this is `{found}`"),
            CheckError::Operator { left, .. } => format!("this is `{left}`"),
            CheckError::Optional { .. } => "may be null".into(),
            CheckError::Unreachable { .. } => "this statement never runs".into(),
            CheckError::MissingReturn { ty, .. } => format!("declared to return `{ty}`"),
            CheckError::NotCallable { .. } => "not a function".into(),
            CheckError::Jump { .. } => "here".into(),
            CheckError::NoValue { .. } => "declared without a value".into(),
            CheckError::MissingOut => "this block".into(),
            CheckError::NonExhaustive { .. } => "this `match`".into(),
            CheckError::Shadowing { .. } => "declared again here".into(),
            CheckError::NotMutInstance { .. } => "needs a `mut` instance".into(),
            CheckError::ProtocolMethod { method, .. } => format!("no method `{method}`"),
            CheckError::MatchOverlap { .. } => "this condition".into(),
            CheckError::MutableDefault { .. } => "a new mutable value".into(),
            CheckError::NotAllowed { .. } => "not allowed here".into(),
            CheckError::BadPattern { .. } => "this pattern".into(),
            CheckError::UnusedLocal { .. } => "never read".into(),
            CheckError::NeverAssigned { .. } => "never assigned".into(),
            CheckError::UnusedImport { .. } => "nothing uses it".into(),
            CheckError::MainSignature { .. } | CheckError::Import { .. } => return None,
        })
    }

    fn notes(&self) -> Vec<String> {
        match self {
            CheckError::Arity { signature, .. }
            | CheckError::UnknownArgument { signature, .. }
            | CheckError::MissingArgument { signature, .. } => {
                vec![format!("the function is `{signature}`")]
            }
            CheckError::Unreachable { after_line } => {
                vec![format!(
                    "the statement at line {after_line} never lets control reach it"
                )]
            }
            CheckError::Mismatch {
                expected, found, ..
            } => {
                vec![format!("expected `{expected}`\n   found `{found}`")]
            }
            CheckError::MatchOverlap { line, .. } => {
                vec![format!(
                    "an earlier condition at line {line} already matches its values"
                )]
            }
            _ => Vec::new(),
        }
    }

    fn help(&self) -> Option<String> {
        let near = |n: &Option<String>| n.as_ref().map(|n| format!("did you mean `{n}`?"));
        match self {
            CheckError::UnknownName {
                name,
                near: n,
                module,
            } => near(n).or_else(|| {
                module.then(|| {
                    let spec = crate::buzz::syntax::import_names::import_spec(name);
                    format!("add `import \"{spec}\";` at the top of the spell")
                })
            }),
            CheckError::UnknownMember { near: n, .. }
            | CheckError::Import { near: n, .. }
            | CheckError::UnknownArgument { near: n, .. }
            | CheckError::Jump { near: n, .. } => near(n),
            CheckError::Final { name, what } if *what == "`final`" => Some(format!(
                "declare it with `var` to reassign it: `var {name} = ...`"
            )),
            CheckError::Immutable { kind, .. } => Some(format!(
                "make the {kind} mutable where it is made: `mut {}` (or the type `mut {}`)",
                if *kind == "map" { "{...}" } else { "[...]" },
                if *kind == "map" { "{K: V}" } else { "[T]" }
            )),
            CheckError::Mismatch { help, .. } => help.clone(),
            CheckError::Operator {
                op: "+",
                left,
                right,
            } if left == "str" || right == "str" => {
                Some("interpolate the value instead: \"...{value}\"".into())
            }
            CheckError::Optional { name, .. } => {
                let v = name.as_deref().unwrap_or("value");
                Some(format!(
                    "give a default with `??` (`{v} ?? ...`), unwrap it with `!` (`{v}!`), or test it with `if ({v}) -> it {{ ... }}`"
                ))
            }
            CheckError::MissingReturn { function, .. } => Some(format!(
                "add a `return` (or `throw`) at the end of `{function}`"
            )),
            CheckError::Unreachable { .. } => Some("remove it, or move it before the jump".into()),
            CheckError::NoValue { name } => Some(format!(
                "give it a value (`final {name} = ...;`), or declare it `var`"
            )),
            CheckError::MissingOut => Some("end every path with `out value;`".into()),
            CheckError::NonExhaustive { missing, .. } if !missing.is_empty() => Some(format!(
                "add an arm for {}, or an `else -> ...` arm",
                missing
                    .iter()
                    .map(|m| format!("`.{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            CheckError::NonExhaustive { .. } => Some("add an `else -> ...` arm".into()),
            CheckError::Shadowing { name, .. } => Some(format!("give this `{name}` another name")),
            CheckError::NotMutInstance { object, .. } => Some(format!(
                "make the instance mutable where it is made: `mut {object}{{ ... }}` (or the type `mut {object}`)"
            )),
            CheckError::ProtocolMethod { method, .. } => Some(format!(
                "add `fun {method}(...)` to the object, with the protocol's signature"
            )),
            CheckError::MatchOverlap { .. } => {
                Some("remove this condition, or change it so the arms do not overlap".into())
            }
            CheckError::MutableDefault { .. } => Some(
                "make the value where it is used instead (a default is shared by every call or instance)"
                    .into(),
            ),
            CheckError::NotAllowed { help, .. } => help.clone(),
            CheckError::UnusedLocal { name, .. } => Some(format!(
                "remove it, or name it `_{name}` if it is kept on purpose"
            )),
            CheckError::NeverAssigned { name } => {
                Some(format!("declare it `final {name}`"))
            }
            CheckError::UnusedImport { .. } => Some("remove the import".into()),
            CheckError::BadPattern { .. } => {
                Some("fix the regular expression (write `\\` for a literal backslash)".into())
            }
            CheckError::MainSignature { .. } => {
                Some("declare `fun main(args: [str]) > void`".into())
            }
            _ => None,
        }
    }
}

/// A [`CheckError`] and where it is: file, line, column and how many
/// characters the caret underlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub error: CheckError,
    pub file: std::path::PathBuf,
    pub line: u32,
    pub column: u32,
    pub width: u32,
}

impl Problem {
    /// The rustc-style diagnostic, with the code and its fix.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let mut d = Diagnostic::new(self.error.severity(), self.error.to_string())
            .with_code(self.error.code())
            .with_location(location(&self.file, self.line, self.column))
            .with_span(self.width);
        if let Some(label) = self.error.label() {
            d = d.with_label(label);
        }
        for note in self.error.notes() {
            d = d.with_note(note);
        }
        if let Some(help) = self.error.help() {
            d = d.with_help(help);
        }
        d
    }
}

fn location(file: &Path, line: u32, column: u32) -> Location {
    Location {
        kind: SourceKind::Spell,
        file: file.to_path_buf(),
        line,
        column,
    }
}

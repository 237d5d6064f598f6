//! The checking pass (docs/buzz.md, "Checked before anything runs"): names,
//! arity, mutability, types and control flow of a spell and every file it
//! imports, before its first statement executes, so a typo never runs half
//! a build. It reports [`Problem`]s with `MGS1xxx` codes and never runs
//! code. Where a type is not known before the run it stays silent: a false
//! report would stop a good spell, so every rule errs towards permitting.

mod consts;
mod expr;
mod fiber;
mod flow;
mod host;
mod idle;
mod imports;
mod member;
mod natives;
mod problem;
mod scope;
// Unix only: imports are read through the gate, which refuses every path
// on Windows for now (README, "Platforms").
#[cfg(all(test, unix))]
mod spell_tests;
mod stmt;
mod ty;

#[cfg(all(test, unix))]
pub(crate) use natives::listed as listed_natives;
pub(crate) use problem::{CheckError, Problem};

use super::syntax::ast::Program;
use super::syntax::lexer::Pos;
use crate::diag::Diagnostic;
use scope::Frames;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use ty::{ModuleInfo, Ty, Types};

/// What a check found: the checker's own problems, and the diagnostics of
/// files it could not read or parse (syntax errors, sandbox denials).
#[derive(Debug, Default)]
pub struct Report {
    pub problems: Vec<Problem>,
    pub other: Vec<Diagnostic>,
}

impl Report {
    /// True when the spell may run.
    pub fn is_clean(&self) -> bool {
        self.problems
            .iter()
            .all(|p| p.error.severity() != crate::diag::Severity::Error)
            && self.other.iter().all(|d| !d.is_error())
    }

    /// Every finding as a diagnostic, in the order found.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut out: Vec<Diagnostic> = self.other.clone();
        out.extend(self.problems.iter().map(Problem::to_diagnostic));
        out
    }
}

/// The state of one check across the files it reads.
pub(super) struct Checker<'e> {
    env: &'e host::Env,
    report: Report,
    loaded: HashMap<PathBuf, Rc<ModuleInfo>>,
    importing: Vec<PathBuf>,
    /// Reports are kept only for the spell's own files, not for magus's
    /// built-in libraries written in Buzz.
    quiet: usize,
}

/// Checking one file: its source lines (to place carets), its types and
/// globals, and the scopes of the code being walked.
pub(super) struct Cx<'c, 'e> {
    checker: &'c mut Checker<'e>,
    file: Rc<Path>,
    lines: Vec<&'c str>,
    types: Rc<Types>,
    scopes: Frames,
    /// Every name the file declares anywhere: an unresolved name among
    /// them is left to the run rather than risk a false report.
    anywhere: HashSet<Rc<str>>,
    namespace: Vec<Rc<str>>,
    /// An `import … as _` failed: any name may have come from it.
    open_names: bool,
    /// The call being checked is made a fiber (`&f()`): what it yields
    /// goes to its resumer, not to the caller's own fiber.
    fiber_call: bool,
    /// The namespaces this file's imports have exposed so far.
    exposed: Vec<Vec<Rc<str>>>,
    /// Results inferred for arrow methods without a declared type (by
    /// the declaration's address), and those being inferred now.
    arrows: HashMap<*const super::syntax::ast::FunDecl, Ty>,
    inferring: Vec<*const super::syntax::ast::FunDecl>,
    /// The names this file's imports bind, and where.
    imports_bound: Vec<(Rc<str>, Pos)>,
}

impl<'e> Checker<'e> {
    fn new(env: &'e host::Env) -> Self {
        Checker {
            env,
            report: Report::default(),
            loaded: HashMap::new(),
            importing: Vec::new(),
            quiet: 0,
        }
    }

    /// Checks `program` (whose text is `source`) and returns its exports.
    fn file(&mut self, program: &Program, source: &str, root: bool) -> Rc<ModuleInfo> {
        let file: Rc<Path> = Rc::from(program.file.as_path());
        self.importing.push(program.file.clone());
        let lines: Vec<&str> = source.lines().collect();
        let mut cx = Cx {
            checker: self,
            file,
            lines,
            types: Rc::new(Types::default()),
            scopes: Frames::default(),
            anywhere: HashSet::new(),
            namespace: program.namespace.clone(),
            open_names: false,
            fiber_call: false,
            exposed: Vec::new(),
            arrows: HashMap::new(),
            inferring: Vec::new(),
            imports_bound: Vec::new(),
        };
        let exports = cx.program(program, root);
        self.importing.pop();
        exports
    }
}

impl Cx<'_, '_> {
    /// Records a problem at `pos`, underlining `width` characters.
    fn report(&mut self, error: CheckError, pos: Pos, width: usize) {
        if self.checker.quiet > 0 {
            return;
        }
        self.checker.report.problems.push(Problem {
            error,
            file: self.file.to_path_buf(),
            line: pos.line,
            column: pos.column.max(1),
            width: u32::try_from(width).unwrap_or(1),
        });
    }

    /// Where `name` is written at or after `pos` on its line (the parser
    /// gives an expression's start; a member's name comes later).
    fn spot(&self, pos: Pos, name: &str) -> Pos {
        let Some(line) = self.lines.get(pos.line.saturating_sub(1) as usize) else {
            return pos;
        };
        let start = pos.column.saturating_sub(1) as usize;
        let chars: Vec<char> = line.chars().collect();
        let needle: Vec<char> = name.chars().collect();
        if needle.is_empty() || start >= chars.len() {
            return pos;
        }
        (start..=chars.len().saturating_sub(needle.len()))
            .find(|&i| chars[i..i + needle.len()] == needle[..])
            .map_or(pos, |i| Pos {
                line: pos.line,
                column: u32::try_from(i + 1).unwrap_or(pos.column),
            })
    }
}

/// The nearest of `candidates` to `name`, if near enough to be a typo.
pub(super) fn nearest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Option<String> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .filter(|c| *c != name && !c.starts_with('<'))
        .map(|c| (crate::diag::edit_distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c.to_string())
}

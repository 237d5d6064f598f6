//! Whether control can pass a statement: after a `return`, `throw`,
//! `break` or `continue`, an `if` whose branches all jump, or a
//! `while (true)` nothing breaks out of, the next statement never runs.

use super::super::syntax::ast::{Expr, ExprKind, Stmt, StmtKind};
use std::rc::Rc;

/// How a statement ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ends {
    /// Control may go on to the next statement.
    FallsThrough,
    /// Control never reaches the next statement.
    Jumps,
}

impl Ends {
    pub(super) fn jumps(self) -> bool {
        self == Ends::Jumps
    }

    pub(super) fn both(a: Ends, b: Ends) -> Ends {
        if a.jumps() && b.jumps() {
            Ends::Jumps
        } else {
            Ends::FallsThrough
        }
    }
}

/// How a loop ends, from its condition and whether anything leaves it.
pub(super) fn loop_ends(
    forever: bool,
    body_jumps: bool,
    body: &[Stmt],
    label: &Option<Rc<str>>,
) -> Ends {
    let leaves = body.iter().any(|s| leaves_loop(s, label, 0, true));
    let continues = body.iter().any(|s| leaves_loop(s, label, 0, false));
    if forever && !leaves {
        return Ends::Jumps;
    }
    if body_jumps && !leaves && !continues {
        return Ends::Jumps;
    }
    Ends::FallsThrough
}

pub(super) fn is_true(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Bool(true))
}

/// Whether `stmt` holds a `break` (or with `breaks == false`, a
/// `continue`) that targets the loop labelled `label`; `depth` counts the
/// loops between.
fn leaves_loop(stmt: &Stmt, label: &Option<Rc<str>>, depth: usize, breaks: bool) -> bool {
    let targets = |l: &Option<Rc<str>>| match l {
        None => depth == 0,
        Some(l) => label.as_ref() == Some(l),
    };
    let inner = |body: &[Stmt], d: usize| body.iter().any(|s| leaves_loop(s, label, d, breaks));
    match &stmt.kind {
        StmtKind::Break(l) if breaks => targets(l),
        StmtKind::Continue(l) if !breaks => targets(l),
        StmtKind::Block(b) => inner(b, depth),
        StmtKind::If {
            then, otherwise, ..
        } => {
            inner(then, depth)
                || otherwise
                    .as_ref()
                    .is_some_and(|o| leaves_loop(o, label, depth, breaks))
        }
        StmtKind::While { body, .. }
        | StmtKind::DoUntil { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::ForEach { body, .. } => inner(body, depth + 1),
        StmtKind::Try { body, clauses } => {
            inner(body, depth) || clauses.iter().any(|c| inner(&c.body, depth))
        }
        _ => false,
    }
}

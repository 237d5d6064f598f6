//! What the checker settles from constants: `match` conditions that
//! repeat or overlap an earlier one (`1 + 1` and `2`, `1..5` and `4..8`),
//! and default values that are not constant (a mutable list, map or
//! instance would be shared by every call or instance).

use super::super::syntax::ast::{BinOp, Expr, ExprKind, MatchArm, Type, UnOp};
use super::ty::{Mutable, Ty};
use super::{CheckError, Cx};
use std::rc::Rc;

/// A condition's value, when the source settles it.
#[derive(Debug, Clone, PartialEq)]
enum Const {
    Num(f64),
    Str(Rc<str>),
    Bool(bool),
    /// `low..high`, `high` excluded, as a range iterates.
    Range(f64, f64),
}

impl Const {
    /// `Some(true)` when they match the same value (a duplicate),
    /// `Some(false)` when they share some values (an overlap).
    fn clash(&self, other: &Const) -> Option<bool> {
        match (self, other) {
            (Const::Range(a, b), Const::Range(c, d)) => (a.max(*c) < b.min(*d)).then_some(false),
            (Const::Range(lo, hi), Const::Num(n)) | (Const::Num(n), Const::Range(lo, hi)) => {
                (lo <= n && n < hi).then_some(false)
            }
            (a, b) => (a == b).then_some(true),
        }
    }
}

/// The value of `e` if it is made of literals alone.
fn constant(e: &Expr) -> Option<Const> {
    match &e.kind {
        ExprKind::Int(n) => Some(Const::Num(*n as f64)),
        ExprKind::Double(d) => Some(Const::Num(*d)),
        ExprKind::Str(s) => Some(Const::Str(s.clone())),
        ExprKind::Bool(b) => Some(Const::Bool(*b)),
        ExprKind::Unary(UnOp::Neg, x) => match constant(x)? {
            Const::Num(n) => Some(Const::Num(-n)),
            _ => None,
        },
        ExprKind::Binary(op, l, r) => match (constant(l)?, constant(r)?) {
            (Const::Num(a), Const::Num(b)) => fold(*op, a, b).map(Const::Num),
            _ => None,
        },
        ExprKind::Range(l, r) => match (constant(l)?, constant(r)?) {
            (Const::Num(a), Const::Num(b)) if a <= b => Some(Const::Range(a, b)),
            _ => None,
        },
        _ => None,
    }
}

fn fold(op: BinOp, a: f64, b: f64) -> Option<f64> {
    match op {
        BinOp::Add => Some(a + b),
        BinOp::Sub => Some(a - b),
        BinOp::Mul => Some(a * b),
        _ => None,
    }
}

impl Cx<'_, '_> {
    /// Reports each condition whose values an earlier one already takes.
    pub(super) fn match_overlaps(&mut self, arms: &[MatchArm]) {
        let mut seen: Vec<(Const, u32)> = Vec::new();
        for c in arms.iter().flat_map(|a| &a.conditions) {
            let Some(value) = constant(c) else { continue };
            let clash = seen
                .iter()
                .find_map(|(earlier, line)| Some((value.clash(earlier)?, *line)));
            if let Some((duplicate, line)) = clash {
                let (at, w) = self.span_of(c);
                self.report(CheckError::MatchOverlap { duplicate, line }, at, w);
            }
            seen.push((value, c.pos.line));
        }
    }

    /// A default (of a parameter or a field) must be constant: a fresh
    /// mutable list, map or instance would be one value shared by all.
    /// True when it was reported.
    pub(super) fn constant_default(&mut self, declared: &Type, default: &Expr, found: &Ty) -> bool {
        let literal = matches!(
            default.kind,
            ExprKind::List(_)
                | ExprKind::Map(_)
                | ExprKind::Instance { .. }
                | ExprKind::InstanceOf { .. }
                | ExprKind::AnonObject(_)
                | ExprKind::Mutable(_)
        );
        let mutable_found = match found {
            Ty::List(_, m) | Ty::Map(_, _, m) => *m == Mutable::Yes,
            Ty::Instance(o) => o.mutable == Mutable::Yes,
            _ => false,
        };
        let mutable_declared = matches!(declared, Type::Mut(_));
        if !(literal && (mutable_found || mutable_declared)) {
            return false;
        }
        let ty = found.clone().with_mutable(Mutable::Yes).to_string();
        let (at, w) = self.span_of(default);
        self.report(CheckError::MutableDefault { ty }, at, w);
        true
    }
}

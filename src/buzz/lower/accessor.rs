//! Which methods are accessors: a method whose whole body reads
//! `this.field`, reads `this.field[p]` or stores `this.field[p] = q` (a
//! `Buffer`'s `at` and `setAt`, a getter), recognised once, when it is
//! lowered. `vm/accessor.rs` runs them at a call site without a frame.

use super::{Expr, Stmt, StmtKind};
use crate::buzz::syntax::ast::{FunDecl, MemberCache};
use std::rc::Rc;

/// The shape of an accessor's body.
pub(crate) enum Accessor {
    /// `return this.field;`
    Get(Rc<str>, MemberCache),
    /// `return this.field[p0];`
    GetItem(Rc<str>, MemberCache),
    /// `this.field[p0] = p1;`
    SetItem(Rc<str>, MemberCache),
}

impl Accessor {
    /// The accessor `decl`'s lowered `body` is, if it is one.
    pub(crate) fn of(decl: &FunDecl, body: &[Stmt]) -> Option<Accessor> {
        if !decl.frame.get().method || decl.is_static {
            return None;
        }
        let [stmt] = body else {
            return None;
        };
        let n = decl.params.len();
        match &stmt.kind {
            StmtKind::Return(Some(Expr::Field(f))) if n == 0 => this_field(&f.object, f.optional)
                .map(|_| Accessor::Get(f.name.clone(), MemberCache::default())),
            StmtKind::Return(Some(Expr::Index(ix))) if n == 1 && !ix.checked => {
                let name = this_list(&ix.object)?;
                matches!(ix.index, Expr::Local(1))
                    .then(|| Accessor::GetItem(name, MemberCache::default()))
            }
            StmtKind::Expr(Expr::AssignIndex(a)) if n == 2 && a.op.is_none() => {
                let name = this_list(&a.object)?;
                matches!((&a.index, &a.value), (Expr::Local(1), Expr::Local(2)))
                    .then(|| Accessor::SetItem(name, MemberCache::default()))
            }
            _ => None,
        }
    }
}

/// `this.name` (not `this?.name`).
fn this_field(object: &Expr, optional: bool) -> Option<()> {
    (matches!(object, Expr::Local(0)) && !optional).then_some(())
}

/// The field `e` reads when it is `this.name`.
fn this_list(e: &Expr) -> Option<Rc<str>> {
    match e {
        Expr::Field(f) => this_field(&f.object, f.optional).map(|()| f.name.clone()),
        _ => None,
    }
}

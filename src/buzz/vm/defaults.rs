//! Default values: a parameter's, evaluated in its call's frame with the
//! earlier parameters bound, and a field's, evaluated in the scope its
//! object was declared in. Each is lowered as an expression of a scope
//! laid out as the resolver's levels (every local read by levels out from it,
//! `lower::scoped_expr`) and runs on a frame of its own with that scope
//! as its environment.

use crate::buzz::lower::*;
use crate::buzz::syntax::ast::FunDecl;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::Value;

use crate::buzz::syntax::ast::{self, FieldDecl};
use crate::buzz::vm::value::Scope;
use crate::buzz::vm::{Eval, Interpreter};
use std::rc::Rc;

impl Interpreter {
    /// The default `e` of the field `f`, read in `scope` (where its
    /// object was declared).
    pub(crate) fn field_default_value(
        &mut self,
        f: &FieldDecl,
        e: &ast::Expr,
        scope: &Rc<Scope>,
    ) -> Eval<Value> {
        match crate::buzz::lower::default_of(f, e) {
            Some(lowered) => self.c_in_scope(lowered, scope),
            None => Err(self.not_lowered(e.pos)),
        }
    }

    /// The default of `decl`'s parameter `i` (which has one), read in the
    /// call's frame `scope`.
    pub(crate) fn param_default_value(
        &mut self,
        decl: &FunDecl,
        i: usize,
        scope: &Rc<Scope>,
    ) -> Eval<Value> {
        let lowered = compiled(decl).and_then(|f| f.defaults.get(i)?.as_ref());
        match lowered {
            Some(lowered) => self.c_in_scope(lowered, scope),
            None => Err(self.not_lowered(decl.pos)),
        }
    }

    /// Runs `e` on a frame of its own, `scope` its environment.
    fn c_in_scope(&mut self, e: &ScopedExpr, scope: &Rc<Scope>) -> Eval<Value> {
        let mut frame = vec![Value::Null; e.size];
        self.c_eval(&e.expr, &mut frame, scope)
    }

    /// A tree the resolver never saw cannot run compiled (the run
    /// resolves every file it runs first).
    #[cold]
    pub(crate) fn not_lowered(&self, pos: Pos) -> crate::buzz::vm::Flow {
        self.fail(pos, "internal: code of a tree that was never resolved")
    }
}

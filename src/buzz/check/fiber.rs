//! Fibers in the checker: where `yield` may stand and what it may yield
//! (`*> T` in the function's signature), and what a direct call to a
//! yielding function hands up to the caller's own fiber (upstream's
//! "deep yield": the caller must declare a yield type that takes it).

use super::super::syntax::ast::Expr;
use super::scope::Yields;
use super::ty::Sig;
use super::{CheckError, Cx};

impl Cx<'_, '_> {
    /// `yield value`: inside a function, of the type its `*>` declares.
    pub(super) fn yield_value(&mut self, value: &Expr, e: &Expr) {
        let found = self.expr(value);
        let Some((yields, name)) = self.scopes.yields() else {
            return self.cannot_yield(e);
        };
        let name = name.to_string();
        match yields.clone() {
            Yields::Forbidden => self.cannot_yield(e),
            Yields::Declared(want) => {
                let context = format!("the yield of `{name}`");
                self.expect_type(&want, &found, &context, value);
            }
            Yields::Not => {
                let error = CheckError::Mismatch {
                    context: format!("the yield of `{name}`"),
                    expected: "void".to_string(),
                    found: found.to_string(),
                    help: Some(format!(
                        "declare what `{name}` yields after its result type: `> T *> {found}`"
                    )),
                };
                let (at, w) = self.span_of(value);
                self.report(error, at, w);
            }
        }
    }

    fn cannot_yield(&mut self, e: &Expr) {
        let error = CheckError::NotAllowed {
            message: "can't yield here: `yield` belongs in a function run as a fiber".into(),
            help: Some(
                "move it into a function declared `> T *> Y` and run that with `&f(...)`".into(),
            ),
        };
        self.report(error, e.pos, 5);
    }

    /// A direct call (not `&f()`) of a function that yields: its yields
    /// go to the caller's fiber, so the caller must declare a `*>` that
    /// takes them.
    pub(super) fn deep_yield(&mut self, sig: &Sig, fiber: bool, e: &Expr) {
        let Some(inner) = sig.yields.as_ref() else {
            return;
        };
        if fiber || inner.is_unknown() {
            return;
        }
        let Some((yields, name)) = self.scopes.yields() else {
            return;
        };
        let (want, help) = match yields {
            Yields::Declared(want) if want.accepts(inner) => return,
            Yields::Declared(want) => (want.to_string(), None),
            Yields::Not => (
                "void".to_string(),
                Some(format!(
                    "declare `*> {inner}` on `{name}` too, or run the call as a fiber: `&{}(...)`",
                    sig.name
                )),
            ),
            Yields::Forbidden => return,
        };
        let error = CheckError::Mismatch {
            context: format!("what `{}` yields through `{name}`", sig.name),
            expected: want,
            found: inner.to_string(),
            help,
        };
        self.report(error, e.pos, sig.name.chars().count().max(1));
    }
}

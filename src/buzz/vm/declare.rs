//! Declarations inside a function (or a `test` block): a local `object`,
//! `enum`, `protocol` or `import`, and the `do … until` whose condition
//! reads its step's scope.
//!
//! An object's methods and field defaults close over the scope it is made
//! in, so a function declaring one is lowered with every level in scopes
//! (`lower`'s `all_scoped`): the environment at the declaration is the
//! scope of the resolver's level there. The node evaluates the static
//! fields' and cases' values on the flat frame, then hands them to the
//! interpreter's own helpers (`bind_object`, `bind_enum`, `bind_protocol`,
//! `import`), which make the type and bind it in that scope.

use crate::buzz::lower::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::Value;

use crate::buzz::vm::value::Scope;
use crate::buzz::vm::{Eval, Interpreter};
use std::rc::Rc;

impl Interpreter {
    /// Runs a declaration in `env`, the scope it binds its name in; `pos`
    /// is the statement's (where an `import` reports).
    pub(super) fn c_declare(
        &mut self,
        d: &Declaration,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        match d {
            Declaration::Object(decl, statics) => {
                let values = self.c_given(statics, fr, env)?;
                let values = values.into_iter().map(Option::unwrap_or_default);
                self.bind_object(decl, env, values.collect());
                Ok(())
            }
            Declaration::Enum(decl, cases) => {
                let given = self.c_given(cases, fr, env)?;
                self.bind_enum(decl, env, given);
                Ok(())
            }
            Declaration::Protocol(name) => {
                self.bind_protocol(name, env);
                Ok(())
            }
            Declaration::Import {
                module,
                alias,
                names,
            } => self.import(module, alias.as_ref(), names, env, pos),
        }
    }

    /// The values of the expressions given, in order; `None` where none is.
    fn c_given(
        &mut self,
        exprs: &[Option<Expr>],
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<Vec<Option<Value>>> {
        let mut values = Vec::with_capacity(exprs.len());
        for e in exprs {
            values.push(match e {
                Some(e) => Some(self.c_eval(e, fr, env)?),
                None => None,
            });
        }
        Ok(values)
    }

    /// [`StepScoped`]: one step of the loop at `pos` per scope; a scope
    /// that nothing kept is used again for the next step.
    pub(super) fn c_do_until_scoped(
        &mut self,
        l: &StepScoped,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Eval<()> {
        loop {
            let step = self.block_scope(env);
            let again = match self.c_loop_body(&l.body, (&l.label, pos), fr, &step) {
                Ok(true) => self.c_cond(&l.cond, fr, &step).map(|done| !done),
                other => other,
            };
            self.end_block_scope(step);
            if !again? {
                return Ok(());
            }
        }
    }
}

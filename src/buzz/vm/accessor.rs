//! Methods whose whole body reads `this.field`, reads `this.field[p]` or
//! stores `this.field[p] = q` (a `Buffer`'s `at` and `setAt`, a getter;
//! recognised at lowering, `lower/accessor.rs`): run at a compiled call
//! site without making a frame.
//!
//! Why: such a call does a few dozen instructions of work behind several
//! hundred of call sequence (fasta makes two per byte it writes). Only
//! the plain case runs here: every check the call would make passes, the
//! field holds a list and the index is in range; anything else runs the
//! ordinary call with the arguments already evaluated, which reports
//! exactly what it always did (the body has no effect before it fails).

use super::exec::{discard, Got};
use crate::buzz::lower::accessor::Accessor;
use crate::buzz::lower::{Args, Check, Function};
use crate::buzz::syntax::ast::FunDecl;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::conform::plainly_conforms;
use crate::buzz::vm::limits::{MAX_CALL_DEPTH, MAX_EVAL_DEPTH};
use crate::buzz::vm::value::{Scope, Value};
use crate::buzz::vm::Interpreter;
use std::rc::Rc;

impl Interpreter {
    /// A call of the accessor method `decl` (compiled as `f`) on
    /// `receiver`, its arguments given in order by `args`.
    ///
    /// Answers in two registers ([`super::exec::Got`]): as an `Eval`, its
    /// result went through memory as two stores read back as one 16-byte
    /// load, which store forwarding cannot serve (a third of this
    /// function's time in fasta, by perf).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(super) fn c_accessor_got(
        &mut self,
        (decl, f, acc): (&FunDecl, &Function, &Accessor),
        receiver: Value,
        args: &Args,
        class_scope: &Rc<Scope>,
        pos: Pos,
        fr: &mut [Value],
        env: &Rc<Scope>,
    ) -> Got {
        let mut values = [const { Value::Null }; 2];
        for (slot, e) in values.iter_mut().zip(&args.values) {
            match self.c_eval(e, fr, env) {
                Ok(v) => *slot = v,
                Err(flow) => return self.park(Err(flow)),
            }
        }
        let n = args.values.len();
        let done = if self.accessor_may_run(decl, f, &values[..n]) {
            run(acc, &receiver, &mut values)
        } else {
            None
        };
        let Some(v) = done else {
            let fill = |_: &mut Self, frame: &mut [Value]| {
                for (i, v) in values.iter_mut().take(n).enumerate() {
                    frame[1 + i] = std::mem::take(v);
                }
                Ok(())
            };
            let r = self.with_frame((decl, f), n, Some(receiver), fill, (class_scope, pos));
            return self.park(r);
        };
        discard(receiver);
        let [a, b] = values;
        discard(a);
        discard(b);
        Some(v)
    }

    /// Whether every check the ordinary call makes before and inside the
    /// body passes: the parameters' types, the call depth, the stack and
    /// memory budgets, and the body's statement check.
    #[inline]
    fn accessor_may_run(&self, decl: &FunDecl, f: &Function, values: &[Value]) -> bool {
        let typed = values
            .iter()
            .enumerate()
            .all(|(i, v)| match (f.checks.get(i), v) {
                (Some(Check::Int), Value::Int(_)) | (Some(Check::Double), Value::Double(_)) => true,
                _ => decl
                    .params
                    .get(i)
                    .is_some_and(|p| plainly_conforms(&p.ty, v)),
            });
        typed
            && self.calls < MAX_CALL_DEPTH
            && self.depth + 2 < MAX_EVAL_DEPTH
            && self.within_budgets()
    }
}

/// The accessor's work when it is plain: `None` when the ordinary call
/// must run (a field that is not there or not a list, an index that is
/// not an int in range).
#[inline]
fn run(acc: &Accessor, receiver: &Value, values: &mut [Value; 2]) -> Option<Value> {
    let Value::Object(obj) = receiver else {
        return None;
    };
    match acc {
        Accessor::Get(name, cache) => obj.get_at_site(name, cache),
        Accessor::GetItem(name, cache) => {
            let field = obj.field_at_site(name, cache)?;
            let (Value::List(list), Value::Int(i)) = (&*field, &values[0]) else {
                return None;
            };
            let items = list.items.borrow();
            usize::try_from(*i).ok().and_then(|i| items.get(i)).cloned()
        }
        Accessor::SetItem(name, cache) => {
            let field = obj.field_at_site(name, cache)?;
            let (Value::List(list), Value::Int(i)) = (&*field, &values[0]) else {
                return None;
            };
            let mut items = list.items.borrow_mut();
            let slot = usize::try_from(*i).ok().and_then(|i| items.get_mut(i))?;
            let old = std::mem::replace(slot, std::mem::take(&mut values[1]));
            drop(items);
            drop(field);
            discard(old);
            Some(Value::Null)
        }
    }
}

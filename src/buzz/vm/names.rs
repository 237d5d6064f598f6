//! Names found at run time: a local by its resolved slot, a top-level name
//! in the file's globals (by a remembered index, else by name), and a
//! name bound by name (a generic parameter, a local `import` or
//! `protocol`), read and assigned.

use super::{Eval, Flow, Interpreter};
use crate::buzz::lib::methods;
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::*;
use std::rc::Rc;

/// A top-level name of the file `scope` is in: at `hint` when it is still
/// there, else searched (and `hint` updated). Names a call binds by name
/// (a generic parameter, a local `import`) are found by the full search.
fn global(scope: &Rc<Scope>, name: &str, res: &Resolved, hint: u32) -> Option<Value> {
    let root = scope.root();
    {
        let vars = root.vars.borrow();
        if let Some(s) = vars.get(hint as usize) {
            if same_name(&s.name, name) {
                return Some(s.value.clone());
            }
        }
        if let Some(i) = vars.iter().position(|s| same_name(&s.name, name)) {
            res.set(Res::Global { hint: i as u32 });
            return Some(vars[i].value.clone());
        }
    }
    lookup(scope, name)
}

/// The function a call names when it is the top-level name `name` at
/// `hint` of `scope`'s file (where [`global`] looks first): only its
/// closure is cloned, not a whole [`Value`]. `None` sends the call the
/// general way ([`Interpreter::variable`]), which finds every other case.
#[inline]
pub(in crate::buzz) fn global_function(
    scope: &Rc<Scope>,
    name: &str,
    hint: u32,
) -> Option<Rc<Closure>> {
    let vars = scope.root().vars.borrow();
    match vars.get(hint as usize) {
        Some(Slot {
            name: bound,
            value: Value::Function(closure),
            ..
        }) if same_name(bound, name) => Some(closure.clone()),
        _ => None,
    }
}

pub(in crate::buzz) fn lookup(scope: &Rc<Scope>, name: &str) -> Option<Value> {
    let mut current = Some(scope);
    while let Some(s) = current {
        let vars = s.vars.borrow();
        if let Some(slot) = vars.iter().rev().find(|slot| same_name(&slot.name, name)) {
            return Some(slot.value.clone());
        }
        current = s.parent.as_ref();
    }
    None
}

impl Interpreter {
    /// The value of the name `name`, found where the resolver said.
    #[inline]
    pub(in crate::buzz) fn variable(
        &self,
        name: &str,
        res: &Resolved,
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<Value> {
        let found = match res.get() {
            Res::Local { depth: 0, slot, .. } => return Ok(scope.get(slot)),
            Res::Local { depth, slot, .. } => scope.ancestor(depth).map(|s| s.get(slot)),
            Res::Global { hint } => global(scope, name, res, hint),
            Res::Dynamic => lookup(scope, name),
        };
        match found {
            Some(v) => Ok(v),
            None => Err(self.unknown_name(name, pos)),
        }
    }

    #[cold]
    #[inline(never)]
    fn unknown_name(&self, name: &str, pos: Pos) -> Flow {
        if self.modules.contains_key(name) {
            let spec = crate::buzz::syntax::import_names::import_spec(name);
            return self.fail(pos, format!("module `{name}` is not imported: add `import \"{spec}\";` at the top of the spell"));
        }
        self.fail(pos, format!("unknown name `{name}`"))
    }

    /// `name = new` or `name op= new` for a name bound by name, finding
    /// the binding once.
    pub(in crate::buzz) fn assign_var(
        &self,
        name: &str,
        op: Option<BinOp>,
        new: Value,
        scope: &Rc<Scope>,
        at: Pos,
        pos: Pos,
    ) -> Eval<Value> {
        let mut current = Some(scope);
        while let Some(s) = current {
            let mut vars = s.vars.borrow_mut();
            if let Some(slot) = vars.iter_mut().find(|slot| same_name(&slot.name, name)) {
                if slot.mutability == Mutability::Final {
                    return Err(self.fail(at, format!("cannot assign to `{name}`: it is `final`")));
                }
                let new = match op {
                    Some(op) => methods::binary(op, &slot.value, &new)
                        .map_err(|message| self.fail(pos, message))?,
                    None => new,
                };
                slot.value = new.clone();
                return Ok(new);
            }
            current = s.parent.as_ref();
        }
        Err(self.fail(at, format!("unknown name `{name}`")))
    }
}

//! Generic type arguments at run time. `f::<int>(x)` gives `fun f::<T>`'s
//! parameter `T` the type `int` for that call, so that `value is T`,
//! `value as T`, `catch (e: T)`, `if (x as y: T)` and `<T>` inside `f` see
//! `int` (what upstream's `buzz:test` needs for `assertOfType::<T>`).
//!
//! Each call binds the generic parameters in its own scope, like
//! parameters, as type values; a type naming a parameter is read through
//! that binding only where the name is no type the spell knows, so code
//! without generics takes none of these paths. As upstream: extra type
//! arguments are ignored, a parameter given none stays unbound (`is T` is
//! then false), and natives and list, map and str methods (`map::<str>`)
//! take theirs from their arguments.

use super::conform::type_matches;
use super::names::lookup;
use super::value::{Closure, Scope, Value};
use super::Interpreter;
use crate::buzz::syntax::ast::{FunDecl, Mutability, Type};
use std::borrow::Cow;
use std::rc::Rc;

impl Interpreter {
    /// `f` with `types` for its generic parameters, each read in `scope`
    /// (so `g::<T>` inside a generic function passes on its own `T`).
    pub(super) fn with_type_args(&self, f: Value, types: &[Type], scope: &Rc<Scope>) -> Value {
        match &f {
            Value::Function(c) if !c.decl.generics.is_empty() => {
                let type_args = types
                    .iter()
                    .take(c.decl.generics.len())
                    .map(|t| self.bound_type(t, scope).into_owned())
                    .collect();
                Value::Function(Rc::new(Closure {
                    decl: c.decl.clone(),
                    scope: c.scope.clone(),
                    type_args,
                }))
            }
            _ => f,
        }
    }

    /// `ty` with every generic parameter bound in `scope` replaced by its
    /// type; borrowed unchanged when it names none.
    pub(super) fn bound_type<'t>(&self, ty: &'t Type, scope: &Rc<Scope>) -> Cow<'t, Type> {
        if !self.names_unknown_type(ty) {
            return Cow::Borrowed(ty);
        }
        Cow::Owned(self.substitute(ty, scope))
    }

    /// Whether `value` is a `ty`, generic parameters read in `scope`.
    pub(super) fn holds(&self, ty: &Type, value: &Value, scope: &Rc<Scope>) -> bool {
        type_matches(ty, value) || self.holds_bound(ty, value, scope)
    }

    /// The rare second look: `ty` names something unknown that may be a
    /// generic parameter bound in `scope`. Out of line, so that `is` costs
    /// what it did.
    #[inline(never)]
    fn holds_bound(&self, ty: &Type, value: &Value, scope: &Rc<Scope>) -> bool {
        self.names_unknown_type(ty) && type_matches(&self.substitute(ty, scope), value)
    }

    fn substitute(&self, ty: &Type, scope: &Rc<Scope>) -> Type {
        let inner = |t: &Type| Box::new(self.substitute(t, scope));
        match ty {
            Type::Named(name) if !self.is_known_type(name) => match lookup(scope, name) {
                Some(Value::Type(bound)) => (*bound).clone(),
                _ => ty.clone(),
            },
            Type::List(t) => Type::List(inner(t)),
            Type::Map(k, v) => Type::Map(inner(k), inner(v)),
            Type::Optional(t) => Type::Optional(inner(t)),
            Type::Mut(t) => Type::Mut(inner(t)),
            other => other.clone(),
        }
    }

    /// Whether `ty` mentions a name that is neither a built-in type nor an
    /// object, enum or protocol of the spell: maybe a generic parameter.
    fn names_unknown_type(&self, ty: &Type) -> bool {
        match ty {
            Type::Named(name) => !self.is_known_type(name),
            Type::List(t) | Type::Optional(t) | Type::Mut(t) => self.names_unknown_type(t),
            Type::Map(k, v) => self.names_unknown_type(k) || self.names_unknown_type(v),
            Type::Any | Type::Void | Type::Function | Type::AnonObject => false,
        }
    }

    fn is_known_type(&self, name: &str) -> bool {
        super::lang::is_builtin_type(name) || name == "fib" || self.types.contains_key(name)
    }

    /// Binds `decl`'s generic parameters to `type_args` in the scope of
    /// one call.
    pub(super) fn bind_type_args(decl: &FunDecl, type_args: &[Type], scope: &Scope) {
        for (name, ty) in decl.generics.iter().zip(type_args) {
            scope.define(
                name.clone(),
                Value::Type(Rc::new(ty.clone())),
                Mutability::Final,
            );
        }
    }
}

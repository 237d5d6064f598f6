//! Calls, members, subscripts, assignments and object literals: arity and
//! argument names, fields and methods that exist, `final` and `mut`.

use super::super::syntax::ast::{Arg, BinOp, Expr, ExprKind, FunDecl, Res, Stmt, StmtKind, Type};
use super::expr::var_name;
use super::scope::{BindingKind, FrameKind, Yields};
use super::ty::is_arrow;
use super::ty::{Mutable, Obj, Sig, Ty};
use super::{nearest, CheckError, Cx};
use crate::buzz::lib::method_names::{Receiver, ENUM_CASE_FIELDS};
use std::rc::Rc;

/// List and map methods that change the receiver in place.
const LIST_MUTATORS: [&str; 5] = ["append", "insert", "remove", "pop", "fill"];
const MAP_MUTATORS: [&str; 1] = ["remove"];

impl Cx<'_, '_> {
    pub(super) fn call(&mut self, callee: &Expr, args: &[Arg], e: &Expr) -> Ty {
        // `f::<T>(…)` is checked as `f(…)`: generic types are not checked.
        let callee = match &callee.kind {
            ExprKind::Generic { callee, .. } => callee,
            _ => callee,
        };
        let fiber = std::mem::take(&mut self.fiber_call);
        let callee_ty = match &callee.kind {
            ExprKind::Field {
                object,
                name,
                optional,
                ..
            } => {
                let receiver = self.expr(object);
                if let Some(t) = self.builtin_method(&receiver, name, args, callee) {
                    return t;
                }
                self.mut_method(&receiver, name, callee);
                if *optional {
                    // `x?.method()`: null when `x` is, else the call's result.
                    let method = self
                        .field_of(receiver, object, name, true, callee)
                        .unwrapped();
                    let ret = self.call_typed(method, callee, args, e, fiber);
                    return Ty::Optional(Box::new(ret.unwrapped())).known();
                }
                self.field_of(receiver, object, name, false, callee)
            }
            _ => self.expr(callee),
        };
        self.call_typed(callee_ty, callee, args, e, fiber)
    }

    /// A `mut fun` called on an instance that is not `mut`.
    fn mut_method(&mut self, receiver: &Ty, name: &str, callee: &Expr) {
        let Ty::Instance(o) = receiver else { return };
        let is_mut = o.decl.methods.iter().any(|m| &*m.name == name && m.is_mut);
        if o.mutable == Mutable::Yes || !is_mut {
            return;
        }
        let error = CheckError::NotMutInstance {
            object: o.decl.name.to_string(),
            what: format!("`{name}` is a `mut fun`"),
        };
        let at = self.spot(callee.pos, name);
        self.report(error, at, name.chars().count());
    }

    fn call_typed(
        &mut self,
        callee_ty: Ty,
        callee: &Expr,
        args: &[Arg],
        e: &Expr,
        fiber: bool,
    ) -> Ty {
        let sig = Self::sig_of(&callee_ty);
        let expected: Vec<Option<Ty>> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                sig.as_ref()
                    .and_then(|s| param_for(s, i, a).map(|p| p.ty.clone()))
            })
            .collect();
        let found: Vec<Ty> = args
            .iter()
            .zip(&expected)
            .map(|(a, want)| self.expr_expecting(&a.value, want.as_ref()))
            .collect();
        match &callee_ty {
            Ty::Fun(sig) => {
                self.arguments(sig, args, &found, e);
                self.deep_yield(sig, fiber, callee);
                sig.ret.clone()
            }
            Ty::Class(_) | Ty::Enum(_) | Ty::Unknown | Ty::Module(_) | Ty::TypeValue => Ty::Unknown,
            Ty::Optional(_) => {
                let error = CheckError::Optional {
                    what: self.describe(callee),
                    name: var_name(callee),
                    ty: callee_ty.to_string(),
                    use_: "a call".to_string(),
                };
                let (at, w) = self.span_of(callee);
                self.report(error, at, w);
                Ty::Unknown
            }
            other => {
                let error = CheckError::NotCallable {
                    ty: other.to_string(),
                };
                let (at, w) = self.span_of(callee);
                self.report(error, at, w);
                Ty::Unknown
            }
        }
    }

    /// Arity, argument names and argument types against `sig`.
    fn arguments(&mut self, sig: &Sig, args: &[Arg], found: &[Ty], e: &Expr) {
        if sig.open {
            return;
        }
        let signature = sig.to_string();
        let mut given = vec![false; sig.params.len()];
        let mut next = 0;
        for (arg, ty) in args.iter().zip(found) {
            let i = match &arg.name {
                Some(n) => match sig.params.iter().position(|p| p.name == **n) {
                    Some(i) => i,
                    None => {
                        let near = nearest(n, sig.params.iter().map(|p| p.name.as_str()));
                        let error = CheckError::UnknownArgument {
                            function: sig.name.clone(),
                            name: n.to_string(),
                            near,
                            signature: signature.clone(),
                        };
                        let at = self.spot(arg.value.pos.min_line(e.pos), n);
                        self.report(error, at, n.chars().count());
                        return;
                    }
                },
                None => next,
            };
            let Some(param) = sig.params.get(i) else {
                let error = CheckError::Arity {
                    function: sig.name.clone(),
                    expected: arity(sig),
                    found: args.len(),
                    signature,
                };
                let (at, w) = self.span_of(&arg.value);
                self.report(error, at, w);
                return;
            };
            given[i] = true;
            next = i + 1;
            let context = format!("argument `{}` of `{}`", param.name, sig.name);
            self.expect_type(&param.ty, ty, &context, &arg.value);
        }
        if let Some(p) = sig
            .params
            .iter()
            .zip(&given)
            .find(|(p, g)| !**g && !p.optional)
        {
            let error = CheckError::MissingArgument {
                function: sig.name.clone(),
                name: p.0.name.clone(),
                signature,
            };
            let at = self.spot(e.pos, "(");
            self.report(error, at, 1);
        }
    }

    /// `list.append(x)` and friends: mutability, then the arguments; the
    /// result is unknown. `None` when the receiver is not a list or map.
    fn builtin_method(&mut self, receiver: &Ty, name: &str, args: &[Arg], at: &Expr) -> Option<Ty> {
        let (kind, mutable, mutators): (&'static str, Mutable, &[&str]) = match receiver {
            Ty::List(_, m) => ("list", *m, &LIST_MUTATORS),
            Ty::Map(_, _, m) => ("map", *m, &MAP_MUTATORS),
            Ty::Str | Ty::Range | Ty::Pattern => ("str", Mutable::Yes, &[]),
            _ => return None,
        };
        self.builtin_exists(receiver, name, at);
        if mutable == Mutable::No && mutators.contains(&name) {
            let error = CheckError::Immutable {
                method: name.to_string(),
                kind,
            };
            let spot = self.spot(at.pos, name);
            self.report(error, spot, name.chars().count());
        }
        for a in args {
            self.expr(&a.value);
        }
        Some(Ty::Unknown)
    }

    /// A method of `str`, lists, maps, ranges or patterns that the run
    /// does not have: its table ([`Receiver`]) is the run's own.
    fn builtin_exists(&mut self, receiver: &Ty, name: &str, at: &Expr) {
        let Some(kind) = builtin_receiver(receiver) else {
            return;
        };
        if kind.has(name) {
            return;
        }
        let error = CheckError::UnknownMember {
            owner: format!("`{receiver}`"),
            name: name.to_string(),
            near: nearest(name, kind.methods()),
        };
        let spot = self.spot(at.pos, name);
        self.report(error, spot, name.chars().count());
    }

    pub(super) fn field(&mut self, object: &Expr, name: &str, optional: bool, e: &Expr) -> Ty {
        let receiver = self.expr(object);
        self.field_of(receiver, object, name, optional, e)
    }

    fn field_of(
        &mut self,
        receiver: Ty,
        object: &Expr,
        name: &str,
        optional: bool,
        e: &Expr,
    ) -> Ty {
        let t = match (&receiver, optional) {
            (Ty::Optional(inner), true) => (**inner).clone(),
            (Ty::Optional(_), false) => {
                let error = CheckError::Optional {
                    what: self.describe(object),
                    name: var_name(object),
                    ty: receiver.to_string(),
                    use_: format!("`.{name}`"),
                };
                let (at, w) = self.span_of(object);
                self.report(error, at, w);
                return Ty::Unknown;
            }
            (t, _) => t.clone(),
        };
        let result = self.member(&t, name, e);
        if optional {
            match result {
                Ty::Unknown => Ty::Unknown,
                r => Ty::Optional(Box::new(r.unwrapped())),
            }
        } else {
            result
        }
    }

    /// The member `name` of a value of type `t`, reporting one that the
    /// type settles does not exist.
    fn member(&mut self, t: &Ty, name: &str, e: &Expr) -> Ty {
        if let (Ty::Instance(o) | Ty::Class(o), true) =
            (t, name.starts_with(|c: char| c.is_ascii_digit()))
        {
            let error = CheckError::NotAllowed {
                message: format!(
                    "tuple index shorthand `.{name}` is only allowed on tuples, and `{}` is an object",
                    o.decl.name
                ),
                help: Some(format!("name the field: `.@\"{name}\"`")),
            };
            let at = self.spot(e.pos, name);
            self.report(error, at, name.chars().count());
            return Ty::Unknown;
        }
        let (owner, names, found): (String, Vec<String>, Option<Ty>) = match t {
            Ty::Module(m) => (
                format!("module `{}`", m.name),
                m.members.keys().cloned().collect(),
                m.members.get(name).cloned(),
            ),
            Ty::Instance(o) => {
                let (names, found) = object_member(o, name, false);
                let found = found.map(|t| self.arrow_result(o, name, t));
                (format!("`{}`", o.decl.name), names, found)
            }
            Ty::Class(o) => {
                let (names, found) = object_member(o, name, true);
                (format!("object `{}`", o.decl.name), names, found)
            }
            Ty::Enum(decl) => {
                let names: Vec<String> = decl.cases.iter().map(|(n, _)| n.to_string()).collect();
                let found = names
                    .iter()
                    .any(|n| n == name)
                    .then(|| Ty::Case(decl.clone()));
                (format!("enum `{}`", decl.name), names, found)
            }
            Ty::Protocol(p) => {
                let names: Vec<String> = p.methods.iter().map(|m| m.to_string()).collect();
                let found = p
                    .methods
                    .iter()
                    .any(|m| &**m == name)
                    .then_some(Ty::Unknown);
                (format!("protocol `{}`", p.name), names, found)
            }
            Ty::Int | Ty::Double | Ty::Bool | Ty::Ud => (format!("`{t}`"), Vec::new(), None),
            Ty::Case(decl) => {
                let names = ENUM_CASE_FIELDS.iter().map(|n| n.to_string()).collect();
                let found = ENUM_CASE_FIELDS.contains(&name).then_some(Ty::Unknown);
                (format!("a case of enum `{}`", decl.name), names, found)
            }
            _ => match builtin_receiver(t) {
                Some(kind) => (
                    format!("`{t}`"),
                    kind.methods().map(str::to_string).collect(),
                    kind.has(name).then_some(Ty::Unknown),
                ),
                None => return Ty::Unknown,
            },
        };
        if let Some(found) = found {
            return found;
        }
        let near = nearest(name, names.iter().map(String::as_str));
        let at = self.spot(e.pos, name);
        let error = CheckError::UnknownMember {
            owner,
            name: name.to_string(),
            near,
        };
        self.report(error, at, name.chars().count());
        Ty::Unknown
    }

    /// A method `fun m() => expr` without a declared type: upstream
    /// infers its result from `expr`, so the checker types `expr` in the
    /// method's own scope (`this`, its parameters, the file's globals),
    /// silently, once per method.
    fn arrow_result(&mut self, o: &Obj, name: &str, t: Ty) -> Ty {
        let Ty::Fun(sig) = &t else { return t };
        let method = o.decl.methods.iter().find(|m| &*m.name == name);
        // Only in the file that declares it: its globals are in scope.
        let here = Rc::ptr_eq(&o.types, &self.types);
        let Some(m) = method.filter(|m| here && is_arrow(m) && m.ret == Type::Void) else {
            return t;
        };
        let key = Rc::as_ptr(m);
        let ret = match self.arrows.get(&key) {
            Some(ret) => ret.clone(),
            None if self.inferring.contains(&key) || self.inferring.len() >= 4 => return t,
            None => {
                let ret = self.infer_arrow(o, m);
                self.arrows.insert(key, ret.clone());
                ret
            }
        };
        let sig = Sig {
            ret,
            ..(**sig).clone()
        };
        Ty::Fun(Rc::new(sig))
    }

    fn infer_arrow(&mut self, o: &Obj, m: &Rc<FunDecl>) -> Ty {
        let [Stmt {
            kind: StmtKind::Return(Some(body)),
            ..
        }] = m.body.as_slice()
        else {
            return Ty::Unknown;
        };
        self.inferring.push(Rc::as_ptr(m));
        self.checker.quiet += 1;
        let saved = self.scopes.isolate();
        self.scopes.push(
            FrameKind::Function {
                ret: Ty::Unknown,
                name: m.name.to_string(),
                yields: Yields::Forbidden,
            },
            true,
        );
        let mutable = if m.is_mut { Mutable::Yes } else { Mutable::No };
        let this = Ty::Instance(o.clone()).with_mutable(mutable);
        self.scopes
            .declare(Rc::from("this"), this, BindingKind::Final);
        let sig = o.types.sig(m);
        for (param, p) in m.params.iter().zip(&sig.params) {
            self.scopes
                .declare(param.name.clone(), p.ty.clone(), BindingKind::Param);
        }
        let ret = self.expr(body);
        self.scopes.restore(saved);
        self.checker.quiet -= 1;
        self.inferring.pop();
        match ret {
            Ty::Null | Ty::Void => Ty::Unknown,
            t => t,
        }
    }

    pub(super) fn index(&mut self, object: &Expr, index: &Expr, checked: bool) -> Ty {
        let t = self.expr(object);
        let i = self.expr(index);
        if let (Ty::List(..) | Ty::Str, Ty::Optional(_)) = (&t, &i) {
            let error = CheckError::Optional {
                what: self.describe(index),
                ty: i.to_string(),
                use_: "an index".to_string(),
                name: var_name(index),
            };
            let (at, w) = self.span_of(index);
            self.report(error, at, w);
        }
        let item = match &t {
            Ty::List(item, _) => (**item).clone(),
            Ty::Str => Ty::Str,
            _ => Ty::Unknown,
        };
        if checked {
            match item {
                Ty::Unknown => Ty::Unknown,
                i => Ty::Optional(Box::new(i.unwrapped())),
            }
        } else {
            item
        }
    }

    pub(super) fn assign(&mut self, target: &Expr, op: Option<BinOp>, value: &Expr) -> Ty {
        let target_ty = match &target.kind {
            ExprKind::Var(name, _) if &**name == "_" => return self.expr(value),
            ExprKind::Var(name, res) => self.assign_var(name, res.get(), op, target),
            ExprKind::Field { object, name, .. } => self.assign_field(object, name, target),
            ExprKind::Index { object, index, .. } => {
                let t = self.expr(object);
                self.expr(index);
                if let (Ty::List(_, Mutable::No) | Ty::Map(_, _, Mutable::No), None) = (&t, op) {
                    let kind = if matches!(t, Ty::Map(..)) {
                        "map"
                    } else {
                        "list"
                    };
                    let error = CheckError::Immutable {
                        method: "[…] =".to_string(),
                        kind,
                    };
                    let (at, w) = self.span_of(object);
                    self.report(error, at, w);
                }
                match t {
                    Ty::List(item, _) => *item,
                    _ => Ty::Unknown,
                }
            }
            _ => self.expr(target),
        };
        let found = self.expr_expecting(value, Some(&target_ty));
        if op.is_none() {
            self.expect_type(&target_ty, &found, "the assignment", value);
        }
        target_ty
    }

    fn assign_var(&mut self, name: &Rc<str>, res: Res, op: Option<BinOp>, target: &Expr) -> Ty {
        let Some(found) = self.scopes.lookup_resolved(name, res) else {
            return self.expr(target);
        };
        found.assigned.set(true);
        if op.is_some() {
            found.used.set(true);
        }
        let b = found.clone();
        let what = match b.kind {
            BindingKind::Var => None,
            BindingKind::Final => Some("`final`"),
            BindingKind::Param => Some("a parameter (parameters are final)"),
            BindingKind::Declaration => Some("a declaration, not a variable"),
        };
        if let Some(what) = what {
            let error = CheckError::Final {
                name: name.to_string(),
                what,
            };
            self.report(error, target.pos, name.chars().count());
        }
        b.ty
    }

    fn assign_field(&mut self, object: &Expr, name: &str, target: &Expr) -> Ty {
        let receiver = self.expr(object);
        if let Ty::Enum(_) | Ty::Case(_) = receiver {
            let error = CheckError::Final {
                name: name.to_string(),
                what: "an enum case",
            };
            let at = self.spot(target.pos, name);
            self.report(error, at, name.chars().count());
            return Ty::Unknown;
        }
        if let Ty::Instance(o) = &receiver {
            self.field_assignable(o, name, target);
        }
        self.member(&receiver, name, target)
    }

    /// A `final` field, or any field of an instance that is not `mut`,
    /// cannot be assigned.
    fn field_assignable(&mut self, o: &Obj, name: &str, target: &Expr) {
        let Some(field) = o.decl.fields.iter().find(|f| &*f.name == name) else {
            return;
        };
        let error = if field.is_final {
            CheckError::Final {
                name: name.to_string(),
                what: "a `final` field",
            }
        } else if o.mutable == Mutable::No && !field.is_static {
            CheckError::NotMutInstance {
                object: o.decl.name.to_string(),
                what: format!("cannot assign field `{name}`"),
            }
        } else {
            return;
        };
        let at = self.spot(target.pos, name);
        self.report(error, at, name.chars().count());
    }

    /// `Name{ … }`: `res` is the resolver's answer for `Name`.
    pub(super) fn instance(
        &mut self,
        object: &Rc<str>,
        res: Res,
        fields: &[(Rc<str>, Expr)],
        e: &Expr,
    ) -> Ty {
        let class = match self.scopes.lookup_resolved(object, res) {
            Some(b) => b.ty.clone(),
            None => self.variable_type(object, e),
        };
        self.instance_of(class, fields, e)
    }

    fn variable_type(&mut self, name: &Rc<str>, e: &Expr) -> Ty {
        let var = Expr {
            kind: ExprKind::Var(name.clone(), Default::default()),
            pos: e.pos,
            end: e.end,
        };
        self.expr(&var)
    }

    pub(super) fn instance_of(&mut self, class: Ty, fields: &[(Rc<str>, Expr)], e: &Expr) -> Ty {
        let obj = match class {
            Ty::Class(obj) => obj,
            other => {
                if !matches!(other, Ty::Unknown | Ty::Module(_) | Ty::TypeValue) {
                    let error = CheckError::Mismatch {
                        context: "`Name{ ... }`".to_string(),
                        expected: "an object".to_string(),
                        found: other.to_string(),
                        help: None,
                    };
                    self.report(error, e.pos, 1);
                }
                for (_, v) in fields {
                    self.expr(v);
                }
                return Ty::Unknown;
            }
        };
        self.fields_of(&obj, fields, e);
        Ty::Instance(obj)
    }

    /// `.{ … }` where an object is expected: it must fit the object.
    pub(super) fn anonymous_as(&mut self, obj: Obj, fields: &[(Rc<str>, Expr)], e: &Expr) -> Ty {
        // A tuple `.{ 1, 2 }` fills the object's fields in order.
        if fields
            .iter()
            .any(|(n, _)| n.starts_with(|c: char| c.is_ascii_digit()))
        {
            for (_, v) in fields {
                self.expr(v);
            }
            return Ty::Instance(obj);
        }
        self.fields_of(&obj, fields, e);
        Ty::Instance(obj)
    }

    pub(super) fn unknown_case(
        &mut self,
        decl: &super::super::syntax::ast::EnumDecl,
        name: &str,
        e: &Expr,
    ) {
        let near = nearest(name, decl.cases.iter().map(|(n, _)| &**n));
        let error = CheckError::UnknownMember {
            owner: format!("enum `{}`", decl.name),
            name: name.to_string(),
            near,
        };
        let at = self.spot(e.pos, name);
        self.report(error, at, name.chars().count());
    }

    fn fields_of(&mut self, obj: &Obj, fields: &[(Rc<str>, Expr)], e: &Expr) {
        for (name, value) in fields {
            let declared = obj
                .decl
                .fields
                .iter()
                .find(|f| f.name == *name && !f.is_static);
            let Some(field) = declared else {
                self.expr(value);
                let names = obj.decl.fields.iter().filter(|f| !f.is_static);
                let near = nearest(name, names.map(|f| &*f.name));
                let error = CheckError::UnknownMember {
                    owner: format!("`{}`", obj.decl.name),
                    name: name.to_string(),
                    near,
                };
                let at = self.spot(value.pos.before(e.pos), name);
                self.report(error, at, name.chars().count());
                continue;
            };
            let want = obj.types.resolve(&field.ty);
            let found = self.expr_expecting(value, Some(&want));
            let context = format!("field `{name}` of `{}`", obj.decl.name);
            self.expect_type(&want, &found, &context, value);
        }
    }
}

/// The names of an object's fields and methods (static ones for the
/// object itself), and the type of `name` among them.
fn object_member(o: &Obj, name: &str, statics: bool) -> (Vec<String>, Option<Ty>) {
    let fields = o
        .decl
        .fields
        .iter()
        .filter(|f| f.is_static == statics || !statics);
    let methods = o
        .decl
        .methods
        .iter()
        .filter(|m| m.is_static == statics || !statics);
    let mut names: Vec<String> = fields.clone().map(|f| f.name.to_string()).collect();
    names.extend(methods.clone().map(|m| m.name.to_string()));
    let found = fields
        .clone()
        .find(|f| &*f.name == name)
        .map(|f| o.types.resolve(&f.ty))
        .or_else(|| {
            methods
                .clone()
                .find(|m| &*m.name == name)
                .map(|m| Ty::Fun(Rc::new(o.types.sig(m))))
        });
    (names, found)
}

fn arity(sig: &Sig) -> String {
    let required = sig.params.iter().filter(|p| !p.optional).count();
    if required == sig.params.len() {
        required.to_string()
    } else {
        format!("{required} to {}", sig.params.len())
    }
}

/// The parameter argument `i` fills (by name, else by position).
fn param_for<'s>(sig: &'s Sig, i: usize, arg: &Arg) -> Option<&'s super::ty::ParamSig> {
    match &arg.name {
        Some(n) => sig.params.iter().find(|p| p.name == **n),
        None => sig.params.get(i),
    }
}

trait PosExt {
    fn min_line(self, other: Self) -> Self;
    fn before(self, other: Self) -> Self;
}

impl PosExt for super::super::syntax::lexer::Pos {
    /// The argument's name comes before its value on the value's line;
    /// search from the call's start when it is on the same line.
    fn min_line(self, other: Self) -> Self {
        if other.line == self.line {
            other
        } else {
            super::super::syntax::lexer::Pos {
                line: self.line,
                column: 1,
            }
        }
    }

    fn before(self, other: Self) -> Self {
        self.min_line(other)
    }
}

/// The kind of built-in receiver a value of type `t` is, if it is one.
fn builtin_receiver(t: &Ty) -> Option<Receiver> {
    Some(match t {
        Ty::Str => Receiver::Str,
        Ty::List(..) => Receiver::List,
        Ty::Map(..) => Receiver::Map,
        Ty::Range => Receiver::Range,
        Ty::Pattern => Receiver::Pattern,
        _ => return None,
    })
}

//! Expressions: the type of each, and the mistakes the types decide
//! (operators, conditions, optionals used as values).

use super::super::syntax::ast::{BinOp, Expr, ExprKind, Res, Stmt, StmtKind, TemplatePart, UnOp};
use super::scope::FrameKind;
use super::ty::{Mutable, Sig, Ty};
use super::{CheckError, Cx};
use std::collections::HashSet;
use std::rc::Rc;

impl Cx<'_, '_> {
    pub(super) fn expr(&mut self, e: &Expr) -> Ty {
        self.expr_expecting(e, None)
    }

    /// The type of `e`, where `expected` (if known) is what the context
    /// wants; it types `[]`, `{}` and `.case` that say nothing themselves.
    pub(super) fn expr_expecting(&mut self, e: &Expr, expected: Option<&Ty>) -> Ty {
        match &e.kind {
            ExprKind::Null => Ty::Null,
            ExprKind::Void => Ty::Void,
            ExprKind::Bool(_) => Ty::Bool,
            ExprKind::Int(_) => Ty::Int,
            ExprKind::Double(_) => Ty::Double,
            ExprKind::Str(_) => Ty::Str,
            ExprKind::Pattern(source) => {
                self.pattern(source, e);
                Ty::Pattern
            }
            ExprKind::Template(parts) => {
                for part in parts {
                    if let TemplatePart::Expr(x) = part {
                        self.interpolation(x);
                    }
                }
                Ty::Str
            }
            ExprKind::List(items) => self.list(items, expected),
            ExprKind::Map(entries) => {
                for (k, v) in entries {
                    self.expr(k);
                    self.expr(v);
                }
                match expected {
                    Some(t @ Ty::Map(..)) if entries.is_empty() => {
                        t.clone().with_mutable(Mutable::No)
                    }
                    _ => Ty::Map(Box::new(Ty::Unknown), Box::new(Ty::Unknown), Mutable::No),
                }
            }
            ExprKind::Var(name, res) => self.variable(name, res.get(), e),
            ExprKind::Unary(op, x) => self.unary(*op, x),
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r),
            ExprKind::And(l, r) | ExprKind::Or(l, r) => {
                self.condition(l);
                self.condition(r);
                Ty::Bool
            }
            ExprKind::Coalesce(l, r) => {
                let left = self.expr(l);
                let right = self.expr(r);
                join(left.unwrapped(), right)
            }
            ExprKind::Range(l, r) => {
                self.expr(l);
                self.expr(r);
                Ty::Range
            }
            ExprKind::Is(x, _) => {
                self.expr(x);
                Ty::Bool
            }
            ExprKind::Assign { target, op, value } => self.assign(target, *op, value),
            ExprKind::Call { callee, args } => self.call(callee, args, e),
            ExprKind::Field {
                object,
                name,
                optional,
                ..
            } => self.field(object, name, *optional, e),
            ExprKind::Index {
                object,
                index,
                checked,
            } => self.index(object, index, *checked),
            ExprKind::OptionalIndex { object, index } => {
                let t = self.index(object, index, false);
                Ty::Optional(Box::new(t)).wrap_known()
            }
            ExprKind::Mutable(x) => self.expr_expecting(x, expected).with_mutable(Mutable::Yes),
            ExprKind::Force(x) => self.expr(x).unwrapped(),
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.condition(cond);
                let a = self.expr_expecting(then, expected);
                let b = self.expr_expecting(otherwise, expected);
                join(a, b)
            }
            ExprKind::Catch { body, default } => {
                let a = self.expr_expecting(body, expected);
                self.expr(default);
                a
            }
            ExprKind::Lambda(decl) => {
                self.function(decl, None);
                Ty::Fun(Rc::new(self.types.sig(decl)))
            }
            ExprKind::Instance {
                object,
                fields,
                class,
            } => self.instance(object, class.get(), fields, e),
            ExprKind::InstanceOf { class, fields } => {
                let class_ty = self.expr(class);
                self.instance_of(class_ty, fields, e)
            }
            ExprKind::AnonObject(fields) => match expected.map(Ty::unwrapped) {
                Some(Ty::Instance(obj)) => self.anonymous_as(obj, fields, e),
                _ => {
                    for (_, v) in fields {
                        self.expr(v);
                    }
                    Ty::Unknown
                }
            },
            ExprKind::InferredCase(name) => match expected.map(Ty::unwrapped) {
                Some(Ty::Case(decl)) => {
                    if !decl.cases.iter().any(|(n, _)| n == name) {
                        self.unknown_case(&decl, name, e);
                    }
                    Ty::Case(decl)
                }
                _ => Ty::Unknown,
            },
            ExprKind::TypeOf(x) => {
                self.expr(x);
                Ty::TypeValue
            }
            ExprKind::TypeValue(_) => Ty::TypeValue,
            ExprKind::As {
                value,
                ty,
                optional,
            } => {
                self.expr(value);
                if let (false, super::super::syntax::ast::Type::Optional(_)) = (optional, ty) {
                    let error = CheckError::Mismatch {
                        context: "`as!`".to_string(),
                        expected: "a type that is not optional".to_string(),
                        found: self.types.resolve(ty).to_string(),
                        help: Some(
                            "use `as?` to cast to an optional: `value as? T` gives null on a mismatch"
                                .into(),
                        ),
                    };
                    self.report(error, e.pos, 1);
                }
                if let (true, super::super::syntax::ast::Type::Optional(_)) = (optional, ty) {
                    let error = CheckError::Mismatch {
                        context: "`as?`".to_string(),
                        expected: "a type that is not optional".to_string(),
                        found: self.types.resolve(ty).to_string(),
                        help: Some(
                            "`as?` already gives null on a mismatch: drop the `?` of the type"
                                .into(),
                        ),
                    };
                    self.report(error, e.pos, 1);
                }
                let t = self.types.resolve(ty);
                if *optional {
                    Ty::Optional(Box::new(t)).wrap_known()
                } else {
                    t
                }
            }
            ExprKind::Block(stmts) => {
                if !self.block(stmts, FrameKind::From).jumps() {
                    self.report(CheckError::MissingOut, e.pos, 4);
                }
                Ty::Unknown
            }
            ExprKind::Match {
                subject,
                arms,
                otherwise,
            } => self.match_expr(subject, arms, otherwise.as_deref(), expected, e),
            // `f::<T>`: the function's own type (generic types are not checked).
            ExprKind::Generic { callee, .. } => self.expr_expecting(callee, expected),
            ExprKind::Yield(value) => {
                self.yield_value(value, e);
                Ty::Unknown
            }
            ExprKind::AsyncCall(call) => {
                self.fiber_call = true;
                self.expr(call);
                self.fiber_call = false;
                Ty::Unknown
            }
            ExprKind::Resume(x) | ExprKind::Resolve(x) => {
                self.expr(x);
                Ty::Unknown
            }
            ExprKind::TypedList { items, .. } => {
                for item in items {
                    self.expr(item);
                }
                Ty::Unknown
            }
            #[allow(unreachable_patterns)] // new kinds from later grammar work
            _ => Ty::Unknown,
        }
    }

    /// `"{…}"`: any expression but a block (upstream's rule).
    fn interpolation(&mut self, x: &Expr) {
        if let ExprKind::Block(_) = x.kind {
            let error = CheckError::NotAllowed {
                message: "block expressions are not allowed inside string interpolation".into(),
                help: Some(
                    "compute the value first (`final v = from { ... };`), then write `\"{v}\"`"
                        .into(),
                ),
            };
            self.report(error, x.pos, 4);
        }
        self.expr(x);
    }

    /// `$"…"` is compiled as the run compiles it; a bad one is reported.
    fn pattern(&mut self, source: &str, e: &Expr) {
        if let Err(why) = pcre2::bytes::RegexBuilder::new().utf(true).build(source) {
            let error = CheckError::BadPattern {
                why: why.to_string(),
            };
            self.report(error, e.pos, source.chars().count() + 3);
        }
    }

    fn list(&mut self, items: &[Expr], expected: Option<&Ty>) -> Ty {
        let expected_item = match expected {
            Some(Ty::List(item, _)) => Some((**item).clone()),
            _ => None,
        };
        let mut common: Option<Ty> = None;
        for item in items {
            let t = self.expr_expecting(item, expected_item.as_ref());
            if let Some(want) = &expected_item {
                self.expect_type(want, &t, "a list item", item);
            }
            common = Some(match common {
                None => t,
                Some(c) => join(c, t),
            });
        }
        let item = match (items.is_empty(), expected_item) {
            (true, Some(want)) => want,
            _ => common.unwrap_or(Ty::Unknown),
        };
        Ty::List(Box::new(item), Mutable::No)
    }

    fn variable(&mut self, name: &Rc<str>, res: Res, e: &Expr) -> Ty {
        if let Some(b) = self.scopes.lookup_use(name, res) {
            return b.ty.clone();
        }
        if &**name == "_" || self.open_names || self.anywhere.contains(name) {
            return Ty::Unknown;
        }
        let module = self.checker.env.is_module(name);
        let near = super::nearest(name, self.scopes.names());
        let error = CheckError::UnknownName {
            name: name.to_string(),
            near,
            module,
        };
        let at = self.spot(e.pos, name);
        self.report(error, at, name.chars().count());
        Ty::Unknown
    }

    /// A condition: a `bool` when its type is known.
    pub(super) fn condition(&mut self, e: &Expr) {
        let t = self.expr(e);
        self.expect_type(&Ty::Bool, &t, "a condition", e);
    }

    /// Reports `found` where `expected` is wanted, if the types decide it.
    pub(super) fn expect_type(&mut self, expected: &Ty, found: &Ty, context: &str, at: &Expr) {
        if expected.accepts(found) {
            return;
        }
        let (spot, width) = self.span_of(at);
        if let (Ty::Optional(inner), false) = (found, matches!(expected, Ty::Optional(_))) {
            if expected.accepts(inner) {
                let error = CheckError::Optional {
                    what: self.describe(at),
                    name: var_name(at),
                    ty: found.to_string(),
                    use_: context.to_string(),
                };
                self.report(error, spot, width);
                return;
            }
        }
        let help = match (expected, found) {
            (Ty::List(item, _), Ty::Str) if matches!(**item, Ty::Str) => {
                Some("it takes a list: `[\"program\", \"arg\", ...]`".to_string())
            }
            (Ty::Str, Ty::Int | Ty::Double | Ty::Bool) => {
                Some("interpolate it to make a `str`: `\"{value}\"`".to_string())
            }
            (Ty::Int, Ty::Str) => Some("parse it: `std\\parseInt(text)` (an `int?`)".to_string()),
            _ => None,
        };
        let error = CheckError::Mismatch {
            context: context.to_string(),
            expected: expected.to_string(),
            found: found.to_string(),
            help,
        };
        self.report(error, spot, width);
    }

    /// How an expression is named in a message: a variable by its name.
    pub(super) fn describe(&self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Var(n, _) => format!("`{n}`"),
            ExprKind::Field { name, .. } => format!("`.{name}`"),
            _ => "the value".to_string(),
        }
    }

    /// Where to place a finding about `e` and how many characters to
    /// underline: the whole expression when it fits on its line.
    pub(super) fn span_of(&self, e: &Expr) -> (super::super::syntax::lexer::Pos, usize) {
        match e.width() {
            Some(w) => (e.start(), w as usize),
            None => (e.pos, self.width_of(e)),
        }
    }

    /// How many characters of the line to underline for `e` from `e.pos`.
    pub(super) fn width_of(&self, e: &Expr) -> usize {
        match &e.kind {
            ExprKind::Var(n, _) => n.chars().count(),
            ExprKind::Int(_) | ExprKind::Double(_) | ExprKind::Str(_) | ExprKind::Bool(_) => {
                self.token_width(e)
            }
            _ => 1,
        }
    }

    /// The width of the literal token at `e`'s position.
    fn token_width(&self, e: &Expr) -> usize {
        let Some(line) = self.lines.get(e.pos.line.saturating_sub(1) as usize) else {
            return 1;
        };
        let rest: String = line
            .chars()
            .skip(e.pos.column.saturating_sub(1) as usize)
            .collect();
        if let Some(body) = rest.strip_prefix('"') {
            return body
                .find('"')
                .map_or(1, |end| body[..end].chars().count() + 2);
        }
        rest.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '.' || *c == '_')
            .count()
            .max(1)
    }

    fn unary(&mut self, op: UnOp, x: &Expr) -> Ty {
        let t = self.expr(x);
        match op {
            UnOp::Not => {
                self.expect_type(&Ty::Bool, &t, "`!`", x);
                Ty::Bool
            }
            UnOp::Neg => {
                let usable = self.operand(&t, x, "`-`");
                if t.is_number() {
                    return t;
                }
                // Only a type known not to be a number (a fuzzed `-false`
                // once passed the check and failed at run time).
                if usable
                    && matches!(
                        t,
                        Ty::Bool | Ty::Str | Ty::Null | Ty::List(..) | Ty::Map(..)
                    )
                {
                    let error = CheckError::Mismatch {
                        context: "`-`".to_string(),
                        expected: "int or double".to_string(),
                        found: t.to_string(),
                        help: None,
                    };
                    let (at, width) = self.span_of(x);
                    self.report(error, at, width);
                }
                Ty::Unknown
            }
            UnOp::BitNot => {
                self.expect_type(&Ty::Int, &t, "`~`", x);
                Ty::Int
            }
        }
    }

    /// An optional operand is reported; true when the operand is usable.
    fn operand(&mut self, t: &Ty, x: &Expr, op: &str) -> bool {
        if let Ty::Optional(_) = t {
            let error = CheckError::Optional {
                what: self.describe(x),
                name: var_name(x),
                ty: t.to_string(),
                use_: op.to_string(),
            };
            let (at, width) = self.span_of(x);
            self.report(error, at, width);
            return false;
        }
        true
    }

    fn binary(&mut self, op: BinOp, l: &Expr, r: &Expr) -> Ty {
        let a = self.expr(l);
        let b = self.expr(r);
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            return Ty::Bool;
        }
        let symbol = format!("`{}`", op.symbol());
        if !self.operand(&a, l, &symbol) || !self.operand(&b, r, &symbol) {
            return Ty::Unknown;
        }
        match binary_result(op, &a, &b) {
            Some(t) => t,
            None => {
                let error = CheckError::Operator {
                    op: op.symbol(),
                    left: a.to_string(),
                    right: b.to_string(),
                };
                let (at, width) = self.span_of(l);
                self.report(error, at, width);
                Ty::Unknown
            }
        }
    }

    /// The signature of a callable type, if known.
    pub(super) fn sig_of(t: &Ty) -> Option<Rc<Sig>> {
        match t {
            Ty::Fun(sig) => Some(sig.clone()),
            _ => None,
        }
    }
}

/// The variable an expression is, if it is one (for a `help:` fix).
pub(super) fn var_name(e: &Expr) -> Option<String> {
    match &e.kind {
        ExprKind::Var(n, _) => Some(n.to_string()),
        _ => None,
    }
}

/// The result of `a op b`, or `None` when the types cannot take `op` (as
/// the interpreter's own operators decide).
fn binary_result(op: BinOp, a: &Ty, b: &Ty) -> Option<Ty> {
    if a.is_unknown() || b.is_unknown() {
        return Some(match (op, a, b) {
            (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge, _, _) => Ty::Bool,
            _ => Ty::Unknown,
        });
    }
    let numbers = a.is_number() && b.is_number();
    let number = || {
        if matches!((a, b), (Ty::Int, Ty::Int)) {
            Ty::Int
        } else {
            Ty::Double
        }
    };
    match op {
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            (numbers || matches!((a, b), (Ty::Str, Ty::Str))).then_some(Ty::Bool)
        }
        BinOp::Add => match (a, b) {
            _ if numbers => Some(number()),
            (Ty::Str, Ty::Str) => Some(Ty::Str),
            (Ty::List(..), Ty::List(..)) => Some(a.clone()),
            (Ty::Map(..), Ty::Map(..)) => Some(a.clone()),
            _ => None,
        },
        BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => numbers.then(number),
        _ => matches!((a, b), (Ty::Int, Ty::Int))
            .then_some(Ty::Int)
            .or_else(|| numbers.then(number)),
    }
}

/// The type of a value that is either `a` or `b` (branches of `if`,
/// arms of `match`, items of a list): `T?` when one is `T?` or null.
pub(super) fn join(a: Ty, b: Ty) -> Ty {
    match (&a, &b) {
        (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
        (Ty::Null, Ty::Null) => Ty::Unknown,
        (Ty::Null, t) | (t, Ty::Null) => Ty::Optional(Box::new(t.unwrapped())),
        (Ty::Optional(inner), t) | (t, Ty::Optional(inner)) => {
            if inner.accepts(&t.unwrapped()) && t.unwrapped().accepts(inner) {
                Ty::Optional(inner.clone())
            } else {
                Ty::Unknown
            }
        }
        _ if a.accepts(&b) && b.accepts(&a) => a,
        _ => Ty::Unknown,
    }
}

impl Ty {
    /// `Optional(Unknown)` says nothing more than `Unknown`.
    pub(super) fn known(self) -> Ty {
        self.wrap_known()
    }

    fn wrap_known(self) -> Ty {
        match self {
            Ty::Optional(inner) if inner.is_unknown() => Ty::Unknown,
            Ty::Optional(inner) if matches!(*inner, Ty::Optional(_)) => *inner,
            t => t,
        }
    }
}

/// Every name `stmts` declare at any depth (variables, parameters, loop
/// and catch bindings), for the permissive fallback of name lookup.
pub(super) fn declared_names(stmts: &[Stmt], out: &mut HashSet<Rc<str>>) {
    for stmt in stmts {
        declared_in_stmt(stmt, out);
    }
}

fn declared_in_stmt(stmt: &Stmt, out: &mut HashSet<Rc<str>>) {
    match &stmt.kind {
        StmtKind::Var(d) => {
            out.insert(d.name.clone());
            if let Some(e) = &d.init {
                declared_in_expr(e, out);
            }
        }
        StmtKind::Fun(d) => declared_in_fun(d, out),
        StmtKind::Object(d) => d.methods.iter().for_each(|m| declared_in_fun(m, out)),
        StmtKind::Test { body, .. } | StmtKind::Block(body) => declared_names(body, out),
        StmtKind::If {
            cond,
            binding,
            then,
            otherwise,
        } => {
            declared_in_expr(cond, out);
            if let Some(b) = binding {
                out.insert(b.name.clone());
            }
            declared_names(then, out);
            if let Some(o) = otherwise {
                declared_in_stmt(o, out);
            }
        }
        StmtKind::While { body, .. } | StmtKind::DoUntil { body, .. } => declared_names(body, out),
        StmtKind::For { init, body, .. } => {
            declared_names(init, out);
            declared_names(body, out);
        }
        StmtKind::ForEach {
            key, value, body, ..
        } => {
            out.extend(key.iter().cloned());
            out.insert(value.clone());
            declared_names(body, out);
        }
        StmtKind::Try { body, clauses } => {
            declared_names(body, out);
            for c in clauses {
                if let Some((n, _)) = &c.binding {
                    out.insert(n.clone());
                }
                declared_names(&c.body, out);
            }
        }
        StmtKind::Expr(e) | StmtKind::Return(Some(e)) | StmtKind::Out(e) => {
            declared_in_expr(e, out)
        }
        _ => {}
    }
}

fn declared_in_fun(d: &super::super::syntax::ast::FunDecl, out: &mut HashSet<Rc<str>>) {
    out.insert(d.name.clone());
    out.extend(d.params.iter().map(|p| p.name.clone()));
    declared_names(&d.body, out);
}

/// Lambdas and `from` blocks inside expressions declare names too.
fn declared_in_expr(e: &Expr, out: &mut HashSet<Rc<str>>) {
    match &e.kind {
        ExprKind::Lambda(d) => declared_in_fun(d, out),
        ExprKind::Block(stmts) => declared_names(stmts, out),
        ExprKind::Call { callee, args } => {
            declared_in_expr(callee, out);
            args.iter().for_each(|a| declared_in_expr(&a.value, out));
        }
        ExprKind::List(items) => items.iter().for_each(|x| declared_in_expr(x, out)),
        ExprKind::Map(entries) => entries.iter().for_each(|(_, v)| declared_in_expr(v, out)),
        ExprKind::Instance { fields, .. }
        | ExprKind::InstanceOf { fields, .. }
        | ExprKind::AnonObject(fields) => fields.iter().for_each(|(_, v)| declared_in_expr(v, out)),
        ExprKind::Assign { value, .. } => declared_in_expr(value, out),
        ExprKind::Field { object, .. } => declared_in_expr(object, out),
        ExprKind::Catch { body, default } => {
            declared_in_expr(body, out);
            declared_in_expr(default, out);
        }
        ExprKind::Match {
            arms, otherwise, ..
        } => {
            arms.iter().for_each(|a| declared_in_expr(&a.body, out));
            if let Some(o) = otherwise {
                declared_in_expr(o, out);
            }
        }
        _ => {}
    }
}

impl Cx<'_, '_> {
    /// `match`: conditions of a type the subject can meet, and an `else`
    /// unless the arms cover every case of an enum.
    fn match_expr(
        &mut self,
        subject: &Expr,
        arms: &[super::super::syntax::ast::MatchArm],
        otherwise: Option<&Expr>,
        expected: Option<&Ty>,
        e: &Expr,
    ) -> Ty {
        let subject_ty = self.expr(subject);
        self.match_overlaps(arms);
        let mut result: Option<Ty> = None;
        for arm in arms {
            for c in &arm.conditions {
                let t = self.expr_expecting(c, Some(&subject_ty));
                if !condition_fits(&subject_ty, &t) {
                    let error = CheckError::Mismatch {
                        context: "a `match` condition".to_string(),
                        expected: subject_ty.to_string(),
                        found: t.to_string(),
                        help: None,
                    };
                    let (at, w) = self.span_of(c);
                    self.report(error, at, w);
                }
            }
            let t = self.arm(&arm.body, expected);
            result = Some(result.map_or(t.clone(), |r| join(r, t)));
        }
        match otherwise {
            Some(o) => {
                let t = self.arm(o, expected);
                result = Some(result.map_or(t.clone(), |r| join(r, t)));
            }
            None => self.exhaustive(&subject_ty, arms, e),
        }
        result.unwrap_or(Ty::Unknown)
    }

    /// An arm's value; `{ … }` is a block of statements, not a `from`.
    fn arm(&mut self, body: &Expr, expected: Option<&Ty>) -> Ty {
        match &body.kind {
            ExprKind::Block(stmts) => {
                self.block(stmts, FrameKind::From);
                Ty::Unknown
            }
            _ => self.expr_expecting(body, expected),
        }
    }

    fn exhaustive(&mut self, subject: &Ty, arms: &[super::super::syntax::ast::MatchArm], e: &Expr) {
        let error = match subject {
            Ty::Case(decl) => {
                let covered: Vec<&str> = arms
                    .iter()
                    .flat_map(|a| &a.conditions)
                    .filter_map(|c| match &c.kind {
                        ExprKind::InferredCase(n) => Some(&**n),
                        ExprKind::Field { name, .. } => Some(&**name),
                        _ => None,
                    })
                    .collect();
                let missing: Vec<String> = decl
                    .cases
                    .iter()
                    .map(|(n, _)| n.to_string())
                    .filter(|n| !covered.contains(&n.as_str()))
                    .collect();
                if missing.is_empty() {
                    return;
                }
                let what = format!(
                    "non-exhaustive `match` over `{}`: missing {}",
                    decl.name,
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                CheckError::NonExhaustive { what, missing }
            }
            Ty::Bool if covers_both_bools(arms) => return,
            Ty::Int | Ty::Double | Ty::Str | Ty::Bool => CheckError::NonExhaustive {
                what: format!(
                    "non-exhaustive `match` over a `{subject}`: an `else` arm is required"
                ),
                missing: Vec::new(),
            },
            _ => return,
        };
        self.report(error, e.pos, 5);
    }
}

/// `true -> …, false -> …` leaves nothing for an `else`.
fn covers_both_bools(arms: &[super::super::syntax::ast::MatchArm]) -> bool {
    let has = |b: bool| {
        arms.iter()
            .flat_map(|a| &a.conditions)
            .any(|c| matches!(c.kind, ExprKind::Bool(x) if x == b))
    };
    has(true) && has(false)
}

/// Whether a `match` condition of type `cond` can meet a subject of type
/// `subject`: the same type, a range for a number, a pattern for a
/// string, or a type.
fn condition_fits(subject: &Ty, cond: &Ty) -> bool {
    match (subject, cond) {
        (_, Ty::TypeValue) | (Ty::TypeValue, _) => true,
        (Ty::Int | Ty::Double, Ty::Range) => true,
        (Ty::Str, Ty::Pattern) | (Ty::Pattern, Ty::Str) => true,
        (s, c) => s.accepts(c) || c.accepts(s),
    }
}

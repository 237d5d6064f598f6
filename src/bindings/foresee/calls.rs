//! The gated calls of a parsed spell whose path, program or variable name
//! the source settles: a string literal, an interpolation of literals, or a
//! `final` bound to one. Each call is found with whether a `try` around it
//! catches a `SandboxError` and whether the run surely reaches it
//! unguarded (see [`Call::fatal`]). Anything else is not guessed.

use super::table::{self, Arg, Gated};
use crate::buzz::syntax::ast::{
    CatchClause, Expr, ExprKind, FunDecl, MatchArm, ObjectDecl, Program, Stmt, StmtKind,
    TemplatePart, Type,
};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// One gated call and what the source settles of it.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// What the call asks the gate, in the order the binding asks, each
    /// with where the run places its refusal; only the steps no run-time
    /// state can stop before the gate is asked.
    pub checks: Vec<(Gated, Span)>,
    /// Everything the call needs granted, for `sandbox suggest`.
    pub needs: Vec<Gated>,
    /// Uncaught, a denial here ends the run: no `try` around it catches
    /// a `SandboxError`, and it lies in `main`, at the top level, or in a
    /// function such code calls outside any `try`.
    pub fatal: bool,
}

/// Where the run places a refusal in the spell: a line, a column, and
/// how many characters it underlines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub line: u32,
    pub column: u32,
    pub width: u32,
}

impl Span {
    /// `e` as written, underlined to the end of its first line (as the
    /// run underlines it).
    fn of(e: &Expr) -> Span {
        let start = e.start();
        let width = match e.end.line == start.line {
            true => e.end.column.saturating_sub(start.column).max(1),
            false => u32::MAX,
        };
        Span {
            line: start.line,
            column: start.column,
            width,
        }
    }
}

/// Where a walked piece of code runs from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Context {
    /// The top level, run as the file loads.
    Load,
    /// The body of the top-level function of this name.
    Fun(Rc<str>),
    /// A lambda, a method or a `test` block: called from anywhere.
    Elsewhere,
}

/// What a name stands for where it is read.
#[derive(Debug, Clone)]
enum Binding {
    /// A gated module, by registry key (`fs`, `buzz:os`, ...).
    Module(&'static str),
    /// `import read from "fs"`: one of a gated module's members.
    Member(&'static str, Rc<str>),
    /// A `final` string the source settles.
    Const(Rc<str>),
    /// A top-level function.
    TopFun(Rc<str>),
    /// Anything else: a name the walk knows nothing about.
    Other,
}

/// A call found before it is known whether its context is reached.
struct Found {
    checks: Vec<(Gated, Span)>,
    needs: Vec<Gated>,
    guarded: bool,
    context: Context,
}

struct Walker {
    scopes: Vec<HashMap<Rc<str>, Binding>>,
    /// A `try` around the code being walked catches a `SandboxError`.
    guarded: bool,
    context: Context,
    /// Object, enum and protocol names of the file (a `catch` of one of
    /// them does not catch a `SandboxError`).
    types: HashSet<Rc<str>>,
    found: Vec<Found>,
    /// Unguarded direct calls of top-level functions, by caller.
    edges: Vec<(Context, Rc<str>)>,
}

/// The gated calls of the spell `program` (not of the files it imports).
pub(crate) fn calls(program: &Program) -> Vec<Call> {
    calls_in(program, true)
}

/// The gated calls of `program`, the spell itself (whose `main` the run
/// calls) or a file it imports (whose top level runs at the import, and
/// whose functions are counted as called from anywhere).
pub(super) fn calls_in(program: &Program, spell: bool) -> Vec<Call> {
    let mut w = Walker {
        scopes: vec![HashMap::new()],
        guarded: false,
        context: Context::Load,
        types: HashSet::new(),
        found: Vec::new(),
        edges: Vec::new(),
    };
    w.declare_top(&program.statements);
    for stmt in &program.statements {
        w.top_stmt(stmt);
    }
    let reached = reached(&w.edges, spell);
    w.found
        .into_iter()
        .map(|f| Call {
            fatal: !f.guarded && reached.contains(&f.context),
            checks: f.checks,
            needs: f.needs,
        })
        .collect()
}

/// The contexts the run reaches outside any `try`: the top level, a
/// spell's `main`, and what they call directly, transitively.
fn reached(edges: &[(Context, Rc<str>)], spell: bool) -> HashSet<Context> {
    let mut reached = HashSet::from([Context::Load]);
    if spell {
        reached.insert(Context::Fun(Rc::from("main")));
    }
    loop {
        let before = reached.len();
        for (from, to) in edges {
            if reached.contains(from) {
                reached.insert(Context::Fun(to.clone()));
            }
        }
        if reached.len() == before {
            return reached;
        }
    }
}

impl Walker {
    /// The names the top level binds, in order, before any body is walked.
    fn declare_top(&mut self, statements: &[Stmt]) {
        for stmt in statements {
            match &stmt.kind {
                StmtKind::Import {
                    module,
                    alias,
                    names,
                } => self.import(module, alias.as_deref(), names),
                StmtKind::Fun(d) => self.bind(&d.name, Binding::TopFun(d.name.clone())),
                StmtKind::Object(d) => {
                    self.types.insert(d.name.clone());
                    self.bind(&d.name, Binding::Other);
                }
                StmtKind::Enum(d) => {
                    self.types.insert(d.name.clone());
                    self.bind(&d.name, Binding::Other);
                }
                StmtKind::Protocol(name) => {
                    self.types.insert(name.clone());
                    self.bind(name, Binding::Other);
                }
                StmtKind::Var(d) => {
                    let value = self.constant_of(d.mutability, d.init.as_ref());
                    self.bind(&d.name, value);
                }
                _ => {}
            }
        }
    }

    fn top_stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Fun(d) => self.function(d, Context::Fun(d.name.clone())),
            StmtKind::Object(d) => self.object(d),
            StmtKind::Test { body, .. } => {
                let outer = std::mem::replace(&mut self.context, Context::Elsewhere);
                self.block(body);
                self.context = outer;
            }
            StmtKind::Var(d) => {
                if let Some(init) = &d.init {
                    self.expr(init);
                }
            }
            StmtKind::Import { .. } | StmtKind::Enum(_) | StmtKind::Protocol(_) => {}
            _ => self.stmt(stmt),
        }
    }

    fn bind(&mut self, name: &Rc<str>, binding: Binding) {
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.clone(), binding);
        }
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    fn import(&mut self, spec: &str, alias: Option<&str>, names: &[Rc<str>]) {
        let key = table::module_key(spec);
        if !names.is_empty() {
            for name in names {
                let binding = match key {
                    Some(key) => Binding::Member(key, name.clone()),
                    None => Binding::Other,
                };
                self.bind(name, binding);
            }
            return;
        }
        match alias {
            // Every member unqualified: a gated module's are known.
            Some("_") => {
                if let Some(key) = key {
                    for member in table::members(key) {
                        let name: Rc<str> = Rc::from(member);
                        self.bind(&name, Binding::Member(key, name.clone()));
                    }
                }
            }
            Some(alias) => self.bind(&Rc::from(alias), module_binding(key)),
            None => self.bind(&Rc::from(default_name(spec)), module_binding(key)),
        }
    }

    /// `final name = <a string the source settles>`, else nothing known.
    fn constant_of(
        &self,
        mutability: crate::buzz::syntax::ast::Mutability,
        init: Option<&Expr>,
    ) -> Binding {
        let is_final = mutability == crate::buzz::syntax::ast::Mutability::Final;
        match init.filter(|_| is_final).and_then(|e| self.fold(e)) {
            Some(text) => Binding::Const(Rc::from(text)),
            None => Binding::Other,
        }
    }

    /// The string `e` always is, when the source settles it.
    fn fold(&self, e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Str(s) => Some(s.to_string()),
            ExprKind::Template(parts) => {
                let mut text = String::new();
                for part in parts {
                    match part {
                        TemplatePart::Text(t) => text.push_str(t),
                        TemplatePart::Expr(inner) => match &inner.kind {
                            ExprKind::Int(n) => text.push_str(&n.to_string()),
                            _ => text.push_str(&self.fold(inner)?),
                        },
                        TemplatePart::Bytes(_) => return None,
                    }
                }
                Some(text)
            }
            // `+` joins two strings (both sides fold to strings only).
            ExprKind::Binary(crate::buzz::syntax::ast::BinOp::Add, l, r) => {
                Some(self.fold(l)? + &self.fold(r)?)
            }
            ExprKind::Var(name, _) => match self.lookup(name)? {
                Binding::Const(text) => Some(text.to_string()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The gated module member `callee` names: `fs.read`, `read` imported
    /// by name, `io.File.open`.
    fn member_of(&self, callee: &Expr) -> Option<(&'static str, String)> {
        match &callee.kind {
            ExprKind::Var(name, _) => match self.lookup(name)? {
                Binding::Module(key) => Some((key, String::new())),
                Binding::Member(key, member) => Some((key, member.to_string())),
                _ => None,
            },
            ExprKind::Field { object, name, .. } => {
                let (key, path) = self.member_of(object)?;
                let path = match path.is_empty() {
                    true => name.to_string(),
                    false => format!("{path}.{name}"),
                };
                Some((key, path))
            }
            _ => None,
        }
    }

    fn function(&mut self, decl: &FunDecl, context: Context) {
        let outer_context = std::mem::replace(&mut self.context, context);
        let outer_guard = std::mem::replace(&mut self.guarded, false);
        self.scopes.push(HashMap::new());
        for param in &decl.params {
            if let Some(default) = &param.default {
                self.expr(default);
            }
            self.bind(&param.name, Binding::Other);
        }
        for generic in &decl.generics {
            self.bind(generic, Binding::Other);
        }
        self.bind(&Rc::from("this"), Binding::Other);
        self.stmts(&decl.body);
        self.scopes.pop();
        self.guarded = outer_guard;
        self.context = outer_context;
    }

    fn object(&mut self, decl: &ObjectDecl) {
        for field in &decl.fields {
            if let Some(default) = &field.default {
                let outer = std::mem::replace(&mut self.context, Context::Elsewhere);
                self.expr(default);
                self.context = outer;
            }
        }
        for method in &decl.methods {
            self.function(method, Context::Elsewhere);
        }
    }

    /// Statements in a scope of their own.
    fn block(&mut self, statements: &[Stmt]) {
        self.scopes.push(HashMap::new());
        self.stmts(statements);
        self.scopes.pop();
    }

    fn stmts(&mut self, statements: &[Stmt]) {
        for stmt in statements {
            self.stmt(stmt);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Namespace
            | StmtKind::Protocol(_)
            | StmtKind::Break(_)
            | StmtKind::Continue(_) => {}
            StmtKind::Import {
                module,
                alias,
                names,
            } => self.import(module, alias.as_deref(), names),
            StmtKind::Test { body, .. } => self.block(body),
            StmtKind::Var(d) => {
                if let Some(init) = &d.init {
                    self.expr(init);
                }
                let value = self.constant_of(d.mutability, d.init.as_ref());
                self.bind(&d.name, value);
            }
            StmtKind::Fun(d) => {
                self.bind(&d.name, Binding::Other);
                self.function(d, Context::Elsewhere);
            }
            StmtKind::Object(d) => {
                self.bind(&d.name, Binding::Other);
                self.object(d);
            }
            StmtKind::Enum(d) => {
                self.bind(&d.name, Binding::Other);
                for (_, value) in &d.cases {
                    if let Some(value) = value {
                        self.expr(value);
                    }
                }
            }
            StmtKind::Expr(e) | StmtKind::Out(e) | StmtKind::Throw(e) => self.expr(e),
            StmtKind::Return(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
            }
            StmtKind::Block(body) => self.block(body),
            StmtKind::If {
                cond,
                binding,
                then,
                otherwise,
            } => {
                self.expr(cond);
                self.scopes.push(HashMap::new());
                if let Some(b) = binding {
                    self.bind(&b.name, Binding::Other);
                }
                self.stmts(then);
                self.scopes.pop();
                if let Some(otherwise) = otherwise {
                    self.block(std::slice::from_ref(otherwise));
                }
            }
            StmtKind::While { cond, body, .. } | StmtKind::DoUntil { body, cond, .. } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                ..
            } => {
                self.scopes.push(HashMap::new());
                self.stmts(init);
                if let Some(cond) = cond {
                    self.expr(cond);
                }
                for e in step {
                    self.expr(e);
                }
                self.block(body);
                self.scopes.pop();
            }
            StmtKind::ForEach {
                key,
                value,
                iterable,
                body,
                ..
            } => {
                self.expr(iterable);
                self.scopes.push(HashMap::new());
                if let Some(key) = key {
                    self.bind(key, Binding::Other);
                }
                self.bind(value, Binding::Other);
                self.stmts(body);
                self.scopes.pop();
            }
            StmtKind::Try { body, clauses } => self.try_stmt(body, clauses),
        }
    }

    fn try_stmt(&mut self, body: &[Stmt], clauses: &[CatchClause]) {
        let catches = clauses.iter().any(|c| match &c.binding {
            None => true,
            Some((_, ty)) => self.catches(ty),
        });
        let outer = self.guarded;
        self.guarded = outer || catches;
        self.block(body);
        self.guarded = outer;
        for clause in clauses {
            self.scopes.push(HashMap::new());
            if let Some((name, _)) = &clause.binding {
                self.bind(name, Binding::Other);
            }
            self.stmts(&clause.body);
            self.scopes.pop();
        }
    }

    /// Whether `catch (e: ty)` may catch a `SandboxError` (an object of
    /// that class). A type the walk cannot place (a generic parameter, a
    /// type of another file) counts as catching it: that only makes a
    /// finding a warning rather than an error.
    fn catches(&self, ty: &Type) -> bool {
        match ty {
            Type::Any | Type::AnonObject => true,
            Type::Optional(inner) | Type::Mut(inner) => self.catches(inner),
            Type::Named(name) => match &**name {
                "SandboxError" | "obj" => true,
                "FileSystemError" | "ExecError" => false,
                other if VALUE_TYPES.contains(&other) => false,
                other => !self.types.contains(other),
            },
            Type::Void | Type::List(_) | Type::Map(..) | Type::Function => false,
        }
    }

    fn exprs<'e>(&mut self, exprs: impl IntoIterator<Item = &'e Expr>) {
        for e in exprs {
            self.expr(e);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Null
            | ExprKind::Void
            | ExprKind::Bool(_)
            | ExprKind::Int(_)
            | ExprKind::Double(_)
            | ExprKind::Str(_)
            | ExprKind::Bytes(_)
            | ExprKind::Var(..)
            | ExprKind::InferredCase(_)
            | ExprKind::TypeValue(_)
            | ExprKind::Pattern(_) => {}
            ExprKind::Template(parts) => {
                for part in parts {
                    if let TemplatePart::Expr(inner) = part {
                        self.expr(inner);
                    }
                }
            }
            ExprKind::List(items) | ExprKind::TypedList { items, .. } => self.exprs(items),
            ExprKind::Map(pairs) => {
                for (k, v) in pairs {
                    self.expr(k);
                    self.expr(v);
                }
            }
            ExprKind::Unary(_, x)
            | ExprKind::Is(x, _)
            | ExprKind::Force(x)
            | ExprKind::Mutable(x)
            | ExprKind::TypeOf(x)
            | ExprKind::As { value: x, .. }
            | ExprKind::Resume(x)
            | ExprKind::Resolve(x)
            | ExprKind::Yield(x)
            | ExprKind::Generic { callee: x, .. }
            | ExprKind::Field { object: x, .. } => self.expr(x),
            ExprKind::Binary(_, l, r)
            | ExprKind::And(l, r)
            | ExprKind::Or(l, r)
            | ExprKind::Coalesce(l, r)
            | ExprKind::Range(l, r)
            | ExprKind::Assign {
                target: l,
                value: r,
                ..
            }
            | ExprKind::Index {
                object: l,
                index: r,
                ..
            }
            | ExprKind::OptionalIndex {
                object: l,
                index: r,
            } => {
                self.expr(l);
                self.expr(r);
            }
            ExprKind::Call { callee, args } => self.call(callee, args),
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => self.exprs([&**cond, then, otherwise]),
            ExprKind::Catch { body, default } => {
                // `expr catch default` catches everything `expr` throws.
                let outer = std::mem::replace(&mut self.guarded, true);
                self.expr(body);
                self.guarded = outer;
                self.expr(default);
            }
            ExprKind::Lambda(decl) => self.function(decl, Context::Elsewhere),
            ExprKind::Instance { fields, .. } | ExprKind::AnonObject(fields) => {
                self.exprs(fields.iter().map(|(_, v)| v));
            }
            ExprKind::InstanceOf { class, fields } => {
                self.expr(class);
                self.exprs(fields.iter().map(|(_, v)| v));
            }
            ExprKind::Block(body) => self.block(body),
            ExprKind::Match {
                subject,
                arms,
                otherwise,
            } => self.match_expr(subject, arms, otherwise.as_deref()),
            ExprKind::AsyncCall(call) => {
                // A fiber: what it raises reaches whoever resumes it, so
                // its direct calls make no edge; its gated calls are
                // still found (the call below is walked as a call).
                let outer = std::mem::replace(&mut self.context, Context::Elsewhere);
                self.expr(call);
                self.context = outer;
            }
        }
    }

    fn match_expr(&mut self, subject: &Expr, arms: &[MatchArm], otherwise: Option<&Expr>) {
        self.expr(subject);
        for arm in arms {
            self.exprs(&arm.conditions);
            self.expr(&arm.body);
        }
        if let Some(otherwise) = otherwise {
            self.expr(otherwise);
        }
    }

    fn call(&mut self, callee: &Expr, args: &[crate::buzz::syntax::ast::Arg]) {
        self.expr(callee);
        self.exprs(args.iter().map(|a| &a.value));
        if let ExprKind::Var(name, _) = &callee.kind {
            if let Some(Binding::TopFun(f)) = self.lookup(name) {
                if !self.guarded {
                    self.edges.push((self.context.clone(), f.clone()));
                }
            }
        }
        let Some((key, member)) = self.member_of(callee) else {
            return;
        };
        let written = args;
        let args: Vec<Arg> = args
            .iter()
            .map(|a| Arg {
                name: a.name.as_deref(),
                text: self.fold(&a.value),
                first_item: first_item(&a.value).and_then(|e| self.fold(e)),
                case: case_name(&a.value),
            })
            .collect();
        let Some((checks, needs)) = table::gated(key, &member, &args) else {
            return;
        };
        let checks = checks
            .into_iter()
            .map(|(gated, place)| {
                let at = place
                    .and_then(|i| written.get(i))
                    .map_or(callee, |a| &a.value);
                (gated, Span::of(at))
            })
            .collect();
        self.found.push(Found {
            checks,
            needs,
            guarded: self.guarded,
            context: self.context.clone(),
        });
    }
}

/// The built-in type names no `SandboxError` is an instance of.
const VALUE_TYPES: [&str; 11] = [
    "int", "double", "str", "bool", "rg", "type", "pat", "function", "fib", "ud", "void",
];

fn module_binding(key: Option<&'static str>) -> Binding {
    key.map_or(Binding::Other, Binding::Module)
}

/// The name an import binds without an alias: `buzz:fs` is `fs`,
/// `lib/common.buzz` is `common` (as the interpreter names it).
fn default_name(spec: &str) -> &str {
    let tail = spec.rsplit(['/', ':']).next().unwrap_or(spec);
    tail.strip_suffix(".buzz").unwrap_or(tail)
}

/// The first item of a list literal (a command's program).
fn first_item(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::List(items) | ExprKind::TypedList { items, .. } => items.first(),
        _ => None,
    }
}

/// The case an enum value names: `.read`, `io.FileMode.read`.
fn case_name(e: &Expr) -> Option<&str> {
    match &e.kind {
        ExprKind::InferredCase(name) | ExprKind::Field { name, .. } => Some(name),
        _ => None,
    }
}

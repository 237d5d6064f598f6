//! Statements: declarations, blocks and control flow. Each walk returns how
//! the statement ends ([`Ends`]), which finds unreachable code and
//! functions that may end without their value.

use super::super::syntax::ast::{
    declares, FunDecl, Mutability, ObjectDecl, Program, Resolved, Stmt, StmtKind, Type, VarDecl,
};
use super::super::syntax::lexer::Pos;
use super::flow::{is_true, loop_ends, Ends};
use super::scope::{BindingKind, FrameKind, Yields};
use super::ty::{ModuleInfo, Mutable, Obj, Ty, Types};
use super::{CheckError, Cx};
use std::collections::HashMap;
use std::rc::Rc;

impl Cx<'_, '_> {
    /// Checks a whole file; returns what it exports.
    pub(super) fn program(&mut self, program: &Program, root: bool) -> Rc<ModuleInfo> {
        // The checker reads the resolver's answer for each use of a name.
        program.resolve();
        self.types = Rc::new(collect_types(program));
        super::expr::declared_names(&program.statements, &mut self.anywhere);
        self.hoist(&program.statements);
        for stmt in &program.statements {
            if let StmtKind::Import { .. } = stmt.kind {
                self.stmt(stmt);
            }
        }
        let top: Vec<&Stmt> = program
            .statements
            .iter()
            .filter(|s| !matches!(s.kind, StmtKind::Import { .. }))
            .collect();
        for stmt in top {
            self.stmt(stmt);
        }
        if root {
            self.main_signature(program);
        }
        self.unused_imports();
        self.exports(program)
    }

    /// Functions, objects, enums and protocols are visible from the start.
    fn hoist(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            let (name, ty) = match &stmt.kind {
                StmtKind::Fun(d) => (d.name.clone(), Ty::Fun(Rc::new(self.types.sig(d)))),
                StmtKind::Object(d) => (d.name.clone(), Ty::Class(self.obj(d))),
                StmtKind::Enum(d) => (d.name.clone(), Ty::Enum(d.clone())),
                StmtKind::Protocol(n) => (n.clone(), Ty::Unknown),
                // A global used by a function before its line runs.
                StmtKind::Var(d) => (d.name.clone(), self.declared_ty(d)),
                _ => continue,
            };
            let kind = match &stmt.kind {
                StmtKind::Var(d) if d.mutability == Mutability::Var => BindingKind::Var,
                StmtKind::Var(_) => BindingKind::Final,
                _ => BindingKind::Declaration,
            };
            self.scopes.declare_global(name, ty, kind);
        }
    }

    fn declared_ty(&self, d: &VarDecl) -> Ty {
        d.ty.as_ref().map_or(Ty::Unknown, |t| self.types.resolve(t))
    }

    pub(super) fn obj(&self, decl: &Rc<ObjectDecl>) -> Obj {
        Obj {
            decl: decl.clone(),
            types: self.types.clone(),
            mutable: Mutable::No,
        }
    }

    /// Walks `stmts` in a new frame (with a level of names when they
    /// declare one, as the resolver's).
    pub(super) fn block(&mut self, stmts: &[Stmt], kind: FrameKind) -> Ends {
        self.scopes.push(kind, declares(stmts));
        let ends = self.stmts(stmts);
        self.leave();
        ends
    }

    /// Walks a sequence; a statement after one that jumps is unreachable
    /// (said once per block; the rest is still checked for names).
    fn stmts(&mut self, stmts: &[Stmt]) -> Ends {
        let mut ends = Ends::FallsThrough;
        let mut jumped_at: Option<u32> = None;
        let mut said = false;
        for stmt in stmts {
            if let (Some(line), false) = (jumped_at, said) {
                self.report(CheckError::Unreachable { after_line: line }, stmt.pos, 1);
                said = true;
            }
            if self.stmt(stmt).jumps() {
                jumped_at.get_or_insert(stmt.pos.line);
                ends = Ends::Jumps;
            }
        }
        ends
    }

    pub(super) fn stmt(&mut self, stmt: &Stmt) -> Ends {
        let pos = stmt.pos;
        match &stmt.kind {
            StmtKind::Import {
                module,
                alias,
                names,
            } => self.import(module, alias.as_ref(), names, pos),
            StmtKind::Test { body, .. } => {
                self.function_body(body, Ty::Unknown, "test");
            }
            StmtKind::Var(decl) => self.var(decl, pos),
            StmtKind::Fun(decl) => self.fun_stmt(decl),
            StmtKind::Object(decl) => {
                self.nested_type("object", &decl.name, pos);
                let ty = Ty::Class(self.obj(decl));
                self.local_declaration(&decl.name, ty, &decl.slot);
                self.object(decl);
            }
            StmtKind::Protocol(name) => self.nested_type("protocol", name, pos),
            StmtKind::Enum(decl) => {
                self.nested_type("enum", &decl.name, pos);
                self.local_declaration(&decl.name, Ty::Enum(decl.clone()), &decl.slot);
                for (_, value) in &decl.cases {
                    if let Some(v) = value {
                        self.expr(v);
                    }
                }
            }
            StmtKind::Expr(e) => {
                self.expr(e);
            }
            StmtKind::Block(b) => return self.block(b, FrameKind::Block),
            StmtKind::If {
                cond,
                binding,
                then,
                otherwise,
            } => return self.if_stmt(cond, binding.as_ref(), then, otherwise.as_deref()),
            StmtKind::While { cond, body, label } => {
                self.condition(cond);
                let body_ends = self.block(
                    body,
                    FrameKind::Loop {
                        label: label.clone(),
                    },
                );
                return loop_ends(
                    is_true(cond),
                    body_ends.jumps() && is_true(cond),
                    body,
                    label,
                );
            }
            StmtKind::DoUntil { body, cond, label } => {
                let body_ends = self.block(
                    body,
                    FrameKind::Loop {
                        label: label.clone(),
                    },
                );
                // The resolver reads the condition in the body's level;
                // the checker after leaving it.
                let apart = declares(body);
                if apart {
                    self.scopes.set_apart(true);
                }
                self.condition(cond);
                if apart {
                    self.scopes.set_apart(false);
                }
                return loop_ends(false, body_ends.jumps(), body, label);
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                label,
            } => return self.for_stmt(init, cond.as_ref(), step, body, label),
            StmtKind::ForEach {
                key,
                value,
                iterable,
                body,
                label,
                slots,
            } => self.foreach(key.as_ref(), value, iterable, body, label, slots),
            StmtKind::Break(label) => return self.jump(label.as_ref(), "break", pos),
            StmtKind::Continue(label) => return self.jump(label.as_ref(), "continue", pos),
            StmtKind::Out(e) => {
                self.expr(e);
                if !self
                    .scopes
                    .jump_targets()
                    .any(|k| matches!(k, FrameKind::From))
                {
                    let message = "`out` is only allowed inside a `from { … }` block".to_string();
                    self.report(
                        CheckError::Jump {
                            message,
                            near: None,
                        },
                        pos,
                        3,
                    );
                }
                return Ends::Jumps;
            }
            StmtKind::Return(value) => return self.ret(value.as_ref(), pos),
            StmtKind::Throw(e) => {
                self.expr(e);
                return Ends::Jumps;
            }
            StmtKind::Try { body, clauses } => {
                self.block(body, FrameKind::Block);
                for clause in clauses {
                    self.scopes.push(FrameKind::Block, true);
                    if let Some((name, ty)) = &clause.binding {
                        let ty = self.types.resolve(ty);
                        let res = clause.slot.get();
                        self.scopes
                            .declare_resolved(name.clone(), ty, BindingKind::Final, res);
                    }
                    self.stmts(&clause.body);
                    self.leave();
                }
                // As upstream's flow analysis: a `try` may always fall
                // through (a throw inside it lands in a clause).
            }
            #[allow(unreachable_patterns)] // new kinds from later grammar work
            _ => {}
        }
        Ends::FallsThrough
    }

    fn var(&mut self, decl: &VarDecl, pos: Pos) {
        let declared = decl.ty.as_ref().map(|t| self.types.resolve(t));
        let found = decl
            .init
            .as_ref()
            .map(|e| self.expr_expecting(e, declared.as_ref()));
        let ty = match (declared, found) {
            (Some(d), Some(f)) => {
                if let Some(init) = &decl.init {
                    let context = format!("`{}`", decl.name);
                    self.expect_type(&d, &f, &context, init);
                }
                d
            }
            (Some(d), None) => d,
            (None, Some(f)) => f,
            (None, None) => Ty::Unknown,
        };
        let ty = match ty {
            Ty::Null | Ty::Void => Ty::Unknown,
            t => t,
        };
        let kind = match decl.mutability {
            Mutability::Var => BindingKind::Var,
            Mutability::Final => BindingKind::Final,
        };
        let optional = matches!(decl.ty, Some(Type::Optional(_)));
        if decl.init.is_none() && kind == BindingKind::Final && !optional {
            let error = CheckError::NoValue {
                name: decl.name.to_string(),
            };
            self.report(error, pos, 5);
        }
        if self.scopes.at_top_level() {
            self.scopes.declare(decl.name.clone(), ty, kind);
            return;
        }
        if let Some(line) = self.scopes.shadowed(&decl.name) {
            let error = CheckError::Shadowing {
                name: decl.name.to_string(),
                line,
            };
            self.report(error, pos, 5);
        }
        let (line, res) = (pos.line.max(1), decl.slot.get());
        self.scopes
            .declare_local(decl.name.clone(), ty, kind, line, res);
    }

    fn fun_stmt(&mut self, decl: &Rc<FunDecl>) {
        let sig = Rc::new(self.types.sig(decl));
        self.local_declaration(&decl.name, Ty::Fun(sig), &decl.slot);
        self.function(decl, None);
    }

    /// An object, enum or protocol declared inside a function: upstream's
    /// parser refuses it ("Object must be defined at top-level."), so
    /// the checker does, at the declaration (the run would handle it).
    fn nested_type(&mut self, keyword: &'static str, name: &str, pos: Pos) {
        if self.scopes.at_top_level() {
            return;
        }
        let error = CheckError::NotAllowed {
            message: format!("{keyword} `{name}` is declared inside a function"),
            help: Some(format!(
                "move `{keyword} {name}` to the top level of the file: Buzz declares \
                 objects, enums and protocols only there"
            )),
        };
        self.report(error, pos, keyword.len());
    }

    /// A function, object or enum declared inside a function is a local
    /// from its line on, in the slot the resolver gave it (at the top
    /// level, `hoist` declared it a global); declared even where refused,
    /// so its uses add no "unknown name" to the one finding.
    fn local_declaration(&mut self, name: &Rc<str>, ty: Ty, slot: &Resolved) {
        if !self.scopes.at_top_level() {
            self.scopes
                .declare_resolved(name.clone(), ty, BindingKind::Declaration, slot.get());
        }
    }

    /// Checks a function's body with its parameters (and `this` in a
    /// method) in scope; reports a missing return.
    pub(super) fn function(&mut self, decl: &FunDecl, this: Option<Ty>) {
        let sig = self.types.sig(decl);
        let yields = sig.yields.clone().map_or(Yields::Not, Yields::Declared);
        self.scopes.push(
            FrameKind::Function {
                ret: sig.ret.clone(),
                name: decl.name.to_string(),
                yields,
            },
            true,
        );
        if let Some(this) = this {
            // `this` may be changed only in a `mut fun`, as upstream says.
            let m = if decl.is_mut {
                Mutable::Yes
            } else {
                Mutable::No
            };
            self.scopes
                .declare(Rc::from("this"), this.with_mutable(m), BindingKind::Final);
        }
        for (param, p) in decl.params.iter().zip(&sig.params) {
            if let Some(default) = &param.default {
                let found = self.expr_expecting(default, Some(&p.ty));
                let _reported = self.constant_default(&param.ty, default, &found);
            }
            self.scopes
                .declare(param.name.clone(), p.ty.clone(), BindingKind::Param);
        }
        let ends = self.stmts(&decl.body);
        self.leave();
        if !ends.jumps() && needs_return(&sig.ret) {
            let error = CheckError::MissingReturn {
                function: decl.name.to_string(),
                ty: sig.ret.to_string(),
            };
            self.report(error, decl.pos, 3);
        }
    }

    /// A `test` block: a function to `return` and `yield`, a block to the
    /// resolver (a level of names only when it declares one).
    fn function_body(&mut self, body: &[Stmt], ret: Ty, name: &str) {
        self.scopes.push(
            FrameKind::Function {
                ret,
                name: name.to_string(),
                yields: Yields::Forbidden,
            },
            declares(body),
        );
        self.stmts(body);
        self.leave();
    }

    fn object(&mut self, decl: &Rc<ObjectDecl>) {
        let obj = self.obj(decl);
        for field in &decl.fields {
            if let Some(default) = &field.default {
                let declared = self.types.resolve(&field.ty);
                let found = self.expr_expecting(default, Some(&declared));
                if !self.constant_default(&field.ty, default, &found) {
                    let context = format!("field `{}`", field.name);
                    self.expect_type(&declared, &found, &context, default);
                }
            }
        }
        self.protocols_kept(decl);
        for method in &decl.methods {
            let this = (!method.is_static).then(|| Ty::Instance(obj.clone()));
            self.special_method(method);
            self.function(method, this);
        }
    }

    /// `object<P> Name`: every method of each protocol `P` this file
    /// declares must be among the object's own.
    fn protocols_kept(&mut self, decl: &ObjectDecl) {
        for name in &decl.protocols {
            let Some(protocol) = self.types.protocols.get(name).cloned() else {
                continue;
            };
            for method in &protocol.methods {
                if decl.methods.iter().any(|m| m.name == *method) {
                    continue;
                }
                let error = CheckError::ProtocolMethod {
                    object: decl.name.to_string(),
                    protocol: name.to_string(),
                    method: method.to_string(),
                };
                self.report(error, decl.pos, 6);
            }
        }
    }

    /// `toString` and `collect` are called by the runtime itself, so
    /// their signatures are fixed (as upstream checks them).
    fn special_method(&mut self, method: &FunDecl) {
        let wanted = match &*method.name {
            "toString" => Ty::Str,
            "collect" => Ty::Void,
            _ => return,
        };
        let sig = self.types.sig(method);
        if sig.params.is_empty() && wanted.accepts(&sig.ret) && sig.ret.accepts(&wanted) {
            return;
        }
        let error = CheckError::Mismatch {
            context: format!("the method `{}`", method.name),
            expected: format!("fun {}() > {wanted}", method.name),
            found: sig.to_string(),
            help: None,
        };
        self.report(error, method.pos, 3);
    }

    fn if_stmt(
        &mut self,
        cond: &super::super::syntax::ast::Expr,
        binding: Option<&super::super::syntax::ast::IfBinding>,
        then: &[Stmt],
        otherwise: Option<&Stmt>,
    ) -> Ends {
        let cond_ty = match binding {
            Some(_) => self.expr(cond),
            None => {
                self.condition(cond);
                Ty::Unknown
            }
        };
        self.scopes
            .push(FrameKind::Block, binding.is_some() || declares(then));
        if let Some(b) = binding {
            let ty = match &b.cast {
                Some(t) => self.types.resolve(t),
                None => cond_ty.unwrapped(),
            };
            self.scopes
                .declare_resolved(b.name.clone(), ty, BindingKind::Final, b.slot.get());
        }
        let then_ends = self.stmts(then);
        self.leave();
        let else_ends = match otherwise {
            Some(o) => self.stmt(o),
            None => Ends::FallsThrough,
        };
        Ends::both(then_ends, else_ends)
    }

    fn for_stmt(
        &mut self,
        init: &[Stmt],
        cond: Option<&super::super::syntax::ast::Expr>,
        step: &[super::super::syntax::ast::Expr],
        body: &[Stmt],
        label: &Option<Rc<str>>,
    ) -> Ends {
        self.scopes.push(FrameKind::Block, true);
        for s in init {
            self.stmt(s);
        }
        if let Some(c) = cond {
            self.condition(c);
        }
        self.block(
            body,
            FrameKind::Loop {
                label: label.clone(),
            },
        );
        for e in step {
            self.expr(e);
        }
        self.leave();
        let forever = cond.is_none_or(is_true);
        loop_ends(forever, false, body, label)
    }

    fn foreach(
        &mut self,
        key: Option<&Rc<str>>,
        value: &Rc<str>,
        iterable: &super::super::syntax::ast::Expr,
        body: &[Stmt],
        label: &Option<Rc<str>>,
        slots: &(Resolved, Resolved),
    ) {
        let (key_ty, value_ty) = match self.expr(iterable) {
            Ty::List(item, _) => (Ty::Int, *item),
            Ty::Map(k, v, _) => (*k, *v),
            Ty::Str => (Ty::Int, Ty::Str),
            Ty::Range => (Ty::Int, Ty::Int),
            // A scalar is known not to iterate (a fuzzed `foreach (n in
            // -2.0)` once passed the check and failed at run time).
            t @ (Ty::Int | Ty::Double | Ty::Bool) => {
                let error = CheckError::Mismatch {
                    context: "`foreach`".to_string(),
                    expected: "a list, map, str, range or fiber".to_string(),
                    found: t.to_string(),
                    help: None,
                };
                self.report(error, iterable.pos, 1);
                (Ty::Unknown, Ty::Unknown)
            }
            _ => (Ty::Unknown, Ty::Unknown),
        };
        self.scopes.push(
            FrameKind::Loop {
                label: label.clone(),
            },
            true,
        );
        if let Some(k) = key {
            let res = slots.0.get();
            self.scopes
                .declare_resolved(k.clone(), key_ty, BindingKind::Final, res);
        }
        let res = slots.1.get();
        self.scopes
            .declare_resolved(value.clone(), value_ty, BindingKind::Final, res);
        self.stmts(body);
        self.leave();
    }

    fn jump(&mut self, label: Option<&Rc<str>>, what: &str, pos: Pos) -> Ends {
        let loops: Vec<Option<Rc<str>>> = self
            .scopes
            .jump_targets()
            .filter_map(|k| match k {
                FrameKind::Loop { label } => Some(label.clone()),
                _ => None,
            })
            .collect();
        let error = match label {
            _ if loops.is_empty() => Some(CheckError::Jump {
                message: format!("`{what}` outside a loop"),
                near: None,
            }),
            Some(l) if !loops.iter().any(|x| x.as_ref() == Some(l)) => {
                let labels: Vec<&str> = loops.iter().flatten().map(|l| &**l).collect();
                Some(CheckError::Jump {
                    message: format!("no enclosing loop is labelled `{l}`"),
                    near: super::nearest(l, labels.into_iter()),
                })
            }
            _ => None,
        };
        if let Some(error) = error {
            self.report(error, pos, what.len());
        }
        Ends::Jumps
    }

    fn ret(&mut self, value: Option<&super::super::syntax::ast::Expr>, pos: Pos) -> Ends {
        let expected = self.scopes.function().map(|(t, _)| t.clone());
        let found = value.map(|v| self.expr_expecting(v, expected.as_ref()));
        if let (Some(expected), Some(found), Some(v)) = (expected, found, value) {
            if !matches!(expected, Ty::Void) {
                self.expect_type(&expected, &found, "the return value", v);
            }
        }
        let _ = pos;
        Ends::Jumps
    }

    fn main_signature(&mut self, program: &Program) {
        let main = program.statements.iter().find_map(|s| match &s.kind {
            StmtKind::Fun(d) if &*d.name == "main" => Some(d),
            _ => None,
        });
        let Some(main) = main else { return };
        let args_ok = match main.params.as_slice() {
            [] => true,
            [p] => {
                matches!(&p.ty, Type::Any)
                    || matches!(&p.ty, Type::List(item) if matches!(&**item, Type::Any) || matches!(&**item, Type::Named(n) if &**n == "str"))
            }
            _ => false,
        };
        let ret_ok = matches!(&main.ret, Type::Void | Type::Any)
            || matches!(&main.ret, Type::Named(n) if &**n == "int");
        if !(args_ok && ret_ok) {
            let found = self.types.sig(main).to_string();
            self.report(CheckError::MainSignature { found }, main.pos, 3);
        }
    }

    /// What the file shows importers: its `export`ed names, or every
    /// top-level declaration when it exports nothing.
    fn exports(&self, program: &Program) -> Rc<ModuleInfo> {
        let members: HashMap<String, Ty> = program
            .visible_names()
            .iter()
            .filter_map(|n| Some((n.to_string(), self.scopes.lookup(n)?.ty.clone())))
            .collect();
        let name = program.namespace.last().map_or_else(
            || {
                super::super::syntax::import_names::default_name(&program.file.to_string_lossy())
                    .to_string()
            },
            |n| n.to_string(),
        );
        Rc::new(ModuleInfo {
            name,
            members,
            namespace: program.namespace.clone(),
        })
    }
}

/// A declared result that a function must produce on every path.
fn needs_return(ret: &Ty) -> bool {
    !matches!(ret, Ty::Unknown | Ty::Void | Ty::Optional(_))
}

/// The objects, enums and protocols a file declares at its top level.
fn collect_types(program: &Program) -> Types {
    let mut types = Types::default();
    for p in &program.protocols {
        types.protocols.insert(p.name.clone(), p.clone());
    }
    for stmt in &program.statements {
        match &stmt.kind {
            StmtKind::Object(d) => {
                types.objects.insert(d.name.clone(), d.clone());
            }
            StmtKind::Enum(d) => {
                types.enums.insert(d.name.clone(), d.clone());
            }
            StmtKind::Protocol(n) => types.opaque.get_mut().push(n.clone()),
            _ => {}
        }
    }
    types
}

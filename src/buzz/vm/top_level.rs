//! A file's top level: its declarations hoisted (functions, objects,
//! enums), then its other statements run compiled in its globals, then
//! `main`. Binding a declaration (an object type, an enum, a protocol, a
//! function, a `var`) in a scope is shared with the compiled form's local
//! declarations.

use super::names::lookup;
use super::{Args, Eval, Interpreter};
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::*;
use std::rc::Rc;

fn exit_status(v: &Value) -> i32 {
    match v {
        Value::Int(i) => i32::try_from(*i).unwrap_or(1),
        _ => 0,
    }
}

/// Stores a declaration's value where the resolver put it: its slot in
/// `scope`, or by name (top-level names, and trees never resolved).
pub(in crate::buzz) fn bind(
    scope: &Rc<Scope>,
    slot: &Resolved,
    name: &Rc<str>,
    value: Value,
    mutability: Mutability,
) {
    match slot.get() {
        Res::Local { slot, .. } => drop(scope.set(slot, value)),
        _ => scope.define(name.clone(), value, mutability),
    }
}

impl Interpreter {
    /// Hoists the declarations of `program`, then runs its other top-level
    /// statements (not its tests) in `globals`.
    pub(in crate::buzz) fn run_declarations(
        &mut self,
        program: &Program,
        globals: &Rc<Scope>,
    ) -> Eval<()> {
        program.resolve();
        for stmt in &program.statements {
            self.declare(stmt, globals)?;
        }
        for stmt in &program.statements {
            match stmt.kind {
                StmtKind::Fun(_)
                | StmtKind::Object(_)
                | StmtKind::Enum(_)
                | StmtKind::Test { .. } => {}
                // Declarations.
                StmtKind::Var(_)
                | StmtKind::Import { .. }
                | StmtKind::Protocol(_)
                | StmtKind::Namespace => self.declare_top(stmt, globals)?,
                _ => self.run_block(std::slice::from_ref(stmt), globals)?,
            }
        }
        Ok(())
    }

    pub(super) fn run_top(&mut self, program: &Program, globals: &Rc<Scope>) -> Eval<i32> {
        self.run_declarations(program, globals)?;
        let Some(main) = lookup(globals, "main") else {
            return Err(self.fail(
                Pos { line: 1, column: 1 },
                "the spell has no `fun main(args: [str]) > void` to run",
            ));
        };
        let args = self.main_args(&main);
        let result = self.call_value(&main, args, Pos { line: 1, column: 1 })?;
        self.run_finalizers(Pos { line: 1, column: 1 })?;
        Ok(exit_status(&result))
    }

    fn main_args(&self, main: &Value) -> Args {
        let takes_args = matches!(main, Value::Function(f) if !f.decl.params.is_empty());
        if !takes_args {
            return Vec::new();
        }
        let list = self.args.iter().map(|a| Value::str(a.as_str())).collect();
        vec![(None, Value::list(list))]
    }

    /// Hoists functions, objects and enums so they may be used before their
    /// declaration, as in Buzz.
    fn declare(&mut self, stmt: &Stmt, scope: &Rc<Scope>) -> Eval<()> {
        match &stmt.kind {
            StmtKind::Fun(_) | StmtKind::Object(_) | StmtKind::Enum(_) => {
                self.declare_top(stmt, scope)
            }
            _ => Ok(()),
        }
    }

    /// A declaration of a file's top level, checked on entry as any
    /// statement is (depth and memory).
    fn declare_top(&mut self, stmt: &Stmt, scope: &Rc<Scope>) -> Eval<()> {
        self.enter(stmt.pos)?;
        let result = self.declaration(stmt, scope);
        self.depth -= 1;
        result
    }

    /// A statement that binds a name in `scope` (or, `namespace` and
    /// `test`, nothing at run time).
    fn declaration(&mut self, stmt: &Stmt, scope: &Rc<Scope>) -> Eval<()> {
        let pos = stmt.pos;
        match &stmt.kind {
            StmtKind::Namespace | StmtKind::Test { .. } => Ok(()),
            StmtKind::Import {
                module,
                alias,
                names,
            } => self.import(module, alias.as_ref(), names, scope, pos),
            StmtKind::Protocol(name) => {
                self.bind_protocol(name, scope);
                Ok(())
            }
            StmtKind::Var(decl) => self.var(decl, scope, pos),
            StmtKind::Fun(decl) => {
                let f = self.lambda(decl, scope);
                bind(scope, &decl.slot, &decl.name, f, Mutability::Final);
                Ok(())
            }
            StmtKind::Object(decl) => self.object(decl, scope),
            StmtKind::Enum(decl) => self.enumeration(decl, scope),
            _ => Err(self.fail(pos, "internal: not a declaration")),
        }
    }

    fn object(&mut self, decl: &Rc<ObjectDecl>, scope: &Rc<Scope>) -> Eval<()> {
        let mut statics = Vec::new();
        for field in decl.fields.iter().filter(|f| f.is_static) {
            statics.push(match &field.default {
                Some(e) => self.eval_top(e, scope)?,
                None => Value::Null,
            });
        }
        self.bind_object(decl, scope, statics);
        Ok(())
    }

    /// Makes the object type `decl`, closing over `scope` (its methods
    /// and field defaults read it), with `statics` the values of its
    /// static fields in order, and binds its name there.
    pub(in crate::buzz) fn bind_object(
        &mut self,
        decl: &Rc<ObjectDecl>,
        scope: &Rc<Scope>,
        statics: Vec<Value>,
    ) {
        let names = decl
            .fields
            .iter()
            .filter(|f| f.is_static)
            .map(|f| f.name.clone());
        let class = Rc::new(Class {
            id: Class::next_id(),
            name: decl.name.clone(),
            decl: Some(decl.clone()),
            scope: Some(scope.clone()),
            statics: std::cell::RefCell::new(names.zip(statics).collect()),
            fields: decl
                .fields
                .iter()
                .filter(|f| !f.is_static)
                .map(|f| f.name.clone())
                .collect(),
            finalizes: decl
                .methods
                .iter()
                .any(|m| !m.is_static && &*m.name == "collect"),
        });
        let value = Value::Class(class);
        self.types.insert(decl.name.clone(), value.clone());
        bind(scope, &decl.slot, &decl.name, value, Mutability::Final);
    }

    /// Binds the protocol `name` in `scope`, by name, as a type value.
    pub(in crate::buzz) fn bind_protocol(&mut self, name: &Rc<str>, scope: &Rc<Scope>) {
        let ty = Value::Type(Rc::new(Type::Named(name.clone())));
        self.types.insert(name.clone(), ty.clone());
        scope.define(name.clone(), ty, Mutability::Final);
    }

    fn var(&mut self, decl: &VarDecl, scope: &Rc<Scope>, pos: Pos) -> Eval<()> {
        let value = match &decl.init {
            Some(e) => self.eval_top(e, scope)?,
            None => Value::Null,
        };
        let value = match &decl.ty {
            Some(ty) => self.conform_with(ty, value, || format!("`{}`", decl.name), pos)?,
            None => value,
        };
        bind(scope, &decl.slot, &decl.name, value, decl.mutability);
        Ok(())
    }

    fn enumeration(&mut self, decl: &EnumDecl, scope: &Rc<Scope>) -> Eval<()> {
        let mut given = Vec::with_capacity(decl.cases.len());
        for (_, value) in &decl.cases {
            given.push(match value {
                Some(e) => Some(self.eval_top(e, scope)?),
                None => None,
            });
        }
        self.bind_enum(decl, scope, given);
        Ok(())
    }

    /// Makes the enum `decl` with `given` the values its cases were
    /// given (in order, `None` where a case has none) and binds its name
    /// in `scope`.
    pub(in crate::buzz) fn bind_enum(
        &mut self,
        decl: &EnumDecl,
        scope: &Rc<Scope>,
        given: Vec<Option<Value>>,
    ) {
        let str_values = matches!(&decl.value_type, Some(Type::Named(t)) if &**t == "str");
        let cases = decl.cases.iter().zip(given).enumerate();
        let cases = cases
            .map(|(i, ((name, _), value))| {
                let v = match value {
                    Some(v) => v,
                    // `enum<str>` cases default to their own name, as upstream.
                    None if str_values => Value::str(&**name),
                    None => Value::Int(i as i64),
                };
                (name.clone(), v)
            })
            .collect();
        let ty = EnumType::new(decl.name.clone(), cases);
        let value = Value::Enum(Rc::new(ty));
        self.types.insert(decl.name.clone(), value.clone());
        bind(scope, &decl.slot, &decl.name, value, Mutability::Final);
    }

    fn lambda(&self, decl: &Rc<FunDecl>, scope: &Rc<Scope>) -> Value {
        Value::Function(Rc::new(Closure {
            decl: decl.clone(),
            scope: scope.clone(),
            type_args: Vec::new(),
        }))
    }
}

impl Interpreter {
    /// Runs a top-level block (a `test` body, a statement of the file's
    /// top level) compiled, in a frame of its own under `globals`.
    pub(crate) fn run_block(&mut self, body: &[Stmt], globals: &Rc<Scope>) -> Eval<()> {
        let Some((body, size)) = crate::buzz::lower::tree::block(body) else {
            return Err(self.not_lowered(body.first().map_or(Pos::default(), |s| s.pos)));
        };
        let mut frame = vec![Value::Null; size];
        self.c_all(&body, &mut frame, globals)
    }

    /// The value of an expression of the top level (a global's initial
    /// value, a static field's, an enum case's), compiled, in a frame of
    /// its own under `globals`.
    pub(crate) fn eval_top(&mut self, e: &Expr, globals: &Rc<Scope>) -> Eval<Value> {
        let Some((lowered, size)) = crate::buzz::lower::tree::top_expr(e) else {
            return Err(self.not_lowered(e.pos));
        };
        let mut frame = vec![Value::Null; size];
        self.c_eval(&lowered, &mut frame, globals)
    }
}

//! The resolver: before a file runs, every local name is given a slot.
//!
//! Why: the evaluator used to find each variable by name at every read and
//! write, comparing strings along a chain of scopes; most of a tight loop's
//! time went there (issue 14, "Speed from the check"). Names are lexical,
//! so where each one lives is known before the run. This pass walks the
//! tree once, with the scopes the run will make, and writes into
//! each [`ExprKind::Var`] (and each declaration) a [`Res`]: a local's
//! `(depth, slot)`, read at run time by index, or a top-level name, found
//! in the file's globals by name once and then by a remembered index.
//!
//! The scopes ("levels") are the run's, exactly, or a depth would point at
//! the wrong scope wherever the compiled form keeps scopes (closures,
//! local declarations, default values): one per call (`this`, the parameters and the
//! body's own declarations), one per block that declares a name (see
//! [`declares`]), one per `for` (its initializers), one per `foreach`
//! step, `catch` clause and `if (…) -> x` branch. The file's top level is
//! the globals, kept by name: imports and hoisted declarations land there
//! in an order known only at run time.
//!
//! A function whose body (or a function inside it) finds a local of an
//! enclosing function is marked as capturing ([`Frame::captures`]): the
//! compiled form cannot keep such locals in its flat frame.
//!
//! The levels are kept by the scope engine ([`scope`]), which the checker
//! walks too; its module doc says where the two passes' rules differ.
//!
//! Generic parameters and local `protocol` names stay bound by name in
//! their call's frame ([`Res::Dynamic`]); a name found in no scope is a
//! global, whose lookup falls back to that search (so a local `import`
//! still works). The run resolves every file before it runs it; a tree
//! never resolved does not lower.

pub(crate) mod scope;

use super::syntax::ast::declares;
use super::syntax::ast::*;
use scope::{Found, Scopes};
use std::rc::Rc;

impl Program {
    /// Resolves the tree (once; later calls do nothing). A method of the
    /// tree, so that the interpreter, which resolves each file it runs,
    /// needs nothing of this pass but its result.
    pub(crate) fn resolve(&self) {
        if self.resolved.replace(true) {
            return;
        }
        let mut r = Resolver {
            scopes: Scopes::default(),
        };
        for stmt in &self.statements {
            r.stmt(stmt);
        }
    }
}

/// What the resolver keeps about a slotted name (a name bound by name at
/// run time keeps the default, unread).
#[derive(Clone, Copy, Default)]
struct Fixity {
    fixed: bool,
    /// Declared again in the same level (a local `fun` always is:
    /// once ahead, once where it stands): a copy of it may go stale.
    again: bool,
}

/// What the resolver notes about one scope the evaluator will make (the
/// top level has none here).
#[derive(Default)]
struct Notes {
    /// A function's own level (its frame).
    function: bool,
    /// A name of an enclosing function's level was found from inside this
    /// function's level.
    captures: bool,
    /// One of those names may change after this function is made.
    shares: bool,
    /// Those names, each as (levels out from where this function is
    /// made, slot).
    captured: Vec<(u32, u32)>,
    /// Slots of this (function) level that inner functions capture.
    own: Vec<u32>,
    /// An inner function shares a local of a nested level of this one.
    nested_shared: bool,
}

struct Resolver {
    /// The run's scopes at this point; none at the file's top level.
    scopes: Scopes<Fixity, Notes>,
}

impl Resolver {
    // ----- scopes -----

    fn with_level<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> (T, u32) {
        self.scopes.push(Notes::default());
        let out = f(self);
        let size = self.scopes.pop().map_or(0, |l| l.size());
        (out, size)
    }

    /// Declares `name` in the innermost level: its slot, or `Dynamic` at
    /// the top level (where the evaluator defines it by name). A name
    /// declared again in the same level keeps its slot, as `define` did.
    fn declare(&mut self, name: &Rc<str>, fixed: bool) -> Res {
        if self.scopes.at_top_level() {
            return Res::Dynamic;
        }
        let again = self.scopes.here_mut(name).and_then(|entry| {
            let slot = entry.slot()?;
            entry.value = Fixity { fixed, again: true };
            Some(slot)
        });
        let slot = match again {
            Some(slot) => slot,
            None => self.scopes.declare(
                name.clone(),
                Fixity {
                    fixed,
                    again: false,
                },
            ),
        };
        Res::Local {
            depth: 0,
            slot,
            fixed,
        }
    }

    fn declare_named(&mut self, name: &Rc<str>) {
        self.scopes
            .declare_unslotted(name.clone(), Fixity::default());
    }

    fn bind(&mut self, slot: &Resolved, name: &Rc<str>, fixed: bool) {
        let res = self.declare(name, fixed);
        slot.set(res);
    }

    fn lookup(&mut self, name: &str) -> Res {
        let (depth, slot, fixity) = match self.scopes.find(name) {
            Some(Found::Local { depth, entry }) => match entry.slot() {
                Some(slot) => (depth, slot, entry.value),
                None => return Res::Dynamic,
            },
            Some(Found::Global(_)) | None => return Res::Global { hint: 0 },
        };
        let Fixity { fixed, again } = fixity;
        self.mark_captures(depth, slot, fixed && !again);
        Res::Local {
            depth: depth as u32,
            slot,
            fixed,
        }
    }

    /// A local found `depth` levels out: every function level crossed on
    /// the way captures it.
    fn mark_captures(&mut self, depth: usize, slot: u32, copyable: bool) {
        let open = self.scopes.depth();
        let inner = open.saturating_sub(depth);
        let Some(found) = inner.checked_sub(1) else {
            return;
        };
        if (inner..open).any(|at| self.scopes.kind(at).function) {
            self.mark_owner(found, slot, copyable);
        }
        for at in inner..open {
            let level = self.scopes.kind_mut(at);
            if level.function {
                level.captures = true;
                level.shares |= !copyable;
                // Levels between where this function is made and the name's.
                let out = (at - inner) as u32;
                if !level.captured.contains(&(out, slot)) {
                    level.captured.push((out, slot));
                }
            }
        }
    }

    /// A local of level `found`, captured by an inner function: noted on
    /// the function whose level (or nested level) holds it.
    fn mark_owner(&mut self, found: usize, slot: u32, copyable: bool) {
        let Some(owner) = (0..=found).rev().find(|&at| self.scopes.kind(at).function) else {
            return;
        };
        let level = self.scopes.kind_mut(owner);
        if owner == found {
            if !level.own.contains(&slot) {
                level.own.push(slot);
            }
        } else if !copyable {
            level.nested_shared = true;
        }
    }

    // ----- statements -----

    /// A level's statements. Its `fun`s are known throughout it, so that
    /// two of them may call each other.
    fn stmts(&mut self, body: &[Stmt]) {
        if !self.scopes.at_top_level() {
            for stmt in body {
                if let StmtKind::Fun(decl) = &stmt.kind {
                    // Bound only where it stands: a function made before
                    // then must share the slot, not copy it (still null).
                    self.declare(&decl.name, true);
                    self.declare(&decl.name, true);
                }
            }
        }
        for stmt in body {
            self.stmt(stmt);
        }
    }

    /// A block (or a loop body): a level of its own
    /// when it declares a name.
    fn block(&mut self, body: &[Stmt]) {
        if declares(body) {
            self.with_level(|r| r.stmts(body));
        } else {
            self.stmts(body);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) {
        match &stmt.kind {
            StmtKind::Namespace | StmtKind::Import { .. } => {}
            StmtKind::Break(_) | StmtKind::Continue(_) => {}
            StmtKind::Test { body, .. } => self.block(body),
            StmtKind::Protocol(name) => self.declare_named(name),
            StmtKind::Var(decl) => {
                if let Some(init) = &decl.init {
                    self.expr(init);
                }
                self.bind(&decl.slot, &decl.name, decl.mutability == Mutability::Final);
            }
            StmtKind::Fun(decl) => {
                self.bind(&decl.slot, &decl.name, true);
                self.function(decl, false);
            }
            StmtKind::Object(decl) => self.object(decl),
            StmtKind::Enum(decl) => {
                self.bind(&decl.slot, &decl.name, true);
                for (_, value) in &decl.cases {
                    if let Some(e) = value {
                        self.expr(e);
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
                match binding {
                    Some(b) => {
                        self.with_level(|r| {
                            r.bind(&b.slot, &b.name, true);
                            r.stmts(then);
                        });
                    }
                    None => self.block(then),
                }
                if let Some(other) = otherwise {
                    self.stmt(other);
                }
            }
            StmtKind::While { cond, body, .. } => {
                self.expr(cond);
                self.block(body);
            }
            StmtKind::DoUntil { body, cond, .. } => {
                // The condition is read in the body's scope.
                if declares(body) {
                    self.with_level(|r| {
                        r.stmts(body);
                        r.expr(cond);
                    });
                } else {
                    self.stmts(body);
                    self.expr(cond);
                }
            }
            StmtKind::For {
                init,
                cond,
                step,
                body,
                ..
            } => {
                self.with_level(|r| {
                    r.stmts(init);
                    if let Some(c) = cond {
                        r.expr(c);
                    }
                    r.block(body);
                    for e in step {
                        r.expr(e);
                    }
                });
            }
            StmtKind::ForEach {
                key,
                value,
                iterable,
                body,
                slots,
                ..
            } => {
                self.expr(iterable);
                self.with_level(|r| {
                    if let Some(k) = key {
                        r.bind(&slots.0, k, true);
                    }
                    r.bind(&slots.1, value, true);
                    r.stmts(body);
                });
            }
            StmtKind::Try { body, clauses } => {
                self.block(body);
                for clause in clauses {
                    self.with_level(|r| {
                        if let Some((name, _)) = &clause.binding {
                            r.bind(&clause.slot, name, true);
                        }
                        r.stmts(&clause.body);
                    });
                }
            }
        }
    }

    /// An object: its name, then its fields' defaults (read where it is
    /// declared) and its methods (each closing over that scope).
    fn object(&mut self, decl: &ObjectDecl) {
        self.bind(&decl.slot, &decl.name, true);
        for field in &decl.fields {
            if let Some(e) = &field.default {
                self.expr(e);
            }
        }
        for method in &decl.methods {
            self.function(method, !method.is_static);
        }
    }

    /// A function's frame: `this` (for a method), then the parameters, each
    /// default read with the earlier ones bound, then the body.
    fn function(&mut self, decl: &FunDecl, method: bool) {
        self.scopes.push(Notes {
            function: true,
            ..Notes::default()
        });
        if method {
            self.declare(&this_name(), true);
        }
        for name in &decl.generics {
            self.declare_named(name);
        }
        for param in &decl.params {
            if let Some(e) = &param.default {
                self.expr(e);
            }
            self.declare(&param.name, true);
        }
        self.stmts(&decl.body);
        let (size, notes) = self
            .scopes
            .pop()
            .map_or((0, Notes::default()), |l| (l.size(), l.kind));
        decl.frame.set(Frame {
            resolved: true,
            method,
            size,
            captures: notes.captures,
            shares: notes.shares,
        });
        // Resolved once per program; a second time would find the same.
        let _ = decl.captured.set(Captures {
            outer: notes.captured.into(),
            own: notes.own.into(),
            nested_shared: notes.nested_shared,
        });
    }

    // ----- expressions -----

    fn exprs<'e>(&mut self, items: impl IntoIterator<Item = &'e Expr>) {
        for e in items {
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
            | ExprKind::InferredCase(_)
            | ExprKind::TypeValue(_)
            | ExprKind::Pattern(_) => {}
            ExprKind::Var(name, res) => res.set(self.lookup(name)),
            ExprKind::Template(parts) => {
                for part in parts {
                    if let TemplatePart::Expr(e) = part {
                        self.expr(e);
                    }
                }
            }
            ExprKind::List(items) | ExprKind::TypedList { items, .. } => self.exprs(items),
            ExprKind::Map(entries) => {
                for (k, v) in entries {
                    self.expr(k);
                    self.expr(v);
                }
            }
            ExprKind::Unary(_, e)
            | ExprKind::Is(e, _)
            | ExprKind::Mutable(e)
            | ExprKind::Force(e)
            | ExprKind::TypeOf(e)
            | ExprKind::AsyncCall(e)
            | ExprKind::Resume(e)
            | ExprKind::Resolve(e)
            | ExprKind::Yield(e)
            | ExprKind::As { value: e, .. }
            | ExprKind::Generic { callee: e, .. }
            | ExprKind::Field { object: e, .. } => self.expr(e),
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
            }
            | ExprKind::Catch {
                body: l,
                default: r,
            } => {
                self.expr(l);
                self.expr(r);
            }
            ExprKind::Call { callee, args } => {
                self.expr(callee);
                self.exprs(args.iter().map(|a| &a.value));
            }
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => self.exprs([&**cond, then, otherwise]),
            ExprKind::Lambda(decl) => self.function(decl, false),
            ExprKind::Instance {
                object,
                fields,
                class,
            } => {
                class.set(self.lookup(object));
                self.exprs(fields.iter().map(|(_, e)| e));
            }
            ExprKind::InstanceOf { class, fields } => {
                self.expr(class);
                self.exprs(fields.iter().map(|(_, e)| e));
            }
            ExprKind::AnonObject(fields) => self.exprs(fields.iter().map(|(_, e)| e)),
            ExprKind::Block(body) => self.block(body),
            ExprKind::Match {
                subject,
                arms,
                otherwise,
            } => {
                self.expr(subject);
                for arm in arms {
                    self.exprs(&arm.conditions);
                    self.expr(&arm.body);
                }
                if let Some(e) = otherwise {
                    self.expr(e);
                }
            }
        }
    }
}

fn this_name() -> Rc<str> {
    Rc::from("this")
}

#[cfg(all(test, unix))]
mod tests {
    use crate::buzz::program_tests::Captured;
    use crate::buzz::{parse, BuzzError, Interpreter};
    use std::path::Path;

    /// Runs `source` without the check (which refuses some of what the
    /// evaluator still runs, such as objects declared in a function).
    fn run(source: &str) -> (String, Result<i32, BuzzError>) {
        let file = Path::new("resolve_test.buzz");
        let out = Captured::default();
        let program = parse(file, source).expect("parses");
        let result = Interpreter::new(file, Vec::new())
            .with_output(Box::new(out.clone()))
            .run(&program, Vec::new());
        let text = String::from_utf8_lossy(&out.0.borrow()).into_owned();
        (text, result)
    }

    #[test]
    fn a_local_object_reads_the_locals_of_its_function() {
        let (out, result) = run(r#"
import "std";
fun main() > void {
    final base = 100;
    object Local {
        n: int = base,
        fun plus(m: int) > int {
            return this.n + m + base;
        }
    }
    final l = Local{};
    std.print("{l.plus(1)}");
}
"#);
        assert_eq!(result.unwrap(), 0);
        assert_eq!(out, "201\n");
    }

    #[test]
    fn assigning_a_final_local_or_parameter_fails_where_it_is_written() {
        let (_, result) = run("fun main() > void {\n    final x = 1;\n    x = 2;\n}\n");
        let err = result.unwrap_err().to_string();
        assert!(
            err.contains("3:5") && err.contains("`x`: it is `final`"),
            "{err}"
        );
        let (_, result) = run("fun f(p: int) > int {\n    p = 3;\n    return p;\n}\nfun main() > void {\n    f(1);\n}\n");
        let err = result.unwrap_err().to_string();
        assert!(
            err.contains("2:5") && err.contains("`p`: it is `final`"),
            "{err}"
        );
    }

    #[test]
    fn closures_made_in_loop_steps_keep_their_own_step_while_steps_reuse_scopes() {
        let (out, result) = run(r#"
import "std";
fun main() > void {
    final fs: mut [fun () > int] = mut [];
    foreach (i in 0..3) {
        fs.append(fun () > int => i * 10);
    }
    var j = 0;
    while (j < 3) {
        final k = j;
        fs.append(fun () > int => k);
        j += 1;
    }
    foreach (f in fs) {
        std.print("{f()}");
    }
}
"#);
        assert_eq!(result.unwrap(), 0);
        assert_eq!(out, "0\n10\n20\n0\n1\n2\n");
    }

    #[test]
    fn closures_made_in_a_declaring_block_keep_that_run_of_the_block() {
        let (out, result) = run(r#"
import "std";
fun main() > void {
    final fs: mut [fun () > int] = mut [];
    var total = 0;
    foreach (i in 0..3) {
        if (i != 1) {
            final m = i + 100;
            fs.append(fun () > int => m);
        }
        if (i >= 0) {
            final n = i;
            total += n;
        }
    }
    foreach (f in fs) {
        std.print("{f()}");
    }
    std.print("{total}");
}
"#);
        assert_eq!(result.unwrap(), 0);
        assert_eq!(out, "100\n102\n3\n");
    }

    #[test]
    fn named_arguments_in_either_order_bind_the_same_parameters() {
        let (out, result) = run(r#"
import "std";
fun pick(m: int, n: int) > int {
    return m * 10 + n;
}
fun main() > void {
    std.print("{pick(m: 1, n: 2)} {pick(n: 2, m: 1)} {pick(1, 2)}");
}
"#);
        assert_eq!(result.unwrap(), 0);
        assert_eq!(out, "12 12 12\n");
    }

    #[test]
    fn a_call_and_a_compound_assignment_fail_where_they_are_written() {
        let source = "fun f(n: int) > int {\n    return n;\n}\nfun main() > void {\n    final s = \"x\";\n    f(s);\n}\n";
        let err = run(source).1.unwrap_err().to_string();
        assert!(
            err.contains("6:5") && err.contains("parameter `n` of `f` expects int, got str"),
            "{err}"
        );
        let source = "fun main() > void {\n    var big = 9223372036854775807;\n    big += 1;\n}\n";
        let err = run(source).1.unwrap_err().to_string();
        assert!(
            err.contains("3:9") && err.contains("integer overflow"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_name_is_still_reported_at_its_use() {
        let (_, result) =
            run("fun main() > void {\n    final a = 1;\n    final b = a + nope;\n}\n");
        let err = result.unwrap_err().to_string();
        assert!(
            err.contains("3:19") && err.contains("unknown name `nope`"),
            "{err}"
        );
    }
}

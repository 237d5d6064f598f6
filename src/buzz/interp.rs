//! The interpreter: the run's state (modules, types, files, fibers), the
//! file's top level and its declarations, and the helpers the compiled
//! form ([`super::compile`], which runs every function, block and default)
//! calls: errors, calls, fields, conformance to types.
//!
//! It reaches the outside world only through the native modules it is given.
//! Recursion (Buzz calls and nested evaluation) is counted and bounded by
//! [`MAX_CALL_DEPTH`] and [`MAX_EVAL_DEPTH`], so runaway spells end in an
//! error instead of overflowing the stack; an optional step budget
//! ([`Interpreter::with_step_budget`]) bounds how long one may run.

use super::error::{BuzzError, CallSite};
use super::lib::methods;
use super::lib::std_module::std_module;
use super::lib::BUILTIN_LIBRARIES;
use super::native::{ExitRequest, NativeCall, NativeModule};
use super::syntax::ast::*;
use super::syntax::lexer::Pos;
use super::value::*;
use crate::diag::Diagnostic;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Deepest Buzz call stack (upstream's `ackermann 3 9` needs about 4,100).
/// Reached only on the interpreter's own large stack (see
/// [`super::stack`]); on an ordinary 8 MiB thread the stack budget below
/// stops a spell first, with the same clean error.
pub(crate) const MAX_CALL_DEPTH: usize = 10_000;

/// Deepest nesting of evaluation steps (expressions, statements and calls
/// together), on the interpreter's own stack. A Buzz call nests about a
/// dozen steps.
pub(crate) const MAX_EVAL_DEPTH: usize = 200_000;

/// Default stack budget: evaluation stops once it has used this much stack
/// below the frame that called [`Interpreter::run`]. Sized for an 8 MiB
/// thread; [`super::stack::run_on_interpreter_stack`] raises it.
pub(crate) const STACK_BUDGET: usize = 4 << 20;

/// Longest string and list a spell may build (bytes, items).
pub(crate) const MAX_STR_LEN: usize = 256 << 20;
pub(crate) const MAX_LIST_LEN: usize = 32 << 20;

/// A thrown Buzz error travelling up to a `catch`.
pub(crate) struct Thrown {
    pub(crate) value: Value,
    pub(crate) pos: Pos,
    /// The file `pos` is in (the throw may be in an imported file).
    pub(crate) file: Rc<Path>,
    pub(crate) diagnostic: Option<Box<Diagnostic>>,
    /// A native's refusal not yet placed on what the spell wrote: which
    /// part of the call to underline (see [`CallSpans`]).
    pub(crate) refused: Option<u32>,
}

/// Why evaluation stopped going forward.
pub(crate) enum Flow {
    Break(Option<Rc<str>>),
    Continue(Option<Rc<str>>),
    /// `out value;` leaving a `from { … }` block.
    Out(Value),
    Return(Value),
    Throw(Box<Thrown>),
    Exit(i32),
    Error(Box<BuzzError>),
}

pub(crate) type Eval<T> = Result<T, Flow>;

/// Arguments as written at a call: optional name, value.
pub(crate) type Args = Vec<(Option<Rc<str>>, Value)>;

/// Runs one parsed spell.
pub struct Interpreter {
    pub(super) file: Rc<Path>,
    pub(super) out: Box<dyn Write>,
    pub(super) modules: HashMap<String, Rc<ModuleObj>>,
    pub(super) args: Vec<String>,
    pub(super) depth: usize,
    pub(super) calls: usize,
    stack_base: usize,
    stack_budget: usize,
    /// Object, enum and protocol names, for inferred cases and anonymous
    /// objects given where a named type is expected.
    pub(super) types: HashMap<Rc<str>, Value>,
    /// How `import "path";` reads a spell's own files (through the gate).
    pub(super) loader: Option<super::native::SourceLoader>,
    /// Files being imported, outermost first, to report cycles.
    pub(super) importing: Vec<PathBuf>,
    /// Files already imported, by path.
    pub(super) loaded: HashMap<PathBuf, Rc<ModuleObj>>,
    /// The globals of the files imported so far, emptied when the run
    /// ends (see [`Interpreter::clear_globals`]).
    pub(super) module_globals: Vec<Rc<Scope>>,
    /// Libraries written in Buzz (such as `buzz:io`), by import name.
    pub(super) libraries: HashMap<String, &'static str>,
    /// Live heap bytes (`heap::in_use`) past which evaluation stops.
    heap_budget: usize,
    /// The `namespace` of the file whose top level is running.
    pub(super) namespace: Vec<Rc<str>>,
    /// The fiber this interpreter runs (see [`super::fiber`]).
    pub(super) fiber: super::fiber::FiberSelf,
    /// Fibers alive now, across every fiber's interpreter.
    pub(super) live_fibers: Rc<std::cell::Cell<usize>>,
    /// Finished call frames and argument lists kept for the next calls, so
    /// a call allocates nothing in the common case.
    spare: Spare,
    /// Room for the next calls' arguments.
    scratch: Scratch,
    /// Finished flat frames of compiled functions (see [`super::compile`]).
    pub(super) flat_frames: Vec<Vec<Value>>,
    /// Steps (calls and loop turns) left before the spell is stopped,
    /// shared with the spell's fibers so that they draw on one budget.
    steps: Rc<std::cell::Cell<u64>>,
    /// The step budget the spell started with, for the error.
    step_budget: u64,
}

/// What native calls and built-in methods are given, kept from one call
/// to the next so that a call allocates nothing: a native's arguments
/// split into values and names and its call site (whose path is copied
/// only when the file changes), and emptied argument lists of methods.
#[derive(Default)]
struct Scratch {
    positional: Vec<Vec<Value>>,
    values: Vec<Value>,
    names: Vec<Option<Rc<str>>>,
    site: CallSite,
    /// The file `site.file` was copied from.
    file: Option<Rc<Path>>,
}

impl Scratch {
    fn locate(&mut self, file: &Rc<Path>, pos: Pos) {
        if !self.file.as_ref().is_some_and(|f| Rc::ptr_eq(f, file)) {
            self.site.file = file.to_path_buf();
            self.file = Some(file.clone());
        }
        self.site.line = pos.line;
        self.site.column = pos.column;
    }
}

/// How many finished frames and argument lists an interpreter keeps.
const SPARE_LIMIT: usize = 64;

/// How many finished call frames an interpreter keeps: enough for the
/// depth a recursion such as Ackermann's swings through at each return
/// (a frame kept holds a few hundred bytes of heap at most).
const SPARE_FRAMES: usize = 2048;

/// Finished call frames and emptied argument lists, ready for reuse.
#[derive(Default)]
struct Spare {
    frames: Vec<Rc<Scope>>,
    args: Vec<Args>,
}

/// The address of a local in a fresh frame: how deep the stack is now.
#[inline(never)]
fn stack_address() -> usize {
    let probe = 0u8;
    std::hint::black_box(&probe) as *const u8 as usize
}

#[deny(missing_docs)] // re-exported by the crate: public API
impl Interpreter {
    /// An interpreter for `file` with `std` and the given modules; output
    /// goes to the process stdout.
    pub fn new(file: impl Into<PathBuf>, modules: Vec<NativeModule>) -> Interpreter {
        let mut table = HashMap::new();
        let builtin = [
            std_module(),
            super::lib::std_module::math_module(),
            super::lib::std_module::buffer_natives(),
            super::lib::std_module::gc_module(),
            super::lib::crypto::natives(),
            super::lib::std_module::debug_module(),
            super::lib::serialize::module(),
        ];
        for module in builtin.into_iter().chain(modules) {
            table.insert(module.name.clone(), Rc::new(module_object(module)));
        }
        let file: PathBuf = file.into();
        Interpreter {
            file: Rc::from(file.as_path()),
            out: Box::new(std::io::stdout()),
            modules: table,
            args: Vec::new(),
            depth: 0,
            calls: 0,
            stack_base: 0,
            stack_budget: STACK_BUDGET,
            fiber: super::fiber::FiberSelf::Main(super::fiber::Fiber::main()),
            live_fibers: Rc::default(),
            types: HashMap::new(),
            loader: None,
            importing: Vec::new(),
            loaded: HashMap::new(),
            module_globals: Vec::new(),
            libraries: BUILTIN_LIBRARIES
                .iter()
                .map(|(name, source)| ((*name).to_string(), *source))
                .collect(),
            heap_budget: super::heap::DEFAULT_HEAP_BUDGET,
            namespace: Vec::new(),
            spare: Spare::default(),
            scratch: Scratch::default(),
            flat_frames: Vec::new(),
            steps: Rc::new(std::cell::Cell::new(u64::MAX)),
            step_budget: u64::MAX,
        }
    }

    /// Stops the spell with a "memory limit" error once magus holds more
    /// than `bytes` of heap (`sandbox.limits.memory`).
    pub fn with_heap_budget(mut self, bytes: usize) -> Interpreter {
        self.heap_budget = bytes;
        self
    }

    /// Stops the spell with a "step limit" error once it has made `steps`
    /// calls and loop turns, all its fibers together. Unbounded unless
    /// set: for runs that must end however the spell loops (the fuzzer's).
    pub fn with_step_budget(mut self, steps: u64) -> Interpreter {
        self.steps.set(steps);
        self.step_budget = steps;
        self
    }

    /// Adds libraries written in Buzz, importable by name (`buzz:io`).
    pub fn with_libraries(mut self, libraries: &[(&str, &'static str)]) -> Interpreter {
        for (name, source) in libraries {
            self.libraries.insert((*name).to_string(), source);
        }
        self
    }

    /// Lets evaluation use `bytes` of stack: for a thread whose stack is
    /// that much larger than the budget (see [`super::stack`]).
    pub fn with_stack_budget(mut self, bytes: usize) -> Interpreter {
        self.stack_budget = bytes;
        self
    }

    /// Lets `import "path";` read the spell's own `.buzz` files with `loader`.
    pub fn with_loader(mut self, loader: super::native::SourceLoader) -> Interpreter {
        self.loader = Some(loader);
        self
    }

    /// Sends `std.print` output to `out` instead of stdout.
    pub fn with_output(mut self, out: Box<dyn Write>) -> Interpreter {
        self.out = out;
        self
    }

    /// Runs the program's top level, then `main(args)`. Returns the exit
    /// status: the `int` main returns, `0` for `void`, or what `std.exit` gave.
    pub fn run(&mut self, program: &Program, args: Vec<String>) -> Result<i32, BuzzError> {
        self.prepare(program, args);
        let globals = Scope::new(None);
        let outcome = self.run_top(program, &globals);
        self.clear_globals(&globals);
        super::value::finalizers::discard();
        let _ = self.out.flush();
        self.finish(outcome)
    }

    /// Breaks the cycles between the run's globals (the spell's own and
    /// every imported file's) and their functions, once nothing will run.
    pub(super) fn clear_globals(&mut self, globals: &Rc<Scope>) {
        globals.clear();
        for scope in std::mem::take(&mut self.module_globals) {
            scope.clear();
        }
        self.loaded.clear();
    }

    /// Sets up a run of `program`: its arguments and the stack base.
    pub(super) fn prepare(&mut self, program: &Program, args: Vec<String>) {
        self.args = args;
        self.stack_base = stack_address();
        self.importing.push(program.file.clone());
        self.namespace = program.namespace.clone();
    }

    /// An interpreter for a new fiber: the spell's modules, types and
    /// limits, a stack and depth of its own (set by the fiber's body).
    pub(super) fn fiber_child(&self) -> Interpreter {
        Interpreter {
            file: self.file.clone(),
            out: Box::new(std::io::sink()),
            modules: self.modules.clone(),
            args: self.args.clone(),
            depth: 0,
            calls: 0,
            stack_base: 0,
            stack_budget: super::stack::stack_budget(super::fiber::FIBER_STACK),
            fiber: super::fiber::FiberSelf::Main(super::fiber::Fiber::main()),
            live_fibers: self.live_fibers.clone(),
            types: self.types.clone(),
            // The same gated loader: a fiber reads files exactly as the
            // spell does.
            loader: self.loader.clone(),
            importing: Vec::new(),
            loaded: HashMap::new(),
            module_globals: Vec::new(),
            libraries: self.libraries.clone(),
            heap_budget: self.heap_budget,
            namespace: self.namespace.clone(),
            spare: Spare::default(),
            scratch: Scratch::default(),
            flat_frames: Vec::new(),
            steps: self.steps.clone(),
            step_budget: self.step_budget,
        }
    }

    /// Measures the stack budget from here: for a fiber's body, on its
    /// own stack.
    pub(super) fn begin_on_this_stack(&mut self) {
        self.stack_base = stack_address();
    }

    /// The "memory limit" message if `extra` more bytes would pass the
    /// heap budget.
    pub(super) fn over_heap_budget(&self, extra: usize) -> Option<String> {
        (super::heap::in_use().saturating_add(extra) > self.heap_budget).then(|| self.over_budget())
    }

    /// Turns how a run ended into its exit status or error.
    pub(super) fn finish(&self, outcome: Eval<i32>) -> Result<i32, BuzzError> {
        match outcome {
            Ok(status) | Err(Flow::Exit(status)) => Ok(status),
            Err(Flow::Error(e)) => Err(*e),
            Err(Flow::Throw(t)) => Err(self.uncaught(*t)),
            Err(Flow::Return(_)) => Ok(0),
            Err(Flow::Break(_) | Flow::Continue(_) | Flow::Out(_)) => Err(self.runtime(
                Pos::default(),
                "`break`, `continue` or `out` outside a loop or block",
            )),
        }
    }

    /// Hoists the declarations of `program`, then runs its other top-level
    /// statements (not its tests) in `globals`.
    pub(super) fn run_declarations(&mut self, program: &Program, globals: &Rc<Scope>) -> Eval<()> {
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

    fn run_top(&mut self, program: &Program, globals: &Rc<Scope>) -> Eval<i32> {
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

    // ----- errors -----

    pub(super) fn site(&self, pos: Pos) -> CallSite {
        CallSite {
            file: self.file.to_path_buf(),
            line: pos.line,
            column: pos.column,
        }
    }

    pub(super) fn runtime(&self, pos: Pos, message: impl Into<String>) -> BuzzError {
        BuzzError::Runtime {
            site: self.site(pos),
            message: message.into(),
        }
    }

    #[cold]
    pub(crate) fn fail(&self, pos: Pos, message: impl Into<String>) -> Flow {
        Flow::Error(Box::new(self.runtime(pos, message)))
    }

    pub(super) fn uncaught(&self, t: Thrown) -> BuzzError {
        BuzzError::Uncaught {
            value: thrown_text(&t.value),
            site: CallSite {
                file: t.file.to_path_buf(),
                line: t.pos.line,
                column: t.pos.column,
            },
            diagnostic: t.diagnostic,
        }
    }

    /// Entering a statement: depth and memory. The stack is measured at
    /// calls only ([`Interpreter::enter_call`]): without a call, statements
    /// and expressions nest no deeper than the parser's bound, far inside
    /// the stack budget's headroom.
    #[inline]
    pub(super) fn enter(&mut self, pos: Pos) -> Eval<()> {
        // The checks only; building an error is out of line, so this
        // frame (entered at every evaluation step) stays small.
        if self.depth >= MAX_EVAL_DEPTH || super::heap::in_use() > self.heap_budget {
            return Err(self.enter_refused(pos));
        }
        self.depth += 1;
        Ok(())
    }

    /// Entering a Buzz call: steps, depth, memory and stack.
    pub(super) fn enter_call(&mut self, pos: Pos) -> Eval<()> {
        self.take_step(pos)?;
        if self.stack_base.abs_diff(stack_address()) > self.stack_budget {
            return Err(self.enter_refused(pos));
        }
        self.enter(pos)
    }

    /// Whether [`Interpreter::enter_call`] would find the stack and the
    /// memory within their budgets now.
    #[inline]
    pub(super) fn within_budgets(&self) -> bool {
        self.stack_base.abs_diff(stack_address()) <= self.stack_budget
            && super::heap::in_use() <= self.heap_budget
    }

    /// One step of the step budget: a call, or a turn of a loop (which may
    /// make no call and run no statement, as `while (true) {}`).
    #[inline]
    pub(super) fn take_step(&mut self, pos: Pos) -> Eval<()> {
        let left = self.steps.get();
        if left == 0 {
            return Err(self.out_of_steps(pos));
        }
        self.steps.set(left - 1);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn out_of_steps(&self, pos: Pos) -> Flow {
        self.fail(
            pos,
            format!(
                "step limit: the spell made more than {} calls and loop turns (an endless loop?)",
                self.step_budget
            ),
        )
    }

    /// Why [`Interpreter::enter`] refused: depth, stack or memory.
    #[cold]
    #[inline(never)]
    fn enter_refused(&self, pos: Pos) -> Flow {
        if self.depth >= MAX_EVAL_DEPTH {
            return self.fail(pos, format!(
                "evaluation nested too deeply (more than {MAX_EVAL_DEPTH} levels of expressions, blocks and calls; runaway recursion?)"
            ));
        }
        if self.stack_base.abs_diff(stack_address()) > self.stack_budget {
            return self.fail(
                pos,
                "evaluation used its whole stack budget (runaway recursion?)",
            );
        }
        self.fail(pos, self.over_budget())
    }

    #[cold]
    fn over_budget(&self) -> String {
        format!(
            "memory limit: the spell holds more than {} of memory (raise `sandbox.limits.memory`, or magus's `ulimit -d`, if it needs more)",
            crate::policy::limits::Bytes(self.heap_budget as u64)
        )
    }

    // ----- statements -----

    /// A block's scope under `parent`, made from a finished frame when
    /// there is one (see [`Interpreter::exec_block`]); give it back with
    /// [`Interpreter::end_block_scope`].
    pub(super) fn block_scope(&mut self, parent: &Rc<Scope>) -> Rc<Scope> {
        Scope::reuse(self.spare.frames.pop(), parent.clone(), 0)
    }

    /// Keeps a finished block's scope for reuse when nothing holds it.
    pub(super) fn end_block_scope(&mut self, scope: Rc<Scope>) {
        if self.spare.frames.len() < SPARE_FRAMES {
            self.spare.frames.extend(Scope::recycle(scope));
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
    pub(super) fn bind_object(
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
    pub(super) fn bind_protocol(&mut self, name: &Rc<str>, scope: &Rc<Scope>) {
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

    /// Checks `value` against a declared type (loosely), widening an `int`
    /// given for a `double`.
    pub(super) fn conform(&mut self, ty: &Type, value: Value, what: &str, pos: Pos) -> Eval<Value> {
        self.conform_with(ty, value, || what.to_string(), pos)
    }

    /// [`Interpreter::conform`], naming what is checked only when it fails
    /// (a parameter's name is not formatted at every call).
    pub(super) fn conform_with(
        &mut self,
        ty: &Type,
        value: Value,
        what: impl FnOnce() -> String,
        pos: Pos,
    ) -> Eval<Value> {
        if plainly_conforms(ty, &value) {
            return Ok(value);
        }
        if let (Value::Int(i), true) = (&value, is_double(ty)) {
            return Ok(Value::Double(*i as f64));
        }
        let value = self.infer(ty, value, pos)?;
        if type_matches(ty, &value) || self.loosely_matches(ty, &value) {
            record_shape(ty, &value);
            return Ok(value);
        }
        Err(self.fail(
            pos,
            format!(
                "{} expects {}, got {}",
                what(),
                type_label(ty),
                value.type_name()
            ),
        ))
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
    pub(super) fn bind_enum(
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
                    None if str_values => Value::Str(name.clone()),
                    None => Value::Int(i as i64),
                };
                (name.clone(), v)
            })
            .collect();
        let ty = EnumType {
            name: decl.name.clone(),
            cases,
        };
        let value = Value::Enum(Rc::new(ty));
        self.types.insert(decl.name.clone(), value.clone());
        bind(scope, &decl.slot, &decl.name, value, Mutability::Final);
    }

    /// The `index`-th (key, value) of a `foreach` subject, read afresh each
    /// step so the body may change the collection.
    /// The `index`th key and item a `foreach` over `subject` takes: a
    /// fiber resumed for its next value, anything else read by position.
    pub(super) fn next_item(
        &mut self,
        subject: &Value,
        index: usize,
        pos: Pos,
    ) -> Eval<Option<(Value, Value)>> {
        match subject {
            Value::Fiber(f) => Ok(self
                .fiber_foreach_item(f, pos)?
                .map(|v| (Value::Int(index as i64), v))),
            _ => self.nth_item(subject, index, pos),
        }
    }

    pub(super) fn nth_item(
        &self,
        subject: &Value,
        index: usize,
        pos: Pos,
    ) -> Eval<Option<(Value, Value)>> {
        let i = index as i64;
        Ok(match subject {
            Value::List(list) => list
                .items
                .borrow()
                .get(index)
                .map(|v| (Value::Int(i), v.clone())),
            Value::Map(map) => map.data.borrow().entries.get(index).cloned(),
            // By byte, as upstream: a character of several bytes comes as
            // several one-byte strings.
            Value::Str(_) | Value::Bytes(_) => subject
                .str_bytes()
                .and_then(|b| b.get(index))
                .map(|b| (Value::Int(i), Value::from_bytes(vec![*b]))),
            Value::Range(low, high) => {
                methods::range_nth(*low, *high, i).map(|n| (Value::Int(i), Value::Int(n)))
            }
            Value::Enum(e) => e
                .cases
                .get(index)
                .map(|_| (Value::Int(i), Value::EnumCase(e.clone(), index))),
            other => {
                return Err(self.fail(pos, format!("cannot iterate over {}", other.type_name())))
            }
        })
    }

    // ----- expressions -----

    fn lambda(&self, decl: &Rc<FunDecl>, scope: &Rc<Scope>) -> Value {
        Value::Function(Rc::new(Closure {
            decl: decl.clone(),
            scope: scope.clone(),
            type_args: Vec::new(),
        }))
    }

    /// The value of the name `name`, found where the resolver said.
    #[inline]
    pub(super) fn variable(
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
            let spec = super::import_names::import_spec(name);
            return self.fail(pos, format!("module `{name}` is not imported: add `import \"{spec}\";` at the top of the spell"));
        }
        self.fail(pos, format!("unknown name `{name}`"))
    }

    pub(super) fn unary(&self, op: UnOp, v: Value, pos: Pos) -> Eval<Value> {
        match (op, &v) {
            (UnOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
            (UnOp::Neg, Value::Int(i)) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| self.fail(pos, "integer overflow in negation")),
            (UnOp::Neg, Value::Double(d)) => Ok(Value::Double(-d)),
            (UnOp::BitNot, Value::Int(i)) => Ok(Value::Int(!i)),
            _ => {
                let sym = match op {
                    UnOp::Not => "!",
                    UnOp::Neg => "-",
                    UnOp::BitNot => "~",
                };
                Err(self.fail(pos, format!("cannot apply `{sym}` to {}", v.type_name())))
            }
        }
    }

    pub(crate) fn binary(&self, op: BinOp, a: Value, b: Value, pos: Pos) -> Eval<Value> {
        methods::binary(op, &a, &b).map_err(|message| self.fail(pos, message))
    }

    // ----- assignment -----

    pub(super) fn assign_index_slow(
        &self,
        obj: &Value,
        i: &Value,
        op: Option<BinOp>,
        new: Value,
        (at, pos): (Pos, Pos),
    ) -> Eval<Value> {
        let new = match op {
            Some(op) => self.binary(op, self.index(obj, i, false, at)?, new, pos)?,
            None => new,
        };
        self.set_index(obj, i.clone(), new.clone(), at)?;
        Ok(new)
    }

    #[cold]
    pub(super) fn final_assigned(&self, name: &str, at: Pos) -> Flow {
        self.fail(at, format!("cannot assign to `{name}`: it is `final`"))
    }

    /// `name = new` or `name op= new` for a name bound by name, finding
    /// the binding once.
    pub(super) fn assign_var(
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

    pub(super) fn set_field(&self, obj: &Value, name: &str, value: Value, pos: Pos) -> Eval<()> {
        match obj {
            Value::Class(c) => {
                let mut statics = c.statics.borrow_mut();
                match statics.iter_mut().find(|(n, _)| &**n == name) {
                    Some(slot) => {
                        slot.1 = value;
                        Ok(())
                    }
                    None => Err(self.fail(
                        pos,
                        format!("object `{}` has no static field `{name}`", c.name),
                    )),
                }
            }
            Value::Object(o) if o.set(name, value) => Ok(()),
            Value::Object(o) => {
                Err(self.fail(pos, format!("`{}` has no field `{name}`", o.class.name)))
            }
            other => Err(self.fail(
                pos,
                format!("cannot set field `{name}` on {}", other.type_name()),
            )),
        }
    }

    fn set_index(&self, obj: &Value, index: Value, value: Value, pos: Pos) -> Eval<()> {
        match (obj, &index) {
            (Value::List(list), Value::Int(i)) => {
                let mut items = list.items.borrow_mut();
                let len = items.len();
                match usize::try_from(*i).ok().and_then(|i| items.get_mut(i)) {
                    Some(slot) => {
                        *slot = value;
                        Ok(())
                    }
                    None => Err(self.out_of_bound(
                        pos,
                        obj,
                        format!("index {i} out of range for a list of length {len}"),
                    )),
                }
            }
            (Value::Map(map), _) => {
                map.insert(index, value);
                Ok(())
            }
            _ => Err(self.fail(
                pos,
                format!(
                    "cannot assign to a subscript of {} with {}",
                    obj.type_name(),
                    index.type_name()
                ),
            )),
        }
    }

    // ----- access -----

    pub(crate) fn field(&self, v: &Value, name: &str, pos: Pos) -> Eval<Value> {
        match v {
            Value::Object(obj) => self.object_field(obj, v, name, pos),
            Value::Module(m) => m.functions.get(name).cloned().ok_or_else(|| {
                self.fail(pos, format!("module `{}` has no function `{name}`", m.name))
            }),
            Value::Class(class) => {
                match class.statics.borrow().iter().find(|(n, _)| &**n == name) {
                    Some((_, v)) => Ok(v.clone()),
                    None => self.static_method(class, name, pos),
                }
            }
            Value::Enum(e) => match e.cases.iter().position(|(n, _)| &**n == name) {
                Some(i) => Ok(Value::EnumCase(e.clone(), i)),
                None => Err(self.fail(pos, format!("enum `{}` has no case `{name}`", e.name))),
            },
            Value::EnumCase(e, i) if name == "value" => {
                Ok(e.cases.get(*i).map(|(_, v)| v.clone()).unwrap_or_default())
            }
            Value::EnumCase(e, i) if name == "name" => Ok(e
                .cases
                .get(*i)
                .map(|(n, _)| Value::Str(n.clone()))
                .unwrap_or_default()),
            other => Err(self.fail(pos, format!("{} has no field `{name}`", other.type_name()))),
        }
    }

    fn object_field(&self, obj: &Rc<Instance>, this: &Value, name: &str, pos: Pos) -> Eval<Value> {
        if let Some(v) = obj.get(name) {
            return Ok(v);
        }
        let method = obj
            .class
            .decl
            .as_ref()
            .and_then(|d| d.methods.iter().find(|m| &*m.name == name && !m.is_static));
        match (method, &obj.class.scope) {
            (Some(decl), Some(class_scope)) => {
                let scope = Scope::new(Some(class_scope.clone()));
                scope.define(this_name(), this.clone(), Mutability::Final);
                Ok(Value::Function(Rc::new(Closure {
                    decl: decl.clone(),
                    scope,
                    type_args: Vec::new(),
                })))
            }
            _ => Err(self.fail(
                pos,
                format!("`{}` has no field or method `{name}`", obj.class.name),
            )),
        }
    }

    fn static_method(&self, class: &Class, name: &str, pos: Pos) -> Eval<Value> {
        let method = class
            .decl
            .as_ref()
            .and_then(|d| d.methods.iter().find(|m| &*m.name == name && m.is_static));
        match (method, &class.scope) {
            (Some(decl), Some(scope)) => Ok(Value::Function(Rc::new(Closure {
                decl: decl.clone(),
                scope: scope.clone(),
                type_args: Vec::new(),
            }))),
            _ => Err(self.fail(
                pos,
                format!("object `{}` has no static method `{name}`", class.name),
            )),
        }
    }

    pub(super) fn index(&self, v: &Value, i: &Value, checked: bool, pos: Pos) -> Eval<Value> {
        match methods::index(v, i) {
            Ok(Some(found)) => Ok(found),
            Ok(None) if checked => Ok(Value::Null),
            Ok(None) => Err(self.out_of_bound(pos, v, methods::out_of_range(v, i))),
            Err(message) => Err(self.fail(pos, message)),
        }
    }

    /// An index out of range throws, as upstream's does, a catchable
    /// `"Out of bound list access."` (or `str`); uncaught, it still shows
    /// the located MGS1020 error that names the index and the length.
    fn out_of_bound(&self, pos: Pos, subject: &Value, detail: String) -> Flow {
        let what = match subject {
            Value::Str(_) | Value::Bytes(_) => "str",
            _ => "list",
        };
        let diagnostic = self.runtime(pos, detail).to_diagnostic();
        Flow::Throw(Box::new(Thrown {
            value: Value::str(format!("Out of bound {what} access.")),
            pos,
            file: self.file.clone(),
            diagnostic: Some(Box::new(diagnostic)),
            refused: None,
        }))
    }

    /// `gc\collect()`: runs the queued `collect` methods, then lets go of
    /// the frames and argument lists kept for reuse, so `allocated()`
    /// after it counts what the spell holds.
    fn collect_garbage(&mut self, pos: Pos) -> Eval<Value> {
        self.run_finalizers(pos)?;
        self.spare = Spare::default();
        self.flat_frames = Vec::new();
        Ok(Value::Null)
    }

    pub(super) fn field_default(
        &mut self,
        f: &FieldDecl,
        scope: &Rc<Scope>,
        object: &str,
        pos: Pos,
    ) -> Eval<Value> {
        match (&f.default, &f.ty) {
            (Some(e), _) => self.field_default_value(f, e, scope),
            (None, Type::Optional(_)) => Ok(Value::Null),
            (None, _) => Err(self.fail(
                pos,
                format!("missing field `{}` in `{object}{{…}}`", f.name),
            )),
        }
    }

    // ----- calls -----

    /// `decl`'s compiled form; `None` only for a tree never resolved.
    #[inline]
    pub(super) fn compiled_of<'d>(
        &self,
        decl: &'d FunDecl,
    ) -> Option<&'d super::compile::Function> {
        super::compile::compiled(decl)
    }

    /// An empty list for the positional arguments of a built-in method.
    pub(super) fn spare_positional(&mut self) -> Vec<Value> {
        self.scratch.positional.pop().unwrap_or_default()
    }

    /// An empty argument list for a call by the general path.
    pub(super) fn spare_args(&mut self) -> Args {
        self.spare.args.pop().unwrap_or_default()
    }

    /// Keeps an argument list of [`Interpreter::positional_arguments`],
    /// emptied, for the next method call.
    pub(super) fn give_back_positional(&mut self, mut values: Vec<Value>) {
        if self.scratch.positional.len() < SPARE_LIMIT {
            values.clear();
            self.scratch.positional.push(values);
        }
    }

    pub(super) fn builtin_method(
        &mut self,
        receiver: &Value,
        name: &str,
        args: Args,
        pos: Pos,
    ) -> Eval<Value> {
        let values: Vec<Value> = args.into_iter().map(|(_, v)| v).collect();
        methods::call_method(self, receiver, name, &values, pos)
    }

    /// Calls a Buzz function, a native function, or an enum (by value).
    pub(crate) fn call_value(&mut self, f: &Value, args: Args, pos: Pos) -> Eval<Value> {
        match f {
            Value::Function(closure) if closure.decl.frame.get().method => {
                // A method taken from its object (`obj.method`): `this` is
                // bound by name in the closure's scope, the object's
                // scope above it.
                let this = closure.scope.vars.borrow().first().map(|s| s.value.clone());
                let parent = closure.scope.parent.as_ref().unwrap_or(&closure.scope);
                let type_args = &closure.type_args;
                self.call_function(&closure.decl, parent, this, type_args, args, pos)
            }
            Value::Function(closure) => {
                let type_args = &closure.type_args;
                self.call_function(&closure.decl, &closure.scope, None, type_args, args, pos)
            }
            Value::Native(native) => self.call_native(native, args, pos),
            Value::Enum(e) => {
                let wanted = args.first().map(|(_, v)| v.clone()).unwrap_or_default();
                let found = e.cases.iter().position(|(_, v)| v.equals(&wanted, 0));
                Ok(found
                    .map(|i| Value::EnumCase(e.clone(), i))
                    .unwrap_or_default())
            }
            other => Err(self.fail(
                pos,
                format!("cannot call a value of type {}", other.type_name()),
            )),
        }
    }

    /// Calls the Buzz function `decl` in a frame under `parent` (what it
    /// closes over), with `this` bound first for a method.
    pub(super) fn call_function(
        &mut self,
        decl: &FunDecl,
        parent: &Rc<Scope>,
        this: Option<Value>,
        type_args: &[Type],
        args: Args,
        pos: Pos,
    ) -> Eval<Value> {
        if self.calls >= MAX_CALL_DEPTH {
            return Err(self.call_overflow(decl, pos));
        }
        self.enter_call(pos)?;
        self.calls += 1;
        let result = self.call_function_inner(decl, parent, this, type_args, args, pos);
        self.calls -= 1;
        self.depth -= 1;
        result
    }

    #[cold]
    #[inline(never)]
    pub(super) fn call_overflow(&self, decl: &FunDecl, pos: Pos) -> Flow {
        self.fail(pos, format!(
            "call stack overflow: more than {MAX_CALL_DEPTH} nested calls (runaway recursion in `{}`?)",
            decl.name
        ))
    }

    fn call_function_inner(
        &mut self,
        decl: &FunDecl,
        parent: &Rc<Scope>,
        this: Option<Value>,
        type_args: &[Type],
        args: Args,
        pos: Pos,
    ) -> Eval<Value> {
        if type_args.is_empty()
            && args.len() == decl.params.len()
            && args.iter().all(|(n, _)| n.is_none())
        {
            if let Some(f) = self.compiled_of(decl) {
                return self.general_call_compiled((decl, f), this, args, parent, pos);
            }
        }
        let spare = self.spare.frames.pop();
        let frame = decl.frame.get();
        let capacity = (frame.size as usize).max(decl.params.len() + 1);
        let scope = Scope::reuse(spare, parent.clone(), capacity);
        if let Some(this) = this {
            if frame.resolved {
                scope.set(0, this);
            } else {
                scope.push(this_name(), this, Mutability::Final);
            }
        }
        if !type_args.is_empty() {
            Self::bind_type_args(decl, type_args, &scope);
        }
        let result = self.run_body(decl, &scope, args, pos);
        if self.spare.frames.len() < SPARE_FRAMES {
            self.spare.frames.extend(Scope::recycle(scope));
        }
        result
    }

    fn run_body(&mut self, decl: &FunDecl, scope: &Rc<Scope>, args: Args, pos: Pos) -> Eval<Value> {
        // Argument errors point at the call, in the caller's file.
        self.bind_params(decl, args, scope, pos)?;
        self.run_frame(decl, scope, pos)
    }

    /// Runs `decl`'s body in its bound frame `scope`: what it returns.
    fn run_frame(&mut self, decl: &FunDecl, scope: &Rc<Scope>, pos: Pos) -> Eval<Value> {
        match self.compiled_of(decl) {
            Some(f) => self.frame_call_compiled((decl, f), scope, pos),
            None => Err(self.not_lowered(pos)),
        }
    }

    /// The default value of `decl`'s parameter `i`, read in the call's
    /// frame `scope` and the file it was written in.
    fn default_value(&mut self, decl: &FunDecl, i: usize, scope: &Rc<Scope>) -> Eval<Value> {
        let caller = std::mem::replace(&mut self.file, decl.file.clone());
        let value = self.param_default_value(decl, i, scope);
        self.file = caller;
        value
    }

    fn bind_params(
        &mut self,
        decl: &FunDecl,
        mut args: Args,
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<()> {
        if args.len() == decl.params.len() && args.iter().all(|(name, _)| name.is_none()) {
            // Every parameter given in order: the common call.
            let frame = decl.frame.get();
            for (i, (param, (_, value))) in decl.params.iter().zip(args.drain(..)).enumerate() {
                let value = self.conform_param(decl, param, value, pos)?;
                if frame.resolved {
                    scope.set(frame.method as u32 + i as u32, value);
                } else {
                    scope.push(param.name.clone(), value, Mutability::Final);
                }
            }
            if self.spare.args.len() < SPARE_LIMIT {
                self.spare.args.push(args);
            }
            return Ok(());
        }
        let mut slots: Vec<Option<Value>> = vec![None; decl.params.len()];
        let mut next = 0;
        for (name, value) in args {
            let i = match &name {
                Some(n) => decl
                    .params
                    .iter()
                    .position(|p| p.name == *n)
                    .ok_or_else(|| {
                        self.fail(pos, format!("`{}` has no parameter `{n}`", decl.name))
                    })?,
                None => next,
            };
            let Some(slot) = slots.get_mut(i) else {
                return Err(self.fail(
                    pos,
                    format!(
                        "`{}` takes {} argument(s), got more",
                        decl.name,
                        decl.params.len()
                    ),
                ));
            };
            *slot = Some(value);
            next = i + 1;
        }
        let frame = decl.frame.get();
        for (i, (param, slot)) in decl.params.iter().zip(slots).enumerate() {
            let value = match (slot, &param.default, &param.ty) {
                (Some(v), _, _) => v,
                (None, Some(_), _) => self.default_value(decl, i, scope)?,
                (None, None, Type::Optional(_)) => Value::Null,
                (None, None, _) => {
                    return Err(self.fail(
                        pos,
                        format!(
                            "missing argument `{}` in call to `{}`",
                            param.name, decl.name
                        ),
                    ))
                }
            };
            let value = self.conform_param(decl, param, value, pos)?;
            if frame.resolved {
                scope.set(frame.method as u32 + i as u32, value);
            } else {
                scope.define(param.name.clone(), value, Mutability::Final);
            }
        }
        Ok(())
    }

    pub(super) fn conform_param(
        &mut self,
        decl: &FunDecl,
        param: &Param,
        value: Value,
        pos: Pos,
    ) -> Eval<Value> {
        let what = || format!("parameter `{}` of `{}`", param.name, decl.name);
        self.conform_with(&param.ty, value, what, pos)
    }

    fn call_native(&mut self, native: &NativeFunction, mut args: Args, pos: Pos) -> Eval<Value> {
        let fill = |it: &mut Self, names: &mut Vec<_>, values: &mut Vec<_>| {
            for (name, value) in args.drain(..) {
                names.push(name);
                values.push(value);
            }
            if it.spare.args.len() < SPARE_LIMIT {
                it.spare.args.push(args);
            }
            Ok(())
        };
        self.call_native_with(native, pos, fill)
    }

    /// Calls `native` with the arguments `fill` puts in the names and
    /// values it is given (the compiled path evaluates them straight there).
    #[inline]
    pub(super) fn call_native_with(
        &mut self,
        native: &NativeFunction,
        pos: Pos,
        fill: impl FnOnce(&mut Self, &mut Vec<Option<Rc<str>>>, &mut Vec<Value>) -> Eval<()>,
    ) -> Eval<Value> {
        // The scratch space of the last call: no allocation per call in
        // the common case (a native that somehow re-entered, or one called
        // while the arguments are evaluated, finds it empty and works from
        // fresh vectors).
        let mut scratch = std::mem::take(&mut self.scratch);
        if let Err(flow) = fill(self, &mut scratch.names, &mut scratch.values) {
            scratch.names.clear();
            scratch.values.clear();
            self.scratch = scratch;
            return Err(flow);
        }
        scratch.locate(&self.file, pos);
        let mut call = NativeCall {
            args: &scratch.values,
            names: &scratch.names,
            site: &scratch.site,
            function: &native.label,
            out: &mut *self.out,
            script_args: &self.args,
            fiber: &self.fiber,
            exit: ExitRequest::Continue,
        };
        let result = (native.f)(&mut call);
        let exit = call.exit;
        let refused = match &result {
            Ok(_) => None,
            Err(raise) => refused_slot(raise, &scratch.values),
        };
        scratch.names.clear();
        scratch.values.clear();
        self.scratch = scratch;
        match exit {
            ExitRequest::Continue => result.map_err(|raise| {
                let mut flow = self.raised(raise, pos);
                if let Flow::Throw(t) = &mut flow {
                    t.refused = refused;
                }
                flow
            }),
            ExitRequest::Exit(status) => Err(Flow::Exit(status)),
            ExitRequest::Collect => self.collect_garbage(pos),
        }
    }

    /// A native's raise, thrown at `pos`.
    pub(super) fn raised(&self, raise: super::native::Raise, pos: Pos) -> Flow {
        Flow::Throw(Box::new(Thrown {
            value: raise.value,
            pos,
            file: self.file.clone(),
            diagnostic: raise.diagnostic,
            refused: None,
        }))
    }
}

/// Which part of a native call its raise is about, as a [`CallSpans`]
/// slot: the argument that holds the path the diagnostic names (a `str`,
/// or a list of them such as `sh.run`'s command), else the callee.
#[cold]
fn refused_slot(raise: &super::native::Raise, values: &[Value]) -> Option<u32> {
    let path = raise.diagnostic.as_ref()?.path.as_deref()?;
    let holds = |v: &Value| match v {
        Value::List(list) => list.items.borrow().iter().any(|i| i.as_str() == Some(path)),
        other => other.as_str() == Some(path),
    };
    let at = values.iter().position(holds).map_or(0, |i| i + 1);
    Some(u32::try_from(at).unwrap_or(0))
}

/// Where a call's parts are written: slot 0 its callee, slot `i + 1`
/// its argument `i`, each `(start, end)`.
pub(crate) trait CallSpans {
    fn slot(&self, i: usize) -> Option<(Pos, Pos)>;
}

impl CallSpans for (&Expr, &[Arg]) {
    fn slot(&self, i: usize) -> Option<(Pos, Pos)> {
        let e = match i {
            0 => self.0,
            i => &self.1.get(i - 1)?.value,
        };
        Some((e.start(), e.end))
    }
}

impl Interpreter {
    /// A native's refusal raised by the call at `pos`, placed on the part
    /// of the call `spans` says it is about, so its diagnostic underlines
    /// that argument (or the callee) as written. One raised inside a
    /// library magus writes in Buzz (`buzz:io`'s `File.open`) is placed
    /// on the callee of the spell's call into it, not in the library's
    /// source. Anything else passes.
    #[cold]
    pub(crate) fn place_refused(&self, flow: Flow, pos: Pos, spans: &dyn CallSpans) -> Flow {
        let Flow::Throw(mut t) = flow else {
            return flow;
        };
        if is_library(&self.file) {
            return Flow::Throw(t);
        }
        let slot = match t.refused.take() {
            _ if is_library(&t.file) => Some(0),
            slot => slot.filter(|_| t.pos == pos),
        };
        let span = slot.and_then(|s| spans.slot(s as usize));
        if let (Some((start, end)), Some(d)) = (span, t.diagnostic.as_mut()) {
            if d.location.is_none() {
                d.location = Some(crate::diag::Location {
                    kind: crate::diag::SourceKind::Spell,
                    file: self.file.to_path_buf(),
                    line: start.line,
                    column: start.column,
                });
                d.span = span_width(start, end);
            }
        }
        Flow::Throw(t)
    }
}

/// Whether `file` is a library magus writes in Buzz (`<buzz:io>`), whose
/// source the user never sees.
fn is_library(file: &Path) -> bool {
    file.as_os_str().as_encoded_bytes().starts_with(b"<")
}

/// Characters from `start` to `end` on one line; an expression that
/// goes on to later lines is underlined to the end of its first (the
/// renderer stops at the line's end).
fn span_width(start: Pos, end: Pos) -> u32 {
    if end.line == start.line {
        end.column.saturating_sub(start.column).max(1)
    } else {
        u32::MAX
    }
}

pub(super) fn module_object(module: NativeModule) -> ModuleObj {
    let name: Rc<str> = Rc::from(module.name.as_str());
    let functions = module
        .functions
        .into_iter()
        .map(|(fname, f)| {
            let native = NativeFunction {
                label: Rc::from(format!("{name}.{fname}")),
                module: name.clone(),
                name: Rc::from(fname.as_str()),
                f,
            };
            (fname, Value::Native(Rc::new(native)))
        })
        .chain(module.values)
        .collect();
    ModuleObj {
        name,
        functions,
        namespace: Vec::new(),
    }
}

/// The name `this`, the lexer's own (so found by pointer), not a new
/// string at every method call.
fn this_name() -> Rc<str> {
    thread_local! {
        static THIS: Rc<str> = super::syntax::lexer::intern("this");
    }
    THIS.with(Rc::clone)
}

/// The method `name` of an instance, with the scope it closes over: what
/// `receiver.name(…)` calls, when `name` is not a field holding a function.
///
/// `site` holds the class id and method index this site found last: a
/// declared class's instances all have the fields of its declaration, so
/// what `name` means is the same for each of them.
pub(super) fn method_of(
    receiver: &Value,
    name: &str,
    site: &MemberCache,
) -> Option<(Rc<FunDecl>, Rc<Scope>)> {
    let Value::Object(obj) = receiver else {
        return None;
    };
    let class = &obj.class;
    let decl = class.decl.as_ref()?;
    if let Some(at) = site.method(class.id) {
        return Some((decl.methods.get(at)?.clone(), class.scope.clone()?));
    }
    if obj.fields.borrow().iter().any(|(n, _)| same_name(n, name)) {
        return None;
    }
    let at = decl
        .methods
        .iter()
        .position(|m| &*m.name == name && !m.is_static)?;
    site.set_method(class.id, at);
    Some((decl.methods.get(at)?.clone(), class.scope.clone()?))
}

/// The function a direct call runs: its declaration, the scope it closes
/// over, and `this` for a method.
pub(super) struct Callee<'a> {
    pub(super) decl: &'a FunDecl,
    pub(super) parent: &'a Rc<Scope>,
    pub(super) this: Option<Value>,
}

/// Stores a declaration's value where the resolver put it: its slot in
/// `scope`, or by name (top-level names, and trees never resolved).
pub(super) fn bind(
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
pub(super) fn global_function(scope: &Rc<Scope>, name: &str, hint: u32) -> Option<Rc<Closure>> {
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

pub(super) fn lookup(scope: &Rc<Scope>, name: &str) -> Option<Value> {
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

/// `x op y` for the comparison operators on two ints.
#[inline]
pub(super) fn int_compare(op: BinOp, x: i64, y: i64) -> Option<bool> {
    Some(match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        _ => return None,
    })
}

/// `x op y` on two ints where it cannot fail; `None` sends the operation
/// (overflow, division, shifts) to [`methods::binary`] and its errors.
#[inline]
pub(super) fn int_fast(op: BinOp, x: i64, y: i64) -> Option<Value> {
    Some(match op {
        BinOp::Add => Value::Int(x.checked_add(y)?),
        BinOp::Sub => Value::Int(x.checked_sub(y)?),
        BinOp::Mul => Value::Int(x.checked_mul(y)?),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Gt => Value::Bool(x > y),
        BinOp::Ge => Value::Bool(x >= y),
        BinOp::Eq => Value::Bool(x == y),
        BinOp::Ne => Value::Bool(x != y),
        _ => return None,
    })
}

/// `x op y` on two doubles for the arithmetic operators, as
/// [`methods::binary`] computes them.
#[inline]
pub(super) fn double_fast(op: BinOp, x: f64, y: f64) -> Option<Value> {
    Some(Value::Double(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Rem => methods::double_rem(x, y),
        _ => return None,
    }))
}

fn exit_status(v: &Value) -> i32 {
    match v {
        Value::Int(i) => i32::try_from(*i).unwrap_or(1),
        _ => 0,
    }
}

/// Whether `value` is already what `ty` asks for with nothing to infer,
/// widen or record: `null` for an optional, an instance of the named
/// object type (its name found by pointer, as the lexer interns both).
#[inline]
pub(super) fn plainly_conforms(ty: &Type, value: &Value) -> bool {
    let mut ty = ty;
    let mut optional = false;
    let named = loop {
        match ty {
            Type::Named(n) => break n,
            Type::Optional(inner) => {
                optional = true;
                ty = inner;
            }
            Type::Mut(inner) => ty = inner,
            Type::Any => return true,
            _ => return optional && value.is_null(),
        }
    };
    match value {
        Value::Null => optional,
        Value::Int(_) => &**named == "int",
        Value::Double(_) => &**named == "double",
        Value::Bool(_) => &**named == "bool",
        Value::Str(_) | Value::Bytes(_) => &**named == "str",
        Value::Object(o) => {
            o.class.decl.is_some()
                && o.class.name.as_ptr() == named.as_ptr()
                && o.class.name.len() == named.len()
        }
        _ => false,
    }
}

fn is_double(ty: &Type) -> bool {
    match ty {
        Type::Named(n) => &**n == "double",
        Type::Optional(inner) => is_double(inner),
        _ => false,
    }
}

/// Loose type test used by `is`, `catch (e: T)` and declarations: the outer
/// shape is checked, element types are not.
pub(crate) fn type_matches(ty: &Type, v: &Value) -> bool {
    match ty {
        Type::Any => true,
        Type::Void => v.is_null(),
        Type::Optional(inner) => v.is_null() || type_matches(inner, v),
        Type::List(_) => matches!(v, Value::List(_)),
        Type::Map(..) => matches!(v, Value::Map(_)),
        Type::Function => matches!(v, Value::Function(_) | Value::Native(_)),
        Type::AnonObject => matches!(v, Value::Object(_)),
        Type::Mut(inner) => type_matches(inner, v),
        Type::Named(name) => named_matches(name, v),
    }
}

/// The shape of a list or map value.
pub(super) fn shape_of(v: &Value) -> Option<&Shape> {
    match v {
        Value::List(l) => Some(&l.shape),
        Value::Map(m) => Some(&m.shape),
        _ => None,
    }
}

/// A declaration's type becomes a container's `typeof` when the container
/// did not know its own (an empty literal) or knew only `any`.
fn record_shape(ty: &Type, v: &Value) {
    let Some(shape) = shape_of(v) else { return };
    let declared = match ty {
        Type::Optional(inner) => inner,
        other => other,
    };
    let declared = match declared {
        Type::Mut(inner) => inner,
        other => other,
    };
    if !matches!(declared, Type::List(_) | Type::Map(..)) || mentions_any_or_unknown(declared) {
        return;
    }
    let mut recorded = shape.ty.borrow_mut();
    if recorded.as_ref().is_none_or(mentions_any_or_unknown) {
        *recorded = Some(declared.clone());
    }
}

fn mentions_any_or_unknown(t: &Type) -> bool {
    match t {
        Type::Any => true,
        Type::List(e) | Type::Mut(e) | Type::Optional(e) => mentions_any_or_unknown(e),
        Type::Map(k, v) => mentions_any_or_unknown(k) || mentions_any_or_unknown(v),
        _ => false,
    }
}

/// The one scalar type all `items` share, if any.
pub(super) fn common_type<'a>(mut items: impl Iterator<Item = &'a Value>) -> Option<Type> {
    let first = scalar_type(items.next()?)?;
    items
        .all(|v| scalar_type(v) == Some(first))
        .then(|| Type::Named(Rc::from(first)))
}

fn scalar_type(v: &Value) -> Option<&'static str> {
    Some(match v {
        Value::Int(_) => "int",
        Value::Double(_) => "double",
        Value::Str(_) | Value::Bytes(_) => "str",
        Value::Bool(_) => "bool",
        _ => return None,
    })
}

fn named_matches(name: &str, v: &Value) -> bool {
    match name {
        "int" => matches!(v, Value::Int(_)),
        "double" => matches!(v, Value::Double(_)),
        "str" => matches!(v, Value::Str(_) | Value::Bytes(_)),
        "bool" => matches!(v, Value::Bool(_)),
        "rg" => matches!(v, Value::Range(..)),
        "obj" => matches!(v, Value::Object(_)),
        "type" => matches!(v, Value::Class(_) | Value::Enum(_) | Value::Type(_)),
        "pat" => matches!(v, Value::Pattern(_)),
        "function" => matches!(v, Value::Function(_) | Value::Native(_)),
        "fib" => matches!(v, Value::Fiber(_)),
        "ud" => matches!(v, Value::Ud(_)),
        _ => match v {
            Value::Object(o) => &*o.class.name == name,
            Value::EnumCase(e, _) => &*e.name == name,
            _ => false,
        },
    }
}

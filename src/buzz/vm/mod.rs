//! The interpreter that runs the executable form (`super::lower`): the
//! run's state (modules, types, files, fibers, the pools that spare a
//! call its allocations) and its entry points, here; the running of the
//! form ([`exec`], the dispatch loop of flat bodies [`dispatch`],
//! [`extra`], [`declare`], [`defaults`], [`accessor`]); values
//! ([`value`]), how evaluation stops going forward ([`flow`]), the memory
//! budget ([`heap`]), the interpreter's thread ([`stack`]), fibers'
//! objects ([`fiber`]; [`fiber_run`] runs them) and the interface to
//! natives ([`native`]); and the helpers beside this file, each owning one
//! part of the run: [`limits`] and [`budgets`] (depth, stack, memory,
//! steps), [`errors`],
//! [`top_level`] (a file's declarations and `main`), [`calls`],
//! [`fields`], [`names`], [`conform`] (declared types), [`ops`],
//! [`imports`], [`lang`], [`generics`], [`finalize`] and [`testing`].
//!
//! It reaches the outside world only through the native modules it is given.

pub(in crate::buzz) mod accessor;
mod budgets;
pub(in crate::buzz) mod calls;
pub(in crate::buzz) mod conform;
pub(in crate::buzz) mod declare;
pub(in crate::buzz) mod defaults;
mod dispatch;
mod errors;
mod exec;
mod extra;
pub(in crate::buzz) mod fiber;
mod fiber_run;
pub(in crate::buzz) mod fields;
mod finalize;
pub(in crate::buzz) mod flow;
mod generics;
pub(crate) mod heap;
pub(in crate::buzz) mod imports;
mod lang;
pub(in crate::buzz) mod limits;
pub(in crate::buzz) mod names;
pub(in crate::buzz) mod native;
pub(in crate::buzz) mod object;
pub(in crate::buzz) mod ops;
pub(crate) mod stack;
pub(in crate::buzz) mod testing;
mod top_level;
pub(in crate::buzz) mod value;

#[cfg(all(test, unix))]
mod data_tests;
#[cfg(all(test, unix))]
mod tests;

pub(crate) use flow::{Args, Eval, Flow, Stop, Thrown};

use calls::module_object;
use limits::{stack_address, STACK_BUDGET};

use self::native::NativeModule;
use self::value::*;
use crate::buzz::error::{BuzzError, CallSite};
use crate::buzz::lib::std_module::std_module;
use crate::buzz::lib::BUILTIN_LIBRARIES;
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

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
    pub(super) loader: Option<self::native::SourceLoader>,
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
    pub(super) fiber: self::fiber::FiberSelf,
    /// Fibers alive now, across every fiber's interpreter.
    pub(super) live_fibers: Rc<std::cell::Cell<usize>>,
    /// Finished call frames and argument lists kept for the next calls, so
    /// a call allocates nothing in the common case.
    spare: Spare,
    /// Room for the next calls' arguments.
    scratch: Scratch,
    /// Finished flat frames of compiled functions (see `super::lower`).
    pub(super) flat_frames: Vec<Vec<Value>>,
    /// The value of a `return` on its way out of a tree statement, while
    /// its [`Flow`] (which carries nothing, see [`Flow::returning`])
    /// unwinds to the call it leaves.
    pub(super) returning: Value,
    /// The stop of an evaluation that returned `None` (`exec::Got`),
    /// between its return and its caller's taking it back.
    pub(super) parked: Flow,
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
            fiber: self::fiber::FiberSelf::Main(self::fiber::Fiber::main()),
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
            returning: Value::Null,
            parked: Flow::returning(),
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
    pub fn with_loader(mut self, loader: self::native::SourceLoader) -> Interpreter {
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
        self::value::finalizers::discard();
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
            stack_budget: super::stack::stack_budget(self::fiber::FIBER_STACK),
            fiber: self::fiber::FiberSelf::Main(self::fiber::Fiber::main()),
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
            returning: Value::Null,
            parked: Flow::returning(),
            steps: self.steps.clone(),
            step_budget: self.step_budget,
        }
    }

    /// Measures the stack budget from here: for a fiber's body, on its
    /// own stack.
    pub(super) fn begin_on_this_stack(&mut self) {
        self.stack_base = stack_address();
    }

    /// Turns how a run ended into its exit status or error.
    pub(super) fn finish(&self, outcome: Eval<i32>) -> Result<i32, BuzzError> {
        match outcome.map_err(Flow::into_stop) {
            Ok(status) | Err(Stop::Exit(status)) => Ok(status),
            Err(Stop::Error(e)) => Err(*e),
            Err(Stop::Throw(t)) => Err(self.uncaught(*t)),
            Err(Stop::Return) => Ok(0),
            Err(Stop::Break(_) | Stop::Continue(_) | Stop::Out(_)) => Err(self.runtime(
                Pos::default(),
                "`break`, `continue` or `out` outside a loop or block",
            )),
        }
    }

    /// A block's scope under `parent` (a level of a function whose levels
    /// are scopes), made from a finished frame when there is one, so that
    /// it costs no allocation; give it back with
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

    /// An empty list for the positional arguments of a built-in method.
    pub(super) fn spare_positional(&mut self) -> Vec<Value> {
        self.scratch.positional.pop().unwrap_or_default()
    }

    /// An empty argument list for a call by the general path.
    pub(super) fn spare_args(&mut self) -> Args {
        self.spare.args.pop().unwrap_or_default()
    }

    /// Keeps an argument list of [`Interpreter::spare_positional`],
    /// emptied, for the next method call.
    pub(super) fn give_back_positional(&mut self, mut values: Vec<Value>) {
        if self.scratch.positional.len() < SPARE_LIMIT {
            values.clear();
            self.scratch.positional.push(values);
        }
    }
}

#[deny(missing_docs)] // re-exported by the crate: public API
impl Interpreter {
    /// Every native function a spell run by this interpreter could call,
    /// as `(module, function)` sorted: its built-in modules' (`std`,
    /// `math`, …) and those it was given. What an audit of its ways out
    /// must cover (see `tests/bindings_gate_coverage.rs`).
    pub fn native_functions(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = self
            .modules
            .values()
            .flat_map(|m| {
                m.functions
                    .iter()
                    .filter(|(_, v)| matches!(v, Value::Native(_)))
                    .map(|(f, _)| (m.name.to_string(), f.to_string()))
            })
            .collect();
        all.sort_unstable();
        all
    }
}

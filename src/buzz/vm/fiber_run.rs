//! Running fibers (`fiber.rs`): making one of a call, `resume`,
//! `resolve`, `yield`, and the coroutine body that makes the call on the
//! fiber's own stack with an interpreter of its own.

use super::fiber::*;
use super::value::Value;
use super::{Eval, Interpreter, Stop, Thrown};
use crate::buzz::syntax::lexer::Pos;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::RefCell;
use std::rc::{Rc, Weak};

/// How far one `resume` got.
enum Step {
    Yielded(Value),
    Returned(Value),
    AlreadyOver(Value),
}

impl Interpreter {
    /// A fiber of a call whose callee and arguments are evaluated.
    pub(super) fn make_fiber(&mut self, deferred: Deferred, pos: Pos) -> Eval<Value> {
        if self.live_fibers.get() >= MAX_FIBERS {
            return Err(self.fail(
                pos,
                format!("too many fibers: more than {MAX_FIBERS} alive at once"),
            ));
        }
        if let Some(over) = self.over_heap_budget(FIBER_STACK) {
            return Err(self.fail(pos, over));
        }
        let stack = DefaultStack::new(FIBER_STACK).map_err(|e| {
            self.fail(
                pos,
                format!("cannot make a fiber: no memory for its stack ({e})"),
            )
        })?;
        let child = self.fiber_child();
        let live = self.live_fibers.clone();
        live.set(live.get() + 1);
        super::heap::charge_reserved(FIBER_STACK);
        let fiber = Rc::new_cyclic(|me: &Weak<Fiber>| {
            let body = fiber_body(child, me.clone(), deferred, pos);
            Fiber {
                state: RefCell::new(State::Ready(Box::new(Coroutine::with_stack(stack, body)))),
                live: Some(live),
            }
        });
        Ok(Value::Fiber(fiber))
    }

    /// `resume` of `v`, the operand written at `at`.
    pub(super) fn resume_value(&mut self, v: Value, at: Pos, pos: Pos) -> Eval<Value> {
        let fiber = self.fiber_operand(v, at, "resume")?;
        match self.step(&fiber, false, pos)? {
            Step::Yielded(v) => Ok(v),
            Step::Returned(_) => Ok(Value::Null),
            Step::AlreadyOver(_) => Err(Stop::Throw(Box::new(Thrown {
                value: Value::str("Fiber is over"),
                pos,
                file: self.file.clone(),
                diagnostic: None,
                refused: None,
            }))
            .into()),
        }
    }

    /// `resolve` of `v`, the operand written at `at`.
    pub(super) fn resolve_value(&mut self, v: Value, at: Pos, pos: Pos) -> Eval<Value> {
        let fiber = self.fiber_operand(v, at, "resolve")?;
        loop {
            match self.step(&fiber, true, pos)? {
                Step::Yielded(_) => {}
                Step::Returned(v) | Step::AlreadyOver(v) => return Ok(v),
            }
        }
    }

    /// `yield value`: suspends this fiber until it is resumed. In the main
    /// fiber, or while the fiber is being resolved, the value is dismissed
    /// and evaluation goes on (upstream does the same).
    pub(super) fn yield_value(&mut self, value: Value) -> Value {
        let FiberSelf::Child(link) = &self.fiber else {
            return value;
        };
        if link.resolving {
            return value;
        }
        let yielder = link.yielder;
        let out = std::mem::replace(&mut self.out, Box::new(std::io::sink()));
        // SAFETY: `yielder` is the `&Yielder` corosensei passed to this
        // fiber's body (`fiber_body`), which owns this interpreter: the
        // interpreter, and so this pointer, never outlives the body's call,
        // during which the Yielder is valid. `yield_value` runs only on the
        // fiber's own stack (only the body's interpreter has a `Child`
        // link), which is where `suspend` must be called.
        let resumed = unsafe { &*yielder }.suspend(Suspend {
            value: value.clone(),
            out,
        });
        self.take_resume(resumed);
        value
    }

    /// Applies what the resumer handed over: its output, call depth and mode.
    fn take_resume(&mut self, resumed: Resume) {
        self.out = resumed.out;
        if let FiberSelf::Child(link) = &mut self.fiber {
            self.calls = self.calls - link.base_calls + resumed.calls;
            link.base_calls = resumed.calls;
            link.resolving = resumed.resolving;
        }
    }

    pub(super) fn fiber_foreach_item(
        &mut self,
        fiber: &Rc<Fiber>,
        pos: Pos,
    ) -> Eval<Option<Value>> {
        if fiber.is_over() {
            return Ok(None);
        }
        match self.step(fiber, false, pos)? {
            Step::Yielded(v) => Ok(Some(v)),
            Step::Returned(_) | Step::AlreadyOver(_) => Ok(None),
        }
    }

    fn fiber_operand(&mut self, v: Value, at: Pos, op: &str) -> Eval<Rc<Fiber>> {
        match v {
            Value::Fiber(f) => Ok(f),
            other => Err(self.fail(
                at,
                format!(
                    "`{op}` expects a fiber (made by `&f(…)`), got {}",
                    other.type_name()
                ),
            )),
        }
    }

    /// Runs `fiber` until it yields or ends.
    fn step(&mut self, fiber: &Rc<Fiber>, resolving: bool, pos: Pos) -> Eval<Step> {
        let state = fiber.state.replace(State::Running);
        let mut body = match state {
            State::Ready(body) => body,
            State::Over(v) => {
                fiber.state.replace(State::Over(v.clone()));
                return Ok(Step::AlreadyOver(v));
            }
            State::Main | State::Running => {
                fiber.state.replace(state);
                return Err(self.fail(
                    pos,
                    "this fiber is running: a fiber cannot resume itself or the fibers resuming it",
                ));
            }
        };
        let resume = Resume {
            out: std::mem::replace(&mut self.out, Box::new(std::io::sink())),
            calls: self.calls + 1,
            resolving,
        };
        match body.resume(resume) {
            CoroutineResult::Yield(suspended) => {
                self.out = suspended.out;
                fiber.state.replace(State::Ready(body));
                Ok(Step::Yielded(suspended.value))
            }
            CoroutineResult::Return(end) => {
                self.out = end.out;
                let value = end.result.as_ref().ok().cloned().unwrap_or_default();
                fiber.state.replace(State::Over(value));
                end.result.map(Step::Returned)
            }
        }
    }
}

/// The coroutine body of a fiber: `child` makes the deferred call on the
/// fiber's own stack.
fn fiber_body(
    mut child: Interpreter,
    me: Weak<Fiber>,
    call: Deferred,
    pos: Pos,
) -> impl FnOnce(&Yielder<Resume, Suspend>, Resume) -> End + 'static {
    move |yielder, first| {
        child.fiber = FiberSelf::Child(Link {
            me,
            yielder,
            base_calls: 0,
            resolving: false,
        });
        child.begin_on_this_stack();
        child.take_resume(first);
        let result = match call {
            Deferred::Value(f, args) => child.call_value(&f, args, pos),
            Deferred::Method(receiver, name, args) => {
                child.builtin_method(&receiver, &name, args, pos)
            }
        };
        let result = result.or_else(|flow| child.returned_value(flow));
        End {
            result,
            out: std::mem::replace(&mut child.out, Box::new(std::io::sink())),
        }
    }
}

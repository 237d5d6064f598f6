//! Fibers, as upstream Buzz has them: `&f(x)` makes a fiber of a call,
//! `resume` runs it to its next `yield`, `resolve` to its end, and `yield`
//! (however deep in ordinary calls) hands a value back to the resumer.
//!
//! This file holds a fiber's object, what a value of type `fib` is;
//! `fiber_run.rs` runs it. The compiled form keeps a Buzz call's state on the Rust stack, so a fiber
//! is a stackful coroutine (`corosensei`) on the same OS thread: no value
//! crosses a thread, and only one fiber runs at a time by construction.
//! Each fiber has an interpreter of its own (its own stack budget, depth
//! and file), sharing the spell's modules and types; the output travels
//! with control (handed over on `resume`, handed back on `yield`). Its
//! stack is reserved at [`FIBER_STACK`] bytes and charged at full size to
//! the memory budget while the fiber lives, and call depth counts across
//! the chain of resumers, so fibers are bound by the same limits as calls.

use super::flow::{Args, Eval};
use super::native::CurrentFiber;
use super::value::Value;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, Yielder};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::{Rc, Weak};

/// Stack reserved for each fiber; the kernel commits it only as touched.
pub(super) const FIBER_STACK: usize = 8 << 20;

/// Most fibers alive at once.
pub(super) const MAX_FIBERS: usize = 4096;

/// What a resumer hands a fiber.
pub(super) struct Resume {
    pub(super) out: Box<dyn Write>,
    /// Buzz calls already on the resumer's side of the chain.
    pub(super) calls: usize,
    /// `resolve`: yields are dismissed and the fiber runs to its end.
    pub(super) resolving: bool,
}

/// What a fiber hands back on `yield`.
pub(super) struct Suspend {
    pub(super) value: Value,
    pub(super) out: Box<dyn Write>,
}

/// What a fiber hands back when its call ends.
pub(super) struct End {
    pub(super) result: Eval<Value>,
    pub(super) out: Box<dyn Write>,
}

pub(super) type Body = Coroutine<Resume, Suspend, End, DefaultStack>;

/// A fiber value (`fib<T, Y>`).
pub struct Fiber {
    pub(super) state: RefCell<State>,
    /// The live-fiber count this fiber is part of (`None` for the main one).
    pub(super) live: Option<Rc<Cell<usize>>>,
}

pub(super) enum State {
    /// The spell's own, outermost fiber (`std\currentFiber().isMain()`).
    Main,
    /// Not started, or stopped at a `yield`.
    Ready(Box<Body>),
    /// Running now, or resuming another fiber.
    Running,
    /// Its call returned this (or threw, then `null`).
    Over(Value),
}

impl Fiber {
    pub(super) fn main() -> Rc<Fiber> {
        Rc::new(Fiber {
            state: RefCell::new(State::Main),
            live: None,
        })
    }

    pub(crate) fn is_main(&self) -> bool {
        matches!(*self.state.borrow(), State::Main)
    }

    pub(crate) fn is_over(&self) -> bool {
        matches!(*self.state.borrow(), State::Over(_))
    }
}

impl Drop for Fiber {
    fn drop(&mut self) {
        if let Some(live) = &self.live {
            live.set(live.get().saturating_sub(1));
            super::heap::release_reserved(FIBER_STACK);
        }
    }
}

impl std::fmt::Debug for Fiber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_main() {
            "main fiber"
        } else {
            "fiber"
        })
    }
}

/// Which fiber an interpreter runs, for `std\currentFiber()` and `yield`.
pub(crate) enum FiberSelf {
    Main(Rc<Fiber>),
    Child(Link),
}

/// A fiber's interpreter's tie to its coroutine.
pub(crate) struct Link {
    pub(super) me: Weak<Fiber>,
    /// The `Yielder` corosensei gave this fiber's body.
    pub(super) yielder: *const Yielder<Resume, Suspend>,
    /// The resumer's call depth when it last resumed this fiber.
    pub(super) base_calls: usize,
    pub(super) resolving: bool,
}

impl CurrentFiber for FiberSelf {
    fn value(&self) -> Value {
        match self {
            FiberSelf::Main(f) => Value::Fiber(f.clone()),
            FiberSelf::Child(link) => link.me.upgrade().map_or(Value::Null, Value::Fiber),
        }
    }
}

/// A call made into a fiber: what to call and with what.
pub(super) enum Deferred {
    Value(Value, Args),
    Method(Value, Rc<str>, Args),
}

//! Finalizers: an object's `collect` method, called once after the
//! object is freed, as upstream's collector calls it when it sweeps the
//! object. Values here are reference-counted, so an object is freed the
//! moment its last reference goes, often in the middle of a statement,
//! where Buzz code cannot run. So the freed object of a type that has a
//! `collect` method is queued (its fields moved to a new instance, which
//! `collect` gets as `this`) and the queue runs at safe points: when the
//! spell calls `gc\collect()`, when [`QUEUE_LIMIT`] objects wait and
//! another such object is made, and when `main` returns. An object still
//! referenced when the run ends (a global) is freed without its `collect`.
//! Types without a `collect` method pay one flag test per drop.

use super::interp::{Eval, Interpreter};
use super::syntax::lexer::Pos;
use super::value::{Instance, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

/// How many freed objects may wait for their `collect` before making
/// another object of such a type runs them.
pub(super) const QUEUE_LIMIT: usize = 4096;

thread_local! {
    /// Freed objects whose `collect` has not run yet.
    static PENDING: RefCell<Vec<Rc<Instance>>> = const { RefCell::new(Vec::new()) };
    /// The objects whose `collect` has run (by address): freed again,
    /// they are freed for good.
    static FINALIZED: RefCell<HashSet<usize>> = RefCell::new(HashSet::new());
    /// Set while the queue is discarded at the end of a run.
    static OFF: Cell<bool> = const { Cell::new(false) };
}

/// Called as `doomed` (of a type with a `collect` method) is dropped:
/// queues its fields in a new instance and returns true, unless its
/// `collect` has already run (or the run is over).
pub(super) fn queue(doomed: &mut Instance) -> bool {
    let address = doomed as *const Instance as usize;
    let done = FINALIZED
        .try_with(|f| f.borrow_mut().remove(&address))
        .unwrap_or(true);
    if done || OFF.try_with(Cell::get).unwrap_or(true) {
        return false;
    }
    // Built inside: once the thread's queue is gone, nothing is taken
    // and the object is freed as it stands.
    PENDING
        .try_with(|p| {
            let fields = std::mem::take(doomed.fields.get_mut());
            p.borrow_mut().push(Rc::new(Instance {
                class: doomed.class.clone(),
                fields: RefCell::new(fields),
            }));
        })
        .is_ok()
}

/// Whether enough freed objects wait that the next one made should run them.
pub(super) fn queue_is_full() -> bool {
    PENDING.with(|p| p.borrow().len() >= QUEUE_LIMIT)
}

/// Drops what waits without calling `collect`: the end of a run.
pub(super) fn discard() {
    OFF.with(|off| off.set(true));
    let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
    drop(pending);
    FINALIZED.with(|f| f.borrow_mut().clear());
    OFF.with(|off| off.set(false));
}

impl Interpreter {
    /// Calls `collect` on every queued object, and on those freed while
    /// it runs, at `pos` (the `gc\collect()` call, or the end of `main`).
    /// An error thrown by a `collect` stops the rest, which wait for the
    /// next safe point.
    pub(super) fn run_finalizers(&mut self, pos: Pos) -> Eval<()> {
        loop {
            let batch = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
            if batch.is_empty() {
                return Ok(());
            }
            let mut batch = batch.into_iter();
            while let Some(object) = batch.next() {
                FINALIZED.with(|f| f.borrow_mut().insert(Rc::as_ptr(&object) as usize));
                let this = Value::Object(object);
                let called = self
                    .field(&this, "collect", pos)
                    .and_then(|method| self.call_value(&method, Vec::new(), pos));
                if let Err(flow) = called {
                    PENDING.with(|p| p.borrow_mut().extend(batch));
                    return Err(flow);
                }
            }
        }
    }
}

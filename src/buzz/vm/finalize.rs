//! Finalizers: an object's `collect` method, called once after the
//! object is freed, as upstream's collector calls it when it sweeps the
//! object. Values here are reference-counted, so an object is freed the
//! moment its last reference goes, often in the middle of a statement,
//! where Buzz code cannot run. So the freed object of a type that has a
//! `collect` method is queued (counted again, the queue holding it;
//! `collect` gets it as `this`) and the queue runs at safe points: when the
//! spell calls `gc\collect()`, when `QUEUE_LIMIT` objects wait and
//! another such object is made, and when `main` returns. An object still
//! referenced when the run ends (a global) is freed without its `collect`.
//! Types without a `collect` method pay one flag test per drop.
//!
//! The queue itself is the value layer's (`value.rs`, beside the drop
//! that fills it), so that freeing a value needs nothing of the run; this
//! file only runs it, with the interpreter.

use super::value::{finalizers, Value};
use super::{Eval, Interpreter};
use crate::buzz::syntax::lexer::Pos;

impl Interpreter {
    /// Calls `collect` on every queued object, and on those freed while
    /// it runs, at `pos` (the `gc\collect()` call, or the end of `main`).
    /// An error thrown by a `collect` stops the rest, which wait for the
    /// next safe point.
    pub(super) fn run_finalizers(&mut self, pos: Pos) -> Eval<()> {
        loop {
            let batch = finalizers::take();
            if batch.is_empty() {
                return Ok(());
            }
            let mut batch = batch.into_iter();
            while let Some(object) = batch.next() {
                finalizers::mark_run(&object);
                let this = Value::Object(object);
                let called = self
                    .field(&this, "collect", pos)
                    .and_then(|method| self.call_value(&method, Vec::new(), pos));
                if let Err(flow) = called {
                    finalizers::put_back(batch);
                    return Err(flow);
                }
            }
        }
    }
}

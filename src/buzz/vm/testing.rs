//! `test "name" { }` blocks, run by `magus test` like `buzz --test`: the
//! spell's declarations run first, then each test in order, each in its own
//! scope; a test fails on the first uncaught error, located.

use super::value::Scope;
use super::{Flow, Interpreter, Stop};
use crate::buzz::error::BuzzError;
use crate::buzz::syntax::ast::{Program, StmtKind};
use std::io::Write;
use std::rc::Rc;

/// How one test ended.
#[derive(Debug)]
pub struct TestOutcome {
    pub name: String,
    /// `None` when it passed; else the failure, located.
    pub failure: Option<BuzzError>,
}

/// The names of `program`'s `test` blocks, in order.
pub(crate) fn test_names(program: &Program) -> impl Iterator<Item = &str> {
    program
        .statements
        .iter()
        .filter_map(|stmt| match &stmt.kind {
            StmtKind::Test { name, .. } => Some(&**name),
            _ => None,
        })
}

impl TestOutcome {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl Interpreter {
    /// Runs `program`'s top level, then each of its tests. An error in the
    /// top level (before any test) is the `Err`; an exit (`std.exit`,
    /// `os\exit`) in a test fails that test and stops the run.
    pub fn run_tests(&mut self, program: &Program) -> Result<Vec<TestOutcome>, BuzzError> {
        self.run_tests_where(program, |_| true)
    }

    /// [`Interpreter::run_tests`], running only the tests whose name
    /// `keep` accepts (the top level runs all the same).
    pub fn run_tests_where(
        &mut self,
        program: &Program,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<TestOutcome>, BuzzError> {
        self.prepare(program, Vec::new());
        let globals = Scope::new(None);
        let outcomes = self.run_tests_in(program, &globals, keep);
        self.clear_globals(&globals);
        let _ = self.out.flush();
        outcomes
    }

    /// The top level of `program` in `globals`, then its tests.
    fn run_tests_in(
        &mut self,
        program: &Program,
        globals: &Rc<Scope>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<TestOutcome>, BuzzError> {
        let top = self.run_declarations(program, globals);
        self.finish(top.map(|()| 0))?;
        let mut outcomes = Vec::new();
        for stmt in &program.statements {
            let StmtKind::Test { name, body } = &stmt.kind else {
                continue;
            };
            if !keep(name) {
                continue;
            }
            let ran = self.run_block(body, globals);
            if ran.as_ref().is_err_and(Flow::is_return) {
                // A test's own `return`: its value is nobody's.
                drop(std::mem::take(&mut self.returning));
            }
            let ran = ran.map_err(Flow::into_stop);
            let (result, exited) = match ran {
                Ok(()) | Err(Stop::Return) => (Ok(0), false),
                // The spell asked to stop (as `buzz:test`'s `summary` does
                // on a failed assertion): this test fails and none after
                // it runs.
                Err(Stop::Exit(status)) => {
                    let message = format!(
                        "test `{name}` called exit({status}); the tests after it did not run"
                    );
                    (
                        Err(Stop::Error(Box::new(self.runtime(stmt.pos, message))).into()),
                        true,
                    )
                }
                Err(other) => (Err(other.into()), false),
            };
            outcomes.push(TestOutcome {
                name: name.to_string(),
                failure: self.finish(result).err(),
            });
            if exited {
                break;
            }
        }
        Ok(outcomes)
    }
}

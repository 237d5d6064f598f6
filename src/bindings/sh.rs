//! The `sh` module: launching programs. The program is resolved on the
//! child's (scrubbed) `PATH` and checked by the gate before anything is
//! spawned; the child then starts in a nested Landlock domain with exactly
//! the session's environment.
//!
//! Child stderr is relayed through magus (and kept, bounded) so that a
//! kernel denial the child reports can be attributed to the sandbox.

mod attribute;

use super::errors::{raise_exec, raise_gate};
use super::fs::bind;
use super::Session;
use crate::buzz::{NativeModule, Raise, Value};
use crate::enforce::{ChildStdio, ConfinedChild, ConfinedCommand};
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::rc::Rc;

/// How much of a child's stderr is kept for attribution.
const STDERR_TAIL: usize = 64 * 1024;

/// The `sh` module bound to `session`.
pub fn module(session: &Rc<Session>) -> NativeModule {
    let m = NativeModule::new("sh");
    let m = bind(m, session, "run", |s, call| {
        let argv = call.arg_str_list(0)?;
        Ok(Value::Int(s.run_relayed(&argv)?.into()))
    });
    let m = bind(m, session, "shell", |s, call| {
        let argv = [
            "/bin/sh".to_string(),
            "-c".to_string(),
            call.arg_str(0)?.to_string(),
        ];
        Ok(Value::Int(s.run_relayed(&argv)?.into()))
    });
    let m = bind(m, session, "output", |s, call| {
        s.run_captured(&call.arg_str_list(0)?)
    });
    bind(m, session, "which", |s, call| {
        let found = s
            .gate()
            .resolve_program(call.arg_str(0)?, s.child_path().as_deref());
        let found = found
            .ok()
            .map(|p| Value::str(p.found.to_string_lossy().as_ref()));
        Ok(Value::optional(found))
    })
}

impl Session {
    /// Checks the program and starts it with the session's environment.
    fn spawn(
        &self,
        argv: &[String],
        stdout: ChildStdio,
        stderr: ChildStdio,
    ) -> Result<ConfinedChild, Raise> {
        let Some(program) = argv.first() else {
            return Err(Raise::type_error("sh: the command list is empty"));
        };
        let lookup = self
            .gate()
            .resolve_program(program, self.child_path().as_deref());
        let lookup = lookup.map_err(|e| raise_gate(e, self.home()))?;
        self.before_launch();
        let _ = std::io::stdout().flush();
        ConfinedCommand::new(&lookup.found)
            .args(&argv[1..])
            .env(self.child_env())
            .current_dir(self.gate().current_directory())
            .stdio(ChildStdio::Inherit, stdout, stderr)
            .spawn(self.domain())
            .map_err(|e| raise_exec(program, &e.to_string()))
    }

    /// `sh.run` and `sh.shell`: output streams live; stderr passes through
    /// magus so a sandbox denial can be explained afterwards.
    fn run_relayed(&self, argv: &[String]) -> Result<i32, Raise> {
        let mut child = self.spawn(argv, ChildStdio::Inherit, ChildStdio::Piped)?;
        // Only stderr is piped, so relaying it to its end before waiting
        // cannot deadlock; no thread, which a run at its
        // `sandbox.limits.processes` bound could not start.
        let tail = child.stderr.take().map(relay_stderr).unwrap_or_default();
        let status = child
            .wait()
            .map_err(|e| raise_exec(&argv[0], &e.to_string()))?;
        self.attribute_failure(status, &tail);
        Ok(status_code(status))
    }

    /// `sh.output`: captures stdout and stderr.
    fn run_captured(&self, argv: &[String]) -> Result<Value, Raise> {
        let child = self.spawn(argv, ChildStdio::Piped, ChildStdio::Piped)?;
        let output = child
            .wait_with_output()
            .map_err(|e| raise_exec(&argv[0], &e.to_string()))?;
        self.attribute_failure(output.status, &output.stderr);
        Ok(Value::record(
            "ExecResult",
            vec![
                ("status", Value::Int(status_code(output.status).into())),
                (
                    "stdout",
                    Value::str(String::from_utf8_lossy(&output.stdout).as_ref()),
                ),
                (
                    "stderr",
                    Value::str(String::from_utf8_lossy(&output.stderr).as_ref()),
                ),
            ],
        ))
    }

    fn attribute_failure(&self, status: ExitStatus, stderr: &[u8]) {
        if status.success() || !self.gate().is_on() {
            return;
        }
        for note in attribute::denials_in(self.gate(), stderr, self.home()) {
            self.emit(&note);
        }
    }
}

/// Copies the child's stderr to ours as it comes, keeping the last
/// [`STDERR_TAIL`] bytes.
fn relay_stderr(mut pipe: std::process::ChildStderr) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut buf = [0u8; 8192];
    while let Ok(n) = pipe.read(&mut buf) {
        if n == 0 {
            break;
        }
        let _ = std::io::stderr().write_all(&buf[..n]);
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > STDERR_TAIL {
            tail.drain(..tail.len() - STDERR_TAIL);
        }
    }
    tail
}

/// The exit status as a shell reports it: the code, or 128 + the signal.
fn status_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}

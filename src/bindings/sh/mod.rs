//! The `sh` module: launching programs. The program is resolved on the
//! child's (scrubbed) `PATH` and checked by the gate before anything is
//! spawned; the child then starts in a nested Landlock domain with exactly
//! the session's environment.
//!
//! A child's output reaches the user's terminal as a terminal (see
//! `stream`), while magus keeps its tail so that a kernel denial the child
//! reports can be attributed to the sandbox.

mod attribute;
mod stream;

pub(crate) use stream::prepare_terminal;

use super::errors::raise_exec;
use super::fs::bind;
use super::Session;
use crate::buzz::{CallSite, NativeModule, Raise, Value};
use crate::enforce::gate::GateError;
use crate::enforce::{ChildStdio, ConfinedChild, ConfinedCommand, EnforceError};
use std::io::Write;
use std::process::ExitStatus;
use std::rc::Rc;

/// The `sh` module bound to `session`.
pub(super) fn module(session: &Rc<Session>) -> NativeModule {
    let m = NativeModule::new("sh");
    let m = bind(m, session, "run", |s, call| {
        let argv = call.arg_str_list(0)?;
        Ok(Value::Int(s.run_relayed(&argv, call.site)?.into()))
    });
    let m = bind(m, session, "shell", |s, call| {
        let argv = [
            "/bin/sh".to_string(),
            "-c".to_string(),
            call.arg_str(0)?.to_string(),
        ];
        Ok(Value::Int(s.run_relayed(&argv, call.site)?.into()))
    });
    let m = bind(m, session, "output", |s, call| {
        s.run_captured(&call.arg_str_list(0)?, call.site)
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
        let lookup = lookup.map_err(|e| self.launch_denied(e))?;
        self.before_launch(&[&lookup.on_path, &lookup.found]);
        self.proxy_ready().map_err(|e| raise_exec(program, &e))?;
        let _ = std::io::stdout().flush();
        ConfinedCommand::new(&lookup.found)
            .args(&argv[1..])
            .env(self.child_env())
            .current_dir(self.gate().current_directory())
            .stdio(ChildStdio::Inherit, stdout, stderr)
            .spawn(self.domain())
            .map_err(|e| raise_exec(program, &launch_error(&e, self.gate().policy().limits())))
    }

    /// A refused launch, said as [`Session::denial_diagnostic`] says it.
    fn launch_denied(&self, error: GateError) -> Raise {
        self.raise(error)
    }

    /// `sh.run` and `sh.shell`: output streams live, on the user's terminal
    /// when magus's is one (see `stream`); its tail explains a denial.
    pub(super) fn run_relayed(&self, argv: &[String], site: &CallSite) -> Result<i32, Raise> {
        let launch = stream::Launch::plan(self.message_format())
            .map_err(|e| raise_exec(&argv[0], &e.to_string()))?;
        let (stdout, stderr) = launch.stdio();
        let spawned = self.spawn(argv, stdout, stderr);
        let relay = launch.relay(&argv[0]);
        let mut child = match spawned {
            Ok(child) => child,
            Err(raise) => {
                relay.finish();
                return Err(raise);
            }
        };
        let status = child.wait();
        let tail = relay.finish();
        self.after_call(site);
        let status = status.map_err(|e| raise_exec(&argv[0], &e.to_string()))?;
        self.attribute_failure(status, &tail);
        Ok(status_code(status))
    }

    /// `sh.output`: captures stdout and stderr.
    fn run_captured(&self, argv: &[String], site: &CallSite) -> Result<Value, Raise> {
        let child = self.spawn(argv, ChildStdio::Piped, ChildStdio::Piped)?;
        let output = child.wait_with_output();
        self.after_call(site);
        let output = output.map_err(|e| raise_exec(&argv[0], &e.to_string()))?;
        self.attribute_failure(output.status, &output.stderr);
        Ok(Value::record(
            "ExecResult",
            vec![
                ("status", Value::Int(status_code(output.status).into())),
                (
                    "stdout",
                    Value::str(super::text_of(&output.stdout).as_ref()),
                ),
                (
                    "stderr",
                    Value::str(super::text_of(&output.stderr).as_ref()),
                ),
            ],
        ))
    }

    fn attribute_failure(&self, status: ExitStatus, stderr: &[u8]) {
        if status.success() || !self.gate().is_on() {
            return;
        }
        for note in attribute::denials_in(self.gate(), stderr, self.home(), self.spell_name()) {
            self.emit(&note);
        }
    }
}

/// Why a launch failed; where the run's own process bound refused the
/// fork (`EAGAIN`), the setting that holds it is named.
#[cfg_attr(not(kernel_layer), allow(unused_variables))]
fn launch_error(error: &EnforceError, limits: &crate::policy::Limits) -> String {
    let text = error.to_string();
    #[cfg(kernel_layer)]
    if let EnforceError::Spawn { source, .. } = error {
        let refused = |errno| crate::enforce::limits::launch_refused(errno, limits);
        if let Some(note) = source.raw_os_error().and_then(refused) {
            return format!("{text}: {note}");
        }
    }
    text
}

/// The exit status as a shell reports it: the code, or 128 + the signal.
/// (A waited-for child has one or the other; were it neither, the raw wait
/// status is passed on rather than a made-up code.)
#[cfg(unix)]
fn status_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => status.into_raw(),
    }
}

/// The exit code: on Windows a child has no signals, and a waited-for one
/// always has a code (std documents `code()` as `Some` there).
#[cfg(windows)]
fn status_code(status: ExitStatus) -> i32 {
    status.code().unwrap_or(i32::MIN)
}

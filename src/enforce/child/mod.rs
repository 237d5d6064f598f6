//! Launch of a confined child: a program, its arguments,
//! exactly the environment the caller computed, a working directory and a
//! stdio choice become a running [`ConfinedChild`] that, between clone and
//! exec, enters a further nested Landlock domain, so it cannot trace or
//! read the memory of magus (Landlock's ptrace scoping). The launch is a
//! vfork-style clone (`vfork`) prepared entirely in the parent (`prepare`).
//!
//! It also adds the guard's children-only rule (`openat2` fails with
//! `ENOSYS`, see [`super::seccomp`]). The other protections are
//! process-wide and inherited, not per child: the syscall guard is
//! installed on magus at startup and survives every clone and exec, and
//! the private PID namespace
//! ([`super::jail`]) is entered before Landlock because a landlocked
//! process may not mount a `/proc`.

mod handle;
#[cfg(kernel_layer)]
mod prepare;
#[cfg(kernel_layer)]
mod vfork;

// A stack and a signal mask for another clone that shares magus's memory
// (`linux::jail::ahead`).
#[cfg(kernel_layer)]
pub(crate) use vfork::{with_signals_blocked, Stack};

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

pub(crate) use self::handle::ConfinedChild;
#[cfg(kernel_layer)]
use self::prepare::Prepared;
use super::error::EnforceError;
use super::Domain;

/// Where one standard stream of the child goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChildStdio {
    /// Shares magus's stream (the user's terminal, usually).
    #[default]
    Inherit,
    /// A pipe magus reads or writes.
    Piped,
    /// `/dev/null`.
    #[cfg_attr(not(feature = "internals"), allow(dead_code))]
    Null,
    /// A copy of this descriptor of magus (a pseudo-terminal's slave, say;
    /// a handle on Windows). It must stay open until `spawn` returns.
    Fd(RawStream),
}

/// A stream of magus as the OS names it: a descriptor, or a Windows handle.
#[cfg(unix)]
pub(crate) type RawStream = std::os::fd::RawFd;
/// A stream of magus as the OS names it: a descriptor, or a Windows handle.
#[cfg(windows)]
pub(crate) type RawStream = std::os::windows::io::RawHandle;

/// A child process to start inside a nested Landlock domain.
///
/// `program` should be the path the caller resolved on the scrubbed `PATH`
/// (and checked against the exec allowlist); a bare name is looked up on
/// the `PATH` of `env`, as `std::process::Command` does.
#[derive(Debug, Clone)]
pub struct ConfinedCommand {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    cwd: Option<PathBuf>,
    stdio: [ChildStdio; 3],
}

impl ConfinedCommand {
    /// A command with no arguments, an empty environment, magus's working
    /// directory and inherited stdio.
    pub fn new(program: impl AsRef<Path>) -> Self {
        ConfinedCommand {
            program: program.as_ref().to_path_buf(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            stdio: [ChildStdio::Inherit; 3],
        }
    }

    /// Appends arguments (not including `argv[0]`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// The child's whole environment; nothing of magus's is inherited.
    pub fn env(mut self, env: Vec<(OsString, OsString)>) -> Self {
        self.env = env;
        self
    }

    /// The child's working directory.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where stdin, stdout and stderr go.
    pub fn stdio(mut self, stdin: ChildStdio, stdout: ChildStdio, stderr: ChildStdio) -> Self {
        self.stdio = [stdin, stdout, stderr];
        self
    }

    /// Starts the child in a domain nested in `domain` (or unconfined by
    /// Landlock when `domain` confines nothing) and returns once it has
    /// exec'd. A failure before the exec (no such program, not executable,
    /// bad working directory, a refused restriction) is
    /// [`EnforceError::Spawn`] carrying the child's errno.
    #[cfg(kernel_layer)]
    pub fn spawn(&self, domain: &Domain) -> Result<ConfinedChild, EnforceError> {
        let restriction = domain.child_restriction()?;
        let prepared = Prepared::new(self)?;
        // Without a PID namespace: in the run's cgroup before any child.
        crate::enforce::survivors::wait_until_placed();
        let pid = vfork::clone_and_exec(&prepared, &restriction).map_err(|source| {
            EnforceError::Spawn {
                program: self.program.clone(),
                source,
            }
        })?;
        // The child's ends of the streams close in `new`: magus keeps its own.
        Ok(ConfinedChild::new(pid, prepared.stdio))
    }

    /// Without the kernel layer there is no domain to nest the child in:
    /// std's launch, with exactly the given environment, directory and
    /// stdio. A failure before the exec is [`EnforceError::Spawn`] as above.
    #[cfg(not(kernel_layer))]
    pub fn spawn(&self, _domain: &Domain) -> Result<ConfinedChild, EnforceError> {
        let spawn_error = |source| EnforceError::Spawn {
            program: self.program.clone(),
            source,
        };
        let mut command = std::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().cloned());
        if let Some(dir) = &self.cwd {
            command.current_dir(dir);
        }
        let [stdin, stdout, stderr] = self.stdio;
        command
            .stdin(std_stdio(stdin).map_err(spawn_error)?)
            .stdout(std_stdio(stdout).map_err(spawn_error)?)
            .stderr(std_stdio(stderr).map_err(spawn_error)?);
        let child = command.spawn().map_err(spawn_error)?;
        Ok(ConfinedChild::from_std(child))
    }
}

/// One stream as std takes it; a descriptor is duplicated, so the caller's
/// stays theirs.
#[cfg(not(kernel_layer))]
fn std_stdio(stdio: ChildStdio) -> std::io::Result<std::process::Stdio> {
    #[cfg(unix)]
    use std::os::fd::BorrowedFd;
    #[cfg(windows)]
    use std::os::windows::io::BorrowedHandle as BorrowedFd;
    use std::process::Stdio;
    Ok(match stdio {
        ChildStdio::Inherit => Stdio::inherit(),
        ChildStdio::Piped => Stdio::piped(),
        ChildStdio::Null => Stdio::null(),
        // SAFETY: the caller keeps `fd` open until `spawn` returns (see
        // `ChildStdio::Fd`); it is only duplicated here.
        ChildStdio::Fd(fd) => {
            Stdio::from(unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?)
        }
    })
}

#[cfg(all(test, unix))]
mod tests {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Output;

    use super::*;

    // The test runner must stay unrestricted, so these children run in an
    // unconfined domain; the kernel tests cover the nested domain.
    #[cfg(kernel_layer)]
    fn domain() -> Domain {
        Domain::unconfined(crate::enforce::Unavailable::ForcedOff)
    }

    #[cfg(not(kernel_layer))]
    fn domain() -> Domain {
        Domain::interpreter_only()
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn piped(command: ConfinedCommand) -> ConfinedCommand {
        command.stdio(ChildStdio::Piped, ChildStdio::Piped, ChildStdio::Piped)
    }

    fn output(command: ConfinedCommand) -> Output {
        piped(command)
            .spawn(&domain())
            .expect("spawn")
            .wait_with_output()
            .expect("output")
    }

    fn spawn_errno(command: &ConfinedCommand) -> Option<i32> {
        match command.spawn(&domain()) {
            Err(EnforceError::Spawn { program, source }) => {
                assert_eq!(program, command.program);
                source.raw_os_error()
            }
            other => panic!("expected a spawn error, got {other:?}"),
        }
    }

    #[test]
    fn exec_failures_carry_the_errno() {
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("not-executable");
        std::fs::write(&plain, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let cases = [
            (ConfinedCommand::new("/nonexistent/prog"), libc::ENOENT),
            (ConfinedCommand::new(&plain), libc::EACCES),
            (ConfinedCommand::new(dir.path()), libc::EACCES),
            (ConfinedCommand::new("/etc/passwd/x"), libc::ENOTDIR),
            (
                ConfinedCommand::new("true").env(env(&[("PATH", "/nonexistent")])),
                libc::ENOENT,
            ),
            (
                ConfinedCommand::new("/bin/true").current_dir("/nonexistent"),
                libc::ENOENT,
            ),
        ];
        for (command, errno) in cases {
            assert_eq!(spawn_errno(&command), Some(errno), "{command:?}");
        }
    }

    #[test]
    fn stdout_and_stderr_are_captured() {
        let out =
            output(ConfinedCommand::new("/bin/sh").args(["-c", "echo out; echo err >&2; exit 3"]));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        assert_eq!(out.status.code(), Some(3));
    }

    #[test]
    fn full_pipes_on_both_streams_do_not_deadlock() {
        let script = "head -c 300000 /dev/zero; head -c 200000 /dev/zero >&2";
        let out = output(ConfinedCommand::new("/bin/sh").args(["-c", script]));
        assert_eq!((out.stdout.len(), out.stderr.len()), (300_000, 200_000));
    }

    #[test]
    fn stdin_is_fed() {
        let mut child = piped(ConfinedCommand::new("/bin/cat"))
            .spawn(&domain())
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("piped stdin");
        stdin.write_all(b"fed through stdin").expect("write");
        drop(stdin);
        let out = child.wait_with_output().expect("output");
        assert_eq!(out.stdout, b"fed through stdin");
    }

    #[test]
    fn null_stdin_reads_empty() {
        let out = ConfinedCommand::new("/bin/cat")
            .stdio(ChildStdio::Null, ChildStdio::Piped, ChildStdio::Null)
            .spawn(&domain())
            .expect("spawn")
            .wait_with_output()
            .expect("output");
        assert!(out.status.success());
        assert!(out.stdout.is_empty() && out.stderr.is_empty());
    }

    #[test]
    fn cwd_is_applied() {
        let dir = tempfile::tempdir().expect("tempdir");
        let want = dir.path().canonicalize().expect("canonical");
        let out = output(ConfinedCommand::new("/bin/pwd").current_dir(&want));
        assert_eq!(out.stdout, format!("{}\n", want.display()).into_bytes());
    }

    #[test]
    fn env_is_exactly_the_given_one() {
        let given = env(&[("B_VAR", "two words"), ("A_VAR", "1"), ("EMPTY", "")]);
        let out = output(ConfinedCommand::new("/usr/bin/env").env(given));
        // std's launch (no kernel layer) orders the variables by name.
        let mut lines: Vec<&[u8]> = out.stdout.split(|b| *b == b'\n').collect();
        lines.sort();
        assert_eq!(lines, [&b""[..], b"A_VAR=1", b"B_VAR=two words", b"EMPTY="]);
        let out = output(ConfinedCommand::new("/usr/bin/env"));
        assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    }

    #[test]
    fn bare_names_are_found_on_the_child_path() {
        let command = ConfinedCommand::new("echo")
            .args(["found"])
            .env(env(&[("PATH", "/nonexistent:/usr/bin:/bin")]));
        assert_eq!(output(command).stdout, b"found\n");
    }

    /// std ignores SIGPIPE in the test runner; the child must not inherit
    /// that, nor a blocked mask from the clone.
    #[test]
    fn child_starts_with_default_signals() {
        let out = output(ConfinedCommand::new("/bin/grep").args([
            "-E",
            "^Sig(Blk|Ign)",
            "/proc/self/status",
        ]));
        let text = String::from_utf8_lossy(&out.stdout);
        let mask = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        };
        assert_eq!(mask("SigBlk:"), Some(0), "{text}");
        let pipe_bit = 1u64 << (libc::SIGPIPE - 1);
        assert_eq!(mask("SigIgn:").map(|m| m & pipe_bit), Some(0), "{text}");
    }

    #[test]
    fn wait_try_wait_and_kill() {
        let mut child = ConfinedCommand::new("/bin/sleep")
            .args(["30"])
            .spawn(&domain())
            .expect("spawn");
        assert!(child.id() > 0);
        assert_eq!(child.try_wait().expect("try_wait"), None);
        child.kill().expect("kill");
        let status = child.wait().expect("wait");
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        assert_eq!(child.wait().expect("second wait"), status);
        assert_eq!(child.try_wait().expect("try_wait"), Some(status));
        child.kill().expect("kill after reaping is a no-op");
    }
}

//! The library's facade: load a workspace's policy, install the sandbox on
//! the process, then run spells with the natives bound to the gate.
//!
//! The start-up sequence is [`startup`]'s (one working order, as two
//! linear steps); each stage of the facade is its own type, so a spell
//! cannot run before the sandbox is installed. The `magus` binary and an
//! embedder start a spell the same way, through these types.

mod error;
pub(crate) mod exit;
pub(crate) mod spell_checker;
pub(crate) mod spell_reader;
pub(crate) mod startup;

pub use error::{InstallError, LoadError, SpellError};

use crate::bindings::{self, DiagnosticSink, Session};
use crate::buzz::{stack, BuzzError, Interpreter, NativeModule, Program};
use crate::diag::{Diagnostic, OutputOptions, Renderer};
use crate::enforce::gate::Gate;
use crate::enforce::ReexecState;
use crate::policy::{Policy, SandboxState, WorkspaceArg};
use startup::{Confinement, Loaded};
use std::cell::RefCell;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How much of the kernel's confinement [`Sandbox::install`] insists on,
/// chosen explicitly by the caller (as the `landlock` crate's
/// `CompatLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompatLevel {
    /// What `magus run` does: put in force every layer the kernel offers
    /// (jail, syscall guard, Landlock at whatever ABI), and say what is
    /// missing in [`Installed::diagnostics`]. On a kernel without Landlock
    /// only the gate, in the interpreter, protects the paths.
    BestEffort,
    /// The sandbox must be on and a Landlock domain must be in force (at
    /// any ABI: rights an older ABI lacks are still only said in the
    /// diagnostics, as is a missing jail). Checked before anything is
    /// restricted, so a refusal leaves the process as it was.
    HardRequirement,
}

/// A workspace's resolved policy, not yet in force: nothing about the
/// process is restricted while this exists.
#[derive(Debug)]
pub struct Sandbox {
    loaded: Loaded,
    env: Vec<(OsString, OsString)>,
    reexec: Option<ReexecState>,
    output: OutputOptions,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("startup", &self.startup)
            .finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Loads the workspace at `dir` (with or without a `magus.yaml`, like
    /// `magus --workspace DIR`): resolves its policy against this process's
    /// environment and checks it against `magus.lock` (MGS2010).
    ///
    /// Call it first thing in `main`, before any other thread starts: when
    /// this process is the one [`Sandbox::install`] re-executed, it takes
    /// the re-exec's own variables out of the environment.
    pub fn load(dir: impl AsRef<Path>) -> Result<Sandbox, LoadError> {
        Sandbox::load_process(WorkspaceArg::Explicit(dir.as_ref()), None)
    }

    /// Like [`Sandbox::load`], under the policy of one spell: the
    /// workspace's plus the spell's own `spells: NAME:` section of
    /// `magus.yaml` (`spell` is `NAME`, `NAME.buzz`, or a path to a file in
    /// the workspace's `spells/`), as `magus run NAME` loads it.
    pub fn load_spell(dir: impl AsRef<Path>, spell: &str) -> Result<Sandbox, LoadError> {
        Sandbox::load_process(WorkspaceArg::Explicit(dir.as_ref()), Some(spell))
    }

    /// Like [`Sandbox::load`], for the nearest ancestor of `start` (itself
    /// included) holding a `magus.yaml`, as `magus` finds its workspace.
    pub fn discover(start: impl AsRef<Path>) -> Result<Sandbox, LoadError> {
        Sandbox::load_process(
            WorkspaceArg::Discover {
                start: start.as_ref(),
            },
            None,
        )
    }

    fn load_process(
        workspace: WorkspaceArg<'_>,
        spell: Option<&str>,
    ) -> Result<Sandbox, LoadError> {
        // Before the environment is read: the re-executed process takes
        // the stripped names out of it.
        let reexec = startup::take_reexec_state();
        Sandbox::load_from(workspace, spell, std::env::vars_os().collect(), reexec)
    }

    /// The CLI's entry: the environment and the re-exec state it took
    /// itself, first thing in `main`.
    pub(crate) fn load_from(
        workspace: WorkspaceArg<'_>,
        spell: Option<&str>,
        env: Vec<(OsString, OsString)>,
        reexec: Option<ReexecState>,
    ) -> Result<Sandbox, LoadError> {
        let loaded =
            startup::load(workspace, spell, &env, reexec.as_ref()).map_err(LoadError::new)?;
        Ok(Sandbox {
            loaded,
            env,
            reexec,
            output: OutputOptions::default(),
        })
    }

    /// How the run's diagnostics are printed (the CLI's `--message-format`,
    /// `--color`, `-q`/`-v`); the defaults otherwise.
    pub(crate) fn with_output(self, output: OutputOptions) -> Sandbox {
        Sandbox { output, ..self }
    }

    /// The resolved policy.
    pub fn policy(&self) -> &Policy {
        &self.loaded.startup.policy
    }

    /// What resolving the policy found worth saying (warnings and notes);
    /// [`Installed::diagnostics`] repeats them with the kernel's findings.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.loaded.startup.diagnostics
    }

    /// Reads a spell, named as `magus run` takes it: `NAME` or `NAME.buzz`
    /// for `spells/NAME.buzz` of the workspace, or a path (anything with a
    /// `/`, relative to the process's current directory). Read now, because the sandbox may not grant the spell's file
    /// once installed; a spell in the workspace is read through the gate
    /// (a link out of it is MGS2001).
    pub fn spell(&self, name: &str) -> Result<Spell, SpellError> {
        let (path, source) = spell_reader::read_spell(self.policy(), name)?;
        Ok(Spell { path, source })
    }

    /// Checks a spell as `magus check` does, without running or
    /// restricting anything: parse errors, then every finding of the spell
    /// checker (MGS1xxx) over the spell and the files it imports, which are
    /// read through the gate of this policy, and the denials this policy
    /// will give the spell's literal paths and programs (MGS2001, MGS2002,
    /// MGS2007; docs/check.md). Empty when the spell is clean;
    /// any [`Severity::Error`](crate::Severity::Error) among them stops
    /// `magus run`.
    pub fn check(&self, spell: &Spell) -> Vec<Diagnostic> {
        let policy = self.policy().clone();
        let env = self.env.clone();
        let checked = stack::run_on_interpreter_stack(move || {
            let found: Rc<RefCell<Vec<Diagnostic>>> = Rc::default();
            let into = found.clone();
            let sink: DiagnosticSink =
                Rc::new(move |d: &Diagnostic| into.borrow_mut().push(d.clone()));
            let session = spell_checker::checking_session(policy, &env, sink.clone());
            let interpreter = spell_checker::checking_interpreter(&spell.path, &session);
            spell_checker::spell_and_calls_are_clean(
                &interpreter,
                &session,
                &spell.path,
                &spell.source,
                &sink,
            );
            found.take()
        });
        checked.unwrap_or_else(|e| vec![error::no_interpreter_thread(&e)])
    }

    /// Puts the policy in force on this whole process, irreversibly: the
    /// scrubbing re-exec, the jail, the syscall guard and Landlock, in the
    /// order `magus run` uses. Call it on the process's only thread.
    ///
    /// # Warning
    ///
    /// When the environment holds a variable the policy withholds, this
    /// replaces the process image (`/proc/self/exe`, same arguments) with
    /// one whose environment is scrubbed, and does not return: the new
    /// process runs `main` again, and its own `install` carries on. On
    /// error the process may be partly confined (except for the checks of
    /// [`CompatLevel::HardRequirement`]): end it.
    pub fn install(self, level: CompatLevel) -> Result<Installed, InstallError> {
        if level == CompatLevel::HardRequirement {
            self.require_kernel()?;
        }
        let Sandbox {
            loaded,
            env,
            reexec,
            output,
        } = self;
        let confinement = startup::confine(loaded, &env, reexec, output)?;
        Ok(Installed {
            confinement,
            output,
        })
    }

    /// [`CompatLevel::HardRequirement`]'s checks, made with probes only.
    fn require_kernel(&self) -> Result<(), InstallError> {
        let policy = self.policy();
        if policy.state() == SandboxState::Off {
            return Err(InstallError::new(error::sandbox_off()));
        }
        match startup::kernel_missing(policy, &self.env) {
            Some(missing) => Err(InstallError::new(error::required(missing))),
            None => Ok(()),
        }
    }
}

/// A spell's file and source, read by [`Sandbox::spell`].
#[derive(Debug, Clone)]
pub struct Spell {
    pub(crate) path: PathBuf,
    pub(crate) source: String,
}

impl Spell {
    /// Where the spell was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The spell's source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The spell parsed, for [`Interpreter::run`].
    pub fn parse(&self) -> Result<Program, BuzzError> {
        crate::buzz::parse(&self.path, &self.source)
    }
}

/// The process after [`Sandbox::install`]: confined, with everything the
/// spells' run needs.
pub struct Installed {
    confinement: Confinement,
    output: OutputOptions,
}

impl Installed {
    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.confinement.policy
    }

    /// What to say before the first spell runs: the policy's warnings and
    /// whatever part of the sandbox the kernel could not put in force
    /// (MGS2005, MGS2012, partial enforcement). The `magus` binary prints
    /// them on stderr; an embedder decides.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.confinement.report.now
    }

    /// Runs `f` with the [`Runtime`], on a thread with the interpreter's
    /// large stack, from the workspace root; stops the network proxy (if
    /// `network.hosts` started one) when `f` returns.
    pub fn enter<T: Send>(self, f: impl FnOnce(&Runtime) -> T + Send) -> Result<T, InstallError> {
        let Installed {
            confinement,
            output,
        } = self;
        let on_stack = stack::run_on_interpreter_stack(move || {
            let runtime = Runtime::start(confinement, output)?;
            let out = f(&runtime);
            runtime.finish();
            Ok(out)
        });
        on_stack.map_err(|e| InstallError::new(error::no_interpreter_thread(&e)))?
    }
}

/// The spells' side of an installed sandbox: the gate, and the natives
/// bound to it. Lives on the thread [`Installed::enter`] runs.
pub struct Runtime {
    session: Rc<Session>,
    sink: DiagnosticSink,
    heap_budget: usize,
    output: OutputOptions,
}

impl Runtime {
    fn start(confinement: Confinement, output: OutputOptions) -> Result<Runtime, InstallError> {
        let Confinement {
            policy,
            domain,
            proxy,
            temp_dirs,
            hidden,
            child_env,
            report,
        } = confinement;
        let workspace = policy.workspace().to_path_buf();
        let heap_budget = startup::heap_budget(&policy);
        std::env::set_current_dir(&workspace)
            .map_err(|e| InstallError::new(error::no_workspace(&workspace, &e)))?;
        let gate = Gate::new(Rc::new(policy), workspace).with_hidden_programs(hidden);
        let renderer = Renderer::for_output(output);
        let sink: DiagnosticSink = Rc::new(move |d: &Diagnostic| renderer.emit(d));
        let session = Session::new(
            gate,
            domain,
            child_env.vars,
            report.at_first_launch,
            sink.clone(),
        );
        let session = session
            .with_shim_notes(report.at_shim)
            .with_temp_dirs(temp_dirs)
            .with_message_format(output.format);
        let session = Rc::new(startup::with_proxy(session, proxy));
        Ok(Runtime {
            session,
            sink,
            heap_budget,
            output,
        })
    }

    /// The gate every native of this run goes through.
    pub fn gate(&self) -> &Gate {
        self.session.gate()
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        self.gate().policy()
    }

    /// The natives to register in an interpreter: Buzz's `fs`, `sh` and
    /// `env` modules (and upstream's `buzz:fs`, `buzz:os`, `buzz:io` faces
    /// over them), every call bound to [`Runtime::gate`].
    pub fn natives(&self) -> Vec<NativeModule> {
        bindings::modules(&self.session)
    }

    /// An interpreter for the spell at `file` with the natives registered,
    /// imports read through the gate, and the policy's memory budget.
    pub fn interpreter(&self, file: &Path) -> Interpreter {
        Interpreter::new(file, self.natives())
            .with_loader(bindings::source_loader(&self.session))
            .with_libraries(bindings::libraries())
            .with_stack_budget(stack::stack_budget(stack::interpreter_stack()))
            .with_heap_budget(self.heap_budget)
    }

    /// Runs the spell's `main(args)`; its output goes to stdout, and the
    /// sandbox's notes (a denial caught by the spell, a first launch) to
    /// stderr. Returns the spell's exit status (0-255), or why it failed
    /// with the status `magus run` would exit with.
    pub fn run(&self, spell: &Spell, args: Vec<String>) -> Result<i32, SpellError> {
        let program = spell.parse().map_err(SpellError::cannot_run)?;
        let mut interpreter = self.interpreter(&spell.path);
        // Checked before anything runs: a type error on line 9, or a read
        // there that the sandbox will refuse, must not leave line 3's
        // writes behind.
        let refusal = spell_checker::refusal(
            &interpreter,
            Some(&self.session),
            &program,
            &spell.source,
            &self.sink,
        );
        if let Some(status) = refusal {
            return Err(SpellError::refused_by_check(&spell.path, status));
        }
        let status = interpreter
            .run(&program, args)
            .map_err(SpellError::failed)?;
        SpellError::check_status(status)
    }

    /// Where the run's diagnostics go (stderr, in the process's format).
    pub(crate) fn sink(&self) -> &DiagnosticSink {
        &self.sink
    }

    /// The end of the run: the proxy stops and its summary is said.
    fn finish(&self) {
        startup::finish(&self.session, self.output, &*self.sink);
    }
}

#[cfg(test)]
mod tests {
    //! Loading only: `install` confines the whole process, so it is tested
    //! in child processes (`tests/embed_example.rs`), never here.
    use super::exit::{CANNOT_RUN as EXIT_CANNOT_RUN, NO_SPELL as EXIT_NO_SPELL};
    use super::*;

    fn workspace(config: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary workspace");
        std::fs::create_dir(dir.path().join("spells")).expect("spells/");
        std::fs::write(dir.path().join("magus.yaml"), config).expect("magus.yaml");
        dir
    }

    fn load(dir: &Path) -> Result<Sandbox, LoadError> {
        Sandbox::load_from(WorkspaceArg::Explicit(dir), None, Vec::new(), None)
    }

    #[test]
    fn a_bad_magus_yaml_is_one_error_with_its_line_and_column() {
        let dir = workspace("sandbox:\n  enabled: maybe\n");
        let error = load(dir.path()).expect_err("a bad config");
        let location = error.diagnostic().location.as_ref().expect("a location");
        assert_eq!(location.line, 2, "{error}");
    }

    /// `check` finds what `magus check` finds, in the spell and in what it
    /// imports, and nothing in a clean spell. Unix only: on Windows the
    /// gate refuses every path for now (README, "Platforms"), the import
    /// included.
    #[cfg(unix)]
    #[test]
    fn check_returns_the_spells_findings_and_nothing_when_clean() {
        let dir = workspace("sandbox:\n  enabled: true\n");
        let spells = dir.path().join("spells");
        std::fs::write(spells.join("clean.buzz"), "fun main() > void {}\n").expect("clean");
        std::fs::write(
            spells.join("typo.buzz"),
            "fun main() > void {\n    final x = 1;\n    y;\n}\n",
        )
        .expect("typo");
        std::fs::create_dir(spells.join("lib")).expect("spells/lib");
        std::fs::write(
            spells.join("lib/bad.buzz"),
            "export fun f() > int {\n    return z;\n}\n",
        )
        .expect("lib/bad");
        std::fs::write(
            spells.join("imports.buzz"),
            "import \"lib/bad\";\nfun main() > void {}\n",
        )
        .expect("imports");
        let sandbox = load(dir.path()).expect("a policy");
        let check = |name: &str| sandbox.check(&sandbox.spell(name).expect(name));
        assert_eq!(check("clean"), Vec::new());
        let typo = check("typo");
        let codes: Vec<_> = typo
            .iter()
            .map(|d| (d.code, d.location.as_ref().map(|l| l.line)))
            .collect();
        assert!(
            codes.contains(&(Some(crate::diag::Code::Mgs1001), Some(3))),
            "{typo:?}"
        );
        let imported = check("imports");
        let in_lib = imported.iter().any(|d| {
            d.code == Some(crate::diag::Code::Mgs1001)
                && d.location
                    .as_ref()
                    .is_some_and(|l| l.file.ends_with("lib/bad.buzz") && l.line == 2)
        });
        assert!(in_lib, "{imported:?}");
    }

    #[test]
    fn a_loaded_sandbox_reads_its_policy_and_spells() {
        let dir = workspace("sandbox:\n  enabled: true\n");
        std::fs::write(
            dir.path().join("spells/hello.buzz"),
            "fun main() > void {}\n",
        )
        .expect("a spell");
        std::fs::write(dir.path().join("spells/bad.buzz"), b"\xff\xfe").expect("a bad spell");
        let sandbox = load(dir.path()).expect("a policy");
        assert_eq!(sandbox.policy().state(), SandboxState::On);
        let real = dir.path().canonicalize().expect("canonical");
        assert_eq!(sandbox.policy().workspace(), real);
        let spell = sandbox.spell("hello").expect("hello");
        assert_eq!(spell.path(), real.join("spells/hello.buzz"));
        assert_eq!(spell.source(), "fun main() > void {}\n");
        for (name, status) in [("helo", EXIT_NO_SPELL), ("bad", EXIT_CANNOT_RUN)] {
            let error = sandbox.spell(name).expect_err(name);
            assert_eq!(error.exit_status(), status, "{name}: {error}");
        }
    }
}

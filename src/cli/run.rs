//! `magus run` and `magus test`: load the workspace through the library's
//! facade (`crate::sandbox`), read the spells while the workspace is open,
//! install the sandbox, then run the job on the interpreter's thread,
//! saying every failure and turning it into the exit status. The
//! start-up itself, in its one working order, is the library's
//! (`crate::sandbox::startup`).

use super::GlobalArgs;
use crate::diag::{Diagnostic, Renderer};
use crate::enforce::ReexecState;
use crate::policy::Policy;
use crate::sandbox::exit::CONFIG as EXIT_CONFIG;
use crate::sandbox::spell_reader::{spell_files, SpellReader};
use crate::sandbox::{CompatLevel, Runtime, Sandbox, Spell, SpellError};
use std::ffi::OsString;
use std::path::PathBuf;

/// What to do once the sandbox is up: run one spell's `main`, or the
/// `test` blocks of some spells (all of them when none is named).
pub(super) enum Job {
    Run {
        spell: String,
        args: Vec<String>,
    },
    Test {
        spells: Vec<String>,
        filter: Option<String>,
    },
}

/// Does `job` in the sandbox, started through the library's facade
/// (`crate::sandbox`); returns the exit status.
pub(super) fn run(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    job: Job,
) -> i32 {
    let renderer = global.renderer();
    match start(global, env, reexec, job, &renderer) {
        Ok(status) | Err(status) => status,
    }
}

/// [`run`], with every failure already said and turned into its status.
fn start(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    reexec: Option<ReexecState>,
    job: Job,
    renderer: &Renderer,
) -> Result<i32, i32> {
    let config_error = |d: &Diagnostic| {
        renderer.emit(d);
        EXIT_CONFIG
    };
    let cwd = super::current_dir(renderer)?;
    let workspace = super::workspace_arg(global, &cwd);
    let spell = match &job {
        Job::Run { spell, .. } => Some(spell.as_str()),
        Job::Test { spells, .. } => match spells.as_slice() {
            [one] => Some(one.as_str()),
            _ => None,
        },
    };
    let sandbox = Sandbox::load_from(workspace, spell, env.to_vec(), reexec)
        .map_err(|e| config_error(e.diagnostic()))?
        .with_output(global.output());
    let spells = read_spells(sandbox.policy(), &job).map_err(|e| {
        renderer.emit(e.diagnostic());
        e.exit_status()
    })?;
    let installed = sandbox
        .install(CompatLevel::BestEffort)
        .map_err(|e| config_error(e.diagnostic()))?;
    for d in installed.diagnostics() {
        renderer.emit(d);
    }
    installed
        .enter(move |runtime| execute(runtime, spells, job))
        .map_err(|e| config_error(e.diagnostic()))
}

/// The spells `job` names (every spell of the workspace for a bare
/// `magus test`), read before the sandbox closes.
fn read_spells(policy: &Policy, job: &Job) -> Result<Vec<(PathBuf, String)>, SpellError> {
    let workspace = policy.workspace();
    let names: Vec<String> = match job {
        Job::Run { spell, .. } => vec![spell.clone()],
        Job::Test { spells, .. } if spells.is_empty() => {
            let mut all = spell_files(&workspace.join("spells"));
            all.sort();
            all.into_iter().map(|(name, _)| name).collect()
        }
        Job::Test { spells, .. } => spells.clone(),
    };
    let reader = SpellReader::new(policy);
    names.iter().map(|name| reader.read_spell(name)).collect()
}

/// Step 4: the spell runs with the gated bindings, from the workspace root,
/// on the interpreter's own large stack (`Installed::enter` put it there).
fn execute(runtime: &Runtime, spells: Vec<(PathBuf, String)>, job: Job) -> i32 {
    match job {
        Job::Run { args, .. } => {
            let Some((path, source)) = spells.into_iter().next() else {
                return EXIT_CONFIG;
            };
            match runtime.run(&Spell { path, source }, args) {
                Ok(status) => status,
                Err(e) => {
                    runtime.sink()(e.diagnostic());
                    e.exit_status()
                }
            }
        }
        Job::Test { filter, .. } => {
            let run = super::test::TestRun {
                workspace: runtime.policy().workspace(),
                filter: filter.as_deref(),
            };
            super::test::run_tests(
                &spells,
                &run,
                |file| runtime.interpreter(file),
                runtime.sink(),
            )
        }
    }
}

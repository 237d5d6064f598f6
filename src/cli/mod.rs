//! The `magus` command line: argument parsing, workspace discovery and the
//! wiring of policy, enforcement, interpreter and diagnostics.
//!
//! This is the one place that reads the process environment and current
//! directory; everything below it takes them as inputs.

mod check;
mod lock;
mod run;

pub use run::landlock_unavailable;

use crate::diag::{Code, Diagnostic, MessageFormat, Renderer};
use crate::policy::{self, Startup, StartupInput, WorkspaceArg};
use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Exit status of a spell that failed: a syntax or runtime error, or an
/// uncaught `throw`.
pub const EXIT_SPELL_FAILED: i32 = 1;
/// Exit status for an invalid configuration, command line or policy lock.
pub const EXIT_CONFIG: i32 = 2;
/// Exit status of a spell stopped by an uncaught sandbox denial.
pub const EXIT_DENIED: i32 = 3;

/// The exit statuses, at the end of every `--help`.
const EXIT_HELP: &str = "Exit status: 0 success; 1 the spell failed; 2 configuration, usage or \
                         policy-lock error; 3 the spell was stopped by a sandbox denial; 4 the run \
                         exceeded `sandbox.limits.wall_time`. A spell's \
                         `main` returning an int exits with that int.";

#[derive(Debug, Parser)]
#[command(
    name = "magus",
    version,
    about = "Run spells (Buzz task scripts) in a sandbox that keeps your secrets out of reach",
    after_help = EXIT_HELP
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags accepted before or after any subcommand.
#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// The workspace root (default: the nearest ancestor holding magus.yaml).
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// How diagnostics are printed on stderr: rustc-style text, or one JSON
    /// object per line.
    #[arg(long, global = true, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a spell: `spells/NAME.buzz` of the workspace, or a path to a
    /// `.buzz` file. The remaining arguments go to its `main(args)`.
    #[command(after_help = EXIT_HELP)]
    Run {
        /// The spell's name (`build`) or path (`path/to/x.buzz`).
        spell: String,
        /// Arguments passed to the spell.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// List the workspace's spells with the first comment line of each.
    #[command(after_help = EXIT_HELP)]
    List,
    /// Print the page of a diagnostic code, e.g. `magus explain MGS2001`.
    #[command(after_help = EXIT_HELP)]
    Explain {
        /// The code, e.g. MGS2001.
        code: String,
    },
    /// Inspect and lock the sandbox policy.
    #[command(subcommand, after_help = EXIT_HELP)]
    Sandbox(SandboxCommand),
}

#[derive(Debug, Subcommand)]
enum SandboxCommand {
    /// Validate magus.yaml, print the resolved policy, the lock state, the
    /// kernel protections in force and every startup diagnostic; exit 2 on
    /// errors or when magus.lock does not match.
    #[command(after_help = EXIT_HELP)]
    Check,
    /// Write magus.lock: the fingerprint and canonical text of the declared
    /// sandbox policy. Every `magus run` then refuses a policy that differs
    /// (MGS2010). Review and commit it with magus.yaml.
    #[command(after_help = EXIT_HELP)]
    Lock,
}

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    // Before anything reads the environment: a re-executed magus takes the
    // names of the stripped variables out of it (see `enforce::reexec`).
    let reexec = crate::enforce::take_reexec_state();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return err.exit_code();
        }
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    match cli.command {
        Command::Run { spell, args } => run::run(&cli.global, &env, reexec, &spell, args),
        Command::List => list(&cli.global, &env),
        Command::Explain { code } => explain(&cli.global, &code),
        Command::Sandbox(SandboxCommand::Check) => check::sandbox_check(&cli.global, &env),
        Command::Sandbox(SandboxCommand::Lock) => lock::sandbox_lock(&cli.global, &env),
    }
}

/// Finds the workspace and resolves its policy, or reports why not.
fn load(global: &GlobalArgs, env: &[(OsString, OsString)]) -> Result<Startup, i32> {
    let renderer = Renderer::new(global.message_format);
    let cwd = std::env::current_dir().map_err(|e| {
        renderer.emit(&Diagnostic::error(format!(
            "cannot read the current directory: {e}"
        )));
        EXIT_CONFIG
    })?;
    let workspace = match &global.workspace {
        Some(dir) => WorkspaceArg::Explicit(dir),
        None => WorkspaceArg::Discover { start: &cwd },
    };
    policy::startup(StartupInput { workspace, env }).map_err(|err| {
        renderer.emit(&err.to_diagnostic());
        EXIT_CONFIG
    })
}

/// `magus explain CODE`.
fn explain(global: &GlobalArgs, code: &str) -> i32 {
    match code.parse::<Code>() {
        Ok(code) => {
            let _ = std::io::stdout().write_all(crate::diag::explain_page(code).as_bytes());
            0
        }
        Err(e) => {
            let codes: Vec<String> = Code::ALL
                .iter()
                .map(|c| format!("{c}  {}", c.summary()))
                .collect();
            let d = Diagnostic::error(e.to_string())
                .with_help(format!("the codes are:\n{}", codes.join("\n")));
            Renderer::new(global.message_format).emit(&d);
            EXIT_CONFIG
        }
    }
}

/// `magus list`: each spell and the first comment line of its file.
fn list(global: &GlobalArgs, env: &[(OsString, OsString)]) -> i32 {
    let startup = match load(global, env) {
        Ok(startup) => startup,
        Err(status) => return status,
    };
    let dir = startup.policy.workspace.join("spells");
    let mut spells = spell_files(&dir);
    spells.sort();
    let width = spells.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (name, path) in &spells {
        let summary = first_comment(path).unwrap_or_default();
        out.push_str(&format!("{name:<width$}  {summary}\n"));
    }
    if spells.is_empty() {
        out.push_str(&format!("no spells in {}\n", dir.display()));
    }
    let _ = std::io::stdout().write_all(out.as_bytes());
    0
}

/// `(name, path)` of every `*.buzz` file in `dir`.
fn spell_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "buzz"))
        .filter_map(|p| Some((p.file_stem()?.to_string_lossy().into_owned(), p)))
        .collect()
}

/// The text of the first `//` line of a spell.
fn first_comment(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().map(str::trim).find(|l| l.starts_with("//"))?;
    Some(line.trim_start_matches('/').trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_go_before_or_after_the_subcommand() {
        for args in [
            vec!["magus", "--message-format", "json", "sandbox", "check"],
            vec!["magus", "sandbox", "check", "--message-format", "json"],
            vec!["magus", "sandbox", "--message-format=json", "check"],
        ] {
            let cli = Cli::try_parse_from(&args).unwrap();
            assert_eq!(cli.global.message_format, MessageFormat::Json, "{args:?}");
        }
        let cli = Cli::try_parse_from(["magus", "sandbox", "check", "--workspace", "/w"]).unwrap();
        assert_eq!(cli.global.workspace, Some(PathBuf::from("/w")));
    }
}

//! The `magus` command line: argument parsing, workspace discovery and the
//! wiring of policy, enforcement, interpreter and diagnostics.
//!
//! This is the one place that reads the process environment and current
//! directory; everything below it takes them as inputs.

mod args;
mod completions;
mod init;
mod run;
mod sandbox_check;
mod sandbox_lock;
mod spell_check;
mod spells;
mod suggest;
mod test;

use crate::diag::{
    Code, ColorChoice, Diagnostic, MessageFormat, OutputOptions, Renderer, Verbosity,
};
use crate::policy::{self, Declared, Startup, StartupInput, WorkspaceArg};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

// The exit statuses are the library's (`crate::sandbox::exit`).
use crate::sandbox::exit::{
    CANNOT_RUN as EXIT_CANNOT_RUN, CONFIG as EXIT_CONFIG, SPELL_FAILED as EXIT_SPELL_FAILED,
};

/// The exit statuses, at the end of every `--help`.
const EXIT_HELP: &str = "Exit status: a spell's own status (what its `main` returns, 0-255; \
0 for `void`), or, chosen like timeout(1) and env(1) so they stand apart: \
1 the spell failed (runtime error, uncaught throw, or a status outside 0-255); \
123 the run exceeded `sandbox.limits.wall_time` (everything it started was killed); \
124 the spell was stopped by a sandbox denial; 125 magus failed (usage, \
magus.yaml, magus.lock or sandbox set-up); 126 the spell cannot run (unreadable, \
syntax error, or an error the check before the run found); 127 no such spell; \
`magus check`: 0 clean, 2 errors found.";

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
    /// Without a command, the workspace's spells are listed.
    #[command(subcommand)]
    command: Option<Command>,
}

/// Flags accepted before or after any subcommand (before the spell's name
/// for `run`: what follows the name is the spell's).
#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// The workspace root (default: the nearest ancestor holding magus.yaml).
    #[arg(long, global = true, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// How diagnostics are printed on stderr: rustc-style text, or one JSON
    /// object per line (a child's stderr lines included).
    #[arg(long, global = true, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
    /// When to colour diagnostics (`auto` honours NO_COLOR, CLICOLOR_FORCE
    /// and whether stderr is a terminal).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    color: ColorChoice,
    /// Print only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Print every note in full (e.g. the names of withheld variables).
    #[arg(short, long, global = true)]
    verbose: bool,
}

impl GlobalArgs {
    /// The output options these flags ask for.
    /// Prints diagnostics as the command line asked.
    fn renderer(&self) -> Renderer {
        Renderer::for_output(self.output())
    }

    fn output(&self) -> OutputOptions {
        OutputOptions {
            format: self.message_format,
            color: self.color,
            verbosity: self.verbosity(),
        }
    }

    fn verbosity(&self) -> Verbosity {
        match (self.quiet, self.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a workspace here (or in `--workspace DIR`): a commented
    /// magus.yaml with the sandbox on and spells/hello.buzz with a test
    /// block. Overwrites nothing.
    #[command(after_help = EXIT_HELP)]
    Init,
    /// Run a spell: `spells/NAME.buzz` of the workspace (`NAME` or
    /// `NAME.buzz`), or a path to a `.buzz` file. Every argument after the
    /// spell goes to its `main(args)` verbatim, `--help` included; without a
    /// spell, the spells are listed.
    #[command(after_help = EXIT_HELP)]
    Run {
        /// The spell's name (`build`, `build.buzz`) or path (`path/to/x.buzz`).
        spell: Option<String>,
        /// Arguments passed to the spell, verbatim (magus's own options go
        /// before the spell's name).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the `test "name" { }` blocks of spells (all spells when none is
    /// named), in the sandbox, like `buzz --test`.
    #[command(after_help = EXIT_HELP)]
    Test {
        /// Spell names or paths to `.buzz` files.
        spells: Vec<String>,
        /// Run only the tests whose name contains TEXT.
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
    },
    /// Check spells without running them: names, arguments, mutability,
    /// types and control flow of each spell and the files it imports
    /// (every spell when none is named); exit 0 when clean, 2 on errors.
    #[command(after_help = EXIT_HELP)]
    Check {
        /// Spell names or paths to `.buzz` files.
        spells: Vec<String>,
    },
    /// List the workspace's spells, each with the first sentence of its
    /// opening comment.
    #[command(after_help = EXIT_HELP)]
    List {
        /// Print only the names, one a line (for scripts and shell
        /// completion).
        #[arg(long)]
        names: bool,
    },
    /// Print the page of a diagnostic code, e.g. `magus explain MGS2001`.
    #[command(after_help = EXIT_HELP)]
    Explain {
        /// The code, e.g. MGS2001.
        #[arg(value_parser = completions::CodeParser, hide_possible_values = true)]
        code: String,
    },
    /// Inspect and lock the sandbox policy.
    #[command(subcommand, after_help = EXIT_HELP)]
    Sandbox(SandboxCommand),
    /// Print a shell completion script, e.g.
    /// `magus completions bash > ~/.local/share/bash-completion/completions/magus`.
    #[command(after_help = EXIT_HELP)]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum SandboxCommand {
    /// Validate magus.yaml, print the resolved policy, the lock state, the
    /// kernel protections in force and every startup diagnostic in full;
    /// exit 125 on errors or when magus.lock does not match.
    #[command(after_help = EXIT_HELP)]
    Check {
        /// Show the effective policy of this spell: the workspace's plus
        /// its own `spells: NAME:` section, each grant with its line.
        spell: Option<String>,
    },
    /// Write magus.lock: the fingerprint and canonical text of the declared
    /// sandbox policy. Every `magus run` then refuses a policy that differs
    /// (MGS2010). Review and commit it with magus.yaml.
    #[command(after_help = EXIT_HELP)]
    Lock,
    /// Print the smallest `spells: SPELL:` section of magus.yaml that the
    /// spell's literal paths, programs and variable names need (never a
    /// credential store); nothing runs. Exit 0.
    #[command(after_help = EXIT_HELP)]
    Suggest {
        /// The spell's name (`build`), one of the workspace's `spells/`.
        spell: String,
    },
}

/// Runs the CLI and returns the process exit status.
pub(crate) fn main() -> i32 {
    // Before anything reads the environment: a re-executed magus takes the
    // names of the stripped variables out of it (see `enforce::reexec`).
    let reexec = crate::sandbox::startup::take_reexec_state();
    let argv: Vec<OsString> = std::env::args_os().collect();
    let (cli, spell_args) = match parse(&argv) {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    if cli.global.message_format == MessageFormat::Json {
        json_panics();
    }
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let global = &cli.global;
    match cli.command {
        None | Some(Command::Run { spell: None, .. }) => spells::list(global, &env, false),
        Some(Command::List { names }) => spells::list(global, &env, names),
        Some(Command::Run {
            spell: Some(spell), ..
        }) => run::run(
            global,
            &env,
            reexec,
            run::Job::Run {
                spell,
                args: spell_args,
            },
        ),
        Some(Command::Test { spells, filter }) => {
            match test::in_processes_per_policy(global, &env, &spells, filter.as_deref()) {
                Some(status) => status,
                None => run::run(global, &env, reexec, run::Job::Test { spells, filter }),
            }
        }
        Some(Command::Check { spells }) => spell_check::check(global, &env, &spells),
        Some(Command::Explain { code }) => explain(global, &code),
        Some(Command::Init) => init::init(global),
        Some(Command::Sandbox(SandboxCommand::Check { spell })) => {
            sandbox_check::sandbox_check(global, &env, spell.as_deref())
        }
        Some(Command::Sandbox(SandboxCommand::Lock)) => sandbox_lock::sandbox_lock(global, &env),
        Some(Command::Sandbox(SandboxCommand::Suggest { spell })) => {
            suggest::suggest(global, &env, &spell)
        }
        Some(Command::Completions { shell }) => completions(global, shell),
    }
}

/// `magus completions SHELL`. clap_complete panics when its writer fails,
/// so the script is made in memory and written here, where a closed
/// stdout (`magus completions fish | head -1`) ends the command quietly,
/// as it does every other command.
fn completions(global: &GlobalArgs, shell: clap_complete::Shell) -> i32 {
    let script = completions::script(shell, &mut Cli::command(), "magus");
    let written = std::io::stdout().lock().write_all(&script);
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            let d = Diagnostic::error(format!("cannot write the completion script: {e}"));
            global.renderer().emit(&d);
            EXIT_CONFIG
        }
        _ => 0,
    }
}

/// Under `--message-format json` even a crash is one JSON object on
/// stderr, so a tool reading the stream never meets a stray line.
fn json_panics() {
    std::panic::set_hook(Box::new(|info| {
        let d = Diagnostic::error(format!("magus crashed: {info}"))
            .with_note("this is a bug in magus; please report it");
        Renderer::for_output(OutputOptions::json()).emit(&d);
    }));
}

/// Parses magus's own arguments; what follows a spell's name is the
/// spell's, verbatim, and clap never sees it.
fn parse(argv: &[OsString]) -> Result<(Cli, Vec<String>), i32> {
    let split = args::split_spell_args(argv);
    let mut command = Cli::command();
    match args::color_in(&split.magus) {
        Some(ColorChoice::Always) => command = command.color(clap::ColorChoice::Always),
        Some(ColorChoice::Never) => command = command.color(clap::ColorChoice::Never),
        _ => {}
    }
    let parsed = command
        .try_get_matches_from(&split.magus)
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = parsed.map_err(|err| usage_error(&err, &split.magus))?;
    let spell_args = args::spell_args_utf8(split.spell).map_err(|d| {
        cli.global.renderer().emit(&d);
        EXIT_CONFIG
    })?;
    Ok((cli, spell_args))
}

/// Prints a usage error (or the help or version clap was asked for) and
/// picks the exit status; under `--message-format json` an error is one
/// JSON object like every other diagnostic.
fn usage_error(err: &clap::Error, argv: &[OsString]) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = err.print();
        return 0;
    }
    if args::format_in(argv) == Some(MessageFormat::Json) {
        let text = err.render().to_string();
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let first = lines.next().unwrap_or("invalid command line");
        let message = first.strip_prefix("error: ").unwrap_or(first);
        let rest: Vec<&str> = lines.collect();
        let mut d = Diagnostic::error(message.to_string());
        if !rest.is_empty() {
            d = d.with_help(rest.join("\n"));
        }
        Renderer::for_output(OutputOptions::json()).emit(&d);
    } else {
        let _ = err.print();
    }
    EXIT_CONFIG
}

/// Finds the workspace and resolves its policy, or reports why not.
fn load(global: &GlobalArgs, env: &[(OsString, OsString)]) -> Result<Startup, i32> {
    Ok(declare(global, env, None)?.resolve(env))
}

/// Finds the workspace and reads its declared policy (with `spell`'s own
/// section, when it names one), or reports why not.
fn declare(
    global: &GlobalArgs,
    env: &[(OsString, OsString)],
    spell: Option<&str>,
) -> Result<Declared, i32> {
    let renderer = global.renderer();
    let cwd = current_dir(&renderer)?;
    let workspace = workspace_arg(global, &cwd);
    policy::declare(StartupInput {
        workspace,
        env,
        spell,
    })
    .map_err(|err| {
        renderer.emit(&err.to_diagnostic());
        EXIT_CONFIG
    })
}

/// The current directory, where the workspace search starts.
fn current_dir(renderer: &Renderer) -> Result<PathBuf, i32> {
    std::env::current_dir().map_err(|e| {
        renderer.emit(&Diagnostic::error(format!(
            "cannot read the current directory: {e}"
        )));
        EXIT_CONFIG
    })
}

/// `--workspace DIR`, or the search upwards from `cwd`.
fn workspace_arg<'a>(global: &'a GlobalArgs, cwd: &'a Path) -> WorkspaceArg<'a> {
    match &global.workspace {
        Some(dir) => WorkspaceArg::Explicit(dir),
        None => WorkspaceArg::Discover { start: cwd },
    }
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
            global.renderer().emit(&d);
            EXIT_CONFIG
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

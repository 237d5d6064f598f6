//! The `magus` command line: argument parsing, workspace discovery and the
//! wiring of policy, enforcement, interpreter and diagnostics.
//!
//! This is the one place that reads the process environment and current
//! directory; everything below it takes them as inputs.

use crate::diag::{Diagnostic, MessageFormat, Renderer};
use crate::policy::{
    self, Grant, GrantSource, Network, Policy, SandboxState, StartupInput, StateSource,
    WorkspaceArg,
};
use clap::{Parser, Subcommand};
use serde_json::json;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// Exit status for an invalid configuration or command line.
const EXIT_CONFIG: i32 = 2;

#[derive(Debug, Parser)]
#[command(name = "magus", version, about = "Run spells in a sandbox")]
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
    /// How diagnostics are printed.
    #[arg(long, global = true, value_enum, default_value_t = MessageFormat::Human)]
    message_format: MessageFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the sandbox.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
}

#[derive(Debug, Subcommand)]
enum SandboxCommand {
    /// Validate magus.yaml, print the resolved policy and every startup
    /// diagnostic; exit 2 on errors.
    Check,
}

/// Runs the CLI and returns the process exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return err.exit_code();
        }
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    match cli.command {
        Command::Sandbox(SandboxCommand::Check) => sandbox_check(&cli.global, &env),
    }
}

/// `magus sandbox check`: the policy to stdout, diagnostics to stderr.
fn sandbox_check(global: &GlobalArgs, env: &[(OsString, OsString)]) -> i32 {
    let renderer = Renderer::new(global.message_format);
    let cwd = match std::env::current_dir() {
        Ok(dir) => dir,
        Err(e) => {
            renderer.emit(&Diagnostic::error(format!(
                "cannot read the current directory: {e}"
            )));
            return EXIT_CONFIG;
        }
    };
    let workspace = match &global.workspace {
        Some(dir) => WorkspaceArg::Explicit(dir),
        None => WorkspaceArg::Discover { start: &cwd },
    };
    let startup = match policy::startup(StartupInput { workspace, env }) {
        Ok(startup) => startup,
        Err(err) => {
            renderer.emit(&err.to_diagnostic());
            return EXIT_CONFIG;
        }
    };
    let report = match global.message_format {
        MessageFormat::Human => human_report(&startup.policy),
        MessageFormat::Json => json_report(&startup.policy),
    };
    let _ = std::io::stdout().lock().write_all(report.as_bytes());
    let mut diagnostics = startup.diagnostics;
    if startup.policy.state == SandboxState::On {
        diagnostics.extend(startup.policy.child_env(env).diagnostics());
    }
    for d in &diagnostics {
        renderer.emit(d);
    }
    if diagnostics.iter().any(Diagnostic::is_error) {
        EXIT_CONFIG
    } else {
        0
    }
}

fn state_text(policy: &Policy) -> String {
    let state = match policy.state {
        SandboxState::On => "on",
        SandboxState::Off => "off",
    };
    let why = match policy.state_source {
        StateSource::Default => "default".to_string(),
        StateSource::Config(at) => format!("magus.yaml line {}", at.line),
        StateSource::Environment => policy::ENABLED_VAR.to_string(),
    };
    format!("{state} ({why})")
}

fn source_text(grant: &Grant) -> String {
    match &grant.source {
        GrantSource::Config { spelled, line, .. } => {
            format!("magus.yaml line {line} ({spelled})")
        }
        other => other.to_string(),
    }
}

fn network_text(network: &Network) -> String {
    match network {
        Network::Allow => "allow".into(),
        Network::Deny => "deny (no TCP connect or bind)".into(),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => format!("connect_tcp {connect_tcp:?}, bind_tcp {bind_tcp:?}"),
    }
}

fn human_report(policy: &Policy) -> String {
    let mut out = String::new();
    let config = policy
        .config_file
        .as_ref()
        .map_or("none".into(), |f| f.display().to_string());
    let fingerprint = policy
        .fingerprint()
        .map_or("none (no sandbox section)".into(), |f| f.to_string());
    out.push_str(&format!("workspace    {}\n", policy.workspace.display()));
    out.push_str(&format!("config       {config}\n"));
    out.push_str(&format!("sandbox      {}\n", state_text(policy)));
    out.push_str(&format!("fingerprint  {fingerprint}\n\npaths\n"));
    let width = policy
        .grants
        .iter()
        .map(|g| g.path.display().to_string().chars().count())
        .max()
        .unwrap_or(0);
    for grant in &policy.grants {
        let path = grant.path.display().to_string();
        out.push_str(&format!(
            "  {}  {path:<width$}  {}\n",
            grant.mode,
            source_text(grant)
        ));
    }
    let passthrough: Vec<String> = policy.passthrough.iter().map(|p| p.to_string()).collect();
    let passthrough = match passthrough.is_empty() {
        true => "none".to_string(),
        false => passthrough.join(", "),
    };
    out.push_str(&format!("\nenv passthrough  {passthrough}\n"));
    out.push_str(&format!(
        "network          {}\n",
        network_text(&policy.network)
    ));
    out
}

fn json_grant(grant: &Grant) -> serde_json::Value {
    let source = match &grant.source {
        GrantSource::Builtin(why) => json!({"kind": "builtin", "reason": why}),
        GrantSource::Workspace => json!({"kind": "workspace"}),
        GrantSource::Config {
            spelled,
            line,
            column,
        } => json!({"kind": "config", "spelled": spelled, "line": line, "column": column}),
    };
    json!({
        "path": grant.path.display().to_string(),
        "mode": grant.mode.as_str(),
        "source": source,
    })
}

fn json_report(policy: &Policy) -> String {
    let network = match &policy.network {
        Network::Allow => json!("allow"),
        Network::Deny => json!("deny"),
        Network::Ports {
            connect_tcp,
            bind_tcp,
        } => json!({"connect_tcp": connect_tcp, "bind_tcp": bind_tcp}),
    };
    let value = json!({
        "workspace": policy.workspace.display().to_string(),
        "config": policy.config_file.as_ref().map(|f| f.display().to_string()),
        "sandbox": state_text(policy),
        "fingerprint": policy.fingerprint().map(|f| f.to_string()),
        "grants": policy.grants.iter().map(json_grant).collect::<Vec<_>>(),
        "passthrough": policy.passthrough.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "network": network,
    });
    format!("{value}\n")
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

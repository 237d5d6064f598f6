//! The run-wide output settings every [`super::Renderer`] follows: colour
//! (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`) and verbosity (`-q`, `-v`).
//!
//! They are decided once, by the CLI, before anything is printed, and kept
//! in a process-wide cell so that every layer that says something (the
//! bindings' sink, the start-up report, a child's relayed stderr) agrees
//! without threading flags through every call.

use super::MessageFormat;
use std::io::IsTerminal;

/// `--color`: when to colour human output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum ColorChoice {
    /// Colour when stderr is a terminal, `NO_COLOR` is unset or empty, or
    /// `CLICOLOR_FORCE` is set to something other than `0`.
    #[default]
    Auto,
    Always,
    Never,
}

/// How much a run says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Verbosity {
    /// `-q`: errors only.
    Quiet,
    /// One line per event that needs attention; detail on request.
    #[default]
    Normal,
    /// `-v`: every note in full.
    Verbose,
}

/// The settings of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct OutputOptions {
    /// `--message-format`.
    pub format: MessageFormat,
    pub color: ColorChoice,
    pub verbosity: Verbosity,
}

impl OutputOptions {
    /// JSON, for what is said before (or without) the command line's
    /// options: a usage error, a crash.
    pub(crate) fn json() -> OutputOptions {
        OutputOptions {
            format: MessageFormat::Json,
            ..OutputOptions::default()
        }
    }
}

/// Whether human output on stderr is coloured, given the environment.
pub(crate) fn stderr_colored(choice: ColorChoice, env: &dyn Fn(&str) -> Option<String>) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
            if set("NO_COLOR") {
                false
            } else if env("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
                true
            } else {
                std::io::stderr().is_terminal()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn no_color_wins_over_clicolor_force_under_auto() {
        let both = env(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")]);
        assert!(!stderr_colored(ColorChoice::Auto, &both));
        let force = env(&[("CLICOLOR_FORCE", "1")]);
        assert!(stderr_colored(ColorChoice::Auto, &force));
    }

    #[test]
    fn explicit_choices_ignore_the_environment() {
        let no = env(&[("NO_COLOR", "1")]);
        assert!(stderr_colored(ColorChoice::Always, &no));
        let force = env(&[("CLICOLOR_FORCE", "1")]);
        assert!(!stderr_colored(ColorChoice::Never, &force));
    }
}

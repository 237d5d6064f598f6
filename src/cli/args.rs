//! The split of magus's command line, done before clap sees it: as with
//! `cargo run --` and `deno task`, everything after the spell's name
//! belongs to the spell, verbatim, `--help` and `--workspace` included.

use crate::diag::{ColorChoice, Diagnostic, MessageFormat};
use std::ffi::OsString;

/// magus's options that take a value as the next argument.
const VALUE_OPTIONS: [&str; 3] = ["--workspace", "--message-format", "--color"];

/// A command line cut at the spell's name.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Split {
    /// What clap parses: up to and including the spell's name.
    pub magus: Vec<OsString>,
    /// Everything after the spell's name.
    pub spell: Vec<OsString>,
}

/// Cuts `argv` after the spell's name when the command is `run`: the first
/// argument after `run` that is neither an option of magus nor its value.
pub(super) fn split_spell_args(argv: &[OsString]) -> Split {
    let whole = || Split {
        magus: argv.to_vec(),
        spell: Vec::new(),
    };
    let mut seen_run = false;
    let mut i = 1;
    while i < argv.len() {
        let Some(arg) = argv[i].to_str() else {
            if !seen_run {
                return whole();
            }
            return cut(argv, i);
        };
        match arg {
            "--" if seen_run => return cut(argv, i + 1),
            "--" => return whole(),
            _ if VALUE_OPTIONS.contains(&arg) => i += 2,
            _ if arg.starts_with('-') && arg != "-" => i += 1,
            "run" if !seen_run => {
                seen_run = true;
                i += 1;
            }
            _ if !seen_run => return whole(),
            _ => return cut(argv, i),
        }
    }
    whole()
}

fn cut(argv: &[OsString], spell_at: usize) -> Split {
    let at = (spell_at + 1).min(argv.len());
    Split {
        magus: argv[..at].to_vec(),
        spell: argv[at..].to_vec(),
    }
}

/// The spell's arguments as Buzz strings; a non-UTF-8 one is an error
/// rather than silently altered.
pub(super) fn spell_args_utf8(args: Vec<OsString>) -> Result<Vec<String>, Box<Diagnostic>> {
    args.into_iter()
        .enumerate()
        .map(|(i, a)| {
            a.into_string().map_err(|bad| {
                Box::new(
                    Diagnostic::error(format!(
                        "argument {} of the spell, {:?}, is not valid UTF-8",
                        i + 1,
                        bad
                    ))
                    .with_note("spells receive their arguments as Buzz strings"),
                )
            })
        })
        .collect()
}

/// The value of option `name` in `argv` (`--name V` or `--name=V`), the
/// last one winning, as clap does; for before clap has parsed.
fn value_of<'a>(argv: &'a [OsString], name: &str) -> Option<&'a str> {
    let mut found = None;
    let mut args = argv.iter().skip(1).filter_map(|a| a.to_str());
    while let Some(arg) = args.next() {
        if arg == name {
            found = args.next();
        } else if let Some(v) = arg.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            found = Some(v);
        }
    }
    found
}

/// `--message-format`, read before clap (for reporting clap's own errors).
pub(super) fn format_in(argv: &[OsString]) -> Option<MessageFormat> {
    match value_of(argv, "--message-format")? {
        "json" => Some(MessageFormat::Json),
        "human" => Some(MessageFormat::Human),
        _ => None,
    }
}

/// `--color`, read before clap (so clap's own messages follow it).
pub(super) fn color_in(argv: &[OsString]) -> Option<ColorChoice> {
    match value_of(argv, "--color")? {
        "always" => Some(ColorChoice::Always),
        "never" => Some(ColorChoice::Never),
        "auto" => Some(ColorChoice::Auto),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn split(args: &[&str]) -> (Vec<OsString>, Vec<OsString>) {
        let s = split_spell_args(&os(args));
        (s.magus, s.spell)
    }

    #[test]
    fn everything_after_the_spell_is_the_spells() {
        let cases: [(&[&str], &[&str], &[&str]); 8] = [
            (
                &["magus", "run", "hello", "--help"],
                &["magus", "run", "hello"],
                &["--help"],
            ),
            (
                &[
                    "magus",
                    "--workspace",
                    "/w",
                    "run",
                    "-q",
                    "hello",
                    "--workspace",
                    "/tmp",
                ],
                &["magus", "--workspace", "/w", "run", "-q", "hello"],
                &["--workspace", "/tmp"],
            ),
            (
                &["magus", "run", "--", "-x", "a"],
                &["magus", "run", "--", "-x"],
                &["a"],
            ),
            (&["magus", "run"], &["magus", "run"], &[]),
            (
                &["magus", "run", "--help"],
                &["magus", "run", "--help"],
                &[],
            ),
            (
                &["magus", "sandbox", "check", "x"],
                &["magus", "sandbox", "check", "x"],
                &[],
            ),
            (
                &["magus", "--color=never", "run", "b", "c", "--", "d"],
                &["magus", "--color=never", "run", "b"],
                &["c", "--", "d"],
            ),
            (
                &["magus", "list", "run", "x"],
                &["magus", "list", "run", "x"],
                &[],
            ),
        ];
        for (argv, magus, spell) in cases {
            assert_eq!(split(argv), (os(magus), os(spell)), "{argv:?}");
        }
    }

    #[test]
    fn options_are_read_before_clap() {
        let argv = os(&["magus", "run", "x", "--message-format", "json"]);
        assert_eq!(format_in(&argv), Some(MessageFormat::Json));
        let argv = os(&["magus", "--message-format=json", "--color", "never"]);
        assert_eq!(format_in(&argv), Some(MessageFormat::Json));
        assert_eq!(color_in(&argv), Some(ColorChoice::Never));
        assert_eq!(format_in(&os(&["magus"])), None);
    }
}

//! Rendering of diagnostics: rustc-style text for people, JSON lines for
//! tools. The source snippet is read from the file at render time, so the
//! layers that build diagnostics never carry file contents around.

use super::output::{stderr_colored, ColorChoice, OutputOptions, Verbosity};
use super::shown::{inert, shown};
use super::{Diagnostic, Severity, SourceKind};
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// How diagnostics are printed (`--message-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum MessageFormat {
    /// rustc-style text.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// Whether to colour human output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Color {
    Always,
    Never,
}

impl Color {
    /// As `--color` says (see [`stderr_colored`]).
    pub(crate) fn for_stderr(choice: ColorChoice) -> Color {
        let env = |name: &str| std::env::var(name).ok();
        if stderr_colored(choice, &env) {
            Color::Always
        } else {
            Color::Never
        }
    }
}

/// Prints diagnostics to stderr in one format.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Renderer {
    pub format: MessageFormat,
    pub color: Color,
    /// `-q`: only errors are said.
    quiet: bool,
    /// Human text goes to a terminal, which may be in the middle of an
    /// escape sequence a child left open ([`TERMINAL_RESET`]).
    terminal: bool,
}

/// Said before each human diagnostic on a terminal: a child writes to
/// the same terminal, and may leave a sequence open (`ESC P`, a control
/// string the terminal swallows to its end; `ESC ]`, a window title) or
/// an attribute set (concealed, or the background's colour), which would
/// hide everything magus says after it, the warnings about what the run
/// left behind included. CAN ends an escape or control sequence in
/// progress, ST (`ESC \\`) a control string (tmux, for one, ends a DCS
/// on ST alone), and `ESC [0m` resets the attributes; on a terminal in
/// its ordinary state none of them shows anything.
const TERMINAL_RESET: &str = "\x18\x1b\\\x1b[0m";

impl Renderer {
    /// A renderer for the output options the caller (the CLI, an embedder)
    /// passed in.
    pub(crate) fn for_output(options: OutputOptions) -> Self {
        Renderer {
            format: options.format,
            color: Color::for_stderr(options.color),
            quiet: options.verbosity == Verbosity::Quiet,
            terminal: options.format == MessageFormat::Human && stderr_is_a_terminal(),
        }
    }

    /// Writes one diagnostic to stderr, unless `-q` silences it (only
    /// errors are said then); a failed write to stderr is ignored because
    /// there is nowhere left to report it.
    pub(crate) fn emit(&self, diagnostic: &Diagnostic) {
        if self.quiet && !diagnostic.is_error() {
            return;
        }
        let text = match self.format {
            MessageFormat::Human if self.terminal => {
                format!("{TERMINAL_RESET}{}", render_human(diagnostic, self.color))
            }
            MessageFormat::Human => render_human(diagnostic, self.color),
            MessageFormat::Json => render_json(diagnostic),
        };
        let _ = io::stderr().lock().write_all(text.as_bytes());
    }
}

/// [`TERMINAL_RESET`] where stderr is a terminal, else nothing: for the
/// warnings written by hand after a run (the jail's sweep, the terminal's
/// mode put back), which a child's open sequence would hide as well.
#[cfg(kernel_layer)]
pub(crate) fn terminal_reset() -> &'static str {
    // SAFETY: isatty only reads the descriptor's state.
    match unsafe { libc::isatty(libc::STDERR_FILENO) } {
        1 => TERMINAL_RESET,
        _ => "",
    }
}

/// Whether stderr is a terminal that obeys escape sequences (`TERM=dumb`
/// says it does not).
fn stderr_is_a_terminal() -> bool {
    use std::io::IsTerminal;
    io::stderr().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// Renders one diagnostic in `format`, without colour.
pub(crate) fn render(diagnostic: &Diagnostic, format: MessageFormat) -> String {
    match format {
        MessageFormat::Human => render_human(diagnostic, Color::Never),
        MessageFormat::Json => render_json(diagnostic),
    }
}

/// The human rendering, without colour: what `magus` prints on stderr.
impl Diagnostic {
    /// The diagnostic as `magus` prints it in `format`, without colour:
    /// rustc-style text (as `Display`), or one JSON object on one line.
    pub fn render(&self, format: MessageFormat) -> String {
        render(self, format)
    }
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render_human(self, Color::Never))
    }
}

/// rustc-style text, ending with a blank line. A diagnostic with nothing
/// but a message (and maybe a code) is one line, with no blank line after
/// it: the form of the notes said at every run.
pub(crate) fn render_human(d: &Diagnostic, color: Color) -> String {
    let paint = Paint(color);
    let mut out = String::new();
    let head = match d.code {
        Some(code) => format!("{}[{}]", d.severity.as_str(), code),
        None => d.severity.as_str().to_string(),
    };
    out.push_str(&paint.severity(d.severity, &head));
    out.push_str(&paint.bold(&format!(": {}", inert(&d.message))));
    out.push('\n');
    if d.location.is_none() && d.notes.is_empty() && d.help.is_none() {
        return out;
    }
    let gutter = snippet(d, &paint, &mut out);
    for note in &d.notes {
        push_field(&mut out, &gutter, "note", &inert(note));
    }
    if let Some(help) = &d.help {
        push_field(&mut out, &gutter, "help", &inert(help));
    }
    if let Some(code) = d.code {
        let pointer = format!("for more information, run `magus explain {code}`");
        push_field(&mut out, &gutter, "note", &pointer);
    }
    out.push('\n');
    out
}

/// Writes the `--> file:line:col` header and the source line with a caret.
/// Returns the gutter padding used, so the fields below line up with it.
fn snippet(d: &Diagnostic, paint: &Paint, out: &mut String) -> String {
    let Some(loc) = &d.location else {
        return " ".to_string();
    };
    let number = loc.line.to_string();
    let pad = " ".repeat(number.len());
    let arrow = paint.blue("-->");
    out.push_str(&format!(
        "{pad}{arrow} {}:{}:{}\n",
        shown(&loc.file),
        loc.line,
        loc.column
    ));
    let Some(source) = source_line(&loc.file, loc.line) else {
        return pad;
    };
    let bar = paint.blue("|");
    let (source, caret_col) = window(&source, (loc.column.max(1) - 1) as usize);
    let source = inert(&source);
    let lead: String = source
        .chars()
        .take(caret_col)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let label = d
        .label
        .as_deref()
        .map(|l| format!(" {}", inert(l)))
        .unwrap_or_default();
    out.push_str(&format!("{pad} {bar}\n"));
    out.push_str(&format!("{} {bar} {source}\n", paint.blue(&number)));
    let room = source.chars().count().saturating_sub(caret_col).max(1);
    let carets = "^".repeat((d.span as usize).clamp(1, room));
    let caret = paint.severity(d.severity, &format!("{carets}{label}"));
    out.push_str(&format!("{pad} {bar} {lead}{caret}\n"));
    out.push_str(&format!("{pad} {bar}\n"));
    pad
}

/// The widest source line echoed whole, in characters.
const SNIPPET_WIDTH: usize = 100;
/// How much of a long line is shown before the caret.
const SNIPPET_LEAD: usize = 40;

/// `line` cut to [`SNIPPET_WIDTH`] characters around `caret` (with `…`
/// where text was left out), and the caret's column in what is shown.
fn window(line: &str, caret: usize) -> (String, usize) {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= SNIPPET_WIDTH {
        return (line.to_string(), caret);
    }
    let start = caret.saturating_sub(SNIPPET_LEAD).min(chars.len());
    let end = (start + SNIPPET_WIDTH).min(chars.len());
    let mut shown = String::new();
    let mut caret_at = caret - start;
    if start > 0 {
        shown.push('…');
        caret_at += 1;
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    (shown, caret_at)
}

fn push_field(out: &mut String, gutter: &str, name: &str, text: &str) {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    out.push_str(&format!("{gutter} = {name}: {first}\n"));
    let indent = " ".repeat(gutter.len() + 3 + name.len() + 2);
    for line in lines {
        out.push_str(&format!("{indent}{line}\n"));
    }
}

/// The 1-based `line` of `file`, if it can be read. Rendering never fails
/// for want of a snippet: without it the header alone is printed. Only the
/// first [`SNIPPET_READ_LIMIT`] bytes are read: a huge file is not echoed.
/// A link is not followed (nor a FIFO waited on): `magus.yaml` planted as
/// a link to `~/.npmrc` would otherwise have its token quoted under the
/// error that refuses it.
fn source_line(file: &std::path::Path, line: u32) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::regular_file::open_regular(file)
        .ok()?
        .take(SNIPPET_READ_LIMIT)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let raw = text.lines().nth(line.checked_sub(1)? as usize)?;
    Some(raw.trim_end().to_string())
}

/// How much of a file is read to echo one of its lines.
const SNIPPET_READ_LIMIT: u64 = 4 << 20;

/// One JSON object and a newline. Fields: `code`, `severity`, `message`,
/// `path`, `spell` (or `config`) location, `notes`, `help`, and `explain`
/// (the `magus explain CODE` command, the human form's last note).
pub(crate) fn render_json(d: &Diagnostic) -> String {
    let mut obj = Map::new();
    obj.insert("code".into(), json!(d.code.map(|c| c.as_str())));
    obj.insert("severity".into(), json!(d.severity.as_str()));
    obj.insert("message".into(), json!(d.message));
    if let Some(path) = &d.path {
        obj.insert("path".into(), json!(path));
    }
    if let Some(loc) = &d.location {
        let key = match loc.kind {
            SourceKind::Spell => "spell",
            SourceKind::Config => "config",
        };
        let value = json!({
            "file": loc.file.display().to_string(),
            "line": loc.line,
            "column": loc.column,
        });
        obj.insert(key.into(), value);
    }
    obj.insert("notes".into(), json!(d.notes));
    obj.insert("help".into(), json!(d.help));
    if let Some(code) = d.code {
        obj.insert("explain".into(), json!(format!("magus explain {code}")));
    }
    let mut line = Value::Object(obj).to_string();
    line.push('\n');
    line
}

/// One line a child wrote on its stderr, as one JSON object and a newline
/// (`--message-format json` keeps magus's stderr one object per line):
/// `{"severity": "child", "stream": "stderr", "program": ..., "message": ...}`,
/// the line without its newline, decoded lossily.
pub(crate) fn render_child_line_json(program: &str, line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let text = text.strip_suffix('\r').unwrap_or(text);
    let value = json!({
        "severity": "child",
        "stream": "stderr",
        "program": program,
        "message": text,
    });
    format!("{value}\n")
}

/// ANSI colouring that is a no-op under [`Color::Never`].
struct Paint(Color);

impl Paint {
    fn wrap(&self, sgr: &str, text: &str) -> String {
        match self.0 {
            Color::Always => format!("\x1b[{sgr}m{text}\x1b[0m"),
            Color::Never => text.to_string(),
        }
    }

    fn severity(&self, severity: Severity, text: &str) -> String {
        let sgr = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Note => "1;36",
        };
        self.wrap(sgr, text)
    }

    fn bold(&self, text: &str) -> String {
        self.wrap("1", text)
    }

    fn blue(&self, text: &str) -> String {
        self.wrap("1;34", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Location};

    fn located(dir: &std::path::Path) -> Diagnostic {
        let file = dir.join("steal.buzz");
        std::fs::write(
            &file,
            "fun main() > void {\n    fs.read(\"/etc/shadow\");\n}\n",
        )
        .unwrap();
        Diagnostic::error("read of `/etc/shadow` denied by the sandbox")
            .with_code(Code::Mgs2001)
            .with_path("/etc/shadow")
            .with_location(Location {
                kind: SourceKind::Spell,
                file,
                line: 2,
                column: 5,
            })
            .with_label("this read")
            .with_help("grant it in magus.yaml:\n  allow:\n    - path: /etc/shadow")
    }

    #[test]
    fn human_output_points_at_the_spell_line() {
        let dir = tempfile::tempdir().unwrap();
        let text = render_human(&located(dir.path()), Color::Never);
        assert!(text.starts_with("error[MGS2001]: read of `/etc/shadow`"));
        assert!(text.contains("steal.buzz:2:5\n"), "{text}");
        assert!(
            text.contains("2 |     fs.read(\"/etc/shadow\");\n"),
            "{text}"
        );
        assert!(text.contains("  |     ^ this read\n"), "{text}");
        assert!(text.contains("= help: grant it in magus.yaml:\n"), "{text}");
        assert!(text.contains("run `magus explain MGS2001`"), "{text}");
    }

    #[test]
    fn json_output_is_one_line_with_the_documented_fields() {
        let dir = tempfile::tempdir().unwrap();
        let line = render_json(&located(dir.path()));
        assert_eq!(line.matches('\n').count(), 1);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["code"], "MGS2001");
        assert_eq!(v["severity"], "error");
        assert_eq!(v["path"], "/etc/shadow");
        assert_eq!(v["spell"]["line"], 2);
        assert_eq!(v["spell"]["column"], 5);
        assert!(v["help"].as_str().unwrap().contains("allow:"));
        assert_eq!(v["explain"], "magus explain MGS2001");
    }

    #[test]
    fn long_lines_are_cut_around_the_caret() {
        let line = format!("{}X{}", "a".repeat(500), "b".repeat(500));
        let (shown, caret) = window(&line, 500);
        assert_eq!(shown.chars().count(), SNIPPET_WIDTH + 2);
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert_eq!(shown.chars().nth(caret), Some('X'));
        assert_eq!(window("short", 2), ("short".to_string(), 2));
    }

    #[test]
    fn a_bare_message_is_one_line() {
        let d = Diagnostic::note("the sandbox is off").with_code(Code::Mgs2003);
        assert_eq!(
            render_human(&d, Color::Never),
            "note[MGS2003]: the sandbox is off\n"
        );
    }

    #[test]
    fn colour_is_off_under_never() {
        let d = Diagnostic::warning("x").with_code(Code::Mgs2004);
        assert!(!render_human(&d, Color::Never).contains('\x1b'));
        assert!(render_human(&d, Color::Always).contains("\x1b[1;33m"));
    }
}

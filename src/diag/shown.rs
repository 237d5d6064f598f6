//! Text magus did not choose, as magus shows it: a name a child made, a
//! line of a spell. A terminal obeys the control characters in it (`ESC`
//! sequences erase lines, move the cursor, or open a window title that
//! swallows every byte after it), a newline starts a line that looks like
//! magus's own, and a bidirectional override shows the text in another
//! order than it is. Each such character is written as an escape
//! (`\u{1b}`), so what the user reads is what is there.

use std::borrow::Cow;
use std::path::Path;

/// The bidirectional formatting characters ("Trojan Source"): they
/// reorder the characters shown after them without being shown.
const BIDI: [char; 12] = [
    '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}',
    '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
];

fn hidden(c: char) -> bool {
    c.is_control() || BIDI.contains(&c)
}

/// `path` as one line of text to show: every control or bidirectional
/// character (a newline too) written as `\u{..}`, a byte that is not
/// UTF-8 as `\x{..}`.
pub(crate) fn shown(path: &Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match hidden(c) {
                true => out.push_str(&c.escape_unicode().to_string()),
                false => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{{{byte:02x}}}"));
        }
    }
    out
}

/// `text` with its control and bidirectional characters written as
/// `\u{..}`, except the newlines and tabs magus itself lays text out with.
pub(crate) fn inert(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match hidden(c) && c != '\n' && c != '\t' {
            true => out.push_str(&c.escape_unicode().to_string()),
            false => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `path` as one word a POSIX shell reads back as the same bytes, on one
/// line of text: `'...'` (a `'` in it written `'\''`), and where it holds
/// a character [`shown`] escapes, or bytes that are not UTF-8, those
/// written in octal through `"$(printf '...')"`, which `sh`, `bash` and
/// `zsh` all understand.
#[cfg(any(kernel_layer, all(test, unix)))]
pub(crate) fn shell_word(path: &Path) -> String {
    let bytes = path.as_os_str().as_encoded_bytes();
    let plain = std::str::from_utf8(bytes).is_ok_and(|s| !s.chars().any(hidden));
    if plain {
        return format!("'{}'", path.display().to_string().replace('\'', "'\\''"));
    }
    let mut format = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\'' => format.push_str("'\\''"),
                '\\' => format.push_str("\\\\"),
                '%' => format.push_str("%%"),
                c if hidden(c) => {
                    let mut buf = [0; 4];
                    for byte in c.encode_utf8(&mut buf).bytes() {
                        format.push_str(&format!("\\{byte:03o}"));
                    }
                }
                c => format.push(c),
            }
        }
        for byte in chunk.invalid() {
            format.push_str(&format!("\\{byte:03o}"));
        }
    }
    format!("\"$(printf '{format}')\"")
}

/// [`shown`] for a file name.
#[cfg(kernel_layer)]
pub(crate) fn shown_name(name: &std::ffi::OsStr) -> String {
    shown(Path::new(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidirectional_characters_are_written_as_escapes() {
        let path = Path::new("/w/x\r\x1b[2K\n\u{202e}y/.envrc");
        assert_eq!(shown(path), "/w/x\\u{d}\\u{1b}[2K\\u{a}\\u{202e}y/.envrc");
        assert_eq!(shown(Path::new("/w/caf\u{e9}")), "/w/caf\u{e9}");
    }

    // A path of bytes that are not UTF-8 exists only where paths are bytes.
    #[cfg(unix)]
    #[test]
    fn bytes_that_are_not_utf8_are_written_as_escapes() {
        use std::os::unix::ffi::OsStrExt;
        let raw = Path::new(std::ffi::OsStr::from_bytes(b"/w/\xff/a"));
        assert_eq!(shown(raw), "/w/\\x{ff}/a");
    }

    #[test]
    fn inert_text_keeps_its_lines() {
        assert_eq!(inert("a\n\tb"), "a\n\tb");
        assert_eq!(inert("a\x1b]2;\x07b"), "a\\u{1b}]2;\\u{7}b");
    }

    #[cfg(unix)]
    #[test]
    fn a_shell_reads_the_word_back_as_the_same_bytes() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let names: [&[u8]; 5] = [
            b"/w/plain/.envrc",
            b"/w/it's/.envrc",
            b"/w/x\r\x1b[2K\x1b]2;\n  = note: 100% \\ '$(echo no)'/.envrc",
            b"/w/\xff\xfe/.envrc",
            "/w/\u{202e}cod/.envrc".as_bytes(),
        ];
        for name in names {
            let path = Path::new(OsStr::from_bytes(name));
            let word = shell_word(path);
            assert!(!word.chars().any(|c| c.is_control()), "{word}");
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf '%s' {word}")])
                .output()
                .unwrap();
            assert_eq!(out.stdout, name, "{word}");
        }
    }
}

//! The Buzz lexer: source text to tokens with 1-based line and column.
//!
//! String literals are lexed into parts: literal text and the tokens of each
//! `{expr}` interpolation (which may itself hold string literals). Nesting of
//! interpolations is bounded so hostile input cannot exhaust the stack.

use std::rc::Rc;

/// Where a token starts: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub column: u32,
}

/// What an escape sequence stands for.
enum Escaped {
    Char(char),
    /// A raw byte above 127 (`\232`).
    Byte(u8),
}

fn push_char(text: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    text.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// A literal piece: text when its bytes are UTF-8, else bytes.
fn text_part(bytes: Vec<u8>) -> StrPart {
    match String::from_utf8(bytes) {
        Ok(text) => StrPart::Text(text),
        Err(e) => StrPart::Bytes(e.into_bytes()),
    }
}

/// One piece of a string literal.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum StrPart {
    Text(String),
    /// Text whose bytes are not UTF-8 (a `\ddd` escape above 127 that
    /// does not complete a character, as in `"\232"`).
    Bytes(Vec<u8>),
    /// The tokens of an interpolated expression, ending with [`Tok::Eof`].
    Expr(Vec<Token>),
}

/// A token kind. Keywords and punctuation are spelled as they appear.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Ident(Rc<str>),
    Int(i64),
    Double(f64),
    Str(Vec<StrPart>),
    /// `$"…"`: a pattern's source, with `\"` turned into `"`.
    Pattern(Rc<str>),
    Kw(&'static str),
    Sym(&'static str),
    /// A character-level error. Lexing stops here; the parser reports it
    /// only when it reaches it, so a syntax error on an earlier line is
    /// reported first.
    Error(Rc<str>),
    Eof,
}

impl Tok {
    /// How the token is named in "expected …, found …" messages.
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("identifier `{name}`"),
            Tok::Int(_) | Tok::Double(_) => "a number".to_string(),
            Tok::Str(_) => "a string".to_string(),
            Tok::Pattern(_) => "a pattern".to_string(),
            Tok::Kw(k) => format!("`{k}`"),
            Tok::Sym(s) => format!("`{s}`"),
            Tok::Error(message) => message.to_string(),
            Tok::Eof => "end of input".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub tok: Tok,
    pub pos: Pos,
    /// Just past its last character (the parser's expression ends).
    pub end: Pos,
}

/// A lexical error with its position.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LexError {
    pub pos: Pos,
    pub message: String,
}

const KEYWORDS: &[&str] = &[
    "and",
    "as",
    "break",
    "catch",
    "continue",
    "do",
    "else",
    "enum",
    "export",
    "false",
    "final",
    "for",
    "foreach",
    "fun",
    "if",
    "import",
    "in",
    "is",
    "mut",
    "namespace",
    "null",
    "object",
    "or",
    "return",
    "static",
    "throw",
    "true",
    "try",
    "until",
    "var",
    "void",
    "while",
];

/// Longest first, so `..` wins over `.` and `??` over `?`.
const SYMBOLS: &[&str] = &[
    "<<=", ">>=", "..", "??", "?.", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=", "^=", "<<", ">>", "!>", "*>", "=>", "::", "->", "(", ")", "{", "}", "[", "]", ",", ";",
    ":", ".", "\\", "+", "-", "*", "/", "%", "!", "=", "<", ">", "?", "&", "|", "^", "~",
];

/// Deepest nesting of string interpolations (`"{"{"…"}"}"`).
pub(crate) const MAX_INTERPOLATION_DEPTH: usize = 32;

/// Lexes `source` into tokens ending with [`Tok::Eof`], or with a
/// [`Tok::Error`] where a character-level error stopped it.
pub(super) fn lex(source: &str) -> Vec<Token> {
    let mut lexer = Lexer {
        chars: source.chars().collect(),
        at: 0,
        pos: Pos { line: 1, column: 1 },
        depth: 0,
    };
    let mut out = Vec::new();
    if let Err(e) = lexer.tokens_into(Stop::Eof, &mut out) {
        out.push(Token {
            tok: Tok::Error(Rc::from(e.message)),
            pos: e.pos,
            end: e.pos,
        });
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Stop {
    Eof,
    /// Inside an interpolation: stop at the `}` that closes it.
    CloseBrace,
}

struct Lexer {
    chars: Vec<char>,
    at: usize,
    pos: Pos,
    depth: usize,
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.at + n).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied()?;
        self.at += 1;
        if c == '\n' {
            self.pos.line = self.pos.line.saturating_add(1);
            self.pos.column = 1;
        } else {
            self.pos.column = self.pos.column.saturating_add(1);
        }
        Some(c)
    }

    fn error<T>(&self, pos: Pos, message: impl Into<String>) -> Result<T, LexError> {
        Err(LexError {
            pos,
            message: message.into(),
        })
    }

    fn tokens(&mut self, stop: Stop) -> Result<Vec<Token>, LexError> {
        let mut out = Vec::new();
        self.tokens_into(stop, &mut out).map(|()| out)
    }

    fn tokens_into(&mut self, stop: Stop, out: &mut Vec<Token>) -> Result<(), LexError> {
        let mut braces = 0usize;
        loop {
            self.skip_trivia()?;
            let pos = self.pos;
            let Some(c) = self.peek() else {
                if stop == Stop::CloseBrace {
                    return self.error(pos, "unterminated interpolation in string, expected `}`");
                }
                out.push(Token {
                    tok: Tok::Eof,
                    pos,
                    end: pos,
                });
                return Ok(());
            };
            if stop == Stop::CloseBrace && c == '}' && braces == 0 {
                self.bump();
                out.push(Token {
                    tok: Tok::Eof,
                    pos,
                    end: pos,
                });
                return Ok(());
            }
            let test_name = c == '"'
                && matches!(out.last(), Some(Token { tok: Tok::Ident(w), .. }) if &**w == "test");
            let after_dot = matches!(
                out.last(),
                Some(Token {
                    tok: Tok::Sym("."),
                    ..
                })
            );
            let start = self.at;
            let tok = if test_name {
                // A test's name is its text as written (upstream names tests
                // like "std\parseInt"), not a string with escapes.
                Tok::Str(vec![StrPart::Text(self.raw_text(1, "test name")?)])
            } else {
                self.token(c)?
            };
            if after_dot && matches!(tok, Tok::Int(_)) {
                self.tuple_index(start, pos)?;
            }
            match tok {
                Tok::Sym("{") => braces += 1,
                Tok::Sym("}") => braces = braces.saturating_sub(1),
                _ => {}
            }
            out.push(Token {
                tok,
                pos,
                end: self.pos,
            });
        }
    }

    /// `tuple.N`: upstream takes only a plain `0`, `1`, `2` or `3` there
    /// (not `0x1`, `0b1`, `1_0` or `4`).
    fn tuple_index(&self, start: usize, pos: Pos) -> Result<(), LexError> {
        match &self.chars[start..self.at] {
            ['0'..='3'] => Ok(()),
            _ => self.error(
                pos,
                "tuple property shorthand only accepts indexes 0, 1, 2 or 3",
            ),
        }
    }

    fn skip_trivia(&mut self) -> Result<(), LexError> {
        loop {
            match (self.peek(), self.peek_at(1)) {
                (Some(c), _) if c.is_whitespace() => {
                    self.bump();
                }
                (Some('/'), Some('/')) => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                (Some('/'), Some('*')) => self.block_comment()?,
                _ => return Ok(()),
            }
        }
    }

    fn block_comment(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        self.bump();
        self.bump();
        loop {
            match self.bump() {
                None => return self.error(start, "unterminated block comment, expected `*/`"),
                Some('*') if self.peek() == Some('/') => {
                    self.bump();
                    return Ok(());
                }
                Some(_) => {}
            }
        }
    }

    fn token(&mut self, c: char) -> Result<Tok, LexError> {
        if c.is_ascii_digit() {
            return self.number();
        }
        if c.is_alphabetic() || c == '_' {
            return Ok(self.word());
        }
        match (c, self.peek_at(1)) {
            ('$', Some('"')) => return self.pattern(),
            ('@', Some('"')) => return self.quoted_identifier(),
            _ => {}
        }
        match c {
            '"' => self.string('"'),
            '`' => self.string('`'),
            '\'' => self.char_literal(),
            _ => self.symbol(c),
        }
    }

    fn word(&mut self) -> Tok {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.bump();
        }
        let text: String = self.chars[start..self.at].iter().collect();
        match KEYWORDS.iter().find(|k| **k == text) {
            Some(k) => Tok::Kw(k),
            None => Tok::Ident(intern(&text)),
        }
    }

    fn symbol(&mut self, c: char) -> Result<Tok, LexError> {
        let pos = self.pos;
        for sym in SYMBOLS {
            let matches = sym
                .chars()
                .enumerate()
                .all(|(i, s)| self.peek_at(i) == Some(s));
            if matches {
                for _ in 0..sym.chars().count() {
                    self.bump();
                }
                return Ok(Tok::Sym(sym));
            }
        }
        self.error(pos, format!("unexpected character `{}`", c.escape_debug()))
    }

    fn number(&mut self) -> Result<Tok, LexError> {
        let pos = self.pos;
        if self.peek() == Some('0') {
            let radix = match self.peek_at(1) {
                Some('x') | Some('X') => 16,
                Some('b') | Some('B') => 2,
                Some('o') | Some('O') => 8,
                _ => 10,
            };
            if radix != 10 {
                self.bump();
                self.bump();
                let digits = self.digits(|c| c.is_digit(radix))?;
                return parse_int(&digits, radix, pos);
            }
        }
        let mut text = self.digits(|c| c.is_ascii_digit())?;
        let fraction =
            self.peek() == Some('.') && self.peek_at(1).is_some_and(|c| c.is_ascii_digit());
        if !fraction {
            return parse_int(&text, 10, pos);
        }
        self.bump();
        text.push('.');
        text.push_str(&self.digits(|c| c.is_ascii_digit())?);
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Tok::Double(v)),
            _ => self.error(pos, "double literal out of range"),
        }
    }

    /// Digits accepted by `ok`, with `_` separators dropped. A separator
    /// stands between two digits (`1_000`), as upstream requires.
    fn digits(&mut self, ok: impl Fn(char) -> bool) -> Result<String, LexError> {
        let mut text = String::new();
        let mut after_digit = false;
        while let Some(c) = self.peek() {
            if ok(c) {
                text.push(c);
                after_digit = true;
            } else if c == '_' {
                if !after_digit || !self.peek_at(1).is_some_and(&ok) {
                    return self.error(self.pos, "`_` must be between digits");
                }
                after_digit = false;
            } else {
                break;
            }
            self.bump();
        }
        Ok(text)
    }

    fn char_literal(&mut self) -> Result<Tok, LexError> {
        let pos = self.pos;
        self.bump();
        let c = match self.bump() {
            Some('\\') => match self.escape(pos)? {
                Escaped::Char(c) => u32::from(c),
                Escaped::Byte(b) => u32::from(b),
            },
            Some(c) if c != '\'' => u32::from(c),
            _ => return self.error(pos, "empty character literal"),
        };
        if self.bump() != Some('\'') {
            return self.error(pos, "expected `'` to close the character literal");
        }
        Ok(Tok::Int(i64::from(c)))
    }

    fn string(&mut self, quote: char) -> Result<Tok, LexError> {
        let start = self.pos;
        self.bump();
        let mut parts = Vec::new();
        let mut text = Vec::new();
        loop {
            let here = self.pos;
            match self.bump() {
                None => return self.error(start, "unterminated string literal"),
                Some('\n') if quote == '"' => {
                    return self.error(
                        start,
                        "unterminated string literal (use `` ` `` for multiline strings)",
                    )
                }
                Some(c) if c == quote => break,
                Some('\\') => match self.escape(here)? {
                    Escaped::Char(c) => push_char(&mut text, c),
                    Escaped::Byte(b) => text.push(b),
                },
                Some('{') => {
                    if !text.is_empty() {
                        parts.push(text_part(std::mem::take(&mut text)));
                    }
                    parts.push(StrPart::Expr(self.interpolation(here)?));
                }
                Some(c) => push_char(&mut text, c),
            }
        }
        if !text.is_empty() || parts.is_empty() {
            parts.push(text_part(text));
        }
        Ok(Tok::Str(parts))
    }

    /// `$"…"`: kept raw for the regex engine; only `\"` is an escape.
    fn pattern(&mut self) -> Result<Tok, LexError> {
        self.raw_text(2, "pattern literal")
            .map(|text| Tok::Pattern(Rc::from(text)))
    }

    /// Text up to the closing `"`, after `skip` opening characters, where
    /// only `\"` is an escape.
    fn raw_text(&mut self, skip: usize, what: &str) -> Result<String, LexError> {
        let start = self.pos;
        for _ in 0..skip {
            self.bump();
        }
        let mut text = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return self.error(start, format!("unterminated {what}")),
                Some('"') => return Ok(text),
                Some('\\') if self.peek() == Some('"') => {
                    self.bump();
                    text.push('"');
                }
                Some(c) => text.push(c),
            }
        }
    }

    /// `@"any name"`: an identifier that need not look like one.
    fn quoted_identifier(&mut self) -> Result<Tok, LexError> {
        let start = self.pos;
        self.bump();
        self.bump();
        let mut text = String::new();
        loop {
            match self.bump() {
                None | Some('\n') => return self.error(start, "unterminated `@\"…\"` identifier"),
                Some('"') => return Ok(Tok::Ident(Rc::from(text))),
                Some(c) => text.push(c),
            }
        }
    }

    fn interpolation(&mut self, pos: Pos) -> Result<Vec<Token>, LexError> {
        if self.depth >= MAX_INTERPOLATION_DEPTH {
            return self.error(pos, "string interpolations nested too deeply");
        }
        self.depth += 1;
        let tokens = self.tokens(Stop::CloseBrace);
        self.depth -= 1;
        tokens
    }

    fn escape(&mut self, pos: Pos) -> Result<Escaped, LexError> {
        let c = match self.bump() {
            Some('n') => '\n',
            Some('t') => '\t',
            Some('r') => '\r',
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('v') => '\u{b}',
            Some('$') => '$',
            Some(d) if d.is_ascii_digit() => return self.raw_byte(d, pos),
            Some('\\') => '\\',
            Some('"') => '"',
            Some('\'') => '\'',
            Some('`') => '`',
            Some('{') => '{',
            Some('}') => '}',
            Some('u') => return self.unicode_escape(pos).map(Escaped::Char),
            Some(c) => {
                return self.error(
                    pos,
                    format!("unknown escape sequence `\\{}`", c.escape_debug()),
                )
            }
            None => return self.error(pos, "unterminated escape sequence"),
        };
        Ok(Escaped::Char(c))
    }

    /// `\ddd`: a byte given in decimal (as upstream Buzz reads it, so
    /// `"\012"` is form feed, 12). Bytes above 127 go in as bytes: several
    /// may spell one UTF-8 character (`"\226\150\182"` is `▶`), or leave
    /// the string not UTF-8 (`"\232"`), which upstream allows too.
    fn raw_byte(&mut self, first: char, pos: Pos) -> Result<Escaped, LexError> {
        let mut value = first.to_digit(10).unwrap_or_default();
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            self.bump();
            value = value.saturating_mul(10).saturating_add(d);
        }
        match u8::try_from(value) {
            Ok(b) if b.is_ascii() => Ok(Escaped::Char(char::from(b))),
            Ok(b) => Ok(Escaped::Byte(b)),
            Err(_) => self.error(pos, "raw char should be between 0 and 255"),
        }
    }

    /// `\u{1F600}`.
    fn unicode_escape(&mut self, pos: Pos) -> Result<char, LexError> {
        if self.bump() != Some('{') {
            return self.error(pos, "expected `{` after `\\u`");
        }
        let digits = self.digits(|c| c.is_ascii_hexdigit())?;
        if self.bump() != Some('}') || digits.is_empty() || digits.len() > 6 {
            return self.error(pos, "malformed unicode escape, expected `\\u{HEX}`");
        }
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .map_or_else(|| self.error(pos, "invalid unicode scalar value"), Ok)
    }
}

fn parse_int(digits: &str, radix: u32, pos: Pos) -> Result<Tok, LexError> {
    if digits.is_empty() {
        return Err(LexError {
            pos,
            message: "expected digits in integer literal".into(),
        });
    }
    i64::from_str_radix(digits, radix)
        .map(Tok::Int)
        .map_err(|_| LexError {
            pos,
            message: format!(
                "integer literal out of range (the largest int is {})",
                i64::MAX
            ),
        })
}

/// Most names a thread interns; past it a name is a fresh string (still
/// correct, only slower to compare), so parsing endless input (the fuzzer)
/// cannot grow the table without bound.
const MAX_INTERNED: usize = 1 << 14;

/// The one shared `Rc<str>` for an identifier, so the interpreter's name
/// lookups usually find their binding by pointer, without comparing bytes.
pub(crate) fn intern(text: &str) -> Rc<str> {
    thread_local! {
        static NAMES: std::cell::RefCell<std::collections::HashSet<Rc<str>>> =
            std::cell::RefCell::default();
    }
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some(name) = names.get(text) {
            return name.clone();
        }
        let name: Rc<str> = Rc::from(text);
        if names.len() < MAX_INTERNED {
            names.insert(name.clone());
        }
        name
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).into_iter().map(|t| t.tok).collect()
    }

    fn lex_error(src: &str) -> LexError {
        let last = lex(src).pop().expect("at least one token");
        match last.tok {
            Tok::Error(message) => LexError {
                pos: last.pos,
                message: message.to_string(),
            },
            other => panic!("{src:?} lexed without error, ending with {other:?}"),
        }
    }

    fn text(s: &str) -> Tok {
        Tok::Str(vec![StrPart::Text(s.into())])
    }

    #[test]
    fn lexes_tokens() {
        let ident = |s: &str| Tok::Ident(Rc::from(s));
        let cases: Vec<(&str, &str, Vec<Tok>)> = vec![
            ("int", "42", vec![Tok::Int(42)]),
            ("underscores", "1_000", vec![Tok::Int(1000)]),
            ("hex", "0xff", vec![Tok::Int(255)]),
            ("binary", "0b101", vec![Tok::Int(5)]),
            ("double", "1.5", vec![Tok::Double(1.5)]),
            (
                "range not double",
                "0..3",
                vec![Tok::Int(0), Tok::Sym(".."), Tok::Int(3)],
            ),
            ("keyword", "final x", vec![Tok::Kw("final"), ident("x")]),
            (
                "coalesce",
                "a ?? b",
                vec![ident("a"), Tok::Sym("??"), ident("b")],
            ),
            (
                "backslash",
                "std\\print",
                vec![ident("std"), Tok::Sym("\\"), ident("print")],
            ),
            (
                "error type",
                "> int !> str",
                vec![Tok::Sym(">"), ident("int"), Tok::Sym("!>"), ident("str")],
            ),
            ("comment", "1 // two\n3", vec![Tok::Int(1), Tok::Int(3)]),
            (
                "block comment",
                "1 /* two */ 3",
                vec![Tok::Int(1), Tok::Int(3)],
            ),
            ("escapes", r#""a\n\"\{""#, vec![text("a\n\"{")]),
            ("empty string", r#""""#, vec![text("")]),
            ("char", "'A'", vec![Tok::Int(65)]),
            ("unicode", r#""\u{41}""#, vec![text("A")]),
            ("multiline", "`a\nb`", vec![text("a\nb")]),
            ("raw zeros", r#""\000x""#, vec![text("\0x")]),
            (
                "raw decimal",
                r#""\007\008\012\11""#,
                vec![text("\u{7}\u{8}\u{c}\u{b}")],
            ),
            ("raw then digit", r#""\0""#, vec![text("\0")]),
            (
                "control escapes",
                r#""\a\b\f\v""#,
                vec![text("\u{7}\u{8}\u{c}\u{b}")],
            ),
        ];
        for (name, src, mut want) in cases {
            want.push(Tok::Eof);
            assert_eq!(kinds(src), want, "case {name}");
        }
    }

    #[test]
    fn lexes_interpolation_with_nested_strings() {
        let toks = kinds(r#""a {"b"} c""#);
        let Tok::Str(parts) = &toks[0] else {
            panic!("not a string: {toks:?}")
        };
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], StrPart::Text("a ".into()));
        let StrPart::Expr(inner) = &parts[1] else {
            panic!("not an expr part")
        };
        assert_eq!(inner[0].tok, text("b"));
        assert_eq!(parts[2], StrPart::Text(" c".into()));
    }

    #[test]
    fn reports_errors_with_positions() {
        let cases = [
            (
                "unterminated",
                "x = \"abc",
                1,
                5,
                "unterminated string literal",
            ),
            (
                "big int",
                "\n  99999999999999999999",
                2,
                3,
                "integer literal out of range",
            ),
            ("bad char", "a # b", 1, 3, "unexpected character `#`"),
            ("bad escape", r#""\q""#, 1, 2, "unknown escape sequence"),
            ("open interpolation", r#""{1"#, 1, 4, "unterminated"),
            ("raw byte too big", r#""\256""#, 1, 2, "between 0 and 255"),
        ];
        for (name, src, line, column, msg) in cases {
            let err = lex_error(src);
            assert_eq!(
                (err.pos.line, err.pos.column),
                (line, column),
                "case {name}: {err:?}"
            );
            assert!(err.message.contains(msg), "case {name}: {}", err.message);
        }
    }

    #[test]
    fn byte_escapes_make_text_or_bytes() {
        let toks = lex(r#""\226\150\182" "a\232b""#);
        assert_eq!(toks[0].tok, Tok::Str(vec![StrPart::Text("▶".into())]));
        assert_eq!(
            toks[1].tok,
            Tok::Str(vec![StrPart::Bytes(vec![b'a', 232, b'b'])])
        );
    }

    #[test]
    fn deep_interpolation_is_an_error() {
        let src = "\"{".repeat(100);
        assert!(lex_error(&src).message.contains("nested too deeply"));
    }
}

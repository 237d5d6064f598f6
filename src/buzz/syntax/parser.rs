//! The Buzz parser: tokens to a [`Program`], recursive descent with
//! precedence climbing for binary operators.
//!
//! Nesting (blocks, parentheses, operator chains, postfix chains, types) is
//! bounded by [`MAX_NESTING`], so the tree it builds can be evaluated and
//! dropped without exhausting the stack, whatever the input.

use super::ast::*;
use super::lexer::{lex, Pos, StrPart, Tok, Token};
use std::path::Path;
use std::rc::Rc;

/// Deepest syntactic nesting accepted (see the module doc). Real spells nest
/// a few dozen levels; the evaluator's own limits are sized so a tree this
/// deep is safe on an 8 MiB stack in a debug build.
pub(crate) const MAX_NESTING: usize = 200;

/// A syntax error with its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParseError {
    pub pos: Pos,
    pub message: String,
}

/// The error for `let name = ...`, and its help (see [`help_for`]).
const LET_MESSAGE: &str = "`let` is not a Buzz keyword";
const LET_HELP: &str = "Buzz declares with `final` (bound once) or `var` (may be assigned \
    again): `final name = value;`, `var count = 0;`";

/// How to fix the syntax error `message`, when the parser can tell. Kept
/// out of [`ParseError`]: every frame of the recursive descent holds a
/// `PResult`, and a larger error costs stack at every level.
pub(crate) fn help_for(message: &str) -> Option<&'static str> {
    (message == LET_MESSAGE).then_some(LET_HELP)
}

type PResult<T> = Result<T, ParseError>;

/// Parses `source` into statements; `file` is recorded in the program.
pub(crate) fn parse_program(file: &Path, source: &str) -> PResult<Program> {
    let tokens = lex(source);
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        depth: 0,
        file: Rc::from(file),
        namespace: Vec::new(),
        exports: Vec::new(),
        protocols: Vec::new(),
    };
    let mut statements = Vec::new();
    while !parser.check(&Tok::Eof) {
        statements.push(parser.statement()?);
    }
    Ok(Program {
        file: file.to_path_buf(),
        statements,
        namespace: parser.namespace,
        exports: parser.exports,
        protocols: parser.protocols,
        resolved: Default::default(),
    })
}

struct Parser<'t> {
    tokens: &'t [Token],
    at: usize,
    depth: usize,
    file: Rc<Path>,
    namespace: Vec<Rc<str>>,
    exports: Vec<Rc<str>>,
    protocols: Vec<Rc<ProtocolDecl>>,
}

/// Most places a tuple `.{ a, b }` has (upstream's limit).
const MAX_TUPLE: i64 = 4;

/// An anonymous object is either a tuple or named fields, not both, and a
/// tuple has at most [`MAX_TUPLE`] places.
fn tuple_rules(named: bool, positional: usize, pos: Pos) -> PResult<()> {
    let message = if named && positional > 0 {
        "can't mix tuple notation and named fields in an anonymous object"
    } else if positional as i64 > MAX_TUPLE {
        "tuples can't have more than 4 elements"
    } else {
        return Ok(());
    };
    Err(ParseError {
        pos,
        message: message.into(),
    })
}

/// What magus deliberately leaves out of Buzz (docs/buzz.md), by the
/// identifier that starts it: spells get this error, located.
const MISSING: &[(&str, &str)] = &[
    ("zdef", "`zdef` (FFI to native code) is not available in magus: spells reach the system only through the gated fs/sh/env and buzz:fs/os/io"),
];

/// Binary operators by precedence level, lowest first. `??` binds tighter
/// than `+` and looser than `*`, as upstream (`sum + resume f ?? 0`).
const LEVELS: &[&[(&str, BinKind)]] = &[
    &[("or", BinKind::Or)],
    &[("and", BinKind::And)],
    &[
        ("==", BinKind::Op(BinOp::Eq)),
        ("!=", BinKind::Op(BinOp::Ne)),
    ],
    &[
        ("<", BinKind::Op(BinOp::Lt)),
        ("<=", BinKind::Op(BinOp::Le)),
        (">", BinKind::Op(BinOp::Gt)),
        (">=", BinKind::Op(BinOp::Ge)),
        ("is", BinKind::Is),
        ("as", BinKind::As),
    ],
    &[("|", BinKind::Op(BinOp::BitOr))],
    &[("^", BinKind::Op(BinOp::BitXor))],
    &[("&", BinKind::Op(BinOp::BitAnd))],
    &[
        ("<<", BinKind::Op(BinOp::Shl)),
        (">>", BinKind::Op(BinOp::Shr)),
    ],
    &[("..", BinKind::Range)],
    &[
        ("+", BinKind::Op(BinOp::Add)),
        ("-", BinKind::Op(BinOp::Sub)),
    ],
    // Tighter than `+`, as upstream's `NullCoalescing` precedence:
    // `a?.x ?? 0 + b?.x ?? 0` adds the two defaults.
    &[("??", BinKind::Coalesce)],
    &[
        ("*", BinKind::Op(BinOp::Mul)),
        ("/", BinKind::Op(BinOp::Div)),
        ("%", BinKind::Op(BinOp::Rem)),
    ],
];

#[derive(Clone, Copy)]
enum BinKind {
    Op(BinOp),
    And,
    Or,
    Coalesce,
    Range,
    Is,
    As,
}

const COMPOUND: &[(&str, BinOp)] = &[
    ("+=", BinOp::Add),
    ("-=", BinOp::Sub),
    ("*=", BinOp::Mul),
    ("/=", BinOp::Div),
    ("%=", BinOp::Rem),
    ("&=", BinOp::BitAnd),
    ("|=", BinOp::BitOr),
    ("^=", BinOp::BitXor),
    ("<<=", BinOp::Shl),
    (">>=", BinOp::Shr),
];

fn spelled(tok: &Tok) -> Option<&'static str> {
    match tok {
        Tok::Kw(k) => Some(k),
        Tok::Sym(s) => Some(s),
        _ => None,
    }
}

/// The name a declaration introduces, for `export`.
fn declared_name(kind: &StmtKind) -> Option<Rc<str>> {
    match kind {
        StmtKind::Var(d) => Some(d.name.clone()),
        StmtKind::Fun(d) => Some(d.name.clone()),
        StmtKind::Object(d) => Some(d.name.clone()),
        StmtKind::Enum(d) => Some(d.name.clone()),
        StmtKind::Protocol(name) => Some(name.clone()),
        _ => None,
    }
}

/// Whether `out` followed by `next` is the variable `out` rather than the
/// `out value;` statement.
fn ends_out(next: &Tok) -> bool {
    matches!(next, Tok::Sym(s) if !matches!(*s, "{" | "-" | "!" | "<" | "$"))
        || matches!(next, Tok::Kw("is" | "as" | "and" | "or"))
        || matches!(next, Tok::Eof)
}

impl<'t> Parser<'t> {
    // ----- token helpers -----

    fn peek(&self) -> &'t Token {
        let last = self.tokens.len().saturating_sub(1);
        &self.tokens[self.at.min(last)]
    }

    fn peek_at(&self, n: usize) -> &'t Tok {
        let last = self.tokens.len().saturating_sub(1);
        &self.tokens[(self.at + n).min(last)].tok
    }

    fn pos(&self) -> Pos {
        self.peek().pos
    }

    /// Just past the last token consumed: where the expression that
    /// token closes ends.
    fn end(&self) -> Pos {
        let last = self.at.min(self.tokens.len()).saturating_sub(1);
        self.tokens.get(last).map_or(Pos::default(), |t| t.end)
    }

    fn advance(&mut self) -> &'t Token {
        let t = self.peek();
        if self.at < self.tokens.len() {
            self.at += 1;
        }
        t
    }

    fn check(&self, tok: &Tok) -> bool {
        &self.peek().tok == tok
    }

    fn is(&self, word: &str) -> bool {
        spelled(&self.peek().tok) == Some(word)
    }

    /// Whether the current token is the identifier `word` (a contextual
    /// keyword such as `match`, `from` or `out`).
    fn is_word(&self, word: &str) -> bool {
        matches!(&self.peek().tok, Tok::Ident(name) if &**name == word)
    }

    /// Skips `::<T, …>` generic arguments or parameters, returning whether
    /// there were any.
    fn generics(&mut self) -> PResult<bool> {
        if !(self.is("::") && matches!(self.peek_at(1), Tok::Sym("<"))) {
            return Ok(false);
        }
        self.advance();
        self.advance();
        while !self.is(">") {
            self.ty()?;
            if !self.eat(",") {
                break;
            }
        }
        self.expect(">", "to close the generic arguments")?;
        Ok(true)
    }

    /// `::<T, …>` type arguments at a use (`f::<int>(x)`), kept so the
    /// call binds them; empty when there are none.
    fn type_arguments(&mut self) -> PResult<Vec<Type>> {
        let mut types = Vec::new();
        if !(self.is("::") && matches!(self.peek_at(1), Tok::Sym("<"))) {
            return Ok(types);
        }
        self.advance();
        self.advance();
        while !self.is(">") {
            types.push(self.ty()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(">", "to close the generic arguments")?;
        Ok(types)
    }

    /// `::<T, …>` generic parameters of a function: their names.
    fn generic_parameters(&mut self) -> PResult<Vec<Rc<str>>> {
        let mut names = Vec::new();
        if !(self.is("::") && matches!(self.peek_at(1), Tok::Sym("<"))) {
            return Ok(names);
        }
        self.advance();
        self.advance();
        while !self.is(">") {
            names.push(self.ident("for a generic parameter")?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(">", "to close the generic parameters")?;
        Ok(names)
    }

    /// `:label` after a loop header.
    fn label(&mut self) -> PResult<Option<Rc<str>>> {
        if self.eat(":") {
            return Ok(Some(self.ident("for the loop label")?));
        }
        Ok(None)
    }

    fn eat(&mut self, word: &str) -> bool {
        let hit = self.is(word);
        if hit {
            self.advance();
        }
        hit
    }

    /// A syntax error here; at a character-level error token, that error
    /// instead (the parser got this far, so it is the first error).
    fn error<T>(&self, message: impl Into<String>) -> PResult<T> {
        let message = match &self.peek().tok {
            Tok::Error(lexical) => lexical.to_string(),
            _ => message.into(),
        };
        Err(ParseError {
            pos: self.pos(),
            message,
        })
    }

    fn expected<T>(&self, what: &str, context: &str) -> PResult<T> {
        let found = self.peek().tok.describe();
        self.error(format!("expected {what} {context}, found {found}"))
    }

    fn expect(&mut self, word: &str, context: &str) -> PResult<Pos> {
        let pos = self.pos();
        if self.eat(word) {
            return Ok(pos);
        }
        self.missing(word, context)
    }

    /// The error for a missing `word`. Out of line, as the frames of the
    /// recursive descent stay small. A missing `;` is said at the end of
    /// the line that lacks it, not at the next line's first token (as
    /// rustc says it).
    #[inline(never)]
    fn missing<T>(&self, word: &str, context: &str) -> PResult<T> {
        let missing = self.expected(&format!("`{word}`"), context);
        let lexical = matches!(self.peek().tok, Tok::Error(_));
        match missing {
            Err(mut e) if word == ";" && self.at > 0 && !lexical => {
                e.pos = self.end();
                Err(e)
            }
            other => other,
        }
    }

    fn ident(&mut self, context: &str) -> PResult<Rc<str>> {
        match &self.peek().tok {
            Tok::Ident(name) => {
                self.advance();
                Ok(name.clone())
            }
            _ => self.expected("a name", context),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_NESTING {
            return self.error(format!(
                "nesting too deep: more than {MAX_NESTING} levels of blocks or expressions"
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        self.enter()?;
        let result = f(self);
        self.depth -= 1;
        result
    }

    // ----- statements -----

    fn statement(&mut self) -> PResult<Stmt> {
        // A nested block skips `statement_inner`, whose frame is large in a
        // debug build: deep `{{{…` then costs less stack per level.
        if self.is("{") {
            return self.nested(|p| {
                let pos = p.pos();
                let body = p.block("to open a block")?;
                Ok(Stmt {
                    kind: StmtKind::Block(body),
                    pos,
                })
            });
        }
        self.nested(Self::statement_inner)
    }

    fn statement_inner(&mut self) -> PResult<Stmt> {
        let pos = self.pos();
        self.no_let()?;
        if let Some(kind) = self.contextual_statement()? {
            return Ok(Stmt { kind, pos });
        }
        if let Some(stmt) = self.keyword_statement(pos)? {
            return Ok(stmt);
        }
        let expr = self.expression()?;
        self.expect(";", "after expression")?;
        Ok(Stmt {
            kind: StmtKind::Expr(expr),
            pos,
        })
    }

    /// `let x = ...` from another language: Buzz declares with `final`
    /// and `var`, and without this the error would be a missing `;`
    /// after the name `let`. Out of line, to keep `statement_inner` small.
    #[inline(never)]
    fn no_let(&self) -> PResult<()> {
        let Tok::Ident(word) = &self.peek().tok else {
            return Ok(());
        };
        let named = matches!(self.peek_at(1), Tok::Ident(_) | Tok::Kw("mut"));
        if &**word != "let" || !named {
            return Ok(());
        }
        Err(ParseError {
            pos: self.pos(),
            message: LET_MESSAGE.into(),
        })
    }

    /// A statement that starts with a keyword, or `None`. Out of line:
    /// its many arms make a large frame in a debug build, and nested
    /// blocks (`from { out from { … } }`) recurse through
    /// `statement_inner`, which stays small.
    #[inline(never)]
    fn keyword_statement(&mut self, pos: Pos) -> PResult<Option<Stmt>> {
        let kind = match spelled(&self.peek().tok) {
            Some("export") if matches!(self.peek_at(1), Tok::Ident(w) if &**w != "extern") => {
                self.advance();
                return self.export_names(pos).map(Some);
            }
            Some("export") => {
                self.advance();
                let stmt = self.statement_inner()?;
                if let Some(name) = declared_name(&stmt.kind) {
                    self.exports.push(name);
                }
                return Ok(Some(stmt));
            }
            Some("namespace") => self.namespace()?,
            Some("import") => self.import()?,
            Some("final") | Some("var") => StmtKind::Var(self.var_decl()?),
            Some("mut") if matches!(self.peek_at(1), Tok::Kw("fun")) => {
                return self.error("`mut fun` is only allowed inside an object")
            }
            Some("fun") if matches!(self.peek_at(1), Tok::Ident(_)) => {
                self.advance();
                let decl = self.function(pos, false)?;
                self.eat(";");
                StmtKind::Fun(decl)
            }
            Some("static") => return self.error("`static` is only allowed inside an object"),
            Some("object") => StmtKind::Object(self.object()?),
            Some("enum") => StmtKind::Enum(self.enumeration()?),
            Some("if") => self.if_stmt()?,
            Some("while") => self.while_stmt()?,
            Some("do") => self.do_until()?,
            Some("for") => self.for_stmt()?,
            Some("foreach") => self.foreach()?,
            Some("break") => StmtKind::Break(self.jump("break")?),
            Some("continue") => StmtKind::Continue(self.jump("continue")?),
            Some("return") => self.return_stmt()?,
            Some("throw") => self.throw_stmt()?,
            Some("try") => self.try_stmt()?,
            Some("{") => StmtKind::Block(self.block("to open a block")?),
            _ => return Ok(None),
        };
        Ok(Some(Stmt { kind, pos }))
    }

    /// `export name;` or `export a\b as c;`: exports an existing name, or
    /// re-exports another module's under a new one.
    fn export_names(&mut self, pos: Pos) -> PResult<Stmt> {
        let first_pos = self.pos();
        let first = self.ident("after `export`")?;
        let mut target = Expr {
            kind: ExprKind::Var(first.clone(), Resolved::default()),
            pos: first_pos,
            end: self.end(),
        };
        let mut last = first;
        while self.eat("\\") {
            let name = self.ident("in the exported name")?;
            target = Expr {
                kind: ExprKind::Field {
                    object: Box::new(target),
                    name: name.clone(),
                    optional: false,
                    cache: Default::default(),
                },
                pos: first_pos,
                end: self.end(),
            };
            last = name;
        }
        let alias = if self.eat("as") {
            Some(self.ident("after `as`")?)
        } else {
            None
        };
        self.expect(";", "after the exported name")?;
        let name = alias.unwrap_or(last);
        self.exports.push(name.clone());
        let kind = match target.kind {
            ExprKind::Var(ref v, _) if *v == name => StmtKind::Namespace,
            _ => StmtKind::Var(VarDecl {
                name,
                mutability: Mutability::Final,
                ty: None,
                init: Some(target),
                slot: Resolved::default(),
            }),
        };
        Ok(Stmt { kind, pos })
    }

    /// `break;`, `break label;` and the same for `continue`.
    fn jump(&mut self, keyword: &str) -> PResult<Option<Rc<str>>> {
        self.advance();
        let label = match &self.peek().tok {
            Tok::Ident(name) => {
                let name = name.clone();
                self.advance();
                Some(name)
            }
            _ => None,
        };
        self.expect(";", &format!("after `{keyword}`"))?;
        Ok(label)
    }

    /// Statements introduced by a contextual keyword (an identifier that is
    /// only special here): `test`, `protocol`, `match`, `out`, `x: T = v;`.
    fn contextual_statement(&mut self) -> PResult<Option<StmtKind>> {
        let Tok::Ident(word) = &self.peek().tok else {
            return Ok(None);
        };
        let next = self.peek_at(1);
        if let Some((_, why)) = MISSING.iter().find(|(w, _)| **w == **word) {
            if matches!(next, Tok::Sym("(")) {
                return self.error(*why);
            }
        }
        Ok(Some(match (&**word, next) {
            ("extern", Tok::Kw("fun")) => {
                return self.error(
                    "`extern fun` (a native function through FFI) is not available in magus",
                )
            }
            ("test", Tok::Str(_)) => self.test_block()?,
            ("protocol", Tok::Ident(_)) => self.protocol()?,
            ("match", Tok::Sym("(")) => {
                let expr = self.expression()?;
                self.eat(";");
                StmtKind::Expr(expr)
            }
            ("out", next) if !ends_out(next) => {
                self.advance();
                let value = self.expression()?;
                self.expect(";", "after `out`")?;
                StmtKind::Out(value)
            }
            (_, Tok::Sym(":")) => StmtKind::Var(self.typed_decl()?),
            _ => return Ok(None),
        }))
    }

    /// `name: T = value;`, a declaration without `var` or `final`.
    fn typed_decl(&mut self) -> PResult<VarDecl> {
        let name = self.ident("in declaration")?;
        self.expect(":", "after the name")?;
        let ty = Some(self.ty()?);
        let init = if self.eat("=") {
            Some(self.expression()?)
        } else {
            None
        };
        self.expect(";", "after the declaration")?;
        Ok(VarDecl {
            name,
            mutability: Mutability::Final,
            ty,
            init,
            slot: Resolved::default(),
        })
    }

    fn test_block(&mut self) -> PResult<StmtKind> {
        self.advance();
        let name = match &self.advance().tok {
            Tok::Str(parts) => match parts.as_slice() {
                [StrPart::Text(name)] => Rc::from(name.as_str()),
                _ => return self.error("a test name must be a plain string"),
            },
            _ => return self.expected("a test name string", "after `test`"),
        };
        let body = self.block("to open the test body")?;
        Ok(StmtKind::Test { name, body })
    }

    /// `protocol P { [mut] fun f(…) > T; … }`: signatures only.
    fn protocol(&mut self) -> PResult<StmtKind> {
        self.advance();
        let name = self.ident("after `protocol`")?;
        self.expect("{", "to open the protocol body")?;
        let mut methods = Vec::new();
        while !self.is("}") && !self.check(&Tok::Eof) {
            self.eat("mut");
            self.expect("fun", "in a protocol (it holds method signatures)")?;
            methods.push(self.ident("for the method name")?);
            self.expect("(", "to open the parameter list")?;
            self.params()?;
            self.signature_rest()?;
            self.expect(";", "after a protocol method signature")?;
        }
        self.expect("}", "to close the protocol body")?;
        self.protocols.push(Rc::new(ProtocolDecl {
            name: name.clone(),
            methods,
        }));
        Ok(StmtKind::Protocol(name))
    }

    /// `> R !> E, …` after a parameter list; the return type.
    fn signature_rest(&mut self) -> PResult<Type> {
        Ok(self.signature_yields()?.0)
    }

    /// `> R *> Y !> E, …`: the return type and the yield type, if any.
    fn signature_yields(&mut self) -> PResult<(Type, Option<Type>)> {
        let ret = if self.eat(">") {
            // `fun f() > { … }`: the body where the result type should be
            // (a map type `{K: V}` starts with a type, not a statement).
            let statement =
                |t: &Tok| matches!(t, Tok::Kw(k) if !matches!(*k, "fun" | "mut" | "void"));
            if self.is("{")
                && (statement(self.peek_at(1)) || matches!(self.peek_at(1), Tok::Sym("}")))
            {
                return self.expected("a type", "after `>` (the function's result type)");
            }
            self.ty()?
        } else {
            Type::Void
        };
        let yields = if self.eat("*>") {
            Some(self.ty()?)
        } else {
            None
        };
        if self.eat("!>") {
            self.ty()?;
            // In a function type inside a parameter list, `, name:` is the
            // next parameter, not another error type.
            while self.is(",")
                && !(matches!(self.peek_at(1), Tok::Ident(_))
                    && matches!(self.peek_at(2), Tok::Sym(":")))
                && !matches!(self.peek_at(1), Tok::Sym(")"))
            {
                self.advance();
                self.ty()?;
            }
        }
        Ok((ret, yields))
    }

    fn namespace(&mut self) -> PResult<StmtKind> {
        self.advance();
        let mut path = vec![self.ident("after `namespace`")?];
        while self.eat("\\") {
            path.push(self.ident("in namespace path")?);
        }
        self.expect(";", "after namespace")?;
        self.namespace = path;
        Ok(StmtKind::Namespace)
    }

    fn import(&mut self) -> PResult<StmtKind> {
        self.advance();
        let mut names = Vec::new();
        let selective = matches!(self.peek_at(1), Tok::Sym(","))
            || matches!(self.peek_at(1), Tok::Ident(w) if &**w == "from");
        if matches!(self.peek().tok, Tok::Ident(_)) && !selective {
            return self.expected("a module name string", "after `import`");
        }
        while let Tok::Ident(name) = &self.peek().tok {
            names.push(name.clone());
            self.advance();
            if !self.eat(",") {
                if !self.is_word("from") {
                    return self.expected("`,` or `from`", "in a selective import");
                }
                self.advance();
                break;
            }
        }
        let module = match &self.peek().tok {
            Tok::Str(parts) => match parts.as_slice() {
                [StrPart::Text(name)] => Rc::from(name.as_str()),
                _ => return self.error("the module name of an import must be a plain string"),
            },
            _ => return self.expected("a module name string", "after `import`"),
        };
        self.advance();
        let alias = if self.eat("as") {
            Some(self.ident("after `as`")?)
        } else {
            None
        };
        self.expect(";", "after import")?;
        Ok(StmtKind::Import {
            module,
            alias,
            names,
        })
    }

    fn var_decl(&mut self) -> PResult<VarDecl> {
        let mutability = if self.eat("final") {
            Mutability::Final
        } else {
            self.advance();
            Mutability::Var
        };
        let name = self.ident("in variable declaration")?;
        let ty = if self.eat(":") {
            Some(self.ty()?)
        } else {
            None
        };
        let init = if self.eat("=") {
            Some(self.expression()?)
        } else {
            None
        };
        self.expect(";", "after variable declaration")?;
        Ok(VarDecl {
            name,
            mutability,
            ty,
            init,
            slot: Resolved::default(),
        })
    }

    /// After `fun`: `name(params) > R !> E { body }` or `=> expr`.
    fn function(&mut self, pos: Pos, is_static: bool) -> PResult<Rc<FunDecl>> {
        self.fun_decl(pos, is_static).map(Rc::new)
    }

    fn fun_decl(&mut self, pos: Pos, is_static: bool) -> PResult<FunDecl> {
        let name = self.ident("after `fun`")?;
        let generics = self.generic_parameters()?;
        self.function_body(name, generics, pos, is_static)
    }

    fn function_rest(
        &mut self,
        name: Rc<str>,
        generics: Vec<Rc<str>>,
        pos: Pos,
        is_static: bool,
    ) -> PResult<Rc<FunDecl>> {
        self.function_body(name, generics, pos, is_static)
            .map(Rc::new)
    }

    fn function_body(
        &mut self,
        name: Rc<str>,
        generics: Vec<Rc<str>>,
        pos: Pos,
        is_static: bool,
    ) -> PResult<FunDecl> {
        self.expect("(", "to open the parameter list")?;
        let params = self.params()?;
        let (ret, yields) = self.signature_yields()?;
        let body = if self.is("=>") {
            let arrow = self.advance().pos;
            let value = self.expression()?;
            vec![Stmt {
                kind: StmtKind::Return(Some(value)),
                pos: arrow,
            }]
        } else {
            self.block("to open the function body")?
        };
        Ok(FunDecl {
            name,
            params,
            ret,
            body,
            pos,
            is_static,
            file: self.file.clone(),
            yields,
            is_mut: false,
            generics,
            slot: Resolved::default(),
            frame: Default::default(),
            compiled: Default::default(),
            captured: Default::default(),
        })
    }

    fn params(&mut self) -> PResult<Vec<Param>> {
        let mut params = Vec::new();
        while !self.is(")") {
            let at = self.pos();
            let name = self.ident("for a parameter")?;
            if params.iter().any(|p: &Param| p.name == name) {
                // Upstream rejects it too; a call could not say which one
                // a named argument fills.
                return Err(ParseError {
                    pos: at,
                    message: format!("duplicate parameter `{name}`"),
                });
            }
            self.expect(":", "after the parameter name")?;
            let ty = self.ty()?;
            let default = if self.eat("=") {
                Some(self.expression()?)
            } else {
                None
            };
            params.push(Param { name, ty, default });
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")", "after parameters")?;
        Ok(params)
    }

    fn object(&mut self) -> PResult<Rc<ObjectDecl>> {
        let pos = self.advance().pos;
        let mut protocols = Vec::new();
        if self.eat("<") {
            while !self.is(">") {
                protocols.push(self.ident("for a protocol name")?);
                if !self.eat(",") {
                    break;
                }
            }
            self.expect(">", "after the protocols")?;
        }
        let name = self.ident("after `object`")?;
        self.generics()?;
        self.expect("{", "to open the object body")?;
        let mut fields = Vec::new();
        let mut methods = Vec::new();
        while !self.is("}") && !self.check(&Tok::Eof) {
            let member = self.pos();
            let is_static = self.eat("static");
            let is_mut = self.eat("mut");
            if self.eat("fun") {
                let mut method = self.nested(|p| p.fun_decl(member, is_static))?;
                method.is_mut = is_mut;
                methods.push(Rc::new(method));
                self.eat(";");
            } else {
                let is_final = self.eat("final");
                fields.push(self.field(member, is_static, is_final)?);
                if !self.eat(",") {
                    self.eat(";");
                }
            }
            self.eat(",");
        }
        self.expect("}", "to close the object body")?;
        Ok(Rc::new(ObjectDecl {
            name,
            protocols,
            fields,
            methods,
            pos,
            slot: Resolved::default(),
        }))
    }

    fn field(&mut self, pos: Pos, is_static: bool, is_final: bool) -> PResult<FieldDecl> {
        let name = self.ident("for an object field or method")?;
        self.expect(":", "after the field name")?;
        let ty = self.ty()?;
        let default = if self.eat("=") {
            Some(self.expression()?)
        } else {
            None
        };
        Ok(FieldDecl {
            name,
            is_static,
            is_final,
            ty,
            default,
            pos,
            compiled: Default::default(),
        })
    }

    fn enumeration(&mut self) -> PResult<Rc<EnumDecl>> {
        let pos = self.advance().pos;
        let mut value_type = None;
        if self.eat("<") {
            value_type = Some(self.ty()?);
            self.expect(">", "after the enum value type")?;
        }
        let name = self.ident("after `enum`")?;
        self.expect("{", "to open the enum body")?;
        let mut cases = Vec::new();
        while !self.is("}") {
            let case = self.ident("for an enum case")?;
            let value = if self.eat("=") {
                Some(self.expression()?)
            } else {
                None
            };
            cases.push((case, value));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "to close the enum body")?;
        Ok(Rc::new(EnumDecl {
            name,
            value_type,
            cases,
            pos,
            slot: Resolved::default(),
        }))
    }

    fn block(&mut self, context: &str) -> PResult<Vec<Stmt>> {
        self.expect("{", context)?;
        let mut stmts = Vec::new();
        while !self.is("}") {
            if self.check(&Tok::Eof) {
                return self.expected("`}`", "to close the block");
            }
            stmts.push(self.statement()?);
        }
        self.advance();
        Ok(stmts)
    }

    fn condition(&mut self, keyword: &str) -> PResult<Expr> {
        self.expect("(", &format!("after `{keyword}`"))?;
        let cond = self.expression()?;
        self.expect(")", &format!("after the `{keyword}` condition"))?;
        Ok(cond)
    }

    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.advance();
        self.expect("(", "after `if`")?;
        let (cond, binding) = self.if_condition()?;
        self.expect(")", "after the `if` condition")?;
        let then = self.block("after the `if` condition")?;
        let otherwise = if self.eat("else") {
            let pos = self.pos();
            // `else if` goes straight to `if_stmt`: a long chain then costs
            // the fewest stack frames per link.
            let stmt = if self.is("if") {
                let kind = self.nested(Self::if_stmt)?;
                Stmt { kind, pos }
            } else {
                let body = self.block("after `else`")?;
                Stmt {
                    kind: StmtKind::Block(body),
                    pos,
                }
            };
            Some(Box::new(stmt))
        } else {
            None
        };
        Ok(StmtKind::If {
            cond,
            binding,
            then,
            otherwise,
        })
    }

    /// `x`, `x -> y` (unwrap) or `x as y: T` (cast), inside `if (…)`.
    fn if_condition(&mut self) -> PResult<(Expr, Option<IfBinding>)> {
        let cond = self.binary(0)?;
        if self.eat("->") {
            let name = self.ident("after `->`")?;
            return Ok((
                cond,
                Some(IfBinding {
                    name,
                    cast: None,
                    slot: Resolved::default(),
                }),
            ));
        }
        let cast =
            matches!(self.peek_at(1), Tok::Ident(_)) && matches!(self.peek_at(2), Tok::Sym(":"));
        if cast && self.eat("as") {
            let name = self.ident("after `as`")?;
            self.expect(":", "after the name")?;
            let ty = self.ty()?;
            return Ok((
                cond,
                Some(IfBinding {
                    name,
                    cast: Some(ty),
                    slot: Resolved::default(),
                }),
            ));
        }
        let cond = self.finish_expression(cond)?;
        Ok((cond, None))
    }

    fn while_stmt(&mut self) -> PResult<StmtKind> {
        self.advance();
        let cond = self.condition("while")?;
        let label = self.label()?;
        let body = self.block("after the `while` condition")?;
        Ok(StmtKind::While { cond, body, label })
    }

    fn do_until(&mut self) -> PResult<StmtKind> {
        self.advance();
        let label = self.label()?;
        let body = self.block("after `do`")?;
        self.expect("until", "after the `do` block")?;
        let cond = self.condition("until")?;
        self.eat(";");
        Ok(StmtKind::DoUntil { body, cond, label })
    }

    fn for_stmt(&mut self) -> PResult<StmtKind> {
        self.advance();
        self.expect("(", "after `for`")?;
        let mut init = Vec::new();
        // `i: int = 0` and upstream's bare `i = 0` declare the loop variable.
        let typed = |p: &Self| {
            matches!(p.peek().tok, Tok::Ident(_)) && matches!(p.peek_at(1), Tok::Sym(":" | "="))
        };
        while self.is("var") || self.is("final") || typed(self) {
            let pos = self.pos();
            let mutability = if self.eat("final") {
                Mutability::Final
            } else {
                self.eat("var");
                Mutability::Var
            };
            let name = self.ident("in `for` initializer")?;
            let ty = if self.eat(":") {
                Some(self.ty()?)
            } else {
                None
            };
            self.expect("=", "in `for` initializer")?;
            let value = self.expression()?;
            let decl = VarDecl {
                name,
                mutability,
                ty,
                init: Some(value),
                slot: Resolved::default(),
            };
            init.push(Stmt {
                kind: StmtKind::Var(decl),
                pos,
            });
            if !self.eat(",") {
                break;
            }
        }
        // `for (i = 0; …)`: the initializer may assign an existing variable.
        while init.is_empty() && !self.is(";") {
            let pos = self.pos();
            let expr = self.expression()?;
            init.push(Stmt {
                kind: StmtKind::Expr(expr),
                pos,
            });
            if !self.eat(",") {
                break;
            }
        }
        self.expect(";", "after the `for` initializer")?;
        let cond = if self.is(";") {
            None
        } else {
            Some(self.expression()?)
        };
        self.expect(";", "after the `for` condition")?;
        let mut step = Vec::new();
        while !self.is(")") {
            step.push(self.expression()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")", "after the `for` clauses")?;
        let label = self.label()?;
        let body = self.block("after `for (…)`")?;
        Ok(StmtKind::For {
            init,
            cond,
            step,
            body,
            label,
        })
    }

    fn foreach(&mut self) -> PResult<StmtKind> {
        self.advance();
        self.expect("(", "after `foreach`")?;
        let first = self.foreach_name()?;
        let (key, value) = if self.eat(",") {
            (Some(first), self.foreach_name()?)
        } else {
            (None, first)
        };
        self.expect("in", "in `foreach`")?;
        let iterable = self.expression()?;
        self.expect(")", "after the `foreach` clause")?;
        let label = self.label()?;
        let body = self.block("after `foreach (…)`")?;
        Ok(StmtKind::ForEach {
            key,
            value,
            iterable,
            body,
            label,
            slots: Default::default(),
        })
    }

    /// A `foreach` variable, with an optional (unchecked) type.
    fn foreach_name(&mut self) -> PResult<Rc<str>> {
        self.eat("var");
        self.eat("final");
        let name = self.ident("in `foreach`")?;
        if self.eat(":") {
            self.ty()?;
        }
        Ok(name)
    }

    fn return_stmt(&mut self) -> PResult<StmtKind> {
        self.advance();
        let value = if self.is(";") {
            None
        } else {
            Some(self.expression()?)
        };
        self.expect(";", "after `return`")?;
        Ok(StmtKind::Return(value))
    }

    fn throw_stmt(&mut self) -> PResult<StmtKind> {
        self.advance();
        let value = self.expression()?;
        self.expect(";", "after `throw`")?;
        Ok(StmtKind::Throw(value))
    }

    fn try_stmt(&mut self) -> PResult<StmtKind> {
        self.advance();
        let body = self.block("after `try`")?;
        let mut clauses = Vec::new();
        while self.is("catch") {
            let pos = self.advance().pos;
            let binding = if self.eat("(") {
                let name = self.ident("in `catch`")?;
                self.expect(":", "after the `catch` binding")?;
                let ty = self.ty()?;
                self.expect(")", "after the `catch` type")?;
                Some((name, ty))
            } else {
                None
            };
            let body = self.block("after `catch`")?;
            clauses.push(CatchClause {
                binding,
                body,
                pos,
                slot: Resolved::default(),
            });
        }
        if clauses.is_empty() {
            return self.expected("`catch`", "after the `try` block");
        }
        Ok(StmtKind::Try { body, clauses })
    }

    // ----- types -----

    fn ty(&mut self) -> PResult<Type> {
        self.nested(Self::ty_inner)
    }

    fn ty_inner(&mut self) -> PResult<Type> {
        let mutable = self.eat("mut");
        let base = match &self.peek().tok {
            Tok::Sym("[") => {
                self.advance();
                let item = self.ty()?;
                self.expect("]", "to close the list type")?;
                Type::List(Box::new(item))
            }
            Tok::Sym("{") => self.map_type()?,
            Tok::Kw("fun") => self.fun_type()?,
            Tok::Ident(name) if &**name == "obj" && matches!(self.peek_at(1), Tok::Sym("{")) => {
                self.anon_object_type()?
            }
            Tok::Kw("void") => {
                self.advance();
                Type::Void
            }
            Tok::Ident(_) => self.named_type()?,
            _ => return self.expected("a type", "here"),
        };
        let base = match base {
            Type::List(_) | Type::Map(..) | Type::Named(_) if mutable => Type::Mut(Box::new(base)),
            other => other,
        };
        if self.eat("?") {
            return Ok(Type::Optional(Box::new(base)));
        }
        Ok(base)
    }

    /// `obj{ name: T, … }` or the tuple type `obj{ :T, … }`.
    fn anon_object_type(&mut self) -> PResult<Type> {
        self.advance();
        self.advance();
        while !self.is("}") {
            if !self.is(":") {
                self.ident("for a field of the object type")?;
            }
            self.expect(":", "after the field name")?;
            self.ty()?;
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "to close the object type")?;
        Ok(Type::AnonObject)
    }

    fn map_type(&mut self) -> PResult<Type> {
        self.advance();
        let key = self.ty()?;
        self.expect(":", "in the map type")?;
        let value = self.ty()?;
        self.expect("}", "to close the map type")?;
        Ok(Type::Map(Box::new(key), Box::new(value)))
    }

    fn fun_type(&mut self) -> PResult<Type> {
        self.advance();
        self.generics()?;
        self.expect("(", "in the function type")?;
        while !self.is(")") {
            if matches!(self.peek_at(1), Tok::Sym(":")) {
                self.advance();
                self.advance();
            }
            self.ty()?;
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")", "in the function type")?;
        self.signature_rest()?;
        Ok(Type::Function)
    }

    fn named_type(&mut self) -> PResult<Type> {
        let mut name = self.ident("for a type")?;
        while self.eat("\\") {
            name = self.ident("in a qualified type name")?;
        }
        self.generics()?;
        if self.is("<") && !matches!(self.peek_at(1), Tok::Sym("=")) {
            self.advance();
            self.ty()?;
            while self.eat(",") {
                self.ty()?;
            }
            self.expect(">", "to close the generic arguments")?;
        }
        Ok(match &*name {
            "any" => Type::Any,
            _ => Type::Named(name),
        })
    }

    // ----- expressions -----

    /// An expression, including assignment and inline `catch`.
    fn expression(&mut self) -> PResult<Expr> {
        self.nested(Self::expression_inner)
    }

    fn expression_inner(&mut self) -> PResult<Expr> {
        let target = self.binary(0)?;
        self.finish_expression(target)
    }

    /// What may follow an operand chain: assignment or inline `catch`.
    fn finish_expression(&mut self, target: Expr) -> PResult<Expr> {
        if self.is("=") {
            let pos = self.advance().pos;
            return self.assignment(target, None, pos);
        }
        if let Some(&(_, op)) = COMPOUND.iter().find(|(s, _)| self.is(s)) {
            let pos = self.advance().pos;
            return self.assignment(target, Some(op), pos);
        }
        if self.is("catch") {
            let pos = self.advance().pos;
            let default = self.expression()?;
            let kind = ExprKind::Catch {
                body: Box::new(target),
                default: Box::new(default),
            };
            return Ok(Expr {
                kind,
                pos,
                end: self.end(),
            });
        }
        Ok(target)
    }

    fn assignment(&mut self, target: Expr, op: Option<BinOp>, pos: Pos) -> PResult<Expr> {
        let assignable = matches!(
            target.kind,
            ExprKind::Var(..) | ExprKind::Field { .. } | ExprKind::Index { .. }
        );
        if !assignable {
            return Err(ParseError {
                pos: target.pos,
                message: "invalid assignment target: expected a variable, field or subscript"
                    .into(),
            });
        }
        let value = self.expression()?;
        let kind = ExprKind::Assign {
            target: Box::new(target),
            op,
            value: Box::new(value),
        };
        Ok(Expr {
            kind,
            pos,
            end: self.end(),
        })
    }

    /// Precedence climbing: one frame per nesting level, not per precedence
    /// level, which keeps deep input cheap on the stack.
    fn binary(&mut self, min_level: usize) -> PResult<Expr> {
        let mut left = self.unary()?;
        let mut chain = 0;
        let result = loop {
            let Some((level, kind)) = self.binary_operator().filter(|(l, _)| *l >= min_level)
            else {
                break Ok(left);
            };
            if let Err(e) = self.enter() {
                break Err(e);
            }
            chain += 1;
            let pos = self.advance().pos;
            left = match self.binary_rhs(kind, left, level, pos) {
                Ok(e) => e,
                Err(e) => break Err(e),
            };
        };
        self.depth -= chain;
        result
    }

    fn binary_operator(&self) -> Option<(usize, BinKind)> {
        // `if (x as y: T)` is a binding, not a cast.
        if self.is("as")
            && matches!(self.peek_at(1), Tok::Ident(_))
            && matches!(self.peek_at(2), Tok::Sym(":"))
        {
            return None;
        }
        LEVELS.iter().enumerate().find_map(|(level, ops)| {
            ops.iter()
                .find(|(s, _)| self.is(s))
                .map(|&(_, kind)| (level, kind))
        })
    }

    fn binary_rhs(&mut self, kind: BinKind, left: Expr, level: usize, pos: Pos) -> PResult<Expr> {
        let l = Box::new(left);
        let kind = match kind {
            BinKind::Is => ExprKind::Is(l, self.ty()?),
            BinKind::As => {
                let optional = self.eat("?");
                if !optional {
                    self.eat("!");
                }
                ExprKind::As {
                    value: l,
                    ty: self.ty()?,
                    optional,
                }
            }
            BinKind::Op(op) => ExprKind::Binary(op, l, Box::new(self.binary(level + 1)?)),
            BinKind::And => ExprKind::And(l, Box::new(self.binary(level + 1)?)),
            BinKind::Or => ExprKind::Or(l, Box::new(self.binary(level + 1)?)),
            BinKind::Coalesce => ExprKind::Coalesce(l, Box::new(self.binary(level + 1)?)),
            BinKind::Range => ExprKind::Range(l, Box::new(self.binary(level + 1)?)),
        };
        Ok(Expr {
            kind,
            pos,
            end: self.end(),
        })
    }

    fn unary(&mut self) -> PResult<Expr> {
        if let Some(expr) = self.fiber_operator()? {
            return Ok(expr);
        }
        if self.is_word("typeof") {
            let pos = self.advance().pos;
            let operand = self.nested(Self::unary)?;
            return Ok(Expr {
                kind: ExprKind::TypeOf(Box::new(operand)),
                pos,
                end: self.end(),
            });
        }
        let op = match spelled(&self.peek().tok) {
            Some("!") => UnOp::Not,
            Some("-") => UnOp::Neg,
            Some("~") => UnOp::BitNot,
            _ => return self.postfix(),
        };
        let pos = self.advance().pos;
        let operand = self.nested(Self::unary)?;
        Ok(Expr {
            kind: ExprKind::Unary(op, Box::new(operand)),
            pos,
            end: self.end(),
        })
    }

    /// `resume f`, `resolve f` and `yield v`, with upstream's precedence:
    /// `resume` and `resolve` take a bare primary (so `resume f ?? 0` is
    /// `(resume f) ?? 0`), `yield` a unary operand.
    #[inline(never)]
    fn fiber_operator(&mut self) -> PResult<Option<Expr>> {
        let word = match &self.peek().tok {
            Tok::Ident(w) if matches!(&**w, "resume" | "resolve" | "yield") => w.clone(),
            _ => return Ok(None),
        };
        // `resume = 1;`, `f(resume)`: the word used as a plain name.
        if matches!(
            self.peek_at(1),
            Tok::Sym("=" | ";" | ")" | "," | "]" | "}" | ":")
        ) {
            return Ok(None);
        }
        let pos = self.advance().pos;
        if &*word == "yield" {
            let operand = self.nested(Self::unary)?;
            let kind = ExprKind::Yield(Box::new(operand));
            return Ok(Some(Expr {
                kind,
                pos,
                end: self.end(),
            }));
        }
        let operand = Box::new(self.nested(Self::primary)?);
        let kind = match &*word {
            "resume" => ExprKind::Resume(operand),
            _ => ExprKind::Resolve(operand),
        };
        self.postfix_from(
            Expr {
                kind,
                pos,
                end: self.end(),
            },
            pos,
        )
        .map(Some)
    }

    /// `&f(x)`, `&obj.method(x)`: a postfix chain that must end in a call,
    /// made a fiber.
    #[inline(never)]
    fn async_call(&mut self) -> PResult<Expr> {
        let pos = self.advance().pos;
        let call = self.nested(Self::postfix)?;
        if !matches!(call.kind, ExprKind::Call { .. }) {
            return Err(ParseError {
                pos,
                message: "expected a call after `&` (it makes the call a fiber: `&f(x)`)".into(),
            });
        }
        let kind = ExprKind::AsyncCall(Box::new(call));
        Ok(Expr {
            kind,
            pos,
            end: self.end(),
        })
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let start = self.pos();
        let expr = self.primary()?;
        self.postfix_from(expr, start)
    }

    /// The postfix chain (calls, fields, subscripts…) after `expr`.
    fn postfix_from(&mut self, mut expr: Expr, start: Pos) -> PResult<Expr> {
        let mut chain = 0;
        let result = loop {
            let more = self.is("(")
                || self.is(".")
                || self.is("\\")
                || self.is("?.")
                || self.is("[")
                || self.is("!")
                || (self.is("?") && matches!(self.peek_at(1), Tok::Sym("[")))
                || (self.is("::") && matches!(self.peek_at(1), Tok::Sym("<")));
            if !more {
                break Ok(expr);
            }
            if let Err(e) = self.enter() {
                break Err(e);
            }
            chain += 1;
            expr = match self.postfix_one(expr, start) {
                Ok(e) => e,
                Err(e) => break Err(e),
            };
        };
        self.depth -= chain;
        result
    }

    fn postfix_one(&mut self, expr: Expr, start: Pos) -> PResult<Expr> {
        if self.is("::")
            || self.is("?")
            || (self.is(".") && matches!(self.peek_at(1), Tok::Sym("{")))
        {
            return self.postfix_extra(expr);
        }
        let object = Box::new(expr);
        let token = self.advance();
        let kind = match spelled(&token.tok) {
            Some("(") => ExprKind::Call {
                callee: object,
                args: self.arguments()?,
            },
            Some("[") => self.subscript(object)?,
            Some("!") => ExprKind::Force(object),
            Some("\\") if self.qualified_instance() => {
                let pos = self.pos();
                let name = self.ident("after `\\`")?;
                let class = Expr {
                    kind: ExprKind::Field {
                        object,
                        name,
                        optional: false,
                        cache: Default::default(),
                    },
                    pos,
                    end: self.end(),
                };
                let ExprKind::Instance { fields, .. } = self.instance(Rc::from(""))? else {
                    return self.error("expected an object literal");
                };
                return Ok(Expr {
                    kind: ExprKind::InstanceOf {
                        class: Box::new(class),
                        fields,
                    },
                    pos,
                    end: self.end(),
                });
            }
            Some(sep) => {
                let optional = sep == "?.";
                let pos = self.pos();
                let name = match &self.peek().tok {
                    // `tuple.0`
                    Tok::Int(n) if sep == "." => {
                        let n = *n;
                        self.advance();
                        Rc::from(n.to_string())
                    }
                    _ => self.ident(&format!("after `{sep}`"))?,
                };
                let kind = ExprKind::Field {
                    object,
                    name,
                    optional,
                    cache: Default::default(),
                };
                return Ok(Expr {
                    kind,
                    pos,
                    end: self.end(),
                });
            }
            None => return self.error("expected a postfix operator"),
        };
        let pos = if matches!(kind, ExprKind::Call { .. }) {
            start
        } else {
            token.pos
        };
        Ok(Expr {
            kind,
            pos,
            end: self.end(),
        })
    }

    /// Buzz 0.6's postfix forms: `::<T>` (skipped), `x?[i]`, and
    /// `callMe .{ … }` (a call with one anonymous object). Kept out of
    /// `postfix_one` so that deep nesting costs less stack per level.
    #[inline(never)]
    fn postfix_extra(&mut self, expr: Expr) -> PResult<Expr> {
        if self.is("::") {
            let pos = expr.pos;
            let types = self.type_arguments()?;
            let kind = ExprKind::Generic {
                callee: Box::new(expr),
                types,
            };
            return Ok(Expr {
                kind,
                pos,
                end: self.end(),
            });
        }
        if self.eat("?") {
            let object = Box::new(expr);
            let pos = self.advance().pos;
            let kind = self.optional_subscript(object)?;
            return Ok(Expr {
                kind,
                pos,
                end: self.end(),
            });
        }
        let pos = self.pos();
        let arg = self.primary()?;
        Ok(Expr {
            kind: ExprKind::Call {
                callee: Box::new(expr),
                args: vec![Arg {
                    name: None,
                    value: arg,
                }],
            },
            pos,
            end: self.end(),
        })
    }

    /// `x?[i]`: null when `x` is null, else `x[i]`.
    fn optional_subscript(&mut self, object: Box<Expr>) -> PResult<ExprKind> {
        let index = self.expression()?;
        self.expect("]", "after the subscript")?;
        Ok(ExprKind::OptionalIndex {
            object,
            index: Box::new(index),
        })
    }

    fn subscript(&mut self, object: Box<Expr>) -> PResult<ExprKind> {
        let checked = self.eat("?");
        let index = self.expression()?;
        self.expect("]", "after the subscript")?;
        Ok(ExprKind::Index {
            object,
            index: Box::new(index),
            checked,
        })
    }

    fn arguments(&mut self) -> PResult<Vec<Arg>> {
        let mut args = Vec::new();
        while !self.is(")") {
            let name = match (&self.peek().tok, self.peek_at(1)) {
                (Tok::Ident(name), Tok::Sym(":")) => {
                    let name = name.clone();
                    self.advance();
                    self.advance();
                    Some(name)
                }
                _ => None,
            };
            let value = self.expression()?;
            args.push(Arg { name, value });
            if !self.eat(",") {
                break;
            }
        }
        self.expect(")", "after arguments")?;
        Ok(args)
    }

    fn primary(&mut self) -> PResult<Expr> {
        let token = self.peek();
        let pos = token.pos;
        let kind = match &token.tok {
            Tok::Int(v) => self.literal(ExprKind::Int(*v)),
            Tok::Double(v) => self.literal(ExprKind::Double(*v)),
            Tok::Str(parts) => {
                self.advance();
                self.string(parts)?
            }
            Tok::Ident(w)
                if (&**w == "from" && matches!(self.peek_at(1), Tok::Sym("{")))
                    || (&**w == "match" && matches!(self.peek_at(1), Tok::Sym("("))) =>
            {
                self.primary_extra()?
            }
            Tok::Ident(name) => self.name(name.clone())?,
            Tok::Kw("true") => self.literal(ExprKind::Bool(true)),
            Tok::Kw("false") => self.literal(ExprKind::Bool(false)),
            Tok::Kw("null") => self.literal(ExprKind::Null),
            Tok::Kw("void") => self.literal(ExprKind::Void),
            Tok::Kw("mut") => {
                self.advance();
                return self.mut_literal();
            }
            Tok::Pattern(_) | Tok::Sym("." | "<") => self.primary_extra()?,
            Tok::Sym("(") => return self.parenthesized(),
            Tok::Sym("&") => return self.async_call(),
            Tok::Sym("[") => self.list()?,
            Tok::Sym("{") => self.map()?,
            Tok::Kw("if") => self.inline_if()?,
            Tok::Kw("fun") => {
                self.advance();
                let generics = self.generic_parameters()?;
                ExprKind::Lambda(self.function_rest(Rc::from("<lambda>"), generics, pos, false)?)
            }
            _ => return self.expected("an expression", "here"),
        };
        Ok(Expr {
            kind,
            pos,
            end: self.end(),
        })
    }

    /// Buzz 0.6's primaries: `from { … }`, `match`, `$"…"`, `.case`,
    /// `.{ … }` and `<T>`. Kept out of `primary` so that deep nesting costs
    /// less stack per level.
    #[inline(never)]
    fn primary_extra(&mut self) -> PResult<ExprKind> {
        match &self.peek().tok {
            Tok::Ident(w) if &**w == "from" => {
                self.advance();
                Ok(ExprKind::Block(self.block("after `from`")?))
            }
            Tok::Ident(_) => self.match_expr(),
            Tok::Pattern(source) => Ok(self.literal(ExprKind::Pattern(source.clone()))),
            Tok::Sym(".") => self.dotted(),
            Tok::Sym("<") => {
                self.advance();
                let ty = self.ty()?;
                self.expect(">", "to close the type value")?;
                Ok(ExprKind::TypeValue(ty))
            }
            _ => self.expected("an expression", "here"),
        }
    }

    fn literal(&mut self, kind: ExprKind) -> ExprKind {
        self.advance();
        kind
    }

    fn mut_literal(&mut self) -> PResult<Expr> {
        if self.is("[") || self.is("{") {
            // `mut` binds to the literal: `mut [1].cloneImmutable()` clones
            // a mutable list.
            let pos = self.pos();
            let literal = self.primary()?;
            let mutable = Expr {
                kind: ExprKind::Mutable(Box::new(literal)),
                pos,
                end: self.end(),
            };
            return self.postfix_from(mutable, pos);
        }
        if self.is(".") || matches!(self.peek().tok, Tok::Ident(_)) {
            // `mut Name{ … }`: kept, so the checker knows the instance may
            // be changed (the run makes every instance the same way).
            let pos = self.pos();
            let value = self.postfix()?;
            if !matches!(
                value.kind,
                ExprKind::Instance { .. } | ExprKind::InstanceOf { .. } | ExprKind::AnonObject(_)
            ) {
                return Ok(value);
            }
            let kind = ExprKind::Mutable(Box::new(value));
            return Ok(Expr {
                kind,
                pos,
                end: self.end(),
            });
        }
        self.expected("a list, map or object literal", "after `mut`")
    }

    /// `.case` (an inferred enum case) or `.{ … }` (an anonymous object).
    fn dotted(&mut self) -> PResult<ExprKind> {
        self.advance();
        if !self.eat("{") {
            return Ok(ExprKind::InferredCase(self.ident("after `.`")?));
        }
        let mut fields = Vec::new();
        let (mut named_seen, mut positional) = (false, 0usize);
        while !self.is("}") {
            let named = matches!(self.peek().tok, Tok::Ident(_))
                && matches!(self.peek_at(1), Tok::Sym("="));
            let bare = self.is("(");
            let at = self.pos();
            let (name, value) = if named {
                let name = self.ident("for a field")?;
                self.advance();
                named_seen = true;
                (name, self.expression()?)
            } else {
                let value = self.expression()?;
                let name = match &value.kind {
                    ExprKind::Var(n, _) if !bare => n.clone(),
                    _ => {
                        positional += 1;
                        Rc::from(fields.len().to_string())
                    }
                };
                (name, value)
            };
            tuple_rules(named_seen, positional, at)?;
            fields.push((name, value));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "to close the anonymous object")?;
        Ok(ExprKind::AnonObject(fields))
    }

    /// `match (subject) { a, b -> value, else -> value }`.
    fn match_expr(&mut self) -> PResult<ExprKind> {
        self.advance();
        let subject = self.condition("match")?;
        self.expect("{", "to open the `match` arms")?;
        let mut arms = Vec::new();
        let mut otherwise = None;
        while !self.is("}") && !self.check(&Tok::Eof) {
            if self.eat("else") {
                self.expect("->", "after `else` in `match`")?;
                otherwise = Some(Box::new(self.arm_body()?));
            } else {
                let mut conditions = vec![self.expression()?];
                while self.eat(",") {
                    conditions.push(self.expression()?);
                }
                self.expect("->", "after the `match` condition")?;
                arms.push(MatchArm {
                    conditions,
                    body: self.arm_body()?,
                });
            }
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "to close the `match` arms")?;
        Ok(ExprKind::Match {
            subject: Box::new(subject),
            arms,
            otherwise,
        })
    }

    /// A `match` arm's value: a block of statements or an expression.
    fn arm_body(&mut self) -> PResult<Expr> {
        let pos = self.pos();
        let map_like = matches!(self.peek_at(1), Tok::Sym("}") | Tok::Sym("<"))
            || (matches!(self.peek_at(1), Tok::Str(_) | Tok::Int(_))
                && matches!(self.peek_at(2), Tok::Sym(":")));
        if self.is("{") && !map_like {
            let body = self.block("to open the `match` arm")?;
            return Ok(Expr {
                kind: ExprKind::Block(body),
                pos,
                end: self.end(),
            });
        }
        self.expression()
    }

    fn parenthesized(&mut self) -> PResult<Expr> {
        self.advance();
        let expr = self.expression()?;
        self.expect(")", "to close the parenthesis")?;
        Ok(expr)
    }

    fn name(&mut self, name: Rc<str>) -> PResult<ExprKind> {
        let pos = self.advance().pos;
        let types = self.type_arguments()?;
        if !types.is_empty() && !self.is("{") {
            let callee = Box::new(Expr {
                kind: ExprKind::Var(name, Resolved::default()),
                pos,
                end: self.end(),
            });
            return Ok(ExprKind::Generic { callee, types });
        }
        let capitalised = name.starts_with(|c: char| c.is_ascii_uppercase());
        let instance = self.is("{")
            && (matches!(self.peek_at(1), Tok::Sym("}"))
                || (matches!(self.peek_at(1), Tok::Ident(_))
                    && matches!(self.peek_at(2), Tok::Sym("=")))
                || (capitalised
                    && matches!(self.peek_at(1), Tok::Ident(_))
                    && matches!(self.peek_at(2), Tok::Sym(",") | Tok::Sym("}"))));
        if instance {
            return self.instance(name);
        }
        Ok(ExprKind::Var(name, Resolved::default()))
    }

    /// After `module\`: whether `Name{ … }` follows (a qualified instance).
    fn qualified_instance(&self) -> bool {
        matches!(self.peek().tok, Tok::Ident(_))
            && matches!(self.peek_at(1), Tok::Sym("{"))
            && (matches!(self.peek_at(2), Tok::Sym("}"))
                || (matches!(self.peek_at(2), Tok::Ident(_))
                    && matches!(self.peek_at(3), Tok::Sym("=" | "," | "}"))))
    }

    fn instance(&mut self, object: Rc<str>) -> PResult<ExprKind> {
        self.advance();
        let mut fields = Vec::new();
        while !self.is("}") {
            let pos = self.pos();
            let name = self.ident("for a field in the object literal")?;
            if self.is(",") || self.is("}") {
                // `Person{ name }` is `Person{ name = name }`.
                let value = Expr {
                    kind: ExprKind::Var(name.clone(), Resolved::default()),
                    pos,
                    end: self.end(),
                };
                fields.push((name, value));
                if !self.eat(",") {
                    break;
                }
                continue;
            }
            self.expect("=", "after the field name")?;
            fields.push((name, self.expression()?));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "to close the object literal")?;
        Ok(ExprKind::Instance {
            object,
            fields,
            class: Resolved::default(),
        })
    }

    fn string(&mut self, parts: &'t [StrPart]) -> PResult<ExprKind> {
        match parts {
            [StrPart::Text(text)] => return Ok(ExprKind::Str(Rc::from(text.as_str()))),
            [StrPart::Bytes(bytes)] => return Ok(ExprKind::Bytes(Rc::from(bytes.as_slice()))),
            _ => {}
        }
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            out.push(match part {
                StrPart::Text(text) => TemplatePart::Text(Rc::from(text.as_str())),
                StrPart::Bytes(bytes) => TemplatePart::Bytes(Rc::from(bytes.as_slice())),
                StrPart::Expr(tokens) => TemplatePart::Expr(self.interpolated(tokens)?),
            });
        }
        Ok(ExprKind::Template(out))
    }

    fn interpolated(&mut self, tokens: &'t [Token]) -> PResult<Expr> {
        let mut inner = Parser {
            tokens,
            at: 0,
            depth: self.depth,
            file: self.file.clone(),
            namespace: Vec::new(),
            exports: Vec::new(),
            protocols: Vec::new(),
        };
        let expr = inner.expression()?;
        if !inner.check(&Tok::Eof) {
            return inner.expected("`}`", "to close the interpolation");
        }
        Ok(expr)
    }

    fn list(&mut self) -> PResult<ExprKind> {
        self.advance();
        let mut items = Vec::new();
        // `[<T>]` or `[<T>, a, b]`: the item type, then the items.
        let mut item_type = None;
        if self.eat("<") {
            item_type = Some(self.ty()?);
            self.expect(">", "after the list item type")?;
            if !self.eat(",") && !self.is("]") {
                return self.expected("`,` or `]`", "after the list item type");
            }
        }
        while !self.is("]") {
            items.push(self.expression()?);
            if !self.eat(",") {
                break;
            }
        }
        self.expect("]", "to close the list")?;
        Ok(match item_type {
            Some(ty) => ExprKind::TypedList {
                ty: Box::new(ty),
                items,
            },
            None => ExprKind::List(items),
        })
    }

    fn map(&mut self) -> PResult<ExprKind> {
        self.advance();
        if self.eat("<") {
            self.ty()?;
            self.expect(":", "in the map type")?;
            self.ty()?;
            self.expect(">", "after the map type")?;
            self.eat(",");
        }
        let mut entries = Vec::new();
        while !self.is("}") {
            let key = self.expression()?;
            self.expect(":", "after the map key")?;
            entries.push((key, self.expression()?));
            if !self.eat(",") {
                break;
            }
        }
        self.expect("}", "to close the map")?;
        Ok(ExprKind::Map(entries))
    }

    fn inline_if(&mut self) -> PResult<ExprKind> {
        self.advance();
        let cond = self.condition("if")?;
        let then = self.expression()?;
        self.expect("else", "in inline `if` (it needs an `else` branch)")?;
        let otherwise = self.expression()?;
        Ok(ExprKind::If {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(otherwise),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> PResult<Program> {
        parse_program(Path::new("t.buzz"), src)
    }

    #[test]
    fn accepts_the_subset() {
        let cases = [
            ("import", "import \"std\"; import \"fs\" as f;"),
            ("namespace", "namespace my\\spell;"),
            ("fun", "fun f(a: int, b: str = \"x\") > [str] !> str { return [b]; }"),
            ("arrow fun", "fun twice(x: int) > int => x * 2;"),
            ("vars", "fun main() > void { final a: int? = null; var b = a ?? 2; b += 1; }"),
            ("object", "object P { name: str, age: int = 1, fun hi() > str { return this.name; } }"),
            ("instance", "fun main() > void { final p = P{ name = \"x\", age = 2 }; }"),
            ("enum", "enum<str> E { a, b = \"bee\" }"),
            ("loops", "fun main() > void { for (var i = 0; i < 3; i = i + 1) { continue; } while (true) { break; } do { } until (true) }"),
            ("foreach", "fun main() > void { foreach (i, x in [1]) {} foreach (x in 0..3) {} }"),
            ("try", "fun main() > void { try { throw \"x\"; } catch (e: str) {} catch {} }"),
            ("inline", "fun main() > void { final x = if (true) 1 else 2; final y = f() catch 0; }"),
            ("optional", "fun main() > void { final z = a?.b!.c[?0]; }"),
            ("mut literals", "fun main() > void { final l = mut [1, 2]; final m = mut {\"a\": 1}; }"),
            ("typed empty", "fun main() > void { final l = [<str>]; final m = {<str: int>}; }"),
            ("named args", "fun main() > void { std\\assert(true, message: \"m\"); }"),
            ("lambda", "fun main() > void { final f = fun (x: int) > int => x + 1; }"),
            ("interpolation", "fun main() > void { std.print(\"a {\"b\"} {1 + 2}\"); }"),
            ("is", "fun main() > void { final b = 1 is int; }"),
            ("fun type", "fun g(f: fun (x: int) > int) > void {}"),
        ];
        for (name, src) in cases {
            if let Err(e) = parse(src) {
                panic!("case {name}: {e:?}");
            }
        }
    }

    #[test]
    fn reports_expected_and_found() {
        let cases = [
            (
                "args",
                "fun main() > void { f(1;\n}",
                1,
                24,
                "expected `)` after arguments, found `;`",
            ),
            (
                "semi",
                "fun main() > void {\n  final x = 1\n}",
                2,
                14,
                "expected `;` after variable declaration, found `}`",
            ),
            (
                "block",
                "fun main() > void {",
                1,
                20,
                "expected `}` to close the block, found end of input",
            ),
            (
                "expr",
                "fun main() > void { final x = ; }",
                1,
                31,
                "expected an expression here, found `;`",
            ),
            (
                "assign",
                "fun main() > void { 1 = 2; }",
                1,
                21,
                "invalid assignment target",
            ),
            (
                "try",
                "fun main() > void { try {} }",
                1,
                28,
                "expected `catch` after the `try` block",
            ),
            (
                "inline if",
                "fun main() > void { final x = if (true) 1; }",
                1,
                42,
                "needs an `else`",
            ),
            (
                "import",
                "import std;",
                1,
                8,
                "expected a module name string",
            ),
        ];
        for (name, src, line, column, msg) in cases {
            let err = parse(src).unwrap_err();
            assert_eq!(
                (err.pos.line, err.pos.column),
                (line, column),
                "case {name}: {err:?}"
            );
            assert!(err.message.contains(msg), "case {name}: {}", err.message);
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let cases = [
            (
                "parens",
                format!(
                    "fun main() > void {{ final x = {}1; }}",
                    "(".repeat(100_000)
                ),
            ),
            (
                "lists",
                format!("fun main() > void {{ final x = {}; }}", "[".repeat(100_000)),
            ),
            (
                "blocks",
                format!("fun main() > void {}", "{".repeat(100_000)),
            ),
            (
                "unary",
                format!(
                    "fun main() > void {{ final x = {}1; }}",
                    "!".repeat(100_000)
                ),
            ),
            (
                "chain",
                format!(
                    "fun main() > void {{ final x = 1{}; }}",
                    "+1".repeat(100_000)
                ),
            ),
            (
                "postfix",
                format!(
                    "fun main() > void {{ final x = a{}; }}",
                    ".b".repeat(100_000)
                ),
            ),
            (
                "types",
                format!("fun f(x: {}) > void {{}}", "[".repeat(100_000)),
            ),
        ];
        for (name, src) in cases {
            let err = parse(&src).unwrap_err();
            assert!(
                err.message.contains("nesting too deep"),
                "case {name}: {}",
                err.message
            );
        }
    }
}

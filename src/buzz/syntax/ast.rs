//! The syntax tree of the Buzz subset, as produced by the parser.
//!
//! Every node that can fail at run time carries the [`Pos`] it starts at, so
//! runtime errors point at the spell. The tree's depth is bounded by the
//! parser, which keeps evaluation and `Drop` of the tree off the stack edge.

use super::lexer::Pos;
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// A parsed spell.
#[derive(Debug)]
#[deny(missing_docs)] // re-exported by the crate: public API
pub struct Program {
    /// The file it was parsed from.
    pub file: PathBuf,
    /// Its top-level statements.
    pub statements: Vec<Stmt>,
    /// `namespace a\b;`: the path importers reach its exports by
    /// (`a\b\name`); empty when the file declares none.
    pub namespace: Vec<Rc<str>>,
    /// Names declared with `export`, visible to an importing spell.
    pub exports: Vec<Rc<str>>,
    /// Each `protocol` the file declares, with its method names (the
    /// checker holds conforming objects to them).
    pub protocols: Vec<Rc<ProtocolDecl>>,
    /// Set once the resolver (`buzz/resolve/`) has given its names their
    /// slots.
    pub(crate) resolved: Cell<bool>,
}

/// `protocol P { fun m() > T; … }`: the methods an object declared
/// `object<P>` promises to have.
#[derive(Debug)]
pub struct ProtocolDecl {
    /// Its name.
    pub name: Rc<str>,
    /// The names of its methods, in order.
    pub methods: Vec<Rc<str>>,
}

impl Program {
    /// What the file shows importers: its `export`ed names, or every
    /// top-level declaration when it exports nothing. The run and the
    /// checker both ask this, so they agree on what an import brings.
    pub fn visible_names(&self) -> Vec<Rc<str>> {
        if !self.exports.is_empty() {
            return self.exports.clone();
        }
        self.statements
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Fun(d) => Some(d.name.clone()),
                StmtKind::Object(d) => Some(d.name.clone()),
                StmtKind::Enum(d) => Some(d.name.clone()),
                StmtKind::Var(d) => Some(d.name.clone()),
                StmtKind::Protocol(n) => Some(n.clone()),
                _ => None,
            })
            .collect()
    }
}

/// A type annotation. Types are parsed and checked loosely at run time.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    Any,
    Void,
    Named(Rc<str>),
    List(Box<Type>),
    Map(Box<Type>, Box<Type>),
    Optional(Box<Type>),
    Function,
    /// `obj{ … }`: an anonymous object type, checked as any object.
    AnonObject,
    /// `mut [T]`, `mut {K: V}`: checked as the inner type.
    Mut(Box<Type>),
}

#[derive(Debug)]
pub struct Stmt {
    pub kind: StmtKind,
    pub pos: Pos,
}

#[derive(Debug)]
pub enum StmtKind {
    Namespace,
    /// `import "m";`, `import "m" as a;`, `import x, y from "m";`.
    Import {
        module: Rc<str>,
        alias: Option<Rc<str>>,
        names: Vec<Rc<str>>,
    },
    /// `test "name" { … }`: run by `magus test`, skipped by `magus run`.
    Test {
        name: Rc<str>,
        body: Vec<Stmt>,
    },
    /// `protocol P { … }`: method signatures objects promise to have.
    Protocol(Rc<str>),
    Var(VarDecl),
    Fun(Rc<FunDecl>),
    Object(Rc<ObjectDecl>),
    Enum(Rc<EnumDecl>),
    Expr(Expr),
    Block(Vec<Stmt>),
    If {
        cond: Expr,
        /// `if (x) -> y` or `if (x as y: T)`: binds `y` in `then`.
        binding: Option<IfBinding>,
        then: Vec<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
        label: Option<Rc<str>>,
    },
    DoUntil {
        body: Vec<Stmt>,
        cond: Expr,
        label: Option<Rc<str>>,
    },
    For {
        init: Vec<Stmt>,
        cond: Option<Expr>,
        step: Vec<Expr>,
        body: Vec<Stmt>,
        label: Option<Rc<str>>,
    },
    ForEach {
        key: Option<Rc<str>>,
        value: Rc<str>,
        iterable: Expr,
        body: Vec<Stmt>,
        label: Option<Rc<str>>,
        /// Where `key` and `value` are kept (filled by the resolver).
        slots: (Resolved, Resolved),
    },
    Break(Option<Rc<str>>),
    Continue(Option<Rc<str>>),
    /// `out value;`: the value of the enclosing `from { … }` block.
    Out(Expr),
    Return(Option<Expr>),
    Throw(Expr),
    Try {
        body: Vec<Stmt>,
        clauses: Vec<CatchClause>,
    },
}

/// The binding of `if (x) -> y` (unwrap) or `if (x as y: T)` (cast).
#[derive(Debug)]
pub struct IfBinding {
    pub name: Rc<str>,
    pub cast: Option<Type>,
    /// Where `name` is kept (filled by the resolver).
    pub slot: Resolved,
}

/// One arm of `match`: its conditions (any may match) and its value.
#[derive(Debug)]
pub struct MatchArm {
    pub conditions: Vec<Expr>,
    pub body: Expr,
}

/// Whether a binding may be reassigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutability {
    Final,
    Var,
}

#[derive(Debug)]
pub struct VarDecl {
    pub name: Rc<str>,
    pub mutability: Mutability,
    pub ty: Option<Type>,
    pub init: Option<Expr>,
    /// Where the variable is kept (filled by the resolver).
    pub slot: Resolved,
}

#[derive(Debug)]
pub struct CatchClause {
    /// `catch (name: Type)`; `None` for a bare `catch`.
    pub binding: Option<(Rc<str>, Type)>,
    pub body: Vec<Stmt>,
    pub pos: Pos,
    /// Where the binding is kept (filled by the resolver).
    pub slot: Resolved,
}

#[derive(Debug)]
pub struct Param {
    pub name: Rc<str>,
    pub ty: Type,
    pub default: Option<Expr>,
}

#[derive(Debug)]
pub struct FunDecl {
    pub name: Rc<str>,
    pub params: Vec<Param>,
    pub ret: Type,
    pub body: Vec<Stmt>,
    pub pos: Pos,
    pub is_static: bool,
    /// The file the function was written in, for runtime error locations.
    pub file: Rc<Path>,
    /// `fun name::<T, U>`: generic parameters, each bound at a call to the
    /// type the call gives (`name::<int, str>(…)`).
    pub generics: Vec<Rc<str>>,
    /// `*> T`: the type of the values it yields when run as a fiber.
    pub yields: Option<Type>,
    /// `mut fun`: a method that changes its object (needs a `mut` instance).
    pub is_mut: bool,
    /// Where `fun name` binds its name (filled by the resolver).
    pub slot: Resolved,
    /// Its call frame's shape (filled by the resolver).
    pub frame: Cell<Frame>,
    /// Its compiled form, made at its first call (`buzz/lower/`).
    pub compiled: Derived,
    /// What it captures and what is captured of it (filled by the
    /// resolver).
    pub captured: std::cell::OnceCell<Captures>,
}

/// A function's captures, as the resolver found them.
#[derive(Debug, Default)]
pub struct Captures {
    /// The enclosing functions' locals it captures, each as (levels out
    /// from where the function is made, slot).
    pub outer: Box<[(u32, u32)]>,
    /// The slots of its own level that functions inside it capture.
    pub own: Box<[u32]>,
    /// A function inside it shares a local of one of its nested levels
    /// (a block's, a loop's): only a scope per level could hold it.
    pub nested_shared: bool,
}

/// Room for the form a later stage derives from a declaration (its
/// lowered body or default), made at most once, at its first use. Its
/// type is erased so that the tree names nothing of the stages after it:
/// the stage that fills it owns the type, and reads back only what it
/// wrote (see [`Derived::get_or_init`]).
#[derive(Default)]
pub struct Derived(std::cell::OnceCell<Option<Made>>);

/// A derived form and its type, kept beside it so that a read checks the
/// type without the virtual call `downcast_ref` makes.
struct Made {
    ty: std::any::TypeId,
    form: Box<dyn std::any::Any>,
}

impl Derived {
    /// What `make` derives, made on the first call; `None` when `make`
    /// declined.
    ///
    /// Every call on one `Derived` names the same `T`: each field that
    /// holds one is read and filled by one function of one stage, always
    /// with one type (`lower::compiled`, `lower::default_of`). The type is
    /// checked at every read all the same, and a read as another type
    /// stops the run (a bug of magus, never of a spell): this interpreter
    /// stands between a spell and the gate, so no unchecked cast is kept
    /// on its path for the 0.5% more instructions the check costs on
    /// fib(22) (callgrind; `downcast_ref`, through the vtable, cost 3.6%).
    #[inline]
    pub(crate) fn get_or_init<T: 'static>(&self, make: impl FnOnce() -> Option<T>) -> Option<&T> {
        let made = self.0.get_or_init(|| {
            make().map(|t| Made {
                ty: std::any::TypeId::of::<T>(),
                form: Box::new(t),
            })
        });
        let made = made.as_ref()?;
        assert!(
            made.ty == std::any::TypeId::of::<T>(),
            "a Derived read as another type"
        );
        let form: *const dyn std::any::Any = &*made.form;
        // SAFETY: `made.ty`, checked just above, is the type of the value
        // `form` was boxed from, so it points at a live `T`, owned by
        // `self` for as long as the returned borrow of `self`.
        Some(unsafe { &*form.cast::<T>() })
    }

    /// Whether a form was made.
    #[cfg(test)]
    pub(crate) fn is_made(&self) -> bool {
        self.0.get().is_some_and(Option::is_some)
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0.get() {
            None => "not tried",
            Some(None) => "not made",
            Some(Some(_)) => "made",
        })
    }
}

#[derive(Debug)]
pub struct FieldDecl {
    pub name: Rc<str>,
    pub is_static: bool,
    /// `final name: T`: set once, when the object is made.
    pub is_final: bool,
    pub ty: Type,
    pub default: Option<Expr>,
    pub pos: Pos,
    /// The default's compiled form, made at its first use (as
    /// `FunDecl::compiled`).
    pub compiled: Derived,
}

#[derive(Debug)]
pub struct ObjectDecl {
    pub name: Rc<str>,
    /// `object<P, Q> Name`: the protocols it conforms to.
    pub protocols: Vec<Rc<str>>,
    pub fields: Vec<FieldDecl>,
    pub methods: Vec<Rc<FunDecl>>,
    pub pos: Pos,
    /// Where the object's name is bound (filled by the resolver).
    pub slot: Resolved,
}

#[derive(Debug)]
pub struct EnumDecl {
    pub name: Rc<str>,
    /// `enum<T>`: the type of the cases' values (`int` when absent).
    pub value_type: Option<Type>,
    pub cases: Vec<(Rc<str>, Option<Expr>)>,
    pub pos: Pos,
    /// Where the enum's name is bound (filled by the resolver).
    pub slot: Resolved,
}

#[derive(Debug)]
pub struct Expr {
    pub kind: ExprKind,
    /// Where the run places its errors: the start, or the operator, the
    /// member name or the `[` of a postfix form.
    pub pos: Pos,
    /// Just past the expression's last token, for diagnostics only (the
    /// run never reads it).
    pub end: Pos,
}

impl Expr {
    /// Where the expression as written starts: its leftmost operand's
    /// start for the forms whose `pos` is an operator or a member name.
    pub(crate) fn start(&self) -> Pos {
        let mut e = self;
        while let Some(left) = e.leftmost() {
            e = left;
        }
        e.pos
    }

    fn leftmost(&self) -> Option<&Expr> {
        match &self.kind {
            ExprKind::Binary(_, l, _)
            | ExprKind::And(l, _)
            | ExprKind::Or(l, _)
            | ExprKind::Coalesce(l, _)
            | ExprKind::Range(l, _)
            | ExprKind::Is(l, _)
            | ExprKind::Force(l) => Some(&**l),
            ExprKind::As { value: l, .. }
            | ExprKind::Assign { target: l, .. }
            | ExprKind::Call { callee: l, .. }
            | ExprKind::Field { object: l, .. }
            | ExprKind::Index { object: l, .. }
            | ExprKind::OptionalIndex { object: l, .. }
            | ExprKind::Catch { body: l, .. }
            | ExprKind::Generic { callee: l, .. } => Some(&**l),
            _ => None,
        }
        .filter(|l| (l.pos.line, l.pos.column) < (self.pos.line, self.pos.column))
    }

    /// How many characters the expression covers from [`Expr::start`]
    /// when it fits on its line, else `None`.
    pub(crate) fn width(&self) -> Option<u32> {
        let start = self.start();
        (start.line == self.end.line && self.end.column > start.column)
            .then(|| self.end.column - start.column)
    }
}

/// `local = value` or `local op= value` on a reassignable resolved local
/// (not `_`): where its frame lies and what is stored, so a statement can
/// store straight into the slot without making the assignment's value.
pub(crate) struct LocalStore<'a> {
    pub depth: u32,
    pub slot: u32,
    pub op: Option<BinOp>,
    pub value: &'a Expr,
}

impl Expr {
    /// Whether this names a resolved local (reading it has no effect and
    /// cannot fail).
    #[inline]
    pub(crate) fn is_local(&self) -> bool {
        matches!(&self.kind, ExprKind::Var(_, res) if matches!(res.get(), Res::Local { .. }))
    }

    #[inline]
    pub(crate) fn as_local_store(&self) -> Option<LocalStore<'_>> {
        let ExprKind::Assign { target, op, value } = &self.kind else {
            return None;
        };
        let ExprKind::Var(name, res) = &target.kind else {
            return None;
        };
        match res.get() {
            Res::Local {
                depth,
                slot,
                fixed: false,
            } if &**name != "_" => Some(LocalStore {
                depth,
                slot,
                op: *op,
                value,
            }),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Not,
    Neg,
    BitNot,
}

/// One piece of an interpolated string.
#[derive(Debug)]
pub enum TemplatePart {
    Text(Rc<str>),
    /// Literal bytes that are not UTF-8 (`\232`).
    Bytes(Rc<[u8]>),
    Expr(Expr),
}

/// What one `obj.name` site learnt the last time it ran: the object type
/// it met (by its unique id) and the index of the field it read or of the
/// method it called there, or, for a value without such an id (a module,
/// a record, an anonymous object), only the index, checked by the name
/// found there (by pointer). Only a hint, so a site that sees values of
/// several shapes stays right. A site is either a field's or a method's,
/// never both: the index means one kind of member. One word, so that the
/// syntax tree (and the parser's recursion) does not grow.
#[derive(Debug, Default)]
pub struct MemberCache(std::cell::Cell<u64>);

impl MemberCache {
    /// The index last found here, whatever the value it was found in.
    pub(crate) fn hint(&self) -> usize {
        (self.0.get() & u64::from(u32::MAX)) as usize
    }

    /// Remembers `at` without a type: a value without an id.
    pub(crate) fn set_hint(&self, at: usize) {
        self.0
            .set(u64::try_from(at).unwrap_or(0) & u64::from(u32::MAX));
    }

    /// The member index last found here for the object type `class_id`
    /// (never 0).
    #[inline(always)]
    pub(crate) fn member(&self, class_id: u32) -> Option<usize> {
        let word = self.0.get();
        (class_id != 0 && (word >> 32) as u32 == class_id)
            .then_some((word & u64::from(u32::MAX)) as usize)
    }

    /// Remembers that `at` is the member's index for `class_id` (0: for
    /// a value without an id, only a hint).
    pub(crate) fn set_member(&self, class_id: u32, at: usize) {
        if let Ok(at) = u32::try_from(at) {
            self.0.set(u64::from(class_id) << 32 | u64::from(at));
        }
    }
}

#[derive(Debug)]
pub struct Arg {
    pub name: Option<Rc<str>>,
    pub value: Expr,
}

#[derive(Debug)]
pub enum ExprKind {
    Null,
    Void,
    Bool(bool),
    Int(i64),
    Double(f64),
    Str(Rc<str>),
    /// A string literal whose bytes are not UTF-8 (`"\232"`).
    Bytes(Rc<[u8]>),
    Template(Vec<TemplatePart>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    /// A name, and where the resolver found it.
    Var(Rc<str>, Resolved),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Coalesce(Box<Expr>, Box<Expr>),
    Range(Box<Expr>, Box<Expr>),
    Is(Box<Expr>, Type),
    /// `target = value` or `target op= value`.
    Assign {
        target: Box<Expr>,
        op: Option<BinOp>,
        value: Box<Expr>,
    },
    Call {
        callee: Box<Expr>,
        args: Vec<Arg>,
    },
    /// `obj.name`, `module\name`, or `obj?.name` when `optional`.
    Field {
        object: Box<Expr>,
        name: Rc<str>,
        optional: bool,
        /// Where this site last found `name` (see [`MemberCache`]).
        cache: MemberCache,
    },
    /// `obj[index]`, or `obj[?index]` when `checked`.
    Index {
        object: Box<Expr>,
        index: Box<Expr>,
        checked: bool,
    },
    /// `mut [ … ]` or `mut { … }`: a literal made mutable.
    Mutable(Box<Expr>),
    /// `obj?[index]`: null when `obj` is null.
    OptionalIndex {
        object: Box<Expr>,
        index: Box<Expr>,
    },
    Force(Box<Expr>),
    If {
        cond: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    Catch {
        body: Box<Expr>,
        default: Box<Expr>,
    },
    Lambda(Rc<FunDecl>),
    /// `Name{ field = value, … }`.
    Instance {
        object: Rc<str>,
        fields: Vec<(Rc<str>, Expr)>,
        /// Where the resolver found `object`.
        class: Resolved,
    },
    /// `module\Name{ field = value, … }`.
    InstanceOf {
        class: Box<Expr>,
        fields: Vec<(Rc<str>, Expr)>,
    },
    /// `.{ a = 1, b }` or the tuple `.{ 1, 2 }` (fields `0`, `1`).
    AnonObject(Vec<(Rc<str>, Expr)>),
    /// `.case`: an enum case whose enum the expected type gives.
    InferredCase(Rc<str>),
    /// `typeof expr`.
    TypeOf(Box<Expr>),
    /// `<T>`: a type as a value.
    TypeValue(Type),
    /// `expr as T` (throws on mismatch) or `expr as? T` (null on mismatch).
    As {
        value: Box<Expr>,
        ty: Type,
        optional: bool,
    },
    /// `from { …; out value; }`.
    Block(Vec<Stmt>),
    Match {
        subject: Box<Expr>,
        arms: Vec<MatchArm>,
        otherwise: Option<Box<Expr>>,
    },
    /// `$"regex"`.
    Pattern(Rc<str>),
    /// `&f(args)` or `&obj.method(args)`: the call (always an
    /// [`ExprKind::Call`]) made into a new fiber, not yet started.
    AsyncCall(Box<Expr>),
    /// `[<T>, a, b]`: a list literal with its item type given.
    TypedList {
        ty: Box<Type>,
        items: Vec<Expr>,
    },
    /// `resume fiber`: runs the fiber to its next `yield`.
    Resume(Box<Expr>),
    /// `resolve fiber`: runs the fiber to its end, dismissing its yields.
    Resolve(Box<Expr>),
    /// `yield value`: hands `value` to the fiber's resumer.
    Yield(Box<Expr>),
    /// `f::<T, U>`: a function given its generic types (usually called
    /// at once: `f::<int>(x)`).
    Generic {
        callee: Box<Expr>,
        types: Vec<Type>,
    },
}

/// Where a name lives at run time, as the resolver (`buzz/resolve/`)
/// found it before the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Res {
    /// Looked up by name through every scope: names the resolver leaves
    /// to the run (generic parameters, local protocols) and every name of
    /// a tree not resolved.
    #[default]
    Dynamic,
    /// A local: the scope `depth` levels out from the current one, slot
    /// `slot` there; `fixed` when it may not be reassigned.
    Local { depth: u32, slot: u32, fixed: bool },
    /// A top-level name of the file, found by name in its globals; `hint`
    /// is the index it was last found at.
    Global { hint: u32 },
}

impl Res {
    /// The deepest scope and the highest slot a [`Resolved`] can hold.
    pub const MAX_DEPTH: u32 = (1 << 8) - 1;
    pub const MAX_SLOT: u32 = (1 << 21) - 1;
}

/// A [`Res`] the resolver fills in (and a global's lookup refines),
/// packed in 32 bits so that the tree's nodes stay as small as they were:
/// two bits of kind, then `fixed`, 8 bits of depth and 21 of slot for a
/// local, 30 bits of hint for a global.
#[derive(Debug, Default)]
pub struct Resolved(Cell<u32>);

impl Resolved {
    #[inline]
    pub fn get(&self) -> Res {
        let bits = self.0.get();
        match bits & 3 {
            1 => Res::Local {
                fixed: bits & 4 != 0,
                depth: (bits >> 3) & Res::MAX_DEPTH,
                slot: bits >> 11,
            },
            2 => Res::Global { hint: bits >> 2 },
            _ => Res::Dynamic,
        }
    }

    /// Stores `res`; a depth, slot or hint too large to hold leaves the
    /// name to be looked up by name (the resolver refuses such trees).
    #[inline]
    pub(crate) fn set(&self, res: Res) {
        let bits = match res {
            Res::Local { depth, slot, fixed }
                if depth <= Res::MAX_DEPTH && slot <= Res::MAX_SLOT =>
            {
                1 | (u32::from(fixed) << 2) | (depth << 3) | (slot << 11)
            }
            Res::Global { hint } if hint < 1 << 30 => 2 | (hint << 2),
            _ => 0,
        };
        self.0.set(bits);
    }
}

/// The shape of a function's call frame, as the resolver laid it out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Frame {
    /// Whether the frame's slots were laid out (else names are looked up).
    pub resolved: bool,
    /// A method: slot 0 holds `this`, the parameters follow.
    pub method: bool,
    /// How many slots the frame needs.
    pub size: u32,
    /// The body (or a function nested in it) reads or writes a local of
    /// an enclosing function: it captures.
    pub captures: bool,
    /// One of those locals may change after the function is made (a
    /// `var`, a local `fun`, a name declared twice in one scope): the
    /// function must share it, not copy it.
    pub shares: bool,
}

/// Whether `body` declares a name of its own (so needs a scope of its
/// own). The resolver and the compiled form both make their levels by
/// this one rule.
pub(crate) fn declares(body: &[Stmt]) -> bool {
    body.iter().any(|s| {
        matches!(
            s.kind,
            StmtKind::Var(_)
                | StmtKind::Fun(_)
                | StmtKind::Object(_)
                | StmtKind::Enum(_)
                | StmtKind::Protocol(_)
                | StmtKind::Import { .. }
        )
    })
}

/// How `ty` is written in Buzz (`[str]`, `{str: int}`, `int?`), for
/// messages and for a type value printed.
pub(crate) fn type_label(ty: &Type) -> String {
    match ty {
        Type::Any => "any".into(),
        Type::Void => "void".into(),
        Type::Named(n) => n.to_string(),
        Type::List(t) => format!("[{}]", type_label(t)),
        Type::Map(k, v) => format!("{{{}: {}}}", type_label(k), type_label(v)),
        Type::Optional(t) => format!("{}?", type_label(t)),
        Type::Function => "function".into(),
        Type::AnonObject => "obj".into(),
        Type::Mut(t) => format!("mut {}", type_label(t)),
    }
}

#[cfg(test)]
mod derived_tests {
    use super::Derived;
    use std::cell::Cell;

    #[test]
    fn a_derived_form_is_made_once_and_read_back_only_as_its_type() {
        let slot = Derived::default();
        let made = Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            Some(41_u64)
        };
        assert_eq!(slot.get_or_init(make), Some(&41));
        assert_eq!(slot.get_or_init(make), Some(&41));
        assert_eq!(made.get(), 1);
        assert!(slot.is_made());
    }

    #[test]
    #[should_panic(expected = "a Derived read as another type")]
    fn reading_a_derived_form_as_another_type_stops_before_the_cast() {
        let slot = Derived::default();
        slot.get_or_init(|| Some(41_u64));
        slot.get_or_init(|| Some(7_i64));
    }

    #[test]
    fn a_declined_form_is_not_tried_again() {
        let slot = Derived::default();
        assert_eq!(slot.get_or_init(|| None::<u64>), None);
        assert_eq!(slot.get_or_init(|| Some(1_u64)), None);
        assert!(!slot.is_made());
        assert_eq!(format!("{slot:?}"), "not made");
    }
}

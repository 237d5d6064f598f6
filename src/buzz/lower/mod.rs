//! The compiled form, the one form Buzz code runs in: a function body
//! lowered, at its first call, to a tree of [`Stmt`]/[`Expr`] nodes that
//! run on one flat frame of values; so are the file's top level, `test`
//! blocks and default values. Nothing is declined: every function of a
//! resolved tree lowers.
//!
//! Why: the tree walker it replaced kept locals in `Rc<Scope>` frames
//! behind a `RefCell`, one more frame per declaring block or loop step,
//! and found outer locals by walking parents (issue 14, "Speed from the
//! check"). Here every local of every nested block of a function has its
//! own index in one `Vec<Value>`, laid out once from the resolver's slots;
//! no scope is made per block, step or call between compiled functions.
//!
//! Why this form and not a bytecode: it runs arithmetic on unboxed numbers
//! and calls without a scope, and each node keeps the position its errors
//! name, so covering the rest of the language (`try`, `match`, `from`,
//! casts, fibers, generics: [`extra`]) took new nodes, not a new engine.
//! Closures hold a chain of scopes laid out as the resolver's levels:
//! locals fixed before a closure is made are copied into it ([`Copying`]);
//! locals it shares live in a scope made at each call (`Function::own`);
//! when a closure shares a local of one of its blocks or loops, every
//! level of the function is a scope, made where the level starts
//! ([`StmtKind::Scoped`]); so is a function declaring a local object,
//! enum, protocol or import, whose declaration then runs on that scope
//! ([`declare`]).
//!
//! A function's own statements then go one step further ([`flat`]): its
//! loops, conditions, stores, typed declarations, `foreach` and returns
//! become jumps and operations on slots in one dispatch loop, every other
//! statement and expression staying a node of the tree it runs. That is
//! the first half of a bytecode: a loop turn of `sum = sum + i; i = i +
//! 1` drops from about 550 instructions to about 240; calls, fields and
//! methods are still the tree's (flattening calls alone measured slower).
//!
//! This folder owns the form (every type of it, down to the accessor
//! methods it recognises: [`accessor`]) and the lowering ([`tree`], and
//! [`flat`]'s flattening); it never runs anything and imports nothing of
//! the run but values (`vm/value.rs`, for constants) and the built-in
//! methods' table (`lib/methods.rs`). `vm/` runs the form (`exec.rs`,
//! `extra.rs`, `declare.rs`, `defaults.rs`, `accessor.rs`, `dispatch.rs`).

pub(crate) mod accessor;
pub(crate) mod flat;
pub(crate) mod tree;

use super::syntax::ast::{
    self, BinOp, EnumDecl, FunDecl, MemberCache, ObjectDecl, Resolved, Type, UnOp,
};
use super::syntax::lexer::Pos;
use super::vm::value::Value;
use std::cell::OnceCell;
use std::rc::Rc;

/// `decl`'s compiled form, lowering it on first use; `None` only when its
/// tree was never resolved.
#[inline]
pub(crate) fn compiled(decl: &FunDecl) -> Option<&Function> {
    // `FunDecl::compiled` is read and filled only here, always as a
    // `Function`.
    decl.compiled.get_or_init(|| tree::function(decl))
}

/// An expression of a scope: its compiled form and the frame it needs.
pub(crate) struct ScopedExpr {
    pub(crate) expr: Expr,
    pub(crate) size: usize,
}

/// The compiled form of the default `e` of the field `f`, lowering it on
/// first use; `None` only when its tree was never resolved.
pub(crate) fn default_of<'f>(f: &'f ast::FieldDecl, e: &ast::Expr) -> Option<&'f ScopedExpr> {
    // `FieldDecl::compiled` is read and filled only here, always as a
    // `ScopedExpr`.
    f.compiled.get_or_init(|| tree::scoped_expr(e))
}

/// A declaration statement of a function's body.
pub(crate) enum Declaration {
    /// The object and its static fields' defaults, in order.
    Object(Rc<ObjectDecl>, Vec<Option<Expr>>),
    /// The enum and the values its cases are given, in order.
    Enum(Rc<EnumDecl>, Vec<Option<Expr>>),
    Protocol(Rc<str>),
    Import {
        module: Rc<str>,
        alias: Option<Rc<str>>,
        names: Vec<Rc<str>>,
    },
}

/// `do { … } until (cond)` whose body declares, where every level lives
/// in scopes: each step runs in a scope of its own, and the condition is
/// read in it (the body's names are visible there).
pub(crate) struct StepScoped {
    pub(crate) body: Vec<Stmt>,
    pub(crate) cond: Cond,
    pub(crate) label: Label,
}

/// A compiled function body.
pub(crate) struct Function {
    /// The body, flattened ([`flat`]).
    pub(crate) flat: flat::Code,
    /// Slots of the flat frame: the function's own level (`this`, the
    /// parameters, its declarations) first, then every nested level's.
    pub(crate) size: usize,
    /// Each parameter's commonest type, checked inline at a call.
    pub(crate) checks: Vec<Check>,
    /// A method whose body only reads or stores a field (or an item of
    /// one): run without a frame where it is plain.
    pub(crate) accessor: Option<accessor::Accessor>,
    /// The own level's slots that closures share: kept in a scope made at
    /// each call, which is the environment inside the body.
    pub(crate) own: Option<Box<[u32]>>,
    /// Each parameter's default, read in the call's frame ([`defaults`]).
    pub(crate) defaults: Box<[Option<ScopedExpr>]>,
}

/// A parameter (or field) type a value is checked against without the
/// general conformance test when it plainly conforms.
#[derive(Clone)]
pub(crate) enum Check {
    Int,
    Double,
    /// An object type by its (interned) name, `null` too when optional.
    Object(Rc<str>, bool),
    Other,
}

/// A statement, with where it starts (for the depth and memory checks).
pub(crate) struct Stmt {
    pub(crate) kind: StmtKind,
    pub(crate) pos: Pos,
}

/// A loop's label, for labelled `break` and `continue`.
pub(crate) type Label = Option<Rc<str>>;

pub(crate) enum StmtKind {
    Expr(Expr),
    /// `local.name op= value` as a statement, `value` unable to rebind
    /// the local: the object is read in place after the value, and no
    /// value is made for the assignment itself.
    StoreField(Box<StoreField>),
    /// `local op= value` as a statement: no value made.
    StoreLocal {
        slot: u32,
        op: Option<BinOp>,
        value: Expr,
        /// The assignment's own position (its operator), for errors.
        pos: Pos,
    },
    Var {
        slot: u32,
        init: Option<Expr>,
        ty: Option<Type>,
        name: Rc<str>,
    },
    Block(Vec<Stmt>),
    If {
        cond: Cond,
        then: Vec<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    /// `if (x -> y)` or `if (x as y: T)`.
    IfBind {
        value: Expr,
        slot: u32,
        cast: Option<Type>,
        then: Vec<Stmt>,
        otherwise: Option<Box<Stmt>>,
    },
    While {
        cond: Cond,
        body: Vec<Stmt>,
        label: Label,
    },
    DoUntil {
        body: Vec<Stmt>,
        cond: Cond,
        label: Label,
    },
    For {
        init: Vec<Stmt>,
        cond: Option<Cond>,
        /// Each step as a statement (see `tree::Lower::step`).
        step: Vec<Stmt>,
        body: Vec<Stmt>,
        label: Label,
    },
    ForEach(Box<ForEach>),
    Break(Label),
    Continue(Label),
    Return(Option<Expr>),
    Throw(Expr),
    /// `out value;` of a `from { … }` block.
    Out(Expr),
    /// A declaration of a local kept in the call's scope (the
    /// environment), checked as [`StmtKind::Var`] is.
    VarInScope {
        slot: u32,
        init: Option<Expr>,
        ty: Option<Type>,
        name: Rc<str>,
    },
    Try(Box<Try>),
    /// A level of a function whose every local lives in scopes (see
    /// `lower`'s `all_scoped`): its statements in a scope made each time
    /// it runs: one per block, loop step and clause.
    Scoped(Vec<Stmt>),
    /// A local `object`, `enum`, `protocol` or `import` ([`declare`]).
    Declare(Box<Declaration>),
    /// A `do … until` whose steps are scopes ([`StepScoped`]).
    DoUntilScoped(Box<StepScoped>),
}

/// `try { … } catch (e: T) { … } catch { … }`.
pub(crate) struct Try {
    pub(crate) body: Vec<Stmt>,
    pub(crate) clauses: Vec<Clause>,
}

/// A `catch` clause: its binding's slot and type (none for a bare one).
pub(crate) struct Clause {
    pub(crate) binding: Option<(u32, Type)>,
    pub(crate) body: Vec<Stmt>,
}

pub(crate) struct ForEach {
    pub(crate) key: Option<u32>,
    pub(crate) value: u32,
    pub(crate) iterable: Expr,
    pub(crate) at: Pos,
    pub(crate) body: Vec<Stmt>,
    pub(crate) label: Label,
}

/// A condition: its expression and where a non-bool is reported.
pub(crate) struct Cond {
    pub(crate) expr: Expr,
    pub(crate) pos: Pos,
}

/// A call's arguments: names as written (for the in-order test), values.
pub(crate) struct Args {
    pub(crate) names: Vec<Option<Rc<str>>>,
    pub(crate) values: Vec<Expr>,
    /// No argument is named (the in-order test is then a length check).
    pub(crate) positional: bool,
    /// The function these named arguments were last found to give in
    /// order: the test is then a pointer check. Weak, so that its address
    /// cannot be reused by another declaration while it is kept here.
    pub(crate) ordered: std::cell::RefCell<std::rc::Weak<FunDecl>>,
    /// Where the callee (slot 0) and each argument are written, read only
    /// to place a native's refusal (see `Interpreter::place_refused`).
    pub(crate) spans: Box<[(Pos, Pos)]>,
}

pub(crate) enum Expr {
    /// An arithmetic or comparison tree that reading cannot change: tried
    /// on unboxed numbers first ([`Num`]); the general form (evaluated
    /// when any operand is not a number or the fast form cannot say)
    /// gives every other result and every error.
    ///
    /// The flag says whether the tree last computed as all `double`s: a
    /// store then tries that first.
    Arith(Box<(Num, Expr, std::cell::Cell<bool>)>),
    Const(Value),
    Local(u32),
    /// A top-level name (or one found by name from the closure's scope,
    /// such as a local `import`'s); `res` keeps where it was found last.
    Global {
        name: Rc<str>,
        res: Resolved,
        pos: Pos,
    },
    Binary(BinOp, Box<(Expr, Expr)>, Pos),
    Unary(UnOp, Box<Expr>, Pos),
    /// `and` (`or` when the flag is set).
    Logic(Box<(Cond, Cond)>, bool),
    Coalesce(Box<(Expr, Expr)>),
    Range(Box<(Expr, Expr)>, Pos),
    Force(Box<Expr>, Pos),
    Is(Box<Expr>, Type),
    TypeOf(Box<Expr>),
    Field(Box<Field>),
    Index(Box<Index>),
    OptionalIndex(Box<(Expr, Expr)>, Pos),
    AssignLocal {
        slot: u32,
        op: Option<BinOp>,
        value: Box<Expr>,
        pos: Pos,
    },
    /// `_ = value`.
    Discard(Box<Expr>),
    /// Assigning a `final` local: the value, then the error.
    AssignFinal(Box<Expr>, Rc<str>, Pos),
    AssignGlobal(Box<AssignGlobal>),
    AssignField(Box<AssignField>),
    AssignIndex(Box<AssignIndex>),
    CallGlobal(Box<CallGlobal>),
    CallMethod(Box<CallMethod>),
    CallValue(Box<(Expr, Args)>, Pos),
    Template(Vec<Part>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Mutable(Box<Expr>),
    If(Box<(Cond, Expr, Expr)>),
    Catch(Box<(Expr, Expr)>),
    Instance(Box<Instance>),
    /// `.{ … }` of an object type given as a value (its name unused).
    InstanceOf(Box<Instance>),
    /// The rarer constructs, run out of the hot frames (`extra`).
    Extra(Box<Extra>),
}

/// Block values, `match`, casts, fibers and the literals that build
/// something each time they are read.
pub(crate) enum Extra {
    /// `from { … }`: the value given by `out`, or null.
    Block(Vec<Stmt>),
    Match(Match),
    /// `value as T` (`as?` when the flag is set).
    As(Expr, Type, bool, Pos),
    /// `$"regex"`, compiled at each read.
    Pattern(Rc<str>, Pos),
    /// `<T>`.
    TypeValue(Type),
    /// `[<T>, …]`: each item with where it is written.
    TypedList(Type, Vec<(Expr, Pos)>),
    /// `.{ name = value, … }`.
    AnonObject(Vec<(Rc<str>, Expr)>),
    /// `&f(args)`: a fiber of a call of a value.
    Async(Expr, Args, Pos),
    /// `&receiver.name(args)`: a fiber of a method call.
    AsyncMethod(Expr, Rc<str>, Pos, Args, Pos),
    /// `resume` (`resolve` when the flag is set): operand, where it is
    /// written, where the operator is.
    Resume(Expr, Pos, Pos, bool),
    Yield(Expr),
    /// A lambda or local `fun` that captures nothing of this function:
    /// a closure over the environment.
    Lambda(Rc<FunDecl>),
    /// A lambda or local `fun` capturing locals that cannot change after
    /// it is made: a closure over copies of them.
    Closure(Box<Copying>),
    /// A local in a scope: levels out from the environment, slot (the
    /// name and place for the search by name when no scope is there).
    Outer(u32, u32, Rc<str>, Pos),
    /// `name = value` or `name op= value` of a local in a scope.
    Store(Box<ScopeStore>),
    /// `f::<T, …>` as a value.
    Generic(Expr, Vec<Type>),
    /// `f::<T, …>(args)` and `receiver.name::<T, …>(args)`.
    CallGeneric(Box<CallGeneric>),
    /// A name bound at run time in the call's frame (a generic
    /// parameter, a local `protocol`): found by name.
    Named(Rc<str>, Resolved, Pos),
}

/// A closure that copies the locals it captures: the scope chain the
/// resolver's levels give it, one scope per level of this function between
/// where it is made and the function's own, holding only those copies.
pub(crate) struct Copying {
    pub(crate) decl: Rc<FunDecl>,
    /// Levels of this function open where the closure is made.
    pub(crate) levels: u32,
    /// Each copied local: levels out from where it is made, its slot
    /// there, its index in the flat frame.
    pub(crate) copies: Vec<(u32, u32, u32)>,
}

/// A store into a local kept in a scope (as [`Extra::Outer`] reads it).
pub(crate) struct ScopeStore {
    pub(crate) out: u32,
    pub(crate) slot: u32,
    pub(crate) name: Rc<str>,
    pub(crate) op: Option<BinOp>,
    pub(crate) value: Expr,
    /// Where the name is written, and the assignment's own position.
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
}

/// A generic call: the callee's parts, the type arguments, the arguments.
pub(crate) struct CallGeneric {
    /// A function value, or a method's receiver (with `method`).
    pub(crate) callee: Expr,
    /// `receiver.name` (`?.` when the flag is set), where it is written.
    pub(crate) method: Option<(Rc<str>, bool, Pos)>,
    pub(crate) types: Vec<Type>,
    pub(crate) args: Args,
    pub(crate) pos: Pos,
}

/// `match (subject) { conditions => value, …, else => value }`.
pub(crate) struct Match {
    pub(crate) subject: Expr,
    pub(crate) arms: Vec<(Vec<Expr>, Expr)>,
    pub(crate) otherwise: Option<Expr>,
    pub(crate) pos: Pos,
}

/// A number as the arithmetic fast path carries it.
#[derive(Clone, Copy)]
pub(crate) enum N {
    I(i64),
    D(f64),
    B(bool),
}

/// The fast form of an [`Expr::Arith`]: only reads that cannot fail or
/// run code (literals, locals, fields and items of locals).
pub(crate) enum Num {
    Const(N),
    Local(u32),
    /// A top-level name, read where `Expr::Global`'s lookup finds it first.
    Global(Rc<str>, Resolved),
    /// `local.name`.
    Field(u32, Rc<str>, MemberCache),
    /// `local[index]`.
    Item(u32, Box<Num>),
    /// `local.len()` of a `str` or a list (k-nucleoide's
    /// `i < sequence.len()`); any other receiver takes the general path.
    Len(u32),
    /// `local.name[index]` (fasta's `this.probs[i]`).
    FieldItem(Box<(u32, Rc<str>, MemberCache, Num)>),
    Bin(BinOp, Box<(Num, Num)>),
    Neg(Box<Num>),
}

pub(crate) struct Field {
    pub(crate) object: Expr,
    pub(crate) name: Rc<str>,
    pub(crate) optional: bool,
    pub(crate) cache: MemberCache,
    pub(crate) pos: Pos,
}

pub(crate) struct Index {
    pub(crate) object: Expr,
    pub(crate) index: Expr,
    pub(crate) checked: bool,
    pub(crate) pos: Pos,
    /// The object is a local that evaluating the index cannot rebind: it
    /// may be read in place after the index.
    pub(crate) late: bool,
}

pub(crate) struct AssignGlobal {
    pub(crate) name: Rc<str>,
    pub(crate) op: Option<BinOp>,
    pub(crate) value: Expr,
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
}

pub(crate) struct AssignField {
    pub(crate) object: Expr,
    pub(crate) name: Rc<str>,
    pub(crate) cache: MemberCache,
    pub(crate) op: Option<BinOp>,
    pub(crate) value: Expr,
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
}

pub(crate) struct StoreField {
    pub(crate) slot: u32,
    pub(crate) name: Rc<str>,
    pub(crate) cache: MemberCache,
    pub(crate) op: Option<BinOp>,
    pub(crate) value: Expr,
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
}

pub(crate) struct AssignIndex {
    pub(crate) object: Expr,
    pub(crate) index: Expr,
    pub(crate) op: Option<BinOp>,
    pub(crate) value: Expr,
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
    /// As [`Index::late`], for the index and the value.
    pub(crate) late: bool,
}

pub(crate) struct CallGlobal {
    pub(crate) name: Rc<str>,
    pub(crate) res: Resolved,
    pub(crate) args: Args,
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
}

pub(crate) struct CallMethod {
    pub(crate) receiver: Expr,
    pub(crate) name: Rc<str>,
    /// `name` as a built-in method, resolved here once.
    pub(crate) method: super::lib::methods::Builtin,
    pub(crate) optional: bool,
    pub(crate) cache: MemberCache,
    pub(crate) args: Args,
    pub(crate) at: Pos,
    pub(crate) pos: Pos,
    /// The receiver is a local the arguments cannot rebind: a built-in
    /// method may read it in place after them.
    pub(crate) late: bool,
}

pub(crate) enum Part {
    Text(Rc<[u8]>),
    Expr(Expr, Pos),
}

pub(crate) struct Instance {
    pub(crate) name: Rc<str>,
    pub(crate) class: Expr,
    pub(crate) fields: Vec<(Rc<str>, Expr, Pos)>,
    pub(crate) pos: Pos,
    /// For the first object type built here: where each of its
    /// (non-static) fields gets its value, in order. Set once, after
    /// every given name was found among its fields.
    pub(crate) layout: OnceCell<Layout>,
}

/// An [`Instance`]'s fields laid out for one object type (held weakly, so
/// that its address cannot be reused by another while kept here).
#[derive(Clone)]
pub(crate) struct Layout {
    pub(crate) decl: std::rc::Weak<super::syntax::ast::ObjectDecl>,
    /// How each of the type's (non-static) fields gets its value, in the
    /// order an instance holds them.
    pub(crate) fields: Box<[Fill]>,
}

/// Where one field of an instance built at a site gets its value, decided
/// once: a build then neither walks the declaration's fields (skipping
/// static ones) nor takes a default's general path for a null. merkle's
/// `Node` has two optional fields without a default of four; its builds
/// went from about 460 instructions to about 240 (callgrind, 2026-12-07).
#[derive(Clone)]
pub(crate) struct Fill {
    /// The field's index among the declaration's fields (statics too).
    pub(crate) decl_at: u32,
    pub(crate) from: FillFrom,
    /// The field's type, for the inline check.
    pub(crate) check: Check,
}

#[derive(Clone, Copy)]
pub(crate) enum FillFrom {
    /// The site's field at this index.
    Given(u32),
    /// An optional field without a default, not given: null, which its
    /// type takes as it is (nothing to evaluate or check).
    Null,
    /// The field's default, evaluated where its object was declared.
    Default,
}

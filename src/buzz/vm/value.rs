//! Runtime values of the Buzz interpreter and the heap objects behind them.
//!
//! Lists, maps and objects are shared by reference (`Rc` + `RefCell`), as in
//! Buzz. Dropping, printing and comparing values never recurse without
//! bound: nested containers are dropped with an explicit work list, and
//! printing and equality stop at [`MAX_VALUE_DEPTH`]. An object instance
//! holds only its fields' values; their names live once in its
//! [`Class`], and a field site remembers the index it found per class.

use super::native::NativeFn;
pub(crate) use super::object::Obj;
use crate::buzz::syntax::ast::{FunDecl, MemberCache, Mutability, ObjectDecl, Type};
use hashbrown::hash_table::{self, HashTable};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

pub(crate) use arcstr::ArcStr;

/// How deep printing and `==` look into nested containers.
pub(in crate::buzz) const MAX_VALUE_DEPTH: usize = 64;

/// A Buzz value. Cloning is cheap: containers and objects are shared.
///
/// Two words: a one-word tag (`repr(u64)`) and one word of payload, with
/// nothing between them. Every shared payload is one thin pointer: a
/// `str` is an [`ArcStr`] (its length in its allocation, where `Rc<str>`
/// carried it in the value), a range's bounds and an enum case sit behind
/// one `Rc`. Three words cost every move of a value, of an `Eval` holding
/// one and of a frame's slots a third more, and lists a third more memory.
///
/// Why a whole word of tag: every byte of the value belongs to the tag
/// word or the payload word, so a move can copy it as two 8-byte halves,
/// the way it was written. With a one-byte tag,
/// `Bool`'s payload sat at byte 1; with a 4-byte tag, `Bool` and an enum
/// case's index sat at bytes 4..8, and moves copied bytes 0..4, 4..12
/// and 12..16. The middle load spans both words a producer had stored
/// separately, misses store forwarding and stalls. Each step measured:
/// the one-byte tag cost 15-30% of the CPU time of object-, list- and
/// double-heavy programs; the 4-byte tag cost 17% of the geometric mean
/// of upstream's bench programs (docs/benchmarks.md, "Stalls and atomic
/// counts").
///
/// Every payload is also one integer or pointer word (a `double` as its
/// bits, [`F64`]; a `bool` as a word, [`Truth`]), which makes a value a
/// pair of scalars to rustc: passed, returned and kept in two registers
/// rather than a 16-byte block in memory. 8% less CPU time (geometric
/// mean of upstream's bench programs; 1M additions 32%).
#[derive(Default)]
#[non_exhaustive]
#[repr(u64)]
pub enum Value {
    #[default]
    Null,
    Bool(Truth),
    Int(i64),
    Double(F64),
    Str(ArcStr),
    List(Rc<ListObj>),
    Map(Rc<MapObj>),
    /// An instance of a Buzz `object`, or a native record (see [`Value::record`]).
    Object(Obj),
    /// A case of a Buzz `enum`, one shared object per case.
    EnumCase(Rc<EnumCase>),
    /// `low..high`, `high` excluded; counts down when `high < low`.
    Range(Rc<Bounds>),
    Function(Rc<Closure>),
    Native(Rc<NativeFunction>),
    Module(Rc<ModuleObj>),
    Class(Rc<Class>),
    Enum(Rc<EnumType>),
    /// `<T>` or what `typeof` gives.
    Type(Rc<Type>),
    /// `$"…"`: a compiled pattern.
    Pattern(Rc<Pattern>),
    /// `.case` before the expected type has made it an enum case.
    InferredCase(ArcStr),
    /// A `str` whose bytes are not valid UTF-8 (upstream strings are
    /// bytes: `"\232"`, `hex.bin()`, a buffer's contents). Never holds
    /// valid UTF-8, which is always [`Value::Str`]: see [`Value::from_bytes`].
    Bytes(Rc<Box<[u8]>>),
    /// A fiber (`fib<T, Y>`), made by `&f(…)` or `std\currentFiber()`.
    Fiber(Rc<super::fiber::Fiber>),
    /// `ud`: upstream's user data, an opaque 64-bit handle; spells make
    /// one with `std\toUd` or `std\parseUd` and can only compare it.
    Ud(u64),
}

// Two words, and an absent value (`Option<Value>`) costs none more.
const _: () = assert!(std::mem::size_of::<Value>() == 16);
const _: () = assert!(std::mem::size_of::<Option<Value>>() == 16);

/// A `double`'s payload: its bits, an integer. Why not an `f64`: rustc
/// keeps a value in two registers (a pair of scalars) only when every
/// payload is an integer or a pointer of one word; one `f64` (or one
/// `bool`) made every `Value` a block of memory, moved through the stack
/// (see [`Value`]).
///
/// Not `PartialEq`: its bits' equality is not `==` on doubles (`NaN`,
/// `-0.0`); compare what [`F64::get`] gives.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
pub struct F64(u64);

impl F64 {
    #[inline(always)]
    pub const fn new(d: f64) -> F64 {
        F64(d.to_bits())
    }

    #[inline(always)]
    pub const fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

/// A `bool`'s payload, one word for the reason [`F64`] gives.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Truth(u64);

impl Truth {
    #[inline(always)]
    pub const fn new(b: bool) -> Truth {
        Truth(b as u64)
    }

    #[inline(always)]
    pub const fn get(self) -> bool {
        self.0 != 0
    }
}

/// A range's bounds, `low..high` (`high` excluded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub low: i64,
    pub high: i64,
}

/// Scalars are copied inline, where a value is read (a variable, a field,
/// an item); only shared values take the call that bumps a count.
impl Clone for Value {
    #[inline]
    fn clone(&self) -> Self {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Double(d) => Value::Double(*d),
            _ => self.clone_shared(),
        }
    }
}

impl Value {
    /// A shared value's clone: its one count raised, then its 16 bytes
    /// copied as one value, one match instead of a clone per variant.
    /// Written when the tag was 4 bytes and a clone per variant's stores
    /// were reloaded across their seam (1–2% less CPU on fasta, btree,
    /// merkle, nbody and k-nucleoide); the reload's full cause was the
    /// layout, see [`Value`].
    #[inline(never)]
    fn clone_shared(&self) -> Value {
        match self {
            Value::Null | Value::Bool(_) | Value::Int(_) | Value::Double(_) | Value::Ud(_) => {}
            Value::Str(s) | Value::InferredCase(s) => std::mem::forget(s.clone()),
            Value::List(l) => std::mem::forget(l.clone()),
            Value::Map(m) => std::mem::forget(m.clone()),
            Value::Object(o) => std::mem::forget(o.clone()),
            Value::EnumCase(c) => std::mem::forget(c.clone()),
            Value::Enum(e) => std::mem::forget(e.clone()),
            Value::Range(r) => std::mem::forget(r.clone()),
            Value::Function(f) => std::mem::forget(f.clone()),
            Value::Native(f) => std::mem::forget(f.clone()),
            Value::Module(m) => std::mem::forget(m.clone()),
            Value::Class(c) => std::mem::forget(c.clone()),
            Value::Type(t) => std::mem::forget(t.clone()),
            Value::Pattern(p) => std::mem::forget(p.clone()),
            Value::Bytes(b) => std::mem::forget(b.clone()),
            Value::Fiber(f) => std::mem::forget(f.clone()),
        }
        // SAFETY: every payload is a counted handle (`Rc`, `ArcStr`,
        // `Obj`) or plain bits, and a handle's clone is its own bits with
        // its count one higher. That count was raised just above (the
        // clone forgotten), so the bitwise copy owns it, as the clone
        // would have.
        unsafe { std::ptr::read(self) }
    }
}

/// A pattern literal: its source and the compiled regex.
pub struct Pattern {
    pub(crate) source: Rc<str>,
    pub(crate) regex: pcre2::bytes::Regex,
}

impl Value {
    /// A `bool` value.
    #[inline(always)]
    pub const fn bool(b: bool) -> Value {
        Value::Bool(Truth::new(b))
    }

    /// A `double` value.
    #[inline(always)]
    pub const fn double(d: f64) -> Value {
        Value::Double(F64::new(d))
    }

    /// A `str` value.
    pub fn str(s: impl Into<ArcStr>) -> Value {
        Value::Str(s.into())
    }

    /// The range `low..high`.
    pub fn range(low: i64, high: i64) -> Value {
        Value::Range(Rc::new(Bounds { low, high }))
    }

    /// The case `c`.
    pub(crate) fn case(c: &Rc<EnumCase>) -> Value {
        Value::EnumCase(c.clone())
    }

    /// A `[T]` value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Rc::new(ListObj::new(items)))
    }

    /// A `{K: V}` value; later duplicates of a key win.
    pub fn map(entries: Vec<(Value, Value)>) -> Value {
        let map = MapObj::default();
        for (k, v) in entries {
            map.insert(k, v);
        }
        Value::Map(Rc::new(map))
    }

    /// `Some(v)` as `v`, `None` as `null`: for natives returning `T?`.
    pub fn optional(value: Option<Value>) -> Value {
        value.unwrap_or(Value::Null)
    }

    /// An instance of a native object type (e.g. `SandboxError`) with the
    /// given fields, readable as `e.code` and matched by `catch (e: SandboxError)`.
    pub fn record(type_name: &str, fields: Vec<(&str, Value)>) -> Value {
        let (names, values): (Vec<Rc<str>>, Vec<Value>) = fields
            .into_iter()
            .map(|(name, value)| (Rc::from(name), value))
            .unzip();
        let class = Rc::new(Class::native(type_name, names));
        Value::Object(Obj::new(class, values))
    }

    /// A `str` of these bytes: [`Value::Str`] when they are UTF-8 text,
    /// else [`Value::Bytes`].
    pub fn from_bytes(bytes: Vec<u8>) -> Value {
        match String::from_utf8(bytes) {
            Ok(text) => Value::Str(ArcStr::from(text)),
            Err(e) => Value::Bytes(Rc::new(e.into_bytes().into_boxed_slice())),
        }
    }

    /// The bytes of a `str`, UTF-8 or not.
    pub fn str_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s.as_bytes()),
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_double(&self) -> Option<f64> {
        match self {
            Value::Double(d) => Some(d.get()),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(b.get()),
            _ => None,
        }
    }

    /// A copy of a list's items.
    pub fn as_list(&self) -> Option<Vec<Value>> {
        match self {
            Value::List(list) => Some(list.items.borrow().clone()),
            _ => None,
        }
    }

    /// A copy of a map's entries, in insertion order.
    pub fn as_map(&self) -> Option<Vec<(Value, Value)>> {
        match self {
            Value::Map(map) => Some(map.data.borrow().entries.clone()),
            _ => None,
        }
    }

    /// A field of an object or record, if it has one.
    pub fn field(&self, name: &str) -> Option<Value> {
        match self {
            Value::Object(obj) => obj.get(name),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The Buzz type name, for messages like "expected str, got int".
    pub fn type_name(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Double(_) => "double".into(),
            Value::Str(_) => "str".into(),
            Value::List(_) => "list".into(),
            Value::Map(_) => "map".into(),
            Value::Object(obj) => obj.class.name.to_string(),
            Value::EnumCase(c) => c.of.to_string(),
            Value::Range(..) => "range".into(),
            Value::Function(_) | Value::Native(_) => "function".into(),
            Value::Module(_) => "module".into(),
            Value::Class(_) => "object type".into(),
            Value::Enum(_) => "enum type".into(),
            Value::Type(_) => "type".into(),
            Value::Pattern(_) => "pat".into(),
            Value::InferredCase(_) => "enum case".into(),
            Value::Fiber(_) => "fib".into(),
            Value::Bytes(_) => "str".into(),
            Value::Ud(_) => "ud".into(),
        }
    }

    /// Buzz truthiness is strict: only `bool` is a condition.
    pub(crate) fn truthy(&self) -> Option<bool> {
        self.as_bool()
    }

    fn fmt_depth(&self, out: &mut String, depth: usize) {
        if depth > MAX_VALUE_DEPTH {
            out.push('…');
            return;
        }
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if b.get() { "true" } else { "false" }),
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Double(d) => out.push_str(&d.get().to_string()),
            Value::Str(s) => out.push_str(s),
            Value::List(list) => fmt_list(&list.items.borrow(), out, depth),
            Value::Map(map) => fmt_map(&map.data.borrow().entries, out, depth),
            Value::Object(obj) => fmt_object(obj, out, depth),
            Value::EnumCase(c) => out.push_str(&format!("{}.{}", c.of, c.name)),
            Value::Range(r) => out.push_str(&format!("{}..{}", r.low, r.high)),
            Value::Function(f) => out.push_str(&format!("fun {}", f.decl.name)),
            Value::Native(f) => out.push_str(&format!("fun {}.{}", f.module, f.name)),
            Value::Module(m) => out.push_str(&format!("module {}", m.name)),
            Value::Class(c) => out.push_str(&format!("object {}", c.name)),
            Value::Enum(e) => out.push_str(&format!("enum {}", e.name)),
            Value::Type(t) => {
                out.push_str(&format!("<{}>", crate::buzz::syntax::ast::type_label(t)))
            }
            Value::Pattern(p) => out.push_str(&p.source),
            Value::InferredCase(name) => out.push_str(&format!(".{name}")),
            Value::Fiber(f) => out.push_str(if f.is_main() { "main fiber" } else { "fiber" }),
            // Shown, not written: `print` and interpolation keep the bytes.
            Value::Bytes(b) => out.push_str(&String::from_utf8_lossy(b)),
            // Upstream's layout for user data.
            Value::Ud(u) => out.push_str(&format!("userdata: 0x{u:x}")),
        }
    }

    /// Structural equality for data, identity for functions and types.
    pub(crate) fn equals(&self, other: &Value, depth: usize) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Double(a), Value::Double(b)) => a.get() == b.get(),
            (Value::Int(a), Value::Double(b)) | (Value::Double(b), Value::Int(a)) => {
                (*a as f64) == b.get()
            }
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Range(a), Value::Range(b)) => a == b,
            (Value::EnumCase(a), Value::EnumCase(b)) => Rc::ptr_eq(a, b),
            (Value::EnumCase(c), Value::InferredCase(n))
            | (Value::InferredCase(n), Value::EnumCase(c)) => *c.name == **n,
            (Value::InferredCase(a), Value::InferredCase(b)) => a == b,
            (Value::Type(a), Value::Type(b)) => a == b,
            (Value::Pattern(a), Value::Pattern(b)) => a.source == b.source,
            (Value::List(a), Value::List(b)) => {
                Rc::ptr_eq(a, b) || (depth < MAX_VALUE_DEPTH && list_eq(a, b, depth))
            }
            (Value::Map(a), Value::Map(b)) => {
                Rc::ptr_eq(a, b) || (depth < MAX_VALUE_DEPTH && map_eq(a, b, depth))
            }
            (Value::Object(a), Value::Object(b)) => Obj::ptr_eq(a, b),
            (Value::Function(a), Value::Function(b)) => Rc::ptr_eq(a, b),
            (Value::Native(a), Value::Native(b)) => Rc::ptr_eq(a, b),
            (Value::Module(a), Value::Module(b)) => Rc::ptr_eq(a, b),
            (Value::Class(a), Value::Class(b)) => Rc::ptr_eq(a, b),
            (Value::Enum(a), Value::Enum(b)) => Rc::ptr_eq(a, b),
            (Value::Fiber(a), Value::Fiber(b)) => Rc::ptr_eq(a, b),
            (Value::Bytes(a), Value::Bytes(b)) => a == b,
            (Value::Ud(a), Value::Ud(b)) => a == b,
            _ => false,
        }
    }
}

fn list_eq(a: &ListObj, b: &ListObj, depth: usize) -> bool {
    let (a, b) = (a.items.borrow(), b.items.borrow());
    a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x.equals(y, depth + 1))
}

fn map_eq(a: &MapObj, b: &MapObj, depth: usize) -> bool {
    let a = a.data.borrow();
    let len_b = b.len();
    a.entries.len() == len_b
        && a.entries
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| v.equals(&w, depth + 1)))
}

fn fmt_list(items: &[Value], out: &mut String, depth: usize) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        item.fmt_depth(out, depth + 1);
    }
    out.push(']');
}

fn fmt_map(entries: &[(Value, Value)], out: &mut String, depth: usize) {
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        k.fmt_depth(out, depth + 1);
        out.push_str(": ");
        v.fmt_depth(out, depth + 1);
    }
    out.push('}');
}

fn fmt_object(obj: &Obj, out: &mut String, depth: usize) {
    out.push_str(&obj.class.name);
    out.push('{');
    let values = obj.values();
    for (i, (k, v)) in obj.class.fields.iter().zip(values.iter()).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(k);
        out.push_str(" = ");
        v.fmt_depth(out, depth + 1);
    }
    out.push('}');
}

/// Buzz's `toString`: strings as they are, containers in brackets.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.fmt_depth(&mut out, 0);
        f.write_str(&out)
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => write!(f, "{s:?}"),
            other => write!(f, "{other}"),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::bool(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::double(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::str(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::str(v)
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::list(v)
    }
}

/// The storage of a list.
pub struct ListObj {
    pub(crate) items: RefCell<Vec<Value>>,
    /// What `typeof` reports: the declared or inferred type, if known.
    pub(crate) shape: Shape,
}

impl ListObj {
    pub(crate) fn new(items: Vec<Value>) -> Self {
        ListObj {
            items: RefCell::new(items),
            shape: Shape::default(),
        }
    }
}

/// The static type a list or map was made with (`[str]`, `{str: int}`)
/// and whether it is `mut`: only `typeof` reads it.
#[derive(Default)]
pub(crate) struct Shape {
    pub(crate) ty: RefCell<Option<Type>>,
    pub(crate) mutable: std::cell::Cell<bool>,
}

impl Shape {
    /// A shape like `other`'s, with the given mutability.
    pub(crate) fn copy_of(other: &Shape, mutable: bool) -> Shape {
        Shape {
            ty: RefCell::new(other.ty.borrow().clone()),
            mutable: std::cell::Cell::new(mutable),
        }
    }
}

/// A map key as hashing and comparing see it, borrowed from the value:
/// identity for containers, contents for scalars. A type, a pattern and an
/// inferred case are keyed by their text, as a `str` is.
#[derive(PartialEq)]
enum KeyView<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Double(u64),
    Str(Cow<'a, str>),
    Bytes(&'a [u8]),
    Ptr(usize),
    Range(i64, i64),
    Ud(u64),
}

impl KeyView<'_> {
    #[inline(always)]
    fn of(v: &Value) -> KeyView<'_> {
        match v {
            Value::Str(s) => KeyView::Str(Cow::Borrowed(s)),
            Value::Int(i) => KeyView::Int(*i),
            Value::Null => KeyView::Null,
            Value::Bool(b) => KeyView::Bool(b.get()),
            Value::Double(d) => KeyView::Double(d.get().to_bits()),
            Value::Range(r) => KeyView::Range(r.low, r.high),
            Value::EnumCase(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::List(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Map(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Object(x) => KeyView::Ptr(x.addr()),
            Value::Function(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Native(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Module(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Class(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Enum(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Type(t) => KeyView::Str(Cow::Owned(crate::buzz::syntax::ast::type_label(t))),
            Value::Pattern(p) => KeyView::Str(Cow::Borrowed(&p.source)),
            Value::InferredCase(x) => KeyView::Str(Cow::Borrowed(x)),
            Value::Fiber(x) => KeyView::Ptr(Rc::as_ptr(x) as usize),
            Value::Bytes(b) => KeyView::Bytes(b),
            Value::Ud(u) => KeyView::Ud(*u),
        }
    }

    /// The kind first, so that keys of two kinds with the same bits
    /// (`1` and `true`) usually land apart.
    #[inline]
    fn hash(&self) -> u64 {
        let mut h = FastHasher::default();
        match self {
            KeyView::Str(s) => return hash_text(4, s.as_bytes()),
            KeyView::Int(i) => {
                h.add(2);
                h.add(*i as u64);
            }
            KeyView::Null => h.add(0),
            KeyView::Bool(b) => h.add(1 | u64::from(*b) << 8),
            KeyView::Double(d) => {
                h.add(3);
                h.add(*d);
            }
            KeyView::Bytes(b) => return hash_text(5, b),
            KeyView::Ptr(p) => {
                h.add(6);
                h.add(*p as u64);
            }
            KeyView::Range(a, b) => {
                h.add(8);
                h.add(*a as u64);
                h.add(*b as u64);
            }
            KeyView::Ud(u) => {
                h.add(9);
                h.add(*u);
            }
        }
        h.finish()
    }

    /// Whether `v`, a key held in a map, is this key: text and ints
    /// compared at once, the rest through their views.
    #[inline]
    fn is(&self, v: &Value) -> bool {
        match (self, v) {
            (KeyView::Str(a), Value::Str(b)) => a.as_bytes() == b.as_bytes(),
            (KeyView::Int(a), Value::Int(b)) => a == b,
            (KeyView::Str(_) | KeyView::Int(_), Value::Str(_) | Value::Int(_)) => false,
            _ => KeyView::of(v) == *self,
        }
    }
}

/// A text key's hash: its kind, its 8-byte words, then the last partial
/// word with the length (so that "a" and "a\0" differ).
#[inline]
fn hash_text(kind: u64, bytes: &[u8]) -> u64 {
    let mut h = FastHasher::default();
    h.add(kind);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h.add(u64::from_le_bytes(word.try_into().unwrap_or_default()));
    }
    let rest = words.remainder();
    let mut last = 0u64;
    for (i, b) in rest.iter().enumerate() {
        last |= u64::from(*b) << (8 * i);
    }
    h.add(last ^ ((rest.len() as u64) << 56));
    h.finish()
}

/// A hasher for the interpreter's own tables (map keys, module members):
/// FxHash's add-multiply over 8-byte words, with the final rotation of
/// rustc-hash 2 so that the low bits hashbrown indexes by carry entropy.
/// Not keyed: a spell can only slow down its own maps by choosing keys
/// that collide, which SipHash's cost on every `m[k]` (an eighth of
/// k-nucleoide's instructions) does not pay for.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

/// [`FastHasher`] as a `HashMap`'s `S`.
pub(crate) type FastBuild = BuildHasherDefault<FastHasher>;

impl FastHasher {
    const K: u64 = 0xf135_7aea_2e62_a9c5;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = self.0.wrapping_add(word).wrapping_mul(Self::K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        // The length keeps "a" and "a\0" apart.
        self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

/// A map's entries in insertion order, and a table of their positions
/// hashed by key: a lookup hashes the key it is given and compares it with
/// the entries' own keys in place (no key is copied or counted).
#[derive(Default)]
pub(crate) struct MapData {
    pub(crate) entries: Vec<(Value, Value)>,
    index: HashTable<MapSlot>,
    /// The position the last lookup found: `m[k] = (m[k] ?? 0) + 1`
    /// stores where it has just read, after one comparison of the key.
    last: Cell<Option<usize>>,
}

/// A map's table slot: an entry's position (the low [`POSITION_BITS`])
/// and 24 bits of its key's hash (the rest), in one word. Why the hash:
/// growing the table rehashes every slot, and with the hash at hand it
/// reads no key (k-nucleoide's maps of thousands of `str` keys read each
/// key's bytes at every growth, a tenth of its time); and a lookup
/// compares keys only where the hashes agree. Why one word: a slot of two
/// made the table twice as large and lookups slower (measured,
/// docs/benchmarks.md). Why 40 bits of position: 2^40 entries are 32 TiB
/// of entries alone; 32 bits would have been reachable (4 billion entries,
/// 160 GB) under a large `memory` limit.
#[derive(Clone, Copy)]
struct MapSlot(u64);

/// The bits of a [`MapSlot`] that hold the entry's position.
const POSITION_BITS: u32 = 40;

impl MapSlot {
    /// The slot of the entry at `at` whose key has the hash `hash`
    /// ([`fold`]).
    #[inline(always)]
    fn new(hash: u32, at: usize) -> MapSlot {
        // Unreachable in practice (see above); a wrong position would
        // answer for another key, so it stops instead.
        assert!(at < 1 << POSITION_BITS, "a map of 2^40 entries");
        MapSlot(u64::from(hash) << POSITION_BITS | at as u64)
    }

    /// The folded hash of its key.
    #[inline(always)]
    fn hash(self) -> u32 {
        (self.0 >> POSITION_BITS) as u32
    }

    #[inline(always)]
    fn position(self) -> usize {
        (self.0 & ((1 << POSITION_BITS) - 1)) as usize
    }

    /// Whether this slot is the entry of the key seen as `view`, whose
    /// folded hash is `hash`: the hashes first, the keys only if they
    /// agree.
    #[inline(always)]
    fn holds(self, hash: u32, view: &KeyView<'_>, entries: &[(Value, Value)]) -> bool {
        self.hash() == hash && view.is(&entries[self.position()].0)
    }

    /// The slot of an entry that moved one place down (an earlier entry
    /// was removed); its hash untouched.
    #[inline(always)]
    fn moved_down(&mut self) {
        self.0 -= 1;
    }

    /// The table's hash of a key's folded hash: its 24 bits at the
    /// bottom, where the table picks a bucket, and again at the top,
    /// where it takes the seven bits of a bucket's tag.
    #[inline(always)]
    fn spread(hash: u32) -> u64 {
        u64::from(hash) << POSITION_BITS | u64::from(hash)
    }
}

/// 24 bits of a key's hash, every bit of it folded in.
#[inline(always)]
fn fold(hash: u64) -> u32 {
    let h = hash ^ (hash >> 24) ^ (hash >> 48);
    (h & 0xff_ffff) as u32
}

impl MapData {
    /// The position of `key`'s entry.
    #[inline]
    fn find(&self, key: &Value) -> Option<usize> {
        let view = KeyView::of(key);
        let hash = fold(view.hash());
        let entries = &self.entries;
        let found = self
            .index
            .find(MapSlot::spread(hash), |slot| {
                slot.holds(hash, &view, entries)
            })
            .map(|slot| slot.position());
        self.last.set(found);
        found
    }
}

/// The storage of a map: insertion-ordered, hashed by key.
#[derive(Default)]
pub struct MapObj {
    pub(crate) data: RefCell<MapData>,
    pub(crate) shape: Shape,
}

impl MapObj {
    #[inline]
    pub(crate) fn get(&self, key: &Value) -> Option<Value> {
        let data = self.data.borrow();
        let i = data.find(key)?;
        data.entries.get(i).map(|(_, v)| v.clone())
    }

    /// Sets `key`'s value; a new key goes last, an existing one keeps its
    /// place (and its first key value).
    pub(crate) fn insert(&self, key: Value, value: Value) {
        self.insert_key(Cow::Owned(key), value);
    }

    /// [`MapObj::insert`] of a key read in place: copied only when it is
    /// new (k-nucleoide's `frequency[c] = …` of a `c` already counted
    /// makes no count of `c` go up and down: a `str`'s is atomic).
    pub(crate) fn insert_ref(&self, key: &Value, value: Value) {
        self.insert_key(Cow::Borrowed(key), value);
    }

    #[inline(always)]
    fn insert_key(&self, key: Cow<'_, Value>, value: Value) {
        let mut data = self.data.borrow_mut();
        let MapData {
            entries,
            index,
            last,
        } = &mut *data;
        let view = KeyView::of(&key);
        if let Some(i) = last.get() {
            if entries.get(i).is_some_and(|(k, _)| view.is(k)) {
                drop(view);
                entries[i].1 = value;
                return;
            }
        }
        let hash = fold(view.hash());
        let found = index.entry(
            MapSlot::spread(hash),
            |slot| slot.holds(hash, &view, entries),
            |slot| MapSlot::spread(slot.hash()),
        );
        match found {
            hash_table::Entry::Occupied(at) => {
                let i = at.get().position();
                drop(view);
                entries[i].1 = value;
            }
            hash_table::Entry::Vacant(slot) => {
                slot.insert(MapSlot::new(hash, entries.len()));
                drop(view);
                entries.push((key.into_owned(), value));
            }
        }
    }

    pub(crate) fn remove(&self, key: &Value) -> Option<Value> {
        let mut data = self.data.borrow_mut();
        let MapData {
            entries,
            index,
            last,
        } = &mut *data;
        last.set(None);
        let view = KeyView::of(key);
        let hash = fold(view.hash());
        let found = index
            .find_entry(MapSlot::spread(hash), |slot| {
                slot.holds(hash, &view, entries)
            })
            .ok()?;
        let (removed, _) = found.remove();
        let (_, value) = entries.remove(removed.position());
        for slot in index.iter_mut() {
            if slot.position() > removed.position() {
                slot.moved_down();
            }
        }
        Some(value)
    }

    pub(crate) fn len(&self) -> usize {
        self.data.borrow().entries.len()
    }
}

/// A Buzz `object` type, or the type of a native record.
pub struct Class {
    /// Unique among the classes a thread makes (0: none, for natives,
    /// anonymous objects, and past the 4 billionth), so that a site can
    /// remember a class's field or method.
    pub(crate) id: u32,
    pub(crate) name: Rc<str>,
    pub(crate) decl: Option<Rc<ObjectDecl>>,
    /// The scope methods close over.
    pub(crate) scope: Option<Rc<Scope>>,
    /// Static fields, by name.
    pub(crate) statics: RefCell<Vec<(Rc<str>, Value)>>,
    /// The names of its instances' fields, in the order each instance
    /// holds their values: a declared class's non-static fields as
    /// declared; a record's or an anonymous object's as given (each of
    /// those has a class of its own).
    pub(crate) fields: Box<[Rc<str>]>,
    /// It has a `collect` method, called after an instance is freed
    /// (see `finalize.rs`).
    pub(crate) finalizes: bool,
}

impl Class {
    /// A type with no Buzz declaration, its instances holding the fields
    /// `fields`: native records and anonymous objects.
    pub(crate) fn native(name: &str, fields: Vec<Rc<str>>) -> Class {
        Class {
            id: 0,
            name: Rc::from(name),
            decl: None,
            scope: None,
            statics: RefCell::new(Vec::new()),
            fields: fields.into_boxed_slice(),
            finalizes: false,
        }
    }

    /// A fresh [`Class::id`] for a declared class.
    pub(crate) fn next_id() -> u32 {
        thread_local! {
            static NEXT: Cell<u32> = const { Cell::new(1) };
        }
        NEXT.with(|next| {
            let id = next.get();
            // Ids are never reused: once they run out, classes get none
            // and their calls are looked up each time.
            next.set(id.saturating_add(1));
            if id == u32::MAX {
                0
            } else {
                id
            }
        })
    }

    pub(crate) fn is_anonymous(&self) -> bool {
        self.decl.is_none() && &*self.name == "obj"
    }

    /// The index of the field `name` in an instance's values (the first
    /// of that name).
    pub(crate) fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|n| same_name(n, name))
    }

    /// [`Class::field_index`] from a site that remembers what it found.
    /// A declared class's instances all hold its fields in one order, so
    /// its id is the whole check; a class without an id (a record, an
    /// anonymous object) is checked by the name where the site found it
    /// last, by pointer, since the lexer interns names.
    #[inline(always)]
    pub(super) fn field_at_site(&self, name: &str, site: &MemberCache) -> Option<usize> {
        match site.member(self.id) {
            Some(at) => Some(at),
            None => self.field_missed(name, site),
        }
    }

    /// [`Class::field_at_site`] when the site remembers another class.
    #[inline(never)]
    fn field_missed(&self, name: &str, site: &MemberCache) -> Option<usize> {
        let hint = site.hint();
        let at = match self.fields.get(hint) {
            Some(n) if n.as_ptr() == name.as_ptr() && n.len() == name.len() => hint,
            _ => self.field_index(name)?,
        };
        site.set_member(self.id, at);
        Some(at)
    }
}

/// Whether a binding's (or field's) name is `name`: by pointer first (names are
/// interned by the lexer), then by bytes.
#[inline]
pub(crate) fn same_name(binding: &str, name: &str) -> bool {
    binding.len() == name.len() && (binding.as_ptr() == name.as_ptr() || binding == name)
}

/// A Buzz `enum` and its cases.
pub struct EnumType {
    pub(crate) name: Rc<str>,
    pub(crate) cases: Vec<Rc<EnumCase>>,
}

/// One case of an enum, made once with its enum: a case value is a
/// handle to it, so that reading a case allocates nothing and two cases
/// are the same case when they are the same object. It names its enum
/// rather than holding it, so that the two do not hold each other.
pub struct EnumCase {
    /// The enum's name.
    pub(crate) of: Rc<str>,
    pub(crate) name: Rc<str>,
    pub(crate) value: Value,
}

impl EnumType {
    /// The enum `name` with `cases`, each a case's name and value.
    pub(crate) fn new(name: Rc<str>, cases: Vec<(Rc<str>, Value)>) -> EnumType {
        let cases = cases
            .into_iter()
            .map(|(case, value)| {
                Rc::new(EnumCase {
                    of: name.clone(),
                    name: case,
                    value,
                })
            })
            .collect();
        EnumType { name, cases }
    }
}

/// A Buzz function with the scope it closes over.
pub struct Closure {
    pub(crate) decl: Rc<FunDecl>,
    pub(crate) scope: Rc<Scope>,
    /// The types given to `decl.generics` (`f::<int>`), bound at each
    /// call; empty when none were given.
    pub(crate) type_args: Vec<Type>,
}

/// A function of a native module, as seen by Buzz code.
pub struct NativeFunction {
    /// `module.name`, for messages.
    pub(crate) label: Rc<str>,
    pub(crate) module: Rc<str>,
    pub(crate) name: Rc<str>,
    pub(crate) f: NativeFn,
}

/// An imported native module.
pub struct ModuleObj {
    pub(crate) name: Rc<str>,
    pub(crate) functions: Members,
    /// `namespace a\b\c;` of an imported file: reached as `a\b\c\name`.
    pub(crate) namespace: Vec<Rc<str>>,
}

/// A module's members by name, in the order they were added. Each keeps
/// its index, so a call site (`math\sqrt(…)`) remembers where it found
/// its member and checks only the name there next time.
#[derive(Default)]
pub(crate) struct Members {
    entries: Vec<(Rc<str>, Value)>,
    index: HashMap<Rc<str>, usize, FastBuild>,
}

impl Members {
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        let at = *self.index.get(name)?;
        self.entries.get(at).map(|(_, v)| v)
    }

    /// [`Members::get`] from a site that remembers where it found `name`.
    #[inline]
    pub(crate) fn get_at_site(&self, name: &str, site: &MemberCache) -> Option<Value> {
        if let Some((n, v)) = self.entries.get(site.hint()) {
            if same_name(n, name) {
                return Some(v.clone());
            }
        }
        let at = *self.index.get(name)?;
        site.set_hint(at);
        self.entries.get(at).map(|(_, v)| v.clone())
    }

    /// Adds `name`, or replaces its value. The name is the lexer's own, so
    /// that a site's check finds it by pointer.
    pub(crate) fn insert(&mut self, name: impl AsRef<str>, value: Value) {
        let name = crate::buzz::syntax::lexer::intern(name.as_ref());
        match self.index.get(&name) {
            Some(&at) => {
                if let Some(slot) = self.entries.get_mut(at) {
                    slot.1 = value;
                }
            }
            None => {
                self.index.insert(name.clone(), self.entries.len());
                self.entries.push((name, value));
            }
        }
    }

    /// The members in the order they were added.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Rc<str>, &Value)> {
        self.entries.iter().map(|(n, v)| (n, v))
    }
}

impl<N: AsRef<str>> FromIterator<(N, Value)> for Members {
    fn from_iter<I: IntoIterator<Item = (N, Value)>>(items: I) -> Self {
        let mut members = Members::default();
        for (name, value) in items {
            members.insert(name, value);
        }
        members
    }
}

/// One variable binding.
pub(crate) struct Slot {
    pub(crate) name: Rc<str>,
    pub(crate) value: Value,
    pub(crate) mutability: Mutability,
}

/// A lexical scope: a call's frame, a block's, or a file's globals.
///
/// Locals live in `slots`, at the index the resolver
/// ([`super::resolve`]) gave them; `vars` holds what is bound by name: a
/// file's top-level names (its globals), a call's generic parameters, and
/// every binding of a tree that was never resolved.
pub(crate) struct Scope {
    pub(crate) slots: RefCell<Vec<Value>>,
    pub(crate) vars: RefCell<Vec<Slot>>,
    pub(crate) parent: Option<Rc<Scope>>,
}

impl Scope {
    pub(crate) fn new(parent: Option<Rc<Scope>>) -> Rc<Scope> {
        Rc::new(Scope {
            slots: RefCell::new(Vec::new()),
            vars: RefCell::new(Vec::new()),
            parent,
        })
    }

    /// A call's frame: room for its slots up front, so binding them does
    /// not grow the list one by one.
    pub(crate) fn with_capacity(parent: Rc<Scope>, capacity: usize) -> Rc<Scope> {
        Rc::new(Scope {
            slots: RefCell::new(Vec::with_capacity(capacity)),
            vars: RefCell::new(Vec::new()),
            parent: Some(parent),
        })
    }

    /// Empties the scope when a run ends. A file's globals hold its
    /// functions, and each function's closure holds the globals, so
    /// without this the pair would keep each other (and all they reach)
    /// alive after the run: a leak per run in a fuzzer or an embedder.
    /// The values are dropped after the borrows end, since a drop may
    /// reach this scope.
    pub(crate) fn clear(&self) {
        let slots = std::mem::take(&mut *self.slots.borrow_mut());
        let vars = std::mem::take(&mut *self.vars.borrow_mut());
        drop(slots);
        drop(vars);
    }

    /// The value in slot `slot` (null before its declaration ran).
    #[inline]
    pub(crate) fn get(&self, slot: u32) -> Value {
        match self.slots.borrow().get(slot as usize) {
            // Scalars copied here, not through the out-of-line `clone`.
            Some(Value::Int(i)) => Value::Int(*i),
            Some(Value::Double(d)) => Value::Double(*d),
            Some(Value::Bool(b)) => Value::Bool(*b),
            Some(v) => v.clone(),
            None => Value::Null,
        }
    }

    /// Stores `value` in slot `slot`, growing the frame when the slot is
    /// new. The old value is dropped after the borrow ends (its drop may
    /// reach this scope).
    #[inline]
    pub(crate) fn set(&self, slot: u32, value: Value) -> Value {
        if let Some(place) = self.slots.borrow_mut().get_mut(slot as usize) {
            return std::mem::replace(place, value);
        }
        self.grow_to(slot, value);
        Value::Null
    }

    /// [`Scope::set`] of a slot the frame does not have yet. Out of line,
    /// so that the common store (over a slot the frame has) saves and
    /// restores no registers for it.
    #[inline(never)]
    fn grow_to(&self, slot: u32, value: Value) {
        let mut slots = self.slots.borrow_mut();
        let i = slot as usize;
        if slots.len() < i {
            slots.resize(i, Value::Null);
        }
        slots.push(value);
    }

    /// The scope `depth` levels out, if there is one.
    #[inline]
    pub(crate) fn ancestor(self: &Rc<Scope>, depth: u32) -> Option<&Rc<Scope>> {
        let mut s = self;
        for _ in 0..depth {
            s = s.parent.as_ref()?;
        }
        Some(s)
    }

    /// The outermost scope: the globals of the file the code is in.
    #[inline]
    pub(crate) fn root(self: &Rc<Scope>) -> &Rc<Scope> {
        let mut s = self;
        while let Some(p) = &s.parent {
            s = p;
        }
        s
    }

    /// A frame under `parent`, made from `spare` (a frame given back by
    /// [`Scope::recycle`]) when there is one: no allocation per call.
    pub(crate) fn reuse(spare: Option<Rc<Scope>>, parent: Rc<Scope>, capacity: usize) -> Rc<Scope> {
        let Some(mut frame) = spare else {
            return Scope::with_capacity(parent, capacity);
        };
        match Rc::get_mut(&mut frame) {
            Some(scope) => {
                scope.parent = Some(parent);
                frame
            }
            None => Scope::with_capacity(parent, capacity),
        }
    }

    /// Empties a finished frame for reuse, or `None` (and the frame is
    /// dropped as usual) when something still holds it, such as a closure
    /// made in it, or when emptying it could start a chain of nested drops.
    pub(crate) fn recycle(mut frame: Rc<Scope>) -> Option<Rc<Scope>> {
        let scope = Rc::get_mut(&mut frame)?;
        let parent_lives = scope
            .parent
            .as_ref()
            .is_none_or(|p| Rc::strong_count(p) > 1);
        let vars = scope.vars.get_mut();
        if !parent_lives || !vars.iter().all(|s| drops_flat(&s.value)) {
            return None;
        }
        if !scope.slots.get_mut().iter().all(drops_flat) {
            return None;
        }
        if !vars.is_empty() {
            vars.clear();
        }
        scope.slots.get_mut().clear();
        scope.parent = None;
        Some(frame)
    }

    /// Adds a binding known to be new (a parameter of a fresh frame),
    /// without looking for an earlier one of the same name.
    pub(crate) fn push(&self, name: Rc<str>, value: Value, mutability: Mutability) {
        self.vars.borrow_mut().push(Slot {
            name,
            value,
            mutability,
        });
    }

    pub(crate) fn define(&self, name: Rc<str>, value: Value, mutability: Mutability) {
        let mut vars = self.vars.borrow_mut();
        match vars.iter_mut().find(|s| s.name == name) {
            Some(slot) => {
                slot.value = value;
                slot.mutability = mutability;
            }
            None => vars.push(Slot {
                name,
                value,
                mutability,
            }),
        }
    }
}

// ----- iterative drop -----

/// Something whose last owner is going away.
pub(super) enum Doomed {
    Value(Value),
    Scope(Rc<Scope>),
}

/// Takes apart whatever in `work` is uniquely owned, pushing its children,
/// so a chain of a million nested lists is dropped in a loop.
pub(super) fn drain(mut work: Vec<Doomed>) {
    while let Some(item) = work.pop() {
        match item {
            Doomed::Value(v) => take_value(v, &mut work),
            Doomed::Scope(s) => {
                if let Ok(mut scope) = Rc::try_unwrap(s) {
                    take_scope(&mut scope, &mut work);
                }
            }
        }
    }
}

fn take_value(v: Value, work: &mut Vec<Doomed>) {
    match v {
        Value::List(rc) => {
            if let Ok(list) = Rc::try_unwrap(rc) {
                push_nested(work, list.items.take());
            }
        }
        Value::Map(rc) => {
            if let Ok(map) = Rc::try_unwrap(rc) {
                let data = map.data.take();
                push_nested(work, data.entries.into_iter().flat_map(|(k, v)| [k, v]));
            }
        }
        // A type with `collect` is left to its drop, which queues it for
        // `collect`, fields and all.
        Value::Object(mut obj) if !obj.class.finalizes => {
            if let Some(values) = obj.unique_values() {
                push_nested(work, values.iter_mut().map(std::mem::take));
            }
        }
        Value::Function(rc) => {
            if let Ok(closure) = Rc::try_unwrap(rc) {
                work.push(Doomed::Scope(closure.scope.clone()));
            }
        }
        _ => {}
    }
}

/// Queues what could start a chain of nested drops; the rest (scalars,
/// values held elsewhere: most items of most lists) is dropped here, so a
/// list of a million ints is not copied into the work list first.
pub(super) fn push_nested(work: &mut Vec<Doomed>, values: impl IntoIterator<Item = Value>) {
    for v in values {
        if !drops_flat(&v) {
            work.push(Doomed::Value(v));
        }
    }
}

fn take_scope(scope: &mut Scope, work: &mut Vec<Doomed>) {
    let vars = scope.vars.take();
    push_nested(work, vars.into_iter().map(|s| s.value));
    push_nested(work, scope.slots.take());
    if let Some(parent) = scope.parent.take() {
        work.push(Doomed::Scope(parent));
    }
}

// Each drop below first asks whether an ordinary drop could nest at all:
// most containers hold scalars or values someone else still holds, and
// then the work list (an allocation per drop) is skipped.

impl Drop for ListObj {
    fn drop(&mut self) {
        let items = self.items.get_mut();
        if items.iter().all(drops_flat) {
            return;
        }
        let mut work = Vec::new();
        push_nested(&mut work, std::mem::take(items));
        drain(work);
    }
}

impl Drop for MapObj {
    fn drop(&mut self) {
        let entries = &self.data.get_mut().entries;
        if entries.iter().all(|(k, v)| drops_flat(k) && drops_flat(v)) {
            return;
        }
        let data = self.data.take();
        let mut work = Vec::new();
        push_nested(
            &mut work,
            data.entries.into_iter().flat_map(|(k, v)| [k, v]),
        );
        drain(work);
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        // Most frames hold only scalars and shared values, and their parent
        // lives on: then an ordinary drop cannot nest, and the work list
        // (an allocation per call) is skipped.
        let parent_lives = self.parent.as_ref().is_none_or(|p| Rc::strong_count(p) > 1);
        if parent_lives
            && self.vars.get_mut().iter().all(|s| drops_flat(&s.value))
            && self.slots.get_mut().iter().all(drops_flat)
        {
            return;
        }
        let mut work = Vec::new();
        take_scope(self, &mut work);
        if !work.is_empty() {
            drain(work);
        }
    }
}

/// Whether dropping `v` here cannot start a chain of nested drops: it is
/// a scalar, or a container someone else still holds.
pub(super) fn drops_flat(v: &Value) -> bool {
    match v {
        Value::List(rc) => Rc::strong_count(rc) > 1,
        Value::Map(rc) => Rc::strong_count(rc) > 1,
        Value::Object(o) => o.is_shared(),
        Value::Function(rc) => Rc::strong_count(rc) > 1,
        _ => true,
    }
}

/// `typeof` of a list or map: its recorded type, `mut` when it is.
fn shaped(shape: &Shape, unknown: Type) -> Type {
    let ty = shape.ty.borrow().clone().unwrap_or(unknown);
    if shape.mutable.get() {
        return Type::Mut(Box::new(ty));
    }
    ty
}

/// The type of a value, as `typeof` gives it.
pub(super) fn type_of(v: &Value) -> Type {
    let name = match v {
        Value::Null => return Type::Void,
        Value::List(l) => return shaped(&l.shape, Type::List(Box::new(Type::Any))),
        Value::Map(m) => {
            let any = Type::Map(Box::new(Type::Any), Box::new(Type::Any));
            return shaped(&m.shape, any);
        }
        Value::Function(_) | Value::Native(_) => return Type::Function,
        Value::Range(..) => "rg".to_string(),
        Value::Pattern(_) => "pat".to_string(),
        Value::Class(_) | Value::Enum(_) | Value::Type(_) => "type".to_string(),
        other => other.type_name(),
    };
    Type::Named(Rc::from(name))
}

/// How an uncaught error is shown: the `message` of an object the spell
/// threw (as upstream prints `throw .{ message = "…" }`), else the value
/// as `toString` shows it (native error records, such as a sandbox
/// denial, keep their whole text, code included).
pub(super) fn thrown_text(value: &Value) -> String {
    if let Value::Object(instance) = value {
        let spells_own = instance.class.decl.is_some() || &*instance.class.name == "obj";
        if let (true, Some(Value::Str(message))) = (spells_own, instance.get("message")) {
            return message.to_string();
        }
    }
    value.to_string()
}

/// An anonymous object `.{ … }` of fields already evaluated: `names`
/// and their `values` in the order written.
pub(super) fn anon_object_of(names: Vec<Rc<str>>, values: Vec<Value>) -> Value {
    let class = Rc::new(Class::native("obj", names));
    Value::Object(Obj::new(class, values))
}

/// The queue of freed objects that wait for their `collect` method
/// (`finalize.rs` runs it, with the interpreter). It is kept here, beside
/// [`Instance`]'s drop that fills it, so that freeing a value needs
/// nothing of the run.
pub(super) mod finalizers {
    use super::Obj;
    use std::cell::{Cell, RefCell};
    use std::collections::HashSet;

    /// How many freed objects may wait for their `collect` before making
    /// another object of such a type runs them.
    pub(in crate::buzz) const QUEUE_LIMIT: usize = 4096;

    thread_local! {
        /// Freed objects whose `collect` has not run yet.
        static PENDING: RefCell<Vec<Obj>> = const { RefCell::new(Vec::new()) };
        /// The objects whose `collect` has run (by address): freed again,
        /// they are freed for good.
        static FINALIZED: RefCell<HashSet<usize>> = RefCell::new(HashSet::new());
        /// Set while the queue is discarded at the end of a run.
        static OFF: Cell<bool> = const { Cell::new(false) };
    }

    /// Called as the last pointer to `doomed` (of a type with a `collect`
    /// method) goes, with `doomed` counted again: queues it, or gives it
    /// back to be freed when its `collect` has already run (or the run
    /// is over, or the thread's queue is gone).
    pub(in crate::buzz) fn queue(doomed: Obj) -> Result<(), Obj> {
        let address = doomed.addr();
        let done = FINALIZED
            .try_with(|f| f.borrow_mut().remove(&address))
            .unwrap_or(true);
        if done || OFF.try_with(Cell::get).unwrap_or(true) {
            return Err(doomed);
        }
        let mut doomed = Some(doomed);
        // Taken inside: once the thread's queue is gone, it is given back.
        let _gone = PENDING.try_with(|p| p.borrow_mut().extend(doomed.take()));
        match doomed {
            None => Ok(()),
            Some(back) => Err(back),
        }
    }

    /// Whether enough freed objects wait that the next one made should
    /// run them.
    pub(in crate::buzz) fn is_full() -> bool {
        PENDING.with(|p| p.borrow().len() >= QUEUE_LIMIT)
    }

    /// Drops what waits without calling `collect`: the end of a run.
    pub(in crate::buzz) fn discard() {
        OFF.with(|off| off.set(true));
        let pending = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
        drop(pending);
        FINALIZED.with(|f| f.borrow_mut().clear());
        OFF.with(|off| off.set(false));
    }

    /// Takes every object that waits, for its `collect` to run.
    pub(in crate::buzz) fn take() -> Vec<Obj> {
        PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()))
    }

    /// Notes that `object`'s `collect` is running: freed again, it is
    /// freed for good.
    pub(in crate::buzz) fn mark_run(object: &Obj) {
        FINALIZED.with(|f| f.borrow_mut().insert(object.addr()));
    }

    /// Queues again the objects whose `collect` did not run (one before
    /// them threw).
    pub(in crate::buzz) fn put_back(rest: impl IntoIterator<Item = Obj>) {
        PENDING.with(|p| p.borrow_mut().extend(rest));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeply_nested_values_drop_print_and_compare_without_overflow() {
        let mut a = Value::list(vec![]);
        let mut b = Value::list(vec![]);
        for _ in 0..1_000_000 {
            a = Value::list(vec![a]);
            b = Value::list(vec![b]);
        }
        assert!(a.to_string().contains('…'));
        assert!(a.equals(&a, 0), "identity");
        assert!(!a.equals(&b, 0), "equality gives up past MAX_VALUE_DEPTH");
        drop(a);
        let mut m = Value::map(vec![]);
        for i in 0..1_000_000 {
            m = Value::map(vec![(Value::Int(i), m)]);
        }
        drop(m);
    }

    #[test]
    fn maps_keep_insertion_order_and_reindex_on_remove() {
        let map = MapObj::default();
        for (k, v) in [("b", 1), ("a", 2), ("c", 3)] {
            map.insert(Value::str(k), Value::Int(v));
        }
        assert_eq!(
            map.remove(&Value::str("a")).and_then(|v| v.as_int()),
            Some(2)
        );
        assert_eq!(map.get(&Value::str("c")).and_then(|v| v.as_int()), Some(3));
        let keys: Vec<String> = map
            .data
            .borrow()
            .entries
            .iter()
            .map(|(k, _)| k.to_string())
            .collect();
        assert_eq!(keys, ["b", "c"]);
    }

    #[test]
    fn a_store_after_a_lookup_goes_to_its_own_key() {
        let map = MapObj::default();
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] {
            map.insert(Value::str(k), Value::Int(v));
        }
        let int = |k: &str| map.get(&Value::str(k)).and_then(|v| v.as_int());
        assert_eq!(int("b"), Some(2));
        map.insert(Value::str("c"), Value::Int(30));
        assert_eq!(int("b"), Some(2));
        map.remove(&Value::str("a"));
        map.insert(Value::str("b"), Value::Int(20));
        map.insert(Value::str("d"), Value::Int(4));
        assert_eq!(int("a"), None);
        map.insert(Value::str("a"), Value::Int(10));
        let entries: Vec<String> = map
            .data
            .borrow()
            .entries
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(entries, ["b=20", "c=30", "d=4", "a=10"]);
    }

    #[test]
    fn records_have_a_type_name_and_fields() {
        let r = Value::record("SandboxError", vec![("code", Value::str("MGS2001"))]);
        assert_eq!(r.type_name(), "SandboxError");
        assert_eq!(
            r.field("code").and_then(|v| v.as_str().map(String::from)),
            Some("MGS2001".into())
        );
    }

    /// A double's payload is its bits, but `==` is still the double's:
    /// `0.0 == -0.0` and `NaN != NaN`.
    #[test]
    fn doubles_compare_as_doubles_not_as_bits() {
        let (zero, minus) = (Value::double(0.0), Value::double(-0.0));
        assert!(zero.equals(&minus, 0));
        let nan = Value::double(f64::NAN);
        assert!(!nan.equals(&nan, 0));
        assert!(Value::Int(2).equals(&Value::double(2.0), 0));
        assert_eq!(
            minus.as_double().map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert_eq!(Value::bool(true).as_bool(), Some(true));
        assert_eq!(Value::bool(false).as_bool(), Some(false));
    }

    /// A map's slot gives back the position and hash it was made with,
    /// at the edges of both fields, and a position one less after the
    /// decrement a removal makes.
    #[test]
    fn a_map_slot_keeps_its_position_and_hash_apart() {
        let last = (1usize << POSITION_BITS) - 1;
        for (hash, at) in [
            (0, 0),
            (0xff_ffff, 0),
            (0, last),
            (0xff_ffff, last),
            (0xabcdef, 12345),
        ] {
            let slot = MapSlot::new(hash, at);
            assert_eq!((slot.hash(), slot.position()), (hash, at));
        }
        let mut slot = MapSlot::new(0xff_ffff, 1);
        slot.moved_down();
        assert_eq!((slot.hash(), slot.position()), (0xff_ffff, 0));
        for h in [0u64, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert!(fold(h) <= 0xff_ffff);
        }
    }
}

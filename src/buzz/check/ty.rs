//! The checker's types: what is known of a value before the run. Anything
//! it cannot settle (`any`, generics, most natives' results, anonymous
//! objects) is [`Ty::Unknown`], which fits everywhere, so the checker only
//! reports what the types really decide.

use super::super::syntax::ast::{EnumDecl, FunDecl, ObjectDecl, ProtocolDecl, Type};
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// Whether a list or map may be changed in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mutable {
    Yes,
    No,
}

#[derive(Debug, Clone)]
pub(super) enum Ty {
    Unknown,
    Void,
    Null,
    Bool,
    Int,
    Double,
    Str,
    Pattern,
    Range,
    TypeValue,
    /// `ud`: opaque user data (`std\toUd`).
    Ud,
    List(Box<Ty>, Mutable),
    Map(Box<Ty>, Box<Ty>, Mutable),
    Optional(Box<Ty>),
    Fun(Rc<Sig>),
    /// An instance of an object declared in a spell.
    Instance(Obj),
    /// The object itself (`Point.origin`, `Point{ … }`).
    Class(Obj),
    /// A case of an enum.
    Case(Rc<EnumDecl>),
    /// The enum itself (`Color.red`).
    Enum(Rc<EnumDecl>),
    /// A value typed by a protocol of this file: only the protocol's
    /// methods may be used on it (as upstream); any value fits it.
    Protocol(Rc<ProtocolDecl>),
    Module(Rc<ModuleInfo>),
}

/// An object declaration and the types its file declares, to resolve the
/// types of its fields.
#[derive(Debug, Clone)]
pub(super) struct Obj {
    pub decl: Rc<ObjectDecl>,
    pub types: Rc<Types>,
    /// An instance made `mut Name{ … }` or typed `mut Name`: its fields
    /// may be assigned and its `mut fun` methods called.
    pub mutable: Mutable,
}

/// The object, enum and protocol names one file knows.
#[derive(Debug, Default)]
pub(super) struct Types {
    pub objects: HashMap<Rc<str>, Rc<ObjectDecl>>,
    pub enums: HashMap<Rc<str>, Rc<EnumDecl>>,
    /// The file's protocols, with the methods they require.
    pub protocols: HashMap<Rc<str>, Rc<ProtocolDecl>>,
    /// Protocol names and names from other files: any value fits them.
    pub opaque: std::cell::RefCell<Vec<Rc<str>>>,
    /// Objects and enums imported by name from other files.
    pub imported: std::cell::RefCell<HashMap<Rc<str>, Ty>>,
}

/// A function's signature, as far as it is known.
#[derive(Debug, Clone)]
pub(super) struct Sig {
    pub name: String,
    pub params: Vec<ParamSig>,
    pub ret: Ty,
    /// `*> T`: what it yields when it runs in a fiber.
    pub yields: Option<Ty>,
    /// A native without a signature in the checker's table: any arguments.
    pub open: bool,
}

#[derive(Debug, Clone)]
pub(super) struct ParamSig {
    pub name: String,
    pub ty: Ty,
    /// Has a default value or an optional type: may be left out.
    pub optional: bool,
}

/// An imported module: its members' names and types.
#[derive(Debug)]
pub(super) struct ModuleInfo {
    pub name: String,
    pub members: HashMap<String, Ty>,
    /// `namespace a\b;` of a spell's file: how importers reach it.
    pub namespace: Vec<Rc<str>>,
}

const PRIMITIVES: [&str; 9] = [
    "int", "double", "bool", "str", "pat", "rg", "type", "ud", "any",
];

impl Types {
    /// The type an annotation names; `Unknown` for what cannot be settled.
    pub(super) fn resolve(self: &Rc<Self>, ty: &Type) -> Ty {
        match ty {
            Type::Any | Type::Function | Type::AnonObject => Ty::Unknown,
            Type::Void => Ty::Void,
            Type::Named(name) => self.named(name),
            Type::List(item) => Ty::List(Box::new(self.resolve(item)), Mutable::No),
            Type::Map(k, v) => Ty::Map(
                Box::new(self.resolve(k)),
                Box::new(self.resolve(v)),
                Mutable::No,
            ),
            Type::Optional(inner) => match self.resolve(inner) {
                Ty::Unknown => Ty::Unknown,
                t => Ty::Optional(Box::new(t)),
            },
            Type::Mut(inner) => self.resolve(inner).with_mutable(Mutable::Yes),
        }
    }

    fn named(self: &Rc<Self>, name: &str) -> Ty {
        match name {
            "int" => Ty::Int,
            "double" => Ty::Double,
            "bool" => Ty::Bool,
            "str" => Ty::Str,
            "pat" => Ty::Pattern,
            "rg" => Ty::Range,
            "type" => Ty::TypeValue,
            "ud" => Ty::Ud,
            _ if PRIMITIVES.contains(&name) => Ty::Unknown,
            _ => self.declared(name),
        }
    }

    fn declared(self: &Rc<Self>, name: &str) -> Ty {
        if let Some(decl) = self.objects.get(name) {
            return Ty::Instance(Obj {
                decl: decl.clone(),
                types: self.clone(),
                mutable: Mutable::No,
            });
        }
        if let Some(decl) = self.enums.get(name) {
            return Ty::Case(decl.clone());
        }
        if let Some(decl) = self.protocols.get(name) {
            return Ty::Protocol(decl.clone());
        }
        match self.imported.borrow().get(name) {
            Some(Ty::Class(obj)) => Ty::Instance(obj.clone()),
            Some(Ty::Enum(e)) => Ty::Case(e.clone()),
            _ => Ty::Unknown,
        }
    }

    /// The signature of a function declared in this file.
    pub(super) fn sig(self: &Rc<Self>, decl: &FunDecl) -> Sig {
        let arrow = is_arrow(decl);
        let ret = match self.resolve(&decl.ret) {
            // `fun f() => expr` without `>`: the type is inferred upstream.
            Ty::Void if arrow => Ty::Unknown,
            t => t,
        };
        Sig {
            name: decl.name.to_string(),
            params: decl
                .params
                .iter()
                .map(|p| ParamSig {
                    name: p.name.to_string(),
                    ty: self.resolve(&p.ty),
                    optional: p.default.is_some() || matches!(p.ty, Type::Optional(_)),
                })
                .collect(),
            ret,
            yields: decl.yields.as_ref().map(|t| self.resolve(t)),
            open: false,
        }
    }
}

/// `fun f() => expr` (the parser makes the body one `return`): without
/// `>`, upstream infers the type, so a lone `return value` is taken as one.
pub(super) fn is_arrow(decl: &FunDecl) -> bool {
    use super::super::syntax::ast::StmtKind;
    matches!(decl.body.as_slice(), [s] if matches!(s.kind, StmtKind::Return(Some(_))))
}

impl Ty {
    pub(super) fn with_mutable(self, m: Mutable) -> Ty {
        match self {
            Ty::List(item, _) => Ty::List(item, m),
            Ty::Map(k, v, _) => Ty::Map(k, v, m),
            Ty::Instance(o) => Ty::Instance(Obj { mutable: m, ..o }),
            other => other,
        }
    }

    pub(super) fn is_unknown(&self) -> bool {
        matches!(self, Ty::Unknown)
    }

    pub(super) fn is_number(&self) -> bool {
        matches!(self, Ty::Int | Ty::Double)
    }

    /// Whether a value of type `found` may be stored where `self` is
    /// expected. True whenever either side is not fully known.
    pub(super) fn accepts(&self, found: &Ty) -> bool {
        match (self, found) {
            (Ty::Unknown, _) | (_, Ty::Unknown) => true,
            // Which objects implement a protocol is left to the run.
            (Ty::Protocol(_), _) | (_, Ty::Protocol(_)) => true,
            (Ty::Optional(_), Ty::Null) => true,
            (Ty::Optional(e), Ty::Optional(f)) => e.accepts(f),
            (Ty::Optional(e), f) => e.accepts(f),
            (_, Ty::Null) | (_, Ty::Optional(_)) => false,
            (Ty::Double, Ty::Int) => true,
            // A `mut` list or map is wanted: an immutable one will not do.
            (Ty::List(_, Mutable::Yes), Ty::List(_, Mutable::No))
            | (Ty::Map(_, _, Mutable::Yes), Ty::Map(_, _, Mutable::No)) => false,
            (Ty::List(e, _), Ty::List(f, _)) => e.accepts(f),
            (Ty::Map(ek, ev, _), Ty::Map(fk, fv, _)) => ek.accepts(fk) && ev.accepts(fv),
            (Ty::Instance(a), Ty::Instance(b)) => {
                a.decl.name == b.decl.name
                    && !(a.mutable == Mutable::Yes && b.mutable == Mutable::No)
            }
            (Ty::Case(a), Ty::Case(b)) => a.name == b.name,
            (Ty::Fun(_), Ty::Fun(_)) => true,
            (Ty::Fun(_), _) | (_, Ty::Fun(_)) => false,
            (Ty::Class(_) | Ty::Enum(_) | Ty::Module(_), _)
            | (_, Ty::Class(_) | Ty::Enum(_) | Ty::Module(_)) => true,
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }

    /// The type without its `?`.
    pub(super) fn unwrapped(&self) -> Ty {
        match self {
            Ty::Optional(inner) => (**inner).clone(),
            other => other.clone(),
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = |m: &Mutable| if *m == Mutable::Yes { "mut " } else { "" };
        match self {
            Ty::Unknown => f.write_str("any"),
            Ty::Void => f.write_str("void"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Double => f.write_str("double"),
            Ty::Str => f.write_str("str"),
            Ty::Pattern => f.write_str("pat"),
            Ty::Range => f.write_str("rg"),
            Ty::TypeValue => f.write_str("type"),
            Ty::Ud => f.write_str("ud"),
            Ty::List(item, mu) => write!(f, "{}[{item}]", m(mu)),
            Ty::Map(k, v, mu) => write!(f, "{}{{{k}: {v}}}", m(mu)),
            Ty::Optional(inner) => write!(f, "{inner}?"),
            Ty::Fun(sig) => write!(f, "{sig}"),
            Ty::Instance(o) => write!(f, "{}{}", m(&o.mutable), o.decl.name),
            Ty::Class(o) => write!(f, "object {}", o.decl.name),
            Ty::Case(e) => f.write_str(&e.name),
            Ty::Enum(e) => write!(f, "enum {}", e.name),
            Ty::Protocol(p) => f.write_str(&p.name),
            Ty::Module(m) => write!(f, "module {}", m.name),
        }
    }
}

impl fmt::Display for Sig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect();
        write!(f, "fun {}({}) > {}", self.name, params.join(", "), self.ret)
    }
}

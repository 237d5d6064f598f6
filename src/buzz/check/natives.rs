//! The signatures of magus's own natives (`std`, `fs`, `sh`, `env`) that the
//! checker knows, so a wrong argument is caught before the run. A native
//! not listed here is checked by name only and takes any arguments.

use super::ty::{Mutable, ParamSig, Sig, Ty};

/// A type in the table.
#[derive(Clone, Copy)]
enum T {
    Any,
    Str,
    Int,
    Bool,
    StrList,
    Void,
    OptStr,
    OptInt,
    OptDouble,
    Double,
    Ud,
    OptUd,
}

/// `(module, function, parameters (name, type, optional), result)`.
type Entry = (
    &'static str,
    &'static str,
    &'static [(&'static str, T, bool)],
    T,
);

const PATH: &[(&str, T, bool)] = &[("path", T::Str, false)];
const TWO_PATHS: &[(&str, T, bool)] = &[("from", T::Str, false), ("to", T::Str, false)];
const PATH_TEXT: &[(&str, T, bool)] = &[("path", T::Str, false), ("text", T::Str, false)];
const COMMAND: &[(&str, T, bool)] = &[("command", T::StrList, false)];

const TABLE: &[Entry] = &[
    ("std", "print", &[("value", T::Any, false)], T::Void),
    (
        "std",
        "assert",
        &[("condition", T::Bool, false), ("message", T::Any, true)],
        T::Void,
    ),
    ("std", "parseInt", &[("text", T::Str, false)], T::OptInt),
    (
        "std",
        "parseDouble",
        &[("text", T::Str, false)],
        T::OptDouble,
    ),
    ("std", "toString", &[("value", T::Any, false)], T::Str),
    ("std", "exit", &[("status", T::Int, false)], T::Void),
    ("std", "toInt", &[("value", T::Double, false)], T::Int),
    ("std", "toDouble", &[("value", T::Double, false)], T::Double),
    ("std", "toUd", &[("n", T::Any, false)], T::Ud),
    ("std", "parseUd", &[("string", T::Str, false)], T::OptUd),
    ("fs", "read", PATH, T::Str),
    ("fs", "write", PATH_TEXT, T::Void),
    ("fs", "append", PATH_TEXT, T::Void),
    ("fs", "exists", PATH, T::Bool),
    ("fs", "list", PATH, T::StrList),
    ("fs", "makeDirectory", PATH, T::Void),
    ("fs", "copy", TWO_PATHS, T::Void),
    ("fs", "move", TWO_PATHS, T::Void),
    ("fs", "delete", PATH, T::Void),
    ("fs", "currentDirectory", &[], T::Str),
    ("sh", "run", COMMAND, T::Int),
    ("sh", "output", COMMAND, T::Any),
    ("sh", "shell", &[("script", T::Str, false)], T::Int),
    ("sh", "which", &[("program", T::Str, false)], T::OptStr),
    ("env", "get", &[("name", T::Str, false)], T::OptStr),
    (
        "env",
        "set",
        &[("name", T::Str, false), ("value", T::Str, false)],
        T::Void,
    ),
    ("env", "names", &[], T::StrList),
];

fn ty(t: T) -> Ty {
    match t {
        T::Any => Ty::Unknown,
        T::Str => Ty::Str,
        T::Int => Ty::Int,
        T::Bool => Ty::Bool,
        T::Double => Ty::Double,
        T::StrList => Ty::List(Box::new(Ty::Str), Mutable::No),
        T::Void => Ty::Void,
        T::OptStr => Ty::Optional(Box::new(Ty::Str)),
        T::OptInt => Ty::Optional(Box::new(Ty::Int)),
        T::OptDouble => Ty::Optional(Box::new(Ty::Double)),
        T::Ud => Ty::Ud,
        T::OptUd => Ty::Optional(Box::new(Ty::Ud)),
    }
}

/// The signature of `module.name`: from the table, or open (any
/// arguments, unknown result) for a native the table does not list.
pub(super) fn signature(module: &str, name: &str) -> Sig {
    let found = TABLE.iter().find(|(m, n, _, _)| *m == module && *n == name);
    let Some((_, _, params, ret)) = found else {
        return Sig {
            name: format!("{module}.{name}"),
            params: Vec::new(),
            ret: Ty::Unknown,
            yields: None,
            open: true,
        };
    };
    Sig {
        name: format!("{module}.{name}"),
        params: params
            .iter()
            .map(|(n, t, optional)| ParamSig {
                name: (*n).to_string(),
                ty: ty(*t),
                optional: *optional,
            })
            .collect(),
        ret: ty(*ret),
        yields: None,
        open: false,
    }
}

/// Every `(module, function)` the table lists, for the test that keeps
/// it in step with the real modules.
#[cfg(all(test, unix))]
pub(crate) fn listed() -> impl Iterator<Item = (&'static str, &'static str)> {
    TABLE.iter().map(|(m, n, _, _)| (*m, *n))
}

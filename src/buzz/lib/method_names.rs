//! The names of the built-in methods of `str`, lists, maps, ranges and
//! patterns, and of an enum case's fields: one table, read by the checker
//! (a name not in it is MGS1002 before the run) and by the run (its "has
//! no method" message). The tests below hold the run's dispatch in
//! `methods.rs`, `callbacks.rs` and `../vm/fields.rs` to the table both ways,
//! so the two cannot disagree.

/// A kind of value whose methods are built in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    Str,
    List,
    Map,
    Range,
    Pattern,
}

/// Methods of `str` (a `str` holding bytes that are not UTF-8 has the
/// byte ones among them and refuses the others with its own message).
const STR: &[&str] = &[
    "len",
    "trim",
    "upper",
    "lower",
    "startsWith",
    "endsWith",
    "split",
    "replace",
    "indexOf",
    "sub",
    "bin",
    "repeat",
    "byte",
    "hex",
    "encodeBase64",
    "decodeBase64",
    "utf8Len",
    "utf8Valid",
    "utf8Codepoints",
];

/// Methods of lists and maps that call back into Buzz (`callbacks.rs`).
pub(crate) const CALLBACK: &[&str] = &["forEach", "map", "filter", "reduce", "sort"];

/// Copies, shared by lists and maps.
const CLONES: &[&str] = &[
    "cloneMutable",
    "cloneImmutable",
    "copyMutable",
    "copyImmutable",
];

const LIST: &[&str] = &[
    "len", "append", "join", "indexOf", "sub", "remove", "pop", "insert", "reverse", "fill",
];

const MAP: &[&str] = &[
    "size",
    "len",
    "keys",
    "values",
    "remove",
    "hasKey",
    "diff",
    "intersect",
];

const RANGE: &[&str] = &[
    "contains",
    "subsetOf",
    "intersect",
    "len",
    "low",
    "high",
    "invert",
    "toList",
];

pub(crate) const PATTERN: &[&str] = &["matchAgainst", "matchAllAgainst", "replace", "replaceAll"];

/// The fields of an enum case (`Color.red.value`; `name` is magus's own,
/// upstream has `value` only).
pub(crate) const ENUM_CASE_FIELDS: &[&str] = &["value", "name"];

impl Receiver {
    /// The word the run's messages use for it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Receiver::Str => "str",
            Receiver::List => "list",
            Receiver::Map => "map",
            Receiver::Range => "range",
            Receiver::Pattern => "pat",
        }
    }

    /// Every method name it has, in no particular order.
    pub(crate) fn methods(self) -> impl Iterator<Item = &'static str> {
        let (own, shared): (&[&str], &[&[&str]]) = match self {
            Receiver::Str => (STR, &[]),
            Receiver::List => (LIST, &[CALLBACK, CLONES]),
            Receiver::Map => (MAP, &[CALLBACK, CLONES]),
            Receiver::Range => (RANGE, &[]),
            Receiver::Pattern => (PATTERN, &[]),
        };
        own.iter()
            .chain(shared.iter().flat_map(|s| s.iter()))
            .copied()
    }

    pub(crate) fn has(self, name: &str) -> bool {
        self.methods().any(|m| m == name)
    }
}

/// The run's error for a method `name` that `receiver` does not have.
#[cold]
pub(crate) fn no_such_method(receiver: Receiver, name: &str) -> String {
    format!("{} has no method `{name}`", receiver.word())
}

#[cfg(test)]
mod tests {
    use super::{
        no_such_method, Receiver, CALLBACK, CLONES, ENUM_CASE_FIELDS, LIST, MAP, PATTERN, RANGE,
        STR,
    };
    use crate::buzz::syntax::lexer::Pos;
    use crate::buzz::vm::value::Value;
    use crate::buzz::vm::Interpreter;
    use crate::buzz::vm::Stop;

    /// One value of each kind, and names no kind has (typos, other
    /// languages' spellings, upstream names magus lacks).
    fn samples() -> Vec<(Receiver, Value)> {
        let regex = pcre2::bytes::RegexBuilder::new()
            .build("a")
            .expect("`a` compiles");
        let pattern = crate::buzz::vm::value::Pattern {
            source: "a".into(),
            regex,
        };
        vec![
            (Receiver::Str, Value::str("abc")),
            (Receiver::List, Value::list(vec![Value::Int(1)])),
            (
                Receiver::Map,
                Value::map(vec![(Value::Int(1), Value::Int(2))]),
            ),
            (Receiver::Range, Value::range(0, 3)),
            (Receiver::Pattern, Value::Pattern(pattern.into())),
        ]
    }

    const STRANGERS: &[&str] = &[
        "length",
        "push",
        "appendd",
        "next",
        "keyss",
        "frobnicate",
        "",
    ];

    /// Whether the run dispatches `name` on `value`: any outcome but its
    /// "has no method" error (a wrong argument is still a method found).
    fn run_has(receiver: Receiver, value: &Value, name: &str) -> bool {
        let mut interp =
            Interpreter::new("probe.buzz", Vec::new()).with_output(Box::new(std::io::sink()));
        let args = [Value::str("a")];
        let pos = Pos { line: 1, column: 1 };
        match crate::buzz::lib::methods::call_method(&mut interp, value, name, &args, pos) {
            Err(flow) => match flow.stop() {
                Stop::Error(e) => !e.message().contains(&no_such_method(receiver, name)),
                _ => true,
            },
            Ok(_) => true,
        }
    }

    #[test]
    fn the_run_dispatches_exactly_the_methods_the_table_names() {
        let every: Vec<&str> = [STR, LIST, MAP, RANGE, PATTERN, CALLBACK, CLONES]
            .concat()
            .into_iter()
            .chain(STRANGERS.iter().copied())
            .collect();
        for (receiver, value) in samples() {
            for name in &every {
                assert_eq!(
                    run_has(receiver, &value, name),
                    receiver.has(name),
                    "{}.{name}: the run and the table disagree",
                    receiver.word()
                );
            }
        }
    }

    #[test]
    fn the_callback_methods_are_the_ones_the_run_calls_back_for() {
        for name in CALLBACK {
            assert!(crate::buzz::lib::callbacks::takes_callback(name), "{name}");
        }
        for name in [STR, LIST, MAP, RANGE, PATTERN, CLONES].concat() {
            assert!(!crate::buzz::lib::callbacks::takes_callback(name), "{name}");
        }
    }

    #[test]
    fn an_enum_case_has_exactly_the_fields_the_table_names() {
        let interp = Interpreter::new("probe.buzz", Vec::new());
        let e = crate::buzz::vm::value::EnumType::new(
            "Color".into(),
            vec![("red".into(), Value::Int(0))],
        );
        let case = Value::case(&e.cases[0]);
        let pos = Pos { line: 1, column: 1 };
        for name in ENUM_CASE_FIELDS.iter().chain(STRANGERS) {
            assert_eq!(
                interp.field(&case, name, pos).is_ok(),
                ENUM_CASE_FIELDS.contains(name),
                "{name}"
            );
        }
    }
}

//! Which gated binding a call is and what it asks the gate, in the order
//! the binding asks (`fs.rs`, `sh.rs`, `env.rs`, `upstream.rs` beside this
//! module): a new gated binding gets its row here.

use crate::enforce::gate::{FsOp, PathUse};

/// One question a call puts to the gate, or one thing it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gated {
    /// A path used by `op` as `usage`.
    Path {
        op: FsOp,
        usage: PathUse,
        spelled: String,
    },
    /// A program launched (`argv[0]`, looked up on the child's `PATH`).
    Program(String),
    /// An environment variable read (`env.get`, `os.env`).
    Variable(String),
}

/// One argument of a call, as far as the source settles it.
#[derive(Debug)]
pub(super) struct Arg<'a> {
    /// `name:` when the argument is named.
    pub name: Option<&'a str>,
    /// The string it always is.
    pub text: Option<String>,
    /// The string its list literal's first item always is.
    pub first_item: Option<String>,
    /// The enum case it names (`.read`, `io.FileMode.read`).
    pub case: Option<&'a str>,
}

/// How a binding uses one of its parameters.
#[derive(Clone, Copy)]
enum Use {
    Path(FsOp, PathUse),
    /// A command list: its first item is the program.
    Command,
    Variable,
    /// `io.File.open`'s path, used as its mode (the next parameter) says.
    OpenPath,
}

/// `(module, member, [(parameter index, name, use)])`, the parameters in
/// the order the binding asks the gate about them.
type Row = (
    &'static str,
    &'static str,
    &'static [(usize, &'static str, Use)],
);

const ROWS: &[Row] = &[
    (
        "fs",
        "read",
        &[(0, "path", Use::Path(FsOp::Read, PathUse::Read))],
    ),
    (
        "fs",
        "write",
        &[(0, "path", Use::Path(FsOp::Write, PathUse::Write))],
    ),
    (
        "fs",
        "append",
        &[(0, "path", Use::Path(FsOp::Append, PathUse::Write))],
    ),
    (
        "fs",
        "exists",
        &[(0, "path", Use::Path(FsOp::Exists, PathUse::Read))],
    ),
    (
        "fs",
        "list",
        &[(0, "path", Use::Path(FsOp::List, PathUse::Read))],
    ),
    (
        "fs",
        "makeDirectory",
        &[(0, "path", Use::Path(FsOp::MakeDirectory, PathUse::Write))],
    ),
    (
        "fs",
        "copy",
        &[
            (0, "from", Use::Path(FsOp::Copy, PathUse::Read)),
            (1, "to", Use::Path(FsOp::Copy, PathUse::Write)),
        ],
    ),
    (
        "fs",
        "move",
        &[
            (0, "from", Use::Path(FsOp::Move, PathUse::Remove)),
            (1, "to", Use::Path(FsOp::Move, PathUse::Remove)),
        ],
    ),
    (
        "fs",
        "delete",
        &[(0, "path", Use::Path(FsOp::Delete, PathUse::Remove))],
    ),
    ("sh", "run", &[(0, "command", Use::Command)]),
    ("sh", "output", &[(0, "command", Use::Command)]),
    ("env", "get", &[(0, "name", Use::Variable)]),
    (
        "buzz:fs",
        "makeDirectory",
        &[(0, "path", Use::Path(FsOp::MakeDirectory, PathUse::Write))],
    ),
    (
        "buzz:fs",
        "deleteFile",
        &[(0, "path", Use::Path(FsOp::Delete, PathUse::Remove))],
    ),
    (
        "buzz:fs",
        "deleteDirectory",
        &[
            (0, "path", Use::Path(FsOp::List, PathUse::Read)),
            (0, "path", Use::Path(FsOp::Delete, PathUse::Remove)),
        ],
    ),
    (
        "buzz:fs",
        "move",
        &[
            (0, "source", Use::Path(FsOp::Move, PathUse::Remove)),
            (1, "destination", Use::Path(FsOp::Move, PathUse::Remove)),
        ],
    ),
    (
        "buzz:fs",
        "list",
        &[(0, "path", Use::Path(FsOp::List, PathUse::Read))],
    ),
    (
        "buzz:fs",
        "exists",
        &[(0, "path", Use::Path(FsOp::Exists, PathUse::Read))],
    ),
    ("buzz:os", "execute", &[(0, "command", Use::Command)]),
    ("buzz:os", "env", &[(0, "key", Use::Variable)]),
    ("buzz:io", "File.open", &[(0, "filename", Use::OpenPath)]),
];

/// What `sh.shell` always starts, whatever its script.
const SHELL: &str = "/bin/sh";

/// The gated module an import names (`magus:fs` is `fs`), by the key
/// the bindings register it under.
pub(super) fn module_key(spec: &str) -> Option<&'static str> {
    let spec = spec.strip_prefix("magus:").unwrap_or(spec);
    ["fs", "sh", "env", "buzz:fs", "buzz:os", "buzz:io"]
        .into_iter()
        .find(|key| *key == spec)
}

/// The members of gated module `key` this table knows.
pub(super) fn members(key: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ROWS
        .iter()
        .filter(|(m, _, _)| *m == key)
        .map(|(_, name, _)| *name)
        .collect();
    if key == "sh" {
        names.push("shell");
    }
    names
}

/// Where the run places a refusal: on the argument (by its place in the
/// call) that holds the refused path or program, else on the callee.
pub(super) type Place = Option<usize>;

/// A call's gate questions, each with its [`Place`], and its needs.
pub(super) type Questions = (Vec<(Gated, Place)>, Vec<Gated>);

/// What a call of `key`'s `member` with `args` asks the gate: the
/// questions no run-time state can keep it from asking (the first one:
/// a later one waits on what the first finds, a file that exists, say),
/// each with where the run places its refusal, and everything it needs
/// granted. `None` for a call that is not gated.
pub(super) fn gated(key: &str, member: &str, args: &[Arg]) -> Option<Questions> {
    if (key, member) == ("sh", "shell") {
        let launch = Gated::Program(SHELL.to_string());
        return Some((vec![(launch.clone(), None)], vec![launch]));
    }
    let (_, _, params) = ROWS.iter().find(|(m, n, _)| *m == key && *n == member)?;
    let settled: Vec<Option<(Gated, Place)>> = params
        .iter()
        .map(|(index, name, how)| settle(args, *index, name, *how))
        .collect();
    let checks = settled.first().cloned().flatten().into_iter().collect();
    let needs = settled.into_iter().flatten().map(|(g, _)| g).collect();
    Some((checks, needs))
}

/// The gate question of parameter `index` (`name`), when the source
/// settles it, and where the run places its refusal.
fn settle(args: &[Arg], index: usize, name: &str, how: Use) -> Option<(Gated, Place)> {
    let (at, arg) = argument(args, index, name)?;
    let gated = settle_arg(args, arg, index, how)?;
    // A library written in Buzz (`buzz:io`) raises inside itself: the
    // run places that on the callee.
    let place = match how {
        Use::OpenPath => None,
        _ => Some(at),
    };
    Some((gated, place))
}

fn settle_arg(args: &[Arg], arg: &Arg, index: usize, how: Use) -> Option<Gated> {
    match how {
        Use::Path(op, usage) => Some(Gated::Path {
            op,
            usage,
            spelled: arg.text.clone()?,
        }),
        Use::Command => Some(Gated::Program(arg.first_item.clone()?)),
        Use::Variable => Some(Gated::Variable(arg.text.clone()?)),
        Use::OpenPath => {
            let mode = argument(args, index + 1, "mode")?.1.case?;
            let (op, usage) = match mode {
                "read" => (FsOp::Read, PathUse::Read),
                "write" => (FsOp::Write, PathUse::Write),
                "update" => (FsOp::Append, PathUse::Write),
                _ => return None,
            };
            Some(Gated::Path {
                op,
                usage,
                spelled: arg.text.clone()?,
            })
        }
    }
}

/// Parameter `index` of a call: the argument named `name`, else the
/// unnamed one at that place; with its place among the arguments.
fn argument<'a, 'b>(args: &'a [Arg<'b>], index: usize, name: &str) -> Option<(usize, &'a Arg<'b>)> {
    if let Some(named) = args.iter().position(|a| a.name == Some(name)) {
        return Some((named, &args[named]));
    }
    args.get(index)
        .filter(|a| a.name.is_none())
        .map(|a| (index, a))
}

//! The embedded interpreter of the Buzz subset (docs/buzz.md): lexer, parser
//! and a tree-walking evaluator. It has no FFI, no dynamic loading and no
//! eval, so the native modules it is given are the only way out.
//!
//! Entry points: [`parse`] and [`run_spell`]; native modules are built with
//! [`NativeModule`] and raise Buzz errors with [`Raise`].

pub(crate) mod ast;
mod callbacks;
pub mod check;
mod compile;
mod crypto;
mod error;
mod fiber;
mod finalize;
mod generics;
pub mod heap;
mod imports;
mod interp;
mod lang;
mod lexer;
mod method_names;
mod methods;
mod native;
// Unix only, as the integration tests they were: on Windows the gate
// refuses every path for now (README, "Platforms"), and under Wine the
// corpus test stops making progress (not yet understood).
#[cfg(all(test, unix))]
mod parse_corpus_tests;
mod parser;
#[cfg(all(test, unix))]
pub(crate) mod program_tests;
mod resolve;
mod serialize;
pub mod stack;
mod std_module;
mod testing;
mod value;

pub use ast::Program;
pub use error::BuzzError;
pub use imports::SourceLoader;
pub use interp::{
    Interpreter, MAX_CALL_DEPTH, MAX_EVAL_DEPTH, MAX_LIST_LEN, MAX_STR_LEN, STACK_BUDGET,
};
pub use lexer::MAX_INTERPOLATION_DEPTH;
pub use native::{CallSite, NativeCall, NativeFn, NativeModule, Raise};
pub use parser::MAX_NESTING;
pub use std_module::{math_module, std_module};
pub use testing::{test_names, TestOutcome};
pub use value::{
    Class, Closure, EnumType, Instance, ListObj, MapObj, ModuleObj, NativeFunction, Scope, Value,
};

use std::path::Path;

/// The largest spell source accepted, in bytes.
pub const MAX_SOURCE_LEN: usize = 16 << 20;

/// Parses a spell. Never panics, whatever `source` holds.
pub fn parse(file: &Path, source: &str) -> Result<Program, BuzzError> {
    if source.len() > MAX_SOURCE_LEN {
        return Err(BuzzError::SourceTooLarge {
            file: file.to_path_buf(),
            size: source.len(),
            limit: MAX_SOURCE_LEN,
        });
    }
    parser::parse_program(file, source).map_err(|e| BuzzError::Syntax {
        site: CallSite {
            file: file.to_path_buf(),
            line: e.pos.line,
            column: e.pos.column,
        },
        help: parser::help_for(&e.message).map(str::to_string),
        message: e.message,
    })
}

/// Parses `source` and runs `main(args)` with `std` and `modules`, printing
/// to stdout. Returns the exit status: the `int` main returns, `0` for
/// `void`, or the status given to `std.exit`.
pub fn run_spell(
    file: &Path,
    source: &str,
    args: Vec<String>,
    modules: Vec<NativeModule>,
) -> Result<i32, BuzzError> {
    let program = parse(file, source)?;
    Interpreter::new(file, modules).run(&program, args)
}

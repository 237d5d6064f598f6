//! The front end of the Buzz pipeline: source text to tokens ([`lexer`]),
//! tokens to a syntax tree ([`parser`]), and the tree itself ([`ast`]);
//! also how an `import` names its module ([`import_names`]), plain rules
//! on its text shared by the check and the run.
//!
//! It is the bottom layer: the resolver, the checker, the compiled form
//! and the `buzz:` library all read its tree, and none of them
//! is needed to make one, so the parser can be fuzzed and reasoned about
//! alone. The tree still has room for what later passes learn about it
//! (the resolver's slots and frames, member caches, a function's compiled
//! form); those are filled after parsing, never by the parser.
//!
//! It imports two things of a later stage: the type of
//! `FunDecl::compiled`, the compiled path's cache (`lower::Cache`), kept
//! on the declaration so that a call finds it without a lookup, and the
//! like cache of a field's default (`FieldDecl::compiled`). Holding it
//! as `Box<dyn Any>` instead costs about 2% more instructions on
//! call-heavy programs (`benches/compare.py --callgrind --only fib`), so it
//! stays until lowering keeps its functions in a table of its own.

pub(crate) mod ast;
pub(crate) mod import_names;
pub(crate) mod lexer;
pub(crate) mod parser;

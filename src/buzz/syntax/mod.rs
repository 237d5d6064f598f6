//! The front end of the Buzz pipeline: source text to tokens ([`lexer`]),
//! tokens to a syntax tree ([`parser`]), and the tree itself ([`ast`]).
//!
//! It is the bottom layer and imports nothing else of `buzz`: the resolver,
//! the checker, the compiled path, the walker and the `buzz:` library all
//! read its tree, and none of them is needed to make one, so the parser
//! can be fuzzed and reasoned about alone. The tree still has room for
//! what later passes learn about it (the resolver's slots, member caches,
//! a function's compiled form); those are filled after parsing, never by
//! the parser.

pub(crate) mod ast;
pub(crate) mod lexer;
pub(crate) mod parser;

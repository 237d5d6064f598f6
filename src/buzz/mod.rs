//! The embedded interpreter of the Buzz subset (DESIGN §10): lexer, parser
//! and a tree-walking evaluator. It has no FFI, no dynamic loading and no
//! eval, so the native modules it is given are the only way out.

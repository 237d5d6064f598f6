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
//! It imports nothing of a later stage. A function's compiled form is
//! still kept on its declaration (`FunDecl::compiled`, and a field's
//! default's on `FieldDecl::compiled`), so that a call finds it without a
//! lookup, but as an [`ast::Derived`], its type erased: the one stage that
//! fills each such field reads it back as the type it wrote (checked at
//! every read). Measured with callgrind on fib(22): `downcast_ref`
//! (through the vtable) cost 3.6% more instructions, the type check kept
//! inline 0.5% (about 4 a call); a table of the vm keyed by declaration would pay
//! a lookup and a reference count a call, and needs ids unique across
//! every file a run imports.

pub(crate) mod ast;
pub(crate) mod import_names;
pub(crate) mod lexer;
pub(crate) mod parser;

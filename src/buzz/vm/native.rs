//! The interface between the interpreter and native modules (`std`, and the
//! sandbox's `fs`, `sh`, `env`): how a native function is registered, what
//! it receives, and how it raises a Buzz error.
//!
//! Native modules are the only way a spell reaches the outside world.

use super::value::Value;
use crate::buzz::error::CallSite;
use crate::diag::Diagnostic;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

/// A Buzz error raised by a native function. `value` is what a `catch`
/// clause receives; `diagnostic`, if any, is what the user sees when the
/// error is not caught (its location is filled in with the raise site when
/// it has none).
#[derive(Debug, Clone)]
pub struct Raise {
    pub value: Value,
    pub diagnostic: Option<Box<Diagnostic>>,
}

impl Raise {
    /// Raises `value` with no diagnostic of its own.
    pub fn new(value: impl Into<Value>) -> Raise {
        Raise {
            value: value.into(),
            diagnostic: None,
        }
    }

    /// Raises `value`, shown as `diagnostic` if uncaught.
    pub fn with_diagnostic(value: impl Into<Value>, diagnostic: Diagnostic) -> Raise {
        Raise {
            value: value.into(),
            diagnostic: Some(Box::new(diagnostic)),
        }
    }

    /// A wrong-argument error: a `str` message, shown as an error if uncaught.
    #[cold]
    pub fn type_error(message: impl Into<String>) -> Raise {
        let message = message.into();
        Raise::with_diagnostic(Value::str(message.as_str()), Diagnostic::error(message))
    }
}

/// A native function. It receives the call and returns a value or raises.
pub(crate) type NativeFn = Rc<dyn Fn(&mut NativeCall<'_>) -> Result<Value, Raise>>;

/// Reads a spell's own file for `import` (the host routes it through the
/// gate, so a denial raises the same `SandboxError` as `fs.read`).
pub(crate) type SourceLoader = Rc<dyn Fn(&Path) -> Result<String, Raise>>;

/// The fiber a native is called from, as `std\currentFiber()` gives it.
/// The fiber machinery (`fiber.rs`) implements it, so that the interface
/// to natives needs nothing of the machinery but this value.
pub(crate) trait CurrentFiber {
    /// The fiber as a value (`null` once it is gone).
    fn value(&self) -> Value;
}

/// Whether a native asked the run to end (see [`NativeCall::exit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitRequest {
    Continue,
    Exit(i32),
    /// `gc\collect()`: run the queued `collect` methods.
    Collect,
}

/// One call of a native function: its arguments, where it was called from,
/// and the interpreter services a native may use.
pub struct NativeCall<'a> {
    pub args: &'a [Value],
    /// The names the call gave its arguments (`None` for positional ones).
    pub(crate) names: &'a [Option<std::rc::Rc<str>>],
    pub site: &'a CallSite,
    /// `module.function`, for messages.
    pub function: &'a str,
    pub(crate) out: &'a mut dyn Write,
    pub(crate) script_args: &'a [String],
    /// The fiber making the call, for `std\currentFiber()`.
    pub(crate) fiber: &'a dyn CurrentFiber,
    pub(crate) exit: ExitRequest,
}

impl<'a> NativeCall<'a> {
    /// Argument `i` (0-based), or a type error naming the function.
    pub fn arg(&self, i: usize) -> Result<&'a Value, Raise> {
        self.args.get(i).ok_or_else(|| {
            Raise::type_error(format!("{}: missing argument {}", self.function, i + 1))
        })
    }

    /// Argument `i`, or `None` when it is absent or `null`.
    pub fn opt_arg(&self, i: usize) -> Option<&'a Value> {
        self.args.get(i).filter(|v| !v.is_null())
    }

    /// The optional parameter `name`, `i`-th in the native's signature:
    /// given by name (`random(max: 10)`), or by position when the call
    /// names none of its arguments.
    pub fn opt_param(&self, i: usize, name: &str) -> Option<&'a Value> {
        let named = self
            .names
            .iter()
            .position(|n| n.as_deref() == Some(name))
            .and_then(|at| self.args.get(at));
        let positional = || {
            self.names
                .iter()
                .all(Option::is_none)
                .then(|| self.args.get(i))
                .flatten()
        };
        named.or_else(positional).filter(|v| !v.is_null())
    }

    fn wrong(&self, i: usize, expected: &str, got: &Value) -> Raise {
        if matches!(got, Value::Bytes(_)) {
            return Raise::type_error(format!(
                "{}: argument {} must be UTF-8 text, and this str holds bytes that are not UTF-8",
                self.function,
                i + 1
            ));
        }
        Raise::type_error(format!(
            "{}: argument {} expected {expected}, got {}",
            self.function,
            i + 1,
            got.type_name()
        ))
    }

    pub fn arg_str(&self, i: usize) -> Result<&'a str, Raise> {
        let v = self.arg(i)?;
        v.as_str().ok_or_else(|| self.wrong(i, "str", v))
    }

    /// A `str` argument's bytes, UTF-8 or not.
    pub fn arg_bytes(&self, i: usize) -> Result<&'a [u8], Raise> {
        let v = self.arg(i)?;
        v.str_bytes().ok_or_else(|| self.wrong(i, "str", v))
    }

    pub fn arg_int(&self, i: usize) -> Result<i64, Raise> {
        let v = self.arg(i)?;
        v.as_int().ok_or_else(|| self.wrong(i, "int", v))
    }

    pub fn arg_double(&self, i: usize) -> Result<f64, Raise> {
        let v = self.arg(i)?;
        v.as_double().ok_or_else(|| self.wrong(i, "double", v))
    }

    pub fn arg_bool(&self, i: usize) -> Result<bool, Raise> {
        let v = self.arg(i)?;
        v.as_bool().ok_or_else(|| self.wrong(i, "bool", v))
    }

    pub fn arg_list(&self, i: usize) -> Result<Vec<Value>, Raise> {
        let v = self.arg(i)?;
        v.as_list().ok_or_else(|| self.wrong(i, "list", v))
    }

    /// A `[str]` argument.
    pub fn arg_str_list(&self, i: usize) -> Result<Vec<String>, Raise> {
        let v = self.arg(i)?;
        let items = v.as_list().ok_or_else(|| self.wrong(i, "[str]", v))?;
        items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(String::from)
                    .ok_or_else(|| self.wrong(i, "[str]", v))
            })
            .collect()
    }

    /// The spell's output (process stdout unless the interpreter was given another).
    pub fn out(&mut self) -> &mut dyn Write {
        self.out
    }

    /// The arguments the spell was run with.
    pub fn script_args(&self) -> &[String] {
        self.script_args
    }

    /// Ends the run with `status` once this native returns (what `std.exit` does).
    pub fn exit(&mut self, status: i32) {
        self.exit = ExitRequest::Exit(status);
    }

    /// Once this native returns, runs the `collect` methods of freed
    /// objects and lets go of spare memory (what `gc\collect()` does).
    pub(crate) fn collect_garbage(&mut self) {
        self.exit = ExitRequest::Collect;
    }
}

/// A named set of native functions a spell can `import`.
#[derive(Clone)]
#[deny(missing_docs)] // re-exported by the crate: public API
pub struct NativeModule {
    /// The name a spell imports it by (`fs`, `buzz:os`).
    pub name: String,
    pub(crate) functions: HashMap<String, NativeFn>,
    /// Constants such as `math.pi`.
    pub(crate) values: Vec<(String, Value)>,
}

#[deny(missing_docs)] // re-exported by the crate: public API
impl NativeModule {
    /// A module with no function yet.
    pub fn new(name: impl Into<String>) -> NativeModule {
        NativeModule {
            name: name.into(),
            functions: HashMap::new(),
            values: Vec::new(),
        }
    }

    /// Adds the constant `name`.
    pub fn value(mut self, name: impl Into<String>, value: Value) -> NativeModule {
        self.values.push((name.into(), value));
        self
    }

    /// Adds (or replaces) the function `name`.
    pub fn function(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&mut NativeCall<'_>) -> Result<Value, Raise> + 'static,
    ) -> NativeModule {
        self.functions.insert(name.into(), Rc::new(f));
        self
    }

    /// The names of its functions, sorted.
    pub fn function_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.functions.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

impl std::fmt::Debug for NativeModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeModule")
            .field("name", &self.name)
            .field("functions", &self.function_names())
            .finish()
    }
}

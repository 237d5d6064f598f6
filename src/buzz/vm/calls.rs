//! Calls: of a Buzz closure by the general path (named arguments,
//! defaults, type arguments: bound in a scope, then run compiled), of a
//! native function (its arguments handed over without allocating, its
//! refusal placed on the argument it is about), of a built-in method,
//! and of an enum by value.

use super::fields::this_name;
use super::limits::MAX_CALL_DEPTH;
use super::{Args, Eval, Flow, Interpreter, Spare, Stop, SPARE_FRAMES, SPARE_LIMIT};
use crate::buzz::lib::methods;
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::native::{ExitRequest, NativeCall, NativeModule};
use crate::buzz::vm::value::*;
use std::path::Path;
use std::rc::Rc;

/// The function a direct call runs: its declaration, the scope it closes
/// over, and `this` for a method.
pub(in crate::buzz) struct Callee<'a> {
    pub(in crate::buzz) decl: &'a FunDecl,
    pub(in crate::buzz) parent: &'a Rc<Scope>,
    pub(in crate::buzz) this: Option<Value>,
}

/// Which part of a native call its raise is about, as a [`CallSpans`]
/// slot: the argument that holds the path the diagnostic names (a `str`,
/// or a list of them such as `sh.run`'s command), else the callee.
#[cold]
fn refused_slot(raise: &crate::buzz::vm::native::Raise, values: &[Value]) -> Option<u32> {
    let path = raise.diagnostic.as_ref()?.path.as_deref()?;
    let holds = |v: &Value| match v {
        Value::List(list) => list.items.borrow().iter().any(|i| i.as_str() == Some(path)),
        other => other.as_str() == Some(path),
    };
    let at = values.iter().position(holds).map_or(0, |i| i + 1);
    Some(u32::try_from(at).unwrap_or(0))
}

/// Where a call's parts are written: slot 0 its callee, slot `i + 1`
/// its argument `i`, each `(start, end)`.
pub(crate) trait CallSpans {
    fn slot(&self, i: usize) -> Option<(Pos, Pos)>;
}

/// Whether `file` is a library magus writes in Buzz (`<buzz:io>`), whose
/// source the user never sees.
fn is_library(file: &Path) -> bool {
    file.as_os_str().as_encoded_bytes().starts_with(b"<")
}

/// Characters from `start` to `end` on one line; an expression that
/// goes on to later lines is underlined to the end of its first (the
/// renderer stops at the line's end).
fn span_width(start: Pos, end: Pos) -> u32 {
    if end.line == start.line {
        end.column.saturating_sub(start.column).max(1)
    } else {
        u32::MAX
    }
}

pub(in crate::buzz) fn module_object(module: NativeModule) -> ModuleObj {
    let name: Rc<str> = Rc::from(module.name.as_str());
    let functions = module
        .functions
        .into_iter()
        .map(|(fname, f)| {
            let native = NativeFunction {
                label: Rc::from(format!("{name}.{fname}")),
                module: name.clone(),
                name: Rc::from(fname.as_str()),
                f,
            };
            (fname, Value::Native(Rc::new(native)))
        })
        .chain(module.values)
        .collect();
    ModuleObj {
        name,
        functions,
        namespace: Vec::new(),
    }
}

impl Interpreter {
    /// `decl`'s compiled form; `None` only for a tree never resolved.
    #[inline]
    pub(in crate::buzz) fn compiled_of<'d>(
        &self,
        decl: &'d FunDecl,
    ) -> Option<&'d crate::buzz::lower::Function> {
        crate::buzz::lower::compiled(decl)
    }

    pub(in crate::buzz) fn builtin_method(
        &mut self,
        receiver: &Value,
        name: &str,
        args: Args,
        pos: Pos,
    ) -> Eval<Value> {
        let values: Vec<Value> = args.into_iter().map(|(_, v)| v).collect();
        methods::call_method(self, receiver, name, &values, pos)
    }

    /// Calls a Buzz function, a native function, or an enum (by value).
    pub(crate) fn call_value(&mut self, f: &Value, args: Args, pos: Pos) -> Eval<Value> {
        match f {
            Value::Function(closure) if closure.decl.frame.get().method => {
                // A method taken from its object (`obj.method`): `this` is
                // bound by name in the closure's scope, the object's
                // scope above it.
                let this = closure.scope.vars.borrow().first().map(|s| s.value.clone());
                let parent = closure.scope.parent.as_ref().unwrap_or(&closure.scope);
                let type_args = &closure.type_args;
                self.call_function(&closure.decl, parent, this, type_args, args, pos)
            }
            Value::Function(closure) => {
                let type_args = &closure.type_args;
                self.call_function(&closure.decl, &closure.scope, None, type_args, args, pos)
            }
            Value::Native(native) => self.call_native(native, args, pos),
            Value::Enum(e) => {
                let wanted = args.first().map(|(_, v)| v.clone()).unwrap_or_default();
                let found = e.cases.iter().find(|c| c.value.equals(&wanted, 0));
                Ok(found.map(Value::case).unwrap_or_default())
            }
            other => Err(self.fail(
                pos,
                format!("cannot call a value of type {}", other.type_name()),
            )),
        }
    }

    /// Calls the Buzz function `decl` in a frame under `parent` (what it
    /// closes over), with `this` bound first for a method.
    pub(in crate::buzz) fn call_function(
        &mut self,
        decl: &FunDecl,
        parent: &Rc<Scope>,
        this: Option<Value>,
        type_args: &[Type],
        args: Args,
        pos: Pos,
    ) -> Eval<Value> {
        if self.calls >= MAX_CALL_DEPTH {
            return Err(self.call_overflow(decl, pos));
        }
        self.enter_call(pos)?;
        self.calls += 1;
        let result = self.call_function_inner(decl, parent, this, type_args, args, pos);
        self.calls -= 1;
        self.depth -= 1;
        result
    }

    fn call_function_inner(
        &mut self,
        decl: &FunDecl,
        parent: &Rc<Scope>,
        this: Option<Value>,
        type_args: &[Type],
        args: Args,
        pos: Pos,
    ) -> Eval<Value> {
        if type_args.is_empty()
            && args.len() == decl.params.len()
            && args.iter().all(|(n, _)| n.is_none())
        {
            if let Some(f) = self.compiled_of(decl) {
                return self.general_call_compiled((decl, f), this, args, parent, pos);
            }
        }
        let spare = self.spare.frames.pop();
        let frame = decl.frame.get();
        let capacity = (frame.size as usize).max(decl.params.len() + 1);
        let scope = Scope::reuse(spare, parent.clone(), capacity);
        if let Some(this) = this {
            if frame.resolved {
                scope.set(0, this);
            } else {
                scope.push(this_name(), this, Mutability::Final);
            }
        }
        if !type_args.is_empty() {
            Self::bind_type_args(decl, type_args, &scope);
        }
        let result = self.run_body(decl, &scope, args, pos);
        if self.spare.frames.len() < SPARE_FRAMES {
            self.spare.frames.extend(Scope::recycle(scope));
        }
        result
    }

    fn run_body(&mut self, decl: &FunDecl, scope: &Rc<Scope>, args: Args, pos: Pos) -> Eval<Value> {
        // Argument errors point at the call, in the caller's file.
        self.bind_params(decl, args, scope, pos)?;
        self.run_frame(decl, scope, pos)
    }

    /// Runs `decl`'s body in its bound frame `scope`: what it returns.
    fn run_frame(&mut self, decl: &FunDecl, scope: &Rc<Scope>, pos: Pos) -> Eval<Value> {
        match self.compiled_of(decl) {
            Some(f) => self.frame_call_compiled((decl, f), scope, pos),
            None => Err(self.not_lowered(pos)),
        }
    }

    /// The default value of `decl`'s parameter `i`, read in the call's
    /// frame `scope` and the file it was written in.
    fn default_value(&mut self, decl: &FunDecl, i: usize, scope: &Rc<Scope>) -> Eval<Value> {
        let caller = std::mem::replace(&mut self.file, decl.file.clone());
        let value = self.param_default_value(decl, i, scope);
        self.file = caller;
        value
    }

    fn bind_params(
        &mut self,
        decl: &FunDecl,
        mut args: Args,
        scope: &Rc<Scope>,
        pos: Pos,
    ) -> Eval<()> {
        if args.len() == decl.params.len() && args.iter().all(|(name, _)| name.is_none()) {
            // Every parameter given in order: the common call.
            let frame = decl.frame.get();
            for (i, (param, (_, value))) in decl.params.iter().zip(args.drain(..)).enumerate() {
                let value = self.conform_param(decl, param, value, pos)?;
                if frame.resolved {
                    scope.set(frame.method as u32 + i as u32, value);
                } else {
                    scope.push(param.name.clone(), value, Mutability::Final);
                }
            }
            if self.spare.args.len() < SPARE_LIMIT {
                self.spare.args.push(args);
            }
            return Ok(());
        }
        let mut slots: Vec<Option<Value>> = vec![None; decl.params.len()];
        let mut next = 0;
        for (name, value) in args {
            let i = match &name {
                Some(n) => decl
                    .params
                    .iter()
                    .position(|p| p.name == *n)
                    .ok_or_else(|| {
                        self.fail(pos, format!("`{}` has no parameter `{n}`", decl.name))
                    })?,
                None => next,
            };
            let Some(slot) = slots.get_mut(i) else {
                return Err(self.fail(
                    pos,
                    format!(
                        "`{}` takes {} argument(s), got more",
                        decl.name,
                        decl.params.len()
                    ),
                ));
            };
            *slot = Some(value);
            next = i + 1;
        }
        let frame = decl.frame.get();
        for (i, (param, slot)) in decl.params.iter().zip(slots).enumerate() {
            let value = match (slot, &param.default, &param.ty) {
                (Some(v), _, _) => v,
                (None, Some(_), _) => self.default_value(decl, i, scope)?,
                (None, None, Type::Optional(_)) => Value::Null,
                (None, None, _) => {
                    return Err(self.fail(
                        pos,
                        format!(
                            "missing argument `{}` in call to `{}`",
                            param.name, decl.name
                        ),
                    ))
                }
            };
            let value = self.conform_param(decl, param, value, pos)?;
            if frame.resolved {
                scope.set(frame.method as u32 + i as u32, value);
            } else {
                scope.define(param.name.clone(), value, Mutability::Final);
            }
        }
        Ok(())
    }

    fn call_native(&mut self, native: &NativeFunction, mut args: Args, pos: Pos) -> Eval<Value> {
        let fill = |it: &mut Self, names: &mut Vec<_>, values: &mut Vec<_>| {
            for (name, value) in args.drain(..) {
                names.push(name);
                values.push(value);
            }
            if it.spare.args.len() < SPARE_LIMIT {
                it.spare.args.push(args);
            }
            Ok(())
        };
        self.call_native_with(native, pos, fill)
    }

    /// Calls `native` with the arguments `fill` puts in the names and
    /// values it is given (the compiled path evaluates them straight there).
    #[inline]
    pub(in crate::buzz) fn call_native_with(
        &mut self,
        native: &NativeFunction,
        pos: Pos,
        fill: impl FnOnce(&mut Self, &mut Vec<Option<Rc<str>>>, &mut Vec<Value>) -> Eval<()>,
    ) -> Eval<Value> {
        // The argument lists of the last call: no allocation per call in
        // the common case (a native that somehow re-entered, or one called
        // while the arguments are evaluated, finds them empty and works
        // from fresh vectors). Only the two lists are taken out: taking
        // the whole scratch space made and dropped an empty one per call.
        let mut names = std::mem::take(&mut self.scratch.names);
        let mut values = std::mem::take(&mut self.scratch.values);
        if let Err(flow) = fill(self, &mut names, &mut values) {
            names.clear();
            values.clear();
            (self.scratch.names, self.scratch.values) = (names, values);
            return Err(flow);
        }
        self.scratch.locate(&self.file, pos);
        let mut call = NativeCall {
            args: &values,
            names: &names,
            site: &self.scratch.site,
            function: &native.label,
            out: &mut *self.out,
            script_args: &self.args,
            fiber: &self.fiber,
            exit: ExitRequest::Continue,
        };
        let result = (native.f)(&mut call);
        let exit = call.exit;
        let refused = match &result {
            Ok(_) => None,
            Err(raise) => refused_slot(raise, &values),
        };
        names.clear();
        values.clear();
        (self.scratch.names, self.scratch.values) = (names, values);
        match exit {
            ExitRequest::Continue => result.map_err(|raise| {
                let mut flow = self.raised(raise, pos);
                if let Some(t) = flow.thrown_mut() {
                    t.refused = refused;
                }
                flow
            }),
            ExitRequest::Exit(status) => Err(Stop::Exit(status).into()),
            ExitRequest::Collect => self.collect_garbage(pos),
        }
    }

    /// `gc\collect()`: runs the queued `collect` methods, then lets go of
    /// the frames and argument lists kept for reuse, so `allocated()`
    /// after it counts what the spell holds.
    fn collect_garbage(&mut self, pos: Pos) -> Eval<Value> {
        self.run_finalizers(pos)?;
        self.spare = Spare::default();
        self.flat_frames = Vec::new();
        Ok(Value::Null)
    }

    /// A native's refusal raised by the call at `pos`, placed on the part
    /// of the call `spans` says it is about, so its diagnostic underlines
    /// that argument (or the callee) as written. One raised inside a
    /// library magus writes in Buzz (`buzz:io`'s `File.open`) is placed
    /// on the callee of the spell's call into it, not in the library's
    /// source. Anything else passes.
    #[cold]
    pub(crate) fn place_refused(&self, mut flow: Flow, pos: Pos, spans: &dyn CallSpans) -> Flow {
        if is_library(&self.file) {
            return flow;
        }
        let Some(t) = flow.thrown_mut() else {
            return flow;
        };
        let slot = match t.refused.take() {
            _ if is_library(&t.file) => Some(0),
            slot => slot.filter(|_| t.pos == pos),
        };
        let span = slot.and_then(|s| spans.slot(s as usize));
        if let (Some((start, end)), Some(d)) = (span, t.diagnostic.as_mut()) {
            if d.location.is_none() {
                d.location = Some(crate::diag::Location {
                    kind: crate::diag::SourceKind::Spell,
                    file: self.file.to_path_buf(),
                    line: start.line,
                    column: start.column,
                });
                d.span = span_width(start, end);
            }
        }
        flow
    }
}

impl CallSpans for crate::buzz::lower::Args {
    fn slot(&self, i: usize) -> Option<(Pos, Pos)> {
        self.spans.get(i).copied()
    }
}

impl crate::buzz::lib::Run for Interpreter {
    #[inline]
    fn call_value(&mut self, f: &Value, args: Args, pos: Pos) -> Eval<Value> {
        Interpreter::call_value(self, f, args, pos)
    }

    #[inline]
    fn fail(&self, pos: Pos, message: String) -> Flow {
        Interpreter::fail(self, pos, message)
    }
}

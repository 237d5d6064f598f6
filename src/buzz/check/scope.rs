//! The names the checker sees at each point: globals of the file, then
//! nested frames (functions, blocks, loops, `from` blocks), innermost last.

use super::ty::Ty;
use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

/// One declared name.
#[derive(Debug, Clone)]
pub(super) struct Binding {
    pub ty: Ty,
    pub kind: BindingKind,
    /// Read somewhere (for the unused-local and unused-import warnings).
    pub used: Cell<bool>,
    /// Assigned after its declaration (a `var` never assigned could be
    /// `final`).
    pub assigned: Cell<bool>,
}

impl Binding {
    fn new(ty: Ty, kind: BindingKind) -> Binding {
        Binding {
            ty,
            kind,
            used: Cell::new(false),
            assigned: Cell::new(false),
        }
    }
}

/// A local that its block never read, or a `var` it never assigned.
#[derive(Debug)]
pub(super) struct Idle {
    pub name: Rc<str>,
    pub line: u32,
    pub ty: Ty,
    /// Never read (else: a `var` never assigned).
    pub unused: bool,
}

/// What declared a name, which decides whether it may be reassigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BindingKind {
    Var,
    Final,
    Param,
    /// Functions, objects, enums, imports: never reassigned.
    Declaration,
}

/// What a frame is, for `return`, `break`, `continue` and `out`.
#[derive(Debug, Clone)]
pub(super) enum FrameKind {
    /// A function body, with its declared result (`Unknown` when free).
    Function {
        ret: Ty,
        name: String,
        yields: Yields,
    },
    Block,
    Loop {
        label: Option<Rc<str>>,
    },
    /// `from { … }`, left by `out`.
    From,
}

/// What a function may `yield` when it runs as a fiber.
#[derive(Debug, Clone)]
pub(super) enum Yields {
    /// No `*>`: it yields nothing (nor may the functions it calls).
    Not,
    /// `*> T`.
    Declared(Ty),
    /// A `test` block: no fiber runs it, so `yield` has no place there.
    Forbidden,
}

#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    names: Vec<(Rc<str>, Binding)>,
    /// The line each local was declared at, for shadowing.
    lines: Vec<u32>,
}

/// The frames set aside while a method's body is typed on its own.
#[derive(Debug)]
pub(super) struct Saved(Vec<Frame>);

#[derive(Debug, Default)]
pub(super) struct Scopes {
    globals: HashMap<Rc<str>, Binding>,
    frames: Vec<Frame>,
}

impl Scopes {
    pub(super) fn push(&mut self, kind: FrameKind) {
        self.frames.push(Frame {
            kind,
            names: Vec::new(),
            lines: Vec::new(),
        });
    }

    /// Leaves the innermost frame; returns its idle locals.
    pub(super) fn pop(&mut self) -> Vec<Idle> {
        let Some(frame) = self.frames.pop() else {
            return Vec::new();
        };
        let mut idle = Vec::new();
        for ((name, b), line) in frame.names.into_iter().zip(frame.lines) {
            if line == 0 || name.starts_with('_') {
                continue;
            }
            let unused = !b.used.get();
            if unused || (b.kind == BindingKind::Var && !b.assigned.get()) {
                idle.push(Idle {
                    name,
                    line,
                    ty: b.ty,
                    unused,
                });
            }
        }
        idle
    }

    /// Leaves only the globals visible (a method's own scope), until
    /// [`Scopes::restore`].
    pub(super) fn isolate(&mut self) -> Saved {
        Saved(std::mem::take(&mut self.frames))
    }

    pub(super) fn restore(&mut self, saved: Saved) {
        self.frames = saved.0;
    }

    /// Declares `name` in the innermost frame (a global at the top level).
    pub(super) fn declare(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind) {
        let binding = Binding::new(ty, kind);
        match self.frames.last_mut() {
            Some(frame) => {
                frame.names.push((name, binding));
                frame.lines.push(0);
            }
            None => {
                self.globals.insert(name, binding);
            }
        }
    }

    /// Declares a local written at `line`.
    pub(super) fn declare_local(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind, line: u32) {
        self.declare(name, ty, kind);
        if let Some(last) = self.frames.last_mut().and_then(|f| f.lines.last_mut()) {
            *last = line;
        }
    }

    /// The line of a local of the same function that `name` would hide,
    /// if any (names from `declare` without a line are left alone).
    pub(super) fn shadowed(&self, name: &str) -> Option<u32> {
        for frame in self.frames.iter().rev() {
            let found = frame
                .names
                .iter()
                .zip(&frame.lines)
                .find(|((n, _), line)| &**n == name && **line > 0);
            if let Some((_, line)) = found {
                return Some(*line);
            }
            if matches!(frame.kind, FrameKind::Function { .. }) {
                break;
            }
        }
        None
    }

    pub(super) fn declare_global(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind) {
        self.globals.insert(name, Binding::new(ty, kind));
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.frames
            .iter()
            .rev()
            .flat_map(|f| f.names.iter().rev())
            .find(|(n, _)| &**n == name)
            .map(|(_, b)| b)
            .or_else(|| self.globals.get(name))
    }

    /// Looks `name` up for reading it: the binding is marked used.
    pub(super) fn lookup_use(&self, name: &str) -> Option<&Binding> {
        let b = self.lookup(name)?;
        b.used.set(true);
        Some(b)
    }

    /// Whether the global `name` was read.
    pub(super) fn global_used(&self, name: &str) -> bool {
        self.globals.get(name).is_some_and(|b| b.used.get())
    }

    /// Every name in scope, for "did you mean".
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.frames
            .iter()
            .flat_map(|f| f.names.iter().map(|(n, _)| &**n))
            .chain(self.globals.keys().map(|n| &**n))
    }

    /// The innermost function's declared result, if inside one.
    pub(super) fn function(&self) -> Option<(&Ty, &str)> {
        self.frames.iter().rev().find_map(|f| match &f.kind {
            FrameKind::Function { ret, name, .. } => Some((ret, name.as_str())),
            _ => None,
        })
    }

    /// What the innermost function may yield, and its name; `None` at
    /// the top level.
    pub(super) fn yields(&self) -> Option<(&Yields, &str)> {
        self.frames.iter().rev().find_map(|f| match &f.kind {
            FrameKind::Function { yields, name, .. } => Some((yields, name.as_str())),
            _ => None,
        })
    }

    /// The frames a jump may leave, innermost first, up to the function.
    pub(super) fn jump_targets(&self) -> impl Iterator<Item = &FrameKind> {
        self.frames
            .iter()
            .rev()
            .map(|f| &f.kind)
            .take_while(|k| !matches!(k, FrameKind::Function { .. }))
    }

    pub(super) fn at_top_level(&self) -> bool {
        self.frames.is_empty()
    }
}

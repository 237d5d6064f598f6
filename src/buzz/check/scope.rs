//! The names the checker sees at each point: globals of the file, then
//! nested frames (functions, blocks, loops, `from` blocks), innermost last.
//! The levels, declaring, looking up and shadowing are the scope engine's
//! ([`crate::buzz::resolve::scope`], shared with the resolver); what is the
//! checker's own is kept here: a binding's type and flags, what each frame
//! is (for `return`, `break`, `continue`, `out` and `yield`), and the
//! idle locals a frame reports when it is left.

use super::super::resolve::scope::{Isolated, LevelKind, Scopes};
use super::ty::Ty;
use std::cell::Cell;
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
    /// The line a local was written at, for shadowing and the idle
    /// report; 0 for a name declared without one (parameters, `this`,
    /// loop and clause bindings, globals).
    line: u32,
}

impl Binding {
    fn new(ty: Ty, kind: BindingKind, line: u32) -> Binding {
        Binding {
            ty,
            kind,
            used: Cell::new(false),
            assigned: Cell::new(false),
            line,
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

impl LevelKind for FrameKind {
    fn is_function(&self) -> bool {
        matches!(self, FrameKind::Function { .. })
    }
}

/// The frames set aside while a method's body is typed on its own.
#[derive(Debug)]
pub(super) struct Saved(Isolated<Binding, FrameKind>);

#[derive(Debug, Default)]
pub(super) struct Frames {
    names: Scopes<Binding, FrameKind>,
}

impl Frames {
    pub(super) fn push(&mut self, kind: FrameKind) {
        self.names.push(kind);
    }

    /// Leaves the innermost frame; returns its idle locals.
    pub(super) fn pop(&mut self) -> Vec<Idle> {
        let Some(frame) = self.names.pop() else {
            return Vec::new();
        };
        let mut idle = Vec::new();
        for entry in frame.into_entries() {
            let (name, b) = entry.into_parts();
            if b.line == 0 || name.starts_with('_') {
                continue;
            }
            let unused = !b.used.get();
            if unused || (b.kind == BindingKind::Var && !b.assigned.get()) {
                idle.push(Idle {
                    name,
                    line: b.line,
                    ty: b.ty,
                    unused,
                });
            }
        }
        idle
    }

    /// Leaves only the globals visible (a method's own scope), until
    /// [`Frames::restore`].
    pub(super) fn isolate(&mut self) -> Saved {
        Saved(self.names.isolate())
    }

    pub(super) fn restore(&mut self, saved: Saved) {
        self.names.restore(saved.0);
    }

    /// Declares `name` in the innermost frame (a global at the top level).
    pub(super) fn declare(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind) {
        self.names.declare(name, Binding::new(ty, kind, 0));
    }

    /// Declares a local written at `line`.
    pub(super) fn declare_local(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind, line: u32) {
        self.names.declare(name, Binding::new(ty, kind, line));
    }

    /// The line of a local of the same function that `name` would hide,
    /// if any (names from `declare` without a line are left alone).
    pub(super) fn shadowed(&self, name: &str) -> Option<u32> {
        self.names.shadowed(name, |b| b.line > 0).map(|b| b.line)
    }

    pub(super) fn declare_global(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind) {
        self.names.declare_global(name, Binding::new(ty, kind, 0));
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.names.lookup(name)
    }

    /// Looks `name` up for reading it: the binding is marked used.
    pub(super) fn lookup_use(&self, name: &str) -> Option<&Binding> {
        let b = self.lookup(name)?;
        b.used.set(true);
        Some(b)
    }

    /// Whether the global `name` was read.
    pub(super) fn global_used(&self, name: &str) -> bool {
        self.names.global(name).is_some_and(|b| b.used.get())
    }

    /// Every name in scope, for "did you mean".
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.names.names()
    }

    /// The innermost function's declared result, if inside one.
    pub(super) fn function(&self) -> Option<(&Ty, &str)> {
        self.names.kinds().find_map(|k| match k {
            FrameKind::Function { ret, name, .. } => Some((ret, name.as_str())),
            _ => None,
        })
    }

    /// What the innermost function may yield, and its name; `None` at
    /// the top level.
    pub(super) fn yields(&self) -> Option<(&Yields, &str)> {
        self.names.kinds().find_map(|k| match k {
            FrameKind::Function { yields, name, .. } => Some((yields, name.as_str())),
            _ => None,
        })
    }

    /// The frames a jump may leave, innermost first, up to the function.
    pub(super) fn jump_targets(&self) -> impl Iterator<Item = &FrameKind> {
        self.names
            .kinds()
            .take_while(|k| !matches!(k, FrameKind::Function { .. }))
    }

    pub(super) fn at_top_level(&self) -> bool {
        self.names.at_top_level()
    }
}

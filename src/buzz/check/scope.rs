//! The names the checker sees at each point: globals of the file, then
//! nested frames (functions, blocks, loops, `from` blocks), innermost last.
//! The levels, declaring, looking up and shadowing are the scope engine's
//! ([`crate::buzz::resolve::scope`], shared with the resolver, whose
//! answer for each use the checker reads: its module doc says where the
//! two passes' rules differ); what is the checker's own is kept here: a
//! binding's type and flags, what each frame is (for `return`, `break`,
//! `continue`, `out` and `yield`), and the idle locals a frame reports
//! when it is left. In a debug build every use is also searched by name
//! and the two answers must be the same declaration.

use super::super::resolve::scope::{Isolated, Scopes};
use super::super::syntax::ast::Res;
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

/// The frames set aside while a method's body is typed on its own.
#[derive(Debug)]
pub(super) struct Saved {
    levels: Isolated<Binding, ()>,
    frames: Vec<Frame>,
}

/// One frame of the walk.
#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    /// It opened a level of names (where the resolver opens one).
    names: bool,
    /// How many levels of names were open outside it.
    outside: usize,
}

/// The checker's frames, and its levels of names in the scope engine:
/// a frame opens a level exactly where the resolver does (see
/// [`Frames::push`]), so that a use's [`Res`] is read at its slot.
#[derive(Debug, Default)]
pub(super) struct Frames {
    names: Scopes<Binding, ()>,
    frames: Vec<Frame>,
    /// Above 0 while the levels are not the resolver's at this point (an
    /// arrow method typed away from where it is written, the condition
    /// of a `do … until` whose body declares): names are searched then.
    apart: u32,
}

impl Frames {
    /// Enters a frame; `names`: whether the resolver opens a level of
    /// names here (a function, `for`, `foreach`, `catch` and `if (…) ->`
    /// always; a block only when it declares a name).
    pub(super) fn push(&mut self, kind: FrameKind, names: bool) {
        let outside = self.names.depth();
        if names {
            self.names.push(());
        }
        self.frames.push(Frame {
            kind,
            names,
            outside,
        });
    }

    /// Leaves the innermost frame; returns its idle locals.
    pub(super) fn pop(&mut self) -> Vec<Idle> {
        if !self.frames.pop().is_some_and(|f| f.names) {
            return Vec::new();
        }
        let Some(level) = self.names.pop() else {
            return Vec::new();
        };
        let mut idle = Vec::new();
        for entry in level.into_entries() {
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
        self.apart += 1;
        Saved {
            levels: self.names.isolate(),
            frames: std::mem::take(&mut self.frames),
        }
    }

    pub(super) fn restore(&mut self, saved: Saved) {
        self.names.restore(saved.levels);
        self.frames = saved.frames;
        self.apart -= 1;
    }

    /// While the levels are not the resolver's: uses are searched by name.
    pub(super) fn set_apart(&mut self, apart: bool) {
        if apart {
            self.apart += 1;
        } else {
            self.apart -= 1;
        }
    }

    /// Declares `name` in the innermost frame (a global at the top level)
    /// at the level's next slot, as the resolver does `this` and the
    /// parameters.
    pub(super) fn declare(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind) {
        self.names.declare(name, Binding::new(ty, kind, 0));
    }

    /// Declares `name` where the resolver put it (`res`, its answer for
    /// the declaration): a global at the top level.
    pub(super) fn declare_resolved(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind, res: Res) {
        self.declare_line(name, Binding::new(ty, kind, 0), res);
    }

    /// Declares a local written at `line`, where the resolver put it.
    pub(super) fn declare_local(
        &mut self,
        name: Rc<str>,
        ty: Ty,
        kind: BindingKind,
        line: u32,
        res: Res,
    ) {
        self.declare_line(name, Binding::new(ty, kind, line), res);
    }

    fn declare_line(&mut self, name: Rc<str>, binding: Binding, res: Res) {
        match res {
            _ if self.names.at_top_level() => self.names.declare_global(name, binding),
            Res::Local { slot, .. } => self.names.declare_at(name, slot, binding),
            // Not given a slot (too deep, say): found by a search only.
            Res::Dynamic | Res::Global { .. } => self.names.declare_unslotted(name, binding),
        }
    }

    /// The line of a local of the same function that `name` would hide,
    /// if any (names from `declare` without a line are left alone).
    pub(super) fn shadowed(&self, name: &str) -> Option<u32> {
        let function = self
            .frames
            .iter()
            .rev()
            .find(|f| matches!(f.kind, FrameKind::Function { .. }));
        let floor = function.map_or(0, |f| f.outside);
        let found = self.names.shadowed(name, floor, |b| b.line > 0);
        found.map(|b| b.line)
    }

    pub(super) fn declare_global(&mut self, name: Rc<str>, ty: Ty, kind: BindingKind) {
        self.names.declare_global(name, Binding::new(ty, kind, 0));
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.names.lookup(name)
    }

    /// The declaration a use of `name` means: the one the resolver found
    /// (`res`), read at its slot or among the globals, without a search
    /// by name. A declaration the checker does not make (a local object
    /// or enum, a generic parameter, a local `fun` before its line) or a
    /// walk apart from the resolver's levels falls back to the search.
    pub(super) fn lookup_resolved(&self, name: &str, res: Res) -> Option<&Binding> {
        let found = match res {
            _ if self.apart > 0 => self.lookup(name),
            Res::Local { depth, slot, .. } => self
                .names
                .at_slot(depth as usize, slot, name)
                .or_else(|| self.lookup(name)),
            Res::Global { .. } => self.names.global(name),
            Res::Dynamic => self.lookup(name),
        };
        debug_assert!(
            same(found, self.lookup(name)),
            "the resolver's answer for `{name}` ({res:?}) is not the checker's"
        );
        found
    }

    /// Looks a use of `name` up for reading it: the binding is marked
    /// used.
    pub(super) fn lookup_use(&self, name: &str, res: Res) -> Option<&Binding> {
        let b = self.lookup_resolved(name, res)?;
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

    fn kinds(&self) -> impl Iterator<Item = &FrameKind> {
        self.frames.iter().rev().map(|f| &f.kind)
    }

    /// The innermost function's declared result, if inside one.
    pub(super) fn function(&self) -> Option<(&Ty, &str)> {
        self.kinds().find_map(|k| match k {
            FrameKind::Function { ret, name, .. } => Some((ret, name.as_str())),
            _ => None,
        })
    }

    /// What the innermost function may yield, and its name; `None` at
    /// the top level.
    pub(super) fn yields(&self) -> Option<(&Yields, &str)> {
        self.kinds().find_map(|k| match k {
            FrameKind::Function { yields, name, .. } => Some((yields, name.as_str())),
            _ => None,
        })
    }

    /// The frames a jump may leave, innermost first, up to the function.
    pub(super) fn jump_targets(&self) -> impl Iterator<Item = &FrameKind> {
        self.kinds()
            .take_while(|k| !matches!(k, FrameKind::Function { .. }))
    }

    pub(super) fn at_top_level(&self) -> bool {
        self.frames.is_empty()
    }
}

/// The same declaration (or none) both ways.
fn same(a: Option<&Binding>, b: Option<&Binding>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => std::ptr::eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

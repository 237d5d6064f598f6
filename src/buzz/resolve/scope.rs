//! The one scope engine: the levels of names that both the resolver
//! ([`super`], which gives every local a slot for lowering and the vm) and
//! the checker (`check/scope.rs`, which types each name and warns about
//! idle ones) walk. It owns what the two passes share: the stack of levels
//! (innermost last), declaring a name in the innermost one (which gives it
//! a slot), looking a name up (innermost level first, the latest
//! declaration of a level first, then the globals), reading the
//! declaration at a slot the resolver found, finding the local a new one
//! would shadow, and the names in scope for "did you mean". What each
//! pass keeps per name (`T`: the resolver's fixity, the checker's type
//! and flags) and per level (`K`: the resolver's capture notes; nothing
//! for the checker, whose frames are its own) is its own.
//!
//! Why one engine: which declaration a name means is decided once, not by
//! two models kept in step by hand (issue 39, "one scope model"). The
//! resolver runs first and searches by name; the checker, walking after
//! it, opens its levels where the resolver does, declares each name at
//! the slot the resolver gave it ([`Scopes::declare_at`]), and reads a
//! use at the slot the resolver found ([`Scopes::at_slot`]) or among the
//! globals, without a second search. Where the passes' rules differ, the
//! difference is said here, in terms of the engine; each pass keeps its
//! observable behaviour (the resolver's slots and depths, the checker's
//! diagnostics):
//!
//! - **Which constructs make a level.** Both open one per function, `for`,
//!   `foreach` step, `catch` clause and `if (…) ->` branch, and one for a
//!   block only when it declares a name
//!   ([`crate::buzz::syntax::ast::declares`]): the levels are the run's
//!   (a depth counts them). The checker's frames (block, loop, `from`,
//!   function, for `break`, `continue`, `out`, `return` and `yield`) are
//!   kept beside the levels, not as levels: a frame that declares nothing
//!   holds no names either way.
//! - **Which declarations a pass makes.** The resolver declares a local
//!   `fun` ahead of its level's statements (so two may call each other)
//!   and again where it stands, a local object or enum where it stands,
//!   and generic parameters and local `protocol`s without a slot
//!   ([`Scopes::declare_unslotted`]: the run binds them by name). The
//!   checker declares a local `fun` only where it stands, and none of the
//!   rest. A use the resolver found at a declaration the checker has not
//!   made (there is nothing of that name at the slot) is searched by
//!   name, as the checker always did: it finds what the checker's own
//!   declarations make visible (an outer one, a global, or nothing; the
//!   checker never reports a name the file declares somewhere).
//! - **A name declared twice in one level.** [`Scopes::declare`] adds a
//!   declaration; the resolver first asks [`Scopes::here_mut`] and keeps
//!   the slot it found, as the run's `define` does. The checker keeps both
//!   declarations at that one slot (for its idle report); a use reads the
//!   latest.
//! - **The top level.** The checker declares globals
//!   ([`Scopes::declare_global`]), each replacing an earlier one of its
//!   name; the resolver declares none (imports and hoisted declarations
//!   land in the run's globals in an order known only at run time), so a
//!   name no level holds is a global to it, and the checker reads it among
//!   its globals.
//! - **Where the checker walks apart from the resolver's levels.** It
//!   types an arrow method's body away from where it is written (at a use,
//!   to infer its result), with every level set aside
//!   ([`Scopes::isolate`], [`Scopes::restore`]) so that only the globals
//!   are visible; and it reads a `do … until` condition after leaving the
//!   body, where the resolver reads it in the body's level. There it
//!   searches by name. (Both passes otherwise walk an object's methods
//!   where the object is declared, so a local object's methods see the
//!   enclosing function's locals.)
//! - **Shadowing.** Only the checker asks ([`Scopes::shadowed`]), from the
//!   innermost function's first level inward, so a local of an enclosing
//!   function is never "shadowed"; it counts only the locals written on a
//!   line of their own (not parameters, `this`, loop or clause bindings).

use std::collections::HashMap;
use std::rc::Rc;

/// One declaration of a name in a level.
#[derive(Debug)]
pub(crate) struct Entry<T> {
    name: Rc<str>,
    /// Its place in the level's frame; `None` for a name bound by name
    /// at run time.
    slot: Option<u32>,
    /// What the pass keeps about it.
    pub(crate) value: T,
}

impl<T> Entry<T> {
    pub(crate) fn slot(&self) -> Option<u32> {
        self.slot
    }

    pub(crate) fn into_parts(self) -> (Rc<str>, T) {
        (self.name, self.value)
    }
}

/// One scope: its declarations in order, and the pass's data about it.
#[derive(Debug)]
pub(crate) struct Level<T, K> {
    pub(crate) kind: K,
    entries: Vec<Entry<T>>,
    /// The slot the next declaration takes; at the end, the frame's size.
    next: u32,
}

impl<T, K> Level<T, K> {
    /// The declarations made in this level, in order.
    pub(crate) fn into_entries(self) -> Vec<Entry<T>> {
        self.entries
    }

    /// How many slots the level's declarations took.
    pub(crate) fn size(&self) -> u32 {
        self.next
    }

    fn latest(&self, name: &str) -> Option<&Entry<T>> {
        self.entries.iter().rev().find(|e| &*e.name == name)
    }
}

/// Where a name was found.
pub(crate) enum Found<'s, T> {
    /// In a level, `depth` levels out from the innermost (0: the
    /// innermost itself).
    Local {
        depth: usize,
        entry: &'s Entry<T>,
    },
    Global(&'s T),
}

/// The levels set aside by [`Scopes::isolate`].
#[derive(Debug)]
pub(crate) struct Isolated<T, K>(Vec<Level<T, K>>);

/// The levels of names at the point a pass has reached.
#[derive(Debug)]
pub(crate) struct Scopes<T, K> {
    /// Innermost last; empty at a file's top level.
    levels: Vec<Level<T, K>>,
    globals: HashMap<Rc<str>, T>,
}

impl<T, K> Default for Scopes<T, K> {
    fn default() -> Self {
        Scopes {
            levels: Vec::new(),
            globals: HashMap::new(),
        }
    }
}

impl<T, K> Scopes<T, K> {
    /// Opens a level inside the others.
    pub(crate) fn push(&mut self, kind: K) {
        self.levels.push(Level {
            kind,
            entries: Vec::new(),
            next: 0,
        });
    }

    /// Closes the innermost level and hands it back.
    pub(crate) fn pop(&mut self) -> Option<Level<T, K>> {
        self.levels.pop()
    }

    pub(crate) fn at_top_level(&self) -> bool {
        self.levels.is_empty()
    }

    /// How many levels are open.
    pub(crate) fn depth(&self) -> usize {
        self.levels.len()
    }

    /// The data of level `at`, counted from the outermost (0).
    pub(crate) fn kind(&self, at: usize) -> &K {
        &self.levels[at].kind
    }

    pub(crate) fn kind_mut(&mut self, at: usize) -> &mut K {
        &mut self.levels[at].kind
    }

    /// Declares `name` in the innermost level, with the level's next
    /// slot (which it returns), or as a global at the top level (slot 0).
    pub(crate) fn declare(&mut self, name: Rc<str>, value: T) -> u32 {
        let Some(level) = self.levels.last_mut() else {
            self.globals.insert(name, value);
            return 0;
        };
        let slot = level.next;
        level.next += 1;
        level.entries.push(Entry {
            name,
            slot: Some(slot),
            value,
        });
        slot
    }

    /// Declares `name` in the innermost level at `slot`, the one the
    /// resolver gave this declaration (a pass walking after it, whose
    /// levels are the resolver's). Nothing at the top level.
    pub(crate) fn declare_at(&mut self, name: Rc<str>, slot: u32, value: T) {
        if let Some(level) = self.levels.last_mut() {
            level.next = level.next.max(slot + 1);
            level.entries.push(Entry {
                name,
                slot: Some(slot),
                value,
            });
        }
    }

    /// Declares `name` in the innermost level without a slot: a name the
    /// run binds by name. Nothing at the top level.
    pub(crate) fn declare_unslotted(&mut self, name: Rc<str>, value: T) {
        if let Some(level) = self.levels.last_mut() {
            level.entries.push(Entry {
                name,
                slot: None,
                value,
            });
        }
    }

    /// Declares (or declares again, replacing) the global `name`.
    pub(crate) fn declare_global(&mut self, name: Rc<str>, value: T) {
        self.globals.insert(name, value);
    }

    /// The latest declaration of `name` in the innermost level.
    pub(crate) fn here_mut(&mut self, name: &str) -> Option<&mut Entry<T>> {
        let level = self.levels.last_mut()?;
        level.entries.iter_mut().rev().find(|e| &*e.name == name)
    }

    /// The declaration `name` means here: the latest in the innermost
    /// level that has one, else the global.
    pub(crate) fn find(&self, name: &str) -> Option<Found<'_, T>> {
        for (depth, level) in self.levels.iter().rev().enumerate() {
            if let Some(entry) = level.latest(name) {
                return Some(Found::Local { depth, entry });
            }
        }
        self.globals.get(name).map(Found::Global)
    }

    /// The latest declaration of `name` at `slot` of the level `depth`
    /// levels out: the declaration the resolver found for a use of
    /// `name`, read without a search by name.
    pub(crate) fn at_slot(&self, depth: usize, slot: u32, name: &str) -> Option<&T> {
        let at = self.levels.len().checked_sub(depth + 1)?;
        let entries = &self.levels[at].entries;
        let entry = entries.iter().rev().find(|e| e.slot == Some(slot))?;
        (&*entry.name == name).then_some(&entry.value)
    }

    /// What the pass keeps about the declaration `name` means here.
    pub(crate) fn lookup(&self, name: &str) -> Option<&T> {
        match self.find(name)? {
            Found::Local { entry, .. } => Some(&entry.value),
            Found::Global(value) => Some(value),
        }
    }

    pub(crate) fn global(&self, name: &str) -> Option<&T> {
        self.globals.get(name)
    }

    /// The declaration that a new local `name` would hide among the
    /// levels from `floor` (counted from the outermost, 0) inward: in each
    /// level from the innermost out, the earliest declaration of `name`
    /// that `counts`.
    pub(crate) fn shadowed(
        &self,
        name: &str,
        floor: usize,
        counts: impl Fn(&T) -> bool,
    ) -> Option<&T> {
        let levels = self.levels.get(floor..).unwrap_or_default();
        levels.iter().rev().find_map(|level| {
            let mut found = level.entries.iter();
            let entry = found.find(|e| &*e.name == name && counts(&e.value))?;
            Some(&entry.value)
        })
    }

    /// Every name in scope, outermost level first, then the globals: the
    /// candidates for "did you mean".
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.levels
            .iter()
            .flat_map(|l| l.entries.iter().map(|e| &*e.name))
            .chain(self.globals.keys().map(|n| &**n))
    }

    /// Sets every level aside: only the globals are visible until
    /// [`Scopes::restore`].
    pub(crate) fn isolate(&mut self) -> Isolated<T, K> {
        Isolated(std::mem::take(&mut self.levels))
    }

    /// Puts back the levels [`Scopes::isolate`] set aside (dropping any
    /// opened since).
    pub(crate) fn restore(&mut self, isolated: Isolated<T, K>) {
        self.levels = isolated.0;
    }
}

#[cfg(test)]
mod tests {
    use super::{Found, Scopes};
    use std::rc::Rc;

    fn name(s: &str) -> Rc<str> {
        Rc::from(s)
    }

    #[test]
    fn a_name_is_found_innermost_first_then_among_the_globals() {
        let mut s: Scopes<u8, ()> = Scopes::default();
        s.declare(name("a"), 1);
        s.push(());
        assert_eq!(s.declare(name("a"), 2), 0);
        assert_eq!(s.declare(name("b"), 3), 1);
        s.push(());
        assert_eq!(s.declare(name("a"), 4), 0);
        match s.find("b") {
            Some(Found::Local { depth, entry }) => {
                assert_eq!((depth, entry.slot(), entry.value), (1, Some(1), 3));
            }
            _ => panic!("b is a local one level out"),
        }
        assert_eq!(s.lookup("a"), Some(&4));
        let inner = s.pop().expect("a level");
        assert_eq!(inner.size(), 1);
        assert_eq!(s.lookup("a"), Some(&2));
        s.pop();
        assert!(matches!(s.find("a"), Some(Found::Global(1))));
        assert!(s.find("c").is_none());
    }

    #[test]
    fn shadowing_looks_only_from_the_floor_inward() {
        let mut s: Scopes<u8, ()> = Scopes::default();
        s.push(());
        s.declare(name("outer"), 1);
        s.push(());
        s.declare(name("x"), 0);
        s.declare(name("x"), 2);
        s.push(());
        assert_eq!(s.shadowed("outer", 1, |_| true), None);
        assert_eq!(s.shadowed("outer", 0, |_| true), Some(&1));
        assert_eq!(s.shadowed("x", 1, |v| *v > 0), Some(&2));
        assert_eq!(s.shadowed("x", 1, |_| true), Some(&0));
    }

    #[test]
    fn a_use_is_read_at_the_slot_the_resolver_gave_it() {
        let mut s: Scopes<u8, ()> = Scopes::default();
        s.push(());
        s.declare_at(name("f"), 2, 7);
        assert_eq!(s.declare(name("v"), 1), 3);
        s.push(());
        assert_eq!(s.at_slot(1, 2, "f"), Some(&7));
        assert_eq!(s.at_slot(1, 2, "g"), None);
        assert_eq!(s.at_slot(1, 0, "f"), None);
        assert_eq!(s.at_slot(2, 2, "f"), None);
    }

    #[test]
    fn a_name_declared_again_or_unslotted_and_isolation() {
        let mut s: Scopes<u8, ()> = Scopes::default();
        s.declare_global(name("g"), 9);
        s.push(());
        s.declare_unslotted(name("T"), 0);
        assert_eq!(s.declare(name("v"), 1), 0);
        if let Some(entry) = s.here_mut("v") {
            entry.value = 5;
        }
        assert_eq!(s.lookup("v"), Some(&5));
        match s.find("T") {
            Some(Found::Local { entry, .. }) => assert_eq!(entry.slot(), None),
            _ => panic!("T is a local without a slot"),
        }
        let names: Vec<&str> = s.names().collect();
        assert_eq!(names, ["T", "v", "g"]);
        let set_aside = s.isolate();
        assert!(s.at_top_level() && s.lookup("v").is_none());
        assert_eq!(s.lookup("g"), Some(&9));
        s.restore(set_aside);
        assert_eq!(s.lookup("v"), Some(&5));
    }
}

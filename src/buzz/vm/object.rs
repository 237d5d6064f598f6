//! An object instance in one allocation: a count, its [`Class`] and its
//! fields' values, behind a thin pointer ([`Obj`], one word, so that a
//! [`Value`] stays two). The names of the fields live once in the class.
//!
//! Why not `Rc<Instance>` with a `RefCell<Box<[Value]>>`: that is two
//! allocations per object (the count's box and the values'), and
//! building and freeing objects is what upstream's `btree` and `merkle`
//! spend their time on: malloc and free were 14% of btree's instructions,
//! half of them the second allocation. A `Rc<[Value]>`-like fat pointer
//! would make every value three words. So the block is laid out here: the
//! [`Instance`] head, then `len` values; the values are borrowed as a
//! `RefCell`'s are (a flag in the head: readers or one writer, a second
//! writer panics, never aliases). This file is the only one that touches
//! the block's memory. Its tests run clean under Miri (`cargo +nightly
//! miri test --lib buzz::vm::object`: no undefined behaviour, no leak),
//! and the `run` fuzz target builds objects under ASan (fuzz/README.md).

use super::value::{drain, drops_flat, finalizers, push_nested, Class, Value, F64};
use crate::buzz::syntax::ast::MemberCache;
use std::alloc::{self, Layout};
use std::cell::Cell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::rc::Rc;

/// The head of an instance's block; its `len` values follow it.
#[repr(C)]
pub struct Instance {
    /// How many [`Obj`]s point here.
    count: Cell<usize>,
    /// Readers of the values (> 0), one writer (-1) or none (0).
    borrow: Cell<isize>,
    len: usize,
    pub(crate) class: Rc<Class>,
}

// The values start right after the head, aligned.
const _: () =
    assert!(std::mem::size_of::<Instance>().is_multiple_of(std::mem::align_of::<Value>()));
const _: () = assert!(std::mem::align_of::<Value>() <= std::mem::align_of::<Instance>());

/// A counted pointer to an [`Instance`] and its values. Not `Send`: the
/// count is not atomic (`NonNull` keeps it so).
pub struct Obj {
    head: NonNull<Instance>,
    _owns: PhantomData<Instance>,
}

/// The block of an instance of `len` values.
fn block_layout(len: usize) -> Layout {
    let values = Layout::array::<Value>(len).ok();
    let block = values.and_then(|v| Layout::new::<Instance>().extend(v).ok());
    match block {
        Some((layout, _)) => layout.pad_to_align(),
        // More values than memory has bytes: no slice of them can exist,
        // so no caller gets here; fail as an allocation would.
        None => alloc::handle_alloc_error(Layout::new::<Instance>()),
    }
}

impl Obj {
    /// An instance of `class` holding `values`, one per name of
    /// [`Class::fields`] in order.
    pub(crate) fn new(class: Rc<Class>, values: Vec<Value>) -> Obj {
        debug_assert_eq!(class.fields.len(), values.len());
        let len = values.len();
        let obj = Obj::with_nulls(class, len);
        // SAFETY: `obj` is new: nothing else reads or writes its values.
        let slots = unsafe { obj.values_ptr(len) };
        for (slot, value) in slots.iter_mut().zip(values) {
            *slot = value;
        }
        obj
    }

    /// An instance of `class` with `len` values that `fill` gives in
    /// place (it is handed the class too). If `fill` fails, what it gave
    /// is dropped and no instance was made (a type's `collect` never
    /// sees it).
    #[inline]
    pub(crate) fn build<E>(
        class: Rc<Class>,
        len: usize,
        fill: impl FnOnce(&Class, &mut [Value]) -> Result<(), E>,
    ) -> Result<Obj, E> {
        let obj = Obj::with_nulls(class, len);
        // SAFETY: `obj` is new and not shared until returned.
        let slots = unsafe { obj.values_ptr(len) };
        match fill(&obj.class, slots) {
            Ok(()) => Ok(obj),
            Err(e) => {
                let obj = std::mem::ManuallyDrop::new(obj);
                // SAFETY: the only pointer, never used again.
                unsafe { release(obj.head) };
                Err(e)
            }
        }
    }

    /// A new block of `len` nulls, counted once.
    fn with_nulls(class: Rc<Class>, len: usize) -> Obj {
        let layout = block_layout(len);
        // SAFETY: the layout is never zero-sized (the head is not).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(block) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        let head = block.cast::<Instance>();
        // SAFETY: the block is fresh, aligned for the head and large
        // enough for it and `len` values after it (`block_layout`).
        unsafe {
            head.as_ptr().write(Instance {
                count: Cell::new(1),
                borrow: Cell::new(0),
                len,
                class,
            });
            let first = head.as_ptr().add(1).cast::<Value>();
            for i in 0..len {
                first.add(i).write(Value::Null);
            }
        }
        Obj {
            head,
            _owns: PhantomData,
        }
    }

    /// The values, mutably.
    ///
    /// # Safety
    /// Nothing else may read or write them while the slice lives, and
    /// `len` is the head's.
    #[allow(clippy::mut_from_ref)]
    unsafe fn values_ptr(&self, len: usize) -> &mut [Value] {
        // SAFETY: the values follow the head, `len` of them, initialised.
        unsafe {
            let first = self.head.as_ptr().add(1).cast::<Value>();
            std::slice::from_raw_parts_mut(first, len)
        }
    }

    /// Whether `a` and `b` are the same object.
    #[inline]
    pub(crate) fn ptr_eq(a: &Obj, b: &Obj) -> bool {
        a.head == b.head
    }

    /// The object's address: its identity, as a map key or a finalizer's
    /// mark.
    #[inline]
    pub(crate) fn addr(&self) -> usize {
        self.head.as_ptr() as usize
    }

    /// Whether another [`Obj`] points here too.
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        self.count.get() > 1
    }

    /// The values, when this is the only pointer and nothing borrows them.
    pub(crate) fn unique_values(&mut self) -> Option<&mut [Value]> {
        if self.count.get() != 1 || self.borrow.get() != 0 {
            return None;
        }
        let len = self.len;
        // SAFETY: the only pointer, borrowed mutably; no guard is alive.
        Some(unsafe { self.values_ptr(len) })
    }
}

impl Deref for Obj {
    type Target = Instance;

    #[inline(always)]
    fn deref(&self) -> &Instance {
        // SAFETY: the head lives while any `Obj` points to it.
        unsafe { self.head.as_ref() }
    }
}

impl Clone for Obj {
    #[inline]
    fn clone(&self) -> Obj {
        let count = self.count.get();
        // As `Rc`: a count that would wrap means leaked clones; stop.
        if count == usize::MAX {
            std::process::abort();
        }
        self.count.set(count + 1);
        Obj {
            head: self.head,
            _owns: PhantomData,
        }
    }
}

impl Drop for Obj {
    #[inline]
    fn drop(&mut self) {
        let count = self.count.get() - 1;
        self.count.set(count);
        if count == 0 {
            self.last_dropped();
        }
    }
}

impl Obj {
    /// The last pointer is going: a type with a `collect` method queues
    /// the object for it (the same block, counted again); anything else
    /// is freed.
    #[inline(never)]
    fn last_dropped(&mut self) {
        if self.class.finalizes {
            self.count.set(1);
            let revived = Obj {
                head: self.head,
                _owns: PhantomData,
            };
            match finalizers::queue(revived) {
                Ok(()) => return,
                Err(revived) => {
                    // Freed for good: it is freed below, once.
                    std::mem::forget(revived);
                    self.count.set(0);
                }
            }
        }
        // SAFETY: the count is 0: no other pointer; `self` is not used
        // after this (its drop is returning).
        unsafe { release(self.head) };
    }
}

/// Frees the block at `head`, dropping its values without nesting.
///
/// # Safety
/// No [`Obj`] points at `head` any more (or the one left is never used
/// or dropped again), and no borrow of the values is alive.
unsafe fn release(head: NonNull<Instance>) {
    let mut work = Vec::new();
    // SAFETY: the caller gives up the block: its head and values are
    // read out once, then its memory is freed with the layout it was
    // made with.
    unsafe {
        let len = (*head.as_ptr()).len;
        let first = head.as_ptr().add(1).cast::<Value>();
        let values = std::slice::from_raw_parts_mut(first, len);
        if !values.iter().all(drops_flat) {
            push_nested(&mut work, values.iter_mut().map(std::mem::take));
        }
        std::ptr::drop_in_place(values);
        std::ptr::drop_in_place(head.as_ptr());
        alloc::dealloc(head.as_ptr().cast::<u8>(), block_layout(len));
    }
    if !work.is_empty() {
        drain(work);
    }
}

/// The values of an instance, borrowed for reading.
pub(crate) struct Values<'a> {
    values: &'a [Value],
    flag: &'a Cell<isize>,
}

/// One value of an instance, borrowed for reading.
pub(crate) struct FieldRef<'a> {
    value: &'a Value,
    flag: &'a Cell<isize>,
}

/// The values of an instance, borrowed for writing.
pub(crate) struct ValuesMut<'a> {
    values: &'a mut [Value],
    flag: &'a Cell<isize>,
}

impl Deref for Values<'_> {
    type Target = [Value];

    #[inline(always)]
    fn deref(&self) -> &[Value] {
        self.values
    }
}

impl Deref for FieldRef<'_> {
    type Target = Value;

    #[inline(always)]
    fn deref(&self) -> &Value {
        self.value
    }
}

impl Deref for ValuesMut<'_> {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        self.values
    }
}

impl DerefMut for ValuesMut<'_> {
    fn deref_mut(&mut self) -> &mut [Value] {
        self.values
    }
}

impl Drop for Values<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.flag.set(self.flag.get() - 1);
    }
}

impl Drop for FieldRef<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.flag.set(self.flag.get() - 1);
    }
}

impl Drop for ValuesMut<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.flag.set(0);
    }
}

impl<'a> Values<'a> {
    /// The value at `at`, still borrowed, if there is one.
    #[inline(always)]
    pub(crate) fn at(self, at: usize) -> Option<FieldRef<'a>> {
        let this = std::mem::ManuallyDrop::new(self);
        match this.values.get(at) {
            Some(value) => Some(FieldRef {
                value,
                flag: this.flag,
            }),
            None => {
                this.flag.set(this.flag.get() - 1);
                None
            }
        }
    }
}

/// The values are reached through the block's own pointer (never from a
/// reference to the head, which covers the head only).
impl Obj {
    /// The values, borrowed for reading; panics while they are borrowed
    /// for writing (as a `RefCell` does: no code path does it).
    #[inline(always)]
    pub(crate) fn values(&self) -> Values<'_> {
        let head: &Instance = self;
        let readers = head.borrow.get();
        if readers < 0 || readers == isize::MAX {
            borrow_conflict();
        }
        head.borrow.set(readers + 1);
        // SAFETY: the values follow the head, `len` of them; the flag
        // keeps any writer out while the slice lives.
        let values = unsafe {
            let first = self.head.as_ptr().add(1).cast::<Value>();
            std::slice::from_raw_parts(first, head.len)
        };
        Values {
            values,
            flag: &head.borrow,
        }
    }

    /// The values, borrowed for writing; panics while they are borrowed.
    #[inline(always)]
    pub(crate) fn values_mut(&self) -> ValuesMut<'_> {
        let head: &Instance = self;
        if head.borrow.get() != 0 {
            borrow_conflict();
        }
        head.borrow.set(-1);
        // SAFETY: as in `values`; the flag keeps every other reader and
        // writer out while the slice lives.
        let values = unsafe { self.values_ptr(head.len) };
        ValuesMut {
            values,
            flag: &head.borrow,
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<Value> {
        let at = self.class.field_index(name)?;
        self.values().get(at).cloned()
    }

    /// The fields' names and values, in order.
    pub(crate) fn fields(&self) -> Vec<(Rc<str>, Value)> {
        let values = self.values();
        let names = self.class.fields.iter().cloned();
        names.zip(values.iter().cloned()).collect()
    }

    /// Whether it has a field `name`.
    pub(crate) fn has_field(&self, name: &str) -> bool {
        self.class.field_index(name).is_some()
    }

    /// [`Instance::get`] from a site that remembers where it found `name`.
    #[inline(always)]
    pub(crate) fn get_at_site(&self, name: &str, site: &MemberCache) -> Option<Value> {
        let at = self.class.field_at_site(name, site)?;
        self.values().get(at).cloned()
    }

    /// The field `name`, borrowed in place, from a site that remembers
    /// where it found it: the caller copies it straight where it goes.
    #[inline(always)]
    pub(crate) fn field_at_site(&self, name: &str, site: &MemberCache) -> Option<FieldRef<'_>> {
        let at = self.class.field_at_site(name, site)?;
        self.values().at(at)
    }

    /// [`Instance::set`] from a site that remembers where it found `name`.
    #[inline]
    pub(crate) fn set_at_site(&self, name: &str, value: Value, site: &MemberCache) -> bool {
        let Some(at) = self.class.field_at_site(name, site) else {
            return false;
        };
        self.replace(at, value)
    }

    /// Stores `d` in the field `name` when that field holds a `double`
    /// now: written in place, with no old value to drop (nbody's
    /// `bj.vx = …`). False otherwise, for [`Instance::set_at_site`].
    #[inline]
    pub(crate) fn set_double_at_site(&self, name: &str, d: f64, site: &MemberCache) -> bool {
        let Some(at) = self.class.field_at_site(name, site) else {
            return false;
        };
        let mut values = self.values_mut();
        match values.get_mut(at) {
            Some(Value::Double(slot)) => {
                *slot = F64::new(d);
                true
            }
            _ => false,
        }
    }

    /// Sets an existing field; false when there is no such field.
    pub(crate) fn set(&self, name: &str, value: Value) -> bool {
        match self.class.field_index(name) {
            Some(at) => self.replace(at, value),
            None => false,
        }
    }

    /// Stores `value` at `at`. The old value is dropped after the borrow
    /// ends (its drop may reach this very object).
    #[inline]
    fn replace(&self, at: usize, value: Value) -> bool {
        let mut values = self.values_mut();
        let Some(slot) = values.get_mut(at) else {
            return false;
        };
        let old = std::mem::replace(slot, value);
        drop(values);
        drop(old);
        true
    }
}

#[cold]
#[inline(never)]
fn borrow_conflict() -> ! {
    panic!("an object's fields borrowed while written")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(fields: &[&str]) -> Rc<Class> {
        Rc::new(Class::native(
            "T",
            fields.iter().map(|f| Rc::from(*f)).collect(),
        ))
    }

    /// A list whose count tells whether an object still holds it.
    fn marker() -> (Value, Rc<crate::buzz::vm::value::ListObj>) {
        let list = Rc::new(crate::buzz::vm::value::ListObj::new(Vec::new()));
        (Value::List(list.clone()), list)
    }

    #[test]
    fn an_object_holds_its_values_until_its_last_pointer_goes() {
        let (value, list) = marker();
        let obj = Obj::new(class(&["a", "b"]), vec![Value::Int(7), value]);
        let other = obj.clone();
        assert!(Obj::ptr_eq(&obj, &other) && obj.is_shared());
        assert_eq!(obj.get("a").and_then(|v| v.as_int()), Some(7));
        assert!(other.set("a", Value::Int(8)));
        assert!(!other.set("c", Value::Int(8)));
        assert_eq!(obj.get("a").and_then(|v| v.as_int()), Some(8));
        drop(obj);
        assert_eq!(Rc::strong_count(&list), 2, "still held by `other`");
        drop(other);
        assert_eq!(Rc::strong_count(&list), 1, "freed with its object");
    }

    #[test]
    fn a_failed_build_drops_what_it_was_given() {
        let (value, list) = marker();
        let built: Result<Obj, &str> = Obj::build(class(&["a", "b"]), 2, |_, slots| {
            slots[0] = value;
            Err("no b")
        });
        assert_eq!(built.err(), Some("no b"));
        assert_eq!(Rc::strong_count(&list), 1);
        let built: Result<Obj, ()> = Obj::build(class(&[]), 0, |_, _| Ok(()));
        assert!(built.is_ok_and(|o| o.values().is_empty()));
    }

    /// Deep enough to overflow a test thread's 2 MiB stack if each level
    /// nested a drop; small enough (6 MiB) not to move the memory count
    /// other tests of the process read.
    #[test]
    fn a_long_chain_of_objects_drops_without_overflow() {
        let node = class(&["next"]);
        let mut chain = Value::Null;
        for _ in 0..100_000 {
            chain = Value::Object(Obj::new(node.clone(), vec![chain]));
        }
        drop(chain);
    }

    #[test]
    fn readers_share_the_values_and_a_writer_has_them_alone() {
        let obj = Obj::new(class(&["a"]), vec![Value::Int(1)]);
        let one = obj.values();
        let two = obj.values().at(0);
        assert_eq!(two.as_deref().and_then(Value::as_int), Some(1));
        assert!(obj.values().at(1).is_none());
        drop((one, two));
        obj.values_mut()[0] = Value::Int(2);
        assert_eq!(obj.values()[0].as_int(), Some(2));
        let reading = obj.values();
        let written = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            obj.values_mut()[0] = Value::Int(3);
        }));
        assert!(written.is_err(), "a writer while a reader is alive");
        drop(reading);
        assert_eq!(obj.values()[0].as_int(), Some(2));
    }
}

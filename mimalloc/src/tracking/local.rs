//! One thread's state: its window, its budget scope, its own figures, and where it is in its
//! life. Everything a thread does that is not the hot path's one compare is a method here, and
//! each slow path is one of them ([`Local::take_slow`], [`Local::give_slow`]): the choice between
//! the window a scope keeps aside and settling is made in one place, in one access to the
//! thread's state.
//!
//! **Windows.** The hot path reads and writes [`Local::window`] only. While no scope is
//! selected that is the thread's own window. Selecting a scope moves the thread's window into
//! [`Local::stash`] and leaves the hot path's one closed, so that every call of the thread
//! fails the hot path's compare and comes here, where the same compare runs on the thread's
//! own window ([`Local::own`]) and the scope is charged. A thread without a scope pays nothing
//! for scopes: the hot path has no test for them. Everything that settles or reads the
//! thread's figures goes through `own`, so neither ever sees the closed window.
//!
//! **Life.** A thread starts [`State::Fresh`], with a closed window, so that its first call
//! comes to the slow path. Before anything settles, [`Local::settle`] registers the thread's
//! exit flush with the storage's mechanism ([`super::thread`] hands it to [`Local::new`]), so no
//! path that settles can forget it; only a thread whose exit flush is registered buffers in a
//! window ([`State::Buffering`]). After the exit flush, and where it could not be registered,
//! the thread settles every call ([`State::Unbuffered`]), so that nothing is left in a window
//! that no one will flush.

use super::books;
use super::usage::Usage;
use super::window::Window;
use core::cell::Cell;
use core::fmt;
use core::ptr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Its exit flush is not registered yet; the window is closed.
    Fresh,
    /// Registering the exit flush, which may allocate through this very allocator: those
    /// nested calls settle one by one, without a window.
    Registering,
    /// The exit flush is registered: the thread buffers in its window.
    Buffering,
    /// The exit flush ran or could not be registered: every call settles.
    Unbuffered,
}

/// One thread's state; [`Local::new`] is its start. No `Drop`: std can then keep it in native
/// thread-local storage without allocating or registering anything.
#[derive(Debug)]
pub(super) struct Local {
    /// What the hot path reads: the thread's own window, or a closed one while a scope is
    /// selected.
    window: Window,
    /// The thread's own window while a scope is selected.
    stash: Window,
    /// The selected budget scope, with what it has been charged.
    scope: Cell<Option<Usage>>,
    state: Cell<State>,
    /// The thread's published net bytes (wrapping signed).
    published_net: Cell<usize>,
    /// The thread's highest live bytes seen when it published.
    peak: Cell<usize>,
    /// The thread published since [`Local::take_published`] last looked.
    published: Cell<bool>,
    /// Calls of [`Local::poll_due`], counted to its `every`.
    polls: Cell<u32>,
    /// The storage's way to have [`Local::exit`] run when the thread exits; `false` if it
    /// cannot. Kept here, not called by the storage, so that registering is part of settling
    /// and the slow paths need no second kind of access to the thread's state.
    register: Register,
}

/// A storage's way to register the exit flush. Its own type for its `Debug`: Rust 1.63 has none
/// for a function pointer whose argument is a reference.
#[derive(Clone, Copy)]
struct Register(fn(&Local) -> bool);

impl fmt::Debug for Register {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Register")
    }
}

/// The `register` of a state that must never register (it is never called: see
/// [`Local::unbuffered`]).
fn registers_nothing(_: &Local) -> bool {
    false
}

impl Local {
    /// A fresh thread's state; `register` arranges for [`Local::exit`] to run at thread exit.
    pub(super) const fn new(register: fn(&Local) -> bool) -> Self {
        Local {
            window: Window::closed(),
            stash: Window::closed(),
            scope: Cell::new(None),
            state: Cell::new(State::Fresh),
            published_net: Cell::new(0),
            peak: Cell::new(0),
            published: Cell::new(false),
            polls: Cell::new(0),
            register: Register(register),
        }
    }

    /// A state that settles every call and registers nothing: for a thread whose own state is
    /// gone (the Win32 storage, after the exit flush; unused by the std one).
    #[allow(dead_code)]
    pub(super) const fn unbuffered() -> Self {
        Local {
            state: Cell::new(State::Unbuffered),
            ..Local::new(registers_nothing)
        }
    }

    /// The hot path of an allocation: takes `size` bytes from the window.
    #[inline(always)]
    pub(super) fn try_take(&self, size: usize) -> bool {
        self.window.try_take(size)
    }

    /// The hot path of a free: gives `size` bytes back to the window.
    #[inline(always)]
    pub(super) fn try_give(&self, size: usize) -> bool {
        self.window.try_give(size)
    }

    /// Registers the thread's exit flush, once: the step from [`State::Fresh`] to buffering.
    #[inline]
    fn register_exit_flush(&self) {
        if self.state.get() == State::Fresh {
            self.state.set(State::Registering);
            let registered = (self.register.0)(self);
            self.state.set(if registered {
                State::Buffering
            } else {
                State::Unbuffered
            });
        }
    }

    /// The thread's own window, wherever a scope keeps it.
    #[inline]
    fn own(&self) -> &Window {
        if self.scope.get().is_some() {
            debug_assert!(
                self.window.is_closed(),
                "a scope is selected: the hot window is closed"
            );
            &self.stash
        } else {
            &self.window
        }
    }

    /// The slow path of an allocation (or a realloc's growth) of `size` bytes that missed the
    /// hot path, `allocate` being the call of the inner allocator: from the thread's own window
    /// if a scope keeps it aside (charging the scope before `allocate` runs, so that its success
    /// costs nothing more), else by settling. `settled` is the caller's own non-inlined function
    /// that settles with [`Local::take_settled`]: called with nothing else live, it keeps the
    /// scoped path free of saved registers and stack stores.
    #[inline(always)]
    pub(super) fn take_slow(
        &self,
        size: usize,
        allocate: impl FnOnce() -> *mut u8,
        settled: impl FnOnce(&Local) -> *mut u8,
    ) -> *mut u8 {
        if !self.take_scoped(size) {
            return settled(self);
        }
        let p = allocate();
        if p.is_null() {
            self.untake_scoped(size);
        }
        p
    }

    /// [`Local::take_slow`] when it settles: reserves `size` bytes (null if the limit refuses,
    /// without running `allocate`), runs `allocate` and books what it did.
    #[inline(always)]
    pub(super) fn take_settled(&self, size: usize, allocate: impl FnOnce() -> *mut u8) -> *mut u8 {
        if !self.settle(size, 0, true) {
            return ptr::null_mut();
        }
        let p = allocate();
        self.reserved(size, !p.is_null());
        p
    }

    /// Takes `size` bytes from the thread's own window while a scope keeps it aside, charging
    /// the scope. `false` if they do not fit, and always on a thread without a scope (its own
    /// window is the hot path's, which just refused them).
    #[inline(always)]
    fn take_scoped(&self, size: usize) -> bool {
        match self.scope.get() {
            Some(usage) if self.stash.try_take(size) => {
                self.scope.set(Some(usage.charged(size)));
                true
            }
            _ => false,
        }
    }

    /// The inner allocator failed the `size` bytes [`Local::take_scoped`] took: the window and
    /// the scope get them back.
    #[cold]
    #[inline(never)]
    fn untake_scoped(&self, size: usize) {
        if let Some(usage) = self.scope.get() {
            self.scope.set(Some(usage.uncharged(size)));
        }
        self.give_slow(size);
    }

    /// The inner allocator ran for the `size` bytes [`Local::take_settled`] reserved: they are
    /// live (and the scope is charged), or the reservation goes back.
    fn reserved(&self, size: usize, succeeded: bool) {
        if !succeeded {
            return books::release(size);
        }
        if let Some(usage) = self.scope.get() {
            self.scope.set(Some(usage.charged(size)));
        }
        books::confirm(size);
        self.published_net
            .set(self.published_net.get().wrapping_add(size));
        self.published.set(true);
        self.note_peak();
    }

    /// The slow path of a free (or a realloc's shrinking) of `size` bytes that missed the hot
    /// path, and of the bytes of an allocation the inner allocator failed: back to the thread's
    /// own window if a scope keeps it aside and they fit, else settled.
    pub(super) fn give_slow(&self, size: usize) {
        if !(self.scope.get().is_some() && self.stash.try_give(size)) {
            self.settle(0, size, true);
        }
    }

    /// Publishes the own window's change and `free` bytes freed, reserves `alloc` bytes and
    /// opens the own window afresh (closed unless `rebuffer` and buffering). `false` if the
    /// reservation was refused; the change is published either way.
    fn settle(&self, alloc: usize, free: usize, rebuffer: bool) -> bool {
        self.register_exit_flush();
        let own = self.own();
        let change = own.change().wrapping_sub(free);
        let buffering = rebuffer && self.state.get() == State::Buffering;
        let settled = books::settle(own.grant(), change, alloc, buffering);
        self.published_net
            .set(self.published_net.get().wrapping_add(change));
        if change != 0 {
            self.published.set(true);
        }
        own.open(settled.window);
        settled.reserved
    }

    /// Records the current figures as peaks if they are higher.
    fn note_peak(&self) {
        books::note_peak();
        let mine = self.live();
        if mine > 0 && mine as usize > self.peak.get() {
            self.peak.set(mine as usize);
        }
    }

    /// Publishes the own window and closes it: the books are then exact as far as this thread
    /// goes, and its next call takes a new grant.
    pub(super) fn flush(&self) {
        self.settle(0, 0, false);
        self.note_peak();
    }

    /// Publishes the own window and opens a new one at once.
    pub(super) fn publish(&self) {
        self.settle(0, 0, true);
        self.note_peak();
    }

    /// The thread exits: publish, and settle every later call.
    pub(super) fn exit(&self) {
        self.flush();
        self.state.set(State::Unbuffered);
    }

    /// Selects `scope` for the thread (or none), returning the one it replaces. The exit flush
    /// is registered first, outside any scope: registering may allocate, which the scope must
    /// not be charged for.
    pub(super) fn select(&self, scope: Option<Usage>) -> Option<Usage> {
        self.register_exit_flush();
        let previous = self.scope.get();
        match (previous.is_some(), scope.is_some()) {
            (false, true) => {
                debug_assert!(self.stash.is_closed(), "no scope: nothing is kept aside");
                self.window.move_into(&self.stash);
            }
            (true, false) => {
                debug_assert!(self.window.is_closed(), "a scope: the hot window is closed");
                self.stash.move_into(&self.window);
            }
            _ => {}
        }
        self.scope.set(scope);
        previous
    }

    pub(super) fn selected(&self) -> Option<Usage> {
        self.scope.get()
    }

    /// The thread's net bytes, exact.
    pub(super) fn live(&self) -> isize {
        self.published_net.get().wrapping_add(self.own().change()) as isize
    }

    /// The thread's peak, counting its live bytes now.
    pub(super) fn peak(&self) -> usize {
        self.peak.get().max(self.live().max(0) as usize)
    }

    pub(super) fn reset_peak(&self) {
        self.peak.set(self.live().max(0) as usize);
    }

    /// The thread's net change since it last published.
    pub(super) fn unpublished(&self) -> isize {
        self.own().change() as isize
    }

    /// Whether the thread published since the last call.
    pub(super) fn take_published(&self) -> bool {
        self.published.replace(false)
    }

    /// Whether a cheap check ([`crate::budget::poll`]) should check for real now: the thread
    /// published since it last looked, or its unpublished change is half a window, or this is
    /// its `every`th call.
    pub(super) fn poll_due(&self, every: u32) -> bool {
        let published = self.take_published();
        let big = self.unpublished().unsigned_abs() >= books::window() / 2;
        let polls = self.polls.get() + 1;
        let counted = polls >= every;
        self.polls.set(if counted { 0 } else { polls });
        published || big || counted
    }
}

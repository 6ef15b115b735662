//! The hand-off of a value borrowed for a scope to the interrupt handler
//! that runs it ([`Handoff`]), and why an
//! [`InterruptTasks`](crate::executor::InterruptTasks) may be run from
//! another context.
//!
//! An interrupt handler is a function with no arguments, so what it runs
//! must be reachable from a `static`. The tasks it runs live in the
//! binary's storage (on `main`'s stack, pinned), borrowed for a lifetime
//! no `static` can name; so [`Handoff::scope`] publishes a type-erased
//! pointer to them for the length of a scope, and takes it back before the
//! scope ends, waiting for a handler that is running them.
//!
//! # Invariants
//!
//! 1. **A hook outlives its publication.** Only [`Handoff::scope`]
//!    publishes a hook (stores its address and sets `INSTALLED`). The hook
//!    is a local of that call, and the value it points at is borrowed
//!    `&mut` by it; the call withdraws the hook (invariant 2) before it
//!    returns or unwinds, so the hook and the value live, unmoved, for as
//!    long as the hook is published.
//! 2. **No run after withdrawal.** A runner sets `RUNNING` only in a
//!    compare-and-swap that sees `INSTALLED` set; withdrawal clears
//!    `INSTALLED` only in a compare-and-swap that sees `RUNNING` clear (and
//!    waits for that). The runner's clearing of `RUNNING` releases, and the
//!    withdrawal acquires, so everything a run did happens before the scope
//!    ends, and no run begins after.
//! 3. **One runner at a time.** `RUNNING` is taken by compare-and-swap, so
//!    the `&mut` a runner makes of the value is the only one in use: the
//!    scope's own code cannot reach the value, which it lent out `&mut`.
//!    A runner that finds `RUNNING` taken sets `AGAIN` instead, and the
//!    runner in charge runs once more before it lets go, so no request to
//!    run is lost.
//! 4. **Only `Send` values are handed off**, since a runner may be another
//!    thread, or an interrupt that preempts code sharing the core: the
//!    bound is on [`Handoff::scope`]. `InterruptTasks` is `Send` because
//!    each task it holds was `Send` when it was spawned (its `try_spawn`
//!    takes only `dyn Task + Send`), its kept errors are `Send`, and the
//!    rest of it is plain data and a `&'static` queue, which is `Sync`.
//!
//! What can go wrong here, and does not: a handler running tasks whose
//! storage is gone (invariants 1 and 2); two handlers polling the same
//! tasks at once (invariant 3); a task's `!Send` state reached from two
//! contexts (invariant 4).

use core::ptr;

use crate::atomic::{AtomicPtr, AtomicU8, Ordering, spin};
use crate::executor::InterruptTasks;
use crate::task::TaskOutput;
use crate::telemetry::Measure;

/// What a handler runs: an [`InterruptTasks`] and how to watch it.
pub(crate) trait Serve {
    /// Runs until nothing is ready.
    fn serve(&mut self);
}

/// The type-erased borrow a handler runs: the value's address and the
/// function that knows its type.
struct Hook {
    data: *mut (),
    run: unsafe fn(*mut ()),
}

/// A hook is published.
const INSTALLED: u8 = 1;
/// A runner is running the hook.
const RUNNING: u8 = 2;
/// A runner found it running: run once more.
const AGAIN: u8 = 4;
/// A scope is publishing its hook.
const CLAIMED: u8 = 8;

/// Another scope has its value handed off here now.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Busy;

/// The slot through which a scope lends a value to runners.
pub(crate) struct Handoff {
    state: AtomicU8,
    hook: AtomicPtr<Hook>,
}

impl Handoff {
    crate::raw::const_unless_loom! {
        pub(crate) fn new() -> Self {
            Self {
                state: AtomicU8::new(0),
                hook: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// Whether a value is handed off now.
    pub(crate) fn is_serving(&self) -> bool {
        self.state.load(Ordering::Acquire) & INSTALLED != 0
    }

    /// Runs `f` with `served` handed to [`run`](Self::run) for the length
    /// of the call, and takes it back, waiting for a run in progress,
    /// before returning or unwinding (invariants 1 and 2).
    pub(crate) fn scope<S: Serve + Send, R>(
        &self,
        served: &mut S,
        f: impl FnOnce() -> R,
    ) -> Result<R, Busy> {
        if self
            .state
            .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(Busy);
        }
        let hook = Hook {
            data: ptr::from_mut(served).cast(),
            run: run_erased::<S>,
        };
        self.hook
            .store(ptr::from_ref(&hook).cast_mut(), Ordering::Relaxed);
        // Publishes the hook: a runner's acquiring compare-and-swap sees it.
        self.state.store(INSTALLED, Ordering::Release);
        let withdraw = Withdraw(self);
        let out = f();
        drop(withdraw);
        Ok(out)
    }

    /// Clears `INSTALLED` once no run is in progress (invariant 2).
    fn withdraw(&self) {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & RUNNING != 0 {
                spin();
                state = self.state.load(Ordering::Acquire);
                continue;
            }
            match self
                .state
                .compare_exchange(state, 0, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        self.hook.store(ptr::null_mut(), Ordering::Relaxed);
    }

    /// Runs the value handed off now, if any, and again while other
    /// requests to run came meanwhile. Returns whether it ran it: `false`
    /// when nothing is handed off, or when another runner is running it
    /// (which then runs it once more for this request).
    pub(crate) fn run(&self) -> bool {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & INSTALLED == 0 {
                return false;
            }
            let (want, mine) = if state & RUNNING == 0 {
                (state | RUNNING, true)
            } else {
                (state | AGAIN, false)
            };
            match self
                .state
                .compare_exchange(state, want, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if mine => break,
                Ok(_) => return false,
                Err(now) => state = now,
            }
        }
        let mut running = Running {
            handoff: self,
            held: true,
        };
        loop {
            let hook = self.hook.load(Ordering::Relaxed);
            // SAFETY: this runner set `RUNNING` in a compare-and-swap that
            // saw `INSTALLED`, acquiring the hook's address published before
            // it; the scope that published it waits for `RUNNING` to clear
            // before it ends, so the hook is alive (invariants 1 and 2), and
            // `run` is the function made for the type of `data`.
            unsafe { ((*hook).run)((*hook).data) };
            if !running.again() {
                break;
            }
        }
        true
    }
}

impl core::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Handoff")
            .field("serving", &self.is_serving())
            .finish()
    }
}

/// Runs the value of type `S` at `data`.
///
/// # Safety
///
/// `data` is the address of a live `S` that nothing else uses until this
/// returns: a hook's, run under `RUNNING` (invariants 1 to 3).
unsafe fn run_erased<S: Serve>(data: *mut ()) {
    // SAFETY: the caller's contract: `data` points at a live `S`, and this
    // is the only reference to it in use (invariant 3).
    let served = unsafe { &mut *data.cast::<S>() };
    served.serve();
}

/// Withdraws the hook when the scope ends, by return or by unwind.
struct Withdraw<'h>(&'h Handoff);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.0.withdraw();
    }
}

/// A runner's hold on `RUNNING`, given back when it is done, or when it
/// unwinds (a task's panic must not leave the scope waiting forever).
struct Running<'h> {
    handoff: &'h Handoff,
    held: bool,
}

impl Running<'_> {
    /// Takes back an `AGAIN` if one was set (run once more: `true`), else
    /// lets go of `RUNNING` in the same compare-and-swap, so that a
    /// request made meanwhile is either seen here or finds `RUNNING`
    /// clear and runs itself (invariant 3).
    fn again(&mut self) -> bool {
        let state = &self.handoff.state;
        let mut now = state.load(Ordering::Acquire);
        loop {
            let (want, again) = if now & AGAIN != 0 {
                (now & !AGAIN, true)
            } else {
                // Releases what the run did to the scope's withdrawal
                // (invariant 2).
                (now & !RUNNING, false)
            };
            match state.compare_exchange(now, want, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.held = again;
                    return again;
                }
                Err(seen) => now = seen,
            }
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.held {
            // Unwinding out of a run: give `RUNNING` back all the same.
            self.handoff
                .state
                .fetch_and(!(RUNNING | AGAIN), Ordering::AcqRel);
        }
    }
}

// SAFETY: invariant 4: every task in `tasks` was `dyn Task + Send` when
// `InterruptTasks::try_spawn` took it; the errors kept are `O::Error: Send`;
// the measure's per-slot counters are `M::Local: Send`; the queue is a
// `&'static` of a `Sync` type; everything else is plain data.
unsafe impl<const N: usize, O, M> Send for InterruptTasks<'_, N, O, M>
where
    O: TaskOutput,
    O::Error: Send,
    M: Measure,
    M::Local: Send,
{
}

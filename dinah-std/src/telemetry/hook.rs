//! How a runtime calls its telemetry: the [`Hook`] that is always `None`
//! without the feature, the [`Probe`] that reads the clock and emits
//! events, and the rule for a user's clock, sink or observer that panics
//! (caught where it is called, held for the thread, resumed at the end of
//! the runtime's step).
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use dinah_core::TaskId;
use dinah_core::telemetry::{Sink, TraceEvent, TraceEventKind};

use super::TelemetryConfig;

// The panic a telemetry hook (a user's `Clock` or `Sink`) raised on this
// thread, held until the runtime reaches a point where it can resume it
// without leaving anything half done: see `resume_hook_panic`.
#[cfg(not(loom))]
std::thread_local! {
    static HOOK_PANIC: std::cell::Cell<Option<crate::unwind::Payload>> =
        const { std::cell::Cell::new(None) };
}
#[cfg(loom)]
loom::thread_local! {
    static HOOK_PANIC: std::cell::Cell<Option<crate::unwind::Payload>> =
        std::cell::Cell::new(None);
}

/// Runs a telemetry hook; if it panics, holds the panic for this thread
/// (the first one: a later one is dropped) and returns `None`.
pub(crate) fn guarded<R>(hook: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook)) {
        Ok(value) => Some(value),
        Err(payload) => {
            let held = HOOK_PANIC.try_with(|slot| match slot.take() {
                Some(first) => {
                    slot.set(Some(first));
                    Some(payload)
                }
                None => {
                    slot.set(Some(payload));
                    None
                }
            });
            match held {
                Ok(None) => {}
                Ok(Some(later)) => crate::unwind::drop_quietly(later),
                Err(_) => {}
            }
            None
        }
    }
}

/// Takes the panic a telemetry hook raised on this thread, if any.
pub(crate) fn take_hook_panic() -> Option<crate::unwind::Payload> {
    HOOK_PANIC.try_with(std::cell::Cell::take).ok().flatten()
}

/// Resumes the panic a telemetry hook raised on this thread, if any: called
/// by the runtime at the end of the step that ran the hook, once its own
/// state is settled, so the panic reaches the caller of that step.
pub(crate) fn resume_hook_panic() {
    if let Some(payload) = take_hook_panic() {
        std::panic::resume_unwind(payload);
    }
}

/// Runs `hooks`, a step of its own inside a longer one (a wake made during
/// a tick, say), and resumes only a panic they raised; a panic an earlier
/// hook of the longer step raised stays held for that step.
pub(crate) fn run_hooks(hooks: impl FnOnce()) {
    let scope = HookScope::enter();
    hooks();
    scope.exit();
}

/// A step of its own inside a longer one, for hooks whose panic must reach
/// the caller of this step only, and only once the step is done: entering
/// sets aside a panic held for the longer step; [`exit`](Self::exit) puts
/// it back and resumes a panic this step's hooks raised.
pub(crate) struct HookScope {
    earlier: Option<crate::unwind::Payload>,
}

impl HookScope {
    pub(crate) fn enter() -> Self {
        Self {
            earlier: take_hook_panic(),
        }
    }

    pub(crate) fn exit(self) {
        let own = take_hook_panic();
        if let Some(earlier) = self.earlier {
            // Back where it was (the slot is empty now: `own` was taken).
            let _ = HOOK_PANIC.try_with(|slot| slot.set(Some(earlier)));
        }
        if let Some(own) = own {
            std::panic::resume_unwind(own);
        }
    }
}

/// A runtime's live telemetry: the configuration, read by every hook.
///
/// The clock and the sink are the user's code. A panic in either is caught
/// where it is called, so the runtime's telemetry and its own state stay
/// consistent (the reading is taken as 0, the event is lost), and held for
/// the thread (see [`resume_hook_panic`]).
pub(crate) struct Probe {
    pub(crate) config: TelemetryConfig,
    long_poll_ns: u64,
    /// Whether any hook is the user's code (a chosen clock, a sink, an
    /// observer), whose panic must be caught and held. Without one, nothing
    /// the probe calls can panic, and the callers skip the holding.
    user_code: bool,
    /// Whether events go anywhere (a sink or an observer): without either,
    /// a poll skips making them with one test.
    listens: bool,
}

impl Probe {
    pub(crate) fn new(config: TelemetryConfig) -> Self {
        let long_poll_ns = u64::try_from(config.long_poll.as_nanos()).unwrap_or(u64::MAX);
        let listens = config.sink.is_some() || config.observer.is_some();
        let user_code = config.clock.is_some() || listens;
        Self {
            config,
            long_poll_ns,
            user_code,
            listens,
        }
    }

    /// Whether a sink or an observer hears this probe's events; when
    /// `false`, [`emit`](Self::emit) and the `observe_` calls do nothing.
    #[inline(always)]
    pub(crate) fn listens(&self) -> bool {
        self.listens
    }

    /// Whether a hook of this probe runs the user's code, which may panic
    /// (see [`resume_hook_panic`]). When it is `false`, no panic is ever
    /// held for this probe's hooks.
    pub(crate) fn runs_user_code(&self) -> bool {
        self.user_code
    }

    /// Now, in nanoseconds of the configured clock (0 if the clock
    /// panicked; the panic is held for the thread).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        let Some(clock) = &self.config.clock else {
            return dinah_core::telemetry::Clock::now(&self.config.std_clock);
        };
        let Some((ticks, per_second)) = guarded(|| (clock.now(), clock.ticks_per_second())) else {
            return 0;
        };
        if per_second == 1_000_000_000 {
            return ticks;
        }
        let per_second = u128::from(per_second.max(1));
        u64::try_from(u128::from(ticks) * 1_000_000_000 / per_second).unwrap_or(u64::MAX)
    }

    /// Sends one event to the configured sink, if any (lost if the sink
    /// panics; the panic is held for the thread).
    #[inline]
    pub(crate) fn emit(&self, task: TaskId, kind: TraceEventKind, at: u64) {
        if let Some(sink) = &self.config.sink {
            Self::record(&**sink, TraceEvent::stamped(task, kind, at));
        }
    }

    /// [`emit`](Self::emit)'s call into the sink, kept out of line.
    #[inline(never)]
    fn record(sink: &(dyn Sink + Send + Sync), event: TraceEvent) {
        guarded(|| sink.record(event));
    }

    /// Tells the configured sink, if any, that `task` is named `name`.
    pub(crate) fn name_task(&self, task: TaskId, name: &'static str) {
        if let Some(sink) = &self.config.sink {
            guarded(|| sink.name_task(task, name));
        }
    }

    /// Tells the configured observer, if any, that the poll of `task`
    /// about to begin waited `nanos` (see
    /// [`PollObserver::poll_waited`](dinah_core::telemetry::PollObserver::poll_waited)),
    /// then that it begins. A panic in the observer is held for the thread.
    #[inline]
    pub(crate) fn observe_start(&self, task: TaskId, waited: Option<(bool, u64)>) {
        if let Some(observer) = &self.config.observer {
            guarded(|| {
                if let Some((first, nanos)) = waited {
                    observer.poll_waited(task, first, nanos);
                }
                observer.poll_started(task);
            });
        }
    }

    /// Tells the configured observer, if any, that the poll of `task` ended.
    #[inline]
    pub(crate) fn observe_end(&self, task: TaskId) {
        if let Some(observer) = &self.config.observer {
            guarded(|| observer.poll_ended(task));
        }
    }

    pub(crate) fn is_long(&self, nanos: u64) -> bool {
        nanos >= self.long_poll_ns
    }
}

/// Nanoseconds to whole microseconds.
pub(crate) const fn micros(nanos: u64) -> u64 {
    nanos / 1_000
}

/// A stamp kept in an atomic: 0 is "none", so a time `t` is stored as its
/// complement `!t`. A time that saturated to `u64::MAX` (a timer due
/// `Duration::MAX` from now) is kept as `u64::MAX - 1`, so no time ever
/// reads as none: a stamp is unset only when it was cleared.
pub(crate) struct Stamp(AtomicU64);

impl Stamp {
    pub(crate) const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    pub(crate) fn set(&self, at: u64) {
        self.0.store(stamped(at), Ordering::Relaxed);
    }

    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> Option<u64> {
        unstamped(self.0.load(Ordering::Relaxed))
    }
}

/// A time as a [`Stamp`] stores it: never 0 (`u64::MAX`, a saturated
/// time, is taken as `u64::MAX - 1`, which is as far off).
#[inline(always)]
pub(crate) fn stamped(at: u64) -> u64 {
    (!at).max(1)
}

/// A stored stamp's time, or `None` for 0.
#[inline(always)]
pub(crate) const fn unstamped(stored: u64) -> Option<u64> {
    if stored == 0 { None } else { Some(!stored) }
}

/// A runtime's telemetry hook: `Some` when it was built with telemetry.
///
/// Without the `telemetry` feature it holds nothing and [`get`](Self::get)
/// is a constant `None`, so every telemetry branch compiles away and the
/// runtime runs exactly the code it would without telemetry (the stand-in
/// module habit of tokio's metrics).
#[cfg(feature = "telemetry")]
#[derive(Clone)]
pub(crate) struct Hook<T>(Option<T>);

#[cfg(feature = "telemetry")]
impl<T> Hook<T> {
    pub(crate) fn new(value: Option<T>) -> Self {
        Self(value)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }
}

/// Without the `telemetry` feature: never anything.
#[cfg(not(feature = "telemetry"))]
#[derive(Clone)]
pub(crate) struct Hook<T>(std::marker::PhantomData<T>);

#[cfg(not(feature = "telemetry"))]
impl<T> Hook<T> {
    pub(crate) fn new(value: Option<T>) -> Self {
        drop(value);
        Self(std::marker::PhantomData)
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&T> {
        None
    }
}

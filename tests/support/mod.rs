//! Helpers shared by the integration tests (a module, not a test target).
#![allow(dead_code)]

use std::panic;
use std::sync::Once;

use dinah::BoundedQueue;
use dinah::queue::{FifoQueue, QueuePushError};

pub(crate) mod chrome;
pub(crate) mod models;
#[allow(dead_code)]
pub(crate) mod sync_model;
#[allow(dead_code)]
pub(crate) mod temp_dir;
#[allow(dead_code)]
pub(crate) mod toolbox_model;
#[allow(dead_code)]
pub(crate) mod virtual_time;
#[allow(dead_code)]
pub(crate) mod wait_model;
#[allow(dead_code)]
pub(crate) mod workers;

/// A `BoundedQueue` with hooks: `len()` answers what `reported_len` says
/// given the true length, and `before_pop` sees the number of each `pop`
/// call (1, 2, …) before it removes anything, so it can panic there.
pub(crate) struct HookedQueue<T> {
    pub(crate) inner: BoundedQueue<T>,
    pub(crate) reported_len: fn(actual: usize) -> usize,
    pub(crate) before_pop: fn(call: usize),
    pops: usize,
}

impl<T> HookedQueue<T> {
    /// A queue holding `items`, with hooks that change nothing.
    pub(crate) fn new(items: impl IntoIterator<Item = T>) -> Self {
        let items: Vec<T> = items.into_iter().collect();
        let mut inner = BoundedQueue::new(items.len().max(1)).unwrap();
        for item in items {
            inner
                .try_push(item)
                .unwrap_or_else(|_| unreachable!("sized to fit"));
        }
        Self {
            inner,
            reported_len: |actual| actual,
            before_pop: |_| {},
            pops: 0,
        }
    }
}

impl<T> FifoQueue for HookedQueue<T> {
    type Item = T;

    fn try_push(&mut self, item: T) -> Result<(), QueuePushError<T>> {
        self.inner.try_push(item)
    }

    fn pop(&mut self) -> Option<T> {
        self.pops += 1;
        (self.before_pop)(self.pops);
        self.inner.pop()
    }

    fn len(&self) -> usize {
        (self.reported_len)(self.inner.len())
    }

    fn capacity(&self) -> usize {
        self.inner.capacity()
    }
}

/// Moves `value` to the heap for the rest of the process, kept reachable
/// from a `static` so that neither Miri nor LeakSanitizer counts it as a
/// leak (what a waker points into must be `'static`).
pub(crate) fn keep_forever<T: Send + Sync + 'static>(value: T) -> &'static T {
    static KEPT: std::sync::Mutex<Vec<&'static (dyn std::any::Any + Send + Sync)>> =
        std::sync::Mutex::new(Vec::new());
    let kept: &'static T = Box::leak(Box::new(value));
    KEPT.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(kept);
    kept
}

/// The text of a panic payload, if it is a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

/// Keeps panics whose message contains one of `markers` (or of the markers
/// of any earlier call in this process) out of the test output; every other
/// panic is reported as usual, and so is a failed equality assertion or
/// unwrap, even one whose values mention a marker.
pub(crate) fn quiet_panics_containing(markers: &'static [&'static str]) {
    static HOOK: Once = Once::new();
    static QUIET: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());
    QUIET
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend_from_slice(markers);
    HOOK.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let message = panic_message(info.payload()).unwrap_or_default();
            let unexpected =
                message.starts_with("assertion `left") || message.starts_with("called `");
            let quiet = !unexpected
                && QUIET
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .iter()
                    .any(|marker| message.contains(marker));
            if !quiet {
                default(info);
            }
        }));
    });
}

/// Instantiates a contract suite: for every `module: Implementation` pair,
/// a module holding one `#[test]` per name in the list, each calling the
/// generic function of that name with the implementation.
///
/// ```text
/// contract!([task_queue: Fixed, bounded_queue: Bounded], [starts_empty, fifo]);
/// ```
#[allow(unused_macros)]
macro_rules! contract {
    ([$($module:ident: $implementation:ty),+ $(,)?], $tests:tt) => {
        $(
            mod $module {
                use super::*;
                $crate::support::contract!(@tests $implementation, $tests);
            }
        )+
    };
    (@tests $implementation:ty, [$($test:ident),+ $(,)?]) => {
        $(
            #[test]
            fn $test() {
                super::$test::<$implementation>();
            }
        )+
    };
}
#[allow(unused_imports)]
pub(crate) use contract;

/// Runs `check` on `cases` random byte strings of up to `max_len` bytes
/// (fewer cases under Miri), shrinking any failure to a minimal input.
pub(crate) fn for_random_bytes(cases: u32, max_len: usize, check: impl Fn(&[u8])) {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let cases = if cfg!(miri) { 4 } else { cases };
    let mut runner = TestRunner::new(Config::with_cases(cases));
    let outcome = runner.run(
        &proptest::collection::vec(any::<u8>(), 0..max_len),
        |bytes| {
            check(&bytes);
            Ok(())
        },
    );
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}

/// A future woken from another thread during its first poll (the wake
/// lands during that poll); ready at its `ready_at`-th poll, returning how
/// many polls it took.
pub(crate) struct WokenElsewhere {
    pub(crate) polls: usize,
    pub(crate) ready_at: usize,
}

impl std::future::Future for WokenElsewhere {
    type Output = usize;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<usize> {
        self.polls += 1;
        if self.polls == 1 {
            let waker = cx.waker().clone();
            std::thread::spawn(move || waker.wake()).join().unwrap();
        }
        if self.polls >= self.ready_at {
            std::task::Poll::Ready(self.polls)
        } else {
            std::task::Poll::Pending
        }
    }
}

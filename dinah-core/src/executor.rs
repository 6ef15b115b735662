//! [`Executor`]: runs one task on the caller's thread.
#![forbid(unsafe_code)]

/// Runs one already-selected task, now, on the caller's thread.
///
/// # Guarantees
///
/// - The task is called exactly once, before [`run`](Self::run) returns.
/// - Its return value comes back unchanged: a `Result` stays the task's own
///   `Result`, its error untouched.
///
/// # What it does not do
///
/// It decides no order or priority, keeps no queue and starts no thread.
///
/// # Panics
///
/// A panicking task unwinds straight through `run` to the caller. The executor
/// catches nothing and converts nothing into an error.
///
/// ```
/// use dinah::Executor;
///
/// assert_eq!(Executor::run(|| 6 * 7), 42);
/// let failed: Result<(), &str> = Executor::run(|| Err("no"));
/// assert_eq!(failed, Err("no"));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Executor;

impl Executor {
    /// Calls `task` once and returns what it returned.
    #[inline]
    pub fn run<F, R>(task: F) -> R
    where
        F: FnOnce() -> R,
    {
        task()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::Cell;
    use std::panic;

    #[test]
    fn returns_the_value_and_runs_exactly_once() {
        let calls = Cell::new(0);
        let value = Executor::run(|| {
            calls.set(calls.get() + 1);
            "done"
        });
        assert_eq!((value, calls.get()), ("done", 1));
    }

    #[test]
    fn task_errors_come_back_as_they_were() {
        #[derive(Debug, PartialEq)]
        struct Refused(u8);
        let result: Result<u8, Refused> = Executor::run(|| Err(Refused(3)));
        assert_eq!(result, Err(Refused(3)));
    }

    #[test]
    fn a_panic_unwinds_to_the_caller_with_its_payload() {
        let payload = panic::catch_unwind(|| Executor::run(|| panic!("task exploded")))
            .expect_err("the panic must reach the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"task exploded"));
    }
}

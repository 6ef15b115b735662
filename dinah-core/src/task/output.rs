//! [`TaskOutput`]: what a task may return, and [`Never`], the `!` of a
//! task that never ends.
#![forbid(unsafe_code)]

use core::convert::Infallible;

/// What a task may return: `()` for a task that cannot fail, `!` for one
/// that never ends (`async { loop { … } }`), or `Result<T, E>` for one whose
/// error the executor keeps as its [`TaskFailure`](crate::TaskFailure).
///
/// The heap-free [`AsyncExecutor`](crate::AsyncExecutor) keeps only the
/// error and drops a value; `dinah-std`'s `LocalExecutor` hands the whole
/// output to the task's join handle and counts an `Err` as a failure.
///
/// ```
/// use dinah::TaskOutput;
///
/// fn error_of<O: TaskOutput<Error = core::convert::Infallible>>(_: impl FnOnce() -> O) {}
/// error_of(|| ());
/// error_of(|| -> Result<u8, core::convert::Infallible> { Ok(1) });
/// error_of(|| loop {}); // `!`: never returns, cannot fail
/// ```
pub trait TaskOutput {
    /// What a task that succeeded hands back (`()` for `()`).
    type Value;
    /// The error a failed task leaves behind (`Infallible` for `()`).
    type Error;

    /// The outcome, as a `Result`.
    ///
    /// # Errors
    ///
    /// The task's own error, unchanged.
    fn into_result(self) -> Result<Self::Value, Self::Error>;

    /// Whether the task failed (returned an error), without taking the
    /// output apart.
    fn is_failure(&self) -> bool;
}

impl TaskOutput for () {
    type Value = ();
    type Error = Infallible;

    fn into_result(self) -> Result<(), Infallible> {
        Ok(())
    }

    fn is_failure(&self) -> bool {
        false
    }
}

/// Names `!` on stable Rust: the output type of a `fn() -> !`.
pub trait Returns {
    /// What the function returns.
    type Output;
}

impl<T> Returns for fn() -> T {
    type Output = T;
}

/// `!`, the type of a value that never exists: what a task that never ends
/// returns.
pub type Never = <fn() -> ! as Returns>::Output;

impl TaskOutput for Never {
    type Value = Never;
    type Error = Infallible;

    fn into_result(self) -> Result<Never, Infallible> {
        match self {}
    }

    fn is_failure(&self) -> bool {
        match *self {}
    }
}

impl<T, E> TaskOutput for Result<T, E> {
    type Value = T;
    type Error = E;

    fn into_result(self) -> Self {
        self
    }

    fn is_failure(&self) -> bool {
        self.is_err()
    }
}

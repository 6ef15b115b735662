//! [`TaskFailure`]: a task's own error, labelled with how the task failed.
#![forbid(unsafe_code)]

use core::fmt;

/// How a task failed.
///
/// Non-exhaustive: later releases may add kinds, so match with a wildcard arm.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum TaskFailureKind {
    /// The task ran to its end and returned an error value.
    ReturnedError,
    /// The task panicked. Only an executor that catches panics at the poll
    /// boundary (`dinah-std`'s `LocalExecutor`) reports this; the heap-free
    /// executors let a panic unwind to their caller.
    Panicked,
    /// The task was cancelled (or its executor shut down) before it finished;
    /// its future was dropped.
    Cancelled,
}

/// A task-level failure that keeps the task's original error.
///
/// It wraps the concrete error `E` without flattening it into
/// [`CoreError`](crate::config::CoreError) and labels it with a [`TaskFailureKind`].
/// The executor and scheduler never build one for you: they hand back the
/// task's `Result` unchanged, and a caller opts in with
/// [`TaskFailure::returned`] when it wants a stable category.
///
/// # What it is not
///
/// Not a scheduler rejection (a full queue is
/// [`QueuePushError`](crate::queue::QueuePushError)), not a cancellation signal, and
/// not a panic wrapper: panics unwind and are never caught and relabelled as
/// errors.
///
/// ```
/// use dinah::task::{TaskFailure, TaskFailureKind};
///
/// let failure = TaskFailure::returned("disk full");
/// assert_eq!(failure.kind(), TaskFailureKind::ReturnedError);
/// assert_eq!(failure.to_string(), "task returned an error: disk full");
///
/// let coded = failure.map_error(|message| message.len());
/// assert_eq!((coded.kind(), coded.into_error()), (TaskFailureKind::ReturnedError, 9));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct TaskFailure<E> {
    kind: TaskFailureKind,
    error: E,
}

impl<E> TaskFailure<E> {
    /// Wraps an error that a task returned.
    pub const fn returned(error: E) -> Self {
        Self {
            kind: TaskFailureKind::ReturnedError,
            error,
        }
    }

    /// How the task failed.
    #[must_use]
    pub const fn kind(&self) -> TaskFailureKind {
        self.kind
    }

    /// Borrows the original error.
    #[must_use]
    pub const fn error(&self) -> &E {
        &self.error
    }

    /// Gives back the original error, dropping the label.
    #[must_use]
    pub fn into_error(self) -> E {
        self.error
    }

    /// Converts the error and keeps the kind.
    #[must_use]
    pub fn map_error<F, U>(self, map: F) -> TaskFailure<U>
    where
        F: FnOnce(E) -> U,
    {
        TaskFailure {
            kind: self.kind,
            error: map(self.error),
        }
    }
}

impl<E> From<E> for TaskFailure<E> {
    /// Same as [`TaskFailure::returned`], so `?` can label a task's error.
    fn from(error: E) -> Self {
        Self::returned(error)
    }
}

impl fmt::Display for TaskFailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ReturnedError => f.write_str("task returned an error"),
            Self::Panicked => f.write_str("task panicked"),
            Self::Cancelled => f.write_str("task was cancelled"),
        }
    }
}

impl<E: fmt::Display> fmt::Display for TaskFailure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.error)
    }
}

impl<E: core::error::Error + 'static> core::error::Error for TaskFailure<E> {
    /// The original error is the source.
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::error::Error as _;
    use std::string::{String, ToString};

    #[derive(Debug, PartialEq)]
    struct Timeout {
        after_ms: u32,
    }

    impl fmt::Display for Timeout {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "timed out after {} ms", self.after_ms)
        }
    }

    impl core::error::Error for Timeout {}

    #[test]
    fn keeps_the_original_error_and_its_kind() {
        let failure = TaskFailure::returned(Timeout { after_ms: 5 });
        assert_eq!(failure.kind(), TaskFailureKind::ReturnedError);
        assert_eq!(failure.error(), &Timeout { after_ms: 5 });
        assert_eq!(failure.into_error(), Timeout { after_ms: 5 });
    }

    #[test]
    fn mapping_changes_the_error_and_keeps_the_kind() {
        let mapped = TaskFailure::returned(Timeout { after_ms: 7 }).map_error(|t| t.after_ms * 2);
        assert_eq!(mapped.kind(), TaskFailureKind::ReturnedError);
        assert_eq!(*mapped.error(), 14);
    }

    #[test]
    fn display_and_source_expose_the_task_error() {
        let failure = TaskFailure::returned(Timeout { after_ms: 3 });
        assert_eq!(
            failure.to_string(),
            "task returned an error: timed out after 3 ms"
        );
        let source = failure.source().expect("the task error is the source");
        assert_eq!(source.to_string(), "timed out after 3 ms");
    }

    #[test]
    fn question_mark_labels_a_returned_error() {
        fn task() -> Result<(), TaskFailure<String>> {
            Err(String::from("bad input"))?;
            Ok(())
        }
        let failure = task().unwrap_err();
        assert_eq!(failure.kind(), TaskFailureKind::ReturnedError);
        assert_eq!(failure.error(), "bad input");
    }
}

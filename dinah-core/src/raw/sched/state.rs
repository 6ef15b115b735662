//! [`TaskState`]: the observed lifecycle of one task, with checked transitions.
#![forbid(unsafe_code)]

use core::fmt;

/// Where one task is in its lifecycle.
///
/// The allowed transitions are closed:
///
/// | from | to | meaning |
/// | --- | --- | --- |
/// | `Pending` | `Running` | an executor claimed the task and began it |
/// | `Pending` | `Cancelled` | the task was prevented from starting |
/// | `Running` | `Completed` | the task returned successfully |
/// | `Running` | `Failed` | the task returned an error |
/// | `Running` | `Cancelled` | the running task observed and acknowledged cancellation |
///
/// Everything else is refused, including a transition to the same state and
/// any transition out of a terminal state (`Completed`, `Failed`,
/// `Cancelled`).
///
/// # What it does not do
///
/// It is a plain value. It is not a task registry, it does not synchronize,
/// and it is not updated by the executor or scheduler: the caller drives it.
/// Code that shares one state between threads must serialize the updates
/// itself. A cancellation *request* is not a transition: a running task stays
/// `Running` until it acknowledges the request. It carries no result, error,
/// timestamp or worker.
///
/// ```
/// use dinah::TaskState;
///
/// let mut state = TaskState::Pending;
/// state.transition_to(TaskState::Running)?;
/// state.transition_to(TaskState::Completed)?;
///
/// let refused = state.transition_to(TaskState::Running).unwrap_err();
/// assert_eq!((refused.from(), refused.to()), (TaskState::Completed, TaskState::Running));
/// assert_eq!(state, TaskState::Completed);
/// # Ok::<(), dinah::task::InvalidTaskTransition>(())
/// ```
///
/// Its discriminants are 1 to 5, in lifecycle order. A task's state word
/// keeps the state in bits of its own (see [`Word::state`](super::Word::state),
/// which is `None` for a vacant cell).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum TaskState {
    /// Accepted and eligible to run, not yet started.
    Pending = 1,
    /// Execution has begun.
    Running = 2,
    /// Returned successfully. Terminal.
    Completed = 3,
    /// Returned an error. Terminal.
    Failed = 4,
    /// Prevented from starting, or stopped after acknowledging cancellation. Terminal.
    Cancelled = 5,
}

impl TaskState {
    /// Every state, in lifecycle order.
    pub const ALL: [Self; 5] = [
        Self::Pending,
        Self::Running,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
    ];

    /// Whether the lifecycle allows a transition from `self` to `next`. Pure.
    #[must_use]
    pub const fn can_transition_to(self, next: Self) -> bool {
        matches!(
            (self, next),
            (Self::Pending, Self::Running)
                | (Self::Pending, Self::Cancelled)
                | (Self::Running, Self::Completed)
                | (Self::Running, Self::Failed)
                | (Self::Running, Self::Cancelled)
        )
    }

    /// Whether the state is terminal: `Completed`, `Failed` or `Cancelled`.
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }

    /// Moves to `next` if the lifecycle allows it.
    ///
    /// # Errors
    ///
    /// Returns [`InvalidTaskTransition`] carrying both states, and leaves
    /// `self` unchanged, when the transition is not allowed.
    pub fn transition_to(&mut self, next: Self) -> Result<(), InvalidTaskTransition> {
        if self.can_transition_to(next) {
            *self = next;
            Ok(())
        } else {
            Err(InvalidTaskTransition {
                from: *self,
                to: next,
            })
        }
    }
}

/// A [`TaskState`] transition that the lifecycle refused.
///
/// Keeps both ends for diagnostics. The state it came from was left unchanged.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct InvalidTaskTransition {
    from: TaskState,
    to: TaskState,
}

impl InvalidTaskTransition {
    /// The state the task was in, and still is.
    #[must_use]
    pub const fn from(&self) -> TaskState {
        self.from
    }

    /// The state that was refused.
    #[must_use]
    pub const fn to(&self) -> TaskState {
        self.to
    }
}

impl fmt::Display for InvalidTaskTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task state cannot go from {:?} to {:?}",
            self.from, self.to
        )
    }
}

impl core::error::Error for InvalidTaskTransition {}

#[cfg(test)]
mod tests {
    use super::TaskState::{self, *};
    use std::string::ToString;

    const ALLOWED: [(TaskState, TaskState); 5] = [
        (Pending, Running),
        (Pending, Cancelled),
        (Running, Completed),
        (Running, Failed),
        (Running, Cancelled),
    ];

    #[test]
    fn all_25_pairs_follow_the_matrix() {
        let mut checked = 0;
        for from in TaskState::ALL {
            for to in TaskState::ALL {
                let expected = ALLOWED.contains(&(from, to));
                assert_eq!(from.can_transition_to(to), expected, "{from:?} -> {to:?}");

                let mut state = from;
                let result = state.transition_to(to);
                if expected {
                    assert_eq!(result, Ok(()));
                    assert_eq!(state, to);
                } else {
                    let error = result.unwrap_err();
                    assert_eq!((error.from(), error.to()), (from, to));
                    assert_eq!(state, from, "a refused transition leaves the state alone");
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 25);
    }

    #[test]
    fn self_transitions_are_refused() {
        for state in TaskState::ALL {
            assert!(!state.can_transition_to(state));
        }
    }

    #[test]
    fn terminal_states_never_move_again() {
        for state in TaskState::ALL {
            let terminal = matches!(state, Completed | Failed | Cancelled);
            assert_eq!(state.is_terminal(), terminal);
            if terminal {
                assert!(
                    TaskState::ALL
                        .iter()
                        .all(|&next| !state.can_transition_to(next))
                );
            }
        }
    }

    #[test]
    fn the_error_names_both_states() {
        let mut state = Failed;
        let error = state.transition_to(Pending).unwrap_err();
        assert_eq!(
            error.to_string(),
            "task state cannot go from Failed to Pending"
        );
    }
}

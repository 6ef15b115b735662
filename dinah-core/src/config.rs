//! Core configuration and the lifecycle of long-lived runtime resources.
//!
//! [`CoreConfig`] validates its values once, at construction, so code holding
//! one never re-checks them. [`LifecycleState`] tracks a resource that lives
//! across many tasks (a runtime, a worker set); it is deliberately separate
//! from [`TaskState`](crate::TaskState), which tracks one task.
#![forbid(unsafe_code)]

use core::fmt;
use core::num::NonZeroUsize;

/// The core's error for configuration and resource lifecycle.
///
/// Task-level failures never use this type: they stay in the task's own error
/// type, optionally wrapped in [`TaskFailure`](crate::TaskFailure).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum CoreError {
    /// A worker limit of zero was given where at least one worker is needed.
    ZeroMaxWorkers,
    /// A [`LifecycleState`] change that the lifecycle does not allow.
    InvalidLifecycleTransition {
        /// The state the resource was in, and still is.
        from: LifecycleState,
        /// The state that was refused.
        to: LifecycleState,
    },
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroMaxWorkers => f.write_str("max_workers must be at least 1"),
            Self::InvalidLifecycleTransition { from, to } => {
                write!(f, "lifecycle cannot go from {from:?} to {to:?}")
            }
        }
    }
}

impl core::error::Error for CoreError {}

/// Validated configuration for a runtime.
///
/// Guarantees `max_workers() >= 1`. It is plain data: holding a `CoreConfig`
/// does not start workers, and nothing in the core reads it behind the
/// caller's back.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CoreConfig {
    max_workers: NonZeroUsize,
}

impl CoreConfig {
    /// Builds a configuration allowing at most `max_workers` concurrent workers.
    ///
    /// # Errors
    ///
    /// Returns [`CoreError::ZeroMaxWorkers`] when `max_workers` is zero.
    ///
    /// ```
    /// use dinah::CoreConfig;
    /// use dinah::config::CoreError;
    ///
    /// assert_eq!(CoreConfig::new(4).unwrap().max_workers().get(), 4);
    /// assert_eq!(CoreConfig::new(0), Err(CoreError::ZeroMaxWorkers));
    /// ```
    pub const fn new(max_workers: usize) -> Result<Self, CoreError> {
        match NonZeroUsize::new(max_workers) {
            Some(max_workers) => Ok(Self { max_workers }),
            None => Err(CoreError::ZeroMaxWorkers),
        }
    }

    /// The worker limit, never zero.
    #[must_use]
    pub const fn max_workers(&self) -> NonZeroUsize {
        self.max_workers
    }
}

/// The lifecycle of a long-lived runtime resource.
///
/// The allowed changes are `Created → Running`, `Created → Stopped` (never
/// started), `Running → Stopping` and `Stopping → Stopped`. Every other change,
/// including a change to the same state, is refused. `Stopped` is terminal.
///
/// This is a value: it does not synchronize, and a rejected change leaves it
/// as it was.
///
/// ```
/// use dinah::config::LifecycleState;
///
/// let mut state = LifecycleState::Created;
/// state.transition_to(LifecycleState::Running).unwrap();
/// assert!(state.transition_to(LifecycleState::Created).is_err());
/// assert_eq!(state, LifecycleState::Running);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LifecycleState {
    /// Built, not yet started.
    Created,
    /// Started and accepting work.
    Running,
    /// Shutting down: no new work, existing work finishing.
    Stopping,
    /// Finished. Terminal.
    Stopped,
}

impl LifecycleState {
    /// Every state, in lifecycle order.
    pub const ALL: [Self; 4] = [Self::Created, Self::Running, Self::Stopping, Self::Stopped];

    /// Whether the lifecycle allows a change from `self` to `next`. Pure.
    #[must_use]
    pub const fn can_transition_to(self, next: Self) -> bool {
        matches!(
            (self, next),
            (Self::Created, Self::Running)
                | (Self::Created, Self::Stopped)
                | (Self::Running, Self::Stopping)
                | (Self::Stopping, Self::Stopped)
        )
    }

    /// Whether no change out of this state is allowed (`Stopped`).
    #[must_use]
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Stopped)
    }

    /// Moves to `next` if the lifecycle allows it.
    ///
    /// # Errors
    ///
    /// Returns [`CoreError::InvalidLifecycleTransition`] with both states and
    /// leaves `self` unchanged when the change is not allowed.
    pub fn transition_to(&mut self, next: Self) -> Result<(), CoreError> {
        if self.can_transition_to(next) {
            *self = next;
            Ok(())
        } else {
            Err(CoreError::InvalidLifecycleTransition {
                from: *self,
                to: next,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    #[test]
    fn config_rejects_zero_and_keeps_valid_limits() {
        assert_eq!(CoreConfig::new(0), Err(CoreError::ZeroMaxWorkers));
        assert_eq!(CoreConfig::new(1).unwrap().max_workers().get(), 1);
        assert_eq!(
            CoreConfig::new(usize::MAX).unwrap().max_workers().get(),
            usize::MAX
        );
    }

    #[test]
    fn lifecycle_allows_exactly_four_changes() {
        use LifecycleState::*;
        let allowed = [
            (Created, Running),
            (Created, Stopped),
            (Running, Stopping),
            (Stopping, Stopped),
        ];
        for from in LifecycleState::ALL {
            for to in LifecycleState::ALL {
                let expected = allowed.contains(&(from, to));
                assert_eq!(from.can_transition_to(to), expected, "{from:?} -> {to:?}");
                let mut state = from;
                match state.transition_to(to) {
                    Ok(()) => {
                        assert!(expected);
                        assert_eq!(state, to);
                    }
                    Err(error) => {
                        assert!(!expected);
                        assert_eq!(error, CoreError::InvalidLifecycleTransition { from, to });
                        assert_eq!(state, from, "a refused change leaves the state alone");
                    }
                }
            }
        }
        assert!(Stopped.is_terminal());
        assert!(!Created.is_terminal() && !Running.is_terminal() && !Stopping.is_terminal());
    }

    #[test]
    fn errors_say_what_went_wrong() {
        assert_eq!(
            CoreError::ZeroMaxWorkers.to_string(),
            "max_workers must be at least 1"
        );
        let error = CoreError::InvalidLifecycleTransition {
            from: LifecycleState::Stopped,
            to: LifecycleState::Running,
        };
        assert_eq!(
            error.to_string(),
            "lifecycle cannot go from Stopped to Running"
        );
    }
}

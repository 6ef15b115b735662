//! [`SharedOnceCell`]: a value set once, by the first task whose async
//! initialization finishes, that every task then reads.
#![forbid(unsafe_code)]

use std::fmt;
use std::future::Future;
use std::sync::OnceLock;

use super::SharedSemaphore;

/// A value set at most once, by an async initializer that one task at a
/// time runs; every task then reads it without waiting. As tokio's
/// `OnceCell`.
///
/// ```
/// use dinah::LocalExecutor;
/// use dinah::sync::SharedOnceCell;
///
/// static CONFIG: SharedOnceCell<String> = SharedOnceCell::new();
///
/// let executor = LocalExecutor::new();
/// let port = executor.block_on(async {
///     let config = CONFIG
///         .get_or_init(|| async { String::from("port=8080") })
///         .await;
///     config.trim_start_matches("port=").parse::<u16>()
/// });
/// assert_eq!(port, Ok(8080));
/// assert_eq!(CONFIG.get().map(String::as_str), Some("port=8080"));
/// ```
///
/// # Guarantees
///
/// - Initializers run one at a time, first come, first served (a
///   semaphore of one permit): while one runs, later callers wait and then
///   read what it set, without running their own.
/// - An initializer that fails, panics or is dropped midway sets nothing,
///   and the next caller in line runs its own.
/// - Once set, the value never changes; [`get`](Self::get) reads it with
///   no lock.
///
/// # What it does not do
///
/// It does not time out an initializer that never finishes: later callers
/// wait for it.
pub struct SharedOnceCell<T> {
    value: OnceLock<T>,
    /// The turn to initialize, made at the first initialization (so that
    /// `new` can be `const`).
    init: OnceLock<SharedSemaphore>,
}

impl<T> SharedOnceCell<T> {
    /// An empty cell; `const`, so it can be a `static`.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            value: OnceLock::new(),
            init: OnceLock::new(),
        }
    }

    /// A cell set to `value`.
    pub fn new_with(value: T) -> Self {
        let cell = Self::new();
        let _ = cell.value.set(value);
        cell
    }

    /// The value, once set.
    #[must_use]
    pub fn get(&self) -> Option<&T> {
        self.value.get()
    }

    /// Whether it is set.
    #[must_use]
    pub fn initialized(&self) -> bool {
        self.value.get().is_some()
    }

    /// Sets it to `value` unless it is set or being set.
    ///
    /// # Errors
    ///
    /// `Err(value)`, handed back, when it was set or an initializer runs.
    pub fn set(&self, value: T) -> Result<(), T> {
        let Ok(_turn) = self.turn().try_acquire() else {
            return Err(value);
        };
        self.value.set(value)
    }

    /// The value, after running `init` to set it if nobody has.
    pub async fn get_or_init<F, Fut>(&self, init: F) -> &T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        match self
            .get_or_try_init(|| async { Ok::<T, std::convert::Infallible>(init().await) })
            .await
        {
            Ok(value) => value,
            Err(never) => match never {},
        }
    }

    /// The value, after running `init` to set it if nobody has; an error
    /// from `init` sets nothing and is returned (the next caller tries its
    /// own).
    ///
    /// # Errors
    ///
    /// What `init` returned.
    pub async fn get_or_try_init<E, F, Fut>(&self, init: F) -> Result<&T, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        if let Some(value) = self.value.get() {
            return Ok(value);
        }
        // Never closed, and its line grows: a turn is never refused.
        let _turn = self.turn().acquire().await;
        if let Some(value) = self.value.get() {
            return Ok(value);
        }
        let value = init().await?;
        Ok(self.value.get_or_init(|| value))
    }

    fn turn(&self) -> &SharedSemaphore {
        self.init.get_or_init(|| SharedSemaphore::new(1))
    }

    /// The value, out of the cell.
    pub fn into_inner(self) -> Option<T> {
        self.value.into_inner()
    }

    /// The value, taken out; the cell is empty after.
    pub fn take(&mut self) -> Option<T> {
        self.value.take()
    }
}

impl<T> Default for SharedOnceCell<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for SharedOnceCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedOnceCell")
            .field("value", &self.value.get())
            .finish()
    }
}

//! [`ChannelFigures`] and [`SemaphoreFigures`]: occupancy, read as
//! telemetry.
#![forbid(unsafe_code)]

/// What a channel holds and who waits on it, read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChannelFigures {
    /// The name it was given, if any.
    pub name: Option<&'static str>,
    /// Values held now.
    pub len: usize,
    /// Values it can hold.
    pub capacity: usize,
    /// The most values ever held at once.
    pub high_water: usize,
    /// Senders waiting for a slot now.
    pub waiting: u32,
    /// The most senders ever waiting at once.
    pub peak_waiting: u32,
    /// How long the sender at the head of the line has waited, in
    /// microseconds; `None` when nobody waits or the channel has no clock
    /// (the core's).
    pub longest_wait_micros: Option<u64>,
    /// Values sent.
    pub sent: u64,
    /// Values received.
    pub received: u64,
    /// `try_send`s refused because it was full or others waited.
    pub refused: u64,
    /// Whether it is closed.
    pub closed: bool,
}

/// A semaphore's free permits and who waits for them, read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreFigures {
    /// The name it was given, if any.
    pub name: Option<&'static str>,
    /// Permits free now.
    pub available: u32,
    /// Tasks waiting for permits now.
    pub waiting: u32,
    /// The most tasks ever waiting at once.
    pub peak_waiting: u32,
    /// How long the task at the head of the line has waited, in
    /// microseconds; `None` when nobody waits or there is no clock.
    pub longest_wait_micros: Option<u64>,
    /// Acquisitions so far.
    pub acquired: u64,
    /// `try_acquire`s refused.
    pub refused: u64,
    /// Whether it is closed.
    pub closed: bool,
}

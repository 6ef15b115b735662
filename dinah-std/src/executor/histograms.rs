//! [`PollHistograms`]: an executor's three poll histograms, recorded by its
//! thread without a lock and read whole from any thread.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering, fence};

use dinah_core::telemetry::{ExecutorFigures, Log2Histogram};

use super::task_probe::PackedWait;
use crate::telemetry::hook::micros;

/// Buckets per histogram (as in [`ExecutorFigures`]).
const B: usize = 24;

/// An executor's histograms of first-poll delays, wake-to-poll waits and
/// poll times, under a sequence lock.
///
/// One writer (the executor's thread, once per poll) stores with plain
/// loads and stores: no lock and no read-modify-write. Readers on any
/// thread copy all three and keep the copy only if no recording overlapped
/// it, so a copy holds whole polls (each histogram's count is the sum of
/// its buckets). A reader that keeps overlapping recordings tries again.
pub(crate) struct PollHistograms {
    /// Odd while a poll is being recorded.
    sequence: AtomicU64,
    first_poll_delay: AtomicHistogram,
    wake_to_poll: AtomicHistogram,
    poll_time: AtomicHistogram,
}

impl PollHistograms {
    pub(crate) fn new() -> Self {
        Self {
            sequence: AtomicU64::new(0),
            first_poll_delay: AtomicHistogram::new(),
            wake_to_poll: AtomicHistogram::new(),
            poll_time: AtomicHistogram::new(),
        }
    }

    /// Records one poll: the wait before it and its time, in nanoseconds
    /// (kept in microseconds). The executor's thread only.
    #[inline]
    pub(crate) fn record(&self, waited: PackedWait, took: u64) {
        let sequence = self.sequence.load(Ordering::Relaxed);
        self.sequence
            .store(sequence.wrapping_add(1), Ordering::Relaxed);
        // The odd sequence is visible before any of the stores below.
        fence(Ordering::Release);
        if let Some(nanos) = waited.woken() {
            self.wake_to_poll.record(micros(nanos));
        } else if let Some(nanos) = waited.first_poll() {
            self.first_poll_delay.record(micros(nanos));
        }
        self.poll_time.record(micros(took));
        self.sequence
            .store(sequence.wrapping_add(2), Ordering::Release);
    }

    /// Copies the three histograms into `figures`. Any thread.
    pub(crate) fn read_into(&self, figures: &mut ExecutorFigures<B>) {
        loop {
            let before = self.sequence.load(Ordering::Acquire);
            if before & 1 == 0 {
                let first_poll_delay = self.first_poll_delay.read();
                let wake_to_poll = self.wake_to_poll.read();
                let poll_time = self.poll_time.read();
                // The loads above come before the second look.
                fence(Ordering::Acquire);
                if self.sequence.load(Ordering::Relaxed) == before {
                    figures.first_poll_delay = first_poll_delay;
                    figures.wake_to_poll = wake_to_poll;
                    figures.poll_time = poll_time;
                    return;
                }
            }
            std::thread::yield_now();
        }
    }
}

/// A [`Log2Histogram`] in atomics, with one writer.
///
/// Its count is not kept apart: it is the sum of the buckets, added up
/// when read. Bucket counts and the sum are added to without saturating:
/// one poll adds 1 to a bucket and at most its own duration to the sum, and
/// a `u64` of polls, or of microseconds, takes over 500 years to fill.
struct AtomicHistogram {
    buckets: [AtomicU64; B],
    sum: AtomicU64,
    max: AtomicU64,
}

impl AtomicHistogram {
    fn new() -> Self {
        Self {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }

    /// [`Log2Histogram::record`], by the one writer.
    #[inline]
    fn record(&self, value: u64) {
        let add = |counter: &AtomicU64, by: u64| {
            counter.store(
                counter.load(Ordering::Relaxed).wrapping_add(by),
                Ordering::Relaxed,
            );
        };
        add(&self.buckets[Log2Histogram::<B>::bucket_of(value)], 1);
        add(&self.sum, value);
        if value > self.max.load(Ordering::Relaxed) {
            self.max.store(value, Ordering::Relaxed);
        }
    }

    fn read(&self) -> Log2Histogram<B> {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let buckets: [u64; B] = std::array::from_fn(|index| load(&self.buckets[index]));
        let count = buckets
            .iter()
            .fold(0u64, |count, &n| count.saturating_add(n));
        Log2Histogram::from_parts(buckets, count, load(&self.sum), load(&self.max))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use dinah_core::telemetry::{ExecutorFigures, Log2Histogram};

    use super::PollHistograms;
    use crate::executor::task_probe::Waited;
    use crate::telemetry::hook::micros;

    #[test]
    fn records_what_a_plain_histogram_records() {
        let histograms = PollHistograms::new();
        let (mut waits, mut times, mut firsts) = (
            Log2Histogram::<24>::new(),
            Log2Histogram::<24>::new(),
            Log2Histogram::<24>::new(),
        );
        for (index, nanos) in [0, 1_000, 7_999, 1_000_000, u64::MAX, 3_000]
            .into_iter()
            .enumerate()
        {
            let waited = match index % 3 {
                0 => Waited::FirstPoll(nanos),
                1 => Waited::Woken(nanos / 2),
                _ => Waited::Unknown,
            };
            // Packed as a poll's start keeps it (the longest waits clamped).
            let waited = waited.pack();
            histograms.record(waited, nanos);
            if let Some(nanos) = waited.woken() {
                waits.record(micros(nanos));
            } else if let Some(nanos) = waited.first_poll() {
                firsts.record(micros(nanos));
            }
            times.record(micros(nanos));
        }
        let mut figures = ExecutorFigures::new(1_000_000);
        histograms.read_into(&mut figures);
        assert_eq!(figures.first_poll_delay, firsts);
        assert_eq!(figures.wake_to_poll, waits);
        assert_eq!(figures.poll_time, times);
    }

    #[test]
    fn a_reader_beside_the_writer_sees_whole_polls() {
        // Fewer rounds under Miri, which runs them a thousand times slower.
        let (polls, reads) = if cfg!(miri) { (500, 20) } else { (20_000, 200) };
        let histograms = PollHistograms::new();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for nanos in 0..polls {
                    histograms.record(Waited::Woken(nanos * 1_000).pack(), nanos * 1_000);
                }
            });
            for _ in 0..reads {
                let mut figures = ExecutorFigures::new(1_000_000);
                histograms.read_into(&mut figures);
                let (waits, times) = (&figures.wake_to_poll, &figures.poll_time);
                assert_eq!(waits.buckets().iter().sum::<u64>(), waits.count());
                assert_eq!(times.buckets().iter().sum::<u64>(), times.count());
                assert_eq!(waits.count(), times.count(), "one poll, both histograms");
            }
        });
    }
}

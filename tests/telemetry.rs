//! The telemetry primitives against a plain model: log2 buckets, counts,
//! sums, maxima and quantile bounds for random samples, and the clocks.

use dinah::telemetry::{Clock, Log2Histogram, NoClock, StdClock};

mod support;

/// The bucket a sample belongs in, found by walking the powers of two.
fn model_bucket(value: u64, buckets: usize) -> usize {
    let mut index = 0;
    let mut low = 0u128;
    while index < buckets - 1 {
        let high = if index == 0 { 1 } else { 1u128 << index };
        if u128::from(value) >= low && u128::from(value) < high {
            return index;
        }
        low = high;
        index += 1;
    }
    buckets - 1
}

fn check_histogram(bytes: &[u8]) {
    let mut histogram: Log2Histogram<12> = Log2Histogram::new();
    let mut samples: Vec<u64> = Vec::new();
    for chunk in bytes.chunks(3) {
        // Spread samples over the whole range: a shift picked by the first byte.
        let raw = u64::from(chunk.get(1).copied().unwrap_or(0))
            | u64::from(chunk.get(2).copied().unwrap_or(0)) << 8;
        let value = raw << (chunk[0] % 16);
        histogram.record(value);
        samples.push(value);
    }
    let mut model = [0u64; 12];
    for &value in &samples {
        model[model_bucket(value, 12)] += 1;
    }
    assert_eq!(histogram.buckets(), &model);
    assert_eq!(histogram.count(), samples.len() as u64);
    assert_eq!(histogram.sum(), samples.iter().sum::<u64>());
    assert_eq!(histogram.max(), samples.iter().copied().max().unwrap_or(0));
    samples.sort_unstable();
    for (numerator, denominator) in [(1, 2), (9, 10), (99, 100), (1, 1)] {
        let bound = histogram.quantile_upper_bound(numerator, denominator);
        let Some(rank) = (samples.len() as u64 * numerator)
            .div_ceil(denominator)
            .checked_sub(1)
        else {
            assert_eq!(bound, 0, "empty");
            continue;
        };
        let truth = samples[rank as usize];
        assert!(
            bound >= truth,
            "bound {bound} below the true quantile {truth}"
        );
        assert!(bound <= histogram.max());
        // Within a factor of two, except in the open last bucket.
        if model_bucket(truth, 12) < 11 {
            assert!(bound <= truth.max(1) * 2, "bound {bound} for {truth}");
        }
    }
}

#[test]
fn histogram_matches_the_model_on_random_samples() {
    support::for_random_bytes(512, 300, check_histogram);
}

#[test]
fn clocks_never_go_back() {
    let clock = StdClock::new();
    let first = clock.now();
    let second = clock.now();
    assert!(second >= first);
    assert_eq!(clock.ticks_per_second(), 1_000_000_000);
    assert_eq!(clock.ticks_to_micros(2_500), 2);
    assert_eq!(NoClock.now(), NoClock.now());
}

#[test]
fn every_std_clock_reads_the_same_time() {
    // Made at different times, in different ways, they share one origin:
    // readings interleaved across them never go back.
    let early = StdClock::new();
    let mut readings = vec![early.now()];
    for _ in 0..100 {
        readings.push(StdClock::default().now());
        readings.push(early.now());
    }
    assert!(readings.windows(2).all(|pair| pair[0] <= pair[1]));
}

/// A tick counter an "interrupt" (here, the test) advances.
struct Ticks(std::sync::atomic::AtomicU64);

impl Clock for Ticks {
    fn now(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn ticks_per_second(&self) -> u64 {
        1_000
    }
}

impl Ticks {
    fn advance(&self, by: u64) {
        self.0.fetch_add(by, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_poll_watch_sees_the_running_poll_and_only_while_it_runs() {
    use dinah::telemetry::{Blocked, PollObserver, PollWatch};
    use dinah::{AsyncExecutor, ReadyQueue, TaskId};
    use std::pin::pin;
    use std::sync::atomic::AtomicU64;

    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    static WATCH: PollWatch<Ticks> = PollWatch::new(Ticks(AtomicU64::new(7)));
    static SEEN: std::sync::Mutex<Vec<Option<Blocked>>> = std::sync::Mutex::new(Vec::new());

    let mut spinning = pin!(Some(async {
        // What a timer interrupt would see while this poll does not return.
        let mut seen = SEEN.lock().unwrap();
        seen.push(WATCH.blocked(3));
        WATCH.clock().advance(2);
        seen.push(WATCH.blocked(3));
        WATCH.clock().advance(1);
        seen.push(WATCH.blocked(3));
    }));
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(spinning.as_mut()).unwrap();
    assert_eq!(WATCH.blocked(0), None, "no poll yet");
    executor.tick_observed(usize::MAX, &WATCH);
    assert_eq!(
        SEEN.lock()
            .unwrap()
            .iter()
            .map(|seen| seen.map(|b| (b.task, b.running_for)))
            .collect::<Vec<_>>(),
        [None, None, Some((id, 3))]
    );
    assert_eq!(WATCH.blocked(0), None, "the poll returned");

    // A reading is consistent: a watch whose poll ended reports nothing even
    // when the clock ran far.
    WATCH.poll_started(TaskId::from_raw(u64::MAX).unwrap());
    WATCH.clock().advance(1_000);
    assert_eq!(
        WATCH.blocked(1_000).map(|b| (b.task, b.running_for)),
        Some((TaskId::from_raw(u64::MAX).unwrap(), 1_000))
    );
    WATCH.poll_ended(TaskId::from_raw(u64::MAX).unwrap());
    assert_eq!(WATCH.blocked(0), None);
}

#[test]
fn an_unobserved_tick_is_an_observed_one_with_nothing_watching() {
    use dinah::{AsyncExecutor, ReadyQueue, yield_now};
    use std::pin::pin;

    static PLAIN: ReadyQueue<1> = ReadyQueue::new();
    static OBSERVED: ReadyQueue<1> = ReadyQueue::new();
    let mut a = pin!(Some(async {
        yield_now().await;
    }));
    let mut b = pin!(Some(async {
        yield_now().await;
    }));
    let mut plain: AsyncExecutor<'_, 1> = AsyncExecutor::new(&PLAIN).unwrap();
    let mut observed: AsyncExecutor<'_, 1> = AsyncExecutor::new(&OBSERVED).unwrap();
    plain.try_spawn(a.as_mut()).unwrap();
    observed.try_spawn(b.as_mut()).unwrap();
    for _ in 0..2 {
        assert_eq!(plain.tick(1), observed.tick_observed(1, &()));
    }
}

#[test]
fn poll_times_and_poll_events_observe_the_core_executor_together() {
    use dinah::telemetry::{PollEvents, PollTimes, TraceEventKind, TraceRing};
    use dinah::{AsyncExecutor, ReadyQueue, yield_now};
    use std::pin::pin;
    use std::sync::atomic::AtomicU64;

    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    static CLOCK: Ticks = Ticks(AtomicU64::new(0));
    static TRACE: TraceRing<8> = TraceRing::new();

    let mut task = pin!(Some(async {
        CLOCK.advance(2);
        yield_now().await;
        CLOCK.advance(70);
    }));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(&QUEUE).unwrap();
    let id = executor.try_spawn(task.as_mut()).unwrap();
    let times: PollTimes<&Ticks, 16> = PollTimes::new(&CLOCK, 50);
    let events = PollEvents {
        sink: &TRACE,
        clock: &CLOCK,
    };
    let observer = (&times, &events);
    while executor.live_tasks() > 0 {
        executor.tick_observed(usize::MAX, &observer);
    }
    assert_eq!(times.figures().long_polls, 1);
    let mut expected: Log2Histogram<16> = Log2Histogram::new();
    expected.record(2);
    expected.record(70);
    assert_eq!(times.figures().poll_time, expected);
    let got: Vec<(TraceEventKind, u64)> = TRACE
        .drain()
        .iter()
        .map(|e| {
            assert_eq!(e.task, id);
            (e.kind, e.at)
        })
        .collect();
    assert_eq!(
        got,
        [
            (TraceEventKind::PollStarted, 0),
            (TraceEventKind::PollEnded, 2),
            (TraceEventKind::PollStarted, 2),
            (TraceEventKind::PollEnded, 72),
        ]
    );
}

/// A `static`'s counters can start from chosen values: the snapshot is
/// built in `const` code outside the crate.
#[test]
fn a_static_runtime_metrics_starts_from_chosen_values() {
    use dinah::telemetry::{MetricsSnapshot, MetricsSnapshot32, RuntimeMetrics, RuntimeMetrics32};
    static CARRIED: RuntimeMetrics = RuntimeMetrics::from_snapshot(
        MetricsSnapshot::ZERO
            .with_submitted(7)
            .with_completed(5)
            .with_stale_wakes(1),
    );
    static NARROW: RuntimeMetrics32 =
        RuntimeMetrics32::from_snapshot(MetricsSnapshot32::ZERO.with_polls(u32::MAX));
    CARRIED.record_completed();
    let snapshot = CARRIED.snapshot();
    assert_eq!(
        (snapshot.submitted, snapshot.completed, snapshot.stale_wakes),
        (7, 6, 1)
    );
    assert_eq!(snapshot.failed, 0);
    NARROW.record_submitted();
    assert_eq!(
        (NARROW.snapshot().polls, NARROW.snapshot().submitted),
        (u32::MAX, 1)
    );
    assert_eq!(MetricsSnapshot::ZERO, MetricsSnapshot::default());
}

/// Runs a core executor on `queue` whose one task, during its first poll,
/// has another thread wake it (the two meet at barriers, so the wake lands
/// inside the poll), and returns the second tick's report.
fn wake_from_another_thread_during_a_poll(
    queue: &'static dinah::ReadyQueue<1>,
) -> dinah::executor::TickReport {
    use dinah::executor::AsyncExecutor;
    use std::pin::pin;
    use std::sync::{Arc, Barrier};
    use std::task::Poll;
    let (send, take) = std::sync::mpsc::channel::<std::task::Waker>();
    let waking = Arc::new(Barrier::new(2));
    let other = {
        let waking = Arc::clone(&waking);
        std::thread::spawn(move || {
            let waker = take.recv().unwrap();
            waker.wake();
            waking.wait();
        })
    };
    let mut polls = 0;
    let mut task = pin!(Some(std::future::poll_fn(move |cx| {
        polls += 1;
        if polls == 1 {
            send.send(cx.waker().clone()).unwrap();
            // The other thread has woken the task before this poll ends.
            waking.wait();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })));
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
    executor.try_spawn(task.as_mut()).unwrap();
    executor.tick(1);
    let report = executor.tick(1);
    other.join().unwrap();
    report
}

/// A wake from another thread that lands during a poll is the task's own
/// only when the queue cannot tell threads apart: with the host's context
/// function it counts as woken from outside.
#[test]
fn a_core_executor_with_a_context_tells_another_threads_wake_from_a_self_wake() {
    use dinah::ReadyQueue;
    use dinah::executor::thread_context;
    static TOLD: ReadyQueue<1> = ReadyQueue::new().with_context(thread_context);
    let report = wake_from_another_thread_during_a_poll(&TOLD);
    assert_eq!(report.polled, 1);
    assert_eq!(
        (
            report.self_woken,
            report.woken_in_poll,
            report.woken_outside
        ),
        (0, 0, 1)
    );
    // Without one (the documented default), the same wake counts as the
    // poll's own.
    static UNTOLD: ReadyQueue<1> = ReadyQueue::new();
    let report = wake_from_another_thread_during_a_poll(&UNTOLD);
    assert_eq!((report.self_woken, report.woken_outside), (1, 0));
}

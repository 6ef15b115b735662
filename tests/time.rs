//! Time on the hosted executor beyond the shared contract: parking until a
//! deadline, wakes from other threads that cut the park short, pool handles
//! under a timeout, many timers on virtual time, and the free functions'
//! rule about which executor's timers they use.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use dinah::executor::ExecutorConfig;
use dinah::time::{self, Elapsed, MissedTicks, TimerDriver, TimerHandle};
use dinah::{CoreConfig, LocalExecutor, WorkerPool};

fn paused() -> LocalExecutor<'static> {
    LocalExecutor::with_config(ExecutorConfig {
        start_paused: true,
        ..ExecutorConfig::default()
    })
    .unwrap()
}

/// Runs `executor.block_on` on a future that is pending until another
/// thread, once it has run `work`, wakes it: the executor idles meanwhile
/// with nothing of its own to do.
fn block_until_woken_by(executor: &LocalExecutor<'_>, work: impl FnOnce() + Send + 'static) {
    let (send_waker, waker) = std::sync::mpsc::channel::<Waker>();
    let other = thread::spawn(move || {
        let main = waker.recv().unwrap();
        work();
        main.wake();
    });
    let mut polls = 0;
    executor.block_on(std::future::poll_fn(|cx: &mut Context<'_>| {
        polls += 1;
        if polls == 1 {
            send_waker.send(cx.waker().clone()).unwrap();
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }));
    other.join().unwrap();
}

#[test]
fn a_real_sleep_never_completes_early() {
    let executor = LocalExecutor::new();
    let (start, end) = executor.block_on(async {
        let start = time::now();
        time::sleep(Duration::from_millis(3)).await;
        (start, time::now())
    });
    assert!(end.ticks_since(start) >= 3_000, "{start:?} → {end:?}");
    let figures = executor.timer().figures();
    assert_eq!((figures.fired, figures.armed), (1, 0));
}

#[test]
fn timers_due_microseconds_apart_each_end_at_or_after_their_deadline() {
    // 200 sleeps (20 under Miri) of 1 ms plus a few microseconds each, 7 µs
    // apart: the executor waits for most of them in waits too short to park
    // (spun), and each still ends no earlier than its own deadline.
    const SLEEPS: u64 = if cfg!(miri) { 20 } else { 200 };
    let executor = LocalExecutor::new();
    let ends = Arc::new(Mutex::new(Vec::new()));
    let start = executor.block_on(async { time::now() });
    let handles: Vec<_> = (0..SLEEPS)
        .map(|i| {
            let ends = Arc::clone(&ends);
            let wait = 1_000 + 7 * i;
            executor
                .try_spawn(async move {
                    time::sleep_until(start.saturating_add_ticks(wait)).await;
                    ends.lock().unwrap().push((i, time::now()));
                })
                .unwrap()
        })
        .collect();
    executor.block_on(async {
        for handle in handles {
            handle.await.unwrap();
        }
    });
    let ends = ends.lock().unwrap();
    for &(i, end) in ends.iter() {
        assert!(
            end.ticks_since(start) >= 1_000 + 7 * i,
            "sleep {i} ended {} µs after the start",
            end.ticks_since(start)
        );
    }
    assert_eq!(ends.len(), SLEEPS as usize);
    assert_eq!(executor.timer().figures().armed, 0);
}

#[test]
fn a_wake_from_another_thread_cuts_a_timed_park_short() {
    // The executor parks until a deadline an hour away; a wake from another
    // thread must end the park, so `block_on` returns while the long sleep
    // is still far from done.
    let executor = LocalExecutor::new();
    let long = executor
        .try_spawn(async { time::sleep(Duration::from_secs(3_600)).await })
        .unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let mut sent = false;
    let waker_thread = {
        let barrier = Arc::clone(&barrier);
        let (tx, rx) = std::sync::mpsc::channel::<Waker>();
        let thread = thread::spawn(move || {
            let waker = rx.recv().unwrap();
            barrier.wait(); // the executor is about to park
            waker.wake();
        });
        (thread, tx)
    };
    executor.block_on(std::future::poll_fn(|cx: &mut Context<'_>| {
        if sent {
            return Poll::Ready(());
        }
        sent = true;
        waker_thread.1.send(cx.waker().clone()).unwrap();
        barrier.wait();
        Poll::Pending
    }));
    waker_thread.0.join().unwrap();
    assert!(!long.is_finished(), "the hour has not passed");
    assert_eq!(executor.timer().figures().armed, 1);
    assert_eq!(executor.shutdown().cancelled_tasks, 1);
}

#[test]
fn a_timer_armed_from_another_thread_wakes_the_parked_executor() {
    // The executor parks with no deadline at all; another thread then arms
    // one of its timers and waits for it. Only the executor fires its
    // timers, so it must be unparked to park anew until that deadline (or
    // this test never ends).
    let executor = LocalExecutor::new();
    let timer = executor.timer();
    block_until_woken_by(&executor, move || {
        futures_executor::block_on(timer.sleep(Duration::from_millis(2)));
    });
    let figures = executor.timer().figures();
    assert_eq!((figures.fired, figures.armed), (1, 0));
}

#[test]
fn a_pool_handle_can_be_awaited_under_a_timeout() {
    let pool = WorkerPool::new(CoreConfig::new(1).unwrap(), 4).unwrap();
    let executor = LocalExecutor::new();
    let quick = pool.try_spawn(|| 6 * 7).unwrap_or_else(|_| unreachable!());
    assert_eq!(
        executor.block_on(time::timeout(Duration::from_secs(3_600), quick)),
        Ok(Ok(42))
    );
    // A job held on a barrier cannot finish before the timeout.
    let gate = Arc::new(Barrier::new(2));
    let held = {
        let gate = Arc::clone(&gate);
        pool.try_spawn(move || {
            gate.wait();
            1
        })
        .unwrap_or_else(|_| unreachable!())
    };
    assert_eq!(
        executor.block_on(time::timeout(Duration::from_millis(5), held)),
        Err(Elapsed)
    );
    gate.wait();
    let _ = pool.shutdown(dinah::pool::ShutdownPolicy::Drain);
}

#[test]
fn ten_thousand_sleeps_on_virtual_time_fire_in_deadline_order() {
    // Interpreted by Miri, fewer: the same wheel levels are reached.
    let count: u64 = if cfg!(miri) { 300 } else { 10_000 };
    let executor = paused();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    // Deadlines spread from 1 ms to 100 ms, spawned in a scrambled order.
    for i in 0..count {
        let ms = 1 + (i * 7_919) % 100;
        let order = Arc::clone(&order);
        drop(
            executor
                .try_spawn(async move {
                    time::sleep(Duration::from_millis(ms)).await;
                    order.lock().unwrap().push((time::now().ticks(), ms));
                })
                .unwrap(),
        );
    }
    executor.block_on(time::sleep(Duration::from_millis(101)));
    let order = order.lock().unwrap();
    assert_eq!(order.len() as u64, count);
    assert!(order.windows(2).all(|w| w[0].1 <= w[1].1), "deadline order");
    assert!(
        order.iter().all(|&(now, ms)| now == ms * 1_000),
        "each at its deadline"
    );
    let figures = executor.timer().figures();
    assert_eq!(
        (figures.fired, figures.armed, figures.late),
        (count + 1, 0, 0)
    );
}

#[test]
fn a_paused_clock_moves_only_when_idle_or_advanced() {
    let executor = paused();
    let timer = executor.timer();
    assert!(timer.is_paused());
    assert_eq!(timer.now(), time::Instant::ZERO);
    timer.advance(Duration::from_millis(2)).unwrap();
    assert_eq!(timer.now().ticks(), 2_000);
    // Busy work does not move it.
    executor.block_on(async {
        for _ in 0..100 {
            dinah::yield_now().await;
        }
    });
    assert_eq!(timer.now().ticks(), 2_000);
    let mut interval = timer
        .clone()
        .interval(Duration::from_millis(10), MissedTicks::Skip)
        .unwrap();
    let ticks = executor.block_on(async {
        let mut ticks = Vec::new();
        for _ in 0..3 {
            ticks.push(interval.tick().await.ticks());
        }
        ticks
    });
    assert_eq!(ticks, [2_000, 12_000, 22_000]);
    // A cancelled timer leaves no jump behind: idle with nothing armed, the
    // clock stays where it is while another thread wakes the executor.
    executor
        .block_on(time::timeout(Duration::from_secs(60), dinah::yield_now()))
        .unwrap();
    assert_eq!(
        timer.figures().cancelled,
        1,
        "the timeout's timer was armed"
    );
    let before = timer.now();
    block_until_woken_by(&executor, || {});
    assert_eq!(timer.now(), before, "no timer was armed: no jump");
    assert_eq!(
        LocalExecutor::new()
            .timer()
            .advance(Duration::from_millis(1)),
        Err(time::ClockNotPaused)
    );
}

#[test]
fn the_free_functions_use_the_executor_entered_on_this_thread() {
    assert!(time::try_current().is_none(), "no executor yet");
    let first = paused();
    let second = paused();
    first.block_on(async {
        assert!(time::current().same_timers(&first.timer()));
    });
    second.block_on(async {
        assert!(time::current().same_timers(&second.timer()));
    });
    drop(second);
    assert!(
        time::try_current().is_none(),
        "the dropped executor's timers are forgotten"
    );
    let panicked = std::panic::catch_unwind(|| time::sleep(Duration::from_millis(1)));
    let message = panicked.unwrap_err();
    let message = message
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| message.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("");
    assert!(message.contains("no executor on this thread"), "{message}");
}

/// A waker that counts its wakes and, when its last clone goes, asks the
/// timers for their figures: dropped while the timers are locked, it would
/// never return.
struct Reaching {
    timer: Mutex<Option<TimerHandle>>,
    dropped: Arc<AtomicUsize>,
}

impl Wake for Reaching {
    fn wake(self: Arc<Self>) {}
}

impl Drop for Reaching {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.lock().unwrap().take() {
            let _ = timer.figures();
        }
        self.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn reaching(timer: &TimerHandle) -> (Waker, Arc<AtomicUsize>) {
    let dropped = Arc::new(AtomicUsize::new(0));
    let waker = Waker::from(Arc::new(Reaching {
        timer: Mutex::new(Some(timer.clone())),
        dropped: Arc::clone(&dropped),
    }));
    (waker, dropped)
}

#[test]
fn a_task_s_waker_stays_with_its_timer_entry_until_the_executor_goes() {
    let executor = paused();
    let timer = executor.timer();
    let (waker, dropped) = reaching(&timer);
    let mut cx = Context::from_waker(&waker);
    for _ in 0..3 {
        let mut sleep = std::pin::pin!(timer.clone().sleep(Duration::from_secs(60)));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
    }
    assert_eq!(timer.figures().cancelled, 3);
    // The entry kept the waker: dropping ours leaves one clone alive.
    drop(waker);
    assert_eq!(dropped.load(Ordering::SeqCst), 0, "kept by the entry");
    // Another task's waker takes the entry over; the kept one is dropped
    // once the timers are let go (its drop reaches them, and returns).
    let (second, second_dropped) = reaching(&timer);
    {
        let mut sleep = std::pin::pin!(timer.clone().sleep(Duration::from_secs(60)));
        assert!(
            sleep
                .as_mut()
                .poll(&mut Context::from_waker(&second))
                .is_pending()
        );
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "replaced and dropped");
    }
    drop(second);
    assert_eq!(second_dropped.load(Ordering::SeqCst), 0, "kept again");
    // The executor's end lets kept wakers go, outside the timers' lock.
    drop(executor);
    assert_eq!(second_dropped.load(Ordering::SeqCst), 1);
}

//! The interrupt executor on a host: a thread plays the interrupt (its
//! pender makes the "interrupt" pending, and the thread runs the handler),
//! while the test's thread plays thread mode. Overlap is proven with
//! flags each side waits for, never with time.
#![cfg(not(loom))]

use std::future::poll_fn;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::task::Poll;
use std::thread;

use dinah_core::executor::{
    AsyncExecutor, InterruptExecutor, InterruptTasks, ReadyQueue, ServeError, TaskPool,
};
use dinah_core::io::Event;
use dinah_core::{TaskState, yield_now};

/// An interrupt line: pended by a pender, served by its own thread.
struct Line {
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl Line {
    const fn new() -> Self {
        Self {
            state: Mutex::new((false, false)),
            changed: Condvar::new(),
        }
    }

    fn pend(&self) {
        self.state.lock().unwrap().0 = true;
        self.changed.notify_all();
    }

    /// Runs `handler` each time the line is pended, until `stop`.
    fn serve_on_a_thread(&'static self, handler: fn()) -> thread::JoinHandle<()> {
        thread::spawn(move || {
            loop {
                let mut state = self.state.lock().unwrap();
                while !state.0 && !state.1 {
                    state = self.changed.wait(state).unwrap();
                }
                if state.1 {
                    return;
                }
                state.0 = false;
                drop(state);
                handler();
            }
        })
    }

    fn stop(&self) {
        self.state.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

/// Spins until `flag` is set (the other side sets it: overlap, not time).
fn wait_for(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        thread::yield_now();
    }
}

#[test]
fn a_task_at_interrupt_priority_runs_while_a_thread_mode_task_is_in_a_long_poll() {
    static HIGH: InterruptExecutor = InterruptExecutor::new("urgent", 2);
    static LINE: Line = Line::new();
    static HIGH_QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(pend);
    static LOW_QUEUE: ReadyQueue<1> = ReadyQueue::new();
    static DEVICE: Event = Event::new();
    static SERVED: AtomicBool = AtomicBool::new(false);
    static ORDER: AtomicU32 = AtomicU32::new(0);
    fn pend() {
        LINE.pend();
    }
    fn handler() {
        HIGH.on_interrupt();
    }

    let mut urgent = pin!(Some(async {
        let wait = DEVICE.wait();
        assert_eq!(wait.await, Ok(1));
        // Second in the sequence: inside the slow task's poll.
        assert_eq!(ORDER.fetch_add(1, Ordering::AcqRel), 1);
        SERVED.store(true, Ordering::Release);
    }));
    let mut high: InterruptTasks<'_, 1> = InterruptTasks::new(&HIGH_QUEUE).unwrap();
    let urgent = high.try_spawn(urgent.as_mut()).unwrap();

    let mut slow = pin!(Some(async {
        assert_eq!(ORDER.fetch_add(1, Ordering::AcqRel), 0);
        DEVICE.raise();
        // A long poll: it returns only once the urgent task has run.
        wait_for(&SERVED);
        assert_eq!(ORDER.fetch_add(1, Ordering::AcqRel), 2);
    }));
    let mut low: AsyncExecutor<'_, 1> = AsyncExecutor::new(&LOW_QUEUE).unwrap();
    let slow = low.try_spawn(slow.as_mut()).unwrap();

    let interrupt = LINE.serve_on_a_thread(handler);
    HIGH.serve(&mut high, || {
        // `serve` pended the interrupt: the urgent task's first poll.
        while DEVICE.waiting() == 0 {
            thread::yield_now();
        }
        assert_eq!(low.tick(4).completed, 1);
    })
    .unwrap();
    LINE.stop();
    interrupt.join().unwrap();

    assert_eq!(ORDER.load(Ordering::Acquire), 3);
    assert_eq!(high.task_state(urgent), Some(TaskState::Completed));
    assert_eq!(low.task_state(slow), Some(TaskState::Completed));
    let figures = HIGH.figures();
    assert_eq!((figures.name, figures.priority), ("urgent", 2));
    assert!(!figures.serving);
    assert_eq!(
        figures.polls, 2,
        "a first poll, and the one after the raise"
    );
}

#[test]
fn serve_ends_only_once_the_handler_has_let_go_of_the_tasks() {
    static HIGH: InterruptExecutor = InterruptExecutor::new("high", 1);
    static LINE: Line = Line::new();
    static QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(pend);
    static INSIDE: AtomicBool = AtomicBool::new(false);
    static RELEASE: AtomicBool = AtomicBool::new(false);
    static POLL_ENDED: AtomicBool = AtomicBool::new(false);
    fn pend() {
        LINE.pend();
    }
    fn handler() {
        HIGH.on_interrupt();
    }

    let mut busy = pin!(Some(async {
        INSIDE.store(true, Ordering::Release);
        wait_for(&RELEASE);
        // Still inside the handler's poll when the scope lets go.
        for _ in 0..100 {
            thread::yield_now();
        }
        POLL_ENDED.store(true, Ordering::Release);
    }));
    let mut high: InterruptTasks<'_, 1> = InterruptTasks::new(&QUEUE).unwrap();
    let busy = high.try_spawn(busy.as_mut()).unwrap();
    let interrupt = LINE.serve_on_a_thread(handler);
    HIGH.serve(&mut high, || {
        wait_for(&INSIDE);
        RELEASE.store(true, Ordering::Release);
    })
    .unwrap();
    // `serve` waited for the poll that was running when its scope ended.
    assert!(POLL_ENDED.load(Ordering::Acquire));
    assert_eq!(high.task_state(busy), Some(TaskState::Completed));
    // Served no longer: a handler run now polls nothing.
    assert!(!HIGH.on_interrupt());
    LINE.stop();
    interrupt.join().unwrap();
}

#[test]
fn outside_its_scope_the_handler_does_nothing_and_one_set_is_served_at_a_time() {
    static HIGH: InterruptExecutor = InterruptExecutor::new("high", 1);
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();
    static OTHER_QUEUE: ReadyQueue<1> = ReadyQueue::new();

    let mut task = pin!(Some(async {}));
    let mut high: InterruptTasks<'_, 1> = InterruptTasks::new(&QUEUE).unwrap();
    let id = high.try_spawn(task.as_mut()).unwrap();
    assert!(!HIGH.on_interrupt(), "nothing is served yet");
    assert_eq!(high.task_state(id), Some(TaskState::Pending));

    let mut other: InterruptTasks<'_, 1> = InterruptTasks::new(&OTHER_QUEUE).unwrap();
    let nested = HIGH
        .serve(&mut high, || {
            assert!(HIGH.figures().serving);
            let refused = HIGH.serve(&mut other, || unreachable!("a second set is not served"));
            assert!(HIGH.on_interrupt());
            refused
        })
        .unwrap();
    assert_eq!(nested, Err(ServeError::Busy));
    assert_eq!(high.task_state(id), Some(TaskState::Completed));
    assert!(!HIGH.on_interrupt(), "nothing is served any more");
    assert_eq!(HIGH.figures().runs, 1);
}

#[test]
fn a_handler_called_while_it_runs_makes_it_run_once_more() {
    static HIGH: InterruptExecutor = InterruptExecutor::new("high", 1);
    static QUEUE: ReadyQueue<2> = ReadyQueue::new();
    static FLAG: AtomicBool = AtomicBool::new(false);

    // The first task's poll calls the handler, which finds it running: it
    // leaves a request, and the running handler goes round once more, and
    // polls the second task that the first one woke.
    let mut first = pin!(Some(async {
        FLAG.store(true, Ordering::Release);
        assert!(!HIGH.on_interrupt(), "already running");
    }));
    let mut second = pin!(Some(async {
        poll_fn(|_| {
            if FLAG.load(Ordering::Acquire) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }));
    let mut high: InterruptTasks<'_, 2> = InterruptTasks::new(&QUEUE).unwrap();
    high.try_spawn(first.as_mut()).unwrap();
    high.try_spawn(second.as_mut()).unwrap();
    HIGH.serve(&mut high, || assert!(HIGH.on_interrupt()))
        .unwrap();
    assert_eq!(HIGH.figures().runs, 2, "once, and once more on request");
}

#[test]
fn a_panic_in_a_served_task_unwinds_out_of_the_handler_and_the_scope_still_ends() {
    static HIGH: InterruptExecutor = InterruptExecutor::new("high", 1);
    static QUEUE: ReadyQueue<1> = ReadyQueue::new();

    let mut task = pin!(Some(async { panic!("a task fails at interrupt priority") }));
    let mut high: InterruptTasks<'_, 1> = InterruptTasks::new(&QUEUE).unwrap();
    let id = high.try_spawn(task.as_mut()).unwrap();
    HIGH.serve(&mut high, || {
        let unwound = std::panic::catch_unwind(|| HIGH.on_interrupt());
        assert!(unwound.is_err());
        // The handler let go of the tasks as it unwound.
        assert!(HIGH.on_interrupt());
    })
    .unwrap();
    assert_eq!(high.task_state(id), Some(TaskState::Failed));
}

#[test]
fn another_context_cancels_a_served_task_and_spawns_into_a_pool_it_runs() {
    static HIGH: InterruptExecutor = InterruptExecutor::new("high", 1);
    static LINE: Line = Line::new();
    static QUEUE: ReadyQueue<2> = ReadyQueue::with_pender(pend);
    static JOBS: TaskPool<u32, 4, 1> = TaskPool::named("jobs");
    static SUM: AtomicU32 = AtomicU32::new(0);
    fn pend() {
        LINE.pend();
    }
    fn handler() {
        HIGH.on_interrupt();
    }
    async fn job(value: u32) {
        SUM.fetch_add(value, Ordering::AcqRel);
    }

    let mut forever = pin!(Some(async {
        loop {
            yield_now().await;
            poll_fn(|_| Poll::<()>::Pending).await;
        }
    }));
    let mut storage = pin!(None);
    let mut worker = pin!(JOBS.worker(job, storage.as_mut()).unwrap());
    let mut high: InterruptTasks<'_, 2> = InterruptTasks::new(&QUEUE).unwrap();
    let forever = high.try_spawn(forever.as_mut()).unwrap();
    high.try_spawn(worker.as_mut()).unwrap();
    let queue = high.queue();

    let interrupt = LINE.serve_on_a_thread(handler);
    HIGH.serve(&mut high, || {
        // Another thread spawns jobs and cancels a task, as an interrupt
        // handler of another priority would.
        thread::spawn(move || {
            for value in [1, 2, 3] {
                while JOBS.try_spawn(value).is_err() {
                    thread::yield_now();
                }
            }
            queue.cancel(forever).unwrap();
        })
        .join()
        .unwrap();
        while SUM.load(Ordering::Acquire) != 6
            || queue.task_state(forever) != Some(TaskState::Cancelled)
        {
            thread::yield_now();
        }
    })
    .unwrap();
    LINE.stop();
    interrupt.join().unwrap();
    assert_eq!(JOBS.figures().finished, 3);
}

#[test]
fn a_poll_watch_sees_a_task_blocked_at_interrupt_priority() {
    use dinah_core::telemetry::{Clock, PollWatch};
    use std::sync::atomic::AtomicU64;

    static NOW: AtomicU64 = AtomicU64::new(0);
    struct TestClock;
    impl Clock for TestClock {
        fn now(&self) -> u64 {
            NOW.load(Ordering::Acquire)
        }
        fn ticks_per_second(&self) -> u64 {
            1_000
        }
    }
    static HIGH: InterruptExecutor = InterruptExecutor::new("high", 1);
    static WATCH: PollWatch<TestClock> = PollWatch::new(TestClock);
    static LINE: Line = Line::new();
    static QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(pend);
    static INSIDE: AtomicBool = AtomicBool::new(false);
    static RELEASE: AtomicBool = AtomicBool::new(false);
    fn pend() {
        LINE.pend();
    }
    fn handler() {
        HIGH.on_interrupt();
    }

    let mut stuck = pin!(Some(async {
        INSIDE.store(true, Ordering::Release);
        wait_for(&RELEASE);
    }));
    let mut high: InterruptTasks<'_, 1> = InterruptTasks::new(&QUEUE).unwrap();
    let stuck = high.try_spawn(stuck.as_mut()).unwrap();
    let interrupt = LINE.serve_on_a_thread(handler);
    HIGH.serve_observed(&mut high, &WATCH, || {
        wait_for(&INSIDE);
        assert_eq!(WATCH.blocked(100), None, "not long yet");
        NOW.store(250, Ordering::Release);
        let blocked = WATCH.blocked(100).expect("a poll running 250 ticks");
        assert_eq!((blocked.task, blocked.running_for), (stuck, 250));
        RELEASE.store(true, Ordering::Release);
    })
    .unwrap();
    assert_eq!(WATCH.blocked(0), None, "the poll ended");
    LINE.stop();
    interrupt.join().unwrap();
}

#[test]
fn tasks_on_two_interrupt_executors_and_thread_mode_wake_each_other_and_spawn_across() {
    static FIRST: InterruptExecutor = InterruptExecutor::new("first", 1);
    static SECOND: InterruptExecutor = InterruptExecutor::new("second", 2);
    static FIRST_LINE: Line = Line::new();
    static SECOND_LINE: Line = Line::new();
    static FIRST_QUEUE: ReadyQueue<1> = ReadyQueue::with_pender(pend_first);
    static SECOND_QUEUE: ReadyQueue<2> = ReadyQueue::with_pender(pend_second);
    static LOW_QUEUE: ReadyQueue<1> = ReadyQueue::new();
    static PING: Event<1> = Event::new();
    static PONG: Event<1> = Event::new();
    static SECOND_JOBS: TaskPool<u32, 4, 1> = TaskPool::new();
    static SPAWNED_SUM: AtomicU32 = AtomicU32::new(0);
    const ROUNDS: u32 = 3;
    fn pend_first() {
        FIRST_LINE.pend();
    }
    fn pend_second() {
        SECOND_LINE.pend();
    }
    fn first_handler() {
        FIRST.on_interrupt();
    }
    fn second_handler() {
        SECOND.on_interrupt();
    }
    async fn job(value: u32) {
        SPAWNED_SUM.fetch_add(value, Ordering::AcqRel);
    }

    // The first executor's task pings; the second's answers; each ping
    // also spawns a job into the second executor's pool.
    let mut pinger = pin!(Some(async {
        let mut seen = PONG.raised();
        for round in 1..=ROUNDS {
            let pong = PONG.wait_from(seen);
            SECOND_JOBS.try_spawn(round).unwrap();
            PING.raise();
            seen = seen.wrapping_add(pong.await.unwrap());
        }
        PING.close();
    }));
    let mut ponger = pin!(Some(async {
        let mut seen = 0;
        while let Ok(raises) = PING.wait_from(seen).await {
            seen = seen.wrapping_add(raises);
            PONG.raise();
        }
    }));
    let mut storage = pin!(None);
    let mut worker = pin!(SECOND_JOBS.worker(job, storage.as_mut()).unwrap());
    let mut first: InterruptTasks<'_, 1> = InterruptTasks::new(&FIRST_QUEUE).unwrap();
    let mut second: InterruptTasks<'_, 2> = InterruptTasks::new(&SECOND_QUEUE).unwrap();
    let pinger = first.try_spawn(pinger.as_mut()).unwrap();
    let ponger = second.try_spawn(ponger.as_mut()).unwrap();
    second.try_spawn(worker.as_mut()).unwrap();
    // Thread mode waits for the sum, yielding.
    let mut low: AsyncExecutor<'_, 1> = AsyncExecutor::new(&LOW_QUEUE).unwrap();

    let first_thread = FIRST_LINE.serve_on_a_thread(first_handler);
    let second_thread = SECOND_LINE.serve_on_a_thread(second_handler);
    SECOND
        .serve(&mut second, || {
            FIRST
                .serve(&mut first, || {
                    low.run_until(
                        async {
                            // Bounded, so that a lost wake fails with
                            // what each side holds rather than hanging.
                            for _ in 0..5_000_000 {
                                if SPAWNED_SUM.load(Ordering::Acquire) == 6 {
                                    return;
                                }
                                yield_now().await;
                                thread::yield_now();
                            }
                            panic!(
                                "jobs summed {}; pool {:?}; {} pings, {} pongs; {:?}",
                                SPAWNED_SUM.load(Ordering::Acquire),
                                SECOND_JOBS.figures(),
                                PING.raised(),
                                PONG.raised(),
                                SECOND.figures()
                            );
                        },
                        4,
                        thread::yield_now,
                    );
                    while FIRST_QUEUE.task_state(pinger) != Some(TaskState::Completed) {
                        thread::yield_now();
                    }
                })
                .unwrap();
            while SECOND_QUEUE.task_state(ponger) != Some(TaskState::Completed) {
                thread::yield_now();
            }
        })
        .unwrap();
    FIRST_LINE.stop();
    SECOND_LINE.stop();
    first_thread.join().unwrap();
    second_thread.join().unwrap();
    assert_eq!(PING.raised(), ROUNDS);
    assert_eq!(PONG.raised(), ROUNDS);
    assert_eq!(FIRST.figures().priority, 1);
    assert_eq!(SECOND.figures().priority, 2);
}

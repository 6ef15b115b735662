//! The core executor's `TaskPool`: jobs spawned from tasks and from another
//! context (a thread standing in for an interrupt handler) run in `P`
//! workers whose storage is reused, first spawned first run, never more
//! than `P` at once, each job a task of its own (its id, its name and
//! figures, cancelled alone, never polled by a wake meant for the job
//! before it); a full pool hands the input back; idle workers do not spin.

use std::pin::pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::task::{Poll, Waker};

use dinah::executor::{AsyncExecutor, JobState, ReadyQueue, SpawnError, TaskPool, TooManyWorkers};
use dinah::sync::Semaphore;
use dinah::task::TaskState;
use dinah::telemetry::Counted;

mod support;

use support::keep_forever;

/// Each job's start and end, in order.
static LOG: Mutex<Vec<(char, u32)>> = Mutex::new(Vec::new());

fn log(what: char, job: u32) {
    LOG.lock().unwrap().push((what, job));
}

#[test]
fn jobs_from_tasks_and_interrupts_run_in_reused_workers_in_order() {
    let queue: &'static ReadyQueue<3, Counted> = keep_forever(ReadyQueue::new());
    let pool: &'static TaskPool<u32, 8, 2> = keep_forever(TaskPool::named("jobs"));
    // Jobs hold a permit until released, so their overlap is seen.
    let gate: &'static Semaphore = keep_forever(Semaphore::new(0));
    let job = move |n: u32| async move {
        log('+', n);
        gate.acquire().await.unwrap().forget();
        log('-', n);
    };
    let (mut one_job, mut two_job, mut three_job) = (pin!(None), pin!(None), pin!(None));
    let mut one = pin!(pool.worker(job, one_job.as_mut()).unwrap());
    let mut two = pin!(pool.worker(job, two_job.as_mut()).unwrap());
    assert_eq!(
        pool.worker(job, three_job.as_mut()).err(),
        Some(TooManyWorkers)
    );
    let mut spawner = pin!(Some(async move {
        for n in 1..=3 {
            pool.try_spawn(n).unwrap();
        }
    }));
    let mut executor: AsyncExecutor<'_, 3, (), Counted> = AsyncExecutor::new(queue).unwrap();
    executor.try_spawn_named("worker", one.as_mut()).unwrap();
    executor.try_spawn_named("worker", two.as_mut()).unwrap();
    executor.try_spawn(spawner.as_mut()).unwrap();
    executor.tick(8);
    executor.tick(8);
    // An interrupt handler (here: another thread) spawns too.
    std::thread::spawn(move || pool.try_spawn(4).unwrap())
        .join()
        .unwrap();
    while executor.tick(8).polled > 0 {}
    assert_eq!(
        *LOG.lock().unwrap(),
        [('+', 1), ('+', 2)],
        "two workers: two jobs at once, first spawned first"
    );
    assert_eq!((pool.figures().running, pool.figures().queued), (2, 2));
    for _ in 0..4 {
        gate.add_permits(1).unwrap();
        while executor.tick(8).polled > 0 {}
    }
    assert_eq!(
        *LOG.lock().unwrap(),
        [
            ('+', 1),
            ('+', 2),
            ('-', 1),
            ('+', 3),
            ('-', 2),
            ('+', 4),
            ('-', 3),
            ('-', 4)
        ]
    );
    let figures = pool.figures();
    assert_eq!(
        (
            figures.name,
            figures.workers,
            figures.spawned,
            figures.finished
        ),
        (Some("jobs"), 2, 4, 4),
        "four jobs ran in the two workers' storage"
    );
    // Idle workers wait without being polled.
    for _ in 0..10 {
        assert_eq!(executor.tick(8).polled, 0);
    }
    assert_eq!(executor.live_tasks(), 2, "the two workers, waiting");
}

/// Ticks until a tick polls nothing and leaves nothing to do.
fn settle<const N: usize>(executor: &mut AsyncExecutor<'_, N>) {
    loop {
        let report = executor.tick(8);
        if report.polled == 0 && !report.work_remaining {
            return;
        }
    }
}

#[test]
fn a_full_pool_hands_the_input_back() {
    let pool: &'static TaskPool<&'static str, 1, 1> = keep_forever(TaskPool::new());
    pool.try_spawn("first").unwrap();
    let Err(SpawnError::Full(input)) = pool.try_spawn("second") else {
        panic!("one job fits");
    };
    assert_eq!(input, "second");
    assert_eq!(pool.figures().refused, 1);
}

#[test]
fn each_job_is_a_task_of_its_own_with_its_id_name_and_figures() {
    let queue: &'static ReadyQueue<1, Counted> = keep_forever(ReadyQueue::new());
    let pool: &'static TaskPool<u32, 4, 1> = keep_forever(TaskPool::named("blink"));
    let job = |yields: u32| async move {
        for _ in 0..yields {
            dinah::task::yield_now().await;
        }
    };
    let mut storage = pin!(None);
    let mut worker = pin!(pool.worker(job, storage.as_mut()).unwrap());
    let mut executor: AsyncExecutor<'_, 1, (), Counted> = AsyncExecutor::new(queue).unwrap();
    let idle = executor.try_spawn_named("blink", worker.as_mut()).unwrap();
    let (two, three) = (pool.try_spawn(2).unwrap(), pool.try_spawn(3).unwrap());
    executor.tick(1);
    assert_eq!(
        pool.job_state(two),
        Some(JobState::Running(idle)),
        "the first job runs as the worker's first task"
    );
    assert_eq!(pool.job_state(three), Some(JobState::Queued));
    executor.tick(1);
    // Its figures, under the worker's name: a first poll and a yield.
    let figures = executor.task_figures(idle).unwrap();
    assert_eq!((figures.name, figures.polls), (Some("blink"), 2));
    // Its last poll ends it, and the worker starts again at once.
    executor.tick(1);
    assert_eq!(pool.job_state(two), None);
    assert_eq!(
        executor.task_state(idle),
        None,
        "the slot is the next task's"
    );
    executor.tick(1);
    let Some(JobState::Running(next)) = pool.job_state(three) else {
        panic!("the next job runs");
    };
    assert_ne!(next, idle, "a new task, with a new id");
    assert_eq!(executor.task_state(next), Some(TaskState::Running));
    assert_eq!(executor.task_name(next), Some("blink"));
    assert_eq!(executor.task_figures(next).unwrap().polls, 1);
    while pool.job_state(three).is_some() {
        executor.tick(1);
    }
    assert_eq!(pool.figures().finished, 2);
}

#[test]
fn a_job_is_cancelled_alone_from_another_context_and_the_next_takes_its_worker() {
    static DROPPED: AtomicBool = AtomicBool::new(false);
    struct Dropped;
    impl Drop for Dropped {
        fn drop(&mut self) {
            DROPPED.store(true, Ordering::SeqCst);
        }
    }
    let queue: &'static ReadyQueue<2> = keep_forever(ReadyQueue::new());
    let pool: &'static TaskPool<bool, 4, 1> = keep_forever(TaskPool::new());
    let ran = keep_forever(AtomicU32::new(0));
    let job = move |forever: bool| async move {
        let _dropped = Dropped;
        ran.fetch_add(1, Ordering::SeqCst);
        if forever {
            std::future::pending::<()>().await;
        }
    };
    let mut storage = pin!(None);
    let mut worker = pin!(pool.worker(job, storage.as_mut()).unwrap());
    let mut executor: AsyncExecutor<'_, 2> = AsyncExecutor::new(queue).unwrap();
    executor.try_spawn(worker.as_mut()).unwrap();
    let stuck = pool.try_spawn(true).unwrap();
    let after = pool.try_spawn(false).unwrap();
    executor.tick(4);
    let Some(JobState::Running(task)) = pool.job_state(stuck) else {
        panic!("the first job runs");
    };
    // Withdrawn while queued: the input comes back, and it never runs.
    let withdrawn = pool.try_spawn(false).unwrap();
    assert_eq!(pool.withdraw(withdrawn), Some(false));
    assert_eq!(
        pool.withdraw(stuck),
        None,
        "a running job is cancelled instead"
    );
    // An interrupt handler (here: another thread) cancels that job alone.
    std::thread::spawn(move || queue.cancel(task).unwrap())
        .join()
        .unwrap();
    settle(&mut executor);
    assert!(DROPPED.load(Ordering::SeqCst), "the job was dropped");
    assert_eq!(
        executor.task_state(task),
        None,
        "its slot runs the next job"
    );
    assert_eq!(pool.job_state(stuck), None);
    assert_eq!(pool.job_state(after), None, "the next job ran to its end");
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    assert_eq!(pool.figures().finished, 3);
}

#[test]
fn a_wake_meant_for_a_finished_job_never_polls_the_next_one() {
    static KEPT: Mutex<Option<Waker>> = Mutex::new(None);
    let queue: &'static ReadyQueue<1> = keep_forever(ReadyQueue::new());
    let pool: &'static TaskPool<u32, 4, 1> = keep_forever(TaskPool::new());
    let polls = keep_forever(AtomicU32::new(0));
    let job = move |which: u32| async move {
        std::future::poll_fn(|cx| {
            if which == 1 {
                // The first job leaves a waker behind, as a careless
                // driver might, and ends.
                *KEPT.lock().unwrap() = Some(cx.waker().clone());
                return Poll::Ready(());
            }
            polls.fetch_add(1, Ordering::SeqCst);
            Poll::<()>::Pending
        })
        .await;
    };
    let mut storage = pin!(None);
    let mut worker = pin!(pool.worker(job, storage.as_mut()).unwrap());
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
    executor.try_spawn(worker.as_mut()).unwrap();
    pool.try_spawn(1).unwrap();
    let second = pool.try_spawn(2).unwrap();
    executor.tick(4);
    // The ended job's waker lives: the worker waits for it to go.
    assert_eq!(pool.job_state(second), Some(JobState::Queued));
    let kept = KEPT.lock().unwrap().take().unwrap();
    kept.wake_by_ref();
    assert_eq!(executor.tick(4).stale_wakes, 1, "a wake for the ended job");
    assert_eq!(
        polls.load(Ordering::SeqCst),
        0,
        "the next job is not polled"
    );
    drop(kept);
    executor.tick(4);
    executor.tick(4);
    assert!(matches!(pool.job_state(second), Some(JobState::Running(_))));
    assert_eq!(polls.load(Ordering::SeqCst), 1, "its own first poll only");
}

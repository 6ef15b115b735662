//! The core executor's `TaskPool`: jobs spawned from tasks and from another
//! context (a thread standing in for an interrupt handler) run in `P`
//! worker tasks whose storage is reused, first spawned first run, never
//! more than `P` at once; a full pool hands the input back; idle workers do
//! not spin.

use std::pin::pin;
use std::sync::Mutex;

use dinah::executor::{AsyncExecutor, ReadyQueue, SpawnError, TaskPool, TooManyWorkers};
use dinah::sync::Semaphore;
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
    let mut one = pin!(Some(pool.worker(job).unwrap()));
    let mut two = pin!(Some(pool.worker(job).unwrap()));
    assert_eq!(pool.worker(job).err(), Some(TooManyWorkers));
    let mut spawner = pin!(Some(async move {
        for n in 1..=3 {
            pool.try_spawn(n).unwrap();
        }
    }));
    let mut executor: AsyncExecutor<'_, 3, (), Counted> = AsyncExecutor::new(queue).unwrap();
    let first = executor.try_spawn_named("worker", one.as_mut()).unwrap();
    executor.try_spawn(two.as_mut()).unwrap();
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
    let polls = executor.task_figures(first).unwrap().polls;
    for _ in 0..10 {
        executor.tick(8);
    }
    assert_eq!(executor.task_figures(first).unwrap().polls, polls);
    assert_eq!(executor.task_name(first), Some("worker"));
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

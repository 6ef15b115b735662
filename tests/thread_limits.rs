//! `run_parallel` and the pools when the operating system refuses worker
//! threads.
//!
//! Each case runs in a child process (this same binary, re-run with
//! `DINAH_THREAD_LIMIT_CASE` set) that lowers its own address-space limit
//! with `prlimit` just before calling `run_parallel`, so that only a few
//! 2 MiB thread stacks, or none, still fit. The limit binds as root too,
//! unlike a limit on the number of processes. Linux only: it reads
//! `/proc/self/status` and needs util-linux's `prlimit`.
//!
//! A custom harness (`harness = false`): libtest would start its own test
//! thread inside the limited child. It prints libtest's closing line.

use std::collections::HashSet;
use std::env;
use std::process::{self, Command};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, ThreadId};

use dinah::pool::{BlockingConfig, PoolError};
use dinah::queue::ParallelError;
use dinah::queue::run_parallel;
use dinah::{BlockingPool, BoundedQueue, CoreConfig, SpawnError, WorkerPool};

const CASE_VARIABLE: &str = "DINAH_THREAD_LIMIT_CASE";
const TASKS: usize = 64;
const MIB: u64 = 1024 * 1024;

/// Each case: its name and how much address space the child may still map
/// once the limit is set. A worker needs a 2 MiB stack plus a guard page.
const CASES: [(&str, u64); 4] = [
    // Room for about two stacks: the first workers start, the rest are refused.
    (
        "some_workers_refused_every_task_still_runs",
        5 * MIB + MIB / 2,
    ),
    // Room for no stack at all: not even the first worker starts.
    ("no_worker_started_queue_untouched", MIB / 4),
    // A worker pool asking for 64 workers gets about two: a typed error,
    // with the started workers stopped and joined.
    (
        "worker_pool_refused_worker_is_a_typed_error",
        5 * MIB + MIB / 2,
    ),
    // A blocking pool with no thread cannot start one: the job comes back.
    ("blocking_pool_without_a_thread_hands_the_job_back", MIB / 4),
];

static RAN: AtomicUsize = AtomicUsize::new(0);

fn main() {
    if cfg!(miri) {
        println!("thread_limits: skipped under Miri, which cannot start child processes");
        return;
    }
    match env::var(CASE_VARIABLE) {
        Ok(case) => child(&case),
        Err(_) => parent(),
    }
}

fn parent() {
    let exe = env::current_exe().expect("the test binary knows its path");
    let mut failed = 0;
    println!("\nrunning {} tests", CASES.len());
    for (case, _) in CASES {
        let output = Command::new(&exe)
            .env(CASE_VARIABLE, case)
            .output()
            .expect("the test binary can re-run itself");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let passed = output.status.success() && stdout.contains(&format!("{case}: held"));
        println!("test {case} ... {}", if passed { "ok" } else { "FAILED" });
        if !passed {
            failed += 1;
            println!("---- {case} ({}) ----", output.status);
            print!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {verdict}. {} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out\n",
        CASES.len() - failed
    );
    if failed > 0 {
        process::exit(1);
    }
}

/// How much address space this process maps now, from `/proc/self/status`.
fn mapped_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux /proc");
    let line = status
        .lines()
        .find(|line| line.starts_with("VmSize:"))
        .expect("VmSize line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmSize in kB");
    kib * 1024
}

/// Caps this process's address space at what it maps now plus `headroom`.
fn limit_address_space(headroom: u64) {
    let limit = mapped_bytes() + headroom;
    let status = Command::new("prlimit")
        .arg(format!("--pid={}", process::id()))
        .arg(format!("--as={limit}"))
        .status()
        .expect("prlimit (util-linux) is installed");
    assert!(status.success(), "prlimit failed: {status}");
}

fn child(case: &str) {
    let (_, headroom) = CASES
        .iter()
        .find(|(name, _)| *name == case)
        .expect("a known case");
    match case {
        "worker_pool_refused_worker_is_a_typed_error" => {
            let config = CoreConfig::new(TASKS).unwrap();
            limit_address_space(*headroom);
            let error = WorkerPool::new(config, 8).expect_err("64 stacks do not fit");
            let PoolError::ThreadRefused { worker, .. } = &error else {
                panic!("{error:?}");
            };
            assert!((2..=TASKS as u64).contains(&worker.get()), "{error:?}");
            assert!(error.to_string().contains("could not be started"));
            println!("{case}: held");
            return;
        }
        "blocking_pool_without_a_thread_hands_the_job_back" => {
            let pool = BlockingPool::new(BlockingConfig::new(4, 4)).unwrap();
            limit_address_space(*headroom);
            let Err(SpawnError::NoThread(job, _)) = pool.try_spawn(|| 41 + 1) else {
                panic!("no thread fits under the limit");
            };
            assert_eq!(job(), 42, "handed back intact");
            let stats = pool.stats();
            assert_eq!((stats.threads, stats.accepted, stats.rejected), (0, 0, 1));
            println!("{case}: held");
            return;
        }
        _ => {}
    }
    // Everything the run needs is allocated before the limit.
    let threads: Mutex<HashSet<ThreadId>> = Mutex::new(HashSet::with_capacity(TASKS));
    let mut queue = BoundedQueue::new(TASKS).unwrap();
    for index in 0..TASKS {
        let threads = &threads;
        queue
            .try_push(move || {
                RAN.fetch_add(1, Ordering::SeqCst);
                threads.lock().unwrap().insert(thread::current().id());
                index
            })
            .unwrap_or_else(|_| unreachable!("sized to fit"));
    }

    limit_address_space(*headroom);
    let outcome = run_parallel(&mut queue, TASKS);

    match case {
        "some_workers_refused_every_task_still_runs" => {
            let results = outcome.expect("the workers that started ran the tasks");
            assert_eq!(results, (0..TASKS).collect::<Vec<_>>());
            assert!(queue.is_empty());
            assert_eq!(RAN.load(Ordering::SeqCst), TASKS);
            let workers = threads.lock().unwrap().len();
            assert!(
                (1..TASKS).contains(&workers),
                "{workers} threads ran tasks; the limit leaves room for about two"
            );
        }
        "no_worker_started_queue_untouched" => {
            let error = outcome.expect_err("no thread fits under the limit");
            assert!(
                matches!(error, ParallelError::NoWorkerStarted(_)),
                "{error:?}"
            );
            assert!(error.to_string().contains("the queue is untouched"));
            assert_eq!(queue.len(), TASKS);
            assert_eq!(RAN.load(Ordering::SeqCst), 0);
            drop(queue);
        }
        other => unreachable!("unknown case {other}"),
    }
    println!("{case}: held");
}

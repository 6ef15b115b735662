//! [`CpuWatch`]: whether a runtime's thread got the CPU it asked for, so
//! that the diagnosis tells a thread the host starved of CPU from a poll
//! that holds it.
//!
//! A poll that takes 100 ms of wall time may have run for 100 ms (it holds
//! its thread: `WorkerBlocked`), slept in a system call (the same), or have
//! been runnable and waiting for a CPU the operating system gave to other
//! processes (the host's capacity, not the task's fault). The last shows
//! in the scheduler's own account of the thread. On Linux,
//! `/proc/self/task/<tid>/schedstat` gives the nanoseconds it ran and the
//! nanoseconds it waited on a run queue, and `status` its state now and
//! how often it gave up its CPU of its own accord (to sleep or block). The
//! watch reads them only when the diagnosis looks (never on a poll's path:
//! a healthy runtime pays nothing).
//!
//! The kernel adds a wait to the account only once the wait ends, so a
//! thread that waits now shows nothing yet. The watch therefore counts as
//! waiting, in a window that the thread started runnable and in which it
//! never gave up its CPU of its own accord, all the time it did not run: a
//! thread that neither ran nor slept was on a run queue. In a window where
//! it slept, only the waits the account shows count.
//!
//! The rule, [`Fared::starved`]: a thread was starved for a delay `d`
//! past a threshold `t` (a poll or job running for `d`, or a task ready
//! for `d`) when it is runnable now and, over the window from the
//! diagnosis's earliest look within the delay (or its latest before the
//! delay, or the thread's start), it waited for a CPU at least half of `d`
//! and `d` less that wait is within `t`: the task's own time would not
//! have crossed the threshold. A poll that sleeps in a system call is
//! asleep, not runnable; one that burns its CPU past `t` has its own time
//! past `t`; an executor parked while a task is ready is asleep: each
//! keeps the verdict the wall time gives. The watch keeps its latest looks
//! for that. A window longer than the delay (a diagnosis called seldom)
//! may count waits from before the delay as the delay's: the figures in
//! the verdict show the window.
//!
//! Where the account cannot be read (other systems, or a kernel without
//! scheduler statistics), the watch sees nothing and the verdicts are as
//! without it. With a clock of the user's (a `ManualClock`), windows of
//! that clock cannot be set against the scheduler's nanoseconds, so the
//! watch is not made.
#![forbid(unsafe_code)]

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use dinah_core::{TaskId, WorkerId};

use crate::primitives::lock_std;
use crate::telemetry::hook::Probe;
use crate::telemetry::{CpuShare, Thresholds, Verdict};

/// The shortest window judged: shorter ones are left to grow.
const MIN_WINDOW: u64 = 1_000_000;

/// A thread's account with the scheduler at one look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Account {
    /// Nanoseconds run.
    ran: u64,
    /// Nanoseconds waited on a run queue, for the waits that have ended.
    waited: u64,
    /// Times it gave up its CPU of its own accord.
    blocked: u64,
    /// Running or waiting for a CPU now.
    runnable: bool,
}

/// How a thread fared over one window of the diagnosis, and whether it is
/// runnable at its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fared {
    pub(crate) window: Duration,
    pub(crate) ran: Duration,
    /// Time waited for a CPU: the window less the time run where the
    /// thread was runnable at its start and never blocked in it, the
    /// ended waits otherwise.
    pub(crate) waited: Duration,
    /// Running or waiting for a CPU when looked at (not asleep in a system
    /// call or parked).
    pub(crate) runnable: bool,
}

impl Fared {
    /// Whether the thread was starved of CPU for a delay of `delayed` that
    /// ends now, judged against the threshold `limit` it crossed: it is
    /// runnable, waited for a CPU at least half of the delay, and the delay
    /// less that wait is within `limit` (the task's own time would not
    /// have crossed it).
    ///
    /// A window longer than the delay counts its waits (up to the delay)
    /// as the delay's; one shorter, which covers only the delay's end,
    /// stands for the whole delay in proportion.
    pub(crate) fn starved(&self, delayed: Duration, limit: Duration) -> bool {
        let waited = if self.window >= delayed {
            self.waited.min(delayed)
        } else {
            let (waited, window) = (self.waited.as_nanos(), self.window.as_nanos());
            let scaled = waited.saturating_mul(delayed.as_nanos()) / window.max(1);
            Duration::from_nanos(u64::try_from(scaled).unwrap_or(u64::MAX)).min(delayed)
        };
        self.runnable && waited.saturating_mul(2) >= delayed && delayed - waited <= limit
    }

    /// The verdict for `task`, delayed `delayed` past the threshold
    /// `limit` on a thread that fared so, if it was starved; `None` leaves
    /// the verdict to the wall time.
    pub(crate) fn verdict(
        self,
        task: TaskId,
        name: Option<&'static str>,
        worker: Option<WorkerId>,
        delayed: Duration,
        limit: Duration,
    ) -> Option<Verdict> {
        self.starved(delayed, limit)
            .then_some(Verdict::HostStarved {
                task,
                name,
                worker,
                delayed,
                cpu: CpuShare::new(self.window, self.waited, self.ran),
            })
    }
}

/// The window from `then` to `now` (ns on the runtime's clock) and the
/// account's changes over it; `None` while the window is too short to
/// judge.
fn fared(then: (u64, Account), now: (u64, Account)) -> Option<Fared> {
    let window = now.0.saturating_sub(then.0);
    if window < MIN_WINDOW {
        return None;
    }
    let ran = now.1.ran.saturating_sub(then.1.ran);
    let waited = if then.1.runnable && now.1.blocked == then.1.blocked {
        // Runnable at the start and never off its CPU of its own accord
        // since: whenever it did not run, it waited for a CPU (a wait
        // still under way included).
        window.saturating_sub(ran)
    } else {
        now.1.waited.saturating_sub(then.1.waited)
    };
    Some(Fared {
        window: Duration::from_nanos(window),
        ran: Duration::from_nanos(ran),
        waited: Duration::from_nanos(waited),
        runnable: now.1.runnable,
    })
}

/// How many looks a watch keeps, to find the one nearest a delay's start.
const KEPT: usize = 32;

/// One look at a thread: when (ns on the runtime's clock) and its account.
pub(crate) type Look = (u64, Account);

/// One thread's account, looked at by the diagnosis from any thread.
#[derive(Debug)]
pub(crate) struct CpuWatch {
    /// Its `schedstat` and `status` files, if they can be read.
    paths: Option<(String, String)>,
    /// The latest looks, oldest first; the first is the thread's start
    /// until it is pushed out.
    looks: Mutex<VecDeque<Look>>,
}

impl CpuWatch {
    /// A watch on the calling thread for a runtime measured by `probe`,
    /// when its windows can be set against the scheduler's nanoseconds:
    /// with the host's clock only (not a clock of the user's), and not
    /// under Miri (which has no scheduler to ask).
    pub(crate) fn for_probe(probe: &Probe) -> Option<Self> {
        (probe.config.clock.is_none() && !cfg!(miri)).then(|| Self::this_thread(probe.now()))
    }

    /// A watch on the calling thread (made on the thread it watches), its
    /// first window starting `now` (ns on the runtime's clock).
    pub(crate) fn this_thread(now: u64) -> Self {
        // `/proc/thread-self` links to `<pid>/task/<tid>`.
        let paths = std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|link| {
                let tid = link.file_name()?.to_str()?.parse::<u32>().ok()?;
                let task = format!("/proc/self/task/{tid}");
                Some((format!("{task}/schedstat"), format!("{task}/status")))
            });
        let start = paths.as_ref().and_then(read);
        Self {
            paths: paths.filter(|_| start.is_some()),
            looks: Mutex::new(start.map(|account| (now, account)).into_iter().collect()),
        }
    }

    /// Reads the thread's account at `now` (ns on the runtime's clock,
    /// which is the host's) and keeps it; `None` where it cannot be read.
    /// The diagnosis looks on every call, so that a delay finds a look
    /// near its start.
    pub(crate) fn look(&self, now: u64) -> Option<Look> {
        let look = (now, read(self.paths.as_ref()?)?);
        let mut looks = lock_std(&self.looks);
        if looks.len() == KEPT {
            looks.pop_front();
        }
        looks.push_back(look);
        Some(look)
    }

    /// How the thread fared up to `look` over a delay of `delayed` ending
    /// then: from the earliest earlier look taken within the delay, or
    /// else the latest before it. `None` where no window of a millisecond
    /// or more is kept.
    pub(crate) fn fared(&self, look: Look, delayed: Duration) -> Option<Fared> {
        let started = look.0.saturating_sub(Thresholds::nanos(delayed));
        let looks = lock_std(&self.looks);
        let judged = looks
            .iter()
            .filter(|then| look.0.saturating_sub(then.0) >= MIN_WINDOW);
        let base = judged
            .clone()
            .find(|then| then.0 >= started)
            .or_else(|| judged.clone().next_back())?;
        fared(*base, look)
    }
}

/// Reads a thread's account from its `schedstat` and `status` files.
fn read((schedstat, status): &(String, String)) -> Option<Account> {
    let text = std::fs::read_to_string(schedstat).ok()?;
    let mut fields = text.split_whitespace().map(str::parse::<u64>);
    let ran = fields.next()?.ok()?;
    let waited = fields.next()?.ok()?;
    let (runnable, blocked) = parse_status(&std::fs::read_to_string(status).ok()?)?;
    Some(Account {
        ran,
        waited,
        blocked,
        runnable,
    })
}

/// From a `status` file: whether the thread is running or waiting for a
/// CPU (state `R`), and how often it gave up its CPU of its own accord.
fn parse_status(status: &str) -> Option<(bool, u64)> {
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    };
    let runnable = field("State")?.starts_with('R');
    let blocked = field("voluntary_ctxt_switches")?.parse().ok()?;
    Some((runnable, blocked))
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A look at `ns`: run `ran`, ended waits `waited`, `blocked` times
    /// off the CPU of its own accord, runnable now.
    fn at(ns: u64, ran: u64, waited: u64, blocked: u64) -> (u64, Account) {
        let runnable = true;
        let account = Account {
            ran,
            waited,
            blocked,
            runnable,
        };
        (ns, account)
    }

    fn asleep(look: (u64, Account)) -> (u64, Account) {
        let (ns, account) = look;
        let runnable = false;
        (
            ns,
            Account {
                runnable,
                ..account
            },
        )
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The threshold most cases cross (`Thresholds::blocked`'s default).
    const LIMIT: Duration = Duration::from_millis(100);

    #[test]
    fn a_runnable_thread_that_waited_half_the_delay_was_starved() {
        // A job of microseconds that took 109 ms: it slept once in the
        // window, ran 1 ms and waited 100 ms of 200.
        let starved = fared(at(0, 0, 0, 4), at(200 * MS, MS, 100 * MS, 5)).unwrap();
        assert!(starved.starved(ms(109), LIMIT));
        assert_eq!(starved.waited, ms(100));
        // Exactly half the delay: starved.
        let half = fared(at(0, 0, 0, 0), at(200 * MS, 0, 50 * MS, 1)).unwrap();
        assert!(half.starved(ms(100), LIMIT));
        assert!(!half.starved(ms(101), LIMIT));
        // A window that covers the delay's last 20 ms only (the looks kept
        // are all within it): waiting half of it stands for half the delay.
        let short = fared(at(0, 0, 0, 0), at(20 * MS, MS, 10 * MS, 1)).unwrap();
        assert!(short.starved(ms(150), LIMIT));
        assert!(!short.starved(ms(150), ms(74)), "75 ms of its own");
    }

    #[test]
    fn a_task_whose_own_time_crosses_the_threshold_is_to_blame() {
        // A job that burned 55 ms of CPU and waited 55 ms: the wait is
        // half the delay, but its own 55 ms cross a 50 ms threshold.
        let hog = fared(at(0, 0, 0, 3), at(110 * MS, 55 * MS, 0, 3)).unwrap();
        assert_eq!(hog.waited, ms(55));
        assert!(!hog.starved(ms(110), ms(50)));
        assert!(hog.starved(ms(110), ms(55)));
        // Ran most of the delay: waited under half of it.
        let burned = fared(at(0, 0, 0, 1), at(110 * MS, 70 * MS, 0, 1)).unwrap();
        assert!(!burned.starved(ms(110), LIMIT));
    }

    #[test]
    fn a_wait_under_way_counts_where_the_thread_never_blocked() {
        // Neither ran nor blocked in 4 ms, runnable now: the account shows
        // no wait yet, as the kernel adds one when it ends, but the thread
        // was on a run queue all along.
        let waiting = fared(at(0, 7, 3, 9), at(4 * MS, 7, 3, 9)).unwrap();
        assert_eq!(waiting.waited, ms(4));
        assert!(waiting.starved(ms(8), ms(5)));
        // Ran 3.5 ms of 15 and never blocked: it waited the rest.
        let preempted = fared(at(0, 0, 0, 9), at(15 * MS, 3_500_000, 0, 9)).unwrap();
        assert_eq!(preempted.waited, Duration::from_micros(11_500));
        assert!(preempted.starved(ms(12), ms(10)));
        // Blocked in the window: only the waits that ended count.
        let slept = fared(at(0, 0, 0, 9), at(15 * MS, 0, MS, 10)).unwrap();
        assert_eq!(slept.waited, ms(1));
        assert!(!slept.starved(ms(12), ms(10)));
        // Asleep at the window's start (a job sleeping since before it),
        // woken since: its sleep is not a wait.
        let woke = fared(asleep(at(0, 0, 0, 9)), at(15 * MS, 0, MS, 9)).unwrap();
        assert_eq!(woke.waited, ms(1));
        assert!(!woke.starved(ms(12), ms(10)));
    }

    #[test]
    fn a_thread_asleep_now_keeps_the_verdict_of_the_wall_time() {
        // Asleep in a system call (or parked): not runnable, whatever the
        // window's waits were.
        let slept = fared(at(0, 0, 0, 1), asleep(at(200 * MS, 0, 150 * MS, 2))).unwrap();
        assert!(!slept.starved(ms(110), LIMIT));
        // Too short a window to judge.
        assert_eq!(fared(at(0, 0, 0, 0), at(MS - 1, 0, MS, 0)), None);
    }

    #[test]
    fn the_verdict_names_the_host_with_the_figures_or_is_left_to_the_wall_time() {
        let task = TaskId::new(7).unwrap();
        let worker = Some(WorkerId::new(2).unwrap());
        let starved = fared(at(0, 0, 0, 0), at(200 * MS, MS, 100 * MS, 1)).unwrap();
        let verdict = starved
            .verdict(task, Some("sum"), worker, ms(109), LIMIT)
            .unwrap();
        assert_eq!(verdict.cause(), crate::telemetry::Cause::HostStarved);
        let Verdict::HostStarved { cpu, delayed, .. } = verdict else {
            unreachable!()
        };
        assert_eq!((cpu.window, cpu.waited, cpu.ran), (ms(200), ms(100), ms(1)));
        assert_eq!(delayed, ms(109));
        let text = verdict.to_string();
        assert!(text.starts_with("HostStarved: task"), "{text}");
        assert!(text.contains("on worker 2"), "{text}");
        let burned = fared(at(0, 0, 0, 0), at(200 * MS, 150 * MS, 40 * MS, 0)).unwrap();
        assert_eq!(burned.verdict(task, None, worker, ms(109), LIMIT), None);
    }

    #[test]
    fn the_status_file_gives_the_state_and_the_voluntary_switches() {
        let status = "Name:\tdinah-worker-1\nState:\tR (running)\nTgid:\t1\n\
                      voluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t40\n";
        assert_eq!(parse_status(status), Some((true, 12)));
        let sleeping = status.replace("R (running)", "S (sleeping)");
        assert_eq!(parse_status(&sleeping), Some((false, 12)));
        assert_eq!(parse_status("State:\tR (running)\n"), None);
        assert_eq!(parse_status("garbled"), None);
    }

    #[test]
    fn the_watch_reads_this_threads_account_where_linux_keeps_one() {
        let watch = CpuWatch::this_thread(0);
        if watch.paths.is_none() {
            // Not Linux, or no scheduler statistics: nothing to read.
            assert_eq!(watch.look(MIN_WINDOW * 50), None);
            return;
        }
        let early = watch.look(MIN_WINDOW / 2).unwrap();
        assert_eq!(watch.fared(early, ms(1)), None, "a window too short");
        // Burn CPU until the account moves: a kernel may bring a running
        // thread's account up to date only at its scheduler tick (every
        // 4 ms at 250 Hz), so a short burn can read as none. Bounded, far
        // beyond any tick.
        let mut x = 0u64;
        for _ in 0..100_000 {
            for n in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_add(n));
            }
            let account = read(watch.paths.as_ref().unwrap()).unwrap();
            if account.ran > early.1.ran {
                break;
            }
        }
        let now = watch.look(MIN_WINDOW * 50).unwrap();
        let fared = watch.fared(now, ms(100)).expect("a window to judge");
        assert!(fared.ran > Duration::ZERO, "{fared:?} {x}");
        assert!(fared.runnable, "the thread that looks is running");
        assert_eq!(fared.window, ms(50), "from the thread's start");
    }

    #[test]
    fn a_delay_is_judged_from_the_earliest_look_within_it() {
        let watch = CpuWatch {
            paths: None,
            looks: Mutex::new([at(0, 0, 0, 0), at(10 * MS, 0, 0, 1), at(30 * MS, 0, 0, 1)].into()),
        };
        let now = at(40 * MS, MS, 0, 1);
        // A delay of 35 ms started at 5 ms: judged from the look at 10 ms.
        assert_eq!(watch.fared(now, ms(35)).unwrap().window, ms(30));
        // One of 50 ms started before every look: from the earliest.
        assert_eq!(watch.fared(now, ms(50)).unwrap().window, ms(40));
        // One of 5 ms started after every look: from the latest.
        assert_eq!(watch.fared(now, ms(5)).unwrap().window, ms(10));
        // A look less than a millisecond old is not a window.
        let soon = at(30 * MS + MS / 2, 0, 0, 1);
        assert_eq!(watch.fared(soon, ms(1)).unwrap().window, ms(20) + ms(1) / 2);
        // Only the latest looks are kept.
        let watch = CpuWatch::this_thread(0);
        if watch.paths.is_some() {
            for n in 1..=KEPT as u64 * 2 {
                watch.look(n * 2 * MS).unwrap();
            }
            let looks = lock_std(&watch.looks);
            assert_eq!(looks.len(), KEPT);
            assert_eq!(looks.front().unwrap().0, (KEPT as u64 + 1) * 2 * MS);
        }
    }

    #[test]
    fn a_thread_parked_on_a_channel_is_not_runnable() {
        let (watch_tx, watch_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let parked = std::thread::spawn(move || {
            watch_tx.send(CpuWatch::this_thread(0)).unwrap();
            stop_rx.recv().unwrap();
        });
        let watch = watch_rx.recv().unwrap();
        if let Some(paths) = &watch.paths {
            // It parks in `recv` soon after sending; until then it runs.
            let mut asleep = false;
            for _ in 0..10_000 {
                if read(paths).is_some_and(|account| !account.runnable) {
                    asleep = true;
                    break;
                }
                std::thread::yield_now();
            }
            assert!(asleep, "the parked thread never read as asleep");
            let look = watch.look(MIN_WINDOW * 50).unwrap();
            let fared = watch.fared(look, ms(1_000)).expect("a window to judge");
            assert!(!fared.runnable);
            assert!(!fared.starved(ms(1_000), LIMIT));
        }
        stop_tx.send(()).unwrap();
        parked.join().unwrap();
    }
}

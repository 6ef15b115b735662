//! A fork-join batch of a [`WorkerPool`](super::WorkerPool): a whole queue
//! of closures shared out to the workers in shrinking FIFO chunks, with its
//! results handed back in FIFO order and its panic contract.
#![forbid(unsafe_code)]

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe, catch_unwind};

use dinah_core::queue::FifoQueue;

use super::engine::Engine;
use super::job::BatchJob;
use super::spin::WORKER_SPIN;
use super::worker_cell::WorkerCell;
use crate::primitives::{AtomicBool, Mutex, Ordering, Thread, current, lock, park};
use crate::queue::BoundedQueue;
use crate::unwind::{Payload, drop_quietly};

/// The most results reserved up front from a queue's `len()`, a hint from
/// code dinah does not control.
const RESERVE_LIMIT: usize = 1 << 12;

/// Removes every task from `queue`, oldest first. A [`BoundedQueue`] hands
/// over its storage at once; any other queue is popped until it says empty.
pub(super) fn take_all<Q, F>(queue: &mut Q) -> VecDeque<F>
where
    Q: FifoQueue<Item = F> + 'static,
    F: 'static,
{
    if let Some(bounded) = (queue as &mut dyn Any).downcast_mut::<BoundedQueue<F>>() {
        return bounded.take_all();
    }
    let mut tasks = VecDeque::with_capacity(queue.len().min(RESERVE_LIMIT));
    while let Some(task) = queue.pop() {
        tasks.push_back(task);
    }
    tasks
}

/// What one participant ran: its results in the order it ran them, and the
/// runs of consecutive FIFO indices they cover, as `(start, length)`.
type Share<R> = (Vec<(usize, usize)>, Vec<R>);

struct BatchState<F, R> {
    /// Tasks not yet claimed; the front one has FIFO index `next`.
    tasks: VecDeque<F>,
    next: usize,
    /// Chunks claimed and not yet settled.
    in_hand: usize,
    /// Each participant's share.
    results: Vec<Share<R>>,
    panics: Vec<(usize, Payload)>,
    /// Claimed tasks that did not start because the batch stopped.
    unrun: Vec<(usize, Vec<F>)>,
    /// Set once, by whoever settles the last chunk.
    finished: bool,
}

/// One `run` call's tasks, shared by the workers that take part.
///
/// Invariants, under the one `state` lock:
/// 1. A task leaves `tasks` once, in a chunk with its FIFO index range; the
///    chunk is settled once (results, a panic, and the unrun rest).
/// 2. After `stopped`, no chunk is claimed and no claimed task starts.
/// 3. `finished` is set once, by the thread that settles the last chunk
///    when nothing more can be claimed; only then is `done` published and
///    the caller unparked.
pub(super) struct Batch<F, R> {
    state: Mutex<BatchState<F, R>>,
    stopped: AtomicBool,
    done: AtomicBool,
    caller: Thread,
    participants: usize,
}

impl<F, R> Batch<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    pub(super) fn new(tasks: VecDeque<F>, participants: usize) -> Self {
        Self {
            state: Mutex::new(BatchState {
                tasks,
                next: 0,
                in_hand: 0,
                results: Vec::new(),
                panics: Vec::new(),
                unrun: Vec::new(),
                finished: false,
            }),
            stopped: AtomicBool::new(false),
            done: AtomicBool::new(false),
            caller: current(),
            participants,
        }
    }

    /// Claims and runs chunks until none are left. After each chunk, and
    /// before settling it, `count` gets how many of its tasks completed and
    /// panicked: so every task is counted before the caller can see the
    /// batch done.
    fn claim_and_run(&self, count: &dyn Fn(u64, u64)) {
        // One buffer for the chunks claimed here and one for their results,
        // reused from chunk to chunk: a large batch costs each participant a
        // few allocations, not a few per chunk.
        let mut buffer: Vec<F> = Vec::new();
        let mut done: Vec<R> = Vec::new();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut state = lock(&self.state);
        loop {
            if self.stopped.load(Ordering::Relaxed) || state.tasks.is_empty() {
                break;
            }
            let size = (state.tasks.len() / (2 * self.participants)).max(1);
            let start = state.next;
            state.next += size;
            state.in_hand += 1;
            buffer.extend(state.tasks.drain(..size));
            drop(state);

            let before = done.len();
            let mut panic = None;
            let mut chunk = buffer.drain(..);
            for task in chunk.by_ref() {
                match catch_unwind(AssertUnwindSafe(task)) {
                    Ok(result) => done.push(result),
                    Err(payload) => {
                        self.stopped.store(true, Ordering::Relaxed);
                        panic = Some((start + done.len() - before, payload));
                        break;
                    }
                }
                if self.stopped.load(Ordering::Relaxed) {
                    break;
                }
            }
            let rest: Vec<F> = chunk.collect();
            let ran = done.len() - before;
            if ran > 0 {
                runs.push((start, ran));
            }
            let first_unrun = start + ran + usize::from(panic.is_some());
            count(ran as u64, u64::from(panic.is_some()));

            state = lock(&self.state);
            state.in_hand -= 1;
            state.panics.extend(panic);
            if !rest.is_empty() {
                state.unrun.push((first_unrun, rest));
            }
        }
        if !runs.is_empty() {
            state.results.push((runs, done));
        }
        if state.in_hand == 0 && !state.finished {
            state.finished = true;
            drop(state);
            self.done.store(true, Ordering::Release);
            self.caller.unpark();
        }
    }

    /// Takes part from the calling thread, which is not one of the pool's
    /// workers (or is, but runs its own batch).
    pub(super) fn participate_here(&self, engine: &Engine) {
        self.claim_and_run(&|completed, panicked| {
            engine.count_elsewhere(completed, panicked);
        });
    }

    /// Blocks the caller until every task is settled.
    ///
    /// When the workers were awake (`spin`: a run of batches back to back),
    /// the caller looks for the end for a while before it parks, so the next
    /// batch follows at once. When they had to be woken, it parks at once,
    /// as rayon's `install` does: on a machine with no core to spare, a
    /// spinning caller would hold one the waking workers need (measured: a
    /// batch of 256 short tasks on sleeping workers took about three times
    /// as long with the caller spinning).
    pub(super) fn wait(&self, spin: bool) {
        if spin && WORKER_SPIN.until(|| self.done.load(Ordering::Acquire)) {
            return;
        }
        while !self.done.load(Ordering::Acquire) {
            park();
        }
    }

    /// Takes what the workers left, once `done`.
    pub(super) fn settle(&self) -> Settled<F, R> {
        let mut state = lock(&self.state);
        let results = std::mem::take(&mut state.results);
        let mut panics = std::mem::take(&mut state.panics);
        let mut unrun = std::mem::take(&mut state.unrun);
        let rest = std::mem::take(&mut state.tasks);
        drop(state);
        panics.sort_unstable_by_key(|(index, _)| *index);
        unrun.sort_unstable_by_key(|(start, _)| *start);
        let handed_back = unrun.iter().map(|(_, run)| run.len()).sum::<usize>()
            + if panics.is_empty() { 0 } else { rest.len() };
        Settled {
            results,
            panics,
            unrun,
            rest,
            handed_back,
        }
    }
}

impl<F, R> BatchJob for Batch<F, R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    fn participate(&self, worker: &WorkerCell) {
        self.claim_and_run(&|completed, panicked| worker.count(completed, panicked));
    }
}

/// A batch's outcome, ready to be returned or to resume a panic.
pub(super) struct Settled<F, R> {
    pub(super) results: Vec<Share<R>>,
    pub(super) panics: Vec<(usize, Payload)>,
    pub(super) unrun: Vec<(usize, Vec<F>)>,
    pub(super) rest: VecDeque<F>,
    pub(super) handed_back: usize,
}

impl<F, R> Settled<F, R> {
    pub(super) fn finish<Q>(self, queue: &mut Q) -> Vec<R>
    where
        Q: FifoQueue<Item = F> + ?Sized,
    {
        let Settled {
            results,
            panics,
            unrun,
            rest,
            ..
        } = self;
        let mut panics = panics.into_iter();
        let Some((_, first)) = panics.next() else {
            return in_fifo_order(results);
        };
        // Every task that did not start goes back, in FIFO order: the unrun
        // rests of claimed chunks, then the never-claimed tail.
        for task in unrun.into_iter().flat_map(|(_, run)| run).chain(rest) {
            if let Err(refused) = queue.try_push(task) {
                drop_quietly(refused);
            }
        }
        for (_, other) in panics {
            drop_quietly(other);
        }
        for (_, values) in results {
            for result in values {
                drop_quietly(result);
            }
        }
        panic::resume_unwind(first);
    }
}

/// Puts the participants' results in FIFO order. Each participant's runs
/// are in increasing order (it claims in FIFO order), so one pass over all
/// runs sorted by start takes each participant's values in turn. A single
/// participant's values are already in order and are returned as they are.
fn in_fifo_order<R>(results: Vec<Share<R>>) -> Vec<R> {
    if results.len() == 1 {
        return results
            .into_iter()
            .next()
            .map(|(_, values)| values)
            .unwrap_or_default();
    }
    let total = results.iter().map(|(_, values)| values.len()).sum();
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    let mut values = Vec::with_capacity(results.len());
    for (part, (part_runs, part_values)) in results.into_iter().enumerate() {
        runs.extend(part_runs.into_iter().map(|(start, len)| (start, len, part)));
        values.push(part_values.into_iter());
    }
    runs.sort_unstable_by_key(|&(start, _, _)| start);
    let mut flat = Vec::with_capacity(total);
    for (_, len, part) in runs {
        flat.extend(values[part].by_ref().take(len));
    }
    flat
}

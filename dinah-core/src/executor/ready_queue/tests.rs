//! The ready queue's tests: generations past the word's bits, and a waker
//! count that cannot stay exact.

use super::*;
use crate::executor::AsyncExecutor;
use core::pin::pin;
use core::task::Waker;
use std::boxed::Box;

/// A fresh `'static` queue, kept reachable so that Miri does not count
/// it as a leak.
fn leaked() -> &'static ReadyQueue<1> {
    static KEPT: std::sync::Mutex<std::vec::Vec<&'static ReadyQueue<1>>> =
        std::sync::Mutex::new(std::vec::Vec::new());
    let queue: &'static ReadyQueue<1> = Box::leak(Box::new(ReadyQueue::new()));
    KEPT.lock().unwrap().push(queue);
    queue
}

#[test]
fn the_generation_goes_on_past_the_bits_its_word_keeps() {
    let queue = leaked();
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
    let mut first = pin!(Some(async {}));
    let mut second = pin!(Some(async {}));
    let old = executor.try_spawn(first.as_mut()).unwrap();
    executor.tick(4);
    // As if 2^25 - 2 more tasks had come and gone in the slot.
    queue.task_cell(0).age_to(GEN_MASK);
    let new = executor.try_spawn(second.as_mut()).unwrap();
    // The word's bits wrapped to 0; the id's generation did not.
    assert_eq!(queue.word(0).generation(), 0);
    assert_eq!(new.generation(), Some(1 << 24));
    assert_eq!(executor.task_state(new), Some(TaskState::Pending));
    // Ids of earlier generations, with the same low bits or not, name
    // nothing.
    assert_eq!(executor.task_state(TaskId::from_slot(0, 0)), None);
    assert_eq!(executor.task_state(old), None);
    assert_eq!(
        executor.cancel(TaskId::from_slot(0, 0)),
        Err(CancelError::UnknownTask(TaskId::from_slot(0, 0)))
    );
    executor.tick(4);
    assert_eq!(executor.task_state(new), Some(TaskState::Completed));
}

#[test]
fn a_waker_count_that_cannot_stay_exact_panics_and_stays_where_it_was() {
    let queue = leaked();
    let mut executor: AsyncExecutor<'_, 1> = AsyncExecutor::new(queue).unwrap();
    let mut task = pin!(Some(std::future::pending::<()>()));
    executor.try_spawn(task.as_mut()).unwrap();
    let waker = queue.with_waker(0, Waker::clone);
    let refs = &queue.cell(0).refs;
    assert_eq!(refs.load(Ordering::Relaxed), 1);
    refs.store(REFS_LIMIT, Ordering::Relaxed);
    let outcome = std::panic::catch_unwind(|| waker.clone());
    assert!(outcome.is_err(), "a clone past the limit panics");
    assert_eq!(
        refs.load(Ordering::Relaxed),
        REFS_LIMIT,
        "and is not counted"
    );
    refs.store(1, Ordering::Relaxed);
    drop(waker);
    assert_eq!(refs.load(Ordering::Relaxed), 0);
}

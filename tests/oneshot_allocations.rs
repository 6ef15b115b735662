//! A request/reply loop on one thread allocates nothing per `oneshot` once
//! warm: the receiver of each finished channel keeps its cell for the next
//! channel of the same value type made on that thread.
//!
//! Counted with an instrumented global allocator, in a binary of its own
//! so that no other test allocates while it counts.

use std::alloc::System;

use dinah::LocalExecutor;
use dinah::sync::oneshot;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ROUNDS: usize = 200;

#[test]
fn a_warm_request_reply_loop_allocates_no_oneshot() {
    let executor = LocalExecutor::new();
    let region = Region::new(GLOBAL);
    let (warm, counted) = executor.block_on(async {
        let mut counts = [0; 2];
        for count in &mut counts {
            let before = region.change().allocations;
            for n in 0..ROUNDS {
                let (reply, answer) = oneshot::channel::<usize>();
                reply.send(n).expect("the receiver waits");
                assert_eq!(answer.await, Ok(n));
                let (reply, mut answer) = oneshot::named::<String>("reply");
                drop(reply);
                assert!(answer.try_recv().is_err());
            }
            *count = region.change().allocations - before;
        }
        (counts[0], counts[1])
    });
    assert!(warm >= 1, "the first channels allocate their cells");
    assert_eq!(counted, 0, "once warm, no channel allocates");
}

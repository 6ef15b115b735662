//! Send/Sync and other type-level facts, checked at compile time.

use dinah::config::CoreError;
use dinah::queue::{CapacityError, ParallelError};
use dinah::sync::{CancellationHandle, Shared};
use dinah::telemetry::NoClock;
use dinah::telemetry::{MetricsSnapshot, RuntimeMetrics, TraceBuffer, TraceEvent, TraceRing};
use dinah::time::{Interval, Sleep, TimerHandle, Timers};
use dinah::{BoundedQueue, CancellationToken, ReadyQueue, TaskId, TaskQueue, TaskState};

const fn send_sync<T: Send + Sync>() {}
const fn clone_send_sync_static<T: Clone + Send + Sync + 'static>() {}
const fn copy<T: Copy>() {}

const _: () = {
    // Statics shared with interrupt handlers or threads must be Sync.
    send_sync::<CancellationToken>();
    send_sync::<RuntimeMetrics>();
    send_sync::<TraceRing<4>>();
    send_sync::<TraceBuffer>();
    // The wake state is a `static` that interrupt handlers and threads share.
    send_sync::<ReadyQueue<4>>();
    send_sync::<TaskQueue<fn(), 4>>();
    send_sync::<BoundedQueue<fn()>>();
    send_sync::<Shared<u32>>();
    send_sync::<CoreError>();
    send_sync::<ParallelError>();
    send_sync::<CapacityError>();
    // A firmware's timer store is a `static` shared with interrupt handlers.
    send_sync::<Timers<4, NoClock>>();
    // A hosted sleep moves with a `Send` future submitted from another
    // thread, like tokio's.
    clone_send_sync_static::<TimerHandle>();
    send_sync::<Sleep<TimerHandle>>();
    send_sync::<Interval<TimerHandle>>();
    send_sync::<Sleep<&'static Timers<4, NoClock>>>();
    // Channels, semaphores and task pools are statics that tasks, threads and
    // interrupt handlers share; their std variants move between threads.
    send_sync::<dinah::sync::Channel<u32, 4>>();
    send_sync::<dinah::sync::Semaphore>();
    send_sync::<dinah::executor::TaskPool<u32, 4, 2>>();
    send_sync::<dinah::sync::channel::Sender<'static, u32, 4>>();
    clone_send_sync_static::<dinah::sync::mpsc::Sender<u32>>();
    send_sync::<dinah::sync::mpsc::Receiver<u32>>();
    clone_send_sync_static::<dinah::sync::SharedSemaphore>();
    send_sync::<dinah::sync::OwnedPermit>();
    send_sync::<dinah::sync::OwnedAcquire>();
    send_sync::<dinah::sync::mpsc::SendFuture<'static, u32>>();
    send_sync::<dinah::sync::SendError<u32>>();
    clone_send_sync_static::<dinah::pool::PoolSpawner>();
    send_sync::<dinah::pool::Spawning<fn() -> u32, u32>>();
    // The owned cancellation handle moves anywhere, like tokio-util's token.
    clone_send_sync_static::<CancellationHandle>();
    // Plain values are Copy.
    copy::<TaskId>();
    copy::<TaskState>();
    copy::<TraceEvent>();
    copy::<MetricsSnapshot>();
};

#[test]
fn statics_can_be_built_in_const_context() {
    static TOKEN: CancellationToken = CancellationToken::new();
    static METRICS: RuntimeMetrics = RuntimeMetrics::new();
    static TRACE: TraceRing<8> = TraceRing::new();
    assert!(!TOKEN.is_cancellation_requested());
    assert_eq!(METRICS.snapshot(), MetricsSnapshot::default());
    assert_eq!(TRACE.capacity(), 8);
    static TIMERS: Timers<8, NoClock> = Timers::new(NoClock);
    assert_eq!(TIMERS.next_expiry(), None);
}

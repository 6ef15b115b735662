//! Loom model of the trace buffer: concurrent producers and a drainer lose
//! no event and count every refusal.
#![cfg(loom)]

use dinah_core::TaskId;
use dinah_core::telemetry::{TraceEvent, TraceEventKind};
use dinah_std::telemetry::TraceBuffer;
use loom::sync::Arc;
use loom::thread;

#[test]
fn concurrent_record_and_drain_lose_nothing() {
    loom::model(|| {
        let trace = Arc::new(TraceBuffer::new(1).unwrap());
        let producers: Vec<_> = (1..=2u64)
            .map(|task| {
                let trace = Arc::clone(&trace);
                thread::spawn(move || {
                    let event =
                        TraceEvent::new(TaskId::new(task).unwrap(), TraceEventKind::Started);
                    u64::from(trace.record(event).is_err())
                })
            })
            .collect();
        let early = trace.drain();
        let refused: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
        let late = trace.drain();

        let accepted = early.len() + late.len();
        assert_eq!(
            accepted as u64 + refused,
            2,
            "every event is either kept or handed back"
        );
        assert_eq!(trace.rejected(), refused);
        assert!(early.len() <= 1 && late.len() <= 1, "never above capacity");
        assert!(trace.is_empty());
    });
}

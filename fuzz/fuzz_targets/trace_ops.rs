//! Record/pop/drain/clear/snapshot sequences on `TraceRing` and
//! `TraceBuffer` against a bounded `VecDeque` model with a refusal count.
#![no_main]

use dinah::telemetry::{TraceBuffer, TraceRing};
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/models.rs"]
mod models;

// Links the host critical-section implementation that TraceRing needs.
use critical_section as _;

fuzz_target!(|bytes: &[u8]| {
    models::check_trace::<TraceRing<{ models::CAP }>>(bytes);
    models::check_trace::<TraceBuffer>(bytes);
});

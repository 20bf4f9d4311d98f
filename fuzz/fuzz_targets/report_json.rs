//! Fuzz the harness `report.json` decoder and the event-stream checks.
#![no_main]
use docket_verifier::harness::{RunReport, check_events};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(report) = RunReport::parse(data) {
        // Feed the same bytes as an event stream too.
        let _ = check_events(&String::from_utf8_lossy(data), &report);
    }
});

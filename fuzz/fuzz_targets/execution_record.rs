//! Fuzz `ExecutionRecord::parse`: never panics; accepted records hash correctly.
#![no_main]
use docket_verifier::execution::ExecutionRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = ExecutionRecord::parse(data) {
        assert!(r.evidence_hash.eq_ignore_ascii_case(&r.recompute_evidence_hash()));
    }
});

//! Fuzz `ExecutionRecord::parse`: never panics; answers like `parse_checked`; accepted records hash correctly.
#![no_main]
use docket_verifier::execution::ExecutionRecord;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = ExecutionRecord::parse(data);
    assert_eq!(parsed, ExecutionRecord::parse_checked(data));
    if let Ok(r) = parsed {
        assert!(r.evidence_hash.eq_ignore_ascii_case(&r.recompute_evidence_hash()));
    }
});

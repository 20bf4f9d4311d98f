//! Fuzz `Submission::parse`: never panics; accepted documents obey the seed rules.
#![no_main]
use docket_verifier::submit::{SubmitStatus, Submission};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = Submission::parse(data) {
        assert_eq!(s.schema_version, "scc.submit.v1");
        if s.status == SubmitStatus::Done {
            assert_eq!(s.exit_code, 0);
        }
    }
});

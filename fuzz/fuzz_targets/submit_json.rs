//! Fuzz `Submission::parse`: never panics; answers like `parse_checked`; accepted documents obey the seed rules.
#![no_main]
use docket_verifier::submit::{SubmitStatus, Submission};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = Submission::parse(data);
    assert_eq!(parsed, Submission::parse_checked(data));
    if let Ok(s) = parsed {
        assert_eq!(s.schema_version, "scc.submit.v1");
        if s.status == SubmitStatus::Done {
            assert_eq!(s.exit_code, 0);
        }
    }
});

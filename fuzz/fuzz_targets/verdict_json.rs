//! Fuzz `Verdict::parse` and `VerifierOutput::parse`: never panic; `Verdict::parse`
//! answers like `Verdict::parse_checked`; no check, no PASS.
#![no_main]
use docket_verifier::verdict::Outcome;
use docket_verifier::{Verdict, VerifierOutput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = Verdict::parse(data);
    assert_eq!(parsed, Verdict::parse_checked(data));
    if let Ok(v) = parsed
        && v.verdict == Outcome::Pass
    {
        assert!(!v.checks.is_empty() && v.checks.values().all(|ok| *ok));
    }
    let _ = VerifierOutput::parse(data);
});

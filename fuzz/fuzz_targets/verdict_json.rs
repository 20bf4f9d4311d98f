//! Fuzz `Verdict::parse` and `VerifierOutput::parse`: never panic; no check, no PASS.
#![no_main]
use docket_verifier::verdict::Outcome;
use docket_verifier::{Verdict, VerifierOutput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = Verdict::parse(data)
        && v.verdict == Outcome::Pass
    {
        assert!(!v.checks.is_empty() && v.checks.values().all(|ok| *ok));
    }
    let _ = VerifierOutput::parse(data);
});

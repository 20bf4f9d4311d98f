//! Fuzz `TaskContract::parse`: never panics; an accepted contract's pins compile.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(contract) = docket_verifier::TaskContract::parse(data) {
        assert!(contract.scope().is_ok());
        assert!(!contract.pins.allowed_paths.is_empty());
    }
});

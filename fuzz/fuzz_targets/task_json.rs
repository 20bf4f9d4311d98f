//! Fuzz `TaskContract::parse`: never panics; answers like `parse_checked`; an accepted contract's pins compile.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = docket_verifier::TaskContract::parse(data);
    assert_eq!(parsed, docket_verifier::TaskContract::parse_checked(data));
    if let Ok(contract) = parsed {
        assert!(contract.scope().is_ok());
        assert!(!contract.pins.allowed_paths.is_empty());
    }
});

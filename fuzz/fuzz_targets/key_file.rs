//! Untrusted hex public keys → `keys::parse_public`: never panics, never
//! accepts a weak key.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(k) = docket_domain::keys::parse_public(text) {
        assert!(!k.is_weak());
    }
});

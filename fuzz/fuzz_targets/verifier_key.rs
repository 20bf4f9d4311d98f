//! Untrusted C2SP verifier key text → `NoteVerifier::parse`: never panics;
//! what parses formats back to itself.
#![no_main]
use docket_domain::checkpoint::NoteVerifier;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(v) = NoteVerifier::parse(text) {
        let again = NoteVerifier::parse(&v.to_vkey()).expect("a parsed key formats to a parsable key");
        assert_eq!(again.key_id, v.key_id);
    }
});

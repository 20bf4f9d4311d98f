//! Untrusted note text → `open_note` and `Checkpoint::parse_body`: never
//! panics, and never accepts a note the fixed key did not sign.
#![no_main]
use docket_domain::checkpoint::{Checkpoint, NoteVerifier, open_note};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = Checkpoint::parse_body(text);
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]).verifying_key();
    let Ok(verifier) = NoteVerifier::new("fuzz.example/log", key) else { return };
    // Without the private key the fuzzer cannot forge a valid signature.
    assert!(open_note(text, &verifier).is_err());
});

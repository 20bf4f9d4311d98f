//! Untrusted bytes → `Event::decode`: never panics; whatever decodes
//! re-encodes to the same bytes (the encoding is canonical).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(event) = docket_domain::Event::decode(data) {
        assert_eq!(event.encode(), data, "canonical: one event, one byte string");
        let _ = event.statement().verify();
    }
});

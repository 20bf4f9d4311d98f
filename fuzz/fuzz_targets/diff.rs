//! Fuzz the unified-diff parser: never panics; accepted hunks add up.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(patch) = docket_verifier::diff::parse(text)
    {
        for h in patch.files.iter().flat_map(|f| &f.hunks) {
            assert_eq!(h.context + h.removed, h.old_count);
            assert_eq!(h.context + h.added, h.new_count);
        }
    }
});

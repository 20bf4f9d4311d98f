//! Untrusted proof material → `verify_inclusion` / `verify_consistency`:
//! never panics for any sizes, indices or proof lengths.
#![no_main]
use docket_domain::merkle::{Hash, verify_consistency, verify_inclusion};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 24 + 64 {
        return;
    }
    let a = u64::from_be_bytes(data[0..8].try_into().unwrap());
    let b = u64::from_be_bytes(data[8..16].try_into().unwrap());
    let c = u64::from_be_bytes(data[16..24].try_into().unwrap());
    let leaf: Hash = data[24..56].try_into().unwrap();
    let root: Hash = data[56..88].try_into().unwrap();
    let proof: Vec<Hash> = data[88..].chunks_exact(32).map(|c| c.try_into().unwrap()).collect();
    let _ = verify_inclusion(&leaf, a, b, &proof, &root);
    let _ = verify_consistency(a, c, &leaf, &root, &proof);
});

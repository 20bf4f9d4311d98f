//! Decoders of untrusted bytes never panic (the in-CI complement of the
//! cargo-fuzz targets in `fuzz/`): events, checkpoint notes, verifier keys,
//! proofs.

use docket_log::checkpoint::{self, Checkpoint, NoteVerifier};
use docket_log::merkle::{self, Hash};
use docket_log::{Event, Statement};
use proptest::prelude::*;

fn valid_event_bytes() -> Vec<u8> {
    let key = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
    let st = Statement::sign("x-prop", b"{\"a\":1}".to_vec(), &key);
    Event {
        format: 1,
        seq: 9,
        recorded_at_ms: 1,
        prev_hash: [3; 32],
        kind: st.kind,
        author: st.author,
        payload: st.payload,
        signature: st.signature,
    }
    .encode()
}

proptest! {
    #[test]
    fn event_decode_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(e) = Event::decode(&bytes) {
            prop_assert_eq!(e.encode(), bytes);
        }
    }

    #[test]
    fn mutated_events_never_verify_as_the_original(pos in 0usize..200, bit in 0u8..8) {
        let bytes = valid_event_bytes();
        let mut m = bytes.clone();
        let pos = pos % m.len();
        m[pos] ^= 1 << bit;
        if let Ok(e) = Event::decode(&m) {
            prop_assert_eq!(e.encode(), m.clone());
            // A flipped bit in the signed parts breaks the signature; in the
            // envelope (seq, time, prev_hash) it changes the leaf hash.
            prop_assert!(e.statement().verify().is_err() || e.leaf_hash() != merkle::leaf_hash(&bytes));
        }
    }

    #[test]
    fn notes_and_keys_never_panic(text in ".{0,300}") {
        let _ = Checkpoint::parse_body(&text);
        let _ = NoteVerifier::parse(&text);
        let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
        let v = NoteVerifier::new("prop.example/log", key.verifying_key()).unwrap();
        prop_assert!(checkpoint::open_note(&text, &v).is_err());
    }

    #[test]
    fn proof_verification_never_panics(
        index in any::<u64>(), size in any::<u64>(), other in any::<u64>(),
        proof in prop::collection::vec(any::<[u8; 32]>(), 0..70),
    ) {
        let leaf: Hash = [1; 32];
        let root: Hash = [2; 32];
        let _ = merkle::verify_inclusion(&leaf, index, size, &proof, &root);
        let _ = merkle::verify_consistency(index, other, &leaf, &root, &proof);
    }
}

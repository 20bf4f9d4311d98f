//! Our own encoding vectors (`tests/vectors/events/events.json`): fixed keys
//! and fields → signing message, signature, canonical bytes, leaf hash. An
//! independent implementation must reproduce every byte. Regenerate with
//! `UPDATE_VECTORS=1 cargo test -p docket-domain --test event_vectors`.

use docket_log::event::{EVENT_FORMAT, signing_message};
use docket_log::{Event, Statement, merkle};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

fn vectors() -> Value {
    let cases = [
        (
            [1u8; 32],
            0u64,
            1_767_225_600_000u64,
            [0u8; 32],
            "ledger.genesis",
            &b"{\"origin\":\"docket.example/log\"}"[..],
        ),
        (
            [2u8; 32],
            1,
            1_767_225_600_001,
            [0xab; 32],
            "x-note",
            &b""[..],
        ),
        (
            [3u8; 32],
            41,
            1_767_225_601_234,
            [0x11; 32],
            "task.registered",
            &b"{\"task_id\":\"7d0b8c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e\"}"[..],
        ),
    ];
    let mut out = Vec::new();
    for (seed, seq, time, prev, kind, payload) in cases {
        let key = SigningKey::from_bytes(&seed);
        let st = Statement::sign(kind, payload.to_vec(), &key);
        let event = Event {
            format: EVENT_FORMAT,
            seq,
            recorded_at_ms: time,
            prev_hash: prev,
            kind: st.kind.clone(),
            author: st.author,
            payload: st.payload.clone(),
            signature: st.signature,
        };
        let bytes = event.encode();
        out.push(json!({
            "author_secret_seed": hex::encode(seed),
            "author_public_key": hex::encode(st.author),
            "seq": seq,
            "recorded_at_ms": time,
            "prev_hash": hex::encode(prev),
            "kind": kind,
            "payload_hex": hex::encode(payload),
            "signing_message_hex": hex::encode(signing_message(kind, payload)),
            "signature": hex::encode(st.signature),
            "statement_digest": hex::encode(st.digest()),
            "event_hex": hex::encode(&bytes),
            "leaf_hash": hex::encode(merkle::leaf_hash(&bytes)),
        }));
    }
    json!({
        "description": "Docket event encoding vectors: see docs/FORMAT.md §2-§4. Ed25519 signatures are deterministic (RFC 8032), so signature bytes are reproducible from the seed.",
        "events": out,
    })
}

#[test]
fn event_vectors_match_the_committed_file() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/vectors/events/events.json");
    let fresh = vectors();
    if std::env::var_os("UPDATE_VECTORS").is_some() || !path.exists() {
        std::fs::write(&path, serde_json::to_string_pretty(&fresh).unwrap() + "\n").unwrap();
    }
    let stored: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        stored, fresh,
        "encoding changed: this breaks every independent verifier"
    );
    // And every stored vector decodes and verifies.
    for v in stored["events"].as_array().unwrap() {
        let bytes = hex::decode(v["event_hex"].as_str().unwrap()).unwrap();
        let e = Event::decode(&bytes).unwrap();
        e.statement().verify().unwrap();
        assert_eq!(hex::encode(e.leaf_hash()), v["leaf_hash"].as_str().unwrap());
    }
}

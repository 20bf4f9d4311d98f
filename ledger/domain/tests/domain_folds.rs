//! The fold is strict: an admitted event always folds, and an event that
//! does not (a payload that does not decode for its kind, an unknown kind,
//! a reference the state does not hold) is an error naming its sequence
//! number that changes nothing. Views of partial logs fold it as nothing.

mod domain_support;

use docket_domain::event::{EVENT_FORMAT, Event};
use docket_domain::{LedgerError, LedgerState};
use domain_support::*;

fn event(seq: u64, kind: &str, payload: &[u8]) -> Event {
    Event {
        format: EVENT_FORMAT,
        seq,
        recorded_at_ms: 1_770_647_400_000 + seq,
        prev_hash: [0; 32],
        kind: kind.into(),
        author: [7; 32],
        payload: payload.to_vec(),
        signature: [0; 64],
    }
}

#[test]
fn an_event_that_does_not_fold_is_an_error_and_changes_nothing() {
    let fx = Fixture::new();
    let state: LedgerState = fx.docket.ledger().state().clone();
    let next = state.applied;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // A payload that does not decode for its kind.
        ("task.registered", b"{}".to_vec()),
        ("check.recorded", b"not json".to_vec()),
        // A kind nobody admits.
        ("bogus.kind", b"{}".to_vec()),
        // A reference the state does not hold.
        (
            "check.recorded",
            serde_json::to_vec(&check_json(TASK, "scope_valid", true)).unwrap(),
        ),
        (
            "key.revoked",
            format!(r#"{{"public_key":"{}"}}"#, "ab".repeat(32)).into_bytes(),
        ),
    ];
    for (kind, payload) in cases {
        let e = event(next, kind, &payload);
        let mut strict = state.clone();
        match strict.apply(&e) {
            Err(LedgerError::Corrupt { location, .. }) => {
                assert!(location.contains(&format!("event {next}")), "{location}")
            }
            other => panic!("{kind}: expected Corrupt, got {other:?}"),
        }
        assert_eq!(strict, state, "{kind}: a failed fold changed the state");
        // A partial view counts it and folds nothing.
        let mut partial = state.clone();
        assert!(partial.apply_partial(&e).is_err());
        assert_eq!(partial.applied, next + 1);
        assert_eq!(partial.domain, state.domain);
        assert_eq!(partial.keys, state.keys);
    }
    // An extension folds (to nothing).
    let mut s = state.clone();
    s.apply(&event(next, "x-note", b"opaque")).unwrap();
    assert_eq!(s.applied, next + 1);
}

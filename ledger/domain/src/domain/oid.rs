//! Evidence OIDs: ULIDs minted deterministically from the registering event,
//! so that replay reproduces every OID.
//!
//! `OID = ULID(timestamp = event.recorded_at_ms,
//!             random  = first 10 bytes of SHA-256("docket/v1/oid\0" || statement digest))`
//!
//! where the statement digest is [`crate::event::Statement::digest`]
//! (`SHA-256("docket/v1/statement\0" || author || signing message)`). The
//! 80 "random" bits are read big-endian. The text form is the ULID's 26
//! Crockford base-32 characters (upper case), e.g. `01KGCV31W0C42YQHMVAT6FSR1H`.

use sha2::{Digest, Sha256};
use ulid::Ulid;

use crate::event::{Event, Statement};
use crate::merkle::Hash;

/// Domain separator of OID minting.
pub const OID_PREFIX: &[u8] = b"docket/v1/oid\0";

/// Mints the OID of a statement appended at `recorded_at_ms`.
pub fn mint(recorded_at_ms: u64, statement_digest: &Hash) -> String {
    let mut h = Sha256::new();
    h.update(OID_PREFIX);
    h.update(statement_digest);
    let d = h.finalize();
    let mut random = [0u8; 16];
    random[6..].copy_from_slice(&d[..10]);
    Ulid::from_parts(recorded_at_ms, u128::from_be_bytes(random)).to_string()
}

/// The OID an `evidence.registered` event minted. Computes the statement
/// digest of [`Statement::digest`] from the event's fields without copying
/// the payload (a test pins the two together).
pub fn of_event(event: &Event) -> String {
    // The signing message, fed piecewise: "docket/v1/" || kind || 0x00 || SHA-256(payload).
    let mut h = Sha256::new();
    h.update(b"docket/v1/statement\0");
    h.update(event.author);
    h.update(crate::event::SIGNING_PREFIX);
    h.update(event.kind.as_bytes());
    h.update([0u8]);
    h.update(Sha256::digest(&event.payload));
    mint(event.recorded_at_ms, &h.finalize().into())
}

/// The OID a statement would get if appended at `recorded_at_ms`.
pub fn of_statement(stmt: &Statement, recorded_at_ms: u64) -> String {
    mint(recorded_at_ms, &stmt.digest())
}

/// Whether `s` is a well-formed OID (26 Crockford base-32 characters, upper
/// case as minted).
pub fn is_oid(s: &str) -> bool {
    s.len() == 26 && Ulid::from_string(s).is_ok_and(|u| u.to_string() == s)
}

/// The ledger time (Unix ms) encoded in an OID.
pub fn timestamp_ms(oid: &str) -> Option<u64> {
    Ulid::from_string(oid).ok().map(|u| u.timestamp_ms())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_event_uses_the_statement_digest() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let st = Statement::sign("evidence.registered", b"{\"a\":1}".to_vec(), &key);
        let event = Event {
            format: crate::event::EVENT_FORMAT,
            seq: 9,
            recorded_at_ms: 1_770_647_400_000,
            prev_hash: [0; 32],
            kind: st.kind.clone(),
            author: st.author,
            payload: st.payload.clone(),
            signature: st.signature,
        };
        assert_eq!(of_event(&event), mint(event.recorded_at_ms, &st.digest()));
        assert_eq!(of_event(&event), of_statement(&st, event.recorded_at_ms));
    }

    #[test]
    fn deterministic_and_time_ordered() {
        let d = [7u8; 32];
        let a = mint(1_770_647_400_000, &d);
        assert_eq!(a, mint(1_770_647_400_000, &d));
        assert_eq!(a.len(), 26);
        assert!(is_oid(&a));
        assert_eq!(timestamp_ms(&a), Some(1_770_647_400_000));
        let b = mint(1_770_647_400_001, &d);
        assert!(b > a, "ULIDs sort by time");
        assert_ne!(mint(1_770_647_400_000, &[8u8; 32]), a);
        assert!(!is_oid(&a.to_lowercase()));
        assert!(!is_oid("not-an-oid"));
        // Test vector: the random part is SHA-256(prefix || digest)[..10].
        let mut h = Sha256::new();
        h.update(OID_PREFIX);
        h.update(d);
        let r = h.finalize();
        let u = Ulid::from_string(&a).unwrap();
        assert_eq!(u.random().to_be_bytes()[6..], r[..10]);
    }
}

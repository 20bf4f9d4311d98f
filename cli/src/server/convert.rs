//! Conversions between wire messages (`docket_proto::v1`) and ledger types.

use docket_domain::checkpoint::Checkpoint;
use docket_domain::merkle;
use docket_domain::{Event, Receipt, Statement};
use docket_proto::v1 as pb;
use tonic::Status;

use super::status;

/// Milliseconds as the wire's `int64` (saturating; ledger times are far below).
#[must_use]
pub fn ms_i64(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// Checks a wire statement's shape and, when `kinds` is not empty, that its
/// kind is one the RPC accepts. Every problem is listed at once.
pub fn statement(s: &pb::SignedStatement, kinds: &[&str]) -> Result<Statement, Status> {
    let mut violations = Vec::new();
    if s.kind.is_empty() {
        violations.push("statement.kind is empty".to_string());
    } else if !kinds.is_empty() && !kinds.contains(&s.kind.as_str()) {
        violations.push(format!(
            "statement.kind {:?} is not accepted by this call (expected {})",
            s.kind,
            kinds.join(" or ")
        ));
    }
    let author: Option<[u8; 32]> = s.author_public_key.as_slice().try_into().ok();
    if author.is_none() {
        violations.push(format!(
            "statement.author_public_key must be 32 raw bytes, got {}",
            s.author_public_key.len()
        ));
    }
    let signature: Option<[u8; 64]> = s.signature.as_slice().try_into().ok();
    if signature.is_none() {
        violations.push(format!(
            "statement.signature must be 64 raw bytes, got {}",
            s.signature.len()
        ));
    }
    match (author, signature) {
        (Some(author), Some(signature)) if violations.is_empty() => Ok(Statement {
            kind: s.kind.clone(),
            payload: s.payload.clone(),
            author,
            signature,
        }),
        _ => Err(status::invalid(&violations)),
    }
}

/// The wire statement of a ledger statement (for clients).
#[must_use]
pub fn statement_to_proto(s: &Statement) -> pb::SignedStatement {
    pb::SignedStatement {
        kind: s.kind.clone(),
        payload: s.payload.clone(),
        author_public_key: s.author.to_vec(),
        signature: s.signature.to_vec(),
    }
}

/// The wire receipt of a durable append.
#[must_use]
pub fn receipt(r: &Receipt, kind: &str) -> pb::AppendReceipt {
    pb::AppendReceipt {
        seq: r.seq,
        leaf_hash: r.leaf_hash.to_vec(),
        recorded_at_unix_ms: ms_i64(r.recorded_at_ms),
        duplicate: r.duplicate,
        kind: kind.to_string(),
    }
}

/// The wire event of canonical event bytes read from the store (bytes that
/// no longer decode are corruption: `DATA_LOSS`).
pub fn event(bytes: Vec<u8>) -> Result<pb::Event, Status> {
    let e = Event::decode(&bytes).map_err(|e| {
        status::to_status(&docket_domain::LedgerError::Corrupt {
            location: "stored event".into(),
            detail: e.to_string(),
        })
    })?;
    Ok(pb::Event {
        seq: e.seq,
        leaf_hash: merkle::leaf_hash(&bytes).to_vec(),
        canonical: bytes,
        kind: e.kind,
        author_public_key: e.author.to_vec(),
        payload: e.payload,
        recorded_at_unix_ms: ms_i64(e.recorded_at_ms),
        prev_hash: e.prev_hash.to_vec(),
        signature: e.signature.to_vec(),
    })
}

/// The wire checkpoint.
#[must_use]
pub fn checkpoint(cp: &Checkpoint, note: String, verifier_key: String) -> pb::Checkpoint {
    pb::Checkpoint {
        note,
        size: cp.size,
        root: cp.root.to_vec(),
        verifier_key,
    }
}

/// The domain's point in history for a wire `AsOf` (unset = latest).
pub fn as_of(a: Option<&pb::AsOf>) -> Result<docket_domain::domain::AsOf, Status> {
    use docket_domain::domain::AsOf;
    match a.and_then(|a| a.point.as_ref()) {
        None => Ok(AsOf::Latest),
        Some(pb::as_of::Point::Seq(s)) => Ok(AsOf::Seq(*s)),
        Some(pb::as_of::Point::Time(t)) => {
            match docket_domain::domain::payloads::rfc3339_ms(t)
                .and_then(|ms| u64::try_from(ms).ok())
            {
                Some(ms) => Ok(AsOf::Time(ms)),
                None => Err(status::invalid(&[format!(
                    "as_of.time {t:?} is not an RFC 3339 time after 1970"
                )])),
            }
        }
    }
}

/// Raw bytes of a value whose text form is hex (a hex string, or the
/// domain's 32-byte hex newtypes); empty when it is not hex.
#[must_use]
pub fn raw(v: &impl std::fmt::Display) -> Vec<u8> {
    unhex(&v.to_string())
}

/// Raw bytes of a hex string (empty when it is not hex).
#[must_use]
pub fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap_or_default()
}

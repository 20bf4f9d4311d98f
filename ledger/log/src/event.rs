//! The event envelope, its canonical bytes, and the author signing message.
//!
//! Canonical encoding: bincode 2.0.1 with one fixed configuration — big-endian,
//! fixed-width integers (`u64` lengths prefix strings and byte vectors, arrays
//! have no prefix). The bytes that are hashed into the Merkle tree are exactly
//! the bytes stored. See `docs/FORMAT.md` §Event for the byte layout.

use bincode::{Decode, Encode};
use sha2::{Digest, Sha256};

use crate::error::{LogError, Result};
use crate::merkle::{self, Hash};

/// Envelope format version written into every event.
pub const EVENT_FORMAT: u8 = 1;
/// Largest payload a statement may carry (bytes).
pub const MAX_PAYLOAD: usize = 256 << 10;
/// Longest kind name (bytes).
pub const MAX_KIND: usize = 64;
/// Largest canonical event: fixed fields plus the maximal kind and payload.
pub const MAX_EVENT_BYTES: usize = 1 + 8 + 8 + 32 + 8 + MAX_KIND + 32 + 8 + MAX_PAYLOAD + 64;
/// Domain separator prefix of the author signing message.
pub const SIGNING_PREFIX: &[u8] = b"docket/v1/";

type Config = bincode::config::Configuration<
    bincode::config::BigEndian,
    bincode::config::Fixint,
    bincode::config::Limit<MAX_EVENT_BYTES>,
>;

const fn config() -> Config {
    bincode::config::standard()
        .with_big_endian()
        .with_fixed_int_encoding()
        .with_limit::<MAX_EVENT_BYTES>()
}

/// One entry of the log: the ledger's envelope around an author's statement.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct Event {
    /// Always [`EVENT_FORMAT`].
    pub format: u8,
    /// Sequence number = RFC 9162 leaf index; genesis is 0.
    pub seq: u64,
    /// Ledger clock, Unix milliseconds; never decreases along the log.
    pub recorded_at_ms: u64,
    /// Leaf hash of event `seq - 1` (all zeros for genesis).
    pub prev_hash: [u8; 32],
    /// Statement kind, e.g. `key.registered`.
    pub kind: String,
    /// Author's ed25519 public key.
    pub author: [u8; 32],
    /// Payload bytes exactly as the author signed them.
    pub payload: Vec<u8>,
    /// Ed25519 signature over [`signing_message`]`(kind, payload)`.
    pub signature: [u8; 64],
}

impl Event {
    /// The canonical bytes of this event (what is stored and hashed).
    pub fn encode(&self) -> Vec<u8> {
        // Invariant: encoding into a Vec cannot fail for this plain struct;
        // the size limit only binds decoding of untrusted input, and every
        // Event is built from a Statement whose sizes were checked.
        bincode::encode_to_vec(self, config()).expect("event encodes")
    }

    /// Parses canonical bytes: exact length, known format, valid kind, and
    /// re-encoding gives the same bytes (so there is one encoding per event).
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let (event, used): (Event, usize) = bincode::decode_from_slice(bytes, config())
            .map_err(|e| LogError::malformed("event", e.to_string()))?;
        if used != bytes.len() {
            return Err(LogError::malformed(
                "event",
                format!("{} trailing bytes", bytes.len() - used),
            ));
        }
        if event.format != EVENT_FORMAT {
            return Err(LogError::malformed(
                "event",
                format!("unknown format {}", event.format),
            ));
        }
        validate_kind(&event.kind)?;
        if event.payload.len() > MAX_PAYLOAD {
            return Err(LogError::malformed("event", "payload too large"));
        }
        Ok(event)
    }

    /// RFC 9162 leaf hash of the canonical bytes.
    pub fn leaf_hash(&self) -> Hash {
        merkle::leaf_hash(&self.encode())
    }

    /// The author statement this event carries.
    pub fn statement(&self) -> Statement {
        Statement {
            kind: self.kind.clone(),
            payload: self.payload.clone(),
            author: self.author,
            signature: self.signature,
        }
    }

    /// The digest of the statement this event carries
    /// ([`Statement::digest`]), without copying its payload.
    pub fn statement_digest(&self) -> Hash {
        statement_digest(&self.author, &self.kind, &self.payload)
    }

    /// The author signing message of this event.
    pub fn signing_message(&self) -> Vec<u8> {
        signing_message(&self.kind, &self.payload)
    }
}

/// What an author sends: kind, payload, public key and signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub kind: String,
    pub payload: Vec<u8>,
    pub author: [u8; 32],
    pub signature: [u8; 64],
}

impl Statement {
    /// Signs `payload` as `kind` with `key`.
    pub fn sign(kind: &str, payload: Vec<u8>, key: &ed25519_dalek::SigningKey) -> Self {
        use ed25519_dalek::Signer as _;
        let signature = key.sign(&signing_message(kind, &payload)).to_bytes();
        Self {
            kind: kind.to_string(),
            payload,
            author: key.verifying_key().to_bytes(),
            signature,
        }
    }

    /// Checks shape limits: kind syntax and payload size.
    pub fn check_shape(&self) -> Result<()> {
        validate_kind(&self.kind)?;
        if self.payload.len() > MAX_PAYLOAD {
            return Err(LogError::ResourceExhausted(format!(
                "payload is {} bytes, the limit is {MAX_PAYLOAD}",
                self.payload.len()
            )));
        }
        Ok(())
    }

    /// Verifies the author signature under the one rule
    /// ([`crate::signature`]), alone.
    pub fn verify(&self) -> Result<()> {
        crate::signature::verify(
            &self.author,
            &signing_message(&self.kind, &self.payload),
            &self.signature,
        )
        .map_err(|e| LogError::BadSignature {
            seq: None,
            detail: e.to_string(),
        })
    }

    /// Digest identifying this statement for idempotency: same author, kind
    /// and payload is the same statement.
    pub fn digest(&self) -> Hash {
        statement_digest(&self.author, &self.kind, &self.payload)
    }
}

/// `SHA-256("docket/v1/statement\0" || author || signing message)`: the
/// idempotency digest of a statement (FORMAT.md §2).
fn statement_digest(author: &[u8; 32], kind: &str, payload: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update(b"docket/v1/statement\0");
    h.update(author);
    h.update(signing_message(kind, payload));
    h.finalize().into()
}

/// The message an author signs: `"docket/v1/" || kind || 0x00 || SHA-256(payload)`.
pub fn signing_message(kind: &str, payload: &[u8]) -> Vec<u8> {
    let mut msg = Vec::with_capacity(SIGNING_PREFIX.len() + kind.len() + 1 + 32);
    msg.extend_from_slice(SIGNING_PREFIX);
    msg.extend_from_slice(kind.as_bytes());
    msg.push(0);
    msg.extend_from_slice(&Sha256::digest(payload));
    msg
}

/// Kind names: 1..=64 bytes of `[a-z0-9._-]`, starting with a letter.
pub fn validate_kind(kind: &str) -> Result<()> {
    let ok = !kind.is_empty()
        && kind.len() <= MAX_KIND
        && kind.as_bytes()[0].is_ascii_lowercase()
        && kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(LogError::malformed(
            "kind",
            format!("{kind:?} is not 1..=64 bytes of [a-z0-9._-] starting with a letter"),
        ))
    }
}

/// Verifies many events' author signatures under the one rule, batched on
/// chunks across all cores. Returns the indices (into `events`) whose
/// signatures fail; each answer is what [`Statement::verify`] gives alone.
pub fn verify_signatures<E: AsRef<Event> + Sync>(events: &[E]) -> Vec<usize> {
    let items: Vec<(&[u8; 32], Vec<u8>, &[u8; 64])> = events
        .iter()
        .map(|e| {
            let e = e.as_ref();
            (&e.author, e.signing_message(), &e.signature)
        })
        .collect();
    verify_items(&items)
        .into_iter()
        .enumerate()
        .filter(|(_, r)| r.is_err())
        .map(|(i, _)| i)
        .collect()
}

/// Verifies statements' signatures under the one rule, batched on chunks
/// across all cores; one result per statement, in order.
pub fn verify_statements(
    stmts: &[&Statement],
) -> Vec<std::result::Result<(), crate::signature::SignatureError>> {
    let items: Vec<(&[u8; 32], Vec<u8>, &[u8; 64])> = stmts
        .iter()
        .map(|s| {
            (
                &s.author,
                signing_message(&s.kind, &s.payload),
                &s.signature,
            )
        })
        .collect();
    verify_items(&items)
}

fn verify_items(
    items: &[(&[u8; 32], Vec<u8>, &[u8; 64])],
) -> Vec<std::result::Result<(), crate::signature::SignatureError>> {
    use crate::signature::{PublicKey, SignatureError, verify_batch};
    use rayon::prelude::*;
    // Decompress each author key once (a log has few authors).
    let mut keys: std::collections::HashMap<
        [u8; 32],
        std::result::Result<PublicKey, SignatureError>,
    > = std::collections::HashMap::new();
    for (k, _, _) in items {
        keys.entry(**k).or_insert_with(|| PublicKey::parse(k));
    }
    let verify_chunk = |chunk: &[(&[u8; 32], Vec<u8>, &[u8; 64])]| {
        let mut out: Vec<std::result::Result<(), SignatureError>> = Vec::with_capacity(chunk.len());
        let mut batch = Vec::with_capacity(chunk.len());
        let mut positions = Vec::with_capacity(chunk.len());
        for (i, (k, msg, sig)) in chunk.iter().enumerate() {
            match &keys[*k] {
                Ok(pk) => {
                    batch.push((pk, msg.as_slice(), *sig));
                    positions.push(i);
                    out.push(Ok(()));
                }
                // The key is refused: give exactly the answer a single
                // verification gives (it may name an earlier step).
                Err(_) => out.push(crate::signature::verify(k, msg, sig)),
            }
        }
        for (pos, r) in positions.into_iter().zip(verify_batch(&batch)) {
            out[pos] = r;
        }
        out
    };
    // A small batch is verified on the calling thread: waking rayon's pool
    // costs little, but its idle workers then spin (sched_yield) and take
    // the core the network and the disk need.
    if items.len() < PARALLEL_VERIFY_FROM {
        return verify_chunk(items);
    }
    let chunk = items
        .len()
        .div_ceil(2 * rayon::current_num_threads().max(1))
        .clamp(8, 128);
    items
        .par_chunks(chunk)
        .flat_map_iter(verify_chunk)
        .collect()
}

/// Statements from which a batch's signatures are verified on every core.
const PARALLEL_VERIFY_FROM: usize = 64;

impl AsRef<Event> for Event {
    fn as_ref(&self) -> &Event {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&[7u8; 32])
    }

    fn sample() -> Event {
        let st = Statement::sign("x-test", b"{}".to_vec(), &key());
        Event {
            format: EVENT_FORMAT,
            seq: 3,
            recorded_at_ms: 1_700_000_000_000,
            prev_hash: [9; 32],
            kind: st.kind,
            author: st.author,
            payload: st.payload,
            signature: st.signature,
        }
    }

    #[test]
    fn layout_is_fixed_int_big_endian() {
        let e = sample();
        let b = e.encode();
        assert_eq!(b[0], 1);
        assert_eq!(&b[1..9], &3u64.to_be_bytes());
        assert_eq!(&b[9..17], &1_700_000_000_000u64.to_be_bytes());
        assert_eq!(&b[17..49], &[9u8; 32]);
        assert_eq!(&b[49..57], &6u64.to_be_bytes());
        assert_eq!(&b[57..63], b"x-test");
        assert_eq!(&b[63..95], &e.author);
        assert_eq!(&b[95..103], &2u64.to_be_bytes());
        assert_eq!(&b[103..105], b"{}");
        assert_eq!(&b[105..169], &e.signature);
        assert_eq!(b.len(), 169);
        assert_eq!(Event::decode(&b).unwrap(), e);
    }

    #[test]
    fn decode_refuses_trailing_and_truncated_bytes() {
        let mut b = sample().encode();
        b.push(0);
        assert!(Event::decode(&b).is_err());
        b.truncate(b.len() - 2);
        assert!(Event::decode(&b).is_err());
    }

    #[test]
    fn signatures_verify_and_tamper_is_found() {
        let mut events: Vec<Event> = (0..300)
            .map(|i| {
                let st = Statement::sign("x-test", format!("{i}").into_bytes(), &key());
                Event {
                    seq: i,
                    kind: st.kind,
                    payload: st.payload,
                    signature: st.signature,
                    author: st.author,
                    ..sample()
                }
            })
            .collect();
        assert!(verify_signatures(&events).is_empty());
        events[200].payload = b"x".to_vec();
        assert_eq!(verify_signatures(&events), vec![200]);
    }

    #[test]
    fn kinds() {
        assert!(validate_kind("key.registered").is_ok());
        assert!(validate_kind("").is_err());
        assert!(validate_kind("Key").is_err());
        assert!(validate_kind("1a").is_err());
        assert!(validate_kind(&"a".repeat(65)).is_err());
    }
}

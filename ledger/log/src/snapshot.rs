//! Authenticated projection snapshots: derived files are never trusted.
//!
//! A snapshot is the state machine's bytes for one projection, bound to the
//! sequence number and tree root it reflects and signed with the ledger key.
//! Sealed layout (all integers big-endian):
//!
//! ```text
//! "DKTSNAP1" (8) ‖ seq (u64) ‖ root (32) ‖ body length (u64) ‖ body ‖ signature (64)
//! ```
//!
//! The signature is Ed25519 by the ledger key over
//! `"docket/v1/snapshot\0" ‖ name ‖ 0x00 ‖ seq (u64 BE) ‖ root ‖ SHA-256(body)`.
//! On open a snapshot that fails this check, or is missing, is rebuilt from
//! the log; one that claims more events than the log holds, or a root the
//! log does not have at that size, is reported as log damage.

use ed25519_dalek::{Signer as _, SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

use crate::merkle::Hash;

const MAGIC: &[u8; 8] = b"DKTSNAP1";

/// A snapshot whose seal verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Events folded into it (it reflects events `0..seq`).
    pub seq: u64,
    /// Tree root at `seq`.
    pub root: Hash,
    /// The state machine's bytes.
    pub body: Vec<u8>,
}

/// Why a stored snapshot is not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The bytes are not a sealed snapshot (truncated, wrong magic, wrong
    /// length). Rebuild it from the log.
    #[error("snapshot {name} is not a sealed snapshot: {detail}")]
    Malformed { name: String, detail: String },
    /// The seal does not verify with the ledger key: it was edited, or
    /// written by someone else. Rebuild it from the log.
    #[error("snapshot {name} fails its ledger-key signature (edited or foreign)")]
    BadSeal { name: String },
}

fn message(name: &str, seq: u64, root: &Hash, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(20 + name.len() + 1 + 8 + 32 + 32);
    m.extend_from_slice(b"docket/v1/snapshot\0");
    m.extend_from_slice(name.as_bytes());
    m.push(0);
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(root);
    m.extend_from_slice(&Sha256::digest(body));
    m
}

/// Seals `body` as snapshot `name` at (`seq`, `root`).
pub fn seal(name: &str, seq: u64, root: &Hash, body: &[u8], key: &SigningKey) -> Vec<u8> {
    let sig = key.sign(&message(name, seq, root, body)).to_bytes();
    let mut out = Vec::with_capacity(8 + 8 + 32 + 8 + body.len() + 64);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(root);
    out.extend_from_slice(&(body.len() as u64).to_be_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&sig);
    out
}

/// Opens sealed bytes of snapshot `name`, checking the seal with `key`.
pub fn open(name: &str, sealed: &[u8], key: &VerifyingKey) -> Result<Snapshot, SnapshotError> {
    let malformed = |detail: &str| SnapshotError::Malformed {
        name: name.to_string(),
        detail: detail.to_string(),
    };
    if sealed.len() < 8 + 8 + 32 + 8 + 64 || &sealed[..8] != MAGIC {
        return Err(malformed("too short or wrong magic"));
    }
    let seq = u64::from_be_bytes(sealed[8..16].try_into().map_err(|_| malformed("seq"))?);
    let mut root = [0u8; 32];
    root.copy_from_slice(&sealed[16..48]);
    let body_len = u64::from_be_bytes(sealed[48..56].try_into().map_err(|_| malformed("len"))?);
    let body_end = usize::try_from(body_len)
        .ok()
        .and_then(|l| l.checked_add(56))
        .filter(|&e| e.checked_add(64) == Some(sealed.len()))
        .ok_or_else(|| malformed("body length does not match the file"))?;
    let body = &sealed[56..body_end];
    let mut sig = [0u8; 64];
    sig.copy_from_slice(&sealed[body_end..]);
    key.verify_strict(
        &message(name, seq, &root, body),
        &ed25519_dalek::Signature::from_bytes(&sig),
    )
    .map_err(|_| SnapshotError::BadSeal {
        name: name.to_string(),
    })?;
    Ok(Snapshot {
        seq,
        root,
        body: body.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_round_trips_and_any_edit_is_refused() {
        let key = SigningKey::from_bytes(&[3u8; 32]);
        let sealed = seal("keys", 7, &[1; 32], b"{\"a\":1}", &key);
        let s = open("keys", &sealed, &key.verifying_key()).unwrap();
        assert_eq!(
            (s.seq, s.root, s.body.as_slice()),
            (7, [1; 32], &b"{\"a\":1}"[..])
        );
        assert!(
            open("other", &sealed, &key.verifying_key()).is_err(),
            "name bound"
        );
        for i in 0..sealed.len() {
            let mut t = sealed.clone();
            t[i] ^= 1;
            assert!(open("keys", &t, &key.verifying_key()).is_err(), "byte {i}");
        }
        assert!(open("keys", &sealed[..sealed.len() - 1], &key.verifying_key()).is_err());
        let other = SigningKey::from_bytes(&[4u8; 32]);
        assert!(
            open(
                "keys",
                &seal("keys", 7, &[1; 32], b"{}", &other),
                &key.verifying_key()
            )
            .is_err()
        );
    }
}

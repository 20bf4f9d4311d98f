//! The content check of `replay --verify`: evidence content is held beside
//! the log, in the blob store, by SHA-256. The log proves the records; this
//! proves that every OID which still holds content (live, or redacted to a
//! replacement) has it on disk with the digest its record names. Content
//! that retention purged is expected to be gone and is not reported; a blob
//! no record needs any more is not damage either (a sweep removes it).
//!
//! Each digest is read once, however many OIDs share it; a finding names
//! every OID that needs the blob, the blob's path under the data directory
//! and the registering event.

use std::collections::BTreeMap;

use docket_log::verify::{Finding, FindingKind};

use crate::blobs::{BlobStore, parse_digest};
use crate::error::LedgerError;
use crate::retention::state::current_sha256;
use crate::state::LedgerState;

/// Checks the content of every OID of `state` that must hold some. Returns
/// one [`FindingKind::Content`] finding per missing or damaged blob (exit 5
/// in every command that reports it); an I/O error other than "not found"
/// is a finding too (the content cannot be proved).
pub fn check_content(state: &LedgerState, blobs: &BlobStore) -> Vec<Finding> {
    // digest → (first registering seq, OIDs holding it)
    let mut needed: BTreeMap<&str, (u64, Vec<&str>)> = BTreeMap::new();
    for (oid, record) in &state.domain.oids.oids {
        if let Some(digest) = current_sha256(record, &state.retention, oid) {
            let entry = needed
                .entry(digest)
                .or_insert((record.registered_seq, Vec::new()));
            entry.0 = entry.0.min(record.registered_seq);
            entry.1.push(oid.as_str());
        }
    }
    let mut findings = Vec::new();
    for (digest_hex, (seq, oids)) in needed {
        let who = format!("OID {}", oids.join(", OID "));
        let digest = match parse_digest(digest_hex) {
            Ok(d) => d,
            Err(e) => {
                findings.push(content_finding(
                    seq,
                    format!("{who}: the recorded digest {digest_hex} is not a SHA-256 ({e})"),
                ));
                continue;
            }
        };
        let rel = format!(
            "blobs/{}/{digest_hex}",
            digest_hex.get(..2).unwrap_or_default()
        );
        match blobs.copy_verified(&digest, &mut std::io::sink()) {
            Ok(_) => {}
            Err(LedgerError::NotFound { .. }) => findings.push(content_finding(
                seq,
                format!("{who}: the content {digest_hex} is missing ({rel})"),
            )),
            Err(e @ LedgerError::Corrupt { .. }) => findings.push(content_finding(
                seq,
                format!("{who}: the content in {rel} does not match its digest {digest_hex} ({e})"),
            )),
            Err(e) => findings.push(content_finding(
                seq,
                format!("{who}: the content in {rel} cannot be read ({e})"),
            )),
        }
    }
    findings
}

fn content_finding(seq: u64, detail: String) -> Finding {
    Finding {
        kind: FindingKind::Content,
        seq: Some(seq),
        detail,
    }
}

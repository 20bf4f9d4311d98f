//! The bundle's file formats (normative text: `docs/BUNDLE.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::MAX_EVENT_BYTES;
use crate::merkle::Hash;

/// `manifest.json` `format` value of this version.
pub const FORMAT: &str = "docket.bundle/1";
/// `summary.json` `format` value of this version.
pub const SUMMARY_FORMAT: &str = "docket.summary/1";

pub const MANIFEST: &str = "manifest.json";
pub const CHECKPOINT: &str = "checkpoint.note";
pub const VKEY: &str = "verifier.vkey";
pub const EVENTS: &str = "events.bin";
pub const PROOFS: &str = "proofs.json";
pub const SUMMARY: &str = "summary.json";
pub const CONSISTENCY: &str = "consistency.json";
pub const SINCE: &str = "since.note";
/// Directory of evidence blobs, each named by its lower-case hex SHA-256.
pub const BLOBS_DIR: &str = "blobs/";
/// Directory of DSSE-signed attestations (`--format vsa`).
pub const ATTESTATIONS_DIR: &str = "attestations/";

/// Files every bundle must carry (besides the manifest).
pub const REQUIRED: [&str; 5] = [CHECKPOINT, VKEY, EVENTS, PROOFS, SUMMARY];

/// `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// The checkpoint origin (log identity).
    pub origin: String,
    /// Tree size of `checkpoint.note`.
    pub tree_size: u64,
    /// What was asked for.
    pub scope: Scope,
    /// Whether evidence blobs were requested (then every referenced blob is
    /// present or its purge is carried).
    pub with_blobs: bool,
    /// Every other file of the bundle: relative path → digest and size.
    pub files: BTreeMap<String, FileEntry>,
}

/// Digest and size of one bundle file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// Lower-case hex SHA-256 of the file's bytes.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
}

/// The export request a bundle answers (informative; the auditor checks the
/// events against the checkpoint, not against the scope).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// First sequence number of the requested range.
    pub from: Option<u64>,
    /// Last sequence number (inclusive) of the requested range.
    pub to: Option<u64>,
    /// Task IDs whose verdict chains were requested.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// State "as of" this sequence number (inclusive).
    pub as_of: Option<u64>,
    /// Tree size of the `--since` checkpoint (then `since.note` and
    /// `consistency.json` are present).
    pub since_size: Option<u64>,
}

/// `proofs.json`: RFC 9162 §2.1.3 inclusion proofs against the checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofsFile {
    /// Must equal the checkpoint's tree size.
    pub tree_size: u64,
    /// Lower-case hex root; must equal the checkpoint's root.
    pub root: String,
    /// One entry per proven event, ascending by `seq`.
    pub inclusion: Vec<InclusionEntry>,
}

/// One inclusion proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InclusionEntry {
    /// Leaf index (= the event's sequence number).
    pub seq: u64,
    /// Lower-case hex RFC 9162 leaf hash of the event's canonical bytes.
    pub leaf_hash: String,
    /// The audit path, lower-case hex, from the leaf's sibling upwards.
    pub path: Vec<String>,
}

/// `consistency.json`: RFC 9162 §2.1.4 proof from `since.note` to
/// `checkpoint.note`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsistencyFile {
    pub old_size: u64,
    pub old_root: String,
    pub new_size: u64,
    pub new_root: String,
    pub path: Vec<String>,
}

/// Lower-case hex of each hash.
pub fn hexes(v: &[Hash]) -> Vec<String> {
    v.iter().map(hex::encode).collect()
}

/// Parses a lower-case 64-digit hex hash.
pub fn parse_hash(s: &str) -> Option<Hash> {
    if s.len() != 64 || s.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// Appends one `events.bin` record: `u32` big-endian length, then the
/// canonical event bytes.
pub fn push_event_record(out: &mut Vec<u8>, event_bytes: &[u8]) {
    // Invariant: canonical events are at most MAX_EVENT_BYTES (< 4 GiB).
    let len = u32::try_from(event_bytes.len()).expect("event fits a u32 length");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(event_bytes);
}

/// A framing error in `events.bin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramingError {
    /// Index of the record that is broken.
    pub record: usize,
    /// Byte offset of its length prefix.
    pub offset: usize,
    pub detail: String,
}

/// Splits `events.bin` into its records (slices of canonical event bytes).
pub fn split_event_records(bytes: &[u8]) -> Result<Vec<&[u8]>, FramingError> {
    match split_event_prefix(bytes) {
        (records, None) => Ok(records),
        (_, Some(e)) => Err(e),
    }
}

/// Splits `events.bin` into records up to the first framing error, which is
/// returned beside the records before it.
pub fn split_event_prefix(bytes: &[u8]) -> (Vec<&[u8]>, Option<FramingError>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let record = out.len();
        let Some(prefix) = bytes.get(at..at + 4) else {
            let detail = format!(
                "{} trailing bytes, too short for a length prefix",
                bytes.len() - at
            );
            return (
                out,
                Some(FramingError {
                    record,
                    offset: at,
                    detail,
                }),
            );
        };
        // Invariant: `prefix` is exactly 4 bytes (the `get` above).
        let len = u32::from_be_bytes(prefix.try_into().expect("4 bytes")) as usize;
        if len == 0 || len > MAX_EVENT_BYTES {
            let detail = format!("record length {len} is outside 1..={MAX_EVENT_BYTES}");
            return (
                out,
                Some(FramingError {
                    record,
                    offset: at,
                    detail,
                }),
            );
        }
        let Some(body) = bytes.get(at + 4..at + 4 + len) else {
            let detail = format!(
                "record of {len} bytes is truncated ({} bytes left)",
                bytes.len() - at - 4
            );
            return (
                out,
                Some(FramingError {
                    record,
                    offset: at,
                    detail,
                }),
            );
        };
        out.push(body);
        at += 4 + len;
    }
    (out, None)
}

/// Why a manifest path is not a plain relative path inside the bundle.
pub fn external_ref_reason(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("empty path");
    }
    if path.contains("://") || path.starts_with("data:") || path.starts_with("file:") {
        return Some("a URL");
    }
    if path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':') {
        return Some("an absolute path");
    }
    if path.contains('\\') {
        return Some("a backslash (not a bundle path)");
    }
    if path.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Some("a control character");
    }
    for part in path.split('/') {
        match part {
            ".." => return Some("a parent directory component (..)"),
            "" | "." => return Some("an empty or '.' component"),
            _ => {}
        }
    }
    None
}

/// Whether `path` names an entry this format defines (top-level files,
/// `blobs/<64 hex>`, `attestations/<name>.json`).
pub fn is_known_path(path: &str) -> bool {
    if [
        MANIFEST,
        CHECKPOINT,
        VKEY,
        EVENTS,
        PROOFS,
        SUMMARY,
        CONSISTENCY,
        SINCE,
    ]
    .contains(&path)
    {
        return true;
    }
    if let Some(name) = path.strip_prefix(BLOBS_DIR) {
        return parse_hash(name).is_some();
    }
    if let Some(name) = path.strip_prefix(ATTESTATIONS_DIR) {
        return !name.contains('/') && name.ends_with(".json");
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trip_and_errors() {
        let mut b = Vec::new();
        push_event_record(&mut b, b"abc");
        push_event_record(&mut b, b"de");
        assert_eq!(
            split_event_records(&b).unwrap(),
            vec![&b"abc"[..], &b"de"[..]]
        );
        assert!(split_event_records(&b[..b.len() - 1]).is_err());
        assert!(split_event_records(&b[..2]).is_err());
        assert!(split_event_records(&[0, 0, 0, 0]).is_err());
        assert_eq!(split_event_records(&[]).unwrap().len(), 0);
    }

    #[test]
    fn external_refs() {
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../b",
            "https://x/y",
            "C:\\x",
            "a//b",
            "./a",
            "",
        ] {
            assert!(external_ref_reason(bad).is_some(), "{bad}");
        }
        for good in ["events.bin", "blobs/ab", "attestations/x.json"] {
            assert!(external_ref_reason(good).is_none(), "{good}");
        }
    }
}

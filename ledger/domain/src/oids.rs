//! The evidence aggregate: `evidence.registered`, the OIDs the ledger mints
//! for it, and the OID registry (snapshot `oids`).
//!
//! An OID is a ULID minted deterministically from the registering event,
//! so that replay reproduces every OID:
//!
//! `OID = ULID(timestamp = event.recorded_at_ms,
//!             random  = first 10 bytes of SHA-256("docket/v1/oid\0" || statement digest))`
//!
//! where the statement digest is [`crate::event::Statement::digest`]
//! (`SHA-256("docket/v1/statement\0" || author || signing message)`). The
//! 80 "random" bits are read big-endian. The text form is the ULID's 26
//! Crockford base-32 characters (upper case), e.g. `01KGCV31W0C42YQHMVAT6FSR1H`.
//!
//! The registry's retention fields (`retention_class`, `pinned`, `state`,
//! `removal`) start here and are moved by [`crate::retention`], which
//! depends on this module (never the reverse). Other aggregates reference
//! OIDs through [`read_oids`] and [`OidRegistry::check_task`].

use std::collections::{BTreeMap, BTreeSet};

use docket_verifier::EvidenceType;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use ulid::Ulid;

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::names;
use crate::merkle::Hash;
use crate::schema::{
    Fields, Hex32, MAX_LABEL, RETENTION_CLASSES, classes, decode_checked, direct, finish,
    is_artifact_name, is_media_type, is_sha256_hex, is_text, json_object, ms_to_rfc3339,
};
use crate::tasks::{TaskState, VerdictsProjection};
use docket_log::machine::AdmitContext;

// ------------------------------------------------------------ minting

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

/// Crockford base-32, the ULID alphabet (upper case, no I, L, O, U), as a
/// byte → member table.
const OID_ALPHABET: [bool; 256] = {
    let mut table = [false; 256];
    let alphabet = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut i = 0;
    while i < alphabet.len() {
        table[alphabet[i] as usize] = true;
        i += 1;
    }
    table
};

/// Whether `s` is a well-formed OID (26 Crockford base-32 characters, upper
/// case as minted): exactly the strings a ULID prints, that is 26 alphabet
/// characters the first of which is at most `7` (128 bits).
pub fn is_oid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 26 && b[0] <= b'7' && b.iter().all(|c| OID_ALPHABET[usize::from(*c)])
}

/// Whether `oids` are well-formed and distinct: what [`read_oid_field`]
/// accepts without a violation.
pub(crate) fn are_distinct_oids(oids: &[String]) -> bool {
    if !oids.iter().all(|o| is_oid(o)) {
        return false;
    }
    if oids.len() <= 32 {
        oids.iter().enumerate().all(|(i, o)| !oids[..i].contains(o))
    } else {
        let mut seen = BTreeSet::new();
        oids.iter().all(|o| seen.insert(o.as_str()))
    }
}

/// The ledger time (Unix ms) encoded in an OID.
pub fn timestamp_ms(oid: &str) -> Option<u64> {
    Ulid::from_string(oid).ok().map(|u| u.timestamp_ms())
}

// ------------------------------------------------------------ the registry

/// Lifecycle of an OID's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OidState {
    Live,
    Expired,
    Redacted,
}

impl OidState {
    pub fn as_str(self) -> &'static str {
        match self {
            OidState::Live => "live",
            OidState::Expired => "expired",
            OidState::Redacted => "redacted",
        }
    }
}

/// Which event removed an OID's original content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    pub seq: u64,
    pub at_ms: u64,
    pub reason: String,
    /// For a redaction: SHA-256 (hex) and size of the redacted content.
    pub redacted_sha256: Option<String>,
    pub redacted_size: Option<u64>,
}

impl Removal {
    /// " by event SEQ at TIME (REASON)": how errors name the removal.
    pub fn describe(&self) -> String {
        format!(
            " by event {} at {} ({})",
            self.seq,
            ms_to_rfc3339(self.at_ms),
            self.reason
        )
    }
}

/// One OID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidRecord {
    /// SHA-256 (hex) of the registered content.
    pub sha256: String,
    pub size: u64,
    pub evidence_type: String,
    pub media_type: String,
    pub task_id: String,
    pub retention_class: String,
    /// Name as registered (None when the statement named none).
    pub name: Option<String>,
    /// The name the verdict engine sees: `name`, else the type name for the
    /// four seed files, else `evidence/<OID>`.
    pub artifact_name: String,
    pub registered_seq: u64,
    pub registered_at_ms: u64,
    pub registered_by: Hex32,
    pub state: OidState,
    pub pinned: bool,
    pub removal: Option<Removal>,
}

/// OID → evidence record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OidRegistry {
    pub oids: BTreeMap<String, OidRecord>,
}

impl OidRegistry {
    /// Refuses (`AlreadyExists`, naming the registering event) an OID a
    /// statement would mint when the registry already holds it.
    pub fn ensure_unminted(&self, oid: &str) -> Result<()> {
        match self.oids.get(oid) {
            Some(r) => Err(LedgerError::AlreadyExists {
                what: format!("OID {oid} (registered at seq {})", r.registered_seq),
            }),
            None => Ok(()),
        }
    }
}

impl OidRegistry {
    pub const NAME: &'static str = "oids";

    /// The record of `oid`; `NotFound` naming it.
    pub fn record(&self, oid: &str) -> Result<&OidRecord> {
        self.oids.get(oid).ok_or_else(|| LedgerError::NotFound {
            what: format!("evidence OID {oid}"),
        })
    }

    /// The record an admitted event names, for its fold: a missing OID means
    /// the event is not what was admitted (`Corrupt`).
    pub fn record_for_fold(&mut self, oid: &str, event: &Event) -> Result<&mut OidRecord> {
        self.oids.get_mut(oid).ok_or_else(|| {
            LedgerError::corrupt(
                format!("event {}", event.seq),
                format!("{} names OID {oid}, which is not registered", event.kind),
            )
        })
    }

    /// Each OID must be registered (`NotFound`) to `task` (`Invalid`, every
    /// misattributed OID listed under `what`).
    pub fn check_task(&self, task: &TaskState, what: &str, oids: &[String]) -> Result<()> {
        let mut violations = Vec::new();
        for o in oids {
            let r = self.record(o)?;
            if r.task_id != task.task_id {
                violations.push(format!(
                    "evidence_oids: {o} is registered to task {}, not {}",
                    r.task_id, task.task_id
                ));
            }
        }
        finish(what, violations)
    }
}

/// The artifact name an OID gets when its statement names none.
pub fn default_artifact_name(evidence_type: &str, oid: &str) -> String {
    match evidence_type {
        "patch.diff" | "selftest.log" | "report.md" | "submit.json" => evidence_type.to_string(),
        _ => format!("evidence/{oid}"),
    }
}

/// Reads an `evidence_oids` array of well-formed, distinct OIDs (a
/// violation per bad entry); what the payload lists when valid.
pub(crate) fn read_oids(f: &mut Fields<'_>, required: bool) -> Vec<String> {
    read_oid_field(f, "evidence_oids", required)
}

/// Reads an array `field` of well-formed, distinct OIDs (a violation per
/// bad entry), e.g. a submission's `touched_oids`.
pub(crate) fn read_oid_field(f: &mut Fields<'_>, field: &str, required: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, o) in f
        .strings(field, required)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if !is_oid(o) {
            f.violate(
                &format!("{field}/{i}"),
                format!("{o:?} is not an OID (26-character ULID, upper case)"),
            );
        } else if !seen.insert(o) {
            f.violate(&format!("{field}/{i}"), format!("{o} is listed twice"));
        } else {
            out.push(o.to_string());
        }
    }
    out
}

/// The evidence type of an artifact named `name` in a seed 000 artifacts
/// directory (first matching type, else `other`).
pub fn guess_evidence_type(name: &str) -> &'static str {
    EvidenceType::ALL
        .iter()
        .find(|t| **t != EvidenceType::Other && t.matches_artifact(name))
        .map_or("other", |t| t.as_str())
}

/// A media type for an artifact name, from its extension.
pub fn guess_media_type(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "diff" | "patch" => "text/x-diff",
        "log" | "txt" | "out" | "err" => "text/plain",
        "md" => "text/markdown",
        "json" => "application/json",
        "jsonl" | "ndjson" => "application/x-ndjson",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "html" | "htm" => "text/html",
        "csv" => "text/csv",
        "yaml" | "yml" => "application/yaml",
        _ if lower.ends_with("stdout") || lower.ends_with("stderr") => "text/plain",
        _ => "application/octet-stream",
    }
}

// ------------------------------------------------------------ evidence.registered

/// `evidence.registered`: binds a stored blob to a task; the ledger mints the OID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRegistered {
    /// The task (UUID).
    pub task_id: String,
    /// One of the eleven evidence types (`patch.diff`, `selftest.log`, ...).
    pub evidence_type: String,
    /// SHA-256 of the content, 64 lower-case hex digits.
    pub sha256: String,
    /// Size of the content in bytes.
    pub size: u64,
    /// Media type, e.g. `text/x-diff`.
    pub media_type: String,
    /// `routine`, `high_impact` or `pinned`; default: the task's class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_class: Option<String>,
    /// The artifact's relative path in the submission's artifacts directory
    /// (e.g. `patch.diff`, `evidence/pre_state.json`); the verdict engine
    /// sees the content under this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Validates an `evidence.registered` payload (every violation listed) and
/// decodes it.
pub fn decode_evidence(payload: &[u8]) -> Result<EvidenceRegistered> {
    // Fast path: the typed struct refuses unknown fields and wrong types;
    // the value checks are those of `decode_evidence_checked`.
    if let Some(p) = direct::<EvidenceRegistered>(payload)
        && is_text(&p.task_id, MAX_LABEL)
        && p.evidence_type.parse::<EvidenceType>().is_ok()
        && is_sha256_hex(&p.sha256)
        && is_media_type(&p.media_type)
        && p.retention_class
            .as_deref()
            .is_none_or(|c| RETENTION_CLASSES.contains(&c))
        && p.name.as_deref().is_none_or(is_artifact_name)
    {
        return Ok(p);
    }
    decode_evidence_checked(payload)
}

/// [`decode_evidence`] through [`Fields`]: every violation named.
pub(crate) fn decode_evidence_checked(payload: &[u8]) -> Result<EvidenceRegistered> {
    const WHAT: &str = names::EVIDENCE_REGISTERED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "task_id",
        "evidence_type",
        "sha256",
        "size",
        "media_type",
        "retention_class",
        "name",
    ]);
    f.text("task_id", true, MAX_LABEL);
    if let Some(t) = f.str("evidence_type", true)
        && t.parse::<EvidenceType>().is_err()
    {
        let names: Vec<&str> = EvidenceType::ALL.iter().map(|t| t.as_str()).collect();
        f.violate(
            "evidence_type",
            format!("{t:?} is not one of {}", names.join(", ")),
        );
    }
    if let Some(d) = f.str("sha256", true)
        && !is_sha256_hex(d)
    {
        f.violate("sha256", "must be 64 lower-case hex digits");
    }
    f.u64("size", true);
    if let Some(m) = f.str("media_type", true)
        && !is_media_type(m)
    {
        f.violate(
            "media_type",
            format!("{m:?} is not a media type (type/subtype)"),
        );
    }
    if let Some(c) = f.str("retention_class", false)
        && !RETENTION_CLASSES.contains(&c)
    {
        f.violate(
            "retention_class",
            format!("{c:?} is not one of routine, high_impact, pinned"),
        );
    }
    if let Some(n) = f.str("name", false)
        && !is_artifact_name(n)
    {
        f.violate(
            "name",
            format!("{n:?} is not a relative path without empty, . or .. components"),
        );
    }
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// `evidence.registered`: the task exists and the OID it would mint is new.
/// (That the blob is stored is a disk fact: the service checks it.)
pub fn admit_evidence(
    tasks: &VerdictsProjection,
    oids: &OidRegistry,
    stmt: &Statement,
    ctx: &AdmitContext,
    p: &EvidenceRegistered,
) -> Result<()> {
    tasks.task(&p.task_id)?;
    oids.ensure_unminted(&of_statement(stmt, ctx.recorded_at_ms))
}

/// Folds `evidence.registered`: the task gains the OID and its author as a
/// submitter; the registry gains the record (class: the statement's, else
/// the task's).
pub fn fold_evidence(
    tasks: &mut VerdictsProjection,
    oids: &mut OidRegistry,
    event: &Event,
    p: &EvidenceRegistered,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    let oid = of_event(event);
    let author = Hex32(event.author);
    task.submitters.insert(author);
    task.evidence.push(oid.clone());
    let retention_class = p
        .retention_class
        .clone()
        .unwrap_or_else(|| task.contract.retention_class.clone());
    let artifact_name = p
        .name
        .clone()
        .unwrap_or_else(|| default_artifact_name(&p.evidence_type, &oid));
    let task_id = task.task_id.clone();
    oids.oids.insert(
        oid,
        OidRecord {
            sha256: p.sha256.clone(),
            size: p.size,
            evidence_type: p.evidence_type.clone(),
            media_type: p.media_type.clone(),
            task_id,
            pinned: retention_class == classes::PINNED,
            retention_class,
            name: p.name.clone(),
            artifact_name,
            registered_seq: event.seq,
            registered_at_ms: event.recorded_at_ms,
            registered_by: author,
            state: OidState::Live,
            removal: None,
        },
    );
    Ok(())
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

    /// `is_oid` is exactly "a ULID that prints as itself": every byte at
    /// every position of a minted OID, and other lengths.
    #[test]
    fn is_oid_is_the_ulid_round_trip() {
        let round_trip =
            |s: &str| s.len() == 26 && Ulid::from_string(s).is_ok_and(|u| u.to_string() == s);
        let minted = mint(1_770_647_400_000, &[7u8; 32]);
        let mut tried = 0;
        for base in [
            minted.as_str(),
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
            "00000000000000000000000000",
        ] {
            for i in 0..26 {
                for c in 0u8..128 {
                    let mut b = base.as_bytes().to_vec();
                    b[i] = c;
                    let s = String::from_utf8(b).expect("ASCII");
                    assert_eq!(is_oid(&s), round_trip(&s), "{s:?}");
                    tried += 1;
                }
            }
        }
        assert!(tried > 9000);
        for s in [
            "",
            "0",
            &minted[..25],
            &format!("{minted}0"),
            "é0000000000000000000000000",
        ] {
            assert_eq!(is_oid(s), round_trip(s), "{s:?}");
        }
    }

    #[test]
    fn guesses() {
        assert_eq!(guess_evidence_type("patch.diff"), "patch.diff");
        assert_eq!(guess_evidence_type("evidence/patch.diff"), "patch.diff");
        assert_eq!(guess_evidence_type("evidence/pre_state.json"), "other");
        assert_eq!(guess_evidence_type("trace.jsonl"), "trace");
        assert_eq!(guess_media_type("report.md"), "text/markdown");
    }
}

//! Payload schemas of the retention kinds. Every payload is a JSON object
//! that refuses unknown fields; validation lists every violated rule
//! (`LedgerError::Invalid`). The schemas are written down in
//! `docs/RETENTION.md`.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::oids::is_oid;
use crate::schema::{Fields, decode_checked, finish, is_sha256_hex, json_object};

use super::classes;
use super::kinds;
use super::policy::Policy;

/// Longest reason or note (bytes).
pub const MAX_REASON: usize = 4096;
/// Most findings a redaction lists.
pub const MAX_FINDINGS: usize = 10_000;

/// `retention.policy_set` (admin): the policy from this event on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySet {
    pub routine_days: u32,
    pub high_impact_days: u32,
    #[serde(default)]
    pub keep_last_submissions: u32,
    #[serde(default)]
    pub allow_future_sweeps: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl PolicySet {
    /// The policy this event sets.
    pub fn policy(&self) -> Policy {
        Policy {
            routine_days: self.routine_days,
            high_impact_days: self.high_impact_days,
            keep_last_submissions: self.keep_last_submissions,
            allow_future_sweeps: self.allow_future_sweeps,
        }
    }

    /// The payload that sets `policy`.
    pub fn from_policy(policy: &Policy, note: Option<String>) -> Self {
        Self {
            routine_days: policy.routine_days,
            high_impact_days: policy.high_impact_days,
            keep_last_submissions: policy.keep_last_submissions,
            allow_future_sweeps: policy.allow_future_sweeps,
            note,
        }
    }
}

/// `retention.pinned` (custodian): keep the OID's content until unpinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pinned {
    pub oid: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `retention.unpinned` (custodian): the OID expires under its class again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unpinned {
    pub oid: String,
    /// For an OID whose class is `pinned`: the class it falls back to
    /// (`routine` or `high_impact`); default: its task's class, else
    /// `routine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `retention.reclassified` (custodian): the OID's new class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reclassified {
    pub oid: String,
    pub class: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What a redaction replaced (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingRef {
    /// The kind of secret, e.g. `aws_access_key`.
    pub kind: String,
    /// 1-based line in the original content.
    pub line: u64,
}

/// `retention.redacted` (custodian): the OID's content is replaced by a
/// redacted version; the original is purged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Redacted {
    pub oid: String,
    /// SHA-256 (hex) of the content being replaced: the registered content,
    /// or the previous redacted version.
    pub original_sha256: String,
    /// SHA-256 (hex) of the redacted content (stored before the event).
    pub redacted_sha256: String,
    pub redacted_size: u64,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<FindingRef>,
}

/// `retention.sweep` (custodian): a sweep and the time its decisions are
/// made at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sweep {
    /// RFC 3339; default: the event's ledger time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `evidence.expired` (custodian): one OID's content expired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expired {
    pub oid: String,
    /// The time the expiry is decided at (Unix ms); admission re-checks the
    /// rules at exactly this time.
    pub as_of_ms: u64,
    /// The `retention.sweep` event this expiry belongs to (its `now` must
    /// equal `as_of_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn oid_field(f: &mut Fields<'_>) {
    if let Some(o) = f.str("oid", true)
        && !is_oid(o)
    {
        f.violate(
            "oid",
            format!("{o:?} is not an OID (26-character ULID, upper case)"),
        );
    }
}

fn u32_field(f: &mut Fields<'_>, key: &str, required: bool) {
    if let Some(n) = f.u64(key, required)
        && n > u64::from(u32::MAX)
    {
        f.violate(key, "too large");
    }
}

fn class_field(f: &mut Fields<'_>, key: &str, required: bool, allowed: &[&str]) {
    if let Some(c) = f.str(key, required)
        && !allowed.contains(&c)
    {
        f.violate(key, format!("{c:?} is not one of {}", allowed.join(", ")));
    }
}

/// Validates and decodes a `retention.policy_set` payload (schema and the
/// policy's limits).
pub fn policy_set(payload: &[u8]) -> Result<PolicySet> {
    const WHAT: &str = kinds::POLICY_SET;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "routine_days",
        "high_impact_days",
        "keep_last_submissions",
        "allow_future_sweeps",
        "note",
    ]);
    u32_field(&mut f, "routine_days", true);
    u32_field(&mut f, "high_impact_days", true);
    u32_field(&mut f, "keep_last_submissions", false);
    f.bool("allow_future_sweeps", false);
    f.text("note", false, MAX_REASON);
    finish(WHAT, f.violations)?;
    let p: PolicySet = decode_checked(WHAT, map)?;
    finish(WHAT, p.policy().violations())?;
    Ok(p)
}

/// Validates and decodes a `retention.pinned` payload.
pub fn pinned(payload: &[u8]) -> Result<Pinned> {
    const WHAT: &str = kinds::PINNED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&["oid", "reason"]);
    oid_field(&mut f);
    f.text("reason", false, MAX_REASON);
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// Validates and decodes a `retention.unpinned` payload.
pub fn unpinned(payload: &[u8]) -> Result<Unpinned> {
    const WHAT: &str = kinds::UNPINNED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&["oid", "class", "reason"]);
    oid_field(&mut f);
    class_field(
        &mut f,
        "class",
        false,
        &[classes::ROUTINE, classes::HIGH_IMPACT],
    );
    f.text("reason", false, MAX_REASON);
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// Validates and decodes a `retention.reclassified` payload.
pub fn reclassified(payload: &[u8]) -> Result<Reclassified> {
    const WHAT: &str = kinds::RECLASSIFIED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&["oid", "class", "reason"]);
    oid_field(&mut f);
    class_field(&mut f, "class", true, &classes::ALL);
    f.text("reason", false, MAX_REASON);
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// Validates and decodes a `retention.redacted` payload.
pub fn redacted(payload: &[u8]) -> Result<Redacted> {
    const WHAT: &str = kinds::REDACTED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "oid",
        "original_sha256",
        "redacted_sha256",
        "redacted_size",
        "reason",
        "findings",
    ]);
    oid_field(&mut f);
    let original = f.str("original_sha256", true);
    let redacted = f.str("redacted_sha256", true);
    for (key, d) in [("original_sha256", original), ("redacted_sha256", redacted)] {
        if let Some(d) = d
            && !is_sha256_hex(d)
        {
            f.violate(key, "must be 64 lower-case hex digits");
        }
    }
    if let (Some(a), Some(b)) = (original, redacted)
        && a == b
    {
        f.violate(
            "redacted_sha256",
            "equals original_sha256: a redaction must change the content",
        );
    }
    f.u64("redacted_size", true);
    f.text("reason", true, MAX_REASON);
    match map.get("findings") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(items)) => {
            if items.len() > MAX_FINDINGS {
                f.violate("findings", format!("at most {MAX_FINDINGS} entries"));
            }
            for (i, item) in items.iter().enumerate() {
                if serde_json::from_value::<FindingRef>(item.clone()).is_err() {
                    f.violate(
                        &format!("findings/{i}"),
                        "must be {\"kind\": string, \"line\": integer}",
                    );
                }
            }
        }
        Some(_) => f.violate("findings", "must be an array"),
    }
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// Validates and decodes a `retention.sweep` payload; returns it with its
/// `now` in Unix ms when stated.
pub fn sweep(payload: &[u8]) -> Result<(Sweep, Option<u64>)> {
    const WHAT: &str = kinds::SWEEP;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&["now", "note"]);
    let now = f.timestamp("now", false);
    let now_ms = match now {
        Some(t) => match u64::try_from(t) {
            Ok(ms) => Some(ms),
            Err(_) => {
                f.violate("now", "must not be before 1970");
                None
            }
        },
        None => None,
    };
    f.text("note", false, MAX_REASON);
    finish(WHAT, f.violations)?;
    Ok((decode_checked(WHAT, map)?, now_ms))
}

/// Validates and decodes an `evidence.expired` payload.
pub fn expired(payload: &[u8]) -> Result<Expired> {
    const WHAT: &str = kinds::EXPIRED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&["oid", "as_of_ms", "sweep_seq", "reason"]);
    oid_field(&mut f);
    f.u64("as_of_ms", true);
    f.u64("sweep_seq", false);
    f.text("reason", false, MAX_REASON);
    finish(WHAT, f.violations)?;
    decode_checked(WHAT, map)
}

/// Serialises a payload (plain data; cannot fail).
pub fn to_bytes<T: Serialize>(payload: &T) -> Vec<u8> {
    // Invariant: the payload structs hold strings, integers, bools and
    // vectors of them; serde_json cannot fail on them.
    serde_json::to_vec(payload).expect("payload serialises")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::LedgerError;

    const OID: &str = "01KGCV31W0C42YQHMVAT6FSR1H";

    fn violations(r: Result<impl std::fmt::Debug>) -> Vec<String> {
        match r {
            Err(LedgerError::Invalid { violations, .. }) => violations,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn policy_schema_lists_every_violation() {
        let ok =
            policy_set(br#"{"routine_days":30,"high_impact_days":120,"keep_last_submissions":3}"#)
                .unwrap();
        assert_eq!(ok.policy().high_impact_days, 120);
        assert!(!ok.allow_future_sweeps);
        let v = violations(policy_set(br#"{"routine_days":"x","extra":1}"#));
        assert_eq!(v.len(), 3, "{v:?}");
        let v = violations(policy_set(br#"{"routine_days":0,"high_impact_days":181}"#));
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn oid_payloads() {
        let p = pinned(format!(r#"{{"oid":"{OID}","reason":"legal hold"}}"#).as_bytes()).unwrap();
        assert_eq!(p.oid, OID);
        assert_eq!(violations(pinned(br#"{"oid":"abc"}"#)).len(), 1);
        assert_eq!(
            violations(reclassified(
                format!(r#"{{"oid":"{OID}","class":"forever"}}"#).as_bytes()
            ))
            .len(),
            1
        );
        assert_eq!(
            violations(unpinned(
                format!(r#"{{"oid":"{OID}","class":"pinned"}}"#).as_bytes()
            ))
            .len(),
            1
        );
        let d = "ab".repeat(32);
        let v = violations(redacted(
            format!(
                r#"{{"oid":"{OID}","original_sha256":"{d}","redacted_sha256":"{d}","redacted_size":1,"reason":" ","findings":[{{"kind":1}}]}}"#
            )
            .as_bytes(),
        ));
        assert_eq!(v.len(), 3, "{v:?}");
        let (s, now) = sweep(br#"{"now":"2026-02-09T14:30:00.001Z"}"#).unwrap();
        assert_eq!(now, Some(1_770_647_400_001));
        assert!(s.note.is_none());
        assert_eq!(violations(sweep(br#"{"now":"yesterday"}"#)).len(), 1);
        let e = expired(format!(r#"{{"oid":"{OID}","as_of_ms":5}}"#).as_bytes()).unwrap();
        assert_eq!(e.as_of_ms, 5);
        assert_eq!(violations(expired(br#"{"oid":"x"}"#)).len(), 2);
    }
}

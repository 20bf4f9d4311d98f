//! Payload schemas of the domain statements Docket defines itself
//! (`evidence.registered`, `check.recorded`, `approval.*`) and the Docket
//! fields added to the seed documents (`task_id` on execution records,
//! `evidence_oids` on submissions, `submission_seq` on verdicts). The seed
//! documents themselves are parsed with `docket-verifier`'s schemas.
//!
//! Every payload is JSON, kept byte for byte as its author signed it. Docket's
//! own payloads refuse unknown fields; seed documents allow them (seed 003:
//! "Additional fields are allowed"). Validation lists **every** violated rule
//! (`LedgerError::Invalid`). The exact schemas are in `docs/DOMAIN.md`.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{LedgerError, Result};

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

/// `check.recorded`: one named check result for a task's latest submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRecorded {
    /// The task (UUID).
    pub task_id: String,
    /// Sequence number of the submission checked; default: the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_seq: Option<u64>,
    /// Check name (`schema_valid`, `scope_valid`, ... or an evidence rule).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// Free-form details (any JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

/// `approval.requested` (seed 003: actor, scope, mutation mode, timestamp, expiry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequested {
    pub task_id: String,
    /// Who asks (a person or system name).
    pub actor: String,
    /// What the approval covers, e.g. `merge`, `deploy:staging`.
    pub scope: String,
    /// Mutation mode, e.g. `read-only`, `workspace-write`, `real-repo`.
    pub mutation_mode: String,
    /// RFC 3339 time of the request (author's clock).
    pub timestamp: String,
    /// RFC 3339 expiry; none = does not expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// `approval.granted` / `approval.denied`: the answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecided {
    pub task_id: String,
    /// Sequence number of the `approval.requested` event answered.
    pub request_seq: u64,
    /// Who decides (must differ from the request's actor).
    pub actor: String,
    /// Must equal the request's scope.
    pub scope: String,
    /// Must equal the request's mutation mode.
    pub mutation_mode: String,
    /// RFC 3339 time of the decision (author's clock).
    pub timestamp: String,
    /// RFC 3339 expiry of a grant; default: the request's expiry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// Why (required for a denial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

// The fold's views of payloads: only the fields a projection keeps, with
// borrowed strings where the value is only looked up (serde skips every other
// field without allocating).

/// What the fold needs of `execution.recorded` (the seed 002 record plus
/// Docket's `task_id` and optional `evidence_oids`).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ExecutionExtra<'a> {
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    #[serde(default)]
    pub evidence_oids: Vec<String>,
    pub status: String,
    #[serde(default)]
    pub exit_code: Option<i64>,
    pub evidence_hash: String,
}

/// What the fold needs of `submission.received` (`scc.submit.v1` plus
/// Docket's `evidence_oids`).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SubmissionExtra<'a> {
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    pub status: String,
    pub evidence_oids: Vec<String>,
}

/// What the fold needs of `check.recorded` (its `details` are skipped).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CheckExtra<'a> {
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    #[serde(default)]
    pub submission_seq: Option<u64>,
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    pub passed: bool,
}

/// What the fold needs of a `verdict.issued` payload.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct VerdictExtra<'a> {
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    #[serde(borrow)]
    pub verdict: Cow<'a, str>,
    #[serde(default)]
    pub reason_code: Option<String>,
    #[serde(default)]
    pub fail_class: Option<String>,
    #[serde(default, borrow)]
    pub checks: std::collections::BTreeMap<Cow<'a, str>, bool>,
    #[serde(default)]
    pub evidence_oids: Vec<String>,
    #[serde(default)]
    pub submission_seq: Option<u64>,
}

/// What the fold needs of a `task.registered` payload.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TaskExtra<'a> {
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    #[serde(default)]
    pub retention_class: Option<String>,
    #[serde(default)]
    pub acceptance: Option<AcceptanceExtra>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AcceptanceExtra {
    #[serde(default)]
    pub required_checks: Option<Vec<String>>,
    #[serde(default)]
    pub required_evidence: Option<Vec<String>>,
}

/// What the fold needs of `approval.granted` / `approval.denied`.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct DecisionExtra<'a> {
    #[serde(borrow)]
    pub task_id: Cow<'a, str>,
    pub request_seq: u64,
    pub actor: String,
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// Retention classes.
pub const RETENTION_CLASSES: [&str; 3] = ["routine", "high_impact", "pinned"];

/// The canonical text of a task id: a UUID in lower-case hyphenated form
/// (the form `uuid` prints). Accepts the forms a UUID parser accepts
/// (hyphenated, simple, `{braced}`, `urn:uuid:`); None otherwise.
pub fn canonical_task_id(s: &str) -> Option<String> {
    let s = s.trim();
    let s = s
        .strip_prefix("urn:uuid:")
        .or_else(|| s.strip_prefix("{").and_then(|t| t.strip_suffix('}')))
        .unwrap_or(s);
    let hex: String = if s.len() == 36 {
        let b = s.as_bytes();
        if b[8] != b'-' || b[13] != b'-' || b[18] != b'-' || b[23] != b'-' {
            return None;
        }
        s.chars().filter(|c| *c != '-').collect()
    } else if s.len() == 32 {
        s.to_string()
    } else {
        return None;
    };
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let h = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    ))
}

/// Whether `s` is already a canonical task id (lower-case hyphenated UUID).
fn is_canonical_task_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

/// Task id as stored in the projections: canonical when it is a UUID,
/// verbatim otherwise (so an unknown id is reported as written). Borrows
/// when the id is already canonical.
pub fn task_key(s: &str) -> Cow<'_, str> {
    if is_canonical_task_id(s) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(canonical_task_id(s).unwrap_or_else(|| s.to_string()))
}

/// Lower-case hex of `bytes` (a table lookup per nibble).
pub fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Parses an RFC 3339 timestamp to Unix milliseconds.
pub fn rfc3339_ms(s: &str) -> Option<i128> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some(t.unix_timestamp_nanos() / 1_000_000)
}

/// Formats Unix milliseconds as RFC 3339 UTC (millisecond precision).
pub fn ms_to_rfc3339(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".into())
}

/// Collects every violation while reading one JSON object payload.
pub(crate) struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub violations: Vec<String>,
}

impl<'a> Fields<'a> {
    /// Starts checking the fields of `map`, with no violations yet.
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            violations: Vec::new(),
        }
    }

    /// Refuses keys outside `known`.
    pub fn only(&mut self, known: &[&str]) {
        for k in self.map.keys() {
            if !known.contains(&k.as_str()) {
                self.violations.push(format!("{k}: unknown field"));
            }
        }
    }

    pub fn violate(&mut self, field: &str, msg: impl std::fmt::Display) {
        self.violations.push(format!("{field}: {msg}"));
    }

    fn get(&mut self, key: &str, required: bool) -> Option<&'a Value> {
        match self.map.get(key) {
            None | Some(Value::Null) => {
                if required {
                    self.violations
                        .push(format!("{key}: required field is missing"));
                }
                None
            }
            Some(v) => Some(v),
        }
    }

    /// A string field; with `required`, missing is a violation.
    pub fn str(&mut self, key: &str, required: bool) -> Option<&'a str> {
        let v = self.get(key, required)?;
        match v.as_str() {
            Some(s) => Some(s),
            None => {
                self.violations.push(format!("{key}: must be a string"));
                None
            }
        }
    }

    /// A non-empty string of at most `max` bytes without control characters.
    pub fn text(&mut self, key: &str, required: bool, max: usize) -> Option<&'a str> {
        let s = self.str(key, required)?;
        if s.trim().is_empty() {
            self.violate(key, "must not be empty");
            return None;
        }
        if s.len() > max {
            self.violate(key, format!("longer than {max} bytes"));
            return None;
        }
        if s.chars().any(char::is_control) {
            self.violate(key, "must not contain control characters");
            return None;
        }
        Some(s)
    }

    pub fn u64(&mut self, key: &str, required: bool) -> Option<u64> {
        let v = self.get(key, required)?;
        match v.as_u64() {
            Some(n) => Some(n),
            None => {
                self.violations
                    .push(format!("{key}: must be a non-negative integer"));
                None
            }
        }
    }

    pub fn bool(&mut self, key: &str, required: bool) -> Option<bool> {
        let v = self.get(key, required)?;
        match v.as_bool() {
            Some(b) => Some(b),
            None => {
                self.violations.push(format!("{key}: must be a boolean"));
                None
            }
        }
    }

    pub fn strings(&mut self, key: &str, required: bool) -> Option<Vec<&'a str>> {
        let v = self.get(key, required)?;
        let Some(items) = v.as_array() else {
            self.violations
                .push(format!("{key}: must be an array of strings"));
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s),
                None => self.violations.push(format!("{key}/{i}: must be a string")),
            }
        }
        Some(out)
    }

    /// An RFC 3339 timestamp, as Unix ms.
    pub fn timestamp(&mut self, key: &str, required: bool) -> Option<i128> {
        let s = self.str(key, required)?;
        match rfc3339_ms(s) {
            Some(t) => Some(t),
            None => {
                self.violate(key, format!("{s:?} is not an RFC 3339 timestamp"));
                None
            }
        }
    }
}

/// Parses `payload` as a JSON object for [`Fields`]; a syntax error or a
/// non-object is one `Invalid` violation.
pub(crate) fn json_object(what: &str, payload: &[u8]) -> Result<Map<String, Value>> {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(LedgerError::Invalid {
            what: what.to_string(),
            violations: vec!["payload must be a JSON object".into()],
        }),
        Err(e) => Err(LedgerError::Invalid {
            what: what.to_string(),
            violations: vec![format!("payload is not valid JSON: {e}")],
        }),
    }
}

/// Turns collected violations into `Invalid` (or Ok when there are none).
pub(crate) fn finish(what: &str, violations: Vec<String>) -> Result<()> {
    if violations.is_empty() {
        Ok(())
    } else {
        Err(LedgerError::Invalid {
            what: what.to_string(),
            violations,
        })
    }
}

/// Turns the verifier's violations into `Invalid`.
pub(crate) fn from_violations(what: &str, vs: Vec<docket_verifier::Violation>) -> LedgerError {
    LedgerError::Invalid {
        what: what.to_string(),
        violations: vs.iter().map(ToString::to_string).collect(),
    }
}

/// Whether `s` is a lower-case 64-hex-digit SHA-256.
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Whether `s` looks like a media type (`type/subtype[;params]`).
pub fn is_media_type(s: &str) -> bool {
    let main = s.split(';').next().unwrap_or("").trim();
    let mut parts = main.split('/');
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    matches!((parts.next(), parts.next(), parts.next()), (Some(a), Some(b), None) if token(a) && token(b))
        && s.len() <= 255
        && !s.chars().any(char::is_control)
}

/// Whether `name` is a relative `/`-separated artifact path with no empty,
/// `.` or `..` component.
pub fn is_artifact_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 1024
        && !name.starts_with('/')
        && !name.contains('\\')
        && !name.chars().any(char::is_control)
        && name
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Whether `name` is a valid check name: 1..=128 of `[A-Za-z0-9_.:/-]`.
pub fn is_check_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:/-".contains(&b))
}

/// The evidence type of an artifact named `name` in a seed 000 artifacts
/// directory (first matching type, else `other`).
pub fn guess_evidence_type(name: &str) -> &'static str {
    docket_verifier::EvidenceType::ALL
        .iter()
        .find(|t| **t != docket_verifier::EvidenceType::Other && t.matches_artifact(name))
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

/// Builds a `submission.received` payload: the `submit.json` document with
/// `evidence_oids` added (replacing any there). A document that is not a
/// JSON object is `Invalid` with the verifier's violations.
pub fn submission_payload(submit_json: &[u8], evidence_oids: &[String]) -> Result<Vec<u8>> {
    let mut map = match serde_json::from_slice::<Value>(submit_json) {
        Ok(Value::Object(map)) => map,
        _ => {
            let violations = match docket_verifier::submit::Submission::parse(submit_json) {
                Err(vs) => vs.iter().map(ToString::to_string).collect(),
                Ok(_) => vec!["submit.json must be a JSON object".into()],
            };
            return Err(LedgerError::Invalid {
                what: "submission.received".into(),
                violations,
            });
        }
    };
    map.insert(
        "evidence_oids".into(),
        Value::Array(evidence_oids.iter().cloned().map(Value::String).collect()),
    );
    // Invariant: a JSON map serialises.
    Ok(serde_json::to_vec(&Value::Object(map)).expect("JSON serialises"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_canonicalise_like_uuid() {
        let c = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a";
        for form in [
            c,
            "72C84E9C-0975-4C1A-B9A5-864C2725DC8A",
            "72c84e9c09754c1ab9a5864c2725dc8a",
            "{72c84e9c-0975-4c1a-b9a5-864c2725dc8a}",
            "urn:uuid:72c84e9c-0975-4c1a-b9a5-864c2725dc8a",
        ] {
            assert_eq!(canonical_task_id(form).as_deref(), Some(c), "{form}");
        }
        assert_eq!(canonical_task_id("TASK-001"), None);
        assert!(matches!(task_key(c), Cow::Borrowed(_)));
        assert_eq!(task_key(&c.to_uppercase()), c);
        assert_eq!(task_key("TASK-001"), "TASK-001");
        assert_eq!(hex_lower(&[0, 0xab, 0xff]), "00abff");
        assert_eq!(
            canonical_task_id("72c84e9c-0975-4c1a-b9a5-864c2725dc8g"),
            None
        );
        assert_eq!(
            canonical_task_id("72c84e9c0-975-4c1a-b9a5-864c2725dc8a"),
            None
        );
    }

    #[test]
    fn names_and_types() {
        assert!(is_artifact_name("patch.diff"));
        assert!(is_artifact_name("evidence/pre_state.json"));
        for bad in ["", "/etc/passwd", "a/../b", "./a", "a//b", "a\\b"] {
            assert!(!is_artifact_name(bad), "{bad}");
        }
        assert!(is_media_type("text/x-diff"));
        assert!(is_media_type("text/plain; charset=utf-8"));
        assert!(!is_media_type("text"));
        assert!(!is_media_type("a/b/c"));
        assert!(is_sha256_hex(&"ab".repeat(32)));
        assert!(!is_sha256_hex(&"AB".repeat(32)));
        assert_eq!(ms_to_rfc3339(1_770_647_400_000), "2026-02-09T14:30:00Z");
        assert_eq!(rfc3339_ms("2026-02-09T14:30:00Z"), Some(1_770_647_400_000));
        assert_eq!(guess_evidence_type("patch.diff"), "patch.diff");
        assert_eq!(guess_evidence_type("evidence/patch.diff"), "patch.diff");
        assert_eq!(guess_evidence_type("evidence/pre_state.json"), "other");
        assert_eq!(guess_evidence_type("trace.jsonl"), "trace");
        assert_eq!(guess_media_type("report.md"), "text/markdown");
    }
}

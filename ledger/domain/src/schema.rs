//! The shared vocabulary of payloads: the toolkit every aggregate validates
//! its JSON payloads with ([`Fields`], which lists **every** violated rule),
//! the field validators, task ids, times, 32-byte hex values and retention
//! classes.
//!
//! Every payload is JSON, kept byte for byte as its author signed it.
//! Docket's own payloads refuse unknown fields; seed documents allow them
//! (seed 003: "Additional fields are allowed"). Validation failures are
//! `LedgerError::Invalid`, one violation per broken rule.
//!
//! Nothing here knows a kind or an aggregate: the aggregates build on it.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{LedgerError, Result};

/// Longest actor, scope, mutation mode or task id label (bytes).
pub const MAX_LABEL: usize = 256;
/// Longest note or reason (bytes).
pub const MAX_NOTE: usize = 4096;

/// Retention classes: a task contract names the default class of its
/// evidence, an OID carries its own, retention moves it.
pub mod classes {
    pub const ROUTINE: &str = "routine";
    pub const HIGH_IMPACT: &str = "high_impact";
    pub const PINNED: &str = "pinned";
    /// Every class, in display order.
    pub const ALL: [&str; 3] = [ROUTINE, HIGH_IMPACT, PINNED];
}

/// Retention classes (the same list as [`classes::ALL`]).
pub const RETENTION_CLASSES: [&str; 3] = classes::ALL;

/// 32 raw bytes (a SHA-256 digest or an ed25519 public key), serialised as
/// 64 lower-case hex digits. Byte order and hex order agree, so maps and
/// sets keyed by it sort the same either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hex32(pub [u8; 32]);

/// A SHA-256 digest.
pub type Digest32 = Hex32;

impl Hex32 {
    pub fn to_hex(&self) -> String {
        hex_lower(&self.0)
    }

    /// SHA-256 of `bytes`.
    pub fn sha256(bytes: &[u8]) -> Hex32 {
        use sha2::Digest as _;
        Hex32(sha2::Sha256::digest(bytes).into())
    }
}

impl std::fmt::Display for Hex32 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Hex32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Hex32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bytes = hex::decode(s.as_ref()).map_err(serde::de::Error::custom)?;
        let arr: [u8; 32] = bytes
            .try_into()
            .map_err(|_| serde::de::Error::custom("a digest is 32 bytes"))?;
        Ok(Hex32(arr))
    }
}

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
    let t = docket_verifier::parse_rfc3339(s)?;
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
        match text_problem(s, max) {
            None => Some(s),
            Some(problem) => {
                self.violate(key, problem);
                None
            }
        }
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

/// What is wrong with `s` as a text field (see [`Fields::text`]): empty,
/// longer than `max` bytes, or holding a control character; None when it is
/// valid.
pub(crate) fn text_problem(s: &str, max: usize) -> Option<String> {
    if s.trim().is_empty() {
        Some("must not be empty".into())
    } else if s.len() > max {
        Some(format!("longer than {max} bytes"))
    } else if s.chars().any(char::is_control) {
        Some("must not contain control characters".into())
    } else {
        None
    }
}

/// Whether `s` is a valid text field of at most `max` bytes
/// ([`text_problem`] finds nothing).
pub(crate) fn is_text(s: &str, max: usize) -> bool {
    !s.trim().is_empty() && s.len() <= max && !s.chars().any(char::is_control)
}

/// The fast path of a payload decoder: deserializes `payload` straight into
/// `T` (one pass over the bytes, no `serde_json::Value` tree), or None when
/// the payload is not a JSON object or `T` refuses it.
///
/// The decoders use it only where `T` is at least as strict as their checked
/// path ([`Fields`] over [`json_object`]), and run the same field checks on
/// the typed result; on None or any failed check they run the checked path,
/// which names every violation. So the fast path changes no decision and no
/// error text, only the cost of a valid payload. (The object test matters:
/// derived structs also accept JSON arrays; duplicate keys, which the
/// checked path lets the last one win, make derived structs fail, and so
/// take the checked path. So does a payload that is not UTF-8.) serde skips a
/// field `T` does not know without checking its text (a lone surrogate
/// escape, a number out of range), where the checked path's `Value` tree
/// refuses it: so `T` either denies unknown fields (`CheckRecorded`,
/// `EvidenceRegistered`) or is read only after the verifier's reader has
/// read the whole text (`DocketFields`).
pub(crate) fn direct<T: serde::de::DeserializeOwned>(payload: &[u8]) -> Option<T> {
    let text = std::str::from_utf8(payload).ok()?;
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    serde_json::from_str(text).ok()
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

/// One `Invalid` violation.
pub(crate) fn invalid(what: &str, violation: impl Into<String>) -> LedgerError {
    LedgerError::Invalid {
        what: what.to_string(),
        violations: vec![violation.into()],
    }
}

/// Turns the verifier's violations into `Invalid`.
pub(crate) fn from_violations(what: &str, vs: Vec<docket_verifier::Violation>) -> LedgerError {
    LedgerError::Invalid {
        what: what.to_string(),
        violations: vs.iter().map(ToString::to_string).collect(),
    }
}

/// Parses a JSON payload into `T`, mapping errors to one `Invalid`
/// violation ("payload is not a valid WHAT document: ...").
pub fn parse_json<T: serde::de::DeserializeOwned>(what: &str, payload: &[u8]) -> Result<T> {
    serde_json::from_slice(payload)
        .map_err(|e| invalid(what, format!("payload is not a valid {what} document: {e}")))
}

/// Decodes a payload object whose fields [`Fields`] already validated into
/// its typed struct (from the parsed map: the bytes are tokenized once); a
/// serde error is one `Invalid` violation.
pub(crate) fn decode_checked<T: serde::de::DeserializeOwned>(
    what: &str,
    map: Map<String, Value>,
) -> Result<T> {
    serde_json::from_value(Value::Object(map)).map_err(|e| invalid(what, e.to_string()))
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
    fn names_and_times() {
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
    }
}

//! `--format vsa`: verdicts as SLSA Verification Summary Attestations and
//! checks as in-toto test-result statements, each an in-toto Statement v1
//! in a DSSE envelope signed with the ledger key.
//!
//! * in-toto Statement v1: `_type` `https://in-toto.io/Statement/v1`,
//!   `subject` (ResourceDescriptors with a `digest`), `predicateType`,
//!   `predicate`.
//! * VSA v1: predicate type `https://slsa.dev/verification_summary/v1`
//!   (`verifier.id`, `timeVerified`, `resourceUri`, `policy`,
//!   `inputAttestations`, `verificationResult`, `verifiedLevels`).
//! * Test result v0.1: predicate type
//!   `https://in-toto.io/attestation/test-result/v0.1` (`result`,
//!   `configuration`, `passedTests`, `warnedTests`, `failedTests`).
//! * DSSE v1 envelope: `payloadType` `application/vnd.in-toto+json`,
//!   `payload` (standard base64), `signatures[{keyid, sig}]`; the signature
//!   is over `PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body)
//!   SP body`, LEN the ASCII decimal byte length without leading zeros.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::checkpoint::Checkpoint;
use crate::event::Event;

use super::ExportError;
use super::format::ATTESTATIONS_DIR;
use super::source::LogSource;

/// The DSSE payload type of in-toto statements.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
pub const VSA_PREDICATE: &str = "https://slsa.dev/verification_summary/v1";
pub const TEST_RESULT_PREDICATE: &str = "https://in-toto.io/attestation/test-result/v0.1";

/// DSSE pre-authentication encoding.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload_type.len() + body.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(payload_type.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(payload_type.as_bytes());
    out.push(b' ');
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(body);
    out
}

/// A DSSE envelope (JSON form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Standard base64 of the serialized body.
    pub payload: String,
    pub signatures: Vec<EnvelopeSignature>,
}

/// One DSSE signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvelopeSignature {
    /// The C2SP verifier key text of the signing key (a hint).
    #[serde(default)]
    pub keyid: String,
    /// Standard base64 of the Ed25519 signature over the PAE.
    pub sig: String,
}

/// Signs `body` as `payload_type`.
pub fn sign(key: &SigningKey, keyid: &str, payload_type: &str, body: &[u8]) -> Envelope {
    let sig = key.sign(&pae(payload_type, body));
    Envelope {
        payload_type: payload_type.to_string(),
        payload: B64.encode(body),
        signatures: vec![EnvelopeSignature {
            keyid: keyid.to_string(),
            sig: B64.encode(sig.to_bytes()),
        }],
    }
}

/// Verifies that some signature of `env` is `key`'s (strict Ed25519 over the
/// PAE) and returns the body.
pub fn verify(env: &Envelope, key: &VerifyingKey) -> Result<Vec<u8>, String> {
    let body = B64
        .decode(&env.payload)
        .map_err(|e| format!("payload is not standard base64: {e}"))?;
    let message = pae(&env.payload_type, &body);
    for s in &env.signatures {
        let Ok(raw) = B64.decode(&s.sig) else {
            continue;
        };
        let Ok(sig) = Signature::from_slice(&raw) else {
            continue;
        };
        if key.verify_strict(&message, &sig).is_ok() {
            return Ok(body);
        }
    }
    Err("no signature verifies with the ledger key".into())
}

/// RFC 3339 (UTC) of Unix milliseconds.
fn rfc3339(ms: u64) -> String {
    let nanos = i128::from(ms) * 1_000_000;
    time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| ms.to_string())
}

/// The attestation files for the carried verdicts and checks.
pub fn attestations(
    events: &[&Event],
    source: &dyn LogSource,
    cp: &Checkpoint,
    _note: &str,
) -> Result<Vec<(String, Vec<u8>)>, ExportError> {
    let key = source.ledger_signing_key().ok_or_else(|| {
        ExportError::NotFound(
            "the ledger's private key, which signs the VSA envelopes (this log was recovered \
             from stored bytes: export a bundle instead)"
                .into(),
        )
    })?;
    let keyid = source.verifier_key();
    let out: Vec<(String, serde_json::Value)> = events
        .iter()
        .flat_map(|e| statements_for(e, &cp.origin))
        .collect();
    Ok(out
        .into_iter()
        .map(|(stem, statement)| {
            // Invariant: a json! value serialises.
            let body = serde_json::to_vec(&statement).expect("statement serialises");
            let env = sign(key, &keyid, PAYLOAD_TYPE, &body);
            let bytes = super::writer::json_line(&env);
            (format!("{ATTESTATIONS_DIR}{stem}.dsse.json"), bytes)
        })
        .collect())
}

/// The in-toto statements `--format vsa` makes for one event, with the
/// file stem of each (`verdict-SEQ.vsa`, `verdict-SEQ.test-result`,
/// `check-SEQ.test-result`): none for other kinds. A function of the event
/// and the origin alone, so that an audit can rebuild what an attestation
/// must say and compare.
pub fn statements_for(e: &Event, origin: &str) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let is_verdict = matches!(
        e.kind.as_str(),
        "verdict.issued" | "verdict.imported" | "verdict.deadline_passed"
    );
    let is_check = e.kind == "check.recorded";
    if !is_verdict && !is_check {
        return out;
    }
    let Ok(payload) = serde_json::from_slice::<serde_json::Value>(&e.payload) else {
        return out;
    };
    let task = payload
        .get("task_id")
        .and_then(|t| t.as_str())
        .unwrap_or("unknown");
    let leaf = hex::encode(e.leaf_hash());
    let payload_digest = hex::encode(super::writer::sha256(&e.payload));
    let log_entry = json!({
        "uri": format!("docket://{origin}/log/{}", e.seq),
        "digest": {"sha256": leaf},
    });
    let subject = json!([{
        "name": format!("docket://{origin}/tasks/{task}/{}/{}", e.kind, e.seq),
        "digest": {"sha256": payload_digest},
    }]);
    let verifier_id = format!("docket://{origin}/keys/{}", hex::encode(e.author));
    if is_verdict {
        let pass = payload.get("verdict").and_then(|v| v.as_str()) == Some("PASS");
        // Verdict provenance: the engine's name and version next to
        // Docket's, and its rule-set digest (docs/DOMAIN.md §3.10).
        let mut version = json!({"docket": env!("CARGO_PKG_VERSION")});
        let engine = payload.get("engine").cloned();
        if let Some(en) = &engine
            && let (Some(n), Some(v)) = (
                en.get("name").and_then(|x| x.as_str()),
                en.get("version").and_then(|x| x.as_str()),
            )
        {
            version[n] = json!(v);
        }
        let mut statement = json!({
            "_type": STATEMENT_TYPE,
            "subject": subject,
            "predicateType": VSA_PREDICATE,
            "predicate": {
                "verifier": {
                    "id": verifier_id,
                    "version": version,
                },
                "timeVerified": rfc3339(e.recorded_at_ms),
                "resourceUri": format!("docket://{origin}/tasks/{task}"),
                "policy": {"uri": format!("docket://{origin}/tasks/{task}/contract")},
                "inputAttestations": [log_entry],
                "verificationResult": if pass { "PASSED" } else { "FAILED" },
                "verifiedLevels": [if pass { "DOCKET_VERDICT_PASS" } else { "FAILED" }],
                "slsaVersion": "1.0",
            },
        });
        if let Some(en) = engine {
            statement["predicate"]["verifier"]["engine"] = en;
        }
        out.push((format!("verdict-{}.vsa", e.seq), statement));
    }
    let checks = checks_of(&payload);
    if !checks.is_empty() || is_check {
        let mut passed = Vec::new();
        let mut failed = Vec::new();
        for (name, ok) in &checks {
            if *ok {
                passed.push(name.clone());
            } else {
                failed.push(name.clone());
            }
        }
        let result = if failed.is_empty() && !passed.is_empty() {
            "PASSED"
        } else {
            "FAILED"
        };
        let statement = json!({
            "_type": STATEMENT_TYPE,
            "subject": subject,
            "predicateType": TEST_RESULT_PREDICATE,
            "predicate": {
                "result": result,
                "configuration": [log_entry],
                "url": format!("docket://{origin}/log/{}", e.seq),
                "passedTests": passed,
                "warnedTests": [],
                "failedTests": failed,
            },
        });
        let stem = if is_verdict { "verdict" } else { "check" };
        out.push((format!("{stem}-{}.test-result", e.seq), statement));
    }
    out
}

/// `(name, passed)` of each check in a verdict or check payload: a `checks`
/// map of booleans or of objects with `passed`/`ok`/`result`, or a single
/// check (`name` plus `passed`/`ok`/`result`).
fn checks_of(payload: &serde_json::Value) -> Vec<(String, bool)> {
    fn truth(v: &serde_json::Value) -> Option<bool> {
        match v {
            serde_json::Value::Bool(b) => Some(*b),
            serde_json::Value::String(s) => Some(matches!(
                s.as_str(),
                "PASS" | "PASSED" | "pass" | "ok" | "true"
            )),
            serde_json::Value::Object(o) => ["passed", "ok", "result", "status"]
                .iter()
                .find_map(|k| o.get(*k))
                .and_then(truth),
            _ => None,
        }
    }
    let mut out = Vec::new();
    match payload.get("checks") {
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                if let Some(t) = truth(v) {
                    out.push((k.clone(), t));
                }
            }
        }
        Some(serde_json::Value::Array(a)) => {
            for v in a {
                if let (Some(n), Some(t)) = (v.get("name").and_then(|n| n.as_str()), truth(v)) {
                    out.push((n.to_string(), t));
                }
            }
        }
        _ => {
            if let (Some(n), Some(t)) =
                (payload.get("name").and_then(|n| n.as_str()), truth(payload))
            {
                out.push((n.to_string(), t));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_dsse_spec_vector() {
        // DSSE protocol.md, "Test Vectors".
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        assert_eq!(pae("", b""), b"DSSEv1 0  0 ".to_vec());
    }

    #[test]
    fn sign_verify_and_type_is_authenticated() {
        let key = SigningKey::from_bytes(&[3; 32]);
        let env = sign(&key, "k", PAYLOAD_TYPE, b"{}");
        assert_eq!(verify(&env, &key.verifying_key()).unwrap(), b"{}");
        let mut other = env.clone();
        other.payload_type = "application/json".into();
        assert!(verify(&other, &key.verifying_key()).is_err());
        let mut body = env;
        body.payload = B64.encode(b"[]");
        assert!(verify(&body, &key.verifying_key()).is_err());
    }

    #[test]
    fn time_verified_drops_trailing_zero_milliseconds() {
        assert_eq!(rfc3339(1_000), "1970-01-01T00:00:01Z");
        assert_eq!(rfc3339(1_500), "1970-01-01T00:00:01.5Z");
        assert_eq!(rfc3339(1_230), "1970-01-01T00:00:01.23Z");
        assert_eq!(rfc3339(1_234), "1970-01-01T00:00:01.234Z");
    }
}

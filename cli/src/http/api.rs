//! JSON read endpoints for the web explorer (`GET /api/...`). Every answer
//! is built from the durable state; nothing here writes. The explorer
//! never trusts these answers for verification: it recomputes leaf hashes
//! from `event_b64` and checks proofs against the signed checkpoint with a
//! key it pinned itself (cli/web/verify.js).
//!
//! | path | answer |
//! | --- | --- |
//! | `/api/head` | origin, tree size, root, the signed checkpoint note, the verifier key, `failure` |
//! | `/api/events?before=N&limit=L` | up to `L` (≤ 500, default 50) event summaries below `N` (default: the head), newest first |
//! | `/api/event/<seq>` | one event: fields, payload, signature, `event_b64` (canonical bytes), the author's key record |
//! | `/api/proof/<seq>` | the inclusion proof of `seq` in the current checkpoint's tree, with that checkpoint note |
//! | `/api/tasks` | every task's verdict state |
//! | `/api/task/<id>` | a task: contract, verdict state, timeline (each change with its signer, verdict, reason, OIDs, supersession), approvals, evidence with retention state |
//! | `/api/evidence/<OID>` | one OID: digest, size, type, state (live, expired, redacted), pin, removal |

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use docket_domain::LedgerError;
use docket_domain::domain::service::KeyView;
use docket_domain::domain::{AsOf, Docket};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;

/// Most event summaries one `/api/events` answer carries.
pub const MAX_EVENTS_PAGE: u64 = 500;

/// An error answer: a status and a message (JSON `{"error": ...}`).
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub fn not_found(what: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("not found: {what}"))
    }
}

impl From<LedgerError> for ApiError {
    fn from(e: LedgerError) -> Self {
        let status = match &e {
            LedgerError::NotFound { .. } => StatusCode::NOT_FOUND,
            LedgerError::Invalid { .. } | LedgerError::Malformed { .. } => StatusCode::BAD_REQUEST,
            LedgerError::FailedPrecondition(_) => StatusCode::CONFLICT,
            LedgerError::Closed(_) | LedgerError::Io { .. } | LedgerError::Store { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match &e {
            // I/O and storage errors name server paths: log them, answer
            // without them.
            LedgerError::Io { .. } | LedgerError::Store { .. } => {
                tracing::warn!("http read failed: {e}");
                "I/O error on the server (see its log)".to_string()
            }
            _ => e.to_string(),
        };
        Self::new(status, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, Json(json!({"error": self.message}))).into_response();
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        r
    }
}

/// Runs blocking ledger reads on the blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        tracing::error!("http handler panicked: {e}");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error on the server (see its log)",
        )
    })?
}

/// A JSON answer that is never cached (the head moves).
fn fresh(v: Value) -> Response {
    let mut r = Json(v).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

fn hex32(h: &[u8]) -> String {
    hex::encode(h)
}

/// `GET /api/head`.
pub async fn head(State(s): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let docket = s.docket.clone();
    blocking(move || {
        let ledger = docket.ledger();
        let (size, root, note) = match ledger.checkpoint()? {
            Some((cp, note)) => (cp.size, Some(hex32(&cp.root)), Some(note)),
            None => (0, None, None),
        };
        Ok(fresh(json!({
            "origin": ledger.origin(),
            "tree_size": size,
            "root": root,
            "checkpoint": note,
            "verifier_key": ledger.verifier_key(),
            "ledger_public_key": hex32(ledger.ledger_key().verifying_key().as_bytes()),
            "failure": ledger.failure(),
        })))
    })
    .await
}

/// Query of `/api/events`.
#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    pub before: Option<u64>,
    pub limit: Option<u64>,
}

/// `GET /api/events`.
pub async fn events(
    State(s): State<Arc<AppState>>,
    query: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    // A query that does not parse is answered like every other error of
    // this API: 400 with a JSON `{"error": ...}` (not axum's plain text).
    let Query(q) = query.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "bad query ({}): `before` and `limit` are whole numbers from 0 to 2^64 - 1",
                e.body_text()
            ),
        )
    })?;
    let docket = s.docket.clone();
    blocking(move || {
        let ledger = docket.ledger();
        let len = ledger.len();
        let to = q.before.unwrap_or(len).min(len);
        let limit = q.limit.unwrap_or(50).clamp(1, MAX_EVENTS_PAGE);
        let from = to.saturating_sub(limit);
        let mut list: Vec<Value> = ledger
            .events(from, to)?
            .into_iter()
            .map(|e| {
                json!({
                    "seq": e.seq,
                    "kind": e.kind,
                    "author": hex32(&e.author),
                    "recorded_at_ms": e.recorded_at_ms,
                    "payload_size": e.payload.len(),
                    "task_id": payload_json(&e.payload)
                        .and_then(|p| p.get("task_id").and_then(Value::as_str).map(str::to_string)),
                })
            })
            .collect();
        list.reverse();
        Ok(fresh(
            json!({"tree_size": len, "from": from, "to": to, "events": list}),
        ))
    })
    .await
}

/// The payload as JSON, when it is a JSON document.
fn payload_json(payload: &[u8]) -> Option<Value> {
    serde_json::from_slice(payload).ok()
}

/// Hex public key → key record (revoked keys included).
fn key_index(docket: &Docket) -> Result<BTreeMap<String, KeyView>, ApiError> {
    Ok(docket
        .keys(AsOf::Latest, true)?
        .into_iter()
        .map(|k| (k.public_key.to_ascii_lowercase(), k))
        .collect())
}

/// `GET /api/event/<seq>`.
pub async fn event(
    State(s): State<Arc<AppState>>,
    Path(seq): Path<String>,
) -> Result<Response, ApiError> {
    let seq: u64 = seq
        .parse()
        .map_err(|_| ApiError::not_found(format!("event {seq:?}")))?;
    let docket = s.docket.clone();
    blocking(move || {
        let ledger = docket.ledger();
        let bytes = ledger.event_bytes(seq)?;
        let e = docket_domain::Event::decode(&bytes)?;
        let author = hex32(&e.author);
        let keys = key_index(&docket)?;
        let ledger_key = hex32(ledger.ledger_key().verifying_key().as_bytes());
        let oid = (e.kind == "evidence.registered")
            .then(|| docket.oid_at(seq).ok())
            .flatten();
        let json_payload = payload_json(&e.payload);
        Ok(fresh(json!({
            "seq": e.seq,
            "format": e.format,
            "kind": e.kind,
            "author": author,
            "author_key": keys.get(&author),
            "is_ledger_key": author == ledger_key,
            "recorded_at_ms": e.recorded_at_ms,
            "prev_hash": hex32(&e.prev_hash),
            "payload_json": json_payload,
            "payload_text": std::str::from_utf8(&e.payload).ok(),
            "payload_size": e.payload.len(),
            "signature": hex::encode(e.signature),
            "event_b64": base64::engine::general_purpose::STANDARD.encode(&bytes),
            "event_size": bytes.len(),
            "leaf_hash": hex32(&docket_domain::merkle::leaf_hash(&bytes)),
            "oid": oid,
            "tree_size": ledger.len(),
        })))
    })
    .await
}

/// `GET /api/proof/<seq>`: against the current checkpoint.
pub async fn proof(
    State(s): State<Arc<AppState>>,
    Path(seq): Path<String>,
) -> Result<Response, ApiError> {
    let seq: u64 = seq
        .parse()
        .map_err(|_| ApiError::not_found(format!("event {seq:?}")))?;
    let docket = s.docket.clone();
    blocking(move || {
        let ledger = docket.ledger();
        let Some((cp, note)) = ledger.checkpoint()? else {
            return Err(ApiError::not_found("a checkpoint (the log is empty)"));
        };
        if seq >= cp.size {
            return Err(ApiError::not_found(format!(
                "event {seq} (the checkpoint's tree has {} events)",
                cp.size
            )));
        }
        // Checked against the signed checkpoint before it is served.
        let proved = ledger.prove_inclusion(seq, cp.size)?;
        Ok(fresh(json!({
            "leaf_index": seq,
            "tree_size": cp.size,
            "leaf_hash": hex32(&proved.leaf),
            "root_hash": hex32(&proved.root),
            "proof": proved.path.iter().map(|h| hex32(h)).collect::<Vec<_>>(),
            "checkpoint": note,
        })))
    })
    .await
}

/// `GET /api/tasks`.
pub async fn tasks(State(s): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let docket = s.docket.clone();
    blocking(move || {
        let list = docket.verdicts(None, AsOf::Latest)?;
        Ok(fresh(json!({"tasks": list})))
    })
    .await
}

/// One entry of a task's timeline: a change of its verdict state, with
/// what the event says and who signed it.
fn timeline_entry(
    docket: &Docket,
    keys: &BTreeMap<String, KeyView>,
    change: &Value,
) -> Result<Value, ApiError> {
    let seq = change["seq"]
        .as_u64()
        .ok_or_else(|| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "history without seq"))?;
    let e = docket.ledger().event(seq)?;
    let author = hex32(&e.author);
    let p = payload_json(&e.payload).unwrap_or(Value::Null);
    let pick = |k: &str| p.get(k).cloned().unwrap_or(Value::Null);
    let is_verdict = e.kind == "verdict.issued";
    let verdict_field = |k: &str| if is_verdict { pick(k) } else { Value::Null };
    let checks = match e.kind.as_str() {
        "check.recorded" => {
            json!({ p.get("name").and_then(Value::as_str).unwrap_or("?"): pick("passed") })
        }
        _ => pick("checks"),
    };
    let text = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
    // What a non-verdict entry says, in a few words.
    let detail = match e.kind.as_str() {
        "submission.received" => {
            let status = p.get("status").and_then(Value::as_str).unwrap_or("?");
            match p.get("reason_code").and_then(Value::as_str) {
                Some(rc) => json!(format!("executor reported {status} ({rc})")),
                None => json!(format!("executor reported {status}")),
            }
        }
        "task.registered" => json!("task registered"),
        "approval.requested" => json!(format!(
            "{} asks for {} ({})",
            text("actor"),
            text("scope"),
            text("mutation_mode")
        )),
        "approval.granted" => json!(format!("{} granted {}", text("actor"), text("scope"))),
        "approval.denied" => json!(format!(
            "{} denied {}: {}",
            text("actor"),
            text("scope"),
            text("reason")
        )),
        "execution.recorded" => json!(format!("execution {}", text("status"))),
        _ => Value::Null,
    };
    Ok(json!({
        "seq": seq,
        "kind": e.kind,
        "at_ms": e.recorded_at_ms,
        "status": change["status"],
        "author": author,
        "author_roles": keys.get(&author).map(|k| &k.record.roles),
        "author_label": keys.get(&author).and_then(|k| k.record.label.clone()),
        "verdict": verdict_field("verdict"),
        "reason_code": verdict_field("reason_code"),
        "fail_class": verdict_field("fail_class"),
        "detail": detail,
        "evidence_oids": pick("evidence_oids"),
        "submission_seq": pick("submission_seq"),
        "checks": checks,
        "superseded_by": Value::Null,
        "superseded_why": Value::Null,
    }))
}

/// Marks superseded entries: a verdict by the next verdict (same
/// submission) or the next submission; a submission by the next one.
fn mark_supersessions(timeline: &mut [Value]) {
    for i in 0..timeline.len() {
        let kind = timeline[i]["kind"].as_str().unwrap_or("").to_string();
        let next = timeline[i + 1..].iter().find_map(|later| {
            let k = later["kind"].as_str().unwrap_or("");
            let seq = later["seq"].as_u64()?;
            match (kind.as_str(), k) {
                ("verdict.issued", "verdict.issued") => {
                    Some((seq, "a later verdict for the same submission"))
                }
                ("verdict.issued" | "submission.received", "submission.received") => {
                    Some((seq, "a newer submission"))
                }
                _ => None,
            }
        });
        if let Some((seq, why)) = next {
            timeline[i]["superseded_by"] = json!(seq);
            timeline[i]["superseded_why"] = json!(why);
        }
    }
}

/// `GET /api/task/<id>`.
pub async fn task(
    State(s): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let docket = s.docket.clone();
    blocking(move || {
        let view = docket.task(&id, AsOf::Latest)?;
        let verdict = docket.verdict(&id, AsOf::Latest, true)?;
        let task_json = serde_json::to_value(&view)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let verdict_json = serde_json::to_value(&verdict)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let keys = key_index(&docket)?;
        let history = verdict_json["history"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut timeline = history
            .iter()
            .map(|c| timeline_entry(&docket, &keys, c))
            .collect::<Result<Vec<_>, _>>()?;
        mark_supersessions(&mut timeline);
        let evidence: Vec<Value> = task_json["evidence"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .filter_map(|oid| docket.evidence(oid).ok())
                    .filter_map(|v| serde_json::to_value(v).ok())
                    .collect()
            })
            .unwrap_or_default();
        Ok(fresh(json!({
            "task": task_json,
            "verdict": verdict_json,
            "timeline": timeline,
            "evidence": evidence,
        })))
    })
    .await
}

/// `GET /api/evidence/<OID>`.
pub async fn evidence(
    State(s): State<Arc<AppState>>,
    Path(oid): Path<String>,
) -> Result<Response, ApiError> {
    let docket = s.docket.clone();
    blocking(move || {
        let v = docket.evidence(&oid)?;
        let v = serde_json::to_value(&v)
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        Ok(fresh(v))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supersessions() {
        let mut t = vec![
            json!({"seq": 3, "kind": "task.registered"}),
            json!({"seq": 5, "kind": "submission.received"}),
            json!({"seq": 6, "kind": "verdict.issued"}),
            json!({"seq": 7, "kind": "verdict.issued"}),
            json!({"seq": 9, "kind": "submission.received"}),
            json!({"seq": 10, "kind": "verdict.issued"}),
        ];
        mark_supersessions(&mut t);
        assert_eq!(t[0]["superseded_by"], Value::Null);
        assert_eq!(t[1]["superseded_by"], json!(9));
        assert_eq!(t[2]["superseded_by"], json!(7));
        assert_eq!(t[3]["superseded_by"], json!(9));
        assert_eq!(t[3]["superseded_why"], json!("a newer submission"));
        assert_eq!(t[4]["superseded_by"], Value::Null);
        assert_eq!(t[5]["superseded_by"], Value::Null);
    }
}

//! The outsider's test vectors (docs/DOMAIN.md §8, docs/BUNDLE.md §8):
//!
//! * `tests/vectors/admission/vectors.json` — generated from the rule cases
//!   by `rule_cases.rs`; here each stored vector is **replayed from its
//!   bytes alone**, as an independent verifier would: every logged event is
//!   decoded, its signature verified, re-admitted at its own position and
//!   folded; then the statement is checked for a duplicate, admitted at its
//!   position, and the outcome (and projection checks) compared.
//! * `tests/vectors/oid/vectors.json` — OID derivation: statement digest,
//!   the 80 random bits and the OID for fixed statements and times.
//! * `tests/vectors/summary/<case>/` — a log's events, the `summary.json`
//!   its carried events fold to, every projection's canonical JSON, the
//!   task state digests and the blob rules (content shared by several OIDs).
//!
//! The OID and summary vectors are deterministic (fixed keys and times,
//! Ed25519 is deterministic): this test regenerates them in memory and
//! compares the stored copies byte for byte. Regenerate after a deliberate
//! change with `DOCKET_REGEN_VECTORS=1 cargo test -p docket-domain --test
//! spec_vectors`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use docket_domain::event::{EVENT_FORMAT, Event, Statement};
use docket_domain::export::summary::{SummaryBuilder, to_bytes};
use docket_domain::export::writer::{expected_blobs, removed_blobs};
use docket_domain::export::{LogSource as _, MemoryLog};
use docket_domain::keys::Role;
use docket_domain::merkle;
use docket_domain::state::AdmitContext;
use docket_domain::{LedgerError, LedgerState, oids};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors")
}

fn regen() -> bool {
    std::env::var_os("DOCKET_REGEN_VECTORS").is_some()
}

/// Compares `fresh` with the stored file (writing it first when
/// regenerating).
fn check_file(path: &Path, fresh: &[u8]) {
    if regen() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, fresh).unwrap();
    }
    let stored = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        stored == fresh,
        "{} differs from what the code generates; regenerate with DOCKET_REGEN_VECTORS=1 if the change is deliberate",
        path.display()
    );
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap();
    b.push(b'\n');
    b
}

fn code_of(e: &LedgerError) -> &'static str {
    match e {
        LedgerError::Invalid { .. } => "invalid",
        LedgerError::PermissionDenied { .. } => "permission_denied",
        LedgerError::NotFound { .. } => "not_found",
        LedgerError::AlreadyExists { .. } => "already_exists",
        LedgerError::FailedPrecondition(_) => "failed_precondition",
        LedgerError::ResourceExhausted(_) => "resource_exhausted",
        LedgerError::Malformed { .. } => "malformed",
        LedgerError::BadSignature { .. } => "bad_signature",
        _ => "other",
    }
}

fn hex32(s: &str) -> [u8; 32] {
    hex::decode(s).unwrap().try_into().unwrap()
}

// ------------------------------------------------------------ admission

/// Replays one admission vector from its bytes; `Err` says what differs.
fn replay_admission(v: &Value) -> Result<(), String> {
    let mut state = LedgerState::default();
    let mut digests: HashMap<[u8; 32], u64> = HashMap::new();
    let mut prev = [0u8; 32];
    let mut last_ms = 0;
    for (i, e) in v["log"].as_array().ok_or("no log")?.iter().enumerate() {
        let bytes = B64.decode(e.as_str().ok_or("event not a string")?).unwrap();
        let event = Event::decode(&bytes).map_err(|e| format!("event {i}: {e}"))?;
        if event.seq != i as u64 || event.prev_hash != prev || event.recorded_at_ms < last_ms {
            return Err(format!("event {i}: sequence, chain or time broken"));
        }
        let stmt = event.statement();
        stmt.verify().map_err(|e| format!("event {i}: {e}"))?;
        state
            .admit(
                &stmt,
                &AdmitContext {
                    seq: event.seq,
                    recorded_at_ms: event.recorded_at_ms,
                },
            )
            .map_err(|e| format!("event {i} is not admissible: {e}"))?;
        state.apply(&event).map_err(|e| format!("event {i}: {e}"))?;
        digests.entry(stmt.digest()).or_insert(event.seq);
        prev = merkle::leaf_hash(&bytes);
        last_ms = event.recorded_at_ms;
    }
    let s = &v["statement"];
    let stmt = Statement {
        kind: s["kind"].as_str().unwrap().to_string(),
        payload: B64.decode(s["payload_b64"].as_str().unwrap()).unwrap(),
        author: hex32(s["author"].as_str().unwrap()),
        signature: hex::decode(s["signature"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap(),
    };
    stmt.verify()
        .map_err(|e| format!("statement signature: {e}"))?;
    let ctx = AdmitContext {
        seq: v["position"]["seq"].as_u64().unwrap(),
        recorded_at_ms: v["position"]["recorded_at_ms"].as_u64().unwrap(),
    };
    if ctx.seq != v["log"].as_array().unwrap().len() as u64 || ctx.recorded_at_ms < last_ms {
        return Err("the position does not follow the log".into());
    }
    let want = &v["expected"];
    let outcome = want["outcome"].as_str().unwrap();
    if let Some(first) = digests.get(&stmt.digest()) {
        if outcome != "duplicate" || want["duplicate_of"].as_u64() != Some(*first) {
            return Err(format!("a duplicate of {first}, expected {want}"));
        }
        return Ok(());
    }
    match (state.admit(&stmt, &ctx), outcome) {
        (Ok(()), "admitted") => {
            let event = Event {
                format: EVENT_FORMAT,
                seq: ctx.seq,
                recorded_at_ms: ctx.recorded_at_ms,
                prev_hash: prev,
                kind: stmt.kind.clone(),
                author: stmt.author,
                payload: stmt.payload.clone(),
                signature: stmt.signature,
            };
            state.apply(&event).map_err(|e| e.to_string())?;
        }
        (Err(e), "refused") => {
            if code_of(&e) != want["code"].as_str().unwrap() {
                return Err(format!("refused {}: {e}; expected {want}", code_of(&e)));
            }
            let text = e.to_string();
            for m in want["message"].as_array().unwrap() {
                if !text.contains(m.as_str().unwrap()) {
                    return Err(format!("{text:?} does not contain {m}"));
                }
            }
        }
        (got, _) => return Err(format!("got {got:?}, expected {want}")),
    }
    if let Some(checks) = want["projection"].as_array() {
        let json = serde_json::to_value(&state).unwrap();
        for c in checks {
            let found = json.pointer(c["pointer"].as_str().unwrap());
            let ok = match c.get("equals") {
                Some(w) => found == Some(w),
                None => found.is_none() == (c["absent"] == json!(true)),
            };
            if !ok {
                return Err(format!("projection {c}: found {found:?}"));
            }
        }
    }
    Ok(())
}

/// Given the stored admission vectors, when each is replayed from its bytes
/// alone, then its outcome is the expected one.
#[test]
fn admission_vectors_replay_from_their_bytes() {
    let path = vectors().join("admission/vectors.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(doc["format"], "docket.admission-vectors/1");
    let cases = doc["cases"].as_object().unwrap();
    assert!(cases.len() >= 90, "{} cases", cases.len());
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, v)| {
            *outcomes
                .entry(v["expected"]["outcome"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
            replay_admission(v).err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    for o in ["admitted", "refused", "duplicate"] {
        assert!(outcomes.get(o).copied().unwrap_or(0) > 0, "{outcomes:?}");
    }
}

/// Given a stored vector, when its expected outcome is changed, then the
/// replay notices (the check can fail).
#[test]
fn a_changed_admission_vector_is_caught() {
    let path = vectors().join("admission/vectors.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let mut v = doc["cases"]["roles/verifier_cannot_register_task"].clone();
    replay_admission(&v).unwrap();
    v["expected"]["code"] = json!("not_found");
    assert!(replay_admission(&v).is_err());
    let mut v = doc["cases"]["roles/submitter_registers_task"].clone();
    replay_admission(&v).unwrap();
    v["expected"]["projection"][0]["equals"] = json!("pass");
    assert!(replay_admission(&v).is_err());
}

// ------------------------------------------------------------ OIDs

fn key(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

fn oid_vector(author: &SigningKey, kind: &str, payload: &str, recorded_at_ms: u64) -> Value {
    let stmt = Statement::sign(kind, payload.as_bytes().to_vec(), author);
    let digest = stmt.digest();
    let mut h = Sha256::new();
    h.update(oids::OID_PREFIX);
    h.update(digest);
    let random = &h.finalize()[..10];
    json!({
        "author": hex::encode(stmt.author),
        "kind": kind,
        "payload": payload,
        "payload_sha256": hex::encode(Sha256::digest(payload.as_bytes())),
        "statement_digest": hex::encode(digest),
        "recorded_at_ms": recorded_at_ms,
        "random": hex::encode(random),
        "oid": oids::mint(recorded_at_ms, &digest),
    })
}

fn oid_vectors() -> Value {
    let evidence = |task: &str, sha: &str, size: u64, name: &str| {
        json!({"task_id": task, "evidence_type": "patch.diff", "sha256": sha, "size": size,
               "media_type": "text/x-diff", "name": name})
        .to_string()
    };
    let task = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a";
    let sha = hex::encode(Sha256::digest(b"--- a\n+++ b\n"));
    let p1 = evidence(task, &sha, 12, "patch.diff");
    let p2 = evidence(task, &sha, 12, "evidence/patch.diff");
    let mut cases = vec![
        oid_vector(&key(3), "evidence.registered", &p1, 1_770_647_400_000),
        // Same statement, one millisecond later: same random part.
        oid_vector(&key(3), "evidence.registered", &p1, 1_770_647_400_001),
        // Same content under another name: another statement, another OID.
        oid_vector(&key(3), "evidence.registered", &p2, 1_770_647_400_000),
        // Same payload by another author: another OID.
        oid_vector(&key(4), "evidence.registered", &p1, 1_770_647_400_000),
        oid_vector(&key(3), "evidence.registered", &p1, 0),
        // The ULID timestamp has 48 bits: later times wrap (year 10889).
        oid_vector(&key(3), "evidence.registered", &p1, (1 << 48) - 1),
    ];
    // An event carrying the statement: the OID from the event's own fields.
    let stmt = Statement::sign("evidence.registered", p1.clone().into_bytes(), &key(3));
    let event = Event {
        format: EVENT_FORMAT,
        seq: 7,
        recorded_at_ms: 1_770_647_400_000,
        prev_hash: [0x11; 32],
        kind: stmt.kind.clone(),
        author: stmt.author,
        payload: stmt.payload.clone(),
        signature: stmt.signature,
    };
    let bytes = event.encode();
    cases[0]["event_b64"] = json!(B64.encode(&bytes));
    cases[0]["signature"] = json!(hex::encode(stmt.signature));
    json!({
        "format": "docket.oid-vectors/1",
        "rule": "OID = ULID(timestamp = recorded_at_ms (48 bits), random = SHA-256(\"docket/v1/oid\\0\" || statement_digest)[0..10]); statement_digest = SHA-256(\"docket/v1/statement\\0\" || author || \"docket/v1/\" || kind || 0x00 || SHA-256(payload))",
        "keys": "author i is the Ed25519 key whose 32-byte seed is 32 bytes of value i (3, 4)",
        "cases": cases,
    })
}

/// Given fixed statements and times, then the stored OID vectors are what
/// the code mints, and each recomputes from its own fields.
#[test]
fn oid_vectors_match_the_code() {
    let doc = oid_vectors();
    check_file(&vectors().join("oid/vectors.json"), &pretty(&doc));
    for c in doc["cases"].as_array().unwrap() {
        // From the fields alone, without Statement.
        let mut msg = b"docket/v1/".to_vec();
        msg.extend_from_slice(c["kind"].as_str().unwrap().as_bytes());
        msg.push(0);
        msg.extend_from_slice(&Sha256::digest(c["payload"].as_str().unwrap().as_bytes()));
        let mut h = Sha256::new();
        h.update(b"docket/v1/statement\0");
        h.update(hex32(c["author"].as_str().unwrap()));
        h.update(&msg);
        let digest: [u8; 32] = h.finalize().into();
        assert_eq!(hex::encode(digest), c["statement_digest"]);
        let oid = oids::mint(c["recorded_at_ms"].as_u64().unwrap(), &digest);
        assert_eq!(oid, c["oid"]);
        assert!(oids::is_oid(&oid));
        let ulid = ulid_parts(&oid);
        assert_eq!(
            ulid.0,
            c["recorded_at_ms"].as_u64().unwrap() & ((1 << 48) - 1)
        );
        assert_eq!(hex::encode(ulid.1), c["random"]);
        if let Some(b) = c["event_b64"].as_str() {
            let event = Event::decode(&B64.decode(b).unwrap()).unwrap();
            assert_eq!(oids::of_event(&event), c["oid"]);
        }
    }
}

/// Decodes a ULID's 26 Crockford base-32 characters into its 48-bit time
/// and 80-bit random part, by hand (what an outsider implements).
fn ulid_parts(s: &str) -> (u64, [u8; 10]) {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let mut n: u128 = 0;
    for c in s.bytes() {
        let d = ALPHABET.iter().position(|a| *a == c).unwrap() as u128;
        n = (n << 5) | d;
    }
    let time = (n >> 80) as u64;
    let random: [u8; 10] = (n & ((1u128 << 80) - 1)).to_be_bytes()[6..]
        .try_into()
        .unwrap();
    (time, random)
}

// ------------------------------------------------------------ summaries

const ORIGIN: &str = "vectors.docket/summary";
const T0: u64 = 1_770_647_400_000; // 2026-02-09T14:30:00Z
const DAY: u64 = 86_400_000;
const TASK: &str = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a";

fn sign(kind: &str, payload: &Value, k: &SigningKey) -> Statement {
    Statement::sign(kind, serde_json::to_vec(payload).unwrap(), k)
}

/// A log exercising every fold: keys (one revoked), a task with three OIDs
/// (two sharing one content), an execution, a submission, a check, a
/// verdict, an approval granted, the retention policy, a pin, a sweep and
/// two expiries.
fn summary_log() -> MemoryLog {
    let admin = key(2);
    let (sub, ver, app, cus, old) = (key(3), key(4), key(5), key(6), key(7));
    let mut log = MemoryLog::genesis(ORIGIN, key(1), &admin, T0).unwrap();
    let mut t = T0;
    let mut next = || {
        t += 1000;
        t
    };
    for (k, roles) in [
        (&sub, vec![Role::Submitter]),
        (&ver, vec![Role::Verifier]),
        (&app, vec![Role::Approver]),
        (&cus, vec![Role::Custodian]),
        (&old, vec![Role::Submitter]),
    ] {
        log.register(&admin, k, &roles, next()).unwrap();
    }
    log.revoke(&admin, &old, next()).unwrap();
    let task = json!({
        "task_id": TASK, "goal": "Add a greeting function and document it.", "role": "executor",
        "pins": {"allowed_paths": ["src/", "docs/"], "forbidden_paths": []},
        "files": ["src/lib.rs"], "context": {"map": {}, "docs": {}, "history": {}},
        "acceptance": {"required_evidence": ["patch.diff"], "required_checks": ["tests_passed"], "required_test_commands": []},
        "retention_class": "routine"
    });
    log.append(sign("task.registered", &task, &sub), next())
        .unwrap();
    let diff = b"--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -0,0 +1 @@\n+pub fn hi() {}\n".to_vec();
    let selftest = b"cargo test\nok\nEXIT_CODE=0\n".to_vec();
    let mut register = |log: &mut MemoryLog, content: &[u8], ty: &str, media: &str, name: &str| {
        log.put_blob(content.to_vec());
        let p = json!({"task_id": TASK, "evidence_type": ty,
                       "sha256": hex::encode(Sha256::digest(content)), "size": content.len(),
                       "media_type": media, "name": name});
        let seq = log
            .append(sign("evidence.registered", &p, &sub), next())
            .unwrap();
        oids::of_event(&Event::decode(log.event_bytes(seq).unwrap()).unwrap())
    };
    let a = register(&mut log, &diff, "patch.diff", "text/x-diff", "patch.diff");
    let b = register(
        &mut log,
        &diff,
        "patch.diff",
        "text/x-diff",
        "evidence/patch.diff",
    );
    let c = register(
        &mut log,
        &selftest,
        "selftest.log",
        "text/plain",
        "selftest.log",
    );
    let submit = json!({
        "schema_version": "scc.submit.v1", "task_id": TASK, "status": "DONE",
        "changed_files": ["src/lib.rs"], "new_files": [],
        "tests": {"commands": ["cargo test"], "passed": true, "summary": "ok"},
        "artifacts": {"report_md": "report.md", "selftest_log": "selftest.log", "evidence_dir": "evidence/",
                      "patch_diff": "patch.diff", "submit_json": "submit.json"},
        "exit_code": 0, "needs_input": [], "evidence_oids": [a, b, c]
    });
    log.append(sign("submission.received", &submit, &sub), next())
        .unwrap();
    log.append(
        sign(
            "check.recorded",
            &json!({"task_id": TASK, "name": "tests_passed", "passed": true}),
            &ver,
        ),
        next(),
    )
    .unwrap();
    let verdict = json!({
        "schema_version": "scc.verdict.v1", "task_id": TASK, "verdict": "PASS",
        "checks": {"schema_valid": true, "scope_valid": true, "tests_passed": true, "evidence_present": true},
        "messages": [], "timestamps": {"evaluated_at": "2026-02-09T14:30:20Z"}, "links": {},
        "evidence_oids": [a, c]
    });
    log.append(sign("verdict.issued", &verdict, &ver), next())
        .unwrap();
    let request = log
        .append(
            sign(
                "approval.requested",
                &json!({"task_id": TASK, "actor": "alice", "scope": "merge",
                        "mutation_mode": "real-repo", "timestamp": "2026-02-09T14:30:21Z",
                        "expires_at": "2026-02-10T14:30:00Z"}),
                &sub,
            ),
            next(),
        )
        .unwrap();
    log.append(
        sign(
            "approval.granted",
            &json!({"task_id": TASK, "request_seq": request, "actor": "bob", "scope": "merge",
                    "mutation_mode": "real-repo", "timestamp": "2026-02-09T14:30:22Z"}),
            &app,
        ),
        next(),
    )
    .unwrap();
    log.append(
        sign(
            "retention.policy_set",
            &json!({"routine_days": 30, "high_impact_days": 90}),
            &admin,
        ),
        next(),
    )
    .unwrap();
    log.append(
        sign(
            "retention.pinned",
            &json!({"oid": a, "reason": "legal hold"}),
            &cus,
        ),
        next(),
    )
    .unwrap();
    // 31 days later: a sweep, and the expiry of the unpinned OIDs.
    let later = T0 + 31 * DAY;
    let sweep = log
        .append(
            sign(
                "retention.sweep",
                &json!({"now": "2026-03-12T14:30:00Z"}),
                &cus,
            ),
            later,
        )
        .unwrap();
    let as_of = T0 + 31 * DAY;
    for oid in [&b, &c] {
        log.append(
            sign(
                "evidence.expired",
                &json!({"oid": oid, "as_of_ms": as_of, "sweep_seq": sweep}),
                &cus,
            ),
            later,
        )
        .unwrap();
    }
    log.commit();
    log
}

/// Writes (or checks) one summary case: the carried events, what they fold
/// to, and the blob rules.
fn summary_case(name: &str, log: &MemoryLog, carried: &[u64]) {
    let dir = vectors().join("summary").join(name);
    let events: Vec<Event> = carried
        .iter()
        .map(|s| Event::decode(log.event_bytes(*s).unwrap()).unwrap())
        .collect();
    let mut b = SummaryBuilder::new(log.len());
    for e in &events {
        b.add(e);
    }
    let state = b.state().clone();
    let summary = b.finish();
    let digests: BTreeMap<&String, String> = state
        .domain
        .verdicts
        .tasks
        .iter()
        .map(|(id, t)| (id, hex::encode(t.state_digest.0)))
        .collect();
    let projections: BTreeMap<&str, Value> = state
        .snapshots()
        .into_iter()
        .map(|(n, bytes)| (n, serde_json::from_slice(&bytes).unwrap()))
        .collect();
    let removed: BTreeMap<String, u64> = removed_blobs(&state.domain.oids)
        .into_iter()
        .map(|(d, s)| (hex::encode(d), s))
        .collect();
    let events_doc = json!({
        "tree_size": log.len(),
        "events": carried.iter().map(|s| json!({"seq": s, "event_b64": B64.encode(log.event_bytes(*s).unwrap())})).collect::<Vec<_>>(),
    });
    let derived = json!({
        "state_digests": digests,
        "blobs": {
            "needed": expected_blobs(&state.domain.oids).into_iter().map(hex::encode).collect::<Vec<_>>(),
            "removed": removed,
        },
        "projections": projections,
    });
    let summary_bytes = to_bytes(&summary);
    check_file(&dir.join("events.json"), &pretty(&events_doc));
    check_file(&dir.join("summary.json"), &summary_bytes);
    check_file(&dir.join("derived.json"), &pretty(&derived));
    // The stored summary is what folding the stored events gives.
    let stored: Value =
        serde_json::from_slice(&std::fs::read(dir.join("events.json")).unwrap()).unwrap();
    let mut again = SummaryBuilder::new(stored["tree_size"].as_u64().unwrap());
    for e in stored["events"].as_array().unwrap() {
        let bytes = B64.decode(e["event_b64"].as_str().unwrap()).unwrap();
        again.add(&Event::decode(&bytes).unwrap());
    }
    assert_eq!(
        to_bytes(&again.finish()),
        std::fs::read(dir.join("summary.json")).unwrap()
    );
}

/// Given a log that exercises every fold, then the stored summaries (the
/// whole log, and a slice whose context is partly missing) are what the
/// code folds.
#[test]
fn summary_vectors_match_the_code() {
    let log = summary_log();
    let all: Vec<u64> = (0..log.len()).collect();
    summary_case("full", &log, &all);
    // A slice: genesis, the key events and the task, then the task's events
    // from the submission on. The evidence registrations are not carried:
    // the events that name their OIDs (pin, expiries) fold nothing, the
    // submission and verdict fold with the OIDs they list.
    let slice: Vec<u64> = (0..=7).chain(11..log.len()).collect();
    summary_case("slice", &log, &slice);
    // Shared content: the two patch.diff OIDs have one blob; it stays
    // needed while one of them holds it.
    let derived: Value = serde_json::from_slice(
        &std::fs::read(vectors().join("summary/full/derived.json")).unwrap(),
    )
    .unwrap();
    let diff = hex::encode(Sha256::digest(
        b"--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -0,0 +1 @@\n+pub fn hi() {}\n",
    ));
    assert!(
        derived["blobs"]["needed"]
            .as_array()
            .unwrap()
            .contains(&json!(diff))
    );
    assert!(derived["blobs"]["removed"].get(&diff).is_none());
    assert_eq!(derived["blobs"]["removed"].as_object().unwrap().len(), 1);
}

// ------------------------------------------------------------ the spec's tables

/// docs/BUNDLE.md §10 names, for every kind, exactly the roles the kind
/// table gives it (an auditor in another language reads that table).
#[test]
fn the_bundle_authority_table_matches_the_code() {
    use docket_domain::kind::{EXTENSION_ROLES, Kind};
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/BUNDLE.md"))
            .unwrap();
    let start = doc.find("| kind | roles that may author it |").unwrap();
    let rows: Vec<(String, String)> = doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].to_string(), cells[2].to_string())
        })
        .collect();
    let roles_of = |name: &str| -> &str {
        let quoted = format!("`{name}`");
        let hits: Vec<&(String, String)> = rows
            .iter()
            .filter(|(k, _)| k.split(", ").any(|x| x == quoted))
            .collect();
        assert_eq!(
            hits.len(),
            1,
            "docs/BUNDLE.md §10: {name} in {} rows",
            hits.len()
        );
        &hits[0].1
    };
    for kind in &Kind::KNOWN[1..] {
        let want: Vec<&str> = kind.roles().unwrap().iter().map(|r| r.as_str()).collect();
        assert_eq!(roles_of(kind.as_str()), want.join(", "), "roles of {kind}");
    }
    assert_eq!(roles_of("ledger.genesis"), "the ledger key, at seq 0 only");
    let ext: Vec<&str> = EXTENSION_ROLES.iter().map(|r| r.as_str()).collect();
    let ext_row = rows.iter().find(|(k, _)| k.starts_with("`x-")).unwrap();
    assert_eq!(ext_row.1, ext.join(", "), "roles of x-… extensions");
    // Every row names known kinds only.
    let known: Vec<String> = Kind::KNOWN.iter().map(|k| format!("`{k}`")).collect();
    for (k, _) in &rows {
        for name in k.split(", ") {
            assert!(
                known.contains(&name.to_string()) || name.starts_with("`x-"),
                "docs/BUNDLE.md §10 names {name}, which is not a kind"
            );
        }
    }
}

//! Sweeps, deletions, crash recovery, shared blobs and redaction on a real
//! ledger and blob store. The ledger clock is the wall clock, so the sweeps
//! here state a future `now` (a simulated clock) under a policy that allows
//! it; the boundary itself is tested on a fully simulated clock in
//! `retention_rules.rs`.

#[path = "retention_support.rs"]
mod support;

use std::io::Read as _;

use docket_domain::blobs::parse_digest;
use docket_domain::checkpoint::NoteVerifier;
use docket_domain::domain::{AsOf, Docket, DocketOptions, OidState};
use docket_domain::keys::Role;
use docket_domain::ledger::LedgerOptions;
use docket_domain::replay::{self, ReplayOptions};
use docket_domain::retention::payloads::FindingRef;
use docket_domain::retention::redact::redact_secrets;
use docket_domain::retention::{SweepOptions, Sweeper};
use docket_domain::{LedgerError, Statement};
use ed25519_dalek::SigningKey;
use serde_json::json;
use support::{DAY, TASK, evidence_payload, precondition, sign, task_json};

struct Env {
    dir: tempfile::TempDir,
    docket: Docket,
    admin: SigningKey,
    custodian: SigningKey,
    submitter: SigningKey,
}

impl Env {
    /// A ledger with a custodian, a submitter, task TASK (routine) and a
    /// policy that lets sweeps state a future `now`.
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (docket, out) = Docket::init(dir.path(), None, no_verify()).unwrap();
        let admin = docket_domain::keys::read_key_file(&out.admin_key_path).unwrap();
        let env = Self {
            dir,
            docket,
            admin,
            custodian: support::new_key(),
            submitter: support::new_key(),
        };
        env.register(&env.custodian, Role::Custodian);
        env.register(&env.submitter, Role::Submitter);
        env.docket
            .register_task(sign(
                "task.registered",
                &task_json(TASK, &[]),
                &env.submitter,
            ))
            .unwrap();
        env.policy(
            json!({"routine_days": 30, "high_impact_days": 180, "allow_future_sweeps": true}),
        );
        env
    }

    fn register(&self, key: &SigningKey, role: Role) {
        let payload =
            json!({"public_key": hex::encode(key.verifying_key().to_bytes()), "roles": [role]});
        self.docket
            .ledger()
            .append(sign("key.registered", &payload, &self.admin))
            .unwrap();
    }

    fn policy(&self, p: serde_json::Value) {
        self.docket
            .ledger()
            .append(sign("retention.policy_set", &p, &self.admin))
            .unwrap();
    }

    fn evidence(&self, name: &str, content: &[u8], class: Option<&str>) -> String {
        let mut p = evidence_payload(TASK, name, content);
        if let Some(c) = class {
            p["retention_class"] = json!(c);
        }
        self.docket
            .put_evidence(content, sign("evidence.registered", &p, &self.submitter))
            .unwrap()
            .oid
    }

    fn blob_present(&self, content: &[u8]) -> bool {
        let d = parse_digest(&support::sha_hex(content)).unwrap();
        self.docket.blobs().contains(&d).unwrap()
    }

    fn state(&self, oid: &str) -> OidState {
        self.docket.evidence(oid).unwrap().record.state
    }

    /// `days` after the ledger clock.
    fn later(&self, days: u64) -> u64 {
        self.docket.ledger_clock_ms() + days * DAY
    }

    fn sweep(&self, now: u64) -> docket_domain::retention::SweepReport {
        self.docket.sweep(now, false, &self.custodian).unwrap()
    }

    fn replay_clean(&self) {
        self.docket.ledger().snapshot().unwrap();
        let ledger = self.docket.ledger();
        let verifier =
            NoteVerifier::new(ledger.origin(), ledger.ledger_key().verifying_key()).unwrap();
        let (report, rebuilt) = replay::replay(
            ledger.store().as_ref(),
            &verifier,
            ReplayOptions {
                verify: true,
                as_of: None,
            },
            &mut |_, _| {},
        )
        .unwrap();
        assert!(report.findings.is_empty(), "{:?}", report.findings);
        assert!(report.snapshots_compared.iter().any(|s| s == "retention"));
        assert_eq!(rebuilt, *ledger.state());
    }
}

fn no_verify() -> DocketOptions {
    DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    }
}

#[test]
fn sweep_appends_events_first_then_deletes_and_replay_still_verifies() {
    let env = Env::new();
    let a = env.evidence("patch.diff", b"routine content", None);
    let b = env.evidence("report.md", b"important", Some("high_impact"));
    let c = env.evidence("selftest.log", b"kept for compliance", None);
    env.docket
        .ledger()
        .append(sign(
            "retention.pinned",
            &json!({"oid": c, "reason": "audit"}),
            &env.custodian,
        ))
        .unwrap();
    let before = env.docket.ledger().len();
    let now = env.later(31);
    // A dry run decides the same, appends and deletes nothing.
    let dry = env.docket.sweep(now, true, &env.custodian).unwrap();
    assert!(dry.dry_run);
    assert_eq!(dry.expired.len(), 1);
    assert_eq!(dry.expired[0].planned.oid, a);
    assert_eq!(dry.bytes_freed, b"routine content".len() as u64);
    assert_eq!(env.docket.ledger().len(), before);
    assert!(env.blob_present(b"routine content"));

    let state_before = env.docket.ledger().state().clone();
    let report = env.sweep(now);
    let sweep_seq = report.sweep_receipt.as_ref().unwrap().seq;
    // History is untouched: the state as of the last event before the
    // sweep, folded again from the log, equals the state we had then.
    let as_of_before = env
        .docket
        .with_state(AsOf::Seq(sweep_seq - 1), Clone::clone)
        .unwrap();
    assert_eq!(as_of_before, state_before);
    assert_eq!(report.expired.len(), 1);
    assert_eq!((report.kept_pinned, report.kept_within_class), (1, 1));
    let expiry_seq = report.expired[0].receipt.as_ref().unwrap().seq;
    assert_eq!(expiry_seq, sweep_seq + 1);
    assert_eq!(report.bytes_freed, b"routine content".len() as u64);
    assert_eq!(env.state(&a), OidState::Expired);
    assert!(!env.blob_present(b"routine content"));
    assert!(env.blob_present(b"important") && env.blob_present(b"kept for compliance"));
    assert!(!env.docket.removals_pending());
    // The expiry event states the sweep's now and names the sweep.
    let ev = env.docket.ledger().event(expiry_seq).unwrap();
    let p: serde_json::Value = serde_json::from_slice(&ev.payload).unwrap();
    assert_eq!(p["as_of_ms"], json!(now));
    assert_eq!(p["sweep_seq"], json!(sweep_seq));
    // Fetching the purged original names the event that removed it.
    let e = env.docket.evidence_content(&a).unwrap_err();
    let msg = precondition(e);
    assert!(
        msg.contains(&format!("expired by event {expiry_seq}")),
        "{msg}"
    );
    assert!(msg.contains("routine retention of 30 days"), "{msg}");
    // The same sweep again is the same statement: idempotent.
    let again = env.sweep(now);
    assert!(again.sweep_receipt.as_ref().unwrap().duplicate);
    assert!(again.expired.is_empty());
    // Status.
    let st = env
        .docket
        .retention_status(AsOf::Latest, Some(now), 10)
        .unwrap();
    assert_eq!(st.expired.count, 1);
    assert_eq!(st.pinned_total, 1);
    assert_eq!(st.upcoming.len(), 1);
    assert_eq!(st.upcoming[0].oid, b);
    assert_eq!(st.pending_deletion.blobs, 0);
    assert_eq!(st.sweeps, 1);
    let policy = env
        .docket
        .retention_policy_json(AsOf::Latest)
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&policy).unwrap()["allow_future_sweeps"],
        json!(true)
    );
    env.replay_clean();
    // State, reopened from snapshots, equals the live state.
    let live = env.docket.ledger().state().clone();
    env.docket.close().unwrap();
    let Env { dir, docket, .. } = env;
    drop(docket);
    let env_dir = dir;
    let reopened = Docket::open(env_dir.path(), LedgerOptions::default(), no_verify()).unwrap();
    assert_eq!(*reopened.ledger().state(), live);
}

#[test]
fn shared_blobs_go_only_when_no_live_oid_needs_them() {
    let env = Env::new();
    let content = b"the same bytes twice";
    let short = env.evidence("patch.diff", content, None);
    let long = env.evidence("evidence/copy.diff", content, Some("high_impact"));
    let r = env.sweep(env.later(31));
    assert_eq!(r.expired.len(), 1);
    assert_eq!(env.state(&short), OidState::Expired);
    assert!(env.blob_present(content), "still needed by {long}");
    assert_eq!(r.bytes_freed, 0);
    // The live OID still reads it.
    let (_, mut reader) = env.docket.evidence_content(&long).unwrap();
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    assert_eq!(got, content);
    let r = env.sweep(env.later(181));
    assert_eq!(r.expired.len(), 1);
    assert!(!env.blob_present(content));
    assert_eq!(r.bytes_freed, content.len() as u64);
    env.replay_clean();
}

#[test]
fn crash_between_event_and_deletion_is_finished_on_open() {
    let env = Env::new();
    let a = env.evidence("patch.diff", b"doomed", None);
    // Crash simulation: the events are durable, the deletion never ran.
    let report = env
        .docket
        .sweep_with(
            &SweepOptions {
                now_ms: Some(env.later(31)),
                delete: false,
                ..SweepOptions::default()
            },
            &env.custodian,
        )
        .unwrap();
    assert_eq!(report.expired.len(), 1);
    assert_eq!(env.state(&a), OidState::Expired);
    assert!(env.blob_present(b"doomed"));
    assert!(env.docket.removals_pending());
    let st = env.docket.retention_status(AsOf::Latest, None, 10).unwrap();
    assert_eq!(st.pending_deletion.blobs, 1);
    env.docket.close().unwrap();
    drop(env.docket);
    // Reopening finishes the deletion.
    let docket = Docket::open(env.dir.path(), LedgerOptions::default(), no_verify()).unwrap();
    assert!(!docket.removals_pending());
    let d = parse_digest(&support::sha_hex(b"doomed")).unwrap();
    assert!(!docket.blobs().contains(&d).unwrap());
    assert_eq!(docket.evidence(&a).unwrap().record.state, OidState::Expired);
}

#[test]
fn a_later_sweep_finishes_interrupted_deletions() {
    let env = Env::new();
    env.evidence("patch.diff", b"left behind", None);
    env.docket
        .sweep_with(
            &SweepOptions {
                now_ms: Some(env.later(31)),
                delete: false,
                ..SweepOptions::default()
            },
            &env.custodian,
        )
        .unwrap();
    assert!(env.blob_present(b"left behind"));
    let r = env.sweep(env.later(32));
    assert!(r.expired.is_empty());
    assert_eq!(r.reconcile.as_ref().unwrap().deleted.len(), 1);
    assert!(!env.blob_present(b"left behind"));
}

#[test]
fn fresh_uploads_of_removed_content_get_a_grace_period() {
    let env = Env::new();
    let content = b"uploaded again later";
    env.evidence("patch.diff", content, None);
    env.sweep(env.later(31));
    assert!(!env.blob_present(content));
    // The same content is uploaded again (a registration in flight), after
    // the removal by the ledger's clock and by the file system's (whose
    // timestamps are coarse, and the ledger's time can run a few ms ahead).
    let removed_at = env.docket.ledger().state().last_recorded_at_ms;
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        <= u128::from(removed_at) + 20
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    env.docket.put_blob(&content[..], None, None).unwrap();
    let r = env.docket.reconcile_blobs(15 * 60 * 1000).unwrap();
    assert_eq!(r.deferred.len(), 1);
    assert!(env.blob_present(content));
    // Registered: it is needed again and never a candidate.
    let again = env.evidence("evidence/again.diff", content, None);
    let r = env.docket.reconcile_blobs(0).unwrap();
    assert!(r.deleted.is_empty() && r.candidates == 0, "{r:?}");
    assert_eq!(env.state(&again), OidState::Live);
    assert!(env.blob_present(content));
}

#[test]
fn redaction_replaces_content_and_purges_the_original() {
    let env = Env::new();
    let original = b"run 1\nAuthorization: Bearer s3cr3t-t0ken-value\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nok\n";
    let oid = env.evidence("selftest.log", original, None);
    let twin = env.evidence("evidence/selftest-copy.log", original, None);
    let current = env.docket.current_content(&oid, 1 << 20).unwrap();
    let red = redact_secrets(&current);
    assert_eq!(red.findings.len(), 2);
    let findings: Vec<FindingRef> = red
        .findings
        .iter()
        .map(|f| FindingRef {
            kind: f.kind.to_string(),
            line: f.line,
        })
        .collect();
    let out = env
        .docket
        .redact_content(
            &oid,
            &red.content,
            "credentials in a log",
            findings,
            &env.custodian,
        )
        .unwrap();
    // The twin still holds the original: it stays on disk, and says so.
    assert_eq!(out.original_still_needed_by, vec![twin.clone()]);
    assert!(!out.original_deleted);
    assert!(env.blob_present(original));
    let out2 = env
        .docket
        .redact_content(
            &twin,
            &red.content,
            "credentials in a log",
            Vec::new(),
            &env.custodian,
        )
        .unwrap();
    assert!(out2.original_deleted);
    assert!(!env.blob_present(original));
    // The original is refused, naming the redaction; the redacted version reads.
    let msg = precondition(env.docket.evidence_content(&oid).unwrap_err());
    assert!(
        msg.contains(&format!("redacted by event {}", out.receipt.seq))
            && msg.contains("credentials in a log"),
        "{msg}"
    );
    let (_, mut reader) = env.docket.redacted_content(&oid).unwrap();
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    assert_eq!(got, red.content);
    let text = String::from_utf8(got).unwrap();
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE") && !text.contains("s3cr3t"));
    // The event records both digests and the reason.
    let ev = env.docket.ledger().event(out.receipt.seq).unwrap();
    let p: serde_json::Value = serde_json::from_slice(&ev.payload).unwrap();
    assert_eq!(p["original_sha256"], json!(support::sha_hex(original)));
    assert_eq!(p["redacted_sha256"], json!(support::sha_hex(&red.content)));
    assert_eq!(p["findings"][0], json!({"kind": "bearer_token", "line": 2}));
    // The redacted content is held (shared by both OIDs) until they expire.
    let r = env.sweep(env.later(31));
    assert_eq!(r.expired.len(), 2);
    assert!(!env.blob_present(&red.content));
    let msg = precondition(env.docket.redacted_content(&oid).unwrap_err());
    assert!(msg.contains("expired by event"), "{msg}");
    env.replay_clean();
}

#[test]
fn redaction_needs_its_content_uploaded_and_a_custodian() {
    let env = Env::new();
    let oid = env.evidence("selftest.log", b"password=hunter2", None);
    let payload = json!({"oid": oid, "original_sha256": support::sha_hex(b"password=hunter2"),
        "redacted_sha256": support::sha_hex(b"password=***"), "redacted_size": 12, "reason": "password"});
    let msg = precondition(
        env.docket
            .redact(sign("retention.redacted", &payload, &env.custodian))
            .unwrap_err(),
    );
    assert!(msg.contains("upload the redacted content first"), "{msg}");
    env.docket
        .put_blob(&b"password=***"[..], None, None)
        .unwrap();
    let e = env
        .docket
        .redact(sign("retention.redacted", &payload, &env.submitter))
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    assert_eq!(env.state(&oid), OidState::Live);
    env.docket
        .redact(sign("retention.redacted", &payload, &env.custodian))
        .unwrap();
    assert_eq!(env.state(&oid), OidState::Redacted);
}

#[test]
fn server_sweep_request_and_periodic_sweeps() {
    let env = Env::new();
    let a = env.evidence("patch.diff", b"server side", None);
    // The periodic sweep at the ledger clock: nothing due, nothing appended.
    let len = env.docket.ledger().len();
    let r = env.docket.periodic_sweep().unwrap();
    assert!(r.expired.is_empty() && r.sweep_receipt.is_none());
    assert_eq!(env.docket.ledger().len(), len);
    // A dry run needs a custodian's signature.
    let now = docket_domain::domain::payloads::ms_to_rfc3339(env.later(31));
    let stmt = |k: &SigningKey| sign("retention.sweep", &json!({"now": now}), k);
    let e = env
        .docket
        .sweep_request(stmt(&env.submitter), true)
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    let dry = env
        .docket
        .sweep_request(stmt(&env.custodian), true)
        .unwrap();
    assert_eq!(dry.expired.len(), 1);
    assert_eq!(env.docket.ledger().len(), len);
    // The real one: the client's statement, then expiries by the ledger key.
    let r = env
        .docket
        .sweep_request(stmt(&env.custodian), false)
        .unwrap();
    let sweep_ev = env
        .docket
        .ledger()
        .event(r.sweep_receipt.as_ref().unwrap().seq)
        .unwrap();
    assert_eq!(sweep_ev.author, env.custodian.verifying_key().to_bytes());
    let exp = env
        .docket
        .ledger()
        .event(r.expired[0].receipt.as_ref().unwrap().seq)
        .unwrap();
    assert_eq!(
        exp.author,
        env.docket.ledger().ledger_key().verifying_key().to_bytes()
    );
    assert_eq!(env.state(&a), OidState::Expired);
    // Resending the same request is idempotent (deterministic signatures).
    let again = env
        .docket
        .sweep_request(stmt(&env.custodian), false)
        .unwrap();
    assert!(again.sweep_receipt.unwrap().duplicate);
    assert!(again.expired.is_empty());
    // A sweeper thread starts and stops.
    let sweeper = Sweeper::spawn(env.docket.clone(), std::time::Duration::from_millis(10)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    sweeper.stop();
    env.replay_clean();
}

#[test]
fn a_future_sweep_is_refused_without_the_policy_flag() {
    let env = Env::new();
    env.policy(json!({"routine_days": 30, "high_impact_days": 180}));
    env.evidence("patch.diff", b"not yet", None);
    let e = env
        .docket
        .sweep(env.later(31), false, &env.custodian)
        .unwrap_err();
    let msg = precondition(e);
    assert!(msg.contains("after the ledger clock"), "{msg}");
    assert!(env.blob_present(b"not yet"));
    // The refused sweep leaves no marker behind.
    assert!(!env.docket.removals_pending());
    assert_eq!(env.docket.reconcile_blobs(0).unwrap().deleted.len(), 0);
    // A dry run may look ahead.
    assert_eq!(
        env.docket
            .sweep(env.later(31), true, &env.custodian)
            .unwrap()
            .expired
            .len(),
        1
    );
    let _ = Statement::sign;
}

//! Retention rules on a simulated clock: every event's ledger time and the
//! sweep's `now` are parameters (MemoryLog), nothing reads a clock.

#[path = "retention_support.rs"]
mod support;

use docket_domain::LedgerError;
use docket_domain::domain::OidState;
use docket_domain::retention::{Decision, Keep, rules, status};
use docket_domain::state::AdmitContext;
use serde_json::json;
use support::{DAY, Sim, T0, precondition, sign};

const ROUTINE: u64 = 30 * DAY;

#[test]
fn routine_expiry_at_the_exact_boundary() {
    let mut sim = Sim::new();
    let reg = T0 + 1_234;
    let oid = sim.evidence("patch.diff", b"diff", None, reg);
    let boundary = reg + ROUTINE;
    assert_eq!(
        sim.decide(&oid, boundary - 1),
        Decision::Keep(Keep::WithinClass {
            expires_at_ms: boundary
        })
    );
    assert_eq!(
        sim.decide(&oid, boundary),
        Decision::Expire {
            expires_at_ms: boundary
        }
    );
    assert_eq!(
        sim.decide(&oid, boundary + 1),
        Decision::Expire {
            expires_at_ms: boundary
        }
    );
    // The plan agrees with the one-OID decision on both sides.
    assert!(rules::plan(sim.state(), boundary - 1).expire.is_empty());
    let plan = rules::plan(sim.state(), boundary);
    assert_eq!(plan.expire.len(), 1);
    assert_eq!(plan.expire[0].oid, oid);
    assert_eq!(plan.expire[0].expires_at_ms, boundary);

    // Admission re-checks at the stated as_of: one ms early is refused.
    let e = sim.expire(&oid, boundary - 1, boundary).unwrap_err();
    let msg = precondition(e);
    assert!(msg.contains("has not expired"), "{msg}");
    assert!(msg.contains("keeps it until"), "{msg}");
    let seq = sim.expire(&oid, boundary, boundary).unwrap();
    let r = &sim.state().domain.oids.oids[&oid];
    assert_eq!(r.state, OidState::Expired);
    let removal = r.removal.as_ref().unwrap();
    assert_eq!((removal.seq, removal.at_ms), (seq, boundary));
    assert!(removal.reason.contains("routine"), "{}", removal.reason);
    // Twice is refused, naming the first expiry.
    let msg = precondition(sim.expire(&oid, boundary + 5, boundary + 5).unwrap_err());
    assert!(msg.contains(&format!("by event {seq}")), "{msg}");
    assert_eq!(sim.decide(&oid, boundary + DAY), Decision::Gone);
}

#[test]
fn future_now_is_refused_unless_the_policy_allows_it() {
    let mut sim = Sim::new();
    let oid = sim.evidence("patch.diff", b"diff", None, T0);
    let boundary = T0 + ROUTINE;
    // Recorded one ms before the time it claims: refused.
    let msg = precondition(sim.expire(&oid, boundary, boundary - 1).unwrap_err());
    assert!(msg.contains("after the ledger clock"), "{msg}");
    let msg = precondition(
        sim.custodian(
            "retention.sweep",
            json!({"now": "2030-01-01T00:00:00Z"}),
            T0 + 10,
        )
        .unwrap_err(),
    );
    assert!(msg.contains("allow_future_sweeps"), "{msg}");
    sim.policy(
        json!({"routine_days": 30, "high_impact_days": 180, "allow_future_sweeps": true}),
        T0 + 10,
    )
    .unwrap();
    sim.expire(&oid, boundary, T0 + 11).unwrap();
}

#[test]
fn pins_beat_expiry_and_unpin_restores_the_class() {
    let mut sim = Sim::new();
    let a = sim.evidence("patch.diff", b"a", None, T0);
    let b = sim.evidence("report.md", b"b", Some("pinned"), T0 + 1);
    let pin = sim
        .custodian(
            "retention.pinned",
            json!({"oid": a, "reason": "legal hold"}),
            T0 + 2,
        )
        .unwrap();
    let late = T0 + 400 * DAY;
    assert_eq!(
        sim.decide(&a, late),
        Decision::Keep(Keep::Pinned { pin_seq: Some(pin) })
    );
    assert_eq!(
        sim.decide(&b, late),
        Decision::Keep(Keep::Pinned { pin_seq: None })
    );
    let msg = precondition(sim.expire(&a, late, late).unwrap_err());
    assert!(msg.contains(&format!("pinned (event {pin})")), "{msg}");
    assert!(precondition(sim.expire(&b, late, late).unwrap_err()).contains("pinned by its class"));
    // Pinning twice, unpinning what is not pinned: refused.
    assert!(
        precondition(
            sim.custodian("retention.pinned", json!({"oid": a}), late)
                .unwrap_err()
        )
        .contains("already pinned")
    );
    // Reclassifying a pinned OID keeps the pin.
    sim.custodian(
        "retention.reclassified",
        json!({"oid": a, "class": "high_impact"}),
        late,
    )
    .unwrap();
    assert!(sim.state().domain.oids.oids[&a].pinned);
    sim.custodian("retention.unpinned", json!({"oid": a}), late)
        .unwrap();
    assert!(!sim.state().domain.oids.oids[&a].pinned);
    // The clock runs from registration: high_impact (180 days) is long past.
    assert_eq!(
        sim.decide(&a, late),
        Decision::Expire {
            expires_at_ms: T0 + 180 * DAY
        }
    );
    // A class-pinned OID unpinned falls back to its task's class.
    assert!(
        precondition(
            sim.custodian("retention.unpinned", json!({"oid": a}), late)
                .unwrap_err()
        )
        .contains("not pinned")
    );
    sim.custodian("retention.unpinned", json!({"oid": b}), late)
        .unwrap();
    let rb = &sim.state().domain.oids.oids[&b];
    assert_eq!((rb.retention_class.as_str(), rb.pinned), ("routine", false));
    sim.expire(&a, late, late).unwrap();
    sim.expire(&b, late, late).unwrap();
    // Nothing to pin once expired.
    let msg = precondition(
        sim.custodian("retention.pinned", json!({"oid": a}), late)
            .unwrap_err(),
    );
    assert!(msg.contains("nothing to pin"), "{msg}");
}

#[test]
fn high_impact_follows_the_policy_and_reclassification() {
    let mut sim = Sim::with_task_class("high_impact");
    let oid = sim.evidence("patch.diff", b"x", None, T0);
    assert_eq!(
        sim.state().domain.oids.oids[&oid].retention_class,
        "high_impact"
    );
    // Built-in default: 180 days.
    assert!(matches!(
        sim.decide(&oid, T0 + 180 * DAY - 1),
        Decision::Keep(_)
    ));
    assert!(matches!(
        sim.decide(&oid, T0 + 180 * DAY),
        Decision::Expire { .. }
    ));
    sim.policy(json!({"routine_days": 30, "high_impact_days": 90}), T0 + 1)
        .unwrap();
    assert!(matches!(
        sim.decide(&oid, T0 + 90 * DAY - 1),
        Decision::Keep(_)
    ));
    assert!(matches!(
        sim.decide(&oid, T0 + 90 * DAY),
        Decision::Expire { .. }
    ));
    // Out-of-range policies are refused, listing every violation.
    match sim.policy(json!({"routine_days": 0, "high_impact_days": 60}), T0 + 2) {
        Err(LedgerError::Invalid { violations, .. }) => {
            assert_eq!(violations.len(), 2, "{violations:?}")
        }
        other => panic!("{other:?}"),
    }
    // Only an admin sets the policy.
    let custodian = sim.custodian.clone();
    let e = sim
        .append(
            "retention.policy_set",
            &json!({"routine_days": 30, "high_impact_days": 90}),
            &custodian,
            T0 + 3,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    // Only a custodian pins.
    let submitter = sim.submitter.clone();
    let e = sim
        .append("retention.pinned", &json!({"oid": oid}), &submitter, T0 + 3)
        .unwrap_err();
    assert!(matches!(e, LedgerError::PermissionDenied { .. }), "{e}");
    sim.custodian(
        "retention.reclassified",
        json!({"oid": oid, "class": "routine"}),
        T0 + 4,
    )
    .unwrap();
    assert!(matches!(
        sim.decide(&oid, T0 + 30 * DAY),
        Decision::Expire { .. }
    ));
    assert!(
        precondition(
            sim.custodian(
                "retention.reclassified",
                json!({"oid": oid, "class": "routine"}),
                T0 + 5
            )
            .unwrap_err()
        )
        .contains("already in class routine")
    );
}

#[test]
fn count_limit_keeps_the_last_submissions_evidence() {
    let mut sim = Sim::new();
    sim.policy(
        json!({"routine_days": 30, "high_impact_days": 90, "keep_last_submissions": 1}),
        T0,
    )
    .unwrap();
    let old = sim.evidence("patch.diff", b"first", None, T0 + 1);
    let s1 = sim.submit(std::slice::from_ref(&old), T0 + 2);
    let late = T0 + 100 * DAY;
    assert_eq!(
        sim.decide(&old, late),
        Decision::Keep(Keep::CountLimit { submission_seq: s1 })
    );
    let msg = precondition(sim.expire(&old, late, late).unwrap_err());
    assert!(msg.contains("count limit"), "{msg}");
    let unsubmitted = sim.evidence("selftest.log", b"never submitted", None, T0 + 3);
    let plan = rules::plan(sim.state(), late);
    assert_eq!(plan.kept_count_limit, 1);
    assert_eq!(
        plan.expire
            .iter()
            .map(|p| p.oid.clone())
            .collect::<Vec<_>>(),
        vec![unsubmitted.clone()]
    );
    // A newer submission releases the older one's evidence.
    let new = sim.evidence("patch.diff", b"second", None, late);
    sim.submit(std::slice::from_ref(&new), late + 1);
    assert!(matches!(
        sim.decide(&old, late + 2),
        Decision::Expire { .. }
    ));
    sim.expire(&old, late + 2, late + 2).unwrap();
    // The newest is held by the count limit long after its class period.
    assert!(matches!(
        sim.decide(&new, late + 400 * DAY),
        Decision::Keep(Keep::CountLimit { .. })
    ));
    let st = status::status(sim.state(), late + 400 * DAY, 10);
    assert_eq!(st.held_by_count_limit.count, 1);
    assert_eq!(st.due.count, 1, "the unsubmitted OID is due");
}

#[test]
fn redaction_admission_and_fold() {
    let mut sim = Sim::new();
    let content = b"token AKIAIOSFODNN7EXAMPLE\n";
    let oid = sim.evidence("selftest.log", content, None, T0);
    let original = support::sha_hex(content);
    let r1 = support::sha_hex(b"token [REDACTED]\n");
    let payload = |orig: &str, red: &str| {
        json!({"oid": oid, "original_sha256": orig, "redacted_sha256": red,
               "redacted_size": 17, "reason": "AWS key in log",
               "findings": [{"kind": "aws_access_key", "line": 1}]})
    };
    let wrong = "00".repeat(32);
    let msg = precondition(
        sim.custodian("retention.redacted", payload(&wrong, &r1), T0 + 1)
            .unwrap_err(),
    );
    assert!(msg.contains("holds now"), "{msg}");
    let seq = sim
        .custodian("retention.redacted", payload(&original, &r1), T0 + 1)
        .unwrap();
    let rec = &sim.state().domain.oids.oids[&oid];
    assert_eq!(rec.state, OidState::Redacted);
    let removal = rec.removal.as_ref().unwrap();
    assert_eq!(removal.seq, seq);
    assert_eq!(removal.redacted_sha256.as_deref(), Some(r1.as_str()));
    assert_eq!(removal.reason, "AWS key in log");
    // A second redaction names the redacted version as its original.
    let r2 = support::sha_hex(b"token [R]\n");
    assert!(
        sim.custodian("retention.redacted", payload(&original, &r2), T0 + 2)
            .is_err()
    );
    sim.custodian("retention.redacted", payload(&r1, &r2), T0 + 2)
        .unwrap();
    assert_eq!(sim.state().retention.redactions[&oid].len(), 2);
    // Redacted content expires like the original (from registration).
    assert!(matches!(
        sim.decide(&oid, T0 + ROUTINE),
        Decision::Expire { .. }
    ));
    sim.expire(&oid, T0 + ROUTINE, T0 + ROUTINE).unwrap();
    let msg = precondition(
        sim.custodian("retention.redacted", payload(&r2, &r1), T0 + ROUTINE)
            .unwrap_err(),
    );
    assert!(msg.contains("nothing to redact"), "{msg}");
    // A redacted OID cannot be submitted again.
    let msg = precondition(
        sim.append(
            "submission.received",
            &support::submit_json(support::TASK, std::slice::from_ref(&oid)),
            &sim.submitter.clone(),
            T0 + ROUTINE,
        )
        .unwrap_err(),
    );
    assert!(msg.contains("expired"), "{msg}");
}

#[test]
fn sweeps_link_their_expiries_and_replay_reproduces_everything() {
    let mut sim = Sim::new();
    let oids: Vec<String> = (0..5u8)
        .map(|i| sim.evidence("patch.diff", &[b'x', i], None, T0 + u64::from(i) * DAY))
        .collect();
    sim.custodian("retention.pinned", json!({"oid": oids[1]}), T0 + 5 * DAY)
        .unwrap();
    let now = T0 + ROUTINE + 2 * DAY;
    let sweep = sim
        .custodian(
            "retention.sweep",
            json!({"now": docket_domain::domain::payloads::ms_to_rfc3339(now)}),
            now,
        )
        .unwrap();
    let plan = rules::plan(sim.state(), now);
    // oids[0], oids[2] are past 30 days (registered at day 0 and 2); oids[1] is pinned.
    let due: Vec<&str> = plan.expire.iter().map(|p| p.oid.as_str()).collect();
    assert_eq!(due, vec![oids[0].as_str(), oids[2].as_str()]);
    assert_eq!(plan.kept_pinned, 1);
    for p in &plan.expire {
        sim.custodian(
            "evidence.expired",
            json!({"oid": p.oid, "as_of_ms": now, "sweep_seq": sweep, "reason": p.reason(&plan.policy)}),
            now,
        )
        .unwrap();
    }
    // An expiry naming the sweep must use its now.
    let e = sim
        .custodian(
            "evidence.expired",
            json!({"oid": oids[3], "as_of_ms": now + 5 * DAY, "sweep_seq": sweep}),
            now + 5 * DAY,
        )
        .unwrap_err();
    assert!(matches!(e, LedgerError::Invalid { .. }), "{e}");
    assert_eq!(sim.state().retention.sweeps[&sweep].expired, 2);
    // Replay: the same fold from the bytes, byte-identical snapshots, and
    // every event re-admitted at its own position and time.
    let rebuilt = sim.refold();
    assert_eq!(&rebuilt, sim.state());
    assert_eq!(rebuilt.snapshots(), sim.state().snapshots());
    let mut state = docket_domain::LedgerState::default();
    let mut seq = 0;
    while let Some(bytes) = sim.log.event_bytes(seq) {
        let ev = docket_domain::Event::decode(bytes).unwrap();
        state
            .admit(
                &ev.statement(),
                &AdmitContext {
                    seq,
                    recorded_at_ms: ev.recorded_at_ms,
                },
            )
            .unwrap_or_else(|e| panic!("event {seq} ({}) re-admission: {e}", ev.kind));
        state.apply(&ev).unwrap();
        seq += 1;
    }
    assert_eq!(&state, sim.state());
    // And from snapshots.
    let parts: Vec<(String, Vec<u8>)> = sim
        .state()
        .snapshots()
        .into_iter()
        .map(|(n, b)| (n.to_string(), b))
        .collect();
    let restored = docket_domain::LedgerState::from_snapshots(
        sim.state().applied,
        sim.state().last_recorded_at_ms,
        &parts,
    )
    .unwrap();
    assert_eq!(&restored, sim.state());
    assert!(parts.iter().any(|(n, _)| n == "retention"));
}

#[test]
fn status_counts_per_class() {
    let mut sim = Sim::new();
    let a = sim.evidence("patch.diff", b"aaaa", None, T0);
    let b = sim.evidence("report.md", b"bb", Some("high_impact"), T0 + DAY);
    let c = sim.evidence("selftest.log", b"c", Some("pinned"), T0 + 2 * DAY);
    let _ = (&b, &c);
    let now = T0 + ROUTINE;
    sim.expire(&a, now, now).unwrap();
    let st = status::status(sim.state(), now, 10);
    let by: std::collections::BTreeMap<&str, &status::ClassStats> =
        st.classes.iter().map(|c| (c.class.as_str(), c)).collect();
    assert_eq!(
        (by["routine"].expired_count, by["routine"].expired_bytes),
        (1, 4)
    );
    assert_eq!(
        (by["high_impact"].live_count, by["high_impact"].live_bytes),
        (1, 2)
    );
    assert_eq!((by["pinned"].live_count, by["pinned"].pinned_count), (1, 1));
    assert_eq!(st.upcoming.len(), 1);
    assert_eq!(st.upcoming[0].oid, b);
    assert_eq!(st.upcoming[0].expires_at_ms, T0 + DAY + 180 * DAY);
    assert_eq!(st.pinned_total, 1);
    assert_eq!(st.expired.count, 1);
    assert_eq!(st.policy_seq, None);
    let _ = sign;
}

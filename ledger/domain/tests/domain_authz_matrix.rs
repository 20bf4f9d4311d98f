//! The authorization matrix: every event kind × every role × revoked or not.
//! A kind is accepted only from an unrevoked key holding a role the kind
//! table (`Kind::authors`) names for it; everything else is
//! PERMISSION_DENIED and appends nothing.

mod domain_support;

use docket_domain::Kind;
use docket_domain::domain::DocketOptions;
use docket_domain::keys::{self, Role};
use docket_domain::{LedgerError, Statement};
use docket_verifier::execution::ExecutionRecord;
use domain_support::*;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

struct Matrix {
    fx: Fixture,
    requester: SigningKey,
    n: u64,
}

impl Matrix {
    /// A fresh valid payload of `kind` (preparing whatever it references).
    fn payload(&mut self, kind: &str) -> Vec<u8> {
        self.n += 1;
        let n = self.n;
        let v: Value = match kind {
            "key.registered" => json!({
                "public_key": hex::encode(keys::generate().unwrap().verifying_key().to_bytes()),
                "roles": ["auditor"],
            }),
            "key.revoked" => {
                let victim = self.fx.key(&[Role::Auditor]);
                json!({"public_key": hex::encode(victim.verifying_key().to_bytes())})
            }
            "task.registered" => task_json(&task_id(1000 + n), &[]),
            "evidence.registered" => {
                evidence_payload(TASK, &format!("evidence/f{n}"), format!("{n}").as_bytes())
            }
            "execution.recorded" => {
                let r = ExecutionRecord::from_execution(
                    &format!("make test-{n}"),
                    0,
                    "ok",
                    "",
                    "2026-02-09T14:30:00Z",
                    "2026-02-09T14:30:01Z",
                    1.0,
                );
                let mut v = serde_json::to_value(r).unwrap();
                v["task_id"] = json!(TASK);
                v
            }
            "submission.received" => {
                let mut s = submit_json(TASK, &[]);
                s["tests"]["summary"] = json!(format!("run {n}"));
                s
            }
            "check.recorded" => check_json(TASK, &format!("check_{n}"), true),
            "verdict.issued" => {
                let mut v = verdict_json(TASK, false);
                v["messages"] = json!([format!("attempt {n}")]);
                v
            }
            "verdict.imported" => json!({
                "task_id": TASK, "verdict_json": null, "reported": null,
                "artifacts": [], "missing_paths": [],
                "verdict": "FAIL", "fail_class": "verdict_missing", "exit_code": 5,
                "engine": {"name": "docket-verdict-import", "version": format!("0.1.{n}"),
                           "rules_digest": "0".repeat(64)},
            }),
            "verdict.deadline_passed" => {
                // A fresh task whose deadline passed long ago.
                let task = task_id(5000 + n);
                let mut t = task_json(&task, &[]);
                t["verdict_deadline"] = json!("2020-01-01T00:00:00Z");
                self.fx
                    .append("task.registered", &t, &self.requester)
                    .unwrap();
                json!({
                    "task_id": task, "deadline_ms": 1_577_836_800_000u64,
                    "as_of_ms": 1_577_836_800_000u64,
                    "verdict": "FAIL", "fail_class": "verdict_missing", "exit_code": 5,
                    "engine": {"name": "docket-verdict-deadline", "version": "0.1.0",
                               "rules_digest": "0".repeat(64)},
                })
            }
            "approval.requested" => approval_request(TASK, &format!("actor-{n}"), None),
            "approval.granted" | "approval.denied" => {
                let req = self
                    .fx
                    .append(
                        "approval.requested",
                        &approval_request(TASK, &format!("req-{n}"), None),
                        &self.requester,
                    )
                    .unwrap();
                approval_decision(TASK, req.seq, "approver", kind == "approval.denied")
            }
            // Other kinds (retention) and extensions: payload shape is not
            // what this test is about.
            _ => json!({"n": n}),
        };
        serde_json::to_vec(&v).unwrap()
    }
}

#[test]
fn every_kind_by_every_role_revoked_or_not() {
    let fx = Fixture::with_options(DocketOptions {
        auto_verify: false,
        ..DocketOptions::default()
    });
    let owner = fx.key(&[Role::Submitter]);
    let requester = fx.key(&[Role::Submitter]);
    fx.append("task.registered", &task_json(TASK, &[]), &owner)
        .unwrap();
    fx.append("submission.received", &submit_json(TASK, &[]), &owner)
        .unwrap();
    let mut keys_by_role = Vec::new();
    for role in Role::ALL {
        let live = fx.key(&[role]);
        let revoked = fx.key(&[role]);
        fx.revoke(&revoked);
        keys_by_role.push((role, live, revoked));
    }
    let mut m = Matrix {
        fx,
        requester,
        n: 0,
    };
    // Every kind but genesis (the ledger key's, at sequence 0 only).
    let mut kinds: Vec<Kind> = Kind::KNOWN[1..].to_vec();
    kinds.push(Kind::parse("x-note").unwrap());
    let n_kinds = kinds.len();
    let mut cells = 0;
    for kind in &kinds {
        // Invariant of the table: every kind resolves to its roles.
        let allowed = kind.roles().unwrap();
        let kind = kind.as_str();
        for (role, live, revoked) in &keys_by_role {
            for is_revoked in [false, true] {
                let key = if is_revoked { revoked } else { live };
                let payload = m.payload(kind);
                let len = m.fx.docket.ledger().len();
                let result =
                    m.fx.docket
                        .ledger()
                        .append(Statement::sign(kind, payload, key));
                let cell = format!(
                    "{kind} by {role}{}",
                    if is_revoked { " (revoked)" } else { "" }
                );
                cells += 1;
                if is_revoked || !allowed.contains(role) {
                    let e = result.expect_err(&cell);
                    assert!(
                        matches!(e, LedgerError::PermissionDenied { .. }),
                        "{cell}: {e}"
                    );
                    assert_eq!(m.fx.docket.ledger().len(), len, "{cell} appended");
                } else if kind.starts_with("retention.") || kind == "evidence.expired" {
                    // Retention kinds are admitted by the retention work;
                    // here only the authority decision is checked.
                    if let Err(e) = result {
                        assert!(
                            !matches!(e, LedgerError::PermissionDenied { .. }),
                            "{cell}: {e}"
                        );
                    }
                } else {
                    let r = result.unwrap_or_else(|e| panic!("{cell}: {e}"));
                    assert!(!r.duplicate, "{cell}");
                }
            }
        }
    }
    assert_eq!(cells, n_kinds * Role::ALL.len() * 2);
}

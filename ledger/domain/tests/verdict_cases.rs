//! The ledger-side verdict rules as data: gateway attestation (seed 002,
//! docs/DOMAIN.md §3.3.1) and harness approvals bound to ledger approvals
//! (seed 003, §3.11). Each file `tests/verdict_cases/<case>.json` says:
//!
//! * `contract`: acceptance fields merged into the test task
//!   (`require_gateway_execution`, `required_test_commands`);
//! * `given`: steps appended in order to a real ledger, signed by the test
//!   keys `submitter`, `gateway`, `both` (submitter + gateway) and
//!   `approver`:
//!   - `{"execution": {"by", "command", "exit_code" (null: NO_EVIDENCE), "reason"?}}`;
//!   - `{"approval": {"requester", "scope", "mutation_mode", "decision":
//!     "requested" | "granted" | "denied", "actor"?, "expires_at"?}}`
//!     (request by `submitter`, decision by `approver`);
//!   - `{"decide": {"decision", "actor"}}` answers the last request;
//!   - `{"submission": {"by"}}`: the **last** one is the judged submission;
//! * `harness` (optional): the run's `report.json` `approval_status` and the
//!   `approval.granted` events it claims (`${pub:KEY}` names a test key);
//! * `then`: the checks the ledger adds and its findings, in order
//!   (`rule`, `reason_code`, `message` fragment).
//!
//! When: `Docket::ledger_findings` for the judged submission — what
//! auto-verify adds to the engine's verdict.

mod domain_support;

use std::collections::BTreeMap;
use std::path::Path;

use docket_domain::keys::Role;
use docket_verifier::TaskContract;
use docket_verifier::execution::ExecutionRecord;
use domain_support::*;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_default()
}

fn run_case(case: &Value) -> Result<(), String> {
    let fx = Fixture::new();
    let keys: BTreeMap<&str, SigningKey> = [
        ("submitter", fx.key(&[Role::Submitter])),
        ("gateway", fx.key(&[Role::Gateway])),
        ("both", fx.key(&[Role::Submitter, Role::Gateway])),
        ("approver", fx.key(&[Role::Approver])),
    ]
    .into_iter()
    .collect();
    let key = |name: &str| {
        keys.get(name)
            .ok_or_else(|| format!("unknown key {name:?}"))
    };
    let public = |name: &str| hex::encode(keys[name].verifying_key().to_bytes());

    let mut task = task_json(TASK, &[]);
    if let Some(extra) = case["contract"].as_object() {
        for (k, v) in extra {
            task["acceptance"][k] = v.clone();
        }
    }
    let contract = TaskContract::parse(&serde_json::to_vec(&task).unwrap())
        .map_err(|v| format!("contract: {v:?}"))?;
    fx.append("task.registered", &task, key("submitter")?)
        .map_err(|e| format!("task: {e}"))?;

    let mut judged: Option<(u64, [u8; 32])> = None;
    let mut last_request = None;
    let mut attempt = 0;
    let decide = |request: u64, decision: &str, actor: &str| -> Result<(), String> {
        let mut p = json!({"task_id": TASK, "request_seq": request, "actor": actor,
            "scope": "merge", "mutation_mode": "real-repo", "timestamp": "2026-02-09T14:31:00Z"});
        let kind = match decision {
            "granted" => "approval.granted",
            "denied" => {
                p["reason"] = json!("not now");
                "approval.denied"
            }
            "requested" => return Ok(()),
            other => return Err(format!("unknown decision {other:?}")),
        };
        fx.append(kind, &p, &keys["approver"])
            .map(|_| ())
            .map_err(|e| format!("{kind}: {e}"))
    };
    for (i, step) in case["given"]
        .as_array()
        .ok_or("no given")?
        .iter()
        .enumerate()
    {
        let what = |e: String| format!("given[{i}]: {e}");
        if let Some(x) = step.get("execution") {
            let t = "2026-02-09T14:29:00Z";
            let record = match x["exit_code"].as_i64() {
                Some(code) => ExecutionRecord::from_execution(
                    text(x, "command"),
                    code,
                    "out\n",
                    "",
                    t,
                    t,
                    0.0,
                ),
                None => ExecutionRecord::no_evidence(
                    text(x, "command"),
                    text(x, "reason"),
                    "",
                    "",
                    t,
                    t,
                    0.0,
                ),
            };
            let mut p = serde_json::to_value(record).unwrap();
            p["task_id"] = json!(TASK);
            fx.append("execution.recorded", &p, key(text(x, "by"))?)
                .map_err(|e| what(e.to_string()))?;
        } else if let Some(x) = step.get("approval") {
            let mut p = json!({"task_id": TASK, "actor": text(x, "requester"),
                "scope": text(x, "scope"), "mutation_mode": text(x, "mutation_mode"),
                "timestamp": "2026-02-09T14:30:00Z"});
            if let Some(exp) = x["expires_at"].as_str() {
                p["expires_at"] = json!(exp);
            }
            let r = fx
                .append("approval.requested", &p, key("submitter")?)
                .map_err(|e| what(e.to_string()))?;
            last_request = Some(r.seq);
            decide(r.seq, text(x, "decision"), text(x, "actor")).map_err(what)?;
        } else if let Some(x) = step.get("decide") {
            let request = last_request.ok_or_else(|| what("no request to decide".into()))?;
            decide(request, text(x, "decision"), text(x, "actor")).map_err(what)?;
        } else if let Some(x) = step.get("submission") {
            attempt += 1;
            let mut p = submit_json(TASK, &[]);
            p["attempt"] = json!(attempt);
            let k = key(text(x, "by"))?;
            let r = fx
                .append("submission.received", &p, k)
                .map_err(|e| what(e.to_string()))?;
            judged = Some((r.seq, k.verifying_key().to_bytes()));
        } else {
            return Err(what(format!("unknown step {step}")));
        }
    }
    let (seq, author) = judged.ok_or("no submission")?;

    let harness = case.get("harness").map(|h| {
        let report = json!({
            "case_id": "CASE-1", "run_id": "run-1", "status": "pass", "backend": "backend-x",
            "run_started_at": "2026-02-09T14:28:00Z", "run_finished_at": "2026-02-09T14:28:30Z",
            "backend_exit_code": 0, "artifacts_dir": "/runs/run-1", "changed_files": [],
            "allowed_writes_passed": true, "approval_status": h["approval_status"],
            "verification": [{"command": "cargo test", "passed": true}], "blockers": [],
            "artifact_paths": {}, "artifact_digests": {}, "freshness": {}
        });
        let mut events = String::new();
        for g in h["grants"].as_array().into_iter().flatten() {
            let mut g = g.clone();
            g["event"] = json!("approval.granted");
            if let Some(k) = g["approver_key"].as_str()
                && let Some(name) = k.strip_prefix("${pub:").and_then(|k| k.strip_suffix('}'))
            {
                g["approver_key"] = json!(public(name));
            }
            events.push_str(&g.to_string());
            events.push('\n');
        }
        (serde_json::to_vec(&report).unwrap(), events.into_bytes())
    });
    let (checks, findings) = fx
        .docket
        .ledger_findings(
            &contract,
            TASK,
            seq,
            &author,
            harness.as_ref().map(|h| h.0.as_slice()),
            harness.as_ref().map(|h| h.1.as_slice()),
        )
        .map_err(|e| format!("ledger_findings: {e}"))?;

    let then = &case["then"];
    let want_checks: Vec<&str> = then["checks"]
        .as_array()
        .ok_or("then.checks")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if checks != want_checks {
        return Err(format!("checks {checks:?}, expected {want_checks:?}"));
    }
    let want = then["findings"].as_array().ok_or("then.findings")?;
    if findings.len() != want.len() {
        return Err(format!(
            "{} finding(s), expected {}: {findings:?}",
            findings.len(),
            want.len()
        ));
    }
    for (f, w) in findings.iter().zip(want) {
        if f.rule != text(w, "rule")
            || f.reason_code.as_str() != text(w, "reason_code")
            || !f.message.contains(text(w, "message"))
        {
            return Err(format!("finding {f:?}, expected {w}"));
        }
    }
    Ok(())
}

#[test]
fn every_verdict_case_holds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/verdict_cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 15,
        "only {} cases in {}",
        files.len(),
        dir.display()
    );
    let mut failures = Vec::new();
    for f in &files {
        let case: Value = serde_json::from_slice(&std::fs::read(f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(
            case["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{}: no description",
            f.display()
        );
        if let Err(e) = run_case(&case) {
            failures.push(format!("{}: {e}", f.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} verdict cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

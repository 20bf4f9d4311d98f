//! Shared fixtures of the domain tests: a ledger with keys per role, and
//! payload builders for every domain statement.
#![allow(
    dead_code,
    reason = "each test binary includes this module and uses a part of it"
)]

use docket_domain::domain::payloads::{
    ApprovalDecided, ApprovalRequested, CheckRecorded, EvidenceRegistered,
};
use docket_domain::domain::{Docket, DocketOptions};
use docket_domain::keys::{self, Role};
use docket_domain::{LedgerError, Receipt, Statement};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const TASK: &str = "72c84e9c-0975-4c1a-b9a5-864c2725dc8a";

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub docket: Docket,
    pub admin: SigningKey,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_options(DocketOptions::default())
    }

    pub fn with_options(options: DocketOptions) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (docket, out) = Docket::init(dir.path(), None, options).unwrap();
        let admin = keys::read_key_file(&out.admin_key_path).unwrap();
        Self { dir, docket, admin }
    }

    /// Registers a fresh key with `roles`.
    pub fn key(&self, roles: &[Role]) -> SigningKey {
        let k = keys::generate().unwrap();
        let payload = json!({
            "public_key": hex::encode(k.verifying_key().to_bytes()),
            "roles": roles,
        });
        self.docket
            .ledger()
            .append(Statement::sign(
                "key.registered",
                payload.to_string().into_bytes(),
                &self.admin,
            ))
            .unwrap();
        k
    }

    pub fn revoke(&self, k: &SigningKey) {
        let payload = json!({"public_key": hex::encode(k.verifying_key().to_bytes())});
        self.docket
            .ledger()
            .append(Statement::sign(
                "key.revoked",
                payload.to_string().into_bytes(),
                &self.admin,
            ))
            .unwrap();
    }

    pub fn append(
        &self,
        kind: &str,
        payload: &Value,
        key: &SigningKey,
    ) -> Result<Receipt, LedgerError> {
        self.docket.append(sign(kind, payload, key))
    }

    /// Stores `content` and registers it for `task` under `name`.
    pub fn evidence(&self, task: &str, name: &str, content: &[u8], key: &SigningKey) -> String {
        let p = evidence_payload(task, name, content);
        self.docket
            .put_evidence(content, sign("evidence.registered", &p, key))
            .unwrap()
            .oid
    }
}

pub fn sign(kind: &str, payload: &Value, key: &SigningKey) -> Statement {
    Statement::sign(kind, serde_json::to_vec(payload).unwrap(), key)
}

pub fn sha_hex(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

pub fn task_json(task_id: &str, required_checks: &[&str]) -> Value {
    json!({
        "task_id": task_id,
        "goal": "Add a greeting function and document it.",
        "role": "executor",
        "pins": {"allowed_paths": ["src/", "docs/"], "forbidden_paths": ["src/secrets/"]},
        "files": ["src/lib.rs"],
        "context": {"map": {}, "docs": {}, "history": {}},
        "acceptance": {"required_evidence": [], "required_checks": required_checks, "required_test_commands": []},
        "retention_class": "routine"
    })
}

pub fn evidence_payload(task: &str, name: &str, content: &[u8]) -> Value {
    serde_json::to_value(EvidenceRegistered {
        task_id: task.into(),
        evidence_type: docket_domain::domain::payloads::guess_evidence_type(name).into(),
        sha256: sha_hex(content),
        size: content.len() as u64,
        media_type: docket_domain::domain::payloads::guess_media_type(name).into(),
        retention_class: None,
        name: Some(name.into()),
    })
    .unwrap()
}

pub fn submit_json(task: &str, oids: &[String]) -> Value {
    json!({
        "schema_version": "scc.submit.v1",
        "task_id": task,
        "status": "DONE",
        "changed_files": ["src/lib.rs"],
        "new_files": [],
        "tests": {"commands": ["cargo test"], "passed": true, "summary": "ok"},
        "artifacts": {"report_md": "report.md", "selftest_log": "selftest.log", "evidence_dir": "evidence/",
                      "patch_diff": "patch.diff", "submit_json": "submit.json"},
        "exit_code": 0,
        "needs_input": [],
        "evidence_oids": oids,
    })
}

pub fn check_json(task: &str, name: &str, passed: bool) -> Value {
    serde_json::to_value(CheckRecorded {
        task_id: task.into(),
        submission_seq: None,
        name: name.into(),
        passed,
        details: None,
    })
    .unwrap()
}

pub fn verdict_json(task: &str, pass: bool) -> Value {
    let mut checks = json!({"schema_valid": true, "scope_valid": true, "tests_passed": true, "evidence_present": true});
    let mut v = json!({
        "schema_version": "scc.verdict.v1",
        "task_id": task,
        "verdict": if pass { "PASS" } else { "FAIL" },
        "messages": [],
        "timestamps": {"evaluated_at": "2026-02-09T14:30:00Z"},
        "links": {},
    });
    if !pass {
        checks["tests_passed"] = json!(false);
        v["reason_code"] = json!("CI_FAILED");
        v["fail_class"] = json!("test_failure");
    }
    v["checks"] = checks;
    v
}

pub fn approval_request(task: &str, actor: &str, expires_at: Option<&str>) -> Value {
    serde_json::to_value(ApprovalRequested {
        task_id: task.into(),
        actor: actor.into(),
        scope: "merge".into(),
        mutation_mode: "real-repo".into(),
        timestamp: "2026-02-09T14:30:00Z".into(),
        expires_at: expires_at.map(str::to_string),
        note: None,
    })
    .unwrap()
}

pub fn approval_decision(task: &str, request_seq: u64, actor: &str, deny: bool) -> Value {
    serde_json::to_value(ApprovalDecided {
        task_id: task.into(),
        request_seq,
        actor: actor.into(),
        scope: "merge".into(),
        mutation_mode: "real-repo".into(),
        timestamp: "2026-02-09T14:31:00Z".into(),
        expires_at: None,
        reason: deny.then(|| "not yet".to_string()),
    })
    .unwrap()
}

/// A task id derived from `n` (distinct UUIDs for tests that need many).
pub fn task_id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

pub fn violations(e: &LedgerError) -> Vec<String> {
    match e {
        LedgerError::Invalid { violations, .. } => violations.clone(),
        other => panic!("expected Invalid, got {other}"),
    }
}

//! Shared fixtures of the retention tests (included with `#[path]`): a
//! simulated-clock log in memory ([`Sim`]: every event's ledger time is a
//! parameter) and helpers for the on-disk [`Docket`] tests.
#![allow(
    dead_code,
    reason = "each test binary includes this module and uses a part of it"
)]

#[path = "domain_support/mod.rs"]
mod domain_support;

#[allow(unused_imports)] // reason: each test file uses a different subset
pub use domain_support::{TASK, evidence_payload, sha_hex, sign, submit_json, task_json};

use docket_domain::domain::oid;
use docket_domain::export::MemoryLog;
use docket_domain::keys::{self, Role};
use docket_domain::retention::Decision;
use docket_domain::retention::rules;
use docket_domain::{Event, LedgerError, LedgerState};
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

/// 2026-01-26T03:06:40Z: the simulated epoch.
pub const T0: u64 = 1_769_396_800_000;
pub const DAY: u64 = 86_400_000;

/// A log in memory whose clock the test drives.
pub struct Sim {
    pub log: MemoryLog,
    pub admin: SigningKey,
    pub custodian: SigningKey,
    pub submitter: SigningKey,
    pub ledger_key: SigningKey,
}

impl Default for Sim {
    fn default() -> Self {
        Self::new()
    }
}

impl Sim {
    /// Genesis, a custodian and a submitter key, and task [`TASK`] (class
    /// routine), all at `T0`.
    pub fn new() -> Self {
        Self::with_task_class("routine")
    }

    pub fn with_task_class(class: &str) -> Self {
        let ledger_key = SigningKey::from_bytes(&[1; 32]);
        let admin = SigningKey::from_bytes(&[2; 32]);
        let custodian = SigningKey::from_bytes(&[3; 32]);
        let submitter = SigningKey::from_bytes(&[4; 32]);
        let mut log =
            MemoryLog::genesis("sim.docket/test", ledger_key.clone(), &admin, T0).unwrap();
        log.register(&admin, &custodian, &[Role::Custodian], T0)
            .unwrap();
        log.register(&admin, &submitter, &[Role::Submitter], T0)
            .unwrap();
        let mut task = task_json(TASK, &[]);
        task["retention_class"] = json!(class);
        log.append(sign("task.registered", &task, &submitter), T0)
            .unwrap();
        Self {
            log,
            admin,
            custodian,
            submitter,
            ledger_key,
        }
    }

    pub fn state(&self) -> &LedgerState {
        self.log.state()
    }

    /// Appends `kind` with `payload` signed by `key` at ledger time `at`.
    pub fn append(
        &mut self,
        kind: &str,
        payload: &Value,
        key: &SigningKey,
        at: u64,
    ) -> Result<u64, LedgerError> {
        let st = sign(kind, payload, key);
        self.log.append(st, at)
    }

    pub fn event(&self, seq: u64) -> Event {
        Event::decode(self.log.event_bytes(seq).unwrap()).unwrap()
    }

    /// Registers `content` as evidence of [`TASK`] at `at`; returns the OID.
    pub fn evidence(&mut self, name: &str, content: &[u8], class: Option<&str>, at: u64) -> String {
        let mut p = evidence_payload(TASK, name, content);
        if let Some(c) = class {
            p["retention_class"] = json!(c);
        }
        self.log.put_blob(content.to_vec());
        let key = self.submitter.clone();
        let seq = self.append("evidence.registered", &p, &key, at).unwrap();
        oid::of_event(&self.event(seq))
    }

    /// A submission of [`TASK`] naming `oids` at `at`; returns its seq.
    pub fn submit(&mut self, oids: &[String], at: u64) -> u64 {
        let key = self.submitter.clone();
        self.append("submission.received", &submit_json(TASK, oids), &key, at)
            .unwrap()
    }

    /// A custodian statement at `at`.
    pub fn custodian(&mut self, kind: &str, payload: Value, at: u64) -> Result<u64, LedgerError> {
        let key = self.custodian.clone();
        self.append(kind, &payload, &key, at)
    }

    /// An `evidence.expired` for `oid` decided at `as_of`, recorded at `at`.
    pub fn expire(&mut self, oid: &str, as_of: u64, at: u64) -> Result<u64, LedgerError> {
        self.custodian(
            "evidence.expired",
            json!({"oid": oid, "as_of_ms": as_of}),
            at,
        )
    }

    /// Sets the policy (admin) at `at`.
    pub fn policy(&mut self, policy: Value, at: u64) -> Result<u64, LedgerError> {
        let key = self.admin.clone();
        self.append("retention.policy_set", &policy, &key, at)
    }

    pub fn decide(&self, oid: &str, now: u64) -> Decision {
        rules::decide(self.state(), oid, now).unwrap()
    }

    /// The state folded again from the event bytes alone.
    pub fn refold(&self) -> LedgerState {
        let mut state = LedgerState::default();
        let mut seq = 0;
        while let Some(bytes) = self.log.event_bytes(seq) {
            state.apply(&Event::decode(bytes).unwrap()).unwrap();
            seq += 1;
        }
        state
    }
}

/// A fresh ed25519 key.
pub fn new_key() -> SigningKey {
    keys::generate().unwrap()
}

/// The precondition message of a refusal (panics on other errors).
pub fn precondition(e: LedgerError) -> String {
    match e {
        LedgerError::FailedPrecondition(m) => m,
        other => panic!("expected FailedPrecondition, got {other}"),
    }
}

//! `docket verify --reproduce TASK`: re-runs the engine that produced a
//! task's current verdict on the evidence the ledger recorded, and says
//! whether it gives the recorded verdict.
//!
//! | recorded verdict | re-run |
//! | --- | --- |
//! | `verdict.issued` | the seed verdict engine (`docket-verifier`) on the judged submission's evidence blobs (digest-checked) and the registered contract, at the submission's ledger time; compared: `verdict`, `reason_code`, `fail_class`, `checks`, and `evidence_digests` when recorded. A verdict recorded by `docket-verifier` with another version or rule-set digest is a difference. |
//! | `verdict.imported` | the import engine on the recorded `verdict.json` blob and the recorded evidence blobs (digest-checked; content that is gone or altered counts as missing); compared: what `verdict.json` says, the missing paths, and `verdict`, `fail_class`, `exit_code` |
//! | `verdict.deadline_passed` | the deadline rule on the state before the event: the contract's deadline, the decision time between it and the event's ledger time, no verdict for the latest submission |
//!
//! Nothing is appended. The CLI exits 0 when everything matches, 3 when
//! something differs, 4 when the task has no verdict.

use std::collections::BTreeMap;

use docket_verifier::verdict::{Outcome, VerifierOutput};
use serde::{Deserialize, Serialize};

use crate::blobs::parse_digest;
use crate::error::{LedgerError, Result};
use crate::kind::names;
use crate::schema::{ms_to_rfc3339, task_key};
use crate::tasks::VerdictStatus;
use crate::verdicts::imported::{self, ImportedArtifact, decide, outcome_str};
use crate::verdicts::provenance::{Provenance, VERIFIER_ENGINE};
use crate::verdicts::{decode_verdict, imported::decode_deadline};

use super::query::AsOf;
use super::service::Docket;

/// What a verdict says, as compared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictSummary {
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<String, bool>,
}

/// The outcome of a reproduction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reproduction {
    pub task_id: String,
    /// The `verdict.*` event reproduced.
    pub verdict_seq: u64,
    pub kind: String,
    /// The provenance the verdict recorded (None: none recorded).
    pub recorded_engine: Option<Provenance>,
    /// The engine re-run, as this build is.
    pub engine: Provenance,
    pub recorded: VerdictSummary,
    pub reproduced: VerdictSummary,
    /// True when nothing differs.
    pub matches: bool,
    /// What differs, one line each.
    pub differences: Vec<String>,
    /// Why it may differ (e.g. evidence whose content retention removed),
    /// one line each; notes alone do not make a mismatch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn diff<T: PartialEq + std::fmt::Debug>(out: &mut Vec<String>, what: &str, rec: &T, got: &T) {
    if rec != got {
        out.push(format!("{what}: recorded {rec:?}, reproduced {got:?}"));
    }
}

impl Docket {
    /// Re-runs the engine of `task_id`'s current verdict (see the module
    /// docs). `NotFound` for an unknown task or one with no verdict.
    pub fn reproduce(&self, task_id: &str) -> Result<Reproduction> {
        let key = task_key(task_id).into_owned();
        let info = {
            let state = self.ledger().state();
            let task = state.domain.verdicts.task(&key)?;
            task.verdict.clone().ok_or_else(|| LedgerError::NotFound {
                what: format!(
                    "a verdict for task {key} ({}: nothing to reproduce)",
                    if task.status == VerdictStatus::Pending {
                        "pending"
                    } else {
                        task.status.as_str()
                    }
                ),
            })?
        };
        let event = self.ledger().event(info.seq)?;
        let corrupt = |e: LedgerError| {
            LedgerError::corrupt(
                format!("event {}", event.seq),
                format!("an admitted verdict does not decode: {e}"),
            )
        };
        let mut differences = Vec::new();
        let mut notes = Vec::new();
        let (recorded_engine, engine, recorded, reproduced) = match event.kind.as_str() {
            names::VERDICT_ISSUED => {
                let p = decode_verdict(&event.payload).map_err(corrupt)?;
                let engine = Provenance::verifier();
                if let Some(rec) = &p.engine
                    && rec.name == VERIFIER_ENGINE
                    && rec != &engine
                {
                    differences.push(format!(
                        "engine: recorded {} {} rules {}, this build is {} rules {}",
                        rec.name,
                        rec.version,
                        rec.rules_digest,
                        engine.version,
                        engine.rules_digest
                    ));
                }
                let sub = p.submission_seq.unwrap_or(info.submission_seq);
                {
                    let state = self.ledger().state();
                    let oids = state
                        .domain
                        .verdicts
                        .tasks
                        .get(&key)
                        .and_then(|t| t.submissions.iter().find(|s| s.seq == sub))
                        .map(|s| s.evidence_oids.clone())
                        .unwrap_or_default();
                    for o in oids {
                        if let Some(r) = state.domain.oids.oids.get(&o)
                            && r.state != crate::oids::OidState::Live
                        {
                            notes.push(format!(
                                "evidence {o} ({}) is {}: the engine ran without its original content",
                                r.artifact_name,
                                r.state.as_str()
                            ));
                        }
                    }
                }
                let got = self.evaluate_submission(sub)?;
                let v = &p.verdict;
                let summary =
                    |verdict: Outcome,
                     reason: Option<String>,
                     class: Option<String>,
                     checks: &BTreeMap<String, bool>| VerdictSummary {
                        verdict: outcome_str(verdict).into(),
                        reason_code: reason,
                        fail_class: class,
                        exit_code: None,
                        checks: checks.clone(),
                    };
                let rec = summary(
                    v.verdict,
                    v.reason_code.map(|c| c.as_str().to_string()),
                    v.fail_class.map(|c| c.as_str().to_string()),
                    &v.checks,
                );
                let rep = summary(
                    got.verdict,
                    got.reason_code.map(|c| c.as_str().to_string()),
                    got.fail_class.map(|c| c.as_str().to_string()),
                    &got.checks,
                );
                if !v.evidence_digests.is_empty() {
                    diff(
                        &mut differences,
                        "evidence_digests",
                        &v.evidence_digests,
                        &got.evidence_digests,
                    );
                }
                (p.engine, engine, rec, rep)
            }
            names::VERDICT_IMPORTED => {
                let p = imported::decode_imported(&event.payload).map_err(corrupt)?;
                let engine = Provenance::import();
                if p.engine != engine {
                    differences.push(format!(
                        "engine: recorded {} {} rules {}, this build is {} rules {}",
                        p.engine.name,
                        p.engine.version,
                        p.engine.rules_digest,
                        engine.version,
                        engine.rules_digest
                    ));
                }
                // verdict.json, from the blob the ledger recorded.
                let reported = match &p.verdict_json {
                    None => None,
                    Some(a) => match self.read_artifact(a) {
                        Err(why) => {
                            differences.push(format!("{}: {why}", a.path));
                            None
                        }
                        Ok(bytes) => match VerifierOutput::parse(&bytes) {
                            Ok(r) => Some(r),
                            Err(vs) => {
                                differences.push(format!(
                                    "{}: no longer a valid verdict.json ({} violation(s))",
                                    a.path,
                                    vs.len()
                                ));
                                None
                            }
                        },
                    },
                };
                diff(&mut differences, "verdict.json", &p.reported, &reported);
                let mut missing = p.missing_paths.clone();
                if p.verdict_json.is_some() && reported.is_some() {
                    for a in &p.artifacts {
                        if let Err(why) = self.read_artifact(a) {
                            differences.push(format!("{}: {why}", a.path));
                            missing.push(a.path.clone());
                        }
                    }
                }
                let (rv, rc, re) = decide(reported.as_ref(), &missing);
                let summary =
                    |v: Outcome, c: Option<docket_verifier::VerifierFailClass>, e| VerdictSummary {
                        verdict: outcome_str(v).into(),
                        reason_code: None,
                        fail_class: c.map(|c| c.as_str().to_string()),
                        exit_code: Some(e),
                        checks: BTreeMap::new(),
                    };
                (
                    Some(p.engine.clone()),
                    engine,
                    summary(p.verdict, p.fail_class, p.exit_code),
                    summary(rv, rc, re),
                )
            }
            names::VERDICT_DEADLINE_PASSED => {
                let p = decode_deadline(&event.payload).map_err(corrupt)?;
                let engine = Provenance::deadline();
                diff(&mut differences, "engine", &p.engine, &engine);
                let before = event.seq.checked_sub(1).map_or(AsOf::Seq(0), AsOf::Seq);
                let why_not = self.with_state(before, |s| {
                    let Ok(t) = s.domain.verdicts.task(&key) else {
                        return Some("the task was not registered".to_string());
                    };
                    if t.contract.verdict_deadline_ms != Some(p.deadline_ms) {
                        return Some(format!(
                            "the contract's deadline is {:?}, the event says {}",
                            t.contract.verdict_deadline_ms.map(ms_to_rfc3339),
                            ms_to_rfc3339(p.deadline_ms)
                        ));
                    }
                    if p.as_of_ms < p.deadline_ms || p.as_of_ms > event.recorded_at_ms {
                        return Some(format!(
                            "decided at {}, outside [deadline {}, event time {}]",
                            ms_to_rfc3339(p.as_of_ms),
                            ms_to_rfc3339(p.deadline_ms),
                            ms_to_rfc3339(event.recorded_at_ms)
                        ));
                    }
                    (t.status != VerdictStatus::Pending)
                        .then(|| format!("the task had a verdict ({})", t.status))
                })?;
                let rec = VerdictSummary {
                    verdict: p.verdict.clone(),
                    reason_code: None,
                    fail_class: Some(p.fail_class.clone()),
                    exit_code: Some(p.exit_code),
                    checks: BTreeMap::new(),
                };
                let rep = match why_not {
                    None => rec.clone(),
                    Some(why) => {
                        differences.push(format!("deadline: {why}"));
                        VerdictSummary {
                            verdict: "PENDING".into(),
                            reason_code: None,
                            fail_class: None,
                            exit_code: None,
                            checks: BTreeMap::new(),
                        }
                    }
                };
                (Some(p.engine), engine, rec, rep)
            }
            other => {
                return Err(LedgerError::corrupt(
                    format!("event {}", event.seq),
                    format!("the task's verdict names an event of kind {other}"),
                ));
            }
        };
        diff(
            &mut differences,
            "verdict",
            &recorded.verdict,
            &reproduced.verdict,
        );
        diff(
            &mut differences,
            "reason_code",
            &recorded.reason_code,
            &reproduced.reason_code,
        );
        diff(
            &mut differences,
            "fail_class",
            &recorded.fail_class,
            &reproduced.fail_class,
        );
        diff(
            &mut differences,
            "exit_code",
            &recorded.exit_code,
            &reproduced.exit_code,
        );
        diff(
            &mut differences,
            "checks",
            &recorded.checks,
            &reproduced.checks,
        );
        Ok(Reproduction {
            task_id: key,
            verdict_seq: event.seq,
            kind: event.kind.clone(),
            recorded_engine,
            engine,
            matches: differences.is_empty(),
            differences,
            notes,
            recorded,
            reproduced,
        })
    }

    /// An imported file's content from the blob store, digest-checked;
    /// why not when it is gone, altered or expired.
    fn read_artifact(&self, a: &ImportedArtifact) -> std::result::Result<Vec<u8>, String> {
        let digest = parse_digest(&a.sha256).map_err(|e| e.to_string())?;
        self.blobs()
            .read_verified(&digest, a.size)
            .map_err(|e| match e {
                LedgerError::NotFound { .. } => "content not in the blob store".to_string(),
                other => other.to_string(),
            })
    }
}

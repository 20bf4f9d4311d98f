//! What the ledger adds to the verdict engine's judgement of a submission,
//! from facts only the ledger holds (docs/DOMAIN.md §3.3.1 and §3.11):
//!
//! * **Gateway attestation** (seed 002): a task whose contract says
//!   `acceptance.require_gateway_execution: true` passes only on execution
//!   records signed by an execution gateway — an `execution.recorded`
//!   appended before the submission by a key holding the `gateway` role,
//!   other than the submission's author — so that an executor cannot write
//!   its own test results. Check `gateway_attested`:
//!   - no such record: FAIL `EVIDENCE_MISSING` (`ledger.gateway.record_missing`);
//!   - with `required_test_commands`, each command needs a gateway record
//!     whose `raw_command` is exactly it (the latest one counts); otherwise
//!     the latest gateway record counts;
//!   - a counted record that is `FAILURE`: FAIL `CI_FAILED`
//!     (`ledger.gateway.failed`); `NO_EVIDENCE`: FAIL `EVIDENCE_MISSING`
//!     (`ledger.gateway.no_evidence`), or `TIMEOUT_EXCEEDED` when its
//!     reason is a timeout.
//! * **Harness approvals bound to ledger approvals** (seed 003): when the
//!   submission carries a harness `report.json`, every approval the run
//!   claims was granted must match a ledger grant of the task
//!   ([`docket_verifier::harness::check_approval_binding`]); the ledger's
//!   approvals are those decided before the submission.
//!
//! Both read only the log before the submission, so the verdict stays a
//! deterministic function of the log (replay and `verify --reproduce` give
//! the same one).

use docket_verifier::TaskContract;
use docket_verifier::catalogue::ReasonCode;
use docket_verifier::execution::ExecutionStatus;
use docket_verifier::harness::{LedgerApproval, LedgerDecision, RunReport, check_approval_binding};
use docket_verifier::verdict::Finding;

use crate::error::{LedgerError, Result};
use crate::keys::Role;
use crate::tasks::{ApprovalState, TaskState};
use crate::verdicts::decode_execution;

use super::Docket;

/// The check the gateway rule sets (only for contracts that require it).
pub const GATEWAY_CHECK: &str = "gateway_attested";

/// One gateway-attested execution record, as the rule reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct AttestedRun {
    pub seq: u64,
    pub raw_command: String,
    pub status: ExecutionStatus,
    pub stderr: String,
}

fn finding(rule: &str, code: ReasonCode, message: String) -> Finding {
    Finding {
        check: GATEWAY_CHECK.into(),
        rule: rule.into(),
        reason_code: code,
        file: "execution.recorded".into(),
        line: None,
        message,
    }
}

/// The gateway rule over the attested runs before the submission (pure).
/// Returns the check's findings (empty: the check passed).
pub fn gateway_findings(contract: &TaskContract, runs: &[AttestedRun]) -> Vec<Finding> {
    let judge = |run: &AttestedRun| -> Option<Finding> {
        match run.status {
            ExecutionStatus::Success => None,
            ExecutionStatus::Failure => Some(finding(
                "ledger.gateway.failed",
                ReasonCode::CiFailed,
                format!(
                    "the gateway's execution of {:?} (seq {}) failed",
                    run.raw_command, run.seq
                ),
            )),
            ExecutionStatus::NoEvidence => {
                let reason = run.stderr.lines().next().unwrap_or_default().to_string();
                let code = if reason.to_lowercase().contains("timeout") {
                    ReasonCode::TimeoutExceeded
                } else {
                    ReasonCode::EvidenceMissing
                };
                Some(finding(
                    "ledger.gateway.no_evidence",
                    code,
                    format!(
                        "the gateway has no evidence for {:?} (seq {}): {reason}",
                        run.raw_command, run.seq
                    ),
                ))
            }
        }
    };
    let commands = &contract.acceptance.required_test_commands;
    if runs.is_empty() {
        return vec![finding(
            "ledger.gateway.record_missing",
            ReasonCode::EvidenceMissing,
            "the task requires gateway-attested execution records and none was recorded before the submission (run the tests with `docket exec`)".into(),
        )];
    }
    if commands.is_empty() {
        // Invariant: `runs` is not empty (checked above).
        return runs.last().and_then(judge).into_iter().collect();
    }
    commands
        .iter()
        .filter_map(
            |cmd| match runs.iter().rev().find(|r| r.raw_command == *cmd) {
                None => Some(finding(
                    "ledger.gateway.record_missing",
                    ReasonCode::EvidenceMissing,
                    format!("no gateway-attested execution of the required test command {cmd:?}"),
                )),
                Some(run) => judge(run),
            },
        )
        .collect()
}

/// The ledger's approvals of `task` as they stood before `before_seq`.
pub fn approvals_before(task: &TaskState, before_seq: u64) -> Vec<LedgerApproval> {
    task.approvals
        .values()
        .filter(|a| a.request_seq < before_seq)
        .map(|a| {
            let decided = a.decided_seq.is_some_and(|d| d < before_seq);
            let decision = match (decided, a.state) {
                (true, ApprovalState::Granted) => LedgerDecision::Granted,
                (true, ApprovalState::Denied) => LedgerDecision::Denied,
                _ => LedgerDecision::Requested,
            };
            LedgerApproval {
                request_seq: a.request_seq,
                scope: a.scope.clone(),
                mutation_mode: a.mutation_mode.clone(),
                decision,
                approver_key: decided.then(|| a.decided_by.map(|k| k.to_hex())).flatten(),
                approver_actor: decided.then(|| a.decided_actor.clone()).flatten(),
                expires_at_ms: a.expires_at_ms,
            }
        })
        .collect()
}

impl Docket {
    /// The gateway-attested execution records of `task_id` before
    /// `before_seq`, not authored by `submitter`, oldest first.
    pub fn attested_runs(
        &self,
        task_id: &str,
        before_seq: u64,
        submitter: &[u8; 32],
    ) -> Result<Vec<AttestedRun>> {
        let seqs: Vec<u64> = {
            let state = self.ledger().state();
            let Some(task) = state.domain.verdicts.tasks.get(task_id) else {
                return Ok(Vec::new());
            };
            task.executions
                .iter()
                .filter(|e| e.seq < before_seq && &e.by.0 != submitter)
                .filter(|e| {
                    state
                        .keys
                        .key(&e.by.0)
                        .is_some_and(|k| k.roles.contains(&Role::Gateway))
                })
                .map(|e| e.seq)
                .collect()
        };
        let mut runs = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let event = self.ledger().event(seq)?;
            let p = decode_execution(&event.payload).map_err(|e| {
                LedgerError::corrupt(
                    format!("event {seq}"),
                    format!("an admitted execution record does not decode: {e}"),
                )
            })?;
            runs.push(AttestedRun {
                seq,
                raw_command: p.record.raw_command,
                status: p.record.status,
                stderr: p.record.stderr,
            });
        }
        Ok(runs)
    }

    /// Everything the ledger adds to the engine's findings for the
    /// submission at `submission_seq` by `submitter`: the gateway rule
    /// (when the contract requires it) and the approval binding (when the
    /// submission has a harness `report.json`, given as `report` with its
    /// `events.normalized.jsonl`). Returns the checks it ran and the
    /// findings.
    pub fn ledger_findings(
        &self,
        contract: &TaskContract,
        task_id: &str,
        submission_seq: u64,
        submitter: &[u8; 32],
        report: Option<&[u8]>,
        events: Option<&[u8]>,
    ) -> Result<(Vec<&'static str>, Vec<Finding>)> {
        let mut checks = Vec::new();
        let mut findings = Vec::new();
        if contract.acceptance.require_gateway_execution {
            let runs = self.attested_runs(task_id, submission_seq, submitter)?;
            checks.push(GATEWAY_CHECK);
            findings.extend(gateway_findings(contract, &runs));
        }
        // A report that does not parse is the engine's finding already.
        if let Some(Ok(report)) = report.map(RunReport::parse) {
            let approvals = {
                let state = self.ledger().state();
                state
                    .domain
                    .verdicts
                    .tasks
                    .get(task_id)
                    .map(|t| approvals_before(t, submission_seq))
                    .unwrap_or_default()
            };
            let text = events.map(String::from_utf8_lossy);
            findings.extend(check_approval_binding(&report, text.as_deref(), &approvals));
        }
        Ok((checks, findings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(commands: &[&str]) -> TaskContract {
        let doc = serde_json::json!({
            "task_id": "72c84e9c-0975-4c1a-b9a5-864c2725dc8a",
            "goal": "g", "role": "executor",
            "pins": {"allowed_paths": ["src/"]},
            "acceptance": {"required_test_commands": commands, "require_gateway_execution": true},
        });
        TaskContract::parse(&serde_json::to_vec(&doc).unwrap()).unwrap()
    }

    fn run(seq: u64, cmd: &str, status: ExecutionStatus, stderr: &str) -> AttestedRun {
        AttestedRun {
            seq,
            raw_command: cmd.into(),
            status,
            stderr: stderr.into(),
        }
    }

    fn codes(f: &[Finding]) -> Vec<(&str, ReasonCode)> {
        f.iter().map(|f| (f.rule.as_str(), f.reason_code)).collect()
    }

    #[test]
    fn the_gateway_rule() {
        use ExecutionStatus::*;
        let any = contract(&[]);
        assert!(contract(&[]).acceptance.require_gateway_execution);
        assert_eq!(
            codes(&gateway_findings(&any, &[])),
            [("ledger.gateway.record_missing", ReasonCode::EvidenceMissing)]
        );
        assert!(gateway_findings(&any, &[run(3, "make test", Success, "")]).is_empty());
        // The latest counts.
        assert_eq!(
            codes(&gateway_findings(
                &any,
                &[
                    run(3, "make test", Success, ""),
                    run(5, "make test", Failure, "")
                ]
            )),
            [("ledger.gateway.failed", ReasonCode::CiFailed)]
        );
        assert_eq!(
            codes(&gateway_findings(
                &any,
                &[run(3, "x", NoEvidence, "NO_EVIDENCE: timeout: x exceeded")]
            )),
            [("ledger.gateway.no_evidence", ReasonCode::TimeoutExceeded)]
        );
        assert_eq!(
            codes(&gateway_findings(
                &any,
                &[run(3, "x", NoEvidence, "NO_EVIDENCE: command not found: x")]
            )),
            [("ledger.gateway.no_evidence", ReasonCode::EvidenceMissing)]
        );
        // Per required command, exactly.
        let two = contract(&["cargo test", "cargo clippy"]);
        let f = gateway_findings(
            &two,
            &[
                run(3, "cargo test", Failure, ""),
                run(4, "cargo test", Success, ""),
                run(5, "cargo build", Success, ""),
            ],
        );
        assert_eq!(
            codes(&f),
            [("ledger.gateway.record_missing", ReasonCode::EvidenceMissing)]
        );
        assert!(f[0].message.contains("cargo clippy"));
        assert!(
            gateway_findings(
                &two,
                &[
                    run(3, "cargo clippy", Success, ""),
                    run(4, "cargo test", Success, "")
                ]
            )
            .is_empty()
        );
    }
}

//! Verdict deadlines: a task whose contract carries `verdict_deadline`
//! must have a verdict by then. When the deadline passes and the task is
//! still PENDING (no verdict for its latest submission, or no submission),
//! the sweeper records `verdict.deadline_passed`: FAIL `verdict_missing`
//! (seed 001: a missing verdict is a FAIL), signed by the ledger key
//! (verifier from genesis).
//!
//! The decision is an event: its payload states the time it was made at
//! (`as_of_ms`, never after the event's ledger time) and the deadline;
//! admission re-checks both against the state before the event, so replay
//! reproduces it without reading a clock. At most one deadline FAIL is
//! recorded per task; a later submission is judged as usual.
//!
//! Like the retention sweeper it is driven by time, not by events: the
//! server's periodic sweep ([`crate::retention::PeriodicSweep`] on
//! [`Docket`]) runs [`Docket::sweep_verdict_deadlines`] at the ledger clock;
//! `docket verdict deadlines [--now T]` runs it on demand.

use ed25519_dalek::SigningKey;
use serde::Serialize;

use crate::error::{LedgerError, Result};
use crate::event::Statement;
use crate::kind::names;
use crate::ledger::Receipt;
use crate::schema::ms_to_rfc3339;
use crate::tasks::VerdictStatus;
use crate::verdicts::imported::{DeadlinePassed, deadline_recorded};

use super::service::Docket;

/// One task whose deadline passed.
#[derive(Debug, Clone, Serialize)]
pub struct DeadlineFail {
    pub task_id: String,
    pub deadline: String,
    pub submission_seq: Option<u64>,
    /// The receipt of the `verdict.deadline_passed` event (None in a dry run).
    pub receipt: Option<Receipt>,
}

/// What a deadline sweep did.
#[derive(Debug, Clone, Serialize)]
pub struct DeadlineReport {
    /// The time decisions were made at.
    pub now_ms: u64,
    pub now: String,
    pub dry_run: bool,
    /// Tasks recorded FAIL `verdict_missing` (or that would be).
    pub failed: Vec<DeadlineFail>,
    /// Tasks whose statement was refused meanwhile (e.g. a verdict landed).
    pub skipped: Vec<(String, String)>,
}

impl Docket {
    /// Tasks whose deadline is at or before `now_ms`, still PENDING, with
    /// no deadline FAIL recorded: (task, payload to record).
    pub fn due_deadlines(&self, now_ms: u64) -> Vec<DeadlinePassed> {
        let state = self.ledger().state();
        state
            .domain
            .verdicts
            .tasks
            .values()
            .filter_map(|t| {
                let d = t.contract.verdict_deadline_ms?;
                (d <= now_ms
                    && t.status == VerdictStatus::Pending
                    && deadline_recorded(t).is_none())
                .then(|| DeadlinePassed::new(t, d, now_ms))
            })
            .collect()
    }

    /// Records FAIL `verdict_missing` for every task whose verdict deadline
    /// passed by `now_ms` (default: the ledger clock; a later time is
    /// refused by admission) with no verdict, signed by `key` (a verifier).
    pub fn sweep_verdict_deadlines_with(
        &self,
        now_ms: Option<u64>,
        dry_run: bool,
        key: &SigningKey,
    ) -> Result<DeadlineReport> {
        let clock = self.ledger_clock_ms();
        let now = now_ms.unwrap_or(clock);
        if now > clock {
            return Err(LedgerError::FailedPrecondition(format!(
                "{} is after the ledger clock ({}): a deadline cannot be decided early",
                ms_to_rfc3339(now),
                ms_to_rfc3339(clock)
            )));
        }
        let due = self.due_deadlines(now);
        let mut report = DeadlineReport {
            now_ms: now,
            now: ms_to_rfc3339(now),
            dry_run,
            failed: Vec::new(),
            skipped: Vec::new(),
        };
        if dry_run || due.is_empty() {
            report.failed = due
                .into_iter()
                .map(|p| DeadlineFail {
                    deadline: ms_to_rfc3339(p.deadline_ms),
                    task_id: p.task_id,
                    submission_seq: p.submission_seq,
                    receipt: None,
                })
                .collect();
            return Ok(report);
        }
        let statements: Vec<Statement> = due
            .iter()
            .map(|p| {
                // Invariant: plain data serialises.
                let payload = serde_json::to_vec(p).expect("deadline payload serialises");
                Statement::sign(names::VERDICT_DEADLINE_PASSED, payload, key)
            })
            .collect();
        let results = self.ledger().append_many(statements)?;
        for (p, r) in due.into_iter().zip(results) {
            match r {
                Ok(receipt) => report.failed.push(DeadlineFail {
                    deadline: ms_to_rfc3339(p.deadline_ms),
                    task_id: p.task_id,
                    submission_seq: p.submission_seq,
                    receipt: Some(receipt),
                }),
                Err(e @ LedgerError::Closed(_)) => return Err(e),
                Err(e) => report.skipped.push((p.task_id, e.to_string())),
            }
        }
        Ok(report)
    }

    /// The periodic deadline sweep: at the ledger clock, signed by the
    /// ledger key.
    pub fn sweep_verdict_deadlines(&self) -> Result<DeadlineReport> {
        let key = self.ledger().ledger_key().clone();
        self.sweep_verdict_deadlines_with(None, false, &key)
    }
}

//! The kind table: every kind the ledger knows, parsed once from its string
//! ([`Kind::parse`]), and for each kind, in this one module:
//!
//! * who may author it ([`Kind::authors`]);
//! * its payload type, decoded once ([`Payload::decode`]: parse, don't
//!   validate — a [`Payload`] holds a document whose schema held);
//! * its admission rule ([`Payload::admit`]);
//! * its fold ([`Payload::fold`]).
//!
//! | kind | payload | authors | admission | fold |
//! | --- | --- | --- | --- | --- |
//! | `ledger.genesis` | [`keys::GenesisPayload`] | the ledger key, seq 0 | [`keys::admit_genesis`] | [`keys::fold_genesis`] |
//! | `key.registered` | [`keys::KeyRegistered`] | admin | [`keys::admit_registered`] | [`keys::fold_registered`] |
//! | `key.revoked` | [`keys::KeyRevoked`] | admin | [`keys::admit_revoked`] | [`keys::fold_revoked`] |
//! | `task.registered` | [`TaskContract`] | admin, submitter | [`tasks::admit`] | [`tasks::fold`] |
//! | `evidence.registered` | [`oids::EvidenceRegistered`] | submitter, gateway | [`oids::admit_evidence`] | [`oids::fold_evidence`] |
//! | `execution.recorded` | [`verdicts::ExecutionRecorded`] | submitter, gateway | [`verdicts::admit_execution`] | [`verdicts::fold_execution`] |
//! | `submission.received` | [`verdicts::SubmissionReceived`] | submitter | [`verdicts::admit_submission`] | [`verdicts::fold_submission`] |
//! | `check.recorded` | [`verdicts::CheckRecorded`] | verifier | [`verdicts::admit_check`] | [`verdicts::fold_check`] |
//! | `verdict.issued` | [`verdicts::VerdictIssued`] | verifier | [`verdicts::admit_verdict`] | [`verdicts::fold_verdict`] |
//! | `verdict.imported` | [`verdicts::imported::VerdictImported`] | verifier | [`verdicts::imported::admit_imported`] | [`verdicts::imported::fold_imported`] |
//! | `verdict.deadline_passed` | [`verdicts::imported::DeadlinePassed`] | verifier | [`verdicts::imported::admit_deadline`] | [`verdicts::imported::fold_deadline`] |
//! | `approval.requested` | [`approvals::ApprovalRequested`] | submitter, approver | [`approvals::admit_request`] | [`approvals::fold_request`] |
//! | `approval.granted` | [`approvals::ApprovalDecided`] | approver | [`approvals::admit_decision`] | [`approvals::fold_decision`] |
//! | `approval.denied` | [`approvals::ApprovalDecided`] | approver | [`approvals::admit_decision`] | [`approvals::fold_decision`] |
//! | `retention.policy_set` | [`retention::payloads::PolicySet`] | admin | schema only | [`retention::state::fold_policy`] |
//! | `retention.pinned` | [`retention::payloads::Pinned`] | custodian | [`retention::admit::admit_pin`] | [`retention::state::fold_pinned`] |
//! | `retention.unpinned` | [`retention::payloads::Unpinned`] | custodian | [`retention::admit::admit_unpin`] | [`retention::state::fold_unpinned`] |
//! | `retention.reclassified` | [`retention::payloads::Reclassified`] | custodian | [`retention::admit::admit_reclassify`] | [`retention::state::fold_reclassified`] |
//! | `retention.redacted` | [`retention::payloads::Redacted`] | custodian | [`retention::admit::admit_redaction`] | [`retention::state::fold_redacted`] |
//! | `evidence.expired` | [`retention::payloads::Expired`] | custodian | [`retention::admit::admit_expiry`] | [`retention::state::fold_expired`] |
//! | `retention.sweep` | [`retention::payloads::Sweep`] | custodian | [`retention::admit::admit_sweep`] | [`retention::state::fold_sweep`] |
//! | `x-…` | opaque bytes | every role but auditor | none | none |
//!
//! The matches below are exhaustive: a new kind does not compile until it
//! has a row in each. `docs/DOMAIN.md` §1 carries the same table (a test
//! keeps the two in step).

pub mod names;

use docket_verifier::TaskContract;

use crate::approvals::{self, ApprovalDecided, ApprovalRequested};
use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::keys::{self, GenesisPayload, KeyRegistered, KeyRevoked, Role};
use crate::oids::{self, EvidenceRegistered};
use crate::retention::{self, payloads as rp};
use crate::state::{AdmitContext, DomainState, LedgerState};
use crate::tasks;
use crate::verdicts::imported::{self, DeadlinePassed, VerdictImported};
use crate::verdicts::{self, CheckRecorded, ExecutionRecorded, SubmissionReceived, VerdictIssued};

/// Every kind the ledger knows, and custom `x-…` extensions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Genesis,
    KeyRegistered,
    KeyRevoked,
    TaskRegistered,
    EvidenceRegistered,
    ExecutionRecorded,
    SubmissionReceived,
    CheckRecorded,
    VerdictIssued,
    VerdictImported,
    VerdictDeadlinePassed,
    ApprovalRequested,
    ApprovalGranted,
    ApprovalDenied,
    RetentionPolicySet,
    RetentionPinned,
    RetentionUnpinned,
    RetentionReclassified,
    RetentionRedacted,
    EvidenceExpired,
    RetentionSweep,
    /// A custom kind (`x-…`): an opaque payload, no rule, no fold.
    Extension(String),
}

/// Who may author a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authors {
    /// The ledger key the payload names, at sequence 0 only (genesis).
    LedgerKey,
    /// A registered, unrevoked key inside its validity window holding one
    /// of these roles.
    Roles(&'static [Role]),
}

/// Roles for custom `x-…` kinds: every role but auditor.
pub const EXTENSION_ROLES: &[Role] = &[
    Role::Admin,
    Role::Submitter,
    Role::Verifier,
    Role::Approver,
    Role::Custodian,
    Role::Gateway,
];

impl Kind {
    /// Every known kind (extensions aside), in table order.
    pub const KNOWN: [Kind; 21] = [
        Kind::Genesis,
        Kind::KeyRegistered,
        Kind::KeyRevoked,
        Kind::TaskRegistered,
        Kind::EvidenceRegistered,
        Kind::ExecutionRecorded,
        Kind::SubmissionReceived,
        Kind::CheckRecorded,
        Kind::VerdictIssued,
        Kind::VerdictImported,
        Kind::VerdictDeadlinePassed,
        Kind::ApprovalRequested,
        Kind::ApprovalGranted,
        Kind::ApprovalDenied,
        Kind::RetentionPolicySet,
        Kind::RetentionPinned,
        Kind::RetentionUnpinned,
        Kind::RetentionReclassified,
        Kind::RetentionRedacted,
        Kind::EvidenceExpired,
        Kind::RetentionSweep,
    ];

    /// Parses a kind string; an unknown kind is `Invalid` (custom kinds
    /// start with `x-`).
    pub fn parse(s: &str) -> Result<Kind> {
        Ok(match s {
            names::GENESIS => Kind::Genesis,
            names::KEY_REGISTERED => Kind::KeyRegistered,
            names::KEY_REVOKED => Kind::KeyRevoked,
            names::TASK_REGISTERED => Kind::TaskRegistered,
            names::EVIDENCE_REGISTERED => Kind::EvidenceRegistered,
            names::EXECUTION_RECORDED => Kind::ExecutionRecorded,
            names::SUBMISSION_RECEIVED => Kind::SubmissionReceived,
            names::CHECK_RECORDED => Kind::CheckRecorded,
            names::VERDICT_ISSUED => Kind::VerdictIssued,
            names::VERDICT_IMPORTED => Kind::VerdictImported,
            names::VERDICT_DEADLINE_PASSED => Kind::VerdictDeadlinePassed,
            names::APPROVAL_REQUESTED => Kind::ApprovalRequested,
            names::APPROVAL_GRANTED => Kind::ApprovalGranted,
            names::APPROVAL_DENIED => Kind::ApprovalDenied,
            names::RETENTION_POLICY_SET => Kind::RetentionPolicySet,
            names::RETENTION_PINNED => Kind::RetentionPinned,
            names::RETENTION_UNPINNED => Kind::RetentionUnpinned,
            names::RETENTION_RECLASSIFIED => Kind::RetentionReclassified,
            names::RETENTION_REDACTED => Kind::RetentionRedacted,
            names::EVIDENCE_EXPIRED => Kind::EvidenceExpired,
            names::RETENTION_SWEEP => Kind::RetentionSweep,
            x if x.starts_with(names::EXTENSION_PREFIX) => Kind::Extension(x.to_string()),
            unknown => {
                return Err(LedgerError::Invalid {
                    what: "kind".into(),
                    violations: vec![format!(
                        "unknown kind {unknown:?}; known kinds are listed in docs/FORMAT.md, custom kinds start with {:?}",
                        names::EXTENSION_PREFIX
                    )],
                });
            }
        })
    }

    /// The kind's one spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Kind::Extension(name) => name,
            known => known.static_name().unwrap_or_default(),
        }
    }

    /// The spelling of a known kind (None for an extension).
    pub fn static_name(&self) -> Option<&'static str> {
        Some(match self {
            Kind::Genesis => names::GENESIS,
            Kind::KeyRegistered => names::KEY_REGISTERED,
            Kind::KeyRevoked => names::KEY_REVOKED,
            Kind::TaskRegistered => names::TASK_REGISTERED,
            Kind::EvidenceRegistered => names::EVIDENCE_REGISTERED,
            Kind::ExecutionRecorded => names::EXECUTION_RECORDED,
            Kind::SubmissionReceived => names::SUBMISSION_RECEIVED,
            Kind::CheckRecorded => names::CHECK_RECORDED,
            Kind::VerdictIssued => names::VERDICT_ISSUED,
            Kind::VerdictImported => names::VERDICT_IMPORTED,
            Kind::VerdictDeadlinePassed => names::VERDICT_DEADLINE_PASSED,
            Kind::ApprovalRequested => names::APPROVAL_REQUESTED,
            Kind::ApprovalGranted => names::APPROVAL_GRANTED,
            Kind::ApprovalDenied => names::APPROVAL_DENIED,
            Kind::RetentionPolicySet => names::RETENTION_POLICY_SET,
            Kind::RetentionPinned => names::RETENTION_PINNED,
            Kind::RetentionUnpinned => names::RETENTION_UNPINNED,
            Kind::RetentionReclassified => names::RETENTION_RECLASSIFIED,
            Kind::RetentionRedacted => names::RETENTION_REDACTED,
            Kind::EvidenceExpired => names::EVIDENCE_EXPIRED,
            Kind::RetentionSweep => names::RETENTION_SWEEP,
            Kind::Extension(_) => return None,
        })
    }

    /// Who may author this kind.
    pub fn authors(&self) -> Authors {
        use Role::{Admin, Approver, Custodian, Gateway, Submitter, Verifier};
        Authors::Roles(match self {
            Kind::Genesis => return Authors::LedgerKey,
            Kind::KeyRegistered | Kind::KeyRevoked => &[Admin],
            Kind::TaskRegistered => &[Admin, Submitter],
            // The execution gateway (`docket exec`) registers the full
            // outputs and records the execution it ran.
            Kind::EvidenceRegistered | Kind::ExecutionRecorded => &[Submitter, Gateway],
            Kind::SubmissionReceived => &[Submitter],
            Kind::CheckRecorded
            | Kind::VerdictIssued
            | Kind::VerdictImported
            | Kind::VerdictDeadlinePassed => &[Verifier],
            Kind::ApprovalRequested => &[Submitter, Approver],
            Kind::ApprovalGranted | Kind::ApprovalDenied => &[Approver],
            Kind::RetentionPolicySet => &[Admin],
            Kind::RetentionPinned
            | Kind::RetentionUnpinned
            | Kind::RetentionReclassified
            | Kind::RetentionRedacted
            | Kind::EvidenceExpired
            | Kind::RetentionSweep => &[Custodian],
            Kind::Extension(_) => EXTENSION_ROLES,
        })
    }

    /// The roles that may author this kind (None for genesis, which only the
    /// ledger key authors, at sequence 0).
    pub fn roles(&self) -> Option<&'static [Role]> {
        match self.authors() {
            Authors::LedgerKey => None,
            Authors::Roles(roles) => Some(roles),
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = LedgerError;
    fn from_str(s: &str) -> Result<Kind> {
        Kind::parse(s)
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A payload decoded for its kind: each variant holds the typed document
/// admission and fold both use.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Genesis(GenesisPayload),
    KeyRegistered(KeyRegistered),
    KeyRevoked(KeyRevoked),
    TaskRegistered(Box<TaskContract>),
    EvidenceRegistered(EvidenceRegistered),
    ExecutionRecorded(Box<ExecutionRecorded>),
    SubmissionReceived(Box<SubmissionReceived>),
    CheckRecorded(CheckRecorded),
    VerdictIssued(Box<VerdictIssued>),
    VerdictImported(Box<VerdictImported>),
    VerdictDeadlinePassed(Box<DeadlinePassed>),
    ApprovalRequested(ApprovalRequested),
    ApprovalGranted(ApprovalDecided),
    ApprovalDenied(ApprovalDecided),
    RetentionPolicySet(rp::PolicySet),
    RetentionPinned(rp::Pinned),
    RetentionUnpinned(rp::Unpinned),
    RetentionReclassified(rp::Reclassified),
    RetentionRedacted(rp::Redacted),
    EvidenceExpired(rp::Expired),
    /// The payload, and its `now` in Unix ms when it states one.
    RetentionSweep(rp::Sweep, Option<u64>),
    /// An extension's payload is opaque (it stays in the event).
    Extension,
}

impl Payload {
    /// Decodes `bytes` as the payload of `kind`, checking every rule that
    /// needs nothing but the bytes (`Invalid` lists every violation).
    pub fn decode(kind: &Kind, bytes: &[u8]) -> Result<Payload> {
        Ok(match kind {
            Kind::Genesis => Payload::Genesis(keys::decode_genesis(bytes)?),
            Kind::KeyRegistered => Payload::KeyRegistered(keys::decode_registered(bytes)?),
            Kind::KeyRevoked => Payload::KeyRevoked(keys::decode_revoked(bytes)?),
            Kind::TaskRegistered => Payload::TaskRegistered(Box::new(tasks::decode(bytes)?)),
            Kind::EvidenceRegistered => Payload::EvidenceRegistered(oids::decode_evidence(bytes)?),
            Kind::ExecutionRecorded => {
                Payload::ExecutionRecorded(Box::new(verdicts::decode_execution(bytes)?))
            }
            Kind::SubmissionReceived => {
                Payload::SubmissionReceived(Box::new(verdicts::decode_submission(bytes)?))
            }
            Kind::CheckRecorded => Payload::CheckRecorded(verdicts::decode_check(bytes)?),
            Kind::VerdictIssued => {
                Payload::VerdictIssued(Box::new(verdicts::decode_verdict(bytes)?))
            }
            Kind::VerdictImported => {
                Payload::VerdictImported(Box::new(imported::decode_imported(bytes)?))
            }
            Kind::VerdictDeadlinePassed => {
                Payload::VerdictDeadlinePassed(Box::new(imported::decode_deadline(bytes)?))
            }
            Kind::ApprovalRequested => {
                Payload::ApprovalRequested(approvals::decode_request(bytes)?)
            }
            Kind::ApprovalGranted => {
                Payload::ApprovalGranted(approvals::decode_decision(bytes, true)?)
            }
            Kind::ApprovalDenied => {
                Payload::ApprovalDenied(approvals::decode_decision(bytes, false)?)
            }
            Kind::RetentionPolicySet => Payload::RetentionPolicySet(rp::policy_set(bytes)?),
            Kind::RetentionPinned => Payload::RetentionPinned(rp::pinned(bytes)?),
            Kind::RetentionUnpinned => Payload::RetentionUnpinned(rp::unpinned(bytes)?),
            Kind::RetentionReclassified => Payload::RetentionReclassified(rp::reclassified(bytes)?),
            Kind::RetentionRedacted => Payload::RetentionRedacted(rp::redacted(bytes)?),
            Kind::EvidenceExpired => Payload::EvidenceExpired(rp::expired(bytes)?),
            Kind::RetentionSweep => {
                let (sweep, now_ms) = rp::sweep(bytes)?;
                Payload::RetentionSweep(sweep, now_ms)
            }
            Kind::Extension(_) => Payload::Extension,
        })
    }

    /// The payload's admission rule against `state` at `ctx`: references
    /// exist, ids are new, separation of duties, state allows it. Pure.
    /// Authority (the author's roles) was checked before.
    pub fn admit(&self, state: &LedgerState, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
        let tasks = &state.domain.verdicts;
        let oids = &state.domain.oids;
        let view = retention::View::from(state);
        match self {
            Payload::Genesis(p) => keys::admit_genesis(stmt, p),
            Payload::KeyRegistered(p) => keys::admit_registered(&state.keys, p),
            Payload::KeyRevoked(p) => keys::admit_revoked(&state.keys, ctx, p),
            Payload::TaskRegistered(p) => tasks::admit(tasks, p),
            Payload::EvidenceRegistered(p) => oids::admit_evidence(tasks, oids, stmt, ctx, p),
            Payload::ExecutionRecorded(p) => verdicts::admit_execution(tasks, oids, p),
            Payload::SubmissionReceived(p) => verdicts::admit_submission(tasks, oids, p),
            Payload::CheckRecorded(p) => verdicts::admit_check(tasks, stmt, p),
            Payload::VerdictIssued(p) => verdicts::admit_verdict(tasks, oids, stmt, p),
            Payload::VerdictImported(p) => imported::admit_imported(tasks, oids, stmt, ctx, p),
            Payload::VerdictDeadlinePassed(p) => imported::admit_deadline(tasks, stmt, ctx, p),
            Payload::ApprovalRequested(p) => approvals::admit_request(tasks, ctx, p),
            Payload::ApprovalGranted(p) | Payload::ApprovalDenied(p) => {
                approvals::admit_decision(tasks, stmt, ctx, p)
            }
            Payload::RetentionPolicySet(_) => Ok(()),
            Payload::RetentionPinned(p) => retention::admit::admit_pin(view, p),
            Payload::RetentionUnpinned(p) => retention::admit::admit_unpin(view, p),
            Payload::RetentionReclassified(p) => retention::admit::admit_reclassify(view, p),
            Payload::RetentionRedacted(p) => retention::admit::admit_redaction(view, p),
            Payload::EvidenceExpired(p) => retention::admit::admit_expiry(view, ctx, p),
            Payload::RetentionSweep(_, now_ms) => retention::admit::admit_sweep(view, ctx, *now_ms),
            Payload::Extension => Ok(()),
        }
    }

    /// Folds the payload of `event` into `state`. An error (a reference the
    /// state does not hold) leaves every projection unchanged.
    pub fn fold(&self, state: &mut LedgerState, event: &Event) -> Result<()> {
        let LedgerState {
            keys,
            domain:
                DomainState {
                    verdicts: tasks,
                    oids,
                },
            retention,
            ..
        } = state;
        match self {
            Payload::Genesis(p) => keys::fold_genesis(keys, event, p),
            Payload::KeyRegistered(p) => keys::fold_registered(keys, event, p),
            Payload::KeyRevoked(p) => keys::fold_revoked(keys, event, p),
            Payload::TaskRegistered(p) => tasks::fold(tasks, event, p),
            Payload::EvidenceRegistered(p) => oids::fold_evidence(tasks, oids, event, p),
            Payload::ExecutionRecorded(p) => verdicts::fold_execution(tasks, event, p),
            Payload::SubmissionReceived(p) => verdicts::fold_submission(tasks, event, p),
            Payload::CheckRecorded(p) => verdicts::fold_check(tasks, event, p),
            Payload::VerdictIssued(p) => verdicts::fold_verdict(tasks, event, p),
            Payload::VerdictImported(p) => imported::fold_imported(tasks, oids, event, p),
            Payload::VerdictDeadlinePassed(p) => imported::fold_deadline(tasks, event, p),
            Payload::ApprovalRequested(p) => approvals::fold_request(tasks, event, p),
            Payload::ApprovalGranted(p) => approvals::fold_decision(tasks, event, p, true),
            Payload::ApprovalDenied(p) => approvals::fold_decision(tasks, event, p, false),
            Payload::RetentionPolicySet(p) => retention::state::fold_policy(retention, event, p),
            Payload::RetentionPinned(p) => retention::state::fold_pinned(oids, retention, event, p),
            Payload::RetentionUnpinned(p) => {
                retention::state::fold_unpinned(tasks, oids, retention, event, p)
            }
            Payload::RetentionReclassified(p) => {
                retention::state::fold_reclassified(oids, retention, event, p)
            }
            Payload::RetentionRedacted(p) => {
                retention::state::fold_redacted(oids, retention, event, p)
            }
            Payload::EvidenceExpired(p) => {
                retention::state::fold_expired(oids, retention, event, p)
            }
            Payload::RetentionSweep(_, now_ms) => {
                retention::state::fold_sweep(retention, event, *now_ms)
            }
            Payload::Extension => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_to_its_kind_and_back() {
        assert_eq!(Kind::KNOWN.len(), names::ALL.len());
        for (kind, name) in Kind::KNOWN.iter().zip(names::ALL) {
            assert_eq!(kind.as_str(), name);
            assert_eq!(&Kind::parse(name).unwrap(), kind);
        }
        assert_eq!(
            Kind::parse("x-note").unwrap(),
            Kind::Extension("x-note".into())
        );
        assert_eq!(Kind::parse("x-note").unwrap().as_str(), "x-note");
        assert!(matches!(
            Kind::parse("bogus.kind"),
            Err(LedgerError::Invalid { .. })
        ));
        assert_eq!(Kind::Genesis.authors(), Authors::LedgerKey);
        assert!(
            Kind::KNOWN
                .iter()
                .skip(1)
                .all(|k| k.roles().is_some_and(|r| !r.contains(&Role::Auditor)))
        );
    }

    /// docs/DOMAIN.md §1 lists every kind with exactly the roles of the table.
    #[test]
    fn the_documented_table_matches() {
        let doc = include_str!("../../../../docs/DOMAIN.md");
        for kind in &Kind::KNOWN[1..] {
            let row = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", kind.as_str())))
                .unwrap_or_else(|| panic!("docs/DOMAIN.md has no row for {kind}"));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let roles: Vec<&str> = kind
                .roles()
                .unwrap_or_default()
                .iter()
                .map(|r| r.as_str())
                .collect();
            assert_eq!(
                cells[3],
                roles.join(", "),
                "roles of {kind} in docs/DOMAIN.md"
            );
        }
    }
}

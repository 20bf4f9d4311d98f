//! What the retention operations report: sweeps (and their options),
//! reconciliation of the blob store, redactions. Plain data; the service
//! (the service's `domain::retention_service`) fills them in.

use serde::Serialize;

use crate::ledger::Receipt;

use super::payloads::FindingRef;
use super::policy::Policy;
use super::rules::Planned;

/// Default grace period of fresh uploads of removed content (15 minutes).
pub const DEFAULT_GRACE_MS: u64 = 15 * 60 * 1000;

/// How a sweep runs.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The time decisions are made at (Unix ms); None: the ledger clock
    /// (wall clock, never before the last event).
    pub now_ms: Option<u64>,
    /// Decide and report only: append nothing, delete nothing.
    pub dry_run: bool,
    /// Append the `retention.sweep` event even when nothing expires
    /// (default: true; the periodic sweeper turns it off).
    pub record_empty: bool,
    /// Fresh uploads of removed content younger than this are kept.
    pub grace_ms: u64,
    /// Delete content after the events (false simulates a crash between
    /// the events and the deletions).
    pub delete: bool,
    /// Note on the `retention.sweep` event.
    pub note: Option<String>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self {
            now_ms: None,
            dry_run: false,
            record_empty: true,
            grace_ms: DEFAULT_GRACE_MS,
            delete: true,
            note: None,
        }
    }
}

/// One OID a sweep expired (or would expire).
#[derive(Debug, Clone, Serialize)]
pub struct ExpiredOid {
    #[serde(flatten)]
    pub planned: Planned,
    /// Receipt of its `evidence.expired` event (None for a dry run).
    pub receipt: Option<Receipt>,
}

/// An OID the plan expired but whose event the ledger refused (e.g. it was
/// pinned in between).
#[derive(Debug, Clone, Serialize)]
pub struct SkippedOid {
    pub oid: String,
    pub error: String,
}

/// One deleted blob.
#[derive(Debug, Clone, Serialize)]
pub struct DeletedBlob {
    pub sha256: String,
    pub size: u64,
}

/// What reconciliation did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReconcileReport {
    /// Digests of removed content no OID holds any more.
    pub candidates: u64,
    pub deleted: Vec<DeletedBlob>,
    pub bytes_freed: u64,
    /// Fresh uploads of removed content kept for their grace period.
    pub deferred: Vec<String>,
    /// Content a live OID needs that was deleted anyway: impossible through
    /// the service; an error is logged (re-upload the content to heal it).
    pub lost: Vec<String>,
}

/// What a sweep did (or would do).
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub dry_run: bool,
    pub now_ms: u64,
    pub now: String,
    pub policy: Policy,
    /// OIDs whose content was still held.
    pub examined: u64,
    pub kept_pinned: u64,
    pub kept_count_limit: u64,
    pub kept_within_class: u64,
    /// Receipt of the `retention.sweep` event (None: dry run, or nothing to
    /// do and not recorded).
    pub sweep_receipt: Option<Receipt>,
    pub expired: Vec<ExpiredOid>,
    pub skipped: Vec<SkippedOid>,
    /// Bytes of content deleted (for a dry run: that would be deleted).
    pub bytes_freed: u64,
    pub reconcile: Option<ReconcileReport>,
}

/// What a redaction did.
#[derive(Debug, Clone, Serialize)]
pub struct RedactOutcome {
    pub oid: String,
    pub receipt: Receipt,
    pub original_sha256: String,
    pub redacted_sha256: String,
    pub redacted_size: u64,
    pub findings: Vec<FindingRef>,
    /// The original's blob is gone from the store.
    pub original_deleted: bool,
    /// Other OIDs holding the same original content (it stays for them:
    /// redact them too).
    pub original_still_needed_by: Vec<String>,
    pub reconcile: ReconcileReport,
}

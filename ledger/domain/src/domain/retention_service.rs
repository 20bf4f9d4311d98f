//! Retention operations that touch the disk, as methods on [`Docket`]:
//! sweeps, reconciliation, redaction, status; and [`Docket`] as the
//! retention sweeper's [`PeriodicSweep`] (the sweeper is driven by time,
//! not by events: it keeps no cursor). The pure rules, payloads and reports
//! are the retention aggregate's ([`crate::retention`]).
//!
//! # Crash safety
//!
//! Content is removed in two steps, always in this order:
//!
//! 1. the event (`evidence.expired`, `retention.redacted`) is appended and
//!    durable: from then on the log says the content is gone, and every
//!    read refuses it naming the event;
//! 2. the blob is deleted, unless some OID still needs the same content
//!    (blobs are deduplicated by digest).
//!
//! A crash between the two leaves a blob the log no longer needs. Before
//! step 1 the service writes a marker file (`DATA/retention.pending`,
//! fsynced); after step 2 it removes it. Opening a [`Docket`] with the
//! marker present, and every explicit sweep, runs [`Docket::reconcile_blobs`]:
//! every blob whose content only removed OIDs ever held and no live (or
//! redacted) OID holds now is deleted. Deletion never comes first, so a crash
//! can leave extra content on disk but never a live OID without content.
//!
//! # Concurrent uploads
//!
//! An upload of content identical to removed content (the same digest)
//! must not be deleted under a registration in flight. Two rules protect
//! it: a blob written after the content's removal event is deleted only
//! once it is older than the grace period (default 15 minutes: an upload
//! whose registration never came); and deletion excludes registrations
//! (`Docket::register_evidence` holds [`registration_guard`] from its blob
//! check to its durable append, deletion holds the write side and re-reads
//! the registry first).

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Mutex, RwLock, RwLockReadGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use ed25519_dalek::SigningKey;
use ulid::Ulid;

use crate::blobs::{VerifiedReader, parse_digest};
use crate::error::{LedgerError, Result};
use crate::event::Statement;
use crate::keys::Role;
use crate::ledger::Receipt;
use crate::oids::{OidState, Removal};
use crate::retention::PeriodicSweep;
use crate::retention::kinds;
use crate::retention::payloads::{self, Expired, FindingRef, Redacted, Sweep};
use crate::retention::reports::{
    DEFAULT_GRACE_MS, DeletedBlob, ExpiredOid, ReconcileReport, RedactOutcome, SkippedOid,
    SweepOptions, SweepReport,
};
use crate::retention::rules::{self, Planned};
use crate::retention::state::current_sha256;
use crate::retention::status::{self, PendingDeletion, RetentionStatus};
use crate::schema::ms_to_rfc3339;
use crate::state::LedgerState;
use crate::store::sync_dir;

use super::query::AsOf;
use super::service::{Docket, EvidenceView};

/// Marker file of removals whose deletions may not have finished.
pub const MARKER_FILE: &str = "retention.pending";
/// `evidence.expired` statements per group commit.
const EXPIRY_CHUNK: usize = 1024;
/// Blobs deleted per hold of the registration guard.
const DELETE_CHUNK: usize = 64;
/// Above this many candidates, reconcile lists the blob store once instead
/// of looking each candidate up.
const LIST_THRESHOLD: usize = 4096;

/// One sweep at a time per process.
static SWEEP_LOCK: Mutex<()> = Mutex::new(());
/// Registrations (read side) versus deletions (write side).
static BLOB_GUARD: RwLock<()> = RwLock::new(());

/// Held by an evidence registration from its blob check to its durable
/// append, so that no deletion runs in between.
pub fn registration_guard() -> RwLockReadGuard<'static, ()> {
    BLOB_GUARD
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn system_time_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Digests of removed content, with the latest removal time of each, and
/// whether a live or redacted OID holds them now.
struct Removable {
    /// Digest (hex) → latest ledger time it was removed at.
    candidates: BTreeMap<String, u64>,
}

fn removable(state: &LedgerState) -> Removable {
    let mut needed: HashSet<&str> = HashSet::new();
    let mut removed: BTreeMap<&str, u64> = BTreeMap::new();
    for (oid, r) in &state.domain.oids.oids {
        if let Some(d) = current_sha256(r, &state.retention, oid) {
            needed.insert(d);
        }
        if r.state != OidState::Live
            && let Some(removal) = &r.removal
        {
            let t = removed.entry(r.sha256.as_str()).or_insert(0);
            *t = (*t).max(removal.at_ms);
        }
        // Every redacted version but the one held now was removed by the
        // event after it (the next redaction, or the expiry).
        if let Some(chain) = state.retention.redactions.get(oid) {
            let held = current_sha256(r, &state.retention, oid);
            for (i, red) in chain.iter().enumerate() {
                if Some(red.redacted_sha256.as_str()) == held {
                    continue;
                }
                let at = chain
                    .get(i + 1)
                    .map(|n| n.at_ms)
                    .or(r.removal.as_ref().map(|x| x.at_ms))
                    .unwrap_or(red.at_ms);
                let t = removed.entry(red.redacted_sha256.as_str()).or_insert(0);
                *t = (*t).max(at);
            }
        }
    }
    Removable {
        candidates: removed
            .into_iter()
            .filter(|(d, _)| !needed.contains(d))
            .map(|(d, t)| (d.to_string(), t))
            .collect(),
    }
}

impl Docket {
    /// The ledger clock: wall time, never before the last event.
    pub fn ledger_clock_ms(&self) -> u64 {
        wall_ms().max(self.ledger().state().last_recorded_at_ms)
    }

    fn marker_path(&self) -> PathBuf {
        self.ledger().dir().join(MARKER_FILE)
    }

    /// Writes the marker (durably) before removal events are appended.
    fn begin_removals(&self) -> Result<()> {
        let path = self.marker_path();
        let mut f = fs::File::create(&path).map_err(|e| LedgerError::Io {
            path: path.clone(),
            source: e,
        })?;
        f.write_all(b"retention deletions in progress\n")
            .and_then(|()| f.sync_all())
            .map_err(|e| LedgerError::Io {
                path: path.clone(),
                source: e,
            })?;
        sync_dir(self.ledger().dir())
    }

    fn end_removals(&self) -> Result<()> {
        let path = self.marker_path();
        match fs::remove_file(&path) {
            Ok(()) => sync_dir(self.ledger().dir()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(LedgerError::Io { path, source: e }),
        }
    }

    /// Whether a crash may have interrupted deletions (the marker exists).
    pub fn removals_pending(&self) -> bool {
        self.marker_path().exists()
    }

    /// Finishes deletions a crash interrupted (called when a [`Docket`] is
    /// opened): reconciles when the marker is present, then removes it.
    pub fn finish_interrupted_removals(&self) -> Result<Option<ReconcileReport>> {
        if !self.removals_pending() {
            return Ok(None);
        }
        let report = self.reconcile_blobs(DEFAULT_GRACE_MS)?;
        self.end_removals()?;
        if !report.deleted.is_empty() {
            tracing::info!(
                "retention: finished {} deletion(s) a crash interrupted ({} bytes)",
                report.deleted.len(),
                report.bytes_freed
            );
        }
        Ok(Some(report))
    }

    /// Deletes every blob whose content the log removed and no OID holds
    /// now. A blob written after its content's last removal (a fresh
    /// upload of the same content, its registration perhaps in flight) is
    /// kept until it is `grace_ms` old.
    pub fn reconcile_blobs(&self, grace_ms: u64) -> Result<ReconcileReport> {
        let (mut candidates, mut seen_applied, mut seen_time) = {
            let state = self.ledger().state();
            (
                removable(&state).candidates,
                state.applied,
                state.last_recorded_at_ms,
            )
        };
        let mut report = ReconcileReport {
            candidates: candidates.len() as u64,
            ..ReconcileReport::default()
        };
        if candidates.is_empty() {
            return Ok(report);
        }
        // Which candidates are on disk at all.
        let present: Option<HashSet<String>> = if candidates.len() > LIST_THRESHOLD {
            Some(self.blobs().list()?.iter().map(hex::encode).collect())
        } else {
            None
        };
        let now = wall_ms();
        let mut todo: Vec<(String, u64, u64)> = Vec::new();
        for (digest_hex, removed_at) in &candidates {
            if present.as_ref().is_some_and(|p| !p.contains(digest_hex)) {
                continue;
            }
            let digest = parse_digest(digest_hex)?;
            let path = self.blobs().path_of(&digest);
            let meta = match fs::metadata(&path) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(LedgerError::Io { path, source: e }),
            };
            let written = meta.modified().map(system_time_ms).unwrap_or(0);
            if written <= *removed_at || now.saturating_sub(written) >= grace_ms {
                todo.push((digest_hex.clone(), meta.len(), written));
            } else {
                report.deferred.push(digest_hex.clone());
            }
        }
        let mut deleted: Vec<String> = Vec::new();
        for chunk in todo.chunks(DELETE_CHUNK) {
            let _exclusive = BLOB_GUARD
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Registrations appended since the candidates were computed may
            // need some of them again (OIDs sort by registration time).
            {
                let state = self.ledger().state();
                if state.applied != seen_applied {
                    let from = Ulid::from_parts(seen_time, 0).to_string();
                    for (oid, r) in state.domain.oids.oids.range(from..) {
                        if r.registered_seq >= seen_applied
                            && let Some(d) = current_sha256(r, &state.retention, oid)
                        {
                            candidates.remove(d);
                        }
                    }
                    seen_applied = state.applied;
                    seen_time = state.last_recorded_at_ms;
                }
            }
            for (digest_hex, size, _) in chunk {
                if !candidates.contains_key(digest_hex) {
                    continue;
                }
                let digest = parse_digest(digest_hex)?;
                if self.blobs().delete(&digest)? {
                    report.bytes_freed += size;
                    report.deleted.push(DeletedBlob {
                        sha256: digest_hex.clone(),
                        size: *size,
                    });
                    deleted.push(digest_hex.clone());
                }
            }
        }
        // Safety net: nothing a live OID holds may have gone.
        if !deleted.is_empty() {
            let state = self.ledger().state();
            let gone: HashSet<&str> = deleted.iter().map(String::as_str).collect();
            for (oid, r) in &state.domain.oids.oids {
                if let Some(d) = current_sha256(r, &state.retention, oid)
                    && gone.contains(d)
                {
                    tracing::error!(
                        "retention deleted content {d} that {oid} holds; re-upload it to heal the blob store"
                    );
                    report.lost.push(d.to_string());
                }
            }
        }
        Ok(report)
    }

    /// Sweeps at `now_ms` with `custodian`'s key: appends a `retention.sweep`
    /// event, one `evidence.expired` per expired OID (all signed by that key),
    /// then deletes the content no OID still holds. With `dry_run`, decides
    /// and reports only.
    pub fn sweep(&self, now_ms: u64, dry_run: bool, custodian: &SigningKey) -> Result<SweepReport> {
        self.sweep_with(
            &SweepOptions {
                now_ms: Some(now_ms),
                dry_run,
                ..SweepOptions::default()
            },
            custodian,
        )
    }

    /// Sweeps with explicit options (see [`SweepOptions`]); every event is
    /// signed by `key`, which must hold the custodian role.
    pub fn sweep_with(&self, options: &SweepOptions, key: &SigningKey) -> Result<SweepReport> {
        let now = options.now_ms.unwrap_or_else(|| self.ledger_clock_ms());
        let payload = Sweep {
            now: Some(ms_to_rfc3339(now)),
            note: options.note.clone(),
        };
        let stmt = Statement::sign(kinds::SWEEP, payloads::to_bytes(&payload), key);
        self.run_sweep(stmt, Some(now), options, key)
    }

    /// Runs the sweep a client's signed `retention.sweep` statement asks
    /// for (the `Retention.Sweep` RPC). The statement is appended (unless
    /// `dry_run`); the `evidence.expired` events are signed by the ledger
    /// key (custodian from genesis). Without a `now` in the payload,
    /// decisions are made at the sweep event's ledger time.
    pub fn sweep_request(&self, stmt: Statement, dry_run: bool) -> Result<SweepReport> {
        if stmt.kind != kinds::SWEEP {
            return Err(LedgerError::Invalid {
                what: "kind".into(),
                violations: vec![format!(
                    "expected a statement of kind {}, got {}",
                    kinds::SWEEP,
                    stmt.kind
                )],
            });
        }
        let (_, now) = payloads::sweep(&stmt.payload)?;
        let options = SweepOptions {
            now_ms: now,
            dry_run,
            ..SweepOptions::default()
        };
        let key = self.ledger().ledger_key().clone();
        self.run_sweep(stmt, now, &options, &key)
    }

    /// The sweep the server runs on an interval: at the ledger clock, signed
    /// by the ledger key, recorded only when something expires.
    pub fn periodic_sweep(&self) -> Result<SweepReport> {
        let options = SweepOptions {
            record_empty: false,
            ..SweepOptions::default()
        };
        let key = self.ledger().ledger_key().clone();
        self.sweep_with(&options, &key)
    }

    /// Checks that a dry run's statement is signed by a usable custodian.
    fn authorize_dry_run(&self, stmt: &Statement) -> Result<()> {
        stmt.check_shape()?;
        stmt.verify()?;
        let state = self.ledger().state();
        let usable = state.keys.key(&stmt.author).filter(|k| {
            k.revoked_seq.is_none() && k.usable_at(state.applied, self.ledger_clock_ms())
        });
        match usable {
            Some(k) if k.roles.contains(&Role::Custodian) => Ok(()),
            Some(_) => Err(LedgerError::PermissionDenied {
                kind: stmt.kind.clone(),
                author: hex::encode(stmt.author),
                reason: "needs one of the roles custodian".into(),
            }),
            None => Err(LedgerError::PermissionDenied {
                kind: stmt.kind.clone(),
                author: hex::encode(stmt.author),
                reason: "unknown, revoked or not yet valid key".into(),
            }),
        }
    }

    fn run_sweep(
        &self,
        stmt: Statement,
        stated_now: Option<u64>,
        options: &SweepOptions,
        expiry_key: &SigningKey,
    ) -> Result<SweepReport> {
        let _one_at_a_time = SWEEP_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if options.dry_run {
            self.authorize_dry_run(&stmt)?;
            let now = stated_now.unwrap_or_else(|| self.ledger_clock_ms());
            let state = self.ledger().state();
            let plan = rules::plan(&*state, now);
            let bytes = would_free(&state, &plan.expire);
            return Ok(report_from(plan, true, None, Vec::new(), bytes, None));
        }
        let first = {
            let state = self.ledger().state();
            rules::plan(
                &*state,
                stated_now.unwrap_or_else(|| self.ledger_clock_ms()),
            )
        };
        let removals = !first.expire.is_empty();
        if !removals && !options.record_empty {
            let reconcile = if options.delete && self.removals_pending() {
                self.finish_interrupted_removals()?
            } else {
                None
            };
            return Ok(report_from(first, false, None, Vec::new(), 0, reconcile));
        }
        if removals {
            self.begin_removals()?;
        }
        let sweep_receipt = match self.ledger().append(stmt) {
            Ok(r) => r,
            Err(e) => {
                // Nothing was appended: nothing to finish.
                if removals {
                    self.end_removals()?;
                }
                return Err(e);
            }
        };
        let now = match stated_now {
            Some(n) => n,
            None => {
                let state = self.ledger().state();
                state
                    .retention
                    .sweeps
                    .get(&sweep_receipt.seq)
                    .map_or(sweep_receipt.recorded_at_ms, |s| s.as_of_ms)
            }
        };
        let plan = {
            let state = self.ledger().state();
            rules::plan(&*state, now)
        };
        if !plan.expire.is_empty() && !removals {
            self.begin_removals()?;
        }
        let mut expired = Vec::with_capacity(plan.expire.len());
        let mut skipped = Vec::new();
        for chunk in plan.expire.chunks(EXPIRY_CHUNK) {
            let statements: Vec<Statement> = chunk
                .iter()
                .map(|p| {
                    let payload = Expired {
                        oid: p.oid.clone(),
                        as_of_ms: now,
                        sweep_seq: Some(sweep_receipt.seq),
                        reason: Some(p.reason(&plan.policy)),
                    };
                    Statement::sign(kinds::EXPIRED, payloads::to_bytes(&payload), expiry_key)
                })
                .collect();
            let results = self.ledger().append_many(statements)?;
            for (p, r) in chunk.iter().zip(results) {
                match r {
                    Ok(receipt) => expired.push(ExpiredOid {
                        planned: p.clone(),
                        receipt: Some(receipt),
                    }),
                    Err(e) => skipped.push(SkippedOid {
                        oid: p.oid.clone(),
                        error: e.to_string(),
                    }),
                }
            }
        }
        let reconcile = if options.delete {
            let r = self.reconcile_blobs(options.grace_ms)?;
            self.end_removals()?;
            Some(r)
        } else {
            None
        };
        let bytes = reconcile.as_ref().map_or(0, |r| r.bytes_freed);
        let mut report = report_from(plan, false, Some(sweep_receipt), skipped, bytes, reconcile);
        report.expired = expired;
        Ok(report)
    }

    /// Appends a `retention.redacted` statement whose redacted content is
    /// already in the blob store (`FailedPrecondition` otherwise), then
    /// purges the original unless another OID holds the same content.
    pub fn redact(&self, stmt: Statement) -> Result<RedactOutcome> {
        if stmt.kind != kinds::REDACTED {
            return Err(LedgerError::Invalid {
                what: "kind".into(),
                violations: vec![format!(
                    "expected a statement of kind {}, got {}",
                    kinds::REDACTED,
                    stmt.kind
                )],
            });
        }
        let p: Redacted = payloads::redacted(&stmt.payload)?;
        self.precheck(&stmt)?;
        let digest = parse_digest(&p.redacted_sha256)?;
        let receipt = {
            let _registration = registration_guard();
            match self.blobs().size(&digest)? {
                Some(size) if size == p.redacted_size => {}
                Some(size) => {
                    return Err(LedgerError::FailedPrecondition(format!(
                        "blob {} is {size} bytes, the statement says {}",
                        p.redacted_sha256, p.redacted_size
                    )));
                }
                None => {
                    return Err(LedgerError::FailedPrecondition(format!(
                        "no blob with SHA-256 {} in the blob store; upload the redacted content first",
                        p.redacted_sha256
                    )));
                }
            }
            self.begin_removals()?;
            match self.ledger().append(stmt) {
                Ok(r) => r,
                Err(e) => {
                    self.end_removals()?;
                    return Err(e);
                }
            }
        };
        let reconcile = self.reconcile_blobs(DEFAULT_GRACE_MS)?;
        self.end_removals()?;
        let original = parse_digest(&p.original_sha256)?;
        let original_deleted = !self.blobs().contains(&original)?;
        let still_needed_by = {
            let state = self.ledger().state();
            state
                .domain
                .oids
                .oids
                .iter()
                .filter(|(o, r)| {
                    **o != p.oid
                        && current_sha256(r, &state.retention, o)
                            == Some(p.original_sha256.as_str())
                })
                .map(|(o, _)| o.clone())
                .collect()
        };
        Ok(RedactOutcome {
            oid: p.oid,
            receipt,
            original_sha256: p.original_sha256,
            redacted_sha256: p.redacted_sha256,
            redacted_size: p.redacted_size,
            findings: p.findings,
            original_deleted,
            original_still_needed_by: still_needed_by,
            reconcile,
        })
    }

    /// Stores `redacted` as the new content of `oid`, appends the
    /// `retention.redacted` event signed by `key`, and purges the original.
    pub fn redact_content(
        &self,
        oid: &str,
        redacted: &[u8],
        reason: &str,
        findings: Vec<FindingRef>,
        key: &SigningKey,
    ) -> Result<RedactOutcome> {
        let oid = oid.trim().to_ascii_uppercase();
        let original_sha256 = self.current_content_sha256(&oid)?;
        let put = self
            .blobs()
            .put_bytes(redacted, self.options().max_blob_size)?;
        let payload = Redacted {
            oid,
            original_sha256,
            redacted_sha256: put.digest_hex(),
            redacted_size: put.size,
            reason: reason.to_string(),
            findings,
        };
        self.redact(Statement::sign(
            kinds::REDACTED,
            payloads::to_bytes(&payload),
            key,
        ))
    }

    /// SHA-256 (hex) of the content `oid` holds now; `FailedPrecondition`
    /// naming the event when it expired.
    pub fn current_content_sha256(&self, oid: &str) -> Result<String> {
        let view = self.evidence(oid)?;
        let state = self.ledger().state();
        current_sha256(&view.record, &state.retention, &view.oid)
            .map(str::to_string)
            .ok_or_else(|| removed_error(&view))
    }

    /// The content `oid` holds now, read whole (at most `max_size` bytes):
    /// the original while live, the latest redacted version once redacted.
    pub fn current_content(&self, oid: &str, max_size: u64) -> Result<Vec<u8>> {
        let d = self.current_content_sha256(oid)?;
        self.blobs().read_verified(&parse_digest(&d)?, max_size)
    }

    /// A digest-checking reader over the redacted version of a redacted OID
    /// (its original is refused by `evidence_content`, naming the event).
    pub fn redacted_content(&self, oid: &str) -> Result<(EvidenceView, VerifiedReader)> {
        let view = self.evidence(oid)?;
        let Some(removal) = view
            .record
            .removal
            .as_ref()
            .filter(|_| view.record.state == OidState::Redacted)
        else {
            return Err(match view.record.state {
                OidState::Live => LedgerError::FailedPrecondition(format!(
                    "{} was never redacted: read its content with evidence_content",
                    view.oid
                )),
                _ => removed_error(&view),
            });
        };
        let d = removal.redacted_sha256.clone().unwrap_or_default();
        let reader = self
            .blobs()
            .open_verified(&parse_digest(&d)?)
            .map_err(|e| match e {
                LedgerError::NotFound { .. } => LedgerError::NotFound {
                    what: format!("redacted content of {} (blob {d} is missing)", view.oid),
                },
                other => other,
            })?;
        Ok((view, reader))
    }

    /// The exact payload bytes of the `retention.policy_set` event in force
    /// as of `as_of` (None: the built-in default applies). For
    /// `RetentionStatus.policy_json`.
    pub fn retention_policy_json(&self, as_of: AsOf) -> Result<Option<Vec<u8>>> {
        let seq = self.with_state(as_of, |s| s.retention.policy.as_ref().map(|p| p.seq))?;
        seq.map(|q| self.ledger().event(q).map(|e| e.payload))
            .transpose()
    }

    /// The retention summary as of a point in history, at `now_ms` (default:
    /// the ledger clock for the latest state, the point's time for history),
    /// listing at most `limit` entries per list. For the latest state it
    /// includes the content awaiting deletion on disk.
    pub fn retention_status(
        &self,
        as_of: AsOf,
        now_ms: Option<u64>,
        limit: usize,
    ) -> Result<RetentionStatus> {
        let clock = self.ledger_clock_ms();
        let (mut out, candidates) = self.with_state(as_of, |s| {
            let now = now_ms.unwrap_or(match as_of {
                AsOf::Latest => clock,
                AsOf::Time(t) => t,
                AsOf::Seq(_) => s.last_recorded_at_ms,
            });
            let candidates = matches!(as_of, AsOf::Latest).then(|| removable(s).candidates);
            (status::status(s, now, limit), candidates)
        })?;
        if let Some(candidates) = candidates {
            let mut pending = PendingDeletion::default();
            for d in candidates.keys() {
                if let Some(size) = self.blobs().size(&parse_digest(d)?)? {
                    pending.blobs += 1;
                    pending.bytes += size;
                    if pending.digests.len() < limit {
                        pending.digests.push(d.clone());
                    }
                }
            }
            out.pending_deletion = pending;
        }
        Ok(out)
    }
}

fn removed_error(view: &EvidenceView) -> LedgerError {
    let why = view
        .record
        .removal
        .as_ref()
        .map(Removal::describe)
        .unwrap_or_default();
    LedgerError::FailedPrecondition(format!(
        "the content of {} was {}{why}",
        view.oid,
        view.record.state.as_str()
    ))
}

/// Bytes a plan would free: distinct digests no OID outside the plan holds.
fn would_free(state: &LedgerState, expire: &[Planned]) -> u64 {
    let planned: HashSet<&str> = expire.iter().map(|p| p.oid.as_str()).collect();
    let mut needed: HashSet<&str> = HashSet::new();
    for (oid, r) in &state.domain.oids.oids {
        if !planned.contains(oid.as_str())
            && let Some(d) = current_sha256(r, &state.retention, oid)
        {
            needed.insert(d);
        }
    }
    let mut counted: HashSet<&str> = HashSet::new();
    expire
        .iter()
        .filter(|p| !needed.contains(p.sha256.as_str()) && counted.insert(p.sha256.as_str()))
        .map(|p| p.size)
        .sum()
}

fn report_from(
    plan: rules::SweepPlan,
    dry_run: bool,
    sweep_receipt: Option<Receipt>,
    skipped: Vec<SkippedOid>,
    bytes_freed: u64,
    reconcile: Option<ReconcileReport>,
) -> SweepReport {
    // A dry run lists what it would expire; a real sweep what it did.
    let expired = if dry_run {
        plan.expire
            .iter()
            .cloned()
            .map(|planned| ExpiredOid {
                planned,
                receipt: None,
            })
            .collect()
    } else {
        Vec::new()
    };
    SweepReport {
        dry_run,
        now_ms: plan.now_ms,
        now: ms_to_rfc3339(plan.now_ms),
        policy: plan.policy,
        examined: plan.examined,
        kept_pinned: plan.kept_pinned,
        kept_count_limit: plan.kept_count_limit,
        kept_within_class: plan.kept_within_class,
        sweep_receipt,
        expired,
        skipped,
        bytes_freed,
        reconcile,
    }
}

impl PeriodicSweep for Docket {
    fn periodic_sweep(&self) -> Result<SweepReport> {
        // Verdict deadlines are swept on the same timer (domain::deadlines).
        match self.sweep_verdict_deadlines() {
            Ok(r) if !r.failed.is_empty() => tracing::info!(
                "verdict deadlines: {} task(s) recorded FAIL verdict_missing",
                r.failed.len()
            ),
            Ok(_) => {}
            Err(e @ LedgerError::Closed(_)) => return Err(e),
            Err(e) => tracing::warn!("verdict deadline sweep failed: {e}"),
        }
        Docket::periodic_sweep(self)
    }
}

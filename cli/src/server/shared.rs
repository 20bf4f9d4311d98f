//! What every service shares: the open ledger, the durable-length watch that
//! drives live streams, the shutdown signal, the append back-pressure, the
//! write-path metrics, the upload accounting and the fail-stop state.
//!
//! Fail-stop: when the ledger stops after a storage error
//! ([`Ledger::failure`]), every write answers `UNAVAILABLE` ("the ledger
//! stopped after a storage error: …; restart after fixing the cause") and
//! reads keep answering from the committed state (the log core never folds
//! a batch that failed into the readers' state). Reads the store can no
//! longer answer (sled refuses every read after an I/O error) answer that
//! same `UNAVAILABLE`; should the readers' state ever not be the committed
//! one, projection reads are refused too rather than answered from it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use docket_domain::domain::Docket;
use docket_domain::domain::service::{EvidenceReceipt, SubmitOutcome};
use docket_domain::{Ledger, LedgerError, Receipt, Statement};
use docket_proto::v1 as pb;
use tokio::sync::{Semaphore, watch};
use tonic::Status;

use super::coalesce::Coalescer;
use super::uploads::Uploads;
use super::{convert, status};

/// Trailing window for rates and percentiles.
pub const METRICS_WINDOW: Duration = Duration::from_secs(10);
/// How long an append waits for a free slot before `RESOURCE_EXHAUSTED`.
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);
/// Most latency samples kept (older ones are dropped first).
const MAX_SAMPLES: usize = 200_000;
/// How long a write that saw the ledger close waits for the reason of a
/// fail-stop to be published (a batch may be refused as the failure is
/// being recorded).
const FAILURE_WAIT: Duration = Duration::from_secs(2);

/// Write-path metrics over a trailing window plus totals since start.
#[derive(Debug)]
pub struct ServerMetrics {
    latencies: Mutex<VecDeque<(Instant, u32)>>,
    commits: Mutex<VecDeque<(Instant, u64)>>,
    last_len: AtomicU64,
    /// The ledger's length when the server started: events appended since
    /// are the durable length minus this (read from the ledger, which
    /// publishes its length before any caller is answered; the commit
    /// listener runs after the answers).
    pub start_len: u64,
    pub duplicates: AtomicU64,
    pub rejected: AtomicU64,
}

/// A point-in-time view of [`ServerMetrics`].
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsSnapshot {
    pub append_rate_per_sec: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub mean_batch_size: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ServerMetrics {
    fn new(len: u64) -> Self {
        Self {
            latencies: Mutex::new(VecDeque::new()),
            commits: Mutex::new(VecDeque::new()),
            last_len: AtomicU64::new(len),
            start_len: len,
            duplicates: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    /// Called (on the committer thread) after each commit.
    fn on_commit(&self, len: u64) {
        let before = self.last_len.swap(len, Ordering::AcqRel);
        let events = len.saturating_sub(before);
        let now = Instant::now();
        let mut c = lock(&self.commits);
        c.push_back((now, events));
        while c
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > METRICS_WINDOW)
        {
            c.pop_front();
        }
    }

    /// Records one acknowledged append's latency.
    pub fn record_latency(&self, started: Instant) {
        let now = Instant::now();
        let us = u32::try_from(now.duration_since(started).as_micros()).unwrap_or(u32::MAX);
        let mut l = lock(&self.latencies);
        l.push_back((now, us));
        while l.len() > MAX_SAMPLES
            || l.front()
                .is_some_and(|(t, _)| now.duration_since(*t) > METRICS_WINDOW)
        {
            l.pop_front();
        }
    }

    /// Rates and percentiles over the trailing window.
    pub fn snapshot(&self, uptime: Duration) -> MetricsSnapshot {
        let now = Instant::now();
        let mut lat: Vec<u32> = lock(&self.latencies)
            .iter()
            .filter(|(t, _)| now.duration_since(*t) <= METRICS_WINDOW)
            .map(|(_, us)| *us)
            .collect();
        lat.sort_unstable();
        let (events, commits) = lock(&self.commits)
            .iter()
            .filter(|(t, _)| now.duration_since(*t) <= METRICS_WINDOW)
            .fold((0u64, 0u64), |(e, c), (_, n)| (e + n, c + 1));
        let span = uptime.min(METRICS_WINDOW).as_secs_f64().max(1e-3);
        #[allow(clippy::cast_precision_loss)] // reason: counts far below 2^52
        MetricsSnapshot {
            append_rate_per_sec: events as f64 / span,
            p50_us: percentile(&lat, 0.50),
            p99_us: percentile(&lat, 0.99),
            p999_us: percentile(&lat, 0.999),
            mean_batch_size: if commits == 0 {
                0.0
            } else {
                events as f64 / commits as f64
            },
        }
    }
}

/// The `p`-quantile (nearest rank) of sorted samples; 0 when empty.
#[must_use]
pub fn percentile(sorted: &[u32], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "an index into a slice, clamped below"
    )]
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    u64::from(sorted[rank - 1])
}

/// State shared by every service of one running server.
#[derive(Debug)]
pub struct Shared {
    /// The domain service (ledger + blob store + auto-verify).
    pub docket: Docket,
    /// `docket.ledger()`, for the raw log.
    pub ledger: Ledger,
    /// Durable length of the log, updated after every commit.
    pub len: watch::Receiver<u64>,
    /// Becomes `true` when the server starts shutting down.
    pub shutdown: watch::Receiver<bool>,
    /// Bounds appends in flight (back-pressure: callers wait for a slot).
    pub inflight: Arc<Semaphore>,
    pub max_inflight: usize,
    pub metrics: Arc<ServerMetrics>,
    pub started: Instant,
    /// When set, read RPCs need `authorization: Bearer <token>`.
    pub read_token: Option<String>,
    /// The front door of plain appends (group-commit coalescing).
    pub coalescer: Coalescer,
    /// Upload quotas and the disk reserve.
    pub uploads: Arc<Uploads>,
    /// Becomes `Some(reason)` (free of server paths) when the ledger fails
    /// stop after a storage error.
    pub failure: watch::Receiver<Option<String>>,
}

impl Shared {
    /// Wires the shared state to `ledger`: registers the commit listener
    /// that feeds the length watch and the metrics.
    pub fn new(
        docket: Docket,
        shutdown: watch::Receiver<bool>,
        max_inflight: usize,
        read_token: Option<String>,
        uploads: Arc<Uploads>,
    ) -> Arc<Self> {
        let ledger = docket.ledger().clone();
        let len0 = ledger.len();
        let (len_tx, len_rx) = watch::channel(len0);
        let metrics = Arc::new(ServerMetrics::new(len0));
        let m = Arc::clone(&metrics);
        // The listeners must not hold the ledger (that would be a cycle).
        ledger.on_commit(move |len| {
            m.on_commit(len);
            len_tx.send_replace(len);
        });
        let dir = ledger.dir().to_path_buf();
        let reason = move |f: &str| status::failure_reason(f, &dir);
        let (failure_tx, failure_rx) = watch::channel(ledger.failure().as_deref().map(&reason));
        ledger.on_failure(move |f| {
            failure_tx.send_replace(Some(reason(f)));
        });
        let coalescer = Coalescer::start(ledger.clone(), max_inflight);
        Arc::new(Self {
            uploads,
            failure: failure_rx,
            coalescer,
            docket,
            ledger,
            len: len_rx,
            shutdown,
            inflight: Arc::new(Semaphore::new(max_inflight)),
            max_inflight,
            metrics,
            started: Instant::now(),
            read_token,
        })
    }

    /// Appends in flight right now (waiting for a durable acknowledgement).
    pub fn inflight_now(&self) -> u64 {
        (self.max_inflight - self.inflight.available_permits()) as u64
    }

    /// Why the ledger failed stop (free of server paths), if it did.
    pub fn failure_reason(&self) -> Option<String> {
        self.ledger
            .failure()
            .map(|f| status::failure_reason(&f, self.ledger.dir()))
    }

    /// The status every write gets once the ledger failed stop.
    pub fn stopped(&self) -> Option<Status> {
        self.failure_reason().map(|r| status::stopped(&r))
    }

    /// Refuses a write once the ledger failed stop (`UNAVAILABLE`).
    pub fn writable(&self) -> Result<(), Status> {
        match self.stopped() {
            Some(s) => {
                self.metrics.rejected.fetch_add(1, Ordering::Relaxed);
                Err(s)
            }
            None => Ok(()),
        }
    }

    /// Refuses reads of the projections when the ledger failed stop and
    /// the readers' state is not the committed one (it folds exactly the
    /// durable events; this guards that promise rather than trusting it).
    fn readable(ledger: &Ledger) -> Result<(), LedgerError> {
        if ledger.failure().is_some() && ledger.state().applied != ledger.len() {
            return Err(LedgerError::Closed(
                "its committed state is not available, so reads are refused too".into(),
            ));
        }
        Ok(())
    }

    /// The status of a ledger error: once the ledger failed stop, storage
    /// errors and `Closed` answer with the fail-stop status.
    pub fn status_of(&self, e: &LedgerError) -> Status {
        if matches!(
            e,
            LedgerError::Closed(_) | LedgerError::Io { .. } | LedgerError::Store { .. }
        ) && let Some(reason) = self.failure_reason()
        {
            if let LedgerError::Io { .. } | LedgerError::Store { .. } = e {
                tracing::warn!(error = %e, "storage error after the fail-stop");
            }
            return match e {
                LedgerError::Closed(why) if why.starts_with("its committed state is not") => {
                    status::stopped(&format!("{reason}; {why}"))
                }
                _ => status::stopped(&reason),
            };
        }
        status::to_status(e)
    }

    /// The status of a write's error. A `Closed` error that arrives while
    /// the ledger is failing stop waits briefly for the reason, so the
    /// callers of the batch that failed hear why.
    pub async fn write_status(&self, e: &LedgerError) -> Status {
        // A follower's refusal (PostgreSQL store) names the sequencer now.
        if matches!(e, LedgerError::Closed(_))
            && !*self.shutdown.borrow()
            && !self.ledger.is_follower()
        {
            let mut rx = self.failure.clone();
            let _ = tokio::time::timeout(FAILURE_WAIT, rx.wait_for(Option::is_some)).await;
        }
        self.status_of(e)
    }

    /// Checks the read token, when one is configured.
    pub fn check_read<T>(&self, req: &tonic::Request<T>) -> Result<(), Status> {
        let Some(token) = &self.read_token else {
            return Ok(());
        };
        let presented = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if presented.is_some_and(|p| constant_time_eq(p.as_bytes(), token.as_bytes())) {
            Ok(())
        } else {
            Err(status::with_exit_code(
                Status::unauthenticated(
                    "reads need `authorization: Bearer <token>` on this server",
                ),
                crate::exit::HARD_FAIL,
            ))
        }
    }

    /// Runs a blocking ledger call on the blocking pool.
    pub async fn blocking<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Ledger) -> Result<T, LedgerError> + Send + 'static,
    {
        let ledger = self.ledger.clone();
        tokio::task::spawn_blocking(move || f(&ledger))
            .await
            .map_err(|e| status::join_error(&e))?
            .map_err(|e| self.status_of(&e))
    }

    /// A slot for one append in flight. Callers wait while `max_inflight`
    /// appends are waiting for group commit (back-pressure); after
    /// [`QUEUE_WAIT`] the call fails with `RESOURCE_EXHAUSTED` (retry with
    /// back-off) rather than queueing without bound.
    pub async fn permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit, Status> {
        self.writable()?;
        match tokio::time::timeout(QUEUE_WAIT, Arc::clone(&self.inflight).acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(_)) => Err(status::unavailable("the server is shutting down")),
            Err(_) => {
                self.metrics.rejected.fetch_add(1, Ordering::Relaxed);
                Err(status::with_exit_code(
                    Status::resource_exhausted(format!(
                        "resource exhausted: {} appends are already waiting for group commit; retry with back-off",
                        self.max_inflight
                    )),
                    crate::exit::INVALID,
                ))
            }
        }
    }

    /// Runs a blocking domain read on the blocking pool.
    pub async fn read<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&Docket) -> Result<T, LedgerError> + Send + 'static,
    {
        let docket = self.docket.clone();
        tokio::task::spawn_blocking(move || {
            Self::readable(docket.ledger())?;
            f(&docket)
        })
        .await
        .map_err(|e| status::join_error(&e))?
        .map_err(|e| self.status_of(&e))
    }

    /// Runs a write (one or more appends, acknowledged once durable) on the
    /// blocking pool under back-pressure, and records its metrics.
    pub async fn write<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Acknowledged + Send + 'static,
        F: FnOnce(&Docket) -> Result<T, LedgerError> + Send + 'static,
    {
        let started = Instant::now();
        let permit = self.permit().await?;
        let docket = self.docket.clone();
        let result = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f(&docket)
        })
        .await
        .map_err(|e| status::join_error(&e))?;
        self.account(
            result.as_ref().map(Acknowledged::receipt).map_err(|_| ()),
            started,
        );
        match result {
            Ok(v) => Ok(v),
            Err(e) => Err(self.write_status(&e).await),
        }
    }

    /// Appends one statement once it is durable: the [`DOMAIN_ROUTED`] kinds
    /// through the domain service, every other kind through the coalescer.
    pub async fn append(&self, st: Statement) -> Result<Receipt, Status> {
        if DOMAIN_ROUTED.contains(&st.kind.as_str()) {
            return self.write(move |d| docket_append(d, st)).await;
        }
        let started = Instant::now();
        let permit = self.permit().await?;
        let result = self.coalescer.append(st).await;
        drop(permit);
        self.account(result.as_ref().map_err(|_| ()), started);
        match result {
            Ok(r) => Ok(r),
            Err(e) => Err(self.write_status(&e).await),
        }
    }

    /// Appends a wire statement whose kind must be one of `kinds` (any kind
    /// when empty) and returns the wire receipt.
    pub async fn append_proto(
        &self,
        st: &pb::SignedStatement,
        kinds: &[&str],
    ) -> Result<pb::AppendReceipt, Status> {
        let st = self.checked(st, kinds)?;
        let kind = st.kind.clone();
        let r = self.append(st).await?;
        Ok(convert::receipt(&r, &kind))
    }

    /// Converts a wire statement, counting a rejection.
    pub fn checked(&self, st: &pb::SignedStatement, kinds: &[&str]) -> Result<Statement, Status> {
        convert::statement(st, kinds).inspect_err(|_| {
            self.metrics.rejected.fetch_add(1, Ordering::Relaxed);
        })
    }

    /// Counts one append outcome.
    pub fn account(&self, outcome: Result<&Receipt, ()>, started: Instant) {
        match outcome {
            Ok(r) => {
                if r.duplicate {
                    self.metrics.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                self.metrics.record_latency(started);
            }
            Err(()) => {
                self.metrics.rejected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Kinds whose append does more than the ledger's admission (a blob check,
/// auto-verify, a purge): they run through the domain service on the
/// blocking pool; every other kind is coalesced into group commits.
pub const DOMAIN_ROUTED: &[&str] = &[
    docket_domain::domain::kinds::EVIDENCE_REGISTERED,
    docket_domain::domain::kinds::SUBMISSION_RECEIVED,
    docket_domain::domain::kinds::VERDICT_IMPORTED,
    docket_domain::retention::kinds::REDACTED,
];

/// Appends one statement through the domain service, routing the kinds
/// whose append needs the disk: evidence registrations and submissions
/// (`Docket::append`), redactions (`Docket::redact`: the redacted content
/// must be stored; the original is purged).
pub fn docket_append(d: &Docket, st: Statement) -> Result<Receipt, LedgerError> {
    if st.kind == docket_domain::retention::kinds::REDACTED {
        return d.redact(st).map(|o| o.receipt);
    }
    d.append(st)
}

/// A write's outcome that carries the receipt of its main append.
pub trait Acknowledged {
    fn receipt(&self) -> &Receipt;
}

impl Acknowledged for Receipt {
    fn receipt(&self) -> &Receipt {
        self
    }
}

impl Acknowledged for EvidenceReceipt {
    fn receipt(&self) -> &Receipt {
        &self.receipt
    }
}

impl Acknowledged for SubmitOutcome {
    fn receipt(&self) -> &Receipt {
        &self.receipt
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=1000).collect();
        assert_eq!(percentile(&v, 0.5), 500);
        assert_eq!(percentile(&v, 0.99), 990);
        assert_eq!(percentile(&v, 0.999), 999);
        assert_eq!(percentile(&[], 0.5), 0);
        assert_eq!(percentile(&[7], 0.999), 7);
    }
}

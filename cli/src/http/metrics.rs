//! `GET /metrics`: the ledger and the process in the Prometheus text format
//! (version 0.0.4), built with `prometheus-client`.
//!
//! Where each figure comes from (the log core is not changed for this):
//!
//! * `docket_appends_total{kind, outcome}`: `outcome="appended"` counts the
//!   durable events of each kind since the ledger opened. A commit listener
//!   (`Ledger::on_commit`, cheap: it only wakes a task) signals new events;
//!   the task, and every scrape, reads the new events' kinds from the store.
//!   `outcome="rejected"` is the ledger's own count of refused statements
//!   (`Metrics::rejected`); the ledger does not report their kinds, so they
//!   carry `kind="unknown"`. Duplicates (idempotent replays) append nothing
//!   and are not counted.
//! * `docket_commit_batch_duration_seconds`: the time a group commit takes,
//!   from the committer taking the batch to its durable publication — the
//!   store write, its fsyncs and the anchor's fdatasync included. The ledger
//!   exposes only the total and the number of batches
//!   (`Metrics::commit_micros_total`, `Metrics::batches`), so each batch
//!   between two samples (a sample follows every commit, and every scrape)
//!   is observed at the mean of that interval: exact while samples keep up,
//!   an average under load. It is the upper bound of the fsync latency and
//!   the lower bound of an append's latency (which adds queueing and
//!   signature checks; `Admin.GetStatus` reports those percentiles).
//! * `docket_commit_batch_size`: events made durable per commit. The sum is
//!   exact; the count is exact unless a scrape lands between two commits
//!   whose listeners have not run yet (the ledger answers its callers
//!   first), when those two count as one batch.
//! * Gauges read at scrape time: `docket_tree_size`,
//!   `docket_verify_queue_depth` (requests waiting for the verify stage,
//!   `Metrics::queued`), `docket_failed_stop` (1 once the ledger failed stop),
//!   `docket_retention_sweeps` and `docket_retention_expired_evidence`
//!   (recorded sweeps and the OIDs they expired, from the retention state),
//!   and the counter `docket_commit_batches_total`.
//! * `process_*`: CPU seconds, resident and virtual memory, threads, open and
//!   maximum file descriptors, start time, read from `/proc/self`
//!   ([`super::procfs`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use docket_domain::Ledger;
use docket_domain::event::Event;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric as _};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::procfs;

/// The `Content-Type` of the answer.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Events read per store scan when counting kinds.
const KIND_CHUNK: u64 = 1024;

/// Most observations one sample adds to the duration histogram (bounds the
/// work of a sample after a long pause; the sum stays exact regardless).
const MAX_OBSERVATIONS_PER_SAMPLE: u64 = 100_000;

/// Labels of `docket_appends_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AppendLabels {
    kind: String,
    outcome: String,
}

/// What the commit listener touches: no ledger handle (a listener holding
/// one would keep the log open forever).
#[derive(Debug)]
struct CommitSignal {
    last_len: AtomicU64,
    batch_sizes: Histogram,
    wake: tokio::sync::Notify,
}

impl CommitSignal {
    fn on_commit(&self, len: u64) {
        self.observe_up_to(len);
        self.wake.notify_one();
    }

    /// Observes the events from the last length seen up to `len` as one
    /// batch. Called by the listener and by every scrape: the ledger answers
    /// its callers before it runs its commit listeners, so a scrape that
    /// follows an acknowledged append may come first (it then counts the
    /// new events, and the late listener finds nothing new).
    fn observe_up_to(&self, len: u64) {
        let before = self.last_len.fetch_max(len, Ordering::AcqRel);
        if len > before {
            self.batch_sizes.observe((len - before) as f64);
        }
    }
}

/// How far the counters have read.
#[derive(Debug, Default)]
struct Progress {
    /// Events whose kind was counted: `[opened_len, kinds_to)`.
    kinds_to: u64,
    batches: u64,
    commit_micros: u64,
    rejected: u64,
}

/// The registry and the state behind it.
#[derive(Debug)]
pub struct HttpMetrics {
    registry: Registry,
    ledger: Ledger,
    signal: Arc<CommitSignal>,
    appends: Family<AppendLabels, Counter>,
    commit_duration: Histogram,
    progress: Mutex<Progress>,
}

impl HttpMetrics {
    /// Registers the metrics and the commit listener on `ledger`.
    pub fn new(ledger: &Ledger) -> Arc<Self> {
        let len = ledger.len();
        let opened_len = len.saturating_sub(ledger.metrics().appended.load(Ordering::Relaxed));
        let signal = Arc::new(CommitSignal {
            last_len: AtomicU64::new(len),
            batch_sizes: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            wake: tokio::sync::Notify::new(),
        });
        let appends = Family::<AppendLabels, Counter>::default();
        // Always exported, even before the first refusal.
        drop(appends.get_or_create(&AppendLabels {
            kind: "unknown".into(),
            outcome: "rejected".into(),
        }));
        let commit_duration = Histogram::new(exponential_buckets(0.0005, 2.0, 14));
        let mut registry = Registry::default();
        registry.register(
            "docket_appends",
            "Statements by kind and outcome since the ledger opened (appended: durable \
             events of the kind; rejected: refused statements, kind unknown)",
            appends.clone(),
        );
        registry.register(
            "docket_commit_batch_duration_seconds",
            "Group commit time per batch, committer start to durable publication (store \
             write, fsyncs and anchor included); batches between two samples get the \
             interval's mean",
            commit_duration.clone(),
        );
        registry.register(
            "docket_commit_batch_size",
            "Events made durable per group commit",
            signal.batch_sizes.clone(),
        );
        registry.register_collector(Box::new(ScrapeCollector {
            ledger: ledger.clone(),
        }));
        let listener = Arc::clone(&signal);
        ledger.on_commit(move |len| listener.on_commit(len));
        Arc::new(Self {
            registry,
            ledger: ledger.clone(),
            signal,
            appends,
            commit_duration,
            progress: Mutex::new(Progress {
                kinds_to: opened_len,
                ..Progress::default()
            }),
        })
    }

    /// Resolves at the next commit (or at once if one happened since the
    /// last call).
    pub async fn committed(&self) {
        self.signal.wake.notified().await;
    }

    /// Brings the counters up to date: the kinds of new durable events, the
    /// rejections and the commit durations since the last sample. Blocking
    /// (reads the store).
    pub fn catch_up(&self) {
        let mut p = self
            .progress
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let m = self.ledger.metrics();
        let batches = m.batches.load(Ordering::Relaxed);
        let micros = m.commit_micros_total.load(Ordering::Relaxed);
        if batches > p.batches {
            let n = batches - p.batches;
            let mean = micros.saturating_sub(p.commit_micros) as f64 / n as f64 / 1e6;
            for _ in 0..n.min(MAX_OBSERVATIONS_PER_SAMPLE) {
                self.commit_duration.observe(mean);
            }
            p.batches = batches;
            p.commit_micros = micros;
        }
        let rejected = m.rejected.load(Ordering::Relaxed);
        if rejected > p.rejected {
            self.appends
                .get_or_create(&AppendLabels {
                    kind: "unknown".into(),
                    outcome: "rejected".into(),
                })
                .inc_by(rejected - p.rejected);
            p.rejected = rejected;
        }
        let len = self.ledger.len();
        self.signal.observe_up_to(len);
        while p.kinds_to < len {
            let to = (p.kinds_to + KIND_CHUNK).min(len);
            let events = match self.ledger.store().event_range(p.kinds_to, to) {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!("metrics: reading events {}..{to}: {e}", p.kinds_to);
                    return;
                }
            };
            if events.is_empty() {
                return;
            }
            for (seq, bytes) in events {
                if seq != p.kinds_to {
                    return;
                }
                let kind = match Event::decode(&bytes) {
                    Ok(e) => e.kind,
                    Err(_) => "undecodable".to_string(),
                };
                self.appends
                    .get_or_create(&AppendLabels {
                        kind,
                        outcome: "appended".into(),
                    })
                    .inc();
                p.kinds_to = seq + 1;
            }
        }
    }

    /// The Prometheus text of every metric, up to date. Blocking.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        self.catch_up();
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
        Ok(out)
    }
}

/// Figures read at scrape time.
#[derive(Debug)]
struct ScrapeCollector {
    ledger: Ledger,
}

fn gauge<T: prometheus_client::encoding::EncodeGaugeValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: T,
) -> Result<(), std::fmt::Error>
where
    ConstGauge<T>: prometheus_client::encoding::EncodeMetric,
{
    let g = ConstGauge::new(value);
    g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)
}

fn counter<T: prometheus_client::encoding::EncodeCounterValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: T,
) -> Result<(), std::fmt::Error>
where
    ConstCounter<T>: prometheus_client::encoding::EncodeMetric,
{
    let c = ConstCounter::new(value);
    c.encode(encoder.encode_descriptor(name, help, None, c.metric_type())?)
}

impl Collector for ScrapeCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let m = self.ledger.metrics();
        gauge(
            &mut e,
            "docket_tree_size",
            "Durable events in the log (the signed checkpoint's tree size)",
            self.ledger.len(),
        )?;
        gauge(
            &mut e,
            "docket_verify_queue_depth",
            "Append requests waiting for the signature-verification stage",
            m.queued.load(Ordering::Relaxed),
        )?;
        gauge(
            &mut e,
            "docket_failed_stop",
            "1 when the ledger failed stop after a storage error (writes refused), else 0",
            u64::from(self.ledger.failure().is_some()),
        )?;
        counter(
            &mut e,
            "docket_commit_batches",
            "Group commits since the ledger opened",
            m.batches.load(Ordering::Relaxed),
        )?;
        let (sweeps, expired) = {
            let state = self.ledger.state();
            let sweeps = &state.retention.sweeps;
            (
                sweeps.len() as u64,
                sweeps.values().map(|s| s.expired).sum::<u64>(),
            )
        };
        gauge(
            &mut e,
            "docket_retention_sweeps",
            "Retention sweeps recorded in the log",
            sweeps,
        )?;
        gauge(
            &mut e,
            "docket_retention_expired_evidence",
            "Evidence OIDs whose content recorded sweeps expired",
            expired,
        )?;
        let p = procfs::read();
        if let Some(v) = p.cpu_seconds {
            counter(
                &mut e,
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                v,
            )?;
        }
        if let Some(v) = p.resident_bytes {
            gauge(
                &mut e,
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                v,
            )?;
        }
        if let Some(v) = p.virtual_bytes {
            gauge(
                &mut e,
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                v,
            )?;
        }
        if let Some(v) = p.threads {
            gauge(&mut e, "process_threads", "Number of OS threads", v)?;
        }
        if let Some(v) = p.open_fds {
            gauge(
                &mut e,
                "process_open_fds",
                "Number of open file descriptors",
                v,
            )?;
        }
        if let Some(v) = p.max_fds {
            gauge(
                &mut e,
                "process_max_fds",
                "Maximum number of open file descriptors",
                v,
            )?;
        }
        if let Some(v) = p.start_time_seconds {
            gauge(
                &mut e,
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                v,
            )?;
        }
        Ok(())
    }
}

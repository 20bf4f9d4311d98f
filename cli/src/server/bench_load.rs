//! `docket bench-load`: a bounded load generator against a running server.
//!
//! It registers a fresh writer key (signed by `--key`, an admin key), then
//! runs `--clients` connections appending `x-bench-load` statements for
//! `--seconds` (unary calls one at a time per client, or with `--stream`
//! an `AppendStream` per client with `--window` statements in flight), and
//! prints appends/s and p50/p99/p999 latency. The loop is bounded in time
//! and, with `--max-appends`, in count.
//!
//! The statements are signed before the clock starts (`--presign`, on every
//! core), as clients on other machines would sign them: what is timed is the
//! server, not the load generator's signing on the server's cores. A run
//! that outlasts its pre-signed statements signs the rest as it goes.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use docket_domain::Statement;
use docket_proto::v1 as pb;
use docket_proto::v1::keys_client::KeysClient;
use docket_proto::v1::ledger_client::LedgerClient;
use ed25519_dalek::SigningKey;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::raw_h2::RawAppender;
use super::{convert, shared::percentile};
use crate::Ctx;
use crate::client::{channel, status_error};
use crate::exit::{self, CliError};

/// Longest run accepted (the loop is always bounded).
pub const MAX_SECONDS: f64 = 3600.0;

/// `docket bench-load` flags.
#[derive(Debug, Clone, Args)]
pub struct BenchLoadArgs {
    /// Admin key file, used once to register the load generator's writer key.
    #[arg(long)]
    pub key: PathBuf,
    /// Concurrent clients (one connection each).
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// How long to run.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Use `Ledger.AppendStream` instead of unary `Ledger.Append`.
    #[arg(long)]
    pub stream: bool,
    /// Statements in flight per client with `--stream`.
    #[arg(long, default_value_t = 64)]
    pub window: usize,
    /// Send the unary appends as hand-built gRPC requests on the `h2` crate,
    /// their bodies encoded before the clock starts (a leaner load
    /// generator than the tonic client, so that less of a machine it shares
    /// with the server goes to the client; plain-text http:// only).
    #[arg(long, conflicts_with = "stream")]
    pub raw_h2: bool,
    /// Stop after this many appends in total.
    #[arg(long)]
    pub max_appends: Option<u64>,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 64)]
    pub payload_bytes: usize,
    /// Statements signed before the clock starts, in total (default: 40,000
    /// per second of `--seconds`, at most 400,000 and at most
    /// `--max-appends`); 0 signs each one as it is sent.
    #[arg(long)]
    pub presign: Option<u64>,
}

/// Pre-signed statements per second of run when `--presign` is not given.
const PRESIGN_PER_SECOND: f64 = 40_000.0;
/// At most this many by default (about 120 MB of statements in memory).
const PRESIGN_DEFAULT_MAX: u64 = 400_000;
/// At most this many when asked for (about 3 GB in memory).
pub const MAX_PRESIGN: u64 = 10_000_000;

/// How the load is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Unary,
    /// Unary, from the lean client (`--raw-h2`, [`super::raw_h2`]).
    UnaryH2,
    Stream {
        window: usize,
    },
}

/// What a load run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    pub mode: Mode,
    pub clients: usize,
    pub seconds: f64,
    pub appends: u64,
    pub errors: u64,
    pub appends_per_sec: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

impl LoadReport {
    /// One human line.
    pub fn human(&self) -> String {
        format!(
            "{} clients, {:?}: {} appends in {:.1}s = {:.0} appends/s; latency p50 {:.2} ms, p99 {:.2} ms, p999 {:.2} ms, max {:.2} ms; {} errors",
            self.clients,
            self.mode,
            self.appends,
            self.seconds,
            self.appends_per_sec,
            us_to_ms(self.p50_us),
            us_to_ms(self.p99_us),
            us_to_ms(self.p999_us),
            us_to_ms(self.max_us),
            self.errors
        )
    }
}

#[allow(clippy::cast_precision_loss)] // reason: display only
fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Registers a fresh `submitter` key for the load (signed by `admin`).
pub async fn register_writer(url: &str, admin: &SigningKey, label: &str) -> Result<SigningKey> {
    let writer = docket_domain::keys::generate()?;
    let payload = serde_json::to_vec(&serde_json::json!({
        "public_key": hex::encode(writer.verifying_key().to_bytes()),
        "roles": ["submitter"],
        "label": label,
    }))?;
    let st = Statement::sign("key.registered", payload, admin);
    let mut keys = KeysClient::new(channel(url).await?);
    keys.register_key(convert::statement_to_proto(&st))
        .await
        .map_err(|s| status_error(&s))?;
    Ok(writer)
}

fn statement(key: &SigningKey, client: usize, n: u64, payload_bytes: usize) -> pb::SignedStatement {
    let mut payload = format!("{{\"c\":{client},\"n\":{n},\"pad\":\"").into_bytes();
    while payload.len() + 2 < payload_bytes {
        payload.push(b'x');
    }
    payload.extend_from_slice(b"\"}");
    convert::statement_to_proto(&Statement::sign("x-bench-load", payload, key))
}

/// Each client's statements, `total` in all, signed on every core.
fn presign(
    key: &SigningKey,
    clients: usize,
    total: u64,
    payload_bytes: usize,
) -> Vec<Vec<pb::SignedStatement>> {
    let per_client = total.div_ceil(clients.max(1) as u64);
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let clients_per_thread = clients.div_ceil(threads).max(1);
    let mut out: Vec<Vec<pb::SignedStatement>> = vec![Vec::new(); clients];
    std::thread::scope(|s| {
        for (t, chunk) in out.chunks_mut(clients_per_thread).enumerate() {
            let first = t * clients_per_thread;
            s.spawn(move || {
                for (i, list) in chunk.iter_mut().enumerate() {
                    *list = (0..per_client)
                        .map(|n| statement(key, first + i, n, payload_bytes))
                        .collect();
                }
            });
        }
    });
    out
}

/// Runs the load and measures it (on any runtime: `run` gives one client a
/// one-thread runtime, more clients a multi-threaded one).
/// `presigned` statements (in total) are signed before the clock starts.
#[allow(
    clippy::too_many_arguments,
    reason = "the flags of one command, passed through"
)]
pub async fn load(
    url: &str,
    writer: &SigningKey,
    clients: usize,
    duration: Duration,
    mode: Mode,
    max_appends: Option<u64>,
    payload_bytes: usize,
    presigned: u64,
) -> Result<LoadReport> {
    let presigned = {
        let key = writer.clone();
        tokio::task::spawn_blocking(move || presign(&key, clients, presigned, payload_bytes))
            .await?
    };
    let count = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let budget = max_appends.unwrap_or(u64::MAX);
    if mode == Mode::UnaryH2 {
        let mut appenders = Vec::with_capacity(clients);
        for statements in presigned {
            let bodies: Vec<_> = statements.iter().map(RawAppender::encode).collect();
            appenders.push((RawAppender::connect(url).await?, bodies));
        }
        let started = Instant::now();
        let deadline = started + duration;
        let mut tasks = Vec::with_capacity(clients);
        for (client_id, (mut appender, bodies)) in appenders.into_iter().enumerate() {
            let key = writer.clone();
            let count = Arc::clone(&count);
            let errors = Arc::clone(&errors);
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut ready = bodies.into_iter();
                let mut n = 0u64;
                while Instant::now() < deadline && count.fetch_add(1, Ordering::Relaxed) < budget {
                    let body = ready.next().unwrap_or_else(|| {
                        RawAppender::encode(&statement(&key, client_id, n, payload_bytes))
                    });
                    n += 1;
                    let t = Instant::now();
                    match appender.append(body).await {
                        Ok(_) => lat.push(elapsed_us(t)),
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                lat
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap_or_default());
        }
        return Ok(report(mode, clients, started, all, &errors));
    }
    let mut channels = Vec::with_capacity(clients);
    for _ in 0..clients {
        channels.push(channel(url).await?);
    }
    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::with_capacity(clients);
    // Each run signs with a fresh writer key and numbers its statements
    // per client, so no statement is a duplicate of another.
    for ((i, ch), ready) in channels.into_iter().enumerate().zip(presigned) {
        let key = writer.clone();
        let count = Arc::clone(&count);
        let errors = Arc::clone(&errors);
        let client_id = i;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut client = LedgerClient::new(ch);
            match mode {
                // Handled above, on connections of its own.
                Mode::UnaryH2 => {}
                Mode::Unary => {
                    let mut n = 0u64;
                    let mut ready = ready.into_iter();
                    while Instant::now() < deadline
                        && count.fetch_add(1, Ordering::Relaxed) < budget
                    {
                        let st = ready
                            .next()
                            .unwrap_or_else(|| statement(&key, client_id, n, payload_bytes));
                        n += 1;
                        let t = Instant::now();
                        match client.append(st).await {
                            Ok(_) => lat.push(elapsed_us(t)),
                            Err(_) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                }
                Mode::Stream { window } => {
                    let (tx, rx) = mpsc::channel::<pb::SignedStatement>(window.max(1));
                    let (sent_tx, mut sent_rx) = mpsc::unbounded_channel::<Instant>();
                    let permits = Arc::new(tokio::sync::Semaphore::new(window.max(1)));
                    let p2 = Arc::clone(&permits);
                    let count2 = Arc::clone(&count);
                    let producer = tokio::spawn(async move {
                        let mut n = 0u64;
                        let mut ready = ready.into_iter();
                        while Instant::now() < deadline
                            && count2.fetch_add(1, Ordering::Relaxed) < budget
                        {
                            let Ok(p) = p2.acquire().await else { break };
                            p.forget();
                            let st = ready
                                .next()
                                .unwrap_or_else(|| statement(&key, client_id, n, payload_bytes));
                            n += 1;
                            let _ = sent_tx.send(Instant::now());
                            if tx.send(st).await.is_err() {
                                break;
                            }
                        }
                    });
                    match client.append_stream(ReceiverStream::new(rx)).await {
                        Ok(resp) => {
                            let mut s = resp.into_inner();
                            loop {
                                match s.message().await {
                                    Ok(Some(_)) => {
                                        permits.add_permits(1);
                                        if let Some(t) = sent_rx.recv().await {
                                            lat.push(elapsed_us(t));
                                        }
                                    }
                                    Ok(None) => break,
                                    Err(_) => {
                                        errors.fetch_add(1, Ordering::Relaxed);
                                        break;
                                    }
                                }
                            }
                        }
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    permits.close();
                    let _ = producer.await;
                }
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    Ok(report(mode, clients, started, all, &errors))
}

/// The report of a run begun at `started` that measured `all` latencies.
fn report(
    mode: Mode,
    clients: usize,
    started: Instant,
    mut all: Vec<u32>,
    errors: &AtomicU64,
) -> LoadReport {
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let appends = all.len() as u64;
    #[allow(clippy::cast_precision_loss)] // reason: a rate for display
    let rate = appends as f64 / elapsed.max(1e-9);
    LoadReport {
        mode,
        clients,
        seconds: elapsed,
        appends,
        errors: errors.load(Ordering::Relaxed),
        appends_per_sec: rate,
        p50_us: percentile(&all, 0.50),
        p99_us: percentile(&all, 0.99),
        p999_us: percentile(&all, 0.999),
        max_us: all.last().copied().map_or(0, u64::from),
    }
}

fn elapsed_us(t: Instant) -> u32 {
    u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX)
}

/// Statements to sign before the clock starts.
fn presign_count(args: &BenchLoadArgs) -> u64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "seconds is positive and at most MAX_SECONDS"
    )]
    let by_time = (args.seconds * PRESIGN_PER_SECOND).ceil() as u64;
    args.presign
        .unwrap_or(by_time.min(PRESIGN_DEFAULT_MAX))
        .min(args.max_appends.unwrap_or(u64::MAX))
}

pub fn run(ctx: &Ctx, args: &BenchLoadArgs) -> Result<u8> {
    let Some(url) = ctx.server.clone() else {
        return Err(CliError::new(
            exit::USAGE,
            "bench-load needs --server URL (env DOCKET_SERVER) of a running `docket serve`",
        )
        .into());
    };
    if args.clients == 0 || !(args.seconds > 0.0 && args.seconds <= MAX_SECONDS) {
        return Err(CliError::new(
            exit::USAGE,
            format!("--clients must be at least 1 and --seconds in (0, {MAX_SECONDS}]"),
        )
        .into());
    }
    if args.presign.is_some_and(|n| n > MAX_PRESIGN) {
        return Err(CliError::new(
            exit::USAGE,
            format!("--presign is at most {MAX_PRESIGN} (statements held in memory)"),
        )
        .into());
    }
    let admin = crate::core_cmds::load_key(&args.key)?;
    // One client is one task: a runtime of one thread hands its response
    // from the connection to the caller without a wake-up across threads
    // (as a single-threaded client such as pgbench does).
    let runtime = if args.clients == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
    };
    let report = runtime.block_on(async {
        let writer = register_writer(&url, &admin, "bench-load").await?;
        let mode = if args.stream {
            Mode::Stream {
                window: args.window,
            }
        } else if args.raw_h2 {
            Mode::UnaryH2
        } else {
            Mode::Unary
        };
        load(
            &url,
            &writer,
            args.clients,
            Duration::from_secs_f64(args.seconds),
            mode,
            args.max_appends,
            args.payload_bytes,
            presign_count(args),
        )
        .await
    })?;
    ctx.out.emit(&report, || report.human());
    Ok(if report.errors == 0 {
        exit::OK
    } else {
        exit::UNEXPECTED
    })
}

//! The gRPC server (`docket serve`), `docket demo` and `docket bench-load`.
//!
//! [`spawn`] starts a server on a tokio runtime and returns its bound
//! address and a handle for graceful shutdown; `docket serve` wraps it with
//! configuration, signals and logs. Every `docket.v1` service is served,
//! plus the standard `grpc.health.v1.Health` and server reflection (v1 and
//! v1alpha). The ledger API is blocking; services call it on the blocking
//! pool. Ledger errors become statuses in one place, [`status`]; request
//! bodies tonic cannot decode are classified by [`wire`].
//!
//! When the ledger fails stop after a storage error, health turns
//! `NOT_SERVING` for `""` and every `docket.v1` service, `Admin.GetStatus`
//! names the reason, and writes answer `UNAVAILABLE` (see [`shared`]).

pub mod bench_load;
pub mod coalesce;
pub mod config;
pub mod convert;
pub mod demo;
pub mod domain_svc;
pub mod keys_svc;
pub mod ledger_svc;
pub mod raw_h2;
pub mod shared;
pub mod status;
pub mod uploads;
pub mod wire;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Subcommand;
use docket_domain::Ledger;
use docket_domain::domain::{Docket, DocketOptions};
use docket_domain::ledger::InitOutcome;
use docket_proto::v1::admin_server::AdminServer;
use docket_proto::v1::approvals_server::ApprovalsServer;
use docket_proto::v1::evidence_server::EvidenceServer;
use docket_proto::v1::executions_server::ExecutionsServer;
use docket_proto::v1::export_server::ExportServer;
use docket_proto::v1::keys_server::KeysServer;
use docket_proto::v1::ledger_server::LedgerServer;
use docket_proto::v1::retention_server::RetentionServer;
use docket_proto::v1::submissions_server::SubmissionsServer;
use docket_proto::v1::tasks_server::TasksServer;
use docket_proto::v1::verdicts_server::VerdictsServer;
use tokio::sync::watch;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;

pub use config::{ServeArgs, ServeOptions};

use crate::Ctx;
use crate::exit;
use domain_svc::DomainService;
use keys_svc::{AdminService, KeysService};
use ledger_svc::LedgerService;
use shared::Shared;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // reason: parsed once per process; boxing buys nothing
pub enum ServerCmd {
    /// Run the gRPC server on the ledger in `--data` (initialising an empty
    /// directory). Prints `listening on ADDR`; SIGINT/SIGTERM shut it down
    /// gracefully.
    Serve(ServeArgs),
    /// A newcomer's first five minutes: a server on a temporary ledger, keys,
    /// a task, a passing and a failing submission, verdicts, a proof, an
    /// export and its audit.
    Demo(demo::DemoArgs),
    /// Load generator: N clients appending for S seconds against `--server`;
    /// prints appends/s and latency percentiles.
    BenchLoad(bench_load::BenchLoadArgs),
}

pub fn run(cmd: &ServerCmd, ctx: &Ctx) -> Result<u8> {
    match cmd {
        ServerCmd::Serve(args) => run_serve(ctx, args),
        ServerCmd::Demo(args) => demo::run(ctx, args),
        ServerCmd::BenchLoad(args) => bench_load::run(ctx, args),
    }
}

/// A server running on the current tokio runtime.
#[derive(Debug)]
pub struct RunningServer {
    /// The bound address (the real port when listening on port 0).
    pub addr: SocketAddr,
    /// Set when this start initialised an empty data directory.
    pub init: Option<InitOutcome>,
    /// The TLS settings, when serving TLS.
    pub tls: Option<config::TlsFiles>,
    /// The HTTP read side's bound address (`--http`), when on.
    pub http: Option<SocketAddr>,
    shutdown_tx: watch::Sender<bool>,
    task: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    docket: Docket,
    health: tonic_health::server::HealthReporter,
    grace: std::time::Duration,
    sweeper: Option<docket_domain::retention::Sweeper>,
}

impl RunningServer {
    /// `http://ADDR` (`https://` with TLS), for clients.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The ledger the server writes to.
    pub fn ledger(&self) -> &Ledger {
        self.docket.ledger()
    }

    /// The domain service the server runs on.
    pub fn docket(&self) -> &Docket {
        &self.docket
    }

    /// Graceful shutdown: health turns NOT_SERVING, live streams end with
    /// UNAVAILABLE (clients resume by sequence), no new connection is
    /// accepted, in-flight calls finish (connections still open after the
    /// grace period are cut; appends already handed to the ledger still
    /// complete), then the ledger drains its queue, writes snapshots and
    /// closes.
    pub async fn shutdown(mut self) -> Result<()> {
        self.health
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
        let _ = self.shutdown_tx.send(true);
        let served = match tokio::time::timeout(self.grace, &mut self.task).await {
            Ok(joined) => joined.context("the server task panicked")?,
            Err(_) => {
                tracing::warn!(
                    "connections still open after {:?}; closing them",
                    self.grace
                );
                self.task.abort();
                Ok(())
            }
        };
        let docket = self.docket;
        let sweeper = self.sweeper.take();
        tokio::task::spawn_blocking(move || {
            if let Some(s) = sweeper {
                s.stop();
            }
            docket.close()
        })
        .await
        .context("closing the ledger panicked")??;
        served.context("serving")?;
        Ok(())
    }
}

/// The `docket.v1` services health reports on (besides `""`).
fn service_names() -> [&'static str; 11] {
    use tonic::server::NamedService;
    [
        <LedgerServer<LedgerService> as NamedService>::NAME,
        <KeysServer<KeysService> as NamedService>::NAME,
        <AdminServer<AdminService> as NamedService>::NAME,
        <TasksServer<DomainService> as NamedService>::NAME,
        <EvidenceServer<DomainService> as NamedService>::NAME,
        <ExecutionsServer<DomainService> as NamedService>::NAME,
        <SubmissionsServer<DomainService> as NamedService>::NAME,
        <VerdictsServer<DomainService> as NamedService>::NAME,
        <ApprovalsServer<DomainService> as NamedService>::NAME,
        <RetentionServer<DomainService> as NamedService>::NAME,
        <ExportServer<DomainService> as NamedService>::NAME,
    ]
}

/// Waits for a fail-stop of the ledger (until shutdown): turns health
/// `NOT_SERVING` for `""` and every service. One handle of the ledger is
/// then kept until the process exits: after an I/O error sled can no
/// longer write, and dropping its store waits forever for a flush that
/// cannot complete — the server must still stop on SIGTERM. The operator
/// restarts the process after fixing the cause.
async fn watch_failure(
    mut failure: watch::Receiver<Option<String>>,
    mut stop: watch::Receiver<bool>,
    health: tonic_health::server::HealthReporter,
    ledger: Ledger,
) {
    let failed = tokio::select! {
        r = failure.wait_for(Option::is_some) => r.is_ok(),
        () = ledger_svc::stopped(&mut stop) => false,
    };
    if !failed {
        return;
    }
    std::mem::forget(ledger);
    let reason = failure.borrow().clone().unwrap_or_default();
    tracing::error!(
        "the ledger stopped: {reason}; health is NOT_SERVING, writes are refused \
         (a storage error: restart after fixing the cause; damage: docs/OPERATIONS.md)"
    );
    for name in service_names() {
        health
            .set_service_status(name, tonic_health::ServingStatus::NotServing)
            .await;
    }
    health
        .set_service_status("", tonic_health::ServingStatus::NotServing)
        .await;
}

/// Opens the ledger in `opts.data`, initialising it when the directory has
/// no ledger yet.
fn open_or_init(opts: &ServeOptions) -> Result<(Docket, Option<InitOutcome>)> {
    if let Some(url) = &opts.store {
        return crate::pg_cmds::open_or_init(opts, url);
    }
    let options = DocketOptions {
        auto_verify: opts.auto_verify,
        ..DocketOptions::default()
    };
    let mut init = None;
    if !docket_domain::ledger::exists(&opts.data) {
        // In the layout `--store` names (`ledger.layout`).
        let (ledger, info) = docket_domain::ledger::init_with(
            &opts.data,
            opts.origin.as_deref(),
            opts.ledger.clone(),
        )?;
        ledger.close()?;
        drop(ledger);
        init = Some(info);
    }
    // The store's file lock is released a moment after the previous owner
    // (the initialising ledger, or a server that just stopped in this
    // process) is dropped: retry storage errors briefly (the log core
    // reports a store that does not open, a held lock included, as
    // corruption of `log/`).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        match Docket::open(&opts.data, opts.ledger.clone(), options.clone()) {
            Ok(docket) => return Ok((docket, init)),
            Err(
                docket_domain::LedgerError::Store { .. } | docket_domain::LedgerError::Io { .. },
            ) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(docket_domain::LedgerError::Corrupt { location, detail })
                if location == "log/"
                    && detail.contains("could not acquire lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Starts a server on the current (multi-threaded) tokio runtime.
pub async fn spawn(opts: ServeOptions) -> Result<RunningServer> {
    opts.validate()?;
    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("cannot listen on {}", opts.listen))?;
    let addr = listener.local_addr()?;
    let mut o = opts.clone();
    o.listen = addr; // the bound address: what a PostgreSQL node advertises
    let limits = opts.uploads;
    let (docket, init, uploads) = tokio::task::spawn_blocking(move || {
        let (docket, init) = open_or_init(&o)?;
        let uploads = uploads::Uploads::open(&docket, limits)?;
        anyhow::Ok((docket, init, uploads))
    })
    .await
    .context("opening the ledger panicked")??;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shared = Shared::new(
        docket.clone(),
        shutdown_rx.clone(),
        opts.max_inflight,
        opts.read_token.clone(),
        uploads,
    );

    let (health, health_service) = tonic_health::server::health_reporter();
    for name in service_names() {
        health
            .set_service_status(name, tonic_health::ServingStatus::Serving)
            .await;
    }
    health
        .set_service_status("", tonic_health::ServingStatus::Serving)
        .await;
    tokio::spawn(watch_failure(
        shared.failure.clone(),
        shutdown_rx.clone(),
        health.clone(),
        docket.ledger().clone(),
    ));
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(docket_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(docket_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    let domain = DomainService {
        shared: Arc::clone(&shared),
    };
    let ledger_service = LedgerService {
        shared: Arc::clone(&shared),
    };
    let mut builder = Server::builder();
    if let Some(tls) = &opts.tls {
        builder = builder
            .tls_config(server_tls(tls)?)
            .context("TLS configuration")?;
    }
    let max = wire::MAX_MESSAGE_BYTES;
    let router = builder
        .concurrency_limit_per_connection(opts.concurrency_per_connection)
        .tcp_nodelay(true)
        .trace_fn(|req| tracing::debug_span!("rpc", path = %req.uri().path()))
        .layer(wire::TransportErrorsLayer)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(LedgerServer::new(ledger_service).max_decoding_message_size(max))
        .add_service(
            KeysServer::new(KeysService {
                shared: Arc::clone(&shared),
            })
            .max_decoding_message_size(max),
        )
        .add_service(
            AdminServer::new(AdminService {
                shared: Arc::clone(&shared),
                auto_verify: opts.auto_verify,
            })
            .max_decoding_message_size(max),
        )
        .add_service(TasksServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(EvidenceServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(ExecutionsServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(SubmissionsServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(VerdictsServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(ApprovalsServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(RetentionServer::new(domain.clone()).max_decoding_message_size(max))
        .add_service(ExportServer::new(domain).max_decoding_message_size(max));
    drop(shared);
    // The HTTP read side (`--http`): metrics, tiles, explorer (crate::http).
    let http = match opts.http {
        Some(a) => Some(
            crate::http::spawn(
                a,
                docket.clone(),
                opts.read_token.clone(),
                shutdown_rx.clone(),
            )
            .await?,
        ),
        None => None,
    };
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let mut stop = shutdown_rx;
    let task = tokio::spawn(async move {
        router
            .serve_with_incoming_shutdown(incoming, async move {
                let _ = stop.wait_for(|s| *s).await;
            })
            .await
    });
    let sweeper = match opts.sweep_every {
        Some(every) => Some(docket_domain::retention::Sweeper::spawn(
            docket.clone(),
            every,
        )?),
        None => None,
    };
    tracing::info!(%addr, data = %opts.data.display(), "docket server started");
    Ok(RunningServer {
        addr,
        init,
        tls: opts.tls.clone(),
        http,
        shutdown_tx,
        task,
        docket,
        health,
        grace: opts.shutdown_grace,
        sweeper,
    })
}

/// The rustls server configuration of `tls` (PEM files).
fn server_tls(tls: &config::TlsFiles) -> Result<tonic::transport::ServerTlsConfig> {
    use tonic::transport::{Certificate, Identity, ServerTlsConfig};
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| {
            crate::exit::CliError::new(exit::MISSING, format!("cannot read {}: {e}", p.display()))
        })
    };
    let mut config =
        ServerTlsConfig::new().identity(Identity::from_pem(read(&tls.cert)?, read(&tls.key)?));
    if let Some(ca) = &tls.client_ca {
        config = config.client_ca_root(Certificate::from_pem(read(ca)?));
    }
    Ok(config)
}

/// A server on its own multi-threaded runtime, for synchronous callers
/// (`docket demo`, tests that use the blocking client).
#[derive(Debug)]
pub struct BackgroundServer {
    runtime: Option<tokio::runtime::Runtime>,
    server: Option<RunningServer>,
    pub addr: SocketAddr,
    url: String,
}

impl BackgroundServer {
    /// Starts a server on a fresh runtime.
    pub fn start(opts: ServeOptions) -> Result<Self> {
        let runtime = server_runtime()?;
        let server = runtime.block_on(spawn(opts))?;
        Ok(Self {
            addr: server.addr,
            url: server.url(),
            runtime: Some(runtime),
            server: Some(server),
        })
    }

    /// `http://ADDR` (`https://` with TLS).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// What initialisation created, when it did.
    pub fn init(&self) -> Option<&InitOutcome> {
        self.server.as_ref().and_then(|s| s.init.as_ref())
    }

    /// The ledger the server writes to.
    pub fn ledger(&self) -> Option<&Ledger> {
        self.server.as_ref().map(RunningServer::ledger)
    }

    /// Graceful shutdown (see [`RunningServer::shutdown`]).
    pub fn shutdown(mut self) -> Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> Result<()> {
        let (Some(rt), Some(server)) = (self.runtime.take(), self.server.take()) else {
            return Ok(());
        };
        let r = rt.block_on(server.shutdown());
        rt.shutdown_timeout(std::time::Duration::from_secs(5));
        r
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::warn!("server shutdown: {e:#}");
        }
    }
}

/// The runtime `docket serve` runs on (the grpc bench hosts its server on
/// one built here too).
pub fn server_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("docket-server")
        .max_blocking_threads(2048)
        .build()
        .context("cannot start the tokio runtime")
}

/// Starts watching SIGINT and SIGTERM at once, before the server says it is
/// listening: a supervisor's signal sent straight after that line must stop
/// the server cleanly, not meet the default action (an unclean kill). The
/// returned future ends at the first of them. Call it inside the runtime.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let interrupt = signal(SignalKind::interrupt());
        let terminate = signal(SignalKind::terminate());
        async move {
            match (interrupt, terminate) {
                (Ok(mut int), Ok(mut term)) => {
                    tokio::select! {
                        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
                        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
                    }
                }
                (Ok(mut int), Err(e)) => {
                    tracing::warn!("cannot watch SIGTERM ({e}); only SIGINT stops the server");
                    int.recv().await;
                }
                (Err(e), Ok(mut term)) => {
                    tracing::warn!("cannot watch SIGINT ({e}); only SIGTERM stops the server");
                    term.recv().await;
                    tracing::info!("SIGTERM: shutting down");
                }
                (Err(e), Err(_)) => {
                    tracing::warn!("cannot watch SIGINT nor SIGTERM ({e}); waiting for Ctrl-C");
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

fn run_serve(ctx: &Ctx, args: &ServeArgs) -> Result<u8> {
    if ctx.server.is_some() {
        return Err(crate::exit::CliError::new(
            exit::USAGE,
            "`docket serve` serves the ledger in --data; it does not take --server",
        )
        .into());
    }
    let mut opts = ServeOptions::resolve(&ctx.data, args)?;
    opts.store.clone_from(&ctx.store);
    opts.ledger.layout = ctx.new_layout;
    let runtime = server_runtime()?;
    runtime.block_on(async {
        let server = spawn(opts.clone()).await?;
        // DATA/server/address: local commands find this server (crate::served).
        let scheme = if server.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let recorded = opts.store.is_none()
            && crate::served::record(&opts.data, &format!("{scheme}://{}", server.addr)).is_ok();
        let stop = shutdown_signal();
        announce(&opts.data, &server, ctx.out.json);
        stop.await;
        let stopped = server.shutdown().await;
        // Forgotten however the stop ends (a ledger that failed stop
        // exits 5 here): no process serves this address any more.
        if recorded {
            crate::served::remove(&opts.data);
        }
        stopped?;
        tracing::info!("docket server stopped cleanly");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(exit::OK)
}

/// Prints where the admin key is (on first start) and the bound address.
fn announce(data: &Path, server: &RunningServer, json: bool) {
    use std::io::Write as _;
    if json {
        let mut v = serde_json::json!({
            "listening": server.addr.to_string(),
            "data": data,
        });
        if let Some(http) = server.http {
            v["http"] = serde_json::json!(http.to_string());
        }
        if let Some(init) = &server.init {
            v["initialised"] = serde_json::json!({
                "admin_key": init.admin_key_path,
                "admin_public_key": init.admin_public_key,
                "origin": init.origin,
            });
        }
        println!("{v}");
    } else {
        if let Some(init) = &server.init {
            println!(
                "initialised a new ledger in {}\n  admin key: {} (public {})\n  origin:    {}",
                data.display(),
                init.admin_key_path.display(),
                init.admin_public_key,
                init.origin
            );
        }
        if let Some(tls) = &server.tls {
            println!(
                "serving TLS{}",
                if tls.client_ca.is_some() {
                    " (clients need a certificate)"
                } else {
                    ""
                }
            );
        }
        if let Some(http) = server.http {
            println!("http on http://{http}");
        }
        println!("listening on {}", server.addr);
    }
    let _ = std::io::stdout().flush();
}

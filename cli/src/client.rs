//! The gRPC client backend (`--server URL`, env `DOCKET_SERVER`).
//!
//! [`Remote`] implements [`Backend`] over `docket.v1` so every command gives
//! the same output and exit codes as on an embedded ledger: errors come back
//! as [`CliError`]s carrying the exit code the server attached (see
//! `server/status.rs`), with the ledger's own message. Calls run on a
//! current-thread tokio runtime owned by the client (`block_on` per call).
//! Reads send `authorization: Bearer $DOCKET_READ_TOKEN` when that variable
//! is set.

use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::Result;
use docket_ledger::Statement;
use docket_proto::v1 as pb;
use docket_proto::v1::ledger_client::LedgerClient;
use tokio::sync::mpsc;
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::backend::{
    Backend, CheckpointView, ConsistencyView, EventView, InclusionView, ReceiptView,
};
use crate::exit::{self, CliError};
use crate::server::{convert, status};

/// Appends kept in flight by `append_stream` (they share group commits).
const PIPELINE_WINDOW: usize = 256;
/// How long `tail --follow` keeps trying to resume after losing the server.
const RESUME_FOR: Duration = Duration::from_secs(30);

/// Connects to a Docket server.
pub fn connect(url: &str) -> Result<Box<dyn Backend + Send + Sync>> {
    Ok(Box::new(Remote::connect(url)?))
}

/// Adds the read token to every request, when one is configured.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    header: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
}

impl Auth {
    /// From `DOCKET_READ_TOKEN`.
    pub fn from_env() -> Result<Self> {
        Self::token(std::env::var("DOCKET_READ_TOKEN").ok().as_deref())
    }

    /// From an explicit token.
    pub fn token(token: Option<&str>) -> Result<Self> {
        let header = match token.filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(format!("Bearer {t}").parse().map_err(|_| {
                CliError::new(exit::USAGE, "DOCKET_READ_TOKEN is not a valid header value")
            })?),
        };
        Ok(Self { header })
    }
}

impl Interceptor for Auth {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(h) = &self.header {
            request.metadata_mut().insert("authorization", h.clone());
        }
        Ok(request)
    }
}

/// A channel with the read token attached.
pub type AuthChannel = InterceptedService<Channel, Auth>;

/// Normalises `host:port` to `http://host:port`.
#[must_use]
pub fn normalize_url(url: &str) -> String {
    if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    }
}

/// Opens a channel to `url` on the current runtime.
pub async fn channel(url: &str) -> Result<Channel> {
    let url = normalize_url(url);
    let endpoint = Endpoint::from_shared(url.clone())
        .map_err(|e| CliError::new(exit::USAGE, format!("bad server URL {url:?}: {e}")))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        .http2_adaptive_window(true);
    endpoint.connect().await.map_err(|e| {
        CliError::new(
            exit::UNEXPECTED,
            format!("cannot reach the Docket server at {url}: {e}"),
        )
        .into()
    })
}

/// Converts a status from the server into an error with the right exit code.
#[must_use]
pub fn status_error(s: &Status) -> anyhow::Error {
    let code = status::exit_code_of(s);
    let message = match s.code() {
        Code::InvalidArgument
        | Code::NotFound
        | Code::AlreadyExists
        | Code::PermissionDenied
        | Code::FailedPrecondition
        | Code::ResourceExhausted
        | Code::Unauthenticated
        | Code::OutOfRange
        | Code::DataLoss => s.message().to_string(),
        other => format!("server: {other:?}: {}", s.message()),
    };
    CliError::new(code, message).into()
}

fn is_retryable(s: &Status) -> bool {
    matches!(
        s.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled
    )
}

/// The receipt view of a wire receipt.
#[must_use]
pub fn receipt_view(r: &pb::AppendReceipt) -> ReceiptView {
    ReceiptView {
        seq: r.seq,
        kind: r.kind.clone(),
        leaf_hash: hex::encode(&r.leaf_hash),
        recorded_at_ms: u64::try_from(r.recorded_at_unix_ms).unwrap_or(0),
        duplicate: r.duplicate,
    }
}

/// A Docket server reached over gRPC.
#[derive(Debug)]
pub struct Remote {
    runtime: tokio::runtime::Runtime,
    channel: Channel,
    auth: Auth,
    url: String,
}

impl Remote {
    /// Connects (eagerly, so a wrong address fails at once).
    pub fn connect(url: &str) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CliError::new(exit::UNEXPECTED, format!("cannot start a runtime: {e}")))?;
        let channel = runtime.block_on(channel(url))?;
        Ok(Self {
            runtime,
            channel,
            auth: Auth::from_env()?,
            url: normalize_url(url),
        })
    }

    /// The server URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs a future on the client's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }

    /// The channel with the read token attached.
    pub fn channel(&self) -> AuthChannel {
        InterceptedService::new(self.channel.clone(), self.auth.clone())
    }

    fn ledger(&self) -> LedgerClient<AuthChannel> {
        LedgerClient::new(self.channel()).max_decoding_message_size(64 << 20)
    }

    async fn tail_async(
        &self,
        from: u64,
        follow: bool,
        on_event: &mut dyn FnMut(EventView) -> bool,
    ) -> Result<()> {
        {
            let mut client = self.ledger();
            let mut next = from;
            // Set while the server is unreachable: when we started retrying.
            let mut lost_since: Option<Instant> = None;
            loop {
                let failure = match client
                    .tail(pb::TailRequest {
                        from_seq: next,
                        follow,
                    })
                    .await
                {
                    Err(s) if s.code() == Code::OutOfRange && !follow => {
                        // Embedded mode prints nothing for a start beyond the head.
                        return Ok(());
                    }
                    Err(s) => s,
                    Ok(resp) => {
                        let mut stream = resp.into_inner();
                        loop {
                            match stream.message().await {
                                Ok(Some(ev)) => {
                                    lost_since = None;
                                    let view = EventView::from_bytes(&ev.canonical)?;
                                    if view.seq != next {
                                        return Err(CliError::new(
                                            exit::HARD_FAIL,
                                            format!(
                                                "the server sent event {} where {next} was expected",
                                                view.seq
                                            ),
                                        )
                                        .into());
                                    }
                                    next = view.seq + 1;
                                    if !on_event(view) {
                                        return Ok(());
                                    }
                                }
                                Ok(None) if !follow => return Ok(()),
                                Ok(None) => break Status::unavailable("the stream ended"),
                                Err(s) => break s,
                            }
                        }
                    }
                };
                if !(follow && is_retryable(&failure)) {
                    return Err(status_error(&failure));
                }
                let since = *lost_since.get_or_insert_with(Instant::now);
                if since.elapsed() > RESUME_FOR {
                    return Err(status_error(&failure));
                }
                tracing::info!(
                    "tail interrupted ({}); resuming from seq {next}",
                    failure.message()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

impl Backend for Remote {
    fn append(&self, statement: Statement) -> Result<ReceiptView> {
        let mut c = self.ledger();
        let r = self
            .block_on(c.append(convert::statement_to_proto(&statement)))
            .map_err(|s| status_error(&s))?;
        Ok(receipt_view(r.get_ref()))
    }

    fn append_stream(
        &self,
        statements: Receiver<Statement>,
        on_result: &mut dyn FnMut(Result<ReceiptView>),
    ) -> Result<()> {
        // Unary appends pipelined over one HTTP/2 connection: each result
        // stands alone (as in embedded mode: a rejection does not stop the
        // rest), reported in input order as each becomes durable.
        let (tx, mut rx) = mpsc::channel::<Statement>(PIPELINE_WINDOW);
        let reader = std::thread::spawn(move || {
            for st in statements {
                if tx.blocking_send(st).is_err() {
                    break;
                }
            }
        });
        let client = self.ledger();
        self.block_on(async move {
            let (htx, mut hrx) =
                mpsc::channel::<tokio::task::JoinHandle<Result<ReceiptView>>>(PIPELINE_WINDOW);
            let feeder = tokio::spawn(async move {
                while let Some(st) = rx.recv().await {
                    let mut c = client.clone();
                    let wire = convert::statement_to_proto(&st);
                    let call = tokio::spawn(async move {
                        c.append(wire)
                            .await
                            .map(|r| receipt_view(r.get_ref()))
                            .map_err(|s| status_error(&s))
                    });
                    if htx.send(call).await.is_err() {
                        break;
                    }
                }
            });
            while let Some(call) = hrx.recv().await {
                on_result(
                    call.await
                        .unwrap_or_else(|e| Err(anyhow::anyhow!("append task failed: {e}"))),
                );
            }
            let _ = feeder.await;
        });
        reader
            .join()
            .map_err(|_| anyhow::anyhow!("statement reader panicked"))
    }

    fn event(&self, seq: u64) -> Result<EventView> {
        let mut c = self.ledger();
        let ev = self
            .block_on(c.get_event(pb::GetEventRequest { seq }))
            .map_err(|s| status_error(&s))?;
        EventView::from_bytes(&ev.get_ref().canonical)
    }

    fn tail(
        &self,
        from: u64,
        follow: bool,
        on_event: &mut dyn FnMut(EventView) -> bool,
    ) -> Result<()> {
        self.block_on(self.tail_async(from, follow, on_event))
    }

    fn checkpoint(&self) -> Result<CheckpointView> {
        let mut c = self.ledger();
        let cp = self
            .block_on(c.get_checkpoint(pb::GetCheckpointRequest {}))
            .map_err(|s| status_error(&s))?
            .into_inner();
        Ok(CheckpointView {
            size: cp.size,
            root: hex::encode(&cp.root),
            note: cp.note,
            verifier_key: cp.verifier_key,
        })
    }

    fn inclusion(&self, seq: u64, size: Option<u64>) -> Result<InclusionView> {
        if size == Some(0) {
            return Err(CliError::new(
                exit::INVALID,
                format!("invalid inclusion proof: leaf index {seq} is not below tree size 0"),
            )
            .into());
        }
        let mut c = self.ledger();
        let p = self
            .block_on(c.get_inclusion_proof(pb::GetInclusionProofRequest {
                seq,
                tree_size: size.unwrap_or(0),
            }))
            .map_err(|s| status_error(&s))?
            .into_inner();
        Ok(InclusionView {
            leaf_index: p.leaf_index,
            tree_size: p.tree_size,
            leaf_hash: hex::encode(&p.leaf_hash),
            root_hash: hex::encode(&p.root_hash),
            proof: p.proof.iter().map(hex::encode).collect(),
        })
    }

    fn consistency(&self, old: u64, new: Option<u64>) -> Result<ConsistencyView> {
        if new == Some(0) && old > 0 {
            return Err(CliError::new(
                exit::INVALID,
                format!("invalid consistency proof: old size {old} is above new size 0"),
            )
            .into());
        }
        let mut c = self.ledger();
        let p = self
            .block_on(c.get_consistency_proof(pb::GetConsistencyProofRequest {
                old_size: old,
                new_size: new.unwrap_or(0),
            }))
            .map_err(|s| status_error(&s))?
            .into_inner();
        Ok(ConsistencyView {
            old_size: p.old_size,
            new_size: p.new_size,
            old_root: hex::encode(&p.old_root),
            new_root: hex::encode(&p.new_root),
            proof: p.proof.iter().map(hex::encode).collect(),
        })
    }
}

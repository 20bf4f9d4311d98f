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
use docket_domain::Statement;
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
/// HTTP/2 flow-control window of a client connection: h2 then lets about
/// 24,000 small responses wait unread (half the window, charged at up to
/// 256 bytes of framing each) before it calls the peer abusive.
const CONNECTION_WINDOW: u32 = 8 * 1024 * 1024;
/// HTTP/2 flow-control window of one stream (hyper's default).
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
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

/// Client-side TLS: the CA that signs the server's certificate and, for
/// mutual TLS, the client's own certificate and key (PEM bytes).
#[derive(Debug, Clone, Default)]
pub struct ClientTls {
    pub ca_pem: Option<Vec<u8>>,
    pub identity_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// Name to verify the server certificate against (default: the URL's host).
    pub domain: Option<String>,
}

impl ClientTls {
    /// From `DOCKET_TLS_CA`, `DOCKET_TLS_CLIENT_CERT` + `DOCKET_TLS_CLIENT_KEY`
    /// and `DOCKET_TLS_DOMAIN` (files, except the domain).
    pub fn from_env() -> Result<Self> {
        let read = |var: &str| -> Result<Option<Vec<u8>>> {
            match std::env::var_os(var) {
                None => Ok(None),
                Some(p) => std::fs::read(&p).map(Some).map_err(|e| {
                    CliError::new(
                        exit::MISSING,
                        format!("cannot read {var}={}: {e}", p.to_string_lossy()),
                    )
                    .into()
                }),
            }
        };
        let identity = match (
            read("DOCKET_TLS_CLIENT_CERT")?,
            read("DOCKET_TLS_CLIENT_KEY")?,
        ) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => {
                return Err(CliError::new(
                    exit::USAGE,
                    "set both DOCKET_TLS_CLIENT_CERT and DOCKET_TLS_CLIENT_KEY",
                )
                .into());
            }
        };
        Ok(Self {
            ca_pem: read("DOCKET_TLS_CA")?,
            identity_pem: identity,
            domain: std::env::var("DOCKET_TLS_DOMAIN").ok(),
        })
    }
}

/// Opens a channel to `url` on the current runtime (`https://` URLs use
/// TLS configured from the environment, see [`ClientTls::from_env`]).
pub async fn channel(url: &str) -> Result<Channel> {
    let url = normalize_url(url);
    let tls = if url.starts_with("https://") {
        Some(ClientTls::from_env()?)
    } else {
        None
    };
    channel_with(&url, tls.as_ref()).await
}

/// Opens a channel to `url` with explicit TLS settings.
pub async fn channel_with(url: &str, tls: Option<&ClientTls>) -> Result<Channel> {
    use tonic::transport::{Certificate, ClientTlsConfig, Identity};
    let url = normalize_url(url);
    let mut endpoint = Endpoint::from_shared(url.clone())
        .map_err(|e| CliError::new(exit::USAGE, format!("bad server URL {url:?}: {e}")))?
        .connect_timeout(Duration::from_secs(5))
        .tcp_nodelay(true)
        // Fixed windows, not hyper's adaptive ones: h2 (0.4.20) lets a
        // connection hold at most half its window's worth of small DATA
        // frames not yet read, then closes it (GOAWAY ENHANCE_YOUR_CALM
        // "too_many_data_frames"). An adaptive window starts at 64 KiB,
        // about 180 unread receipts, fewer than one group commit of the
        // PIPELINE_WINDOW appends `log append --stdin` keeps in flight.
        .initial_connection_window_size(CONNECTION_WINDOW)
        .initial_stream_window_size(STREAM_WINDOW);
    if let Some(tls) = tls {
        let Some(ca) = &tls.ca_pem else {
            return Err(CliError::new(
                exit::USAGE,
                format!("{url} uses TLS: set DOCKET_TLS_CA to the PEM file of the CA that signed the server's certificate"),
            )
            .into());
        };
        let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        if let Some((cert, key)) = &tls.identity_pem {
            config = config.identity(Identity::from_pem(cert, key));
        }
        if let Some(d) = &tls.domain {
            config = config.domain_name(d.clone());
        }
        endpoint = endpoint
            .tls_config(config)
            .map_err(|e| CliError::new(exit::USAGE, format!("TLS settings for {url}: {e}")))?;
    }
    endpoint.connect().await.map_err(|e| {
        let detail = std::error::Error::source(&e)
            .map(|s| format!("{e}: {s}"))
            .unwrap_or_else(|| e.to_string());
        CliError::new(
            exit::UNEXPECTED,
            format!("cannot reach the Docket server at {url}: {detail}"),
        )
        .into()
    })
}

/// Converts a status from the server into an error with the right exit code.
#[must_use]
pub fn status_error(s: &Status) -> anyhow::Error {
    // An `Invalid` refusal comes back as the very error the embedded
    // ledger returns, so both modes print it alike.
    if let Some(invalid) = s
        .metadata()
        .get_bin(status::VIOLATIONS_METADATA)
        .and_then(|v| v.to_bytes().ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    {
        let what = invalid["what"].as_str().unwrap_or("request").to_string();
        let violations = invalid["violations"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        return docket_domain::LedgerError::Invalid { what, violations }.into();
    }
    let code = status::exit_code_of(s);
    if status::is_local_transport_failure(s) {
        return CliError::new(
            code,
            format!("the connection to the server failed: {}", s.message()),
        )
        .into();
    }
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

    fn export_files(&self, request: pb::ExportRequest) -> Result<crate::backend::ExportedFiles> {
        use docket_proto::v1::export_client::ExportClient;
        use sha2::{Digest as _, Sha256};
        self.block_on(async {
            let mut stream = ExportClient::new(self.channel())
                .max_decoding_message_size(64 << 20)
                .export_bundle(request)
                .await
                .map_err(|s| status_error(&s))?
                .into_inner();
            let mut files: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
            let mut report = None;
            while let Some(chunk) = stream.message().await.map_err(|s| status_error(&s))? {
                if !chunk.report_json.is_empty() {
                    report = serde_json::from_str(&chunk.report_json).ok();
                }
                let file = files.entry(chunk.path.clone()).or_default();
                if chunk.offset != file.len() as u64 {
                    return Err(CliError::new(
                        exit::UNEXPECTED,
                        format!(
                            "export chunk of {} at offset {} out of order",
                            chunk.path, chunk.offset
                        ),
                    )
                    .into());
                }
                file.extend_from_slice(&chunk.data);
                if chunk.last
                    && Sha256::digest(file.as_slice()).as_slice() != chunk.sha256.as_slice()
                {
                    return Err(CliError::new(
                        exit::HARD_FAIL,
                        format!(
                            "export file {} does not match the SHA-256 the server sent",
                            chunk.path
                        ),
                    )
                    .into());
                }
            }
            Ok((files, report))
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

/// Client-side flows over gRPC that take more than one call: uploading
/// evidence and submitting an artifacts directory (collect, upload each
/// file as evidence, submit `submit.json` naming the OIDs).
pub mod flow {
    use std::path::Path;

    use anyhow::Result;
    use docket_domain::Statement;
    use docket_proto::v1 as pb;
    use docket_proto::v1::evidence_client::EvidenceClient;
    use docket_proto::v1::submissions_client::SubmissionsClient;
    use ed25519_dalek::SigningKey;
    use sha2::{Digest as _, Sha256};
    use tonic::transport::Channel;

    use super::status_error;
    use crate::exit::{self, CliError};
    use crate::server::convert;

    /// Upload chunk size (the server accepts up to 1 MiB).
    pub const UPLOAD_CHUNK: usize = 256 << 10;

    /// Every regular file under `dir` as (relative `/`-separated name,
    /// content), sorted by name. Symbolic links are refused.
    pub fn collect_dir(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> Result<()> {
            let entries = std::fs::read_dir(dir).map_err(|e| {
                CliError::new(exit::MISSING, format!("cannot read {}: {e}", dir.display()))
            })?;
            for entry in entries {
                let entry = entry?;
                let path = entry.path();
                let kind = entry.file_type()?;
                if kind.is_symlink() {
                    return Err(CliError::new(
                        exit::INVALID,
                        format!(
                            "{} is a symbolic link; artifacts must be regular files",
                            path.display()
                        ),
                    )
                    .into());
                }
                if kind.is_dir() {
                    walk(root, &path, out)?;
                } else if kind.is_file() {
                    let rel = path
                        .strip_prefix(root)
                        .unwrap_or(&path)
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    out.push((rel, std::fs::read(&path)?));
                }
            }
            Ok(())
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out)?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// The evidence type of an artifact name (first matching type, else
    /// `other`).
    #[must_use]
    pub fn evidence_type(name: &str) -> &'static str {
        docket_verifier::EvidenceType::ALL
            .iter()
            .find(|t| **t != docket_verifier::EvidenceType::Other && t.matches_artifact(name))
            .map_or("other", |t| t.as_str())
    }

    /// A media type from the file extension.
    #[must_use]
    pub fn media_type(name: &str) -> &'static str {
        let lower = name.to_ascii_lowercase();
        match lower.rsplit_once('.').map_or("", |(_, e)| e) {
            "diff" | "patch" => "text/x-diff",
            "log" | "txt" | "out" | "err" => "text/plain",
            "md" => "text/markdown",
            "json" => "application/json",
            "jsonl" | "ndjson" => "application/x-ndjson",
            "png" => "image/png",
            "jpg" | "jpeg" => "image/jpeg",
            "html" | "htm" => "text/html",
            _ => "application/octet-stream",
        }
    }

    /// The `evidence.registered` payload for `content` named `name`.
    #[must_use]
    pub fn evidence_payload(task_id: &str, name: &str, content: &[u8]) -> Vec<u8> {
        let v = serde_json::json!({
            "task_id": task_id,
            "evidence_type": evidence_type(name),
            "sha256": hex::encode(Sha256::digest(content)),
            "size": content.len(),
            "media_type": media_type(name),
            "name": name,
        });
        v.to_string().into_bytes()
    }

    /// Streams `content` to `Evidence.Upload` with a signed registration.
    pub async fn upload(
        channel: Channel,
        key: &SigningKey,
        task_id: &str,
        name: &str,
        content: &[u8],
    ) -> Result<pb::EvidenceReceipt> {
        let st = Statement::sign(
            "evidence.registered",
            evidence_payload(task_id, name, content),
            key,
        );
        // The statement alone authorises the upload; the upload signature
        // makes the uploader explicit (see docs/API.md).
        let mut header = crate::server::uploads::signed_header(key, content);
        header.statement = Some(convert::statement_to_proto(&st));
        let mut messages = vec![pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Header(header)),
        }];
        for chunk in content.chunks(UPLOAD_CHUNK) {
            messages.push(pb::UploadEvidenceRequest {
                part: Some(pb::upload_evidence_request::Part::Chunk(chunk.to_vec())),
            });
        }
        let mut client = EvidenceClient::new(channel);
        let r = client
            .upload(tokio_stream::iter(messages))
            .await
            .map_err(|s| status_error(&s))?;
        Ok(r.into_inner())
    }

    /// The `submission.received` payload: `submit.json` with `evidence_oids`.
    pub fn submission_payload(submit_json: &[u8], oids: &[String]) -> Result<Vec<u8>> {
        let mut doc: serde_json::Value = serde_json::from_slice(submit_json)
            .map_err(|e| CliError::new(exit::INVALID, format!("submit.json is not JSON: {e}")))?;
        let Some(map) = doc.as_object_mut() else {
            return Err(CliError::new(exit::INVALID, "submit.json must be a JSON object").into());
        };
        map.insert("evidence_oids".into(), serde_json::json!(oids));
        Ok(serde_json::to_vec(&doc)?)
    }

    /// Uploads every file as evidence, then submits `submit.json` naming
    /// their OIDs; with `wait`, the response carries the verdict state.
    pub async fn submit_artifacts(
        channel: Channel,
        key: &SigningKey,
        task_id: &str,
        files: &[(String, Vec<u8>)],
        wait: bool,
    ) -> Result<(Vec<String>, pb::SubmitResponse)> {
        let Some((_, submit_json)) = files.iter().find(|(n, _)| n == "submit.json") else {
            return Err(CliError::new(exit::MISSING, "the artifacts have no submit.json").into());
        };
        let mut oids = Vec::with_capacity(files.len());
        for (name, content) in files {
            let r = upload(channel.clone(), key, task_id, name, content).await?;
            oids.push(r.oid);
        }
        let payload = submission_payload(submit_json, &oids)?;
        let st = Statement::sign("submission.received", payload, key);
        let mut client = SubmissionsClient::new(channel);
        let r = client
            .submit(pb::SubmitRequest {
                statement: Some(convert::statement_to_proto(&st)),
                wait_for_verdict: wait,
                wait_timeout_ms: 0,
            })
            .await
            .map_err(|s| status_error(&s))?;
        Ok((oids, r.into_inner()))
    }
}

//! Trust and failure behaviour of a real server on loopback: fail-stop
//! after a real storage error (a full tmpfs), status codes for requests
//! that do not decode or are too large, authenticated and bounded uploads,
//! and no verdict for a forged resubmission.
//!
//! The storage tests mount a tmpfs (they need root) and print `SKIPPED`
//! when they cannot.

use std::path::Path;
use std::time::{Duration, Instant};

use docket_cli::server::uploads::{DiskReserve, sign_upload, signed_header};
use docket_e2e::{
    DOCKET_SERVICES, ServeProcess, TestServer, Tmpfs, admin_key_of, demo_files, fill_disk,
    free_bytes, fresh_key, health_of, new_task_id, public_hex, register_key, sign, sign_bytes,
    spawn_at, task_contract,
};
use docket_proto::v1 as pb;
use docket_proto::v1::admin_client::AdminClient;
use docket_proto::v1::evidence_client::EvidenceClient;
use docket_proto::v1::keys_client::KeysClient;
use docket_proto::v1::ledger_client::LedgerClient;
use docket_proto::v1::submissions_client::SubmissionsClient;
use docket_proto::v1::tasks_client::TasksClient;
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::json;
use sha2::{Digest as _, Sha256};
use tonic::transport::Channel;
use tonic::{Code, Status};
use tonic_health::ServingStatus;

async fn connect(url: &str) -> Channel {
    docket_cli::client::channel(url).await.expect("connect")
}

/// A distinct `x-trust` statement with `pad` bytes of padding.
fn filler(key: &SigningKey, i: u64, pad: usize) -> pb::SignedStatement {
    sign("x-trust", &json!({"i": i, "pad": "x".repeat(pad)}), key)
}

/// Uploads `content` with a signed header (no statement).
async fn upload(
    ch: &Channel,
    key: &SigningKey,
    content: &[u8],
) -> Result<pb::EvidenceReceipt, Status> {
    upload_with(ch, signed_header(key, content), content).await
}

async fn upload_with(
    ch: &Channel,
    header: pb::UploadHeader,
    content: &[u8],
) -> Result<pb::EvidenceReceipt, Status> {
    let mut msgs = vec![pb::UploadEvidenceRequest {
        part: Some(pb::upload_evidence_request::Part::Header(header)),
    }];
    for c in content.chunks(256 << 10) {
        msgs.push(pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Chunk(c.to_vec())),
        });
    }
    EvidenceClient::new(ch.clone())
        .upload(tokio_stream::iter(msgs))
        .await
        .map(tonic::Response::into_inner)
}

/// The exit code the server attached to a status.
fn exit_code(s: &Status) -> Option<u8> {
    s.metadata()
        .get("docket-exit-code")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// Asserts `s` is the fail-stop answer, naming no server path.
fn assert_stopped(s: &Status, mount: &Path) {
    assert_eq!(s.code(), Code::Unavailable, "{s:?}");
    let m = s.message();
    assert!(
        m.starts_with("the ledger stopped after a storage error: ")
            && m.ends_with("; restart after fixing the cause"),
        "{m}"
    );
    assert_no_path(m, mount);
}

fn assert_no_path(m: &str, mount: &Path) {
    let mount = mount.display().to_string();
    assert!(
        !m.contains(&mount) && !m.contains("/tmp/"),
        "a server path leaked: {m}"
    );
}

/// Waits (up to 10 s) until `service` reports `want`.
async fn wait_health(ch: &Channel, service: &str, want: ServingStatus) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = health_of(ch, service).await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "health of {service:?} is {got:?}, want {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_all_health(ch: &Channel, want: ServingStatus) {
    wait_health(ch, "", want).await;
    for s in DOCKET_SERVICES {
        wait_health(ch, s, want).await;
    }
}

async fn status_of_server(ch: &Channel) -> pb::ServerStatus {
    AdminClient::new(ch.clone())
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner()
}

/// Checks that every acknowledged append is in the log, byte for byte.
async fn assert_all_present(ch: &Channel, acked: &[pb::AppendReceipt]) {
    let mut ledger = LedgerClient::new(ch.clone());
    for r in acked {
        let e = ledger
            .get_event(pb::GetEventRequest { seq: r.seq })
            .await
            .unwrap_or_else(|s| panic!("acknowledged event {} is readable: {s:?}", r.seq))
            .into_inner();
        assert_eq!(e.leaf_hash, r.leaf_hash, "event {}", r.seq);
    }
}

// ------------------------------------------------------------ fail-stop

/// A real storage failure in a `docket serve` process: the data directory
/// is a small tmpfs; once it is full, the log's next write fails (the store
/// needs a new segment). The ledger fails stop: health turns NOT_SERVING for
/// `""` and every service, GetStatus names the reason, every write answers
/// UNAVAILABLE ("the ledger stopped after a storage error: …; restart after
/// fixing the cause"), reads answer from the committed state only (or
/// UNAVAILABLE where the store refuses reads after its I/O error — never
/// from another state), no message names a server path, and SIGTERM still
/// stops the process. After freeing the space a restart serves again with
/// every acknowledged append.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_stop_after_a_storage_error_refuses_writes_and_loses_nothing() {
    let Some(fs) = Tmpfs::mount("24m") else {
        return;
    };
    let data = fs.path().join("ledger");
    let flags = ["--sweep-every-secs", "0", "--disk-reserve", "0"];
    let serve = ServeProcess::start(&data, &flags);
    let admin = admin_key_of(&data);
    let ch = connect(&serve.url()).await;
    let mut ledger = LedgerClient::new(ch.clone());
    wait_all_health(&ch, ServingStatus::Serving).await;
    let mut acked = Vec::new();
    for i in 0..3 {
        acked.push(
            ledger
                .append(filler(&admin, i, 100))
                .await
                .expect("append")
                .into_inner(),
        );
    }

    let fill = fill_disk(fs.path(), 0);
    // An upload on the full disk: RESOURCE_EXHAUSTED, naming no path.
    let s = upload(&ch, &admin, &vec![9u8; 512 << 10])
        .await
        .expect_err("no room for content");
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert_eq!(s.message(), "the server's disk is full (see its log)");

    // Appends (200 KB each) until the store needs space it cannot get.
    let mut failed = None;
    for i in 3..100 {
        match ledger.append(filler(&admin, i, 200_000)).await {
            Ok(r) => acked.push(r.into_inner()),
            Err(s) => {
                failed = Some(s);
                break;
            }
        }
    }
    let s = failed.expect("the log write fails once the disk is full");
    assert_stopped(&s, fs.path());
    assert!(s.message().contains("No space left on device"), "{s:?}");
    assert_eq!(exit_code(&s), Some(10));
    let last = acked.last().expect("acknowledged appends").seq;

    wait_all_health(&ch, ServingStatus::NotServing).await;
    let st = status_of_server(&ch).await;
    assert!(
        st.failure.contains("No space left on device"),
        "{}",
        st.failure
    );
    assert_no_path(&st.failure, fs.path());
    assert_eq!(
        st.tree_size,
        last + 1,
        "the status counts committed events only"
    );

    // Every write answers UNAVAILABLE with the reason.
    let s = ledger
        .append(filler(&admin, 1000, 10))
        .await
        .expect_err("appends are refused");
    assert_stopped(&s, fs.path());
    let s = KeysClient::new(ch.clone())
        .register_key(sign(
            "key.registered",
            &json!({"public_key": public_hex(&fresh_key()), "roles": ["submitter"]}),
            &admin,
        ))
        .await
        .expect_err("key registrations are refused");
    assert_stopped(&s, fs.path());
    let s = SubmissionsClient::new(ch.clone())
        .submit(pb::SubmitRequest {
            statement: Some(sign("submission.received", &json!({}), &admin)),
            wait_for_verdict: true,
            wait_timeout_ms: 1000,
        })
        .await
        .expect_err("submissions are refused");
    assert_stopped(&s, fs.path());
    let s = upload(&ch, &admin, b"small")
        .await
        .expect_err("uploads are refused");
    assert_stopped(&s, fs.path());
    let mut stream = ledger
        .append_stream(tokio_stream::iter(vec![filler(&admin, 1001, 10)]))
        .await
        .expect("stream opens")
        .into_inner();
    let s = stream
        .message()
        .await
        .expect_err("stream appends are refused");
    assert_stopped(&s, fs.path());

    // Reads: the committed state, or UNAVAILABLE — never another state.
    let keys = KeysClient::new(ch.clone())
        .list_keys(pb::ListKeysRequest::default())
        .await
        .expect("the projections still answer")
        .into_inner();
    assert_eq!(
        keys.as_of_seq, last,
        "the projections are the committed state"
    );
    assert!(!keys.keys.is_empty());
    match ledger.get_event(pb::GetEventRequest { seq: last }).await {
        Ok(e) => assert_eq!(e.into_inner().leaf_hash, acked[acked.len() - 1].leaf_hash),
        Err(s) => assert_stopped(&s, fs.path()),
    }
    let s = ledger
        .get_event(pb::GetEventRequest { seq: last + 1 })
        .await
        .expect_err("nothing beyond the committed log");
    assert_eq!(s.code(), Code::NotFound, "{s:?}");
    match ledger.get_checkpoint(pb::GetCheckpointRequest {}).await {
        Ok(cp) => assert_eq!(cp.into_inner().size, last + 1),
        Err(s) => assert_stopped(&s, fs.path()),
    }

    // SIGTERM stops it; free the space; a restart has everything.
    drop((ch, ledger, stream));
    let code = serve.terminate();
    eprintln!("docket serve exited with {code} after the fail-stop");
    std::fs::remove_file(&fill).expect("free the space");
    let serve = ServeProcess::start(&data, &flags);
    let ch = connect(&serve.url()).await;
    wait_all_health(&ch, ServingStatus::Serving).await;
    assert!(status_of_server(&ch).await.failure.is_empty());
    assert_all_present(&ch, &acked).await;
    let r = LedgerClient::new(ch.clone())
        .append(filler(&admin, 2000, 10))
        .await
        .expect("appends work again")
        .into_inner();
    assert!(r.seq > last);
    drop(ch);
    assert_eq!(serve.terminate(), 0);
}

// ------------------------------------------------------------ status codes

/// Sends raw bytes as a request message (so they need not decode).
#[derive(Debug, Clone, Copy, Default)]
struct RawCodec;

#[derive(Debug)]
struct RawEncoder;

#[derive(Debug)]
struct RawDecoder;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = RawDecoder;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> RawDecoder {
        RawDecoder
    }
}

impl tonic::codec::Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(
        &mut self,
        item: Vec<u8>,
        buf: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), Status> {
        use bytes::BufMut as _;
        buf.put_slice(&item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawDecoder {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, buf: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use bytes::Buf as _;
        let n = buf.remaining();
        Ok(Some(buf.copy_to_bytes(n).to_vec()))
    }
}

fn path(p: &'static str) -> tonic::codegen::http::uri::PathAndQuery {
    tonic::codegen::http::uri::PathAndQuery::from_static(p)
}

async fn raw_unary(ch: &Channel, p: &'static str, body: Vec<u8>) -> Result<Vec<u8>, Status> {
    let mut grpc = tonic::client::Grpc::new(ch.clone());
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(e.to_string()))?;
    grpc.unary(tonic::Request::new(body), path(p), RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

/// A protobuf length-delimited field (`tag` < 16, `len` < 128).
fn field(tag: u8, bytes: &[u8]) -> Vec<u8> {
    let len = u8::try_from(bytes.len()).expect("short field");
    assert!(len < 128);
    let mut v = vec![(tag << 3) | 2, len];
    v.extend_from_slice(bytes);
    v
}

fn assert_invalid(s: &Status, needle: &str) {
    assert_eq!(s.code(), Code::InvalidArgument, "{s:?}");
    assert!(s.message().contains(needle), "{s:?}");
    assert_eq!(exit_code(s), Some(2), "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_errors_have_the_right_codes() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let before = t.log_len();

    // Bytes that are not a protobuf message (a length-delimited field
    // running past the end): INVALID_ARGUMENT, not INTERNAL.
    let s = raw_unary(
        &ch,
        "/docket.v1.Ledger/Append",
        vec![0x0a, 0x05, b'a', b'b'],
    )
    .await
    .expect_err("garbage");
    assert_invalid(&s, "not a valid protobuf encoding");
    // A `string` field that is not UTF-8, on a write and on a read.
    let s = raw_unary(&ch, "/docket.v1.Ledger/Append", field(1, &[0xff, 0xfe]))
        .await
        .expect_err("non-UTF-8 kind");
    assert_invalid(&s, "UTF-8");
    let s = raw_unary(&ch, "/docket.v1.Tasks/GetTask", field(1, b"\xc3\x28abc"))
        .await
        .expect_err("non-UTF-8 task id");
    assert_invalid(&s, "UTF-8");
    // Garbage in a client stream (Upload) and a bidirectional one.
    let mut grpc = tonic::client::Grpc::new(ch.clone());
    grpc.ready().await.expect("ready");
    let s = grpc
        .client_streaming(
            tonic::Request::new(tokio_stream::iter(vec![vec![0x0a, 0x7f, 1]])),
            path("/docket.v1.Evidence/Upload"),
            RawCodec,
        )
        .await
        .expect_err("garbage upload");
    assert_invalid(&s, "not a valid protobuf encoding");
    let mut grpc = tonic::client::Grpc::new(ch.clone());
    grpc.ready().await.expect("ready");
    let mut stream = grpc
        .streaming(
            tonic::Request::new(tokio_stream::iter(vec![field(1, &[0xff])])),
            path("/docket.v1.Ledger/AppendStream"),
            RawCodec,
        )
        .await
        .expect("stream opens")
        .into_inner();
    let s = stream.message().await.expect_err("garbage stream message");
    assert_invalid(&s, "UTF-8");

    // A message over the server's 4 MiB limit: RESOURCE_EXHAUSTED naming it.
    let mut big = sign_bytes("x-big", Vec::new(), &t.admin);
    big.payload = vec![b'x'; 5 << 20];
    let s = LedgerClient::new(ch.clone())
        .append(big)
        .await
        .expect_err("over the message limit");
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert!(s.message().contains("4194304"), "{s:?}");
    assert_eq!(exit_code(&s), Some(2));
    // A payload over 256 KiB (the message itself is fine).
    let s = LedgerClient::new(ch.clone())
        .append(sign_bytes("x-big", vec![b'x'; 300 << 10], &t.admin))
        .await
        .expect_err("over the payload limit");
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert!(s.message().contains("262144"), "{s:?}");
    assert_eq!(t.log_len(), before, "no refused request appended anything");

    // DATA_LOSS: content altered on the server's disk.
    let submitter = register_key(&ch, &t.admin, &["submitter"]).await;
    let task_id = new_task_id();
    TasksClient::new(ch.clone())
        .register_task(sign(
            "task.registered",
            &task_contract(&task_id),
            &submitter,
        ))
        .await
        .expect("task");
    let content = b"the original evidence".to_vec();
    let r =
        docket_cli::client::flow::upload(ch.clone(), &submitter, &task_id, "notes.txt", &content)
            .await
            .expect("upload");
    let hex = hex::encode(Sha256::digest(&content));
    let blob = t.data().join("blobs").join(&hex[..2]).join(&hex);
    std::fs::write(&blob, b"THE ORIGINAL EVIDENCE").expect("tamper");
    let mut dl = EvidenceClient::new(ch.clone())
        .download(pb::DownloadEvidenceRequest {
            oid: r.oid,
            allow_redacted: false,
        })
        .await
        .expect("download starts")
        .into_inner();
    let s = loop {
        match dl.message().await {
            Ok(Some(_)) => {}
            Ok(None) => panic!("tampered content downloaded without error"),
            Err(s) => break s,
        }
    };
    assert_eq!(s.code(), Code::DataLoss, "{s:?}");
    assert_eq!(exit_code(&s), Some(5));
    assert_no_path(s.message(), t.dir.path());
    t.server.shutdown().await.expect("shutdown");
}

// ------------------------------------------------------------ uploads

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_must_be_signed_by_a_registered_unrevoked_key() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let submitter = register_key(&ch, &t.admin, &["submitter"]).await;
    let content = b"evidence bytes".to_vec();
    let before = t.log_len();

    // No signature at all.
    let mut header = signed_header(&submitter, &content);
    header.uploader_public_key.clear();
    header.upload_signature.clear();
    let s = upload_with(&ch, header, &content)
        .await
        .expect_err("unsigned");
    assert_eq!(s.code(), Code::Unauthenticated, "{s:?}");
    assert!(s.message().contains("not signed"), "{s:?}");

    // A signature over other content (or by another key).
    let mut header = signed_header(&submitter, &content);
    header.upload_signature = sign_upload(&submitter, &[0u8; 32], 14).to_vec();
    let s = upload_with(&ch, header, &content)
        .await
        .expect_err("bad signature");
    assert_eq!(s.code(), Code::Unauthenticated, "{s:?}");
    assert_eq!(exit_code(&s), Some(5));

    // Wrong sizes.
    let mut header = signed_header(&submitter, &content);
    header.uploader_public_key.truncate(31);
    let s = upload_with(&ch, header, &content)
        .await
        .expect_err("short key");
    assert_eq!(s.code(), Code::InvalidArgument, "{s:?}");

    // A valid signature by a key the ledger does not know.
    let stranger = fresh_key();
    let s = upload(&ch, &stranger, &content)
        .await
        .expect_err("unknown key");
    assert_eq!(s.code(), Code::PermissionDenied, "{s:?}");
    assert!(s.message().contains("not registered"), "{s:?}");

    // A revoked key.
    let gone = register_key(&ch, &t.admin, &["submitter"]).await;
    KeysClient::new(ch.clone())
        .revoke_key(sign(
            "key.revoked",
            &json!({"public_key": public_hex(&gone), "reason": "left"}),
            &t.admin,
        ))
        .await
        .expect("revoke");
    let before_revoked = t.log_len();
    let s = upload(&ch, &gone, &content).await.expect_err("revoked key");
    assert_eq!(s.code(), Code::PermissionDenied, "{s:?}");
    assert!(s.message().contains("revoked"), "{s:?}");
    assert_eq!(t.log_len(), before_revoked);
    let hex = hex::encode(Sha256::digest(&content));
    let blob = t.data().join("blobs").join(&hex[..2]).join(&hex);
    assert!(!blob.exists(), "no refused upload stored anything");
    assert_eq!(before + 2, before_revoked, "refusals appended nothing");

    // A registered key's signature: stored.
    let r = upload(&ch, &submitter, &content)
        .await
        .expect("signed upload");
    assert_eq!(r.sha256, Sha256::digest(&content).to_vec());
    assert!(blob.exists());

    // With a statement: the statement's signature authorises the upload
    // (clients built from the protos send only the statement) ...
    let task_id = new_task_id();
    TasksClient::new(ch.clone())
        .register_task(sign(
            "task.registered",
            &task_contract(&task_id),
            &submitter,
        ))
        .await
        .expect("task");
    let doc = b"a document".to_vec();
    let payload = docket_cli::client::flow::evidence_payload(&task_id, "doc.txt", &doc);
    let st = sign_bytes("evidence.registered", payload.clone(), &submitter);
    let header = pb::UploadHeader {
        statement: Some(st.clone()),
        ..Default::default()
    };
    let r = upload_with(&ch, header, &doc)
        .await
        .expect("statement upload");
    assert!(!r.oid.is_empty());
    // ... but a replay of that statement with a forged signature does not,
    // even though an identical statement is in the log: nothing is stored
    // (the content was removed meanwhile), no OID is revealed.
    let doc_hex = hex::encode(Sha256::digest(&doc));
    let doc_blob = t.data().join("blobs").join(&doc_hex[..2]).join(&doc_hex);
    std::fs::remove_file(&doc_blob).expect("remove the blob");
    let forger = fresh_key();
    let mut forged = st.clone();
    forged.signature = forger
        .sign(&docket_domain::event::signing_message(
            "evidence.registered",
            &payload,
        ))
        .to_bytes()
        .to_vec();
    let before_forged = t.log_len();
    let s = upload_with(
        &ch,
        pb::UploadHeader {
            statement: Some(forged),
            ..Default::default()
        },
        &doc,
    )
    .await
    .expect_err("forged statement");
    assert_eq!(s.code(), Code::Unauthenticated, "{s:?}");
    assert!(!doc_blob.exists(), "a forged upload stored nothing");
    assert_eq!(t.log_len(), before_forged);

    // The CLI's upload (statement + upload signature) works.
    let other = b"other document".to_vec();
    let r = docket_cli::client::flow::upload(ch.clone(), &submitter, &task_id, "o.txt", &other)
        .await
        .expect("CLI upload");
    assert!(!r.oid.is_empty());
    t.server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upload_quota_is_per_key_durable_and_credits_deleted_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ledger");
    let quota = |o: &mut docket_cli::server::ServeOptions| {
        o.uploads.quota = Some(100 << 10);
        o.uploads.reserve = None;
    };
    let server = spawn_at(&data, quota).await;
    let admin = admin_key_of(&data);
    let ch = connect(&server.url()).await;
    let a = register_key(&ch, &admin, &["submitter"]).await;
    let b = register_key(&ch, &admin, &["submitter"]).await;
    let first = vec![1u8; 60 << 10];
    let second = vec![2u8; 60 << 10];
    upload(&ch, &a, &first).await.expect("within the quota");
    let s = upload(&ch, &a, &second).await.expect_err("over the quota");
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert!(
        s.message().contains("upload quota") && s.message().contains("102400"),
        "{s:?}"
    );
    // Content already stored costs nothing; another key has its own quota;
    // appends are not uploads.
    upload(&ch, &a, &first).await.expect("already stored");
    upload(&ch, &b, &second).await.expect("another key");
    LedgerClient::new(ch.clone())
        .append(filler(&a, 1, 10))
        .await
        .expect("appends are not limited");

    // The usage survives a restart.
    drop(ch);
    server.shutdown().await.expect("shutdown");
    let server = spawn_at(&data, quota).await;
    let ch = connect(&server.url()).await;
    let third = vec![3u8; 60 << 10];
    let s = upload(&ch, &a, &third).await.expect_err("still over");
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    // Content deleted from the blob store (retention) is credited back.
    let hex = hex::encode(Sha256::digest(&first));
    std::fs::remove_file(data.join("blobs").join(&hex[..2]).join(&hex)).expect("delete");
    upload(&ch, &a, &third).await.expect("room again");
    drop(ch);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_disk_reserve_stops_uploads_but_not_appends() {
    let Some(fs) = Tmpfs::mount("24m") else {
        return;
    };
    let data = fs.path().join("ledger");
    let reserve = 8u64 << 20;
    let server = spawn_at(&data, |o| {
        o.uploads.reserve = Some(DiskReserve::Bytes(reserve));
    })
    .await;
    let admin = admin_key_of(&data);
    let ch = connect(&server.url()).await;
    upload(&ch, &admin, &vec![1u8; 512 << 10])
        .await
        .expect("room to spare");

    let fill = fill_disk(fs.path(), reserve - (2 << 20));
    assert!(free_bytes(fs.path()) < reserve);
    let s = upload(&ch, &admin, &vec![2u8; 64 << 10])
        .await
        .expect_err("below the reserve");
    assert_eq!(s.code(), Code::ResourceExhausted, "{s:?}");
    assert!(
        s.message().contains("reserve") && s.message().contains(&reserve.to_string()),
        "{s:?}"
    );
    assert_no_path(s.message(), fs.path());
    // Signed statements still append.
    LedgerClient::new(ch.clone())
        .append(filler(&admin, 1, 100))
        .await
        .expect("appends still work");
    wait_all_health(&ch, ServingStatus::Serving).await;

    std::fs::remove_file(&fill).expect("free the space");
    upload(&ch, &admin, &vec![2u8; 64 << 10])
        .await
        .expect("room again");
    drop(ch);
    server.shutdown().await.expect("shutdown");
}

// ------------------------------------------------------------ submissions

/// A resubmission of a judged submission with a forged signature gets
/// UNAUTHENTICATED and no verdict, by every write path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_resubmission_gets_no_verdict() {
    let t = TestServer::start().await;
    let ch = t.channel().await;
    let submitter = register_key(&ch, &t.admin, &["submitter"]).await;
    let task_id = new_task_id();
    TasksClient::new(ch.clone())
        .register_task(sign(
            "task.registered",
            &task_contract(&task_id),
            &submitter,
        ))
        .await
        .expect("task");
    let files = demo_files("pass", &task_id);
    let mut oids = Vec::new();
    for (name, content) in &files {
        let r = docket_cli::client::flow::upload(ch.clone(), &submitter, &task_id, name, content)
            .await
            .expect("upload");
        oids.push(r.oid);
    }
    let submit_json = &files
        .iter()
        .find(|(n, _)| n == "submit.json")
        .expect("submit.json")
        .1;
    let payload =
        docket_cli::client::flow::submission_payload(submit_json, &oids).expect("payload");
    let genuine = sign_bytes("submission.received", payload.clone(), &submitter);
    let mut submissions = SubmissionsClient::new(ch.clone());
    let first = submissions
        .submit(pb::SubmitRequest {
            statement: Some(genuine.clone()),
            wait_for_verdict: true,
            wait_timeout_ms: 30_000,
        })
        .await
        .expect("submit")
        .into_inner();
    let verdict = first.verdict.expect("a verdict");
    assert_eq!(verdict.status, pb::VerdictStatus::Pass as i32);

    // The same statement, signed by someone else under the submitter's key.
    let forger = fresh_key();
    let message = docket_domain::event::signing_message("submission.received", &payload);
    let mut forged = genuine.clone();
    forged.signature = forger.sign(&message).to_bytes().to_vec();
    // And one whose signature is not even canonical.
    let mut garbage = genuine.clone();
    garbage.signature = vec![0xff; 64];
    let before = t.log_len();
    for st in [&forged, &garbage] {
        let s = submissions
            .submit(pb::SubmitRequest {
                statement: Some(st.clone()),
                wait_for_verdict: true,
                wait_timeout_ms: 5_000,
            })
            .await
            .expect_err("a forged resubmission is refused");
        assert_eq!(s.code(), Code::Unauthenticated, "{s:?}");
        assert!(s.message().contains("signature"), "{s:?}");
        let s = LedgerClient::new(ch.clone())
            .append(st.clone())
            .await
            .expect_err("also through Ledger.Append");
        assert_eq!(s.code(), Code::Unauthenticated, "{s:?}");
        let mut stream = LedgerClient::new(ch.clone())
            .append_stream(tokio_stream::iter(vec![st.clone()]))
            .await
            .expect("stream")
            .into_inner();
        let s = stream
            .message()
            .await
            .expect_err("and through AppendStream");
        assert_eq!(s.code(), Code::Unauthenticated, "{s:?}");
    }
    assert_eq!(t.log_len(), before, "nothing appended");

    // The genuine author resubmitting gets the first receipt and the verdict.
    let again = submissions
        .submit(pb::SubmitRequest {
            statement: Some(genuine),
            wait_for_verdict: true,
            wait_timeout_ms: 5_000,
        })
        .await
        .expect("genuine resubmission")
        .into_inner();
    let receipt = again.receipt.expect("receipt");
    assert!(receipt.duplicate);
    assert_eq!(Some(receipt.seq), first.receipt.map(|r| r.seq));
    assert_eq!(again.verdict.expect("verdict").status, verdict.status);
    t.server.shutdown().await.expect("shutdown");
}

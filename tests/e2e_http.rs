//! End-to-end tests of the HTTP read side: a real `docket serve --http`
//! process on a ledger made by `docket demo`.
//!
//! * `tiles_checkpoint_metrics_and_api`: the C2SP tlog-tiles paths checked
//!   by a tiny client written here (not Docket code): it verifies the
//!   checkpoint's signature with the key in `ledger.json`, fetches every
//!   tile and entry bundle, recomputes every leaf and the RFC 9162 root and
//!   compares it with the checkpoint; caching headers, 404s, the oversized
//!   entry stand-in, `/metrics`, the JSON API, and that nothing but GET is
//!   served.
//! * `explorer_in_chromium`: headless Chromium from the distribution,
//!   driven over the DevTools protocol (a websocket): the task timeline, the
//!   in-browser proof check (verified; a tampered proof served by
//!   intercepting the request in the browser is refused; a wrong pinned key
//!   is refused), the bundle viewer (a clean export accepted, a tampered
//!   one rejected). Screenshots go to `target/screenshots/`; with
//!   `DOCKET_SCREENSHOT_DOCS=1` the task page is also copied to
//!   `docs/img/task-page.png`. Without Chromium it prints
//!   `SKIPPED: no chromium` and passes.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use docket_e2e::{
    DEMO_TASK, ServeProcess, admin_key_of, fresh_key, register_key, run_docket, sign, sign_bytes,
};
use docket_proto::v1 as pb;
use ed25519_dalek::{Signature, VerifyingKey};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

// ------------------------------------------------------------ a tiny HTTP client

struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("UTF-8 body")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size line");
        let size = usize::from_str_radix(
            std::str::from_utf8(&body[..line_end])
                .expect("chunk size")
                .split(';')
                .next()
                .unwrap_or("")
                .trim(),
            16,
        )
        .expect("hex chunk size");
        body = &body[line_end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

/// One HTTP/1.0 request (the server closes the connection after it).
fn request(addr: SocketAddr, method: &str, path: &str) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("end of headers");
    let head = String::from_utf8(raw[..split].to_vec()).expect("headers");
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| {
        k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    }) {
        body = dechunk(&body);
    }
    Resp {
        status,
        headers,
        body,
    }
}

fn get(addr: SocketAddr, path: &str) -> Resp {
    request(addr, "GET", path)
}

// ------------------------------------------------------------ tlog math (independent)

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn leaf_hash(entry: &[u8]) -> [u8; 32] {
    sha256(&[&[0u8], entry])
}

/// RFC 9162 §2.1.1 MTH over leaf hashes.
fn mth(leaves: &[[u8; 32]]) -> [u8; 32] {
    match leaves.len() {
        0 => sha256(&[]),
        1 => leaves[0],
        n => {
            let mut k = 1;
            while k * 2 < n {
                k *= 2;
            }
            sha256(&[&[1u8], &mth(&leaves[..k]), &mth(&leaves[k..])])
        }
    }
}

/// c2sp.org/tlog-tiles path encoding of a tile index.
fn tile_index(n: u64) -> String {
    let digits = format!("{n}");
    let padded = format!("{}{digits}", "0".repeat((3 - digits.len() % 3) % 3));
    let groups: Vec<&str> = padded
        .as_bytes()
        .chunks(3)
        .map(|c| std::str::from_utf8(c).expect("digits"))
        .collect();
    let last = groups.len() - 1;
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            if i < last {
                format!("x{g}")
            } else {
                (*g).to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A checkpoint opened with a key read from `ledger.json`: origin, size, root.
fn open_checkpoint(note: &str, data: &Path) -> (String, u64, [u8; 32]) {
    let config: Value =
        serde_json::from_slice(&std::fs::read(data.join("ledger.json")).expect("ledger.json"))
            .expect("ledger.json parses");
    let name = config["origin"].as_str().expect("origin");
    let key: [u8; 32] = hex::decode(config["ledger_public_key"].as_str().expect("key"))
        .expect("hex")
        .try_into()
        .expect("32 bytes");
    let split = note.rfind("\n\n").expect("signature block");
    let body = &note[..=split];
    let sig_line = note[split + 2..].lines().next().expect("signature line");
    let rest = sig_line.strip_prefix("\u{2014} ").expect("em dash");
    let (signer, blob) = rest.split_once(' ').expect("name and signature");
    assert_eq!(signer, name);
    let blob = B64.decode(blob).expect("base64");
    assert_eq!(blob.len(), 68);
    let key_id = sha256(&[name.as_bytes(), &[0x0a, 0x01], &key]);
    assert_eq!(&blob[..4], &key_id[..4], "key ID");
    let sig = Signature::from_slice(&blob[4..]).expect("signature");
    VerifyingKey::from_bytes(&key)
        .expect("key")
        .verify_strict(body.as_bytes(), &sig)
        .expect("the checkpoint signature verifies");
    let lines: Vec<&str> = body.lines().collect();
    let size: u64 = lines[1].parse().expect("size");
    let root: [u8; 32] = B64
        .decode(lines[2])
        .expect("root")
        .try_into()
        .expect("32 bytes");
    (lines[0].to_string(), size, root)
}

// ------------------------------------------------------------ the server

struct Demo {
    dir: tempfile::TempDir,
    data: PathBuf,
    serve: ServeProcess,
    http: SocketAddr,
    task_id: String,
}

/// `docket demo --keep DIR`, then `docket serve --http 127.0.0.1:0` on it.
fn start_demo() -> Demo {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("ledger");
    let (code, out, err) = run_docket(&["demo", "--keep", data.to_str().expect("utf-8")]);
    assert_eq!(code, 0, "docket demo: {out}\n{err}");
    let serve = ServeProcess::start(&data, &["--http", "127.0.0.1:0"]);
    let http = serve
        .stdout_head
        .iter()
        .find_map(|l| l.strip_prefix("http on http://"))
        .unwrap_or_else(|| panic!("no `http on` line in {:?}", serve.stdout_head))
        .parse()
        .expect("an address");
    let task: Value = serde_json::from_str(DEMO_TASK).expect("demo task");
    Demo {
        dir,
        data,
        serve,
        http,
        task_id: task["task_id"].as_str().expect("task id").to_string(),
    }
}

/// The value of an unlabelled sample or of the sample with `labels`.
fn metric(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiles_checkpoint_metrics_and_api() {
    let demo = start_demo();
    let http = demo.http;
    let admin = admin_key_of(&demo.data);
    let ch = docket_cli::client::channel(&demo.serve.url())
        .await
        .expect("connect");
    let mut ledger = pb::ledger_client::LedgerClient::new(ch);

    // Past two full tiles: 600 small events, one over 65,535 bytes.
    let notes: Vec<pb::SignedStatement> = (0..600)
        .map(|n| sign_bytes("x-test.note", format!("{{\"n\":{n}}}").into_bytes(), &admin))
        .collect();
    let mut receipts = ledger
        .append_stream(tokio_stream::iter(notes))
        .await
        .expect("append stream")
        .into_inner();
    let mut appended = 0;
    while receipts.message().await.expect("receipt").is_some() {
        appended += 1;
    }
    assert_eq!(appended, 600);
    let big = format!("{{\"blob\":\"{}\"}}", "a".repeat(70_000));
    let big_receipt = ledger
        .append(sign_bytes("x-test.big", big.into_bytes(), &admin))
        .await
        .expect("append a large event")
        .into_inner();
    // A refused statement (an unregistered key) is counted as rejected.
    let refused = ledger
        .append(sign_bytes("x-test.note", b"{}".to_vec(), &fresh_key()))
        .await;
    assert!(refused.is_err(), "an unregistered key is refused");

    // The checkpoint, verified with the key the operator holds.
    let cp = get(http, "/checkpoint");
    assert_eq!(cp.status, 200);
    assert_eq!(cp.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(cp.header("cache-control"), Some("no-cache"));
    let (origin, size, root) = open_checkpoint(&cp.text(), &demo.data);
    assert!(origin.starts_with("docket.local/"));
    assert_eq!(
        size,
        big_receipt.seq + 1,
        "the checkpoint covers every append"
    );
    assert!(size > 512 && size < 768);

    // Every level-0 tile: full ones immutable, the partial one short-lived.
    let mut leaves: Vec<[u8; 32]> = Vec::new();
    for n in 0..size / 256 {
        let t = get(http, &format!("/tile/0/{}", tile_index(n)));
        assert_eq!(t.status, 200);
        assert_eq!(t.body.len(), 8192);
        assert_eq!(t.header("content-type"), Some("application/octet-stream"));
        assert_eq!(
            t.header("cache-control"),
            Some("public, max-age=31536000, immutable")
        );
        leaves.extend(
            t.body
                .chunks(32)
                .map(|c| <[u8; 32]>::try_from(c).expect("32")),
        );
    }
    let width = size % 256;
    let path = format!("/tile/0/{}.p/{width}", tile_index(size / 256));
    let t = get(http, &path);
    assert_eq!(t.status, 200, "{path}");
    assert_eq!(t.body.len() as u64, width * 32);
    assert_eq!(t.header("cache-control"), Some("public, max-age=5"));
    leaves.extend(
        t.body
            .chunks(32)
            .map(|c| <[u8; 32]>::try_from(c).expect("32")),
    );
    assert_eq!(leaves.len() as u64, size);
    assert_eq!(mth(&leaves), root, "the root recomputed from the tiles");

    // The level-1 partial tile: one hash per full level-0 tile.
    let t1 = get(http, &format!("/tile/1/000.p/{}", size / 256));
    assert_eq!(t1.status, 200);
    for (k, h) in t1.body.chunks(32).enumerate() {
        assert_eq!(h, mth(&leaves[k * 256..(k + 1) * 256]), "level-1 hash {k}");
    }

    // Entry bundles: every entry hashes to its leaf; the oversized event is
    // the documented stand-in, and its bytes come from the event API.
    let mut seq = 0u64;
    let mut oversized = 0;
    for n in 0..=size / 256 {
        let full = n < size / 256;
        let path = if full {
            format!("/tile/entries/{}", tile_index(n))
        } else {
            format!("/tile/entries/{}.p/{width}", tile_index(n))
        };
        let b = get(http, &path);
        assert_eq!(b.status, 200, "{path}");
        let mut rest = &b.body[..];
        while !rest.is_empty() {
            let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
            let entry = &rest[2..2 + len];
            rest = &rest[2 + len..];
            let i = usize::try_from(seq).expect("index");
            if entry.len() == 37 && entry[0] == 0xFF {
                oversized += 1;
                assert_eq!(entry[5..], leaves[i], "stand-in carries the leaf hash");
                let e = get(http, &format!("/api/event/{seq}")).json();
                let bytes = B64
                    .decode(e["event_b64"].as_str().expect("event_b64"))
                    .expect("base64");
                assert!(bytes.len() > 65_535);
                assert_eq!(
                    u32::from_be_bytes(entry[1..5].try_into().expect("4")) as usize,
                    bytes.len()
                );
                assert_eq!(leaf_hash(&bytes), leaves[i]);
            } else {
                assert_eq!(entry[0], 1, "an entry is canonical event bytes");
                assert_eq!(leaf_hash(entry), leaves[i], "entry {seq}");
            }
            seq += 1;
        }
    }
    assert_eq!(seq, size);
    assert_eq!(oversized, 1);

    // What does not exist is 404; only the canonical spelling is served.
    for missing in [
        format!("/tile/0/{}", tile_index(size / 256)),
        format!("/tile/0/{}.p/{}", tile_index(size / 256), width + 1),
        format!("/tile/0/{}", tile_index(size / 256 + 1)),
        "/tile/1/000".to_string(),
        "/tile/1/000.p/3".to_string(),
        "/tile/entries/003".to_string(),
        "/tile/0/x000/001".to_string(),
        "/tile/0/1".to_string(),
        "/tile/0/000.p/0".to_string(),
        "/tile/64/000".to_string(),
        "/no/such/path".to_string(),
    ] {
        assert_eq!(get(http, &missing).status, 404, "{missing}");
    }
    // A partial of a full tile is still served (a client on an older checkpoint).
    assert_eq!(get(http, "/tile/0/000.p/7").body.len(), 7 * 32);

    // Read-only: every other method is refused.
    for (method, path) in [
        ("POST", "/api/head"),
        ("PUT", "/checkpoint"),
        ("DELETE", "/tile/0/000"),
        ("POST", "/metrics"),
        ("PATCH", "/api/task/x"),
    ] {
        assert_eq!(request(http, method, path).status, 405, "{method} {path}");
    }

    // Metrics.
    let m = get(http, "/metrics");
    assert_eq!(m.status, 200);
    assert_eq!(
        m.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = m.text();
    assert_eq!(
        metric(
            &text,
            "docket_appends_total{kind=\"x-test.note\",outcome=\"appended\"}"
        ),
        Some(600.0),
        "{text}"
    );
    assert_eq!(
        metric(
            &text,
            "docket_appends_total{kind=\"x-test.big\",outcome=\"appended\"}"
        ),
        Some(1.0)
    );
    assert!(
        metric(
            &text,
            "docket_appends_total{kind=\"unknown\",outcome=\"rejected\"}"
        )
        .is_some_and(|v| v >= 1.0),
        "{text}"
    );
    assert_eq!(metric(&text, "docket_tree_size"), Some(size as f64));
    assert_eq!(metric(&text, "docket_failed_stop"), Some(0.0));
    assert_eq!(metric(&text, "docket_verify_queue_depth"), Some(0.0));
    assert!(metric(&text, "docket_commit_batches_total").is_some_and(|v| v >= 2.0));
    assert!(metric(&text, "docket_commit_batch_size_sum").is_some_and(|v| v >= 601.0));
    assert!(metric(&text, "docket_commit_batch_duration_seconds_count").is_some_and(|v| v >= 2.0));
    assert!(metric(&text, "docket_commit_batch_duration_seconds_sum").is_some_and(|v| v > 0.0));
    assert!(metric(&text, "docket_retention_sweeps").is_some());
    assert!(metric(&text, "process_resident_memory_bytes").is_some_and(|v| v > 1e6));
    assert!(metric(&text, "process_open_fds").is_some_and(|v| v >= 3.0));
    assert!(metric(&text, "process_cpu_seconds_total").is_some());
    assert!(metric(&text, "process_start_time_seconds").is_some_and(|v| v > 1e9));

    // The JSON API.
    let head = get(http, "/api/head").json();
    assert_eq!(head["tree_size"], json!(size));
    assert_eq!(head["root"], json!(hex::encode(root)));
    let task = get(http, &format!("/api/task/{}", demo.task_id));
    assert_eq!(task.status, 200);
    let task = task.json();
    let verdicts: Vec<&Value> = task["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|t| t["kind"] == "verdict.issued")
        .collect();
    assert_eq!(verdicts.len(), 2);
    assert_eq!(verdicts[0]["verdict"], "FAIL");
    assert_eq!(verdicts[0]["reason_code"], "CI_FAILED");
    assert!(
        verdicts[0]["superseded_by"].is_u64(),
        "the FAIL was superseded"
    );
    assert_eq!(verdicts[1]["verdict"], "PASS");
    assert!(verdicts[1]["superseded_by"].is_null());
    assert!(
        verdicts[1]["author_roles"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("verifier")))
    );
    let oid = task["evidence"][0]["oid"].as_str().expect("an OID");
    let ev = get(http, &format!("/api/evidence/{oid}")).json();
    assert_eq!(ev["oid"], oid);
    assert_eq!(ev["state"], "live");
    assert_eq!(ev["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(get(http, "/api/task/no-such-task").status, 404);
    assert_eq!(get(http, "/api/event/999999").status, 404);
    // A query that does not parse: 400 with the API's JSON error, like
    // every other error here (campaign 21a: it was axum's plain text).
    for bad in [
        "/api/events?before=abc",
        "/api/events?limit=-1",
        "/api/events?before=18446744073709551616",
    ] {
        let r = get(http, bad);
        assert_eq!(r.status, 400, "{bad}");
        assert!(
            r.header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "{bad}: {:?}",
            r.headers
        );
        assert!(
            r.json()["error"]
                .as_str()
                .is_some_and(|e| e.contains("bad query")),
            "{bad}"
        );
    }
    let proof = get(http, "/api/proof/3").json();
    assert_eq!(proof["tree_size"], json!(size));
    assert!(
        proof["checkpoint"]
            .as_str()
            .is_some_and(|n| n.contains("\n\n\u{2014} "))
    );

    // The explorer's files, with a strict content security policy.
    let index = get(http, "/");
    assert_eq!(index.status, 200);
    assert!(index.text().contains("/ui/app.js"));
    assert!(
        index
            .header("content-security-policy")
            .is_some_and(|c| c.contains("default-src 'none'") && c.contains("script-src 'self'"))
    );
    let js = get(http, "/ui/verify.js");
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(js.text().contains("crypto.subtle"));
    drop(demo.dir);
}

// ------------------------------------------------------------ the browser

/// A Chromium binary from the distribution, if one is installed.
fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DOCKET_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A headless Chromium with its DevTools websocket.
struct Chromium {
    child: Child,
    _profile: tempfile::TempDir,
    ws_url: String,
}

impl Chromium {
    fn launch(bin: &Path) -> Chromium {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut child = Command::new(bin)
            .args([
                "--headless",
                // Debian's chromium refuses to run as root without it.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-port=0",
                "--window-size=1280,1000",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn chromium");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.trim().strip_prefix("DevTools listening on ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let ws_url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("chromium printed its DevTools websocket");
        Chromium {
            child,
            _profile: profile,
            ws_url,
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A minimal Chrome DevTools Protocol client over one page session.
struct Cdp {
    ws: Ws,
    next_id: u64,
    session: Option<String>,
    events: VecDeque<Value>,
}

impl Cdp {
    async fn connect(url: &str) -> Cdp {
        let (ws, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("DevTools websocket");
        let mut cdp = Cdp {
            ws,
            next_id: 0,
            session: None,
            events: VecDeque::new(),
        };
        let target = cdp
            .call("Target.createTarget", json!({"url": "about:blank"}))
            .await;
        let attached = cdp
            .call(
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        cdp.session = Some(attached["sessionId"].as_str().expect("session").to_string());
        cdp.call("Page.enable", json!({})).await;
        cdp.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
        cdp
    }

    async fn read(&mut self) -> Value {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(60), self.ws.next())
                .await
                .expect("a DevTools message within 60 s")
                .expect("the websocket is open")
                .expect("a websocket message");
            if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
                return serde_json::from_str(t.as_str()).expect("CDP JSON");
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.try_call(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    async fn try_call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(tokio_tungstenite::tungstenite::Message::Text(
                msg.to_string().into(),
            ))
            .await
            .expect("send to DevTools");
        loop {
            let m = self.read().await;
            if m["id"] == json!(id) {
                return match m.get("error") {
                    Some(e) => Err(e.to_string()),
                    None => Ok(m["result"].clone()),
                };
            }
            if m.get("method").is_some() {
                self.events.push_back(m);
            }
        }
    }

    async fn next_event(&mut self, method: &str) -> Value {
        if let Some(i) = self.events.iter().position(|e| e["method"] == method) {
            return self.events.remove(i).expect("buffered event");
        }
        loop {
            let m = self.read().await;
            if m["method"] == method {
                return m;
            }
            if m.get("method").is_some() {
                self.events.push_back(m);
            }
        }
    }

    /// Evaluates `expr` in the page (promises awaited), by value.
    async fn eval(&mut self, expr: &str) -> Value {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expr, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        if let Some(ex) = r.get("exceptionDetails") {
            panic!("page exception in {expr}: {ex}");
        }
        r["result"]["value"].clone()
    }

    /// Polls `expr` until it is truthy (30 s at most).
    async fn wait_for(&mut self, expr: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        // Before the page exists the expression may throw: keep polling.
        let guarded =
            format!("(() => {{ try {{ return ({expr}); }} catch (e) {{ return null; }} }})()");
        loop {
            let v = self.eval(&guarded).await;
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {expr}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Loads `url` afresh (through about:blank, so a fragment change is a
    /// full load too).
    async fn goto(&mut self, url: &str) {
        self.call("Page.navigate", json!({"url": "about:blank"}))
            .await;
        self.call("Page.navigate", json!({"url": url})).await;
    }

    /// A PNG of the whole page.
    async fn screenshot(&mut self, path: &Path) {
        let m = self.call("Page.getLayoutMetrics", json!({})).await;
        let size = &m["cssContentSize"];
        let height = size["height"]
            .as_f64()
            .unwrap_or(1000.0)
            .clamp(600.0, 6000.0);
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true,
                       "clip": {"x": 0, "y": 0, "width": 1280, "height": height, "scale": 1}}),
            )
            .await;
        let png = B64
            .decode(shot["data"].as_str().expect("PNG data"))
            .expect("base64 PNG");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("screenshot dir");
        std::fs::write(path, png).expect("write screenshot");
    }
}

/// `target/screenshots/` (next to the profile directories).
fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let exe = std::env::current_exe().expect("current exe");
            // target/<profile>/deps/e2e_http-HASH → target
            exe.ancestors().nth(3).expect("target dir").to_path_buf()
        });
    target.join("screenshots")
}

/// Offset and length of `name`'s content in a ustar archive.
fn tar_entry(tar: &[u8], name: &str) -> (usize, usize) {
    let mut off = 0;
    while off + 512 <= tar.len() && tar[off] != 0 {
        let header = &tar[off..off + 512];
        let end = header[..100].iter().position(|&b| b == 0).unwrap_or(100);
        let entry = std::str::from_utf8(&header[..end]).expect("name");
        let size_field = std::str::from_utf8(&header[124..136]).expect("size");
        let size =
            usize::from_str_radix(size_field.trim_matches(|c: char| c == '\0' || c == ' '), 8)
                .expect("octal size");
        if entry == name {
            return (off + 512, size);
        }
        off += 512 + size.div_ceil(512) * 512;
    }
    panic!("{name} is not in the tar");
}

/// A copy of `tar` whose PASS verdict reads FAIL, with the manifest's
/// digest of events.bin updated so that only the cryptography can tell.
fn tampered_bundle(tar: &[u8]) -> Vec<u8> {
    let mut out = tar.to_vec();
    let (ev_off, ev_len) = tar_entry(tar, "events.bin");
    let old_digest = hex::encode(sha256(&[&tar[ev_off..ev_off + ev_len]]));
    let events = &mut out[ev_off..ev_off + ev_len];
    let needle = b"\"verdict\":\"PASS\"";
    let at = events
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the bundle carries the PASS verdict");
    events[at + 11..at + 15].copy_from_slice(b"FAIL");
    let new_digest = hex::encode(sha256(&[&out[ev_off..ev_off + ev_len]]));
    let (m_off, m_len) = tar_entry(tar, "manifest.json");
    let manifest = String::from_utf8(out[m_off..m_off + m_len].to_vec()).expect("manifest");
    assert!(manifest.contains(&old_digest));
    let patched = manifest.replace(&old_digest, &new_digest);
    out[m_off..m_off + m_len].copy_from_slice(patched.as_bytes());
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explorer_in_chromium() {
    let Some(bin) = find_chromium() else {
        println!("SKIPPED: no chromium");
        eprintln!("SKIPPED: no chromium (apt-get install chromium, or set DOCKET_CHROMIUM)");
        return;
    };
    let demo = start_demo();
    let base = format!("http://{}", demo.http);
    let shots = screenshot_dir();
    let head = get(demo.http, "/api/head").json();
    let vkey = head["verifier_key"].as_str().expect("vkey").to_string();

    // Export bundles to audit in the page: clean, and tampered.
    let clean = demo.dir.path().join("bundle.tar");
    let (code, out, err) = run_docket(&[
        "--server",
        &demo.serve.url(),
        "export",
        clean.to_str().expect("utf-8"),
        "--tar",
        "--task",
        &demo.task_id,
    ]);
    assert_eq!(code, 0, "export: {out}\n{err}");
    let tampered = demo.dir.path().join("tampered.tar");
    std::fs::write(
        &tampered,
        tampered_bundle(&std::fs::read(&clean).expect("read bundle")),
    )
    .expect("write tampered bundle");
    let (code, _, _) = run_docket(&[
        "audit",
        tampered.to_str().expect("utf-8"),
        "--trusted-key",
        &vkey,
    ]);
    assert_eq!(code, 5, "docket audit refuses the tampered bundle too");

    // Approvals on the demo task (a submitter asks, an approver answers).
    let ch = docket_cli::client::channel(&demo.serve.url())
        .await
        .expect("connect");
    let admin = admin_key_of(&demo.data);
    let submitter = register_key(&ch, &admin, &["submitter"]).await;
    let approver = register_key(&ch, &admin, &["approver"]).await;
    let mut approvals = pb::approvals_client::ApprovalsClient::new(ch);
    for (scope, grant) in [("merge", true), ("deploy:prod", false)] {
        let req = approvals
            .request_approval(sign(
                "approval.requested",
                &json!({"task_id": demo.task_id, "actor": "release-bot", "scope": scope,
                        "mutation_mode": "real-repo", "timestamp": "2026-02-09T14:31:00Z"}),
                &submitter,
            ))
            .await
            .expect("request approval")
            .into_inner();
        let mut answer = json!({"task_id": demo.task_id, "request_seq": req.seq, "actor": "alice",
                                "scope": scope, "mutation_mode": "real-repo",
                                "timestamp": "2026-02-09T14:32:00Z"});
        if grant {
            approvals
                .grant_approval(sign("approval.granted", &answer, &approver))
                .await
                .expect("grant");
        } else {
            answer["reason"] = json!("not today");
            approvals
                .deny_approval(sign("approval.denied", &answer, &approver))
                .await
                .expect("deny");
        }
    }

    let browser = Chromium::launch(&bin);
    let mut cdp = Cdp::connect(&browser.ws_url).await;

    // The head: the key is pinned on first use and the checkpoint verifies.
    cdp.goto(&format!("{base}/#/")).await;
    cdp.wait_for("document.getElementById('main').dataset.ready === '1'")
        .await;
    let status = cdp
        .wait_for(
            "(() => { const s = document.getElementById('head-status'); \
              return s && s.dataset.state !== 'pending' ? s.dataset.state + ': ' + s.textContent : null })()",
        )
        .await;
    assert!(
        status.as_str().is_some_and(|s| s.starts_with("verified")),
        "{status}"
    );
    let pinned = cdp
        .eval("JSON.parse(localStorage.getItem('docket.pinnedKey')).vkey")
        .await;
    assert_eq!(
        pinned,
        json!(vkey),
        "trust on first use pinned the server's key"
    );
    cdp.screenshot(&shots.join("home.png")).await;

    // The task: FAIL (CI_FAILED), superseded by a newer submission, then PASS.
    cdp.goto(&format!("{base}/#/task/{}", demo.task_id)).await;
    cdp.wait_for("document.getElementById('main').dataset.ready === '1'")
        .await;
    let rows = cdp
        .eval(
            "JSON.stringify([...document.querySelectorAll('tr.timeline-row')].map(r => ({ \
               seq: Number(r.dataset.seq), kind: r.dataset.kind, verdict: r.dataset.verdict, \
               reason: r.dataset.reason || '', superseded: r.dataset.supersededBy || '', \
               text: r.textContent })))",
        )
        .await;
    let rows: Vec<Value> = serde_json::from_str(rows.as_str().expect("rows")).expect("JSON");
    let verdicts: Vec<&Value> = rows
        .iter()
        .filter(|r| r["kind"] == "verdict.issued")
        .collect();
    assert_eq!(verdicts.len(), 2, "{rows:?}");
    assert_eq!(verdicts[0]["verdict"], "FAIL");
    assert_eq!(verdicts[0]["reason"], "CI_FAILED");
    assert_ne!(
        verdicts[0]["superseded"], "",
        "the FAIL shows its supersession"
    );
    assert!(
        verdicts[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("test_failure"))
    );
    assert_eq!(verdicts[1]["verdict"], "PASS");
    assert_eq!(verdicts[1]["superseded"], "");
    assert!(
        rows.iter()
            .filter(|r| r["kind"] == "submission.received")
            .count()
            == 2
    );
    assert_eq!(
        cdp.eval("document.getElementById('task-status').textContent")
            .await,
        json!("PASS")
    );
    let approvals = cdp
        .eval(
            "[...document.querySelectorAll('tr.approval-row')].map(r => r.dataset.state).join(',')",
        )
        .await;
    assert_eq!(approvals, json!("granted,denied"));
    assert!(
        rows.iter().any(|r| r["kind"] == "approval.granted"
            && r["text"]
                .as_str()
                .is_some_and(|t| t.contains("alice granted merge"))),
        "{rows:?}"
    );
    let live = cdp
        .eval("document.querySelectorAll('tr.evidence-row[data-state=\"live\"]').length")
        .await;
    assert!(live.as_u64().is_some_and(|n| n >= 5), "{live}");
    cdp.screenshot(&shots.join("task.png")).await;
    if std::env::var_os("DOCKET_SCREENSHOT_DOCS").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/img/task-page.png");
        std::fs::create_dir_all(docs.parent().expect("docs/img")).expect("docs/img");
        std::fs::copy(shots.join("task.png"), &docs).expect("copy the task screenshot");
    }

    // An event page: the browser verifies the proof, the checkpoint
    // signature and the author signature.
    let pass_seq = verdicts[1]["seq"].as_u64().expect("seq");
    let wait_proof = "(() => { const s = document.getElementById('proof-status'); \
                      return s && s.dataset.state !== 'pending' ? s.dataset.state + ': ' + s.textContent : null })()";
    cdp.goto(&format!("{base}/#/event/{pass_seq}")).await;
    let status = cdp.wait_for(wait_proof).await;
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.starts_with("verified: verified")),
        "{status}"
    );
    assert_eq!(
        cdp.eval("document.getElementById('event-kind').textContent")
            .await,
        json!("verdict.issued")
    );
    cdp.screenshot(&shots.join("event.png")).await;

    // A tampered proof, served by intercepting the request in the browser
    // (the server has no way to serve one): refused.
    let mut proof = get(demo.http, &format!("/api/proof/{pass_seq}")).json();
    let first = proof["proof"][0]
        .as_str()
        .expect("a proof hash")
        .to_string();
    let flipped = format!(
        "{}{}",
        if first.starts_with('0') { "1" } else { "0" },
        &first[1..]
    );
    proof["proof"][0] = json!(flipped);
    cdp.call(
        "Fetch.enable",
        json!({"patterns": [{"urlPattern": "*/api/proof/*", "requestStage": "Request"}]}),
    )
    .await;
    cdp.goto(&format!("{base}/#/event/{pass_seq}")).await;
    let paused = cdp.next_event("Fetch.requestPaused").await;
    cdp.call(
        "Fetch.fulfillRequest",
        json!({
            "requestId": paused["params"]["requestId"],
            "responseCode": 200,
            "responseHeaders": [{"name": "Content-Type", "value": "application/json"}],
            "body": B64.encode(proof.to_string()),
        }),
    )
    .await;
    let status = cdp.wait_for(wait_proof).await;
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.starts_with("failed: NOT verified: inclusion proof")),
        "{status}"
    );
    cdp.screenshot(&shots.join("event-tampered-proof.png"))
        .await;
    cdp.call("Fetch.disable", json!({})).await;

    // Another pinned key: the checkpoint's signature is not by it.
    let other = fresh_key().verifying_key().to_bytes();
    let name = head["origin"].as_str().expect("origin");
    let id = sha256(&[name.as_bytes(), &[0x0a, 0x01], &other]);
    let mut raw = vec![1u8];
    raw.extend_from_slice(&other);
    let other_vkey = format!("{name}+{}+{}", hex::encode(&id[..4]), B64.encode(&raw));
    cdp.eval(&format!(
        "localStorage.setItem('docket.pinnedKey', JSON.stringify({{vkey: {}, how: 'pasted', at: new Date().toISOString()}}))",
        json!(other_vkey)
    ))
    .await;
    cdp.goto(&format!("{base}/#/event/{pass_seq}")).await;
    let status = cdp.wait_for(wait_proof).await;
    assert!(
        status
            .as_str()
            .is_some_and(|s| s.contains("NOT verified: checkpoint: no signature by the pinned key")),
        "{status}"
    );
    cdp.eval(&format!(
        "localStorage.setItem('docket.pinnedKey', JSON.stringify({{vkey: {}, how: 'pasted', at: new Date().toISOString()}}))",
        json!(vkey)
    ))
    .await;

    // An evidence page.
    let oid = get(demo.http, &format!("/api/task/{}", demo.task_id)).json()["evidence"][0]["oid"]
        .as_str()
        .expect("an OID")
        .to_string();
    let record = get(demo.http, &format!("/api/evidence/{oid}")).json();
    cdp.goto(&format!("{base}/#/evidence/{oid}")).await;
    cdp.wait_for("document.getElementById('main').dataset.ready === '1'")
        .await;
    assert_eq!(
        cdp.eval("document.getElementById('evidence-digest').textContent")
            .await,
        record["sha256"]
    );
    cdp.screenshot(&shots.join("evidence.png")).await;

    // The bundle viewer: a clean export is accepted, a tampered one rejected.
    for (file, expect, shot) in [
        (&clean, "accepted", "bundle.png"),
        (&tampered, "rejected", "bundle-tampered.png"),
    ] {
        cdp.goto(&format!("{base}/#/bundle")).await;
        cdp.wait_for("document.getElementById('main').dataset.ready === '1'")
            .await;
        let doc = cdp.call("DOM.getDocument", json!({"depth": 0})).await;
        let input = cdp
            .call(
                "DOM.querySelector",
                json!({"nodeId": doc["root"]["nodeId"], "selector": "#bundle-file"}),
            )
            .await;
        cdp.call(
            "DOM.setFileInputFiles",
            json!({"nodeId": input["nodeId"], "files": [file.to_str().expect("utf-8")]}),
        )
        .await;
        let state = cdp
            .wait_for(
                "(() => { const s = document.getElementById('bundle-status'); \
                  return s && (s.dataset.state === 'accepted' || s.dataset.state === 'rejected') \
                  ? s.dataset.state + ': ' + s.textContent : null })()",
            )
            .await;
        assert!(
            state.as_str().is_some_and(|s| s.starts_with(expect)),
            "{file:?}: {state}"
        );
        if expect == "rejected" {
            let kinds = cdp
                .eval("[...document.querySelectorAll('tr.finding.error')].map(r => r.dataset.kind).join(',')")
                .await;
            let kinds = kinds.as_str().unwrap_or("");
            assert!(kinds.contains("signature"), "{kinds}");
            assert!(
                !kinds.contains("digest"),
                "the manifest was kept consistent: {kinds}"
            );
        }
        cdp.screenshot(&shots.join(shot)).await;
    }
    println!("screenshots in {}", shots.display());
    drop(browser);
}

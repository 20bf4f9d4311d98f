//! Support for the end-to-end tests: real servers on loopback (in process
//! through `docket_cli::server::spawn`, or the built `docket` binary),
//! signed statements, keys and the bundled demo artifacts.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use docket_cli::server::{RunningServer, ServeOptions};
use docket_domain::{Statement, keys};
use docket_proto::v1 as pb;
use ed25519_dalek::SigningKey;
use serde_json::Value;
use tonic::transport::Channel;

/// The bundled demo task (`cli/demo/task.json`).
pub const DEMO_TASK: &str = docket_cli::server::demo::TASK_JSON;

/// A server running in this process on a temporary ledger.
pub struct TestServer {
    pub dir: tempfile::TempDir,
    pub server: RunningServer,
    pub admin: SigningKey,
}

impl TestServer {
    /// Starts a server on a fresh ledger, listening on 127.0.0.1 port 0.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Like [`TestServer::start`], with options adjusted by `f`.
    pub async fn start_with(f: impl FnOnce(&mut ServeOptions)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = ServeOptions::new(dir.path().join("ledger"), loopback0());
        f(&mut opts);
        let server = docket_cli::server::spawn(opts)
            .await
            .expect("server starts");
        let admin_path = server
            .init
            .as_ref()
            .expect("a fresh ledger is initialised")
            .admin_key_path
            .clone();
        let admin = keys::read_key_file(&admin_path).expect("admin key");
        Self { dir, server, admin }
    }

    /// The data directory.
    pub fn data(&self) -> PathBuf {
        self.dir.path().join("ledger")
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// A new connection.
    pub async fn channel(&self) -> Channel {
        docket_cli::client::channel(&self.url())
            .await
            .expect("connect")
    }

    /// Durable length of the log.
    pub fn log_len(&self) -> u64 {
        self.server.ledger().len()
    }
}

/// `127.0.0.1:0`.
pub fn loopback0() -> SocketAddr {
    "127.0.0.1:0".parse().expect("loopback address")
}

/// Signs a JSON document as a wire statement.
pub fn sign(kind: &str, payload: &Value, key: &SigningKey) -> pb::SignedStatement {
    sign_bytes(kind, serde_json::to_vec(payload).expect("JSON"), key)
}

/// Signs exact payload bytes as a wire statement.
pub fn sign_bytes(kind: &str, payload: Vec<u8>, key: &SigningKey) -> pb::SignedStatement {
    docket_cli::server::convert::statement_to_proto(&Statement::sign(kind, payload, key))
}

/// The hex public key.
pub fn public_hex(key: &SigningKey) -> String {
    hex::encode(key.verifying_key().to_bytes())
}

/// A fresh key (not registered).
pub fn fresh_key() -> SigningKey {
    keys::generate().expect("key")
}

/// Registers a fresh key with `roles`, signed by `admin`.
pub async fn register_key(ch: &Channel, admin: &SigningKey, roles: &[&str]) -> SigningKey {
    let key = fresh_key();
    let st = sign(
        "key.registered",
        &serde_json::json!({"public_key": public_hex(&key), "roles": roles}),
        admin,
    );
    pb::keys_client::KeysClient::new(ch.clone())
        .register_key(st)
        .await
        .expect("register key");
    key
}

/// The bundled demo task with its task id replaced by `task_id`.
pub fn task_contract(task_id: &str) -> Value {
    let mut v: Value = serde_json::from_str(DEMO_TASK).expect("demo task");
    v["task_id"] = Value::String(task_id.to_string());
    v
}

/// A bundled artifacts directory (`pass` or `fail`) for `task_id`.
pub fn demo_files(which: &str, task_id: &str) -> Vec<(String, Vec<u8>)> {
    let list = if which == "pass" {
        docket_cli::server::demo::PASS_FILES
    } else {
        docket_cli::server::demo::FAIL_FILES
    };
    list.iter()
        .map(|(name, content)| {
            let bytes = if *name == "submit.json" {
                let mut v: Value = serde_json::from_str(content).expect("submit.json");
                v["task_id"] = Value::String(task_id.to_string());
                serde_json::to_vec(&v).expect("JSON")
            } else {
                content.as_bytes().to_vec()
            };
            ((*name).to_string(), bytes)
        })
        .collect()
}

/// A fresh task id (UUID v4 layout from random bytes).
pub fn new_task_id() -> String {
    let mut b = fresh_key().to_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(&b[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

// ------------------------------------------------------------ the binary

/// The `docket` binary next to this test executable (`target/<profile>/`),
/// built once per test run with the same profile.
pub fn docket_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("current exe");
        // target/<profile>/deps/e2e_grpc-HASH → target/<profile>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf();
        let bin = profile_dir.join(format!("docket{}", std::env::consts::EXE_SUFFIX));
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", "docket", "--bin", "docket"]);
        if release {
            cmd.arg("--release");
        }
        let status = cmd
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building the docket binary failed");
        assert!(bin.exists(), "{} exists after the build", bin.display());
        bin
    })
    .clone()
}

/// Runs `docket ARGS` to completion; returns (exit code, stdout, stderr).
pub fn run_docket(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(docket_bin())
        .args(args)
        .env_remove("DOCKET_SERVER")
        .env_remove("DOCKET_DATA")
        .output()
        .expect("run docket");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `docket serve` child process.
pub struct ServeProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub stdout_head: Vec<String>,
}

impl ServeProcess {
    /// Starts `docket --data DIR serve --listen 127.0.0.1:0 EXTRA…` and waits
    /// for its `listening on ADDR` line.
    pub fn start(data: &Path, extra: &[&str]) -> Self {
        let data_s = data.to_str().expect("utf-8 path");
        let mut child = Command::new(docket_bin())
            .args(["--data", data_s, "serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .env_remove("DOCKET_SERVER")
            .stdout(Stdio::piped())
            // DOCKET_E2E_SERVER_LOGS=1 shows the server's log.
            .stderr(if std::env::var_os("DOCKET_E2E_SERVER_LOGS").is_some() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("spawn docket serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut head = Vec::new();
        let addr = loop {
            assert!(
                Instant::now() < deadline,
                "no `listening on` line: {head:?}"
            );
            let line = lines
                .next()
                .expect("serve printed a line before exiting")
                .expect("read stdout");
            if let Some(a) = line.strip_prefix("listening on ") {
                break a.trim().parse().expect("an address");
            }
            head.push(line);
        };
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            addr,
            stdout_head: head,
        }
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Sends SIGTERM and returns the exit code.
    pub fn terminate(mut self) -> i32 {
        // `kill(1)` rather than libc, so this crate needs no `unsafe`.
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "serve did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ------------------------------------------------------------ storage

/// Starts a server on `data` (initialising it when empty), listening on
/// 127.0.0.1 port 0, with options adjusted by `f`.
pub async fn spawn_at(data: &Path, f: impl FnOnce(&mut ServeOptions)) -> RunningServer {
    let mut opts = ServeOptions::new(data, loopback0());
    f(&mut opts);
    docket_cli::server::spawn(opts)
        .await
        .expect("server starts")
}

/// The admin key `init` wrote into a data directory.
pub fn admin_key_of(data: &Path) -> SigningKey {
    keys::read_key_file(&data.join("keys/admin.key")).expect("admin key")
}

/// A tmpfs mounted on a fresh temporary directory (tests run as root);
/// unmounted when dropped.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `16m`), or prints why not and returns
    /// `None` (the caller skips its test).
    pub fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Self { dir }),
            Ok(o) => {
                eprintln!(
                    "SKIPPED: cannot mount a tmpfs (needs root): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIPPED: cannot run mount: {e}");
                None
            }
        }
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Free bytes of the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> u64 {
    docket_cli::server::uploads::free_space(path)
        .expect("statvfs")
        .0
}

/// Fills the filesystem holding `dir` with `dir/fill` until at most
/// `leave` bytes are free (0: until the disk is full). Returns the file.
pub fn fill_disk(dir: &Path, leave: u64) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join("fill");
    let mut f = std::fs::File::create(&path).expect("create fill file");
    let chunk = vec![0u8; 64 << 10];
    loop {
        let free = free_bytes(dir);
        if free <= leave {
            break;
        }
        let n = usize::try_from(free - leave).map_or(chunk.len(), |n| n.min(chunk.len()));
        match f.write(&chunk[..n]) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    let _ = f.sync_all();
    path
}

/// Every `docket.v1` service health reports on.
pub const DOCKET_SERVICES: &[&str] = &[
    "docket.v1.Ledger",
    "docket.v1.Keys",
    "docket.v1.Admin",
    "docket.v1.Tasks",
    "docket.v1.Evidence",
    "docket.v1.Executions",
    "docket.v1.Submissions",
    "docket.v1.Verdicts",
    "docket.v1.Approvals",
    "docket.v1.Retention",
    "docket.v1.Export",
];

/// The health status of `service` (`""`: the whole server).
pub async fn health_of(ch: &Channel, service: &str) -> tonic_health::ServingStatus {
    use tonic_health::pb::health_check_response::ServingStatus as Wire;
    let r = tonic_health::pb::health_client::HealthClient::new(ch.clone())
        .check(tonic_health::pb::HealthCheckRequest {
            service: service.to_string(),
        })
        .await
        .expect("health check")
        .into_inner();
    match Wire::try_from(r.status) {
        Ok(Wire::Serving) => tonic_health::ServingStatus::Serving,
        Ok(Wire::NotServing) => tonic_health::ServingStatus::NotServing,
        _ => tonic_health::ServingStatus::Unknown,
    }
}

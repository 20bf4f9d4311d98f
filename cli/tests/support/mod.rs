//! Helpers shared by the command-line tests (`mod support;` in each).

#![allow(
    dead_code,
    reason = "each test binary compiles this module and uses a part of it"
)]

use std::process::{Command, Output};

/// The built `docket` binary, with every `DOCKET_*` variable of the
/// caller's environment removed: what a test sees must not depend on the
/// shell it runs in (a test sets what it needs on the returned command).
pub fn docket() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_docket"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("DOCKET_") {
            c.env_remove(name);
        }
    }
    c
}

/// A fresh ledger made by `docket init` at `ROOT/ledger` (ROOT a temporary
/// directory, removed when the returned guard drops).
pub fn init_ledger() -> (tempfile::TempDir, std::path::PathBuf) {
    let root = tempfile::tempdir().expect("a temporary directory");
    let data = root.path().join("ledger");
    let out = docket()
        .arg("--data")
        .arg(&data)
        .arg("init")
        .output()
        .expect("run docket init");
    assert!(out.status.success(), "docket init: {}", text(&out));
    (root, data)
}

/// Where a command goes: an embedded ledger (`--data DIR`) or a server
/// (`--server URL`).
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    Data(&'a std::path::Path),
    Server(&'a str),
}

impl At<'_> {
    /// `docket --json` aimed here.
    pub fn docket(self) -> Command {
        let mut c = docket();
        c.arg("--json");
        match self {
            At::Data(dir) => c.arg("--data").arg(dir),
            At::Server(url) => c.args(["--server", url]),
        };
        c
    }
}

/// The tree size of the latest signed checkpoint, read at `at`.
pub fn checkpoint_size(at: At<'_>) -> u64 {
    let out = at.docket().arg("checkpoint").output().expect("run docket");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("checkpoint JSON");
    v["size"].as_u64().expect("a size")
}

/// `docket --json … log append --kind x-note --payload /dev/null --key
/// KEY` at `at`: one statement with an empty payload; the finished command.
pub fn append_empty(at: At<'_>, key: &std::path::Path) -> Output {
    at.docket()
        .args([
            "log",
            "append",
            "--kind",
            "x-note",
            "--payload",
            "/dev/null",
            "--key",
        ])
        .arg(key)
        .output()
        .expect("run docket log append")
}

/// `docket --json … log append --kind KIND --stdin --key KEY` at `at`, one
/// statement per line of `lines`; the finished command.
pub fn append_lines(
    at: At<'_>,
    key: &std::path::Path,
    kind: &str,
    lines: impl IntoIterator<Item = String>,
) -> Output {
    use std::io::Write as _;
    let mut child = at
        .docket()
        .args(["log", "append", "--kind", kind, "--stdin", "--key"])
        .arg(key)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start docket log append");
    {
        // Invariant: stdin was piped just above.
        let mut stdin = child.stdin.take().expect("piped stdin");
        for line in lines {
            writeln!(stdin, "{line}").expect("write a line");
        }
    }
    child
        .wait_with_output()
        .expect("wait for docket log append")
}

/// Exit code, stdout and stderr of a finished command, for assertion
/// messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Reads `listening on ADDR` from a `docket serve` child started with piped
/// stdout, keeps draining its stdout (so it never blocks on a full pipe) and
/// returns `http://ADDR`.
pub fn listening_url(child: &mut std::process::Child) -> String {
    use std::io::BufRead as _;
    // Invariant: callers start the server with `Stdio::piped()` stdout.
    let stdout = child.stdout.take().expect("serve's stdout is piped");
    let mut lines = std::io::BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("serve printed its address")
            .expect("serve's stdout is UTF-8");
        if let Some(a) = line.strip_prefix("listening on ") {
            break a.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    format!("http://{addr}")
}

/// A `docket serve` child on a free port of 127.0.0.1 (stdout drained,
/// stderr dropped), killed when dropped.
pub struct Server {
    child: std::process::Child,
    /// `http://ADDR`.
    pub url: String,
}

impl Server {
    /// Starts `docket serve` for `data` and waits for its address.
    pub fn start(data: &std::path::Path) -> Server {
        Self::start_with(data, &[])
    }

    /// [`Server::start`] with more `serve` flags.
    pub fn start_with(data: &std::path::Path, flags: &[&str]) -> Server {
        let mut child = docket()
            .arg("--data")
            .arg(data)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(flags)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start docket serve");
        let url = listening_url(&mut child);
        Server { child, url }
    }

    /// Stops it with SIGTERM (a graceful stop releases the data
    /// directory's lock) and waits.
    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }

    /// Stops it with SIGTERM and returns how it exited.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        // Invariant: the child was spawned by `start_with` and not yet
        // waited for (`terminate` takes the server by value).
        self.child.wait().expect("wait for docket serve")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

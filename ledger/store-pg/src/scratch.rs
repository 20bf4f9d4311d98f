//! A throwaway PostgreSQL server for tests and benches.
//!
//! [`ScratchPostgres::shared`] starts one server per process (`initdb` and
//! `pg_ctl` from `PATH` or Debian's `/usr/lib/postgresql/*/bin`), on a free
//! loopback port, in a temporary directory, with `fsync` and synchronous
//! commit on (the figures measured on it are real). `initdb` refuses to run
//! as root, so as root it runs as the `postgres` user (`runuser`). A
//! watchdog process stops the server and removes its directory when this
//! process ends, however it ends. `DOCKET_TEST_PG_URL` points the tests at
//! an existing server instead (each test then creates its own database).
//! When neither is available, callers print why and skip.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{PgError, Result};

/// A PostgreSQL server to create scratch databases in.
#[derive(Debug)]
pub struct ScratchPostgres {
    /// URL of the server's `postgres` database (an admin connection).
    admin_url: String,
    /// Host and port, for building database URLs.
    authority: String,
    user: String,
    /// The server's directory (None for an external server).
    dir: Option<PathBuf>,
    bin: Option<PathBuf>,
    run_as: Option<String>,
}

static SHARED: OnceLock<std::result::Result<ScratchPostgres, String>> = OnceLock::new();
static NEXT_DB: AtomicU64 = AtomicU64::new(0);

impl ScratchPostgres {
    /// The process's scratch server, started on first use; `Err(why)` when
    /// there is no PostgreSQL to use (callers print `SKIPPED: …` and pass).
    pub fn shared() -> std::result::Result<&'static ScratchPostgres, String> {
        SHARED
            .get_or_init(|| Self::start().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Starts a server (or adopts `DOCKET_TEST_PG_URL`).
    fn start() -> Result<Self> {
        if let Ok(url) = std::env::var("DOCKET_TEST_PG_URL") {
            let config: postgres::Config = url
                .parse()
                .map_err(|e: postgres::Error| PgError::Url(e.to_string()))?;
            let host = match config.get_hosts().first() {
                Some(postgres::config::Host::Tcp(h)) => h.clone(),
                _ => "127.0.0.1".into(),
            };
            let port = config.get_ports().first().copied().unwrap_or(5432);
            let user = config.get_user().unwrap_or("postgres").to_string();
            return Ok(Self {
                admin_url: url,
                authority: format!("{host}:{port}"),
                user,
                dir: None,
                bin: None,
                run_as: None,
            });
        }
        let bin = find_bin_dir().ok_or_else(|| {
            PgError::Unavailable(
                "initdb/pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin \
                 (apt-get install postgresql)"
                    .into(),
            )
        })?;
        let run_as = is_root().then(|| "postgres".to_string());
        if run_as.is_some() && !user_exists("postgres") {
            return Err(PgError::Unavailable(
                "running as root and there is no `postgres` user to run initdb as".into(),
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("docket-pg-")
            .tempdir()
            .map_err(|e| PgError::Unavailable(format!("temporary directory: {e}")))?
            .keep();
        let server = Self {
            admin_url: String::new(),
            authority: String::new(),
            user: "postgres".into(),
            dir: Some(dir.clone()),
            bin: Some(bin.clone()),
            run_as,
        };
        if let Some(user) = &server.run_as {
            run(Command::new("chown").arg(format!("{user}:")).arg(&dir))?;
        }
        let data = dir.join("data");
        server.run_pg(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        // A watchdog: when this process is gone, stop the server and
        // remove its directory.
        let pid = std::process::id();
        let pg_ctl = bin.join("pg_ctl");
        let stop = match &server.run_as {
            Some(u) => format!(
                "runuser -u {u} -- {} -D {} -m immediate stop",
                pg_ctl.display(),
                data.display()
            ),
            None => format!(
                "{} -D {} -m immediate stop",
                pg_ctl.display(),
                data.display()
            ),
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; rm -rf {}",
            dir.display()
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| PgError::Unavailable(format!("starting the watchdog: {e}")))?;
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port()?;
            let opts = format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=on \
                 -c synchronous_commit=on -c max_connections=200 -c shared_buffers=128MB",
                dir.display()
            );
            let log = dir.join("server.log");
            match server.run_pg(
                "pg_ctl",
                &[
                    "-D",
                    path_str(&data)?,
                    "-l",
                    path_str(&log)?,
                    "-w",
                    "-t",
                    "60",
                    "-o",
                    &opts,
                    "start",
                ],
            ) {
                Ok(()) => {
                    return Ok(Self {
                        admin_url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                        authority: format!("127.0.0.1:{port}"),
                        ..server
                    });
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(PgError::Unavailable(format!("pg_ctl start failed: {last}")))
    }

    fn run_pg(&self, tool: &str, args: &[&str]) -> Result<()> {
        // Invariant: only called on a server this process started.
        let bin = self.bin.as_ref().expect("a local server").join(tool);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        cmd.args(args);
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        run(&mut cmd)
    }

    /// URL of the server's `postgres` database.
    pub fn admin_url(&self) -> &str {
        &self.admin_url
    }

    /// Creates a fresh, empty database and returns its URL.
    pub fn fresh_database(&self, prefix: &str) -> Result<String> {
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            NEXT_DB.fetch_add(1, Ordering::Relaxed)
        );
        crate::pool::blocking(|| {
            let mut client = postgres::Client::connect(&self.admin_url, postgres::NoTls)
                .map_err(|e| PgError::db("connecting to the scratch server", e))?;
            client
                .batch_execute(&format!("CREATE DATABASE \"{name}\""))
                .map_err(|e| PgError::db("creating a scratch database", e))
        })?;
        Ok(format!(
            "postgres://{}@{}/{name}",
            self.user, self.authority
        ))
    }

    /// The server's directory (its `server.log` is there), when local.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

fn path_str(p: &Path) -> Result<&str> {
    p.to_str()
        .ok_or_else(|| PgError::Unavailable(format!("non-UTF-8 path {}", p.display())))
}

fn run(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| PgError::Unavailable(format!("running {cmd:?}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(PgError::Unavailable(format!(
            "{cmd:?} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )))
    }
}

fn free_port() -> Result<u16> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| PgError::Unavailable(format!("finding a free port: {e}")))
}

/// The directory holding `initdb` and `pg_ctl`: `PATH` first, then the
/// newest `/usr/lib/postgresql/*/bin`.
pub fn find_bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn user_exists(user: &str) -> bool {
    Command::new("id")
        .arg(user)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A plain connection to `url`, for tests that read or tamper with the
/// tables directly.
pub fn connect(url: &str) -> Result<postgres::Client> {
    crate::pool::blocking(|| {
        postgres::Client::connect(url, postgres::NoTls).map_err(|e| PgError::db("connecting", e))
    })
}

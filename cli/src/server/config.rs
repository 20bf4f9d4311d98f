//! `docket serve` configuration: flags, then `DOCKET_*` environment
//! variables (clap reads both), then an optional `--config FILE` (TOML, or
//! JSON when the name ends in `.json`), then built-in defaults.
//!
//! ```toml
//! data = "/var/lib/docket"        # used when --data/DOCKET_DATA is not given
//! listen = "127.0.0.1:50051"
//! max_inflight = 1024             # appends in flight before callers wait
//! queue_depth = 4096              # group-commit queue (requests)
//! max_batch = 1024                # most statements per group commit
//! concurrency_per_connection = 256
//! read_token = "s3cret"           # reads need `authorization: Bearer s3cret`
//! auto_verify = true              # the ledger key runs the verdict engine
//! origin = "docket.example/prod"  # checkpoint origin when initialising
//! shutdown_grace_secs = 10        # then open connections are cut
//! sweep_every_secs = 3600         # periodic retention sweep; 0 = off
//! http = "127.0.0.1:8080"        # HTTP read side (metrics, tiles, explorer); off unless set
//! tls_cert = "/etc/docket/server.pem"   # TLS (both cert and key)
//! tls_key = "/etc/docket/server.key"
//! tls_client_ca = "/etc/docket/clients-ca.pem"   # mutual TLS
//! upload_quota = "1GiB"           # stored upload bytes per key; 0 = none
//! disk_reserve = "256MiB"         # or "5%"; uploads must leave this free; 0 = none
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;
use docket_domain::LedgerOptions;
use serde::Deserialize;

use super::uploads::{self, DiskReserve, UploadLimits};
use crate::exit::{self, CliError};

/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";
/// Default interval of `docket serve`'s periodic retention sweep (1 h).
pub const DEFAULT_SWEEP_EVERY_SECS: u64 = 3600;
/// The default `--data` (see `main.rs`); a config file's `data` applies only
/// when `--data`/`DOCKET_DATA` left it at this value.
pub const DEFAULT_DATA: &str = "./docket-data";

/// `docket serve` flags.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on (port 0 picks a free port; the bound address is
    /// printed as `listening on ADDR`).
    #[arg(long, env = "DOCKET_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Configuration file (TOML, or JSON for `*.json`): the global
    /// `--config FILE` (env `DOCKET_CONFIG`, else `DATA/docket.toml`), set
    /// by `main.rs`; one file holds the global options and serve's.
    #[arg(skip)]
    pub config: Option<PathBuf>,
    /// Appends in flight at once; further callers wait (back-pressure).
    #[arg(long, env = "DOCKET_MAX_INFLIGHT")]
    pub max_inflight: Option<usize>,
    /// Capacity of the group-commit queue.
    #[arg(long, env = "DOCKET_QUEUE_DEPTH")]
    pub queue_depth: Option<usize>,
    /// Most statements one group commit takes.
    #[arg(long, env = "DOCKET_MAX_BATCH")]
    pub max_batch: Option<usize>,
    /// Concurrent requests per client connection.
    #[arg(long, env = "DOCKET_CONCURRENCY_PER_CONNECTION")]
    pub concurrency_per_connection: Option<usize>,
    /// Protect reads with this bearer token (writes are always signed).
    #[arg(long, env = "DOCKET_READ_TOKEN", hide_env_values = true)]
    pub read_token: Option<String>,
    /// Run the built-in verdict engine on each submission (auto-verify).
    #[arg(long, env = "DOCKET_AUTO_VERIFY")]
    pub auto_verify: Option<bool>,
    /// Checkpoint origin used when initialising an empty data directory.
    #[arg(long, env = "DOCKET_ORIGIN")]
    pub origin: Option<String>,
    /// On shutdown, how long in-flight calls and open connections get to
    /// finish before they are cut (seconds).
    #[arg(long, env = "DOCKET_SHUTDOWN_GRACE_SECS")]
    pub shutdown_grace_secs: Option<u64>,
    /// Run a retention sweep (signed by the ledger key) this often, in
    /// seconds; 0 turns periodic sweeps off.
    #[arg(long, env = "DOCKET_SWEEP_EVERY_SECS")]
    pub sweep_every_secs: Option<u64>,
    /// Also serve the HTTP read side on this address: `/metrics`,
    /// `/checkpoint` and tlog tiles, the web explorer (off by default).
    #[arg(long, env = "DOCKET_HTTP", value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Serve TLS with this PEM certificate chain (with --tls-key).
    #[arg(long, env = "DOCKET_SERVER_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, env = "DOCKET_SERVER_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Require client certificates signed by this PEM CA (mutual TLS).
    #[arg(long, env = "DOCKET_SERVER_TLS_CLIENT_CA")]
    pub tls_client_ca: Option<PathBuf>,
    /// Most bytes of evidence content one key may have stored through
    /// uploads (e.g. `1GiB`; 0: no quota). Default 1 GiB.
    #[arg(long, env = "DOCKET_UPLOAD_QUOTA", value_parser = uploads::parse_bytes)]
    pub upload_quota: Option<u64>,
    /// Free space uploads must leave on the data directory's filesystem
    /// (e.g. `256MiB` or `5%`; 0: none). Default 256 MiB. Appends are not
    /// affected.
    #[arg(long, env = "DOCKET_DISK_RESERVE", value_parser = DiskReserve::parse)]
    pub disk_reserve: Option<DiskReserve>,
}

/// A size in the configuration file: a number of bytes or a string
/// (`"512MiB"`, and for `disk_reserve` also `"5%"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SizeSetting {
    Bytes(u64),
    Text(String),
}

/// The optional configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub data: Option<PathBuf>,
    pub listen: Option<SocketAddr>,
    pub max_inflight: Option<usize>,
    pub queue_depth: Option<usize>,
    pub max_batch: Option<usize>,
    pub concurrency_per_connection: Option<usize>,
    pub read_token: Option<String>,
    pub auto_verify: Option<bool>,
    pub origin: Option<String>,
    pub shutdown_grace_secs: Option<u64>,
    pub sweep_every_secs: Option<u64>,
    pub http: Option<SocketAddr>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_client_ca: Option<PathBuf>,
    pub upload_quota: Option<SizeSetting>,
    pub disk_reserve: Option<SizeSetting>,
    // The global options (`main.rs` applies them; serve ignores them here).
    pub server: Option<String>,
    pub json: Option<bool>,
    pub log_format: Option<String>,
    pub store: Option<String>,
    pub trusted_key: Option<String>,
}

impl ConfigFile {
    /// Reads a TOML or JSON configuration file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read config {}: {e}", path.display()),
            )
        })?;
        let parsed = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        } else {
            toml::from_str(&text).map_err(|e| e.to_string())
        };
        parsed.map_err(|e| {
            CliError::new(
                exit::INVALID,
                format!("invalid config {}: {e}", path.display()),
            )
            .into()
        })
    }
}

/// Everything a running server needs, resolved.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub data: PathBuf,
    pub listen: SocketAddr,
    pub max_inflight: usize,
    pub concurrency_per_connection: usize,
    pub ledger: LedgerOptions,
    pub read_token: Option<String>,
    pub auto_verify: bool,
    pub origin: Option<String>,
    /// How long graceful shutdown waits for in-flight calls and connections.
    pub shutdown_grace: std::time::Duration,
    /// Interval of the periodic retention sweep (None: off).
    pub sweep_every: Option<std::time::Duration>,
    /// The HTTP read side's address (None: off).
    pub http: Option<SocketAddr>,
    /// TLS (and mutual TLS) settings; None serves plaintext HTTP/2.
    pub tls: Option<TlsFiles>,
    /// Upload quota per key and the disk reserve.
    pub uploads: UploadLimits,
    /// The log in PostgreSQL (`--store`, see `crate::pg_cmds`); None: the
    /// embedded store in the data directory (a ledger `serve` initialises
    /// there gets `ledger.layout`).
    pub store: Option<String>,
}

/// PEM files of the server's TLS identity and, for mutual TLS, the CA that
/// signs client certificates.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
}

impl ServeOptions {
    /// Defaults for a data directory and listen address.
    pub fn new(data: impl Into<PathBuf>, listen: SocketAddr) -> Self {
        Self {
            data: data.into(),
            listen,
            max_inflight: 1024,
            concurrency_per_connection: 256,
            ledger: LedgerOptions::default(),
            read_token: None,
            auto_verify: true,
            origin: None,
            shutdown_grace: std::time::Duration::from_secs(10),
            sweep_every: None,
            http: None,
            tls: None,
            uploads: UploadLimits::default(),
            store: None,
        }
    }

    /// Merges flags/env, the config file and defaults (in that order).
    pub fn resolve(data_flag: &Path, args: &ServeArgs) -> Result<Self> {
        let file = match &args.config {
            Some(p) => ConfigFile::read(p)?,
            None => ConfigFile::default(),
        };
        let data = if data_flag == Path::new(DEFAULT_DATA) {
            file.data.clone().unwrap_or_else(|| data_flag.to_path_buf())
        } else {
            data_flag.to_path_buf()
        };
        let default_listen: SocketAddr = DEFAULT_LISTEN
            .parse()
            .context("the default listen address parses")?;
        let mut o = Self::new(data, args.listen.or(file.listen).unwrap_or(default_listen));
        if let Some(v) = args.max_inflight.or(file.max_inflight) {
            o.max_inflight = v;
        }
        if let Some(v) = args.queue_depth.or(file.queue_depth) {
            o.ledger.queue_depth = v;
        }
        if let Some(v) = args.max_batch.or(file.max_batch) {
            o.ledger.max_batch = v;
        }
        if let Some(v) = args
            .concurrency_per_connection
            .or(file.concurrency_per_connection)
        {
            o.concurrency_per_connection = v;
        }
        o.read_token = args.read_token.clone().or(file.read_token);
        if let Some(v) = args.auto_verify.or(file.auto_verify) {
            o.auto_verify = v;
        }
        o.origin = args.origin.clone().or(file.origin);
        if let Some(v) = args.shutdown_grace_secs.or(file.shutdown_grace_secs) {
            o.shutdown_grace = std::time::Duration::from_secs(v);
        }
        let sweep = args
            .sweep_every_secs
            .or(file.sweep_every_secs)
            .unwrap_or(DEFAULT_SWEEP_EVERY_SECS);
        o.sweep_every = (sweep > 0).then(|| std::time::Duration::from_secs(sweep));
        o.http = args.http.or(file.http);
        let cert = args.tls_cert.clone().or(file.tls_cert);
        let key = args.tls_key.clone().or(file.tls_key);
        let client_ca = args.tls_client_ca.clone().or(file.tls_client_ca);
        o.tls = match (cert, key) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert,
                key,
                client_ca,
            }),
            (None, None) if client_ca.is_none() => None,
            _ => {
                return Err(CliError::new(
                    exit::USAGE,
                    "TLS needs both --tls-cert and --tls-key (and --tls-client-ca only with them)",
                )
                .into());
            }
        };
        let bad = |what: &str, e: String| CliError::new(exit::USAGE, format!("{what}: {e}"));
        let quota = match (args.upload_quota, file.upload_quota) {
            (Some(q), _) | (None, Some(SizeSetting::Bytes(q))) => Some(q),
            (None, Some(SizeSetting::Text(t))) => {
                Some(uploads::parse_bytes(&t).map_err(|e| bad("upload_quota", e))?)
            }
            (None, None) => None,
        };
        if let Some(q) = quota {
            o.uploads.quota = (q > 0).then_some(q);
        }
        let reserve = match (args.disk_reserve, file.disk_reserve) {
            (Some(r), _) => Some(r),
            (None, Some(SizeSetting::Bytes(b))) => Some(DiskReserve::Bytes(b)),
            (None, Some(SizeSetting::Text(t))) => {
                Some(DiskReserve::parse(&t).map_err(|e| bad("disk_reserve", e))?)
            }
            (None, None) => None,
        };
        if let Some(r) = reserve {
            o.uploads.reserve =
                (r != DiskReserve::Bytes(0) && r != DiskReserve::Percent(0)).then_some(r);
        }
        o.validate()?;
        Ok(o)
    }

    /// Refuses settings that cannot work, listing every problem.
    pub fn validate(&self) -> Result<()> {
        let mut problems = Vec::new();
        if self.max_inflight == 0 {
            problems.push("max_inflight must be at least 1");
        }
        if self.ledger.queue_depth == 0 {
            problems.push("queue_depth must be at least 1");
        }
        if self.ledger.max_batch == 0 {
            problems.push("max_batch must be at least 1");
        }
        if self.concurrency_per_connection == 0 {
            problems.push("concurrency_per_connection must be at least 1");
        }
        if self.read_token.as_deref() == Some("") {
            problems.push("read_token must not be empty");
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CliError::new(
                exit::USAGE,
                format!("bad server settings: {}", problems.join("; ")),
            )
            .into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ServeArgs {
        ServeArgs {
            listen: None,
            config: None,
            max_inflight: None,
            queue_depth: None,
            max_batch: None,
            concurrency_per_connection: None,
            read_token: None,
            auto_verify: None,
            origin: None,
            shutdown_grace_secs: None,
            sweep_every_secs: None,
            http: None,
            tls_cert: None,
            tls_key: None,
            tls_client_ca: None,
            upload_quota: None,
            disk_reserve: None,
        }
    }

    #[test]
    fn flags_beat_file_beat_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let toml_path = dir.path().join("docket.toml");
        std::fs::write(
            &toml_path,
            "data = \"/srv/docket\"\nlisten = \"127.0.0.1:7000\"\nmax_batch = 10\nqueue_depth = 99\n",
        )
        .unwrap();
        let mut a = args();
        a.config = Some(toml_path);
        a.max_batch = Some(20);
        let o = ServeOptions::resolve(Path::new(DEFAULT_DATA), &a).unwrap();
        assert_eq!(o.data, PathBuf::from("/srv/docket"));
        assert_eq!(o.listen.port(), 7000);
        assert_eq!(o.ledger.max_batch, 20);
        assert_eq!(o.ledger.queue_depth, 99);
        assert_eq!(o.max_inflight, 1024);
        let o = ServeOptions::resolve(Path::new("/explicit"), &a).unwrap();
        assert_eq!(o.data, PathBuf::from("/explicit"));

        let json_path = dir.path().join("docket.json");
        std::fs::write(&json_path, r#"{"listen":"127.0.0.1:0","read_token":"t"}"#).unwrap();
        let mut a = args();
        a.config = Some(json_path);
        let o = ServeOptions::resolve(Path::new(DEFAULT_DATA), &a).unwrap();
        assert_eq!(o.listen.port(), 0);
        assert_eq!(o.read_token.as_deref(), Some("t"));

        let sized = dir.path().join("sized.toml");
        std::fs::write(&sized, "upload_quota = \"2MiB\"\ndisk_reserve = \"5%\"\n").unwrap();
        let mut a = args();
        a.config = Some(sized.clone());
        let o = ServeOptions::resolve(Path::new(DEFAULT_DATA), &a).unwrap();
        assert_eq!(o.uploads.quota, Some(2 << 20));
        assert_eq!(o.uploads.reserve, Some(DiskReserve::Percent(5)));
        a.upload_quota = Some(0);
        a.disk_reserve = Some(DiskReserve::Bytes(0));
        let o = ServeOptions::resolve(Path::new(DEFAULT_DATA), &a).unwrap();
        assert_eq!(o.uploads.quota, None);
        assert_eq!(o.uploads.reserve, None);
        let o = ServeOptions::resolve(Path::new(DEFAULT_DATA), &args()).unwrap();
        assert_eq!(o.uploads, UploadLimits::default());
        std::fs::write(&sized, "upload_quota = \"lots\"\n").unwrap();
        let mut a = args();
        a.config = Some(sized);
        assert!(ServeOptions::resolve(Path::new(DEFAULT_DATA), &a).is_err());

        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "nonsense = 1\n").unwrap();
        let mut a = args();
        a.config = Some(bad);
        assert!(ServeOptions::resolve(Path::new(DEFAULT_DATA), &a).is_err());
    }
}

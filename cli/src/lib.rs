//! # docket (CLI and server)
//!
//! The `docket` binary's library: every command a user types, written once
//! against [`backend::Backend`] so it runs on an embedded ledger (`--data`)
//! or through gRPC (`--server`), and the tonic gRPC server. It holds no
//! ledger logic of its own: events, proofs and projections are in
//! `docket-domain`, evidence rules and the verdict engine in
//! `docket-verifier`.

pub mod backend;
pub mod client;
pub mod core_cmds;
pub mod domain_cmds;
pub mod evidence_list;
pub mod exec_cmds;
pub mod exit;
pub mod export_cmds;
pub mod http;
pub mod keyfile;
pub mod output;
pub mod pg_cmds;
pub mod retention_cmds;
pub mod served_replay;
pub mod server;
pub mod verdict_import;
pub mod verify_cmds;

use std::path::PathBuf;
use std::sync::OnceLock;

use anyhow::Result;

use crate::backend::{Backend, Embedded};
use crate::output::Output;

/// What every command gets: where the ledger is, how to print.
pub struct Ctx {
    /// `--data DIR` (env `DOCKET_DATA`).
    pub data: PathBuf,
    /// `--server URL` (env `DOCKET_SERVER`).
    pub server: Option<String>,
    /// `--store postgres://…` (env `DOCKET_STORE`): the log lives in
    /// PostgreSQL ([`pg_cmds`]); None: the embedded store in `data`.
    pub store: Option<String>,
    /// The embedded layout a new ledger gets (`--store sled`, else tiles);
    /// an existing ledger keeps the one it has.
    pub new_layout: docket_log::Layout,
    pub out: Output,
    backend: OnceLock<Box<dyn Backend + Send + Sync>>,
    /// The address of the `docket serve` found holding `data` (set by
    /// [`Ctx::backend`] when it falls back to it).
    served: OnceLock<String>,
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("data", &self.data)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl Ctx {
    pub fn new(data: PathBuf, server: Option<String>, out: Output) -> Self {
        Self {
            data,
            server,
            store: None,
            new_layout: docket_log::Layout::Tiles,
            out,
            backend: OnceLock::new(),
            served: OnceLock::new(),
        }
    }

    /// The same context with the log in PostgreSQL at `store`.
    pub fn with_store(mut self, store: Option<String>) -> Self {
        self.store = store;
        self
    }

    /// The same context creating new embedded ledgers in `layout`.
    pub fn with_new_layout(mut self, layout: docket_log::Layout) -> Self {
        self.new_layout = layout;
        self
    }

    /// The server commands talk to: `--server`, else the `docket serve`
    /// found holding the data directory (after [`Ctx::backend`]).
    pub fn server_url(&self) -> Option<&str> {
        self.server
            .as_deref()
            .or_else(|| self.served.get().map(String::as_str))
    }

    /// The backend: the gRPC client with `--server`, else the embedded
    /// ledger in `--data` (opened once, on first use).
    pub fn backend(&self) -> Result<&dyn Backend> {
        if let Some(b) = self.backend.get() {
            return Ok(b.as_ref());
        }
        let b: Box<dyn Backend + Send + Sync> = match (&self.server, &self.store) {
            (Some(url), _) => client::connect(url)?,
            (None, Some(store)) => Box::new(pg_cmds::open_embedded(&self.data, store)?),
            (None, None) => match Embedded::open(&self.data) {
                Ok(e) => Box::new(e),
                Err(e) => match served::holder(&self.data, &e) {
                    // A server holds the data directory: use it.
                    Some(addr) => {
                        eprintln!(
                            "note: the ledger in {} is served by {addr}; using it",
                            self.data.display()
                        );
                        let b = client::connect(&addr)?;
                        let _ = self.served.set(addr);
                        b
                    }
                    None => return Err(e),
                },
            },
        };
        Ok(self.backend.get_or_init(|| b).as_ref())
    }
}

/// `DATA/server/address`: where the `docket serve` holding a data directory
/// listens (written atomically at start, removed at a clean stop), so local
/// commands can use the server instead of failing on sled's lock.
pub mod served {
    use std::path::{Path, PathBuf};

    use crate::exit::{self, CliError};

    /// The address file of `data`.
    pub fn address_file(data: &Path) -> PathBuf {
        data.join("server").join("address")
    }

    /// Records `url` (e.g. `http://127.0.0.1:50051`) for `data`.
    pub fn record(data: &Path, url: &str) -> std::io::Result<()> {
        let path = address_file(data);
        // Invariant: address_file always ends in `server/address`.
        let dir = path.parent().expect("address_file has a parent");
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!("address.{}.tmp", std::process::id()));
        std::fs::write(&tmp, format!("{url}\n"))?;
        std::fs::rename(&tmp, &path)
    }

    /// Forgets the address (at a clean stop).
    pub fn remove(data: &Path) {
        let _ = std::fs::remove_file(address_file(data));
    }

    /// The recorded address, if any.
    pub fn address(data: &Path) -> Option<String> {
        let s = std::fs::read_to_string(address_file(data)).ok()?;
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_string())
    }

    /// Whether `e` says another process holds the store's lock.
    pub fn is_lock_held(e: &anyhow::Error) -> bool {
        format!("{e:#}").contains("could not acquire lock")
    }

    /// The serving address when `e` is sled's lock held by that server.
    pub fn holder(data: &Path, e: &anyhow::Error) -> Option<String> {
        if is_lock_held(e) { address(data) } else { None }
    }

    /// Who holds the data directory's store, in words.
    fn holder_in_words(data: &Path) -> String {
        match address(data) {
            Some(a) => format!("the server at {a}"),
            None => "another process (a `docket serve`?)".to_string(),
        }
    }

    /// For a second `docket serve` on a served data directory: a held lock
    /// becomes a usage error (exit 64) naming the server that holds it.
    pub fn explain_second_server(data: &Path, e: anyhow::Error) -> anyhow::Error {
        if !is_lock_held(&e) {
            return e;
        }
        CliError::new(
            exit::USAGE,
            format!(
                "{} already serves the data directory {}: one ledger has one writer. Use that server (`--server`), stop it first, or serve another --data",
                holder_in_words(data),
                data.display()
            ),
        )
        .into()
    }

    /// For commands that must read the store themselves (`replay`,
    /// `recover`): a held lock becomes a clear usage error.
    pub fn explain(data: &Path, e: anyhow::Error) -> anyhow::Error {
        if !is_lock_held(&e) {
            return e;
        }
        let who = holder_in_words(data);
        CliError::new(
            exit::USAGE,
            format!(
                "{who} holds the data directory {}; stop it, or use a copy. To check the log while it serves: `docket export DIR` then `docket audit DIR --trusted-key \"$(docket checkpoint --vkey)\"` (root recomputed, every event re-admitted)",
                data.display()
            ),
        )
        .into()
    }
}

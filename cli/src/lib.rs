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
pub mod exit;
pub mod export_cmds;
pub mod http;
pub mod output;
pub mod pg_cmds;
pub mod retention_cmds;
pub mod server;
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
    /// PostgreSQL ([`pg_cmds`]); None: the sled store in `data`.
    pub store: Option<String>,
    pub out: Output,
    backend: OnceLock<Box<dyn Backend + Send + Sync>>,
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
            out,
            backend: OnceLock::new(),
        }
    }

    /// The same context with the log in PostgreSQL at `store`.
    pub fn with_store(mut self, store: Option<String>) -> Self {
        self.store = store;
        self
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
            (None, None) => Box::new(Embedded::open(&self.data)?),
        };
        Ok(self.backend.get_or_init(|| b).as_ref())
    }
}

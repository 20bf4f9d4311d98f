//! The one interface every ledger command is written against, with two
//! implementations: [`Embedded`] (a ledger opened in this process on
//! `--data DIR`) and the gRPC client (`--server URL`, in `client.rs`). Both
//! return the same view types, so output and exit codes do not depend on
//! the mode.

use std::sync::mpsc::Receiver;

use anyhow::Result;
use base64::Engine as _;
use docket_domain::merkle;
use docket_domain::{Event, Ledger, LedgerOptions, Receipt, Statement};
use serde::Serialize;

use crate::exit::{self, CliError};
use crate::output::rfc3339_ms;

/// One event as commands print it.
#[derive(Debug, Clone, Serialize)]
pub struct EventView {
    pub seq: u64,
    pub kind: String,
    pub author: String,
    pub recorded_at_ms: u64,
    pub recorded_at: String,
    pub prev_hash: String,
    /// The payload parsed as JSON when it is JSON (a convenience).
    pub payload: Option<serde_json::Value>,
    pub payload_b64: String,
    pub signature: String,
    /// The exact canonical bytes.
    pub event_b64: String,
    pub leaf_hash: String,
}

impl EventView {
    /// Builds the view from canonical bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let e = Event::decode(bytes)?;
        let b64 = base64::engine::general_purpose::STANDARD;
        Ok(Self {
            seq: e.seq,
            kind: e.kind.clone(),
            author: hex::encode(e.author),
            recorded_at_ms: e.recorded_at_ms,
            recorded_at: rfc3339_ms(e.recorded_at_ms),
            prev_hash: hex::encode(e.prev_hash),
            payload: serde_json::from_slice(&e.payload).ok(),
            payload_b64: b64.encode(&e.payload),
            signature: hex::encode(e.signature),
            event_b64: b64.encode(bytes),
            leaf_hash: hex::encode(merkle::leaf_hash(bytes)),
        })
    }

    /// One human line.
    pub fn human(&self) -> String {
        let payload = match &self.payload {
            Some(v) => v.to_string(),
            None => format!(
                "({} bytes, base64 {})",
                self.payload_b64.len() * 3 / 4,
                self.payload_b64
            ),
        };
        format!(
            "#{} {} {} by {}… {}",
            self.seq,
            self.recorded_at,
            self.kind,
            &self.author[..12],
            payload
        )
    }
}

/// A durable append's receipt as commands print it.
#[derive(Debug, Clone, Serialize)]
pub struct ReceiptView {
    pub seq: u64,
    pub kind: String,
    pub leaf_hash: String,
    pub recorded_at_ms: u64,
    pub duplicate: bool,
}

impl ReceiptView {
    pub fn new(r: &Receipt, kind: &str) -> Self {
        Self {
            seq: r.seq,
            kind: kind.to_string(),
            leaf_hash: hex::encode(r.leaf_hash),
            recorded_at_ms: r.recorded_at_ms,
            duplicate: r.duplicate,
        }
    }

    pub fn human(&self) -> String {
        if self.duplicate {
            format!(
                "{} already in the log at seq {} (nothing appended)",
                self.kind, self.seq
            )
        } else {
            format!(
                "appended {} at seq {} (leaf {})",
                self.kind,
                self.seq,
                &self.leaf_hash[..16]
            )
        }
    }
}

/// The latest signed checkpoint.
#[derive(Debug, Clone, Serialize)]
pub struct CheckpointView {
    pub size: u64,
    pub root: String,
    pub note: String,
    pub verifier_key: String,
}

/// An inclusion proof (RFC 9162 §2.1.3).
#[derive(Debug, Clone, Serialize)]
pub struct InclusionView {
    pub leaf_index: u64,
    pub tree_size: u64,
    pub leaf_hash: String,
    pub root_hash: String,
    pub proof: Vec<String>,
}

/// A consistency proof (RFC 9162 §2.1.4).
#[derive(Debug, Clone, Serialize)]
pub struct ConsistencyView {
    pub old_size: u64,
    pub new_size: u64,
    pub old_root: String,
    pub new_root: String,
    pub proof: Vec<String>,
}

/// Every ledger operation a command can ask for.
pub trait Backend {
    /// Appends one statement; returns once durable.
    fn append(&self, statement: Statement) -> Result<ReceiptView>;
    /// Appends a stream of statements, pipelined through group commit;
    /// `on_result` gets each result in order as it becomes durable.
    fn append_stream(
        &self,
        statements: Receiver<Statement>,
        on_result: &mut dyn FnMut(Result<ReceiptView>),
    ) -> Result<()>;
    /// One event.
    fn event(&self, seq: u64) -> Result<EventView>;
    /// Events from `from`; with `follow`, keeps waiting for new ones until
    /// `on_event` returns false.
    fn tail(
        &self,
        from: u64,
        follow: bool,
        on_event: &mut dyn FnMut(EventView) -> bool,
    ) -> Result<()>;
    /// The latest signed checkpoint.
    fn checkpoint(&self) -> Result<CheckpointView>;
    /// Inclusion proof of `seq` in the tree of `size` (default: latest).
    fn inclusion(&self, seq: u64, size: Option<u64>) -> Result<InclusionView>;
    /// Consistency proof from `old` to `new` (default: latest).
    fn consistency(&self, old: u64, new: Option<u64>) -> Result<ConsistencyView>;
    /// The embedded ledger, when this backend is one (for commands that only
    /// run on a data directory, such as `replay`).
    fn embedded(&self) -> Option<&Embedded> {
        None
    }
    /// The files of an export bundle built by a server
    /// (`Export.ExportBundle`), by bundle path, each checked against the
    /// SHA-256 the server sent. Only the gRPC backend implements it; write
    /// them with `docket_domain::export::bundle::{write_dir, write_tar}`;
    /// with the export report the server sent (JSON), if any.
    fn export_files(&self, _request: docket_proto::v1::ExportRequest) -> Result<ExportedFiles> {
        Err(CliError::new(exit::USAGE, "a server export needs --server").into())
    }
}

/// An export's files by bundle path, and the report the server sent.
pub type ExportedFiles = (
    std::collections::BTreeMap<String, Vec<u8>>,
    Option<serde_json::Value>,
);

/// A ledger opened in this process.
#[derive(Debug)]
pub struct Embedded {
    pub ledger: Ledger,
}

impl Embedded {
    /// Opens the ledger in `dir`.
    pub fn open(dir: &std::path::Path) -> Result<Self> {
        if !docket_domain::ledger::exists(dir) {
            return Err(CliError::new(
                exit::MISSING,
                format!(
                    "no ledger in {} (run `docket init` or `docket serve`)",
                    dir.display()
                ),
            )
            .into());
        }
        Ok(Self {
            ledger: Ledger::open(dir, LedgerOptions::default())?,
        })
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        if let Err(e) = self.ledger.close() {
            tracing::warn!("closing the ledger: {e}");
        }
    }
}

/// A view of stored bytes: bytes the ledger stored that no longer decode are
/// corruption (exit 5), not bad input.
fn stored_view(seq: u64, bytes: &[u8]) -> Result<EventView> {
    EventView::from_bytes(bytes).map_err(|e| {
        docket_domain::LedgerError::Corrupt {
            location: format!("event {seq}"),
            detail: format!("stored bytes do not decode: {e}"),
        }
        .into()
    })
}

fn hexes(v: &[merkle::Hash]) -> Vec<String> {
    v.iter().map(hex::encode).collect()
}

impl Backend for Embedded {
    fn append(&self, statement: Statement) -> Result<ReceiptView> {
        let kind = statement.kind.clone();
        let r = self.ledger.append(statement)?;
        Ok(ReceiptView::new(&r, &kind))
    }

    fn append_stream(
        &self,
        statements: Receiver<Statement>,
        on_result: &mut dyn FnMut(Result<ReceiptView>),
    ) -> Result<()> {
        // Keep many appends in flight so they share group commits, and
        // report them in order as each becomes durable.
        let (pending_tx, pending_rx) = std::sync::mpsc::sync_channel(4096);
        let ledger = self.ledger.clone();
        let submitter = std::thread::spawn(move || -> Result<()> {
            for st in statements {
                let kind = st.kind.clone();
                let rx = ledger.submit(vec![st])?;
                if pending_tx.send((kind, rx)).is_err() {
                    break;
                }
            }
            Ok(())
        });
        for (kind, rx) in pending_rx {
            let result = match rx.recv() {
                Ok(mut v) => v
                    .pop()
                    .ok_or_else(|| anyhow::anyhow!("no result"))
                    .and_then(|r| r.map_err(anyhow::Error::from))
                    .map(|r| ReceiptView::new(&r, &kind)),
                Err(_) => Err(anyhow::anyhow!("the ledger closed")),
            };
            on_result(result);
        }
        submitter
            .join()
            .map_err(|_| anyhow::anyhow!("submitter thread panicked"))?
    }

    fn event(&self, seq: u64) -> Result<EventView> {
        stored_view(seq, &self.ledger.event_bytes(seq)?)
    }

    fn tail(
        &self,
        from: u64,
        follow: bool,
        on_event: &mut dyn FnMut(EventView) -> bool,
    ) -> Result<()> {
        let mut next = from;
        loop {
            let len = self.ledger.len();
            while next < len {
                let to = (next + 1024).min(len);
                for (seq, bytes) in self.ledger.store().event_range(next, to)? {
                    if !on_event(stored_view(seq, &bytes)?) {
                        return Ok(());
                    }
                }
                next = to;
            }
            if !follow {
                return Ok(());
            }
            self.ledger
                .wait_for_len_above(next, std::time::Duration::from_millis(500));
        }
    }

    fn checkpoint(&self) -> Result<CheckpointView> {
        let Some((cp, note)) = self.ledger.checkpoint()? else {
            return Err(CliError::new(exit::MISSING, "the log is empty: no checkpoint yet").into());
        };
        Ok(CheckpointView {
            size: cp.size,
            root: hex::encode(cp.root),
            note,
            verifier_key: self.ledger.verifier_key(),
        })
    }

    fn inclusion(&self, seq: u64, size: Option<u64>) -> Result<InclusionView> {
        let size = size.unwrap_or_else(|| self.ledger.len());
        // Checked against the signed checkpoint before it is shown.
        let proved = self.ledger.prove_inclusion(seq, size)?;
        Ok(InclusionView {
            leaf_index: seq,
            tree_size: size,
            leaf_hash: hex::encode(proved.leaf),
            root_hash: hex::encode(proved.root),
            proof: hexes(&proved.path),
        })
    }

    fn consistency(&self, old: u64, new: Option<u64>) -> Result<ConsistencyView> {
        let new = new.unwrap_or_else(|| self.ledger.len());
        let proved = self.ledger.prove_consistency(old, new)?;
        Ok(ConsistencyView {
            old_size: old,
            new_size: new,
            old_root: hex::encode(proved.old_root),
            new_root: hex::encode(proved.new_root),
            proof: hexes(&proved.path),
        })
    }

    fn embedded(&self) -> Option<&Embedded> {
        Some(self)
    }
}

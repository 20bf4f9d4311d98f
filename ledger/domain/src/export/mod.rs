//! Export bundles and their offline audit.
//!
//! A bundle is a self-contained directory (or one tar file) that a third
//! party verifies with no ledger and no network: the signed checkpoint it is
//! proven against, the ledger's verifier key, the events as their exact
//! canonical bytes, RFC 9162 inclusion proofs, the key events every author's
//! authority follows from, an optional consistency proof from an earlier
//! checkpoint, optional evidence blobs, a summary the auditor rebuilds, and a
//! manifest of SHA-256 digests. The byte layout is specified in
//! `docs/BUNDLE.md`; this module is its reference implementation.
//!
//! * [`writer`]: `export` from any [`LogSource`] (the ledger, or an
//!   in-memory log for tests, vectors and benches).
//! * [`audit`]: the offline auditor, producing findings with exit codes.
//! * [`bundle`]: reading and writing bundle files (directory or tar), with
//!   the self-containment rules.
//! * [`format`]: the file formats (manifest, `events.bin`, proofs).
//! * [`summary`]: the summary both sides compute from the carried events.
//! * [`vsa`]: SLSA Verification Summary Attestations in DSSE envelopes.

pub mod audit;
pub mod bundle;
pub mod format;
pub mod memory;
pub mod recover;
pub mod source;
pub mod summary;
pub mod vsa;
pub mod writer;

use std::path::PathBuf;

use crate::error::LedgerError;

pub use audit::{AuditOptions, AuditReport, Finding, FindingKind, Severity, audit};
pub use memory::MemoryLog;
pub use source::LogSource;
pub use writer::{AsOf, ExportFormat, ExportOptions, ExportReport, export};

/// Errors of `export` (the auditor reports findings instead of failing).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The ledger failed to serve events, proofs or checkpoints.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Writing the bundle (or reading an input file) failed.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The export request is inconsistent (e.g. `--from` after `--to`, an
    /// `--as-of` beyond the log, a `--since` checkpoint from another log).
    /// Fix the arguments; nothing was written.
    #[error("invalid export request: {0}")]
    Request(String),
    /// What the request names does not exist (a task, an `--as-of` time
    /// before genesis, an empty log).
    #[error("not found: {0}")]
    NotFound(String),
    /// The output path exists; bundles are never written over.
    #[error("{} already exists; choose a new output path", .0.display())]
    Exists(PathBuf),
}

impl ExportError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

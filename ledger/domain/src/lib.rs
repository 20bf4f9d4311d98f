//! # docket-domain
//!
//! The core of Docket, an event-sourced verdict ledger: author-signed events
//! with one canonical byte encoding, an embedded sled store with group commit
//! and real fsync, an RFC 9162 Merkle tree with inclusion and consistency
//! proofs, C2SP checkpoints signed as signed notes, projections folded from
//! the log (keys, and the verdict-ledger domain), replay with full
//! verification, retention and export bundles.
//!
//! It is **not** a server: it does no networking and runs no async runtime.
//! The gRPC service and the command line live in the `docket` crate; the
//! evidence contracts and verdict engine in `docket-verifier`.

pub mod authority;
pub mod blobs;
pub mod domain;
pub mod error;
pub mod export;
pub mod keys;
pub mod ledger;
pub mod projection;
pub mod replay;
pub mod retention;
pub mod state;

/// The log core's modules, re-exported so that the domain and its users
/// name one thing one way.
pub use docket_log::{checkpoint, event, merkle, signature, snapshot, store, verify};

pub use error::{LedgerError, Result};
pub use event::{Event, Statement};
pub use ledger::{Ledger, LedgerOptions, Receipt};
pub use state::LedgerState;

//! # docket-domain
//!
//! The domain of Docket, an event-sourced verdict ledger, as the state
//! machine of the log core (`docket-log`): keys and roles, tasks, evidence
//! OIDs, submissions, checks, verdicts, approvals and retention as typed
//! aggregates; the service that also touches the disk (blobs, auto-verify,
//! retention sweeps); replay, export bundles and their audit.
//!
//! It is **not** a server: it does no networking and runs no async runtime.
//! The gRPC service and the command line live in the `docket` crate; the
//! evidence contracts and verdict engine in `docket-verifier`.
//!
//! ## Module map (dependencies point up this list, never down)
//!
//! * [`error`], [`schema`]: the error type; the payload toolkit and shared
//!   vocabulary (task ids, times, retention classes).
//! * Aggregates, each with its payloads, admission rules and folds:
//!   [`keys`], [`tasks`], [`oids`] (evidence), [`verdicts`] (executions,
//!   submissions, checks, verdicts), [`approvals`], [`retention`].
//! * [`state`]: [`LedgerState`], every projection together, and snapshots;
//!   [`projection`] names them.
//! * [`kind`]: the kind table — [`kind::Kind`], who may author it, its
//!   decoded [`kind::Payload`], its admission rule and its fold;
//!   [`authority`] answers for kind strings.
//! * [`machine`]: `LedgerState` as the log's state machine (admit, apply).
//! * [`ledger`], [`replay`], [`blobs`]: the log driving the state machine,
//!   `init`, the verifier, the blob store, and [`content_check`] (the
//!   evidence content of `replay --verify`).
//! * [`domain`]: the service ([`domain::Docket`]): writes that need the
//!   disk, queries, subscribers of committed events (auto-verify), the
//!   retention operations; and the public paths callers use.
//! * [`export`]: bundles and their offline audit.

pub mod approvals;
pub mod authority;
pub mod blobs;
pub mod content_check;
pub mod domain;
pub mod error;
pub mod export;
pub mod keys;
pub mod kind;
pub mod ledger;
pub mod machine;
pub mod oids;
pub mod projection;
pub mod replay;
pub mod retention;
pub mod schema;
pub mod state;
pub mod tasks;
pub mod verdicts;

/// The log core's modules, re-exported so that the domain and its users
/// name one thing one way.
pub use docket_log::{checkpoint, event, merkle, signature, snapshot, store, verify};

pub use error::{LedgerError, Result};
pub use event::{Event, Statement};
pub use kind::{Kind, Payload};
pub use ledger::{Ledger, LedgerOptions, Receipt};
pub use state::LedgerState;

//! # docket-log
//!
//! The log core of Docket: a durable, signed, provable, append-only event
//! log that knows nothing of what it records. It holds events and their one
//! canonical encoding ([`event`]), the one signature rule ([`signature`]),
//! the store trait and its embedded sled implementation with real fsync and
//! an anchor kept apart from the events ([`store`]), the RFC 9162 Merkle
//! tree and proofs ([`merkle`]), C2SP checkpoints as signed notes
//! ([`checkpoint`]), authenticated snapshots ([`snapshot`]), the sequencer
//! with group commit ([`Log`]), and the one log verifier used by replay,
//! audit and every open ([`verify`]).
//!
//! What is recorded plugs in through the [`StateMachine`] seam: admit a
//! signed statement against current state, fold a committed event,
//! snapshot and restore. This crate knows no kind, role, task, verdict, OID
//! or retention rule; it does no networking and runs no async runtime.

pub mod checkpoint;
pub mod copy;
pub mod error;
pub mod event;
pub mod keys;
pub mod machine;
pub mod merkle;
pub mod sequencer;
pub mod signature;
pub mod snapshot;
pub mod store;
pub mod tiles;
pub mod verify;

pub use error::{LogError, Result};
pub use event::{Event, Statement};
pub use machine::{AdmitContext, StateMachine};
pub use sequencer::{Layout, Log, LogOptions, ProvedConsistency, ProvedInclusion, Receipt};

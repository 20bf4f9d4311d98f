//! # docket-store-pg
//!
//! Docket's log on PostgreSQL, for running one ledger on several machines:
//! [`PgStore`] implements the log core's [`Store`](docket_log::store::Store)
//! (and [`NodeSource`](docket_log::merkle::NodeSource)) with one table per
//! kind of record — events, Merkle nodes, statement digests, checkpoints,
//! sealed snapshots, the anchor, the schema version and the sequencer
//! lease — and a group commit as **one** transaction, acknowledged only
//! once `COMMIT` returned with synchronous commit on.
//!
//! Exactly one process sequences a ledger. It holds the **lease**: a
//! PostgreSQL advisory lock on a dedicated session (released by the server
//! the moment that session ends, e.g. when the process is killed) and a
//! **fencing token** it bumped when it took the lock. Every write
//! transaction checks the token under a share lock of the lease row, so a
//! deposed sequencer can never commit; the log then fails stop. Other
//! processes are **followers** ([`open_node`]): they serve reads, proofs
//! and tails from the database, fold what the sequencer commits, refuse
//! writes naming the sequencer's address, and one of them takes over within
//! a poll interval once the lease is free — after the same anchored open
//! check every open runs, against the anchor in the database, so no two
//! checkpoints of one size with different roots are ever signed (the
//! checkpoint table's primary key makes that a database constraint too).
//!
//! [`copy_ledger`] moves a ledger between a sled data directory and
//! PostgreSQL (both ways), verified by a full replay at the end.
//! [`scratch`] starts throwaway servers for tests and benches.
//!
//! This crate is **not**: a blob store (evidence content stays in a
//! directory — on several machines, a shared one; see docs/SCALING.md), a
//! key store (the ledger key stays in each node's local data directory), a
//! consensus protocol (PostgreSQL is the single source of truth; its own
//! replication and failover are PostgreSQL's business), or async (the log
//! core's API is synchronous; this uses the `postgres` crate's blocking
//! client).

pub mod error;
pub mod migrate;
pub mod node;
mod pool;
pub mod schema;
pub mod scratch;
pub mod store;

pub use error::{PgError, Result};
pub use migrate::{CopyReport, copy_ledger, verify_copy};
pub use node::{NodeOptions, PgElection, Role, check_same_ledger, open_node};
pub use pool::redact;
pub use store::{LeaseInfo, LedgerMeta, PgStore};

/// Whether `s` names a PostgreSQL store (`postgres://` or `postgresql://`).
pub fn is_postgres_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

//! `docket-verifier` is Docket's evidence contracts and its fail-closed verdict
//! engine, as a pure library: the typed seed documents (task contract,
//! `scc.submit.v1`, `scc.verdict.v1`, the verifier `verdict.json`, execution
//! records, the harness `report.json`), their validation rules, a unified-diff
//! parser, pin-scope matching, the 14-code failure catalogue, the fail
//! classifier and [`engine::evaluate`], which turns a task contract plus its
//! artifacts into a deterministic verdict.
//!
//! It is *not* the ledger: it signs nothing, stores nothing, opens no socket and
//! reads no clock. Its only I/O is reading an artifacts directory through
//! [`engine::DirArtifacts`]; the ledger runs the same engine on stored blobs
//! through [`engine::MemoryArtifacts`]. Every rule is documented, with the seed
//! section it comes from, in `docs/VERIFIER.md`.

pub mod catalogue;
pub mod classify;
pub mod diff;
pub mod engine;
mod error;
pub mod evidence;
pub mod execution;
pub mod harness;
mod json;
pub mod rules;
pub mod scope;
pub mod submit;
pub mod task;
pub mod verdict;
mod violation;

pub use catalogue::{FailClass, ReasonCode, VerifierFailClass};
pub use engine::{ArtifactSource, DirArtifacts, MemoryArtifacts, evaluate};
pub use error::VerifierError;
pub use evidence::EvidenceType;
pub use json::parse_rfc3339;
pub use task::TaskContract;
pub use verdict::{Verdict, VerifierOutput};
pub use violation::Violation;

/// The `time` crate this API uses (for [`evaluate`]'s `evaluated_at`).
pub use time;

/// Hex-encoded SHA-256 of `bytes` (lower case), the digest format used by every
/// seed document.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

//! Replay: the log core's one verifier ([`docket_log::verify`]) run with the
//! domain's state machine. It rebuilds every projection from genesis and,
//! with `verify`, proves the log was not rewritten: canonical decoding,
//! consecutive sequence numbers, the hash chain, ledger time, every author
//! signature, re-admission of every event under the rules as of its
//! position, stored leaves against the bytes, the recomputed root against
//! the anchor and the stored checkpoints, and rebuilt projections against
//! the authenticated snapshots.

use crate::checkpoint::NoteVerifier;
use crate::error::Result;
use crate::state::LedgerState;
use crate::store::Store;

pub use docket_log::verify::{Finding, FindingKind, VerifyReport as ReplayReport};
use docket_log::verify::{Trust, VerifyOptions, verify_log};

/// What to do.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Check signatures, chain, proofs and snapshots (otherwise only fold).
    pub verify: bool,
    /// Stop after this sequence number (inclusive): state "as of" it.
    pub as_of: Option<u64>,
}

/// Replays `store`. `progress(done, total)` is called after each chunk.
/// The verifier's key also authenticates the snapshots (both are the ledger
/// key).
pub fn replay(
    store: &dyn Store,
    verifier: &NoteVerifier,
    options: ReplayOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(ReplayReport, LedgerState)> {
    let verify_options = if options.verify {
        VerifyOptions {
            as_of: options.as_of,
            ..VerifyOptions::full()
        }
    } else {
        VerifyOptions::fold_only(options.as_of)
    };
    verify_log::<LedgerState>(
        store,
        Trust {
            checkpoints: verifier,
            snapshots: &verifier.key,
        },
        verify_options,
        progress,
    )
}

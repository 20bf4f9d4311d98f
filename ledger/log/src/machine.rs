//! The seam between the log and what it records: a state machine.
//!
//! The log admits a signed statement only if the state machine says yes
//! against current state, sequences and commits it, and then hands the
//! committed event to the state machine's fold. The state machine never
//! touches storage, the clock or the network; the log never interprets a
//! payload.

use crate::error::Result;
use crate::event::{Event, Statement};

/// Where a statement would land if admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmitContext {
    /// The sequence number it would get.
    pub seq: u64,
    /// The ledger time it would get (Unix ms, never decreasing).
    pub recorded_at_ms: u64,
}

/// A deterministic state machine folded from the log.
///
/// The sequencer keeps two instances: a working one that admits and folds
/// each statement as it is sequenced, and the durable one readers see, which
/// folds a batch once it is on disk (so `Clone`).
///
/// Determinism contract: `admit` and `apply` read only `self` and their
/// arguments. Two instances fed the same events are equal, and their
/// [`StateMachine::snapshot`] bytes are equal.
pub trait StateMachine: Default + Clone + Send + Sync + 'static {
    /// What admission learns from a statement that its fold needs again
    /// (a ledger's decoded payload), so that an appended payload is decoded
    /// once: the sequencer hands it to [`StateMachine::apply_admitted`] of
    /// both instances. `()` when there is nothing to keep.
    type Admitted: Send + 'static;

    /// Decides whether `statement` may be appended at `at`. Its signature has
    /// been verified. A refusal says why with the error variant that fits
    /// (`Invalid`, `PermissionDenied`, `NotFound`, `AlreadyExists`,
    /// `FailedPrecondition`, `ResourceExhausted`); nothing is appended.
    fn admit(&self, statement: &Statement, at: &AdmitContext) -> Result<Self::Admitted>;

    /// Folds one committed event from its bytes alone (open, replay, a
    /// follower). An admitted event always folds: an error here means the
    /// stored event is not what was admitted, and the log reports it as
    /// corruption at that sequence number.
    fn apply(&mut self, event: &Event) -> Result<()>;

    /// Folds `event`, whose statement [`StateMachine::admit`] admitted with
    /// `admitted`: the same change as [`StateMachine::apply`], without
    /// decoding again. The default ignores `admitted`.
    fn apply_admitted(&mut self, event: &Event, admitted: &Self::Admitted) -> Result<()> {
        let _ = admitted;
        self.apply(event)
    }

    /// Canonical bytes of each projection, by name (the file names of the
    /// snapshots). Equal states give equal bytes.
    fn snapshot(&self) -> Vec<(&'static str, Vec<u8>)>;

    /// Rebuilds the state from the parts [`StateMachine::snapshot`] wrote,
    /// all reflecting events `0..seq`. An error means the parts do not
    /// parse; the log then rebuilds from the events.
    fn restore(seq: u64, parts: &[(String, Vec<u8>)]) -> Result<Self>;

    /// Names the first difference between a stored and a rebuilt snapshot
    /// of projection `name`, for determinism reports.
    fn describe_difference(name: &str, stored: &[u8], rebuilt: &[u8]) -> String {
        let _ = (stored, rebuilt);
        format!("{name}: bytes differ")
    }
}

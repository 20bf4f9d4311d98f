//! State "as of" any sequence number or time, for auditors.
//!
//! `AsOf::Seq(s)` is the state after applying every event with sequence
//! number `<= s`; `AsOf::Time(t)` is the state after every event recorded at
//! or before `t` (ledger time never decreases along the log, so that is a
//! prefix, found by binary search). Historical states are folded from the
//! newest stored snapshot at or below the point, else from genesis.

use crate::error::{LedgerError, Result};
use crate::event::Event;
use crate::ledger::Ledger;
use crate::state::LedgerState;
use crate::store::Store;

use crate::schema::rfc3339_ms;

/// A point in history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AsOf {
    /// The live state.
    #[default]
    Latest,
    /// After event `seq` (inclusive).
    Seq(u64),
    /// After every event recorded at or before this Unix-ms time.
    Time(u64),
}

impl AsOf {
    /// Parses a sequence number (digits) or an RFC 3339 time.
    pub fn parse(s: &str) -> Result<AsOf> {
        let s = s.trim();
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return s.parse().map(AsOf::Seq).map_err(|e| LedgerError::Invalid {
                what: "as-of".into(),
                violations: vec![format!("{s:?}: {e}")],
            });
        }
        match rfc3339_ms(s).and_then(|t| u64::try_from(t).ok()) {
            Some(t) => Ok(AsOf::Time(t)),
            None => Err(LedgerError::Invalid {
                what: "as-of".into(),
                violations: vec![format!(
                    "{s:?} is neither a sequence number nor an RFC 3339 time"
                )],
            }),
        }
    }
}

/// The number of events (a prefix length) the point `as_of` covers in a log
/// of `ledger.len()` events: `Seq(s)` → `s + 1` (clamped), `Time(t)` → the
/// events recorded at or before `t`.
pub fn prefix_len(ledger: &Ledger, as_of: AsOf) -> Result<u64> {
    let len = ledger.len();
    match as_of {
        AsOf::Latest => Ok(len),
        AsOf::Seq(s) => Ok(s.saturating_add(1).min(len)),
        AsOf::Time(t) => Ok(seq_at_or_before(ledger, t)?.map_or(0, |s| s + 1)),
    }
}

/// The last sequence number recorded at or before `time_ms`, or None when
/// the first event is later (binary search: ledger time never decreases).
pub fn seq_at_or_before(ledger: &Ledger, time_ms: u64) -> Result<Option<u64>> {
    let (mut lo, mut hi) = (0u64, ledger.len());
    // Invariant kept: every event below `lo` is at or before `time_ms`;
    // every event at or above `hi` is after it.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if ledger.event(mid)?.recorded_at_ms <= time_ms {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo.checked_sub(1))
}

/// Events per chunk of a rebuild.
const FOLD_CHUNK: u64 = 4096;

/// Reads and decodes events `from..to`.
fn read_chunk(store: &dyn Store, from: u64, to: u64) -> Result<Vec<Event>> {
    store
        .event_range(from, to)?
        .into_iter()
        .map(|(seq, bytes)| {
            Event::decode(&bytes)
                .map_err(|e| LedgerError::corrupt(format!("event {seq}"), e.to_string()))
        })
        .collect()
}

/// Folds the first `len` events of `store` from genesis. No signature
/// checks; replay does those. An event that does not fold is an error
/// (`Corrupt`, naming it). Reading and decoding the next chunk runs in
/// parallel with folding the current one (the fold itself stays
/// sequential, in log order).
pub fn fold_prefix(store: &dyn Store, len: u64) -> Result<LedgerState> {
    // From genesis: snapshots reflect the head, and a derived file is not
    // trusted for an auditor's question about the past.
    let mut state = LedgerState::default();
    let mut next = state.applied;
    if next >= len {
        return Ok(state);
    }
    let mut to = (next + FOLD_CHUNK).min(len);
    let mut current = read_chunk(store, next, to)?;
    next = to;
    loop {
        to = (next + FOLD_CHUNK).min(len);
        let (from, upto) = (next, to);
        let (folded, ahead) = rayon::join(
            || -> Result<()> {
                for event in &current {
                    state.apply(event)?;
                }
                Ok(())
            },
            || {
                if from < upto {
                    read_chunk(store, from, upto).map(Some)
                } else {
                    Ok(None)
                }
            },
        );
        folded?;
        match ahead? {
            Some(events) => current = events,
            None => return Ok(state),
        }
        next = to;
    }
}

/// Runs `f` on the state as of `as_of`: the live state under its read lock
/// for `Latest` (or a point at the head), a folded copy otherwise.
pub fn with_state<T>(ledger: &Ledger, as_of: AsOf, f: impl FnOnce(&LedgerState) -> T) -> Result<T> {
    if as_of == AsOf::Latest {
        return Ok(f(&ledger.state()));
    }
    let len = prefix_len(ledger, as_of)?;
    {
        let live = ledger.state();
        if live.applied == len {
            return Ok(f(&live));
        }
    }
    let state = fold_prefix(ledger.store().as_ref(), len)?;
    Ok(f(&state))
}

//! `summary.json`: what the carried events fold to. The exporter writes it as
//! a convenience for readers; the auditor folds the carried events again and
//! compares (a difference is a determinism mismatch, exit 3). It is never
//! trusted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::event::Event;
use crate::keys::Role;
use crate::state::LedgerState;

use super::format::SUMMARY_FORMAT;

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Always [`SUMMARY_FORMAT`].
    pub format: String,
    /// Tree size of the bundle's checkpoint.
    pub tree_size: u64,
    /// Number of carried events.
    pub events: u64,
    /// Maximal runs of consecutive carried sequence numbers, `[first, last]`.
    pub ranges: Vec<[u64; 2]>,
    /// Carried events per kind.
    pub kinds: BTreeMap<String, u64>,
    /// Every key the carried events register (genesis included), by hex
    /// public key.
    pub keys: BTreeMap<String, KeySummary>,
    /// Verdict state per task (`TaskState` of the domain's verdicts
    /// projection), folded from the carried events.
    pub tasks: BTreeMap<String, serde_json::Value>,
    /// Evidence records (`OidRecord` of the OID registry) of those tasks,
    /// by OID, folded from the carried events.
    pub oids: BTreeMap<String, serde_json::Value>,
}

/// One key as the carried events define it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySummary {
    pub roles: Vec<Role>,
    pub registered_seq: u64,
    pub revoked_seq: Option<u64>,
}

/// Folds events (ascending by sequence number) into a [`Summary`].
#[derive(Debug)]
pub struct SummaryBuilder {
    tree_size: u64,
    state: LedgerState,
    events: u64,
    ranges: Vec<[u64; 2]>,
    kinds: BTreeMap<String, u64>,
}

impl SummaryBuilder {
    pub fn new(tree_size: u64) -> Self {
        Self {
            tree_size,
            state: LedgerState::default(),
            events: 0,
            ranges: Vec::new(),
            kinds: BTreeMap::new(),
        }
    }

    /// Folds the next event; sequence numbers must ascend.
    pub fn add(&mut self, event: &Event) {
        self.events += 1;
        match self.ranges.last_mut() {
            Some(r) if r[1] + 1 == event.seq => r[1] = event.seq,
            _ => self.ranges.push([event.seq, event.seq]),
        }
        *self.kinds.entry(event.kind.clone()).or_default() += 1;
        // Carried events whose context is not carried fold nothing; both
        // sides of an audit fold the same way.
        let _ = self.state.apply_partial(event);
    }

    /// The state folded so far.
    pub fn state(&self) -> &LedgerState {
        &self.state
    }

    pub fn finish(self) -> Summary {
        let keys = self
            .state
            .keys
            .keys
            .iter()
            .map(|(k, r)| {
                (
                    k.clone(),
                    KeySummary {
                        roles: r.roles.iter().copied().collect(),
                        registered_seq: r.registered_seq,
                        revoked_seq: r.revoked_seq,
                    },
                )
            })
            .collect();
        Summary {
            format: SUMMARY_FORMAT.to_string(),
            tree_size: self.tree_size,
            events: self.events,
            ranges: self.ranges,
            kinds: self.kinds,
            keys,
            tasks: to_values(&self.state.domain.verdicts.tasks),
            oids: to_values(&self.state.domain.oids.oids),
        }
    }
}

fn to_values<T: Serialize>(m: &BTreeMap<String, T>) -> BTreeMap<String, serde_json::Value> {
    // Invariant: projection records are strings, integers, bools and maps
    // with string or integer keys; serde_json cannot fail on them.
    m.iter()
        .map(|(k, v)| {
            (
                k.clone(),
                serde_json::to_value(v).expect("projection serialises"),
            )
        })
        .collect()
}

/// Canonical bytes of a summary (pretty JSON with a final newline).
pub fn to_bytes(summary: &Summary) -> Vec<u8> {
    // Invariant: maps with string keys, numbers and strings serialise.
    let mut v = serde_json::to_vec_pretty(summary).expect("summary serialises");
    v.push(b'\n');
    v
}

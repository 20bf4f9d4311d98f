//! The ledger's state: every projection, folded together in log order, and
//! their canonical snapshots. The committer thread owns the one live
//! instance; replay, queries and audits build their own from the events.
//!
//! What may change the state, and how, is the state machine's
//! ([`crate::machine`]: `LedgerState::admit` and `LedgerState::apply`,
//! through the kind table [`crate::kind`]).

use serde::{Deserialize, Serialize};

use crate::error::{LedgerError, Result};
use crate::keys::KeysProjection;
use crate::oids::OidRegistry;
use crate::retention::{self, RetentionState};
use crate::tasks::VerdictsProjection;

pub use crate::schema::parse_json;
pub use docket_log::machine::AdmitContext;

/// The task records and the OID registry (they fold together: an OID takes
/// its task's retention class by default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainState {
    /// Verdict state per task (the tasks aggregate).
    pub verdicts: VerdictsProjection,
    /// OID → evidence record (the evidence aggregate).
    pub oids: OidRegistry,
}

/// All projections, folded together in log order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerState {
    /// Number of events folded in (= the next sequence number).
    pub applied: u64,
    /// Ledger time of the last folded event.
    pub last_recorded_at_ms: u64,
    /// Keys and roles.
    pub keys: KeysProjection,
    /// Verdict state per task and the OID registry.
    pub domain: DomainState,
    /// Retention policy, pins, redactions and sweeps.
    pub retention: RetentionState,
}

impl<'a> From<&'a LedgerState> for retention::View<'a> {
    fn from(s: &'a LedgerState) -> Self {
        retention::View {
            applied: s.applied,
            tasks: &s.domain.verdicts,
            oids: &s.domain.oids,
            retention: &s.retention,
        }
    }
}

impl LedgerState {
    /// Canonical snapshot bytes of each projection, by name, and `meta`
    /// (the ledger time of the last folded event).
    pub fn snapshots(&self) -> Vec<(&'static str, Vec<u8>)> {
        // Invariant: projection states are maps, strings, integers and bools
        // with string or integer keys; serde_json cannot fail on them.
        vec![
            (KeysProjection::NAME, self.keys.snapshot_bytes()),
            (
                VerdictsProjection::NAME,
                // Invariant: as above.
                serde_json::to_vec(&self.domain.verdicts).expect("verdicts serialise"),
            ),
            (
                OidRegistry::NAME,
                // Invariant: as above.
                serde_json::to_vec(&self.domain.oids).expect("oids serialise"),
            ),
            (
                retention::SNAPSHOT_NAME,
                retention::snapshot(&self.retention),
            ),
            ("meta", self.last_recorded_at_ms.to_string().into_bytes()),
        ]
    }

    /// Rebuilds state from snapshots all taken at the same sequence.
    pub fn from_snapshots(
        applied: u64,
        last_recorded_at_ms: u64,
        parts: &[(String, Vec<u8>)],
    ) -> Result<Self> {
        let mut state = LedgerState {
            applied,
            last_recorded_at_ms,
            ..Default::default()
        };
        for (name, bytes) in parts {
            let corrupt = |e: serde_json::Error| {
                LedgerError::corrupt(format!("snapshot {name}"), e.to_string())
            };
            match name.as_str() {
                "meta" => {
                    state.last_recorded_at_ms = std::str::from_utf8(bytes)
                        .ok()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| LedgerError::corrupt("snapshot meta", "not a time"))?;
                }
                KeysProjection::NAME => state.keys = KeysProjection::from_snapshot(bytes)?,
                VerdictsProjection::NAME => {
                    state.domain.verdicts = serde_json::from_slice(bytes).map_err(corrupt)?;
                }
                OidRegistry::NAME => {
                    state.domain.oids = serde_json::from_slice(bytes).map_err(corrupt)?;
                }
                retention::SNAPSHOT_NAME => state.retention = retention::restore(bytes)?,
                _ => {
                    return Err(LedgerError::corrupt(
                        format!("snapshot {name}"),
                        "unknown projection",
                    ));
                }
            }
        }
        Ok(state)
    }
}

/// Names of every projection snapshot.
pub fn projection_names() -> Vec<&'static str> {
    LedgerState::default()
        .snapshots()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// Names the first differing entry between two snapshot byte strings of one
/// projection (top-level map keys, then one level down: a task or OID).
pub fn first_difference(name: &str, stored: &[u8], rebuilt: &[u8]) -> String {
    let (Ok(a), Ok(b)) = (
        serde_json::from_slice::<serde_json::Value>(stored),
        serde_json::from_slice::<serde_json::Value>(rebuilt),
    ) else {
        return format!("{name}: stored snapshot does not parse");
    };
    fn walk(
        path: &str,
        a: &serde_json::Value,
        b: &serde_json::Value,
        depth: usize,
    ) -> Option<String> {
        if a == b {
            return None;
        }
        if depth < 3
            && let (Some(ma), Some(mb)) = (a.as_object(), b.as_object())
        {
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                match (ma.get(k), mb.get(k)) {
                    (Some(x), Some(y)) => {
                        if let Some(found) = walk(&format!("{path}/{k}"), x, y, depth + 1) {
                            return Some(found);
                        }
                    }
                    (Some(_), None) => {
                        return Some(format!("{path}/{k} only in the stored snapshot"));
                    }
                    (None, Some(_)) => {
                        return Some(format!("{path}/{k} only in the rebuilt state"));
                    }
                    (None, None) => {}
                }
            }
        }
        Some(format!("{path} differs"))
    }
    walk(name, &a, &b, 0).unwrap_or_else(|| format!("{name}: bytes differ (same JSON value)"))
}

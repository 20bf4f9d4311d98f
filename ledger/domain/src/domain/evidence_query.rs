//! The evidence query (seed 000's `evidence_query --task-id … --type …`):
//! a task's evidence, each OID with its record, its retention state and the
//! events that reference it.
//!
//! An event **references** an OID when it is the event that minted it (its
//! `evidence.registered`, or the `verdict.imported` that registered an
//! imported file), or when its payload (the payload of a known kind;
//! `x-…` extension payloads are opaque and never read) holds the OID as a
//! JSON string — `"01K…"`, the 26 characters exactly as minted — anywhere:
//! `evidence_oids` of executions, submissions and verdicts, a submission's
//! `touched_oids`, the `oid` of the retention kinds. Only the events from
//! the OID's registration to the head are read (nothing before it can name
//! it), and only up to the state the listing was taken from, so the answer
//! is one point of the log.

use std::collections::HashMap;

use serde::Serialize;

use crate::error::{LedgerError, Result};
use crate::event::Event;
use crate::kind::names;
use crate::oids::{OidRecord, OidState};
use crate::retention::rules;

use super::service::Docket;
use docket_verifier::EvidenceType;

/// Events read per chunk of the reference scan.
const SCAN_CHUNK: u64 = 4096;

/// The seed 000 evidence classes (§8 "evidence types": logs, diff, reports,
/// metrics, screenshots) and the evidence types each one covers. `--type`
/// takes one of these or an evidence type.
pub const CATEGORIES: [(&str, &[&str]); 5] = [
    (
        "logs",
        &["selftest.log", "stdout", "stderr", "execution", "trace"],
    ),
    ("diff", &["patch.diff"]),
    ("reports", &["report.md", "submit.json"]),
    ("metrics", &["metrics"]),
    ("screenshots", &["screenshot"]),
];

/// Which evidence types a listing keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeFilter {
    /// What was asked for (an evidence type or a category).
    pub name: String,
    /// The evidence types it covers.
    pub types: Vec<&'static str>,
}

impl TypeFilter {
    /// Parses an evidence type (`patch.diff`, `stdout`, …) or a seed 000
    /// category (`logs`, `diff`, `reports`, `metrics`, `screenshots`).
    pub fn parse(s: &str) -> Result<TypeFilter> {
        let name = s.trim();
        if let Some((_, types)) = CATEGORIES.iter().find(|(c, _)| *c == name) {
            return Ok(TypeFilter {
                name: name.to_string(),
                types: types.to_vec(),
            });
        }
        match name.parse::<EvidenceType>() {
            Ok(t) => Ok(TypeFilter {
                name: name.to_string(),
                types: vec![t.as_str()],
            }),
            Err(_) => {
                let mut accepted: Vec<&str> =
                    EvidenceType::ALL.iter().map(|t| t.as_str()).collect();
                accepted.extend(CATEGORIES.iter().map(|(c, _)| *c));
                Err(LedgerError::Invalid {
                    what: "evidence type".into(),
                    violations: vec![format!("{name:?} is not one of {}", accepted.join(", "))],
                })
            }
        }
    }

    /// Whether evidence of type `t` is kept.
    pub fn keeps(&self, t: &str) -> bool {
        self.types.contains(&t)
    }
}

/// One event that references an OID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reference {
    pub seq: u64,
    pub kind: String,
}

/// One OID of a task's listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceEntry {
    pub oid: String,
    pub record: OidRecord,
    /// When the content becomes eligible for expiry under the policy in
    /// force (Unix ms); None when pinned, removed or never.
    pub expires_at_ms: Option<u64>,
    /// Events that reference the OID, in log order (the minting event first).
    pub references: Vec<Reference>,
}

/// A task's evidence listing, taken at one point of the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceListing {
    /// The canonical task id.
    pub task_id: String,
    /// The number of events the listing reflects.
    pub size: u64,
    /// The task's OIDs (those the filter keeps), in registration order.
    pub entries: Vec<EvidenceEntry>,
}

impl Docket {
    /// Lists `task_id`'s evidence (only the types `filter` keeps), each OID
    /// with the events that reference it. An unknown task is `NotFound`.
    pub fn evidence_list(
        &self,
        task_id: &str,
        filter: Option<&TypeFilter>,
    ) -> Result<EvidenceListing> {
        let ledger = self.ledger();
        let (task, size, mut entries) = {
            let state = ledger.state();
            let task = state.domain.verdicts.task(task_id)?;
            let policy = state.retention.policy();
            let entries: Vec<EvidenceEntry> = task
                .evidence
                .iter()
                .filter_map(|oid| {
                    let record = state.domain.oids.oids.get(oid)?;
                    if filter.is_some_and(|f| !f.keeps(&record.evidence_type)) {
                        return None;
                    }
                    let expires_at_ms = rules::expires_at(&policy, record)
                        .filter(|_| !record.pinned && record.state == OidState::Live);
                    Some(EvidenceEntry {
                        oid: oid.clone(),
                        record: record.clone(),
                        expires_at_ms,
                        references: Vec::new(),
                    })
                })
                .collect();
            (task.task_id.clone(), state.applied, entries)
        };
        let Some(from) = entries.iter().map(|e| e.record.registered_seq).min() else {
            return Ok(EvidenceListing {
                task_id: task,
                size,
                entries,
            });
        };
        let index: HashMap<[u8; 26], usize> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((<[u8; 26]>::try_from(e.oid.as_bytes()).ok()?, i)))
            .collect();
        // The event that minted each OID (one `verdict.imported` mints several).
        let mut registered: HashMap<u64, Vec<usize>> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            registered
                .entry(e.record.registered_seq)
                .or_default()
                .push(i);
        }
        let store = ledger.store();
        let mut at = from;
        while at < size {
            let to = (at + SCAN_CHUNK).min(size);
            for (seq, bytes) in store.event_range(at, to)? {
                let event = Event::decode(&bytes)
                    .map_err(|e| LedgerError::corrupt(format!("event {seq}"), e.to_string()))?;
                let hit = |i: usize, entries: &mut Vec<EvidenceEntry>| {
                    let refs = &mut entries[i].references;
                    if refs.last().is_none_or(|r| r.seq != seq) {
                        refs.push(Reference {
                            seq,
                            kind: event.kind.clone(),
                        });
                    }
                };
                for &i in registered.get(&seq).into_iter().flatten() {
                    hit(i, &mut entries);
                }
                if event.kind.starts_with(names::EXTENSION_PREFIX) {
                    continue;
                }
                for i in quoted_oids(&event.payload, &index) {
                    hit(i, &mut entries);
                }
            }
            at = to;
        }
        Ok(EvidenceListing {
            task_id: task,
            size,
            entries,
        })
    }
}

/// The entries (by index) whose OID `payload` holds as a JSON string
/// (`"` + the 26 characters + `"`), each once, in order of first mention.
fn quoted_oids(payload: &[u8], index: &HashMap<[u8; 26], usize>) -> Vec<usize> {
    let mut found = Vec::new();
    let mut i = 0;
    while i + 28 <= payload.len() {
        if payload[i] == b'"' && payload[i + 27] == b'"' {
            // Invariant: the slice is exactly 26 bytes long (i + 28 <= len).
            let candidate: [u8; 26] = payload[i + 1..i + 27].try_into().expect("26 bytes");
            if let Some(&e) = index.get(&candidate) {
                if !found.contains(&e) {
                    found.push(e);
                }
                i += 27;
                continue;
            }
        }
        i += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse() {
        assert_eq!(
            TypeFilter::parse("logs").unwrap().types,
            ["selftest.log", "stdout", "stderr", "execution", "trace"]
        );
        assert_eq!(
            TypeFilter::parse("patch.diff").unwrap().types,
            ["patch.diff"]
        );
        let e = TypeFilter::parse("videos").unwrap_err().to_string();
        assert!(e.contains("\"videos\" is not one of patch.diff"), "{e}");
        assert!(e.contains("screenshots"), "{e}");
        // Every category names real evidence types.
        for (_, types) in CATEGORIES {
            for t in types {
                assert!(t.parse::<EvidenceType>().is_ok(), "{t}");
            }
        }
    }

    #[test]
    fn quoted_oids_are_found_once_each() {
        let a = *b"01KGCV31W0C42YQHMVAT6FSR1H";
        let b = *b"01KGCV31W0C42YQHMVAT6FSR1J";
        let index: HashMap<[u8; 26], usize> = [(a, 0), (b, 1)].into();
        let payload = br#"{"evidence_oids":["01KGCV31W0C42YQHMVAT6FSR1J","01KGCV31W0C42YQHMVAT6FSR1H"],"touched_oids":["01KGCV31W0C42YQHMVAT6FSR1H"],"note":"x01KGCV31W0C42YQHMVAT6FSR1H"}"#;
        assert_eq!(quoted_oids(payload, &index), vec![1, 0]);
        assert!(quoted_oids(b"\"01KGCV31W0C42YQHMVAT6FSR1", &index).is_empty());
    }
}

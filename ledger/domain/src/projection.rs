//! The projection framework and the keys/roles projection.
//!
//! A projection is a pure, deterministic fold `apply(&mut State, &Event)`: it
//! never reads the clock or the disk. Its snapshot bytes are canonical JSON
//! (maps are `BTreeMap`), so equal states give equal bytes and a rebuilt
//! projection can be compared byte for byte with a stored snapshot.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::error::{LedgerError, Result};
use crate::event::Event;
use crate::keys::Role;

/// A deterministic fold over events.
pub trait Projection: Default + Clone + Serialize + DeserializeOwned {
    /// Snapshot name, also the file name under `snapshots/`.
    const NAME: &'static str;

    /// Folds one admitted event into the state. Must not fail: admission has
    /// already checked the payload; unknown kinds are ignored.
    fn apply(&mut self, event: &Event);

    /// Canonical snapshot bytes.
    fn snapshot_bytes(&self) -> Vec<u8> {
        // Invariant: projection states are maps, strings and numbers with
        // string keys; serde_json cannot fail on them.
        serde_json::to_vec(self).expect("projection serialises")
    }

    /// Parses snapshot bytes.
    fn from_snapshot(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| LedgerError::corrupt(format!("snapshot {}", Self::NAME), e.to_string()))
    }
}

/// Payload of `ledger.genesis`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenesisPayload {
    /// The checkpoint origin line of this log.
    pub origin: String,
    /// Hex public key of the ledger key (signs checkpoints, auto-verifies).
    pub ledger_key: String,
    /// Hex public key of the first admin.
    pub admin_key: String,
    /// Roles the ledger key holds (verifier for auto-verify, custodian for
    /// server-side retention sweeps).
    pub ledger_roles: Vec<Role>,
}

/// Payload of `key.registered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRegistered {
    pub public_key: String,
    pub roles: Vec<Role>,
    /// Optional validity window, Unix milliseconds (ledger clock).
    #[serde(default)]
    pub not_before_ms: Option<u64>,
    #[serde(default)]
    pub not_after_ms: Option<u64>,
    #[serde(default)]
    pub label: Option<String>,
}

/// Payload of `key.revoked`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyRevoked {
    pub public_key: String,
    #[serde(default)]
    pub reason: Option<String>,
}

/// One key as the log knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub roles: BTreeSet<Role>,
    pub registered_seq: u64,
    pub registered_by: String,
    pub revoked_seq: Option<u64>,
    pub revoked_reason: Option<String>,
    pub not_before_ms: Option<u64>,
    pub not_after_ms: Option<u64>,
    pub label: Option<String>,
}

impl KeyRecord {
    /// Whether this key may author an event at `seq` with ledger time `time_ms`:
    /// registered before it, not revoked before it, inside its validity window.
    pub fn usable_at(&self, seq: u64, time_ms: u64) -> bool {
        self.registered_seq < seq
            && self.revoked_seq.is_none_or(|r| seq < r)
            && self.not_before_ms.is_none_or(|t| time_ms >= t)
            && self.not_after_ms.is_none_or(|t| time_ms <= t)
    }
}

/// Keys and roles, with history (registrations and revocations stay).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeysProjection {
    /// Hex public key → record.
    pub keys: BTreeMap<String, KeyRecord>,
    /// Hex public key of the ledger key (from genesis).
    pub ledger_key: Option<String>,
    /// Checkpoint origin (from genesis).
    pub origin: Option<String>,
}

impl KeysProjection {
    /// The record for a raw public key.
    pub fn key(&self, author: &[u8; 32]) -> Option<&KeyRecord> {
        self.keys.get(&hex::encode(author))
    }

    /// Active admins at `seq`.
    pub fn active_admins(&self, seq: u64, time_ms: u64) -> usize {
        self.keys
            .values()
            .filter(|k| k.roles.contains(&Role::Admin) && k.usable_at(seq, time_ms))
            .count()
    }
}

impl Projection for KeysProjection {
    const NAME: &'static str = "keys";

    fn apply(&mut self, event: &Event) {
        // Only key events need the author's hex (every event passes here).
        let author = || hex::encode(event.author);
        match event.kind.as_str() {
            crate::authority::GENESIS => {
                let Ok(g) = serde_json::from_slice::<GenesisPayload>(&event.payload) else {
                    return;
                };
                self.origin = Some(g.origin.clone());
                self.ledger_key = Some(g.ledger_key.clone());
                let record = |roles: &[Role]| KeyRecord {
                    roles: roles.iter().copied().collect(),
                    registered_seq: event.seq,
                    registered_by: author(),
                    revoked_seq: None,
                    revoked_reason: None,
                    not_before_ms: None,
                    not_after_ms: None,
                    label: None,
                };
                self.keys
                    .insert(g.ledger_key.clone(), record(&g.ledger_roles));
                let mut admin = record(&[Role::Admin]);
                admin.label = Some("genesis admin".into());
                self.keys.insert(g.admin_key, admin);
            }
            "key.registered" => {
                let Ok(p) = serde_json::from_slice::<KeyRegistered>(&event.payload) else {
                    return;
                };
                self.keys.insert(
                    p.public_key.clone(),
                    KeyRecord {
                        roles: p.roles.into_iter().collect(),
                        registered_seq: event.seq,
                        registered_by: author(),
                        revoked_seq: None,
                        revoked_reason: None,
                        not_before_ms: p.not_before_ms,
                        not_after_ms: p.not_after_ms,
                        label: p.label,
                    },
                );
            }
            "key.revoked" => {
                let Ok(p) = serde_json::from_slice::<KeyRevoked>(&event.payload) else {
                    return;
                };
                if let Some(k) = self.keys.get_mut(&p.public_key) {
                    k.revoked_seq = Some(event.seq);
                    k.revoked_reason = p.reason;
                }
            }
            _ => {}
        }
    }
}

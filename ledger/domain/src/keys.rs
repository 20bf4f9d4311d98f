//! The keys aggregate: roles, the keys projection, and the statements that
//! change it (`ledger.genesis`, `key.registered`, `key.revoked`) with their
//! payloads, admission rules and folds. Also the log core's key material
//! (generation, key files, the one canonical spelling of a public key)
//! under the names the domain uses.
//!
//! Who may author which kind is the kind table's ([`crate::kind`]); the
//! rules here are what a key statement must satisfy beyond that.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::schema::{finish, invalid, parse_json};
use docket_log::machine::AdmitContext;

pub use docket_log::keys::{
    generate, parse_public, parse_public_bytes, public_from_bytes, read_key_file, write_key_file,
};

/// A role a key may hold. Each event kind names the roles that may author it
/// (see [`crate::kind::Kind::authors`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Submitter,
    Verifier,
    Approver,
    Custodian,
    Auditor,
    /// The seed 002 execution gateway (`docket exec`): runs commands and
    /// records their execution records and full outputs; its records are
    /// the gateway-attested ones a task's acceptance can require.
    Gateway,
}

impl Role {
    pub const ALL: [Role; 7] = [
        Role::Admin,
        Role::Submitter,
        Role::Verifier,
        Role::Approver,
        Role::Custodian,
        Role::Auditor,
        Role::Gateway,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Submitter => "submitter",
            Role::Verifier => "verifier",
            Role::Approver => "approver",
            Role::Custodian => "custodian",
            Role::Auditor => "auditor",
            Role::Gateway => "gateway",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = LedgerError;
    fn from_str(s: &str) -> Result<Self> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| LedgerError::malformed("role", format!("unknown role {s:?}")))
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
/// Snapshot `keys`: canonical JSON (maps are `BTreeMap`).
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
    /// Snapshot name, also the file name under `snapshots/`.
    pub const NAME: &'static str = "keys";

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

    /// Canonical snapshot bytes.
    pub fn snapshot_bytes(&self) -> Vec<u8> {
        // Invariant: maps with string keys, strings, integers and sets of
        // unit enums; serde_json cannot fail on them.
        serde_json::to_vec(self).expect("keys projection serialises")
    }

    /// Parses snapshot bytes.
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| LedgerError::corrupt(format!("snapshot {}", Self::NAME), e.to_string()))
    }
}

// ------------------------------------------------------------ decoding

/// Decodes a `ledger.genesis` payload (its rules need the author: see
/// [`admit_genesis`]).
pub fn decode_genesis(payload: &[u8]) -> Result<GenesisPayload> {
    parse_json("genesis", payload)
}

/// Decodes a `key.registered` payload: a canonical public key, at least one
/// role, a validity window that is not inverted (every violation listed).
pub fn decode_registered(payload: &[u8]) -> Result<KeyRegistered> {
    let p: KeyRegistered = parse_json("key.registered", payload)?;
    let mut violations = Vec::new();
    if let Err(e) = parse_public(&p.public_key) {
        violations.push(format!("public_key: {e}"));
    }
    if p.roles.is_empty() {
        violations.push("roles: at least one role is required".into());
    }
    if let (Some(a), Some(b)) = (p.not_before_ms, p.not_after_ms)
        && a > b
    {
        violations.push("not_before_ms is after not_after_ms".into());
    }
    finish("key.registered", violations)?;
    Ok(p)
}

/// Decodes a `key.revoked` payload: one canonical spelling of the key, so a
/// key can never count as two.
pub fn decode_revoked(payload: &[u8]) -> Result<KeyRevoked> {
    let p: KeyRevoked = parse_json("key.revoked", payload)?;
    if let Err(e) = parse_public(&p.public_key) {
        return Err(invalid("key.revoked", format!("public_key: {e}")));
    }
    Ok(p)
}

// ------------------------------------------------------------ admission

/// `ledger.genesis` (sequence 0 only): signed by the ledger key it names,
/// an admin key that is a key and not the ledger key, an origin that can
/// name checkpoints and the verifier key (`checkpoint::check_origin`).
pub fn admit_genesis(stmt: &Statement, g: &GenesisPayload) -> Result<()> {
    if g.ledger_key != hex::encode(stmt.author) {
        return Err(LedgerError::denied(
            &stmt.kind,
            &stmt.author,
            "genesis must be signed by the ledger key it names",
        ));
    }
    parse_public(&g.admin_key)?;
    if g.admin_key == g.ledger_key {
        return Err(invalid(
            "genesis",
            "the admin key must differ from the ledger key",
        ));
    }
    if let Err(e) = docket_log::checkpoint::check_origin(&g.origin) {
        return Err(invalid(
            "genesis",
            format!("origin must name a checkpoint and its verifier key: {e}"),
        ));
    }
    Ok(())
}

/// `key.registered`: the key is not registered yet (revoked keys stay).
pub fn admit_registered(keys: &KeysProjection, p: &KeyRegistered) -> Result<()> {
    if let Some(existing) = keys.keys.get(&p.public_key) {
        return Err(LedgerError::AlreadyExists {
            what: format!(
                "key {} (registered at seq {}{})",
                p.public_key,
                existing.registered_seq,
                existing
                    .revoked_seq
                    .map(|r| format!(", revoked at seq {r}"))
                    .unwrap_or_default()
            ),
        });
    }
    Ok(())
}

/// `key.revoked`: a registered, unrevoked key that is not the ledger key and
/// not the last active admin.
pub fn admit_revoked(keys: &KeysProjection, ctx: &AdmitContext, p: &KeyRevoked) -> Result<()> {
    let key = p.public_key.as_str();
    let Some(record) = keys.keys.get(key) else {
        return Err(LedgerError::NotFound {
            what: format!("key {key}"),
        });
    };
    if let Some(r) = record.revoked_seq {
        return Err(LedgerError::FailedPrecondition(format!(
            "key {key} was already revoked at seq {r}"
        )));
    }
    if keys.ledger_key.as_deref() == Some(key) {
        return Err(LedgerError::FailedPrecondition(
            "the ledger key cannot be revoked; rotate the ledger instead".into(),
        ));
    }
    if record.roles.contains(&Role::Admin) && keys.active_admins(ctx.seq, ctx.recorded_at_ms) <= 1 {
        return Err(LedgerError::FailedPrecondition(
            "refusing to revoke the last active admin key".into(),
        ));
    }
    Ok(())
}

// ------------------------------------------------------------ folds

fn record(event: &Event, roles: impl IntoIterator<Item = Role>) -> KeyRecord {
    KeyRecord {
        roles: roles.into_iter().collect(),
        registered_seq: event.seq,
        registered_by: hex::encode(event.author),
        revoked_seq: None,
        revoked_reason: None,
        not_before_ms: None,
        not_after_ms: None,
        label: None,
    }
}

/// Folds `ledger.genesis`: the origin, the ledger key with its roles, the
/// first admin.
pub fn fold_genesis(keys: &mut KeysProjection, event: &Event, g: &GenesisPayload) -> Result<()> {
    keys.origin = Some(g.origin.clone());
    keys.ledger_key = Some(g.ledger_key.clone());
    keys.keys.insert(
        g.ledger_key.clone(),
        record(event, g.ledger_roles.iter().copied()),
    );
    let mut admin = record(event, [Role::Admin]);
    admin.label = Some("genesis admin".into());
    keys.keys.insert(g.admin_key.clone(), admin);
    Ok(())
}

/// Folds `key.registered`.
///
/// A key already registered (revoked or not) is an error that changes
/// nothing: admission never lets a second registration through, so only a
/// partial or damaged log (an audit's fold) has one, and it must not replace
/// the record or clear a revocation.
pub fn fold_registered(keys: &mut KeysProjection, event: &Event, p: &KeyRegistered) -> Result<()> {
    if let Some(existing) = keys.keys.get(&p.public_key) {
        return Err(LedgerError::corrupt(
            format!("event {}", event.seq),
            format!(
                "key.registered names key {}, already registered at seq {}",
                p.public_key, existing.registered_seq
            ),
        ));
    }
    let mut r = record(event, p.roles.iter().copied());
    r.not_before_ms = p.not_before_ms;
    r.not_after_ms = p.not_after_ms;
    r.label = p.label.clone();
    keys.keys.insert(p.public_key.clone(), r);
    Ok(())
}

/// Folds `key.revoked`; the key must be registered.
pub fn fold_revoked(keys: &mut KeysProjection, event: &Event, p: &KeyRevoked) -> Result<()> {
    let Some(k) = keys.keys.get_mut(&p.public_key) else {
        return Err(LedgerError::corrupt(
            format!("event {}", event.seq),
            format!(
                "key.revoked names key {}, which is not registered",
                p.public_key
            ),
        ));
    };
    if let Some(at) = k.revoked_seq {
        // As for a second registration: only an unadmitted log has this.
        return Err(LedgerError::corrupt(
            format!("event {}", event.seq),
            format!(
                "key.revoked names key {}, already revoked at seq {at}",
                p.public_key
            ),
        ));
    }
    k.revoked_seq = Some(event.seq);
    k.revoked_reason = p.reason.clone();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn genesis_with_origin(origin: &str) -> Result<()> {
        let ledger = ed25519_dalek::SigningKey::from_bytes(&[1; 32]);
        let admin = ed25519_dalek::SigningKey::from_bytes(&[2; 32]);
        let g = GenesisPayload {
            origin: origin.into(),
            ledger_key: hex::encode(ledger.verifying_key().to_bytes()),
            admin_key: hex::encode(admin.verifying_key().to_bytes()),
            ledger_roles: vec![Role::Verifier],
        };
        let payload = serde_json::to_vec(&g).expect("json");
        admit_genesis(&Statement::sign("ledger.genesis", payload, &ledger), &g)
    }

    #[test]
    fn a_genesis_origin_must_name_checkpoints_and_the_verifier_key() {
        assert!(genesis_with_origin("ci.example.com/docket").is_ok());
        // Each of these would make checkpoints or the verifier key
        // `<name>+<hex8>+<base64>` unreadable.
        for bad in ["", "a b", "a+b", "a\nb", "a\rb", "a\u{7}b", "tab\there"] {
            let e = genesis_with_origin(bad).expect_err(bad);
            assert!(matches!(e, LedgerError::Invalid { .. }), "{bad:?}: {e}");
        }
    }
}

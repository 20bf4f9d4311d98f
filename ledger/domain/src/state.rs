//! The ledger's state machine: admission (may this statement be appended
//! now?) and the fold of every projection. The committer thread owns the one
//! live instance; replay and audits build their own from the events.

use serde::{Deserialize, Serialize};

use crate::authority::{self, EXTENSION_PREFIX, GENESIS};
use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::keys::{self, Role};
use crate::projection::{GenesisPayload, KeyRegistered, KeyRevoked, KeysProjection, Projection};
pub use docket_log::machine::AdmitContext;
use docket_log::machine::StateMachine;

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
    pub domain: crate::domain::DomainState,
    /// Retention policy, pins, redactions and sweeps.
    pub retention: crate::retention::RetentionState,
}

impl LedgerState {
    /// Decides whether `stmt` may be appended at `ctx`. Pure: reads only
    /// `self`. The signature has already been verified.
    pub fn admit(&self, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
        stmt.check_shape()?;
        if ctx.seq == 0 {
            return self.admit_genesis(stmt);
        }
        if stmt.kind == GENESIS {
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                "genesis is only valid at sequence 0",
            ));
        }
        let Some(roles) = authority::required_roles(&stmt.kind) else {
            return Err(LedgerError::Invalid {
                what: "kind".into(),
                violations: vec![format!(
                    "unknown kind {:?}; known kinds are listed in docs/FORMAT.md, custom kinds start with {EXTENSION_PREFIX:?}",
                    stmt.kind
                )],
            });
        };
        let Some(author) = self.keys.key(&stmt.author) else {
            return Err(LedgerError::denied(&stmt.kind, &stmt.author, "unknown key"));
        };
        if let Some(r) = author.revoked_seq {
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                format!("key was revoked at seq {r}"),
            ));
        }
        if !author.usable_at(ctx.seq, ctx.recorded_at_ms) {
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                "key is outside its validity window",
            ));
        }
        if !roles.iter().any(|r| author.roles.contains(r)) {
            let need: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                format!("needs one of the roles {}", need.join(", ")),
            ));
        }
        match stmt.kind.as_str() {
            "key.registered" => self.admit_key_registered(stmt),
            "key.revoked" => self.admit_key_revoked(stmt, ctx),
            kind if kind.starts_with(EXTENSION_PREFIX) => Ok(()),
            _ => crate::domain::admit(self, stmt, ctx),
        }
    }

    fn admit_genesis(&self, stmt: &Statement) -> Result<()> {
        if stmt.kind != GENESIS {
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                "sequence 0 must be the genesis event",
            ));
        }
        let g: GenesisPayload = parse_json("genesis", &stmt.payload)?;
        if g.ledger_key != hex::encode(stmt.author) {
            return Err(LedgerError::denied(
                &stmt.kind,
                &stmt.author,
                "genesis must be signed by the ledger key it names",
            ));
        }
        keys::parse_public(&g.admin_key)?;
        if g.admin_key == g.ledger_key {
            return Err(invalid(
                "genesis",
                "the admin key must differ from the ledger key",
            ));
        }
        if g.origin.is_empty() || g.origin.contains('\n') {
            return Err(invalid("genesis", "origin must be one non-empty line"));
        }
        Ok(())
    }

    fn admit_key_registered(&self, stmt: &Statement) -> Result<()> {
        let p: KeyRegistered = parse_json("key.registered", &stmt.payload)?;
        let mut violations = Vec::new();
        if let Err(e) = keys::parse_public(&p.public_key) {
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
        if !violations.is_empty() {
            return Err(LedgerError::Invalid {
                what: "key.registered".into(),
                violations,
            });
        }
        if let Some(existing) = self.keys.keys.get(&p.public_key) {
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

    fn admit_key_revoked(&self, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
        let p: KeyRevoked = parse_json("key.revoked", &stmt.payload)?;
        // One canonical spelling: a key can never count as two.
        if let Err(e) = keys::parse_public(&p.public_key) {
            return Err(LedgerError::Invalid {
                what: "key.revoked".into(),
                violations: vec![format!("public_key: {e}")],
            });
        }
        let key = p.public_key.clone();
        let Some(record) = self.keys.keys.get(&key) else {
            return Err(LedgerError::NotFound {
                what: format!("key {key}"),
            });
        };
        if let Some(r) = record.revoked_seq {
            return Err(LedgerError::FailedPrecondition(format!(
                "key {key} was already revoked at seq {r}"
            )));
        }
        if self.keys.ledger_key.as_deref() == Some(key.as_str()) {
            return Err(LedgerError::FailedPrecondition(
                "the ledger key cannot be revoked; rotate the ledger instead".into(),
            ));
        }
        if record.roles.contains(&Role::Admin)
            && self.keys.active_admins(ctx.seq, ctx.recorded_at_ms) <= 1
        {
            return Err(LedgerError::FailedPrecondition(
                "refusing to revoke the last active admin key".into(),
            ));
        }
        Ok(())
    }

    /// Folds one event into every projection.
    pub fn apply(&mut self, event: &Event) {
        self.keys.apply(event);
        crate::domain::apply(self, event);
        self.applied = event.seq + 1;
        self.last_recorded_at_ms = event.recorded_at_ms;
    }

    /// Canonical snapshot bytes of each projection, by name, and `meta`
    /// (the ledger time of the last folded event).
    pub fn snapshots(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut out = vec![(KeysProjection::NAME, self.keys.snapshot_bytes())];
        out.extend(crate::domain::snapshots(self));
        out.push(("meta", self.last_recorded_at_ms.to_string().into_bytes()));
        out
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
            if name == "meta" {
                state.last_recorded_at_ms = std::str::from_utf8(bytes)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| LedgerError::corrupt("snapshot meta", "not a time"))?;
            } else if name == KeysProjection::NAME {
                state.keys = KeysProjection::from_snapshot(bytes)?;
            } else {
                crate::domain::restore(&mut state, name, bytes)?;
            }
        }
        Ok(state)
    }
}

impl StateMachine for LedgerState {
    fn admit(&self, statement: &Statement, at: &AdmitContext) -> Result<()> {
        LedgerState::admit(self, statement, at)
    }

    fn apply(&mut self, event: &Event) -> Result<()> {
        LedgerState::apply(self, event);
        Ok(())
    }

    fn snapshot(&self) -> Vec<(&'static str, Vec<u8>)> {
        self.snapshots()
    }

    fn restore(seq: u64, parts: &[(String, Vec<u8>)]) -> Result<Self> {
        LedgerState::from_snapshots(seq, 0, parts)
    }

    fn describe_difference(name: &str, stored: &[u8], rebuilt: &[u8]) -> String {
        first_difference(name, stored, rebuilt)
    }
}

/// Parses a JSON payload, mapping errors to `Invalid`.
pub fn parse_json<T: serde::de::DeserializeOwned>(what: &str, payload: &[u8]) -> Result<T> {
    serde_json::from_slice(payload).map_err(|e| LedgerError::Invalid {
        what: what.to_string(),
        violations: vec![format!("payload is not a valid {what} document: {e}")],
    })
}

fn invalid(what: &str, violation: &str) -> LedgerError {
    LedgerError::Invalid {
        what: what.to_string(),
        violations: vec![violation.to_string()],
    }
}

/// Names of every projection snapshot (keys first, then the domain's).
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
        }
        Some(format!("{path} differs"))
    }
    walk(name, &a, &b, 0).unwrap_or_else(|| format!("{name}: bytes differ (same JSON value)"))
}

//! The state machine the log drives ([`docket_log::machine::StateMachine`]
//! for [`LedgerState`]): admission (may this statement be appended now?)
//! and the fold, both through the kind table ([`crate::kind`]).
//!
//! Admission, in order: the statement's shape; at sequence 0 only the
//! genesis event; the kind, parsed once (unknown kinds are refused); the
//! author's authority (a registered, unrevoked key inside its validity
//! window holding a role the kind allows); the payload, decoded once (every
//! schema violation listed); the kind's admission rule against the state.
//!
//! An appended statement's fold takes the payload admission decoded
//! ([`StateMachine::Admitted`] is [`Payload`]); an event read back from the
//! store (open, replay) is decoded the same way and handed to the kind's
//! fold. An admitted event always folds: an error from [`LedgerState::apply`]
//! means the stored event is not what was admitted, and the log reports it
//! as corruption at that sequence number.

use docket_log::machine::StateMachine;

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::{Authors, Kind, Payload, names};
use crate::state::{AdmitContext, LedgerState, first_difference};

impl LedgerState {
    /// Decides whether `stmt` may be appended at `ctx`. Pure: reads only
    /// `self`. The signature has already been verified.
    pub fn admit(&self, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
        self.admit_decoded(stmt, ctx).map(drop)
    }

    /// [`LedgerState::admit`], handing back the payload it decoded, for
    /// [`LedgerState::apply_decoded`] of the same event (so an appended
    /// payload is decoded once).
    pub fn admit_decoded(&self, stmt: &Statement, ctx: &AdmitContext) -> Result<Payload> {
        stmt.check_shape()?;
        let payload = if ctx.seq == 0 {
            if stmt.kind != names::GENESIS {
                return Err(LedgerError::denied(
                    &stmt.kind,
                    &stmt.author,
                    "sequence 0 must be the genesis event",
                ));
            }
            Payload::decode(&Kind::Genesis, &stmt.payload)?
        } else {
            let kind = Kind::parse(&stmt.kind)?;
            self.check_authority(&kind, stmt, ctx)?;
            Payload::decode(&kind, &stmt.payload)?
        };
        payload.admit(self, stmt, ctx)?;
        Ok(payload)
    }

    /// The author may write `kind` at `ctx`: genesis never after sequence 0;
    /// otherwise a known key, unrevoked, inside its validity window, holding
    /// one of the kind's roles.
    fn check_authority(&self, kind: &Kind, stmt: &Statement, ctx: &AdmitContext) -> Result<()> {
        let roles = match kind.authors() {
            Authors::LedgerKey => {
                return Err(LedgerError::denied(
                    &stmt.kind,
                    &stmt.author,
                    "genesis is only valid at sequence 0",
                ));
            }
            Authors::Roles(roles) => roles,
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
        Ok(())
    }

    /// Folds one committed event into every projection. An event whose kind
    /// or payload does not decode, or that names what the state does not
    /// hold, is an error (`Corrupt`, naming the sequence number) and
    /// changes nothing.
    pub fn apply(&mut self, event: &Event) -> Result<()> {
        let payload = Self::decode_for_apply(event)?;
        self.apply_decoded(event, &payload)
    }

    /// The first half of [`LedgerState::apply`]: the kind and payload of a
    /// committed event, decoded, with `apply`'s errors. Reads no state, so a
    /// rebuild may decode events ahead of the fold (in parallel with it).
    pub fn decode_for_apply(event: &Event) -> Result<Payload> {
        let at = || format!("event {} ({})", event.seq, event.kind);
        let kind =
            Kind::parse(&event.kind).map_err(|e| LedgerError::corrupt(at(), e.to_string()))?;
        Payload::decode(&kind, &event.payload)
            .map_err(|e| LedgerError::corrupt(at(), format!("payload does not decode: {e}")))
    }

    /// The second half of [`LedgerState::apply`]: folds `event`, whose
    /// payload [`LedgerState::decode_for_apply`] decoded.
    pub fn apply_decoded(&mut self, event: &Event, payload: &Payload) -> Result<()> {
        payload.fold(self, event)?;
        self.advance(event);
        Ok(())
    }

    /// Folds one event of a log that may lack context or hold refused
    /// events: a partial export, a bundle under audit, a simulated
    /// misbehaving log. An event that does not fold (the error says why)
    /// changes no projection but still counts as folded (`applied`, ledger
    /// time), so what follows folds at its own position. Callers that know
    /// the log is complete and admitted use [`LedgerState::apply`].
    pub fn apply_partial(&mut self, event: &Event) -> Result<()> {
        let folded = self.apply(event);
        if folded.is_err() {
            self.advance(event);
        }
        folded
    }

    /// Counts `event` as folded without changing any projection: for an
    /// event a verifier refused (an audit re-admitting a bundle), so that
    /// what follows is judged at its own position.
    pub fn pass_over(&mut self, event: &Event) {
        self.advance(event);
    }

    fn advance(&mut self, event: &Event) {
        self.applied = event.seq + 1;
        self.last_recorded_at_ms = event.recorded_at_ms;
    }
}

impl StateMachine for LedgerState {
    /// The payload admission decoded, folded without decoding it again.
    type Admitted = Payload;

    fn admit(&self, statement: &Statement, at: &AdmitContext) -> Result<Payload> {
        LedgerState::admit_decoded(self, statement, at)
    }

    fn apply(&mut self, event: &Event) -> Result<()> {
        LedgerState::apply(self, event)
    }

    fn apply_admitted(&mut self, event: &Event, payload: &Payload) -> Result<()> {
        LedgerState::apply_decoded(self, event, payload)
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

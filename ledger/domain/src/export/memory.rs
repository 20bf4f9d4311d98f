//! An in-memory log with the ledger's sequencing rules, for tests, test
//! vectors and benches: deterministic (the caller supplies keys and times),
//! fast (no disk), and exportable like the real ledger.

use std::collections::{BTreeMap, HashMap};

use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest as _, Sha256};

use crate::blobs::BlobDigest;
use crate::checkpoint::{self, Checkpoint};
use crate::error::{LedgerError, Result};
use crate::event::{EVENT_FORMAT, Event, Statement};
use crate::keys::Role;
use crate::kind::names::GENESIS;
use crate::merkle::{self, Hash, MemoryTree};
use crate::projection::{GenesisPayload, KeysProjection};
use crate::state::{AdmitContext, LedgerState};

use super::source::LogSource;

/// A log held in memory. Statements are admitted against the state exactly
/// as the ledger's committer does (authority rules, domain rules), but their
/// signatures are *not* verified here: tests append forged statements on
/// purpose, and the auditor is what must catch them.
pub struct MemoryLog {
    origin: String,
    ledger_public: VerifyingKey,
    /// `None` for a log recovered from stored bytes ([`MemoryLog::from_stored`]).
    ledger_key: Option<SigningKey>,
    state: LedgerState,
    events: Vec<Vec<u8>>,
    tree: MemoryTree,
    checkpoints: BTreeMap<u64, String>,
    prev_hash: Hash,
    last_time: u64,
    blobs: HashMap<BlobDigest, Vec<u8>>,
}

impl std::fmt::Debug for MemoryLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLog")
            .field("origin", &self.origin)
            .field("len", &self.events.len())
            .finish_non_exhaustive()
    }
}

impl MemoryLog {
    /// A log whose genesis (at `time_ms`) names `ledger_key` and `admin`.
    pub fn genesis(
        origin: &str,
        ledger_key: SigningKey,
        admin: &SigningKey,
        time_ms: u64,
    ) -> Result<Self> {
        let ledger_public = ledger_key.verifying_key();
        let genesis = GenesisPayload {
            origin: origin.to_string(),
            ledger_key: hex::encode(ledger_public.to_bytes()),
            admin_key: hex::encode(admin.verifying_key().to_bytes()),
            ledger_roles: vec![Role::Verifier, Role::Custodian],
        };
        // Invariant: plain struct serialises.
        let payload = serde_json::to_vec(&genesis).expect("genesis serialises");
        let st = Statement::sign(GENESIS, payload, &ledger_key);
        let mut log = Self {
            origin: origin.to_string(),
            ledger_public,
            ledger_key: Some(ledger_key),
            state: LedgerState::default(),
            events: Vec::new(),
            tree: MemoryTree::new(),
            checkpoints: BTreeMap::new(),
            prev_hash: [0; 32],
            last_time: 0,
            blobs: HashMap::new(),
        };
        log.append(st, time_ms)?;
        log.commit();
        Ok(log)
    }

    /// A log holding exactly `events` (canonical bytes, from genesis, as a
    /// damaged ledger stored them) and the signed `checkpoints` found for
    /// them: the source of a recovery export. Nothing is re-signed; the
    /// caller has verified the bytes (`docket recover`).
    pub fn from_stored(
        origin: &str,
        ledger_public: VerifyingKey,
        events: Vec<Vec<u8>>,
        checkpoints: BTreeMap<u64, String>,
    ) -> Result<Self> {
        let mut log = Self {
            origin: origin.to_string(),
            ledger_public,
            ledger_key: None,
            state: LedgerState::default(),
            events: Vec::with_capacity(events.len()),
            tree: MemoryTree::new(),
            checkpoints,
            prev_hash: [0; 32],
            last_time: 0,
            blobs: HashMap::new(),
        };
        for bytes in events {
            let event = Event::decode(&bytes)?;
            let leaf = merkle::leaf_hash(&bytes);
            log.tree.push(leaf);
            // A damaged ledger's prefix: an event that does not fold
            // changes nothing (the export carries its bytes regardless).
            let _ = log.state.apply_partial(&event);
            log.prev_hash = leaf;
            log.last_time = event.recorded_at_ms;
            log.events.push(bytes);
        }
        Ok(log)
    }

    /// Adds the content of a blob (a recovery export copies what survived).
    pub fn insert_blob(&mut self, digest: BlobDigest, bytes: Vec<u8>) {
        self.blobs.insert(digest, bytes);
    }

    /// Admits and appends one statement at ledger time `max(time_ms, last)`;
    /// returns its sequence number. No checkpoint is signed until
    /// [`MemoryLog::commit`].
    pub fn append(&mut self, stmt: Statement, time_ms: u64) -> Result<u64> {
        let seq = self.events.len() as u64;
        let recorded_at_ms = time_ms.max(self.last_time);
        self.state.admit(
            &stmt,
            &AdmitContext {
                seq,
                recorded_at_ms,
            },
        )?;
        Ok(self.push(stmt, recorded_at_ms))
    }

    /// Appends without admission: simulates a misbehaving ledger that logs
    /// (and signs checkpoints over) statements its rules refuse, so tests
    /// can check that audits catch it.
    pub fn append_unchecked(&mut self, stmt: Statement, time_ms: u64) -> u64 {
        let recorded_at_ms = time_ms.max(self.last_time);
        self.push(stmt, recorded_at_ms)
    }

    fn push(&mut self, stmt: Statement, recorded_at_ms: u64) -> u64 {
        let seq = self.events.len() as u64;
        let event = Event {
            format: EVENT_FORMAT,
            seq,
            recorded_at_ms,
            prev_hash: self.prev_hash,
            kind: stmt.kind,
            author: stmt.author,
            payload: stmt.payload,
            signature: stmt.signature,
        };
        let bytes = event.encode();
        let leaf = merkle::leaf_hash(&bytes);
        self.tree.push(leaf);
        // `append_unchecked` logs what the rules refuse (a misbehaving
        // ledger): such an event folds nothing.
        let _ = self.state.apply_partial(&event);
        self.events.push(bytes);
        self.prev_hash = leaf;
        self.last_time = recorded_at_ms;
        seq
    }

    /// Appends a registration of a new key with `roles`, signed by `admin`.
    pub fn register(
        &mut self,
        admin: &SigningKey,
        key: &SigningKey,
        roles: &[Role],
        time_ms: u64,
    ) -> Result<u64> {
        let payload = serde_json::json!({
            "public_key": hex::encode(key.verifying_key().to_bytes()),
            "roles": roles,
        });
        self.append(
            Statement::sign("key.registered", payload.to_string().into_bytes(), admin),
            time_ms,
        )
    }

    /// Appends a revocation of `key`, signed by `admin`.
    pub fn revoke(&mut self, admin: &SigningKey, key: &SigningKey, time_ms: u64) -> Result<u64> {
        let payload =
            serde_json::json!({"public_key": hex::encode(key.verifying_key().to_bytes())});
        self.append(
            Statement::sign("key.revoked", payload.to_string().into_bytes(), admin),
            time_ms,
        )
    }

    /// Signs and stores a checkpoint for the current size (a commit
    /// boundary), as the ledger does after each group commit. A log
    /// recovered from stored bytes holds no private key and signs nothing:
    /// it carries only the checkpoints stored with it.
    pub fn commit(&mut self) {
        let size = self.events.len() as u64;
        if size == 0 || self.checkpoints.contains_key(&size) {
            return;
        }
        let Some(key) = &self.ledger_key else {
            return;
        };
        let body = Checkpoint {
            origin: self.origin.clone(),
            size,
            root: self.tree.root(),
            extensions: Vec::new(),
        }
        .body();
        let note = checkpoint::sign_note(&body, &self.origin, key);
        self.checkpoints.insert(size, note);
    }

    /// Stores blob content; returns its SHA-256.
    pub fn put_blob(&mut self, bytes: Vec<u8>) -> BlobDigest {
        let digest: BlobDigest = Sha256::digest(&bytes).into();
        self.blobs.insert(digest, bytes);
        digest
    }

    /// Deletes blob content (as a retention purge does).
    pub fn delete_blob(&mut self, digest: &BlobDigest) -> bool {
        self.blobs.remove(digest).is_some()
    }

    /// The live state.
    pub fn state(&self) -> &LedgerState {
        &self.state
    }

    /// Canonical bytes of event `seq`.
    pub fn event_bytes(&self, seq: u64) -> Option<&[u8]> {
        self.events
            .get(usize::try_from(seq).ok()?)
            .map(Vec::as_slice)
    }

    /// The latest signed checkpoint note.
    pub fn latest_checkpoint(&self) -> Option<(u64, &str)> {
        self.checkpoints
            .iter()
            .next_back()
            .map(|(s, n)| (*s, n.as_str()))
    }
}

impl LogSource for MemoryLog {
    fn len(&self) -> u64 {
        self.events.len() as u64
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        let to = to.min(self.len());
        Ok((from..to)
            .map(|s| {
                (
                    s,
                    self.events[usize::try_from(s).unwrap_or(usize::MAX)].clone(),
                )
            })
            .collect())
    }

    fn checkpoint_covering(&self, size: u64) -> Result<(Checkpoint, String)> {
        let Some((_, note)) = self.checkpoints.range(size.max(1)..).next() else {
            return Err(LedgerError::NotFound {
                what: format!("a checkpoint covering tree size {size}"),
            });
        };
        let cp = checkpoint::open_note(note, &self.note_verifier()?)?;
        Ok((cp, note.clone()))
    }

    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>> {
        Ok(merkle::inclusion_proof(&self.tree, index, size)?)
    }

    fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>> {
        Ok(merkle::consistency_proof(&self.tree, old, new)?)
    }

    fn root_at(&self, size: u64) -> Result<Hash> {
        Ok(merkle::root_at(&self.tree, size)?)
    }

    fn origin(&self) -> String {
        self.origin.clone()
    }

    fn ledger_public_key(&self) -> VerifyingKey {
        self.ledger_public
    }

    fn ledger_signing_key(&self) -> Option<&SigningKey> {
        self.ledger_key.as_ref()
    }

    fn keys(&self) -> KeysProjection {
        self.state.keys.clone()
    }

    fn blob(&self, digest: &BlobDigest) -> Result<Option<Vec<u8>>> {
        Ok(self.blobs.get(digest).cloned())
    }

    fn oid_record(&self, oid: &str) -> Option<crate::domain::OidRecord> {
        self.state.domain.oids.oids.get(oid).cloned()
    }
}

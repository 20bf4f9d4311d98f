//! What an export reads: [`LogSource`], implemented by the [`Ledger`] and by
//! the in-memory [`super::MemoryLog`].

use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::blobs::{BlobDigest, BlobStore};
use crate::checkpoint::{self, Checkpoint, NoteVerifier};
use crate::domain::OidRecord;
use crate::error::{LedgerError, Result};
use crate::ledger::Ledger;
use crate::merkle::Hash;
use crate::projection::KeysProjection;

/// Read access to a log, its proofs, checkpoints and blobs.
pub trait LogSource {
    /// Number of durable events.
    fn len(&self) -> u64;
    /// Whether the log is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Canonical bytes of events `from..to` in order.
    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>>;
    /// Whether event `seq` can be read. Every event below [`LogSource::len`]
    /// of a log; a salvage ([`super::recover::SalvagedLog`]) has holes
    /// where events were lost, and an export carries no context it lacks.
    fn holds(&self, seq: u64) -> bool {
        seq < self.len()
    }
    /// The stored signed checkpoint with the smallest tree size `>= size`:
    /// the exact one when `size` is a commit boundary.
    fn checkpoint_covering(&self, size: u64) -> Result<(Checkpoint, String)>;
    /// RFC 9162 inclusion proof of `index` in the tree of `size` leaves.
    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>>;
    /// RFC 9162 consistency proof from `old` to `new`.
    fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>>;
    /// Root of the first `size` leaves.
    fn root_at(&self, size: u64) -> Result<Hash>;
    /// The checkpoint origin.
    fn origin(&self) -> String;
    /// The ledger's public key: checkpoints verify with it.
    fn ledger_public_key(&self) -> VerifyingKey;
    /// The ledger's private key, when this source holds it: it signs DSSE
    /// envelopes for `--format vsa`. `None` for a log recovered from a
    /// damaged data directory, which carries only the checkpoints stored
    /// with it (nothing is re-signed; its private key may be lost).
    fn ledger_signing_key(&self) -> Option<&SigningKey>;
    /// The keys projection of the whole log (registration and revocation
    /// sequence numbers of every key).
    fn keys(&self) -> KeysProjection;
    /// A blob's content, or None when it is not stored (purged).
    fn blob(&self, digest: &BlobDigest) -> Result<Option<Vec<u8>>>;
    /// The live state's record of an evidence OID.
    fn oid_record(&self, oid: &str) -> Option<OidRecord>;

    /// The verifier for this log's checkpoints.
    fn note_verifier(&self) -> Result<NoteVerifier> {
        Ok(NoteVerifier::new(&self.origin(), self.ledger_public_key())?)
    }
    /// The C2SP verifier key text.
    fn verifier_key(&self) -> String {
        checkpoint::verifier_key(&self.origin(), &self.ledger_public_key())
    }
}

/// Largest blob an export copies.
pub const MAX_EXPORT_BLOB: u64 = 1 << 34;

impl LogSource for Ledger {
    fn len(&self) -> u64 {
        Ledger::len(self)
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>> {
        // Checked against the stored leaves: an event altered on disk is
        // refused here, not written into a bundle.
        self.event_bytes_range(from, to)
    }

    fn checkpoint_covering(&self, size: u64) -> Result<(Checkpoint, String)> {
        let len = Ledger::len(self);
        // Every group commit stores a checkpoint, so the scan stops within
        // one commit batch of `size`.
        for s in size.max(1)..=len {
            if self.store().checkpoint(Some(s))?.is_some() {
                return self.checkpoint_at(s);
            }
        }
        Err(LedgerError::NotFound {
            what: format!("a checkpoint covering tree size {size} (the log has {len} events)"),
        })
    }

    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>> {
        Ledger::inclusion_proof(self, index, size)
    }

    fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>> {
        Ledger::consistency_proof(self, old, new)
    }

    fn root_at(&self, size: u64) -> Result<Hash> {
        Ledger::root_at(self, size)
    }

    fn origin(&self) -> String {
        Ledger::origin(self).to_string()
    }

    fn ledger_public_key(&self) -> VerifyingKey {
        Ledger::ledger_key(self).verifying_key()
    }

    fn ledger_signing_key(&self) -> Option<&SigningKey> {
        Some(Ledger::ledger_key(self))
    }

    fn keys(&self) -> KeysProjection {
        self.state().keys.clone()
    }

    fn oid_record(&self, oid: &str) -> Option<OidRecord> {
        self.state().domain.oids.oids.get(oid).cloned()
    }

    fn blob(&self, digest: &BlobDigest) -> Result<Option<Vec<u8>>> {
        let blobs = BlobStore::open_to_read(self.dir());
        match blobs.read_verified(digest, MAX_EXPORT_BLOB) {
            Ok(b) => Ok(Some(b)),
            Err(LedgerError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

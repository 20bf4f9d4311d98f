//! `docket export`: select events, add the key context their authority
//! follows from, prove them against a stored signed checkpoint, and write
//! the bundle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::blobs::BlobDigest;
use crate::checkpoint;
use crate::domain::kinds::EVIDENCE_REGISTERED;
use crate::domain::oid;
use crate::domain::payloads::task_key;
use crate::domain::{OidRegistry, OidState};
use crate::event::Event;
use crate::kind::names::GENESIS;
use crate::merkle::Hash;
use crate::state::LedgerState;

use super::ExportError;
use super::bundle;
use super::format::{
    self, BLOBS_DIR, CHECKPOINT, CONSISTENCY, ConsistencyFile, EVENTS, FileEntry, InclusionEntry,
    MANIFEST, Manifest, PROOFS, ProofsFile, SINCE, SUMMARY, Scope, VKEY,
};
use super::source::LogSource;
use super::summary::{self, SummaryBuilder};
use super::vsa;

/// `--as-of`: a sequence number or a ledger time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    /// State as of this sequence number (inclusive).
    Seq(u64),
    /// State as of the last event recorded at or before this time (Unix ms).
    TimeMs(u64),
}

/// `--format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExportFormat {
    /// The audit bundle.
    #[default]
    Bundle,
    /// The audit bundle plus every verdict as a DSSE-signed SLSA VSA and
    /// its checks as in-toto test-result statements, under `attestations/`.
    Vsa,
}

/// What to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Export these tasks' verdict chains (empty: a log range).
    pub tasks: Vec<String>,
    /// First sequence number (default 0, or the `since` checkpoint's size).
    pub from: Option<u64>,
    /// Last sequence number, inclusive (default: the last one).
    pub to: Option<u64>,
    /// Prove against the checkpoint as of this point (default: latest).
    pub as_of: Option<AsOf>,
    /// Copy evidence blobs.
    pub with_blobs: bool,
    /// A signed checkpoint note held by the recipient: add a consistency
    /// proof from it.
    pub since_note: Option<String>,
    pub format: ExportFormat,
}

/// What an export wrote.
#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    pub tree_size: u64,
    pub root: String,
    /// Events carried (selected plus key context).
    pub events: u64,
    /// Events selected by the request.
    pub selected: u64,
    /// Maximal runs of consecutive carried events, `[first, last]`.
    pub ranges: Vec<[u64; 2]>,
    pub inclusion_proofs: u64,
    pub blobs: u64,
    /// Referenced blobs whose content is gone (purged or redacted).
    pub blobs_absent: Vec<String>,
    pub attestations: u64,
    pub since_size: Option<u64>,
    pub files: u64,
    pub bytes: u64,
}

/// Builds the bundle and writes it to `out` (a directory, or one tar file
/// with `tar`). `out` must not exist.
pub fn export(
    source: &dyn LogSource,
    options: &ExportOptions,
    out: &Path,
    tar: bool,
) -> Result<ExportReport, ExportError> {
    if std::fs::symlink_metadata(out).is_ok() {
        return Err(ExportError::Exists(out.to_path_buf()));
    }
    let (files, report) = build(source, options)?;
    if tar {
        bundle::write_tar(out, &files)?;
    } else {
        bundle::write_dir(out, &files)?;
    }
    Ok(report)
}

/// Builds every bundle file in memory (manifest included).
pub fn build(
    source: &dyn LogSource,
    options: &ExportOptions,
) -> Result<(BTreeMap<String, Vec<u8>>, ExportReport), ExportError> {
    let len = source.len();
    if len == 0 {
        return Err(ExportError::NotFound("events: the log is empty".into()));
    }
    // 1. Where the export ends and which checkpoint proves it.
    let end = match options.as_of {
        None => len,
        Some(AsOf::Seq(s)) if s >= len => {
            return Err(ExportError::Request(format!(
                "--as-of {s} is beyond the log (last sequence number {})",
                len - 1
            )));
        }
        Some(AsOf::Seq(s)) => s + 1,
        Some(AsOf::TimeMs(t)) => last_at_or_before(source, t)? + 1,
    };
    let (cp, note) = source.checkpoint_covering(end)?;
    let tree_size = cp.size;

    // 2. The consistency proof from the recipient's checkpoint.
    let since = match &options.since_note {
        None => None,
        Some(text) => {
            let old = checkpoint::open_note(text, &source.note_verifier()?).map_err(|e| {
                ExportError::Request(format!(
                    "the --since checkpoint is not signed by this ledger's key: {e}"
                ))
            })?;
            if old.origin != cp.origin {
                return Err(ExportError::Request(format!(
                    "the --since checkpoint is for origin {:?}, this log is {:?}",
                    old.origin, cp.origin
                )));
            }
            if old.size > tree_size {
                return Err(ExportError::Request(format!(
                    "the --since checkpoint (size {}) is newer than the export's (size {tree_size})",
                    old.size
                )));
            }
            if old.size > 0 && source.root_at(old.size)? != old.root {
                return Err(ExportError::Request(format!(
                    "the --since checkpoint's root differs from this log's root at size {}: \
                     the log was forked or rewritten",
                    old.size
                )));
            }
            let path = source.consistency_proof(old.size, tree_size)?;
            Some((old, text.clone(), path))
        }
    };

    // 3. Selection.
    let from = options
        .from
        .or(since.as_ref().map(|(old, _, _)| old.size.min(end - 1)))
        .unwrap_or(0);
    let last = match options.to {
        Some(t) if t >= len => {
            return Err(ExportError::Request(format!(
                "--to {t} is beyond the log (last sequence number {})",
                len - 1
            )));
        }
        Some(t) => t.min(end - 1),
        None => end - 1,
    };
    if from > last {
        return Err(ExportError::Request(format!(
            "--from {from} is after the last exported sequence number {last}"
        )));
    }
    let mut carried: BTreeMap<u64, (Vec<u8>, Event)> = BTreeMap::new();
    let mut selected = 0u64;
    if options.tasks.is_empty() {
        let mut next = from;
        while next <= last {
            let to = (next + 8192).min(last + 1);
            for (seq, bytes) in source.event_range(next, to)? {
                let event = decode(seq, &bytes)?;
                carried.insert(seq, (bytes, event));
                selected += 1;
            }
            next = to;
        }
    } else {
        let chains = task_chains(source, &options.tasks, from, last + 1)?;
        for (task, seqs) in &chains {
            if seqs.is_empty() {
                return Err(ExportError::NotFound(format!(
                    "task {task}: no events in sequence numbers {from}..={last}"
                )));
            }
        }
        for seq in chains.into_values().flatten() {
            if let std::collections::btree_map::Entry::Vacant(v) = carried.entry(seq) {
                let bytes = fetch(source, seq)?;
                let event = decode(seq, &bytes)?;
                v.insert((bytes, event));
                selected += 1;
            }
        }
    }

    // 3b. Purged evidence appears as its retention event: when a carried
    // OID's content is gone, carry the event that removed it.
    if options.with_blobs {
        let mut fold = LedgerState::default();
        for (_, e) in carried.values() {
            // Carried events whose context is not carried fold nothing.
            let _ = fold.apply_partial(e);
        }
        for (oid, rec) in &fold.domain.oids.oids {
            let Some(d) = format::parse_hash(&rec.sha256) else {
                continue;
            };
            if source.blob(&d)?.is_some() {
                continue;
            }
            if let Some(removal) = source.oid_record(oid).and_then(|r| r.removal)
                && removal.seq < tree_size
                && let std::collections::btree_map::Entry::Vacant(v) = carried.entry(removal.seq)
            {
                let bytes = fetch(source, removal.seq)?;
                let event = decode(removal.seq, &bytes)?;
                v.insert((bytes, event));
            }
        }
    }

    // 4. Key context: genesis, then the registration (and any revocation
    // before the end) of every author, transitively.
    let keys = source.keys();
    // (A salvage may have lost genesis: it then carries none, and the
    // audit reports the authority it cannot establish.)
    let mut wanted: BTreeSet<u64> = BTreeSet::from([0]);
    wanted.retain(|&seq| source.holds(seq));
    let mut seen_authors: BTreeSet<String> = BTreeSet::new();
    loop {
        for seq in std::mem::take(&mut wanted) {
            if let std::collections::btree_map::Entry::Vacant(v) = carried.entry(seq) {
                let bytes = fetch(source, seq)?;
                let event = decode(seq, &bytes)?;
                v.insert((bytes, event));
            }
        }
        for (_, e) in carried.values() {
            let author = hex::encode(e.author);
            if !seen_authors.insert(author.clone()) {
                continue;
            }
            if let Some(record) = keys.keys.get(&author) {
                wanted.insert(record.registered_seq);
                if let Some(r) = record.revoked_seq.filter(|&r| r < end) {
                    wanted.insert(r);
                }
            }
        }
        wanted.retain(|s| !carried.contains_key(s) && source.holds(*s));
        if wanted.is_empty() {
            break;
        }
    }

    // 5. Proofs: the first and last event of every run of consecutive
    // sequence numbers (RFC 9162 §2.1.3); the hash chain covers the rest.
    let ranges = runs(carried.keys().copied());
    let mut inclusion = Vec::new();
    for [a, b] in &ranges {
        for seq in if a == b { vec![*a] } else { vec![*a, *b] } {
            let leaf = crate::merkle::leaf_hash(&carried[&seq].0);
            inclusion.push(InclusionEntry {
                seq,
                leaf_hash: hex::encode(leaf),
                path: format::hexes(&source.inclusion_proof(seq, tree_size)?),
            });
        }
    }
    let proofs = ProofsFile {
        tree_size,
        root: hex::encode(cp.root),
        inclusion,
    };

    // 6. Summary and events; blobs of the evidence the carried events
    // register (live content; for a redaction, the redacted content).
    let mut builder = SummaryBuilder::new(tree_size);
    let mut events_bin = Vec::new();
    for (bytes, e) in carried.values() {
        builder.add(e);
        format::push_event_record(&mut events_bin, bytes);
    }
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut blobs_absent = Vec::new();
    let mut blob_count = 0u64;
    if options.with_blobs {
        for d in expected_blobs(&builder.state().domain.oids) {
            match source.blob(&d)? {
                Some(bytes) => {
                    files.insert(format!("{BLOBS_DIR}{}", hex::encode(d)), bytes);
                    blob_count += 1;
                }
                None => {
                    // Absent is right only when retention removed the
                    // content after the carried events; content the
                    // ledger still holds as live (or as an OID's redacted
                    // content) must be there: its absence is damage.
                    if let Some(oid) = needed_now(&builder.state().domain.oids, &d, source) {
                        return Err(ExportError::Ledger(crate::LedgerError::Corrupt {
                            location: format!("blobs/{}", hex::encode(d)),
                            detail: format!(
                                "the content of evidence {oid} is missing from the blob store, \
                                 and the ledger still holds it (live, or as redacted content)"
                            ),
                        }));
                    }
                    blobs_absent.push(hex::encode(d));
                }
            }
        }
    }
    let summary = builder.finish();
    // 7. The rest.
    let mut attestations = 0u64;
    if options.format == ExportFormat::Vsa {
        let events: Vec<&Event> = carried.values().map(|(_, e)| e).collect();
        for (name, bytes) in vsa::attestations(&events, source, &cp, &note)? {
            files.insert(name, bytes);
            attestations += 1;
        }
    }
    files.insert(CHECKPOINT.into(), note.into_bytes());
    files.insert(
        VKEY.into(),
        format!("{}\n", source.verifier_key()).into_bytes(),
    );
    files.insert(EVENTS.into(), events_bin);
    files.insert(PROOFS.into(), json_line(&proofs));
    files.insert(SUMMARY.into(), summary::to_bytes(&summary));
    let since_size = since.as_ref().map(|(old, _, _)| old.size);
    if let Some((old, text, path)) = since {
        files.insert(SINCE.into(), text.into_bytes());
        files.insert(
            CONSISTENCY.into(),
            json_line(&ConsistencyFile {
                old_size: old.size,
                old_root: hex::encode(old.root),
                new_size: tree_size,
                new_root: hex::encode(cp.root),
                path: format::hexes(&path),
            }),
        );
    }
    let manifest = Manifest {
        format: format::FORMAT.into(),
        origin: cp.origin.clone(),
        tree_size,
        scope: Scope {
            from: options.tasks.is_empty().then_some(from).or(options.from),
            to: options.tasks.is_empty().then_some(last).or(options.to),
            tasks: options.tasks.clone(),
            as_of: options.as_of.map(|_| end - 1),
            since_size,
        },
        with_blobs: options.with_blobs,
        files: files
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    FileEntry {
                        sha256: hex::encode(Sha256::digest(v)),
                        size: v.len() as u64,
                    },
                )
            })
            .collect(),
    };
    // Invariant: plain structs with string keys serialise.
    let mut manifest_bytes = serde_json::to_vec_pretty(&manifest).expect("manifest serialises");
    manifest_bytes.push(b'\n');
    files.insert(MANIFEST.into(), manifest_bytes);
    let report = ExportReport {
        tree_size,
        root: hex::encode(cp.root),
        events: carried.len() as u64,
        selected,
        inclusion_proofs: proofs.inclusion.len() as u64,
        ranges,
        blobs: blob_count,
        blobs_absent,
        attestations,
        since_size,
        files: files.len() as u64,
        bytes: files.values().map(|v| v.len() as u64).sum(),
    };
    Ok((files, report))
}

/// Compact JSON with a final newline.
pub(crate) fn json_line<T: Serialize>(value: &T) -> Vec<u8> {
    // Invariant: the bundle's JSON types are plain structs, strings, numbers.
    let mut v = serde_json::to_vec(value).expect("bundle JSON serialises");
    v.push(b'\n');
    v
}

/// Maximal runs of consecutive numbers of an ascending sequence.
pub fn runs(seqs: impl IntoIterator<Item = u64>) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for s in seqs {
        match out.last_mut() {
            Some(r) if r[1] + 1 == s => r[1] = s,
            _ => out.push([s, s]),
        }
    }
    out
}

fn fetch(source: &dyn LogSource, seq: u64) -> Result<Vec<u8>, ExportError> {
    source
        .event_range(seq, seq + 1)?
        .pop()
        .map(|(_, b)| b)
        .ok_or_else(|| ExportError::NotFound(format!("event {seq}")))
}

/// Decodes stored event `seq`: bytes the ledger stored that do not decode
/// are damage (exit 5), not a malformed request.
fn decode(seq: u64, bytes: &[u8]) -> Result<Event, ExportError> {
    let e = Event::decode(bytes).map_err(|e| {
        ExportError::Ledger(crate::LedgerError::Corrupt {
            location: format!("event {seq}"),
            detail: format!("the stored event does not decode: {e}"),
        })
    })?;
    if e.seq != seq {
        return Err(ExportError::Ledger(crate::LedgerError::Corrupt {
            location: format!("event {seq}"),
            detail: format!("stored event says it is {}", e.seq),
        }));
    }
    Ok(e)
}

/// The last sequence number recorded at or before `time_ms` (ledger time
/// never decreases, so a binary search finds it).
fn last_at_or_before(source: &dyn LogSource, time_ms: u64) -> Result<u64, ExportError> {
    let time_of = |seq: u64| -> Result<u64, ExportError> {
        Ok(decode(seq, &fetch(source, seq)?)?.recorded_at_ms)
    };
    if time_of(0)? > time_ms {
        return Err(ExportError::NotFound(format!(
            "events at or before {time_ms} ms: the log starts later"
        )));
    }
    let (mut lo, mut hi) = (0u64, source.len());
    // Invariant: time_of(lo) <= time_ms, and every seq >= hi is after it.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if time_of(mid)? <= time_ms {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Every event of each task's verdict chain in `from..to`, by task.
///
/// A chain is every event whose JSON payload names the task (`task_id`,
/// compared in canonical form): contract, evidence registrations,
/// executions, submissions, checks, verdicts, approvals; plus every event
/// naming one of the evidence OIDs the task's registrations minted (`oid`
/// or `oids`: retention events refer to evidence by OID).
fn task_chains(
    source: &dyn LogSource,
    tasks: &[String],
    from: u64,
    to: u64,
) -> Result<BTreeMap<String, BTreeSet<u64>>, ExportError> {
    let wanted: BTreeMap<String, String> = tasks
        .iter()
        .map(|t| (task_key(t).to_string(), t.clone()))
        .collect();
    let mut chains: BTreeMap<String, BTreeSet<u64>> =
        tasks.iter().map(|t| (t.clone(), BTreeSet::new())).collect();
    let mut oids: BTreeMap<String, String> = BTreeMap::new();
    let mut next = 0u64;
    let end = source.len().min(to);
    while next < end {
        let upto = (next + 8192).min(end);
        for (seq, bytes) in source.event_range(next, upto)? {
            let e = decode(seq, &bytes)?;
            if e.kind == GENESIS || e.kind.starts_with("key.") {
                continue;
            }
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&e.payload) else {
                continue;
            };
            let by_task = v
                .get("task_id")
                .and_then(|t| t.as_str())
                .and_then(|t| wanted.get(&*task_key(t)));
            let owner = match by_task {
                Some(t) => {
                    if e.kind == EVIDENCE_REGISTERED {
                        oids.insert(oid::of_event(&e), t.clone());
                    }
                    // A verdict import mints the OIDs of its files too.
                    for o in crate::verdicts::imported::oids_of_event(&e) {
                        oids.insert(o, t.clone());
                    }
                    Some(t.clone())
                }
                None => {
                    let named = v.get("oid").into_iter().chain(
                        v.get("oids")
                            .and_then(|o| o.as_array())
                            .into_iter()
                            .flatten(),
                    );
                    named
                        .filter_map(|o| o.as_str())
                        .find_map(|o| oids.get(o))
                        .cloned()
                }
            };
            if let Some(t) = owner
                && seq >= from
            {
                // Invariant: `owner` is one of the requested tasks.
                chains.get_mut(&t).expect("task is requested").insert(seq);
            }
        }
        next = upto;
    }
    Ok(chains)
}

/// The blobs a bundle with `--with-blobs` must hold for these OIDs: the
/// content of every live OID, the redacted content of every redacted one.
pub fn expected_blobs(oids: &OidRegistry) -> BTreeSet<BlobDigest> {
    oids.oids
        .values()
        .filter_map(|r| match r.state {
            OidState::Live => format::parse_hash(&r.sha256),
            OidState::Redacted => r
                .removal
                .as_ref()
                .and_then(|x| x.redacted_sha256.as_deref())
                .and_then(format::parse_hash),
            OidState::Expired => None,
        })
        .collect()
}

/// An OID whose content is blob `d` in the export's fold and which the
/// ledger's live state still holds (live, or redacted to `d`): its blob
/// must be stored.
fn needed_now(oids: &OidRegistry, d: &BlobDigest, source: &dyn LogSource) -> Option<String> {
    let hex_d = hex::encode(d);
    oids.oids.keys().find_map(|oid| {
        let now = source.oid_record(oid)?;
        let needed = match now.state {
            OidState::Live => now.sha256 == hex_d,
            OidState::Redacted => {
                now.removal
                    .as_ref()
                    .and_then(|x| x.redacted_sha256.as_deref())
                    == Some(hex_d.as_str())
            }
            OidState::Expired => false,
        };
        needed.then(|| oid.clone())
    })
}

/// Blob digests whose content the OIDs' retention removed (must be absent).
/// Content is deduplicated by digest, so a digest another OID still needs
/// (live, or as its redacted content) is not removed.
pub fn removed_blobs(oids: &OidRegistry) -> BTreeMap<BlobDigest, u64> {
    let still_needed = expected_blobs(oids);
    oids.oids
        .values()
        .filter(|r| r.state != OidState::Live)
        .filter_map(|r| Some((format::parse_hash(&r.sha256)?, r.removal.as_ref()?.seq)))
        .filter(|(d, _)| !still_needed.contains(d))
        .collect()
}

/// SHA-256 of bytes, as a `Hash`.
pub(crate) fn sha256(bytes: &[u8]) -> Hash {
    Sha256::digest(bytes).into()
}

//! `docket audit`: verifies a bundle offline, with no ledger and no network.
//!
//! In order: the manifest (format, self-containment, every file's SHA-256
//! and size, no unlisted files); the verifier key (against `--trusted-key`,
//! else self-asserted, a warning); the checkpoint's signed note; every
//! event's framing and canonical decoding; every author signature (the one
//! rule of FORMAT.md §1.1, in batches on all cores, one by one inside a
//! batch that fails);
//! order, hash chain and ledger time; every inclusion proof, and the root
//! itself when the bundle holds the whole log; each author's authority at
//! its sequence number, rebuilt from the carried key events (the full
//! admission rules when the bundle starts at genesis without gaps); the
//! consistency proof; blobs against their digests and the retention events;
//! the DSSE attestations; and the summary, rebuilt and compared.
//!
//! Nothing stops at the first problem: every finding is listed with the
//! file and sequence number it concerns, and the exit code is the most
//! severe one (5 integrity or malformed > 4 missing > 3 summary mismatch >
//! 2 refused), omitted findings included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;

use crate::authority::{self, GENESIS};
use crate::blobs::BlobDigest;
use crate::checkpoint::{self, Checkpoint, NoteError, NoteVerifier};
use crate::event::{self, Event};
use crate::merkle::{self, Frontier, Hash};
use crate::projection::{GenesisPayload, KeysProjection};
use crate::state::{AdmitContext, LedgerState};
use docket_log::verify::{FindingKind as LogFindingKind, LogChecker};

use super::bundle::{BundleReader, EntryKind};
use super::format::{
    self, ATTESTATIONS_DIR, BLOBS_DIR, CHECKPOINT, CONSISTENCY, ConsistencyFile, EVENTS, MANIFEST,
    Manifest, PROOFS, ProofsFile, REQUIRED, SINCE, SUMMARY, VKEY,
};
use super::summary::SummaryBuilder;
use super::vsa;
use super::writer::{expected_blobs, removed_blobs, sha256};

/// How to audit.
#[derive(Debug, Clone, Default)]
pub struct AuditOptions {
    /// The verifier key the checkpoint must be signed by. Without it the
    /// bundle's own `verifier.vkey` is used and the report warns
    /// "self-asserted key".
    pub trusted_key: Option<NoteVerifier>,
    /// Follow manifest entries that point outside the bundle (local files
    /// only; URLs are never fetched) instead of refusing them.
    pub allow_external_ref: bool,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// A file does not parse (JSON, note, key, `events.bin` framing, an
    /// event's canonical encoding): the bundle is corrupt. Exit 5, like
    /// every other detected corruption or tampering.
    Malformed,
    /// The manifest names a format this auditor does not know. Exit 2.
    UnsupportedFormat,
    /// The manifest or a link refers outside the bundle (absolute path,
    /// `..`, URL, symlink) and `--allow-external-ref` was not given. Exit 2.
    ExternalRef,
    /// A required file is absent. Exit 4.
    MissingFile,
    /// A run of carried events lacks the inclusion proof of its first or
    /// last event. Exit 4.
    MissingProof,
    /// The genesis event or an author's key registration is not carried.
    /// Exit 4.
    MissingContext,
    /// A referenced evidence blob is absent and no retention event explains
    /// it (with `with_blobs`). Exit 4.
    MissingBlob,
    /// A file's SHA-256 or size differs from the manifest. Exit 5.
    Digest,
    /// A file is in the bundle but not in the manifest. Exit 5.
    UnlistedFile,
    /// The checkpoint (or `since.note`) signature does not verify with the
    /// key. Exit 5.
    CheckpointSignature,
    /// The bundle's key differs from the trusted key or from the key the
    /// genesis event names. Exit 5.
    KeyMismatch,
    /// Files disagree about the tree (origin, size, root). Exit 5.
    Inconsistent,
    /// Events are out of order or duplicated. Exit 5.
    Order,
    /// An author signature does not verify. Exit 5.
    Signature,
    /// `prev_hash` is not the previous event's leaf hash. Exit 5.
    Chain,
    /// Ledger time decreases. Exit 5.
    Time,
    /// An inclusion proof does not verify, or an event lies outside the
    /// checkpoint's tree. Exit 5.
    Inclusion,
    /// The root recomputed from the whole log differs from the checkpoint's.
    /// Exit 5.
    Root,
    /// The consistency proof does not verify. Exit 5.
    Consistency,
    /// The author could not have written the event at that position (no
    /// role, revoked, unknown, outside its validity window). Exit 5.
    Authority,
    /// A blob's content does not match its name. Exit 5.
    BlobDigest,
    /// Blobs and retention events disagree (a purged blob is present).
    /// Exit 5.
    Retention,
    /// A DSSE attestation does not verify or does not match the log. Exit 5.
    Attestation,
    /// The rebuilt summary differs from `summary.json`. Exit 3.
    SummaryMismatch,
    /// The checkpoint was verified only with the bundle's own key (warning).
    SelfAssertedKey,
    /// A file the format does not define, or a blob nothing references
    /// (warning).
    Unknown,
}

impl FindingKind {
    /// The exit code an error finding of this kind calls for (seed 004 §3).
    pub fn exit_code(self) -> u8 {
        use FindingKind::*;
        match self {
            UnsupportedFormat | ExternalRef => 2,
            SummaryMismatch => 3,
            MissingFile | MissingProof | MissingContext | MissingBlob => 4,
            SelfAssertedKey | Unknown => 0,
            _ => 5,
        }
    }
}

/// One thing the audit found.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub kind: FindingKind,
    pub severity: Severity,
    /// The bundle file it concerns.
    pub file: Option<String>,
    /// The sequence number it concerns.
    pub seq: Option<u64>,
    pub detail: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev} {:?}", self.kind)?;
        if let Some(file) = &self.file {
            write!(f, " in {file}")?;
        }
        if let Some(seq) = self.seq {
            write!(f, " at seq {seq}")?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// The outcome of an audit.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditReport {
    pub bundle: String,
    pub origin: Option<String>,
    pub tree_size: Option<u64>,
    pub root: Option<String>,
    /// `trusted` or `self-asserted`.
    pub key: String,
    pub events: u64,
    pub signatures_checked: u64,
    pub inclusion_proofs_checked: u64,
    /// Maximal runs of consecutive carried events, `[first, last]`.
    pub ranges: Vec<[u64; 2]>,
    /// Whether the events start at genesis with no gap (then the full
    /// admission rules were re-applied).
    pub from_genesis: bool,
    /// Whether the events are the whole tree (then the root was recomputed).
    pub whole_tree: bool,
    pub consistency_checked: bool,
    pub blobs_checked: u64,
    pub attestations_checked: u64,
    pub summary_compared: bool,
    pub findings: Vec<Finding>,
    /// Findings beyond the listed ones (the list is capped).
    pub findings_omitted: u64,
    /// The most severe exit code among the omitted error findings (0 when
    /// none), so that the cap never lowers the audit's exit code.
    pub findings_omitted_exit_code: u8,
}

impl AuditReport {
    /// 0 when no error finding, else the most severe error's code.
    pub fn exit_code(&self) -> u8 {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.kind.exit_code())
            .max()
            .unwrap_or(0)
            .max(self.findings_omitted_exit_code)
    }

    /// Whether any finding (error or warning) has this kind.
    pub fn has(&self, kind: FindingKind) -> bool {
        self.findings.iter().any(|f| f.kind == kind)
    }

    /// Error findings only.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

/// Findings listed at most (the rest are counted).
pub const MAX_FINDINGS: usize = 1000;
/// Events decoded and verified per progress step.
const CHUNK: usize = 16_384;

/// Audit progress: `(stage, done, total)`.
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// Audits the bundle at `path` (a directory or a tar file).
pub fn audit(path: &Path, options: &AuditOptions, progress: Progress<'_>) -> AuditReport {
    let mut a = Auditor::new(path.display().to_string(), options);
    match BundleReader::open(path) {
        Ok(reader) => a.run(&reader, progress),
        Err(e) => a.error(
            FindingKind::MissingFile,
            None,
            None,
            format!("cannot open the bundle: {e}"),
        ),
    }
    a.finish()
}

/// Audits an opened bundle.
pub fn audit_reader(
    reader: &BundleReader,
    options: &AuditOptions,
    progress: Progress<'_>,
) -> AuditReport {
    let mut a = Auditor::new(reader.location().display().to_string(), options);
    a.run(reader, progress);
    a.finish()
}

/// One decoded carried event.
struct Carried {
    event: Event,
    leaf: Hash,
}

struct Auditor<'o> {
    options: &'o AuditOptions,
    report: AuditReport,
}

impl<'o> Auditor<'o> {
    fn new(bundle: String, options: &'o AuditOptions) -> Self {
        Self {
            options,
            report: AuditReport {
                bundle,
                key: if options.trusted_key.is_some() {
                    "trusted".into()
                } else {
                    "self-asserted".into()
                },
                ..Default::default()
            },
        }
    }

    fn finish(self) -> AuditReport {
        self.report
    }

    fn push(
        &mut self,
        severity: Severity,
        kind: FindingKind,
        file: Option<&str>,
        seq: Option<u64>,
        detail: String,
    ) {
        if self.report.findings.len() >= MAX_FINDINGS {
            self.report.findings_omitted += 1;
            if severity == Severity::Error {
                self.report.findings_omitted_exit_code =
                    self.report.findings_omitted_exit_code.max(kind.exit_code());
            }
            return;
        }
        self.report.findings.push(Finding {
            kind,
            severity,
            file: file.map(str::to_string),
            seq,
            detail,
        });
    }

    fn error(
        &mut self,
        kind: FindingKind,
        file: Option<&str>,
        seq: Option<u64>,
        detail: impl Into<String>,
    ) {
        self.push(Severity::Error, kind, file, seq, detail.into());
    }

    fn warn(
        &mut self,
        kind: FindingKind,
        file: Option<&str>,
        seq: Option<u64>,
        detail: impl Into<String>,
    ) {
        self.push(Severity::Warning, kind, file, seq, detail.into());
    }

    fn run(&mut self, reader: &BundleReader, progress: Progress<'_>) {
        // 1. Manifest and files.
        let Some((manifest, files)) = self.load_files(reader, progress) else {
            return;
        };
        self.report.origin = Some(manifest.origin.clone());
        self.report.tree_size = Some(manifest.tree_size);

        // 2. Key and checkpoint.
        let key = self.key(&files);
        let Some(cp) = self.checkpoint(&files, key.as_ref(), &manifest) else {
            return;
        };
        self.report.root = Some(hex::encode(cp.root));

        // 3. Events: framing, decoding, signatures (batched), in chunks.
        let carried = self.events(&files, &cp, progress);

        // 4. Order, chain, time.
        let carried = self.order_chain_time(carried);
        self.report.events = carried.len() as u64;
        self.report.ranges = super::writer::runs(carried.iter().map(|c| c.event.seq));
        self.report.from_genesis = self.report.ranges.len() == 1 && self.report.ranges[0][0] == 0;
        self.report.whole_tree =
            self.report.from_genesis && self.report.ranges[0][1] + 1 == cp.size;

        // 5. Proofs.
        progress("proofs", 0, 1);
        self.proofs(&files, &cp, &carried);

        // 6. Authority.
        progress("authority", 0, carried.len() as u64);
        self.authority(&carried, key.as_ref(), &cp);

        // 7. Consistency.
        if manifest.scope.since_size.is_some()
            || files.contains_key(CONSISTENCY)
            || files.contains_key(SINCE)
        {
            self.consistency(&files, key.as_ref(), &cp, manifest.scope.since_size);
        }

        // 8. Blobs and retention.
        self.blobs(&files, &manifest, &carried);

        // 9. Attestations.
        if let Some(k) = key.as_ref() {
            self.attestations(&files, k, &cp, &carried);
        }

        // 10. Summary.
        progress("summary", 0, 1);
        self.summary(&files, &cp, &carried);
    }

    /// Reads the manifest, checks self-containment and every digest, and
    /// returns the content of every listed file that could be read.
    fn load_files(
        &mut self,
        reader: &BundleReader,
        progress: Progress<'_>,
    ) -> Option<(Manifest, BTreeMap<String, Vec<u8>>)> {
        let listed = match reader.list() {
            Ok(l) => l,
            Err(e) => {
                self.error(
                    FindingKind::MissingFile,
                    None,
                    None,
                    format!("cannot list the bundle: {e}"),
                );
                return None;
            }
        };
        let manifest_bytes = match reader.read(MANIFEST) {
            Ok(Some(b)) => b,
            Ok(None) => {
                self.error(
                    FindingKind::MissingFile,
                    Some(MANIFEST),
                    None,
                    "the bundle has no manifest",
                );
                return None;
            }
            Err(e) => {
                self.error(
                    FindingKind::MissingFile,
                    Some(MANIFEST),
                    None,
                    format!("cannot read: {e}"),
                );
                return None;
            }
        };
        let manifest: Manifest = match serde_json::from_slice(&manifest_bytes) {
            Ok(m) => m,
            Err(e) => {
                // Tell a wrong format from a broken file when we can.
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&manifest_bytes)
                    && let Some(f) = v.get("format").and_then(|f| f.as_str())
                    && f != format::FORMAT
                {
                    self.error(
                        FindingKind::UnsupportedFormat,
                        Some(MANIFEST),
                        None,
                        format!(
                            "bundle format {f:?}; this auditor reads {:?}",
                            format::FORMAT
                        ),
                    );
                    return None;
                }
                self.error(FindingKind::Malformed, Some(MANIFEST), None, e.to_string());
                return None;
            }
        };
        if manifest.format != format::FORMAT {
            self.error(
                FindingKind::UnsupportedFormat,
                Some(MANIFEST),
                None,
                format!(
                    "bundle format {:?}; this auditor reads {:?}",
                    manifest.format,
                    format::FORMAT
                ),
            );
            return None;
        }
        let listed_paths: BTreeMap<&str, EntryKind> =
            listed.iter().map(|l| (l.path.as_str(), l.kind)).collect();
        // Entries on disk: links and odd entries refer outside; unlisted
        // files were added after export.
        for l in &listed {
            if l.path == MANIFEST {
                continue;
            }
            match l.kind {
                EntryKind::Link | EntryKind::Other if !self.options.allow_external_ref => {
                    self.error(
                        FindingKind::ExternalRef,
                        Some(&l.path),
                        None,
                        "a link or special file, which may point outside the bundle (refused without --allow-external-ref)",
                    );
                }
                _ => {
                    if !manifest.files.contains_key(&l.path) {
                        self.error(
                            FindingKind::UnlistedFile,
                            Some(&l.path),
                            None,
                            "in the bundle but not in the manifest",
                        );
                    }
                }
            }
        }
        let total: u64 = manifest.files.values().map(|f| f.size).sum();
        let mut done = 0u64;
        let mut files = BTreeMap::new();
        for (path, entry) in &manifest.files {
            progress("digests", done, total);
            done += entry.size;
            let bytes = if let Some(reason) = format::external_ref_reason(path) {
                if !self.options.allow_external_ref {
                    self.error(
                        FindingKind::ExternalRef,
                        Some(path),
                        None,
                        format!("the manifest refers outside the bundle ({reason}); refused without --allow-external-ref"),
                    );
                    continue;
                }
                match reader.read_external(path) {
                    Ok(Some(b)) => b,
                    Ok(None) => {
                        self.error(
                            FindingKind::MissingFile,
                            Some(path),
                            None,
                            "external reference cannot be read offline",
                        );
                        continue;
                    }
                    Err(e) => {
                        self.error(
                            FindingKind::MissingFile,
                            Some(path),
                            None,
                            format!("cannot read: {e}"),
                        );
                        continue;
                    }
                }
            } else {
                if !format::is_known_path(path) {
                    self.warn(
                        FindingKind::Unknown,
                        Some(path),
                        None,
                        "not a file this format defines; ignored",
                    );
                }
                let found = match listed_paths.get(path.as_str()) {
                    Some(EntryKind::Link | EntryKind::Other) if self.options.allow_external_ref => {
                        reader.read_external(path)
                    }
                    Some(EntryKind::Link | EntryKind::Other) => continue,
                    _ => reader.read(path),
                };
                match found {
                    Ok(Some(b)) => b,
                    Ok(None) => {
                        self.error(
                            FindingKind::MissingFile,
                            Some(path),
                            None,
                            "listed in the manifest but absent",
                        );
                        continue;
                    }
                    Err(e) => {
                        self.error(
                            FindingKind::MissingFile,
                            Some(path),
                            None,
                            format!("cannot read: {e}"),
                        );
                        continue;
                    }
                }
            };
            let digest = hex::encode(sha256(&bytes));
            if bytes.len() as u64 != entry.size || digest != entry.sha256 {
                self.error(
                    FindingKind::Digest,
                    Some(path),
                    None,
                    format!(
                        "manifest says sha256 {} ({} bytes); the file is sha256 {digest} ({} bytes)",
                        entry.sha256,
                        entry.size,
                        bytes.len()
                    ),
                );
            }
            files.insert(path.clone(), bytes);
        }
        for required in REQUIRED {
            if !manifest.files.contains_key(required) && !files.contains_key(required) {
                let on_disk = listed_paths.contains_key(required);
                if on_disk {
                    // Reported as unlisted above; use it anyway so the rest
                    // of the audit can say more.
                    if let Ok(Some(b)) = reader.read(required) {
                        files.insert(required.to_string(), b);
                    }
                } else {
                    self.error(
                        FindingKind::MissingFile,
                        Some(required),
                        None,
                        "required file is missing",
                    );
                }
            }
        }
        Some((manifest, files))
    }

    fn key(&mut self, files: &BTreeMap<String, Vec<u8>>) -> Option<NoteVerifier> {
        let bundle_key = files.get(VKEY).and_then(|b| match std::str::from_utf8(b) {
            Ok(s) => match NoteVerifier::parse(s.trim_end_matches('\n')) {
                Ok(k) if k.to_vkey() != s.trim_end_matches('\n') => {
                    self.error(
                        FindingKind::Malformed,
                        Some(VKEY),
                        None,
                        format!("not in canonical form (expected {})", k.to_vkey()),
                    );
                    Some(k)
                }
                Ok(k) => Some(k),
                Err(e) => {
                    self.error(FindingKind::Malformed, Some(VKEY), None, e.to_string());
                    None
                }
            },
            Err(_) => {
                self.error(FindingKind::Malformed, Some(VKEY), None, "not UTF-8");
                None
            }
        });
        match (&self.options.trusted_key, bundle_key) {
            (Some(trusted), bundle) => {
                if let Some(b) = bundle
                    && b != *trusted
                {
                    self.error(
                        FindingKind::KeyMismatch,
                        Some(VKEY),
                        None,
                        format!(
                            "the bundle's key {} is not the trusted key {}",
                            b.to_vkey(),
                            trusted.to_vkey()
                        ),
                    );
                }
                Some(trusted.clone())
            }
            (None, Some(b)) => {
                self.warn(
                    FindingKind::SelfAssertedKey,
                    Some(VKEY),
                    None,
                    "self-asserted key: the checkpoint was verified with the key the bundle itself carries; pass --trusted-key to verify against a key you trust",
                );
                Some(b)
            }
            (None, None) => None,
        }
    }

    fn checkpoint(
        &mut self,
        files: &BTreeMap<String, Vec<u8>>,
        key: Option<&NoteVerifier>,
        manifest: &Manifest,
    ) -> Option<Checkpoint> {
        let bytes = files.get(CHECKPOINT)?;
        let Ok(note) = std::str::from_utf8(bytes) else {
            self.error(FindingKind::Malformed, Some(CHECKPOINT), None, "not UTF-8");
            return None;
        };
        let cp = match key.map(|k| checkpoint::open_note(note, k)) {
            Some(Ok(cp)) => Some(cp),
            Some(Err(e)) => {
                let kind = match e {
                    NoteError::NoMatchingSignature { .. }
                    | NoteError::InvalidSignature { .. }
                    | NoteError::MissingSignatures => FindingKind::CheckpointSignature,
                    _ => FindingKind::Malformed,
                };
                self.error(kind, Some(CHECKPOINT), None, e.to_string());
                None
            }
            None => {
                self.error(
                    FindingKind::CheckpointSignature,
                    Some(CHECKPOINT),
                    None,
                    "no usable verifier key: the checkpoint cannot be verified",
                );
                None
            }
        };
        // Go on with the unverified body so the rest can still be checked.
        let cp = match cp {
            Some(cp) => cp,
            None => {
                let body = note.rfind("\n\n").map_or(note, |i| &note[..=i]);
                match Checkpoint::parse_body(body) {
                    Ok(cp) => cp,
                    Err(e) => {
                        self.error(
                            FindingKind::Malformed,
                            Some(CHECKPOINT),
                            None,
                            e.to_string(),
                        );
                        return None;
                    }
                }
            }
        };
        if cp.origin != manifest.origin {
            self.error(
                FindingKind::Inconsistent,
                Some(MANIFEST),
                None,
                format!(
                    "manifest origin {:?}, checkpoint origin {:?}",
                    manifest.origin, cp.origin
                ),
            );
        }
        if cp.size != manifest.tree_size {
            self.error(
                FindingKind::Inconsistent,
                Some(MANIFEST),
                None,
                format!(
                    "manifest tree size {}, checkpoint tree size {}",
                    manifest.tree_size, cp.size
                ),
            );
        }
        if let Some(k) = key
            && k.name != cp.origin
        {
            self.error(
                FindingKind::KeyMismatch,
                Some(VKEY),
                None,
                format!(
                    "key name {:?} is not the checkpoint origin {:?}",
                    k.name, cp.origin
                ),
            );
        }
        Some(cp)
    }

    fn events(
        &mut self,
        files: &BTreeMap<String, Vec<u8>>,
        cp: &Checkpoint,
        progress: Progress<'_>,
    ) -> Vec<Carried> {
        let Some(bytes) = files.get(EVENTS) else {
            return Vec::new();
        };
        let (records, framing) = format::split_event_prefix(bytes);
        if let Some(f) = framing {
            self.error(
                FindingKind::Malformed,
                Some(EVENTS),
                None,
                format!("record {} at byte {}: {}", f.record, f.offset, f.detail),
            );
        }
        let total = records.len() as u64;
        let mut out = Vec::with_capacity(records.len());
        for (chunk_no, chunk) in records.chunks(CHUNK).enumerate() {
            progress("events", (chunk_no * CHUNK) as u64, total);
            let decoded: Vec<Result<Carried, String>> = chunk
                .par_iter()
                .map(|b| {
                    Event::decode(b)
                        .map(|event| Carried {
                            event,
                            leaf: merkle::leaf_hash(b),
                        })
                        .map_err(|e| e.to_string())
                })
                .collect();
            let mut good = Vec::with_capacity(decoded.len());
            for (i, d) in decoded.into_iter().enumerate() {
                match d {
                    Ok(c) => good.push(c),
                    Err(e) => self.error(
                        FindingKind::Malformed,
                        Some(EVENTS),
                        None,
                        format!("record {}: {e}", chunk_no * CHUNK + i),
                    ),
                }
            }
            let refs: Vec<&Event> = good.iter().map(|c| &c.event).collect();
            self.report.signatures_checked += refs.len() as u64;
            for i in event::verify_signatures(&refs) {
                let seq = refs[i].seq;
                self.error(
                    FindingKind::Signature,
                    Some(EVENTS),
                    Some(seq),
                    format!(
                        "the author signature of this {} event does not verify",
                        refs[i].kind
                    ),
                );
            }
            out.extend(good);
        }
        progress("events", total, total);
        for c in &out {
            if c.event.seq >= cp.size {
                self.error(
                    FindingKind::Inclusion,
                    Some(EVENTS),
                    Some(c.event.seq),
                    format!(
                        "the event lies beyond the checkpoint's tree size {}",
                        cp.size
                    ),
                );
            }
        }
        out
    }

    fn order_chain_time(&mut self, mut carried: Vec<Carried>) -> Vec<Carried> {
        let mut reported = false;
        for w in carried.windows(2) {
            if w[1].event.seq <= w[0].event.seq && !reported {
                self.error(
                    FindingKind::Order,
                    Some(EVENTS),
                    Some(w[1].event.seq),
                    format!(
                        "event {} follows event {}: events must ascend strictly by sequence number",
                        w[1].event.seq, w[0].event.seq
                    ),
                );
                reported = true;
            }
        }
        if reported {
            carried.sort_by_key(|c| c.event.seq);
            carried.dedup_by_key(|c| c.event.seq);
        }
        // Chain and time: the log core's one checker, one run of
        // consecutive events at a time (a partial bundle has gaps).
        let mut checker: Option<LogChecker> = None;
        let mut last_time = 0u64;
        for c in &carried {
            let e = &c.event;
            let checker = match checker.as_mut() {
                Some(k) if k.len() == e.seq => k,
                _ => checker.insert(LogChecker::starting_at(e.seq, last_time)),
            };
            for f in checker.check_decoded(e, c.leaf) {
                let kind = match f.kind {
                    LogFindingKind::Chain => FindingKind::Chain,
                    LogFindingKind::Time => FindingKind::Time,
                    _ => FindingKind::Order,
                };
                self.push(Severity::Error, kind, Some(EVENTS), f.seq, f.detail);
            }
            last_time = checker.last_time();
        }
        carried
    }

    fn proofs(&mut self, files: &BTreeMap<String, Vec<u8>>, cp: &Checkpoint, carried: &[Carried]) {
        let by_seq: BTreeMap<u64, &Carried> = carried.iter().map(|c| (c.event.seq, c)).collect();
        let mut proven: BTreeSet<u64> = BTreeSet::new();
        if let Some(bytes) = files.get(PROOFS) {
            match serde_json::from_slice::<ProofsFile>(bytes) {
                Err(e) => self.error(FindingKind::Malformed, Some(PROOFS), None, e.to_string()),
                Ok(p) => {
                    if p.tree_size != cp.size {
                        self.error(
                            FindingKind::Inconsistent,
                            Some(PROOFS),
                            None,
                            format!(
                                "proofs are for tree size {}, the checkpoint's is {}",
                                p.tree_size, cp.size
                            ),
                        );
                    }
                    if format::parse_hash(&p.root) != Some(cp.root) {
                        self.error(
                            FindingKind::Root,
                            Some(PROOFS),
                            None,
                            format!(
                                "root {} is not the checkpoint's root {}",
                                p.root,
                                hex::encode(cp.root)
                            ),
                        );
                    }
                    for entry in &p.inclusion {
                        self.report.inclusion_proofs_checked += 1;
                        let Some(c) = by_seq.get(&entry.seq) else {
                            self.warn(
                                FindingKind::Unknown,
                                Some(PROOFS),
                                Some(entry.seq),
                                "a proof for an event the bundle does not carry (ignored)",
                            );
                            continue;
                        };
                        if format::parse_hash(&entry.leaf_hash) != Some(c.leaf) {
                            self.error(
                                FindingKind::Inclusion,
                                Some(PROOFS),
                                Some(entry.seq),
                                format!(
                                    "leaf_hash {} is not the hash of the carried event ({})",
                                    entry.leaf_hash,
                                    hex::encode(c.leaf)
                                ),
                            );
                        }
                        let path: Option<Vec<Hash>> =
                            entry.path.iter().map(|h| format::parse_hash(h)).collect();
                        let Some(path) = path else {
                            self.error(
                                FindingKind::Malformed,
                                Some(PROOFS),
                                Some(entry.seq),
                                "a path hash is not 64 lower-case hex digits",
                            );
                            continue;
                        };
                        match merkle::verify_inclusion(&c.leaf, entry.seq, cp.size, &path, &cp.root)
                        {
                            Ok(()) => {
                                proven.insert(entry.seq);
                            }
                            Err(e) => self.error(
                                FindingKind::Inclusion,
                                Some(PROOFS),
                                Some(entry.seq),
                                e.to_string(),
                            ),
                        }
                    }
                }
            }
        }
        for [a, b] in self.report.ranges.clone() {
            // A run of one event (a == b) has one end, reported once.
            let ends: &[u64] = if a == b { &[a] } else { &[a, b] };
            for &seq in ends {
                if !proven.contains(&seq)
                    && (seq < cp.size)
                    && !self.has_finding_at(FindingKind::Inclusion, seq)
                {
                    self.error(
                        FindingKind::MissingProof,
                        Some(PROOFS),
                        Some(seq),
                        format!(
                            "no verified inclusion proof for the {} event of the run {a}..={b}",
                            if a == b {
                                "only"
                            } else if seq == a {
                                "first"
                            } else {
                                "last"
                            }
                        ),
                    );
                }
            }
        }
        if self.report.whole_tree {
            let mut f = Frontier::new();
            for c in carried {
                f.push(c.leaf);
            }
            if f.root() != cp.root {
                self.error(
                    FindingKind::Root,
                    Some(EVENTS),
                    None,
                    format!(
                        "the root of all {} carried events is {}, the checkpoint's is {}",
                        carried.len(),
                        hex::encode(f.root()),
                        hex::encode(cp.root)
                    ),
                );
            }
        }
    }

    fn has_finding_at(&self, kind: FindingKind, seq: u64) -> bool {
        self.report
            .findings
            .iter()
            .any(|f| f.kind == kind && f.seq == Some(seq))
    }

    fn authority(&mut self, carried: &[Carried], key: Option<&NoteVerifier>, cp: &Checkpoint) {
        let Some(first) = carried.first() else {
            self.error(
                FindingKind::MissingContext,
                Some(EVENTS),
                None,
                "the bundle carries no events",
            );
            return;
        };
        if first.event.seq != 0 {
            self.error(
                FindingKind::MissingContext,
                Some(EVENTS),
                Some(0),
                "the genesis event is not carried: authority cannot be rebuilt",
            );
        } else if first.event.kind == GENESIS {
            match serde_json::from_slice::<GenesisPayload>(&first.event.payload) {
                Ok(g) => {
                    if let Some(k) = key
                        && g.ledger_key != hex::encode(k.key.as_bytes())
                    {
                        self.error(
                            FindingKind::KeyMismatch,
                            Some(VKEY),
                            Some(0),
                            format!(
                                "the genesis event names ledger key {}, the verifier key is {}",
                                g.ledger_key,
                                hex::encode(k.key.as_bytes())
                            ),
                        );
                    }
                    if g.origin != cp.origin {
                        self.error(
                            FindingKind::KeyMismatch,
                            Some(CHECKPOINT),
                            Some(0),
                            format!(
                                "the genesis event names origin {:?}, the checkpoint {:?}",
                                g.origin, cp.origin
                            ),
                        );
                    }
                }
                Err(e) => self.error(
                    FindingKind::Authority,
                    Some(EVENTS),
                    Some(0),
                    format!("genesis payload: {e}"),
                ),
            }
        }
        if self.report.from_genesis {
            // The whole prefix of the log: re-admit every event exactly as
            // the committer did.
            let mut state = LedgerState::default();
            for c in carried {
                let ctx = AdmitContext {
                    seq: c.event.seq,
                    recorded_at_ms: c.event.recorded_at_ms,
                };
                match state.admit(&c.event.statement(), &ctx) {
                    // Admitted: it folds as it did on the ledger.
                    Ok(_) => {
                        let _ = state.apply_partial(&c.event);
                    }
                    // Refused: the committer would not have appended it,
                    // so it changes nothing (a refused re-registration must
                    // not revive a revoked key); what follows is admitted
                    // at its own position.
                    Err(e) => {
                        self.error(
                            FindingKind::Authority,
                            Some(EVENTS),
                            Some(c.event.seq),
                            e.to_string(),
                        );
                        state.pass_over(&c.event);
                    }
                }
            }
            return;
        }
        // A partial log: role rules from the carried key events (folded
        // with everything carried; events whose context is not carried fold
        // nothing).
        let mut folded = LedgerState::default();
        let mut missing_reported: BTreeSet<[u8; 32]> = BTreeSet::new();
        for c in carried {
            let e = &c.event;
            if e.seq == 0 {
                if let Err(err) = LedgerState::default().admit(
                    &e.statement(),
                    &AdmitContext {
                        seq: 0,
                        recorded_at_ms: e.recorded_at_ms,
                    },
                ) {
                    self.error(
                        FindingKind::Authority,
                        Some(EVENTS),
                        Some(0),
                        err.to_string(),
                    );
                }
                let _ = folded.apply_partial(e);
                continue;
            }
            let refusal = match role_violation(&folded.keys, e) {
                // The author's registration is not carried: judged once
                // per author; the event folds what it can.
                Some(reason) if reason.starts_with("no registration") => {
                    if missing_reported.insert(e.author) {
                        self.error(
                            FindingKind::MissingContext,
                            Some(EVENTS),
                            Some(e.seq),
                            format!("{} by {}: {reason}", e.kind, hex::encode(e.author)),
                        );
                    }
                    None
                }
                // Not authorised, or a second registration of a key the
                // carried events already hold, or a second revocation (no
                // ledger admits either; a key whose own key events are not
                // carried is missing context, not a finding).
                Some(reason) => Some(reason),
                None => repeated_key_event(&folded.keys, e),
            };
            if let Some(why) = refusal {
                // Refused: it changes nothing (a key it registers gains no
                // role, a key it revokes stays, §8).
                self.error(
                    FindingKind::Authority,
                    Some(EVENTS),
                    Some(e.seq),
                    format!("{} by {}: {why}", e.kind, hex::encode(e.author)),
                );
                folded.pass_over(e);
                continue;
            }
            let _ = folded.apply_partial(e);
        }
    }

    fn consistency(
        &mut self,
        files: &BTreeMap<String, Vec<u8>>,
        key: Option<&NoteVerifier>,
        cp: &Checkpoint,
        since_size: Option<u64>,
    ) {
        for f in [SINCE, CONSISTENCY] {
            let reported = self
                .report
                .findings
                .iter()
                .any(|x| x.kind == FindingKind::MissingFile && x.file.as_deref() == Some(f));
            if !files.contains_key(f) && !reported {
                self.error(
                    FindingKind::MissingFile,
                    Some(f),
                    None,
                    "the bundle claims a --since checkpoint (scope.since_size, since.note \
                     or consistency.json), but this file is missing",
                );
            }
        }
        // since.note is verified whenever it is there, proof or not.
        let Some(since) = files.get(SINCE) else {
            return;
        };
        let Ok(since) = std::str::from_utf8(since) else {
            self.error(FindingKind::Malformed, Some(SINCE), None, "not UTF-8");
            return;
        };
        let old = match key.map(|k| checkpoint::open_note(since, k)) {
            Some(Ok(old)) => old,
            Some(Err(e)) => {
                self.error(
                    FindingKind::CheckpointSignature,
                    Some(SINCE),
                    None,
                    e.to_string(),
                );
                return;
            }
            None => return,
        };
        if old.origin != cp.origin {
            self.error(
                FindingKind::Consistency,
                Some(SINCE),
                None,
                format!(
                    "since.note is a checkpoint of origin {:?}, checkpoint.note of {:?}",
                    old.origin, cp.origin
                ),
            );
        }
        if since_size.is_some_and(|s| s != old.size) {
            self.error(
                FindingKind::Inconsistent,
                Some(MANIFEST),
                None,
                format!(
                    "the manifest's scope.since_size is {}, since.note's tree size {}",
                    since_size.unwrap_or_default(),
                    old.size
                ),
            );
        }
        let Some(proof) = files.get(CONSISTENCY) else {
            return;
        };
        let p: ConsistencyFile = match serde_json::from_slice(proof) {
            Ok(p) => p,
            Err(e) => {
                self.error(
                    FindingKind::Malformed,
                    Some(CONSISTENCY),
                    None,
                    e.to_string(),
                );
                return;
            }
        };
        self.report.consistency_checked = true;
        let mismatch = p.old_size != old.size
            || format::parse_hash(&p.old_root) != Some(old.root)
            || p.new_size != cp.size
            || format::parse_hash(&p.new_root) != Some(cp.root);
        if mismatch {
            self.error(
                FindingKind::Consistency,
                Some(CONSISTENCY),
                None,
                "sizes or roots differ from since.note and checkpoint.note",
            );
        }
        let Some(path) = p
            .path
            .iter()
            .map(|h| format::parse_hash(h))
            .collect::<Option<Vec<Hash>>>()
        else {
            self.error(
                FindingKind::Malformed,
                Some(CONSISTENCY),
                None,
                "a path hash is not 64 lower-case hex digits",
            );
            return;
        };
        if let Err(e) = merkle::verify_consistency(old.size, cp.size, &old.root, &cp.root, &path) {
            self.error(
                FindingKind::Consistency,
                Some(CONSISTENCY),
                None,
                e.to_string(),
            );
        }
    }

    fn blobs(
        &mut self,
        files: &BTreeMap<String, Vec<u8>>,
        manifest: &Manifest,
        carried: &[Carried],
    ) {
        // What the carried events say about evidence content.
        let mut fold = LedgerState::default();
        for c in carried {
            // Events whose context is not carried fold nothing.
            let _ = fold.apply_partial(&c.event);
        }
        let expected = expected_blobs(&fold.domain.oids);
        let purged = removed_blobs(&fold.domain.oids);
        let registered_at: BTreeMap<BlobDigest, u64> = fold
            .domain
            .oids
            .oids
            .values()
            .filter_map(|r| Some((format::parse_hash(&r.sha256)?, r.registered_seq)))
            .collect();
        let mut present: BTreeSet<BlobDigest> = BTreeSet::new();
        for (path, bytes) in files.range(BLOBS_DIR.to_string()..) {
            let Some(name) = path.strip_prefix(BLOBS_DIR) else {
                break;
            };
            self.report.blobs_checked += 1;
            let Some(d) = format::parse_hash(name) else {
                continue;
            };
            if sha256(bytes) != d {
                self.error(
                    FindingKind::BlobDigest,
                    Some(path),
                    None,
                    "the content's SHA-256 is not the blob's name",
                );
            }
            present.insert(d);
            if let Some(seq) = purged.get(&d) {
                self.error(
                    FindingKind::Retention,
                    Some(path),
                    Some(*seq),
                    "the content is present although a carried retention event purged it",
                );
            } else if !expected.contains(&d) {
                self.warn(
                    FindingKind::Unknown,
                    Some(path),
                    None,
                    "no carried event references this blob",
                );
            }
        }
        if manifest.with_blobs {
            for d in &expected {
                if !present.contains(d) {
                    self.error(
                        FindingKind::MissingBlob,
                        Some(&format!("{BLOBS_DIR}{}", hex::encode(d))),
                        registered_at.get(d).copied(),
                        "the content of live evidence is missing and no carried retention event removed it",
                    );
                }
            }
        }
    }

    fn attestations(
        &mut self,
        files: &BTreeMap<String, Vec<u8>>,
        key: &NoteVerifier,
        cp: &Checkpoint,
        carried: &[Carried],
    ) {
        let leaves: BTreeMap<u64, Hash> = carried.iter().map(|c| (c.event.seq, c.leaf)).collect();
        let events: BTreeMap<u64, &Event> =
            carried.iter().map(|c| (c.event.seq, &c.event)).collect();
        let prefix = format!("docket://{}/log/", cp.origin);
        for (path, bytes) in files.range(ATTESTATIONS_DIR.to_string()..) {
            if !path.starts_with(ATTESTATIONS_DIR) {
                break;
            }
            self.report.attestations_checked += 1;
            let env: vsa::Envelope = match serde_json::from_slice(bytes) {
                Ok(e) => e,
                Err(e) => {
                    self.error(FindingKind::Malformed, Some(path), None, e.to_string());
                    continue;
                }
            };
            if env.payload_type != vsa::PAYLOAD_TYPE {
                self.error(
                    FindingKind::Attestation,
                    Some(path),
                    None,
                    format!("payloadType {:?}", env.payload_type),
                );
            }
            let body = match vsa::verify(&env, &key.key) {
                Ok(b) => b,
                Err(e) => {
                    self.error(FindingKind::Attestation, Some(path), None, e);
                    continue;
                }
            };
            let Ok(st) = serde_json::from_slice::<serde_json::Value>(&body) else {
                self.error(
                    FindingKind::Malformed,
                    Some(path),
                    None,
                    "the statement is not JSON",
                );
                continue;
            };
            if st.get("_type").and_then(|t| t.as_str()) != Some(vsa::STATEMENT_TYPE) {
                self.error(
                    FindingKind::Attestation,
                    Some(path),
                    None,
                    "not an in-toto Statement v1",
                );
            }
            let pred = st.get("predicate");
            let refs = pred
                .and_then(|p| {
                    p.get("inputAttestations")
                        .or_else(|| p.get("configuration"))
                })
                .and_then(|r| r.as_array())
                .cloned()
                .unwrap_or_default();
            let mut bound = None;
            for r in refs {
                let (Some(uri), Some(d)) = (
                    r.get("uri").and_then(|u| u.as_str()),
                    r.get("digest")
                        .and_then(|d| d.get("sha256"))
                        .and_then(|d| d.as_str()),
                ) else {
                    continue;
                };
                let Some(seq) = uri
                    .strip_prefix(&prefix)
                    .and_then(|s| s.parse::<u64>().ok())
                else {
                    continue;
                };
                match leaves.get(&seq) {
                    Some(leaf) if format::parse_hash(d) == Some(*leaf) => bound = Some(seq),
                    _ => self.error(
                        FindingKind::Attestation,
                        Some(path),
                        Some(seq),
                        "refers to a log entry the bundle does not carry with that leaf hash",
                    ),
                }
            }
            let Some(seq) = bound else {
                self.error(
                    FindingKind::Attestation,
                    Some(path),
                    None,
                    "not bound to any carried log entry",
                );
                continue;
            };
            // Signed by the ledger key and bound to an entry is not enough:
            // it must say what that entry says (subject, result, tests),
            // under the file name the exporter gives it.
            if let Some(why) = attestation_disagrees(path, &st, events[&seq], &cp.origin) {
                self.error(FindingKind::Attestation, Some(path), Some(seq), why);
            }
        }
    }

    fn summary(&mut self, files: &BTreeMap<String, Vec<u8>>, cp: &Checkpoint, carried: &[Carried]) {
        let Some(bytes) = files.get(SUMMARY) else {
            return;
        };
        let stored: serde_json::Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                self.error(FindingKind::Malformed, Some(SUMMARY), None, e.to_string());
                return;
            }
        };
        let mut b = SummaryBuilder::new(cp.size);
        for c in carried {
            b.add(&c.event);
        }
        let rebuilt = b.finish();
        // Invariant: the summary type serialises.
        let rebuilt_value = serde_json::to_value(&rebuilt).expect("summary serialises");
        self.report.summary_compared = true;
        if stored != rebuilt_value {
            let detail = crate::state::first_difference(
                "summary",
                bytes,
                &serde_json::to_vec(&rebuilt_value).unwrap_or_default(),
            );
            self.error(
                FindingKind::SummaryMismatch,
                Some(SUMMARY),
                None,
                format!("the summary rebuilt from the carried events differs: {detail}"),
            );
        }
    }
}

/// Why `e`'s author could not have written it given the key events folded
/// so far, or None.
fn role_violation(keys: &KeysProjection, e: &Event) -> Option<String> {
    if e.kind == GENESIS {
        return Some("genesis is only valid at sequence 0".into());
    }
    let Some(roles) = authority::required_roles(&e.kind) else {
        return Some(format!("unknown kind {:?}", e.kind));
    };
    let Some(record) = keys.key(&e.author) else {
        return Some("no registration of the author key is carried before this event".into());
    };
    if let Some(r) = record.revoked_seq.filter(|&r| r < e.seq) {
        return Some(format!("the key was revoked at seq {r}"));
    }
    if !record.usable_at(e.seq, e.recorded_at_ms) {
        return Some("the key is outside its validity window".into());
    }
    if !roles.iter().any(|r| record.roles.contains(r)) {
        let need: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        return Some(format!("needs one of the roles {}", need.join(", ")));
    }
    None
}

/// Why the signed statement `st` of the attestation file `path` is not the
/// statement the exporter makes for `event` under that file name
/// (`vsa::statements_for`), compared as JSON values without
/// `predicate.verifier.version` (the exporting Docket's version); `None`
/// when it is.
fn attestation_disagrees(
    path: &str,
    st: &serde_json::Value,
    event: &Event,
    origin: &str,
) -> Option<String> {
    let stem = path
        .strip_prefix(ATTESTATIONS_DIR)
        .and_then(|p| p.strip_suffix(".dsse.json"))
        .unwrap_or(path);
    let Some((_, expected)) = vsa::statements_for(event, origin)
        .into_iter()
        .find(|(s, _)| s == stem)
    else {
        return Some(format!(
            "event {} ({}) has no attestation named {stem}",
            event.seq, event.kind
        ));
    };
    let without_version = |v: &serde_json::Value| {
        let mut v = v.clone();
        if let Some(verifier) = v
            .get_mut("predicate")
            .and_then(|p| p.get_mut("verifier"))
            .and_then(serde_json::Value::as_object_mut)
        {
            verifier.remove("version");
        }
        v
    };
    (without_version(st) != without_version(&expected)).then(|| {
        format!(
            "does not say what event {} says (subject, predicate or result differ)",
            event.seq
        )
    })
}

/// Why `e` repeats a key event the carried log already holds: a
/// registration of a key with a record, or a revocation of a revoked key.
fn repeated_key_event(keys: &crate::keys::KeysProjection, e: &Event) -> Option<String> {
    match e.kind.as_str() {
        "key.registered" => {
            let p = crate::keys::decode_registered(&e.payload).ok()?;
            let existing = keys.keys.get(&p.public_key)?;
            Some(format!(
                "key {} is already registered (seq {})",
                p.public_key, existing.registered_seq
            ))
        }
        "key.revoked" => {
            let p = crate::keys::decode_revoked(&e.payload).ok()?;
            let at = keys.keys.get(&p.public_key)?.revoked_seq?;
            Some(format!(
                "key {} is already revoked (seq {at})",
                p.public_key
            ))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_past_the_cap_still_set_the_exit_code() {
        // Given an auditor whose list is full of "missing" findings (exit 4),
        let options = AuditOptions::default();
        let mut auditor = Auditor::new("b".into(), &options);
        for seq in 0..MAX_FINDINGS as u64 {
            auditor.error(FindingKind::MissingProof, Some(PROOFS), Some(seq), "x");
        }
        // when an integrity failure (exit 5) comes after the cap,
        auditor.error(FindingKind::Signature, Some(EVENTS), Some(7), "bad");
        let report = auditor.finish();
        // then it is counted, not listed, and still decides the exit code.
        assert_eq!(report.findings.len(), MAX_FINDINGS);
        assert_eq!(report.findings_omitted, 1);
        assert_eq!(report.exit_code(), 5);
    }
}

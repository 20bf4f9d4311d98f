//! `docket verdict import`: a seed 001 run output dir's
//! `evidence/verdict.json`, read by its schema and recorded with its
//! evidence as one `verdict.imported` event
//! ([`crate::verdicts::imported`]).
//!
//! 1. [`ImportPlan::read`] reads `RUN_DIR/evidence/verdict.json` (a missing
//!    file, or a missing run dir, is planned as FAIL `verdict_missing`; one
//!    that breaks the seed
//!    001 schema is `Invalid` and nothing is planned), hashes it and every
//!    `evidence_paths` entry that exists inside the run dir (a missing
//!    one, a directory or a path that leaves the run dir through a link is
//!    planned as missing: FAIL `artifact_missing`), and builds the payload.
//! 2. The files are stored in the blob store (embedded), or uploaded with
//!    signed blob-only uploads (`--server`).
//! 3. [`Docket::import_verdict`] checks that every file's blob is stored
//!    and appends the signed statement: admission checks the verifier role,
//!    separation of duties and the import rules; the evidence OIDs are
//!    minted by the event itself, so nothing is recorded unless all of it is.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use docket_verifier::VerifierFailClass;
use docket_verifier::verdict::{Outcome, VerifierOutput};
use ed25519_dalek::SigningKey;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::blobs::parse_digest;
use crate::error::{LedgerError, Result};
use crate::event::Statement;
use crate::kind::names;
use crate::ledger::Receipt;
use crate::oids::{guess_evidence_type, guess_media_type};
use crate::schema::task_key;
use crate::verdicts::imported::{
    self, ImportedArtifact, VERDICT_JSON_PATH, decode_imported, imported_oid,
};

use super::retention_service::registration_guard;
use super::service::{Docket, expect_kind};

/// Largest `verdict.json` read (bytes); a larger one is malformed.
pub const MAX_VERDICT_JSON: u64 = 1 << 20;

/// One file to import.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedFile {
    #[serde(flatten)]
    pub artifact: ImportedArtifact,
    /// Where it is on disk.
    #[serde(skip)]
    pub source: PathBuf,
}

/// What an import will record.
#[derive(Debug, Clone, Serialize)]
pub struct ImportPlan {
    pub task_id: String,
    pub submission_seq: Option<u64>,
    /// `verdict.json` first (when present), then the evidence found.
    pub files: Vec<PlannedFile>,
    pub missing_paths: Vec<String>,
    pub verdict: Outcome,
    pub fail_class: Option<VerifierFailClass>,
    pub exit_code: i64,
    /// The `verdict.imported` payload.
    #[serde(skip)]
    pub payload: Vec<u8>,
}

fn io_err(path: &Path, e: std::io::Error) -> LedgerError {
    LedgerError::io(path, e)
}

/// SHA-256 and size of a file, streamed.
fn hash_file(path: &Path) -> Result<(String, u64)> {
    let mut f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| io_err(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((crate::schema::hex_lower(&h.finalize()), size))
}

fn artifact(path: &str, source: &Path) -> Result<PlannedFile> {
    let (sha256, size) = hash_file(source)?;
    Ok(PlannedFile {
        artifact: ImportedArtifact {
            path: path.to_string(),
            sha256,
            size,
            evidence_type: guess_evidence_type(path).to_string(),
            media_type: guess_media_type(path).to_string(),
        },
        source: source.to_path_buf(),
    })
}

/// The file `rel` of `run_dir` when it is a regular file inside the run
/// dir (links followed, but not out of it).
fn inside(run_dir_canon: &Path, run_dir: &Path, rel: &str) -> Option<PathBuf> {
    let p = run_dir.join(rel);
    let canon = std::fs::canonicalize(&p).ok()?;
    if !canon.starts_with(run_dir_canon) {
        return None;
    }
    std::fs::metadata(&canon).ok()?.is_file().then_some(p)
}

impl ImportPlan {
    /// Reads `run_dir` for task `task_id` (judging `submission_seq`, the
    /// task's latest submission, when it has one). A run dir that does not
    /// exist (or is not a directory) has no `verdict.json`: FAIL
    /// `verdict_missing`, fail closed. A `verdict.json` that breaks the seed
    /// 001 schema is `Invalid` listing every violated rule. A run without
    /// `verdict.json` records `observed_utc`, the clock now.
    pub fn read(run_dir: &Path, task_id: &str, submission_seq: Option<u64>) -> Result<ImportPlan> {
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self::read_at(run_dir, task_id, submission_seq, now_ms)
    }

    /// [`ImportPlan::read`] with the clock given: `observed_ms` (Unix
    /// milliseconds) is the `observed_utc` of a run without `verdict.json`.
    pub fn read_at(
        run_dir: &Path,
        task_id: &str,
        submission_seq: Option<u64>,
        observed_ms: u64,
    ) -> Result<ImportPlan> {
        let task_id = task_key(task_id).into_owned();
        let observed = crate::schema::ms_to_rfc3339(observed_ms);
        let missing_verdict = |task_id: &str| {
            imported::imported_payload(task_id, submission_seq, None, &[], &[], Some(&observed))
        };
        if !run_dir.is_dir() {
            tracing::warn!(
                "run output dir {} does not exist: recording FAIL verdict_missing",
                run_dir.display()
            );
            let payload = missing_verdict(&task_id)?;
            return Self::build(task_id, submission_seq, Vec::new(), Vec::new(), payload);
        }
        let canon = std::fs::canonicalize(run_dir).map_err(|e| io_err(run_dir, e))?;
        let vj_path = run_dir.join(VERDICT_JSON_PATH);
        let mut files = Vec::new();
        let mut missing = Vec::new();
        let mut artifacts = Vec::new();
        let payload = match inside(&canon, run_dir, VERDICT_JSON_PATH) {
            None if vj_path.exists() => {
                return Err(LedgerError::Invalid {
                    what: "verdict.json".into(),
                    violations: vec![format!(
                        "{} is not a regular file inside the run dir",
                        vj_path.display()
                    )],
                });
            }
            None => missing_verdict(&task_id)?,
            Some(path) => {
                let size = std::fs::metadata(&path)
                    .map_err(|e| io_err(&path, e))?
                    .len();
                if size > MAX_VERDICT_JSON {
                    return Err(LedgerError::Invalid {
                        what: "verdict.json".into(),
                        violations: vec![format!(
                            "{size} bytes: larger than {MAX_VERDICT_JSON} bytes"
                        )],
                    });
                }
                let bytes = std::fs::read(&path).map_err(|e| io_err(&path, e))?;
                let out = VerifierOutput::parse(&bytes)
                    .map_err(|vs| crate::schema::from_violations("verdict.json", vs))?;
                let doc: serde_json::Value = serde_json::from_slice(&bytes)
                    .map_err(|e| crate::schema::invalid("verdict.json", e.to_string()))?;
                // The file as hashed is the file as parsed: hash these bytes.
                let vj = PlannedFile {
                    artifact: ImportedArtifact {
                        path: VERDICT_JSON_PATH.into(),
                        sha256: crate::schema::hex_lower(&Sha256::digest(&bytes)),
                        size: bytes.len() as u64,
                        evidence_type: guess_evidence_type(VERDICT_JSON_PATH).into(),
                        media_type: guess_media_type(VERDICT_JSON_PATH).into(),
                    },
                    source: path.clone(),
                };
                let mut seen = std::collections::BTreeSet::new();
                for p in &out.evidence_paths {
                    // Invariant: VerifierOutput::parse checked every path
                    // normalizes (verifier_output.evidence_paths.relative).
                    let Some(norm) = docket_verifier::scope::normalize_path(p) else {
                        continue;
                    };
                    if norm == VERDICT_JSON_PATH || !seen.insert(norm.clone()) {
                        continue;
                    }
                    match inside(&canon, run_dir, &norm) {
                        Some(src) => match artifact(&norm, &src) {
                            Ok(a) => artifacts.push(a),
                            Err(_) => missing.push(norm),
                        },
                        None => missing.push(norm),
                    }
                }
                let arts: Vec<ImportedArtifact> = artifacts
                    .iter()
                    .map(|a: &PlannedFile| a.artifact.clone())
                    .collect();
                let payload = imported::imported_payload(
                    &task_id,
                    submission_seq,
                    Some((&vj.artifact, &doc)),
                    &arts,
                    &missing,
                    None,
                )?;
                files.push(vj);
                payload
            }
        };
        files.extend(artifacts);
        Self::build(task_id, submission_seq, files, missing, payload)
    }

    fn build(
        task_id: String,
        submission_seq: Option<u64>,
        files: Vec<PlannedFile>,
        missing_paths: Vec<String>,
        payload: Vec<u8>,
    ) -> Result<ImportPlan> {
        let decoded = decode_imported(&payload)?;
        Ok(ImportPlan {
            task_id,
            submission_seq,
            files,
            missing_paths,
            verdict: decoded.verdict,
            fail_class: decoded.fail_class,
            exit_code: decoded.exit_code,
            payload,
        })
    }

    /// The signed `verdict.imported` statement.
    pub fn sign(&self, key: &SigningKey) -> Statement {
        Statement::sign(names::VERDICT_IMPORTED, self.payload.clone(), key)
    }
}

/// What an import recorded.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReceipt {
    pub receipt: Receipt,
    /// The OIDs minted, `verdict.json` first, then the evidence found.
    pub oids: Vec<String>,
}

impl Docket {
    /// Appends a `verdict.imported` statement whose files are all in the
    /// blob store (same digest and size; `FailedPrecondition` naming the
    /// first one that is not). Admission (role, separation of duties, the
    /// import rules) runs before anything is checked on disk.
    pub fn import_verdict(&self, stmt: Statement) -> Result<ImportReceipt> {
        expect_kind(&stmt, &[names::VERDICT_IMPORTED])?;
        self.precheck(&stmt)?;
        let p = decode_imported(&stmt.payload)?;
        // No retention deletion between the blob checks and the append.
        let _registration = registration_guard();
        for a in p.files() {
            let digest = parse_digest(&a.sha256)?;
            match self.blobs().size(&digest)? {
                Some(size) if size == a.size => {}
                Some(size) => {
                    return Err(LedgerError::FailedPrecondition(format!(
                        "blob {} ({}) is {size} bytes, the statement says {}",
                        a.sha256, a.path, a.size
                    )));
                }
                None => {
                    return Err(LedgerError::FailedPrecondition(format!(
                        "no blob with SHA-256 {} ({}) in the blob store; upload the content first",
                        a.sha256, a.path
                    )));
                }
            }
        }
        let digest = stmt.digest();
        let n = p.files().count() as u64;
        let receipt = self.ledger().append(stmt)?;
        Ok(ImportReceipt {
            oids: (0..n)
                .map(|i| imported_oid(receipt.recorded_at_ms, &digest, i))
                .collect(),
            receipt,
        })
    }

    /// Imports `run_dir` for `task_id` signed by `key`: plans (judging the
    /// task's latest submission), checks the statement would be admitted,
    /// stores the files, appends. Nothing is stored for a statement the
    /// ledger would refuse.
    pub fn import_run_dir(
        &self,
        run_dir: &Path,
        task_id: &str,
        key: &SigningKey,
    ) -> Result<(ImportPlan, ImportReceipt)> {
        let latest = {
            let state = self.ledger().state();
            let task = state.domain.verdicts.task(task_id)?;
            task.latest_submission().map(|s| s.seq)
        };
        let plan = ImportPlan::read(run_dir, task_id, latest)?;
        let stmt = plan.sign(key);
        self.precheck(&stmt)?;
        for f in &plan.files {
            let digest = parse_digest(&f.artifact.sha256)?;
            let file = std::fs::File::open(&f.source).map_err(|e| io_err(&f.source, e))?;
            self.put_blob(file, Some(&digest), Some(f.artifact.size))?;
        }
        let receipt = self.import_verdict(stmt)?;
        Ok((plan, receipt))
    }
}

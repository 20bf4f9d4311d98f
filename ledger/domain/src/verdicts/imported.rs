//! Seed 001 verdicts: `verdict.imported` (a verifier's `evidence/verdict.json`
//! recorded with its evidence, by `docket verdict import`) and
//! `verdict.deadline_passed` (the fail-closed FAIL `verdict_missing` the
//! deadline sweeper records when a task's verdict deadline passes with no
//! verdict).
//!
//! # `verdict.imported`
//!
//! One event carries the verifier's verdict **and** registers its evidence:
//! the `verdict.json` file and every `evidence_paths` entry that exists get
//! an OID in the same event (no partial import is possible). Those OIDs are
//! minted from the event, one per artifact index `i` (0 = `verdict.json`,
//! then `artifacts` in order):
//!
//! `OID_i = ULID(timestamp = event.recorded_at_ms,
//!               random = first 10 bytes of SHA-256("docket/v1/oid\0" ||
//!                        SHA-256("docket/v1/imported-evidence\0" || statement digest || i as u64 big-endian)))`
//!
//! The verifier that imports does not become a submitter of the task: the
//! evidence is verifier-owned (seed 001), and separation of duties still
//! bars the task's submitters from importing a verdict for it.
//!
//! The recorded verdict follows from what is imported by the import
//! engine's rules ([`decide`]); admission refuses a payload whose recorded
//! `verdict`, `fail_class` or `exit_code` does not follow:
//!
//! | what was found | recorded |
//! | --- | --- |
//! | no `verdict.json` | FAIL `verdict_missing`, exit code 5 |
//! | an `evidence_paths` entry missing | FAIL `artifact_missing` (exit code as reported, 5 when that was 0) |
//! | a FAIL with `fail_class` null | FAIL `unknown` |
//! | otherwise | as reported |

use std::collections::BTreeSet;

use docket_verifier::VerifierFailClass;
use docket_verifier::verdict::{Outcome, VerifierOutput};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{LedgerError, Result};
use crate::event::{Event, Statement};
use crate::kind::names;
use crate::oids::{OidRecord, OidRegistry, OidState, mint};
use crate::schema::{
    Fields, Hex32, MAX_LABEL, classes, finish, is_artifact_name, is_media_type, is_sha256_hex,
    json_object, ms_to_rfc3339,
};
use crate::tasks::{TaskState, VerdictInfo, VerdictStatus, VerdictsProjection};
use docket_log::machine::AdmitContext;

use super::provenance::{DEADLINE_ENGINE, IMPORT_ENGINE, Provenance, read_engine};

/// Where a run's verifier verdict is, relative to the run output dir.
pub const VERDICT_JSON_PATH: &str = "evidence/verdict.json";
/// Domain separator of imported-evidence OIDs.
pub const IMPORTED_OID_PREFIX: &[u8] = b"docket/v1/imported-evidence\0";
/// The exit code recorded for a FAIL the import engine decides.
pub const FAIL_EXIT_CODE: i64 = 5;

/// One file imported as evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportedArtifact {
    /// Path relative to the run output dir (the OID's artifact name).
    pub path: String,
    /// SHA-256 of the content, 64 lower-case hex digits.
    pub sha256: String,
    pub size: u64,
    pub evidence_type: String,
    pub media_type: String,
}

/// `verdict.imported`.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictImported {
    pub task_id: String,
    /// The submission judged: the task's latest (None when it has none).
    pub submission_seq: Option<u64>,
    /// The `verdict.json` file (None when the run has none).
    pub verdict_json: Option<ImportedArtifact>,
    /// What `verdict.json` says, every seed 001 rule checked (None when missing).
    pub reported: Option<VerifierOutput>,
    /// For a run without `verdict.json`: when the importer looked (RFC 3339
    /// UTC). It makes each verdict-less run a statement of its own; without
    /// it two such runs are the same statement and the second a duplicate,
    /// which would leave an earlier PASS standing (not fail closed).
    pub observed_utc: Option<String>,
    /// The `evidence_paths` entries found, in their order (distinct; not
    /// `verdict.json` itself).
    pub artifacts: Vec<ImportedArtifact>,
    /// The `evidence_paths` entries not found.
    pub missing_paths: Vec<String>,
    /// The verdict recorded.
    pub verdict: Outcome,
    pub fail_class: Option<VerifierFailClass>,
    pub exit_code: i64,
    pub engine: Provenance,
}

impl VerdictImported {
    /// Every imported file: `verdict.json` first, then the artifacts.
    pub fn files(&self) -> impl Iterator<Item = &ImportedArtifact> {
        self.verdict_json.iter().chain(&self.artifacts)
    }
}

/// The import engine: the verdict recorded for what was found.
pub fn decide(
    reported: Option<&VerifierOutput>,
    missing_paths: &[String],
) -> (Outcome, Option<VerifierFailClass>, i64) {
    let Some(r) = reported else {
        return (
            Outcome::Fail,
            Some(VerifierFailClass::VerdictMissing),
            FAIL_EXIT_CODE,
        );
    };
    if !missing_paths.is_empty() {
        let code = if r.exit_code == 0 {
            FAIL_EXIT_CODE
        } else {
            r.exit_code
        };
        return (
            Outcome::Fail,
            Some(VerifierFailClass::ArtifactMissing),
            code,
        );
    }
    match r.verdict {
        Outcome::Pass => (Outcome::Pass, None, r.exit_code),
        Outcome::Fail => (
            Outcome::Fail,
            Some(r.fail_class.unwrap_or(VerifierFailClass::Unknown)),
            r.exit_code,
        ),
    }
}

/// The seed spelling of an outcome.
pub fn outcome_str(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
    }
}

fn parse_fail_class(s: &str) -> Option<VerifierFailClass> {
    VerifierFailClass::ALL.into_iter().find(|c| c.as_str() == s)
}

fn read_artifact(v: &Value, at: &str, violations: &mut Vec<String>) -> Option<ImportedArtifact> {
    let Some(obj) = v.as_object() else {
        violations.push(format!("{at}: must be an object"));
        return None;
    };
    let mut f = Fields::new(obj);
    f.only(&["path", "sha256", "size", "evidence_type", "media_type"]);
    let path = f.str("path", true);
    if let Some(p) = path
        && (!is_artifact_name(p) || docket_verifier::scope::normalize_path(p).as_deref() != Some(p))
    {
        f.violate(
            "path",
            format!("{p:?} is not a normalized path relative to the run dir"),
        );
    }
    let sha = f.str("sha256", true);
    if let Some(d) = sha
        && !is_sha256_hex(d)
    {
        f.violate("sha256", "must be 64 lower-case hex digits");
    }
    let size = f.u64("size", true);
    let et = f.str("evidence_type", true);
    if let Some(t) = et
        && t.parse::<docket_verifier::EvidenceType>().is_err()
    {
        f.violate("evidence_type", format!("{t:?} is not an evidence type"));
    }
    let mt = f.str("media_type", true);
    if let Some(m) = mt
        && !is_media_type(m)
    {
        f.violate("media_type", format!("{m:?} is not a media type"));
    }
    let ok = f.violations.is_empty();
    violations.extend(f.violations.into_iter().map(|v| format!("{at}/{v}")));
    match (ok, path, sha, size, et, mt) {
        (true, Some(p), Some(s), Some(z), Some(e), Some(m)) => Some(ImportedArtifact {
            path: p.into(),
            sha256: s.into(),
            size: z,
            evidence_type: e.into(),
            media_type: m.into(),
        }),
        _ => None,
    }
}

/// Decodes `verdict.imported`, checking every rule that needs only the
/// bytes: the shapes, `reported` under every seed 001 rule, every
/// `evidence_paths` entry accounted for exactly once (found or missing),
/// and the recorded verdict following from them ([`decide`]).
pub fn decode_imported(payload: &[u8]) -> Result<VerdictImported> {
    const WHAT: &str = names::VERDICT_IMPORTED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "task_id",
        "submission_seq",
        "verdict_json",
        "reported",
        "observed_utc",
        "artifacts",
        "missing_paths",
        "verdict",
        "fail_class",
        "exit_code",
        "engine",
    ]);
    let task_id = f.text("task_id", true, MAX_LABEL).map(str::to_string);
    let submission_seq = f.u64("submission_seq", false);
    let mut extra = Vec::new();
    let verdict_json = match map.get("verdict_json") {
        None | Some(Value::Null) => None,
        Some(v) => read_artifact(v, "verdict_json", &mut extra),
    };
    if let Some(v) = &verdict_json
        && v.path != VERDICT_JSON_PATH
    {
        extra.push(format!("verdict_json/path: must be {VERDICT_JSON_PATH:?}"));
    }
    let reported = match map.get("reported") {
        None | Some(Value::Null) => None,
        Some(v) => {
            // Invariant: a JSON value serialises.
            let bytes = serde_json::to_vec(v).expect("JSON serialises");
            match VerifierOutput::parse(&bytes) {
                Ok(r) => Some(r),
                Err(vs) => {
                    extra.extend(vs.iter().map(|v| format!("reported: {v}")));
                    None
                }
            }
        }
    };
    let present = map.get("verdict_json").is_some_and(|v| !v.is_null());
    let reported_present = map.get("reported").is_some_and(|v| !v.is_null());
    if present != reported_present {
        extra.push("verdict_json and reported: both or neither must be given".into());
    }
    let observed_utc = match map.get("observed_utc") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            if !docket_verifier::parse_rfc3339(s).is_some_and(|t| t.offset().is_utc()) {
                extra.push(format!(
                    "observed_utc: {s:?} is not an RFC 3339 UTC timestamp"
                ));
            } else if reported_present {
                extra.push("observed_utc: only for a run without verdict.json".into());
            }
            Some(s.clone())
        }
        Some(_) => {
            extra.push("observed_utc: must be a string or null".into());
            None
        }
    };
    let mut artifacts = Vec::new();
    match map.get("artifacts") {
        None | Some(Value::Null) => extra.push("artifacts: required field is missing".into()),
        Some(Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                if let Some(a) = read_artifact(v, &format!("artifacts/{i}"), &mut extra) {
                    artifacts.push(a);
                }
            }
        }
        Some(_) => extra.push("artifacts: must be an array".into()),
    }
    let missing_paths: Vec<String> = f
        .strings("missing_paths", true)
        .unwrap_or_default()
        .into_iter()
        .map(str::to_string)
        .collect();
    let verdict = match f.str("verdict", true) {
        Some("PASS") => Some(Outcome::Pass),
        Some("FAIL") => Some(Outcome::Fail),
        Some(other) => {
            f.violate("verdict", format!("{other:?} is not PASS or FAIL"));
            None
        }
        None => None,
    };
    let fail_class = match map.get("fail_class") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match parse_fail_class(s) {
            Some(c) => Some(c),
            None => {
                f.violate(
                    "fail_class",
                    format!("{s:?} is not in the seed 001 taxonomy"),
                );
                None
            }
        },
        Some(_) => {
            f.violate("fail_class", "must be a string or null");
            None
        }
    };
    let exit_code = match map.get("exit_code") {
        Some(Value::Number(n)) if n.is_i64() => n.as_i64(),
        None | Some(Value::Null) => {
            f.violate("exit_code", "required field is missing");
            None
        }
        Some(_) => {
            f.violate("exit_code", "must be an integer");
            None
        }
    };
    let engine = read_engine(&mut f, true);
    if let Some(e) = &engine
        && e.name != IMPORT_ENGINE
    {
        f.violate("engine/name", format!("must be {IMPORT_ENGINE:?}"));
    }
    f.violations.extend(extra);
    // Every evidence_paths entry is accounted for exactly once.
    if let Some(r) = &reported {
        let listed: BTreeSet<String> = r
            .evidence_paths
            .iter()
            .filter_map(|p| docket_verifier::scope::normalize_path(p))
            .filter(|p| p != VERDICT_JSON_PATH)
            .collect();
        let mut seen = BTreeSet::new();
        for p in artifacts
            .iter()
            .map(|a| a.path.as_str())
            .chain(missing_paths.iter().map(String::as_str))
        {
            if !seen.insert(p.to_string()) {
                f.violate("artifacts", format!("{p:?} is accounted for twice"));
            }
        }
        if seen != listed {
            f.violate(
                "artifacts",
                "artifacts and missing_paths must be exactly the evidence_paths of verdict.json (normalized, without verdict.json)",
            );
        }
    } else if !artifacts.is_empty() || !missing_paths.is_empty() {
        f.violate(
            "artifacts",
            "without a verdict.json there are no evidence_paths to import",
        );
    }
    finish(WHAT, f.violations)?;
    let (Some(task_id), Some(verdict), Some(exit_code), Some(engine)) =
        (task_id, verdict, exit_code, engine)
    else {
        // Invariant: finish() returned Ok, so every required field was read.
        return Err(crate::schema::invalid(WHAT, "payload does not decode"));
    };
    let (want_verdict, want_class, want_code) = decide(reported.as_ref(), &missing_paths);
    if (verdict, fail_class, exit_code) != (want_verdict, want_class, want_code) {
        return Err(LedgerError::Invalid {
            what: WHAT.into(),
            violations: vec![format!(
                "[import.rules] verdict: the import rules give {} {} exit {want_code} for what is imported, not {} {} exit {exit_code}",
                outcome_str(want_verdict),
                want_class.map_or("null", |c| c.as_str()),
                outcome_str(verdict),
                fail_class.map_or("null", |c| c.as_str()),
            )],
        });
    }
    Ok(VerdictImported {
        task_id,
        submission_seq,
        verdict_json,
        reported,
        observed_utc,
        artifacts,
        missing_paths,
        verdict,
        fail_class,
        exit_code,
        engine,
    })
}

/// The statement digest of a committed event (what
/// [`Statement::digest`] gives for the statement it records).
pub fn statement_digest_of(event: &Event) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"docket/v1/statement\0");
    h.update(event.author);
    h.update(crate::event::SIGNING_PREFIX);
    h.update(event.kind.as_bytes());
    h.update([0u8]);
    h.update(Sha256::digest(&event.payload));
    h.finalize().into()
}

/// The OID of imported artifact `index` of a statement with digest
/// `statement_digest`, appended at `recorded_at_ms`.
pub fn imported_oid(recorded_at_ms: u64, statement_digest: &[u8; 32], index: u64) -> String {
    let mut h = Sha256::new();
    h.update(IMPORTED_OID_PREFIX);
    h.update(statement_digest);
    h.update(index.to_be_bytes());
    mint(recorded_at_ms, &h.finalize().into())
}

/// The OIDs a committed `verdict.imported` event minted, in artifact
/// order (`verdict.json` first). Empty for another kind or a payload that
/// does not decode.
pub fn oids_of_event(event: &Event) -> Vec<String> {
    if event.kind != names::VERDICT_IMPORTED {
        return Vec::new();
    }
    let Ok(p) = decode_imported(&event.payload) else {
        return Vec::new();
    };
    let d = statement_digest_of(event);
    (0..p.files().count() as u64)
        .map(|i| imported_oid(event.recorded_at_ms, &d, i))
        .collect()
}

/// The submission a seed 001 verdict judges: `submission_seq` when given
/// (the task's latest), else the latest, else none.
fn judged(task: &TaskState, submission_seq: Option<u64>) -> Result<Option<u64>> {
    match (submission_seq, task.latest_submission()) {
        (None, latest) => Ok(latest.map(|s| s.seq)),
        (Some(_), _) => super::judged_submission(task, submission_seq).map(Some),
    }
}

/// `verdict.imported`: the task exists, the author is not its submitter,
/// the judged submission is its latest, and the OIDs it mints are new.
pub fn admit_imported(
    tasks: &VerdictsProjection,
    oids: &OidRegistry,
    stmt: &Statement,
    ctx: &AdmitContext,
    p: &VerdictImported,
) -> Result<()> {
    let task = tasks.task(&p.task_id)?;
    task.check_not_submitter(stmt, "import a verdict for")?;
    judged(task, p.submission_seq)?;
    let d = stmt.digest();
    for i in 0..p.files().count() as u64 {
        oids.ensure_unminted(&imported_oid(ctx.recorded_at_ms, &d, i))?;
    }
    Ok(())
}

/// Folds `verdict.imported`: the files become OIDs of the task (registered
/// by the verifier, which does not become a submitter), and the verdict
/// becomes the task's current one.
pub fn fold_imported(
    tasks: &mut VerdictsProjection,
    oids: &mut OidRegistry,
    event: &Event,
    p: &VerdictImported,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    let d = statement_digest_of(event);
    let by = Hex32(event.author);
    let mut minted = Vec::new();
    for (i, a) in p.files().enumerate() {
        let oid = imported_oid(event.recorded_at_ms, &d, i as u64);
        if oids.oids.contains_key(&oid) {
            return Err(LedgerError::corrupt(
                format!("event {}", event.seq),
                format!("imported OID {oid} is already registered"),
            ));
        }
        let class = task.contract.retention_class.clone();
        oids.oids.insert(
            oid.clone(),
            OidRecord {
                sha256: a.sha256.clone(),
                size: a.size,
                evidence_type: a.evidence_type.clone(),
                media_type: a.media_type.clone(),
                task_id: task.task_id.clone(),
                pinned: class == classes::PINNED,
                retention_class: class,
                name: Some(a.path.clone()),
                artifact_name: a.path.clone(),
                registered_seq: event.seq,
                registered_at_ms: event.recorded_at_ms,
                registered_by: by,
                state: OidState::Live,
                removal: None,
            },
        );
        task.evidence.push(oid.clone());
        minted.push(oid);
    }
    let submission_seq = p
        .submission_seq
        .or_else(|| task.latest_submission().map(|s| s.seq))
        .unwrap_or(0);
    set_verdict(task, event, p.verdict, p.fail_class, submission_seq, minted);
    Ok(())
}

fn set_verdict(
    task: &mut TaskState,
    event: &Event,
    verdict: Outcome,
    fail_class: Option<VerifierFailClass>,
    submission_seq: u64,
    evidence_oids: Vec<String>,
) {
    task.status = match verdict {
        Outcome::Pass => VerdictStatus::Pass,
        Outcome::Fail => VerdictStatus::Fail,
    };
    task.verdict = Some(VerdictInfo {
        seq: event.seq,
        by: Hex32(event.author),
        at_ms: event.recorded_at_ms,
        verdict: outcome_str(verdict).into(),
        reason_code: None,
        fail_class: fail_class.map(|c| c.as_str().to_string()),
        sha256: Hex32::sha256(&event.payload),
        submission_seq,
        evidence_oids,
    });
    task.record_change(event);
}

// ------------------------------------------------------------ verdict.deadline_passed

/// `verdict.deadline_passed`: the task's verdict deadline passed with no
/// verdict; FAIL `verdict_missing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadlinePassed {
    pub task_id: String,
    /// The submission left without a verdict (None: the task has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_seq: Option<u64>,
    /// The task's `verdict_deadline`, Unix ms.
    pub deadline_ms: u64,
    /// The time the decision was made at, Unix ms (≥ the deadline, ≤ the
    /// event's ledger time).
    pub as_of_ms: u64,
    /// Always `FAIL`.
    pub verdict: String,
    /// Always `verdict_missing`.
    pub fail_class: String,
    /// Always 5.
    pub exit_code: i64,
    pub engine: Provenance,
}

impl DeadlinePassed {
    /// The payload the sweeper records for `task` at `as_of_ms`.
    pub fn new(task: &TaskState, deadline_ms: u64, as_of_ms: u64) -> Self {
        Self {
            task_id: task.task_id.clone(),
            submission_seq: task.latest_submission().map(|s| s.seq),
            deadline_ms,
            as_of_ms,
            verdict: "FAIL".into(),
            fail_class: VerifierFailClass::VerdictMissing.as_str().into(),
            exit_code: FAIL_EXIT_CODE,
            engine: Provenance::deadline(),
        }
    }
}

/// Decodes `verdict.deadline_passed` (every violation listed).
pub fn decode_deadline(payload: &[u8]) -> Result<DeadlinePassed> {
    const WHAT: &str = names::VERDICT_DEADLINE_PASSED;
    let map = json_object(WHAT, payload)?;
    let mut f = Fields::new(&map);
    f.only(&[
        "task_id",
        "submission_seq",
        "deadline_ms",
        "as_of_ms",
        "verdict",
        "fail_class",
        "exit_code",
        "engine",
    ]);
    f.text("task_id", true, MAX_LABEL);
    f.u64("submission_seq", false);
    let deadline = f.u64("deadline_ms", true);
    let as_of = f.u64("as_of_ms", true);
    if let (Some(d), Some(a)) = (deadline, as_of)
        && a < d
    {
        f.violate(
            "as_of_ms",
            format!(
                "{} is before the deadline {}",
                ms_to_rfc3339(a),
                ms_to_rfc3339(d)
            ),
        );
    }
    if f.str("verdict", true).is_some_and(|v| v != "FAIL") {
        f.violate("verdict", "must be FAIL (fail closed)");
    }
    if f.str("fail_class", true)
        .is_some_and(|v| v != VerifierFailClass::VerdictMissing.as_str())
    {
        f.violate("fail_class", "must be verdict_missing");
    }
    match map.get("exit_code") {
        Some(v) if v.as_i64() == Some(FAIL_EXIT_CODE) => {}
        _ => f.violate("exit_code", "must be 5"),
    }
    if let Some(e) = read_engine(&mut f, true)
        && e.name != DEADLINE_ENGINE
    {
        f.violate("engine/name", format!("must be {DEADLINE_ENGINE:?}"));
    }
    finish(WHAT, f.violations)?;
    crate::schema::decode_checked(WHAT, map)
}

/// Whether a deadline FAIL was already recorded for `task`.
pub fn deadline_recorded(task: &TaskState) -> Option<u64> {
    task.history
        .iter()
        .find(|h| h.kind == names::VERDICT_DEADLINE_PASSED)
        .map(|h| h.seq)
}

/// `verdict.deadline_passed`: the task carries exactly this deadline, the
/// decision time is not after the ledger clock, the task has no verdict
/// for its latest submission (PENDING), no deadline FAIL was recorded for
/// it yet, the author is not its submitter, and the submission named is
/// the latest.
pub fn admit_deadline(
    tasks: &VerdictsProjection,
    stmt: &Statement,
    ctx: &AdmitContext,
    p: &DeadlinePassed,
) -> Result<()> {
    let task = tasks.task(&p.task_id)?;
    task.check_not_submitter(stmt, "record a verdict for")?;
    match task.contract.verdict_deadline_ms {
        Some(d) if d == p.deadline_ms => {}
        Some(d) => {
            return Err(LedgerError::FailedPrecondition(format!(
                "task {}'s verdict deadline is {}, not {}",
                task.task_id,
                ms_to_rfc3339(d),
                ms_to_rfc3339(p.deadline_ms)
            )));
        }
        None => {
            return Err(LedgerError::FailedPrecondition(format!(
                "task {} has no verdict deadline",
                task.task_id
            )));
        }
    }
    if p.as_of_ms > ctx.recorded_at_ms {
        return Err(LedgerError::FailedPrecondition(format!(
            "as_of_ms {} is after the ledger clock ({})",
            ms_to_rfc3339(p.as_of_ms),
            ms_to_rfc3339(ctx.recorded_at_ms)
        )));
    }
    if let Some(seq) = deadline_recorded(task) {
        return Err(LedgerError::FailedPrecondition(format!(
            "task {}'s verdict deadline was already recorded as passed at seq {seq}",
            task.task_id
        )));
    }
    if task.status != VerdictStatus::Pending {
        return Err(LedgerError::FailedPrecondition(format!(
            "task {} has a verdict ({}) for its latest submission",
            task.task_id, task.status
        )));
    }
    let latest = task.latest_submission().map(|s| s.seq);
    if p.submission_seq != latest {
        return Err(LedgerError::FailedPrecondition(format!(
            "submission_seq must name the task's latest submission ({})",
            latest.map_or_else(|| "none".to_string(), |s| s.to_string())
        )));
    }
    Ok(())
}

/// Folds `verdict.deadline_passed`: FAIL `verdict_missing` becomes the
/// task's verdict.
pub fn fold_deadline(
    tasks: &mut VerdictsProjection,
    event: &Event,
    p: &DeadlinePassed,
) -> Result<()> {
    let task = tasks.task_for_fold(&p.task_id, event)?;
    set_verdict(
        task,
        event,
        Outcome::Fail,
        Some(VerifierFailClass::VerdictMissing),
        p.submission_seq.unwrap_or(0),
        Vec::new(),
    );
    Ok(())
}

/// Builds a `verdict.imported` payload (JSON bytes) from what was found.
pub fn imported_payload(
    task_id: &str,
    submission_seq: Option<u64>,
    verdict_json: Option<(&ImportedArtifact, &Value)>,
    artifacts: &[ImportedArtifact],
    missing_paths: &[String],
    observed_utc: Option<&str>,
) -> Result<Vec<u8>> {
    let reported = match verdict_json {
        None => None,
        Some((_, doc)) => {
            let bytes = serde_json::to_vec(doc)
                .map_err(|e| crate::schema::invalid(names::VERDICT_IMPORTED, e.to_string()))?;
            Some(
                VerifierOutput::parse(&bytes)
                    .map_err(|vs| crate::schema::from_violations("verdict.json", vs))?,
            )
        }
    };
    let (verdict, fail_class, exit_code) = decide(reported.as_ref(), missing_paths);
    let mut doc = serde_json::json!({
        "task_id": task_id,
        "verdict_json": verdict_json.map(|(a, _)| a),
        "reported": reported.as_ref().map(|r| serde_json::json!({
            "verdict": outcome_str(r.verdict),
            "fail_class": r.fail_class.map(|c| c.as_str()),
            "exit_code": r.exit_code,
            "evidence_paths": r.evidence_paths,
            "generated_utc": r.generated_utc,
        })),
        "artifacts": artifacts,
        "missing_paths": missing_paths,
        "verdict": outcome_str(verdict),
        "fail_class": fail_class.map(|c| c.as_str()),
        "exit_code": exit_code,
        "engine": Provenance::import().to_value(),
    });
    if let Some(s) = submission_seq {
        doc["submission_seq"] = s.into();
    }
    if let (None, Some(t)) = (&reported, observed_utc) {
        doc["observed_utc"] = t.into();
    }
    // Invariant: a JSON value serialises.
    Ok(serde_json::to_vec(&doc).expect("JSON serialises"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(verdict: Outcome, fc: Option<VerifierFailClass>, code: i64) -> VerifierOutput {
        VerifierOutput {
            verdict,
            fail_class: fc,
            exit_code: code,
            evidence_paths: vec![],
            generated_utc: "2026-02-09T14:30:00Z".into(),
        }
    }

    #[test]
    fn the_import_rules() {
        use VerifierFailClass as C;
        assert_eq!(
            decide(None, &[]),
            (Outcome::Fail, Some(C::VerdictMissing), 5)
        );
        let pass = out(Outcome::Pass, None, 0);
        assert_eq!(decide(Some(&pass), &[]), (Outcome::Pass, None, 0));
        assert_eq!(
            decide(Some(&pass), &["evidence/x.log".into()]),
            (Outcome::Fail, Some(C::ArtifactMissing), 5)
        );
        let fail = out(Outcome::Fail, None, 3);
        assert_eq!(
            decide(Some(&fail), &[]),
            (Outcome::Fail, Some(C::Unknown), 3)
        );
        let timeout = out(Outcome::Fail, Some(C::Timeout), 124);
        assert_eq!(
            decide(Some(&timeout), &[]),
            (Outcome::Fail, Some(C::Timeout), 124)
        );
    }

    #[test]
    fn imported_oids_are_distinct_from_registration_oids() {
        let d = [9u8; 32];
        let a = imported_oid(1_770_647_400_000, &d, 0);
        let b = imported_oid(1_770_647_400_000, &d, 1);
        assert_ne!(a, b);
        assert_ne!(a, mint(1_770_647_400_000, &d));
        assert!(crate::oids::is_oid(&a));
    }

    #[test]
    fn statement_digest_of_event_matches_the_statement() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[5; 32]);
        let st = Statement::sign(names::VERDICT_IMPORTED, b"{}".to_vec(), &key);
        let event = Event {
            format: crate::event::EVENT_FORMAT,
            seq: 3,
            recorded_at_ms: 1,
            prev_hash: [0; 32],
            kind: st.kind.clone(),
            author: st.author,
            payload: st.payload.clone(),
            signature: st.signature,
        };
        assert_eq!(statement_digest_of(&event), st.digest());
    }
}

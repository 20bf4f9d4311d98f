//! The verdict engine: a task contract plus its artifacts in, an
//! `scc.verdict.v1` out. Fail closed and deterministic; see `docs/VERIFIER.md`
//! for every rule, its seed section and the reason-code priority.

use crate::catalogue::ReasonCode;
use crate::classify::classify;
use crate::diff::{self, ChangeKind};
use crate::execution::{ExecutionRecord, ExecutionStatus, is_execution_record_name};
use crate::harness::{self, RunReport};
use crate::scope::{Scope, ScopeDecision, normalize_path};
use crate::submit::{Submission, SubmitStatus};
use crate::task::TaskContract;
use crate::verdict::{Finding, Links, SEED_CHECKS, Timestamps, Verdict};
use crate::{EvidenceType, VerifierError};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// Where the engine reads artifacts from. Names are relative `/`-separated
/// paths such as `patch.diff` or `evidence/pre_state.json`.
pub trait ArtifactSource {
    /// Every artifact name, in any order.
    fn list(&self) -> Result<Vec<String>, VerifierError>;
    /// The bytes of one artifact; `Ok(None)` when it does not exist.
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, VerifierError>;
}

/// Artifacts held in memory (the ledger runs the engine on stored blobs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryArtifacts {
    pub blobs: BTreeMap<String, Vec<u8>>,
}

impl MemoryArtifacts {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) one artifact; returns `self` for chaining.
    #[must_use]
    pub fn with(mut self, name: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.blobs.insert(name.to_owned(), bytes.into());
        self
    }
}

impl ArtifactSource for MemoryArtifacts {
    fn list(&self) -> Result<Vec<String>, VerifierError> {
        Ok(self.blobs.keys().cloned().collect())
    }
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, VerifierError> {
        Ok(self.blobs.get(name).cloned())
    }
}

/// Largest artifact [`DirArtifacts`] reads (the engine holds artifacts in memory).
pub const MAX_ARTIFACT_BYTES: u64 = 256 * 1024 * 1024;

/// Artifacts in a directory. Listing walks it recursively; symlinked
/// directories are not followed (no cycles), and a symlinked file whose target
/// lies outside the root is refused ([`VerifierError::InvalidArtifactName`]).
#[derive(Debug, Clone)]
pub struct DirArtifacts {
    root: PathBuf,
}

impl DirArtifacts {
    /// Opens `root`; [`VerifierError::ArtifactsDirMissing`] if it is not a directory.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, VerifierError> {
        let root = root.into();
        if !root.is_dir() {
            return Err(VerifierError::ArtifactsDirMissing { path: root });
        }
        Ok(Self { root })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn walk(&self, dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<(), VerifierError> {
        let unreadable = |source| VerifierError::ArtifactUnreadable {
            name: if prefix.is_empty() {
                ".".into()
            } else {
                prefix.to_owned()
            },
            source,
        };
        for entry in std::fs::read_dir(dir).map_err(unreadable)? {
            let entry = entry.map_err(unreadable)?;
            let file_name = entry.file_name().to_string_lossy().into_owned();
            let name = if prefix.is_empty() {
                file_name
            } else {
                format!("{prefix}/{file_name}")
            };
            let kind = entry.file_type().map_err(unreadable)?;
            if kind.is_dir() {
                self.walk(&entry.path(), &name, out)?;
            } else if kind.is_file() || (kind.is_symlink() && entry.path().is_file()) {
                out.push(name);
            }
        }
        Ok(())
    }
}

impl ArtifactSource for DirArtifacts {
    fn list(&self) -> Result<Vec<String>, VerifierError> {
        let mut out = Vec::new();
        self.walk(&self.root, "", &mut out)?;
        out.sort();
        Ok(out)
    }

    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, VerifierError> {
        let Some(normal) = normalize_path(name).filter(|n| n == name) else {
            return Err(VerifierError::InvalidArtifactName {
                name: name.to_owned(),
            });
        };
        let path = self.root.join(normal);
        // A symlink may point anywhere; only targets inside the root are artifacts.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            let inside = match (path.canonicalize(), self.root.canonicalize()) {
                (Ok(target), Ok(root)) => target.starts_with(root),
                _ => false,
            };
            if !inside {
                return Err(VerifierError::InvalidArtifactName {
                    name: name.to_owned(),
                });
            }
        }
        if let Ok(meta) = std::fs::metadata(&path)
            && meta.len() > MAX_ARTIFACT_BYTES
        {
            return Err(VerifierError::ArtifactTooLarge {
                name: name.to_owned(),
                size: meta.len(),
                limit: MAX_ARTIFACT_BYTES,
            });
        }
        match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(VerifierError::ArtifactUnreadable {
                name: name.to_owned(),
                source,
            }),
        }
    }
}

/// Check names the engine sets, besides the four seed checks.
pub const ENGINE_CHECKS: [&str; 8] = [
    "submission_done",
    "patch_diff_valid",
    "diff_matches_submit",
    "selftest_log_valid",
    "report_md_valid",
    "execution_records_valid",
    "harness_report_valid",
    "acceptance",
];

fn f(
    check: &str,
    rule: &str,
    code: ReasonCode,
    file: &str,
    line: Option<u32>,
    message: impl Into<String>,
) -> Finding {
    Finding {
        check: check.to_owned(),
        rule: rule.to_owned(),
        reason_code: code,
        file: file.to_owned(),
        line,
        message: message.into(),
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// Evaluates `contract` against `artifacts` at `evaluated_at`.
///
/// Never panics and never returns PASS unless at least one check ran and all
/// checks passed with no finding. Errors from the source and panics inside a
/// rule become FAIL findings (`VERIFIER_ERROR`, `PERMISSION_DENIED`). The same
/// inputs and `evaluated_at` give a byte-identical
/// [`Verdict::to_canonical_json`].
pub fn evaluate(
    contract: &TaskContract,
    artifacts: &dyn ArtifactSource,
    evaluated_at: time::OffsetDateTime,
) -> Verdict {
    let timestamps = Timestamps {
        submitted_at: None,
        evaluated_at: rfc3339(evaluated_at),
    };
    let task_id = contract.task_id.to_string();
    let loaded = catch_unwind(AssertUnwindSafe(|| load(artifacts)));
    let (store, mut findings) = match loaded {
        Ok(pair) => pair,
        Err(payload) => {
            let finding = f(
                "evidence_present",
                "engine.panic",
                ReasonCode::VerifierError,
                "",
                None,
                format!(
                    "panic while reading artifacts: {}",
                    panic_message(&*payload)
                ),
            );
            return Verdict::from_checks(
                task_id,
                BTreeMap::new(),
                vec![finding],
                timestamps,
                Links::default(),
                BTreeMap::new(),
            );
        }
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| run_rules(contract, &store)));
    let (checks, rule_findings, links) = match outcome {
        Ok(result) => result,
        Err(payload) => {
            let finding = f(
                "verifier",
                "engine.panic",
                ReasonCode::VerifierError,
                "",
                None,
                format!("panic in the verdict engine: {}", panic_message(&*payload)),
            );
            (BTreeMap::new(), vec![finding], Links::default())
        }
    };
    findings.extend(rule_findings);
    let digests = store
        .blobs
        .iter()
        .map(|(name, bytes)| (name.clone(), crate::sha256_hex(bytes)))
        .collect();
    let mut verdict = Verdict::from_checks(task_id, checks, findings, timestamps, links, digests);
    refine_fail_class(&mut verdict, &store);
    verdict
}

/// For `CI_FAILED`, the fail classifier over the test logs picks the
/// seed 000 `fail_class` (timeout, lint_error, ...) when it finds one.
fn refine_fail_class(verdict: &mut Verdict, store: &MemoryArtifacts) {
    if verdict.reason_code != Some(ReasonCode::CiFailed) {
        return;
    }
    let texts: Vec<(String, String)> = store
        .blobs
        .iter()
        .filter(|(n, _)| n.ends_with(".log") || n.ends_with("stderr") || n.ends_with("stdout"))
        .map(|(n, b)| (n.clone(), String::from_utf8_lossy(b).into_owned()))
        .collect();
    let logs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    if let Some(class) = classify(&logs, Some(1)).fail_class {
        verdict.fail_class = Some(class);
    }
}

/// Reads every listed artifact into memory. Source errors become findings.
fn load(source: &dyn ArtifactSource) -> (MemoryArtifacts, Vec<Finding>) {
    let mut findings = Vec::new();
    let mut store = MemoryArtifacts::new();
    let names = match source.list() {
        Ok(names) => names,
        Err(e) => {
            findings.push(source_error("evidence_present", "", &e));
            return (store, findings);
        }
    };
    for name in names {
        match source.read(&name) {
            Ok(Some(bytes)) => {
                store.blobs.insert(name, bytes);
            }
            Ok(None) => findings.push(f(
                "evidence_present",
                "engine.artifact_vanished",
                ReasonCode::VerifierError,
                &name,
                None,
                "listed but not readable (vanished during verification)",
            )),
            Err(e) => findings.push(source_error("evidence_present", &name, &e)),
        }
    }
    (store, findings)
}

fn source_error(check: &str, name: &str, e: &VerifierError) -> Finding {
    let code = match e {
        VerifierError::ArtifactUnreadable { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            ReasonCode::PermissionDenied
        }
        VerifierError::ArtifactsDirMissing { .. } => ReasonCode::EvidenceMissing,
        _ => ReasonCode::VerifierError,
    };
    f(
        check,
        "engine.artifact_unreadable",
        code,
        name,
        None,
        e.to_string(),
    )
}

/// Everything the rule groups share.
struct Ctx<'a> {
    contract: &'a TaskContract,
    scope: Option<Scope>,
    store: &'a MemoryArtifacts,
    names: Vec<String>,
    submission: Option<Submission>,
    patch: Option<(String, diff::Patch)>,
    selftest: Option<String>,
}

impl Ctx<'_> {
    fn text(&self, name: &str) -> Option<Result<&str, std::str::Utf8Error>> {
        self.store.blobs.get(name).map(|b| std::str::from_utf8(b))
    }

    /// Resolves a path written in `submit.json` to an artifact name: exact
    /// match first, then the longest suffix of its components that is a name
    /// (`artifacts/scc_tasks/T/report.md` → `report.md`).
    fn resolve_file(&self, path: &str) -> Option<String> {
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        (0..parts.len())
            .map(|i| parts[i..].join("/"))
            .find(|cand| self.store.blobs.contains_key(cand))
    }

    fn resolve_dir(&self, path: &str) -> bool {
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.is_empty() {
            return !self.names.is_empty();
        }
        (0..parts.len()).any(|i| {
            let prefix = format!("{}/", parts[i..].join("/"));
            self.names.iter().any(|n| n.starts_with(&prefix))
        })
    }
}

type RuleOutput = (Vec<&'static str>, Vec<Finding>);

fn guarded(
    name: &'static str,
    checks: &[&'static str],
    findings: &mut Vec<Finding>,
    ran: &mut BTreeSet<&'static str>,
    rule: impl FnOnce() -> RuleOutput,
) {
    let rule = || {
        #[cfg(test)]
        tests::PANIC_IN.with(|p| {
            if p.get() == Some(name) {
                panic!("injected panic in {name}");
            }
        });
        rule()
    };
    match catch_unwind(AssertUnwindSafe(rule)) {
        Ok((done, fs)) => {
            ran.extend(done);
            findings.extend(fs);
        }
        Err(payload) => {
            for check in checks {
                findings.push(f(
                    check,
                    "engine.panic",
                    ReasonCode::VerifierError,
                    "",
                    None,
                    format!("rule group {name} panicked: {}", panic_message(&*payload)),
                ));
            }
        }
    }
}

fn run_rules(
    contract: &TaskContract,
    store: &MemoryArtifacts,
) -> (BTreeMap<String, bool>, Vec<Finding>, Links) {
    let mut findings = Vec::new();
    let mut ran: BTreeSet<&'static str> = BTreeSet::new();
    let scope = match contract.scope() {
        Ok(s) => Some(s),
        Err(vs) => {
            for v in vs {
                findings.push(f(
                    "scope_valid",
                    &v.rule,
                    ReasonCode::PreflightFailed,
                    "task.json",
                    None,
                    format!("{} {}", v.path, v.message),
                ));
            }
            None
        }
    };
    let mut ctx = Ctx {
        contract,
        scope,
        store,
        names: store.blobs.keys().cloned().collect(),
        submission: None,
        patch: None,
        selftest: None,
    };

    guarded(
        "evidence_present",
        &["evidence_present"],
        &mut findings,
        &mut ran,
        || evidence_present(&ctx),
    );
    // Decoding steps fill the context for the later groups.
    let (submission, fs) = catch_unwind(AssertUnwindSafe(|| decode_submission(&ctx)))
        .unwrap_or_else(|p| {
            (
                None,
                vec![f(
                    "schema_valid",
                    "engine.panic",
                    ReasonCode::VerifierError,
                    "submit.json",
                    None,
                    panic_message(&*p),
                )],
            )
        });
    ctx.submission = submission;
    findings.extend(fs);
    let (patch, fs) = catch_unwind(AssertUnwindSafe(|| decode_patch(&ctx))).unwrap_or_else(|p| {
        (
            None,
            vec![f(
                "patch_diff_valid",
                "engine.panic",
                ReasonCode::VerifierError,
                "patch.diff",
                None,
                panic_message(&*p),
            )],
        )
    });
    ctx.patch = patch;
    findings.extend(fs);
    ctx.selftest = match ctx.text("selftest.log") {
        Some(Ok(t)) => Some(t.to_owned()),
        Some(Err(e)) => {
            findings.push(f(
                "selftest_log_valid",
                "evidence.selftest_log.utf8",
                ReasonCode::SchemaViolation,
                "selftest.log",
                None,
                format!("not UTF-8: {e}"),
            ));
            None
        }
        None => None,
    };
    if ctx.submission.is_some() {
        ran.insert("schema_valid");
    }
    if ctx.patch.is_some() {
        ran.insert("patch_diff_valid");
    }

    guarded(
        "submission",
        &["schema_valid", "submission_done", "evidence_present"],
        &mut findings,
        &mut ran,
        || submission_rules(&ctx),
    );
    guarded("scope", &["scope_valid"], &mut findings, &mut ran, || {
        scope_rules(&ctx)
    });
    guarded(
        "diff_matches_submit",
        &["diff_matches_submit"],
        &mut findings,
        &mut ran,
        || diff_matches_submit(&ctx),
    );
    guarded(
        "selftest_log",
        &["selftest_log_valid", "tests_passed"],
        &mut findings,
        &mut ran,
        || selftest_rules(&ctx),
    );
    guarded(
        "report_md",
        &["report_md_valid"],
        &mut findings,
        &mut ran,
        || report_md_rules(&ctx),
    );
    guarded(
        "execution_records",
        &["execution_records_valid"],
        &mut findings,
        &mut ran,
        || execution_rules(&ctx),
    );
    guarded(
        "harness",
        &["harness_report_valid"],
        &mut findings,
        &mut ran,
        || harness_rules(&ctx),
    );

    let mut checks: BTreeMap<String, bool> = ran.iter().map(|c| ((*c).to_owned(), true)).collect();
    for finding in &findings {
        checks.insert(finding.check.clone(), false);
    }
    // A seed check that could not run is failed, with the reason of what stopped it.
    let blocking = findings
        .iter()
        .map(|x| x.reason_code)
        .min()
        .unwrap_or(ReasonCode::VerifierError);
    for seed in SEED_CHECKS {
        if !checks.contains_key(seed) {
            findings.push(f(
                seed,
                "engine.not_evaluated",
                blocking,
                "",
                None,
                format!("{seed} could not be evaluated because its inputs are missing or invalid"),
            ));
            checks.insert(seed.to_owned(), false);
        }
    }
    // Acceptance: every required check was evaluated by this engine (no check, no PASS).
    for required in &contract.acceptance.required_checks {
        if !checks.contains_key(required) {
            findings.push(f(
                "acceptance",
                "acceptance.required_check_evaluated",
                ReasonCode::PreflightFailed,
                "task.json",
                None,
                format!("required check {required:?} is not one this verifier evaluates"),
            ));
        }
    }
    if !contract.acceptance.required_checks.is_empty() {
        checks.entry("acceptance".into()).or_insert(true);
    }
    let links = links(&ctx);
    (checks, findings, links)
}

fn links(ctx: &Ctx<'_>) -> Links {
    let find = |name: &str| ctx.store.blobs.contains_key(name).then(|| name.to_owned());
    match &ctx.submission {
        Some(s) => Links {
            submit_json: Some(s.artifacts.submit_json.clone()),
            report_md: Some(s.artifacts.report_md.clone()),
            selftest_log: Some(s.artifacts.selftest_log.clone()),
            patch_diff: Some(s.artifacts.patch_diff.clone()),
            evidence_dir: Some(s.artifacts.evidence_dir.clone()),
        },
        None => Links {
            submit_json: find("submit.json"),
            report_md: find("report.md"),
            selftest_log: find("selftest.log"),
            patch_diff: find("patch.diff").or_else(|| find("evidence/patch.diff")),
            evidence_dir: ctx
                .names
                .iter()
                .any(|n| n.starts_with("evidence/"))
                .then(|| "evidence/".to_owned()),
        },
    }
}

/// Seed 000 §8.2.4 §2 and §4: the standard evidence files are present, plus
/// every `acceptance.required_evidence` type.
fn evidence_present(ctx: &Ctx<'_>) -> RuleOutput {
    const CHECK: &str = "evidence_present";
    let mut out = Vec::new();
    for name in ["submit.json", "selftest.log", "report.md"] {
        if !ctx.store.blobs.contains_key(name) {
            out.push(f(
                CHECK,
                &format!("evidence.{}.present", name.replace('.', "_")),
                ReasonCode::EvidenceMissing,
                name,
                None,
                format!("{name} MUST be present"),
            ));
        }
    }
    if !ctx.store.blobs.contains_key("patch.diff")
        && !ctx.store.blobs.contains_key("evidence/patch.diff")
    {
        out.push(f(
            CHECK,
            "evidence.patch_diff.present",
            ReasonCode::EvidenceMissing,
            "patch.diff",
            None,
            "patch.diff MUST be present (at patch.diff or evidence/patch.diff)",
        ));
    }
    let mut required: Vec<EvidenceType> = ctx.contract.acceptance.required_evidence.clone();
    required.sort();
    required.dedup();
    for kind in required {
        if !ctx.names.iter().any(|n| kind.matches_artifact(n)) {
            out.push(f(
                CHECK,
                "acceptance.required_evidence",
                ReasonCode::EvidenceMissing,
                kind.as_str(),
                None,
                format!("the contract requires evidence of type {kind}, none found"),
            ));
        }
    }
    for name in &ctx.names {
        let file = name.rsplit('/').next().unwrap_or(name);
        if (file == "pre_state.json" || file == "post_state.json")
            && let Some(bytes) = ctx.store.blobs.get(name)
            && !serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v.is_object())
        {
            out.push(f(
                CHECK,
                "evidence.state_json.parse",
                ReasonCode::SchemaViolation,
                name,
                None,
                format!("{file} must be a JSON object capturing the state"),
            ));
        }
        if (name.starts_with("screenshots/") || name.contains("/screenshots/"))
            && !EvidenceType::Screenshot.matches_artifact(name)
        {
            out.push(f(
                CHECK,
                "evidence.screenshots.images_only",
                ReasonCode::PolicyViolation,
                name,
                None,
                "screenshots/ MUST contain only images",
            ));
        }
    }
    (vec![CHECK], out)
}

fn decode_submission(ctx: &Ctx<'_>) -> (Option<Submission>, Vec<Finding>) {
    let Some(bytes) = ctx.store.blobs.get("submit.json") else {
        return (None, Vec::new());
    };
    match Submission::parse(bytes) {
        Ok(s) => (Some(s), Vec::new()),
        Err(vs) => (
            None,
            vs.into_iter()
                .map(|v| {
                    let message = if v.path.is_empty() {
                        v.message
                    } else {
                        format!("{}: {}", v.path, v.message)
                    };
                    f(
                        "schema_valid",
                        &v.rule,
                        ReasonCode::SchemaViolation,
                        "submit.json",
                        v.line,
                        message,
                    )
                })
                .collect(),
        ),
    }
}

fn decode_patch(ctx: &Ctx<'_>) -> (Option<(String, diff::Patch)>, Vec<Finding>) {
    const CHECK: &str = "patch_diff_valid";
    let mut out = Vec::new();
    let root = ctx.store.blobs.get("patch.diff");
    let copy = ctx.store.blobs.get("evidence/patch.diff");
    if let (Some(a), Some(b)) = (root, copy)
        && a != b
    {
        out.push(f(
            CHECK,
            "evidence.patch_diff.copies_identical",
            ReasonCode::EvidenceTampered,
            "evidence/patch.diff",
            None,
            "patch.diff and evidence/patch.diff differ",
        ));
    }
    let (name, bytes) = match (root, copy) {
        (Some(b), _) => ("patch.diff", b),
        (None, Some(b)) => ("evidence/patch.diff", b),
        (None, None) => return (None, out),
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            out.push(f(
                CHECK,
                "evidence.patch_diff.parse",
                ReasonCode::SchemaViolation,
                name,
                None,
                format!("not UTF-8 text: {e}"),
            ));
            return (None, out);
        }
    };
    match diff::parse(text) {
        Ok(p) => (Some((name.to_owned(), p)), out),
        Err(e) => {
            out.push(f(
                CHECK,
                "evidence.patch_diff.parse",
                ReasonCode::SchemaViolation,
                name,
                Some(e.line),
                format!("not a valid unified diff: {}", e.message),
            ));
            (None, out)
        }
    }
}

/// Seed 000 §2 rules that need the contract or the artifacts.
fn submission_rules(ctx: &Ctx<'_>) -> RuleOutput {
    let Some(s) = &ctx.submission else {
        return (vec![], vec![]);
    };
    let mut out = Vec::new();
    if s.task_id != ctx.contract.task_id.to_string()
        && uuid::Uuid::try_parse(&s.task_id).ok() != Some(ctx.contract.task_id)
    {
        out.push(f(
            "schema_valid",
            "submit.task_id_matches",
            ReasonCode::SchemaViolation,
            "submit.json",
            None,
            format!(
                "/task_id {:?} does not match the contract's {}",
                s.task_id, ctx.contract.task_id
            ),
        ));
    }
    for (field, path, is_dir) in s.artifacts.entries() {
        let exists = if is_dir {
            ctx.resolve_dir(path)
        } else {
            ctx.resolve_file(path).is_some()
        };
        if !exists {
            out.push(f(
                "evidence_present",
                "submit.artifacts_exist",
                ReasonCode::EvidenceMissing,
                "submit.json",
                None,
                format!("/artifacts/{field} {path:?} does not exist in the artifacts"),
            ));
        }
    }
    match s.status {
        SubmitStatus::Done => {}
        SubmitStatus::NeedInput => {
            let code = s
                .reported_reason()
                .unwrap_or(ReasonCode::NeedsClarification);
            out.push(f(
                "submission_done",
                "submit.status_done",
                code,
                "submit.json",
                None,
                format!("status NEED_INPUT: {}", s.needs_input.join("; ")),
            ));
        }
        SubmitStatus::Failed => {
            let code = s.reported_reason().unwrap_or(if s.tests.passed {
                ReasonCode::ExecutorError
            } else {
                ReasonCode::CiFailed
            });
            out.push(f(
                "submission_done",
                "submit.status_done",
                code,
                "submit.json",
                None,
                format!(
                    "status FAILED (reason_code {}, exit_code {})",
                    s.reason_code.as_deref().unwrap_or("none"),
                    s.exit_code
                ),
            ));
        }
    }
    (vec!["submission_done"], out)
}

fn scope_message(path: &str, decision: &ScopeDecision) -> String {
    match decision {
        ScopeDecision::Forbidden { pin } => format!("{path} matches forbidden pin {pin:?}"),
        ScopeDecision::NotAllowed => format!("{path} is outside pins.allowed_paths"),
        ScopeDecision::Escapes => format!("{path} is absolute or escapes the repository with `..`"),
        ScopeDecision::Allowed { pin } => format!("{path} allowed by {pin:?}"),
        ScopeDecision::VerifierOwned => format!(
            "{path} is under docs/REPORT/**, which is verifier-owned (seed 001): an executor must not write it, whatever the pins allow"
        ),
    }
}

/// Seed 000 §2 and §4: every changed/new path and every path the diff
/// touches is within `pins.allowed_paths` and outside `pins.forbidden_paths`.
fn scope_rules(ctx: &Ctx<'_>) -> RuleOutput {
    const CHECK: &str = "scope_valid";
    let Some(scope) = &ctx.scope else {
        return (vec![], vec![]);
    };
    if ctx.submission.is_none() && ctx.patch.is_none() {
        return (vec![], vec![]);
    }
    let mut out = Vec::new();
    if let Some(s) = &ctx.submission {
        for (field, list) in [
            ("changed_files", &s.changed_files),
            ("new_files", &s.new_files),
        ] {
            for (i, path) in list.iter().enumerate() {
                let decision = scope.decide(path);
                if !decision.is_allowed() {
                    out.push(f(
                        CHECK,
                        "submit.paths_within_pins",
                        ReasonCode::ScopeConflict,
                        "submit.json",
                        None,
                        format!("/{field}/{i}: {}", scope_message(path, &decision)),
                    ));
                }
            }
        }
    }
    if let Some((name, patch)) = &ctx.patch {
        for file in &patch.files {
            // The source of a copy is only read: outside the pins it is an
            // input that was not pinned, not a disallowed write.
            if file.kind == ChangeKind::Copied
                && let Some(source) = &file.old_path
            {
                let decision = scope.decide(source);
                if !decision.is_allowed() {
                    out.push(f(
                        CHECK,
                        "evidence.patch_diff.sources_pinned",
                        ReasonCode::PinsInsufficient,
                        name,
                        Some(file.line),
                        format!("copy source {}", scope_message(source, &decision)),
                    ));
                }
            }
            let written: BTreeSet<&String> = if file.kind == ChangeKind::Copied {
                file.new_path.iter().collect()
            } else {
                file.old_path.iter().chain(file.new_path.iter()).collect()
            };
            for path in written {
                let decision = scope.decide(path);
                if !decision.is_allowed() {
                    out.push(f(
                        CHECK,
                        "evidence.patch_diff.within_pins",
                        ReasonCode::ScopeConflict,
                        name,
                        Some(file.line),
                        scope_message(path, &decision),
                    ));
                }
            }
        }
    }
    (vec![CHECK], out)
}

/// Seed 000 §4 `submit.json`: `changed_files`/`new_files` match the diff.
fn diff_matches_submit(ctx: &Ctx<'_>) -> RuleOutput {
    const CHECK: &str = "diff_matches_submit";
    let (Some(s), Some((name, patch))) = (&ctx.submission, &ctx.patch) else {
        return (vec![], vec![]);
    };
    let mut out = Vec::new();
    let norm = |p: &String| normalize_path(p).unwrap_or_else(|| p.clone());
    let declared: BTreeSet<String> = s
        .changed_files
        .iter()
        .chain(&s.new_files)
        .map(norm)
        .collect();
    let new_files: BTreeSet<String> = s.new_files.iter().map(norm).collect();
    let written = patch.written_paths();
    for file in &patch.files {
        for path in [&file.old_path, &file.new_path].into_iter().flatten() {
            if written.contains(path) && !declared.contains(path) {
                out.push(f(
                    CHECK,
                    "submit.files_match_diff",
                    ReasonCode::SchemaViolation,
                    name,
                    Some(file.line),
                    format!(
                        "{path} is changed by the diff but not listed in changed_files/new_files"
                    ),
                ));
            }
        }
        if file.kind == ChangeKind::Added
            && let Some(path) = &file.new_path
            && declared.contains(path)
            && !new_files.contains(path)
        {
            out.push(f(
                CHECK,
                "submit.new_files_match_diff",
                ReasonCode::SchemaViolation,
                name,
                Some(file.line),
                format!("{path} is a new file in the diff but not listed in new_files"),
            ));
        }
    }
    for path in &declared {
        if !written.contains(path) {
            out.push(f(
                CHECK,
                "submit.files_match_diff",
                ReasonCode::SchemaViolation,
                "submit.json",
                None,
                format!(
                    "{path} is listed in changed_files/new_files but the diff does not touch it"
                ),
            ));
        }
    }
    out.dedup();
    (vec![CHECK], out)
}

/// Parses the terminal `EXIT_CODE=<int>` line; returns (line number, code).
fn terminal_exit_code(text: &str) -> Result<(u32, i64), (u32, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let Some((index, last)) = lines
        .iter()
        .enumerate()
        .rev()
        .find(|(_, l)| !l.trim().is_empty())
    else {
        return Err((0, "selftest.log is empty".into()));
    };
    let n = u32::try_from(index + 1).unwrap_or(u32::MAX);
    match last
        .trim()
        .strip_prefix("EXIT_CODE=")
        .map(str::parse::<i64>)
    {
        Some(Ok(code)) => Ok((n, code)),
        _ => Err((
            n,
            format!(
                "last line must be `EXIT_CODE=<int>`, found {:?}",
                last.chars().take(80).collect::<String>()
            ),
        )),
    }
}

/// Seed 000 §4 `selftest.log` and the `tests_passed` check.
fn selftest_rules(ctx: &Ctx<'_>) -> RuleOutput {
    const FILE: &str = "selftest.log";
    let mut out = Vec::new();
    let mut done = Vec::new();
    let exit = ctx.selftest.as_deref().map(terminal_exit_code);
    if let Some(text) = &ctx.selftest {
        done.push("selftest_log_valid");
        if let Some(Err((line, message))) = &exit {
            out.push(f(
                "selftest_log_valid",
                "evidence.selftest_log.exit_code_line",
                ReasonCode::EvidenceMissing,
                FILE,
                Some(*line),
                message.clone(),
            ));
        }
        let mut commands: Vec<&String> = ctx
            .contract
            .acceptance
            .required_test_commands
            .iter()
            .collect();
        if let Some(s) = &ctx.submission {
            commands.extend(&s.tests.commands);
        }
        commands.sort();
        commands.dedup();
        for command in commands {
            if !text.contains(command.as_str()) {
                out.push(f(
                    "selftest_log_valid",
                    "evidence.selftest_log.commands",
                    ReasonCode::EvidenceMissing,
                    FILE,
                    None,
                    format!("the log does not name the command {command:?}"),
                ));
            }
        }
    }
    if let Some(s) = &ctx.submission {
        done.push("tests_passed");
        const CHECK: &str = "tests_passed";
        if !s.tests.passed {
            out.push(f(
                CHECK,
                "tests.passed",
                ReasonCode::CiFailed,
                "submit.json",
                None,
                format!("/tests/passed is false: {}", s.tests.summary),
            ));
        }
        if s.exit_code != 0 {
            out.push(f(
                CHECK,
                "tests.exit_code",
                ReasonCode::CiFailed,
                "submit.json",
                None,
                format!("/exit_code is {}", s.exit_code),
            ));
        }
        if s.tests.commands.is_empty() {
            out.push(f(
                CHECK,
                "tests.commands_present",
                ReasonCode::CiFailed,
                "submit.json",
                None,
                "/tests/commands is empty: no check, no PASS",
            ));
        }
        for required in &ctx.contract.acceptance.required_test_commands {
            if !s.tests.commands.iter().any(|c| c == required) {
                out.push(f(
                    CHECK,
                    "acceptance.required_test_commands",
                    ReasonCode::CiFailed,
                    "submit.json",
                    None,
                    format!("required test command {required:?} is not in /tests/commands"),
                ));
            }
        }
        match &exit {
            Some(Ok((line, code))) if *code != 0 => out.push(f(
                CHECK,
                "tests.selftest_exit_code",
                ReasonCode::CiFailed,
                FILE,
                Some(*line),
                format!("EXIT_CODE={code}"),
            )),
            Some(Ok(_)) => {}
            _ => out.push(f(
                CHECK,
                "tests.selftest_exit_code",
                ReasonCode::EvidenceMissing,
                FILE,
                None,
                "no terminal EXIT_CODE in selftest.log: tests cannot be confirmed",
            )),
        }
    }
    (done, out)
}

/// Seed 000 §4 `report.md`: lists goal summary, key decisions, changed/new files.
fn report_md_rules(ctx: &Ctx<'_>) -> RuleOutput {
    const CHECK: &str = "report_md_valid";
    const FILE: &str = "report.md";
    let text = match ctx.text(FILE) {
        None => return (vec![], vec![]),
        Some(Err(e)) => {
            return (
                vec![CHECK],
                vec![f(
                    CHECK,
                    "evidence.report_md.utf8",
                    ReasonCode::SchemaViolation,
                    FILE,
                    None,
                    format!("not UTF-8: {e}"),
                )],
            );
        }
        Some(Ok(t)) => t,
    };
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for (needle, what) in [("goal", "a goal summary"), ("decision", "key decisions")] {
        if !lower.contains(needle) {
            out.push(f(
                CHECK,
                "evidence.report_md.sections",
                ReasonCode::EvidenceMissing,
                FILE,
                None,
                format!("report.md MUST list {what} (no mention of {needle:?})"),
            ));
        }
    }
    if let Some(s) = &ctx.submission {
        for path in s.changed_files.iter().chain(&s.new_files) {
            if !text.contains(path.as_str()) {
                out.push(f(
                    CHECK,
                    "evidence.report_md.files",
                    ReasonCode::EvidenceMissing,
                    FILE,
                    None,
                    format!("report.md does not list the changed/new file {path}"),
                ));
            }
        }
    }
    (vec![CHECK], out)
}

/// Seed 002: every execution record verifies; full outputs match.
fn execution_rules(ctx: &Ctx<'_>) -> RuleOutput {
    const CHECK: &str = "execution_records_valid";
    let records: Vec<&String> = ctx
        .names
        .iter()
        .filter(|n| is_execution_record_name(n))
        .collect();
    if records.is_empty() {
        return (vec![], vec![]);
    }
    let mut out = Vec::new();
    for name in records {
        let Some(bytes) = ctx.store.blobs.get(name.as_str()) else {
            continue;
        };
        let record = match ExecutionRecord::parse(bytes) {
            Ok(r) => r,
            Err(vs) => {
                for v in vs {
                    let code = if v.rule == "execution.evidence_hash" {
                        ReasonCode::EvidenceTampered
                    } else {
                        ReasonCode::SchemaViolation
                    };
                    out.push(f(
                        CHECK,
                        &v.rule,
                        code,
                        name,
                        v.line,
                        format!("{}: {}", v.path, v.message),
                    ));
                }
                continue;
            }
        };
        let dir = name
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| format!("{d}/"));
        for (field, stored, file) in [
            ("stdout", &record.stdout, "stdout.log"),
            ("stderr", &record.stderr, "stderr.log"),
        ] {
            let full_name = format!("{dir}{file}");
            if let Some(full) = ctx.store.blobs.get(&full_name) {
                let full = String::from_utf8_lossy(full);
                if !ExecutionRecord::output_matches_full(stored, &full) {
                    out.push(f(
                        CHECK,
                        "execution.full_output_kept",
                        ReasonCode::EvidenceTampered,
                        &full_name,
                        None,
                        format!("{name} {field} is not the truncation of {full_name}"),
                    ));
                }
            }
        }
        if let Some(command) = ctx.store.blobs.get(&format!("{dir}command.txt"))
            && String::from_utf8_lossy(command).trim_end_matches(['\n', '\r']) != record.raw_command
        {
            out.push(f(
                CHECK,
                "execution.command_matches",
                ReasonCode::EvidenceTampered,
                &format!("{dir}command.txt"),
                None,
                format!("differs from {name} raw_command"),
            ));
        }
        match record.status {
            ExecutionStatus::Success => {}
            ExecutionStatus::Failure => out.push(f(
                CHECK,
                "execution.succeeded",
                ReasonCode::CiFailed,
                name,
                None,
                format!(
                    "{:?} exited with {:?}",
                    record.raw_command, record.exit_code
                ),
            )),
            ExecutionStatus::NoEvidence => out.push(f(
                CHECK,
                "execution.no_evidence",
                ReasonCode::EvidenceMissing,
                name,
                None,
                format!(
                    "execution evidence unavailable: {}",
                    record.stderr.lines().next().unwrap_or_default()
                ),
            )),
        }
    }
    (vec![CHECK], out)
}

/// Seed 003: a harness `report.json`, when present, is fully checked.
fn harness_rules(ctx: &Ctx<'_>) -> RuleOutput {
    const CHECK: &str = "harness_report_valid";
    let Some(bytes) = ctx.store.blobs.get("report.json") else {
        return (vec![], vec![]);
    };
    let mut out = Vec::new();
    match RunReport::parse(bytes) {
        Ok(report) => out.extend(harness::check_run(&report, ctx.store, &ctx.names)),
        Err(vs) => {
            for v in vs {
                let code = match v.rule.as_str() {
                    "harness.freshness" => ReasonCode::EvidenceMissing,
                    "harness.fail_closed" => harness::reason_for_blocker(&v.message),
                    _ => ReasonCode::SchemaViolation,
                };
                out.push(f(
                    CHECK,
                    &v.rule,
                    code,
                    "report.json",
                    v.line,
                    format!("{}: {}", v.path, v.message),
                ));
            }
        }
    }
    (vec![CHECK], out)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// Rule group that panics on purpose (tests of the catch_unwind guard).
        pub(super) static PANIC_IN: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    }

    #[test]
    fn panic_inside_a_rule_fails_closed_with_the_rest_still_judged() {
        let artifacts = MemoryArtifacts::new().with("submit.json", "{}");
        for group in ["scope", "selftest_log", "harness", "evidence_present"] {
            PANIC_IN.with(|p| p.set(Some(group)));
            let v = evaluate(&contract(), &artifacts, time::OffsetDateTime::UNIX_EPOCH);
            PANIC_IN.with(|p| p.set(None));
            assert_eq!(v.verdict, crate::verdict::Outcome::Fail, "{group}");
            assert_eq!(v.reason_code, Some(ReasonCode::VerifierError), "{group}");
            assert!(
                v.findings
                    .iter()
                    .any(|x| x.rule == "engine.panic" && x.message.contains(group)),
                "{group}"
            );
            // Other rules still ran and reported.
            assert!(
                v.findings.iter().any(|x| x.rule == "submit.required"),
                "{group}"
            );
        }
    }

    struct Panicking;
    impl ArtifactSource for Panicking {
        fn list(&self) -> Result<Vec<String>, VerifierError> {
            Ok(vec!["submit.json".into()])
        }
        fn read(&self, _: &str) -> Result<Option<Vec<u8>>, VerifierError> {
            panic!("disk on fire")
        }
    }

    struct Failing;
    impl ArtifactSource for Failing {
        fn list(&self) -> Result<Vec<String>, VerifierError> {
            Ok(vec!["submit.json".into()])
        }
        fn read(&self, name: &str) -> Result<Option<Vec<u8>>, VerifierError> {
            Err(VerifierError::ArtifactUnreadable {
                name: name.into(),
                source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            })
        }
    }

    fn contract() -> TaskContract {
        TaskContract::parse(br#"{"task_id":"72c84e9c-0975-4c1a-b9a5-864c2725dc8a","goal":"g","role":"executor","pins":{"allowed_paths":["src/"],"forbidden_paths":[]}}"#).unwrap()
    }

    #[test]
    fn panic_in_source_fails_closed() {
        let v = evaluate(&contract(), &Panicking, time::OffsetDateTime::UNIX_EPOCH);
        assert_eq!(v.verdict, crate::verdict::Outcome::Fail);
        assert_eq!(v.reason_code, Some(ReasonCode::VerifierError));
    }

    #[test]
    fn unreadable_is_permission_denied() {
        let v = evaluate(&contract(), &Failing, time::OffsetDateTime::UNIX_EPOCH);
        assert_eq!(v.verdict, crate::verdict::Outcome::Fail);
        assert!(
            v.findings
                .iter()
                .any(|x| x.reason_code == ReasonCode::PermissionDenied)
        );
    }

    #[test]
    fn empty_artifacts_fail_with_evidence_missing() {
        let v = evaluate(
            &contract(),
            &MemoryArtifacts::new(),
            time::OffsetDateTime::UNIX_EPOCH,
        );
        assert_eq!(v.reason_code, Some(ReasonCode::EvidenceMissing));
        for seed in SEED_CHECKS {
            assert_eq!(v.checks.get(seed), Some(&false), "{seed}");
        }
        assert_eq!(v.timestamps.evaluated_at, "1970-01-01T00:00:00Z");
    }

    #[test]
    fn symlink_out_of_root_fails_closed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inside.txt"), "i").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            dir.path().join("submit.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(dir.path().join("inside.txt"), dir.path().join("alias.txt"))
            .unwrap();
        let source = DirArtifacts::open(dir.path()).unwrap();
        assert!(matches!(
            source.read("submit.json"),
            Err(VerifierError::InvalidArtifactName { .. })
        ));
        assert_eq!(source.read("alias.txt").unwrap(), Some(b"i".to_vec()));
        let v = evaluate(&contract(), &source, time::OffsetDateTime::UNIX_EPOCH);
        assert_eq!(v.reason_code, Some(ReasonCode::VerifierError));
        assert!(
            v.findings
                .iter()
                .any(|x| x.rule == "engine.artifact_unreadable" && x.file == "submit.json")
        );
    }

    #[test]
    fn dir_read_refuses_escaping_names() {
        let dir = tempfile::tempdir().unwrap();
        let source = DirArtifacts::open(dir.path()).unwrap();
        assert!(matches!(
            source.read("../etc/passwd"),
            Err(VerifierError::InvalidArtifactName { .. })
        ));
        assert!(matches!(
            DirArtifacts::open(dir.path().join("nope")),
            Err(VerifierError::ArtifactsDirMissing { .. })
        ));
    }
}

//! The harness run report (seed 003 "CTO Harness Evidence Interface
//! Contract"): `report.json` required fields, SHA-256 `artifact_digests`,
//! freshness, the normalized event sequence, approval events and fail-closed
//! blockers.

use crate::Violation;
use crate::catalogue::ReasonCode;
use crate::engine::ArtifactSource;
use crate::json::{Reader, parse_rfc3339, parse_value, pointer};
use crate::verdict::Finding;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Seed 003 "Required Artifact Set" (`backend/` is a directory).
pub const REQUIRED_ARTIFACTS: [&str; 7] = [
    "report.json",
    "report.md",
    "events.normalized.jsonl",
    "patch.diff",
    "test.log",
    "trace.jsonl",
    "backend/",
];
/// Seed 003 "Digest Manifest": artifacts that need a SHA-256 digest.
pub const DIGESTED_ARTIFACTS: [&str; 5] = [
    "report.json",
    "events.normalized.jsonl",
    "patch.diff",
    "test.log",
    "trace.jsonl",
];
/// Seed 003 "Required Normalized Events", in order.
pub const EVENT_ORDER: [&str; 10] = [
    "run.started",
    "task.contract.created",
    "plan.updated",
    "approval.requested",
    "approval.granted",
    "approval.denied",
    "patch.applied",
    "git.diff.checked",
    "verification.completed",
    "run.completed",
];
/// Seed 003 "Fail-Closed Semantics": the 12 classes.
pub const FAIL_CLOSED_CLASSES: [&str; 12] = [
    "no diff when a diff is required",
    "disallowed file change",
    "failed tests",
    "missing test command",
    "missing required event",
    "backend reviewer reject",
    "approval denied",
    "timeout",
    "dirty starting tree",
    "dirty ending tree",
    "artifact write failure",
    "provider unavailable",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Pass,
    Fail,
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalStatus {
    NotRequired,
    Requested,
    Granted,
    Denied,
}

/// One verification command and its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationResult {
    pub command: String,
    pub passed: bool,
}

/// `report.json` with the seed 003 required fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunReport {
    pub case_id: String,
    pub run_id: String,
    pub status: RunStatus,
    pub backend: String,
    pub run_started_at: String,
    pub run_finished_at: String,
    pub backend_exit_code: Option<i64>,
    pub artifacts_dir: String,
    pub changed_files: Vec<String>,
    pub allowed_writes_passed: bool,
    pub approval_status: ApprovalStatus,
    pub verification: Vec<VerificationResult>,
    pub blockers: Vec<String>,
    pub artifact_paths: BTreeMap<String, String>,
    pub artifact_digests: BTreeMap<String, String>,
    /// Artifact name → RFC 3339 time it was written or checked.
    pub freshness: BTreeMap<String, String>,
}

fn string_map(
    r: &mut Reader,
    v: &Value,
    path: &str,
    rule: &str,
) -> Option<BTreeMap<String, String>> {
    let obj = r.object(v, path, rule)?;
    let mut out = BTreeMap::new();
    for (k, v) in obj {
        // freshness entries may be {"written_at": t} / {"checked_at": t}
        let s = match v {
            Value::Object(inner) => inner
                .get("written_at")
                .or_else(|| inner.get("checked_at"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            other => other.as_str().map(str::to_owned),
        };
        match s {
            Some(s) => {
                out.insert(k.clone(), s);
            }
            None => r.violate(
                rule,
                pointer(path, k),
                "must be a string (or an object with written_at/checked_at)",
            ),
        }
    }
    Some(out)
}

/// The fail-closed classes evident from the report's own fields.
fn evident_fail_closed(report: &RunReport) -> Vec<(&'static str, ReasonCode)> {
    let mut out = Vec::new();
    if !report.allowed_writes_passed {
        out.push(("disallowed file change", ReasonCode::ScopeConflict));
    }
    if report.verification.iter().any(|v| !v.passed) {
        out.push(("failed tests", ReasonCode::CiFailed));
    }
    if report.verification.is_empty() {
        out.push(("missing test command", ReasonCode::CiFailed));
    }
    if report.approval_status == ApprovalStatus::Denied {
        out.push(("approval denied", ReasonCode::PolicyViolation));
    }
    out
}

/// Which of the 12 fail-closed classes a recorded text names, if any.
/// Matching is on the lower-cased text with `_`, `.` and `-` read as spaces,
/// so `provider_unavailable`, `dirty-starting-tree` and "Backend reviewer
/// rejected the patch" all count.
#[must_use]
pub fn fail_closed_class(text: &str) -> Option<&'static str> {
    let t: String = text
        .to_lowercase()
        .chars()
        .map(|c| if matches!(c, '_' | '.' | '-') { ' ' } else { c })
        .collect();
    let table: [(&str, &[&str]); 12] = [
        (
            "backend reviewer reject",
            &[
                "reviewer reject",
                "review reject",
                "reviewer rejected",
                "review rejected",
                "rejected by reviewer",
                "rejected by the reviewer",
            ],
        ),
        (
            "approval denied",
            &["approval denied", "approval was denied"],
        ),
        (
            "dirty starting tree",
            &[
                "dirty starting tree",
                "dirty start",
                "starting tree dirty",
                "starting tree is dirty",
            ],
        ),
        (
            "dirty ending tree",
            &[
                "dirty ending tree",
                "dirty end",
                "ending tree dirty",
                "ending tree is dirty",
            ],
        ),
        (
            "provider unavailable",
            &[
                "provider unavailable",
                "provider is unavailable",
                "provider down",
            ],
        ),
        (
            "artifact write failure",
            &[
                "artifact write failure",
                "artifact write failed",
                "failed to write artifact",
            ],
        ),
        ("missing required event", &["missing required event"]),
        (
            "missing test command",
            &["missing test command", "no test command"],
        ),
        ("no diff when a diff is required", &["no diff"]),
        (
            "disallowed file change",
            &["disallowed file", "disallowed write", "disallowed change"],
        ),
        ("timeout", &["timeout", "timed out"]),
        (
            "failed tests",
            &[
                "failed tests",
                "tests failed",
                "test failed",
                "failed test",
                "test failure",
            ],
        ),
    ];
    table
        .iter()
        .find(|(_, needles)| needles.iter().any(|n| t.contains(n)))
        .map(|(class, _)| *class)
}

/// Keys whose string values record an outcome (a status, a blocker, a
/// reason): where a fail-closed class is looked for in events, the trace and
/// backend status files. Other keys (names of checks, free text) are not
/// read, so a check called "timeout-guard" is not a timeout.
const OUTCOME_KEYS: [&str; 14] = [
    "status",
    "result",
    "outcome",
    "decision",
    "verdict",
    "review",
    "blocker",
    "blockers",
    "reason",
    "error",
    "fail_class",
    "failure_class",
    "class",
    "failure",
];

/// Every fail-closed class recorded in one JSON value: in [`OUTCOME_KEYS`]
/// values, and an `event`/`type`/`name` that is `approval.denied`.
fn classes_in_json(v: &Value, out: &mut Vec<&'static str>) {
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                let key = k.to_lowercase();
                if OUTCOME_KEYS.contains(&key.as_str()) {
                    let mut texts = Vec::new();
                    collect_strings(val, &mut texts);
                    out.extend(texts.iter().filter_map(|t| fail_closed_class(t)));
                }
                if matches!(key.as_str(), "event" | "type" | "name")
                    && val.as_str() == Some("approval.denied")
                {
                    out.push("approval denied");
                }
                classes_in_json(val, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| classes_in_json(i, out)),
        _ => {}
    }
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        _ => {}
    }
}

/// Seed 003 "Fail-Closed Semantics": a fail-closed class recorded anywhere
/// in the run (blockers, normalized events, trace, backend status) makes it
/// FAIL with that class, whatever `status` claims. One finding per class,
/// naming where it was first recorded.
fn recorded_fail_closed(
    report: &RunReport,
    artifacts: &dyn ArtifactSource,
    names: &[String],
) -> Vec<Finding> {
    let mut seen: Vec<&'static str> = Vec::new();
    let mut out = Vec::new();
    let mut record = |class: &'static str, file: &str, line: Option<u32>, what: String| {
        if !seen.contains(&class) {
            seen.push(class);
            out.push(finding(
                CHECK,
                "harness.fail_closed_recorded",
                reason_for_blocker(class),
                file,
                line,
                format!(
                    "fail-closed class {class:?} recorded in {what}; the run fails closed whatever its status ({:?}) says",
                    report.status
                ),
            ));
        }
    };
    for blocker in &report.blockers {
        if let Some(class) = fail_closed_class(blocker) {
            record(class, "report.json", None, format!("blocker {blocker:?}"));
        }
    }
    let mut files: Vec<&String> = names
        .iter()
        .filter(|n| {
            *n == "events.normalized.jsonl"
                || *n == "trace.jsonl"
                || (n.starts_with("backend/") && (n.ends_with(".json") || n.ends_with(".jsonl")))
        })
        .collect();
    files.sort();
    for name in files {
        let Ok(Some(bytes)) = artifacts.read(name) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let values: Vec<(u32, Value)> = if name.ends_with(".jsonl") {
            text.lines()
                .enumerate()
                .filter_map(|(i, l)| {
                    serde_json::from_str::<Value>(l)
                        .ok()
                        .map(|v| (u32::try_from(i + 1).unwrap_or(u32::MAX), v))
                })
                .collect()
        } else {
            serde_json::from_str::<Value>(&text)
                .ok()
                .map(|v| vec![(1, v)])
                .unwrap_or_default()
        };
        for (line, v) in values {
            let mut classes = Vec::new();
            classes_in_json(&v, &mut classes);
            for class in classes {
                record(class, name, Some(line), format!("{name} line {line}"));
            }
        }
    }
    // A backend status written as plain text (`backend/status`, `status.txt`).
    for name in names
        .iter()
        .filter(|n| n.starts_with("backend/") && n.to_lowercase().contains("status"))
        .filter(|n| !n.ends_with(".json") && !n.ends_with(".jsonl"))
    {
        if let Ok(Some(bytes)) = artifacts.read(name)
            && let Some(class) = fail_closed_class(&String::from_utf8_lossy(&bytes))
        {
            record(class, name, None, format!("backend status {name}"));
        }
    }
    // A "pass" that records a blocker fails closed even when the blocker
    // names no known class.
    if report.status == RunStatus::Pass && !report.blockers.is_empty() && out.is_empty() {
        for blocker in &report.blockers {
            out.push(finding(
                CHECK,
                "harness.fail_closed_recorded",
                reason_for_blocker(blocker),
                "report.json",
                None,
                format!("status pass with a recorded blocker {blocker:?}: fails closed"),
            ));
        }
    }
    out
}

/// Maps a blocker text to the catalogue code of its fail-closed class.
#[must_use]
pub fn reason_for_blocker(blocker: &str) -> ReasonCode {
    let b = blocker.to_lowercase();
    let table: [(&str, ReasonCode); 12] = [
        ("timeout", ReasonCode::TimeoutExceeded),
        ("disallowed", ReasonCode::ScopeConflict),
        ("approval denied", ReasonCode::PolicyViolation),
        ("reviewer reject", ReasonCode::PolicyViolation),
        ("missing required event", ReasonCode::EvidenceMissing),
        ("artifact write", ReasonCode::EvidenceMissing),
        ("no diff", ReasonCode::EvidenceMissing),
        ("dirty", ReasonCode::MergeConflict),
        ("provider unavailable", ReasonCode::ExecutorError),
        ("missing test command", ReasonCode::CiFailed),
        ("failed test", ReasonCode::CiFailed),
        ("test", ReasonCode::CiFailed),
    ];
    table
        .iter()
        .find(|(needle, _)| b.contains(needle))
        .map_or(ReasonCode::CiFailed, |(_, c)| *c)
}

impl RunReport {
    /// Decodes `report.json` and checks the rules that need no other file:
    /// - `harness.json_syntax`, `harness.object`, `harness.required`, `harness.type`;
    /// - `harness.status`, `harness.approval_status` (enums of seed 003);
    /// - `harness.timestamps` (RFC 3339; finished not before started);
    /// - `harness.digest_format` (64 hex characters);
    /// - `harness.freshness` (each entry at or after `run_started_at`);
    /// - `harness.fail_closed` (a fail-closed class evident from the report
    ///   — disallowed write, failed or missing verification, approval denied —
    ///   requires status fail/blocked and a blocker);
    /// - `harness.blocker_recorded` (fail/blocked requires a blocker).
    pub fn parse(bytes: &[u8]) -> Result<RunReport, Vec<Violation>> {
        let value = parse_value("harness", bytes)?;
        let mut r = Reader::new("harness");
        let Some(root) = r.root(&value) else {
            return Err(r.violations);
        };
        const REQ: &str = "harness.required";
        const TYPE: &str = "harness.type";
        let string = |r: &mut Reader, key: &str| {
            r.required(root, "", key, REQ)
                .and_then(|v| r.string(v, &pointer("", key), TYPE))
        };
        let case_id = string(&mut r, "case_id");
        let run_id = string(&mut r, "run_id");
        let backend = string(&mut r, "backend");
        let artifacts_dir = string(&mut r, "artifacts_dir");
        let status = string(&mut r, "status").and_then(|s| match s.as_str() {
            "pass" => Some(RunStatus::Pass),
            "fail" => Some(RunStatus::Fail),
            "blocked" => Some(RunStatus::Blocked),
            other => {
                r.violate(
                    "harness.status",
                    "/status",
                    format!("{other:?} is not pass, fail or blocked"),
                );
                None
            }
        });
        let approval_status = string(&mut r, "approval_status").and_then(|s| match s.as_str() {
            "not-required" => Some(ApprovalStatus::NotRequired),
            "requested" => Some(ApprovalStatus::Requested),
            "granted" => Some(ApprovalStatus::Granted),
            "denied" => Some(ApprovalStatus::Denied),
            other => {
                r.violate(
                    "harness.approval_status",
                    "/approval_status",
                    format!("{other:?} is not not-required, requested, granted or denied"),
                );
                None
            }
        });
        let started = r
            .required(root, "", "run_started_at", REQ)
            .and_then(|v| r.timestamp(v, "/run_started_at", "harness.timestamps"));
        let finished = r
            .required(root, "", "run_finished_at", REQ)
            .and_then(|v| r.timestamp(v, "/run_finished_at", "harness.timestamps"));
        if let (Some(s), Some(f)) = (started, finished)
            && f < s
        {
            r.violate(
                "harness.timestamps",
                "/run_finished_at",
                "run_finished_at is before run_started_at",
            );
        }
        let backend_exit_code =
            r.required(root, "", "backend_exit_code", REQ)
                .and_then(|v| match v {
                    Value::Null => Some(None),
                    v => r.integer(v, "/backend_exit_code", TYPE).map(Some),
                });
        let changed_files = r
            .required(root, "", "changed_files", REQ)
            .and_then(|v| r.string_array(v, "/changed_files", TYPE));
        let allowed_writes_passed = r
            .required(root, "", "allowed_writes_passed", REQ)
            .and_then(|v| r.bool(v, "/allowed_writes_passed", TYPE));
        let verification = r
            .required(root, "", "verification", REQ)
            .and_then(|v| read_verification(&mut r, v));
        let blockers = r
            .required(root, "", "blockers", REQ)
            .and_then(|v| r.string_array(v, "/blockers", TYPE));
        let artifact_paths = r
            .required(root, "", "artifact_paths", REQ)
            .and_then(|v| string_map(&mut r, v, "/artifact_paths", TYPE));
        let artifact_digests = r
            .required(root, "", "artifact_digests", REQ)
            .and_then(|v| string_map(&mut r, v, "/artifact_digests", TYPE));
        let freshness = r
            .required(root, "", "freshness", REQ)
            .and_then(|v| string_map(&mut r, v, "/freshness", TYPE));
        for (name, digest) in artifact_digests.iter().flatten() {
            let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                r.violate(
                    "harness.digest_format",
                    pointer("/artifact_digests", name),
                    format!("{digest:?} is not a SHA-256 hex digest"),
                );
            }
        }
        if let (Some(fresh), Some(started)) = (&freshness, started) {
            for (name, at) in fresh {
                match parse_rfc3339(at) {
                    Some(t) if t >= started => {}
                    Some(_) => r.violate(
                        "harness.freshness",
                        pointer("/freshness", name),
                        format!("{name} was written/checked at {at}, before run_started_at"),
                    ),
                    None => r.violate(
                        "harness.freshness",
                        pointer("/freshness", name),
                        format!("{at:?} is not an RFC 3339 timestamp"),
                    ),
                }
            }
        }
        if !r.violations.is_empty() {
            return Err(r.violations);
        }
        let (
            Some(case_id),
            Some(run_id),
            Some(status),
            Some(backend),
            Some(started_at),
            Some(finished_at),
            Some(backend_exit_code),
            Some(artifacts_dir),
            Some(changed_files),
            Some(allowed_writes_passed),
            Some(approval_status),
            Some(verification),
            Some(blockers),
            Some(artifact_paths),
            Some(artifact_digests),
            Some(freshness),
        ) = (
            case_id,
            run_id,
            status,
            backend,
            root.get("run_started_at").and_then(Value::as_str),
            root.get("run_finished_at").and_then(Value::as_str),
            backend_exit_code,
            artifacts_dir,
            changed_files,
            allowed_writes_passed,
            approval_status,
            verification,
            blockers,
            artifact_paths,
            artifact_digests,
            freshness,
        )
        else {
            return Err(vec![Violation::new(
                "harness.internal",
                "",
                "a field failed to decode without a recorded violation",
            )]);
        };
        let report = RunReport {
            case_id,
            run_id,
            status,
            backend,
            run_started_at: started_at.to_owned(),
            run_finished_at: finished_at.to_owned(),
            backend_exit_code,
            artifacts_dir,
            changed_files,
            allowed_writes_passed,
            approval_status,
            verification,
            blockers,
            artifact_paths,
            artifact_digests,
            freshness,
        };
        let mut violations = Vec::new();
        for (class, _) in evident_fail_closed(&report) {
            if report.status == RunStatus::Pass || report.blockers.is_empty() {
                violations.push(Violation::new("harness.fail_closed", "/status", format!("fail-closed class {class:?} requires status fail/blocked and a recorded blocker")));
            }
        }
        if report.status != RunStatus::Pass && report.blockers.is_empty() {
            violations.push(Violation::new(
                "harness.blocker_recorded",
                "/blockers",
                "a fail/blocked run must record its blocker reason",
            ));
        }
        if violations.is_empty() {
            Ok(report)
        } else {
            Err(violations)
        }
    }
}

fn read_verification(r: &mut Reader, v: &Value) -> Option<Vec<VerificationResult>> {
    let Some(items) = v.as_array() else {
        r.violate(
            "harness.type",
            "/verification",
            "must be an array of {command, passed}",
        );
        return None;
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("/verification/{i}");
        let Some(obj) = r.object(item, &path, "harness.type") else {
            continue;
        };
        let command = r
            .required(obj, &path, "command", "harness.required")
            .and_then(|v| r.string(v, &pointer(&path, "command"), "harness.type"));
        let passed = match (
            obj.get("passed"),
            obj.get("result").or_else(|| obj.get("status")),
        ) {
            (Some(v), _) => r.bool(v, &pointer(&path, "passed"), "harness.type"),
            (None, Some(Value::String(s))) => match s.as_str() {
                "pass" | "passed" => Some(true),
                "fail" | "failed" => Some(false),
                other => {
                    r.violate(
                        "harness.type",
                        pointer(&path, "result"),
                        format!("{other:?} is not pass/fail"),
                    );
                    None
                }
            },
            _ => {
                r.violate(
                    "harness.required",
                    pointer(&path, "passed"),
                    "verification entry needs `passed` (or `result`)",
                );
                None
            }
        };
        if let (Some(command), Some(passed)) = (command, passed) {
            out.push(VerificationResult { command, passed });
        }
    }
    Some(out)
}

fn finding(
    check: &str,
    rule: &str,
    code: ReasonCode,
    file: &str,
    line: Option<u32>,
    message: String,
) -> Finding {
    Finding {
        check: check.to_owned(),
        rule: rule.to_owned(),
        reason_code: code,
        file: file.to_owned(),
        line,
        message,
    }
}

const CHECK: &str = "harness_report_valid";

/// Checks a parsed report against the run's artifacts: the required artifact
/// set (`harness.artifact_set`), digests (`harness.digest_present`,
/// `harness.digest_match`), freshness entries (`harness.freshness_present`),
/// and the event stream ([`check_events`]). A failed run becomes a
/// `harness.run_failed` finding per blocker.
pub fn check_run(
    report: &RunReport,
    artifacts: &dyn ArtifactSource,
    names: &[String],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for required in REQUIRED_ARTIFACTS {
        let present = match required.strip_suffix('/') {
            Some(dir) => names.iter().any(|n| n.starts_with(&format!("{dir}/"))),
            None => names.iter().any(|n| n == required),
        };
        if !present {
            out.push(finding(CHECK, "harness.artifact_set", ReasonCode::EvidenceMissing, required, None, format!("required harness artifact {required} is missing (seed 003 Required Artifact Set)")));
        }
    }
    for required in DIGESTED_ARTIFACTS {
        if !report.artifact_digests.contains_key(required) {
            out.push(finding(
                CHECK,
                "harness.digest_present",
                ReasonCode::EvidenceMissing,
                "report.json",
                None,
                format!("artifact_digests has no entry for {required}"),
            ));
        }
    }
    for (name, digest) in &report.artifact_digests {
        let expected = digest
            .strip_prefix("sha256:")
            .unwrap_or(digest)
            .to_ascii_lowercase();
        if name == "report.json" {
            // A file cannot contain its own digest; an optional sidecar is checked instead.
            if let Ok(Some(sidecar)) = artifacts.read("report.json.sha256") {
                let side = String::from_utf8_lossy(&sidecar)
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if let Ok(Some(bytes)) = artifacts.read("report.json")
                    && crate::sha256_hex(&bytes) != side
                {
                    out.push(finding(
                        CHECK,
                        "harness.digest_match",
                        ReasonCode::EvidenceTampered,
                        "report.json.sha256",
                        None,
                        "report.json does not match its sidecar digest".into(),
                    ));
                }
            }
            continue;
        }
        let resolved = resolve_name(report, name, names);
        match resolved.as_deref().map(|n| (n, artifacts.read(n))) {
            Some((n, Ok(Some(bytes)))) => {
                let actual = crate::sha256_hex(&bytes);
                if actual != expected {
                    out.push(finding(
                        CHECK,
                        "harness.digest_match",
                        ReasonCode::EvidenceTampered,
                        n,
                        None,
                        format!(
                            "artifact_digests[{name}] is {expected} but the file hashes to {actual}"
                        ),
                    ));
                }
            }
            Some((n, Err(e))) => out.push(finding(
                CHECK,
                "harness.digest_match",
                ReasonCode::VerifierError,
                n,
                None,
                format!("cannot read {n}: {e}"),
            )),
            _ => out.push(finding(
                CHECK,
                "harness.digest_match",
                ReasonCode::EvidenceMissing,
                name,
                None,
                format!("artifact_digests names {name}, which is not in the artifacts"),
            )),
        }
    }
    for required in REQUIRED_ARTIFACTS.iter().filter(|a| !a.ends_with('/')) {
        if !report.freshness.contains_key(*required) {
            out.push(finding(
                CHECK,
                "harness.freshness_present",
                ReasonCode::EvidenceMissing,
                "report.json",
                None,
                format!("freshness has no proof for {required}"),
            ));
        }
    }
    match artifacts.read("events.normalized.jsonl") {
        Ok(Some(bytes)) => out.extend(check_events(&String::from_utf8_lossy(&bytes), report)),
        Ok(None) => {}
        Err(e) => out.push(finding(
            CHECK,
            "harness.events",
            ReasonCode::VerifierError,
            "events.normalized.jsonl",
            None,
            format!("unreadable: {e}"),
        )),
    }
    out.extend(recorded_fail_closed(report, artifacts, names));
    if report.status != RunStatus::Pass {
        for blocker in &report.blockers {
            out.push(finding(
                CHECK,
                "harness.run_failed",
                reason_for_blocker(blocker),
                "report.json",
                None,
                format!(
                    "harness run {} is {:?}: blocker {blocker:?}",
                    report.run_id, report.status
                ),
            ));
        }
    }
    out
}

fn resolve_name(report: &RunReport, key: &str, names: &[String]) -> Option<String> {
    if names.iter().any(|n| n == key) {
        return Some(key.to_owned());
    }
    let path = report.artifact_paths.get(key)?;
    let dir = report.artifacts_dir.trim_end_matches('/');
    let relative = path
        .strip_prefix(dir)
        .map(|p| p.trim_start_matches('/'))
        .unwrap_or(path);
    names.iter().find(|n| n.as_str() == relative).cloned()
}

fn event_name(obj: &Map<String, Value>) -> Option<&str> {
    ["event", "type", "name", "kind"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(Value::as_str))
}

/// Checks `events.normalized.jsonl` (seed 003 "Required Normalized Events",
/// "Approval Semantics"):
/// - `harness.events.syntax`: one JSON object per non-empty line with an event name;
/// - `harness.events.required`: `run.started`, `task.contract.created`,
///   `plan.updated`, `git.diff.checked`, `verification.completed`,
///   `run.completed` always; `patch.applied` when files changed; approval
///   events when `approval_status` is not `not-required`;
/// - `harness.events.order`: the first occurrences follow the seed order,
///   and nothing comes before `run.started` or after `run.completed`;
/// - `harness.events.once`: `run.started` and `run.completed` occur once;
/// - `harness.events.status_consistent`: no `run.completed` states a
///   failed or blocked outcome while `report.json` says pass;
/// - `harness.approval.complete`: actor, scope, mutation_mode, timestamp and
///   (for granted) expiry present, expiry after the timestamp;
/// - `harness.approval.self`: no grant/denial by the run's own actor (the
///   `run.started` actor, the requester, the backend or the case).
#[must_use]
pub fn check_events(text: &str, report: &RunReport) -> Vec<Finding> {
    const FILE: &str = "events.normalized.jsonl";
    let mut out = Vec::new();
    let mut events: Vec<(u32, String, Map<String, Value>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => match event_name(&obj) {
                Some(name) => events.push((n, name.to_owned(), obj)),
                None => out.push(finding(
                    CHECK,
                    "harness.events.syntax",
                    ReasonCode::SchemaViolation,
                    FILE,
                    Some(n),
                    "event has no `event` name".into(),
                )),
            },
            _ => out.push(finding(
                CHECK,
                "harness.events.syntax",
                ReasonCode::SchemaViolation,
                FILE,
                Some(n),
                "line is not a JSON object".into(),
            )),
        }
    }
    let mut required: Vec<&str> = vec![
        "run.started",
        "task.contract.created",
        "plan.updated",
        "git.diff.checked",
        "verification.completed",
        "run.completed",
    ];
    if !report.changed_files.is_empty() {
        required.push("patch.applied");
    }
    match report.approval_status {
        ApprovalStatus::NotRequired => {}
        ApprovalStatus::Requested => required.push("approval.requested"),
        ApprovalStatus::Granted => required.extend(["approval.requested", "approval.granted"]),
        ApprovalStatus::Denied => required.extend(["approval.requested", "approval.denied"]),
    }
    for name in &required {
        if !events.iter().any(|(_, e, _)| e == name) {
            out.push(finding(
                CHECK,
                "harness.events.required",
                ReasonCode::EvidenceMissing,
                FILE,
                None,
                format!("required normalized event {name} is missing"),
            ));
        }
    }
    let mut last_rank = 0usize;
    let mut last_name = "";
    let mut seen = std::collections::BTreeSet::new();
    for (n, name, _) in &events {
        let Some(rank) = EVENT_ORDER.iter().position(|e| e == name) else {
            continue;
        };
        if !seen.insert(name.clone()) {
            continue;
        }
        // granted and denied share a slot.
        let rank = if name == "approval.denied" {
            rank - 1
        } else {
            rank
        };
        if rank < last_rank {
            out.push(finding(
                CHECK,
                "harness.events.order",
                ReasonCode::SchemaViolation,
                FILE,
                Some(*n),
                format!("{name} comes after {last_name}, against the seed 003 order"),
            ));
        } else {
            last_rank = rank;
            last_name = EVENT_ORDER.get(rank).copied().unwrap_or_default();
        }
    }
    out.extend(check_run_bounds(&events));
    out.extend(check_completed_status(&events, report));
    let run_actor = events
        .iter()
        .find(|(_, e, _)| e == "run.started")
        .and_then(|(_, _, o)| o.get("actor"))
        .and_then(Value::as_str);
    let requester = events
        .iter()
        .find(|(_, e, _)| e == "approval.requested")
        .and_then(|(_, _, o)| o.get("actor"))
        .and_then(Value::as_str);
    for (n, name, obj) in events.iter().filter(|(_, e, _)| e.starts_with("approval.")) {
        let mut missing: Vec<&str> = ["actor", "scope", "mutation_mode"]
            .into_iter()
            .filter(|k| {
                obj.get(*k)
                    .and_then(Value::as_str)
                    .is_none_or(|s| s.trim().is_empty())
            })
            .collect();
        let at = obj
            .get("timestamp")
            .or_else(|| obj.get("ts"))
            .and_then(Value::as_str)
            .and_then(parse_rfc3339);
        if at.is_none() {
            missing.push("timestamp");
        }
        let expiry = obj.get("expiry").or_else(|| obj.get("expires_at"));
        if name == "approval.granted" {
            match expiry.and_then(Value::as_str).map(parse_rfc3339) {
                Some(Some(exp)) => {
                    if let Some(at) = at
                        && exp <= at
                    {
                        out.push(finding(
                            CHECK,
                            "harness.approval.complete",
                            ReasonCode::PolicyViolation,
                            FILE,
                            Some(*n),
                            "approval expires before it was granted".into(),
                        ));
                    }
                }
                Some(None) => missing.push("expiry (RFC 3339)"),
                None if expiry.is_some_and(Value::is_null) => {} // explicitly not applicable
                None => missing.push("expiry"),
            }
        }
        if !missing.is_empty() {
            out.push(finding(
                CHECK,
                "harness.approval.complete",
                ReasonCode::SchemaViolation,
                FILE,
                Some(*n),
                format!("{name} lacks {}", missing.join(", ")),
            ));
        }
        if name == "approval.granted" || name == "approval.denied" {
            let actor = obj.get("actor").and_then(Value::as_str).unwrap_or_default();
            let own = [
                run_actor,
                requester,
                Some(report.backend.as_str()),
                Some(report.case_id.as_str()),
                Some("case"),
            ];
            if !actor.is_empty() && own.iter().flatten().any(|o| o.eq_ignore_ascii_case(actor)) {
                out.push(finding(
                    CHECK,
                    "harness.approval.self",
                    ReasonCode::PolicyViolation,
                    FILE,
                    Some(*n),
                    format!(
                        "{name} by {actor:?}, the run's own actor: a case must not approve itself"
                    ),
                ));
            }
        }
    }
    out
}

/// `run.started` opens the run and `run.completed` closes it (seed 003
/// "Required Normalized Events"; "nothing may follow `run.completed`"):
/// - `harness.events.once`: each of them occurs at most once; every repeat
///   is a finding at its line (a second `run.started` restarts a run the
///   report summarises as one; a second `run.completed` re-closes it);
/// - `harness.events.order`: no event comes before the first `run.started`
///   or after the first `run.completed` (a repeat of either is reported by
///   `harness.events.once` instead).
///
/// Lines already out of order by the first-occurrence rule are not
/// reported twice.
fn check_run_bounds(events: &[(u32, String, Map<String, Value>)]) -> Vec<Finding> {
    const FILE: &str = "events.normalized.jsonl";
    let mut out = Vec::new();
    let first = |name: &str| events.iter().position(|(_, e, _)| e == name);
    let started = first("run.started");
    let completed = first("run.completed");
    for bound in ["run.started", "run.completed"] {
        let mut lines = events
            .iter()
            .filter(|(_, e, _)| e == bound)
            .map(|(n, _, _)| *n);
        let Some(first_line) = lines.next() else {
            continue;
        };
        for n in lines {
            out.push(finding(
                CHECK,
                "harness.events.once",
                ReasonCode::SchemaViolation,
                FILE,
                Some(n),
                format!("{bound} repeated (first at line {first_line}): a run starts and completes exactly once"),
            ));
        }
    }
    let ordered = |name: &str| EVENT_ORDER.contains(&name);
    for (i, (n, name, _)) in events.iter().enumerate() {
        if name == "run.started" || name == "run.completed" {
            continue;
        }
        if started.is_some_and(|s| i < s) && !ordered(name) {
            // A seed event before run.started is the first-occurrence rule's.
            out.push(finding(
                CHECK,
                "harness.events.order",
                ReasonCode::SchemaViolation,
                FILE,
                Some(*n),
                format!("{name} before run.started"),
            ));
        }
        if completed.is_some_and(|c| i > c)
            && !(ordered(name) && events[..i].iter().all(|(_, e, _)| e != name))
        {
            // A seed event whose first occurrence follows run.completed is
            // out of order already.
            out.push(finding(
                CHECK,
                "harness.events.order",
                ReasonCode::SchemaViolation,
                FILE,
                Some(*n),
                format!("{name} after run.completed"),
            ));
        }
    }
    out
}

/// How a `run.completed` event states the run's outcome: its `status`
/// (seed 003: "emit `run.completed` with a failed or blocked status"), or a
/// `result` or `outcome` string.
const COMPLETED_STATUS_KEYS: [&str; 3] = ["status", "result", "outcome"];

/// Spellings of a run that did not pass in a `run.completed` status
/// (seed 003: "emit `run.completed` with a failed or blocked status"). A
/// status outside this list (`completed`, `done`, a pass spelling) states
/// no failure: the report's own status decides.
const NOT_PASSED_STATUSES: [&str; 16] = [
    "fail",
    "failed",
    "failure",
    "blocked",
    "error",
    "errored",
    "aborted",
    "cancelled",
    "canceled",
    "denied",
    "rejected",
    "timeout",
    "timed_out",
    "timed-out",
    "false",
    "killed",
];

/// `harness.events.status_consistent`: a `run.completed` that states a
/// failed or blocked outcome (`fail`, `failed`, `blocked`, … in
/// [`NOT_PASSED_STATUSES`], any case; a boolean `false` status) while
/// `report.json` says `pass` contradicts the report:
/// the run's own replayable evidence says it did not pass, so the summary
/// cannot be trusted. Reason EVIDENCE_TAMPERED, as for a digest that does
/// not match its file. Every `run.completed` is read, repeats included. A
/// report that already says fail/blocked fails closed through
/// `harness.run_failed` with its blocker's class, whatever the event says.
fn check_completed_status(
    events: &[(u32, String, Map<String, Value>)],
    report: &RunReport,
) -> Vec<Finding> {
    const FILE: &str = "events.normalized.jsonl";
    let mut out = Vec::new();
    if report.status != RunStatus::Pass {
        return out;
    }
    for (n, _, obj) in events.iter().filter(|(_, e, _)| e == "run.completed") {
        for key in COMPLETED_STATUS_KEYS {
            let stated = match obj.get(key) {
                Some(Value::String(s)) => s.trim().to_ascii_lowercase(),
                // A `status` that is not a string states no pass either;
                // `result`/`outcome` may hold details instead of an outcome.
                Some(other) if key == "status" && !other.is_null() => other.to_string(),
                _ => continue,
            };
            if NOT_PASSED_STATUSES.contains(&stated.as_str()) {
                out.push(finding(
                    CHECK,
                    "harness.events.status_consistent",
                    ReasonCode::EvidenceTampered,
                    FILE,
                    Some(*n),
                    format!(
                        "run.completed {key} {stated:?} says the run did not pass, but report.json says pass: the report contradicts the run's events"
                    ),
                ));
            }
        }
    }
    out
}

// ------------------------------------------------------------ ledger approvals

/// Decision recorded in the ledger for one approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerDecision {
    Requested,
    Granted,
    Denied,
}

/// One approval as the ledger holds it (`approval.requested` and its
/// answer), handed to [`check_approval_binding`] by the caller: the engine
/// stays pure and never reads a ledger itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerApproval {
    /// Sequence number of the `approval.requested` event.
    pub request_seq: u64,
    pub scope: String,
    pub mutation_mode: String,
    pub decision: LedgerDecision,
    /// Hex public key that signed the grant or denial.
    pub approver_key: Option<String>,
    /// The decision's `actor`.
    pub approver_actor: Option<String>,
    /// Effective expiry (the grant's, else the request's), Unix ms.
    pub expires_at_ms: Option<i64>,
}

/// The rule of [`check_approval_binding`].
pub const APPROVAL_BINDING_RULE: &str = "harness.approval.ledger";

fn ms(t: time::OffsetDateTime) -> i128 {
    t.unix_timestamp_nanos() / 1_000_000
}

/// Harness approvals bound to ledger approvals (seed 003 "Approval
/// Semantics" plus Docket's ledger): every grant the run claims — each
/// `approval.granted` line of `events.normalized.jsonl`, and
/// `approval_status: "granted"` in `report.json` — passes only when the
/// ledger holds a **matching grant**:
///
/// - same `scope` and `mutation_mode` (exact);
/// - the same approver: the event's `approver_key` (hex) is the key that
///   signed the ledger grant, or, when the event names no key, its `actor`
///   is the grant's actor (case-insensitive);
/// - the expiry: the ledger grant, when it expires, had not expired at the
///   event's `timestamp`, and the event claims no later expiry (an event
///   without one claims none, which outlives an expiring grant).
///
/// A claim without a scope or mutation mode is `harness.approval.complete`'s
/// (SCHEMA_VIOLATION) and is not matched. A claim without a match is a
/// `harness.approval.ledger` finding, fail
/// class "approval denied" (seed 003's fail-closed class for an approval
/// that does not stand), reason code `POLICY_VIOLATION`; the message says
/// whether the ledger denied it, never answered it, or holds nothing for
/// that scope and mode. Deterministic: `approvals` are what the ledger held
/// before the submission (the caller's job), and no clock is read.
#[must_use]
pub fn check_approval_binding(
    report: &RunReport,
    events_text: Option<&str>,
    approvals: &[LedgerApproval],
) -> Vec<Finding> {
    const FILE: &str = "events.normalized.jsonl";
    let mut out = Vec::new();
    let mut claims = 0usize;
    for (i, line) in events_text.unwrap_or_default().lines().enumerate() {
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if event_name(&obj) != Some("approval.granted") {
            continue;
        }
        claims += 1;
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::trim);
        let scope = text("scope").unwrap_or_default();
        let mode = text("mutation_mode").unwrap_or_default();
        if scope.is_empty() || mode.is_empty() {
            // Incomplete: `harness.approval.complete` fails it closed
            // already (SCHEMA_VIOLATION); there is nothing to match.
            continue;
        }
        let actor = text("actor").unwrap_or_default();
        let key = text("approver_key").map(str::to_ascii_lowercase);
        let at = obj
            .get("timestamp")
            .or_else(|| obj.get("ts"))
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
            .map(ms);
        let claimed_expiry = obj
            .get("expiry")
            .or_else(|| obj.get("expires_at"))
            .and_then(Value::as_str)
            .and_then(parse_rfc3339)
            .map(ms);
        let same_approver = |a: &LedgerApproval| match &key {
            Some(k) => a
                .approver_key
                .as_deref()
                .is_some_and(|x| x.eq_ignore_ascii_case(k)),
            None => a
                .approver_actor
                .as_deref()
                .is_some_and(|x| !actor.is_empty() && x.trim().eq_ignore_ascii_case(actor)),
        };
        let candidates: Vec<&LedgerApproval> = approvals
            .iter()
            .filter(|a| a.scope == scope && a.mutation_mode == mode)
            .collect();
        let mut why = Vec::new();
        let mut matched = false;
        for a in &candidates {
            match a.decision {
                LedgerDecision::Denied if same_approver(a) || key.is_none() => {
                    why.push(format!("the ledger denied request {}", a.request_seq));
                }
                LedgerDecision::Denied => {}
                LedgerDecision::Requested => {
                    why.push(format!(
                        "request {} was never answered in the ledger",
                        a.request_seq
                    ));
                }
                LedgerDecision::Granted if !same_approver(a) => why.push(format!(
                    "the ledger grant of request {} is by another approver",
                    a.request_seq
                )),
                LedgerDecision::Granted => match a.expires_at_ms.map(i128::from) {
                    Some(exp) if at.is_none_or(|t| t > exp) => why.push(format!(
                        "the ledger grant of request {} had expired at the event's timestamp",
                        a.request_seq
                    )),
                    Some(exp) if claimed_expiry.is_none_or(|c| c > exp) => why.push(format!(
                        "the event claims a later expiry than the ledger grant of request {}",
                        a.request_seq
                    )),
                    _ => {
                        matched = true;
                        break;
                    }
                },
            }
        }
        if !matched {
            if candidates.is_empty() {
                why.push(format!(
                    "the ledger holds no approval for scope {scope:?} and mutation mode {mode:?}"
                ));
            }
            out.push(finding(
                CHECK,
                APPROVAL_BINDING_RULE,
                ReasonCode::PolicyViolation,
                FILE,
                Some(n),
                format!(
                    "approval denied: the run's approval.granted by {actor:?} has no matching ledger grant ({})",
                    why.join("; ")
                ),
            ));
        }
    }
    if claims == 0 && report.approval_status == ApprovalStatus::Granted {
        out.push(finding(
            CHECK,
            APPROVAL_BINDING_RULE,
            ReasonCode::PolicyViolation,
            "report.json",
            None,
            "approval denied: report.json says the approval was granted, but no approval.granted event names the grant to match against the ledger".into(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(approval: ApprovalStatus) -> RunReport {
        RunReport {
            case_id: "CASE-1".into(),
            run_id: "r".into(),
            status: RunStatus::Pass,
            backend: "backend-x".into(),
            run_started_at: "2026-02-09T14:00:00Z".into(),
            run_finished_at: "2026-02-09T14:10:00Z".into(),
            backend_exit_code: Some(0),
            artifacts_dir: "/runs/r".into(),
            changed_files: vec![],
            allowed_writes_passed: true,
            approval_status: approval,
            verification: vec![VerificationResult {
                command: "make test".into(),
                passed: true,
            }],
            blockers: vec![],
            artifact_paths: BTreeMap::new(),
            artifact_digests: BTreeMap::new(),
            freshness: BTreeMap::new(),
        }
    }

    fn rules(findings: &[Finding]) -> Vec<&str> {
        findings.iter().map(|f| f.rule.as_str()).collect()
    }

    fn grant_line(extra: &str) -> String {
        format!(
            r#"{{"event":"approval.granted","actor":"operator","scope":"src/","mutation_mode":"write","timestamp":"2026-02-09T14:02:00Z","expires_at":"2026-02-09T15:00:00Z"{extra}}}"#
        )
    }

    fn ledger_grant(decision: LedgerDecision, expires: Option<&str>) -> LedgerApproval {
        LedgerApproval {
            request_seq: 7,
            scope: "src/".into(),
            mutation_mode: "write".into(),
            decision,
            approver_key: Some("ab".repeat(32)),
            approver_actor: Some("Operator".into()),
            expires_at_ms: expires
                .and_then(parse_rfc3339)
                .map(|t| i64::try_from(ms(t)).unwrap()),
        }
    }

    #[test]
    fn a_claimed_grant_passes_only_with_a_matching_ledger_grant() {
        let r = report(ApprovalStatus::Granted);
        let line = grant_line("");
        let ok = [ledger_grant(
            LedgerDecision::Granted,
            Some("2026-02-09T16:00:00Z"),
        )];
        assert!(check_approval_binding(&r, Some(&line), &ok).is_empty());
        // No expiry in the ledger: any claimed expiry is within it.
        let forever = [ledger_grant(LedgerDecision::Granted, None)];
        assert!(check_approval_binding(&r, Some(&line), &forever).is_empty());
        // By key: the event names the signing key.
        let keyed = grant_line(&format!(r#","approver_key":"{}""#, "AB".repeat(32)));
        assert!(check_approval_binding(&r, Some(&keyed), &ok).is_empty());
        let other_key = grant_line(&format!(r#","approver_key":"{}""#, "cd".repeat(32)));
        let f = check_approval_binding(&r, Some(&other_key), &ok);
        assert_eq!(rules(&f), [APPROVAL_BINDING_RULE]);
        assert!(
            f[0].message.contains("another approver"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn without_a_matching_ledger_grant_the_run_fails_closed_as_approval_denied() {
        let r = report(ApprovalStatus::Granted);
        let line = grant_line("");
        let cases: [(&str, Vec<LedgerApproval>, &str); 6] = [
            ("nothing in the ledger", vec![], "holds no approval"),
            (
                "denied",
                vec![ledger_grant(LedgerDecision::Denied, None)],
                "denied request 7",
            ),
            (
                "unanswered",
                vec![ledger_grant(LedgerDecision::Requested, None)],
                "never answered",
            ),
            (
                "expired",
                vec![ledger_grant(
                    LedgerDecision::Granted,
                    Some("2026-02-09T14:01:00Z"),
                )],
                "had expired",
            ),
            (
                "claims longer",
                vec![ledger_grant(
                    LedgerDecision::Granted,
                    Some("2026-02-09T14:30:00Z"),
                )],
                "later expiry",
            ),
            (
                "other scope",
                vec![LedgerApproval {
                    scope: "docs/".into(),
                    ..ledger_grant(LedgerDecision::Granted, None)
                }],
                "holds no approval",
            ),
        ];
        for (what, approvals, says) in cases {
            let f = check_approval_binding(&r, Some(&line), &approvals);
            assert_eq!(rules(&f), [APPROVAL_BINDING_RULE], "{what}");
            assert_eq!(f[0].reason_code, ReasonCode::PolicyViolation, "{what}");
            assert!(f[0].message.starts_with("approval denied"), "{what}");
            assert!(f[0].message.contains(says), "{what}: {}", f[0].message);
            assert_eq!(fail_closed_class(&f[0].message), Some("approval denied"));
        }
        // A report that says granted without any grant event fails too.
        let f =
            check_approval_binding(&r, Some(""), &[ledger_grant(LedgerDecision::Granted, None)]);
        assert_eq!(rules(&f), [APPROVAL_BINDING_RULE]);
        // No claim, nothing to bind.
        assert!(check_approval_binding(&report(ApprovalStatus::NotRequired), None, &[]).is_empty());
        // An incomplete claim is harness.approval.complete's, not matched here.
        let incomplete =
            r#"{"event":"approval.granted","actor":"operator","timestamp":"2026-02-09T14:02:00Z"}"#;
        assert!(check_approval_binding(&r, Some(incomplete), &[]).is_empty());
    }

    const BASE: [&str; 3] = [
        r#"{"event":"run.started","actor":"harness"}"#,
        r#"{"event":"task.contract.created"}"#,
        r#"{"event":"plan.updated"}"#,
    ];
    const TAIL: [&str; 3] = [
        r#"{"event":"git.diff.checked"}"#,
        r#"{"event":"verification.completed"}"#,
        r#"{"event":"run.completed"}"#,
    ];

    #[test]
    fn denied_approval_in_order_is_accepted() {
        let approval = [
            r#"{"event":"approval.requested","actor":"backend-x","scope":"src/","mutation_mode":"write","timestamp":"2026-02-09T14:01:00Z"}"#,
            r#"{"event":"approval.denied","actor":"operator","scope":"src/","mutation_mode":"write","timestamp":"2026-02-09T14:02:00Z"}"#,
        ];
        let text = BASE
            .iter()
            .chain(&approval)
            .chain(&TAIL)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        assert!(check_events(&text, &report(ApprovalStatus::Denied)).is_empty());
    }

    #[test]
    fn events_after_run_completed_and_garbage_lines() {
        let text = BASE
            .iter()
            .chain(&TAIL)
            .copied()
            .chain([r#"{"event":"plan.updated"}"#, "not json"])
            .collect::<Vec<_>>()
            .join("\n");
        let found = check_events(&text, &report(ApprovalStatus::NotRequired));
        assert!(rules(&found).contains(&"harness.events.order"), "{found:?}");
        let syntax = found
            .iter()
            .find(|f| f.rule == "harness.events.syntax")
            .expect("syntax finding");
        assert_eq!(syntax.line, Some(8));
    }

    fn stream(lines: &[&str]) -> String {
        lines.join("\n")
    }

    fn lines_of(findings: &[Finding], rule: &str) -> Vec<Option<u32>> {
        findings
            .iter()
            .filter(|f| f.rule == rule)
            .map(|f| f.line)
            .collect()
    }

    #[test]
    fn run_started_and_run_completed_occur_exactly_once_and_bound_the_run() {
        let r = report(ApprovalStatus::NotRequired);
        let ok: Vec<&str> = BASE.iter().chain(&TAIL).copied().collect();
        assert!(check_events(&stream(&ok), &r).is_empty());

        // Given run.completed twice in a row (lines 6 and 7),
        // when the events are checked,
        // then the repeat is a harness.events.once finding at line 7.
        let mut twice = ok.clone();
        twice.push(TAIL[2]);
        let f = check_events(&stream(&twice), &r);
        assert_eq!(rules(&f), ["harness.events.once"], "{f:?}");
        assert_eq!(lines_of(&f, "harness.events.once"), [Some(7)]);
        assert_eq!(f[0].reason_code, ReasonCode::SchemaViolation);

        // Given a second run.started just before run.completed (line 6),
        // then it is a harness.events.once finding at line 6.
        let mut restarted = ok.clone();
        restarted.insert(5, BASE[0]);
        let f = check_events(&stream(&restarted), &r);
        assert_eq!(rules(&f), ["harness.events.once"], "{f:?}");
        assert_eq!(lines_of(&f, "harness.events.once"), [Some(6)]);

        // Given an event outside the seed list before run.started or after
        // run.completed, then it is out of order.
        let mut before = ok.clone();
        before.insert(0, r#"{"event":"backend.note"}"#);
        let f = check_events(&stream(&before), &r);
        assert_eq!(rules(&f), ["harness.events.order"], "{f:?}");
        assert_eq!(f[0].line, Some(1));
        let mut after = ok.clone();
        after.push(r#"{"event":"backend.note"}"#);
        let f = check_events(&stream(&after), &r);
        assert_eq!(rules(&f), ["harness.events.order"], "{f:?}");
        assert_eq!(f[0].line, Some(7));

        // Given a seed event whose first occurrence follows run.completed,
        // then it is reported once, not twice.
        let late: Vec<&str> = BASE
            .iter()
            .chain(&[TAIL[0], TAIL[2], TAIL[1]])
            .copied()
            .collect();
        let f = check_events(&stream(&late), &r);
        assert_eq!(rules(&f), ["harness.events.order"], "{f:?}");
    }

    #[test]
    fn a_run_completed_status_that_contradicts_a_pass_report_fails_closed() {
        let pass = report(ApprovalStatus::NotRequired);
        let completed = |status: &str| format!(r#"{{"event":"run.completed","status":{status}}}"#);
        let with_last = |last: &str| {
            let mut l: Vec<String> = BASE
                .iter()
                .chain(&TAIL[..2])
                .map(|s| (*s).to_owned())
                .collect();
            l.push(last.to_owned());
            l.join("\n")
        };
        // Given report.json says pass and the one run.completed says the
        // run failed or was blocked (or anything but pass),
        // when the events are checked,
        // then it is a harness.events.status_consistent finding,
        // EVIDENCE_TAMPERED, at the run.completed line.
        for status in [
            r#""fail""#,
            r#""blocked""#,
            r#""FAILED""#,
            r#""error""#,
            "false",
        ] {
            let f = check_events(&with_last(&completed(status)), &pass);
            assert_eq!(rules(&f), ["harness.events.status_consistent"], "{status}");
            assert_eq!(f[0].reason_code, ReasonCode::EvidenceTampered);
            assert_eq!(f[0].line, Some(6));
        }
        let outcome = r#"{"event":"run.completed","outcome":"blocked"}"#;
        assert_eq!(
            rules(&check_events(&with_last(outcome), &pass)),
            ["harness.events.status_consistent"]
        );
        // A pass status, none, or one that states no failure agrees with
        // the report.
        for status in [
            r#""pass""#,
            r#"" Passed ""#,
            r#""success""#,
            "null",
            r#""completed""#,
            r#""done""#,
        ] {
            assert!(
                check_events(&with_last(&completed(status)), &pass).is_empty(),
                "{status}"
            );
        }
        assert!(check_events(&with_last(TAIL[2]), &pass).is_empty());
        // A report that already says fail is failed by its blocker instead.
        let failed = RunReport {
            status: RunStatus::Fail,
            blockers: vec!["approval denied".into()],
            ..report(ApprovalStatus::NotRequired)
        };
        assert!(check_events(&with_last(&completed(r#""fail""#)), &failed).is_empty());

        // Given a pass run.completed followed by a second one with status
        // fail or blocked, then both the repeat and the contradiction count.
        for status in [r#""fail""#, r#""blocked""#] {
            let text = format!(
                "{}\n{}",
                with_last(&completed(r#""pass""#)),
                completed(status)
            );
            let f = check_events(&text, &pass);
            let mut got = rules(&f);
            got.sort_unstable();
            assert_eq!(
                got,
                ["harness.events.once", "harness.events.status_consistent"],
                "{status}"
            );
            assert!(f.iter().all(|x| x.line == Some(7)));
        }
    }

    #[test]
    fn approval_needs_events_and_expiry_after_grant() {
        let text = BASE
            .iter()
            .chain(&TAIL)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        let found = check_events(&text, &report(ApprovalStatus::Granted));
        assert_eq!(
            rules(&found)
                .iter()
                .filter(|r| **r == "harness.events.required")
                .count(),
            2
        );
        let grant = r#"{"event":"approval.granted","actor":"op","scope":"s","mutation_mode":"write","timestamp":"2026-02-09T14:02:00Z","expires_at":"2026-02-09T14:01:00Z"}"#;
        let text = BASE
            .iter()
            .copied()
            .chain([grant])
            .chain(TAIL)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            rules(&check_events(&text, &report(ApprovalStatus::Granted)))
                .contains(&"harness.approval.complete")
        );
    }

    #[test]
    fn blockers_map_to_catalogue_codes() {
        assert_eq!(
            reason_for_blocker("Timeout after 600s"),
            ReasonCode::TimeoutExceeded
        );
        assert_eq!(
            reason_for_blocker("disallowed file change: .github/x"),
            ReasonCode::ScopeConflict
        );
        assert_eq!(
            reason_for_blocker("dirty starting tree"),
            ReasonCode::MergeConflict
        );
        assert_eq!(
            reason_for_blocker("provider unavailable"),
            ReasonCode::ExecutorError
        );
        assert_eq!(
            reason_for_blocker("backend reviewer reject"),
            ReasonCode::PolicyViolation
        );
        assert_eq!(reason_for_blocker("something odd"), ReasonCode::CiFailed);
        assert_eq!(FAIL_CLOSED_CLASSES.len(), 12);
    }
}

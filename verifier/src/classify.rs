//! The fail classifier (seed 000 §8.3 `fail_classifier`, seed 002 "Observer
//! Rules"): from logs and an exit code to a classification, with the evidence
//! lines that triggered it.

use crate::catalogue::{FailClass, VerifierFailClass};
use serde::Serialize;

/// An issue type. The first five are seed 002's observer rules; the rest map
/// log patterns to seed 000 `fail_class` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IssueKind {
    /// Seed 002: `exit_code != 0`.
    ExecutionFailure,
    /// Seed 002: `"auth" in stderr.lower()` (standard error only).
    AuthError,
    /// Seed 002: `"timeout" in stderr.lower()` (standard error only).
    Performance,
    /// Seed 002: `"schema" in stderr.lower()` (standard error only).
    DataError,
    /// Seed 002: NO_EVIDENCE ("Execution evidence unavailable").
    ExecutionError,
    /// Seed 000 `timeout` in other words ("timed out", "deadline exceeded").
    Timeout,
    TestFailure,
    LintError,
    TypeError,
    SecurityViolation,
    ScopeViolation,
    ExternalDependency,
}

impl IssueKind {
    /// Every kind, in declaration order.
    pub const ALL: [IssueKind; 12] = [
        IssueKind::ExecutionFailure,
        IssueKind::AuthError,
        IssueKind::Performance,
        IssueKind::DataError,
        IssueKind::ExecutionError,
        IssueKind::Timeout,
        IssueKind::TestFailure,
        IssueKind::LintError,
        IssueKind::TypeError,
        IssueKind::SecurityViolation,
        IssueKind::ScopeViolation,
        IssueKind::ExternalDependency,
    ];

    /// The seed spelling (`EXECUTION_FAILURE`, `AUTH_ERROR`, ...), the same
    /// as the JSON output.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::ExecutionFailure => "EXECUTION_FAILURE",
            IssueKind::AuthError => "AUTH_ERROR",
            IssueKind::Performance => "PERFORMANCE",
            IssueKind::DataError => "DATA_ERROR",
            IssueKind::ExecutionError => "EXECUTION_ERROR",
            IssueKind::Timeout => "TIMEOUT",
            IssueKind::TestFailure => "TEST_FAILURE",
            IssueKind::LintError => "LINT_ERROR",
            IssueKind::TypeError => "TYPE_ERROR",
            IssueKind::SecurityViolation => "SECURITY_VIOLATION",
            IssueKind::ScopeViolation => "SCOPE_VIOLATION",
            IssueKind::ExternalDependency => "EXTERNAL_DEPENDENCY",
        }
    }
}

impl std::fmt::Display for IssueKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One log line that triggered an issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvidenceLine {
    pub file: String,
    /// 1-based.
    pub line: u32,
    pub text: String,
}

/// One issue with up to [`MAX_EVIDENCE_LINES`] triggering lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Issue {
    pub kind: IssueKind,
    pub evidence: Vec<EvidenceLine>,
    /// Seed 002's description of the issue, where it fixes one
    /// (NO_EVIDENCE: "Execution evidence unavailable").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Why, where seed 002 asks for it (NO_EVIDENCE: the reason from stderr).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Seed 002's description of the one issue a NO_EVIDENCE record yields.
pub const NO_EVIDENCE_DESCRIPTION: &str = "Execution evidence unavailable";

/// Classifies one seed-002 execution record ("Observer Rules", derived
/// from the evidence). A `NO_EVIDENCE` record yields exactly one issue,
/// `EXECUTION_ERROR`, described "Execution evidence unavailable", with the
/// reason from `stderr`, and nothing else for that record; any other record
/// is classified from its `exit_code`, `stdout` and `stderr` as [`classify`]
/// does, with `stdout` as standard output: seed 002's `"auth"`, `"timeout"`
/// and `"schema"` rules read `stderr` only.
#[must_use]
pub fn classify_record(record: &crate::execution::ExecutionRecord) -> Classification {
    if record.status == crate::execution::ExecutionStatus::NoEvidence {
        let reason = record.stderr.trim().to_owned();
        return Classification {
            fail_class: fail_class_of(IssueKind::ExecutionError),
            verifier_fail_class: Some(VerifierFailClass::ArtifactMissing),
            exit_code: record.exit_code.and_then(|c| i32::try_from(c).ok()),
            issues: vec![Issue {
                kind: IssueKind::ExecutionError,
                evidence: vec![EvidenceLine {
                    file: "stderr".into(),
                    line: 1,
                    text: reason.chars().take(500).collect(),
                }],
                description: Some(NO_EVIDENCE_DESCRIPTION.into()),
                reason: Some(reason),
            }],
        };
    }
    let exit = record
        .exit_code
        .map(|c| i32::try_from(c).unwrap_or(i32::MAX));
    // The record's status says whether evidence is missing: its text does
    // not (a test named `no_evidence_path` is not NO_EVIDENCE).
    classify_logs(
        &[
            ("stdout", record.stdout.as_str()),
            ("stderr", record.stderr.as_str()),
        ],
        exit,
        false,
    )
}

/// Per issue kind, at most this many evidence lines are kept (the first ones).
pub const MAX_EVIDENCE_LINES: usize = 5;

/// The result of classifying a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// Seed 000 fail_class; `None` when nothing indicates a failure.
    pub fail_class: Option<FailClass>,
    /// Seed 001 verifier fail_class.
    pub verifier_fail_class: Option<VerifierFailClass>,
    pub exit_code: Option<i32>,
    /// Issues in [`IssueKind`] order.
    pub issues: Vec<Issue>,
}

/// Seed 002 "Observer Rules", exactly: `"auth" in stderr.lower()` →
/// AUTH_ERROR, `"timeout" in stderr.lower()` → PERFORMANCE, `"schema" in
/// stderr.lower()` → DATA_ERROR. Read on standard error only (see
/// [`is_stdout_log`]).
const SEED_002_STDERR_RULES: [(IssueKind, &str); 3] = [
    (IssueKind::AuthError, "auth"),
    (IssueKind::Performance, "timeout"),
    (IssueKind::DataError, "schema"),
];

/// Docket's case-insensitive substring patterns for the seed 000 classes,
/// read on every log (standard output included: test runners report
/// failures there). Order within `FAIL_CLASS_PRIORITY` decides the
/// `fail_class` when several match.
const PATTERNS: &[(IssueKind, &[&str])] = &[
    (IssueKind::Timeout, &["timed out", "deadline exceeded"]),
    (
        IssueKind::TestFailure,
        &[
            "test result: failed",
            "tests failed",
            "assertionerror",
            "assertion failed",
            "--- fail",
            "failures:",
            "... failed",
            "panicked at",
        ],
    ),
    (
        IssueKind::LintError,
        &[
            "clippy::",
            "eslint",
            "flake8",
            "pylint",
            "lint error",
            "rustfmt",
            "would reformat",
        ],
    ),
    (
        IssueKind::TypeError,
        &[
            "mismatched types",
            "typeerror",
            "type error",
            "error[e0308]",
            "mypy",
            "cannot find type",
            "incompatible type",
        ],
    ),
    (
        IssueKind::SecurityViolation,
        &[
            "permission denied",
            "access denied",
            "forbidden",
            "secret",
            "credential",
            "unauthorized",
            "policy violation",
        ],
    ),
    (
        IssueKind::ScopeViolation,
        &[
            "outside allowed",
            "scope_conflict",
            "not within pins",
            "disallowed file",
        ],
    ),
    (
        IssueKind::ExternalDependency,
        &[
            "connection refused",
            "could not resolve",
            "network is unreachable",
            "service unavailable",
            "rate limit",
            "econnreset",
            "failed to download",
            "temporary failure in name resolution",
        ],
    ),
];

fn fail_class_of(kind: IssueKind) -> Option<FailClass> {
    match kind {
        IssueKind::Performance | IssueKind::Timeout => Some(FailClass::Timeout),
        IssueKind::AuthError | IssueKind::SecurityViolation => Some(FailClass::SecurityViolation),
        IssueKind::ScopeViolation => Some(FailClass::ScopeViolation),
        IssueKind::TypeError | IssueKind::DataError => Some(FailClass::TypeError),
        IssueKind::LintError => Some(FailClass::LintError),
        IssueKind::TestFailure | IssueKind::ExecutionFailure => Some(FailClass::TestFailure),
        IssueKind::ExternalDependency | IssueKind::ExecutionError => {
            Some(FailClass::ExternalDependency)
        }
    }
}

/// Which issue decides `fail_class` when several are present (first wins).
const FAIL_CLASS_PRIORITY: [IssueKind; 12] = [
    IssueKind::Performance,
    IssueKind::Timeout,
    IssueKind::SecurityViolation,
    IssueKind::AuthError,
    IssueKind::ScopeViolation,
    IssueKind::TypeError,
    IssueKind::DataError,
    IssueKind::LintError,
    IssueKind::TestFailure,
    IssueKind::ExternalDependency,
    IssueKind::ExecutionError,
    IssueKind::ExecutionFailure,
];

/// Whether the log named `name` is a command's standard output: its last
/// path component starts with `stdout` or ends in `.stdout.log` (the
/// `stdout` evidence type, `EvidenceType::Stdout`) or `.stdout`. Seed 002's
/// `"auth"`/`"timeout"`/`"schema"` rules never read such a log; any other log
/// (`stderr`, `selftest.log`, a CI log) may hold standard error and is read
/// by them.
#[must_use]
pub fn is_stdout_log(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    crate::EvidenceType::Stdout.matches_artifact(&file) || file.ends_with(".stdout")
}

/// Classifies logs `(file name, text)` and an exit code.
///
/// `EXECUTION_FAILURE` comes from a non-zero exit code (evidence: the last
/// `EXIT_CODE=<that code>` line if a log states it, else a synthetic
/// `<exit code>` line 0); `AUTH_ERROR`, `PERFORMANCE` and `DATA_ERROR` from
/// seed 002's substrings in the lower-cased lines of every log that is not
/// standard output ([`is_stdout_log`]); the other kinds from
/// case-insensitive substrings per line of any log. A classification has a
/// `fail_class` only if some issue was found; an exit code of 0 with
/// matching lines still reports the issues (e.g. retried timeouts) but
/// `fail_class` is `None`.
#[must_use]
pub fn classify(logs: &[(&str, &str)], exit_code: Option<i32>) -> Classification {
    classify_logs(logs, exit_code, true)
}

/// [`classify`]; `no_evidence_text` says whether a line naming NO_EVIDENCE
/// ("no_evidence", "execution evidence unavailable") is an
/// `EXECUTION_ERROR` (plain logs) or not (a record, whose status says it).
fn classify_logs(
    logs: &[(&str, &str)],
    exit_code: Option<i32>,
    no_evidence_text: bool,
) -> Classification {
    let mut issues: Vec<Issue> = Vec::new();
    let mut push =
        |kind: IssueKind, line: EvidenceLine| match issues.iter_mut().find(|i| i.kind == kind) {
            Some(issue) => {
                if issue.evidence.len() < MAX_EVIDENCE_LINES {
                    issue.evidence.push(line);
                }
            }
            None => issues.push(Issue {
                kind,
                evidence: vec![line],
                description: (kind == IssueKind::ExecutionError)
                    .then(|| NO_EVIDENCE_DESCRIPTION.to_owned()),
                reason: None,
            }),
        };
    let mut exit_line: Option<EvidenceLine> = None;
    for (file, text) in logs {
        let stderr = !is_stdout_log(file);
        for (index, raw) in text.lines().enumerate() {
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            let lower = raw.to_lowercase();
            let evidence = || EvidenceLine {
                file: (*file).to_owned(),
                line: number,
                text: raw.chars().take(500).collect(),
            };
            let stated = raw
                .trim()
                .strip_prefix("EXIT_CODE=")
                .and_then(|c| c.parse::<i32>().ok());
            if stated.is_some() && stated == exit_code {
                exit_line = Some(evidence());
            }
            if no_evidence_text
                && (lower.contains("no_evidence")
                    || lower.contains("execution evidence unavailable"))
            {
                push(IssueKind::ExecutionError, evidence());
            }
            for (kind, needle) in SEED_002_STDERR_RULES {
                if stderr && lower.contains(needle) {
                    push(kind, evidence());
                }
            }
            for (kind, needles) in PATTERNS {
                if needles.iter().any(|n| lower.contains(n)) {
                    push(*kind, evidence());
                }
            }
        }
    }
    let failed_exit = exit_code.is_some_and(|c| c != 0);
    if failed_exit {
        let line = exit_line.unwrap_or_else(|| EvidenceLine {
            file: "<exit code>".into(),
            line: 0,
            text: format!("exit code {}", exit_code.unwrap_or_default()),
        });
        push(IssueKind::ExecutionFailure, line);
    }
    issues.sort_by_key(|i| i.kind);
    let failing = failed_exit
        || issues.iter().any(|i| i.kind == IssueKind::ExecutionError)
        || (exit_code.is_none() && !issues.is_empty());
    let decisive = if failing {
        FAIL_CLASS_PRIORITY
            .iter()
            .find(|k| issues.iter().any(|i| i.kind == **k))
            .copied()
    } else {
        None
    };
    let fail_class = decisive.and_then(fail_class_of);
    let verifier_fail_class = decisive.map(|k| match k {
        IssueKind::Performance | IssueKind::Timeout => VerifierFailClass::Timeout,
        IssueKind::SecurityViolation | IssueKind::AuthError | IssueKind::ScopeViolation => {
            VerifierFailClass::CommandDenied
        }
        IssueKind::ExecutionError => VerifierFailClass::ArtifactMissing,
        _ => VerifierFailClass::CommandFailed,
    });
    Classification {
        fail_class,
        verifier_fail_class,
        exit_code,
        issues,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_no_evidence_record_gives_exactly_one_execution_error() {
        use crate::execution::{ExecutionRecord, ExecutionStatus};
        // stderr that would trigger AUTH_ERROR, PERFORMANCE and DATA_ERROR
        // if it were classified as output: it is only the reason here.
        let mut r = ExecutionRecord::from_execution(
            "cargo test",
            0,
            "",
            "",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:00Z",
            0.0,
        );
        r.status = ExecutionStatus::NoEvidence;
        r.exit_code = None;
        r.stderr = "ExecutionGateway is unavailable: auth timeout schema".into();
        let c = classify_record(&r);
        assert_eq!(c.issues.len(), 1, "{c:?}");
        let issue = &c.issues[0];
        assert_eq!(issue.kind, IssueKind::ExecutionError);
        assert_eq!(
            issue.description.as_deref(),
            Some("Execution evidence unavailable")
        );
        assert_eq!(
            issue.reason.as_deref(),
            Some("ExecutionGateway is unavailable: auth timeout schema")
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["issues"][0]["kind"], "EXECUTION_ERROR");
        assert_eq!(
            json["issues"][0]["description"],
            "Execution evidence unavailable"
        );
    }

    #[test]
    fn a_failed_record_is_classified_from_its_evidence() {
        use crate::execution::ExecutionRecord;
        let r = ExecutionRecord::from_execution(
            "make",
            2,
            "",
            "error: Authentication failed",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:01Z",
            1.0,
        );
        let kinds: Vec<_> = classify_record(&r).issues.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            vec![IssueKind::ExecutionFailure, IssueKind::AuthError]
        );
    }

    fn record(exit_code: i64, stdout: &str, stderr: &str) -> crate::execution::ExecutionRecord {
        crate::execution::ExecutionRecord::from_execution(
            "pytest",
            exit_code,
            stdout,
            stderr,
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:01Z",
            1.0,
        )
    }

    fn kinds(c: &Classification) -> Vec<IssueKind> {
        c.issues.iter().map(|i| i.kind).collect()
    }

    #[test]
    fn seed_002_patterns_are_read_on_stderr_only() {
        // Given a SUCCESS record whose stdout names a timeout test,
        // when it is classified,
        // then there is no issue: seed 002 reads "timeout" in stderr only.
        let c = classify_record(&record(0, "test_connection_timeout PASSED\n", ""));
        assert!(c.issues.is_empty(), "{c:?}");
        assert_eq!(c.fail_class, None);

        // Given a FAILURE record with "auth" and "schema" only in stdout,
        // then the only issue is EXECUTION_FAILURE (exit_code != 0).
        let c = classify_record(&record(1, "auth module loaded\nschema v2 ok\n", ""));
        assert_eq!(kinds(&c), vec![IssueKind::ExecutionFailure], "{c:?}");
        assert_eq!(c.fail_class, Some(FailClass::TestFailure));

        // Given the same words in stderr, then each seed rule fires, with
        // the stderr line as evidence.
        let c = classify_record(&record(
            1,
            "",
            "auth failed\nrequest timeout\nschema mismatch\n",
        ));
        assert_eq!(
            kinds(&c),
            vec![
                IssueKind::ExecutionFailure,
                IssueKind::AuthError,
                IssueKind::Performance,
                IssueKind::DataError
            ]
        );
        assert!(
            c.issues[1..]
                .iter()
                .all(|i| i.evidence.iter().all(|e| e.file == "stderr"))
        );

        // Given plain logs, when a log is named as standard output, then
        // the seed rules skip it; any other log may hold stderr and is read.
        for name in [
            "stdout",
            "stdout.log",
            "evidence/execution/x/stdout.log",
            "run.stdout.log",
            "STDOUT.txt",
            "a/b.stdout",
        ] {
            let c = classify(&[(name, "Timeout; AUTH; schema")], Some(1));
            assert_eq!(kinds(&c), vec![IssueKind::ExecutionFailure], "{name}");
        }
        for name in [
            "stderr",
            "stderr.log",
            "selftest.log",
            "ci.log",
            "stdoutless/err.log",
        ] {
            let c = classify(&[(name, "Timeout; AUTH; schema")], Some(1));
            assert_eq!(
                kinds(&c),
                vec![
                    IssueKind::ExecutionFailure,
                    IssueKind::AuthError,
                    IssueKind::Performance,
                    IssueKind::DataError
                ],
                "{name}"
            );
        }
    }

    #[test]
    fn docket_patterns_for_seed_000_classes_read_stdout_too() {
        // Given a FAILURE record whose test runner reports on stdout,
        // then TEST_FAILURE and TIMEOUT (seed 000 classes) are found there.
        let c = classify_record(&record(1, "test_x ... FAILED\nerror: test timed out\n", ""));
        assert_eq!(
            kinds(&c),
            vec![
                IssueKind::ExecutionFailure,
                IssueKind::Timeout,
                IssueKind::TestFailure
            ]
        );
        assert_eq!(c.fail_class, Some(FailClass::Timeout));
        assert_eq!(c.verifier_fail_class, Some(VerifierFailClass::Timeout));
    }

    #[test]
    fn a_record_is_no_evidence_by_its_status_not_its_text() {
        // Given a SUCCESS record whose output names NO_EVIDENCE,
        // when it is classified,
        // then it has no EXECUTION_ERROR and no fail_class.
        let c = classify_record(&record(
            0,
            "test_no_evidence_path PASSED\n",
            "Execution evidence unavailable (mocked)\n",
        ));
        assert!(c.issues.is_empty(), "{c:?}");
        assert_eq!(c.fail_class, None);
        // A plain log keeps the heuristic: its status is unknown.
        let c = classify(&[("gateway.log", "status: NO_EVIDENCE")], None);
        assert_eq!(kinds(&c), vec![IssueKind::ExecutionError]);
    }

    #[test]
    fn issue_kinds_print_their_seed_spelling() {
        // Given every issue kind, when it is displayed (the CLI's human
        // output), then it is the seed spelling, the same as in JSON.
        assert_eq!(IssueKind::ExecutionFailure.to_string(), "EXECUTION_FAILURE");
        assert_eq!(IssueKind::AuthError.to_string(), "AUTH_ERROR");
        assert_eq!(IssueKind::Performance.to_string(), "PERFORMANCE");
        assert_eq!(IssueKind::DataError.to_string(), "DATA_ERROR");
        assert_eq!(IssueKind::ExecutionError.to_string(), "EXECUTION_ERROR");
        for kind in IssueKind::ALL {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::String(kind.to_string())
            );
            assert!(FAIL_CLASS_PRIORITY.contains(&kind), "{kind}");
            assert!(fail_class_of(kind).is_some(), "{kind}");
        }
        let mut sorted = IssueKind::ALL.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, IssueKind::ALL.to_vec());
        assert_eq!(FAIL_CLASS_PRIORITY.len(), IssueKind::ALL.len());
    }

    #[test]
    fn seed_002_observer_rules() {
        let c = classify(
            &[("stderr.log", "starting\nERROR: API Authentication failed\n")],
            Some(1),
        );
        let kinds: Vec<_> = c.issues.iter().map(|i| i.kind).collect();
        assert_eq!(
            kinds,
            vec![IssueKind::ExecutionFailure, IssueKind::AuthError]
        );
        assert_eq!(
            c.issues[1].evidence[0],
            EvidenceLine {
                file: "stderr.log".into(),
                line: 2,
                text: "ERROR: API Authentication failed".into()
            }
        );
        assert_eq!(c.fail_class, Some(FailClass::SecurityViolation));

        let c = classify(&[("stderr.log", "Request Timeout after 30s")], Some(124));
        assert_eq!(c.fail_class, Some(FailClass::Timeout));
        assert_eq!(c.verifier_fail_class, Some(VerifierFailClass::Timeout));

        let c = classify(&[("stderr.log", "Schema mismatch in column id")], Some(1));
        assert!(c.issues.iter().any(|i| i.kind == IssueKind::DataError));
        assert_eq!(c.fail_class, Some(FailClass::TypeError));
    }

    #[test]
    fn exit_code_alone_is_execution_failure() {
        let c = classify(&[("selftest.log", "$ make\nEXIT_CODE=2")], Some(2));
        assert_eq!(c.issues.len(), 1);
        assert_eq!(c.issues[0].kind, IssueKind::ExecutionFailure);
        assert_eq!(c.issues[0].evidence[0].line, 2);
        assert_eq!(c.fail_class, Some(FailClass::TestFailure));
        assert_eq!(
            c.verifier_fail_class,
            Some(VerifierFailClass::CommandFailed)
        );
    }

    #[test]
    fn success_has_no_fail_class() {
        let c = classify(
            &[("selftest.log", "test result: ok. 3 passed\nEXIT_CODE=0")],
            Some(0),
        );
        assert!(c.issues.is_empty());
        assert_eq!(c.fail_class, None);
    }

    #[test]
    fn evidence_lines_are_capped() {
        let text = "test x ... FAILED\n".repeat(20);
        let c = classify(&[("t.log", &text)], Some(101));
        let tf = c
            .issues
            .iter()
            .find(|i| i.kind == IssueKind::TestFailure)
            .unwrap();
        assert_eq!(tf.evidence.len(), MAX_EVIDENCE_LINES);
    }

    #[test]
    fn lint_and_type_errors() {
        assert_eq!(
            classify(&[("b.log", "error[E0308]: mismatched types")], Some(101)).fail_class,
            Some(FailClass::TypeError)
        );
        assert_eq!(
            classify(
                &[(
                    "b.log",
                    "error: this could be simpler  = note: `#[deny(clippy::all)]`"
                )],
                Some(101)
            )
            .fail_class,
            Some(FailClass::LintError)
        );
        assert_eq!(
            classify(&[("b.log", "curl: (7) Connection refused")], Some(7)).fail_class,
            Some(FailClass::ExternalDependency)
        );
    }
}

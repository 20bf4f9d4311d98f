//! The failure catalogue (seed 000 §8.2.2) as data, the internal verifier codes,
//! both `fail_class` taxonomies (seed 000 §8.2.1 verdict output and seed 001 §2
//! verifier `verdict.json`) and the mapping from a reason code to each.
//!
//! [`ReasonCode`] is declared in **priority order**: when several rules fail,
//! the verdict's `reason_code` is the smallest code among the findings (see
//! `docs/VERIFIER.md`, "Reason-code priority").

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A machine-actionable failure reason. The derived `Ord` is the priority:
/// earlier variants win.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReasonCode {
    /// Internal: the verifier itself failed (bug, panic, I/O error on a file
    /// that exists). Nothing it says about the evidence can be trusted.
    VerifierError,
    /// Internal: evidence contradicts its own digest (`evidence_hash`,
    /// `artifact_digests`, diverging copies of `patch.diff`).
    EvidenceTampered,
    ScopeConflict,
    PolicyViolation,
    EvidenceMissing,
    SchemaViolation,
    PreflightFailed,
    PinsInsufficient,
    PermissionDenied,
    FileNotFound,
    MergeConflict,
    TimeoutExceeded,
    BudgetExceeded,
    ExecutorError,
    NeedsClarification,
    CiFailed,
}

/// One row of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CatalogueEntry {
    pub code: ReasonCode,
    pub meaning: &'static str,
    pub trigger: &'static str,
    pub action: &'static str,
    /// `true` for the 14 seed codes, `false` for Docket's internal codes.
    pub from_seed: bool,
}

const fn seed(
    code: ReasonCode,
    meaning: &'static str,
    trigger: &'static str,
    action: &'static str,
) -> CatalogueEntry {
    CatalogueEntry {
        code,
        meaning,
        trigger,
        action,
        from_seed: true,
    }
}

/// The 14 seed codes in the seed's table order (seed 000 §8.2.2).
pub const SEED_CATALOGUE: [CatalogueEntry; 14] = [
    seed(
        ReasonCode::ScopeConflict,
        "Modified disallowed files",
        "changed_files include paths outside pins.allowed_paths",
        "Restrict edits to allowed scope; re-run with corrected pins",
    ),
    seed(
        ReasonCode::CiFailed,
        "Tests failed",
        "tests.passed=false or non-zero exit",
        "Fix failures; attach logs; retry",
    ),
    seed(
        ReasonCode::SchemaViolation,
        "Output schema invalid",
        "submit.json missing required fields",
        "Regenerate submit.json to match schema; retry",
    ),
    seed(
        ReasonCode::PinsInsufficient,
        "Context pins insufficient",
        "Required inputs not pinned",
        "Request additional pins or move required info into pinned scope",
    ),
    seed(
        ReasonCode::PolicyViolation,
        "Role policy violated",
        "Forbidden tools/actions used",
        "Stop; escalate to policy owner; retry with compliant approach",
    ),
    seed(
        ReasonCode::BudgetExceeded,
        "Budget exceeded",
        "Token/time/compute budget exceeded",
        "Reduce scope; split task; retry",
    ),
    seed(
        ReasonCode::TimeoutExceeded,
        "Execution timeout",
        "Execution exceeds configured timeout",
        "Split task; optimize steps; retry",
    ),
    seed(
        ReasonCode::ExecutorError,
        "Executor internal failure",
        "Runtime error, model API error",
        "Retry; include stack trace hash",
    ),
    seed(
        ReasonCode::PreflightFailed,
        "Preflight validation failed",
        "Role/pins/task metadata validation fails",
        "Fix config and rerun preflight",
    ),
    seed(
        ReasonCode::FileNotFound,
        "Required file missing",
        "A pinned file referenced does not exist",
        "Add/restore the file or correct the path",
    ),
    seed(
        ReasonCode::PermissionDenied,
        "Permission blocked",
        "OS/filesystem permissions prevent read/write",
        "Adjust permissions; change location; retry",
    ),
    seed(
        ReasonCode::MergeConflict,
        "Patch cannot apply cleanly",
        "Patch application fails due to divergent base",
        "Rebase/update; regenerate patch; retry",
    ),
    seed(
        ReasonCode::EvidenceMissing,
        "Evidence incomplete",
        "Required artifacts absent",
        "Recreate missing evidence; ensure paths are correct",
    ),
    seed(
        ReasonCode::NeedsClarification,
        "Task ambiguity",
        "Goal unclear or contradictory requirements",
        "Ask targeted questions; proceed after clarification",
    ),
];

/// Docket's internal codes (not in the seed table).
pub const INTERNAL_CATALOGUE: [CatalogueEntry; 2] = [
    CatalogueEntry {
        code: ReasonCode::VerifierError,
        meaning: "Verifier internal failure",
        trigger: "A rule panicked, an internal invariant broke, or an existing artifact could not be read",
        action: "Fix the verifier or the artifact store; re-run verification (the evidence was not judged)",
        from_seed: false,
    },
    CatalogueEntry {
        code: ReasonCode::EvidenceTampered,
        meaning: "Evidence contradicts its digest",
        trigger: "evidence_hash or artifact_digests mismatch, or copies of patch.diff differ",
        action: "Treat the run as untrusted; regenerate evidence from a real execution",
        from_seed: false,
    },
];

impl ReasonCode {
    pub const ALL: [ReasonCode; 16] = [
        Self::VerifierError,
        Self::EvidenceTampered,
        Self::ScopeConflict,
        Self::PolicyViolation,
        Self::EvidenceMissing,
        Self::SchemaViolation,
        Self::PreflightFailed,
        Self::PinsInsufficient,
        Self::PermissionDenied,
        Self::FileNotFound,
        Self::MergeConflict,
        Self::TimeoutExceeded,
        Self::BudgetExceeded,
        Self::ExecutorError,
        Self::NeedsClarification,
        Self::CiFailed,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerifierError => "VERIFIER_ERROR",
            Self::EvidenceTampered => "EVIDENCE_TAMPERED",
            Self::ScopeConflict => "SCOPE_CONFLICT",
            Self::PolicyViolation => "POLICY_VIOLATION",
            Self::EvidenceMissing => "EVIDENCE_MISSING",
            Self::SchemaViolation => "SCHEMA_VIOLATION",
            Self::PreflightFailed => "PREFLIGHT_FAILED",
            Self::PinsInsufficient => "PINS_INSUFFICIENT",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::FileNotFound => "FILE_NOT_FOUND",
            Self::MergeConflict => "MERGE_CONFLICT",
            Self::TimeoutExceeded => "TIMEOUT_EXCEEDED",
            Self::BudgetExceeded => "BUDGET_EXCEEDED",
            Self::ExecutorError => "EXECUTOR_ERROR",
            Self::NeedsClarification => "NEEDS_CLARIFICATION",
            Self::CiFailed => "CI_FAILED",
        }
    }

    /// The catalogue row for this code.
    #[must_use]
    pub fn entry(self) -> &'static CatalogueEntry {
        SEED_CATALOGUE
            .iter()
            .chain(INTERNAL_CATALOGUE.iter())
            .find(|e| e.code == self)
            // Invariant: every variant has exactly one row (tested in `every_code_has_one_row`).
            .expect("every reason code has a catalogue row")
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string is not a catalogue code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown reason code {0:?}")]
pub struct UnknownReasonCode(pub String);

impl FromStr for ReasonCode {
    type Err = UnknownReasonCode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownReasonCode(s.to_owned()))
    }
}

/// `fail_class` of a verdict (seed 000 §8.2.1 "裁决输出").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailClass {
    Timeout,
    TestFailure,
    LintError,
    TypeError,
    SecurityViolation,
    ScopeViolation,
    ExternalDependency,
}

impl FailClass {
    pub const ALL: [FailClass; 7] = [
        Self::Timeout,
        Self::TestFailure,
        Self::LintError,
        Self::TypeError,
        Self::SecurityViolation,
        Self::ScopeViolation,
        Self::ExternalDependency,
    ];
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::TestFailure => "test_failure",
            Self::LintError => "lint_error",
            Self::TypeError => "type_error",
            Self::SecurityViolation => "security_violation",
            Self::ScopeViolation => "scope_violation",
            Self::ExternalDependency => "external_dependency",
        }
    }
}

impl fmt::Display for FailClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `fail_class` of the verifier `verdict.json` (seed 001 §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifierFailClass {
    CommandFailed,
    CommandDenied,
    Timeout,
    VerifierError,
    ArtifactMissing,
    VerdictMissing,
    Unknown,
}

impl VerifierFailClass {
    pub const ALL: [VerifierFailClass; 7] = [
        Self::CommandFailed,
        Self::CommandDenied,
        Self::Timeout,
        Self::VerifierError,
        Self::ArtifactMissing,
        Self::VerdictMissing,
        Self::Unknown,
    ];
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CommandFailed => "command_failed",
            Self::CommandDenied => "command_denied",
            Self::Timeout => "timeout",
            Self::VerifierError => "verifier_error",
            Self::ArtifactMissing => "artifact_missing",
            Self::VerdictMissing => "verdict_missing",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for VerifierFailClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The seed 000 `fail_class` a reason code maps to (table in `docs/VERIFIER.md`).
#[must_use]
pub fn fail_class_for(code: ReasonCode) -> FailClass {
    use ReasonCode as R;
    match code {
        R::ScopeConflict | R::PinsInsufficient => FailClass::ScopeViolation,
        R::PolicyViolation | R::PermissionDenied | R::EvidenceTampered => {
            FailClass::SecurityViolation
        }
        R::SchemaViolation => FailClass::TypeError,
        R::PreflightFailed => FailClass::LintError,
        R::TimeoutExceeded | R::BudgetExceeded => FailClass::Timeout,
        R::CiFailed | R::EvidenceMissing => FailClass::TestFailure,
        R::ExecutorError
        | R::FileNotFound
        | R::MergeConflict
        | R::NeedsClarification
        | R::VerifierError => FailClass::ExternalDependency,
    }
}

/// The seed 001 verifier `fail_class` a reason code maps to.
#[must_use]
pub fn verifier_fail_class_for(code: ReasonCode) -> VerifierFailClass {
    use ReasonCode as R;
    match code {
        R::VerifierError => VerifierFailClass::VerifierError,
        R::EvidenceMissing | R::FileNotFound => VerifierFailClass::ArtifactMissing,
        R::TimeoutExceeded | R::BudgetExceeded => VerifierFailClass::Timeout,
        R::PolicyViolation | R::PermissionDenied | R::ScopeConflict | R::PinsInsufficient => {
            VerifierFailClass::CommandDenied
        }
        R::CiFailed
        | R::ExecutorError
        | R::MergeConflict
        | R::SchemaViolation
        | R::PreflightFailed => VerifierFailClass::CommandFailed,
        R::EvidenceTampered | R::NeedsClarification => VerifierFailClass::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_row() {
        for code in ReasonCode::ALL {
            let rows = SEED_CATALOGUE
                .iter()
                .chain(INTERNAL_CATALOGUE.iter())
                .filter(|e| e.code == code)
                .count();
            assert_eq!(rows, 1, "{code}");
            assert_eq!(code.as_str().parse::<ReasonCode>(), Ok(code));
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        assert_eq!(SEED_CATALOGUE.len(), 14);
    }

    #[test]
    fn priority_is_declaration_order() {
        let mut sorted = ReasonCode::ALL;
        sorted.sort();
        assert_eq!(sorted, ReasonCode::ALL);
        assert!(ReasonCode::EvidenceMissing < ReasonCode::CiFailed);
    }

    #[test]
    fn fail_class_names_match_seeds() {
        let names: Vec<_> = FailClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            names,
            [
                "timeout",
                "test_failure",
                "lint_error",
                "type_error",
                "security_violation",
                "scope_violation",
                "external_dependency"
            ]
        );
        for c in VerifierFailClass::ALL {
            assert_eq!(
                serde_json::to_string(&c).unwrap(),
                format!("\"{}\"", c.as_str())
            );
        }
        assert_eq!(
            fail_class_for(ReasonCode::ScopeConflict),
            FailClass::ScopeViolation
        );
        assert_eq!(
            verifier_fail_class_for(ReasonCode::EvidenceMissing),
            VerifierFailClass::ArtifactMissing
        );
    }
}

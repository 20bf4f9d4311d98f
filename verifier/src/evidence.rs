//! Evidence types (seed 000 §8.2.4 "Evidence Types" and the evidence table,
//! seed 002 execution records, seed 003 trace).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The kind of an evidence blob. Serde and `Display` use the seed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EvidenceType {
    #[serde(rename = "patch.diff")]
    PatchDiff,
    #[serde(rename = "selftest.log")]
    SelftestLog,
    #[serde(rename = "report.md")]
    ReportMd,
    #[serde(rename = "submit.json")]
    SubmitJson,
    #[serde(rename = "screenshot")]
    Screenshot,
    #[serde(rename = "stdout")]
    Stdout,
    #[serde(rename = "stderr")]
    Stderr,
    #[serde(rename = "execution")]
    Execution,
    #[serde(rename = "trace")]
    Trace,
    #[serde(rename = "metrics")]
    Metrics,
    #[serde(rename = "other")]
    Other,
}

impl EvidenceType {
    pub const ALL: [EvidenceType; 11] = [
        Self::PatchDiff,
        Self::SelftestLog,
        Self::ReportMd,
        Self::SubmitJson,
        Self::Screenshot,
        Self::Stdout,
        Self::Stderr,
        Self::Execution,
        Self::Trace,
        Self::Metrics,
        Self::Other,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PatchDiff => "patch.diff",
            Self::SelftestLog => "selftest.log",
            Self::ReportMd => "report.md",
            Self::SubmitJson => "submit.json",
            Self::Screenshot => "screenshot",
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
            Self::Execution => "execution",
            Self::Trace => "trace",
            Self::Metrics => "metrics",
            Self::Other => "other",
        }
    }

    /// Whether an artifact named `name` (relative, `/`-separated) is evidence
    /// of this type in the seed 000 directory layout.
    #[must_use]
    pub fn matches_artifact(self, name: &str) -> bool {
        let file = name.rsplit('/').next().unwrap_or(name);
        let lower = file.to_ascii_lowercase();
        match self {
            Self::PatchDiff => file == "patch.diff",
            Self::SelftestLog => file == "selftest.log",
            Self::ReportMd => file == "report.md",
            Self::SubmitJson => file == "submit.json",
            Self::Screenshot => {
                (name.starts_with("screenshots/") || name.contains("/screenshots/"))
                    && [".png", ".jpg", ".jpeg", ".gif", ".webp"]
                        .iter()
                        .any(|ext| lower.ends_with(ext))
            }
            Self::Stdout => lower.starts_with("stdout") || lower.ends_with(".stdout.log"),
            Self::Stderr => lower.starts_with("stderr") || lower.ends_with(".stderr.log"),
            Self::Execution => crate::execution::is_execution_record_name(name),
            Self::Trace => lower == "trace.jsonl" || lower.ends_with(".trace.jsonl"),
            Self::Metrics => {
                name.starts_with("metrics/")
                    || lower == "metrics.json"
                    || lower.ends_with(".metrics.json")
            }
            Self::Other => name.starts_with("evidence/"),
        }
    }
}

impl fmt::Display for EvidenceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The string is not one of the eleven evidence type names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown evidence type {0:?}")]
pub struct UnknownEvidenceType(pub String);

impl FromStr for EvidenceType {
    type Err = UnknownEvidenceType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownEvidenceType(s.to_owned()))
    }
}

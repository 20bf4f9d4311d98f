//! Verdicts: `scc.verdict.v1` (seed 000 §3) and the verifier `verdict.json`
//! (seed 001 §2).

use crate::Violation;
use crate::catalogue::{
    FailClass, ReasonCode, VerifierFailClass, fail_class_for, verifier_fail_class_for,
};
use crate::json::{Reader, is_rfc3339, parse_rfc3339, parse_value, pointer, typed};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

pub const VERDICT_SCHEMA_VERSION: &str = "scc.verdict.v1";

/// The four checks named by seed 000 §3.
pub const SEED_CHECKS: [&str; 4] = [
    "schema_valid",
    "scope_valid",
    "tests_passed",
    "evidence_present",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
}

/// `timestamps` (RFC 3339 strings).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timestamps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted_at: Option<String>,
    pub evaluated_at: String,
}

/// `links`: where the evidence is (paths within the artifacts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Links {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submit_json: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_md: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selftest_log: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_diff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_dir: Option<String>,
}

/// `links` in a verdict: a JSON object whose values are strings or
/// `null` (the checked reader's rule; keys it does not know are kept out).
fn links_object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Links, D::Error> {
    let map: BTreeMap<String, Option<String>> = crate::json::object(d)?;
    let take = |key: &str| map.get(key).cloned().flatten();
    Ok(Links {
        submit_json: take("submit_json"),
        report_md: take("report_md"),
        selftest_log: take("selftest_log"),
        patch_diff: take("patch_diff"),
        evidence_dir: take("evidence_dir"),
    })
}

/// One failed rule: which check it fails, the rule id, the reason code it
/// implies, and where (file, line).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Finding {
    pub check: String,
    pub rule: String,
    pub reason_code: ReasonCode,
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub message: String,
}

impl Finding {
    /// `rule file:line: message`, the form used in `messages`.
    #[must_use]
    pub fn render(&self) -> String {
        let location = match self.line {
            Some(line) => format!("{}:{line}", self.file),
            None => self.file.clone(),
        };
        format!(
            "[{}] {} {location}: {}",
            self.reason_code, self.rule, self.message
        )
    }
}

/// An `scc.verdict.v1` document. Field order is the serialization order, and
/// all maps are `BTreeMap`, so [`Verdict::to_canonical_json`] is deterministic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub schema_version: String,
    pub task_id: String,
    #[serde(deserialize_with = "crate::json::string_enum")]
    pub verdict: Outcome,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::option_string_enum"
    )]
    pub reason_code: Option<ReasonCode>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::option_string_enum"
    )]
    pub fail_class: Option<FailClass>,
    pub messages: Vec<String>,
    /// Check name → passed. Always holds the four seed checks, plus one entry
    /// per evidence rule group the verifier ran.
    pub checks: BTreeMap<String, bool>,
    #[serde(deserialize_with = "crate::json::object")]
    pub timestamps: Timestamps,
    #[serde(default, deserialize_with = "links_object")]
    pub links: Links,
    /// Evidence OIDs (filled by the ledger; empty from the offline engine).
    #[serde(default)]
    pub evidence_oids: Vec<String>,
    /// Artifact name → SHA-256 hex of the bytes the verdict was computed on.
    #[serde(default)]
    pub evidence_digests: BTreeMap<String, String>,
    /// Structured form of `messages`.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

impl Verdict {
    /// Deterministic JSON bytes: the same verdict gives the same bytes.
    #[must_use]
    pub fn to_canonical_json(&self) -> Vec<u8> {
        // Invariant: a Verdict holds only strings, bools, integers and string-keyed maps,
        // which serde_json always serializes.
        serde_json::to_vec(self).expect("verdict serialization cannot fail")
    }

    /// The seed 001 `verdict.json` view of this verdict.
    #[must_use]
    pub fn verifier_output(&self) -> VerifierOutput {
        let (exit_code, fail_class) = match self.verdict {
            Outcome::Pass => (0, None),
            Outcome::Fail => (
                5,
                Some(
                    self.reason_code
                        .map_or(VerifierFailClass::Unknown, verifier_fail_class_for),
                ),
            ),
        };
        let mut evidence_paths: Vec<String> = self.evidence_digests.keys().cloned().collect();
        evidence_paths.sort();
        VerifierOutput {
            verdict: self.verdict,
            fail_class,
            exit_code,
            evidence_paths,
            generated_utc: self.timestamps.evaluated_at.clone(),
        }
    }

    /// Validates a verdict received from an external verifier, reporting
    /// every violation:
    /// - `verdict.json_syntax`, `verdict.object`, `verdict.required`, `verdict.type`;
    /// - `verdict.schema_version` (exactly `scc.verdict.v1`);
    /// - `verdict.reason_code.known` (a catalogue code);
    /// - `verdict.fail_class.known` (a seed 000 fail_class);
    /// - `verdict.checks.seed` (the four seed checks are present, booleans);
    /// - `verdict.no_check_no_pass` (PASS needs at least one check, all true,
    ///   and no reason_code/fail_class);
    /// - `verdict.fail_needs_reason` (FAIL names a reason_code and fail_class);
    /// - `verdict.follows_from_checks` (FAIL needs at least one failed check);
    /// - `verdict.timestamps` (RFC 3339).
    pub fn parse(bytes: &[u8]) -> Result<Verdict, Vec<Violation>> {
        match typed::<Verdict>(bytes) {
            Some(verdict) if verdict.follows_the_rules() => Ok(verdict),
            _ => Self::parse_checked(bytes),
        }
    }

    /// The rules [`Verdict::parse_checked`] checks on the `Value` tree, on
    /// a verdict serde read: true when none is broken.
    fn follows_the_rules(&self) -> bool {
        let has_seed_checks = SEED_CHECKS.iter().all(|c| self.checks.contains_key(*c));
        let timestamps = is_rfc3339(&self.timestamps.evaluated_at)
            && self
                .timestamps
                .submitted_at
                .as_deref()
                .is_none_or(is_rfc3339);
        let outcome = match self.verdict {
            Outcome::Pass => {
                !self.checks.is_empty()
                    && self.checks.values().all(|ok| *ok)
                    && self.reason_code.is_none()
                    && self.fail_class.is_none()
            }
            Outcome::Fail => {
                self.reason_code.is_some()
                    && self.fail_class.is_some()
                    && self.checks.values().any(|ok| !*ok)
            }
        };
        self.schema_version == VERDICT_SCHEMA_VERSION
            && !self.task_id.trim().is_empty()
            && has_seed_checks
            && timestamps
            && outcome
    }

    /// [`Verdict::parse`] through a `Value` tree: every violation, named
    /// with its JSON pointer.
    ///
    /// `parse` gives the same answer (it answers a valid document without
    /// building the tree); this is the reader it falls back to, public so
    /// that tests and fuzz targets can hold the two to the same answer.
    pub fn parse_checked(bytes: &[u8]) -> Result<Verdict, Vec<Violation>> {
        let value = parse_value("verdict", bytes)?;
        let mut r = Reader::new("verdict");
        let Some(root) = r.root(&value) else {
            return Err(r.violations);
        };
        const REQ: &str = "verdict.required";
        const TYPE: &str = "verdict.type";
        if let Some(s) = r
            .required(root, "", "schema_version", REQ)
            .and_then(|v| r.string(v, "/schema_version", TYPE))
            && s != VERDICT_SCHEMA_VERSION
        {
            r.violate(
                "verdict.schema_version",
                "/schema_version",
                format!("must be {VERDICT_SCHEMA_VERSION:?}, found {s:?}"),
            );
        }
        r.required(root, "", "task_id", REQ)
            .and_then(|v| r.non_empty_string(v, "/task_id", TYPE));
        let outcome = r
            .required(root, "", "verdict", REQ)
            .and_then(|v| r.string(v, "/verdict", TYPE))
            .and_then(|s| match s.as_str() {
                "PASS" => Some(Outcome::Pass),
                "FAIL" => Some(Outcome::Fail),
                other => {
                    r.violate(
                        "verdict.type",
                        "/verdict",
                        format!("{other:?} is not PASS or FAIL"),
                    );
                    None
                }
            });
        let reason = match root.get("reason_code") {
            None | Some(Value::Null) => None,
            Some(v) => {
                r.string(v, "/reason_code", TYPE)
                    .and_then(|s| match s.parse::<ReasonCode>() {
                        Ok(c) => Some(c),
                        Err(e) => {
                            r.violate("verdict.reason_code.known", "/reason_code", e.to_string());
                            None
                        }
                    })
            }
        };
        let fail_class = match root.get("fail_class") {
            None | Some(Value::Null) => None,
            Some(v) => r.string(v, "/fail_class", TYPE).and_then(|s| {
                match FailClass::ALL.into_iter().find(|c| c.as_str() == s) {
                    Some(c) => Some(c),
                    None => {
                        r.violate(
                            "verdict.fail_class.known",
                            "/fail_class",
                            format!("{s:?} is not a seed 000 fail_class"),
                        );
                        None
                    }
                }
            }),
        };
        if let Some(v) = r.required(root, "", "messages", REQ) {
            r.string_array(v, "/messages", TYPE);
        }
        let checks = r
            .required(root, "", "checks", REQ)
            .and_then(|v| r.object(v, "/checks", TYPE))
            .map(|obj| {
                let mut checks = BTreeMap::new();
                for (k, v) in obj {
                    if let Some(b) = r.bool(v, &pointer("/checks", k), TYPE) {
                        checks.insert(k.clone(), b);
                    }
                }
                for seed in SEED_CHECKS {
                    if !obj.contains_key(seed) {
                        r.violate(
                            "verdict.checks.seed",
                            pointer("/checks", seed),
                            format!("seed check {seed} is missing"),
                        );
                    }
                }
                checks
            });
        if let Some(ts) = r
            .required(root, "", "timestamps", REQ)
            .and_then(|v| r.object(v, "/timestamps", TYPE))
        {
            if let Some(v) = r.required(ts, "/timestamps", "evaluated_at", REQ) {
                r.timestamp(v, "/timestamps/evaluated_at", "verdict.timestamps");
            }
            if let Some(v) = ts.get("submitted_at").filter(|v| !v.is_null()) {
                r.timestamp(v, "/timestamps/submitted_at", "verdict.timestamps");
            }
        }
        if let Some(v) = root.get("links").filter(|v| !v.is_null())
            && let Some(links) = r.object(v, "/links", TYPE)
        {
            for (k, v) in links {
                if !v.is_null() {
                    r.string(v, &pointer("/links", k), TYPE);
                }
            }
        }
        match (outcome, &checks) {
            (Some(Outcome::Pass), Some(checks)) => {
                if checks.is_empty() {
                    r.violate(
                        "verdict.no_check_no_pass",
                        "/checks",
                        "PASS without any check",
                    );
                }
                for (name, _) in checks.iter().filter(|(_, ok)| !**ok) {
                    r.violate(
                        "verdict.no_check_no_pass",
                        pointer("/checks", name),
                        format!("PASS with failed check {name}"),
                    );
                }
                if root.get("reason_code").is_some_and(|v| !v.is_null())
                    || root.get("fail_class").is_some_and(|v| !v.is_null())
                {
                    r.violate(
                        "verdict.no_check_no_pass",
                        "/reason_code",
                        "PASS must not carry a reason_code or fail_class",
                    );
                }
            }
            (Some(Outcome::Fail), Some(checks)) => {
                if root.get("reason_code").is_none_or(Value::is_null) {
                    r.violate(
                        "verdict.fail_needs_reason",
                        "/reason_code",
                        "FAIL must name a reason_code",
                    );
                }
                if root.get("fail_class").is_none_or(Value::is_null) {
                    r.violate(
                        "verdict.fail_needs_reason",
                        "/fail_class",
                        "FAIL must provide a fail_class (seed 000 §8.2.1)",
                    );
                }
                if checks.values().all(|ok| *ok) {
                    r.violate(
                        "verdict.follows_from_checks",
                        "/checks",
                        "FAIL without any failed check: the verdict must follow from the checks",
                    );
                }
            }
            _ => {}
        }
        let _ = (reason, fail_class);
        if !r.violations.is_empty() {
            return Err(r.violations);
        }
        serde_json::from_value::<Verdict>(value)
            .map_err(|e| vec![Violation::new("verdict.type", "", e.to_string())])
    }

    /// Builds a verdict from checks and findings (the engine's last step):
    /// PASS only when there is at least one check, every check passed and
    /// there are no findings; otherwise FAIL with the highest-priority reason.
    #[must_use]
    pub fn from_checks(
        task_id: String,
        mut checks: BTreeMap<String, bool>,
        mut findings: Vec<Finding>,
        timestamps: Timestamps,
        links: Links,
        evidence_digests: BTreeMap<String, String>,
    ) -> Verdict {
        for f in &findings {
            checks.insert(f.check.clone(), false);
        }
        if checks.is_empty() || (checks.values().any(|ok| !*ok) && findings.is_empty()) {
            findings.push(Finding {
                check: "verifier".into(),
                rule: "verdict.no_check_no_pass".into(),
                reason_code: ReasonCode::VerifierError,
                file: String::new(),
                line: None,
                message: "a check failed or none ran, without a finding explaining why".into(),
            });
            checks.insert("verifier".into(), false);
        }
        findings.sort();
        findings.dedup();
        let reason_code = findings.iter().map(|f| f.reason_code).min();
        let verdict = if reason_code.is_none() && checks.values().all(|ok| *ok) {
            Outcome::Pass
        } else {
            Outcome::Fail
        };
        // Messages: highest priority first, then by check/rule/file/line.
        let mut ordered: Vec<&Finding> = findings.iter().collect();
        ordered.sort_by(|a, b| {
            (a.reason_code, &a.file, a.line, &a.rule, &a.message).cmp(&(
                b.reason_code,
                &b.file,
                b.line,
                &b.rule,
                &b.message,
            ))
        });
        let messages = ordered.iter().map(|f| f.render()).collect();
        Verdict {
            schema_version: VERDICT_SCHEMA_VERSION.into(),
            task_id,
            verdict,
            reason_code,
            fail_class: reason_code.map(fail_class_for),
            messages,
            checks,
            timestamps,
            links,
            evidence_oids: Vec::new(),
            evidence_digests,
            findings,
        }
    }
}

/// Seed 001 §2 verifier `verdict.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifierOutput {
    pub verdict: Outcome,
    pub fail_class: Option<VerifierFailClass>,
    pub exit_code: i64,
    pub evidence_paths: Vec<String>,
    pub generated_utc: String,
}

impl VerifierOutput {
    /// Seed 001 fail-closed rule: a missing `verdict.json` is a FAIL with
    /// `verdict_missing`.
    #[must_use]
    pub fn missing(generated_utc: String) -> Self {
        Self {
            verdict: Outcome::Fail,
            fail_class: Some(VerifierFailClass::VerdictMissing),
            exit_code: 5,
            evidence_paths: Vec::new(),
            generated_utc,
        }
    }

    /// Validates a verifier `verdict.json`:
    /// - `verifier_output.required`/`.type` for the five fields;
    /// - `verifier_output.fail_class.known` (seed 001 taxonomy);
    /// - `verifier_output.generated_utc` (ISO-8601/RFC 3339 in UTC);
    /// - `verifier_output.evidence_paths.relative` (relative, no `..`);
    /// - `verifier_output.consistent` (PASS ⇔ exit_code 0, PASS has no fail_class).
    pub fn parse(bytes: &[u8]) -> Result<VerifierOutput, Vec<Violation>> {
        let value = parse_value("verifier_output", bytes)?;
        let mut r = Reader::new("verifier_output");
        let Some(root) = r.root(&value) else {
            return Err(r.violations);
        };
        const REQ: &str = "verifier_output.required";
        const TYPE: &str = "verifier_output.type";
        let outcome = r
            .required(root, "", "verdict", REQ)
            .and_then(|v| r.string(v, "/verdict", TYPE))
            .and_then(|s| match s.as_str() {
                "PASS" => Some(Outcome::Pass),
                "FAIL" => Some(Outcome::Fail),
                other => {
                    r.violate(TYPE, "/verdict", format!("{other:?} is not PASS or FAIL"));
                    None
                }
            });
        let fail_class =
            match r.required(root, "", "fail_class", REQ) {
                None | Some(Value::Null) => None,
                Some(v) => r.string(v, "/fail_class", TYPE).and_then(|s| {
                    match VerifierFailClass::ALL.into_iter().find(|c| c.as_str() == s) {
                        Some(c) => Some(c),
                        None => {
                            r.violate(
                                "verifier_output.fail_class.known",
                                "/fail_class",
                                format!("{s:?} is not in the seed 001 taxonomy"),
                            );
                            None
                        }
                    }
                }),
            };
        let exit_code = r
            .required(root, "", "exit_code", REQ)
            .and_then(|v| r.integer(v, "/exit_code", TYPE));
        if let Some(paths) = r
            .required(root, "", "evidence_paths", REQ)
            .and_then(|v| r.string_array(v, "/evidence_paths", TYPE))
        {
            for (i, p) in paths.iter().enumerate() {
                if crate::scope::normalize_path(p).is_none() {
                    r.violate(
                        "verifier_output.evidence_paths.relative",
                        format!("/evidence_paths/{i}"),
                        format!("{p:?} is not relative to the run output dir"),
                    );
                }
            }
        }
        if let Some(s) = r
            .required(root, "", "generated_utc", REQ)
            .and_then(|v| r.string(v, "/generated_utc", TYPE))
        {
            match parse_rfc3339(&s) {
                Some(t) if t.offset().is_utc() => {}
                _ => r.violate(
                    "verifier_output.generated_utc",
                    "/generated_utc",
                    format!("{s:?} is not an ISO-8601 UTC timestamp"),
                ),
            }
        }
        match (outcome, exit_code) {
            (Some(Outcome::Pass), Some(code)) if code != 0 => r.violate(
                "verifier_output.consistent",
                "/exit_code",
                "PASS with a non-zero exit_code",
            ),
            (Some(Outcome::Fail), Some(0)) => r.violate(
                "verifier_output.consistent",
                "/exit_code",
                "FAIL with exit_code 0",
            ),
            _ => {}
        }
        if outcome == Some(Outcome::Pass) && fail_class.is_some() {
            r.violate(
                "verifier_output.consistent",
                "/fail_class",
                "PASS with a fail_class",
            );
        }
        if !r.violations.is_empty() {
            return Err(r.violations);
        }
        serde_json::from_value(value).map_err(|e| vec![Violation::new(TYPE, "", e.to_string())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass_json(checks: &str) -> String {
        format!(
            r#"{{"schema_version":"scc.verdict.v1","task_id":"t","verdict":"PASS","messages":[],"checks":{checks},"timestamps":{{"evaluated_at":"2026-02-09T14:30:00Z"}},"links":{{}}}}"#
        )
    }

    #[test]
    fn no_check_no_pass() {
        let ok = pass_json(
            r#"{"schema_valid":true,"scope_valid":true,"tests_passed":true,"evidence_present":true}"#,
        );
        assert!(Verdict::parse(ok.as_bytes()).is_ok());
        let failed = pass_json(
            r#"{"schema_valid":true,"scope_valid":false,"tests_passed":true,"evidence_present":true}"#,
        );
        assert_eq!(
            Verdict::parse(failed.as_bytes()).unwrap_err()[0].rule,
            "verdict.no_check_no_pass"
        );
        let none = pass_json("{}");
        let rules: Vec<String> = Verdict::parse(none.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|v| v.rule)
            .collect();
        assert!(rules.contains(&"verdict.no_check_no_pass".to_owned()));
        assert!(rules.contains(&"verdict.checks.seed".to_owned()));
    }

    #[test]
    fn fail_needs_reason_and_failed_check() {
        let j = r#"{"schema_version":"scc.verdict.v1","task_id":"t","verdict":"FAIL","messages":[],"checks":{"schema_valid":true,"scope_valid":true,"tests_passed":true,"evidence_present":true},"timestamps":{"evaluated_at":"x"}}"#;
        let rules: Vec<String> = Verdict::parse(j.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|v| v.rule)
            .collect();
        for r in [
            "verdict.fail_needs_reason",
            "verdict.follows_from_checks",
            "verdict.timestamps",
        ] {
            assert!(rules.contains(&r.to_owned()), "{r} in {rules:?}");
        }
    }

    #[test]
    fn verifier_output_rules() {
        let ok = r#"{"verdict":"FAIL","fail_class":"artifact_missing","exit_code":5,"evidence_paths":["evidence/test.log"],"generated_utc":"2026-02-09T14:30:00Z"}"#;
        assert!(VerifierOutput::parse(ok.as_bytes()).is_ok());
        let bad = r#"{"verdict":"PASS","fail_class":"nope","exit_code":1,"evidence_paths":["../x"],"generated_utc":"2026-02-09T14:30:00+02:00"}"#;
        let rules: Vec<String> = VerifierOutput::parse(bad.as_bytes())
            .unwrap_err()
            .into_iter()
            .map(|v| v.rule)
            .collect();
        for r in [
            "verifier_output.fail_class.known",
            "verifier_output.evidence_paths.relative",
            "verifier_output.generated_utc",
            "verifier_output.consistent",
        ] {
            assert!(rules.contains(&r.to_owned()), "{r} in {rules:?}");
        }
        assert_eq!(
            VerifierOutput::missing("2026-02-09T14:30:00Z".into()).fail_class,
            Some(VerifierFailClass::VerdictMissing)
        );
    }

    const FULL_PASS: &str = r#"{"schema_version":"scc.verdict.v1","task_id":"72c84e9c-0975-4c1a-b9a5-864c2725dc8a","verdict":"PASS","messages":["ok"],"checks":{"schema_valid":true,"scope_valid":true,"tests_passed":true,"evidence_present":true,"lint":true},"timestamps":{"submitted_at":"2026-02-09T14:29:00Z","evaluated_at":"2026-02-09T14:30:00Z"},"links":{"submit_json":"submit.json","report_md":null,"custom":"x"},"evidence_oids":["01J0000000000000000000000A"],"evidence_digests":{"patch.diff":"ab"},"findings":[],"engine_note":{"n":1}}"#;
    const FULL_FAIL: &str = r#"{"schema_version":"scc.verdict.v1","task_id":"t-1","verdict":"FAIL","reason_code":"SCOPE_CONFLICT","fail_class":"scope_violation","messages":["m"],"checks":{"schema_valid":true,"scope_valid":false,"tests_passed":true,"evidence_present":true},"timestamps":{"evaluated_at":"2026-02-09T14:30:00+00:00"},"links":{},"findings":[{"check":"scope_valid","rule":"scope.forbidden","reason_code":"SCOPE_CONFLICT","file":"a.rs","line":3,"message":"no"}]}"#;

    /// The typed reader never accepts what the checked one refuses, and
    /// reads the same verdict when both accept.
    #[test]
    fn the_typed_reader_answers_like_the_checked_one() {
        let extra = [
            "PASS",
            "FAIL",
            "scc.verdict.v1",
            "scc.verdict.v2",
            "SCOPE_CONFLICT",
            "CI_FAILED",
            "scope_violation",
            "timeout",
            "NOPE",
        ];
        crate::json::assert_readers_agree(
            &[FULL_PASS, FULL_FAIL],
            &extra,
            |b| typed::<Verdict>(b).is_some_and(|d| d.follows_the_rules()),
            Verdict::parse,
            Verdict::parse_checked,
        );
    }
}

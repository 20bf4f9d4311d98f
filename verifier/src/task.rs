//! The task contract: seed 000 §1 "Task Input Schema" plus Docket's
//! `acceptance` section and `retention_class` (DESIGN "Vocabulary").

use crate::json::{Reader, is_rfc3339, parse_value, pointer, typed};
use crate::scope::Scope;
use crate::{EvidenceType, Violation};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `pins` (seed 000 §1): scope guardrails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pins {
    pub allowed_paths: Vec<String>,
    pub forbidden_paths: Vec<String>,
}

/// `context` (seed 000 §1): structured helper data, kept verbatim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskContext {
    #[serde(default)]
    pub map: Value,
    #[serde(default)]
    pub docs: Value,
    #[serde(default)]
    pub history: Value,
}

/// `required_evidence`: the seed names as JSON strings (serde's derive
/// would also read `{"patch.diff": null}`).
fn evidence_types<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<EvidenceType>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    names
        .iter()
        .map(|n| n.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// What a verdict on this task must check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acceptance {
    #[serde(default, deserialize_with = "evidence_types")]
    pub required_evidence: Vec<EvidenceType>,
    #[serde(default)]
    pub required_checks: Vec<String>,
    #[serde(default)]
    pub required_test_commands: Vec<String>,
    /// Docket: the task's test results must come from the execution
    /// gateway (seed 002): a submission passes only with a gateway-signed
    /// `execution.recorded` for the task (docs/DOMAIN.md §3.3.1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_gateway_execution: bool,
}

/// Retention class of the task's evidence (seed 000 §8.2.4 §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetentionClass {
    Routine,
    HighImpact,
    Pinned,
}

/// A validated task contract. Only [`TaskContract::parse`] builds one from
/// untrusted bytes, so holding a `TaskContract` means every rule held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskContract {
    pub task_id: uuid::Uuid,
    pub goal: String,
    pub role: String,
    #[serde(deserialize_with = "crate::json::object")]
    pub pins: Pins,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::option_object"
    )]
    pub context: Option<TaskContext>,
    #[serde(default, deserialize_with = "crate::json::object")]
    pub acceptance: Acceptance,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::json::option_string_enum"
    )]
    pub retention_class: Option<RetentionClass>,
    /// Docket's verdict deadline (RFC 3339): when it passes with no verdict,
    /// the ledger records FAIL `verdict_missing` (seed 001 fail-closed rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_deadline: Option<String>,
}

impl TaskContract {
    /// Decodes and validates a task contract, reporting **every** violated
    /// rule:
    /// - `task.json_syntax`, `task.object`, `task.required` (missing field),
    ///   `task.type` (wrong JSON type);
    /// - `task.task_id.uuid` (seed 000 §1: MUST be a UUID string);
    /// - `task.goal.non_empty`, `task.role.non_empty`;
    /// - `task.pins.allowed_paths.non_empty` (MUST be non-empty);
    /// - `task.pins.syntax` (each pin a relative path or valid glob);
    /// - `task.pins.disjoint` (no path in both lists);
    /// - `task.files.within_scope` (every `files` entry within the pins);
    /// - `task.context.object`, `task.acceptance.*`, `task.retention_class`;
    /// - `task.verdict_deadline` (an RFC 3339 timestamp, when present).
    pub fn parse(bytes: &[u8]) -> Result<TaskContract, Vec<Violation>> {
        match typed::<TaskContract>(bytes) {
            Some(contract) if contract.follows_the_rules() => Ok(contract),
            _ => Self::parse_checked(bytes),
        }
    }

    /// The rules [`TaskContract::parse_checked`] checks on the `Value`
    /// tree, on a contract serde read: true when none is broken.
    fn follows_the_rules(&self) -> bool {
        let filled = |s: &str| !s.trim().is_empty();
        let pins = &self.pins;
        let disjoint = !pins.forbidden_paths.iter().any(|f| {
            let f = normal_pin(f);
            pins.allowed_paths.iter().any(|a| normal_pin(a) == f)
        });
        let in_scope = || match self.scope() {
            Ok(scope) => self.files.iter().all(|f| scope.decide(f).is_allowed()),
            Err(_) => false,
        };
        let acceptance = &self.acceptance;
        filled(&self.goal)
            && filled(&self.role)
            && !pins.allowed_paths.is_empty()
            && disjoint
            && acceptance.required_checks.iter().all(|c| filled(c))
            && acceptance.required_test_commands.iter().all(|c| filled(c))
            && self.verdict_deadline.as_deref().is_none_or(is_rfc3339)
            && in_scope()
    }

    /// [`TaskContract::parse`] through a `Value` tree: every violation,
    /// named with its JSON pointer.
    ///
    /// `parse` gives the same answer (it answers a valid document without
    /// building the tree); this is the reader it falls back to, public so
    /// that tests and fuzz targets can hold the two to the same answer.
    pub fn parse_checked(bytes: &[u8]) -> Result<TaskContract, Vec<Violation>> {
        let value = parse_value("task", bytes)?;
        let mut r = Reader::new("task");
        let Some(root) = r.root(&value) else {
            return Err(r.violations);
        };
        const REQ: &str = "task.required";
        const TYPE: &str = "task.type";

        let task_id = r
            .required(root, "", "task_id", REQ)
            .and_then(|v| r.string(v, "/task_id", TYPE))
            .and_then(|s| match uuid::Uuid::try_parse(&s) {
                Ok(id) => Some(id),
                Err(e) => {
                    r.violate(
                        "task.task_id.uuid",
                        "/task_id",
                        format!("{s:?} is not a UUID: {e}"),
                    );
                    None
                }
            });
        let goal = r
            .required(root, "", "goal", REQ)
            .and_then(|v| r.non_empty_string(v, "/goal", "task.goal.non_empty"));
        let role = r
            .required(root, "", "role", REQ)
            .and_then(|v| r.non_empty_string(v, "/role", "task.role.non_empty"));

        let pins = r
            .required(root, "", "pins", REQ)
            .and_then(|v| r.object(v, "/pins", TYPE))
            .and_then(|pins| {
                let allowed = r
                    .required(pins, "/pins", "allowed_paths", REQ)
                    .and_then(|v| r.string_array(v, "/pins/allowed_paths", TYPE));
                let forbidden = match pins.get("forbidden_paths") {
                    None | Some(Value::Null) => Some(Vec::new()),
                    Some(v) => r.string_array(v, "/pins/forbidden_paths", TYPE),
                };
                if let Some(a) = &allowed
                    && a.is_empty()
                {
                    r.violate(
                        "task.pins.allowed_paths.non_empty",
                        "/pins/allowed_paths",
                        "pins.allowed_paths MUST be non-empty",
                    );
                }
                if let (Some(a), Some(f)) = (&allowed, &forbidden) {
                    for (i, path) in f.iter().enumerate() {
                        if a.iter().any(|x| normal_pin(x) == normal_pin(path)) {
                            r.violate(
                                "task.pins.disjoint",
                                format!("/pins/forbidden_paths/{i}"),
                                format!(
                                    "{path:?} appears in both allowed_paths and forbidden_paths"
                                ),
                            );
                        }
                    }
                }
                Some(Pins {
                    allowed_paths: allowed?,
                    forbidden_paths: forbidden?,
                })
            });

        let scope = pins
            .as_ref()
            .filter(|p| !p.allowed_paths.is_empty())
            .and_then(|p| {
                Scope::new(&p.allowed_paths, &p.forbidden_paths)
                    .map_err(|vs| r.violations.extend(vs))
                    .ok()
            });

        let files = match root.get("files") {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(v) => r.string_array(v, "/files", TYPE),
        };
        if let (Some(files), Some(scope)) = (&files, &scope) {
            for (i, file) in files.iter().enumerate() {
                let decision = scope.decide(file);
                if !decision.is_allowed() {
                    r.violate(
                        "task.files.within_scope",
                        format!("/files/{i}"),
                        format!("{file:?} is not within pins ({decision:?})"),
                    );
                }
            }
        }

        let context = match root.get("context") {
            None | Some(Value::Null) => Some(None),
            Some(v) => r
                .object(v, "/context", "task.context.object")
                .and_then(|_| match serde_json::from_value::<TaskContext>(v.clone()) {
                    Ok(c) => Some(Some(c)),
                    Err(e) => {
                        r.violate("task.context.object", "/context", e.to_string());
                        None
                    }
                }),
        };

        let acceptance = match root.get("acceptance") {
            None | Some(Value::Null) => Some(Acceptance::default()),
            Some(v) => read_acceptance(&mut r, v),
        };

        let retention_class = match root.get("retention_class") {
            None | Some(Value::Null) => Some(None),
            Some(v) => r
                .string(v, "/retention_class", TYPE)
                .and_then(|s| match s.as_str() {
                    "routine" => Some(Some(RetentionClass::Routine)),
                    "high_impact" => Some(Some(RetentionClass::HighImpact)),
                    "pinned" => Some(Some(RetentionClass::Pinned)),
                    other => {
                        r.violate(
                            "task.retention_class",
                            "/retention_class",
                            format!("{other:?} is not one of routine, high_impact, pinned"),
                        );
                        None
                    }
                }),
        };

        let verdict_deadline = match root.get("verdict_deadline") {
            None | Some(Value::Null) => None,
            Some(v) => r
                .timestamp(v, "/verdict_deadline", "task.verdict_deadline")
                .and_then(|_| v.as_str().map(str::to_owned)),
        };

        if !r.violations.is_empty() {
            return Err(r.violations);
        }
        match (
            task_id,
            goal,
            role,
            pins,
            files,
            context,
            acceptance,
            retention_class,
        ) {
            (
                Some(task_id),
                Some(goal),
                Some(role),
                Some(pins),
                Some(files),
                Some(context),
                Some(acceptance),
                Some(retention_class),
            ) => Ok(TaskContract {
                task_id,
                goal,
                role,
                pins,
                files,
                context,
                acceptance,
                retention_class,
                verdict_deadline,
            }),
            _ => Err(vec![Violation::new(
                "task.internal",
                "",
                "a field failed to decode without a recorded violation",
            )]),
        }
    }

    /// The compiled pins. Cannot fail on a parsed contract.
    pub fn scope(&self) -> Result<Scope, Vec<Violation>> {
        Scope::new(&self.pins.allowed_paths, &self.pins.forbidden_paths)
    }
}

/// A pin as `task.pins.disjoint` compares it: trimmed, without a leading
/// `./` or trailing `/`.
fn normal_pin(pin: &str) -> &str {
    pin.trim().trim_start_matches("./").trim_end_matches('/')
}

fn read_acceptance(r: &mut Reader, v: &Value) -> Option<Acceptance> {
    let obj = r.object(v, "/acceptance", "task.type")?;
    let mut list = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(v) => r.string_array(v, &pointer("/acceptance", key), "task.type"),
    };
    let evidence = list("required_evidence");
    let checks = list("required_checks");
    let commands = list("required_test_commands");
    let require_gateway_execution = match obj.get("require_gateway_execution") {
        None | Some(Value::Null) => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            r.violate(
                "task.type",
                "/acceptance/require_gateway_execution",
                "must be a boolean",
            );
            None
        }
    };
    let mut required_evidence = Vec::new();
    let mut ok = true;
    for (i, name) in evidence.iter().flatten().enumerate() {
        match name.parse::<EvidenceType>() {
            Ok(t) => required_evidence.push(t),
            Err(e) => {
                ok = false;
                r.violate(
                    "task.acceptance.required_evidence.known",
                    format!("/acceptance/required_evidence/{i}"),
                    e.to_string(),
                );
            }
        }
    }
    for (key, items) in [
        ("required_checks", &checks),
        ("required_test_commands", &commands),
    ] {
        for (i, item) in items.iter().flatten().enumerate() {
            if item.trim().is_empty() {
                ok = false;
                r.violate(
                    "task.acceptance.non_empty",
                    format!("/acceptance/{key}/{i}"),
                    "must not be empty",
                );
            }
        }
    }
    if !ok {
        return None;
    }
    Some(Acceptance {
        required_evidence,
        required_checks: checks?,
        required_test_commands: commands?,
        require_gateway_execution: require_gateway_execution?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
      "task_id": "72c84e9c-0975-4c1a-b9a5-864c2725dc8a",
      "goal": "Create IO layer documentation.",
      "role": "executor",
      "pins": {"allowed_paths": ["docs/prompt_os/io/"], "forbidden_paths": []},
      "files": ["docs/prompt_os/io/schemas.md"],
      "context": {"map": {}, "docs": {}, "history": {}},
      "acceptance": {"required_evidence": ["patch.diff", "selftest.log"], "required_checks": ["scope_valid"], "required_test_commands": ["cargo test"]},
      "retention_class": "high_impact"
    }"#;

    #[test]
    fn parses_seed_example() {
        let t = TaskContract::parse(GOOD.as_bytes()).unwrap();
        assert_eq!(t.role, "executor");
        assert_eq!(
            t.acceptance.required_evidence,
            vec![EvidenceType::PatchDiff, EvidenceType::SelftestLog]
        );
        assert_eq!(t.retention_class, Some(RetentionClass::HighImpact));
    }

    #[test]
    fn lists_every_violation() {
        let bad = r#"{"task_id": "TASK-001", "goal": "", "pins": {"allowed_paths": [], "forbidden_paths": [7]},
                      "files": ["src/x.rs"], "acceptance": {"required_evidence": ["video"]}, "retention_class": "forever"}"#;
        let v = TaskContract::parse(bad.as_bytes()).unwrap_err();
        let rules: Vec<&str> = v.iter().map(|v| v.rule.as_str()).collect();
        for expected in [
            "task.task_id.uuid",
            "task.goal.non_empty",
            "task.required",
            "task.pins.allowed_paths.non_empty",
            "task.type",
            "task.acceptance.required_evidence.known",
            "task.retention_class",
        ] {
            assert!(
                rules.contains(&expected),
                "{expected} missing from {rules:?}"
            );
        }
    }

    #[test]
    fn disjoint_and_files_within_scope() {
        let bad = r#"{"task_id": "72c84e9c-0975-4c1a-b9a5-864c2725dc8a", "goal": "g", "role": "r",
                      "pins": {"allowed_paths": ["src/"], "forbidden_paths": ["src"]}, "files": ["docs/a.md", "src/a.rs"]}"#;
        let v = TaskContract::parse(bad.as_bytes()).unwrap_err();
        let rules: Vec<&str> = v.iter().map(|v| v.rule.as_str()).collect();
        assert!(rules.contains(&"task.pins.disjoint"), "{rules:?}");
        // both files are out of scope: docs/ not allowed, src/ forbidden
        assert_eq!(
            rules
                .iter()
                .filter(|r| **r == "task.files.within_scope")
                .count(),
            2,
            "{rules:?}"
        );
    }

    #[test]
    fn syntax_error_has_line() {
        let v = TaskContract::parse(b"{\n\"task_id\": \n}").unwrap_err();
        assert_eq!(v[0].rule, "task.json_syntax");
        assert_eq!(v[0].line, Some(3));
    }

    /// The typed reader never accepts what the checked one refuses, and
    /// reads the same contract when both accept.
    #[test]
    fn the_typed_reader_answers_like_the_checked_one() {
        let extra = [
            "{72c84e9c-0975-4c1a-b9a5-864c2725dc8a}",
            "urn:uuid:72c84e9c-0975-4c1a-b9a5-864c2725dc8a",
            "72c84e9c09754c1ab9a5864c2725dc8a",
            "72C84E9C-0975-4C1A-B9A5-864C2725DC8A",
            "docs/prompt_os/io/",
            "./docs/prompt_os/io",
            "docs/**/*.md",
            "docs/[",
            "../x",
            "/abs",
            "src/a.rs",
            "patch.diff",
            "routine",
            "high_impact",
            "pinned",
            "Pinned",
            "2026-11-25T04:00:00+01:00",
        ];
        let gated = GOOD
            .replace(
                "\"required_test_commands\": [\"cargo test\"]",
                "\"required_test_commands\": [\"cargo test\"], \"require_gateway_execution\": true",
            )
            .replace(
                "\"retention_class\": \"high_impact\"",
                "\"retention_class\": \"pinned\", \"verdict_deadline\": \"2026-12-01T00:00:00Z\"",
            );
        crate::json::assert_readers_agree(
            &[GOOD, gated.as_str()],
            &extra,
            |b| typed::<TaskContract>(b).is_some_and(|d| d.follows_the_rules()),
            TaskContract::parse,
            TaskContract::parse_checked,
        );
    }
}

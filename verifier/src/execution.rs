//! Execution records (seed 002 "Evidence-Based Execution").
//!
//! `evidence_hash` is the lower-case hex SHA-256 of the UTF-8 bytes
//! `raw_command || "|" || stdout || "|" || stderr || "|" || exit_code`, where
//! `stdout`/`stderr` are the record's fields exactly as stored (so after
//! truncation) and `exit_code` is its decimal form (`-1`, `0`, `137`) or the
//! four bytes `null` when the record has no exit code (NO_EVIDENCE). No
//! trailing newline. See `docs/VERIFIER.md`.

use crate::Violation;
use crate::json::{Reader, parse_rfc3339, parse_value, typed};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest;

/// Seed 002 "Truncation Behavior": default limit in characters.
pub const TRUNCATION_LIMIT: usize = 10_000;
/// Seed 002 truncation marker, appended after the kept prefix.
pub const TRUNCATION_MARKER: &str = "\n\n[TRUNCATED - output exceeded limit]";
/// Characters kept before the marker: the seed's example keeps "the first 9950
/// characters of output" (limit − 50).
pub const TRUNCATION_KEEP: usize = TRUNCATION_LIMIT - 50;

/// Deterministic truncation (seed 002): text of at most [`TRUNCATION_LIMIT`]
/// characters (Unicode scalar values) is returned unchanged; longer text
/// becomes its first [`TRUNCATION_KEEP`] characters followed by
/// [`TRUNCATION_MARKER`]. The caller keeps the full text as an artifact.
#[must_use]
pub fn truncate_output(full: &str) -> String {
    match full.char_indices().nth(TRUNCATION_LIMIT) {
        None => full.to_owned(),
        Some(_) => {
            let cut = full
                .char_indices()
                .nth(TRUNCATION_KEEP)
                .map_or(full.len(), |(i, _)| i);
            let mut out = String::with_capacity(cut + TRUNCATION_MARKER.len());
            out.push_str(&full[..cut]);
            out.push_str(TRUNCATION_MARKER);
            out
        }
    }
}

/// `status` of an execution record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionStatus {
    Success,
    Failure,
    NoEvidence,
}

/// One execution record, field names exactly as seed 002.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionRecord {
    pub raw_command: String,
    #[serde(deserialize_with = "crate::json::nullable")]
    pub exit_code: Option<i64>,
    pub stdout: String,
    pub stderr: String,
    pub started_at: String,
    pub finished_at: String,
    pub duration_seconds: f64,
    #[serde(deserialize_with = "crate::json::string_enum")]
    pub status: ExecutionStatus,
    pub evidence_hash: String,
    #[serde(default)]
    pub artifacts: Vec<String>,
}

/// Tolerance between `duration_seconds` and `finished_at - started_at`.
pub const DURATION_TOLERANCE_SECONDS: f64 = 1.0;

/// The exact bytes hashed into `evidence_hash`.
#[must_use]
pub fn evidence_hash_preimage(
    raw_command: &str,
    stdout: &str,
    stderr: &str,
    exit_code: Option<i64>,
) -> Vec<u8> {
    let code = exit_code.map_or_else(|| "null".to_owned(), |c| c.to_string());
    let mut bytes =
        Vec::with_capacity(raw_command.len() + stdout.len() + stderr.len() + code.len() + 3);
    for (i, part) in [raw_command, stdout, stderr, code.as_str()]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            bytes.push(b'|');
        }
        bytes.extend_from_slice(part.as_bytes());
    }
    bytes
}

/// The full stderr of a NO_EVIDENCE record: `NO_EVIDENCE: <reason>` on its
/// own line, then what the command wrote to stderr (if anything).
#[must_use]
pub fn no_evidence_stderr(reason: &str, partial_stderr: &str) -> String {
    let mut out = format!("NO_EVIDENCE: {}\n", reason.trim_end());
    out.push_str(partial_stderr);
    out
}

/// The `raw_command` of an argument vector: the arguments joined by single
/// spaces, each one that is empty or holds anything but
/// `[A-Za-z0-9_@%+=:,./-]` single-quoted POSIX-style (`'` written `'\''`).
/// Deterministic, and `sh -c` reads it back as the same vector.
#[must_use]
pub fn shell_join<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.as_ref();
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
            if plain {
                a.to_owned()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether an artifact name is an execution record: `*.execution.json`, or an
/// `evidence.json` inside an `execution/` directory (seed 002 artifact layout).
#[must_use]
pub fn is_execution_record_name(name: &str) -> bool {
    name.ends_with(".execution.json")
        || (name.rsplit('/').next() == Some("evidence.json")
            && name.split('/').any(|c| c == "execution"))
}

/// `execution.truncation`: an output within the limit, and a truncated one
/// keeping exactly the first 9,950 characters.
fn output_is_whole_or_truncated(text: &str) -> bool {
    let chars = text.chars().count();
    chars <= TRUNCATION_LIMIT
        && (!text.ends_with(TRUNCATION_MARKER)
            || chars == TRUNCATION_KEEP + TRUNCATION_MARKER.chars().count())
}

impl ExecutionRecord {
    /// Recomputes `evidence_hash` from the record's fields.
    #[must_use]
    pub fn recompute_evidence_hash(&self) -> String {
        let pre = evidence_hash_preimage(
            &self.raw_command,
            &self.stdout,
            &self.stderr,
            self.exit_code,
        );
        hex::encode(sha2::Sha256::digest(&pre))
    }

    /// Builds a record from a real execution: truncates the outputs and
    /// computes the hash. `status` follows from the exit code.
    #[must_use]
    pub fn from_execution(
        raw_command: &str,
        exit_code: i64,
        full_stdout: &str,
        full_stderr: &str,
        started_at: &str,
        finished_at: &str,
        duration_seconds: f64,
    ) -> Self {
        let mut record = Self {
            raw_command: raw_command.to_owned(),
            exit_code: Some(exit_code),
            stdout: truncate_output(full_stdout),
            stderr: truncate_output(full_stderr),
            started_at: started_at.to_owned(),
            finished_at: finished_at.to_owned(),
            duration_seconds,
            status: if exit_code == 0 {
                ExecutionStatus::Success
            } else {
                ExecutionStatus::Failure
            },
            evidence_hash: String::new(),
            artifacts: Vec::new(),
        };
        record.evidence_hash = record.recompute_evidence_hash();
        record
    }

    /// Builds an explicit NO_EVIDENCE record (seed 002 "NO_EVIDENCE
    /// Reasons"): the command could not be executed, so there is no exit
    /// code; `reason` is the first line of `stderr` (the seed: "Include the
    /// reason in the stderr field"), followed by whatever stderr the command
    /// wrote before it was stopped (a timeout). Outputs are truncated like
    /// any record's and the hash computed. An empty reason becomes
    /// "ExecutionGateway is unavailable" (the record must carry a reason).
    #[must_use]
    pub fn no_evidence(
        raw_command: &str,
        reason: &str,
        full_stdout: &str,
        full_stderr: &str,
        started_at: &str,
        finished_at: &str,
        duration_seconds: f64,
    ) -> Self {
        let reason = if reason.trim().is_empty() {
            "ExecutionGateway is unavailable"
        } else {
            reason
        };
        let mut record = Self {
            raw_command: raw_command.to_owned(),
            exit_code: None,
            stdout: truncate_output(full_stdout),
            stderr: truncate_output(&no_evidence_stderr(reason, full_stderr)),
            started_at: started_at.to_owned(),
            finished_at: finished_at.to_owned(),
            duration_seconds,
            status: ExecutionStatus::NoEvidence,
            evidence_hash: String::new(),
            artifacts: Vec::new(),
        };
        record.evidence_hash = record.recompute_evidence_hash();
        record
    }

    /// Decodes a record and enforces every seed 002 rule, reporting all:
    /// - `execution.json_syntax`, `execution.object`, `execution.required`, `execution.type`;
    /// - `execution.evidence_hash` (recomputed hash must equal the stored one);
    /// - `execution.status_exit_code` (SUCCESS ⇔ exit 0, FAILURE ⇔ non-zero exit);
    /// - `execution.no_evidence_reason` (NO_EVIDENCE must carry its reason in `stderr`);
    /// - `execution.truncation` (stored outputs are the deterministic truncation of themselves:
    ///   at most 10,000 characters, and when longer than the kept prefix they end with the marker);
    /// - `execution.timestamps` (RFC 3339, `started_at <= finished_at`, `duration_seconds`
    ///   matches within 1 s).
    pub fn parse(bytes: &[u8]) -> Result<ExecutionRecord, Vec<Violation>> {
        match typed::<ExecutionRecord>(bytes) {
            Some(record) if record.follows_the_rules() => Ok(record),
            _ => Self::parse_checked(bytes),
        }
    }

    /// The rules [`ExecutionRecord::parse_checked`] checks on the `Value`
    /// tree, on a record serde read: true when none is broken.
    fn follows_the_rules(&self) -> bool {
        let (Some(started), Some(finished)) = (
            parse_rfc3339(&self.started_at),
            parse_rfc3339(&self.finished_at),
        ) else {
            return false;
        };
        let d = self.duration_seconds;
        let timing = d.is_finite()
            && d >= 0.0
            && finished >= started
            && ((finished - started).as_seconds_f64() - d).abs() <= DURATION_TOLERANCE_SECONDS;
        let status = match (self.status, self.exit_code) {
            (ExecutionStatus::Success, Some(0)) => true,
            (ExecutionStatus::Failure, Some(c)) => c != 0,
            (ExecutionStatus::NoEvidence, _) => !self.stderr.trim().is_empty(),
            _ => false,
        };
        timing
            && status
            && output_is_whole_or_truncated(&self.stdout)
            && output_is_whole_or_truncated(&self.stderr)
            && self
                .evidence_hash
                .eq_ignore_ascii_case(&self.recompute_evidence_hash())
    }

    /// [`ExecutionRecord::parse`] through a `Value` tree: every violation,
    /// named with its JSON pointer.
    ///
    /// `parse` gives the same answer (it answers a valid document without
    /// building the tree); this is the reader it falls back to, public so
    /// that tests and fuzz targets can hold the two to the same answer.
    pub fn parse_checked(bytes: &[u8]) -> Result<ExecutionRecord, Vec<Violation>> {
        let value = parse_value("execution", bytes)?;
        let mut r = Reader::new("execution");
        let Some(root) = r.root(&value) else {
            return Err(r.violations);
        };
        const REQ: &str = "execution.required";
        const TYPE: &str = "execution.type";
        let raw_command = r
            .required(root, "", "raw_command", REQ)
            .and_then(|v| r.string(v, "/raw_command", TYPE));
        let exit_code = r
            .required(root, "", "exit_code", REQ)
            .and_then(|v| match v {
                Value::Null => Some(None),
                v => r.integer(v, "/exit_code", TYPE).map(Some),
            });
        let stdout = r
            .required(root, "", "stdout", REQ)
            .and_then(|v| r.string(v, "/stdout", TYPE));
        let stderr = r
            .required(root, "", "stderr", REQ)
            .and_then(|v| r.string(v, "/stderr", TYPE));
        let started = r
            .required(root, "", "started_at", REQ)
            .and_then(|v| r.timestamp(v, "/started_at", "execution.timestamps"));
        let finished = r
            .required(root, "", "finished_at", REQ)
            .and_then(|v| r.timestamp(v, "/finished_at", "execution.timestamps"));
        let duration =
            r.required(root, "", "duration_seconds", REQ)
                .and_then(|v| match v.as_f64() {
                    Some(d) if d.is_finite() && d >= 0.0 => Some(d),
                    _ => {
                        r.violate(
                            "execution.type",
                            "/duration_seconds",
                            "must be a non-negative number",
                        );
                        None
                    }
                });
        let status = r
            .required(root, "", "status", REQ)
            .and_then(|v| r.string(v, "/status", TYPE))
            .and_then(|s| match s.as_str() {
                "SUCCESS" => Some(ExecutionStatus::Success),
                "FAILURE" => Some(ExecutionStatus::Failure),
                "NO_EVIDENCE" => Some(ExecutionStatus::NoEvidence),
                other => {
                    r.violate(
                        "execution.status",
                        "/status",
                        format!("{other:?} is not SUCCESS, FAILURE or NO_EVIDENCE"),
                    );
                    None
                }
            });
        let evidence_hash = r
            .required(root, "", "evidence_hash", REQ)
            .and_then(|v| r.string(v, "/evidence_hash", TYPE));
        let artifacts = match root.get("artifacts") {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Object(map)) => {
                let mut out = Vec::new();
                for (k, v) in map {
                    if let Some(s) = r.string(v, &crate::json::pointer("/artifacts", k), TYPE) {
                        out.push(s);
                    }
                }
                Some(out)
            }
            Some(v) => r.string_array(v, "/artifacts", TYPE),
        };

        if let (Some(s), Some(f)) = (started, finished) {
            if f < s {
                r.violate(
                    "execution.timestamps",
                    "/finished_at",
                    "finished_at is before started_at",
                );
            } else if let Some(d) = duration {
                let measured = (f - s).as_seconds_f64();
                if (measured - d).abs() > DURATION_TOLERANCE_SECONDS {
                    r.violate(
                        "execution.timestamps",
                        "/duration_seconds",
                        format!("duration_seconds={d} but finished_at - started_at = {measured}s"),
                    );
                }
            }
        }
        if let (Some(status), Some(code)) = (status, exit_code) {
            match (status, code) {
                (ExecutionStatus::Success, Some(0)) | (ExecutionStatus::NoEvidence, _) => {}
                (ExecutionStatus::Failure, Some(c)) if c != 0 => {}
                (status, code) => r.violate(
                    "execution.status_exit_code",
                    "/status",
                    format!("status {status:?} is inconsistent with exit_code {code:?} (SUCCESS needs 0, FAILURE a non-zero code)"),
                ),
            }
        }
        if let (Some(ExecutionStatus::NoEvidence), Some(err)) = (status, &stderr)
            && err.trim().is_empty()
        {
            r.violate(
                "execution.no_evidence_reason",
                "/stderr",
                "NO_EVIDENCE must include the reason in stderr",
            );
        }
        for (field, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            if let Some(text) = text {
                let chars = text.chars().count();
                if chars > TRUNCATION_LIMIT {
                    r.violate(
                        "execution.truncation",
                        format!("/{field}"),
                        format!("{chars} characters exceed the {TRUNCATION_LIMIT}-character limit"),
                    );
                } else if text.ends_with(TRUNCATION_MARKER)
                    && chars != TRUNCATION_KEEP + TRUNCATION_MARKER.chars().count()
                {
                    r.violate(
                        "execution.truncation",
                        format!("/{field}"),
                        "truncated output does not keep exactly the first 9,950 characters",
                    );
                }
            }
        }
        if !r.violations.is_empty() {
            return Err(r.violations);
        }
        let (
            Some(raw_command),
            Some(exit_code),
            Some(stdout),
            Some(stderr),
            Some(duration_seconds),
            Some(status),
            Some(evidence_hash),
            Some(artifacts),
        ) = (
            raw_command,
            exit_code,
            stdout,
            stderr,
            duration,
            status,
            evidence_hash,
            artifacts,
        )
        else {
            return Err(vec![Violation::new(
                "execution.internal",
                "",
                "a field failed to decode without a recorded violation",
            )]);
        };
        let started_at = root
            .get("started_at")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let finished_at = root
            .get("finished_at")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let record = ExecutionRecord {
            raw_command,
            exit_code,
            stdout,
            stderr,
            started_at,
            finished_at,
            duration_seconds,
            status,
            evidence_hash,
            artifacts,
        };
        let expected = record.recompute_evidence_hash();
        if !record.evidence_hash.eq_ignore_ascii_case(&expected) {
            return Err(vec![Violation::new(
                "execution.evidence_hash",
                "/evidence_hash",
                format!(
                    "stored {} but SHA-256(command|stdout|stderr|exit_code) is {expected}",
                    record.evidence_hash
                ),
            )]);
        }
        Ok(record)
    }

    /// Checks that `full` (the kept full output) truncates to the stored field.
    #[must_use]
    pub fn output_matches_full(stored: &str, full: &str) -> bool {
        truncate_output(full) == stored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `echo hi` run for one second: exit 0, `hi\n` on stdout.
    fn echo_hi() -> ExecutionRecord {
        ExecutionRecord::from_execution(
            "echo hi",
            0,
            "hi\n",
            "",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:01Z",
            1.0,
        )
    }

    #[test]
    fn evidence_hash_exact_bytes() {
        assert_eq!(
            evidence_hash_preimage("echo hi", "hi\n", "", Some(0)),
            b"echo hi|hi\n||0".to_vec()
        );
        assert_eq!(
            evidence_hash_preimage("x", "", "no gateway", None),
            b"x||no gateway|null".to_vec()
        );
        // SHA-256("echo hi|hi\n||0"), computed independently with `printf 'echo hi|hi\n||0' | sha256sum`.
        let r = echo_hi();
        assert_eq!(r.evidence_hash, crate::sha256_hex(b"echo hi|hi\n||0"));
        assert_eq!(
            r.evidence_hash,
            "c15aad7a85d90d3cb293860ca236346f02714ce85ba7ae7568761256ef724bb6"
        );
    }

    #[test]
    fn truncation_is_deterministic_and_marked() {
        let short = "a".repeat(TRUNCATION_LIMIT);
        assert_eq!(truncate_output(&short), short);
        let long = "é".repeat(TRUNCATION_LIMIT + 1);
        let t = truncate_output(&long);
        assert!(t.ends_with(TRUNCATION_MARKER));
        assert_eq!(
            t.chars().count(),
            TRUNCATION_KEEP + TRUNCATION_MARKER.chars().count()
        );
        assert!(t.starts_with(&"é".repeat(TRUNCATION_KEEP)));
        assert_eq!(truncate_output(&long), t);
        assert!(ExecutionRecord::output_matches_full(&t, &long));
        assert!(!ExecutionRecord::output_matches_full(&t, &short));
    }

    fn record_json(r: &ExecutionRecord) -> Vec<u8> {
        serde_json::to_vec(r).unwrap()
    }

    #[test]
    fn parse_refuses_mismatching_hash_and_inconsistent_status() {
        let r = ExecutionRecord::from_execution(
            "make test",
            2,
            &"x".repeat(20_000),
            "boom",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:05Z",
            5.0,
        );
        let parsed = ExecutionRecord::parse(&record_json(&r)).unwrap();
        assert_eq!(parsed, r);
        let mut tampered = r.clone();
        tampered.stderr = "fine".into();
        assert_eq!(
            ExecutionRecord::parse(&record_json(&tampered)).unwrap_err()[0].rule,
            "execution.evidence_hash"
        );
        let mut lying = r.clone();
        lying.status = ExecutionStatus::Success;
        let rules: Vec<String> = ExecutionRecord::parse(&record_json(&lying))
            .unwrap_err()
            .into_iter()
            .map(|v| v.rule)
            .collect();
        assert!(rules.contains(&"execution.status_exit_code".to_owned()));
        let mut slow = r.clone();
        slow.duration_seconds = 60.0;
        assert_eq!(
            ExecutionRecord::parse(&record_json(&slow)).unwrap_err()[0].rule,
            "execution.timestamps"
        );
    }

    #[test]
    fn no_evidence_records_carry_their_reason_and_parse() {
        let r = ExecutionRecord::no_evidence(
            "missing-tool --flag",
            "command not found: missing-tool",
            "",
            "",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:00Z",
            0.0,
        );
        assert_eq!(r.status, ExecutionStatus::NoEvidence);
        assert_eq!(r.exit_code, None);
        assert_eq!(r.stderr, "NO_EVIDENCE: command not found: missing-tool\n");
        assert_eq!(
            r.evidence_hash,
            crate::sha256_hex(
                b"missing-tool --flag||NO_EVIDENCE: command not found: missing-tool\n|null"
            )
        );
        assert_eq!(ExecutionRecord::parse(&record_json(&r)).unwrap(), r);
        let blank = ExecutionRecord::no_evidence(
            "x",
            " ",
            "",
            "",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:00Z",
            0.0,
        );
        assert!(blank.stderr.contains("ExecutionGateway is unavailable"));
        let long = ExecutionRecord::no_evidence(
            "x",
            "timeout",
            &"o".repeat(20_000),
            &"e".repeat(20_000),
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:01Z",
            1.0,
        );
        assert!(long.stdout.ends_with(TRUNCATION_MARKER));
        assert!(long.stderr.starts_with("NO_EVIDENCE: timeout\n"));
        assert!(long.stderr.ends_with(TRUNCATION_MARKER));
        assert!(ExecutionRecord::parse(&record_json(&long)).is_ok());
    }

    #[test]
    fn shell_join_quotes_only_what_needs_it() {
        assert_eq!(shell_join(&["cargo", "test", "-p", "x"]), "cargo test -p x");
        assert_eq!(
            shell_join(&["sh", "-c", "echo hi; exit 3"]),
            "sh -c 'echo hi; exit 3'"
        );
        assert_eq!(shell_join(&["printf", "it's", ""]), "printf 'it'\\''s' ''");
        assert_eq!(shell_join::<&str>(&[]), "");
    }

    #[test]
    fn no_evidence_needs_reason() {
        let mut r = ExecutionRecord::from_execution(
            "x",
            0,
            "",
            "",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:00Z",
            0.0,
        );
        r.status = ExecutionStatus::NoEvidence;
        r.exit_code = None;
        r.evidence_hash = r.recompute_evidence_hash();
        assert_eq!(
            ExecutionRecord::parse(&record_json(&r)).unwrap_err()[0].rule,
            "execution.no_evidence_reason"
        );
        r.stderr = "ExecutionGateway is unavailable".into();
        r.evidence_hash = r.recompute_evidence_hash();
        assert!(ExecutionRecord::parse(&record_json(&r)).is_ok());
    }

    /// The typed reader never accepts what the checked one refuses, and
    /// reads the same record when both accept.
    #[test]
    fn the_typed_reader_answers_like_the_checked_one() {
        let ok = echo_hi();
        let failed = ExecutionRecord::from_execution(
            "false",
            1,
            &"x".repeat(TRUNCATION_LIMIT + 5),
            "boom",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:02.5Z",
            2.5,
        );
        let mut none = ok.clone();
        none.status = ExecutionStatus::NoEvidence;
        none.exit_code = None;
        none.stderr = "NO_EVIDENCE: gateway down\n".into();
        none.artifacts = vec!["evidence/run.log".into()];
        none.evidence_hash = none.recompute_evidence_hash().to_ascii_uppercase();
        let extra = [
            "SUCCESS",
            "FAILURE",
            "NO_EVIDENCE",
            "2026-02-09T14:30:00Z",
            "2026-02-09T14:30:09Z",
            "c15aad7a85d90d3cb293860ca236346f02714ce85ba7ae7568761256ef724bb6",
        ];
        let goods: Vec<String> = [ok, failed, none]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        let goods: Vec<&str> = goods.iter().map(String::as_str).collect();
        crate::json::assert_readers_agree(
            &goods,
            &extra,
            |b| typed::<ExecutionRecord>(b).is_some_and(|d| d.follows_the_rules()),
            ExecutionRecord::parse,
            ExecutionRecord::parse_checked,
        );
    }
}

//! Offline verifier commands: `docket verify`, `docket validate-task`,
//! `docket classify`. They run `docket-verifier` directly, with no ledger.
//!
//! Exit codes (seed 004 §3): 0 PASS / valid, 2 invalid task contract (every
//! violated rule listed), 4 artifacts directory or input file missing,
//! 5 verdict FAIL.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use docket_verifier::classify::classify;
use docket_verifier::engine::{DirArtifacts, evaluate};
use docket_verifier::verdict::Outcome;
use docket_verifier::{TaskContract, Verdict, VerifierError, Violation};

const EXIT_PASS: u8 = 0;
const EXIT_INVALID: u8 = 2;
const EXIT_MISSING: u8 = 4;
const EXIT_FAIL: u8 = 5;

/// `docket verify DIR --task-file task.json`: run the verdict engine on an
/// artifacts directory.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Artifacts directory (report.md, selftest.log, patch.diff, submit.json, evidence/...).
    #[arg(required_unless_present = "reproduce")]
    pub dir: Option<PathBuf>,
    /// Task contract file (task.json: seed 000 task input + acceptance).
    /// `--task` elsewhere is always a task id.
    #[arg(
        long = "task-file",
        value_name = "FILE",
        required_unless_present = "reproduce"
    )]
    pub task: Option<PathBuf>,
    /// Instead: re-run the engine of task ID's recorded verdict on the
    /// evidence the ledger recorded (`--data`, or `--server`); exit 0 when
    /// it gives the recorded verdict, 3 when it does not, 4 when there is
    /// no verdict.
    #[arg(long, value_name = "TASK_ID", conflicts_with_all = ["dir", "task", "verdict_json", "now"])]
    pub reproduce: Option<String>,
    /// Print the full scc.verdict.v1 JSON instead of the human summary.
    #[arg(long)]
    pub json: bool,
    /// Also write the seed 001 verifier `verdict.json` (verdict, fail_class,
    /// exit_code, evidence_paths, generated_utc) to PATH.
    #[arg(long, value_name = "PATH")]
    pub verdict_json: Option<PathBuf>,
    /// Evaluation time (RFC 3339); defaults to now. Fix it for reproducible output.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
}

/// `docket validate-task task.json`: check a task contract, listing every violated rule.
#[derive(Debug, clap::Args)]
pub struct ValidateTaskArgs {
    /// The task contract file (task.json).
    pub task_json: PathBuf,
    /// Machine output.
    #[arg(long)]
    pub json: bool,
}

/// `docket classify LOG... [--exit-code N]`: classify a failure from logs.
#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// Log files to classify (or, with `--record`, none).
    #[arg(required_unless_present = "record")]
    pub logs: Vec<PathBuf>,
    /// A seed-002 execution record (JSON) to classify from its evidence: a
    /// NO_EVIDENCE record gives exactly one EXECUTION_ERROR issue,
    /// "Execution evidence unavailable", with the reason from stderr.
    #[arg(long, value_name = "FILE", conflicts_with = "exit_code")]
    pub record: Option<PathBuf>,
    /// Exit code of the command that produced the logs.
    #[arg(long, allow_hyphen_values = true)]
    pub exit_code: Option<i32>,
    /// Machine output.
    #[arg(long)]
    pub json: bool,
}

enum Loaded<T> {
    Ok(T),
    Exit(u8),
}

fn read_input(path: &Path, json: bool, what: &str) -> Result<Loaded<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Loaded::Ok(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            report_missing(json, &format!("{what} {} does not exist", path.display()));
            Ok(Loaded::Exit(EXIT_MISSING))
        }
        Err(e) => Err(e).with_context(|| format!("reading {what} {}", path.display())),
    }
}

fn report_missing(json: bool, message: &str) {
    if json {
        println!(
            "{}",
            serde_json::json!({"error": message, "exit_code": EXIT_MISSING})
        );
    } else {
        eprintln!("error: {message}");
    }
}

fn report_violations(json: bool, path: &Path, violations: &[Violation]) {
    if json {
        println!(
            "{}",
            serde_json::json!({"task": path.display().to_string(), "valid": false, "violations": violations, "exit_code": EXIT_INVALID})
        );
    } else {
        eprintln!(
            "{}: invalid task contract, {} violation(s):",
            path.display(),
            violations.len()
        );
        for v in violations {
            eprintln!("  {v}");
        }
    }
}

fn load_contract(path: &Path, json: bool) -> Result<Loaded<TaskContract>> {
    let bytes = match read_input(path, json, "task contract")? {
        Loaded::Ok(b) => b,
        Loaded::Exit(code) => return Ok(Loaded::Exit(code)),
    };
    match TaskContract::parse(&bytes) {
        Ok(contract) => Ok(Loaded::Ok(contract)),
        Err(violations) => {
            report_violations(json, path, &violations);
            Ok(Loaded::Exit(EXIT_INVALID))
        }
    }
}

fn evaluation_time(now: Option<&str>) -> Result<time::OffsetDateTime> {
    match now {
        None => {
            let now = time::OffsetDateTime::now_utc();
            Ok(now.replace_nanosecond(0).unwrap_or(now))
        }
        Some(s) => docket_verifier::parse_rfc3339(s).ok_or_else(|| {
            anyhow::Error::new(crate::exit::CliError::new(
                crate::exit::USAGE,
                format!("--now {s:?} is not an RFC 3339 timestamp (e.g. 2026-02-09T14:30:00Z)"),
            ))
        }),
    }
}

fn print_verdict(verdict: &Verdict) {
    let outcome = match verdict.verdict {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
    };
    match (verdict.reason_code, verdict.fail_class) {
        (Some(code), Some(class)) => println!(
            "{outcome}  task {}  reason {code} ({class})",
            verdict.task_id
        ),
        _ => println!("{outcome}  task {}", verdict.task_id),
    }
    println!("checks:");
    for (name, ok) in &verdict.checks {
        println!("  {} {name}", if *ok { "ok  " } else { "FAIL" });
    }
    if !verdict.messages.is_empty() {
        println!("messages:");
        for m in &verdict.messages {
            println!("  {m}");
        }
    }
    println!(
        "evaluated at {}, {} artifact(s) digested",
        verdict.timestamps.evaluated_at,
        verdict.evidence_digests.len()
    );
}

/// Runs `docket verify`; returns the process exit code.
pub fn run_verify(args: &VerifyArgs) -> Result<u8> {
    let (Some(dir), Some(task)) = (&args.dir, &args.task) else {
        return Err(crate::exit::CliError::new(
            crate::exit::USAGE,
            "docket verify needs DIR and --task-file (or --reproduce TASK_ID)",
        )
        .into());
    };
    let evaluated_at = evaluation_time(args.now.as_deref())?;
    let contract = match load_contract(task, args.json)? {
        Loaded::Ok(c) => c,
        Loaded::Exit(code) => return Ok(code),
    };
    let source = match DirArtifacts::open(dir) {
        Ok(s) => s,
        Err(VerifierError::ArtifactsDirMissing { path }) => {
            report_missing(
                args.json,
                &format!("artifacts directory {} is missing", path.display()),
            );
            return Ok(EXIT_MISSING);
        }
        Err(e) => return Err(e.into()),
    };
    let verdict = evaluate(&contract, &source, evaluated_at);
    if let Some(path) = &args.verdict_json {
        let output = serde_json::to_vec_pretty(&verdict.verifier_output())?;
        std::fs::write(path, output).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", String::from_utf8_lossy(&verdict.to_canonical_json()));
    } else {
        print_verdict(&verdict);
    }
    Ok(match verdict.verdict {
        Outcome::Pass => EXIT_PASS,
        Outcome::Fail => EXIT_FAIL,
    })
}

/// Runs `docket validate-task`; 0 valid, 2 invalid, 4 missing file.
pub fn run_validate_task(args: &ValidateTaskArgs) -> Result<u8> {
    match load_contract(&args.task_json, args.json)? {
        Loaded::Exit(code) => Ok(code),
        Loaded::Ok(contract) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"task": args.task_json.display().to_string(), "valid": true, "task_id": contract.task_id.to_string(), "exit_code": EXIT_PASS})
                );
            } else {
                println!(
                    "{}: valid task contract {}",
                    args.task_json.display(),
                    contract.task_id
                );
            }
            Ok(EXIT_PASS)
        }
    }
}

/// Runs `docket classify`; 0 when classified (even as a failure), 4 when a log is missing.
pub fn run_classify(args: &ClassifyArgs) -> Result<u8> {
    if let Some(path) = &args.record {
        let bytes = match read_input(path, args.json, "execution record")? {
            Loaded::Ok(b) => b,
            Loaded::Exit(code) => return Ok(code),
        };
        let record = match docket_verifier::execution::ExecutionRecord::parse(&bytes) {
            Ok(r) => r,
            Err(violations) => {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"error": "invalid execution record", "violations": list, "exit_code": 2})
                    );
                } else {
                    eprintln!("error: {} is not a valid execution record:", path.display());
                    for v in &list {
                        eprintln!("  {v}");
                    }
                }
                return Ok(2);
            }
        };
        let classification = docket_verifier::classify::classify_record(&record);
        return print_classification(&classification, args.json);
    }
    let mut texts = Vec::with_capacity(args.logs.len());
    for path in &args.logs {
        match read_input(path, args.json, "log")? {
            Loaded::Ok(bytes) => texts.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            )),
            Loaded::Exit(code) => return Ok(code),
        }
    }
    let logs: Vec<(&str, &str)> = texts
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    let classification = classify(&logs, args.exit_code);
    print_classification(&classification, args.json)
}

fn print_classification(
    classification: &docket_verifier::classify::Classification,
    json: bool,
) -> Result<u8> {
    if json {
        println!("{}", serde_json::to_string(&classification)?);
        return Ok(EXIT_PASS);
    }
    match (
        classification.fail_class,
        classification.verifier_fail_class,
    ) {
        (Some(class), Some(verifier)) => println!("fail_class {class} (verifier: {verifier})"),
        _ => println!("no failure indicated"),
    }
    for issue in &classification.issues {
        match (&issue.description, &issue.reason) {
            (Some(d), Some(r)) => println!("{}: {d} ({r})", issue.kind),
            (Some(d), None) => println!("{}: {d}", issue.kind),
            _ => println!("{}", issue.kind),
        }
        for line in &issue.evidence {
            println!("  {}:{}: {}", line.file, line.line, line.text);
        }
    }
    Ok(EXIT_PASS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../verifier/tests/cases")
            .join(name)
    }

    fn verify(name: &str, dir: PathBuf) -> u8 {
        let args = VerifyArgs {
            dir: Some(dir),
            task: Some(case(name).join("task.json")),
            reproduce: None,
            json: true,
            verdict_json: None,
            now: Some("2026-02-09T14:30:00Z".into()),
        };
        run_verify(&args).expect("verify runs")
    }

    #[test]
    fn exit_codes() {
        assert_eq!(
            verify("pass_minimal", case("pass_minimal").join("artifacts")),
            EXIT_PASS
        );
        assert_eq!(
            verify(
                "fail_scope_forbidden_path",
                case("fail_scope_forbidden_path").join("artifacts")
            ),
            EXIT_FAIL
        );
        assert_eq!(
            verify("pass_minimal", case("pass_minimal").join("no-such-dir")),
            EXIT_MISSING
        );
        assert_eq!(
            verify(
                "invalid_task_every_rule",
                case("invalid_task_every_rule").join("artifacts")
            ),
            EXIT_INVALID
        );
        let validate = ValidateTaskArgs {
            task_json: case("invalid_task_overlapping_pins").join("task.json"),
            json: true,
        };
        assert_eq!(run_validate_task(&validate).expect("runs"), EXIT_INVALID);
        let validate = ValidateTaskArgs {
            task_json: case("pass_minimal").join("task.json"),
            json: false,
        };
        assert_eq!(run_validate_task(&validate).expect("runs"), EXIT_PASS);
    }

    #[test]
    fn verdict_json_is_seed_001_output() {
        let out = tempfile::tempdir().expect("tempdir");
        let path = out.path().join("verdict.json");
        let args = VerifyArgs {
            dir: Some(case("fail_evidence_missing_selftest").join("artifacts")),
            task: Some(case("fail_evidence_missing_selftest").join("task.json")),
            reproduce: None,
            json: true,
            verdict_json: Some(path.clone()),
            now: Some("2026-02-09T14:30:00Z".into()),
        };
        assert_eq!(run_verify(&args).expect("runs"), EXIT_FAIL);
        let output =
            docket_verifier::VerifierOutput::parse(&std::fs::read(&path).expect("written"))
                .expect("valid seed 001 verdict.json");
        assert_eq!(
            output.fail_class,
            Some(docket_verifier::VerifierFailClass::ArtifactMissing)
        );
        assert_eq!(output.generated_utc, "2026-02-09T14:30:00Z");
    }

    #[test]
    fn classify_missing_log_is_4() {
        let args = ClassifyArgs {
            logs: vec![PathBuf::from("/no/such/log")],
            exit_code: Some(1),
            record: None,
            json: true,
        };
        assert_eq!(run_classify(&args).expect("runs"), EXIT_MISSING);
    }
}

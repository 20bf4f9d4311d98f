//! `docket exec`: the seed 002 execution gateway (docs/DOMAIN.md §3.3.1).
//!
//! `docket exec --task ID --key GATEWAY_KEY [--timeout S] -- CMD ARGS...`
//! runs `CMD ARGS...` as a real child process (no shell; stdin closed; its
//! own process group), captures its stdout, stderr, exit code, start and
//! finish times and duration, and records:
//!
//! 1. the **full** stdout and stderr as evidence (`evidence.registered`,
//!    types `stdout` / `stderr`, names `execution/<STEP>/stdout.log` and
//!    `.../stderr.log` with `--step STEP`, default the start time), each
//!    minted an OID;
//! 2. the seed 002 execution record (`execution.recorded`): outputs cut by
//!    the seed's deterministic truncation (10,000 characters; longer text
//!    keeps its first 9,950 and the marker `\n\n[TRUNCATED - output exceeded
//!    limit]`), `evidence_hash` = SHA-256 of `command|stdout|stderr|exit_code`
//!    over the stored fields, `evidence_oids` the two OIDs and `artifacts`
//!    `{"stdout": OID, "stderr": OID}`.
//!
//! Every statement is signed by the gateway key (a key holding the
//! `gateway` role, checked before anything runs). A command that cannot
//! run — not found, not permitted, over the timeout (its process group is
//! killed; children it leaves in the background get 5 s after it exits), or a gateway that cannot start processes (`--simulate` stands
//! for a gateway without real execution) — is recorded all the same, as an
//! explicit `NO_EVIDENCE` record whose stderr starts `NO_EVIDENCE: <reason>`
//! (seed 002 "NO_EVIDENCE Reasons").
//!
//! Exit: 0 SUCCESS, 5 FAILURE (the command exited non-zero), 4 NO_EVIDENCE;
//! 2 when the key is not a gateway key or the ledger refuses a statement,
//! 4 for an unknown task (nothing runs). Embedded (`--data`) and `--server`
//! alike.

use std::io::{Read as _, Seek as _, Write as _};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use docket_domain::Statement;
use docket_domain::domain::AsOf;
use docket_domain::domain::kinds;
use docket_domain::domain::payloads::canonical_task_id;
use docket_domain::keys::Role;
use docket_proto::v1 as pb;
use docket_verifier::execution::{
    ExecutionRecord, ExecutionStatus, TRUNCATION_MARKER, no_evidence_stderr, shell_join,
};
use ed25519_dalek::SigningKey;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use crate::Ctx;
use crate::backend::ReceiptView;
use crate::client;
use crate::core_cmds::load_key;
use crate::domain_cmds::{Mode, explain, mode, upload_stream};
use crate::exit::{self, CliError};

/// Default `--timeout`, seconds.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 600.0;

/// How long the pipes may stay open after the command exited (children it
/// left in the background) before its process group is killed.
pub const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// `docket exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Task id (UUID) the execution is evidence for.
    #[arg(long)]
    pub task: String,
    /// The gateway's private key file (a key with the `gateway` role).
    #[arg(long)]
    pub key: PathBuf,
    /// Wall-clock limit in seconds; past it the command's process group is
    /// killed and a NO_EVIDENCE record says so.
    #[arg(long, default_value_t = DEFAULT_TIMEOUT_SECONDS)]
    pub timeout: f64,
    /// Do not execute: record an explicit NO_EVIDENCE record ("the
    /// ExecutionGateway is unavailable: simulation mode"), as seed 002
    /// requires of a gateway without real execution.
    #[arg(long)]
    pub simulate: bool,
    /// The step's name in the seed 002 artifact layout: the outputs are
    /// named `execution/STEP/stdout.log` and `execution/STEP/stderr.log`
    /// (default: the start time, e.g. `20260209T143000123456789Z`).
    #[arg(long, value_name = "STEP")]
    pub step: Option<String>,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    pub argv: Vec<String>,
}

/// What a child process did, before it becomes a record.
#[derive(Debug)]
pub struct Captured {
    pub raw_command: String,
    pub started_at: String,
    pub finished_at: String,
    pub duration_seconds: f64,
    /// Full stdout as written (raw bytes).
    pub stdout: Vec<u8>,
    /// Full stderr as written; for NO_EVIDENCE, the reason line first.
    pub stderr: Vec<u8>,
    /// Exit code, or None when the command did not run to an exit.
    pub exit_code: Option<i64>,
    /// Why there is no evidence (not found, not permitted, timeout, ...).
    pub no_evidence: Option<String>,
}

impl Captured {
    /// The seed 002 record (truncated outputs, `evidence_hash`).
    pub fn record(&self) -> ExecutionRecord {
        let out = String::from_utf8_lossy(&self.stdout);
        let err = String::from_utf8_lossy(&self.stderr);
        match (&self.no_evidence, self.exit_code) {
            (None, Some(code)) => ExecutionRecord::from_execution(
                &self.raw_command,
                code,
                &out,
                &err,
                &self.started_at,
                &self.finished_at,
                self.duration_seconds,
            ),
            (reason, _) => {
                // `stderr` already starts with the reason line: build the
                // record from it as stored (no second reason line).
                let mut r = ExecutionRecord::no_evidence(
                    &self.raw_command,
                    reason.as_deref().unwrap_or_default(),
                    &out,
                    "",
                    &self.started_at,
                    &self.finished_at,
                    self.duration_seconds,
                );
                r.stderr = docket_verifier::execution::truncate_output(&err);
                r.evidence_hash = r.recompute_evidence_hash();
                r
            }
        }
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// A captured NO_EVIDENCE outcome (the command did not run to an exit).
fn no_evidence(
    raw_command: &str,
    started_at: String,
    t0: Instant,
    reason: String,
    stdout: Vec<u8>,
    partial_stderr: &[u8],
) -> Captured {
    let stderr = no_evidence_stderr(&reason, &String::from_utf8_lossy(partial_stderr));
    Captured {
        raw_command: raw_command.to_owned(),
        started_at,
        finished_at: now_rfc3339(),
        duration_seconds: t0.elapsed().as_secs_f64(),
        stdout,
        stderr: stderr.into_bytes(),
        exit_code: None,
        no_evidence: Some(reason),
    }
}

/// What the reader and waiter threads report.
enum Done {
    Exited(std::io::Result<ExitStatus>),
    Stream,
}

/// Kills the command's whole process group (it was started as its leader).
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // Best effort: the group may be gone already.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Runs `argv` as a real child process with a wall-clock `timeout`.
pub fn run_command(argv: &[String], timeout: Duration, simulate: bool) -> Captured {
    use std::os::unix::process::CommandExt as _;
    let raw_command = shell_join(argv);
    let started_at = now_rfc3339();
    let t0 = Instant::now();
    let Some(program) = argv.first() else {
        return no_evidence(
            &raw_command,
            started_at,
            t0,
            "no command given".into(),
            Vec::new(),
            &[],
        );
    };
    if simulate {
        return no_evidence(
            &raw_command,
            started_at,
            t0,
            "ExecutionGateway is unavailable: simulation mode, the command was not executed".into(),
            Vec::new(),
            &[],
        );
    }
    let spawned = Command::new(program)
        .args(&argv[1..])
        // The gateway's key passphrase is not the command's business.
        .env_remove("DOCKET_PASSPHRASE")
        .env_remove("DOCKET_PASSPHRASE_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound => format!("command not found: {program} ({e})"),
                std::io::ErrorKind::PermissionDenied => {
                    format!("permission denied: {program} cannot be executed ({e})")
                }
                // ENOEXEC: the file exists and may be run, but is no
                // executable format the kernel knows (the gateway itself
                // works: this is the command's fault).
                _ if e.raw_os_error() == Some(libc::ENOEXEC) => {
                    format!("not executable: {program} is not a program this system can run ({e})")
                }
                _ => format!("ExecutionGateway is unavailable: cannot start {program}: {e}"),
            };
            return no_evidence(&raw_command, started_at, t0, reason, Vec::new(), &[]);
        }
    };
    let pid = child.id();
    let (tx, rx) = mpsc::channel::<Done>();
    let out_buf = Arc::new(Mutex::new(Vec::new()));
    let err_buf = Arc::new(Mutex::new(Vec::new()));
    let mut streams = 0;
    for (pipe, buf) in [
        (
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            &out_buf,
        ),
        (
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
            &err_buf,
        ),
    ] {
        let Some(mut pipe) = pipe else { continue };
        streams += 1;
        let buf = Arc::clone(buf);
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 64 << 10];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => lock(&buf).extend_from_slice(&chunk[..n]),
                }
            }
            let _ = tx.send(Done::Stream);
        });
    }
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Done::Exited(child.wait()));
        });
    }
    drop(tx);
    let deadline = t0 + timeout;
    let mut status = None;
    let mut open = streams;
    // Once the command has exited, what it left running in the background
    // gets DRAIN_GRACE to close the pipes before it is killed.
    let mut until = deadline;
    while status.is_none() || open > 0 {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Done::Exited(s)) => {
                status = Some(s);
                until = until.min(Instant::now() + DRAIN_GRACE);
            }
            Ok(Done::Stream) => open -= 1,
            Err(_) => break,
        }
    }
    let finished_at = now_rfc3339();
    let duration_seconds = t0.elapsed().as_secs_f64();
    // Whatever is still running (the command past its timeout, or children
    // it left holding the pipes) is killed with its process group.
    if status.is_none() || open > 0 {
        kill_group(pid);
        let grace = Instant::now() + Duration::from_secs(2);
        while status.is_none() || open > 0 {
            match rx.recv_timeout(grace.saturating_duration_since(Instant::now())) {
                Ok(Done::Exited(s)) => {
                    if status.is_none() {
                        // Killed: the exit status is the gateway's doing.
                        status = Some(Err(std::io::Error::other("killed")));
                    } else {
                        status = Some(s);
                    }
                }
                Ok(Done::Stream) => open -= 1,
                Err(_) => break,
            }
        }
    }
    let stdout = std::mem::take(&mut *lock(&out_buf));
    let stderr = std::mem::take(&mut *lock(&err_buf));
    let timed_out = matches!(&status, None | Some(Err(_))) && Instant::now() >= deadline;
    match status {
        Some(Ok(s)) if !timed_out || s.code().is_some() => {
            use std::os::unix::process::ExitStatusExt as _;
            // A signal death reads as the shell does: 128 + signal.
            let code = s
                .code()
                .map(i64::from)
                .or_else(|| s.signal().map(|sig| 128 + i64::from(sig)))
                .unwrap_or(-1);
            Captured {
                raw_command,
                started_at,
                finished_at,
                duration_seconds,
                stdout,
                stderr,
                exit_code: Some(code),
                no_evidence: None,
            }
        }
        Some(Err(e)) if !timed_out => no_evidence(
            &raw_command,
            started_at,
            t0,
            format!("ExecutionGateway is unavailable: waiting for {program} failed: {e}"),
            stdout,
            &stderr,
        ),
        _ => {
            let secs = timeout.as_secs_f64();
            let mut c = no_evidence(
                &raw_command,
                started_at,
                t0,
                format!(
                    "timeout: {program} exceeded the gateway timeout of {secs} s and was killed"
                ),
                stdout,
                &stderr,
            );
            c.finished_at = finished_at;
            c.duration_seconds = duration_seconds;
            c
        }
    }
}

fn lock(m: &Mutex<Vec<u8>>) -> std::sync::MutexGuard<'_, Vec<u8>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

// ---------------------------------------------------------------- the command

#[derive(Debug, Serialize)]
struct OutputOut {
    oid: String,
    name: String,
    sha256: String,
    size: u64,
    truncated: bool,
}

#[derive(Debug, Serialize)]
struct ExecOut {
    task_id: String,
    raw_command: String,
    status: &'static str,
    exit_code: Option<i64>,
    /// The NO_EVIDENCE reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    started_at: String,
    finished_at: String,
    duration_seconds: f64,
    evidence_hash: String,
    stdout: OutputOut,
    stderr: OutputOut,
    receipt: ReceiptView,
}

fn status_str(s: ExecutionStatus) -> &'static str {
    match s {
        ExecutionStatus::Success => "SUCCESS",
        ExecutionStatus::Failure => "FAILURE",
        ExecutionStatus::NoEvidence => "NO_EVIDENCE",
    }
}

/// The gateway key must be registered, unrevoked and hold `gateway`, and
/// the task must exist, before anything runs.
fn precheck(m: &Mode, key: &SigningKey, task_id: &str) -> Result<()> {
    let me = hex::encode(key.verifying_key().as_bytes());
    let roles: Option<Vec<String>> = match m {
        Mode::Embedded(d) => {
            d.task(task_id, AsOf::Latest)?;
            d.keys(AsOf::Latest, false)?
                .into_iter()
                .find(|k| k.public_key == me)
                .map(|k| {
                    k.record
                        .roles
                        .iter()
                        .map(|r| r.as_str().to_string())
                        .collect()
                })
        }
        Mode::Remote(r) => {
            let req = pb::GetTaskRequest {
                task_id: task_id.to_string(),
                as_of: None,
            };
            r.block_on(pb::tasks_client::TasksClient::new(r.channel()).get_task(req))
                .map_err(|s| client::status_error(&s))?;
            let req = pb::ListKeysRequest {
                as_of: None,
                include_revoked: false,
            };
            r.block_on(pb::keys_client::KeysClient::new(r.channel()).list_keys(req))
                .map_err(|s| client::status_error(&s))?
                .into_inner()
                .keys
                .into_iter()
                .find(|k| hex::encode(&k.public_key) == me)
                .map(|k| k.roles)
        }
    };
    match roles {
        Some(r) if r.iter().any(|r| r == Role::Gateway.as_str()) => Ok(()),
        Some(r) => Err(CliError::new(
            exit::INVALID,
            format!(
                "key {me} holds {} but not the gateway role: nothing was run (register one with `docket key add PUB --role gateway`)",
                if r.is_empty() { "no role".to_string() } else { r.join(", ") }
            ),
        )
        .into()),
        None => Err(CliError::new(
            exit::INVALID,
            format!("key {me} is not a registered, unrevoked key: nothing was run"),
        )
        .into()),
    }
}

/// Registers one full output as evidence (signed by the gateway).
fn put_output(
    m: &Mode,
    key: &SigningKey,
    task_id: &str,
    evidence_type: &str,
    name: &str,
    bytes: &[u8],
    truncated: bool,
) -> Result<OutputOut> {
    let digest: [u8; 32] = Sha256::digest(bytes).into();
    let size = bytes.len() as u64;
    let p = json!({
        "task_id": task_id,
        "evidence_type": evidence_type,
        "sha256": hex::encode(digest),
        "size": size,
        "media_type": "text/plain",
        "name": name,
    });
    // Invariant: a JSON value serialises.
    let st = Statement::sign(
        kinds::EVIDENCE_REGISTERED,
        serde_json::to_vec(&p).expect("JSON serialises"),
        key,
    );
    let oid = match m {
        Mode::Embedded(d) => {
            d.put_evidence(bytes, st)
                .map_err(|e| explain(e.into()))?
                .oid
        }
        Mode::Remote(r) => {
            let mut file = tempfile::tempfile()?;
            file.write_all(bytes)?;
            file.rewind()?;
            upload_stream(r, &st, &digest, size, file)?.oid
        }
    };
    Ok(OutputOut {
        oid,
        name: name.to_string(),
        sha256: hex::encode(digest),
        size,
        truncated,
    })
}

/// `docket exec`.
pub fn run(ctx: &Ctx, a: &ExecArgs) -> Result<u8> {
    if !(a.timeout.is_finite() && a.timeout > 0.0) {
        return Err(CliError::new(
            exit::USAGE,
            "--timeout must be a positive number of seconds",
        )
        .into());
    }
    if let Some(step) = &a.step
        && (step.is_empty()
            || !step
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            || step.starts_with('.'))
    {
        return Err(CliError::new(
            exit::USAGE,
            format!("--step {step:?}: use letters, digits, `_`, `.` and `-` (not leading `.`)"),
        )
        .into());
    }
    let key = load_key(&a.key)?;
    let task_id = canonical_task_id(&a.task).unwrap_or_else(|| a.task.clone());
    let m = mode(ctx)?;
    precheck(&m, &key, &task_id)?;

    let captured = run_command(&a.argv, Duration::from_secs_f64(a.timeout), a.simulate);
    let record = captured.record();

    // The full outputs, kept as evidence before the record names them.
    let stamp: String = a.step.clone().unwrap_or_else(|| {
        captured
            .started_at
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect()
    });
    let stdout = put_output(
        &m,
        &key,
        &task_id,
        "stdout",
        &format!("execution/{stamp}/stdout.log"),
        &captured.stdout,
        record.stdout.ends_with(TRUNCATION_MARKER),
    )?;
    let stderr = put_output(
        &m,
        &key,
        &task_id,
        "stderr",
        &format!("execution/{stamp}/stderr.log"),
        &captured.stderr,
        record.stderr.ends_with(TRUNCATION_MARKER),
    )?;
    let mut doc = serde_json::to_value(&record)?;
    if let Some(map) = doc.as_object_mut() {
        map.insert("task_id".into(), json!(task_id));
        map.insert(
            "evidence_oids".into(),
            json!([stdout.oid.clone(), stderr.oid.clone()]),
        );
        map.insert(
            "artifacts".into(),
            json!({"stdout": stdout.oid.clone(), "stderr": stderr.oid.clone()}),
        );
    }
    // Invariant: a JSON value serialises.
    let st = Statement::sign(
        kinds::EXECUTION_RECORDED,
        serde_json::to_vec(&doc).expect("JSON serialises"),
        &key,
    );
    let receipt = ctx.backend()?.append(st).map_err(explain)?;

    let out = ExecOut {
        task_id,
        raw_command: record.raw_command.clone(),
        status: status_str(record.status),
        exit_code: record.exit_code,
        reason: captured.no_evidence.clone(),
        started_at: record.started_at.clone(),
        finished_at: record.finished_at.clone(),
        duration_seconds: record.duration_seconds,
        evidence_hash: record.evidence_hash.clone(),
        stdout,
        stderr,
        receipt,
    };
    ctx.out.emit(&out, || {
        let mut s = format!(
            "{} {}{} in {:.3}s\n  evidence_hash {}\n  stdout {} ({} bytes{})\n  stderr {} ({} bytes{})\n  {}",
            out.status,
            out.raw_command,
            out.exit_code.map_or(String::new(), |c| format!(" (exit {c})")),
            out.duration_seconds,
            out.evidence_hash,
            out.stdout.oid,
            out.stdout.size,
            if out.stdout.truncated { ", truncated in the record" } else { "" },
            out.stderr.oid,
            out.stderr.size,
            if out.stderr.truncated { ", truncated in the record" } else { "" },
            out.receipt.human()
        );
        if let Some(r) = &out.reason {
            s.push_str(&format!("\n  NO_EVIDENCE: {r}"));
        }
        s
    });
    Ok(match record.status {
        ExecutionStatus::Success => exit::OK,
        ExecutionStatus::Failure => exit::HARD_FAIL,
        ExecutionStatus::NoEvidence => exit::MISSING,
    })
}

// ---------------------------------------------------------------- touched_oids

/// The `touched_oids` of a submission (seed 001): those `submit.json`
/// names, then `--touched` ones, without repeats; each checked to be a
/// registered OID before anything is uploaded (exit 4 naming it).
pub(crate) fn touched_oids(m: &Mode, submit_json: &[u8], flags: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let named = serde_json::from_slice::<serde_json::Value>(submit_json)
        .ok()
        .and_then(|v| v.get("touched_oids").cloned());
    let named: Vec<String> = match named {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        // Anything else is the ledger's to refuse (INVALID, listed).
        _ => Vec::new(),
    };
    for o in named.into_iter().chain(flags.iter().cloned()) {
        if !out.contains(&o) {
            out.push(o);
        }
    }
    for o in &out {
        let found: Result<()> = match m {
            Mode::Embedded(d) => d.evidence(o).map(|_| ()).map_err(Into::into),
            Mode::Remote(r) => r
                .block_on(
                    pb::evidence_client::EvidenceClient::new(r.channel())
                        .get_evidence(pb::GetEvidenceRequest { oid: o.clone() }),
                )
                .map(|_| ())
                .map_err(|s| client::status_error(&s)),
        };
        if let Err(e) = found {
            return Err(CliError::new(
                exit::MISSING,
                format!("touched_oids: {o} is not a registered OID ({e}); nothing was submitted"),
            )
            .into());
        }
    }
    Ok(out)
}

/// The submission payload with `touched_oids` set (unchanged when there
/// are none).
pub(crate) fn with_touched(payload: Vec<u8>, touched: &[String]) -> Vec<u8> {
    if touched.is_empty() {
        return payload;
    }
    match serde_json::from_slice::<serde_json::Value>(&payload) {
        Ok(serde_json::Value::Object(mut map)) => {
            map.insert("touched_oids".into(), json!(touched));
            // Invariant: a JSON map serialises.
            serde_json::to_vec(&map).expect("JSON serialises")
        }
        _ => payload,
    }
}

//! `docket demo`: a newcomer's first five minutes, end to end over gRPC.
//!
//! Starts a server on a temporary ledger (or `--keep DIR`), registers a
//! submitter and an approver key, registers the bundled task, submits the
//! bundled failing artifacts directory and then the passing one (each
//! auto-verified by the ledger's verifier key), shows both verdicts and the
//! task's verdict history, proves the PASS verdict's inclusion against the
//! signed checkpoint (verified locally), then exports the task's verdict
//! chain and audits the bundle offline. Every step is a real gRPC call to
//! the server it started.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;
use docket_domain::checkpoint::NoteVerifier;
use docket_domain::{Statement, keys, merkle};
use docket_proto::v1 as pb;
use docket_proto::v1::keys_client::KeysClient;
use docket_proto::v1::ledger_client::LedgerClient;
use docket_proto::v1::tasks_client::TasksClient;
use docket_proto::v1::verdicts_client::VerdictsClient;
use ed25519_dalek::SigningKey;
use serde_json::json;
use tonic::transport::Channel;

use super::{BackgroundServer, ServeOptions, convert};
use crate::Ctx;
use crate::client::{channel, flow, status_error};
use crate::exit::{self, CliError};

/// The bundled task contract and artifacts directories.
pub const TASK_JSON: &str = include_str!("../../demo/task.json");
/// A passing attempt (seed 000 layout).
pub const PASS_FILES: &[(&str, &str)] = &[
    (
        "evidence/patch.diff",
        include_str!("../../demo/pass/evidence/patch.diff"),
    ),
    ("patch.diff", include_str!("../../demo/pass/patch.diff")),
    ("report.md", include_str!("../../demo/pass/report.md")),
    ("selftest.log", include_str!("../../demo/pass/selftest.log")),
    ("submit.json", include_str!("../../demo/pass/submit.json")),
];
/// A failing attempt: a test failed (`CI_FAILED`, `test_failure`).
pub const FAIL_FILES: &[(&str, &str)] = &[
    (
        "evidence/patch.diff",
        include_str!("../../demo/fail/evidence/patch.diff"),
    ),
    ("patch.diff", include_str!("../../demo/fail/patch.diff")),
    ("report.md", include_str!("../../demo/fail/report.md")),
    ("selftest.log", include_str!("../../demo/fail/selftest.log")),
    ("submit.json", include_str!("../../demo/fail/submit.json")),
];

/// `docket demo` flags.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Keep the demo ledger in this (new or empty) directory instead of a
    /// temporary one, to explore it afterwards.
    #[arg(long)]
    pub keep: Option<PathBuf>,
}

fn files(list: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    list.iter()
        .map(|(n, c)| ((*n).to_string(), c.as_bytes().to_vec()))
        .collect()
}

fn task_id() -> Result<String> {
    let v: serde_json::Value = serde_json::from_str(TASK_JSON)?;
    v["task_id"]
        .as_str()
        .map(str::to_string)
        .context("the bundled task has a task_id")
}

/// What the demo printed, for `--json` and tests.
#[derive(Debug, Default, serde::Serialize)]
pub struct DemoReport {
    pub data: PathBuf,
    pub server: String,
    pub task_id: String,
    pub fail_verdict: Option<serde_json::Value>,
    pub pass_verdict: Option<serde_json::Value>,
    pub history: Vec<serde_json::Value>,
    pub proof_verified: bool,
    pub export: Option<PathBuf>,
    pub audit_ok: Option<bool>,
    pub notes: Vec<String>,
}

fn verdict_summary(v: &pb::TaskVerdict) -> serde_json::Value {
    let status = pb::VerdictStatus::try_from(v.status)
        .map(|s| {
            s.as_str_name()
                .trim_start_matches("VERDICT_STATUS_")
                .to_string()
        })
        .unwrap_or_default();
    let failed: Vec<&str> = v
        .checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name.as_str())
        .collect();
    json!({
        "status": status,
        "reason_code": v.reason_code,
        "fail_class": v.fail_class,
        "verdict_seq": v.verdict_seq,
        "submission_seq": v.latest_submission_seq,
        "failed_checks": failed,
    })
}

fn describe(v: &serde_json::Value) -> String {
    let mut s = v["status"].as_str().unwrap_or("?").to_string();
    if let Some(rc) = v["reason_code"].as_str().filter(|r| !r.is_empty()) {
        s += &format!(" {rc}");
    }
    if let Some(fc) = v["fail_class"].as_str().filter(|r| !r.is_empty()) {
        s += &format!(" ({fc})");
    }
    let failed: Vec<&str> = v["failed_checks"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c.as_str()).collect())
        .unwrap_or_default();
    if !failed.is_empty() {
        s += &format!("; failed checks: {}", failed.join(", "));
    }
    s + &format!(
        "; verdict event at seq {} for the submission at seq {}",
        v["verdict_seq"], v["submission_seq"]
    )
}

async fn register(
    channel: Channel,
    admin: &SigningKey,
    roles: &[&str],
    label: &str,
) -> Result<SigningKey> {
    let key = keys::generate()?;
    let payload = json!({
        "public_key": hex::encode(key.verifying_key().to_bytes()),
        "roles": roles,
        "label": label,
    });
    let st = Statement::sign("key.registered", payload.to_string().into_bytes(), admin);
    KeysClient::new(channel)
        .register_key(convert::statement_to_proto(&st))
        .await
        .map_err(|s| status_error(&s))?;
    Ok(key)
}

/// Runs the whole story against `url` with the admin key; prints as it goes
/// unless `quiet`.
pub async fn story(
    url: &str,
    admin: &SigningKey,
    bundle_dir: &Path,
    say: &dyn Fn(&str),
) -> Result<DemoReport> {
    let ch = channel(url).await?;
    let task = task_id()?;
    let mut report = DemoReport {
        server: url.to_string(),
        task_id: task.clone(),
        ..DemoReport::default()
    };

    say("1. Register a submitter key (signed by the admin key).");
    let submitter = register(ch.clone(), admin, &["submitter"], "demo submitter").await?;
    say(&format!(
        "   submitter {}",
        hex::encode(submitter.verifying_key().to_bytes())
    ));

    say("2. Register the task and its acceptance contract (signed by the submitter).");
    let st = Statement::sign("task.registered", TASK_JSON.as_bytes().to_vec(), &submitter);
    let r = TasksClient::new(ch.clone())
        .register_task(convert::statement_to_proto(&st))
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    say(&format!("   task {task} registered at seq {}", r.seq));

    say("3. Submit the failing attempt: upload each artifact as evidence, then submit.json.");
    let (oids, resp) =
        flow::submit_artifacts(ch.clone(), &submitter, &task, &files(FAIL_FILES), true).await?;
    let v = resp.verdict.context("the server returned the verdict")?;
    let summary = verdict_summary(&v);
    say(&format!(
        "   {} evidence OIDs ({}, …); the ledger's verifier says: {}",
        oids.len(),
        oids.first().map(String::as_str).unwrap_or(""),
        describe(&summary)
    ));
    report.fail_verdict = Some(summary);

    say("4. Submit the passing attempt (a new submission supersedes the old verdict).");
    let (_, resp) =
        flow::submit_artifacts(ch.clone(), &submitter, &task, &files(PASS_FILES), true).await?;
    let v = resp.verdict.context("the server returned the verdict")?;
    let summary = verdict_summary(&v);
    say(&format!(
        "   the ledger's verifier says: {}",
        describe(&summary)
    ));
    report.pass_verdict = Some(summary);
    let verdict_seq = v.verdict_seq;

    say("5. The task's verdict history (every change, with state digests).");
    let full = VerdictsClient::new(ch.clone())
        .get_verdict(pb::GetVerdictRequest {
            task_id: task.clone(),
            as_of: None,
            include_history: true,
        })
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    let mut checks = 0;
    for h in &full.history {
        let status = pb::VerdictStatus::try_from(h.status)
            .map(|s| {
                s.as_str_name()
                    .trim_start_matches("VERDICT_STATUS_")
                    .to_string()
            })
            .unwrap_or_default();
        report.history.push(json!({
            "seq": h.seq, "kind": h.kind, "status": status, "reason_code": h.reason_code,
        }));
        if h.kind == "check.recorded" {
            checks += 1;
            continue;
        }
        if checks > 0 {
            say(&format!("   ... {checks} check.recorded events"));
            checks = 0;
        }
        say(&format!(
            "   seq {:>3} {:<20} -> {:<7} {} (state digest {}…)",
            h.seq,
            h.kind,
            status,
            h.reason_code,
            &hex::encode(&h.after_digest)[..12]
        ));
    }

    say("6. Prove the PASS verdict is in the log the ledger signed.");
    let mut ledger = LedgerClient::new(ch.clone());
    let cp = ledger
        .get_checkpoint(pb::GetCheckpointRequest {})
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    let proof = ledger
        .get_inclusion_proof(pb::GetInclusionProofRequest {
            seq: verdict_seq,
            tree_size: cp.size,
        })
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    let event = ledger
        .get_event(pb::GetEventRequest { seq: verdict_seq })
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    report.proof_verified = verify_locally(&cp, &proof, &event.canonical)?;
    say(&format!(
        "   checkpoint: tree size {}, root {}…, signed by {}",
        cp.size,
        &hex::encode(&cp.root)[..16],
        cp.verifier_key
    ));
    say(&format!(
        "   inclusion proof of seq {verdict_seq}: {} hashes; recomputed root matches the signed checkpoint: {}",
        proof.proof.len(),
        report.proof_verified
    ));

    say("7. Export the task's verdict chain and audit it offline.");
    match export_and_audit(ch, &task, &cp.verifier_key, bundle_dir).await {
        Ok((path, ok)) => {
            say(&format!(
                "   bundle written to {}; audit: {}",
                path.display(),
                if ok { "OK" } else { "FAILED" }
            ));
            report.export = Some(path);
            report.audit_ok = Some(ok);
        }
        Err(e) => {
            let note = format!("export/audit skipped: {e:#}");
            say(&format!("   note: {note}"));
            report.notes.push(note);
        }
    }
    Ok(report)
}

/// Checks the checkpoint signature, then the inclusion proof of the event
/// bytes against the checkpoint's root, with no help from the server.
fn verify_locally(cp: &pb::Checkpoint, proof: &pb::InclusionProof, event: &[u8]) -> Result<bool> {
    let verifier = NoteVerifier::parse(&cp.verifier_key)?;
    let opened = docket_domain::checkpoint::open_note(&cp.note, &verifier)?;
    let hashes: Vec<merkle::Hash> = proof
        .proof
        .iter()
        .map(|h| h.as_slice().try_into())
        .collect::<Result<_, _>>()
        .context("proof hashes are 32 bytes")?;
    let leaf = merkle::leaf_hash(event);
    Ok(opened.size == proof.tree_size
        && merkle::verify_inclusion(
            &leaf,
            proof.leaf_index,
            proof.tree_size,
            &hashes,
            &opened.root,
        )
        .is_ok())
}

/// Streams an export of one task into `dir` and audits it with the
/// offline auditor against the checkpoint's verifier key.
async fn export_and_audit(
    ch: Channel,
    task: &str,
    vkey: &str,
    dir: &Path,
) -> Result<(PathBuf, bool)> {
    download_export(ch, task, dir).await?;
    let ok = audit_dir(dir, vkey)?;
    Ok((dir.to_path_buf(), ok))
}

/// Writes every chunk of `Export.ExportBundle` under `dir`; returns the
/// number of files.
pub async fn download_export(ch: Channel, task: &str, dir: &Path) -> Result<usize> {
    use docket_proto::v1::export_client::ExportClient;
    use std::io::{Seek as _, SeekFrom, Write as _};
    let mut stream = ExportClient::new(ch)
        .export_bundle(pb::ExportRequest {
            task_ids: vec![task.to_string()],
            ..Default::default()
        })
        .await
        .map_err(|s| status_error(&s))?
        .into_inner();
    std::fs::create_dir_all(dir)?;
    let mut files = 0;
    while let Some(chunk) = stream.message().await.map_err(|s| status_error(&s))? {
        if chunk.path.split('/').any(|c| c.is_empty() || c == "..") {
            return Err(CliError::new(
                exit::HARD_FAIL,
                format!("unsafe bundle path {:?}", chunk.path),
            )
            .into());
        }
        let path = dir.join(&chunk.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(chunk.offset == 0)
            .open(&path)?;
        f.seek(SeekFrom::Start(chunk.offset))?;
        f.write_all(&chunk.data)?;
        if chunk.last {
            files += 1;
        }
    }
    Ok(files)
}

/// Audits a bundle directory offline against a trusted verifier key.
pub fn audit_dir(dir: &Path, vkey: &str) -> Result<bool> {
    let options = docket_domain::export::AuditOptions {
        trusted_key: Some(NoteVerifier::parse(vkey)?),
        ..Default::default()
    };
    let report = docket_domain::export::audit(dir, &options, &mut |_, _, _| {});
    for f in report.findings.iter().take(5) {
        tracing::warn!("audit finding: {f:?}");
    }
    Ok(report.exit_code() == 0)
}

pub fn run(ctx: &Ctx, args: &DemoArgs) -> Result<u8> {
    let (data, _tmp) = match &args.keep {
        Some(dir) => {
            if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
                return Err(CliError::new(
                    exit::USAGE,
                    format!("--keep {} must be a new or empty directory", dir.display()),
                )
                .into());
            }
            (dir.clone(), None)
        }
        None => {
            let t = tempfile::tempdir()?;
            (t.path().join("ledger"), Some(t))
        }
    };
    let listen = "127.0.0.1:0".parse().context("loopback address")?;
    let server = BackgroundServer::start(ServeOptions::new(&data, listen))?;
    let json = ctx.out.json;
    let say = |line: &str| {
        if !json {
            println!("{line}");
        }
    };
    let admin_path = server
        .init()
        .map(|i| i.admin_key_path.clone())
        .context("the demo ledger is new")?;
    say(&format!(
        "Docket demo: a server on a fresh ledger in {}, listening on {}",
        data.display(),
        server.url()
    ));
    say(&format!("(admin key: {})\n", admin_path.display()));
    let admin = keys::read_key_file(&admin_path)?;
    let url = server.url();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let bundle_dir = data.join("demo-bundle");
    let result = runtime.block_on(story(&url, &admin, &bundle_dir, &say));
    drop(runtime);
    server.shutdown()?;
    let mut report = result?;
    report.data.clone_from(&data);
    if json {
        ctx.out.emit(&report, String::new);
    } else {
        println!(
            "\nDone. The server shut down cleanly.{}",
            if args.keep.is_some() {
                format!(
                    " The ledger stays in {}: try `docket --data {} log tail` or `docket --data {} serve`.",
                    data.display(),
                    data.display(),
                    data.display()
                )
            } else {
                String::new()
            }
        );
    }
    let ok = report.proof_verified
        && report
            .fail_verdict
            .as_ref()
            .is_some_and(|v| v["status"] == "FAIL")
        && report
            .pass_verdict
            .as_ref()
            .is_some_and(|v| v["status"] == "PASS")
        && report.audit_ok != Some(false);
    Ok(if ok { exit::OK } else { exit::UNEXPECTED })
}

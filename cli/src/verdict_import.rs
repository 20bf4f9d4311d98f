//! Seed 001 verdict commands: `docket verdict import RUN_DIR --task ID --key
//! VERIFIER_KEY`, `docket verdict deadlines`, `docket verdict rules` and
//! `docket verify --reproduce TASK` (docs/DOMAIN.md, "Seed 001 verdicts").
//!
//! `verdict import` and `verify --reproduce` work embedded and with
//! `--server` (`Verdicts.ImportVerdict`, `Verdicts.ReproduceVerdict`); with
//! a server the files are stored with signed blob-only `Evidence.Upload`s.
//! The server is asked first: only when it answers that a blob is missing
//! are the files uploaded, so a refused key (not a verifier, a submitter of
//! the task) stores nothing.
//!
//! Exit codes: `verdict import` 0 when the recorded verdict is PASS, 5 when
//! it is FAIL (including `verdict_missing` and `artifact_missing`), 2 for a
//! malformed `verdict.json` or a refused statement (nothing recorded), 4
//! for an unknown task. A run dir that does not exist has no `verdict.json`:
//! FAIL `verdict_missing` is recorded (fail closed). `verify --reproduce` 0 when the engine
//! gives the recorded verdict, 3 when it does not, 4 when the task has no
//! verdict.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use docket_domain::LedgerError;
use docket_domain::domain::reproduce::Reproduction;
use docket_domain::domain::verdict_import::{ImportPlan, ImportReceipt};
use docket_domain::domain::{Docket, DocketOptions};
use docket_domain::verdicts::imported::outcome_str;
use docket_domain::verdicts::provenance::{self, Provenance};
use docket_proto::v1 as pb;
use ed25519_dalek::SigningKey;
use serde::Serialize;

use crate::Ctx;
use crate::backend::ReceiptView;
use crate::client::{self, Remote};
use crate::core_cmds::load_key;
use crate::exit::{self, CliError};
use crate::server::convert;
use crate::server::shared::Shared;

/// `docket verdict import`.
#[derive(Debug, Args)]
pub struct VerdictImportArgs {
    /// The run output dir: `evidence/verdict.json` and the files its
    /// `evidence_paths` name (relative to this dir).
    pub run_dir: PathBuf,
    /// Task id (UUID).
    #[arg(long)]
    pub task: String,
    /// A verifier's private key file (not a submitter of the task).
    #[arg(long)]
    pub key: PathBuf,
}

/// `docket verdict deadlines`.
#[derive(Debug, Args)]
pub struct DeadlinesArgs {
    /// Decide as of this time (RFC 3339; default: the ledger clock). A time
    /// after the ledger clock is refused.
    #[arg(long)]
    pub now: Option<String>,
    /// Report the tasks whose deadline passed without recording anything.
    #[arg(long)]
    pub dry_run: bool,
    /// A verifier's private key file (default: the ledger key).
    #[arg(long)]
    pub key: Option<PathBuf>,
}

/// `docket verdict rules`.
#[derive(Debug, Args)]
pub struct RulesArgs {
    /// The engine: `docket-verifier` (default), `docket-verdict-import` or
    /// `docket-verdict-deadline`.
    #[arg(long, default_value = provenance::VERIFIER_ENGINE)]
    pub engine: String,
}

fn ledger_error(e: LedgerError) -> anyhow::Error {
    if let LedgerError::Invalid { what, violations } = &e {
        let mut msg = format!("invalid {what}: {} violation(s)", violations.len());
        for v in violations {
            msg.push_str("\n  ");
            msg.push_str(v);
        }
        return CliError::new(exit::INVALID, msg).into();
    }
    e.into()
}

/// The server to use: `--server`, else the `docket serve` that holds the
/// data directory (DATA/server/address), if any.
fn server_of(ctx: &Ctx) -> Result<Option<String>> {
    if let Some(url) = &ctx.server {
        return Ok(Some(url.clone()));
    }
    if ctx.backend()?.embedded().is_some() {
        return Ok(None);
    }
    Ok(crate::served::address(&ctx.data))
}

fn embedded(ctx: &Ctx) -> Result<Docket> {
    let backend = ctx.backend()?;
    let Some(e) = backend.embedded() else {
        return Err(CliError::new(
            exit::USAGE,
            "this command needs the data directory (--data); a server holds it",
        )
        .into());
    };
    Ok(Docket::new(e.ledger.clone(), DocketOptions::default())?)
}

/// One imported file and its OID.
#[derive(Debug, Serialize)]
struct ImportedOut {
    path: String,
    oid: String,
    sha256: String,
    size: u64,
    evidence_type: String,
}

#[derive(Debug, Serialize)]
struct ImportOut {
    task_id: String,
    verdict: String,
    fail_class: Option<String>,
    exit_code: i64,
    submission_seq: Option<u64>,
    missing_paths: Vec<String>,
    evidence: Vec<ImportedOut>,
    engine: Provenance,
    receipt: ReceiptView,
}

impl ImportOut {
    fn new(plan: &ImportPlan, oids: &[String], receipt: ReceiptView) -> Self {
        ImportOut {
            task_id: plan.task_id.clone(),
            verdict: outcome_str(plan.verdict).into(),
            fail_class: plan.fail_class.map(|c| c.as_str().to_string()),
            exit_code: plan.exit_code,
            submission_seq: plan.submission_seq,
            missing_paths: plan.missing_paths.clone(),
            evidence: plan
                .files
                .iter()
                .zip(oids)
                .map(|(f, oid)| ImportedOut {
                    path: f.artifact.path.clone(),
                    oid: oid.clone(),
                    sha256: f.artifact.sha256.clone(),
                    size: f.artifact.size,
                    evidence_type: f.artifact.evidence_type.clone(),
                })
                .collect(),
            engine: Provenance::import(),
            receipt,
        }
    }

    fn human(&self) -> String {
        let mut s = format!(
            "{} {}{} (exit_code {})",
            self.task_id,
            self.verdict,
            self.fail_class
                .as_ref()
                .map(|c| format!(" {c}"))
                .unwrap_or_default(),
            self.exit_code
        );
        for e in &self.evidence {
            s.push_str(&format!("\n  {} {} ({} bytes)", e.oid, e.path, e.size));
        }
        for m in &self.missing_paths {
            s.push_str(&format!("\n  missing: {m}"));
        }
        s.push_str(&format!("\n  {}", self.receipt.human()));
        s
    }

    fn exit_code(&self) -> u8 {
        if self.verdict == "PASS" {
            exit::OK
        } else {
            exit::HARD_FAIL
        }
    }
}

/// `docket verdict import RUN_DIR --task ID --key KEY`.
pub fn run_import(ctx: &Ctx, a: &VerdictImportArgs) -> Result<u8> {
    let key = load_key(&a.key)?;
    let out = match &server_of(ctx)? {
        Some(url) => import_remote(&Remote::connect(url)?, a, &key)?,
        None => {
            let d = embedded(ctx)?;
            let (plan, r) = d
                .import_run_dir(&a.run_dir, &a.task, &key)
                .map_err(ledger_error)?;
            ImportOut::new(
                &plan,
                &r.oids,
                ReceiptView::new(&r.receipt, docket_domain::domain::kinds::VERDICT_IMPORTED),
            )
        }
    };
    ctx.out.emit(&out, || out.human());
    Ok(out.exit_code())
}

fn import_remote(r: &Remote, a: &VerdictImportArgs, key: &SigningKey) -> Result<ImportOut> {
    let verdict = r
        .block_on(
            pb::verdicts_client::VerdictsClient::new(r.channel()).get_verdict(
                pb::GetVerdictRequest {
                    task_id: a.task.clone(),
                    as_of: None,
                    include_history: false,
                },
            ),
        )
        .map_err(|s| client::status_error(&s))?
        .into_inner();
    let latest = (verdict.latest_submission_seq > 0).then_some(verdict.latest_submission_seq);
    let plan = ImportPlan::read(&a.run_dir, &a.task, latest).map_err(ledger_error)?;
    let stmt = plan.sign(key);
    let import = || {
        r.block_on(
            pb::verdicts_client::VerdictsClient::new(r.channel())
                .import_verdict(convert::statement_to_proto(&stmt)),
        )
    };
    // Ask first: a refused statement (role, separation of duties, rules)
    // uploads nothing; only missing blobs are worth an upload.
    let resp = match import() {
        Ok(resp) => resp.into_inner(),
        Err(s)
            if s.code() == tonic::Code::FailedPrecondition
                && s.message().contains("upload the content first") =>
        {
            for f in &plan.files {
                upload_blob(r, key, &f.source, &f.artifact.sha256, f.artifact.size)?;
            }
            import().map_err(|s| client::status_error(&s))?.into_inner()
        }
        Err(s) => return Err(client::status_error(&s)),
    };
    let receipt = resp
        .receipt
        .as_ref()
        .map(client::receipt_view)
        .ok_or_else(|| anyhow::anyhow!("the server returned no receipt"))?;
    Ok(ImportOut::new(&plan, &resp.oids, receipt))
}

impl crate::server::shared::Acknowledged for ImportReceipt {
    fn receipt(&self) -> &docket_domain::Receipt {
        &self.receipt
    }
}

/// `Verdicts.ImportVerdict` on the server.
pub async fn import_rpc(
    shared: &Shared,
    st: &pb::SignedStatement,
) -> Result<pb::ImportVerdictResponse, tonic::Status> {
    let st = shared.checked(st, &[docket_domain::domain::kinds::VERDICT_IMPORTED])?;
    let kind = st.kind.clone();
    let r = shared.write(move |d| d.import_verdict(st)).await?;
    Ok(pb::ImportVerdictResponse {
        receipt: Some(convert::receipt(&r.receipt, &kind)),
        oids: r.oids,
    })
}

/// `Verdicts.ReproduceVerdict` on the server.
pub async fn reproduce_rpc(
    shared: &Shared,
    task_id: String,
) -> Result<pb::ReproduceVerdictResponse, tonic::Status> {
    let r = shared.read(move |d| d.reproduce(&task_id)).await?;
    Ok(pb::ReproduceVerdictResponse {
        matches: r.matches,
        // Invariant: plain data serialises.
        reproduction_json: serde_json::to_vec(&r).expect("reproduction serialises"),
    })
}

/// Streams a file to `Evidence.Upload` without a registration (an upload
/// signed by `key`).
fn upload_blob(r: &Remote, key: &SigningKey, path: &Path, sha256: &str, size: u64) -> Result<()> {
    let digest: [u8; 32] = hex::decode(sha256)
        .ok()
        .and_then(|d| d.try_into().ok())
        .ok_or_else(|| anyhow::anyhow!("bad digest {sha256}"))?;
    let header = pb::UploadHeader {
        statement: None,
        expected_sha256: digest.to_vec(),
        expected_size: size,
        uploader_public_key: key.verifying_key().to_bytes().to_vec(),
        upload_signature: crate::server::uploads::sign_upload(key, &digest, size).to_vec(),
    };
    let file = std::fs::File::open(path).map_err(|e| {
        CliError::new(
            exit::MISSING,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    crate::domain_cmds::upload_file(r, header, file)?;
    Ok(())
}

/// `docket verdict deadlines`.
pub fn run_deadlines(ctx: &Ctx, a: &DeadlinesArgs) -> Result<u8> {
    if ctx.server.is_some() {
        return Err(CliError::new(
            exit::USAGE,
            "a server sweeps verdict deadlines on its own timer; run this with --data",
        )
        .into());
    }
    let d = embedded(ctx)?;
    let now = match &a.now {
        None => None,
        Some(t) => Some(crate::output::parse_rfc3339_ms(t)?),
    };
    let key = match &a.key {
        Some(k) => load_key(k)?,
        None => d.ledger().ledger_key().clone(),
    };
    let report = d
        .sweep_verdict_deadlines_with(now, a.dry_run, &key)
        .map_err(ledger_error)?;
    ctx.out.emit(&report, || {
        let mut s = format!(
            "verdict deadlines as of {}: {} task(s) {}",
            report.now,
            report.failed.len(),
            if report.dry_run {
                "would be recorded FAIL verdict_missing"
            } else {
                "recorded FAIL verdict_missing"
            }
        );
        for f in &report.failed {
            s.push_str(&format!(
                "\n  {} (deadline {}){}",
                f.task_id,
                f.deadline,
                f.receipt
                    .as_ref()
                    .map(|r| format!(" at seq {}", r.seq))
                    .unwrap_or_default()
            ));
        }
        for (t, why) in &report.skipped {
            s.push_str(&format!("\n  skipped {t}: {why}"));
        }
        s
    });
    Ok(exit::OK)
}

#[derive(Debug, Serialize)]
struct RulesOut {
    engine: Provenance,
    listing: String,
}

/// `docket verdict rules [--engine NAME]`: the engine's provenance and the
/// listing its rule-set digest is computed over.
pub fn run_rules(ctx: &Ctx, a: &RulesArgs) -> Result<u8> {
    let (Some(engine), Some(listing)) = (
        Provenance::current(&a.engine),
        provenance::listing(&a.engine),
    ) else {
        return Err(CliError::new(
            exit::INVALID,
            format!(
                "unknown engine {:?}; known: {}",
                a.engine,
                provenance::ENGINES.join(", ")
            ),
        )
        .into());
    };
    let out = RulesOut { engine, listing };
    ctx.out.emit(&out, || {
        format!(
            "{} {} rules_digest {}\n{}",
            out.engine.name,
            out.engine.version,
            out.engine.rules_digest,
            out.listing.trim_end()
        )
    });
    Ok(exit::OK)
}

fn reproduction_human(r: &Reproduction) -> String {
    let mut s = format!(
        "{} verdict #{} ({}): {} — recorded {}{}, reproduced {}{} with {} {}",
        r.task_id,
        r.verdict_seq,
        r.kind,
        if r.matches { "REPRODUCED" } else { "DIFFERS" },
        r.recorded.verdict,
        r.recorded
            .fail_class
            .as_ref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default(),
        r.reproduced.verdict,
        r.reproduced
            .fail_class
            .as_ref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default(),
        r.engine.name,
        r.engine.version
    );
    for d in &r.differences {
        s.push_str(&format!("\n  - {d}"));
    }
    for n in &r.notes {
        s.push_str(&format!("\n  note: {n}"));
    }
    s
}

/// `docket verify --reproduce TASK`.
pub fn run_reproduce(ctx: &Ctx, task: &str, json: bool) -> Result<u8> {
    let r = match &server_of(ctx)? {
        Some(url) => {
            let remote = Remote::connect(url)?;
            let resp = remote
                .block_on(
                    pb::verdicts_client::VerdictsClient::new(remote.channel()).reproduce_verdict(
                        pb::ReproduceVerdictRequest {
                            task_id: task.to_string(),
                        },
                    ),
                )
                .map_err(|s| client::status_error(&s))?
                .into_inner();
            serde_json::from_slice::<Reproduction>(&resp.reproduction_json).map_err(|e| {
                CliError::new(
                    exit::UNEXPECTED,
                    format!("the server's reproduction does not parse: {e}"),
                )
            })?
        }
        None => embedded(ctx)?.reproduce(task).map_err(ledger_error)?,
    };
    let out = crate::output::Output {
        json: json || ctx.out.json,
    };
    out.emit(&r, || reproduction_human(&r));
    Ok(if r.matches { exit::OK } else { exit::MISMATCH })
}

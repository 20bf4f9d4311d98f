//! Retention commands (`docket retention …`): the policy, pins and classes,
//! sweeps, redaction and the retention summary. Records are forever;
//! content expires (docs/RETENTION.md).
//!
//! Pins, classes and the policy are plain signed statements and work the
//! same on an embedded ledger (`--data`) and through a server (`--server`).
//! Sweeps, redactions and the summary need the blob store: on an embedded
//! ledger they run on [`Docket`] in this process; through a server they
//! call the `docket.v1.Retention` RPCs (redaction first uploads the redacted
//! content with `Evidence.Upload`).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use docket_domain::Statement;
use docket_domain::domain::{AsOf, Docket, DocketOptions};
use docket_domain::retention::payloads::{
    self, FindingRef, Pinned, PolicySet, Reclassified, Redacted, Sweep, Unpinned,
};
use docket_domain::retention::redact::{Finding, redact_secrets};
use docket_domain::retention::status::RetentionStatus;
use docket_domain::retention::{Policy, RedactOutcome, SweepOptions, SweepReport, kinds};
use docket_proto::v1 as pb;
use ed25519_dalek::SigningKey;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::Ctx;
use crate::client::{self, Remote};
use crate::core_cmds::load_key;
use crate::exit::{self, CliError};
use crate::output::{parse_rfc3339_ms, rfc3339_ms};
use crate::server::convert;

/// Largest content `redact --auto` reads (bytes).
const MAX_AUTO_REDACT: u64 = 256 << 20;
/// Upload chunk size of the redacted content (server mode).
const UPLOAD_CHUNK: usize = 256 << 10;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum RetentionCmd {
    /// Retention: classes, pins, sweeps, redaction and status. Records are
    /// forever; content expires.
    #[command(subcommand)]
    Retention(RetentionSub),
}

/// `docket retention …`.
#[derive(Debug, Subcommand)]
pub enum RetentionSub {
    /// Pin an OID: its content is kept until unpinned (custodian key).
    Pin(PinArgs),
    /// Unpin an OID: it expires under its class again (custodian key).
    Unpin(UnpinArgs),
    /// Move an OID to another retention class (custodian key).
    Reclassify(ReclassifyArgs),
    /// Expire the content the policy says has expired: append one
    /// `evidence.expired` per OID, then delete the content no OID still
    /// needs (custodian key).
    Sweep(SweepArgs),
    /// Replace an OID's content by a redacted version and purge the original
    /// (custodian key). Prints what was replaced, never the secret.
    Redact(RedactArgs),
    /// Per-class counts and bytes, upcoming expiries, pins, expired and
    /// redacted content.
    Status(StatusArgs),
    /// Show or set the retention policy.
    #[command(subcommand)]
    Policy(PolicyCmd),
}

/// `docket retention policy …`.
#[derive(Debug, Subcommand)]
pub enum PolicyCmd {
    /// Set the policy (admin key). Flags left out keep the value in force.
    Set(PolicySetArgs),
    /// Print the policy in force.
    Show,
}

/// `docket retention pin`.
#[derive(Debug, Args)]
pub struct PinArgs {
    /// The evidence OID.
    pub oid: String,
    /// A custodian's private key file.
    #[arg(long)]
    pub key: PathBuf,
    /// Why (kept in the event, e.g. "legal hold 2026-17").
    #[arg(long)]
    pub reason: Option<String>,
    /// Keep content in which the secret scanner finds secrets (seed 000:
    /// redact secrets before long-term retention; by default pinning such
    /// content is refused, exit 2).
    #[arg(long)]
    pub allow_secrets: bool,
}

/// `docket retention unpin`.
#[derive(Debug, Args)]
pub struct UnpinArgs {
    /// The evidence OID.
    pub oid: String,
    /// A custodian's private key file.
    #[arg(long)]
    pub key: PathBuf,
    /// For an OID of class `pinned`: the class it falls back to (default:
    /// its task's class, else routine).
    #[arg(long, value_enum)]
    pub class: Option<FallbackClass>,
    /// Why (kept in the event).
    #[arg(long)]
    pub reason: Option<String>,
}

/// `docket retention reclassify`.
#[derive(Debug, Args)]
pub struct ReclassifyArgs {
    /// The evidence OID.
    pub oid: String,
    /// The new class.
    #[arg(value_enum)]
    pub class: ClassArg,
    /// A custodian's private key file.
    #[arg(long)]
    pub key: PathBuf,
    /// Why (kept in the event).
    #[arg(long)]
    pub reason: Option<String>,
    /// Move content in which the secret scanner finds secrets to
    /// `high_impact` anyway (by default refused, exit 2: redact first).
    #[arg(long)]
    pub allow_secrets: bool,
}

/// `docket retention sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Decide at this RFC 3339 time instead of the ledger clock. A time
    /// after the ledger clock is refused unless the policy sets
    /// allow_future_sweeps (a dry run may always look ahead).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Decide and report only: append nothing, delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// A custodian's private key file.
    #[arg(long)]
    pub key: PathBuf,
    /// A note on the sweep event.
    #[arg(long)]
    pub note: Option<String>,
}

/// `docket retention redact`.
#[derive(Debug, Args)]
pub struct RedactArgs {
    /// The evidence OID.
    pub oid: String,
    /// The redacted content.
    #[arg(
        long = "with",
        value_name = "FILE",
        conflicts_with = "auto",
        required_unless_present = "auto"
    )]
    pub with: Option<PathBuf>,
    /// Find private keys, cloud access keys, tokens and URL passwords in the
    /// current content and redact them.
    #[arg(long)]
    pub auto: bool,
    /// Why (kept in the event).
    #[arg(long)]
    pub reason: String,
    /// A custodian's private key file.
    #[arg(long)]
    pub key: PathBuf,
    /// Also write the redacted content to this file (must not exist).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// With --auto: report what would be replaced, change nothing.
    #[arg(long, requires = "auto")]
    pub dry_run: bool,
}

/// `docket retention status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// As of a sequence number or an RFC 3339 time (default: latest).
    #[arg(long, value_name = "SEQ|TIME")]
    pub as_of: Option<String>,
    /// Compute expiries at this RFC 3339 time (embedded ledger only).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Most entries per list.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

/// `docket retention policy set`.
#[derive(Debug, Args)]
pub struct PolicySetArgs {
    /// Days routine content is kept (1 to the high-impact days). Also
    /// `--keep-days` (seed 004's `keep_days`).
    #[arg(long, alias = "keep-days")]
    pub routine_days: Option<u32>,
    /// Days high-impact content is kept (90 to 180).
    #[arg(long)]
    pub high_impact_days: Option<u32>,
    /// Keep the evidence of each task's last N submissions regardless of
    /// age (0: off). Also `--keep-runs` (seed 004's `keep_runs`).
    #[arg(long, alias = "keep-runs")]
    pub keep_last_submissions: Option<u32>,
    /// Let sweeps state a `now` after the ledger clock (simulations).
    #[arg(long, value_name = "BOOL")]
    pub allow_future_sweeps: Option<bool>,
    /// A note kept in the policy event.
    #[arg(long)]
    pub note: Option<String>,
    /// An admin's private key file.
    #[arg(long)]
    pub key: PathBuf,
}

/// A retention class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClassArg {
    Routine,
    #[value(name = "high_impact", alias = "high-impact")]
    HighImpact,
    Pinned,
}

impl ClassArg {
    fn as_str(self) -> &'static str {
        match self {
            ClassArg::Routine => "routine",
            ClassArg::HighImpact => "high_impact",
            ClassArg::Pinned => "pinned",
        }
    }
}

/// A class an unpinned OID can fall back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FallbackClass {
    Routine,
    #[value(name = "high_impact", alias = "high-impact")]
    HighImpact,
}

pub fn run(cmd: &RetentionCmd, ctx: &Ctx) -> Result<u8> {
    let RetentionCmd::Retention(sub) = cmd;
    match sub {
        RetentionSub::Pin(a) => {
            if !a.allow_secrets {
                refuse_unredacted(ctx, &a.oid, "pinning")?;
            }
            let p = Pinned {
                oid: norm_oid(&a.oid),
                reason: a.reason.clone(),
            };
            append(ctx, kinds::PINNED, &p, &a.key)
        }
        RetentionSub::Unpin(a) => {
            let p = Unpinned {
                oid: norm_oid(&a.oid),
                class: a.class.map(|c| match c {
                    FallbackClass::Routine => "routine".to_string(),
                    FallbackClass::HighImpact => "high_impact".to_string(),
                }),
                reason: a.reason.clone(),
            };
            append(ctx, kinds::UNPINNED, &p, &a.key)
        }
        RetentionSub::Reclassify(a) => {
            if !a.allow_secrets && matches!(a.class, ClassArg::HighImpact) {
                refuse_unredacted(ctx, &a.oid, "moving to high_impact")?;
            }
            let p = Reclassified {
                oid: norm_oid(&a.oid),
                class: a.class.as_str().to_string(),
                reason: a.reason.clone(),
            };
            append(ctx, kinds::RECLASSIFIED, &p, &a.key)
        }
        RetentionSub::Sweep(a) => run_sweep(a, ctx),
        RetentionSub::Redact(a) => run_redact(a, ctx),
        RetentionSub::Status(a) => run_status(a, ctx),
        RetentionSub::Policy(PolicyCmd::Set(a)) => run_policy_set(a, ctx),
        RetentionSub::Policy(PolicyCmd::Show) => run_policy_show(ctx),
    }
}

/// Seed 000 §3: "redact secrets before long-term retention". Long-term
/// retention (a pin, the `high_impact` class) of content in which the
/// secret scanner finds secrets is refused (exit 2) with the command that
/// redacts them. Content that cannot be read here (expired, too large, not
/// yet stored) is left to the ledger's own rules.
fn refuse_unredacted(ctx: &Ctx, oid: &str, what: &str) -> Result<()> {
    let oid = norm_oid(oid);
    let content = match docket(ctx)? {
        Some(d) => d.current_content(&oid, MAX_AUTO_REDACT).ok(),
        None => download_current(&remote(ctx)?, &oid).ok(),
    };
    let Some(content) = content else {
        return Ok(());
    };
    let found = redact_secrets(&content).findings;
    if found.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = found
        .iter()
        .map(|f| format!("{} on line {}", f.kind, f.line))
        .collect();
    Err(CliError::new(
        exit::INVALID,
        format!(
            "{what} {oid} refused: its content holds {} secret(s) ({}); seed 000 requires \
             redacting secrets before long-term retention: run `docket retention redact {oid} \
             --auto --reason TEXT --key CUSTODIAN_KEY` first, or pass --allow-secrets",
            found.len(),
            list.join(", ")
        ),
    )
    .into())
}

fn norm_oid(oid: &str) -> String {
    oid.trim().to_ascii_uppercase()
}

/// The domain service of the embedded ledger, or None through a server.
fn docket(ctx: &Ctx) -> Result<Option<Docket>> {
    let backend = ctx.backend()?;
    match backend.embedded() {
        Some(e) => Ok(Some(Docket::new(
            e.ledger.clone(),
            DocketOptions::default(),
        )?)),
        None => Ok(None),
    }
}

fn remote(ctx: &Ctx) -> Result<Remote> {
    let Some(url) = ctx.server_url() else {
        return Err(CliError::new(exit::USAGE, "no --server given").into());
    };
    Remote::connect(url)
}

fn append<T: Serialize>(ctx: &Ctx, kind: &str, payload: &T, key: &std::path::Path) -> Result<u8> {
    let key = load_key(key)?;
    let st = Statement::sign(kind, payloads::to_bytes(payload), &key);
    let r = ctx.backend()?.append(st)?;
    ctx.out.emit(&r, || r.human());
    Ok(exit::OK)
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

// ------------------------------------------------------------------ sweep

/// A sweep as commands print it (embedded and server alike).
#[derive(Debug, Serialize)]
struct SweepView {
    dry_run: bool,
    now_ms: u64,
    now: String,
    sweep_seq: Option<u64>,
    expired_oids: Vec<String>,
    bytes_freed: u64,
    /// The full report (the server sends it too; an older one does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<serde_json::Value>,
    /// The same report, typed, for the human output (embedded only).
    #[serde(skip)]
    typed: Option<SweepReport>,
}

impl SweepView {
    fn human(&self) -> String {
        let verb = if self.dry_run {
            "would expire"
        } else {
            "expired"
        };
        let mut s = format!(
            "sweep at {}{}: {verb} {} OID(s), {} {}",
            self.now,
            self.sweep_seq
                .map(|q| format!(" (event {q})"))
                .unwrap_or_else(|| if self.dry_run {
                    " (dry run)".into()
                } else {
                    String::new()
                }),
            self.expired_oids.len(),
            human_bytes(self.bytes_freed),
            if self.dry_run {
                "would be freed"
            } else {
                "freed"
            }
        );
        if let Some(r) = &self.typed {
            s += &format!(
                "\n  examined {}: kept {} pinned, {} by the count limit, {} within their class",
                r.examined, r.kept_pinned, r.kept_count_limit, r.kept_within_class
            );
            for e in &r.expired {
                s += &format!(
                    "\n  {} {:<11} expired {}  {}{}",
                    e.planned.oid,
                    e.planned.class,
                    rfc3339_ms(e.planned.expires_at_ms),
                    human_bytes(e.planned.size),
                    e.receipt
                        .as_ref()
                        .map(|x| format!("  event {}", x.seq))
                        .unwrap_or_default()
                );
            }
            for k in &r.skipped {
                s += &format!("\n  {} skipped: {}", k.oid, k.error);
            }
            if let Some(rec) = &r.reconcile {
                if !rec.deferred.is_empty() {
                    s += &format!(
                        "\n  {} blob(s) kept for their upload grace period",
                        rec.deferred.len()
                    );
                }
                if !rec.lost.is_empty() {
                    s += &format!(
                        "\n  WARNING: {} blob(s) a live OID needs were deleted; re-upload them",
                        rec.lost.len()
                    );
                }
            }
        } else {
            for o in &self.expired_oids {
                s += &format!("\n  {o}");
            }
        }
        s
    }
}

fn run_sweep(a: &SweepArgs, ctx: &Ctx) -> Result<u8> {
    let key = load_key(&a.key)?;
    let now = a.now.as_deref().map(parse_rfc3339_ms).transpose()?;
    let view = match docket(ctx)? {
        Some(d) => {
            let report = d.sweep_with(
                &SweepOptions {
                    now_ms: now,
                    dry_run: a.dry_run,
                    note: a.note.clone(),
                    ..SweepOptions::default()
                },
                &key,
            )?;
            SweepView {
                dry_run: report.dry_run,
                now_ms: report.now_ms,
                now: rfc3339_ms(report.now_ms),
                sweep_seq: report.sweep_receipt.as_ref().map(|r| r.seq),
                expired_oids: report
                    .expired
                    .iter()
                    .map(|e| e.planned.oid.clone())
                    .collect(),
                bytes_freed: report.bytes_freed,
                report: Some(serde_json::to_value(&report)?),
                typed: Some(report),
            }
        }
        None => sweep_remote(ctx, a, now, &key)?,
    };
    ctx.out.emit(&view, || view.human());
    Ok(exit::OK)
}

fn sweep_remote(ctx: &Ctx, a: &SweepArgs, now: Option<u64>, key: &SigningKey) -> Result<SweepView> {
    let payload = Sweep {
        now: now.map(rfc3339_ms),
        note: a.note.clone(),
    };
    let st = Statement::sign(kinds::SWEEP, payloads::to_bytes(&payload), key);
    let remote = remote(ctx)?;
    let request = pb::SweepRequest {
        statement: Some(convert::statement_to_proto(&st)),
        dry_run: a.dry_run,
    };
    let resp = remote
        .block_on(async {
            pb::retention_client::RetentionClient::new(remote.channel())
                .sweep(request)
                .await
        })
        .map_err(|s| client::status_error(&s))?
        .into_inner();
    let now_ms = u64::try_from(resp.now_unix_ms).unwrap_or(0);
    Ok(SweepView {
        dry_run: resp.dry_run,
        now_ms,
        now: rfc3339_ms(now_ms),
        sweep_seq: resp.receipts.first().map(|r| r.seq),
        expired_oids: resp.expired_oids,
        bytes_freed: resp.bytes_freed,
        report: serde_json::from_str(&resp.report_json).ok(),
        typed: None,
    })
}

// ----------------------------------------------------------------- redact

/// A redaction as commands print it.
#[derive(Debug, Serialize)]
struct RedactView {
    oid: String,
    dry_run: bool,
    /// What was (or would be) replaced: kind and line, never the secret.
    findings: Vec<FindingRef>,
    seq: Option<u64>,
    original_sha256: String,
    redacted_sha256: Option<String>,
    redacted_size: Option<u64>,
    original_deleted: Option<bool>,
    original_still_needed_by: Vec<String>,
    out: Option<PathBuf>,
}

impl RedactView {
    fn human(&self) -> String {
        let mut s = if self.dry_run {
            format!(
                "{}: would replace {} secret(s)",
                self.oid,
                self.findings.len()
            )
        } else if self.seq.is_none() {
            format!("{}: no secrets found; nothing redacted", self.oid)
        } else {
            format!(
                "redacted {} at seq {}: {} → {} ({})",
                self.oid,
                self.seq.unwrap_or_default(),
                &self.original_sha256[..16.min(self.original_sha256.len())],
                self.redacted_sha256
                    .as_deref()
                    .map_or("", |d| &d[..16.min(d.len())]),
                human_bytes(self.redacted_size.unwrap_or(0))
            )
        };
        for f in &self.findings {
            s += &format!("\n  replaced {} on line {}", f.kind, f.line);
        }
        match self.original_deleted {
            Some(true) => s += "\n  original content purged",
            Some(false) if !self.original_still_needed_by.is_empty() => {
                s += &format!(
                    "\n  original content kept: {} other OID(s) hold the same bytes ({}); redact them too",
                    self.original_still_needed_by.len(),
                    self.original_still_needed_by.join(", ")
                );
            }
            _ => {}
        }
        if let Some(p) = &self.out {
            s += &format!("\n  redacted content written to {}", p.display());
        }
        s
    }
}

fn finding_refs(findings: &[Finding]) -> Vec<FindingRef> {
    findings
        .iter()
        .map(|f| FindingRef {
            kind: f.kind.to_string(),
            line: f.line,
        })
        .collect()
}

fn write_new(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            CliError::new(
                exit::INVALID,
                format!("cannot create {}: {e}", path.display()),
            )
        })?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| CliError::new(exit::UNEXPECTED, format!("writing {}: {e}", path.display())))?;
    Ok(())
}

fn run_redact(a: &RedactArgs, ctx: &Ctx) -> Result<u8> {
    let key = load_key(&a.key)?;
    let oid = norm_oid(&a.oid);
    let docket = docket(ctx)?;
    let remote = if docket.is_none() {
        Some(remote(ctx)?)
    } else {
        None
    };
    // The content the OID holds now (for --auto, and its digest).
    let current = match (&docket, &remote) {
        (Some(d), _) => d.current_content(&oid, MAX_AUTO_REDACT)?,
        (None, Some(r)) => download_current(r, &oid)?,
        (None, None) => unreachable!("one backend is always set"),
    };
    let original_sha256 = hex::encode(Sha256::digest(&current));
    let (content, findings) = if a.auto {
        let red = redact_secrets(&current);
        (red.content, finding_refs(&red.findings))
    } else {
        // Invariant: clap requires --with unless --auto.
        let path = a.with.as_ref().expect("--with or --auto");
        let bytes = std::fs::read(path).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        (bytes, Vec::new())
    };
    let mut view = RedactView {
        oid: oid.clone(),
        dry_run: a.dry_run,
        findings,
        seq: None,
        original_sha256,
        redacted_sha256: None,
        redacted_size: None,
        original_deleted: None,
        original_still_needed_by: Vec::new(),
        out: None,
    };
    if a.dry_run || (a.auto && view.findings.is_empty()) {
        ctx.out.emit(&view, || view.human());
        return Ok(exit::OK);
    }
    if content == current {
        return Err(CliError::new(
            exit::INVALID,
            "the redacted content is identical to the current content",
        )
        .into());
    }
    if let Some(p) = &a.out {
        write_new(p, &content)?;
        view.out = Some(p.clone());
    }
    match (&docket, &remote) {
        (Some(d), _) => {
            let o: RedactOutcome =
                d.redact_content(&oid, &content, &a.reason, view.findings.clone(), &key)?;
            view.seq = Some(o.receipt.seq);
            view.redacted_sha256 = Some(o.redacted_sha256);
            view.redacted_size = Some(o.redacted_size);
            view.original_deleted = Some(o.original_deleted);
            view.original_still_needed_by = o.original_still_needed_by;
        }
        (None, Some(r)) => {
            let digest = hex::encode(Sha256::digest(&content));
            upload_plain(r, &key, &content)?;
            let payload = Redacted {
                oid: oid.clone(),
                original_sha256: view.original_sha256.clone(),
                redacted_sha256: digest.clone(),
                redacted_size: content.len() as u64,
                reason: a.reason.clone(),
                findings: view.findings.clone(),
            };
            let st = Statement::sign(kinds::REDACTED, payloads::to_bytes(&payload), &key);
            let response = r
                .block_on(async {
                    pb::retention_client::RetentionClient::new(r.channel())
                        .redact(convert::statement_to_proto(&st))
                        .await
                })
                .map_err(|s| client::status_error(&s))?;
            // What happened to the original (an older server says nothing).
            if let Some(effect) = response
                .metadata()
                .get_bin("docket-redaction-bin")
                .and_then(|v| v.to_bytes().ok())
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            {
                view.original_deleted = effect["original_deleted"].as_bool();
                view.original_still_needed_by = effect["original_still_needed_by"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
            }
            let receipt = response.into_inner();
            view.seq = Some(receipt.seq);
            view.redacted_sha256 = Some(digest);
            view.redacted_size = Some(content.len() as u64);
        }
        (None, None) => unreachable!("one backend is always set"),
    }
    ctx.out.emit(&view, || view.human());
    Ok(exit::OK)
}

/// Downloads the content an OID holds now (redacted versions allowed).
fn download_current(r: &Remote, oid: &str) -> Result<Vec<u8>> {
    r.block_on(async {
        let mut stream = pb::evidence_client::EvidenceClient::new(r.channel())
            .max_decoding_message_size(64 << 20)
            .download(pb::DownloadEvidenceRequest {
                oid: oid.to_string(),
                allow_redacted: true,
            })
            .await
            .map_err(|s| client::status_error(&s))?
            .into_inner();
        let mut out = Vec::new();
        while let Some(msg) = stream
            .message()
            .await
            .map_err(|s| client::status_error(&s))?
        {
            if let Some(pb::download_evidence_response::Part::Chunk(c)) = msg.part {
                if out.len() as u64 + c.len() as u64 > MAX_AUTO_REDACT {
                    return Err(CliError::new(
                        exit::INVALID,
                        format!("{oid} is larger than {} bytes", MAX_AUTO_REDACT),
                    )
                    .into());
                }
                out.extend_from_slice(&c);
            }
        }
        Ok(out)
    })
}

/// Stores content on the server without registering it (an upload signed
/// by `key`).
fn upload_plain(r: &Remote, key: &SigningKey, content: &[u8]) -> Result<()> {
    let mut messages = vec![pb::UploadEvidenceRequest {
        part: Some(pb::upload_evidence_request::Part::Header(
            crate::server::uploads::signed_header(key, content),
        )),
    }];
    for chunk in content.chunks(UPLOAD_CHUNK) {
        messages.push(pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Chunk(chunk.to_vec())),
        });
    }
    r.block_on(async {
        pb::evidence_client::EvidenceClient::new(r.channel())
            .upload(tokio_stream::iter(messages))
            .await
    })
    .map_err(|s| client::status_error(&s))?;
    Ok(())
}

// ----------------------------------------------------------------- status

fn parse_as_of(s: Option<&str>) -> Result<AsOf> {
    match s {
        None => Ok(AsOf::Latest),
        Some(s) => Ok(AsOf::parse(s)?),
    }
}

fn status_human(s: &RetentionStatus) -> String {
    let mut out = format!(
        "retention as of seq {}, now {}\npolicy: routine {} days, high_impact {} days, keep last {} submission(s){}{}",
        s.as_of_seq.map_or("-".into(), |q| q.to_string()),
        s.now,
        s.policy.routine_days,
        s.policy.high_impact_days,
        s.policy.keep_last_submissions,
        if s.policy.allow_future_sweeps {
            ", future sweeps allowed"
        } else {
            ""
        },
        s.policy_seq
            .map_or(" (built-in default)".into(), |q| format!(
                " (set at seq {q})"
            ))
    );
    out += &format!(
        "\n\n{:<12} {:>8} {:>11} {:>7} {:>8} {:>11} {:>9} {:>11}",
        "class", "live", "bytes", "pinned", "expired", "bytes", "redacted", "bytes"
    );
    for c in &s.classes {
        out += &format!(
            "\n{:<12} {:>8} {:>11} {:>7} {:>8} {:>11} {:>9} {:>11}",
            c.class,
            c.live_count,
            human_bytes(c.live_bytes),
            c.pinned_count,
            c.expired_count,
            human_bytes(c.expired_bytes),
            c.redacted_count,
            human_bytes(c.redacted_bytes)
        );
    }
    out += &format!(
        "\n\ndue now: {} OID(s), {}{}",
        s.due.count,
        human_bytes(s.due.bytes),
        if s.due.count > 0 {
            " (run `docket retention sweep`)"
        } else {
            ""
        }
    );
    if s.held_by_count_limit.count > 0 {
        out += &format!(
            "\nheld past their class by the count limit: {} OID(s), {}",
            s.held_by_count_limit.count,
            human_bytes(s.held_by_count_limit.bytes)
        );
    }
    out += &format!("\nupcoming expiries ({} shown):", s.upcoming.len());
    for u in &s.upcoming {
        out += &format!(
            "\n  {}  {} {:<11} {}",
            u.expires_at,
            u.oid,
            u.class,
            human_bytes(u.size)
        );
    }
    out += &format!("\npinned: {}", s.pinned_total);
    for p in &s.pinned {
        out += &format!(
            "\n  {} {:<11} {}{}",
            p.oid,
            p.class,
            p.pin_seq
                .map_or("by class".into(), |q| format!("event {q}")),
            p.reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        );
    }
    out += &format!(
        "\nexpired (purged): {} OID(s), {}",
        s.expired.count,
        human_bytes(s.expired.bytes)
    );
    out += &format!("\nredacted: {}", s.redacted_total);
    for r in &s.redacted {
        out += &format!("\n  {} event {} at {}: {}", r.oid, r.seq, r.at, r.reason);
    }
    if s.pending_deletion.blobs > 0 {
        out += &format!(
            "\ncontent awaiting deletion: {} blob(s), {} (a sweep or the next open finishes it)",
            s.pending_deletion.blobs,
            human_bytes(s.pending_deletion.bytes)
        );
    }
    match &s.last_sweep {
        Some(l) => {
            out += &format!(
                "\nlast sweep: event {} at {} (decided at {}), {} expired; {} sweep(s) in all",
                l.seq,
                rfc3339_ms(l.at_ms),
                rfc3339_ms(l.as_of_ms),
                l.expired,
                s.sweeps
            );
        }
        None => out += "\nno sweep yet",
    }
    out
}

/// The server's summary, as printed.
#[derive(Debug, Serialize)]
struct RemoteStatus {
    as_of_seq: u64,
    policy: Option<serde_json::Value>,
    classes: Vec<serde_json::Value>,
    upcoming: Vec<serde_json::Value>,
}

fn run_status(a: &StatusArgs, ctx: &Ctx) -> Result<u8> {
    let as_of = parse_as_of(a.as_of.as_deref())?;
    let now = a.now.as_deref().map(parse_rfc3339_ms).transpose()?;
    if let Some(d) = docket(ctx)? {
        let s = d.retention_status(as_of, now, a.limit)?;
        ctx.out.emit(&s, || status_human(&s));
        return Ok(exit::OK);
    }
    let r = remote(ctx)?;
    let resp = remote_status(&r, a.as_of.as_deref(), a.limit, now)?;
    // The server's summary is the embedded one: `--json` prints it alike.
    if ctx.out.json && serde_json::from_str::<serde_json::Value>(&resp.status_json).is_ok() {
        ctx.out.emit_json_text(&resp.status_json, String::new);
        return Ok(exit::OK);
    }
    let view = RemoteStatus {
        as_of_seq: resp.as_of_seq,
        policy: serde_json::from_slice(&resp.policy_json).ok(),
        classes: resp
            .classes
            .iter()
            .map(|c| {
                serde_json::json!({
                    "class": c.class, "live_count": c.live_count, "live_bytes": c.live_bytes,
                    "pinned_count": c.pinned_count, "expired_count": c.expired_count,
                    "expired_bytes": c.expired_bytes, "redacted_count": c.redacted_count,
                })
            })
            .collect(),
        upcoming: resp
            .upcoming
            .iter()
            .map(|u| {
                serde_json::json!({
                    "oid": u.oid, "class": u.class, "size": u.size,
                    "expires_at": rfc3339_ms(u64::try_from(u.expires_at_unix_ms).unwrap_or(0)),
                })
            })
            .collect(),
    };
    ctx.out.emit(&view, || {
        let mut s = format!(
            "retention as of seq {}\npolicy: {}",
            view.as_of_seq,
            view.policy
                .as_ref()
                .map_or("built-in default".into(), ToString::to_string)
        );
        for c in &resp.classes {
            s += &format!(
                "\n{:<12} live {} ({}), pinned {}, expired {} ({}), redacted {}",
                c.class,
                c.live_count,
                human_bytes(c.live_bytes),
                c.pinned_count,
                c.expired_count,
                human_bytes(c.expired_bytes),
                c.redacted_count
            );
        }
        for u in &resp.upcoming {
            s += &format!(
                "\n  {}  {} {} {}",
                rfc3339_ms(u64::try_from(u.expires_at_unix_ms).unwrap_or(0)),
                u.oid,
                u.class,
                human_bytes(u.size)
            );
        }
        s
    });
    Ok(exit::OK)
}

fn remote_status(
    r: &Remote,
    as_of: Option<&str>,
    limit: usize,
    now: Option<u64>,
) -> Result<pb::RetentionStatus> {
    let as_of = as_of.map(|s| pb::AsOf {
        point: Some(if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            pb::as_of::Point::Seq(s.parse().unwrap_or(0))
        } else {
            pb::as_of::Point::Time(s.to_string())
        }),
    });
    Ok(r.block_on(async {
        pb::retention_client::RetentionClient::new(r.channel())
            .get_status(pb::GetRetentionStatusRequest {
                as_of,
                upcoming_limit: u32::try_from(limit).unwrap_or(u32::MAX),
                now_unix_ms: now.and_then(|n| i64::try_from(n).ok()).unwrap_or(0),
            })
            .await
    })
    .map_err(|s| client::status_error(&s))?
    .into_inner())
}

// ----------------------------------------------------------------- policy

/// The policy in force, the event that set it (embedded only), and
/// whether it is the built-in default.
fn current_policy(ctx: &Ctx) -> Result<(Policy, Option<u64>, bool)> {
    if let Some(d) = docket(ctx)? {
        let state = d.ledger().state();
        let seq = state.retention.policy.as_ref().map(|p| p.seq);
        return Ok((state.retention.policy(), seq, seq.is_none()));
    }
    let r = remote(ctx)?;
    let resp = remote_status(&r, None, 0, None)?;
    if resp.policy_json.is_empty() {
        return Ok((Policy::default(), None, true));
    }
    let p = payloads::policy_set(&resp.policy_json)?;
    let seq = serde_json::from_str::<serde_json::Value>(&resp.status_json)
        .ok()
        .and_then(|s| s["policy_seq"].as_u64());
    Ok((p.policy(), seq, false))
}

fn run_policy_set(a: &PolicySetArgs, ctx: &Ctx) -> Result<u8> {
    let (current, _, _) = current_policy(ctx)?;
    let policy = Policy {
        routine_days: a.routine_days.unwrap_or(current.routine_days),
        high_impact_days: a.high_impact_days.unwrap_or(current.high_impact_days),
        keep_last_submissions: a
            .keep_last_submissions
            .unwrap_or(current.keep_last_submissions),
        allow_future_sweeps: a.allow_future_sweeps.unwrap_or(current.allow_future_sweeps),
    };
    let violations = policy.violations();
    if !violations.is_empty() {
        return Err(CliError::new(
            exit::INVALID,
            format!("invalid policy: {}", violations.join("; ")),
        )
        .into());
    }
    append(
        ctx,
        kinds::POLICY_SET,
        &PolicySet::from_policy(&policy, a.note.clone()),
        &a.key,
    )
}

fn run_policy_show(ctx: &Ctx) -> Result<u8> {
    let (policy, seq, default) = current_policy(ctx)?;
    let value = serde_json::json!({"policy": policy, "policy_seq": seq, "default": default});
    ctx.out.emit(&value, || {
        format!(
            "routine: {} days\nhigh_impact: {} days\npinned: until unpinned\nkeep_last_submissions: {}\nallow_future_sweeps: {}\n{}",
            policy.routine_days,
            policy.high_impact_days,
            policy.keep_last_submissions,
            policy.allow_future_sweeps,
            match (default, seq) {
                (true, _) => "(built-in default)".to_string(),
                (false, Some(q)) => format!("(set at seq {q})"),
                (false, None) => "(set by a policy event)".to_string(),
            }
        )
    });
    Ok(exit::OK)
}

//! Domain commands: keys, tasks, evidence, `submit`, verdicts, approvals,
//! execution records and external checks (docs/DOMAIN.md).
//!
//! Every command runs on the embedded ledger (`--data`, through
//! [`Docket`]) or on a server (`--server`, through the `docket.v1` RPCs), and
//! prints the same views with the same exit codes either way: verdict views
//! are built from `pb::TaskVerdict` in both modes (embedded mode converts
//! with the server's own `task_verdict`). Exit codes: `submit` and
//! `verdict show` exit 0 for PASS and 5 for FAIL — and 5 for a task with no
//! verdict (PENDING: a missing verdict is a FAIL, seed 001) — 2 for a
//! refused statement, 4 for something missing.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use docket_domain::domain::payloads::{
    canonical_task_id, guess_evidence_type, guess_media_type, task_key,
};
use docket_domain::domain::{AsOf, Docket, DocketOptions, kinds};
use docket_domain::keys::{self, Role};
use docket_domain::{LedgerError, Statement};
use docket_proto::v1 as pb;
use ed25519_dalek::SigningKey;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::Ctx;
use crate::backend::ReceiptView;
use crate::client::{self, Remote, flow};
use crate::core_cmds::load_key;
use crate::exit::{self, CliError};
use crate::output::rfc3339_ms;
use crate::server::{convert, domain_svc};

/// Upload chunk size over gRPC (the server takes up to 1 MiB).
const UPLOAD_CHUNK: usize = 256 << 10;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum DomainCmd {
    /// Keys and roles: add, revoke, list.
    #[command(subcommand)]
    Key(KeyCmd),
    /// Tasks: register a contract, show one.
    #[command(subcommand)]
    Task(TaskCmd),
    /// Evidence: put a file (returns its OID), show an OID, get its content.
    #[command(subcommand)]
    Evidence(EvidenceCmd),
    /// Submit an artifacts directory (seed 000 layout): register every file
    /// as evidence, submit `submit.json` naming the OIDs, print the verdict.
    /// Exit 0 PASS, 5 FAIL (or no verdict), 2 refused, 4 no submit.json.
    Submit(SubmitArgs),
    /// Verdicts: show one task's (as of a point), list by status, issue one
    /// as an external verifier.
    #[command(subcommand)]
    Verdict(VerdictCmd),
    /// Approvals: request, grant, deny.
    #[command(subcommand)]
    Approval(ApprovalCmd),
    /// Execution records (seed 002).
    #[command(subcommand)]
    Execution(ExecutionCmd),
    /// Checks recorded by an external verifier.
    #[command(subcommand)]
    Check(CheckCmd),
}

/// `docket key …`.
#[derive(Debug, Subcommand)]
pub enum KeyCmd {
    /// Register a public key with roles (admin key).
    Add(KeyAddArgs),
    /// Revoke a key: it authors nothing after the revocation (admin key).
    Revoke(KeyRevokeArgs),
    /// List keys and roles.
    List(KeyListArgs),
}

/// A role flag value.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Admin,
    Submitter,
    Verifier,
    Approver,
    Custodian,
    Auditor,
    /// The seed 002 execution gateway (`docket exec`).
    Gateway,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Self {
        match r {
            RoleArg::Admin => Role::Admin,
            RoleArg::Submitter => Role::Submitter,
            RoleArg::Verifier => Role::Verifier,
            RoleArg::Approver => Role::Approver,
            RoleArg::Custodian => Role::Custodian,
            RoleArg::Auditor => Role::Auditor,
            RoleArg::Gateway => Role::Gateway,
        }
    }
}

#[derive(Debug, Args)]
pub struct KeyAddArgs {
    /// The public key (64 hex digits), or a key file written by `docket keygen`.
    pub pubkey: String,
    /// Roles (repeat or comma-separate).
    #[arg(long = "role", value_enum, required = true, value_delimiter = ',')]
    pub roles: Vec<RoleArg>,
    /// A human label.
    #[arg(long)]
    pub label: Option<String>,
    /// Start of the validity window (RFC 3339).
    #[arg(long)]
    pub not_before: Option<String>,
    /// End of the validity window (RFC 3339).
    #[arg(long)]
    pub not_after: Option<String>,
    /// An admin's private key file.
    #[arg(long)]
    pub key: PathBuf,
}

#[derive(Debug, Args)]
pub struct KeyRevokeArgs {
    /// The public key (64 hex digits), or a key file.
    pub pubkey: String,
    /// Why (kept in the event).
    #[arg(long)]
    pub reason: Option<String>,
    /// An admin's private key file.
    #[arg(long)]
    pub key: PathBuf,
}

#[derive(Debug, Args)]
pub struct KeyListArgs {
    /// Include revoked keys.
    #[arg(long)]
    pub all: bool,
    /// As of a sequence number or RFC 3339 time.
    #[arg(long)]
    pub as_of: Option<String>,
}

/// `docket task …`.
#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Register a task contract (`task.json`, sent byte for byte). An invalid
    /// contract is refused listing every violated rule (exit 2).
    Register {
        /// The contract file.
        file: PathBuf,
        /// An admin's or submitter's private key file.
        #[arg(long)]
        key: PathBuf,
    },
    /// Show a task and its contract.
    Show {
        /// Task id (UUID).
        id: String,
        /// As of a sequence number or RFC 3339 time.
        #[arg(long)]
        as_of: Option<String>,
    },
}

/// `docket evidence …`.
#[derive(Debug, Subcommand)]
pub enum EvidenceCmd {
    /// Upload a file and register it for a task; prints the OID.
    Put(EvidencePutArgs),
    /// Show an OID's record.
    Show {
        /// The evidence OID.
        oid: String,
    },
    /// List a task's evidence: OID, type, digest, size, retention state and
    /// the events that reference it (seed 000's evidence query).
    List(crate::evidence_list::EvidenceListArgs),
    /// Write an OID's content to a file (digest checked; nothing is written
    /// when it does not match).
    Get {
        /// The evidence OID.
        oid: String,
        /// The file to write (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct EvidencePutArgs {
    /// The file.
    pub file: PathBuf,
    /// Task id (UUID).
    #[arg(long)]
    pub task: String,
    /// Evidence type (`patch.diff`, `selftest.log`, `report.md`,
    /// `submit.json`, `screenshot`, `stdout`, `stderr`, `execution`, `trace`,
    /// `metrics`, `other`); default: from the name.
    #[arg(long = "type")]
    pub evidence_type: Option<String>,
    /// Retention class (`routine`, `high_impact`, `pinned`); default: the task's.
    #[arg(long)]
    pub retention: Option<String>,
    /// Artifact name the verdict engine sees (default: the file name).
    #[arg(long)]
    pub name: Option<String>,
    /// Media type (default: from the extension).
    #[arg(long)]
    pub media_type: Option<String>,
    /// A submitter's private key file.
    #[arg(long)]
    pub key: PathBuf,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The artifacts directory (`submit.json`, `patch.diff`, `selftest.log`,
    /// `report.md`, `evidence/`, ...).
    pub dir: PathBuf,
    /// Task id (UUID); default: `submit.json`'s `task_id`.
    #[arg(long)]
    pub task: Option<String>,
    /// An OID the executor touched (seed 001 `touched_oids`; repeat or
    /// comma-separate), added to any `touched_oids` of `submit.json`. Each
    /// must be registered: an unknown one refuses the submission (exit 4)
    /// before anything is uploaded.
    #[arg(long = "touched", value_delimiter = ',', value_name = "OID")]
    pub touched: Vec<String>,
    /// A submitter's private key file.
    #[arg(long)]
    pub key: PathBuf,
}

/// `docket verdict …`.
#[derive(Debug, Subcommand)]
pub enum VerdictCmd {
    /// One task's verdict state. Exit 0 PASS, 5 FAIL or PENDING.
    Show {
        /// Task id (UUID).
        task: String,
        /// As of a sequence number or RFC 3339 time.
        #[arg(long)]
        as_of: Option<String>,
        /// Include the verdict history (before/after digests).
        #[arg(long)]
        history: bool,
    },
    /// Every task's verdict state, by task id.
    List {
        /// Only tasks whose verdict state is this.
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// As of a sequence number or RFC 3339 time.
        #[arg(long)]
        as_of: Option<String>,
    },
    /// Issue an `scc.verdict.v1` document as an external verifier (the file
    /// is sent byte for byte; verifier key). Exit 0 when a PASS is recorded,
    /// 5 when a FAIL is, 2 refused (nothing recorded), 4 no such task.
    Issue {
        /// The `scc.verdict.v1` JSON file.
        file: PathBuf,
        /// A verifier's private key file.
        #[arg(long)]
        key: PathBuf,
    },
    /// Import a seed 001 run's `evidence/verdict.json` and its evidence
    /// (verifier key). Exit 0 PASS, 5 FAIL (also verdict_missing,
    /// artifact_missing; a missing RUN_DIR is verdict_missing), 2 malformed
    /// verdict.json or refused (nothing recorded), 4 no such task.
    Import(crate::verdict_import::VerdictImportArgs),
    /// Record FAIL verdict_missing for every task whose verdict deadline
    /// passed with no verdict (the server does this on its sweep timer).
    Deadlines(crate::verdict_import::DeadlinesArgs),
    /// A verdict engine's provenance and the rule listing its rule-set
    /// digest is computed over.
    Rules(crate::verdict_import::RulesArgs),
}

/// A status filter.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StatusArg {
    Pass,
    Fail,
    Pending,
}

/// `docket approval …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalCmd {
    /// Request an approval (submitter or approver key).
    Request {
        /// Task id (UUID).
        #[arg(long)]
        task: String,
        /// Who asks.
        #[arg(long)]
        actor: String,
        /// What it covers (e.g. `merge`).
        #[arg(long)]
        scope: String,
        /// Mutation mode (e.g. `real-repo`).
        #[arg(long)]
        mode: String,
        /// Expiry (RFC 3339).
        #[arg(long)]
        expires: Option<String>,
        /// A note kept in the event.
        #[arg(long)]
        note: Option<String>,
        /// A submitter's or approver's private key file.
        #[arg(long)]
        key: PathBuf,
    },
    /// Grant a pending request (approver key; not the requester, not a
    /// submitter of the task).
    Grant {
        /// The request's sequence number.
        request: u64,
        /// Task id (UUID).
        #[arg(long)]
        task: String,
        /// Who decides.
        #[arg(long)]
        actor: String,
        /// Expiry of the grant (RFC 3339; not after the request's).
        #[arg(long)]
        expires: Option<String>,
        /// Why (kept in the event).
        #[arg(long)]
        reason: Option<String>,
        /// An approver's private key file.
        #[arg(long)]
        key: PathBuf,
    },
    /// Deny a pending request (approver key).
    Deny {
        /// The request's sequence number.
        request: u64,
        /// Task id (UUID).
        #[arg(long)]
        task: String,
        /// Who decides.
        #[arg(long)]
        actor: String,
        /// Why (kept in the event).
        #[arg(long)]
        reason: String,
        /// An approver's private key file.
        #[arg(long)]
        key: PathBuf,
    },
}

/// `docket execution …`.
#[derive(Debug, Subcommand)]
pub enum ExecutionCmd {
    /// Record a seed 002 execution record (its `evidence_hash` is
    /// recomputed by the ledger) for a task (submitter key). It is not
    /// gateway-attested: `docket exec` runs a command and records it with a
    /// gateway key, which a task's `require_gateway_execution` needs.
    Record {
        /// The execution record (seed 002 JSON).
        file: PathBuf,
        /// Task id (UUID).
        #[arg(long)]
        task: String,
        /// A submitter's private key file.
        #[arg(long)]
        key: PathBuf,
    },
}

/// `docket check …`.
#[derive(Debug, Subcommand)]
pub enum CheckCmd {
    /// Record one check result for a task's latest submission (verifier key).
    Record {
        /// Task id (UUID).
        #[arg(long)]
        task: String,
        /// The check's name (e.g. `lint`).
        #[arg(long)]
        name: String,
        /// The check passed (default: it failed).
        #[arg(long)]
        passed: bool,
        /// Details as JSON.
        #[arg(long)]
        details: Option<String>,
        /// A verifier's private key file.
        #[arg(long)]
        key: PathBuf,
    },
}

/// Where the commands run.
pub(crate) enum Mode {
    Embedded(Docket),
    Remote(Remote),
}

pub(crate) fn mode(ctx: &Ctx) -> Result<Mode> {
    if let Some(url) = &ctx.server {
        return Ok(Mode::Remote(Remote::connect(url)?));
    }
    let backend = ctx.backend()?;
    let Some(e) = backend.embedded() else {
        // The `docket serve` that holds the data directory.
        if let Some(url) = ctx.server_url() {
            return Ok(Mode::Remote(Remote::connect(url)?));
        }
        return Err(CliError::new(exit::UNEXPECTED, "no embedded ledger").into());
    };
    Ok(Mode::Embedded(Docket::new(
        e.ledger.clone(),
        DocketOptions::default(),
    )?))
}

pub fn run(cmd: &DomainCmd, ctx: &Ctx) -> Result<u8> {
    let out = ctx.out;
    match cmd {
        DomainCmd::Key(KeyCmd::Add(a)) => {
            let pubkey = public_key_arg(&a.pubkey)?;
            let mut p = json!({
                "public_key": pubkey,
                "roles": a.roles.iter().map(|r| Role::from(*r)).collect::<Vec<_>>(),
            });
            if let Some(l) = &a.label {
                p["label"] = json!(l);
            }
            if let Some(t) = &a.not_before {
                p["not_before_ms"] = json!(crate::output::parse_rfc3339_ms(t)?);
            }
            if let Some(t) = &a.not_after {
                p["not_after_ms"] = json!(crate::output::parse_rfc3339_ms(t)?);
            }
            append_generic(ctx, "key.registered", &p, &a.key)
        }
        DomainCmd::Key(KeyCmd::Revoke(a)) => {
            let mut p = json!({"public_key": public_key_arg(&a.pubkey)?});
            if let Some(r) = &a.reason {
                p["reason"] = json!(r);
            }
            append_generic(ctx, "key.revoked", &p, &a.key)
        }
        DomainCmd::Key(KeyCmd::List(a)) => key_list(ctx, a),
        DomainCmd::Task(TaskCmd::Register { file, key }) => {
            let payload = read_file(file)?;
            let st = Statement::sign(kinds::TASK_REGISTERED, payload, &load_key(key)?);
            append_statement(ctx, st)
        }
        DomainCmd::Task(TaskCmd::Show { id, as_of }) => task_show(ctx, id, as_of.as_deref()),
        DomainCmd::Evidence(EvidenceCmd::Put(a)) => evidence_put(ctx, a),
        DomainCmd::Evidence(EvidenceCmd::Show { oid }) => {
            let v = evidence_show(&mode(ctx)?, oid)?;
            out.emit(&v, || v.human());
            Ok(exit::OK)
        }
        DomainCmd::Evidence(EvidenceCmd::Get { oid, out: path }) => evidence_get(ctx, oid, path),
        DomainCmd::Evidence(EvidenceCmd::List(a)) => crate::evidence_list::run(ctx, a),
        DomainCmd::Submit(a) => submit(ctx, a),
        DomainCmd::Verdict(VerdictCmd::Show {
            task,
            as_of,
            history,
        }) => {
            let v = verdict_show(&mode(ctx)?, task, as_of.as_deref(), *history)?;
            out.emit(&v, || v.human(true));
            Ok(v.exit_code())
        }
        DomainCmd::Verdict(VerdictCmd::List { status, as_of }) => {
            let list = verdict_list(&mode(ctx)?, *status, as_of.as_deref())?;
            if out.json {
                for v in &list {
                    out.emit(v, String::new);
                }
            } else if list.is_empty() {
                println!("no tasks");
            } else {
                for v in &list {
                    println!("{}", v.human(false));
                }
            }
            Ok(exit::OK)
        }
        DomainCmd::Verdict(VerdictCmd::Import(a)) => crate::verdict_import::run_import(ctx, a),
        DomainCmd::Verdict(VerdictCmd::Deadlines(a)) => {
            crate::verdict_import::run_deadlines(ctx, a)
        }
        DomainCmd::Verdict(VerdictCmd::Rules(a)) => crate::verdict_import::run_rules(ctx, a),
        DomainCmd::Verdict(VerdictCmd::Issue { file, key }) => {
            let bytes = read_file(file)?;
            // The exit code follows the verdict recorded (README "Exit
            // codes": 5 for a FAIL), as for `submit` and `verdict import`;
            // the ledger has admitted the document when this is read.
            let fail = serde_json::from_slice::<Value>(&bytes)
                .is_ok_and(|doc| doc.get("verdict").and_then(Value::as_str) == Some("FAIL"));
            let st = Statement::sign(kinds::VERDICT_ISSUED, bytes, &load_key(key)?);
            let code = append_statement(ctx, st)?;
            Ok(if fail { exit::HARD_FAIL } else { code })
        }
        DomainCmd::Approval(a) => approval(ctx, a),
        DomainCmd::Execution(ExecutionCmd::Record { file, task, key }) => {
            let mut doc: Value = serde_json::from_slice(&read_file(file)?).map_err(|e| {
                CliError::new(
                    exit::INVALID,
                    format!("{} is not JSON: {e}", file.display()),
                )
            })?;
            let Some(map) = doc.as_object_mut() else {
                return Err(
                    CliError::new(exit::INVALID, "an execution record is a JSON object").into(),
                );
            };
            map.insert("task_id".into(), json!(canonical(task)));
            append_generic(ctx, kinds::EXECUTION_RECORDED, &doc, key)
        }
        DomainCmd::Check(CheckCmd::Record {
            task,
            name,
            passed,
            details,
            key,
        }) => {
            let mut p = json!({"task_id": canonical(task), "name": name, "passed": passed});
            if let Some(d) = details {
                p["details"] = serde_json::from_str(d).map_err(|e| {
                    CliError::new(exit::INVALID, format!("--details is not JSON: {e}"))
                })?;
            }
            append_generic(ctx, kinds::CHECK_RECORDED, &p, key)
        }
    }
}

// ---------------------------------------------------------------- helpers

fn canonical(task: &str) -> String {
    canonical_task_id(task).unwrap_or_else(|| task.to_string())
}

fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        CliError::new(
            exit::MISSING,
            format!("cannot read {}: {e}", path.display()),
        )
        .into()
    })
}

/// A hex public key, or the public key of a key file.
fn public_key_arg(arg: &str) -> Result<String> {
    let p = Path::new(arg);
    if arg.len() != 64 && p.exists() {
        let text = std::fs::read_to_string(p)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| CliError::new(exit::INVALID, format!("{arg}: not a key file: {e}")))?;
        if let Some(k) = v.get("public").and_then(Value::as_str) {
            return Ok(k.to_ascii_lowercase());
        }
        return Err(CliError::new(exit::INVALID, format!("{arg}: no `public` field")).into());
    }
    // One spelling: anything but 64 lowercase hex digits is refused (exit 2),
    // never normalised, so a key can never count as two.
    keys::parse_public(arg).map_err(|e| CliError::new(exit::INVALID, e.to_string()))?;
    Ok(arg.to_string())
}

fn sign_json(kind: &str, payload: &Value, key: &SigningKey) -> Statement {
    // Invariant: a JSON value serialises.
    Statement::sign(
        kind,
        serde_json::to_vec(payload).expect("JSON serialises"),
        key,
    )
}

fn append_generic(ctx: &Ctx, kind: &str, payload: &Value, key: &Path) -> Result<u8> {
    append_statement(ctx, sign_json(kind, payload, &load_key(key)?))
}

/// Appends through the backend (the same in both modes) and prints the receipt.
fn append_statement(ctx: &Ctx, st: Statement) -> Result<u8> {
    let r = ctx.backend()?.append(st).map_err(explain)?;
    ctx.out.emit(&r, || r.human());
    Ok(exit::OK)
}

/// Turns an `Invalid` error into one line per violated rule.
pub(crate) fn explain(e: anyhow::Error) -> anyhow::Error {
    if let Some(LedgerError::Invalid { what, violations }) = e.downcast_ref::<LedgerError>() {
        let mut msg = format!("invalid {what}: {} violation(s)", violations.len());
        for v in violations {
            msg.push_str("\n  ");
            msg.push_str(v);
        }
        return CliError::new(exit::INVALID, msg).into();
    }
    e
}

fn parse_as_of(s: Option<&str>) -> Result<AsOf> {
    match s {
        None => Ok(AsOf::Latest),
        Some(s) => AsOf::parse(s).map_err(|e| CliError::new(exit::INVALID, e.to_string()).into()),
    }
}

fn pb_as_of(s: Option<&str>) -> Result<Option<pb::AsOf>> {
    Ok(match parse_as_of(s)? {
        AsOf::Latest => None,
        AsOf::Seq(n) => Some(pb::AsOf {
            point: Some(pb::as_of::Point::Seq(n)),
        }),
        AsOf::Time(_) => Some(pb::AsOf {
            point: s.map(|t| pb::as_of::Point::Time(t.to_string())),
        }),
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn now_rfc3339() -> String {
    rfc3339_ms(now_ms())
}

fn opt_ms(ms: i64) -> Option<String> {
    u64::try_from(ms).ok().filter(|m| *m > 0).map(rfc3339_ms)
}

// ---------------------------------------------------------------- keys

#[derive(Debug, Serialize)]
struct KeyOut {
    public_key: String,
    roles: Vec<String>,
    registered_seq: u64,
    revoked_seq: Option<u64>,
    valid_from: Option<String>,
    valid_until: Option<String>,
    label: Option<String>,
}

impl KeyOut {
    fn human(&self) -> String {
        format!(
            "{} {:<28} registered #{}{}{}",
            self.public_key,
            self.roles.join(","),
            self.registered_seq,
            self.revoked_seq
                .map(|r| format!(" revoked #{r}"))
                .unwrap_or_default(),
            self.label
                .as_ref()
                .map(|l| format!(" ({l})"))
                .unwrap_or_default()
        )
    }
}

fn key_list(ctx: &Ctx, a: &KeyListArgs) -> Result<u8> {
    let list: Vec<KeyOut> = match mode(ctx)? {
        Mode::Embedded(d) => d
            .keys(parse_as_of(a.as_of.as_deref())?, a.all)?
            .into_iter()
            .map(|k| KeyOut {
                public_key: k.public_key,
                roles: k
                    .record
                    .roles
                    .iter()
                    .map(|r| r.as_str().to_string())
                    .collect(),
                registered_seq: k.record.registered_seq,
                revoked_seq: k.record.revoked_seq,
                valid_from: k.record.not_before_ms.map(rfc3339_ms),
                valid_until: k.record.not_after_ms.map(rfc3339_ms),
                label: k.record.label,
            })
            .collect(),
        Mode::Remote(r) => {
            let req = pb::ListKeysRequest {
                as_of: pb_as_of(a.as_of.as_deref())?,
                include_revoked: a.all,
            };
            let resp = r
                .block_on(pb::keys_client::KeysClient::new(r.channel()).list_keys(req))
                .map_err(|s| client::status_error(&s))?
                .into_inner();
            resp.keys
                .into_iter()
                .map(|k| KeyOut {
                    public_key: hex::encode(&k.public_key),
                    roles: k.roles,
                    registered_seq: k.registered_seq,
                    revoked_seq: (k.revoked_seq > 0).then_some(k.revoked_seq),
                    valid_from: opt_ms(k.valid_from_unix_ms),
                    valid_until: opt_ms(k.valid_until_unix_ms),
                    label: (!k.label.is_empty()).then_some(k.label),
                })
                .collect()
        }
    };
    let mut list = list;
    list.sort_by(|a, b| (a.registered_seq, &a.public_key).cmp(&(b.registered_seq, &b.public_key)));
    for k in &list {
        ctx.out.emit(k, || k.human());
    }
    Ok(exit::OK)
}

// ---------------------------------------------------------------- tasks

#[derive(Debug, Serialize)]
struct TaskOut {
    task_id: String,
    registered_seq: u64,
    registered_by: String,
    registered_at: String,
    retention_class: String,
    contract: Value,
}

fn task_show(ctx: &Ctx, id: &str, as_of: Option<&str>) -> Result<u8> {
    let t = match mode(ctx)? {
        Mode::Embedded(d) => {
            let v = d.task(id, parse_as_of(as_of)?)?;
            TaskOut {
                task_id: v.state.task_id.clone(),
                registered_seq: v.state.contract.seq,
                registered_by: v.state.contract.registered_by.to_hex(),
                registered_at: rfc3339_ms(v.state.contract.registered_at_ms),
                retention_class: v.state.contract.retention_class.clone(),
                contract: v.contract_document,
            }
        }
        Mode::Remote(r) => {
            let req = pb::GetTaskRequest {
                task_id: id.to_string(),
                as_of: pb_as_of(as_of)?,
            };
            let t = r
                .block_on(pb::tasks_client::TasksClient::new(r.channel()).get_task(req))
                .map_err(|s| client::status_error(&s))?
                .into_inner();
            TaskOut {
                task_id: t.task_id,
                registered_seq: t.registered_seq,
                registered_by: hex::encode(&t.registered_by),
                registered_at: opt_ms(t.registered_at_unix_ms).unwrap_or_default(),
                retention_class: t.retention_class,
                contract: serde_json::from_slice(&t.contract_json).unwrap_or(Value::Null),
            }
        }
    };
    ctx.out.emit(&t, || {
        format!(
            "task {}\n  registered at seq {} ({}) by {}\n  retention {}\n  goal: {}\n  contract: {}",
            t.task_id,
            t.registered_seq,
            t.registered_at,
            t.registered_by,
            t.retention_class,
            t.contract.get("goal").and_then(Value::as_str).unwrap_or(""),
            t.contract
        )
    });
    Ok(exit::OK)
}

// ---------------------------------------------------------------- evidence

#[derive(Debug, Serialize)]
struct EvidenceOut {
    oid: String,
    task_id: String,
    evidence_type: String,
    media_type: String,
    sha256: String,
    size: u64,
    retention_class: String,
    pinned: bool,
    state: String,
    registered_seq: u64,
    registered_at: String,
    removed: Option<Value>,
}

impl EvidenceOut {
    fn human(&self) -> String {
        format!(
            "{} {} {} ({} bytes, {}) task {} class {}{} {} registered #{} {}",
            self.oid,
            self.evidence_type,
            self.sha256,
            self.size,
            self.media_type,
            self.task_id,
            self.retention_class,
            if self.pinned { " pinned" } else { "" },
            self.state,
            self.registered_seq,
            self.registered_at
        )
    }
}

fn evidence_show(m: &Mode, oid: &str) -> Result<EvidenceOut> {
    Ok(match m {
        Mode::Embedded(d) => {
            let v = d.evidence(oid)?;
            let r = v.record;
            EvidenceOut {
                oid: v.oid,
                task_id: r.task_id,
                evidence_type: r.evidence_type,
                media_type: r.media_type,
                sha256: r.sha256,
                size: r.size,
                retention_class: r.retention_class,
                pinned: r.pinned,
                state: r.state.as_str().to_string(),
                registered_seq: r.registered_seq,
                registered_at: rfc3339_ms(r.registered_at_ms),
                removed: r.removal.map(|x| {
                    json!({"seq": x.seq, "at": rfc3339_ms(x.at_ms), "reason": x.reason,
                           "redacted_sha256": x.redacted_sha256, "redacted_size": x.redacted_size})
                }),
            }
        }
        Mode::Remote(r) => {
            let req = pb::GetEvidenceRequest {
                oid: oid.trim().to_ascii_uppercase(),
            };
            let e = r
                .block_on(pb::evidence_client::EvidenceClient::new(r.channel()).get_evidence(req))
                .map_err(|s| client::status_error(&s))?
                .into_inner();
            evidence_out(e)
        }
    })
}

fn evidence_out(e: pb::EvidenceInfo) -> EvidenceOut {
    let state = match pb::EvidenceState::try_from(e.state) {
        Ok(pb::EvidenceState::Expired) => "expired",
        Ok(pb::EvidenceState::Redacted) => "redacted",
        _ => "live",
    };
    EvidenceOut {
        oid: e.oid,
        task_id: e.task_id,
        evidence_type: e.evidence_type,
        media_type: e.media_type,
        sha256: hex::encode(&e.sha256),
        size: e.size,
        retention_class: e.retention_class,
        pinned: e.pinned,
        state: state.to_string(),
        registered_seq: e.registered_seq,
        registered_at: opt_ms(e.registered_at_unix_ms).unwrap_or_default(),
        removed: e.removal.map(|x| {
            json!({"seq": x.seq, "at": opt_ms(x.at_unix_ms), "reason": x.reason,
                   "redacted_sha256": (!x.redacted_sha256.is_empty()).then(|| hex::encode(&x.redacted_sha256)),
                   "redacted_size": (x.redacted_size > 0).then_some(x.redacted_size)})
        }),
    }
}

/// SHA-256 and size of a file, streamed.
fn hash_file(path: &Path) -> Result<([u8; 32], u64)> {
    let mut f = std::fs::File::open(path).map_err(|e| {
        CliError::new(
            exit::MISSING,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut size = 0u64;
    loop {
        // A directory opens but does not read (EISDIR): missing input,
        // named, like a file that is not there.
        let n = f.read(&mut buf).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((h.finalize().into(), size))
}

#[derive(Debug, Serialize)]
struct PutOut {
    oid: String,
    name: String,
    sha256: String,
    size: u64,
    blob_already_present: bool,
    receipt: ReceiptView,
}

fn evidence_put(ctx: &Ctx, a: &EvidencePutArgs) -> Result<u8> {
    let key = load_key(&a.key)?;
    let name = a.name.clone().unwrap_or_else(|| {
        a.file
            .file_name()
            .map_or_else(|| "evidence".into(), |n| n.to_string_lossy().into_owned())
    });
    let (digest, size) = hash_file(&a.file)?;
    let mut p = json!({
        "task_id": canonical(&a.task),
        "evidence_type": a.evidence_type.clone().unwrap_or_else(|| guess_evidence_type(&name).to_string()),
        "sha256": hex::encode(digest),
        "size": size,
        "media_type": a.media_type.clone().unwrap_or_else(|| guess_media_type(&name).to_string()),
        "name": name,
    });
    if let Some(c) = &a.retention {
        p["retention_class"] = json!(c);
    }
    let st = sign_json(kinds::EVIDENCE_REGISTERED, &p, &key);
    let file = std::fs::File::open(&a.file).map_err(|e| {
        CliError::new(
            exit::MISSING,
            format!("cannot read {}: {e}", a.file.display()),
        )
    })?;
    let put = match mode(ctx)? {
        Mode::Embedded(d) => {
            let r = d.put_evidence(file, st).map_err(|e| explain(e.into()))?;
            PutOut {
                oid: r.oid,
                name,
                sha256: r.sha256,
                size: r.size,
                blob_already_present: r.blob_already_present,
                receipt: ReceiptView::new(&r.receipt, kinds::EVIDENCE_REGISTERED),
            }
        }
        Mode::Remote(r) => {
            let got = upload_stream(&r, &st, &digest, size, file)?;
            PutOut {
                oid: got.oid,
                name,
                sha256: hex::encode(&got.sha256),
                size: got.size,
                blob_already_present: got.blob_already_present,
                receipt: got
                    .receipt
                    .as_ref()
                    .map(client::receipt_view)
                    .ok_or_else(|| anyhow::anyhow!("the server returned no receipt"))?,
            }
        }
    };
    ctx.out.emit(&put, || {
        format!(
            "{} {} ({} bytes){} {}",
            put.oid,
            put.name,
            put.size,
            if put.blob_already_present {
                ", content already stored"
            } else {
                ""
            },
            put.receipt.human()
        )
    });
    Ok(exit::OK)
}

/// Streams a file to `Evidence.Upload` with its signed registration.
pub(crate) fn upload_stream(
    r: &Remote,
    st: &Statement,
    digest: &[u8; 32],
    size: u64,
    file: std::fs::File,
) -> Result<pb::EvidenceReceipt> {
    let header = pb::UploadHeader {
        statement: Some(convert::statement_to_proto(st)),
        expected_sha256: digest.to_vec(),
        expected_size: size,
        ..Default::default()
    };
    upload_file(r, header, file)
}

/// Streams `file` to `Evidence.Upload` after `header`, in chunks of
/// [`UPLOAD_CHUNK`], read on a thread of its own.
pub(crate) fn upload_file(
    r: &Remote,
    header: pb::UploadHeader,
    mut file: std::fs::File,
) -> Result<pb::EvidenceReceipt> {
    let (tx, rx) = tokio::sync::mpsc::channel::<pb::UploadEvidenceRequest>(4);
    let reader = std::thread::spawn(move || -> std::io::Result<()> {
        let first = pb::UploadEvidenceRequest {
            part: Some(pb::upload_evidence_request::Part::Header(header)),
        };
        if tx.blocking_send(first).is_err() {
            return Ok(());
        }
        let mut buf = vec![0u8; UPLOAD_CHUNK];
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            let chunk = pb::UploadEvidenceRequest {
                part: Some(pb::upload_evidence_request::Part::Chunk(buf[..n].to_vec())),
            };
            if tx.blocking_send(chunk).is_err() {
                return Ok(());
            }
        }
    });
    let result = r.block_on(
        pb::evidence_client::EvidenceClient::new(r.channel())
            .upload(tokio_stream::wrappers::ReceiverStream::new(rx)),
    );
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("file reader panicked"))??;
    Ok(result.map_err(|s| client::status_error(&s))?.into_inner())
}

fn evidence_get(ctx: &Ctx, oid: &str, path: &Path) -> Result<u8> {
    let tmp = path.with_file_name(format!(
        ".{}.part",
        path.file_name()
            .map_or_else(|| "evidence".into(), |n| n.to_string_lossy().into_owned())
    ));
    let result = (|| -> Result<EvidenceOut> {
        let mut f = std::fs::File::create(&tmp)?;
        let info = match mode(ctx)? {
            Mode::Embedded(d) => {
                let (view, mut reader) = d.evidence_content(oid)?;
                std::io::copy(&mut reader, &mut f).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::InvalidData {
                        anyhow::Error::from(LedgerError::Corrupt {
                            location: format!("blob of {}", view.oid),
                            detail: e.to_string(),
                        })
                    } else {
                        e.into()
                    }
                })?;
                evidence_show(&Mode::Embedded(d), &view.oid)?
            }
            Mode::Remote(r) => {
                let req = pb::DownloadEvidenceRequest {
                    oid: oid.trim().to_ascii_uppercase(),
                    allow_redacted: false,
                };
                let (info, hasher) = r.block_on(async {
                    let mut stream = pb::evidence_client::EvidenceClient::new(r.channel())
                        .download(req)
                        .await
                        .map_err(|s| client::status_error(&s))?
                        .into_inner();
                    let mut info = None;
                    let mut h = Sha256::new();
                    while let Some(m) = stream
                        .message()
                        .await
                        .map_err(|s| client::status_error(&s))?
                    {
                        match m.part {
                            Some(pb::download_evidence_response::Part::Info(i)) => info = Some(i),
                            Some(pb::download_evidence_response::Part::Chunk(c)) => {
                                h.update(&c);
                                f.write_all(&c)?;
                            }
                            None => {}
                        }
                    }
                    anyhow::Ok((info, h))
                })?;
                let info =
                    info.ok_or_else(|| anyhow::anyhow!("the server sent no evidence info"))?;
                let got: [u8; 32] = hasher.finalize().into();
                if got.as_slice() != info.sha256.as_slice() {
                    return Err(CliError::new(
                        exit::HARD_FAIL,
                        format!(
                            "downloaded content of {} does not match its digest",
                            info.oid
                        ),
                    )
                    .into());
                }
                evidence_out(info)
            }
        };
        f.sync_all()?;
        Ok(info)
    })();
    match result {
        Ok(info) => {
            std::fs::rename(&tmp, path)?;
            ctx.out.emit(&info, || {
                format!(
                    "wrote {} ({} bytes) to {}",
                    info.oid,
                    info.size,
                    path.display()
                )
            });
            Ok(exit::OK)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

// ---------------------------------------------------------------- verdicts

#[derive(Debug, Serialize)]
struct CheckOut {
    name: String,
    passed: bool,
    seq: u64,
    verifier: String,
}

#[derive(Debug, Serialize)]
struct ApprovalOut {
    request_seq: u64,
    state: String,
    requested_by: String,
    actor: String,
    scope: String,
    mutation_mode: String,
    requested_at: String,
    expires_at: Option<String>,
    decided_seq: Option<u64>,
    decided_by: Option<String>,
    /// The actor named in the grant or denial (None while requested).
    decided_actor: Option<String>,
    note: Option<String>,
    reason: Option<String>,
}

#[derive(Debug, Serialize)]
struct ChangeOut {
    seq: u64,
    kind: String,
    status: String,
    reason_code: Option<String>,
    before: Option<String>,
    after: String,
    at: String,
}

/// A task's verdict state, the same in both modes.
#[derive(Debug, Serialize)]
struct VerdictOut {
    task_id: String,
    status: String,
    reason_code: Option<String>,
    fail_class: Option<String>,
    verdict_seq: Option<u64>,
    verifier: Option<String>,
    issued_at: Option<String>,
    evidence_oids: Vec<String>,
    messages: Vec<String>,
    submissions: u32,
    latest_submission_seq: Option<u64>,
    checks: Vec<CheckOut>,
    approvals: Vec<ApprovalOut>,
    state_digest: String,
    as_of_seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<Vec<ChangeOut>>,
    /// The `scc.verdict.v1` document of the current verdict.
    verdict: Option<Value>,
    /// The engine that produced the current verdict: `{name, version,
    /// rules_digest}` (docs/DOMAIN.md §3.10); None when it recorded none.
    provenance: Option<Value>,
}

fn status_name(s: i32) -> &'static str {
    match pb::VerdictStatus::try_from(s) {
        Ok(pb::VerdictStatus::Pass) => "pass",
        Ok(pb::VerdictStatus::Fail) => "fail",
        _ => "pending",
    }
}

impl From<pb::TaskVerdict> for VerdictOut {
    fn from(t: pb::TaskVerdict) -> Self {
        let doc: Option<Value> = serde_json::from_slice(&t.verdict_json).ok();
        let messages = doc
            .as_ref()
            .and_then(|d| d.get("messages"))
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let has_verdict = t.verdict_seq > 0;
        VerdictOut {
            task_id: t.task_id,
            status: status_name(t.status).to_string(),
            reason_code: (!t.reason_code.is_empty()).then_some(t.reason_code),
            fail_class: (!t.fail_class.is_empty()).then_some(t.fail_class),
            verdict_seq: has_verdict.then_some(t.verdict_seq),
            verifier: has_verdict.then(|| hex::encode(&t.verifier_public_key)),
            issued_at: has_verdict.then(|| opt_ms(t.issued_at_unix_ms).unwrap_or_default()),
            evidence_oids: t.evidence_oids,
            messages,
            submissions: t.submissions,
            latest_submission_seq: (t.latest_submission_seq > 0).then_some(t.latest_submission_seq),
            checks: t
                .checks
                .into_iter()
                .map(|c| CheckOut {
                    name: c.name,
                    passed: c.passed,
                    seq: c.seq,
                    verifier: hex::encode(&c.verifier_public_key),
                })
                .collect(),
            approvals: t
                .approvals
                .into_iter()
                .map(|a| ApprovalOut {
                    request_seq: a.request_seq,
                    state: match pb::ApprovalState::try_from(a.state) {
                        Ok(pb::ApprovalState::Granted) => "granted",
                        Ok(pb::ApprovalState::Denied) => "denied",
                        Ok(pb::ApprovalState::Expired) => "expired",
                        _ => "requested",
                    }
                    .to_string(),
                    requested_by: hex::encode(&a.requested_by),
                    actor: a.actor,
                    scope: a.scope,
                    mutation_mode: a.mutation_mode,
                    expires_at: opt_ms(a.expires_at_unix_ms),
                    decided_seq: (a.decided_seq > 0).then_some(a.decided_seq),
                    decided_by: (!a.decided_by.is_empty()).then(|| hex::encode(&a.decided_by)),
                    decided_actor: (!a.decided_actor.is_empty()).then_some(a.decided_actor),
                    requested_at: a.requested_at,
                    note: (!a.note.is_empty()).then_some(a.note),
                    reason: (!a.reason.is_empty()).then_some(a.reason),
                })
                .collect(),
            state_digest: hex::encode(&t.state_digest),
            as_of_seq: t.as_of_seq,
            history: (!t.history.is_empty()).then(|| {
                t.history
                    .into_iter()
                    .map(|h| ChangeOut {
                        seq: h.seq,
                        kind: h.kind,
                        status: status_name(h.status).to_string(),
                        reason_code: (!h.reason_code.is_empty()).then_some(h.reason_code),
                        before: (!h.before_digest.is_empty())
                            .then(|| hex::encode(&h.before_digest)),
                        after: hex::encode(&h.after_digest),
                        at: opt_ms(h.at_unix_ms).unwrap_or_default(),
                    })
                    .collect()
            }),
            provenance: doc.as_ref().and_then(|d| d.get("engine")).cloned(),
            verdict: doc,
        }
    }
}

impl VerdictOut {
    /// 0 PASS; 5 FAIL, and 5 with no verdict (fail closed, seed 001).
    fn exit_code(&self) -> u8 {
        if self.status == "pass" {
            exit::OK
        } else {
            exit::HARD_FAIL
        }
    }

    fn headline(&self) -> String {
        match self.status.as_str() {
            "pass" => "PASS".to_string(),
            // A seed 001 verdict (verdict.imported, verdict.deadline_passed)
            // has a fail_class and no catalogue reason_code.
            "fail" => match &self.reason_code {
                Some(r) => format!("FAIL {r} ({})", self.fail_class.as_deref().unwrap_or("?")),
                None => format!("FAIL {}", self.fail_class.as_deref().unwrap_or("?")),
            },
            _ if self.submissions == 0 => "PENDING (no submission)".to_string(),
            _ => "PENDING (no verdict for the latest submission)".to_string(),
        }
    }

    fn human(&self, detail: bool) -> String {
        let mut s = format!("{} {}", self.task_id, self.headline());
        if !detail {
            return s;
        }
        s.push_str(&format!(
            "\n  submissions: {}{}",
            self.submissions,
            self.latest_submission_seq
                .map(|q| format!(" (latest #{q})"))
                .unwrap_or_default()
        ));
        if let (Some(seq), Some(by)) = (self.verdict_seq, &self.verifier) {
            s.push_str(&format!(
                "\n  verdict #{seq} by {}… at {}",
                &by[..16.min(by.len())],
                self.issued_at.as_deref().unwrap_or("")
            ));
        }
        if let Some(e) = &self.provenance {
            let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("?").to_string();
            let digest = field("rules_digest");
            s.push_str(&format!(
                "\n  engine {} {} (rules {})",
                field("name"),
                field("version"),
                &digest[..16.min(digest.len())]
            ));
        }
        for m in &self.messages {
            s.push_str(&format!("\n  - {m}"));
        }
        if !self.checks.is_empty() {
            let failed: Vec<&str> = self
                .checks
                .iter()
                .filter(|c| !c.passed)
                .map(|c| c.name.as_str())
                .collect();
            s.push_str(&format!(
                "\n  checks: {} passed, {} failed{}",
                self.checks.len() - failed.len(),
                failed.len(),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", failed.join(", "))
                }
            ));
        }
        for a in &self.approvals {
            s.push_str(&format!(
                "\n  approval #{} {} {} {}, requested by {}",
                a.request_seq, a.state, a.scope, a.mutation_mode, a.actor
            ));
            if let Some(by) = &a.decided_actor {
                let verb = if a.state == "denied" {
                    "denied"
                } else {
                    "granted"
                };
                s.push_str(&format!(", {verb} by {by}"));
            }
        }
        if !self.evidence_oids.is_empty() {
            s.push_str(&format!("\n  evidence: {}", self.evidence_oids.join(" ")));
        }
        s.push_str(&format!(
            "\n  state digest {} as of seq {}",
            self.state_digest, self.as_of_seq
        ));
        if let Some(h) = &self.history {
            for c in h {
                s.push_str(&format!(
                    "\n  #{} {} {} -> {}{} ({} -> {})",
                    c.seq,
                    c.at,
                    c.kind,
                    c.status,
                    c.reason_code
                        .as_ref()
                        .map(|r| format!(" {r}"))
                        .unwrap_or_default(),
                    c.before.as_deref().map_or("-", |b| &b[..12]),
                    &c.after[..12]
                ));
            }
        }
        s
    }
}

fn clock_for(as_of: AsOf, last_ms: u64) -> u64 {
    match as_of {
        AsOf::Latest => now_ms().max(last_ms),
        AsOf::Time(t) => t,
        AsOf::Seq(_) => last_ms,
    }
}

fn verdict_show(m: &Mode, task: &str, as_of: Option<&str>, history: bool) -> Result<VerdictOut> {
    let pbv = match m {
        Mode::Embedded(d) => {
            let a = parse_as_of(as_of)?;
            let key = task_key(task).into_owned();
            d.with_state(a, |s| {
                s.domain.verdicts.tasks.get(&key).map(|t| {
                    let clock = clock_for(a, s.last_recorded_at_ms);
                    domain_svc::task_verdict(
                        d,
                        t,
                        clock,
                        s.applied.saturating_sub(1),
                        history,
                        false,
                    )
                })
            })?
            .ok_or_else(|| LedgerError::NotFound {
                what: format!("task {task}"),
            })??
        }
        Mode::Remote(r) => {
            let req = pb::GetVerdictRequest {
                task_id: task.to_string(),
                as_of: pb_as_of(as_of)?,
                include_history: history,
            };
            r.block_on(pb::verdicts_client::VerdictsClient::new(r.channel()).get_verdict(req))
                .map_err(|s| client::status_error(&s))?
                .into_inner()
        }
    };
    Ok(pbv.into())
}

fn verdict_list(
    m: &Mode,
    status: Option<StatusArg>,
    as_of: Option<&str>,
) -> Result<Vec<VerdictOut>> {
    let want = status.map(|s| match s {
        StatusArg::Pass => pb::VerdictStatus::Pass,
        StatusArg::Fail => pb::VerdictStatus::Fail,
        StatusArg::Pending => pb::VerdictStatus::Pending,
    });
    let list: Vec<pb::TaskVerdict> = match m {
        Mode::Embedded(d) => {
            let a = parse_as_of(as_of)?;
            d.with_state(a, |s| {
                let clock = clock_for(a, s.last_recorded_at_ms);
                s.domain
                    .verdicts
                    .tasks
                    .values()
                    .map(|t| {
                        domain_svc::task_verdict(
                            d,
                            t,
                            clock,
                            s.applied.saturating_sub(1),
                            false,
                            false,
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()
            })??
            .into_iter()
            .filter(|t| want.is_none_or(|w| t.status == w as i32))
            .collect()
        }
        Mode::Remote(r) => {
            let mut out = Vec::new();
            let mut token = String::new();
            loop {
                let req = pb::ListVerdictsRequest {
                    status: want.map_or(0, |w| w as i32),
                    as_of: pb_as_of(as_of)?,
                    page_size: 1000,
                    page_token: token.clone(),
                };
                let resp = r
                    .block_on(
                        pb::verdicts_client::VerdictsClient::new(r.channel()).list_verdicts(req),
                    )
                    .map_err(|s| client::status_error(&s))?
                    .into_inner();
                out.extend(resp.verdicts);
                if resp.next_page_token.is_empty() {
                    break;
                }
                token = resp.next_page_token;
            }
            out
        }
    };
    Ok(list.into_iter().map(VerdictOut::from).collect())
}

// ---------------------------------------------------------------- submit

#[derive(Debug, Serialize)]
struct UploadedOut {
    name: String,
    oid: String,
}

#[derive(Debug, Serialize)]
struct SubmitOut {
    task_id: String,
    evidence: Vec<UploadedOut>,
    submission: ReceiptView,
    /// Set when auto-verify could not append a verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    auto_verify_error: Option<String>,
    result: VerdictOut,
}

fn submit(ctx: &Ctx, a: &SubmitArgs) -> Result<u8> {
    let key = load_key(&a.key)?;
    if !a.dir.is_dir() {
        return Err(CliError::new(
            exit::MISSING,
            format!("{} is not an artifacts directory", a.dir.display()),
        )
        .into());
    }
    let files = flow::collect_dir(&a.dir)?;
    let Some((_, submit_json)) = files.iter().find(|(n, _)| n == "submit.json") else {
        return Err(CliError::new(
            exit::MISSING,
            format!(
                "{} has no submit.json (missing required artifact)",
                a.dir.display()
            ),
        )
        .into());
    };
    // Refuse an invalid submit.json before uploading anything (the ledger
    // would refuse the submission with the same rules).
    if let Err(vs) = docket_verifier::submit::Submission::parse(submit_json) {
        let mut msg = format!("invalid submit.json: {} violation(s)", vs.len());
        for v in vs {
            msg.push_str(&format!("\n  {v}"));
        }
        return Err(CliError::new(exit::INVALID, msg).into());
    }
    let named = serde_json::from_slice::<Value>(submit_json)
        .ok()
        .and_then(|v| v.get("task_id").and_then(Value::as_str).map(str::to_string));
    let task_id = match (&a.task, &named) {
        (Some(t), Some(n)) if canonical(t) != canonical(n) => {
            return Err(CliError::new(
                exit::INVALID,
                format!("submit.json names task {n} but --task says {t}"),
            )
            .into());
        }
        (Some(t), _) => canonical(t),
        (None, Some(n)) => canonical(n),
        (None, None) => {
            return Err(
                CliError::new(exit::INVALID, "submit.json names no task_id; pass --task").into(),
            );
        }
    };
    let m = mode(ctx)?;
    let touched = crate::exec_cmds::touched_oids(&m, submit_json, &a.touched)?;
    let bar = ctx.out.progress(files.len() as u64, "uploading evidence");
    let mut uploaded = Vec::with_capacity(files.len());
    for (name, content) in &files {
        let st = Statement::sign(
            kinds::EVIDENCE_REGISTERED,
            flow::evidence_payload(&task_id, name, content),
            &key,
        );
        let oid = match &m {
            Mode::Embedded(d) => {
                d.put_evidence(content.as_slice(), st)
                    .map_err(|e| explain(e.into()))?
                    .oid
            }
            Mode::Remote(r) => {
                let digest: [u8; 32] = Sha256::digest(content).into();
                let mut messages = vec![pb::UploadEvidenceRequest {
                    part: Some(pb::upload_evidence_request::Part::Header(
                        pb::UploadHeader {
                            statement: Some(convert::statement_to_proto(&st)),
                            expected_sha256: digest.to_vec(),
                            expected_size: content.len() as u64,
                            ..Default::default()
                        },
                    )),
                }];
                for chunk in content.chunks(UPLOAD_CHUNK) {
                    messages.push(pb::UploadEvidenceRequest {
                        part: Some(pb::upload_evidence_request::Part::Chunk(chunk.to_vec())),
                    });
                }
                r.block_on(
                    pb::evidence_client::EvidenceClient::new(r.channel())
                        .upload(tokio_stream::iter(messages)),
                )
                .map_err(|s| client::status_error(&s))?
                .into_inner()
                .oid
            }
        };
        uploaded.push(UploadedOut {
            name: name.clone(),
            oid,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    let oids: Vec<String> = uploaded.iter().map(|u| u.oid.clone()).collect();
    let payload = flow::submission_payload(submit_json, &oids)?;
    let payload = crate::exec_cmds::with_touched(payload, &touched);
    let st = Statement::sign(kinds::SUBMISSION_RECEIVED, payload, &key);
    let (submission, auto_verify_error, result) = match &m {
        Mode::Embedded(d) => {
            let o = d.submit(st).map_err(|e| explain(e.into()))?;
            let v = verdict_show(&m, &task_id, None, false)?;
            (
                ReceiptView::new(&o.receipt, kinds::SUBMISSION_RECEIVED),
                o.auto_verify_error,
                v,
            )
        }
        Mode::Remote(r) => {
            let req = pb::SubmitRequest {
                statement: Some(convert::statement_to_proto(&st)),
                wait_for_verdict: true,
                wait_timeout_ms: 0,
            };
            let resp = r
                .block_on(pb::submissions_client::SubmissionsClient::new(r.channel()).submit(req))
                .map_err(|s| client::status_error(&s))?
                .into_inner();
            let receipt = resp
                .receipt
                .as_ref()
                .map(client::receipt_view)
                .ok_or_else(|| anyhow::anyhow!("the server returned no receipt"))?;
            let v = match resp.verdict {
                Some(v) => VerdictOut::from(v),
                None => verdict_show(&m, &task_id, None, false)?,
            };
            (receipt, None, v)
        }
    };
    // The verdict shown must be the one for this submission.
    let result_for_this = result.latest_submission_seq == Some(submission.seq);
    let out = SubmitOut {
        task_id,
        evidence: uploaded,
        submission,
        auto_verify_error,
        result,
    };
    ctx.out.emit(&out, || {
        let mut s = format!(
            "uploaded {} artifacts; {}",
            out.evidence.len(),
            out.submission.human()
        );
        if let Some(e) = &out.auto_verify_error {
            s.push_str(&format!("\nauto-verify: {e}"));
        }
        s.push('\n');
        s.push_str(&out.result.human(true));
        s
    });
    if !result_for_this {
        return Ok(exit::HARD_FAIL);
    }
    Ok(out.result.exit_code())
}

// ---------------------------------------------------------------- approvals

fn approval(ctx: &Ctx, a: &ApprovalCmd) -> Result<u8> {
    match a {
        ApprovalCmd::Request {
            task,
            actor,
            scope,
            mode,
            expires,
            note,
            key,
        } => {
            let mut p = json!({"task_id": canonical(task), "actor": actor, "scope": scope,
                               "mutation_mode": mode, "timestamp": now_rfc3339()});
            if let Some(e) = expires {
                p["expires_at"] = json!(e);
            }
            if let Some(n) = note {
                p["note"] = json!(n);
            }
            append_generic(ctx, kinds::APPROVAL_REQUESTED, &p, key)
        }
        ApprovalCmd::Grant {
            request,
            task,
            actor,
            expires,
            reason,
            key,
        } => {
            let (scope, mode_) = request_terms(ctx, task, *request)?;
            let mut p = json!({"task_id": canonical(task), "request_seq": request, "actor": actor,
                               "scope": scope, "mutation_mode": mode_, "timestamp": now_rfc3339()});
            if let Some(e) = expires {
                p["expires_at"] = json!(e);
            }
            if let Some(r) = reason {
                p["reason"] = json!(r);
            }
            append_generic(ctx, kinds::APPROVAL_GRANTED, &p, key)
        }
        ApprovalCmd::Deny {
            request,
            task,
            actor,
            reason,
            key,
        } => {
            let (scope, mode_) = request_terms(ctx, task, *request)?;
            let p = json!({"task_id": canonical(task), "request_seq": request, "actor": actor,
                           "scope": scope, "mutation_mode": mode_, "timestamp": now_rfc3339(),
                           "reason": reason});
            append_generic(ctx, kinds::APPROVAL_DENIED, &p, key)
        }
    }
}

/// The scope and mutation mode of approval request `seq` (a decision must
/// repeat them).
fn request_terms(ctx: &Ctx, task: &str, seq: u64) -> Result<(String, String)> {
    let v = verdict_show(&mode(ctx)?, task, None, false)?;
    v.approvals
        .into_iter()
        .find(|a| a.request_seq == seq)
        .map(|a| (a.scope, a.mutation_mode))
        .ok_or_else(|| {
            CliError::new(
                exit::MISSING,
                format!("task {task} has no approval request {seq}"),
            )
            .into()
        })
}

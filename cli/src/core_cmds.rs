//! The ledger-core commands: init, keygen, log append/show/tail, checkpoint,
//! prove, replay.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use docket_domain::replay::{self, ReplayOptions};
use docket_domain::{Statement, keys};

use crate::backend::Backend;
use crate::exit::{self, CliError};
use crate::output::Output;

/// `docket init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Checkpoint origin line (default: `docket.local/<ledger key prefix>`).
    #[arg(long)]
    pub origin: Option<String>,
    /// Encrypt the new ledger key and admin key with the passphrase
    /// (`--passphrase-file`, `DOCKET_PASSPHRASE_FILE` or `DOCKET_PASSPHRASE`).
    #[arg(long)]
    pub encrypt: bool,
}

/// `docket recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Where to write the bundle of the intact, provable prefix (a new
    /// directory; never overwritten). Not created when no signed
    /// checkpoint covers an intact prefix from genesis.
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
    /// Write a tar file instead of a directory.
    #[arg(long)]
    pub tar: bool,
    /// Copy the evidence blobs that survived.
    #[arg(long)]
    pub with_blobs: bool,
    /// Also write, as a second bundle here, every intact event that a
    /// signed checkpoint proves, those after the damage included (a
    /// partial bundle: runs of events around the lost ones, each run's ends
    /// with an inclusion proof against the ledger's latest signed checkpoint
    /// the store still gives). Follows `--tar` and `--with-blobs`.
    #[arg(long, value_name = "DIR")]
    pub salvage_out: Option<std::path::PathBuf>,
}

/// `docket keygen`.
#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Where to write the private key file (mode 0600; never overwritten).
    #[arg(long)]
    pub out: PathBuf,
    /// Encrypt the key file with the passphrase (`--passphrase-file`,
    /// `DOCKET_PASSPHRASE_FILE` or `DOCKET_PASSPHRASE`).
    #[arg(long)]
    pub encrypt: bool,
}

/// `docket log …`.
#[derive(Debug, Subcommand)]
pub enum LogCmd {
    /// Append author-signed statements (printed once durable).
    Append(LogAppendArgs),
    /// Show one event with its exact canonical bytes and leaf hash.
    Show {
        /// The event's sequence number.
        seq: u64,
    },
    /// Print events from a sequence number; `--follow` keeps waiting.
    Tail {
        /// The first sequence number to print.
        #[arg(long, default_value_t = 0)]
        from: u64,
        /// Keep waiting for new events (until interrupted).
        #[arg(long)]
        follow: bool,
    },
}

/// `docket log append`.
#[derive(Debug, Args)]
pub struct LogAppendArgs {
    /// The author's private key file.
    #[arg(long, required_unless_present = "signed")]
    pub key: Option<PathBuf>,
    /// Statement kind (custom kinds start with `x-`).
    #[arg(long, required_unless_present = "signed")]
    pub kind: Option<String>,
    /// One payload from a file.
    #[arg(
        long,
        conflicts_with_all = ["stdin", "signed"],
        required_unless_present_any = ["stdin", "signed"]
    )]
    pub payload: Option<PathBuf>,
    /// Statements signed elsewhere, one JSON object per line:
    /// `{"kind": "...", "payload_hex": "...", "author": "<64 hex>",
    /// "signature": "<128 hex>"}` (the author signs docs/FORMAT.md §2's
    /// message). Each is checked by the ledger exactly like any other
    /// (the one signature rule, admission) and answered on its own line.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["stdin", "key", "kind"])]
    pub signed: Option<PathBuf>,
    /// One payload per input line.
    #[arg(long)]
    pub stdin: bool,
}

/// `docket prove …`.
#[derive(Debug, Subcommand)]
pub enum ProveCmd {
    /// Inclusion proof of event SEQ (RFC 9162 §2.1.3), verified against a
    /// checkpoint whose signature is verified with the trusted key.
    Inclusion {
        /// Sequence number of the event.
        seq: u64,
        /// Tree size (default: the current size).
        #[arg(long)]
        size: Option<u64>,
        /// The ledger's verifier key (`docket checkpoint --vkey` on a copy you
        /// trust); default: the key of `ledger.json` in `--data`, or, with
        /// `--server`, the key the server states (reported as untrusted).
        #[arg(long, env = "DOCKET_TRUSTED_KEY", value_name = "VKEY")]
        trusted_key: Option<String>,
    },
    /// Consistency proof between two tree sizes (RFC 9162 §2.1.4), verified
    /// against the signed checkpoint of the new size.
    Consistency {
        /// The older tree size.
        old: u64,
        /// New size (default: the current size).
        new: Option<u64>,
        /// The ledger's verifier key (see `prove inclusion`).
        #[arg(long, env = "DOCKET_TRUSTED_KEY", value_name = "VKEY")]
        trusted_key: Option<String>,
    },
}

/// What `docket prove` checked, and against which trust anchor.
#[derive(Debug, serde::Serialize)]
struct ProofCheck {
    verified: bool,
    /// `pinned` (--trusted-key), `ledger.json` (the data directory's own
    /// key), or `server-stated` (with --server and no pin: not a trust anchor).
    trust: &'static str,
    checkpoint_size: u64,
    checks: Vec<String>,
    problems: Vec<String>,
}

/// The trust anchor for `prove`: a pinned key, the data directory's
/// `ledger.json`, or (untrusted) what a server states.
fn trust_anchor(
    ctx_data: &Path,
    server: bool,
    pinned: Option<&str>,
    stated: &str,
) -> Result<(docket_domain::checkpoint::NoteVerifier, &'static str)> {
    use docket_domain::checkpoint::NoteVerifier;
    if let Some(vkey) = pinned {
        let v = NoteVerifier::parse(vkey.trim())
            .map_err(|e| CliError::new(exit::USAGE, format!("--trusted-key: {e}")))?;
        return Ok((v, "pinned"));
    }
    if !server && let Ok((_, v)) = docket_log::sequencer::read_config(ctx_data) {
        return Ok((v, "ledger.json"));
    }
    let v = NoteVerifier::parse(stated.trim())
        .map_err(|e| CliError::new(exit::HARD_FAIL, format!("the stated verifier key: {e}")))?;
    Ok((v, "server-stated"))
}

fn parse_hashes(what: &str, hexes: &[String]) -> Result<Vec<[u8; 32]>> {
    hexes
        .iter()
        .map(|h| {
            hex::decode(h)
                .ok()
                .and_then(|b| b.try_into().ok())
                .ok_or_else(|| {
                    CliError::new(exit::HARD_FAIL, format!("{what}: {h} is not a hash")).into()
                })
        })
        .collect()
}

/// `docket replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Verify signatures, chain, Merkle root, checkpoint and snapshots.
    #[arg(long)]
    pub verify: bool,
    /// Stop after this sequence number (state as of it).
    #[arg(long)]
    pub as_of: Option<u64>,
}

/// Loads an author key file with a clear error: exit 4 when it (or the
/// passphrase of an encrypted one) is missing, 2 when it is malformed, its
/// permissions are too open or the passphrase is wrong.
pub fn load_key(path: &Path) -> Result<ed25519_dalek::SigningKey> {
    keys::read_key_file(path).map_err(|e| {
        let code = match e {
            docket_domain::LedgerError::Io { .. } | docket_domain::LedgerError::NotFound { .. } => {
                exit::MISSING
            }
            _ => exit::INVALID,
        };
        CliError::new(code, format!("cannot read key {}: {e}", path.display())).into()
    })
}

pub fn run_init(
    data: &Path,
    args: &InitArgs,
    layout: docket_log::Layout,
    out: Output,
) -> Result<u8> {
    crate::keyfile::require_encryption(args.encrypt)?;
    if docket_domain::ledger::exists(data) {
        // `docket serve` initialises an empty data directory on its first
        // start, so `init` after `serve` finds the ledger made.
        let served = crate::served::address(data)
            .map(|a| format!(" and served by {a}"))
            .unwrap_or_default();
        return Err(CliError::new(
            exit::INVALID,
            format!(
                "a ledger already exists in {}{served} (`docket serve` creates one on its first start); its first admin key is {}. Use it, or give another --data",
                data.display(),
                data.join("keys/admin.key").display()
            ),
        )
        .into());
    }
    let options = docket_domain::LedgerOptions {
        layout,
        ..docket_domain::LedgerOptions::default()
    };
    let (ledger, info) = docket_domain::ledger::init_with(data, args.origin.as_deref(), options)?;
    ledger.close()?;
    let value = serde_json::json!({
        "data": data,
        "origin": info.origin,
        "admin_key": info.admin_key_path,
        "admin_public_key": info.admin_public_key,
        "ledger_key": info.ledger_key_path,
        "verifier_key": ledger.verifier_key(),
    });
    out.emit(&value, || {
        format!(
            "initialised ledger in {}\n  origin:        {}\n  admin key:     {} (public {})\n  verifier key:  {}",
            data.display(),
            info.origin,
            info.admin_key_path.display(),
            info.admin_public_key,
            ledger.verifier_key()
        )
    });
    Ok(exit::OK)
}

pub fn run_keygen(args: &KeygenArgs, out: Output) -> Result<u8> {
    crate::keyfile::require_encryption(args.encrypt)?;
    let key = keys::generate()?;
    keys::write_key_file(&args.out, &key)?;
    let public = hex::encode(key.verifying_key().to_bytes());
    out.emit(
        &serde_json::json!({"public_key": public, "key_file": args.out, "encrypted": args.encrypt}),
        || public.clone(),
    );
    Ok(exit::OK)
}

pub fn run_log(backend: &dyn Backend, cmd: &LogCmd, out: Output) -> Result<u8> {
    match cmd {
        LogCmd::Append(a) => run_append(backend, a, out),
        LogCmd::Show { seq } => {
            let ev = backend.event(*seq)?;
            out.emit(&ev, || {
                format!(
                    "{}\n  prev_hash  {}\n  leaf_hash  {}\n  signature  {}\n  event_b64  {}",
                    ev.human(),
                    ev.prev_hash,
                    ev.leaf_hash,
                    ev.signature,
                    ev.event_b64
                )
            });
            Ok(exit::OK)
        }
        LogCmd::Tail { from, follow } => {
            backend.tail(*from, *follow, &mut |ev| {
                out.emit(&ev, || ev.human());
                true
            })?;
            Ok(exit::OK)
        }
    }
}

/// One line of `docket log append --signed FILE`.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PreSigned {
    kind: String,
    payload_hex: String,
    author: String,
    signature: String,
}

fn parse_pre_signed(line_no: usize, line: &str) -> Result<Statement> {
    let bad = |what: String| CliError::new(exit::INVALID, format!("line {line_no}: {what}"));
    let p: PreSigned =
        serde_json::from_str(line).map_err(|e| bad(format!("not a signed statement: {e}")))?;
    let payload = hex::decode(&p.payload_hex).map_err(|e| bad(format!("payload_hex: {e}")))?;
    let author: [u8; 32] = hex::decode(&p.author)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("author: must be 64 hex digits".into()))?;
    let signature: [u8; 64] = hex::decode(&p.signature)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("signature: must be 128 hex digits".into()))?;
    Ok(Statement {
        kind: p.kind,
        payload,
        author,
        signature,
    })
}

fn run_append(backend: &dyn Backend, a: &LogAppendArgs, out: Output) -> Result<u8> {
    if let Some(path) = &a.signed {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        let statements = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| parse_pre_signed(i + 1, l))
            .collect::<Result<Vec<_>>>()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(statements.len().max(1));
        for st in statements {
            // Invariant: the channel holds every statement (capacity = count).
            tx.send(st).expect("channel sized for every statement");
        }
        drop(tx);
        let mut worst = exit::OK;
        backend.append_stream(rx, &mut |r| match r {
            Ok(r) => out.emit(&r, || r.human()),
            Err(e) => {
                let code = exit::for_error(&e);
                worst = worst.max(code);
                out.emit(
                    &serde_json::json!({"error": e.to_string(), "exit_code": code}),
                    || format!("error: {e}"),
                );
            }
        })?;
        return Ok(worst);
    }
    // Invariant: clap requires --key and --kind unless --signed is given.
    let key_path = a.key.as_ref().expect("--key required without --signed");
    let kind = a.kind.clone().expect("--kind required without --signed");
    let key = load_key(key_path)?;
    if let Some(path) = &a.payload {
        let payload = std::fs::read(path).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        let r = backend.append(Statement::sign(&kind, payload, &key))?;
        out.emit(&r, || r.human());
        return Ok(exit::OK);
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1024);
    let reader = std::thread::spawn(move || -> Result<()> {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let line = line.context("reading stdin")?;
            if tx
                .send(Statement::sign(&kind, line.into_bytes(), &key))
                .is_err()
            {
                break;
            }
        }
        Ok(())
    });
    let mut worst = exit::OK;
    backend.append_stream(rx, &mut |r| match r {
        Ok(r) => out.emit(&r, || r.human()),
        Err(e) => {
            let code = exit::for_error(&e);
            worst = worst.max(code);
            out.emit(
                &serde_json::json!({"error": e.to_string(), "exit_code": code}),
                || format!("error: {e}"),
            );
        }
    })?;
    reader
        .join()
        .map_err(|_| anyhow::anyhow!("stdin reader panicked"))??;
    Ok(worst)
}

pub fn run_checkpoint(backend: &dyn Backend, vkey: bool, out: Output) -> Result<u8> {
    let cp = backend.checkpoint()?;
    if vkey {
        out.emit(
            &serde_json::json!({"verifier_key": cp.verifier_key}),
            || cp.verifier_key.clone(),
        );
    } else {
        out.emit(&cp, || cp.note.trim_end().to_string());
    }
    Ok(exit::OK)
}

/// `docket prove`: fetches the proof and the latest signed checkpoint,
/// verifies the checkpoint's signature with the trust anchor, the proof
/// against the checkpoint's root (RFC 9162 §2.1.3.2 / §2.1.4.2), and for
/// inclusion that the leaf hash is the hash of the event's bytes. Exit 5 if
/// anything does not verify.
pub fn run_prove(
    ctx: &crate::Ctx,
    backend: &dyn Backend,
    cmd: &ProveCmd,
    out: Output,
) -> Result<u8> {
    use docket_domain::{checkpoint, merkle};
    let cp = backend.checkpoint()?;
    let (pinned, new_size) = match cmd {
        ProveCmd::Inclusion {
            trusted_key, size, ..
        } => (trusted_key.as_deref(), *size),
        ProveCmd::Consistency {
            trusted_key, new, ..
        } => (trusted_key.as_deref(), *new),
    };
    let (verifier, trust) =
        trust_anchor(&ctx.data, ctx.server.is_some(), pinned, &cp.verifier_key)?;
    let mut check = ProofCheck {
        verified: true,
        trust,
        checkpoint_size: cp.size,
        checks: Vec::new(),
        problems: Vec::new(),
    };
    let signed_root = match checkpoint::open_note(&cp.note, &verifier) {
        Ok(c) => {
            check.checks.push(format!(
                "checkpoint signature verified with the {trust} key"
            ));
            if c.origin != verifier.name {
                check.problems.push(format!(
                    "checkpoint origin {:?} is not {:?}",
                    c.origin, verifier.name
                ));
            }
            Some((c.size, c.root))
        }
        Err(e) => {
            check.problems.push(format!("checkpoint signature: {e}"));
            None
        }
    };
    // A proof for an earlier size is tied to the signed checkpoint by a
    // consistency proof from that size: its root is then proven too.
    let size = new_size.unwrap_or(cp.size);
    let signed_root = match signed_root {
        Some((s, root)) if size < s => match backend.consistency(size, Some(s)) {
            Ok(c) => {
                let path = parse_hashes("consistency proof", &c.proof)?;
                let old = parse_hashes("old_root", std::slice::from_ref(&c.old_root))?[0];
                match merkle::verify_consistency(size, s, &old, &root, &path) {
                    Ok(()) => {
                        check.checks.push(format!(
                                "the root at size {size} is consistent with the signed tree of size {s} (RFC 9162 §2.1.4.2)"
                            ));
                        Some((size, old))
                    }
                    Err(e) => {
                        check
                            .problems
                            .push(format!("consistency with the signed checkpoint: {e}"));
                        None
                    }
                }
            }
            Err(e) => return Err(e),
        },
        other => other,
    };
    let value = match cmd {
        ProveCmd::Inclusion { seq, .. } => {
            let p = backend.inclusion(*seq, Some(size))?;
            let ev = backend.event(*seq)?;
            let bytes = base64_decode(&ev.event_b64)?;
            let leaf = merkle::leaf_hash(&bytes);
            if hex::encode(leaf) == p.leaf_hash {
                check
                    .checks
                    .push("leaf hash is the hash of the event's canonical bytes".into());
            } else {
                check
                    .problems
                    .push("the leaf hash is not the hash of the event's bytes".into());
            }
            let path = parse_hashes("proof", &p.proof)?;
            match signed_root {
                Some((s, root)) if s == p.tree_size => {
                    match merkle::verify_inclusion(&leaf, p.leaf_index, p.tree_size, &path, &root) {
                        Ok(()) => check.checks.push(format!(
                            "inclusion of leaf {} in the signed tree of size {} (RFC 9162 §2.1.3.2)",
                            p.leaf_index, p.tree_size
                        )),
                        Err(e) => check.problems.push(format!("inclusion proof: {e}")),
                    }
                }
                _ => check
                    .problems
                    .push("no signed root to verify the inclusion proof against".into()),
            }
            serde_json::json!({"proof": p, "check": check_final(&mut check)})
        }
        ProveCmd::Consistency { old, .. } => {
            let p = backend.consistency(*old, Some(size))?;
            let path = parse_hashes("proof", &p.proof)?;
            let old_root = parse_hashes("old_root", std::slice::from_ref(&p.old_root))?[0];
            match signed_root {
                Some((s, root)) if s == p.new_size => {
                    match merkle::verify_consistency(p.old_size, p.new_size, &old_root, &root, &path) {
                        Ok(()) => check.checks.push(format!(
                            "consistency of size {} with the signed tree of size {} (RFC 9162 §2.1.4.2)",
                            p.old_size, p.new_size
                        )),
                        Err(e) => check.problems.push(format!("consistency proof: {e}")),
                    }
                }
                _ => check
                    .problems
                    .push("no signed root to verify the consistency proof against".into()),
            }
            serde_json::json!({"proof": p, "check": check_final(&mut check)})
        }
    };
    let verified = check.verified;
    out.emit(&value, || {
        let mut s = serde_json::to_string_pretty(&value["proof"]).unwrap_or_default();
        s += &format!(
            "\n{} (trust anchor: {})",
            if verified { "VERIFIED" } else { "NOT VERIFIED" },
            trust
        );
        if trust == "server-stated" {
            s += "\n  note: the key is the one the server states; pin it with --trusted-key for a real check";
        }
        for c in &check.checks {
            s += &format!("\n  ok: {c}");
        }
        for p in &check.problems {
            s += &format!("\n  FAILED: {p}");
        }
        s
    });
    Ok(if verified { exit::OK } else { exit::HARD_FAIL })
}

fn check_final(check: &mut ProofCheck) -> &ProofCheck {
    check.verified = check.problems.is_empty();
    check
}

fn base64_decode(text: &str) -> Result<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| CliError::new(exit::HARD_FAIL, format!("event bytes: {e}")).into())
}

/// The full check's finding on `keys/ledger.key`: damage (missing, not
/// parsing, another key than `ledger.json` names) is a
/// [`FindingKind::LedgerKey`](docket_log::verify::FindingKind::LedgerKey)
/// finding. A key that cannot be checked here (encrypted and no passphrase
/// given, a wrong passphrase, a file it may not read) is a note on stderr,
/// not a finding: the check needs no secret.
fn ledger_key_finding(data: &std::path::Path) -> Option<docket_log::verify::Finding> {
    use docket_log::LogError;
    use docket_log::verify::{Finding, FindingKind};
    let checked = docket_log::sequencer::read_config(data)
        .and_then(|(config, _)| docket_log::sequencer::read_ledger_key(data, &config));
    match checked {
        Ok(_) => None,
        Err(LogError::Corrupt { location, detail }) => Some(Finding {
            kind: FindingKind::LedgerKey,
            seq: None,
            detail: format!("{location}: {detail}"),
        }),
        Err(other) => {
            eprintln!("note: keys/ledger.key was not checked: {other}");
            None
        }
    }
}

/// `docket replay`: reads the data directory itself (the store, not an open
/// ledger, so a damaged log is reported finding by finding rather than
/// refused at open).
pub fn run_replay(ctx: &crate::Ctx, args: &ReplayArgs, out: Output) -> Result<u8> {
    if ctx.server.is_some() {
        return Err(CliError::new(
            exit::USAGE,
            "replay reads the data directory itself; run it where the ledger lives (without --server)",
        )
        .into());
    }
    if !docket_domain::ledger::exists(&ctx.data) {
        return Err(CliError::new(
            exit::MISSING,
            format!("no ledger in {} (run `docket init`)", ctx.data.display()),
        )
        .into());
    }
    let options = ReplayOptions {
        verify: args.verify,
        as_of: args.as_of,
    };
    let opened = match ctx.store.as_deref() {
        Some(url) => crate::pg_cmds::open_for_reading(&ctx.data, url),
        None => docket_log::sequencer::open_store_for_verification(&ctx.data).map_err(Into::into),
    };
    // What the store's open repaired: in the private copy only, so the data
    // directory still holds it unrepaired until the ledger next opens for
    // writing.
    let mut repaired_in_copy = Vec::new();
    let (mut report, state) = match opened {
        Ok((store, verifier)) => {
            let len = docket_domain::store::Store::len(&store)?;
            let bar = out.progress(len, "replaying");
            let replayed = replay::replay(&store, &verifier, options, &mut |done, _| {
                bar.set_position(done)
            })?;
            bar.finish_and_clear();
            repaired_in_copy = docket_domain::store::Store::repaired_at_open(&store);
            replayed
        }
        Err(e) => {
            // A `docket serve` holds the directory: replay what it serves.
            let Some(url) = crate::served::holder(&ctx.data, &e) else {
                return Err(e);
            };
            let (_, verifier) = docket_log::sequencer::read_config(&ctx.data)?;
            let server = crate::client::connect(&url)?;
            let bar = out.progress(0, "fetching");
            let store = crate::served_replay::ServedStore::fetch(
                &ctx.data,
                server.as_ref(),
                &mut |done, total| {
                    bar.set_length(total);
                    bar.set_position(done)
                },
            )?;
            bar.finish_and_clear();
            eprintln!(
                "note: the ledger in {} is served by {url}; replaying the {} events it serves \
                 up to its signed checkpoint (checked against ledger.json's key), with the \
                 snapshots and blobs of the data directory; the stored Merkle nodes and the \
                 anchor file are the server's to check (its open and background scrub)",
                ctx.data.display(),
                store.checkpoint_size()
            );
            let bar = out.progress(store.checkpoint_size(), "replaying");
            let replayed = replay::replay(&store, &verifier, options, &mut |done, _| {
                bar.set_position(done)
            })?;
            bar.finish_and_clear();
            replayed
        }
    };
    if args.verify && args.as_of.is_none() {
        // Evidence content beside the log: present and matching its digest.
        let blobs = docket_domain::blobs::BlobStore::open_to_read(&ctx.data);
        report
            .findings
            .extend(docket_domain::content_check::check_content(&state, &blobs));
        // The ledger key: every opening command needs it, so a backup
        // without it (or with a damaged one) cannot be served.
        if let Some(finding) = ledger_key_finding(&ctx.data) {
            report.findings.push(finding);
        }
    }
    let code = report.exit_code();
    let summary = serde_json::json!({
        "ok": report.findings.is_empty(),
        "exit_code": code,
        "report": report,
        "keys": state.keys.keys.len(),
        "repaired_in_copy": repaired_in_copy,
        // The lowest sequence number a finding names (docs/OPERATIONS.md,
        // "When the ledger reports damage"); null when none names one.
        "first_damage": report.findings.iter().filter_map(|f| f.seq).min(),
    });
    out.emit(&summary, || {
        let mut s = format!(
            "replayed {} events ({} signatures checked); root {} ",
            report.events, report.signatures_checked, report.root
        );
        if let Some(cp) = report.checkpoint_size {
            s += &format!("; checkpoint at size {cp}");
        }
        if !report.snapshots_compared.is_empty() {
            s += &format!(
                "; snapshots compared: {}",
                report.snapshots_compared.join(", ")
            );
        }
        for m in &report.snapshots_missing {
            s += &format!(
                "\nnote: snapshot {m} is missing; it is rebuilt from the log on the next open"
            );
        }
        for r in &repaired_in_copy {
            s += &format!(
                "\nnote: {r} (found by the open of the private copy read; an open for writing \
                 does the same in the data directory)"
            );
        }
        if report.findings.is_empty() {
            s += if args.verify {
                "\nOK: verified"
            } else {
                "\nOK"
            };
        }
        for f in &report.findings {
            s += &format!(
                "\n{:?} at seq {}: {}",
                f.kind,
                f.seq.map_or("-".to_string(), |q| q.to_string()),
                f.detail
            );
        }
        s
    });
    Ok(code)
}

/// `docket recover`: the operator's way out of a damaged ledger. Verifies the
/// data directory with the one log verifier, finds the longest prefix from
/// genesis that is intact and ends at a checkpoint the ledger signed, and
/// exports it as a bundle (`docket audit` checks it against the ledger key).
/// Exit 0 when the whole anchored log was recovered, 5 when events were lost
/// or the anchor is missing (so losses cannot be ruled out; the report says
/// which), 4 when nothing provable remains (no prefix from genesis and no
/// salvage past the damage).
pub fn run_recover(ctx: &crate::Ctx, args: &RecoverArgs, out: Output) -> Result<u8> {
    if ctx.server.is_some() {
        return Err(CliError::new(
            exit::USAGE,
            "recover reads the data directory itself; run it where the ledger lives (without --server)",
        )
        .into());
    }
    if !docket_domain::ledger::exists(&ctx.data) {
        return Err(CliError::new(
            exit::MISSING,
            format!("no ledger in {}", ctx.data.display()),
        )
        .into());
    }
    let (store, verifier) = match ctx.store.as_deref() {
        Some(url) => crate::pg_cmds::open_for_reading(&ctx.data, url)?,
        None => docket_log::sequencer::open_store_to_salvage(&ctx.data)?,
    };
    // Checkpoints verify with `ledger.json`'s public key (`verifier`);
    // nothing is signed here, so the private key is not needed: a lost,
    // damaged or encrypted `keys/ledger.key` is reported, never a reason to
    // export nothing.
    let ledger_key_damage = ledger_key_finding(&ctx.data).map(|f| f.detail);
    if args.salvage_out.as_ref() == Some(&args.out) {
        return Err(CliError::new(
            exit::USAGE,
            "--out and --salvage-out name the same path: the prefix and the salvage are two bundles",
        )
        .into());
    }
    if let Some(path) = &args.salvage_out
        && std::fs::symlink_metadata(path).is_ok()
    {
        return Err(CliError::new(
            exit::USAGE,
            format!(
                "{} already exists; choose a new output path",
                path.display()
            ),
        )
        .into());
    }
    let (plan, _, log) = docket_domain::export::recover::recover(&store, &verifier)?;
    let options = docket_domain::export::ExportOptions {
        tasks: Vec::new(),
        from: None,
        to: None,
        as_of: None,
        with_blobs: args.with_blobs,
        since_note: None,
        format: docket_domain::export::ExportFormat::Bundle,
    };
    // The prefix bundle, when a signed checkpoint covers an intact prefix
    // from genesis (without one, only a salvage can carry anything).
    let report = match log {
        Some(mut log) => {
            if args.with_blobs {
                docket_domain::export::recover::attach_blobs(&mut log, &ctx.data)?;
            }
            Some(docket_domain::export::export(
                &log, &options, &args.out, args.tar,
            )?)
        }
        None => None,
    };
    let code = if plan.lost > 0 || plan.damage.is_some() {
        exit::HARD_FAIL
    } else {
        exit::OK
    };
    // Past the damage: the intact events a signed checkpoint still proves.
    let mut salvage = if plan.lost > 0 || args.salvage_out.is_some() || report.is_none() {
        docket_domain::export::recover::salvage(&store, &verifier, plan.prefix)?
    } else {
        None
    };
    if report.is_none() && salvage.is_none() {
        return Err(docket_domain::export::recover::nothing_provable().into());
    }
    let mut salvage_report = None;
    if let (Some(path), Some((_, salvaged))) = (&args.salvage_out, salvage.as_mut()) {
        if args.with_blobs {
            salvaged.attach_blobs(&ctx.data)?;
        }
        salvage_report = Some(docket_domain::export::export(
            &*salvaged, &options, path, args.tar,
        )?);
    }
    let salvage_plan = salvage.as_ref().map(|(s, _)| s);
    let value = serde_json::json!({
        "plan": plan,
        "export": report,
        "out": report.as_ref().and(Some(&args.out)),
        "salvage": salvage_plan,
        "salvage_export": salvage_report,
        "salvage_out": salvage_report.as_ref().and(args.salvage_out.as_ref()),
        "ledger_key_damage": ledger_key_damage,
        "exit_code": code,
    });
    out.emit(&value, || {
        // Ranges are spelled inclusive in words ("events 0 to 99"), as the
        // JSON's `salvage.missing` pairs are.
        let mut s = match &report {
            Some(report) => format!(
                "recovered {} (tree size {}, root {}) to {}",
                events_from_to(0, plan.prefix.saturating_sub(1)),
                report.tree_size,
                report.root,
                args.out.display()
            ),
            None => format!(
                "no signed checkpoint covers an intact prefix from genesis: no prefix bundle \
                 written ({} is not created)",
                args.out.display()
            ),
        };
        match (plan.first_damage, &plan.damage) {
            (Some(seq), Some(d)) => s += &format!("\nfirst damage at seq {seq}: {d}"),
            (None, Some(d)) => s += &format!("\ndamage: {d}"),
            _ => {}
        }
        if plan.lost > 0 && report.is_some() {
            s += &format!(
                "\n{} acknowledged event(s) from {} on are not in it",
                plan.lost, plan.prefix
            );
        }
        match (salvage_plan, &salvage_report, &args.salvage_out) {
            (Some(found), Some(_), Some(path)) => {
                s += &format!(
                    "\nsalvaged {} intact event(s) ({} after the prefix) to {}, proved against \
                     the signed checkpoint of size {}",
                    found.events,
                    found.after_prefix,
                    path.display(),
                    found.tree_size
                );
            }
            (Some(found), None, _) if found.after_prefix > 0 => {
                s += &format!(
                    "\n{} intact event(s) after the prefix are proved by the signed checkpoint of \
                     size {}: write them with --salvage-out DIR",
                    found.after_prefix, found.tree_size
                );
            }
            (None, _, Some(_)) => {
                s +=
                    "\nno signed checkpoint proves more than the prefix: no salvage bundle written";
            }
            _ => {}
        }
        if let Some(found) = salvage_plan
            && let Some(anchor) = found.anchor_size
        {
            s += &format!(
                "\nwhat survives does not prove the ledger's latest signed checkpoint (size \
                 {anchor}): the salvage ends at size {}, and {} are not in it",
                found.tree_size,
                events_from_to(found.tree_size, anchor - 1)
            );
        }
        if let Some(found) = salvage_plan
            && !found.missing.is_empty()
        {
            let ranges: Vec<String> = found
                .missing
                .iter()
                .map(|&[a, b]| events_from_to(a, b))
                .collect();
            s += &format!(
                "\nlost (bytes gone or altered; the salvage proves nothing of them): {}",
                ranges.join(", ")
            );
        }
        if let Some(damage) = &ledger_key_damage {
            s += &format!(
                "\nthe ledger's private key is damaged ({damage}): the bundles need none (nothing \
                 is re-signed; checkpoints verify with ledger.json's public key), but the ledger \
                 cannot sign again until keys/ledger.key is restored from a backup"
            );
        }
        s += "\nverify it with: docket audit <bundle> --trusted-key \"<the ledger's verifier key: \
             `docket checkpoint --vkey` on a healthy copy or a backup>\"";
        s
    });
    Ok(code)
}

/// `first..=last` in words: "event 7", "events 0 to 99".
fn events_from_to(first: u64, last: u64) -> String {
    if first == last {
        format!("event {first}")
    } else {
        format!("events {first} to {last}")
    }
}

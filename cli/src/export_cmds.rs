//! Export and audit commands: `docket export` writes a self-contained
//! bundle from the embedded ledger; `docket audit` verifies one offline,
//! with no ledger at all. The bundle layout is in docs/BUNDLE.md.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use docket_domain::checkpoint::NoteVerifier;
use docket_domain::export::{self, AsOf, AuditOptions, ExportError, ExportFormat, ExportOptions};

use crate::Ctx;
use crate::exit::{self, CliError};
use crate::output::{Output, parse_rfc3339_ms};

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum ExportCmd {
    /// Write a self-contained audit bundle (a directory, or one tar file
    /// with --tar): events with their inclusion proofs, the signed
    /// checkpoint, the verifier key, key registrations, a summary.
    Export(ExportArgs),
    /// Verify a bundle offline, with no ledger: digests, signatures,
    /// authority, hash chain, proofs, checkpoint, blobs, summary.
    /// Exit 0 clean, 2 refused (unsupported format, external reference),
    /// 3 summary mismatch, 4 missing files, 5 integrity failure or
    /// malformed content.
    Audit(AuditArgs),
}

/// `docket export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Output path (must not exist): a directory, or a file with --tar.
    pub out: PathBuf,
    /// Task id (UUID) whose whole verdict chain to export (repeatable),
    /// instead of a log range.
    #[arg(long = "task", value_name = "ID")]
    pub tasks: Vec<String>,
    /// First sequence number (default 0, or the --since checkpoint's size).
    #[arg(long, value_name = "SEQ")]
    pub from: Option<u64>,
    /// Last sequence number, inclusive (default: the last).
    #[arg(long, value_name = "SEQ")]
    pub to: Option<u64>,
    /// Export the log as of a sequence number or an RFC 3339 time, proven
    /// against the first checkpoint covering it.
    #[arg(long, value_name = "SEQ|TIME")]
    pub as_of: Option<String>,
    /// Include the evidence blobs the events reference (purged ones are
    /// represented by their retention events).
    #[arg(long)]
    pub with_blobs: bool,
    /// A signed checkpoint note you already hold: add a consistency proof
    /// from it (and start the range there unless --from is given).
    #[arg(long, value_name = "CHECKPOINT_FILE")]
    pub since: Option<PathBuf>,
    /// Write one tar file instead of a directory.
    #[arg(long)]
    pub tar: bool,
    /// `bundle`, or `vsa` to add every verdict as a DSSE-signed SLSA
    /// Verification Summary Attestation (checks as in-toto test results).
    #[arg(long, value_enum, default_value_t = FormatArg::Bundle)]
    pub format: FormatArg,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Bundle,
    Vsa,
}

/// `docket audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The bundle: a directory or a tar file.
    pub bundle: PathBuf,
    /// The verifier key to trust: a C2SP verifier key
    /// (`name+hex8+base64`) or a file holding one. Without it the bundle's
    /// own key is used and reported as self-asserted.
    #[arg(long, value_name = "VKEY")]
    pub trusted_key: Option<String>,
    /// Follow manifest entries that point outside the bundle (local files
    /// only) instead of refusing the bundle.
    #[arg(long)]
    pub allow_external_ref: bool,
}

pub fn run(cmd: &ExportCmd, ctx: &Ctx) -> Result<u8> {
    match cmd {
        ExportCmd::Export(a) => run_export(a, ctx),
        ExportCmd::Audit(a) => run_audit(a, ctx.out),
    }
}

fn run_export(args: &ExportArgs, ctx: &Ctx) -> Result<u8> {
    let options = export_options(args)?;
    let backend = ctx.backend()?;
    let Some(embedded) = backend.embedded() else {
        return run_remote_export(args, options, backend, ctx);
    };
    let report = export::export(&embedded.ledger, &options, &args.out, args.tar)
        .map_err(|e| export_error(&e))?;
    let value = serde_json::json!({"out": args.out, "tar": args.tar, "report": report});
    ctx.out
        .emit(&value, || report_human(&value["report"], args, None));
    Ok(exit::OK)
}

/// The human report of an export (the same through a server, whose report
/// is the embedded one's JSON).
fn report_human(report: &serde_json::Value, args: &ExportArgs, server: Option<&str>) -> String {
    let n = |k: &str| report[k].as_u64().unwrap_or(0);
    let from = server.map(|s| format!(" from {s}")).unwrap_or_default();
    let mut s = format!(
        "exported {} events ({} selected) in {} run(s){from} to {}\n  checkpoint: tree size {}, root {}\n  inclusion proofs: {}",
        n("events"),
        n("selected"),
        report["ranges"].as_array().map_or(0, Vec::len),
        args.out.display(),
        n("tree_size"),
        report["root"].as_str().unwrap_or(""),
        n("inclusion_proofs")
    );
    if let Some(since) = report["since_size"].as_u64() {
        s += &format!("\n  consistency proof from tree size {since}");
    }
    if args.with_blobs {
        s += &format!("\n  blobs: {} copied", n("blobs"));
        let absent = report["blobs_absent"].as_array().map_or(0, Vec::len);
        if absent > 0 {
            s += &format!(", {absent} absent (purged)");
        }
    }
    if n("attestations") > 0 {
        s += &format!("\n  attestations: {}", n("attestations"));
    }
    s + &format!("\n  {} files, {} bytes", n("files"), n("bytes"))
}

/// `--server`: the server builds the bundle and streams its files (each
/// checked against its SHA-256 by the client); we write them here exactly as
/// an embedded export would, then audit nothing — `docket audit` does that.
fn run_remote_export(
    args: &ExportArgs,
    options: ExportOptions,
    backend: &dyn crate::backend::Backend,
    ctx: &Ctx,
) -> Result<u8> {
    use docket_proto::v1 as pb;
    if args.out.exists() {
        return Err(CliError::new(
            exit::INVALID,
            format!(
                "{} already exists; an export never overwrites",
                args.out.display()
            ),
        )
        .into());
    }
    let request = pb::ExportRequest {
        task_ids: options.tasks.clone(),
        from_seq: options.from.unwrap_or(0),
        to_seq: options.to.unwrap_or(0),
        as_of: options.as_of.map(|a| pb::AsOf {
            point: Some(match a {
                AsOf::Seq(s) => pb::as_of::Point::Seq(s),
                AsOf::TimeMs(ms) => pb::as_of::Point::Time(crate::output::rfc3339_ms(ms)),
            }),
        }),
        with_blobs: options.with_blobs,
        since_checkpoint: options.since_note.clone().unwrap_or_default(),
        format: match options.format {
            ExportFormat::Vsa => "vsa".into(),
            _ => "bundle".into(),
        },
    };
    let (files, report) = backend.export_files(request)?;
    let bytes: usize = files.values().map(Vec::len).sum();
    let written = if args.tar {
        export::bundle::write_tar(&args.out, &files)
    } else {
        export::bundle::write_dir(&args.out, &files)
    };
    written.map_err(|e| export_error(&e))?;
    // The same object as an embedded export's (the server's report); an
    // older server sends none: then what the client can count itself.
    let value = match report {
        Some(report) => serde_json::json!({"out": args.out, "tar": args.tar, "report": report}),
        None => serde_json::json!({
            "out": args.out, "tar": args.tar, "report": {"files": files.len(), "bytes": bytes},
        }),
    };
    ctx.out.emit(&value, || {
        if value["report"].get("events").is_some() {
            report_human(&value["report"], args, ctx.server_url())
        } else {
            format!(
                "exported {} files, {bytes} bytes from {} to {}",
                files.len(),
                ctx.server_url().unwrap_or("the server"),
                args.out.display()
            )
        }
    });
    Ok(exit::OK)
}

fn export_options(args: &ExportArgs) -> Result<ExportOptions> {
    let as_of = match &args.as_of {
        None => None,
        Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            Some(AsOf::Seq(s.parse().map_err(|e| {
                CliError::new(exit::USAGE, format!("--as-of {s}: {e}"))
            })?))
        }
        Some(s) => Some(AsOf::TimeMs(parse_rfc3339_ms(s).map_err(|_| {
            CliError::new(
                exit::USAGE,
                format!("--as-of {s:?} is neither a sequence number nor an RFC 3339 time"),
            )
        })?)),
    };
    let since_note = match &args.since {
        None => None,
        Some(p) => Some(std::fs::read_to_string(p).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read --since {}: {e}", p.display()),
            )
        })?),
    };
    Ok(ExportOptions {
        tasks: args.tasks.clone(),
        from: args.from,
        to: args.to,
        as_of,
        with_blobs: args.with_blobs,
        since_note,
        format: match args.format {
            FormatArg::Bundle => ExportFormat::Bundle,
            FormatArg::Vsa => ExportFormat::Vsa,
        },
    })
}

/// An export error as a CLI error with its exit code.
fn export_error(e: &ExportError) -> CliError {
    let code = match e {
        ExportError::Ledger(l) => exit::for_ledger_error(l),
        ExportError::Request(_) | ExportError::Exists(_) => exit::INVALID,
        ExportError::NotFound(_) => exit::MISSING,
        _ => exit::UNEXPECTED,
    };
    CliError::new(code, e.to_string())
}

/// Parses `--trusted-key`: a verifier key, or a file holding one. A
/// C2SP verifier key is `<name>+<8 hex>+<base64>`: an argument without a
/// `+` that names no file but looks like a path (a `/` or a `.` in it) is
/// a key file that cannot be read (exit 4); anything else that does not
/// parse is an unparsable key (exit 64).
fn trusted_key(arg: &str) -> Result<NoteVerifier> {
    let path = Path::new(arg);
    let path_like = !arg.contains('+') && (arg.contains('/') || arg.contains('.'));
    if (!path.exists() && path_like) || path.is_dir() {
        return Err(CliError::new(
            exit::MISSING,
            if path.is_dir() {
                format!("cannot read --trusted-key {arg}: a directory, not a key file")
            } else {
                format!(
                    "cannot read --trusted-key {arg}: no such file (and not a C2SP verifier key)"
                )
            },
        )
        .into());
    }
    let text = if path.is_file() {
        std::fs::read_to_string(arg).map_err(|e| {
            CliError::new(
                exit::MISSING,
                format!("cannot read --trusted-key {arg}: {e}"),
            )
        })?
    } else {
        arg.to_string()
    };
    NoteVerifier::parse(text.trim()).map_err(|e| {
        CliError::new(
            exit::USAGE,
            format!("--trusted-key is neither a C2SP verifier key nor a file holding one: {e}"),
        )
        .into()
    })
}

fn run_audit(args: &AuditArgs, out: Output) -> Result<u8> {
    let options = AuditOptions {
        trusted_key: args.trusted_key.as_deref().map(trusted_key).transpose()?,
        allow_external_ref: args.allow_external_ref,
    };
    let bar = out.progress(0, "auditing");
    let mut current = String::new();
    let report = export::audit(&args.bundle, &options, &mut |stage, done, total| {
        // A new stage starts a new count: new length, fresh rate and ETA.
        if bar.length() != Some(total) || current != stage {
            current = stage.to_string();
            // Length and position in one update: no frame pairs one
            // stage's count with another's total.
            bar.update(|s| {
                s.set_len(total);
                s.set_pos(done);
            });
            bar.reset_eta();
            bar.set_message(current.clone());
        } else {
            bar.set_position(done);
        }
    });
    bar.finish_and_clear();
    let code = report.exit_code();
    let trust = if report
        .findings
        .iter()
        .any(|f| f.kind == docket_domain::export::FindingKind::SelfAssertedKey)
    {
        "untrusted key"
    } else {
        "trusted key"
    };
    let value = serde_json::json!({
        "ok": code == exit::OK,
        "exit_code": code,
        "trust": trust,
        "report": report,
    });
    out.emit(&value, || {
        let mut s = format!(
            "audited {}: {} events in {} run(s), {} signatures, {} inclusion proofs",
            report.bundle,
            report.events,
            report.ranges.len(),
            report.signatures_checked,
            report.inclusion_proofs_checked
        );
        if let (Some(size), Some(root)) = (report.tree_size, &report.root) {
            s += &format!(
                "\n  checkpoint: {} tree size {size}, root {root} ({} key)",
                report.origin.as_deref().unwrap_or("?"),
                report.key
            );
        }
        if report.whole_tree {
            s += "\n  the bundle holds the whole log: root recomputed, every event re-admitted";
        } else if report.from_genesis {
            s += "\n  the bundle starts at genesis: every event re-admitted";
        }
        if report.consistency_checked {
            s += "\n  consistency proof checked";
        }
        if report.blobs_checked > 0 {
            s += &format!("\n  blobs checked: {}", report.blobs_checked);
        }
        if report.attestations_checked > 0 {
            s += &format!("\n  attestations checked: {}", report.attestations_checked);
        }
        for f in &report.findings {
            s += &format!("\n{f}");
        }
        if report.findings_omitted > 0 {
            s += &format!("\n... and {} more findings", report.findings_omitted);
        }
        let untrusted = report
            .findings
            .iter()
            .any(|f| f.kind == docket_domain::export::FindingKind::SelfAssertedKey);
        s += &if code != exit::OK {
            format!("\nFAIL (exit {code})")
        } else if untrusted {
            "\nOK, internally consistent only: untrusted key (the bundle's own key was used; \
             pass --trusted-key to check it against a key you trust)"
                .to_string()
        } else {
            "\nOK: the bundle verifies against the trusted key".to_string()
        };
        s
    });
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_domain::{Statement, keys};

    fn args(out: &Path) -> ExportArgs {
        ExportArgs {
            out: out.to_path_buf(),
            tasks: Vec::new(),
            from: None,
            to: None,
            as_of: None,
            with_blobs: false,
            since: None,
            tar: false,
            format: FormatArg::Bundle,
        }
    }

    #[test]
    fn export_then_audit_end_to_end_with_exit_codes() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let (ledger, init) = docket_domain::ledger::init(&data, Some("cli.test/export")).unwrap();
        let admin = keys::read_key_file(&init.admin_key_path).unwrap();
        let writer = keys::generate().unwrap();
        let reg = serde_json::json!({
            "public_key": hex::encode(writer.verifying_key().to_bytes()),
            "roles": ["submitter"],
        });
        ledger
            .append(Statement::sign(
                "key.registered",
                reg.to_string().into_bytes(),
                &admin,
            ))
            .unwrap();
        for i in 0..20 {
            ledger
                .append(Statement::sign(
                    "x-note",
                    format!("{{\"i\":{i}}}").into_bytes(),
                    &writer,
                ))
                .unwrap();
        }
        let vkey = ledger.verifier_key();
        let (_, early) = ledger.checkpoint_at(5).unwrap();
        ledger.close().unwrap();
        drop(ledger);
        let since = dir.path().join("since.note");
        std::fs::write(&since, early).unwrap();

        let ctx = Ctx::new(data, None, Output { json: true });
        let out = dir.path().join("bundle");
        let mut a = args(&out);
        a.since = Some(since);
        a.as_of = Some("18".into());
        assert_eq!(run(&ExportCmd::Export(a), &ctx).unwrap(), exit::OK);
        let tar = dir.path().join("bundle.tar");
        let mut a = args(&tar);
        a.tar = true;
        a.from = Some(10);
        assert_eq!(run(&ExportCmd::Export(a), &ctx).unwrap(), exit::OK);
        // Never over an existing path.
        let e = run(&ExportCmd::Export(args(&out)), &ctx).unwrap_err();
        assert_eq!(exit::for_error(&e), exit::INVALID);
        // A bad --as-of is a usage error.
        let mut a = args(&dir.path().join("x"));
        a.as_of = Some("yesterday".into());
        assert_eq!(
            exit::for_error(&run(&ExportCmd::Export(a), &ctx).unwrap_err()),
            exit::USAGE
        );
        drop(ctx);

        // Audit needs no ledger.
        let ctx = Ctx::new(dir.path().join("no-ledger"), None, Output { json: true });
        for bundle in [&out, &tar] {
            let audit = |trusted: Option<String>| {
                run(
                    &ExportCmd::Audit(AuditArgs {
                        bundle: bundle.clone(),
                        trusted_key: trusted,
                        allow_external_ref: false,
                    }),
                    &ctx,
                )
                .unwrap()
            };
            assert_eq!(audit(Some(vkey.clone())), exit::OK);
            assert_eq!(audit(None), exit::OK, "a self-asserted key is a warning");
        }
        let key_file = dir.path().join("trusted.vkey");
        std::fs::write(&key_file, format!("{vkey}\n")).unwrap();
        let audit = |trusted: &str| {
            run(
                &ExportCmd::Audit(AuditArgs {
                    bundle: out.clone(),
                    trusted_key: Some(trusted.to_string()),
                    allow_external_ref: false,
                }),
                &ctx,
            )
        };
        assert_eq!(audit(key_file.to_str().unwrap()).unwrap(), exit::OK);
        // Another trusted key: the checkpoint does not verify.
        let other = docket_domain::checkpoint::verifier_key(
            "cli.test/export",
            &keys::generate().unwrap().verifying_key(),
        );
        assert_eq!(audit(&other).unwrap(), exit::HARD_FAIL);
        assert_eq!(exit::for_error(&audit("garbage").unwrap_err()), exit::USAGE);
        // Tampering and missing files.
        let events = out.join("events.bin");
        let mut b = std::fs::read(&events).unwrap();
        let n = b.len();
        b[n - 3] ^= 1;
        std::fs::write(&events, b).unwrap();
        assert_eq!(audit(&vkey).unwrap(), exit::HARD_FAIL);
        std::fs::remove_file(out.join("manifest.json")).unwrap();
        assert_eq!(audit(&vkey).unwrap(), exit::MISSING);
    }
}

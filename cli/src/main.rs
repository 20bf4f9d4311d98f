//! `docket`: the command line and server of the Docket verdict ledger.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use docket_cli::core_cmds::{self, InitArgs, KeygenArgs, LogCmd, ProveCmd, ReplayArgs};
use docket_cli::output::Output;
use docket_cli::{Ctx, domain_cmds, exit, export_cmds, retention_cmds, server, verify_cmds};

/// Docket: an event-sourced, signed, provable verdict ledger.
#[derive(Debug, Parser)]
#[command(name = "docket", version, about, propagate_version = true)]
struct Cli {
    /// Data directory of the embedded ledger.
    #[arg(
        long,
        global = true,
        env = "DOCKET_DATA",
        default_value = "./docket-data"
    )]
    data: PathBuf,
    /// Talk to a Docket server instead of the embedded ledger
    /// (e.g. http://127.0.0.1:50051).
    #[arg(long, global = true, env = "DOCKET_SERVER")]
    server: Option<String>,
    /// Where the log lives: `sled` (the data directory, the default) or
    /// postgres://USER@HOST:PORT/DB (keys and blobs stay in --data).
    #[arg(long, global = true, env = "DOCKET_STORE")]
    store: Option<String>,
    /// Machine output: one JSON object per line.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a ledger: ledger key, first admin key, genesis event.
    Init(InitArgs),
    /// Generate an ed25519 key file and print its public key.
    Keygen(KeygenArgs),
    /// Append, show and tail raw log events.
    #[command(subcommand)]
    Log(LogCmd),
    /// Print the latest signed checkpoint (C2SP signed note).
    Checkpoint {
        /// Print the C2SP verifier key instead.
        #[arg(long)]
        vkey: bool,
    },
    /// Inclusion and consistency proofs.
    #[command(subcommand)]
    Prove(ProveCmd),
    /// Rebuild projections from genesis; `--verify` checks everything.
    Replay(ReplayArgs),
    /// Export the intact, provable prefix of a damaged ledger as a bundle.
    Recover(core_cmds::RecoverArgs),
    /// Copy a ledger between a data directory and PostgreSQL (either way),
    /// verified by replay.
    Migrate(docket_cli::pg_cmds::MigrateArgs),
    /// Run the verdict engine offline on an artifacts directory.
    Verify(verify_cmds::VerifyArgs),
    /// Validate a task contract.
    ValidateTask(verify_cmds::ValidateTaskArgs),
    /// Classify failures from logs and an exit code.
    Classify(verify_cmds::ClassifyArgs),
    #[command(flatten)]
    Domain(domain_cmds::DomainCmd),
    #[command(flatten)]
    Retention(retention_cmds::RetentionCmd),
    #[command(flatten)]
    Export(export_cmds::ExportCmd),
    #[command(flatten)]
    Server(server::ServerCmd),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            let code = match e.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => exit::USAGE,
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    init_tracing(matches!(
        cli.command,
        Command::Server(server::ServerCmd::Serve(_))
    ));
    let out = Output { json: cli.json };
    let store = match docket_cli::pg_cmds::store_url(cli.store.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(exit::for_error(&e));
        }
    };
    let ctx = Ctx::new(cli.data.clone(), cli.server.clone(), out).with_store(store.clone());
    let result = match &cli.command {
        Command::Init(a) => match &store {
            Some(url) => docket_cli::pg_cmds::run_init(&cli.data, url, a, out),
            None => core_cmds::run_init(&cli.data, a, out),
        },
        Command::Migrate(a) => docket_cli::pg_cmds::run_migrate(a, &cli.data, out),
        Command::Keygen(a) => core_cmds::run_keygen(a, out),
        Command::Log(c) => ctx.backend().and_then(|b| core_cmds::run_log(b, c, out)),
        Command::Checkpoint { vkey } => ctx
            .backend()
            .and_then(|b| core_cmds::run_checkpoint(b, *vkey, out)),
        Command::Prove(c) => ctx
            .backend()
            .and_then(|b| core_cmds::run_prove(&ctx, b, c, out)),
        Command::Replay(a) => core_cmds::run_replay(&ctx, a, out),
        Command::Recover(a) => core_cmds::run_recover(&ctx, a, out),
        Command::Verify(a) => verify_cmds::run_verify(a),
        Command::ValidateTask(a) => verify_cmds::run_validate_task(a),
        Command::Classify(a) => verify_cmds::run_classify(a),
        Command::Domain(c) => domain_cmds::run(c, &ctx),
        Command::Retention(c) => retention_cmds::run(c, &ctx),
        Command::Export(c) => export_cmds::run(c, &ctx),
        Command::Server(c) => server::run(c, &ctx),
    };
    drop(ctx);
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let code = exit::for_error(&e);
            if out.json {
                println!(
                    "{}",
                    serde_json::json!({"error": format!("{e:#}"), "exit_code": code})
                );
            } else {
                eprintln!("error: {e:#}");
            }
            ExitCode::from(code)
        }
    }
}

/// Logs go to stderr; `DOCKET_LOG` sets the filter (default: `info` for the
/// server, `warn` for one-shot commands).
fn init_tracing(serving: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if serving { "info" } else { "warn" };
    let filter = EnvFilter::try_from_env("DOCKET_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

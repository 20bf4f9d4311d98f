//! `docket`: the command line and server of the Docket verdict ledger.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use docket_cli::core_cmds::{self, InitArgs, KeygenArgs, LogCmd, ProveCmd, ReplayArgs};
use docket_cli::output::Output;
use docket_cli::{Ctx, domain_cmds, exit, export_cmds, retention_cmds, server, verify_cmds};

#[cfg(test)]
mod cli_tests;

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
    /// Where the log lives: in the data directory (`tiles`, the default:
    /// C2SP tlog-tiles files; or `sled`, the earlier layout, for `init`) or
    /// postgres://USER@HOST:PORT/DB (keys and blobs stay in --data).
    #[arg(long, global = true, env = "DOCKET_STORE")]
    store: Option<String>,
    /// Machine output: one JSON object per line.
    #[arg(
        long,
        global = true,
        env = "DOCKET_JSON",
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    json: bool,
    /// Configuration file (TOML; JSON for `*.json`) for the global options
    /// (data, server, json, log_format, trusted_key, store) and `serve`'s;
    /// default: DATA/docket.toml when it exists. Precedence: flag > env >
    /// file > built-in default.
    #[arg(long, global = true, env = "DOCKET_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log format on stderr: `text` (the default) or `json` (one JSON
    /// object per line, for log collectors). `DOCKET_LOG` sets the level.
    #[arg(
        long,
        global = true,
        env = "DOCKET_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    log_format: LogFormat,
    /// File holding the passphrase of encrypted private key files (its one
    /// trailing newline is ignored; mode 0600). Without it, the environment
    /// variable DOCKET_PASSPHRASE holds the passphrase itself.
    #[arg(
        long,
        global = true,
        env = "DOCKET_PASSPHRASE_FILE",
        value_name = "FILE"
    )]
    passphrase_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a ledger: ledger key, first admin key, genesis event.
    Init(InitArgs),
    /// Generate an ed25519 key file and print its public key.
    Keygen(KeygenArgs),
    /// Encrypt, decrypt or check a private key file (keys at rest).
    #[command(subcommand)]
    Keyfile(docket_cli::keyfile::KeyfileCmd),
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
    /// The seed 002 execution gateway: run `-- CMD ARGS...` as a child
    /// process and record its execution record and full outputs, signed by
    /// a gateway key. Exit 0 SUCCESS, 5 FAILURE, 4 NO_EVIDENCE.
    Exec(docket_cli::exec_cmds::ExecArgs),
    /// Print a shell completion script (e.g. `docket completions bash >
    /// ~/.local/share/bash-completion/completions/docket`).
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Write man pages, one per command (docket.1, docket-init.1, …).
    Man {
        /// Directory to write the pages into (created if missing).
        #[arg(long, default_value = ".")]
        out: PathBuf,
    },
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
    exit::install_panic_hook();
    let mut cli = match parse_cli() {
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
    init_tracing(
        matches!(cli.command, Command::Server(server::ServerCmd::Serve(_))),
        cli.log_format,
    );
    let config = config_path(&cli);
    if let Command::Server(server::ServerCmd::Serve(a)) = &mut cli.command {
        a.config = config;
    }
    let out = Output { json: cli.json };
    if let Err(e) = docket_cli::keyfile::install_passphrase(cli.passphrase_file.as_deref()) {
        eprintln!("error: {e:#}");
        return ExitCode::from(exit::for_error(&e));
    }
    let store = match docket_cli::pg_cmds::store_url(cli.store.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(exit::for_error(&e));
        }
    };
    let ctx = Ctx::new(cli.data.clone(), cli.server.clone(), out)
        .with_store(store.clone())
        .with_new_layout(docket_cli::pg_cmds::embedded_layout(cli.store.as_deref()));
    let result = match &cli.command {
        Command::Init(a) => match &store {
            Some(url) => docket_cli::pg_cmds::run_init(&cli.data, url, a, out),
            None => core_cmds::run_init(
                &cli.data,
                a,
                docket_cli::pg_cmds::embedded_layout(cli.store.as_deref()),
                out,
            ),
        },
        Command::Migrate(_) if cli.server.is_some() => Err(exit::CliError::new(
            exit::USAGE,
            "migrate copies the data directory's store itself; run it where the ledger lives (without --server)",
        )
        .into()),
        Command::Migrate(a) => docket_cli::pg_cmds::run_migrate(a, &cli.data, out),
        Command::Keygen(a) => core_cmds::run_keygen(a, out),
        Command::Keyfile(c) => docket_cli::keyfile::run(c, out),
        Command::Log(c) => ctx.backend().and_then(|b| core_cmds::run_log(b, c, out)),
        Command::Checkpoint { vkey } => ctx
            .backend()
            .and_then(|b| core_cmds::run_checkpoint(b, *vkey, out)),
        Command::Prove(c) => ctx
            .backend()
            .and_then(|b| core_cmds::run_prove(&ctx, b, c, out)),
        Command::Replay(a) => core_cmds::run_replay(&ctx, a, out)
            .map_err(|e| docket_cli::served::explain(&cli.data, e)),
        Command::Recover(a) => core_cmds::run_recover(&ctx, a, out)
            .map_err(|e| docket_cli::served::explain(&cli.data, e)),
        Command::Verify(a) => match &a.reproduce {
            Some(task) => docket_cli::verdict_import::run_reproduce(&ctx, task, a.json),
            None => verify_cmds::run_verify(a),
        },
        Command::ValidateTask(a) => verify_cmds::run_validate_task(a),
        Command::Classify(a) => verify_cmds::run_classify(a),
        Command::Exec(a) => docket_cli::exec_cmds::run(&ctx, a),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "docket", &mut std::io::stdout());
            Ok(0)
        }
        Command::Man { out: dir } => write_man_pages(dir, out),
        Command::Domain(c) => domain_cmds::run(c, &ctx),
        Command::Retention(c) => retention_cmds::run(c, &ctx),
        Command::Export(c) => export_cmds::run(c, &ctx),
        Command::Server(c) => server::run(c, &ctx)
            .map_err(|e| docket_cli::served::explain_second_server(&cli.data, e)),
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
fn init_tracing(serving: bool, format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let default = if serving { "info" } else { "warn" };
    let filter = EnvFilter::try_from_env("DOCKET_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// `docket man --out DIR`: one roff page per command and subcommand, named
/// like git's (`docket-log-append.1`).
fn write_man_pages(dir: &std::path::Path, out: Output) -> anyhow::Result<u8> {
    use anyhow::Context as _;
    fn walk(
        cmd: &clap::Command,
        name: String,
        dir: &std::path::Path,
        written: &mut Vec<PathBuf>,
    ) -> anyhow::Result<()> {
        // clap names are `Str` (static without clap's `string` feature):
        // leaking a few short names once per run is fine.
        let leaked: &'static str = name.clone().leak();
        let cmd = cmd.clone().name(leaked).bin_name(name.replace('-', " "));
        let mut buf = Vec::new();
        clap_mangen::Man::new(cmd.clone()).render(&mut buf)?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            walk(sub, format!("{name}-{}", sub.get_name()), dir, written)?;
        }
        Ok(())
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = <Cli as clap::CommandFactory>::command();
    cmd.build();
    let mut written = Vec::new();
    walk(&cmd, "docket".into(), dir, &mut written)?;
    if out.json {
        println!(
            "{}",
            serde_json::json!({"dir": dir.display().to_string(), "pages": written.len()})
        );
    } else {
        println!("wrote {} man pages to {}", written.len(), dir.display());
    }
    Ok(0)
}

/// The options a config file may set, by clap argument id (the same as the
/// file's keys). Subcommand arguments with these ids (`trusted_key`) take
/// the file's value too.
const CONFIG_KEYS: &[&str] = &[
    "data",
    "server",
    "json",
    "log_format",
    "store",
    "trusted_key",
    "passphrase_file",
];

/// `--config FILE`, else `DATA/docket.toml` when it exists.
fn config_path(cli: &Cli) -> Option<PathBuf> {
    cli.config
        .clone()
        .or_else(|| Some(cli.data.join("docket.toml")).filter(|p| p.is_file()))
}

/// Parses the command line; values from a config file become the defaults
/// of the arguments flags and environment variables left unset, so the
/// precedence is flag > env > file > built-in default.
fn parse_cli() -> Result<Cli, clap::Error> {
    use clap::error::ErrorKind;
    use clap::{CommandFactory, FromArgMatches};
    let first = Cli::try_parse()?;
    let Some(path) = config_path(&first) else {
        return Ok(first);
    };
    let bad = |msg: String| clap::Error::raw(ErrorKind::InvalidValue, format!("{msg}\n"));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| bad(format!("cannot read config {}: {e}", path.display())))?;
    let table: serde_json::Value = if path.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text)
            .map_err(|e| bad(format!("invalid config {}: {e}", path.display())))?
    } else {
        toml::from_str(&text).map_err(|e| bad(format!("invalid config {}: {e}", path.display())))?
    };
    let mut cmd = Cli::command();
    for key in CONFIG_KEYS {
        let value = match table.get(*key) {
            None | Some(serde_json::Value::Null) => continue,
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Bool(b)) => b.to_string(),
            Some(other) => {
                return Err(bad(format!(
                    "invalid config {}: {key} must be a string or a boolean, not {other}",
                    path.display()
                )));
            }
        };
        // clap's `OsStr` is static without its `string` feature.
        let value: &'static str = value.leak();
        cmd = with_default(cmd, key, value);
    }
    let matches = cmd.try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

/// Sets the default of argument `id` in `cmd` and all its subcommands.
fn with_default(cmd: clap::Command, id: &str, value: &'static str) -> clap::Command {
    let mut cmd = if cmd.get_arguments().any(|a| a.get_id() == id) {
        cmd.mut_arg(id, |a| a.default_value(value))
    } else {
        cmd
    };
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for sub in subs {
        cmd = cmd.mut_subcommand(sub, |c| with_default(c, id, value));
    }
    cmd
}

//! The ledger on PostgreSQL from the command line: `--store
//! postgres://USER@HOST:PORT/DB` (env `DOCKET_STORE`) for `docket init`,
//! `docket serve` and every command on the embedded ledger, and `docket
//! migrate` between a data directory and a database (both ways), verified
//! by a full replay.
//!
//! With `--store`, the events, Merkle nodes, checkpoints, snapshots and the
//! anchor live in the database; the data directory (`--data`) keeps what
//! stays local to each node: `ledger.json`, `keys/` (the ledger key signs
//! checkpoints — every node that may sequence needs it), `blobs/` (evidence
//! content: on several machines, a shared directory) and `cursors/`. See
//! docs/SCALING.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use docket_domain::LedgerState;
use docket_domain::domain::{Docket, DocketOptions};
use docket_domain::ledger::InitOutcome;
use docket_store_pg::{NodeOptions, PgStore, Role, is_postgres_url, migrate, open_node, redact};

use crate::backend::Embedded;
use crate::core_cmds::InitArgs;
use crate::exit::{self, CliError};
use crate::output::Output;
use crate::server::ServeOptions;

/// `docket migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Where the ledger is: a data directory or `postgres://USER@HOST:PORT/DB`.
    #[arg(
        long,
        value_name = "DIR|URL",
        requires = "to",
        conflicts_with = "layout"
    )]
    pub from: Option<String>,
    /// Where to copy it: an empty database (`postgres://…`) or a data
    /// directory without a store.
    #[arg(long, value_name = "URL|DIR", requires = "from")]
    pub to: Option<String>,
    /// Move the ledger in `--data` to this embedded layout, in place:
    /// `tiles` (C2SP tlog-tiles files, the default for new ledgers) or
    /// `sled`. The copy is replayed with every check before the switch; the
    /// old store is kept beside it (`log.migrated` / `tiles.migrated`).
    #[arg(long, value_name = "tiles|sled", value_parser = ["tiles", "sled"], required_unless_present = "from")]
    pub layout: Option<String>,
}

/// The PostgreSQL URL `--store` names, if any (`tiles`, `sled` or empty:
/// the embedded store in `--data`).
pub fn store_url(store: Option<&str>) -> Result<Option<String>> {
    match store.map(str::trim) {
        None | Some("") | Some("sled") | Some("tiles") => Ok(None),
        Some(s) if is_postgres_url(s) => Ok(Some(s.to_string())),
        Some(s) => Err(CliError::new(
            exit::USAGE,
            format!(
                "--store takes `tiles`, `sled` or a postgres://USER@HOST:PORT/DB URL, not {s:?}"
            ),
        )
        .into()),
    }
}

/// The embedded layout a new ledger gets from `--store`: `sled`, else
/// tiles (an existing ledger keeps the layout it has).
pub fn embedded_layout(store: Option<&str>) -> docket_log::Layout {
    match store.map(str::trim) {
        Some("sled") => docket_log::Layout::Sled,
        _ => docket_log::Layout::Tiles,
    }
}

fn pg_error(e: docket_store_pg::PgError) -> anyhow::Error {
    docket_domain::LedgerError::from(e).into()
}

/// Creates a ledger whose log lives in the database at `url`: the ledger
/// is initialised in `data` as always (ledger key, first admin key,
/// genesis event), moved into the database and verified there; `data`
/// keeps `ledger.json` and `keys/`.
fn init_into(data: &Path, url: &str, origin: Option<&str>) -> Result<InitOutcome> {
    if PgStore::holds_ledger(url).map_err(pg_error)? {
        return Err(docket_domain::LedgerError::AlreadyExists {
            what: format!("a ledger in the database {}", redact(url)),
        }
        .into());
    }
    let (ledger, info) = docket_domain::ledger::init(data, origin)?;
    ledger.close()?;
    drop(ledger);
    migrate::move_fresh_ledger::<LedgerState>(data, url)
        .with_context(|| format!("moving the new ledger into {}", redact(url)))?;
    Ok(info)
}

/// `docket init --store URL`.
pub fn run_init(data: &Path, url: &str, args: &InitArgs, out: Output) -> Result<u8> {
    crate::keyfile::require_encryption(args.encrypt)?;
    let info = init_into(data, url, args.origin.as_deref())?;
    let (config, verifier) = docket_log::sequencer::read_config(data)?;
    let value = serde_json::json!({
        "data": data,
        "store": redact(url),
        "origin": info.origin,
        "admin_key": info.admin_key_path,
        "admin_public_key": info.admin_public_key,
        "ledger_key": info.ledger_key_path,
        "verifier_key": verifier.to_vkey(),
    });
    out.emit(&value, || {
        format!(
            "initialised ledger in {} (log in {})\n  origin:        {}\n  admin key:     {} (public {})\n  verifier key:  {}\n  other nodes need {} and {}",
            data.display(),
            redact(url),
            config.origin,
            info.admin_key_path.display(),
            info.admin_public_key,
            verifier.to_vkey(),
            data.join("ledger.json").display(),
            info.ledger_key_path.display(),
        )
    });
    Ok(exit::OK)
}

/// The embedded ledger for one-shot commands: the sequencer when no server
/// holds the lease, else a read-only view (writes are refused, naming the
/// sequencer's address: use `--server`).
pub fn open_embedded(data: &Path, url: &str) -> Result<Embedded> {
    if !docket_domain::ledger::exists(data) {
        return Err(CliError::new(
            exit::MISSING,
            format!(
                "no ledger.json and ledger key in {} (run `docket init --store URL`, or copy them from a node)",
                data.display()
            ),
        )
        .into());
    }
    let store = Arc::new(PgStore::open(url).map_err(pg_error)?);
    let ledger = open_node::<LedgerState>(data, store, NodeOptions::new(Role::OneShot, "cli"))?;
    Ok(Embedded { ledger })
}

/// The PostgreSQL store at `url`, read-only (no lease), with the checkpoint
/// verifier of the data directory's `ledger.json`: what `replay` and
/// `recover` read with `--store URL`.
pub fn open_for_reading(
    data: &Path,
    url: &str,
) -> Result<(
    Arc<dyn docket_domain::store::Store>,
    docket_log::checkpoint::NoteVerifier,
)> {
    let (_, verifier) = docket_log::sequencer::read_config(data)?;
    let store: Arc<dyn docket_domain::store::Store> =
        Arc::new(PgStore::open(url).map_err(pg_error)?);
    Ok((store, verifier))
}

/// `docket serve --store URL`: opens this node's ledger (initialising the
/// database and the data directory when both are empty). The node
/// sequences if the lease is free, else it follows and takes over when the
/// sequencer goes away. It advertises `DOCKET_ADVERTISE`, else the bound
/// address, as where writers go.
pub fn open_or_init(opts: &ServeOptions, url: &str) -> Result<(Docket, Option<InitOutcome>)> {
    let options = DocketOptions {
        auto_verify: opts.auto_verify,
        ..DocketOptions::default()
    };
    let in_db = PgStore::holds_ledger(url).map_err(pg_error)?;
    let local = docket_domain::ledger::exists(&opts.data);
    let init = match (in_db, local) {
        (false, false) => Some(init_into(&opts.data, url, opts.origin.as_deref())?),
        (false, true) => {
            return Err(CliError::new(
                exit::MISSING,
                format!(
                    "{} holds a ledger but {} does not: copy it with `docket migrate --from {} --to URL`",
                    opts.data.display(),
                    redact(url),
                    opts.data.display()
                ),
            )
            .into());
        }
        (true, false) => {
            return Err(CliError::new(
                exit::MISSING,
                format!(
                    "{} holds a ledger; this node's data directory {} needs its ledger.json and \
                     keys/ledger.key (copy them from the node that ran `docket init`)",
                    redact(url),
                    opts.data.display()
                ),
            )
            .into());
        }
        (true, true) => None,
    };
    if opts.data.join("log").exists() {
        tracing::warn!(
            "{} has a sled store; with --store the log is read from {} only",
            opts.data.join("log").display(),
            redact(url)
        );
    }
    let store = Arc::new(PgStore::open(url).map_err(pg_error)?);
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    let address = std::env::var("DOCKET_ADVERTISE")
        .ok()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| format!("{scheme}://{}", opts.listen));
    let mut node = NodeOptions::new(Role::Serve, address);
    node.log = opts.ledger.clone();
    let ledger = open_node::<LedgerState>(&opts.data, store, node)?;
    if ledger.is_follower() {
        tracing::info!("following the sequencer; this node takes over if it goes away");
    }
    Ok((Docket::new(ledger, options)?, init))
}

/// `docket migrate --from A --to B`.
pub fn run_migrate(args: &MigrateArgs, data: &Path, out: Output) -> Result<u8> {
    let started = std::time::Instant::now();
    let bar = out.progress(0, "copying");
    let mut progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    if let Some(layout) = args.layout.as_deref() {
        return run_migrate_layout(layout, data, out, &mut progress, started);
    }
    let (Some(from), Some(to)) = (args.from.as_deref(), args.to.as_deref()) else {
        return Err(CliError::new(
            exit::USAGE,
            "docket migrate needs --from and --to, or --layout",
        )
        .into());
    };
    let args = Endpoints { from, to };
    let (from_pg, to_pg) = (is_postgres_url(args.from), is_postgres_url(args.to));
    let (copy, report, to_desc) = match (from_pg, to_pg) {
        (false, true) => {
            let dir = PathBuf::from(args.from);
            if !docket_domain::ledger::exists(&dir) {
                return Err(CliError::new(
                    exit::MISSING,
                    format!("no ledger in {}", dir.display()),
                )
                .into());
            }
            let (_, copy, report) =
                migrate::dir_to_postgres::<LedgerState>(&dir, args.to, &mut progress)?;
            (copy, report, redact(args.to))
        }
        (true, false) => {
            let dir = PathBuf::from(args.to);
            let (copy, report) =
                migrate::postgres_to_dir::<LedgerState>(args.from, &dir, &mut progress)?;
            copy_ledger_key(data, &dir)?;
            (copy, report, dir.display().to_string())
        }
        _ => {
            return Err(CliError::new(
                exit::USAGE,
                "docket migrate copies between a data directory and a postgres:// database \
                 (one of --from and --to must be each)",
            )
            .into());
        }
    };
    bar.finish_and_clear();
    let root = hex::encode(copy.root);
    let value = serde_json::json!({
        "from": redact(args.from),
        "to": to_desc,
        "events": copy.events,
        "checkpoints": copy.checkpoints,
        "anchor_size": copy.anchor_size,
        "root": root,
        "snapshots": copy.snapshots,
        "snapshots_rebuilt_on_open": copy.snapshots_skipped,
        "replay": {
            "events": report.events,
            "signatures_checked": report.signatures_checked,
            "root": report.root,
            "same_root": report.root == root,
        },
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(&value, || {
        format!(
            "copied {} events, {} checkpoints and the anchor (size {}) from {} to {} in {:.1}s\n\
             replayed the copy: {} events, {} signatures checked, root {} (same as the source)",
            copy.events,
            copy.checkpoints,
            copy.anchor_size,
            redact(args.from),
            to_desc,
            started.elapsed().as_secs_f64(),
            report.events,
            report.signatures_checked,
            report.root
        )
    });
    Ok(exit::OK)
}

/// `--from` and `--to` of a copy between a directory and a database.
struct Endpoints<'a> {
    from: &'a str,
    to: &'a str,
}

/// `docket migrate --layout L`: the ledger in `data` moved to layout `L`.
fn run_migrate_layout(
    layout: &str,
    data: &Path,
    out: Output,
    progress: &mut dyn FnMut(u64, u64),
    started: std::time::Instant,
) -> Result<u8> {
    let to = match layout {
        "sled" => docket_log::Layout::Sled,
        _ => docket_log::Layout::Tiles,
    };
    if !docket_domain::ledger::exists(data) {
        return Err(
            CliError::new(exit::MISSING, format!("no ledger in {}", data.display())).into(),
        );
    }
    let done = docket_log::copy::migrate_layout::<LedgerState>(data, to, progress)
        .map_err(|e| crate::served::explain(data, e.into()))?;
    let root = hex::encode(done.copy.root);
    let value = serde_json::json!({
        "data": data.display().to_string(),
        "layout": layout,
        "events": done.copy.events,
        "checkpoints": done.copy.checkpoints,
        "anchor_size": done.copy.anchor_size,
        "root": root,
        "old_store": done.old_store.display().to_string(),
        "replay": {
            "events": done.replay.events,
            "signatures_checked": done.replay.signatures_checked,
            "root": done.replay.root,
            "same_root": done.replay.root == root,
        },
        "seconds": started.elapsed().as_secs_f64(),
    });
    out.emit(&value, || {
        format!(
            "moved {} events and {} checkpoints of {} to the {layout} layout in {:.1}s\n\
             replayed the new store: {} events, {} signatures checked, root {} (same as before)\n\
             the old store is kept at {}: delete it once you no longer need it",
            done.copy.events,
            done.copy.checkpoints,
            data.display(),
            started.elapsed().as_secs_f64(),
            done.replay.events,
            done.replay.signatures_checked,
            done.replay.root,
            done.old_store.display()
        )
    });
    Ok(exit::OK)
}

/// After a copy out of the database: the ledger key is not in the
/// database; bring `keys/ledger.key` from `--data` when it belongs to this
/// ledger and the target lacks one.
fn copy_ledger_key(data: &Path, target: &Path) -> Result<()> {
    let (from, to) = (data.join("keys/ledger.key"), target.join("keys/ledger.key"));
    if to.exists() || !from.exists() || data == target {
        if !to.exists() {
            eprintln!(
                "note: copy keys/ledger.key of this ledger into {} before opening it",
                target.display()
            );
        }
        return Ok(());
    }
    let (config, _) = docket_log::sequencer::read_config(target)?;
    let key = docket_domain::keys::read_key_file(&from)?;
    if hex::encode(key.verifying_key().to_bytes()) == config.ledger_public_key {
        // An encrypted key stays encrypted (under the same passphrase).
        docket_log::keys::set_encrypt_new_keys(docket_log::keys::is_encrypted_key_file(&from)?);
        docket_domain::keys::write_key_file(&to, &key)?;
    } else {
        eprintln!(
            "note: {} belongs to another ledger; copy this ledger's key into {}",
            from.display(),
            to.display()
        );
    }
    Ok(())
}

//! Copying a ledger between a data directory and PostgreSQL, checked on the
//! way and verified by replay at the end (the copy itself is
//! [`docket_log::copy`]).

use docket_log::checkpoint::NoteVerifier;
use docket_log::{LogError, StateMachine};

pub use docket_log::copy::{CopyReport, copy_ledger, verify_copy};
use docket_log::verify::VerifyReport;

/// Copies the sled ledger in data directory `dir` into the empty database
/// at `url` and verifies the copy by replay. The directory is left as it
/// was (its `ledger.json` and `keys/` are what nodes of the PostgreSQL
/// ledger use). Returns the store (read-only: the lease is released).
pub fn dir_to_postgres<M: StateMachine>(
    dir: &std::path::Path,
    url: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(std::sync::Arc<crate::PgStore>, CopyReport, VerifyReport), LogError> {
    let (source, verifier) = docket_log::sequencer::open_store_for_verification(dir)?;
    let (config, _) = docket_log::sequencer::read_config(dir)?;
    let meta = crate::LedgerMeta {
        origin: config.origin,
        ledger_public_key: config.ledger_public_key,
    };
    let target = std::sync::Arc::new(crate::PgStore::create(url, &meta)?);
    if !target.try_lead(&crate::node::default_holder(), "migration")? {
        return Err(LogError::FailedPrecondition(
            "another process holds the new ledger's lease".into(),
        ));
    }
    let result = copy_ledger::<M>(&source, target.as_ref(), &verifier, progress).and_then(|copy| {
        let report = verify_copy::<M>(target.as_ref(), &verifier, copy.events, &copy.root)?;
        Ok((copy, report))
    });
    target.release_lease();
    let (copy, report) = result?;
    Ok((target, copy, report))
}

/// Copies the ledger in the database at `url` into a new local store (the
/// default layout) in
/// `dir` and verifies the copy by replay. `dir` must hold no store yet;
/// its `ledger.json` is written from the database when missing (the
/// ledger key is not in the database: copy `keys/ledger.key` from a node).
pub fn postgres_to_dir<M: StateMachine>(
    url: &str,
    dir: &std::path::Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(CopyReport, VerifyReport), LogError> {
    let source = crate::PgStore::open(url)?;
    let meta = source.meta().clone();
    let public = docket_log::keys::parse_public(&meta.ledger_public_key)?;
    let verifier = NoteVerifier::new(&meta.origin, public)?;
    let config_path = dir.join("ledger.json");
    if config_path.exists() {
        let (config, _) = docket_log::sequencer::read_config(dir)?;
        if config.origin != meta.origin || config.ledger_public_key != meta.ledger_public_key {
            return Err(crate::PgError::Mismatch(format!(
                "{} names another ledger than the database",
                config_path.display()
            ))
            .into());
        }
    }
    let target = docket_log::Layout::default().create_store(dir)?;
    let copy = copy_ledger::<M>(&source, target.as_ref(), &verifier, progress)?;
    let report = verify_copy::<M>(target.as_ref(), &verifier, copy.events, &copy.root)?;
    if !config_path.exists() {
        let config = docket_log::sequencer::LogConfigFile {
            origin: meta.origin,
            ledger_public_key: meta.ledger_public_key,
        };
        let text = serde_json::to_vec_pretty(&config)
            .map_err(|e| LogError::malformed("ledger.json", e.to_string()))?;
        docket_log::store::write_atomically(&config_path, &text)?;
    }
    Ok((copy, report))
}

/// Most events a directory may hold to count as freshly initialised.
const FRESH_MAX_EVENTS: u64 = 16;

/// Moves a ledger just created in `dir` (by `docket init`: a handful of
/// events) into the empty database at `url`: copies and verifies it, then
/// removes the local store from `dir` (`tiles/` or `log/`, `anchor`,
/// `snapshots/`), so
/// that `dir` keeps only what every node needs locally — `ledger.json` and
/// `keys/`. Refuses a directory that holds more than a fresh ledger (use
/// [`dir_to_postgres`], which leaves the directory alone).
pub fn move_fresh_ledger<M: StateMachine>(
    dir: &std::path::Path,
    url: &str,
) -> Result<std::sync::Arc<crate::PgStore>, LogError> {
    {
        let (source, _) = docket_log::sequencer::open_store_for_verification(dir)?;
        let len = source.len()?;
        if len > FRESH_MAX_EVENTS {
            return Err(LogError::FailedPrecondition(format!(
                "{} holds {len} events, not a fresh ledger: use `docket migrate`",
                dir.display()
            )));
        }
    }
    // sled releases its file lock a moment after the store is dropped.
    let (store, _, _) = retry_locked(|| dir_to_postgres::<M>(dir, url, &mut |_, _| {}))?;
    for name in ["log", "tiles", "snapshots"] {
        let p = dir.join(name);
        if p.exists() {
            std::fs::remove_dir_all(&p).map_err(|e| LogError::io(&p, e))?;
        }
    }
    let anchor = dir.join("anchor");
    std::fs::remove_file(&anchor).map_err(|e| LogError::io(&anchor, e))?;
    docket_log::store::sync_dir(dir)?;
    Ok(store)
}

/// Retries `f` for a few seconds while the sled store is still locked by a
/// handle that was just dropped.
fn retry_locked<T>(mut f: impl FnMut() -> Result<T, LogError>) -> Result<T, LogError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    loop {
        match f() {
            Err(LogError::Corrupt { location, detail })
                if location == "log/"
                    && detail.contains("lock")
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

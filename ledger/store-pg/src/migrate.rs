//! Copying a ledger between stores (sled directory ⇄ PostgreSQL), checked
//! on the way and verified by replay at the end.

use std::collections::HashMap;

use docket_log::checkpoint::NoteVerifier;
use docket_log::event::Event;
use docket_log::merkle::{self, Frontier, Hash};
use docket_log::store::{CommitBatch, Store};
use docket_log::verify::{LogChecker, Trust, VerifyOptions, VerifyReport, verify_log};
use docket_log::{LogError, StateMachine, snapshot};

/// Events per destination commit.
const CHUNK: u64 = 8192;

/// The persisted statement filter's snapshot name (sealed like a
/// projection; see the sequencer).
const FILTER_SNAPSHOT: &str = "statement-filter";

/// What a copy did.
#[derive(Debug, Clone)]
pub struct CopyReport {
    pub events: u64,
    pub checkpoints: u64,
    /// Root recomputed from the source's event bytes.
    pub root: Hash,
    /// Size of the anchored checkpoint copied.
    pub anchor_size: u64,
    /// Snapshots copied, and those left out (stale or not authentic: the
    /// destination rebuilds them on its first open).
    pub snapshots: Vec<String>,
    pub snapshots_skipped: Vec<String>,
}

/// Copies the ledger in `from` into the empty store `to` (which must accept
/// writes: for PostgreSQL, hold the lease): every event with its Merkle
/// nodes and statement digest, every checkpoint, the sealed snapshots of
/// `M` that verify and reflect a prefix of what is copied, and last the
/// anchor. Each event is checked as replay checks it (canonical decoding,
/// sequence, chain, time, its stored leaf); the Merkle nodes are recomputed
/// from the bytes, never copied. A damaged source is refused naming the
/// first bad sequence number (`docket recover` exports its intact prefix).
/// `progress(done, total)` is called after every chunk.
pub fn copy_ledger<M: StateMachine>(
    from: &dyn Store,
    to: &dyn Store,
    verifier: &NoteVerifier,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CopyReport, LogError> {
    if to.len()? > 0 || to.anchor()?.is_some() {
        return Err(LogError::AlreadyExists {
            what: "a ledger in the destination store".into(),
        });
    }
    let anchor = from.anchor()?.ok_or_else(|| {
        LogError::corrupt(
            "anchor",
            "the source has no anchor (latest signed checkpoint)",
        )
    })?;
    let anchored = docket_log::checkpoint::open_note(&anchor, verifier)
        .map_err(|e| LogError::corrupt("anchor", format!("the source's anchor: {e}")))?;
    let len = from.len()?;
    if anchored.size > len {
        return Err(LogError::corrupt(
            format!("event {len}"),
            format!(
                "the source holds {len} events but its anchor names {}",
                anchored.size
            ),
        ));
    }
    let mut checker = LogChecker::new();
    let mut frontier = Frontier::new();
    let mut checkpoints = 0u64;
    let mut next = 0u64;
    let mut root_at_anchor = (anchored.size == 0).then(merkle::empty_root);
    while next < len {
        let end = (next + CHUNK).min(len);
        let raw = from.event_range(next, end)?;
        let stored: HashMap<u64, Hash> = from.leaf_hashes(next, end)?.into_iter().collect();
        let mut batch = CommitBatch::default();
        for (seq, bytes) in raw {
            let at = format!("event {seq}");
            let event = Event::decode(&bytes).map_err(|e| LogError::corrupt(&at, e.to_string()))?;
            let leaf = merkle::leaf_hash(&bytes);
            if let Some(f) = checker.check_decoded(&event, leaf).first() {
                return Err(LogError::corrupt(
                    f.seq.map_or(at, |s| format!("event {s}")),
                    f.detail.clone(),
                ));
            }
            if stored.get(&seq) != Some(&leaf) {
                return Err(LogError::corrupt(
                    at,
                    "the stored Merkle leaf differs from the hash of the stored event bytes",
                ));
            }
            batch.nodes.extend(frontier.push(leaf));
            batch.statements.push((event.statement().digest(), seq));
            batch.events.push((seq, bytes));
            if frontier.size() == anchored.size {
                root_at_anchor = Some(frontier.root());
            }
        }
        if checker.len() != end {
            return Err(LogError::corrupt(
                format!("event {}", checker.len()),
                format!(
                    "events {}..{end} are missing from the source",
                    checker.len()
                ),
            ));
        }
        to.commit(&batch)?;
        let cps = from.checkpoints(next + 1, end)?;
        checkpoints += cps.len() as u64;
        if !cps.is_empty() {
            to.put_checkpoints(&cps)?;
        }
        next = end;
        progress(next, len);
    }
    if root_at_anchor != Some(anchored.root) {
        return Err(LogError::corrupt(
            format!("events 0..{}", anchored.size),
            "the root of the source's events differs from its anchored checkpoint",
        ));
    }
    let root = frontier.root();
    // Snapshots: only authentic ones that reflect a prefix of the copy (a
    // snapshot of a longer log would read as damage in the destination).
    let mut names: Vec<String> = M::default()
        .snapshot()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect();
    names.push(FILTER_SNAPSHOT.to_string());
    let mut copied = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        let Some(sealed) = from.snapshot(&name)? else {
            skipped.push(name);
            continue;
        };
        let fits = snapshot::open(&name, &sealed, &verifier.key)
            .is_ok_and(|s| s.seq <= len && merkle::root_at(to, s.seq).is_ok_and(|r| r == s.root));
        if fits {
            to.put_snapshot(&name, &sealed)?;
            copied.push(name);
        } else {
            skipped.push(name);
        }
    }
    to.put_anchor(&anchor)?;
    Ok(CopyReport {
        events: len,
        checkpoints,
        root,
        anchor_size: anchored.size,
        snapshots: copied,
        snapshots_skipped: skipped,
    })
}

/// Replays the ledger in `store` from genesis with every check
/// (`replay --verify`: signatures, chain, admission, root against the
/// anchor and the checkpoints, snapshots) and checks its root equals
/// `expected_root` at `expected_len` events.
pub fn verify_copy<M: StateMachine>(
    store: &dyn Store,
    verifier: &NoteVerifier,
    expected_len: u64,
    expected_root: &Hash,
) -> Result<VerifyReport, LogError> {
    let (report, _) = verify_log::<M>(
        store,
        Trust {
            checkpoints: verifier,
            snapshots: &verifier.key,
        },
        VerifyOptions::full(),
        &mut |_, _| {},
    )?;
    if let Some(f) = report.first_damage() {
        return Err(LogError::corrupt(
            f.seq.map_or_else(|| "log".into(), |s| format!("event {s}")),
            format!("the copy does not verify: {}", f.detail),
        ));
    }
    if report.events != expected_len || report.root != hex::encode(expected_root) {
        return Err(LogError::corrupt(
            "log",
            format!(
                "the copy replays to {} events with root {}, the source to {expected_len} with {}",
                report.events,
                report.root,
                hex::encode(expected_root)
            ),
        ));
    }
    Ok(report)
}

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

//! [`PgStore`]: the log's [`Store`] on PostgreSQL, with the sequencer lease
//! that fences every write.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use docket_log::LogError;
use docket_log::merkle::{Hash, MerkleError, NodeSource};
use docket_log::store::{CACHED_FROM_LEVEL, CommitBatch, Store};
use postgres::Client;
use sha2::{Digest as _, Sha256};

use crate::error::{PgError, Result};
use crate::pool::{self, Conn, Pool, Stmts};
use crate::schema;

/// What identifies a ledger: the checkpoint origin and the ledger public
/// key (hex), as in `ledger.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerMeta {
    pub origin: String,
    pub ledger_public_key: String,
}

/// The sequencer lease as the database records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseInfo {
    /// The fencing token of the latest holder (0: never held).
    pub token: i64,
    /// Who took it last (host and process).
    pub holder: Option<String>,
    /// Where the latest holder serves (its advertised address).
    pub address: Option<String>,
    /// Whether some session holds the lease's advisory lock right now.
    pub held: bool,
}

/// Whether this process may write, and with which fencing token.
#[derive(Debug, Clone)]
enum Fence {
    /// Not the sequencer: every write is refused.
    ReadOnly,
    /// The sequencer, with this fencing token.
    Held(i64),
    /// Was the sequencer; lost the lease (why).
    Lost(String),
}

/// The lease's dedicated session: it holds the advisory lock and pings the
/// server every second; a failed ping revokes the fence at once.
struct LeaseSession {
    stop: Arc<AtomicBool>,
    keeper: Option<JoinHandle<()>>,
}

impl Drop for LeaseSession {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
    }
}

/// The log's store in a PostgreSQL database (one ledger per database, or
/// per schema with `options=-csearch_path=NAME` in the URL).
///
/// Reads go to any connection of a small pool. Writes — commits, the
/// anchor, snapshots — need the sequencer lease ([`PgStore::try_lead`]):
/// each write transaction first takes a share lock on the lease row and
/// checks that its fencing token is still this process's, so a deposed
/// sequencer can never commit. A commit is one transaction, acknowledged
/// only once `COMMIT` returns (`synchronous_commit` on).
pub struct PgStore {
    pool: Pool,
    url: String,
    meta: LedgerMeta,
    lock_key: i64,
    fence: Arc<Mutex<Fence>>,
    lease: Mutex<Option<LeaseSession>>,
    /// The session that campaigns for the lease (becomes the lease session).
    campaign: Mutex<Option<Client>>,
    /// The anchor note the last commit of this process moved the anchor to.
    last_anchor: Mutex<Option<String>>,
    /// Complete Merkle nodes at or above [`CACHED_FROM_LEVEL`] (immutable
    /// once written, so safe to keep across processes).
    upper: RwLock<HashMap<(u8, u64), Hash>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.url)
            .field("origin", &self.meta.origin)
            .finish_non_exhaustive()
    }
}

fn to_i64(v: u64, what: &str) -> Result<i64, LogError> {
    i64::try_from(v).map_err(|_| LogError::ResourceExhausted(format!("{what} {v} exceeds 2^63")))
}

fn to_u64(v: i64, location: &str) -> Result<u64, LogError> {
    u64::try_from(v).map_err(|_| LogError::corrupt(location, format!("negative value {v}")))
}

fn hash_from(bytes: &[u8], location: impl Into<String>) -> Result<Hash, LogError> {
    bytes
        .try_into()
        .map_err(|_| LogError::corrupt(location, "not a 32-byte hash"))
}

/// Tree size named by a checkpoint note (its second line).
fn note_size(note: &str) -> Result<u64, LogError> {
    note.lines()
        .nth(1)
        .and_then(|l| l.parse().ok())
        .ok_or_else(|| LogError::malformed("checkpoint note", "no tree size on its second line"))
}

impl PgStore {
    /// Connects to the ledger in the database at `url` (read-only until
    /// [`PgStore::try_lead`]), applying schema migrations it lacks.
    pub fn open(url: &str) -> Result<Self> {
        pool::blocking(|| Self::open_blocking(url))
    }

    fn open_blocking(url: &str) -> Result<Self> {
        let config = pool::config(url)?;
        let mut client = pool::connect(&config)?;
        schema::migrate(&mut client)?;
        let meta = read_meta(&mut client)?.ok_or(PgError::NoLedger)?;
        Self::with(config, url, meta, &mut client)
    }

    /// Whether the database at `url` holds a ledger (it may not even have
    /// the schema yet).
    pub fn holds_ledger(url: &str) -> Result<bool> {
        pool::blocking(|| Self::holds_ledger_blocking(url))
    }

    fn holds_ledger_blocking(url: &str) -> Result<bool> {
        let config = pool::config(url)?;
        let mut client = pool::connect(&config)?;
        let exists: bool = client
            .query_one("SELECT to_regclass('docket_meta') IS NOT NULL", &[])
            .map_err(|e| PgError::db("looking for the ledger tables", e))?
            .get(0);
        if !exists {
            return Ok(false);
        }
        Ok(read_meta(&mut client)?.is_some())
    }

    /// Creates an empty ledger in the database at `url`: the schema
    /// (migrations), the ledger's identity and the lease row. Refuses a
    /// database that already holds a ledger (or any event). The store is
    /// read-only until [`PgStore::try_lead`].
    pub fn create(url: &str, meta: &LedgerMeta) -> Result<Self> {
        pool::blocking(|| Self::create_blocking(url, meta))
    }

    fn create_blocking(url: &str, meta: &LedgerMeta) -> Result<Self> {
        let config = pool::config(url)?;
        let mut client = pool::connect(&config)?;
        schema::migrate(&mut client)?;
        {
            let mut tx = client
                .transaction()
                .map_err(|e| PgError::db("starting create", e))?;
            tx.batch_execute("LOCK TABLE docket_meta IN EXCLUSIVE MODE")
                .map_err(|e| PgError::db("locking docket_meta", e))?;
            let existing: Option<String> = tx
                .query_opt("SELECT value FROM docket_meta WHERE key = 'origin'", &[])
                .map_err(|e| PgError::db("reading docket_meta", e))?
                .map(|r| r.get(0));
            if let Some(origin) = existing {
                return Err(PgError::Exists(format!("origin {origin}")));
            }
            let events: i64 = tx
                .query_one(
                    "SELECT count(*) FROM (SELECT 1 FROM docket_events LIMIT 1) e",
                    &[],
                )
                .map_err(|e| PgError::db("counting events", e))?
                .get(0);
            if events > 0 {
                return Err(PgError::Exists("events without a ledger identity".into()));
            }
            for (k, v) in [
                ("origin", meta.origin.as_str()),
                ("ledger_public_key", meta.ledger_public_key.as_str()),
                ("format", "docket/v1"),
            ] {
                tx.execute(
                    "INSERT INTO docket_meta (key, value) VALUES ($1, $2)",
                    &[&k, &v],
                )
                .map_err(|e| PgError::db("writing docket_meta", e))?;
            }
            tx.execute(
                "INSERT INTO docket_lease (id, token) VALUES (true, 0) ON CONFLICT (id) DO NOTHING",
                &[],
            )
            .map_err(|e| PgError::db("creating the lease row", e))?;
            tx.commit()
                .map_err(|e| PgError::db("committing create", e))?;
        }
        Self::with(config, url, meta.clone(), &mut client)
    }

    fn with(
        config: postgres::Config,
        url: &str,
        meta: LedgerMeta,
        client: &mut Client,
    ) -> Result<Self> {
        let schema: String = client
            .query_one("SELECT current_schema()", &[])
            .map_err(|e| PgError::db("reading current_schema", e))?
            .get(0);
        // One advisory lock key per ledger: the ledger's identity and the
        // schema it lives in (advisory locks are database-wide).
        let digest = Sha256::new()
            .chain_update(b"docket/v1/pg-lease\0")
            .chain_update(meta.origin.as_bytes())
            .chain_update(b"\0")
            .chain_update(meta.ledger_public_key.as_bytes())
            .chain_update(b"\0")
            .chain_update(schema.as_bytes())
            .finalize();
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[..8]);
        Ok(Self {
            pool: Pool::new(config),
            url: pool::redact(url),
            meta,
            lock_key: i64::from_be_bytes(key),
            fence: Arc::new(Mutex::new(Fence::ReadOnly)),
            lease: Mutex::new(None),
            campaign: Mutex::new(None),
            last_anchor: Mutex::new(None),
            upper: RwLock::new(HashMap::new()),
        })
    }

    /// The ledger this database holds.
    pub fn meta(&self) -> &LedgerMeta {
        &self.meta
    }

    /// The connection URL, password redacted.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// This process's fencing token, while it holds the lease.
    pub fn fencing_token(&self) -> Option<i64> {
        match &*lock(&self.fence) {
            Fence::Held(t) => Some(*t),
            _ => None,
        }
    }

    /// Whether this process holds the sequencer lease (and has not lost it).
    pub fn is_leader(&self) -> bool {
        self.fencing_token().is_some()
    }

    /// One attempt to become the sequencer: take the lease's advisory lock
    /// on a dedicated session (`pg_try_advisory_lock`, released by the
    /// server when the session ends — a killed process loses it at once),
    /// then bump the fencing token, recording `holder` and `address` (where
    /// followers send writers). The bump waits for a commit of the previous
    /// holder in flight (it holds the lease row's share lock) and every
    /// later commit of that holder fails its fencing check. Returns whether
    /// this process now holds the lease.
    pub fn try_lead(&self, holder: &str, address: &str) -> Result<bool> {
        pool::blocking(|| self.try_lead_blocking(holder, address))
    }

    fn try_lead_blocking(&self, holder: &str, address: &str) -> Result<bool> {
        if self.is_leader() {
            return Ok(true);
        }
        let mut campaign = lock(&self.campaign);
        if campaign.as_ref().is_none_or(Client::is_closed) {
            *campaign = Some(pool::connect(self.pool.config())?);
        }
        // Invariant: set just above.
        let client = campaign.as_mut().expect("campaign session");
        let got: bool = client
            .query_one("SELECT pg_try_advisory_lock($1)", &[&self.lock_key])
            .map_err(|e| PgError::db("trying the sequencer lease lock", e))?
            .get(0);
        if !got {
            return Ok(false);
        }
        let bumped = client.query_one(
            "UPDATE docket_lease SET token = token + 1, holder = $1, address = $2, \
             acquired_at = now() WHERE id RETURNING token",
            &[&holder, &address],
        );
        let token: i64 = match bumped {
            Ok(row) => row.get(0),
            Err(e) => {
                let _ = client.query_one("SELECT pg_advisory_unlock($1)", &[&self.lock_key]);
                return Err(PgError::db("bumping the fencing token", e));
            }
        };
        // Invariant: set above.
        let session = campaign.take().expect("campaign session");
        *lock(&self.fence) = Fence::Held(token);
        *lock(&self.lease) = Some(self.keep(session, token));
        tracing::info!(token, holder, address, "took the sequencer lease");
        Ok(true)
    }

    /// Starts the keeper of a won lease: it pings the lease session every
    /// second; if the session breaks, the fence is revoked at once (the
    /// server released the lock, another node may take it), so the next
    /// commit fails without waiting for the fencing check.
    fn keep(&self, mut session: Client, token: i64) -> LeaseSession {
        let stop = Arc::new(AtomicBool::new(false));
        let stop_keeper = Arc::clone(&stop);
        let fence = Arc::clone(&self.fence);
        let key = self.lock_key;
        let keeper = std::thread::Builder::new()
            .name("docket-pg-lease".into())
            .spawn(move || {
                let mut ticks = 0u32;
                while !stop_keeper.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(100));
                    ticks += 1;
                    if ticks.is_multiple_of(10)
                        && let Err(e) = session.simple_query("SELECT 1")
                    {
                        let why = format!(
                            "lost the sequencer lease (token {token}): its session to \
                             PostgreSQL ended: {e}"
                        );
                        tracing::error!("{why}");
                        revoke(&fence, why);
                        return;
                    }
                }
                let _ = session.query_one("SELECT pg_advisory_unlock($1)", &[&key]);
            });
        match keeper {
            Ok(k) => LeaseSession {
                stop,
                keeper: Some(k),
            },
            Err(e) => {
                revoke(&self.fence, format!("cannot run the lease keeper: {e}"));
                LeaseSession { stop, keeper: None }
            }
        }
    }

    /// Gives the lease up: writes are refused from now on and the lock is
    /// released (a follower takes over).
    pub fn release_lease(&self) {
        if let Fence::Held(t) = &*lock(&self.fence) {
            tracing::info!(token = t, "releasing the sequencer lease");
        }
        *lock(&self.fence) = Fence::ReadOnly;
        drop(lock(&self.lease).take());
    }

    /// The lease as the database records it.
    pub fn lease_info(&self) -> Result<LeaseInfo> {
        pool::blocking(|| self.lease_info_blocking())
    }

    fn lease_info_blocking(&self) -> Result<LeaseInfo> {
        let mut conn = self.pool.get()?;
        let c = &mut *conn;
        let row = c
            .client
            .query_opt(&c.stmts.lease, &[&self.lock_key])
            .map_err(|e| PgError::db("reading the lease", e))?;
        Ok(match row {
            Some(r) => LeaseInfo {
                token: r.get(0),
                holder: r.get(1),
                address: r.get(2),
                held: r.get(3),
            },
            None => LeaseInfo {
                token: 0,
                holder: None,
                address: None,
                held: false,
            },
        })
    }

    /// The fencing token to write with, or why this process may not write.
    fn write_token(&self) -> Result<i64, LogError> {
        match &*lock(&self.fence) {
            Fence::Held(t) => Ok(*t),
            Fence::ReadOnly => Err(LogError::Closed(
                "this node does not hold the sequencer lease: its store is read-only".into(),
            )),
            Fence::Lost(why) => Err(LogError::Closed(why.clone())),
        }
    }

    /// Runs `f` in one transaction that first checks the fencing token: a
    /// share lock on the lease row, held to COMMIT, so a new holder's bump
    /// waits for this transaction and every transaction after the bump
    /// fails the check. Returns once COMMIT returned (durable: synchronous
    /// commit).
    fn fenced<T>(
        &self,
        what: &str,
        f: impl FnOnce(&Stmts, &mut postgres::Transaction<'_>) -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        let mine = self.write_token()?;
        pool::blocking(|| self.fenced_blocking(what, mine, f))
    }

    fn fenced_blocking<T>(
        &self,
        what: &str,
        mine: i64,
        f: impl FnOnce(&Stmts, &mut postgres::Transaction<'_>) -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        let mut conn = self.pool.get()?;
        let Conn { client, stmts } = &mut *conn;
        let mut tx = client
            .transaction()
            .map_err(|e| db(format!("starting {what}"), e))?;
        let current: Option<i64> = tx
            .query_opt(&stmts.fence, &[])
            .map_err(|e| db(format!("checking the fencing token ({what})"), e))?
            .map(|r| r.get(0));
        if current != Some(mine) {
            drop(tx);
            let why = format!(
                "deposed: another node took the sequencer lease (fencing token {} after {mine}); \
                 this node may no longer write",
                current.map_or_else(|| "missing".into(), |t| t.to_string())
            );
            tracing::error!("{why}");
            revoke(&self.fence, why.clone());
            return Err(LogError::Closed(why));
        }
        let out = f(stmts, &mut tx)?;
        tx.commit()
            .map_err(|e| db(format!("committing {what}"), e))?;
        Ok(out)
    }

    /// Runs a read on a pooled connection.
    fn read<T>(
        &self,
        f: impl FnOnce(&Stmts, &mut Client) -> Result<T, postgres::Error>,
        what: &str,
    ) -> Result<T, LogError> {
        pool::blocking(|| {
            let mut conn = self.pool.get()?;
            let Conn { client, stmts } = &mut *conn;
            f(stmts, client).map_err(|e| db(what, e))
        })
    }

    /// What a failed `docket_commit` means: its own refusals carry the
    /// SQLSTATEs of schema version 2.
    fn commit_error(&self, e: postgres::Error) -> LogError {
        let detail = e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_string());
        match e.code().map(postgres::error::SqlState::code) {
            Some("DK001") => {
                let why = format!("{detail}; this node may no longer write");
                tracing::error!("{why}");
                revoke(&self.fence, why.clone());
                LogError::Closed(why)
            }
            Some("DK002") => LogError::corrupt("checkpoints", detail),
            Some("DK003") => LogError::corrupt("anchor", detail),
            _ => db("committing", e),
        }
    }

    /// Whether the anchor already covers `note` (of tree size `size`): it is
    /// `note`, or it names a larger tree and `note` is the checkpoint stored
    /// for `size`. An anchor ahead of `note` with another checkpoint stored
    /// for `size` is refused: it never moves back, nor to another root.
    fn anchor_covers(&self, size: u64, note: &str) -> Result<bool, LogError> {
        let Some(current) = self.anchor()? else {
            return Ok(false);
        };
        if current == note {
            return Ok(true);
        }
        let current_size = note_size(&current)?;
        if current_size < size {
            return Ok(false);
        }
        match self.checkpoint(Some(size))? {
            Some((_, stored)) if stored == note => Ok(true),
            _ => Err(LogError::corrupt(
                "anchor",
                format!(
                    "the anchor names tree size {current_size} and the checkpoint stored for \
                     size {size} is not this note: an anchor never moves back, nor to another \
                     root"
                ),
            )),
        }
    }

    fn cache_upper(&self, nodes: impl IntoIterator<Item = (u8, u64, Hash)>) {
        let mut upper = self
            .upper
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (level, index, hash) in nodes {
            if level >= CACHED_FROM_LEVEL {
                upper.insert((level, index), hash);
            }
        }
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // The lease session first (its keeper unlocks and closes it), then
        // the campaign session, off any async runtime.
        drop(lock(&self.lease).take());
        if let Some(c) = lock(&self.campaign).take() {
            pool::drop_clients(vec![c]);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Revokes the right to write (the lease was lost), keeping the first
/// reason.
fn revoke(fence: &Mutex<Fence>, why: String) {
    let mut f = lock(fence);
    if matches!(*f, Fence::Held(_)) {
        *f = Fence::Lost(why);
    }
}

fn db(context: impl Into<String>, e: postgres::Error) -> LogError {
    PgError::db(context, e).into()
}

fn read_meta(client: &mut Client) -> Result<Option<LedgerMeta>> {
    let rows = client
        .query("SELECT key, value FROM docket_meta", &[])
        .map_err(|e| PgError::db("reading docket_meta", e))?;
    let mut origin = None;
    let mut public = None;
    for r in rows {
        let k: String = r.get(0);
        let v: String = r.get(1);
        match k.as_str() {
            "origin" => origin = Some(v),
            "ledger_public_key" => public = Some(v),
            _ => {}
        }
    }
    Ok(match (origin, public) {
        (Some(origin), Some(ledger_public_key)) => Some(LedgerMeta {
            origin,
            ledger_public_key,
        }),
        _ => None,
    })
}

impl NodeSource for PgStore {
    fn node(&self, level: u8, index: u64) -> Result<Hash, MerkleError> {
        if level >= CACHED_FROM_LEVEL
            && let Some(h) = self
                .upper
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&(level, index))
        {
            return Ok(*h);
        }
        let Ok(idx) = i64::try_from(index) else {
            return Err(MerkleError::MissingNode { level, index });
        };
        let source = |e: LogError| MerkleError::Source {
            level,
            index,
            source: Box::new(e),
        };
        let row = self
            .read(
                |s, c| c.query_opt(&s.node, &[&i16::from(level), &idx]),
                "reading a Merkle node",
            )
            .map_err(source)?;
        let Some(row) = row else {
            return Err(MerkleError::MissingNode { level, index });
        };
        let hash = hash_from(
            row.get::<_, &[u8]>(0),
            format!("Merkle node ({level}, {index})"),
        )
        .map_err(source)?;
        self.cache_upper([(level, index, hash)]);
        Ok(hash)
    }
}

impl Store for PgStore {
    fn commit(&self, batch: &CommitBatch) -> Result<(), LogError> {
        let mut seqs = Vec::with_capacity(batch.events.len());
        let mut bytes: Vec<&[u8]> = Vec::with_capacity(batch.events.len());
        for (seq, b) in &batch.events {
            seqs.push(to_i64(*seq, "sequence number")?);
            bytes.push(b);
        }
        let mut levels = Vec::with_capacity(batch.nodes.len());
        let mut idxs = Vec::with_capacity(batch.nodes.len());
        let mut hashes: Vec<&[u8]> = Vec::with_capacity(batch.nodes.len());
        for (level, index, hash) in &batch.nodes {
            levels.push(i16::from(*level));
            idxs.push(to_i64(*index, "Merkle node index")?);
            hashes.push(hash);
        }
        let mut digests: Vec<&[u8]> = Vec::with_capacity(batch.statements.len());
        let mut digest_seqs = Vec::with_capacity(batch.statements.len());
        for (digest, seq) in &batch.statements {
            digests.push(digest);
            digest_seqs.push(to_i64(*seq, "sequence number")?);
        }
        let (size, note) = match &batch.checkpoint {
            Some((size, note)) => (Some(to_i64(*size, "tree size")?), Some(note.as_str())),
            None => (None, None),
        };
        let mine = self.write_token()?;
        // One round trip: `docket_commit` checks the fencing token under a
        // share lock of the lease row, inserts everything, stores the
        // checkpoint and moves the anchor, in the statement's own
        // transaction; it returns once COMMIT is durable.
        pool::blocking(|| {
            let mut conn = self.pool.get()?;
            let Conn { client, stmts } = &mut *conn;
            client
                .execute(
                    &stmts.commit,
                    &[
                        &mine,
                        &seqs,
                        &bytes,
                        &levels,
                        &idxs,
                        &hashes,
                        &digests,
                        &digest_seqs,
                        &size,
                        &note,
                    ],
                )
                .map_err(|e| self.commit_error(e))
        })?;
        if let Some(note) = note {
            *lock(&self.last_anchor) = Some(note.to_string());
        }
        self.cache_upper(batch.nodes.iter().copied());
        Ok(())
    }

    fn commit_anchored(&self, batch: &CommitBatch) -> Result<bool, LogError> {
        // `docket_commit` moves the anchor to the batch's checkpoint in the
        // commit's own transaction.
        self.commit(batch)?;
        Ok(batch.checkpoint.is_some())
    }

    fn len(&self) -> Result<u64, LogError> {
        let n: i64 = self
            .read(|s, c| c.query_one(&s.len, &[]), "counting events")?
            .get(0);
        to_u64(n, "docket_events")
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LogError> {
        let Ok(seq) = i64::try_from(seq) else {
            return Ok(None);
        };
        Ok(self
            .read(|s, c| c.query_opt(&s.event, &[&seq]), "reading an event")?
            .map(|r| r.get(0)))
    }

    fn event_range(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
        if from >= to {
            return Ok(Vec::new());
        }
        let from = to_i64(from, "sequence number")?;
        let to = i64::try_from(to).unwrap_or(i64::MAX);
        let rows = self.read(|s, c| c.query(&s.events, &[&from, &to]), "reading events")?;
        rows.into_iter()
            .map(|r| Ok((to_u64(r.get(0), "docket_events.seq")?, r.get(1))))
            .collect()
    }

    fn statement_seq(&self, digest: &Hash) -> Result<Option<u64>, LogError> {
        let d: &[u8] = digest;
        self.read(
            |s, c| c.query_opt(&s.statement_seq, &[&d]),
            "reading the statement index",
        )?
        .map(|r| to_u64(r.get(0), "docket_statements.seq"))
        .transpose()
    }

    fn for_each_statement(&self, f: &mut dyn FnMut(Hash)) -> Result<(), LogError> {
        pool::blocking(|| self.for_each_statement_blocking(f))
    }

    fn leaf_hashes(&self, from: u64, to: u64) -> Result<Vec<(u64, Hash)>, LogError> {
        if from >= to {
            return Ok(Vec::new());
        }
        let from = to_i64(from, "sequence number")?;
        let to = i64::try_from(to).unwrap_or(i64::MAX);
        let rows = self.read(
            |s, c| c.query(&s.leaves, &[&from, &to]),
            "reading Merkle leaves",
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let seq = to_u64(r.get(0), "docket_nodes.idx")?;
            if let Ok(h) = <[u8; 32]>::try_from(r.get::<_, &[u8]>(1)) {
                out.push((seq, h));
            }
        }
        Ok(out)
    }

    fn checkpoint(&self, size: Option<u64>) -> Result<Option<(u64, String)>, LogError> {
        match size {
            Some(size) => {
                let Ok(s) = i64::try_from(size) else {
                    return Ok(None);
                };
                Ok(self
                    .read(
                        |st, c| c.query_opt(&st.checkpoint_note, &[&s]),
                        "reading a checkpoint",
                    )?
                    .map(|r| (size, r.get(0))))
            }
            None => self
                .read(
                    |s, c| c.query_opt(&s.checkpoint_latest, &[]),
                    "reading the latest checkpoint",
                )?
                .map(|r| Ok((to_u64(r.get(0), "docket_checkpoints.size")?, r.get(1))))
                .transpose(),
        }
    }

    fn checkpoints(&self, from: u64, to: u64) -> Result<Vec<(u64, String)>, LogError> {
        if from > to {
            return Ok(Vec::new());
        }
        let Ok(from) = i64::try_from(from) else {
            return Ok(Vec::new());
        };
        let to = i64::try_from(to).unwrap_or(i64::MAX);
        let rows = self.read(
            |s, c| c.query(&s.checkpoints, &[&from, &to]),
            "reading checkpoints",
        )?;
        rows.into_iter()
            .map(|r| Ok((to_u64(r.get(0), "docket_checkpoints.size")?, r.get(1))))
            .collect()
    }

    fn put_checkpoints(&self, checkpoints: &[(u64, String)]) -> Result<(), LogError> {
        let rows = checkpoints
            .iter()
            .map(|(size, note)| Ok((to_i64(*size, "tree size")?, note)))
            .collect::<Result<Vec<_>, LogError>>()?;
        self.fenced("storing checkpoints", |s, tx| {
            for (size, note) in &rows {
                insert_checkpoint(s, tx, *size, note)?;
            }
            Ok(())
        })
    }

    fn put_snapshot(&self, name: &str, bytes: &[u8]) -> Result<(), LogError> {
        self.fenced("storing a snapshot", |s, tx| {
            tx.execute(&s.put_snapshot, &[&name, &bytes])
                .map_err(|e| db("storing a snapshot", e))?;
            Ok(())
        })
    }

    fn snapshot(&self, name: &str) -> Result<Option<Vec<u8>>, LogError> {
        Ok(self
            .read(
                |s, c| c.query_opt(&s.snapshot, &[&name]),
                "reading a snapshot",
            )?
            .map(|r| r.get(0)))
    }

    fn anchor(&self) -> Result<Option<String>, LogError> {
        Ok(self
            .read(|s, c| c.query_opt(&s.anchor, &[]), "reading the anchor")?
            .map(|r| r.get(0)))
    }

    /// [`Store::rebuild_derived_tree`]: every Merkle node recomputed from
    /// the event bytes, and, only if they give `root` at `size`, each row
    /// of `docket_nodes` that differs (or is missing) written again in one
    /// fenced transaction (and in the cache of upper levels). Needs the
    /// sequencer lease; reads every event.
    fn rebuild_derived_tree(
        &self,
        size: u64,
        root: &Hash,
    ) -> Result<Option<Vec<String>>, LogError> {
        let stored = |level: u8, from: u64, to: u64| -> Result<Vec<(u64, Hash)>, LogError> {
            let (level, from, to) = (
                i16::from(level),
                to_i64(from, "Merkle node index")?,
                to_i64(to, "Merkle node index")?,
            );
            self.read(
                |_, c| {
                    c.query(
                        "SELECT idx, hash FROM docket_nodes \
                         WHERE level = $1 AND idx >= $2 AND idx < $3 ORDER BY idx",
                        &[&level, &from, &to],
                    )
                },
                "reading Merkle nodes",
            )?
            .into_iter()
            .map(|r| {
                let bytes: Vec<u8> = r.get(1);
                Ok((
                    to_u64(r.get(0), "docket_nodes.idx")?,
                    hash_from(&bytes, "docket_nodes.hash")?,
                ))
            })
            .collect()
        };
        let Some(differing) =
            docket_log::store::derived_tree_differences(self, size, root, &stored)?
        else {
            return Ok(None);
        };
        if differing.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let rows = differing
            .iter()
            .map(|(level, index, hash)| {
                Ok((
                    i16::from(*level),
                    to_i64(*index, "Merkle node index")?,
                    hash.to_vec(),
                ))
            })
            .collect::<Result<Vec<_>, LogError>>()?;
        self.fenced("rewriting Merkle nodes", |_, tx| {
            for (level, index, hash) in &rows {
                tx.execute(
                    "INSERT INTO docket_nodes (level, idx, hash) VALUES ($1, $2, $3) \
                     ON CONFLICT (level, idx) DO UPDATE SET hash = EXCLUDED.hash",
                    &[level, index, hash],
                )
                .map_err(|e| db("rewriting a Merkle node", e))?;
            }
            Ok(())
        })?;
        self.cache_upper(differing.iter().copied());
        let named = docket_log::store::name_nodes("docket_nodes:", &differing);
        tracing::warn!(
            "PostgreSQL store: {} differed from the event bytes, which give the signed root; rewritten from them",
            named.join(", ")
        );
        Ok(Some(named))
    }

    fn put_anchor(&self, note: &str) -> Result<(), LogError> {
        let size = note_size(note)?;
        // Usually already done: the commit it covers moved the anchor (and
        // a pipelined later commit may have moved it further).
        if lock(&self.last_anchor).as_deref() == Some(note) || self.anchor_covers(size, note)? {
            return Ok(());
        }
        let db_size = to_i64(size, "tree size")?;
        let moved = self.fenced("replacing the anchor", |s, tx| {
            Ok(tx
                .execute(&s.put_anchor, &[&db_size, &note])
                .map_err(|e| db("replacing the anchor", e))?
                == 1)
        })?;
        if moved || self.anchor_covers(size, note)? {
            Ok(())
        } else {
            Err(LogError::corrupt(
                "anchor",
                format!("the anchor could not move to tree size {size}"),
            ))
        }
    }
}

impl PgStore {
    fn for_each_statement_blocking(&self, f: &mut dyn FnMut(Hash)) -> Result<(), LogError> {
        let mut conn = self.pool.get()?;
        let Conn { client, stmts } = &mut *conn;
        let mut tx = client
            .transaction()
            .map_err(|e| db("scanning statement digests", e))?;
        let portal = tx
            .bind(&stmts.all_statements, &[])
            .map_err(|e| db("scanning statement digests", e))?;
        loop {
            let rows = tx
                .query_portal(&portal, 50_000)
                .map_err(|e| db("scanning statement digests", e))?;
            if rows.is_empty() {
                break;
            }
            for r in rows {
                if let Ok(d) = <[u8; 32]>::try_from(r.get::<_, &[u8]>(0)) {
                    f(d);
                }
            }
        }
        tx.commit().map_err(|e| db("scanning statement digests", e))
    }
}

/// Stores the checkpoint of `size`, or finds the same note already stored.
/// A different note for a stored size is refused: never two checkpoints of
/// one size, whichever node signed them.
fn insert_checkpoint(
    s: &Stmts,
    tx: &mut postgres::Transaction<'_>,
    size: i64,
    note: &str,
) -> Result<(), LogError> {
    let inserted = tx
        .query_opt(&s.insert_checkpoint, &[&size, &note])
        .map_err(|e| db("inserting a checkpoint", e))?;
    if inserted.is_some() {
        return Ok(());
    }
    let existing: Option<String> = tx
        .query_opt(&s.checkpoint_note, &[&size])
        .map_err(|e| db("reading a checkpoint", e))?
        .map(|r| r.get(0));
    if existing.as_deref() == Some(note) {
        Ok(())
    } else {
        Err(LogError::corrupt(
            format!("checkpoint {size}"),
            "a different signed checkpoint of this size is stored: refusing a second root \
             for one tree size",
        ))
    }
}

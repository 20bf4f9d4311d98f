//! A small pool of synchronous PostgreSQL connections, each with its
//! prepared statements.

use std::sync::Mutex;
use std::time::Duration;

use postgres::{Client, Config, NoTls, Statement};

use crate::error::{PgError, Result};

/// Connections kept idle at most (more may be open while in use).
const MAX_IDLE: usize = 16;

/// One connection and the statements prepared on it.
pub(crate) struct Conn {
    pub(crate) client: Client,
    pub(crate) stmts: Stmts,
}

/// Every statement the store runs, prepared once per connection (prepared
/// statements are session-level: transactions do not undo them).
pub(crate) struct Stmts {
    pub(crate) fence: Statement,
    pub(crate) commit: Statement,
    pub(crate) insert_checkpoint: Statement,
    pub(crate) checkpoint_note: Statement,
    pub(crate) len: Statement,
    pub(crate) event: Statement,
    pub(crate) events: Statement,
    pub(crate) statement_seq: Statement,
    pub(crate) all_statements: Statement,
    pub(crate) node: Statement,
    pub(crate) leaves: Statement,
    pub(crate) checkpoint_latest: Statement,
    pub(crate) checkpoints: Statement,
    pub(crate) put_snapshot: Statement,
    pub(crate) snapshot: Statement,
    pub(crate) anchor: Statement,
    pub(crate) put_anchor: Statement,
    pub(crate) lease: Statement,
}

impl Stmts {
    fn prepare(client: &mut Client) -> Result<Self> {
        let mut p = |sql: &str| {
            client
                .prepare(sql)
                .map_err(|e| PgError::db(format!("preparing `{sql}`"), e))
        };
        Ok(Self {
            fence: p("SELECT token FROM docket_lease WHERE id FOR SHARE")?,
            commit: p("SELECT docket_commit($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)")?,
            insert_checkpoint: p(
                "INSERT INTO docket_checkpoints (size, note) VALUES ($1, $2) \
                 ON CONFLICT (size) DO NOTHING RETURNING size",
            )?,
            checkpoint_note: p("SELECT note FROM docket_checkpoints WHERE size = $1")?,
            len: p("SELECT COALESCE(MAX(seq) + 1, 0) FROM docket_events")?,
            event: p("SELECT bytes FROM docket_events WHERE seq = $1")?,
            events: p(
                "SELECT seq, bytes FROM docket_events WHERE seq >= $1 AND seq < $2 \
                 ORDER BY seq",
            )?,
            statement_seq: p("SELECT seq FROM docket_statements WHERE digest = $1")?,
            all_statements: p("SELECT digest FROM docket_statements")?,
            node: p("SELECT hash FROM docket_nodes WHERE level = $1 AND idx = $2")?,
            leaves: p(
                "SELECT idx, hash FROM docket_nodes WHERE level = 0 AND idx >= $1 \
                 AND idx < $2 ORDER BY idx",
            )?,
            checkpoint_latest: p("SELECT size, note FROM docket_checkpoints \
                 ORDER BY size DESC LIMIT 1")?,
            checkpoints: p("SELECT size, note FROM docket_checkpoints \
                 WHERE size >= $1 AND size <= $2 ORDER BY size")?,
            put_snapshot: p(
                "INSERT INTO docket_snapshots (name, bytes) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET bytes = EXCLUDED.bytes, updated_at = now()",
            )?,
            snapshot: p("SELECT bytes FROM docket_snapshots WHERE name = $1")?,
            anchor: p("SELECT note FROM docket_anchor WHERE id")?,
            put_anchor: p(
                "INSERT INTO docket_anchor (id, size, note) VALUES (true, $1, $2) \
                 ON CONFLICT (id) DO UPDATE SET size = EXCLUDED.size, note = EXCLUDED.note, \
                 updated_at = now() WHERE docket_anchor.size <= EXCLUDED.size",
            )?,
            lease: p(
                "SELECT l.token, l.holder, l.address, EXISTS (SELECT 1 FROM pg_locks k \
                 WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 1 \
                 AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
                 AND k.classid = (($1::bigint >> 32) & 4294967295)::oid \
                 AND k.objid = ($1::bigint & 4294967295)::oid) \
                 FROM docket_lease l WHERE l.id",
            )?,
        })
    }
}

pub(crate) struct Pool {
    config: Config,
    idle: Mutex<Vec<Conn>>,
}

/// A connection borrowed from the pool; returned on drop unless it broke.
pub(crate) struct Pooled<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        // Invariant: `conn` is Some until drop.
        self.conn.as_ref().expect("pooled connection present")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        // Invariant: `conn` is Some until drop.
        self.conn.as_mut().expect("pooled connection present")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if conn.client.is_closed() {
                drop_clients(vec![conn.client]);
                return;
            }
            let mut idle = self
                .pool
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if idle.len() < MAX_IDLE {
                idle.push(conn);
            } else {
                drop(idle);
                drop_clients(vec![conn.client]);
            }
        }
    }
}

/// Parses a `postgres://USER@HOST:PORT/DB` URL (or key=value string) and
/// sets what Docket relies on: a connect timeout and TCP keepalives, so a
/// dead peer is noticed in seconds rather than hours.
pub(crate) fn config(url: &str) -> Result<Config> {
    let mut config: Config = url
        .parse()
        .map_err(|e: postgres::Error| PgError::Url(format!("{}: {e}", redact(url))))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    config
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(5))
        .keepalives_interval(Duration::from_secs(1))
        .keepalives_retries(5);
    if config.get_application_name().is_none() {
        config.application_name("docket");
    }
    Ok(config)
}

/// Opens one connection and makes sure a commit is acknowledged only once
/// durable: `synchronous_commit = off` (which acknowledges before the WAL
/// flush) is raised to `on`; a server with `fsync = off` is warned about.
pub(crate) fn connect(config: &Config) -> Result<Client> {
    let mut client = config
        .connect(NoTls)
        .map_err(|e| PgError::db("connecting", e))?;
    let sync: String = client
        .query_one("SHOW synchronous_commit", &[])
        .map_err(|e| PgError::db("reading synchronous_commit", e))?
        .get(0);
    if sync == "off" {
        client
            .batch_execute("SET synchronous_commit TO on")
            .map_err(|e| PgError::db("setting synchronous_commit", e))?;
    }
    let fsync: String = client
        .query_one("SHOW fsync", &[])
        .map_err(|e| PgError::db("reading fsync", e))?
        .get(0);
    if fsync != "on" {
        tracing::warn!("the PostgreSQL server runs with fsync = {fsync}: commits are not durable");
    }
    Ok(client)
}

impl Pool {
    pub(crate) fn new(config: Config) -> Self {
        Self {
            config,
            idle: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// An idle connection, or a new one.
    pub(crate) fn get(&self) -> Result<Pooled<'_>> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let conn = match idle {
            Some(c) if !c.client.is_closed() => c,
            _ => {
                let mut client = connect(&self.config)?;
                let stmts = Stmts::prepare(&mut client)?;
                Conn { client, stmts }
            }
        };
        Ok(Pooled {
            pool: self,
            conn: Some(conn),
        })
    }
}

/// Runs `f`, which blocks on the database, safely from any thread. The
/// blocking client drives its own runtime, which tokio refuses to start on
/// a thread that is running async tasks; a server may call the store from
/// one (the log's API is blocking and meant for the blocking pool, but a
/// handler may forget). On a multi-threaded runtime's worker the call
/// steps out with `block_in_place`; elsewhere (the blocking pool, plain
/// threads) it runs directly. (From a current-thread runtime's task, use
/// `spawn_blocking`.)
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Drops connections off any async runtime (closing one blocks on the
/// client's own runtime).
pub(crate) fn drop_clients(clients: Vec<Client>) {
    if clients.is_empty() {
        return;
    }
    if tokio::runtime::Handle::try_current().is_ok() {
        let _ = std::thread::Builder::new()
            .name("docket-pg-close".into())
            .spawn(move || drop(clients));
    } else {
        drop(clients);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let idle = std::mem::take(
            self.idle
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        drop_clients(idle.into_iter().map(|c| c.client).collect());
    }
}

/// `url` with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

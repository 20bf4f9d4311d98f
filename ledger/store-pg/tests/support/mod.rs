//! Shared by the store tests: a toy state machine, and each backend (the
//! tile store, the sled store, the PostgreSQL store on a throwaway server)
//! behind one interface, so one test body runs against all of them.

#![allow(dead_code)] // reason: each test file uses part of it

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use docket_log::event::Statement;
use docket_log::machine::{AdmitContext, StateMachine};
use docket_log::store::{SledStore, Store};
use docket_log::tiles::TileStore;
use docket_log::{Event, Layout, Log, LogError, LogOptions};
use docket_store_pg::scratch::ScratchPostgres;
use docket_store_pg::{LedgerMeta, NodeOptions, PgStore, Role};
use ed25519_dalek::SigningKey;

/// `name=value` registers; admission refuses `deny`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registers {
    pub values: BTreeMap<String, String>,
    pub events: u64,
}

impl StateMachine for Registers {
    type Admitted = ();

    fn admit(&self, statement: &Statement, _at: &AdmitContext) -> docket_log::Result<()> {
        match std::str::from_utf8(&statement.payload)
            .ok()
            .and_then(|t| t.split_once('='))
        {
            Some((_, "deny")) => Err(LogError::FailedPrecondition("deny".into())),
            Some(_) => Ok(()),
            None => Err(LogError::Invalid {
                what: "toy.set".into(),
                violations: vec!["payload must be name=value".into()],
            }),
        }
    }

    fn apply(&mut self, event: &Event) -> docket_log::Result<()> {
        let text = std::str::from_utf8(&event.payload)
            .map_err(|_| LogError::corrupt(format!("event {}", event.seq), "not UTF-8"))?;
        let (k, v) = text
            .split_once('=')
            .ok_or_else(|| LogError::corrupt(format!("event {}", event.seq), "no ="))?;
        self.values.insert(k.into(), v.into());
        self.events += 1;
        Ok(())
    }

    fn snapshot(&self) -> Vec<(&'static str, Vec<u8>)> {
        let values: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        vec![
            ("values", values.join("\n").into_bytes()),
            ("count", self.events.to_string().into_bytes()),
        ]
    }

    fn restore(_seq: u64, parts: &[(String, Vec<u8>)]) -> docket_log::Result<Self> {
        let mut s = Registers::default();
        for (name, bytes) in parts {
            let text = std::str::from_utf8(bytes).map_err(|_| LogError::corrupt(name, "utf8"))?;
            match name.as_str() {
                "values" => {
                    for line in text.lines().filter(|l| !l.is_empty()) {
                        let (k, v) = line
                            .split_once('=')
                            .ok_or_else(|| LogError::corrupt(name, "line"))?;
                        s.values.insert(k.into(), v.into());
                    }
                }
                "count" => s.events = text.parse().map_err(|_| LogError::corrupt(name, "n"))?,
                _ => return Err(LogError::corrupt(name, "unknown part")),
            }
        }
        Ok(s)
    }
}

pub type ToyLog = Log<Registers>;

pub fn author(n: u8) -> SigningKey {
    SigningKey::from_bytes(&[n; 32])
}

pub fn set(name: &str, value: &str, key: &SigningKey) -> Statement {
    Statement::sign("toy.set", format!("{name}={value}").into_bytes(), key)
}

/// The scratch server, or None after printing why the PostgreSQL half of
/// a test is skipped.
pub fn postgres() -> Option<&'static ScratchPostgres> {
    match ScratchPostgres::shared() {
        Ok(pg) => Some(pg),
        Err(why) => {
            println!("SKIPPED: no PostgreSQL ({why})");
            None
        }
    }
}

/// Which store a test body runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sled,
    Tiles,
    Postgres,
}

/// One backend: a data directory (ledger key and `ledger.json`; for sled
/// also the store) and, for PostgreSQL, a fresh database.
pub struct Backend {
    pub kind: Kind,
    pub dir: tempfile::TempDir,
    pub url: Option<String>,
}

/// Every backend available here: sled and tiles always, PostgreSQL when a server
/// can be started (else `SKIPPED` is printed for it).
pub fn backends() -> Vec<Backend> {
    let mut out = vec![
        Backend {
            kind: Kind::Sled,
            dir: tempfile::tempdir().expect("temp dir"),
            url: None,
        },
        Backend {
            kind: Kind::Tiles,
            dir: tempfile::tempdir().expect("temp dir"),
            url: None,
        },
    ];
    if let Some(pg) = postgres() {
        out.push(Backend {
            kind: Kind::Postgres,
            dir: tempfile::tempdir().expect("temp dir"),
            url: Some(pg.fresh_database("conformance").expect("scratch database")),
        });
    }
    out
}

pub fn opts() -> LogOptions {
    LogOptions::default()
}

/// Options creating a ledger of `layout`.
pub fn opts_for(layout: Layout) -> LogOptions {
    LogOptions {
        layout,
        ..LogOptions::default()
    }
}

impl Backend {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn url(&self) -> &str {
        self.url.as_deref().expect("a PostgreSQL backend")
    }

    /// An empty store that accepts writes (on PostgreSQL: holding the
    /// lease).
    pub fn raw_store(&self) -> Arc<dyn Store> {
        match self.kind {
            Kind::Sled => Arc::new(SledStore::create(self.path()).expect("sled store")),
            Kind::Tiles => Arc::new(TileStore::create(self.path()).expect("tile store")),
            Kind::Postgres => {
                let store = PgStore::create(
                    self.url(),
                    &LedgerMeta {
                        origin: "toy.example/raw".into(),
                        ledger_public_key: hex::encode([7u8; 32]),
                    },
                )
                .expect("pg store");
                assert!(store.try_lead("test", "nowhere").expect("lease"));
                Arc::new(store)
            }
        }
    }

    /// A new toy ledger on this backend (on PostgreSQL: created in the
    /// directory, then moved into the database, as `docket init --store`).
    pub fn create(&self) -> ToyLog {
        let layout = match self.kind {
            Kind::Sled => Layout::Sled,
            Kind::Tiles | Kind::Postgres => Layout::Tiles,
        };
        let log =
            ToyLog::create(self.path(), Some("toy.example/log"), opts_for(layout)).expect("create");
        match self.kind {
            Kind::Sled | Kind::Tiles => log,
            Kind::Postgres => {
                log.close().expect("close");
                drop(log);
                docket_store_pg::migrate::move_fresh_ledger::<Registers>(self.path(), self.url())
                    .expect("move into PostgreSQL");
                self.open().expect("open on PostgreSQL")
            }
        }
    }

    /// Opens the ledger (the sequencer, on PostgreSQL: it takes the lease,
    /// waiting a little for a killed holder's session to end).
    pub fn open(&self) -> docket_log::Result<ToyLog> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let r = match self.kind {
                Kind::Sled | Kind::Tiles => ToyLog::open(self.path(), opts()),
                Kind::Postgres => {
                    let store = Arc::new(PgStore::open(self.url())?);
                    let log = docket_store_pg::open_node::<Registers>(
                        self.path(),
                        store,
                        NodeOptions::new(Role::OneShot, "test"),
                    )?;
                    if log.is_follower() {
                        Err(LogError::Closed("the lease is still held".into()))
                    } else {
                        Ok(log)
                    }
                }
            };
            match r {
                Err(LogError::Closed(_)) | Err(LogError::Corrupt { .. })
                    if std::time::Instant::now() < deadline && self.locked(&r) =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                other => return other,
            }
        }
    }

    fn locked(&self, r: &docket_log::Result<ToyLog>) -> bool {
        match r {
            Err(LogError::Closed(why)) => why.contains("lease"),
            Err(LogError::Corrupt { location, detail }) => {
                location == "log/" && detail.contains("lock")
            }
            _ => false,
        }
    }

    /// The closed ledger's store opened to read what damage left
    /// (`docket recover`'s way: the tile store even without its commit
    /// log).
    pub fn salvage_store(&self) -> Arc<dyn Store> {
        match self.kind {
            Kind::Sled => Arc::new(SledStore::open(self.path()).expect("sled store")),
            Kind::Tiles => Arc::new(TileStore::open_to_salvage(self.path()).expect("tile store")),
            Kind::Postgres => Arc::new(PgStore::open(self.url()).expect("pg store")),
        }
    }

    /// Deletes event `seq` from the store (the ledger is closed). In a tile
    /// bundle, which holds its events in order, the ones after it go too.
    pub fn delete_event(&self, seq: u64) {
        match self.kind {
            Kind::Tiles => {
                let (path, at, _) = self.locate_entry(seq);
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.set_len((at - 2) as u64).expect("cut the bundle");
            }
            Kind::Sled => {
                let store = SledStore::open(self.path()).expect("open sled");
                let mut k = vec![b'e'];
                k.extend_from_slice(&seq.to_be_bytes());
                store.raw_tree().remove(k).expect("remove");
                store.sync().expect("sync");
            }
            Kind::Postgres => {
                let n = self.sql(&format!("DELETE FROM docket_events WHERE seq = {seq}"));
                assert_eq!(n, 1);
            }
        }
    }

    /// Where event `seq` lies in its tile bundle: (file, offset of its
    /// bytes, length).
    fn locate_entry(&self, seq: u64) -> (std::path::PathBuf, usize, usize) {
        let (path, offset, len) = TileStore::locate_entry(self.path(), seq).expect("locate");
        (path, offset as usize, len)
    }

    /// Flips one payload bit of event `seq` in the store (closed ledger).
    pub fn rewrite_event(&self, seq: u64) {
        match self.kind {
            Kind::Tiles => {
                let (path, at, len) = self.locate_entry(seq);
                let mut bytes = std::fs::read(&path).expect("bundle");
                bytes[at + len - 70] ^= 1;
                std::fs::write(&path, bytes).expect("rewrite");
            }
            Kind::Sled => {
                let store = SledStore::open(self.path()).expect("open sled");
                let mut bytes = store.event_bytes(seq).unwrap().expect("event");
                let n = bytes.len();
                bytes[n - 70] ^= 1;
                let mut k = vec![b'e'];
                k.extend_from_slice(&seq.to_be_bytes());
                store.raw_tree().insert(k, bytes).expect("insert");
                store.sync().expect("sync");
            }
            Kind::Postgres => {
                // Byte n-70 (1-based n-69), as for sled.
                let n = self.sql(&format!(
                    "UPDATE docket_events SET bytes = set_byte(bytes, length(bytes) - 70, \
                     get_byte(bytes, length(bytes) - 70) # 1) WHERE seq = {seq}"
                ));
                assert_eq!(n, 1);
            }
        }
    }

    /// Flips one bit of the stored leaf hash of event `seq` (a derived copy
    /// of its bytes; closed ledger): a hash in the tile store's level-0
    /// tile, the level-0 Merkle node of sled and PostgreSQL.
    pub fn damage_leaf_hash(&self, seq: u64) {
        match self.kind {
            Kind::Tiles => {
                let path = self
                    .path()
                    .join("tiles")
                    .join(docket_log::tiles::hash_tile_path(0, seq / 256));
                let mut bytes = std::fs::read(&path).expect("level-0 tile");
                bytes[32 * (seq % 256) as usize + 3] ^= 1;
                std::fs::write(&path, bytes).expect("rewrite");
            }
            Kind::Sled => {
                let store = SledStore::open(self.path()).expect("open sled");
                let mut k = vec![b'n', 0];
                k.extend_from_slice(&seq.to_be_bytes());
                let mut h = store.raw_tree().get(&k).unwrap().expect("leaf").to_vec();
                h[3] ^= 1;
                store.raw_tree().insert(k, h).expect("insert");
                store.sync().expect("sync");
            }
            Kind::Postgres => {
                let n = self.sql(&format!(
                    "UPDATE docket_nodes SET hash = set_byte(hash, 3, get_byte(hash, 3) # 1) \
                     WHERE level = 0 AND idx = {seq}"
                ));
                assert_eq!(n, 1);
            }
        }
    }

    /// Runs one SQL statement on the backend's database.
    pub fn sql(&self, sql: &str) -> u64 {
        let mut c = postgres::Client::connect(self.url(), postgres::NoTls).expect("connect");
        c.execute(sql, &[]).expect("sql")
    }
}

//! A ledger node over a shared PostgreSQL store: the sequencer, or a
//! follower that takes over when the sequencer dies.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use docket_log::sequencer::{Campaign, Election, read_config};
use docket_log::{Log, LogError, LogOptions, StateMachine};

use crate::error::PgError;
use crate::store::{LedgerMeta, PgStore};

/// What a node does about the sequencer lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// A server: sequence if the lease is free, else follow and take over
    /// when the sequencer goes away.
    Serve,
    /// A one-shot command: sequence if the lease is free, else open
    /// read-only (a snapshot of the log as of the open; [`Log::follow`]
    /// catches up).
    OneShot,
    /// Never sequence: a read replica that follows.
    Replica,
}

/// How to open a node.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    pub role: Role,
    /// Who this node is (recorded in the lease row): host and process.
    pub holder: String,
    /// Where this node serves, recorded when it takes the lease: followers
    /// send writers there.
    pub address: String,
    /// How often a follower polls for new events and campaigns.
    pub poll: Duration,
    pub log: LogOptions,
}

impl NodeOptions {
    /// Defaults for `role`, advertising `address`.
    pub fn new(role: Role, address: impl Into<String>) -> Self {
        Self {
            role,
            holder: default_holder(),
            address: address.into(),
            poll: Duration::from_millis(200),
            log: LogOptions::default(),
        }
    }
}

/// `HOSTNAME/pid` (or `pid N` when the host name is unknown).
pub fn default_holder() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty());
    match host {
        Some(h) => format!("{h}/{}", std::process::id()),
        None => format!("pid {}", std::process::id()),
    }
}

/// The [`Election`] of a follower: at each poll, try the lease; while
/// another node holds it, writers are told where it serves.
pub struct PgElection {
    store: Arc<PgStore>,
    holder: String,
    address: String,
    poll: Duration,
    campaign: bool,
}

impl PgElection {
    /// An election that campaigns for `store`'s lease as `holder` serving
    /// at `address` (a replica passes `campaign = false`: it only follows).
    pub fn new(
        store: Arc<PgStore>,
        holder: String,
        address: String,
        poll: Duration,
        campaign: bool,
    ) -> Self {
        Self {
            store,
            holder,
            address,
            poll,
            campaign,
        }
    }
}

impl Election for PgElection {
    fn campaign(&self) -> docket_log::Result<Campaign> {
        if self.campaign && self.store.try_lead(&self.holder, &self.address)? {
            return Ok(Campaign::Lead);
        }
        Ok(Campaign::Follow {
            reason: follower_reason(&self.store)?,
        })
    }

    fn poll_interval(&self) -> Duration {
        self.poll
    }
}

/// What a write to a follower is told: where the sequencer serves.
fn follower_reason(store: &PgStore) -> Result<String, PgError> {
    let lease = store.lease_info()?;
    Ok(match (&lease.address, lease.held) {
        (Some(addr), true) => format!(
            "this node is a read-only follower; writes go to the sequencer at {addr} ({})",
            lease.holder.as_deref().unwrap_or("another node")
        ),
        _ => "this node is a read-only follower and no sequencer holds the lease right now \
              (a follower takes over within seconds); retry"
            .to_string(),
    })
}

/// Checks that `dir` (its `ledger.json`) and the database hold the same
/// ledger: a node pointed at the wrong database must not serve it.
pub fn check_same_ledger(dir: &Path, store: &PgStore) -> Result<(), PgError> {
    let (config, _) = read_config(dir)?;
    let local = LedgerMeta {
        origin: config.origin,
        ledger_public_key: config.ledger_public_key,
    };
    if &local != store.meta() {
        return Err(PgError::Mismatch(format!(
            "{} has origin {:?} and key {}, the database {:?} and {}",
            dir.join("ledger.json").display(),
            local.origin,
            local.ledger_public_key,
            store.meta().origin,
            store.meta().ledger_public_key
        )));
    }
    Ok(())
}

/// Opens the ledger whose key and `ledger.json` are in `dir` and whose log
/// is in `store`, as `options.role` says: the sequencer when this process
/// wins the lease, else a follower (which, for [`Role::Serve`], takes over
/// when the sequencer's session ends). Every open — and every promotion —
/// runs the anchored open check against the database.
pub fn open_node<M: StateMachine>(
    dir: &Path,
    store: Arc<PgStore>,
    options: NodeOptions,
) -> Result<Log<M>, LogError> {
    check_same_ledger(dir, &store)?;
    let campaign = options.role != Role::Replica;
    if campaign && store.try_lead(&options.holder, &options.address)? {
        return match Log::open_with_store(dir, store.clone(), options.log) {
            Ok(log) => Ok(log),
            Err(e) => {
                store.release_lease();
                Err(e)
            }
        };
    }
    let election: Option<Box<dyn Election>> = match options.role {
        Role::OneShot => None,
        _ => Some(Box::new(PgElection::new(
            Arc::clone(&store),
            options.holder.clone(),
            options.address.clone(),
            options.poll,
            campaign,
        ))),
    };
    let reason = follower_reason(&store)?;
    let log = Log::open_follower(dir, store, options.log, election)?;
    log.set_follower_reason(reason);
    Ok(log)
}

//! The Docket ledger: the log core ([`docket_log::Log`]) driving the
//! domain's state machine ([`LedgerState`]), and `init`, which writes the
//! genesis event that only the domain knows how to spell.

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::event::Statement;
use crate::keys::GenesisPayload;
use crate::keys::{self, Role};
use crate::kind::names::GENESIS;
use crate::state::LedgerState;

pub use docket_log::sequencer::{LogConfigFile as LedgerConfigFile, Metrics, Receipt, exists};
pub use docket_log::verify::OpenReport;

/// An open ledger: cheap to clone; all clones share one committer.
pub type Ledger = docket_log::Log<LedgerState>;

/// Tunables of an open ledger.
pub type LedgerOptions = docket_log::LogOptions;

/// Paths of the files `init` writes.
#[derive(Debug, Clone)]
pub struct InitOutcome {
    pub ledger_key_path: PathBuf,
    pub admin_key_path: PathBuf,
    pub admin_public_key: String,
    pub origin: String,
}

/// Creates a new ledger under `dir`: the log (ledger key, store, anchor,
/// `ledger.json`), a first admin key under `dir/keys/` (mode 0600), and the
/// genesis event. Everything is durable when this returns (every file and
/// every new name fsynced). Refuses to touch an existing ledger.
pub fn init(dir: &Path, origin: Option<&str>) -> Result<(Ledger, InitOutcome)> {
    init_with(dir, origin, LedgerOptions::default())
}

/// [`init`] with options (the store layout among them).
pub fn init_with(
    dir: &Path,
    origin: Option<&str>,
    options: LedgerOptions,
) -> Result<(Ledger, InitOutcome)> {
    let ledger = Ledger::create(dir, origin, options)?;
    let admin_key = keys::generate()?;
    let admin_key_path = dir.join("keys/admin.key");
    keys::write_key_file(&admin_key_path, &admin_key)?;
    let origin = ledger.origin().to_string();
    let genesis = GenesisPayload {
        origin: origin.clone(),
        ledger_key: hex::encode(ledger.ledger_key().verifying_key().to_bytes()),
        admin_key: hex::encode(admin_key.verifying_key().to_bytes()),
        ledger_roles: vec![Role::Verifier, Role::Custodian],
    };
    // Invariant: plain struct serialises.
    let payload = serde_json::to_vec(&genesis).expect("genesis serialises");
    ledger.append(Statement::sign(GENESIS, payload, ledger.ledger_key()))?;
    // Snapshots of the genesis state, so a fresh ledger has no missing
    // mirror to report.
    ledger.snapshot()?;
    Ok((
        ledger,
        InitOutcome {
            ledger_key_path: dir.join("keys/ledger.key"),
            admin_key_path,
            admin_public_key: genesis.admin_key,
            origin,
        },
    ))
}

//! Exit codes (seed 004 §3), the same for every command and for embedded and
//! `--server` mode.
//!
//! | code | meaning |
//! | --- | --- |
//! | 0 | pass / ok |
//! | 2 | schema or contract invalid; a request the ledger refused |
//! | 3 | determinism mismatch (rebuilt state differs from stored) |
//! | 4 | missing required data or artifacts |
//! | 5 | hard fail: verdict FAIL, tampering found |
//! | 10 | unexpected error (I/O, storage, network) |
//! | 64 | usage error (bad flags) — never one of the above |

use docket_domain::LedgerError;

pub const OK: u8 = 0;
pub const INVALID: u8 = 2;
pub const MISMATCH: u8 = 3;
pub const MISSING: u8 = 4;
pub const HARD_FAIL: u8 = 5;
pub const UNEXPECTED: u8 = 10;
pub const USAGE: u8 = 64;

/// An error that carries its exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl CliError {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The exit code for a ledger error.
pub fn for_ledger_error(e: &LedgerError) -> u8 {
    match e {
        LedgerError::Malformed { .. }
        | LedgerError::Invalid { .. }
        | LedgerError::PermissionDenied { .. }
        | LedgerError::AlreadyExists { .. }
        | LedgerError::FailedPrecondition(_)
        | LedgerError::ResourceExhausted(_) => INVALID,
        LedgerError::NotFound { .. } => MISSING,
        LedgerError::Store {
            source: sled::Error::Corruption { .. },
            ..
        }
        | LedgerError::Corrupt { .. }
        | LedgerError::BadSignature { .. }
        | LedgerError::Merkle(_)
        | LedgerError::Note(_) => HARD_FAIL,
        // A ledger that stopped on damage its background check found: the
        // damage decides the code, not the stop.
        LedgerError::Closed(why) if why.starts_with(docket_log::sequencer::DAMAGE_STOP) => {
            HARD_FAIL
        }
        _ => UNEXPECTED,
    }
}

/// The exit code for any error a command returns.
pub fn for_error(e: &anyhow::Error) -> u8 {
    if let Some(c) = e.downcast_ref::<CliError>() {
        return c.code;
    }
    if let Some(l) = e.downcast_ref::<LedgerError>() {
        return for_ledger_error(l);
    }
    if let Some(s) = e.downcast_ref::<tonic::Status>() {
        return for_status(s);
    }
    UNEXPECTED
}

/// The exit code for a gRPC status (so `--server` mode exits like embedded).
pub fn for_status(s: &tonic::Status) -> u8 {
    use tonic::Code;
    match s.code() {
        Code::InvalidArgument
        | Code::PermissionDenied
        | Code::AlreadyExists
        | Code::FailedPrecondition
        | Code::ResourceExhausted
        | Code::OutOfRange => INVALID,
        Code::Unauthenticated | Code::DataLoss => HARD_FAIL,
        Code::NotFound => MISSING,
        _ => UNEXPECTED,
    }
}

/// Whether a panic raised at `file` (a [`std::panic::Location::file`]) was
/// raised inside the sled crate's own source.
pub fn panic_is_inside_sled(file: &str) -> bool {
    file.split(['/', '\\'])
        .any(|component| component.starts_with("sled-0."))
}

/// Installs the process's panic hook: a panic raised inside sled is not
/// printed (it is logged at `debug`, `DOCKET_LOG=debug` shows it), every
/// other panic goes to Rust's default hook.
///
/// sled asserts on some damaged files instead of returning an error. The
/// log core catches those panics where it calls sled and reports them as
/// damage naming `log/` (exit 5, with sled's message), so the default
/// hook's "thread 'main' panicked at …sled…" lines and backtrace would only
/// put a crash report in front of that answer. A bug of ours still panics
/// loudly: its location is not in sled.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(location) = info.location()
            && panic_is_inside_sled(location.file())
        {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("(no message)");
            tracing::debug!(
                at = %location,
                message,
                "sled panicked; the ledger reports it as damage"
            );
            return;
        }
        default(info)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_panic_inside_sleds_source_is_kept_off_stderr() {
        assert!(panic_is_inside_sled(
            "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/sled-0.34.7/src/serialization.rs"
        ));
        assert!(panic_is_inside_sled(
            r"C:\Users\ci\.cargo\registry\src\x\sled-0.34.7\src\pagecache\mod.rs"
        ));
        assert!(!panic_is_inside_sled("ledger/log/src/store.rs"));
        assert!(!panic_is_inside_sled("cli/src/sled_cmds.rs"));
        assert!(!panic_is_inside_sled("/work/main/sled-notes/x.rs"));
    }

    #[test]
    fn a_ledger_stopped_by_damage_exits_5_and_one_stopped_otherwise_10() {
        let damage = LedgerError::Closed(format!(
            "{}seq 100: its bytes do not hash to its stored leaf",
            docket_log::sequencer::DAMAGE_STOP
        ));
        assert_eq!(for_ledger_error(&damage), HARD_FAIL);
        let storage = LedgerError::Closed("the ledger stopped after a storage error".into());
        assert_eq!(for_ledger_error(&storage), UNEXPECTED);
    }
}

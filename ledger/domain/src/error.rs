//! The domain's error type is the log core's: every refusal the state
//! machine gives travels through the log's append path unchanged, so the
//! domain uses [`docket_log::LogError`] under the name callers know.

pub use docket_log::LogError as LedgerError;

/// Result alias for the domain crate.
pub type Result<T, E = LedgerError> = std::result::Result<T, E>;

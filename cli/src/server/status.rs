//! The one place where ledger errors become gRPC statuses.
//!
//! | `LedgerError` | gRPC code |
//! | --- | --- |
//! | `Invalid`, `Malformed` | `INVALID_ARGUMENT` (the message lists every violated rule) |
//! | `BadSignature` | `UNAUTHENTICATED` |
//! | `PermissionDenied` | `PERMISSION_DENIED` |
//! | `NotFound` | `NOT_FOUND` |
//! | `AlreadyExists` | `ALREADY_EXISTS` |
//! | `FailedPrecondition` | `FAILED_PRECONDITION` |
//! | `ResourceExhausted` | `RESOURCE_EXHAUSTED` |
//! | `Corrupt` | `DATA_LOSS` |
//! | `Closed` | `UNAVAILABLE` |
//! | `Merkle` (a request for a leaf or size the tree does not have) | `OUT_OF_RANGE` |
//! | anything else (`Io`, `Store`, other `Merkle`/`Note` failures) | `INTERNAL` |
//!
//! Every status also carries the exit code the embedded CLI would have used
//! for the same error, in the `docket-exit-code` metadata entry, so that
//! `docket --server URL …` exits exactly like `docket --data DIR …`.

use docket_domain::LedgerError;
use docket_domain::merkle::MerkleError;
use tonic::{Code, Status};

use crate::exit;

/// Metadata key carrying the CLI exit code equivalent of an error status.
pub const EXIT_CODE_METADATA: &str = "docket-exit-code";

/// The gRPC code for a ledger error (the mapping table above).
#[must_use]
pub fn code_for(e: &LedgerError) -> Code {
    match e {
        LedgerError::Invalid { .. } | LedgerError::Malformed { .. } => Code::InvalidArgument,
        LedgerError::BadSignature { .. } => Code::Unauthenticated,
        LedgerError::PermissionDenied { .. } => Code::PermissionDenied,
        LedgerError::NotFound { .. } => Code::NotFound,
        LedgerError::AlreadyExists { .. } => Code::AlreadyExists,
        LedgerError::FailedPrecondition(_) => Code::FailedPrecondition,
        LedgerError::ResourceExhausted(_) => Code::ResourceExhausted,
        LedgerError::Corrupt { .. } => Code::DataLoss,
        LedgerError::Closed(_) => Code::Unavailable,
        LedgerError::Merkle(
            MerkleError::IndexOutOfRange { .. } | MerkleError::SizeOrder { .. },
        ) => Code::OutOfRange,
        _ => Code::Internal,
    }
}

/// Converts a ledger error into the status a client sees. The message is the
/// error's display text (for `Invalid`: every violated rule, `; `-separated).
#[must_use]
pub fn to_status(e: &LedgerError) -> Status {
    let code = code_for(e);
    if code == Code::Internal {
        tracing::error!(error = %e, "internal error answering a request");
    }
    with_exit_code(Status::new(code, e.to_string()), exit::for_ledger_error(e))
}

/// Converts an export error: a ledger error keeps its mapping; a bad
/// request is `INVALID_ARGUMENT`, a missing task or empty log `NOT_FOUND`.
#[must_use]
pub fn export_status(e: &docket_domain::export::ExportError) -> Status {
    use docket_domain::export::ExportError;
    match e {
        ExportError::Ledger(l) => to_status(l),
        ExportError::Request(_) => {
            with_exit_code(Status::invalid_argument(e.to_string()), exit::INVALID)
        }
        ExportError::NotFound(_) => with_exit_code(Status::not_found(e.to_string()), exit::MISSING),
        _ => {
            tracing::error!(error = %e, "export failed");
            with_exit_code(Status::internal(e.to_string()), exit::UNEXPECTED)
        }
    }
}

/// A request that is malformed before it reaches the ledger (wrong field
/// sizes, wrong kind for the RPC, …): `INVALID_ARGUMENT`, exit code 2.
#[must_use]
pub fn invalid(violations: &[String]) -> Status {
    with_exit_code(
        Status::invalid_argument(format!("invalid request: {}", violations.join("; "))),
        exit::INVALID,
    )
}

/// `OUT_OF_RANGE` with the exit code the embedded command would give
/// (`MISSING` for a size beyond the head, `INVALID` for an inverted range).
#[must_use]
pub fn out_of_range(message: impl Into<String>, exit_code: u8) -> Status {
    with_exit_code(Status::out_of_range(message.into()), exit_code)
}

/// `OUT_OF_RANGE` carrying a ledger error's message and exit code (a
/// request for a leaf or tree size the log does not have).
#[must_use]
pub fn out_of_range_from(e: &LedgerError) -> Status {
    with_exit_code(
        Status::out_of_range(e.to_string()),
        exit::for_ledger_error(e),
    )
}

/// The server is shutting down or the ledger stopped: `UNAVAILABLE`.
#[must_use]
pub fn unavailable(message: impl Into<String>) -> Status {
    with_exit_code(Status::unavailable(message.into()), exit::UNEXPECTED)
}

/// A join error of a blocking task (a panic in ledger code): `INTERNAL`.
#[must_use]
pub fn join_error(e: &tokio::task::JoinError) -> Status {
    tracing::error!(error = %e, "a blocking ledger call failed");
    Status::internal(format!("ledger task failed: {e}"))
}

/// Attaches the CLI exit code to a status.
#[must_use]
pub fn with_exit_code(mut status: Status, code: u8) -> Status {
    if let Ok(v) = code.to_string().parse() {
        status.metadata_mut().insert(EXIT_CODE_METADATA, v);
    }
    status
}

/// The CLI exit code for a status received from a server: the code the
/// server attached, else [`exit::for_status`].
#[must_use]
pub fn exit_code_of(status: &Status) -> u8 {
    status
        .metadata()
        .get(EXIT_CODE_METADATA)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| exit::for_status(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_table() {
        let cases: Vec<(LedgerError, Code)> = vec![
            (
                LedgerError::Invalid {
                    what: "task".into(),
                    violations: vec!["a".into(), "b".into()],
                },
                Code::InvalidArgument,
            ),
            (
                LedgerError::Malformed {
                    what: "event",
                    detail: "x".into(),
                },
                Code::InvalidArgument,
            ),
            (
                LedgerError::BadSignature {
                    seq: None,
                    detail: "x".into(),
                },
                Code::Unauthenticated,
            ),
            (
                LedgerError::PermissionDenied {
                    kind: "k".into(),
                    author: "a".into(),
                    reason: "r".into(),
                },
                Code::PermissionDenied,
            ),
            (LedgerError::NotFound { what: "x".into() }, Code::NotFound),
            (
                LedgerError::AlreadyExists { what: "x".into() },
                Code::AlreadyExists,
            ),
            (
                LedgerError::FailedPrecondition("x".into()),
                Code::FailedPrecondition,
            ),
            (
                LedgerError::ResourceExhausted("x".into()),
                Code::ResourceExhausted,
            ),
            (
                LedgerError::Corrupt {
                    location: "l".into(),
                    detail: "d".into(),
                },
                Code::DataLoss,
            ),
            (LedgerError::Closed("x".into()), Code::Unavailable),
        ];
        for (e, code) in cases {
            let s = to_status(&e);
            assert_eq!(s.code(), code, "{e}");
            assert_eq!(exit_code_of(&s), exit::for_ledger_error(&e), "{e}");
        }
        let s = to_status(&LedgerError::Invalid {
            what: "task".into(),
            violations: vec!["rule one".into(), "rule two".into()],
        });
        assert!(s.message().contains("rule one") && s.message().contains("rule two"));
    }
}

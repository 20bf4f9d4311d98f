//! The log core's one error type.

use std::path::PathBuf;

/// Everything that can go wrong inside the ledger core.
///
/// Each variant says how a caller is expected to handle it. The gRPC layer maps
/// them onto status codes in one place (`cli/src/server/status.rs`) and the CLI
/// onto exit codes (`docket_cli::exit`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A file-system operation failed. Retry after fixing the environment
    /// (permissions, disk space); nothing was acknowledged.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The storage engine failed. The ledger stops accepting appends (fail
    /// stop); restart the process, which re-reads the durable state.
    #[error("storage error while {context}: {source}")]
    Store {
        context: String,
        #[source]
        source: sled::Error,
    },
    /// Stored bytes do not decode or do not match what was committed. This is
    /// tampering or disk corruption: stop and run `docket replay --verify`.
    #[error("corruption at {location}: {detail}")]
    Corrupt { location: String, detail: String },
    /// Caller-supplied bytes do not decode (bad event, key file, JSON). Reject
    /// the input; nothing was appended.
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    /// A statement's payload or arguments break a rule. Every violated rule is
    /// listed; fix the input and resend. Nothing was appended.
    #[error("invalid {what}: {}", violations.join("; "))]
    Invalid {
        what: String,
        violations: Vec<String>,
    },
    /// An author signature does not verify. Reject; nothing was appended.
    #[error("bad signature{}: {detail}", seq.map(|s| format!(" at seq {s}")).unwrap_or_default())]
    BadSignature { seq: Option<u64>, detail: String },
    /// The author is unknown, revoked, lacks the role, or the statement breaks
    /// separation of duties. Reject; nothing was appended.
    #[error("permission denied for {kind} by {author}: {reason}")]
    PermissionDenied {
        kind: String,
        author: String,
        reason: String,
    },
    /// The thing asked for does not exist (or no longer has content).
    #[error("not found: {what}")]
    NotFound { what: String },
    /// The thing to create exists already (e.g. `docket init` on a ledger).
    #[error("already exists: {what}")]
    AlreadyExists { what: String },
    /// The request is well formed but the ledger's state does not allow it
    /// now (e.g. a verdict for a task with no submission).
    #[error("failed precondition: {0}")]
    FailedPrecondition(String),
    /// A size or queue limit was hit. Back off and retry, or send less.
    #[error("resource exhausted: {0}")]
    ResourceExhausted(String),
    /// A Merkle proof did not verify or could not be built.
    #[error(transparent)]
    Merkle(#[from] crate::merkle::MerkleError),
    /// A signed note (checkpoint) did not verify or parse.
    #[error(transparent)]
    Note(#[from] crate::checkpoint::NoteError),
    /// The ledger has stopped (shut down, or failed stop after a storage
    /// error). Reopen it.
    #[error("ledger is closed: {0}")]
    Closed(String),
}

/// sled's report of an error without the empty backtrace its `Display`
/// appends (`… backtrace ()`: sled captures none in release builds).
pub(crate) fn sled_report(error: &sled::Error) -> String {
    let report = error.to_string();
    match report.strip_suffix(" backtrace ()") {
        Some(trimmed) => trimmed.to_string(),
        None => report,
    }
}

impl LogError {
    /// An error of the sled store while `context`. sled's own report of
    /// damaged bytes (`Corruption`) is damage of `log/` ([`Self::Corrupt`],
    /// exit 5), whichever read found it; everything else stays a storage
    /// error.
    pub fn store(context: impl Into<String>, source: sled::Error) -> Self {
        match source {
            sled::Error::Corruption { .. } => Self::Corrupt {
                location: "log/".into(),
                detail: format!(
                    "the sled store is damaged ({}): {}",
                    context.into(),
                    sled_report(&source)
                ),
            },
            source => Self::Store {
                context: context.into(),
                source,
            },
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    pub fn corrupt(location: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Corrupt {
            location: location.into(),
            detail: detail.into(),
        }
    }

    pub fn malformed(what: &'static str, detail: impl Into<String>) -> Self {
        Self::Malformed {
            what,
            detail: detail.into(),
        }
    }

    pub fn denied(kind: &str, author: &[u8; 32], reason: impl Into<String>) -> Self {
        Self::PermissionDenied {
            kind: kind.to_string(),
            author: hex::encode(author),
            reason: reason.into(),
        }
    }
}

/// Result alias for the log crate.
pub type Result<T, E = LogError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_sleds_corruption_report_when_reported_then_it_is_damage_of_log_without_the_empty_backtrace()
     {
        let error = LogError::store(
            "reading the last event",
            sled::Error::Corruption { at: None, bt: () },
        );
        let LogError::Corrupt { location, detail } = error else {
            panic!("sled's corruption report must be damage: {error:?}");
        };
        assert_eq!(location, "log/");
        assert!(detail.contains("reading the last event"), "{detail}");
        assert!(detail.contains("corrupted data"), "{detail}");
        assert!(!detail.contains("backtrace"), "{detail}");
    }
}

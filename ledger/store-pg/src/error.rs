//! The crate's one error type, and how it crosses the log's seam.

use docket_log::LogError;

/// What can go wrong between Docket and PostgreSQL.
///
/// Every variant says what the caller does about it. Through the
/// [`docket_log::store::Store`] trait these become [`LogError`]s (see the
/// `From` impl): a database error is a storage error (the log fails stop),
/// a lost lease is [`LogError::Closed`] (the deposed sequencer stops).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The database (or the connection to it) failed. Nothing was
    /// acknowledged; retry once the database is reachable again.
    #[error("PostgreSQL error while {context}: {source}")]
    Db {
        context: String,
        #[source]
        source: postgres::Error,
    },
    /// The connection string does not parse.
    #[error("bad PostgreSQL connection string: {0}")]
    Url(String),
    /// The database holds no ledger: run `docket init --store URL` or
    /// `docket migrate --to URL`.
    #[error("the database holds no ledger (run `docket init --store URL` or `docket migrate`)")]
    NoLedger,
    /// The database already holds a ledger; `create` never touches one.
    #[error("the database already holds a ledger ({0})")]
    Exists(String),
    /// The database's schema is newer than this binary knows: upgrade
    /// Docket before opening it.
    #[error("the database schema is version {found}; this docket knows versions up to {known}")]
    SchemaTooNew { found: i32, known: i32 },
    /// The local data directory and the database describe different
    /// ledgers (origin or ledger key): a node pointed at the wrong database.
    #[error("the data directory and the database hold different ledgers: {0}")]
    Mismatch(String),
    /// This process does not hold the sequencer lease (or lost it): it may
    /// not write.
    #[error("{0}")]
    NotLeader(String),
    /// A throwaway server (tests, benches) could not be started.
    #[error("no PostgreSQL: {0}")]
    Unavailable(String),
    /// An error of the log core.
    #[error(transparent)]
    Log(#[from] LogError),
}

impl PgError {
    pub(crate) fn db(context: impl Into<String>, source: postgres::Error) -> Self {
        Self::Db {
            context: context.into(),
            source,
        }
    }
}

impl From<PgError> for LogError {
    fn from(e: PgError) -> Self {
        match e {
            PgError::Log(e) => e,
            PgError::NoLedger => LogError::NotFound {
                what:
                    "a ledger in the database (run `docket init --store URL` or `docket migrate`)"
                        .into(),
            },
            PgError::Exists(what) => LogError::AlreadyExists {
                what: format!("a ledger in the database ({what})"),
            },
            PgError::Mismatch(detail) => LogError::corrupt("ledger.json", detail),
            PgError::NotLeader(why) => LogError::Closed(why),
            e @ (PgError::SchemaTooNew { .. } | PgError::Url(_)) => {
                LogError::FailedPrecondition(e.to_string())
            }
            // The log's error enum carries sled's error type for storage
            // errors; a database error travels as an I/O error on the
            // database (same handling: fail-stop, nothing acknowledged).
            e @ (PgError::Db { .. } | PgError::Unavailable(_)) => LogError::Io {
                path: "postgresql".into(),
                source: std::io::Error::other(e.to_string()),
            },
        }
    }
}

/// Result alias for the crate.
pub type Result<T, E = PgError> = std::result::Result<T, E>;

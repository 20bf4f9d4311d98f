//! The database schema and its versioned migrations.
//!
//! Migrations are numbered and applied in order, each in the transaction
//! that records it in `docket_schema_migrations`, under a transaction-scoped
//! advisory lock (so two nodes starting at once apply each migration once).
//! A database whose schema is newer than this binary is refused. Migrations
//! are append-only: a released one is never edited.

use postgres::Client;

use crate::error::{PgError, Result};

/// `(version, name, SQL)`, in order.
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "ledger tables", V1),
    (2, "docket_commit: a group commit in one round trip", V2),
];

/// Version 1: one table per kind of record the log stores.
const V1: &str = r#"
-- The ledger's identity: origin and ledger public key (checked against
-- every node's ledger.json).
CREATE TABLE docket_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
-- Canonical event bytes, one row per sequence number.
CREATE TABLE docket_events (
    seq   bigint PRIMARY KEY CHECK (seq >= 0),
    bytes bytea  NOT NULL
);
-- Complete RFC 9162 Merkle nodes (level 0 = leaf hashes).
CREATE TABLE docket_nodes (
    level smallint NOT NULL CHECK (level BETWEEN 0 AND 63),
    idx   bigint   NOT NULL CHECK (idx >= 0),
    hash  bytea    NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (level, idx)
);
-- Statement digest -> the first event that carried it (idempotency).
CREATE TABLE docket_statements (
    digest bytea  PRIMARY KEY CHECK (octet_length(digest) = 32),
    seq    bigint NOT NULL
);
-- The signed checkpoint of every commit boundary. The primary key is the
-- rule "never two checkpoints of one size", across every node.
CREATE TABLE docket_checkpoints (
    size bigint PRIMARY KEY CHECK (size >= 0),
    note text   NOT NULL
);
-- Sealed projection snapshots (derived; authenticated by the log).
CREATE TABLE docket_snapshots (
    name       text        PRIMARY KEY,
    bytes      bytea       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- The anchor: the latest signed checkpoint served. One row; never moves
-- back.
CREATE TABLE docket_anchor (
    id         boolean     PRIMARY KEY DEFAULT true CHECK (id),
    size       bigint      NOT NULL,
    note       text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- The sequencer lease: the fencing token (bumped by every new holder and
-- checked by every commit) and where the holder serves.
CREATE TABLE docket_lease (
    id          boolean     PRIMARY KEY DEFAULT true CHECK (id),
    token       bigint      NOT NULL,
    holder      text,
    address     text,
    acquired_at timestamptz
);
"#;

/// Version 2: a group commit as one function call — one round trip and one
/// WAL flush — raising a distinct SQLSTATE for each refusal: `DK001` the
/// fencing token is not the caller's (deposed), `DK002` another checkpoint
/// is stored for the size, `DK003` the anchor names a larger tree.
const V2: &str = r#"
CREATE FUNCTION docket_commit(
    p_token bigint,
    p_seqs bigint[], p_bytes bytea[],
    p_levels smallint[], p_idxs bigint[], p_hashes bytea[],
    p_digests bytea[], p_digest_seqs bigint[],
    p_size bigint, p_note text
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    current_token bigint;
    stored text;
BEGIN
    SELECT token INTO current_token FROM docket_lease WHERE id FOR SHARE;
    IF current_token IS DISTINCT FROM p_token THEN
        RAISE EXCEPTION 'deposed: the fencing token is % (this node holds %)',
            current_token, p_token USING ERRCODE = 'DK001';
    END IF;
    INSERT INTO docket_events (seq, bytes) SELECT * FROM UNNEST(p_seqs, p_bytes);
    INSERT INTO docket_nodes (level, idx, hash)
        SELECT * FROM UNNEST(p_levels, p_idxs, p_hashes);
    INSERT INTO docket_statements (digest, seq) SELECT * FROM UNNEST(p_digests, p_digest_seqs);
    IF p_size IS NOT NULL THEN
        INSERT INTO docket_checkpoints (size, note) VALUES (p_size, p_note)
            ON CONFLICT (size) DO NOTHING;
        IF NOT FOUND THEN
            SELECT note INTO stored FROM docket_checkpoints WHERE size = p_size;
            IF stored IS DISTINCT FROM p_note THEN
                RAISE EXCEPTION 'a different signed checkpoint of size % is stored', p_size
                    USING ERRCODE = 'DK002';
            END IF;
        END IF;
        INSERT INTO docket_anchor (id, size, note) VALUES (true, p_size, p_note)
            ON CONFLICT (id) DO UPDATE SET size = EXCLUDED.size, note = EXCLUDED.note,
                updated_at = now()
            WHERE docket_anchor.size <= EXCLUDED.size;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'the anchor names a tree larger than %', p_size
                USING ERRCODE = 'DK003';
        END IF;
    END IF;
END
$$;
"#;

/// The newest schema version this binary knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |(v, _, _)| *v)
}

/// Applies every migration the database lacks; returns the schema version.
/// Refuses a database whose schema is newer than this binary's.
pub fn migrate(client: &mut Client) -> Result<i32> {
    let mut tx = client
        .transaction()
        .map_err(|e| PgError::db("starting the migration transaction", e))?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.docket_schema_migrations'));
         CREATE TABLE IF NOT EXISTS docket_schema_migrations (
             version    integer     PRIMARY KEY,
             name       text        NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
    )
    .map_err(|e| PgError::db("creating docket_schema_migrations", e))?;
    let current: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM docket_schema_migrations",
            &[],
        )
        .map_err(|e| PgError::db("reading the schema version", e))?
        .get(0);
    let known = latest();
    if current > known {
        return Err(PgError::SchemaTooNew {
            found: current,
            known,
        });
    }
    for (version, name, sql) in MIGRATIONS.iter().filter(|(v, _, _)| *v > current) {
        tx.batch_execute(sql)
            .map_err(|e| PgError::db(format!("applying migration {version} ({name})"), e))?;
        tx.execute(
            "INSERT INTO docket_schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .map_err(|e| PgError::db(format!("recording migration {version}"), e))?;
        tracing::info!(version, name, "applied schema migration");
    }
    tx.commit()
        .map_err(|e| PgError::db("committing the migrations", e))?;
    Ok(known)
}

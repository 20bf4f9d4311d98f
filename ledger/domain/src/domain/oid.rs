//! Evidence OIDs: minted deterministically from the registering event (the
//! evidence aggregate, [`crate::oids`], defines them).

pub use crate::oids::{OID_PREFIX, is_oid, mint, of_event, of_statement, timestamp_ms};

//! Every projection folded from the log, by snapshot name (each is a pure,
//! deterministic fold: no clock, no disk; canonical JSON snapshots, maps are
//! `BTreeMap`):
//!
//! | snapshot | projection | aggregate |
//! | --- | --- | --- |
//! | `keys` | [`KeysProjection`] | [`crate::keys`] |
//! | `verdicts` | [`VerdictsProjection`] | [`crate::tasks`] (with [`crate::verdicts`], [`crate::approvals`]) |
//! | `oids` | [`OidRegistry`] | [`crate::oids`] (retention fields moved by [`crate::retention`]) |
//! | `retention` | [`RetentionState`] | [`crate::retention`] |
//!
//! They are folded together by [`crate::LedgerState`].

pub use crate::keys::{GenesisPayload, KeyRecord, KeyRegistered, KeyRevoked, KeysProjection};
pub use crate::oids::OidRegistry;
pub use crate::retention::RetentionState;
pub use crate::tasks::VerdictsProjection;

//! Roles, and the log core's key material (generation, key files, the one
//! canonical spelling of a public key) under the names the domain uses.

use serde::{Deserialize, Serialize};

use crate::error::{LedgerError, Result};

/// A role a key may hold. Each event kind names the roles that may author it
/// (see [`crate::authority`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    Submitter,
    Verifier,
    Approver,
    Custodian,
    Auditor,
}

impl Role {
    pub const ALL: [Role; 6] = [
        Role::Admin,
        Role::Submitter,
        Role::Verifier,
        Role::Approver,
        Role::Custodian,
        Role::Auditor,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Submitter => "submitter",
            Role::Verifier => "verifier",
            Role::Approver => "approver",
            Role::Custodian => "custodian",
            Role::Auditor => "auditor",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = LedgerError;
    fn from_str(s: &str) -> Result<Self> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| LedgerError::malformed("role", format!("unknown role {s:?}")))
    }
}

pub use docket_log::keys::{
    generate, parse_public, parse_public_bytes, public_from_bytes, read_key_file, write_key_file,
};

//! Who may author what, for callers that hold a kind as a string (audits of
//! bundles, tests). The answer is the kind table's ([`Kind::authors`]); this
//! module only spells it for strings.

use crate::keys::Role;
use crate::kind::Kind;

pub use crate::kind::EXTENSION_ROLES;
pub use crate::kind::names::{EXTENSION_PREFIX, GENESIS};

/// The roles that may author `kind`, or None for genesis (the ledger key,
/// sequence 0 only) and for an unknown kind (refused).
pub fn required_roles(kind: &str) -> Option<&'static [Role]> {
    Kind::parse(kind).ok()?.roles()
}

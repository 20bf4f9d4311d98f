//! Who may author what: the one table of event kinds and the roles that may
//! author them, enforced in one place ([`required_roles`]).

use crate::keys::Role;

/// The genesis event's kind (authored by the ledger key, sequence 0 only).
pub const GENESIS: &str = "ledger.genesis";
/// Prefix of custom extension kinds: opaque payloads any non-auditor key may
/// append (the raw `docket log append` path and benchmarks use it).
pub const EXTENSION_PREFIX: &str = "x-";

/// Every kind the ledger knows with the roles that may author it.
pub const KINDS: &[(&str, &[Role])] = &[
    ("key.registered", &[Role::Admin]),
    ("key.revoked", &[Role::Admin]),
    ("task.registered", &[Role::Admin, Role::Submitter]),
    ("evidence.registered", &[Role::Submitter]),
    ("execution.recorded", &[Role::Submitter]),
    ("submission.received", &[Role::Submitter]),
    ("check.recorded", &[Role::Verifier]),
    ("verdict.issued", &[Role::Verifier]),
    ("approval.requested", &[Role::Submitter, Role::Approver]),
    ("approval.granted", &[Role::Approver]),
    ("approval.denied", &[Role::Approver]),
    ("retention.policy_set", &[Role::Admin]),
    ("retention.pinned", &[Role::Custodian]),
    ("retention.unpinned", &[Role::Custodian]),
    ("retention.reclassified", &[Role::Custodian]),
    ("retention.redacted", &[Role::Custodian]),
    ("evidence.expired", &[Role::Custodian]),
    ("retention.sweep", &[Role::Custodian]),
];

/// Roles for custom `x-…` kinds.
pub const EXTENSION_ROLES: &[Role] = &[
    Role::Admin,
    Role::Submitter,
    Role::Verifier,
    Role::Approver,
    Role::Custodian,
];

/// The roles that may author `kind`, or None for an unknown kind (refused).
pub fn required_roles(kind: &str) -> Option<&'static [Role]> {
    if kind.starts_with(EXTENSION_PREFIX) {
        return Some(EXTENSION_ROLES);
    }
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, roles)| *roles)
}

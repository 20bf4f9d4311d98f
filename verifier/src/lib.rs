//! Docket verifier.

//! Docket ledger core.

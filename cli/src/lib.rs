//! Docket CLI library.

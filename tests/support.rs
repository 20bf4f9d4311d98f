//! E2E support.

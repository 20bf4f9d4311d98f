//! Docket proto.

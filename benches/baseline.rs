//! Bench baselines.

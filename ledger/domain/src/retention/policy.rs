//! The retention policy: how long each class keeps content, and the count
//! limit.
//!
//! Before any `retention.policy_set` event the built-in default applies
//! ([`Policy::default`]): `routine` 30 days (seed 000 §3), `high_impact`
//! 180 days (the upper end of the seed's 90–180: deletion is irreversible,
//! so the default errs on keeping), no count limit, no future sweeps.

use serde::{Deserialize, Serialize};

use super::classes;

/// One day in milliseconds.
pub const DAY_MS: u64 = 86_400_000;

/// Allowed `routine_days`: at least one day, at most `high_impact_days`.
pub const ROUTINE_DAYS_MIN: u32 = 1;
/// Allowed `high_impact_days` (seed 000 §3: 90 to 180 days).
pub const HIGH_IMPACT_DAYS: std::ops::RangeInclusive<u32> = 90..=180;
/// Largest `keep_last_submissions`.
pub const KEEP_LAST_SUBMISSIONS_MAX: u32 = 100_000;

/// The retention policy in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Days a `routine` OID's content is kept after its registration.
    pub routine_days: u32,
    /// Days a `high_impact` OID's content is kept after its registration
    /// (90 to 180).
    pub high_impact_days: u32,
    /// Count limit in the spirit of seed 004's `keep_runs`: the evidence of
    /// the last N submissions of every task is kept regardless of age
    /// (0 = no count limit).
    pub keep_last_submissions: u32,
    /// Lets a sweep state a `now` later than the ledger clock (simulations,
    /// tests). Off by default: a sweep cannot expire content early by
    /// claiming a future time.
    pub allow_future_sweeps: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            routine_days: 30,
            high_impact_days: 180,
            keep_last_submissions: 0,
            allow_future_sweeps: false,
        }
    }
}

impl Policy {
    /// How long `class` keeps content (ms after registration), or None when
    /// it never expires (`pinned`, or a class this ledger does not know,
    /// which fails safe).
    pub fn keep_ms(&self, class: &str) -> Option<u64> {
        let days = match class {
            classes::ROUTINE => self.routine_days,
            classes::HIGH_IMPACT => self.high_impact_days,
            _ => return None,
        };
        Some(u64::from(days).saturating_mul(DAY_MS))
    }

    /// Days of `class` (None when it never expires).
    pub fn days(&self, class: &str) -> Option<u32> {
        match class {
            classes::ROUTINE => Some(self.routine_days),
            classes::HIGH_IMPACT => Some(self.high_impact_days),
            _ => None,
        }
    }

    /// Every rule the policy breaks (empty when valid).
    pub fn violations(&self) -> Vec<String> {
        let mut v = Vec::new();
        if !HIGH_IMPACT_DAYS.contains(&self.high_impact_days) {
            v.push(format!(
                "high_impact_days: {} is outside {}..={} (seed 000 §3)",
                self.high_impact_days,
                HIGH_IMPACT_DAYS.start(),
                HIGH_IMPACT_DAYS.end()
            ));
        }
        if self.routine_days < ROUTINE_DAYS_MIN {
            v.push(format!("routine_days: must be at least {ROUTINE_DAYS_MIN}"));
        } else if self.routine_days > self.high_impact_days {
            v.push(format!(
                "routine_days: {} is longer than high_impact_days {}",
                self.routine_days, self.high_impact_days
            ));
        }
        if self.keep_last_submissions > KEEP_LAST_SUBMISSIONS_MAX {
            v.push(format!(
                "keep_last_submissions: at most {KEEP_LAST_SUBMISSIONS_MAX}"
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_limits() {
        let p = Policy::default();
        assert!(p.violations().is_empty());
        assert_eq!(p.keep_ms("routine"), Some(30 * DAY_MS));
        assert_eq!(p.keep_ms("high_impact"), Some(180 * DAY_MS));
        assert_eq!(p.keep_ms("pinned"), None);
        assert_eq!(p.keep_ms("mystery"), None);
        let bad = Policy {
            routine_days: 0,
            high_impact_days: 200,
            keep_last_submissions: KEEP_LAST_SUBMISSIONS_MAX + 1,
            allow_future_sweeps: false,
        };
        assert_eq!(bad.violations().len(), 3);
        let long_routine = Policy {
            routine_days: 100,
            high_impact_days: 90,
            ..Policy::default()
        };
        assert_eq!(long_routine.violations().len(), 1);
    }
}

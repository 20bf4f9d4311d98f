//! Property: on any sequence of registrations, submissions, pins, unpins,
//! reclassifications and policy changes at random (simulated) times, a
//! sweep's plan at `now` is exactly the set of OIDs whose `evidence.expired`
//! admission accepts at `now`; no pinned or count-held OID is ever expired;
//! and the state folded incrementally equals the state folded again from the
//! bytes and the state restored from snapshots.

#[path = "retention_support.rs"]
mod support;

use std::collections::BTreeSet;

use docket_domain::LedgerState;
use docket_domain::domain::OidState;
use docket_domain::retention::{Decision, rules};
use proptest::prelude::*;
use serde_json::json;
use support::{DAY, Sim, T0};

const CLASSES: [&str; 3] = ["routine", "high_impact", "pinned"];

#[derive(Debug, Clone)]
enum Op {
    Register { class: Option<usize>, dt: u64 },
    Submit { picks: Vec<usize>, dt: u64 },
    Pin { pick: usize },
    Unpin { pick: usize },
    Reclassify { pick: usize, class: usize },
    Policy { routine: u32, high: u32, keep: u32 },
    Sweep { dt: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (proptest::option::of(0..3usize), 0..20 * DAY).prop_map(|(class, dt)| Op::Register { class, dt }),
        2 => (proptest::collection::vec(0..64usize, 1..4), 0..5 * DAY).prop_map(|(picks, dt)| Op::Submit { picks, dt }),
        1 => (0..64usize).prop_map(|pick| Op::Pin { pick }),
        1 => (0..64usize).prop_map(|pick| Op::Unpin { pick }),
        1 => (0..64usize, 0..3usize).prop_map(|(pick, class)| Op::Reclassify { pick, class }),
        1 => (1..60u32, 90..=180u32, 0..3u32).prop_map(|(routine, high, keep)| Op::Policy { routine, high, keep }),
        2 => (0..60 * DAY).prop_map(|dt| Op::Sweep { dt }),
    ]
}

fn live_oids(sim: &Sim) -> Vec<String> {
    sim.state()
        .domain
        .oids
        .oids
        .iter()
        .filter(|(_, r)| r.state != OidState::Expired)
        .map(|(o, _)| o.clone())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn plans_match_admission_and_replay(ops in proptest::collection::vec(op(), 1..60)) {
        let mut sim = Sim::new();
        let mut now = T0;
        let mut n = 0u32;
        let mut all: Vec<String> = Vec::new();
        for op in ops {
            match op {
                Op::Register { class, dt } => {
                    now += dt;
                    n += 1;
                    let content = format!("content {n}");
                    let oid = sim.evidence(&format!("evidence/{n}.log"), content.as_bytes(), class.map(|c| CLASSES[c]), now);
                    all.push(oid);
                }
                Op::Submit { picks, dt } => {
                    now += dt;
                    let live = live_oids(&sim);
                    if live.is_empty() { continue; }
                    let chosen: BTreeSet<String> = picks.iter().map(|p| live[p % live.len()].clone()).collect();
                    let chosen: Vec<String> = chosen.into_iter().collect();
                    // Two OIDs may share an artifact name only in distinct submissions.
                    let key = sim.submitter.clone();
                    let _ = sim.append("submission.received", &support::submit_json(support::TASK, &chosen), &key, now);
                }
                Op::Pin { pick } if !all.is_empty() => {
                    let _ = sim.custodian("retention.pinned", json!({"oid": all[pick % all.len()]}), now);
                }
                Op::Unpin { pick } if !all.is_empty() => {
                    let _ = sim.custodian("retention.unpinned", json!({"oid": all[pick % all.len()]}), now);
                }
                Op::Reclassify { pick, class } if !all.is_empty() => {
                    let _ = sim.custodian("retention.reclassified", json!({"oid": all[pick % all.len()], "class": CLASSES[class]}), now);
                }
                Op::Policy { routine, high, keep } => {
                    sim.policy(json!({"routine_days": routine.min(high), "high_impact_days": high, "keep_last_submissions": keep}), now).unwrap();
                }
                Op::Sweep { dt } => {
                    now += dt;
                    let plan = rules::plan(sim.state(), now);
                    let planned: BTreeSet<String> = plan.expire.iter().map(|p| p.oid.clone()).collect();
                    for oid in live_oids(&sim) {
                        let decision = sim.decide(&oid, now);
                        let before = sim.state().domain.oids.oids[&oid].clone();
                        let admitted = sim.expire(&oid, now, now).is_ok();
                        prop_assert_eq!(admitted, planned.contains(&oid), "{} {:?}", oid, decision);
                        if admitted {
                            prop_assert!(!before.pinned, "a pinned OID expired");
                            let expires = matches!(decision, Decision::Expire { .. });
                            prop_assert!(expires);
                        }
                    }
                }
                _ => {}
            }
        }
        let rebuilt = sim.refold();
        prop_assert_eq!(&rebuilt, sim.state());
        let parts: Vec<(String, Vec<u8>)> = sim.state().snapshots().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let restored = LedgerState::from_snapshots(sim.state().applied, sim.state().last_recorded_at_ms, &parts).unwrap();
        prop_assert_eq!(&restored, sim.state());
    }
}

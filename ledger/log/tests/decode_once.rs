//! An appended statement's payload is decoded once: what admission learnt
//! (`StateMachine::Admitted`) is what both the working and the durable
//! state fold, on every layout; only an open (or a replay) folds events
//! from their bytes.

use std::sync::atomic::{AtomicU64, Ordering};

use docket_log::event::Statement;
use docket_log::machine::{AdmitContext, StateMachine};
use docket_log::{Event, Layout, Log, LogError, LogOptions};
use ed25519_dalek::SigningKey;

/// Events folded from their bytes ([`StateMachine::apply`]), across the
/// whole test binary (one test below, so nothing else counts).
static FOLDED_FROM_BYTES: AtomicU64 = AtomicU64::new(0);

/// The sum of the decimal numbers appended; admission refuses anything
/// else and hands the number to the fold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Sum {
    total: u64,
    events: u64,
}

fn number(payload: &[u8]) -> docket_log::Result<u64> {
    std::str::from_utf8(payload)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| LogError::Invalid {
            what: "x-number".into(),
            violations: vec!["the payload is not a decimal number".into()],
        })
}

impl StateMachine for Sum {
    type Admitted = u64;

    fn admit(&self, statement: &Statement, _at: &AdmitContext) -> docket_log::Result<u64> {
        number(&statement.payload)
    }

    fn apply(&mut self, event: &Event) -> docket_log::Result<()> {
        FOLDED_FROM_BYTES.fetch_add(1, Ordering::SeqCst);
        let n = number(&event.payload)?;
        self.apply_admitted(event, &n)
    }

    fn apply_admitted(&mut self, _event: &Event, n: &u64) -> docket_log::Result<()> {
        self.total += n;
        self.events += 1;
        Ok(())
    }

    fn snapshot(&self) -> Vec<(&'static str, Vec<u8>)> {
        let mut bytes = self.total.to_be_bytes().to_vec();
        bytes.extend_from_slice(&self.events.to_be_bytes());
        vec![("sum", bytes)]
    }

    fn restore(_seq: u64, parts: &[(String, Vec<u8>)]) -> docket_log::Result<Self> {
        let bytes = parts
            .iter()
            .find(|(name, _)| name == "sum")
            .map(|(_, b)| b.as_slice())
            .filter(|b| b.len() == 16)
            .ok_or_else(|| LogError::corrupt("sum", "missing or not 16 bytes"))?;
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_be_bytes(w)
        };
        Ok(Sum {
            total: word(0),
            events: word(8),
        })
    }
}

#[test]
fn given_appends_when_they_are_folded_then_no_payload_is_decoded_twice() {
    let key = SigningKey::from_bytes(&[9; 32]);
    for layout in [Layout::Tiles, Layout::Sled] {
        let dir = tempfile::tempdir().unwrap();
        let options = LogOptions {
            layout,
            ..LogOptions::default()
        };
        let log =
            Log::<Sum>::create(dir.path(), Some("decode.example/once"), options.clone()).unwrap();
        let before = FOLDED_FROM_BYTES.load(Ordering::SeqCst);
        // One at a time, then a batch, then from threads at once.
        for n in 1..=10u64 {
            log.append(Statement::sign(
                "x-number",
                n.to_string().into_bytes(),
                &key,
            ))
            .unwrap();
        }
        let batch: Vec<Statement> = (11..=20u64)
            .map(|n| Statement::sign("x-number", n.to_string().into_bytes(), &key))
            .collect();
        assert!(log.append_many(batch).unwrap().iter().all(Result::is_ok));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let log = log.clone();
                let key = key.clone();
                s.spawn(move || {
                    for i in 0..5u64 {
                        let n = 21 + t * 5 + i;
                        log.append(Statement::sign(
                            "x-number",
                            n.to_string().into_bytes(),
                            &key,
                        ))
                        .unwrap();
                    }
                });
            }
        });
        let refused = log.append(Statement::sign("x-number", b"seven".to_vec(), &key));
        assert!(
            matches!(refused, Err(LogError::Invalid { .. })),
            "{refused:?}"
        );

        assert_eq!(
            *log.state(),
            Sum {
                total: (1..=40).sum(),
                events: 40
            }
        );
        assert_eq!(
            FOLDED_FROM_BYTES.load(Ordering::SeqCst),
            before,
            "{layout:?}: an appended event was folded from its bytes"
        );
        log.close().unwrap();
        drop(log);

        // An open folds from the bytes (or the snapshot) to the same state.
        let reopened = Log::<Sum>::open(dir.path(), options).unwrap();
        assert_eq!(
            *reopened.state(),
            Sum {
                total: (1..=40).sum(),
                events: 40
            }
        );
        reopened.close().unwrap();
    }
}

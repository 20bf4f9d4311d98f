//! What the log core's probes share: a trivial state machine and the
//! layout chosen by `DOCKET_LAYOUT`.

use docket_log::machine::{AdmitContext, StateMachine};
use docket_log::{Event, LogOptions, Statement};

/// Counts events; admits everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Count(pub u64);

impl StateMachine for Count {
    type Admitted = ();

    fn admit(&self, _: &Statement, _: &AdmitContext) -> docket_log::Result<()> {
        Ok(())
    }
    fn apply(&mut self, _: &Event) -> docket_log::Result<()> {
        self.0 += 1;
        Ok(())
    }
    fn snapshot(&self) -> Vec<(&'static str, Vec<u8>)> {
        vec![("count", self.0.to_string().into_bytes())]
    }
    fn restore(_: u64, parts: &[(String, Vec<u8>)]) -> docket_log::Result<Self> {
        let n = parts
            .iter()
            .find(|(n, _)| n == "count")
            .and_then(|(_, b)| std::str::from_utf8(b).ok()?.parse().ok())
            .ok_or_else(|| docket_log::LogError::corrupt("count", "unparsable"))?;
        Ok(Count(n))
    }
}

/// `DOCKET_LAYOUT=sled` probes the sled layout; the default is tiles.
pub fn options() -> LogOptions {
    let layout = match std::env::var("DOCKET_LAYOUT").as_deref() {
        Ok("sled") => docket_log::Layout::Sled,
        _ => docket_log::Layout::Tiles,
    };
    LogOptions {
        layout,
        ..LogOptions::default()
    }
}

//! Domain commands (keys, tasks, evidence, submit, verdicts, approvals).
//! Placeholder until the domain work lands.

use anyhow::Result;
use clap::Subcommand;

use crate::Ctx;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum DomainCmd {
    /// (placeholder)
    #[command(hide = true)]
    DomainPlaceholder,
}

pub fn run(_cmd: &DomainCmd, _ctx: &Ctx) -> Result<u8> {
    Ok(crate::exit::USAGE)
}

//! The gRPC server (`docket serve`), `docket demo` and `docket bench-load`.
//! Placeholder until the server work lands.

use anyhow::Result;
use clap::Subcommand;

use crate::Ctx;

/// Commands this module adds to `docket`.
#[derive(Debug, Subcommand)]
pub enum ServerCmd {
    /// (placeholder)
    #[command(hide = true)]
    ServerPlaceholder,
}

pub fn run(_cmd: &ServerCmd, _ctx: &Ctx) -> Result<u8> {
    Ok(crate::exit::USAGE)
}

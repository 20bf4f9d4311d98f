//! `docket demo` (filled in once the domain services land).

use anyhow::Result;
use clap::Args;

use crate::Ctx;

/// `docket demo` flags.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Keep the demo ledger in this directory instead of a temporary one.
    #[arg(long)]
    pub keep: Option<std::path::PathBuf>,
}

pub fn run(_ctx: &Ctx, _args: &DemoArgs) -> Result<u8> {
    Ok(crate::exit::OK)
}

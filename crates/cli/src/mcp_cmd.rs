//! `transcope mcp`: the MCP server over stdio (`transcope-mcp`), wired here to this
//! home's index (or a fleet with `--fleet`), the price list, this machine's name and
//! the session the agent that started it runs (each registered agent's declared
//! session variable).
//!
//! Read-only: it never syncs the index (see `transcope_mcp`'s docs); it reads what
//! the hooks' Stops, `backfill` and `index sync` recorded.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use transcope_store::StoreError;

use crate::exit;
use crate::query_cmd::{load_prices, Source, FLEET_CONNECT};
use crate::transcript_cmd::process_env;

#[derive(Args, Debug)]
pub struct McpArgs {
    /// Prices from FILE (the shipped table's format) instead of the shipped table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
    #[command(flatten)]
    source: Source,
}

pub fn run_mcp(home: &Path, a: McpArgs) -> Result<u8> {
    let env = process_env();
    let registry = crate::compose::adapters();
    let session_vars: Vec<&'static str> = registry
        .mcp_servers()
        .filter_map(|(_, m)| m.session_var)
        .collect();
    let session = session_vars
        .iter()
        .find_map(|v| env.get(*v).map(|s| s.trim()).filter(|s| !s.is_empty()))
        .map(str::to_owned);
    let local = a.source.fleet.is_none();
    let open: transcope_mcp::Opener = match a.source.fleet.clone() {
        Some(url) => Box::new(move || {
            let fleet = transcope_fleet::Fleet::connect(&url, Some(FLEET_CONNECT))
                .map_err(StoreError::new)?;
            Ok(Box::new(fleet) as Box<dyn transcope_store::Store>)
        }),
        None => {
            let home = home.to_path_buf();
            Box::new(move || {
                // Never made here: a tool reads what was recorded.
                let path = transcope_index::index_path(&home);
                if std::fs::symlink_metadata(&path).is_err() {
                    return Err(StoreError::new(format!(
                        "no index at {} yet: a hook's Stop, `transcope backfill` or `transcope index sync` makes it",
                        path.display()
                    )));
                }
                let index = transcope_index::Index::open(&home).map_err(StoreError::new)?;
                Ok(Box::new(index) as Box<dyn transcope_store::Store>)
            })
        }
    };
    let config = transcope_mcp::Config {
        home: home.to_path_buf(),
        open,
        prices: load_prices(a.pricing.as_deref())?,
        machine: local.then(|| transcope_fleet::Machine::name_here(None)),
        session,
        session_vars,
    };
    transcope_mcp::serve_stdio(config)?;
    Ok(exit::OK)
}

//! `facts`: what listed stages handed on to be kept ([`transcope_core::Fact`]), each
//! with its session and the scope in force when it happened.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use transcope_index::FactFilter;

use crate::args::time_arg;
use crate::query_cmd::{index_for, Common};
use crate::table::{count, cut, local_time, Table};
use crate::{exit, print_ndjson};

#[derive(Args, Debug)]
pub struct FactsArgs {
    /// Found by this stage (its name).
    #[arg(long, value_name = "NAME")]
    stage: Option<String>,
    /// Found in this session.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    session: Option<String>,
    /// With this project in force.
    #[arg(long, value_name = "ID")]
    project: Option<String>,
    /// At or after this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<i64>,
    /// At or before this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    until: Option<i64>,
    #[command(flatten)]
    common: Common,
}

pub fn run_facts(home: &Path, a: FactsArgs) -> Result<u8> {
    let index = index_for(home, a.common)?;
    let rows = index.facts(&FactFilter {
        stage: a.stage.clone(),
        session: a.session.clone(),
        project: a.project.clone(),
        since: a.since,
        until: a.until,
    })?;
    if rows.is_empty() {
        say!(
            "no facts{}: a stage keeps facts only when it is listed (crates/cli/src/compose.rs) and hands them on",
            a.stage
                .as_deref()
                .map(|s| format!(" of stage {s:?}"))
                .unwrap_or_default()
        );
    }
    let mut out = std::io::stdout().lock();
    if a.common.json {
        print_ndjson(&mut out, rows.iter().map(|r| r.to_json()))?;
        return Ok(exit::OK);
    }
    let mut t = Table::new(&[
        "time (local)",
        "session",
        "stage",
        "project",
        "branch",
        "task",
        "value",
    ]);
    t.whole(&[1, 3, 5]);
    for r in &rows {
        let at = r.at_us.map(|us| {
            local_time(&transcope_core::Instant::from_unix_micros(us).to_python_isoformat())
        });
        t.row(vec![
            at.unwrap_or_default(),
            r.session.clone(),
            r.stage.clone(),
            r.scope[0].clone(),
            r.scope[2].clone(),
            r.scope[3].clone(),
            cut(&r.value, 60),
        ]);
    }
    t.print(&mut out, &count(rows.len() as u64, "fact"))?;
    Ok(exit::OK)
}

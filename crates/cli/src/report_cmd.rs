//! `transcope report [--html FILE]`: the index drawn as one self-contained page
//! (`transcope_report`), synced first like every query unless `--no-sync`. Without
//! `--html` the page is `transcope-report.html` in the current folder; either way the
//! first thing printed is the path written.
//!
//! The file is written whole (temporary file, then rename), so a reader never sees
//! half a report; the folder it goes in must exist (checked before the sync, so a
//! mistyped path fails at once, not after a backfill).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;

use transcope_index::{Held, Named};

use crate::args::time_arg;
use crate::query_cmd::{load_prices, store_for, Common, PriceList, Source};
use crate::table::count;
use crate::why::Asked;
use crate::{exit, println_out};

/// Where the report goes without `--html`: the current folder.
const DEFAULT_FILE: &str = "transcope-report.html";

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Write the report to FILE: one HTML page that works offline.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_FILE)]
    html: PathBuf,
    /// Sessions, transitions, markers and usage from this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<i64>,
    /// Until this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    until: Option<i64>,
    /// Only sessions in force in this project at some moment of the window, and only
    /// this project's usage (repeatable).
    #[arg(long = "project", value_name = "ID")]
    projects: Vec<String>,
    /// Prices from FILE (the shipped table's format) instead of the shipped table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<PathBuf>,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    common: Common,
}

pub fn run_report(home: &Path, a: ReportArgs) -> Result<u8> {
    let dir = match a.html.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write the report to {}: {} is not a folder",
            a.html.display(),
            dir.display()
        );
    }
    if a.html.is_dir() {
        bail!(
            "cannot write the report to {}: it is a folder",
            a.html.display()
        );
    }
    if let (Some(s), Some(u)) = (a.since, a.until) {
        if s > u {
            say!("--since is after --until");
            return Ok(exit::USAGE);
        }
    }
    let prices = load_prices(a.pricing.as_deref())?;
    let store = store_for(home, a.common, &a.source)?;
    let index = &*store;
    let projects = match crate::why::projects(index, a.projects)? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let window = transcope_report::Window {
        since: a.since,
        until: a.until,
        projects: projects.clone(),
    };
    let report = transcope_report::collect(index, &window, &PriceList::new(&prices))?;
    let page = transcope_report::render(&report);
    transcope_jsonl::write_atomic(&a.html, page.as_bytes(), true)
        .with_context(|| format!("writing the report to {}", a.html.display()))?;
    let c = report.counts();
    if c.lanes == 0 {
        let mut asked = Asked::new("sessions", Held::Sessions).window(a.since, a.until);
        for p in &projects {
            asked = asked.named(Named::Project, Some(p));
        }
        crate::why::say_empty(index, &asked)?;
    }
    let mut out = std::io::stdout().lock();
    if a.common.json {
        let v = json!({
            "file": a.html,
            "bytes": page.len(),
            "sessions": c.lanes,
            "transitions": c.segments,
            "markers": c.markers,
            "usage_projects": c.usage_projects,
            "usage_without_project": c.usage_without_project,
            "not_drawn": c.hidden,
        });
        println_out(&mut out, &v.to_string())?;
    } else {
        println_out(
            &mut out,
            &format!(
                "{}: {}, {}, {}, {} ({} KiB)",
                transcope_core::quote::escape_unsafe(&a.html.display().to_string()),
                count(c.lanes as u64, "session"),
                count(c.segments as u64, "transition"),
                count(c.markers as u64, "marker"),
                usage_groups(c.usage_projects, c.usage_without_project),
                page.len().div_ceil(1024)
            ),
        )?;
    }
    Ok(exit::OK)
}

/// The report's usage groups in words: projects by count, and the usage in no
/// project named as such (`usage in 1 group: no project`).
fn usage_groups(groups: usize, without_project: bool) -> String {
    let projects = groups - usize::from(without_project);
    match (projects, without_project) {
        (0, false) => "no usage".to_owned(),
        (0, true) => "usage in 1 group: no project".to_owned(),
        (n, false) => format!("usage in {}", count(n as u64, "project")),
        (n, true) => format!(
            "usage in {} groups: {} and no project",
            n + 1,
            count(n as u64, "project")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::usage_groups;

    #[test]
    fn usage_in_no_project_is_named_as_such() {
        assert_eq!(usage_groups(1, true), "usage in 1 group: no project");
        assert_eq!(usage_groups(1, false), "usage in 1 project");
        assert_eq!(
            usage_groups(3, true),
            "usage in 3 groups: 2 projects and no project"
        );
        assert_eq!(usage_groups(0, false), "no usage");
    }
}

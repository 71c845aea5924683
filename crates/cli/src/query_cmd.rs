//! Asking it back: `sessions`, `timeline`, `ledger`, `deliver`, `explain` and `index`.
//!
//! Every query first brings the index up to date with the default archive paths (a
//! backfill through the cursors, so only new bytes are read) and mirrors the scope logs
//! that changed, unless `--no-sync`. A person gets a table (local times, long values
//! cut, colour only on a terminal); `--json` gives one JSON object per line.

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use transcope_brain::BrainConfig;
use transcope_core::quote::quote;
use transcope_index::{Held, Index, LedgerFilter, Named, SessionFilter, TimelineItem};

use crate::args::time_arg;
use crate::table::{count, cut, local_time, Table};
use crate::transcript_cmd::process_env;
use crate::why::{self, Asked};
use crate::{exit, print_ndjson, println_out};

/// What every query takes.
#[derive(Args, Debug, Clone, Copy)]
pub struct Common {
    /// Print one JSON object per line instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Do not bring the index up to date with the default archive paths first.
    #[arg(long)]
    pub(crate) no_sync: bool,
}

/// Where a query reads: the local index, or a fleet.
#[derive(Args, Debug, Clone, Default)]
pub struct Source {
    /// Read the fleet at URL (a PostgreSQL URL every machine pushes to with `fleet
    /// push`) instead of the local index; answers name each row's machine.
    #[arg(long, value_name = "URL")]
    pub(crate) fleet: Option<String>,
}

/// How long a query waits to connect to a fleet.
pub(crate) const FLEET_CONNECT: std::time::Duration = std::time::Duration::from_secs(15);

/// The store a query reads: the fleet when `--fleet` names one, else the local index
/// (synced first unless `--no-sync`).
pub(crate) fn store_for(
    home: &Path,
    common: Common,
    source: &Source,
) -> Result<Box<dyn transcope_store::Store>> {
    Ok(match &source.fleet {
        Some(url) => Box::new(transcope_fleet::Fleet::connect(url, Some(FLEET_CONNECT))?),
        None => Box::new(index_for(home, common)?),
    })
}

#[derive(Args, Debug)]
pub struct SessionsArgs {
    /// In force in this project (its `project_id`, or its repository's short name
    /// when only one project has it).
    #[arg(long, value_name = "ID")]
    project: Option<String>,
    /// In force in this worktree.
    #[arg(long, value_name = "W")]
    worktree: Option<String>,
    /// In force on this branch.
    #[arg(long, value_name = "B")]
    branch: Option<String>,
    /// In force under this task.
    #[arg(long, value_name = "T")]
    task: Option<String>,
    /// From this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<i64>,
    /// Until this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    until: Option<i64>,
    /// Sessions of this agent only.
    #[arg(long, value_name = "NAME", value_parser = agent_names())]
    agent: Option<String>,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    common: Common,
}

/// `--agent`'s values: the registered adapters' names, in the registry's order.
fn agent_names() -> clap::builder::PossibleValuesParser {
    let names: Vec<&'static str> = crate::compose::adapters()
        .factories()
        .map(|f| f.name())
        .collect();
    clap::builder::PossibleValuesParser::new(names)
}

#[derive(Args, Debug)]
pub struct TimelineArgs {
    /// The session (its scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub struct LedgerArgs {
    /// Attributed to this project.
    #[arg(long, value_name = "ID")]
    project: Option<String>,
    /// Under this task.
    #[arg(long, value_name = "T")]
    task: Option<String>,
    /// On this git branch.
    #[arg(long, value_name = "B")]
    branch: Option<String>,
    /// Written by this session.
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    session: Option<String>,
    /// Of this type (lesson, decision, …).
    #[arg(long = "type", value_name = "T")]
    kind: Option<String>,
    /// Recorded at or after this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<i64>,
    /// Recorded at or before this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    until: Option<i64>,
    /// Only markers not yet delivered.
    #[arg(long)]
    pending: bool,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub struct DeliverArgs {
    /// Show what would be delivered; deliver nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The session (its scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
    /// The instant to explain.
    #[arg(long, value_name = "TIME")]
    at: String,
    /// The grant to check (comma-separated project ids; '' is an empty grant).
    #[arg(long, value_name = "IDS")]
    grant: Option<String>,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub struct UsageArgs {
    /// Group by (repeatable, in order) [default: project].
    #[arg(long = "by", value_name = "KEY", value_parser = usage_keys())]
    by: Vec<transcope_index::UsageKey>,
    /// Spent at or after this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    since: Option<i64>,
    /// Spent at or before this time.
    #[arg(long, value_name = "TIME", value_parser = time_arg)]
    until: Option<i64>,
    /// Spent in this project only (its `project_id`, or its repository's short name
    /// when only one project has it).
    #[arg(long, value_name = "ID")]
    project: Option<String>,
    /// Prices from FILE (the shipped table's format) instead of the shipped table.
    #[arg(long, value_name = "FILE")]
    pricing: Option<std::path::PathBuf>,
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    common: Common,
}

/// `--by`'s values, listed for `--help` and the shell completions.
fn usage_keys() -> impl clap::builder::TypedValueParser<Value = transcope_index::UsageKey> {
    use clap::builder::TypedValueParser;
    use transcope_index::UsageKey;
    clap::builder::PossibleValuesParser::new(UsageKey::ALL.map(UsageKey::name))
        .map(|s| UsageKey::parse(&s).expect("a listed key"))
}

pub(crate) use transcope_pricing::PriceList;

/// The shipped price table, or `file`'s, its names matched with the pricing providers
/// the registered adapters declare.
pub(crate) fn load_prices(file: Option<&Path>) -> Result<transcope_pricing::Prices> {
    let table = match file {
        Some(p) => transcope_pricing::Prices::load(p)
            .with_context(|| format!("reading prices from {}", p.display()))?,
        None => transcope_pricing::Prices::builtin(),
    };
    Ok(with_agents(table))
}

/// `table`, its names matched with the pricing providers the registered adapters
/// declare.
pub(crate) fn with_agents(table: transcope_pricing::Prices) -> transcope_pricing::Prices {
    table.with_providers(crate::compose::adapters().pricing_providers())
}

pub fn run_usage(home: &Path, a: UsageArgs) -> Result<u8> {
    let prices = load_prices(a.pricing.as_deref())?;
    let store = store_for(home, a.common, &a.source)?;
    let index = &*store;
    let by = transcope_query::usage_keys(&a.by);
    let project = match why::project(index, a.project.clone())? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    // One machine's rows are this machine's; a fleet's name their own.
    let here = a
        .source
        .fleet
        .is_none()
        .then(|| transcope_fleet::Machine::name_here(None));
    let groups = transcope_query::usage(
        index,
        &by,
        &transcope_index::UsageFilter {
            since: a.since,
            until: a.until,
            project: project.clone(),
            ..Default::default()
        },
        &prices,
        here.as_deref(),
    )?;
    if groups.is_empty() {
        why::say_empty(
            index,
            &Asked::new("requests", Held::Usage)
                .named(Named::Project, project.as_deref())
                .window(a.since, a.until),
        )?;
    }
    let mut out = std::io::stdout().lock();
    if a.common.json {
        print_ndjson(&mut out, groups.iter().map(|g| g.to_json(&by)))?;
        return Ok(exit::OK);
    }
    let mut header: Vec<&str> = by.iter().map(|k| k.json_key()).collect();
    header.extend([
        "input",
        "output",
        "cache write",
        "cache read",
        "total",
        "requests",
        "cost USD",
    ]);
    let mut t = Table::new(&header);
    // The keys are whole: each is what a filter of the next command takes.
    t.whole(&(0..by.len()).collect::<Vec<_>>());
    let mut total = transcope_index::UsageGroup::default();
    for g in &groups {
        let mut row: Vec<String> = g
            .keys
            .iter()
            .map(|k| {
                cut(
                    k.as_deref().filter(|k| !k.is_empty()).unwrap_or("(none)"),
                    usize::MAX,
                )
            })
            .collect();
        row.extend(usage_cells(g));
        t.row(row);
        total.absorb(g);
    }
    let mut row: Vec<String> = (0..by.len())
        .map(|i| {
            if i == 0 {
                "total".into()
            } else {
                String::new()
            }
        })
        .collect();
    row.extend(usage_cells(&total));
    if !groups.is_empty() {
        t.row(row);
    }
    t.print(&mut out, &format!("prices: {}", prices.source()))?;
    Ok(exit::OK)
}

/// A group's counts and cost, as the table's columns show them.
fn usage_cells(g: &transcope_index::UsageGroup) -> [String; 7] {
    let tk = &g.tokens;
    [
        tk.input.to_string(),
        tk.output.to_string(),
        tk.cache_creation.to_string(),
        tk.cache_read.to_string(),
        tk.total().to_string(),
        g.messages.to_string(),
        cost_text(g),
    ]
}

/// A group's cost for a person: dollars, and how many requests have no price.
fn cost_text(g: &transcope_index::UsageGroup) -> String {
    match (g.cost_usd, g.unpriced) {
        (None, _) => "–".into(),
        (Some(c), 0) => format!("{c:.2}"),
        (Some(c), n) => format!("{c:.2} (+{n} unpriced)"),
    }
}

#[derive(Subcommand, Debug)]
pub enum IndexCommand {
    /// Recreate the index from the scope logs and the transcripts (the ledger's
    /// delivery states are kept).
    Rebuild {
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
    /// Bring the index up to date with the default archive paths and the scope logs.
    Sync {
        /// Print a JSON summary.
        #[arg(long)]
        json: bool,
    },
    /// Print the index's path.
    Path,
}

/// The index, synced first unless `no_sync`.
pub(crate) fn index_for(home: &Path, common: Common) -> Result<Index> {
    if common.no_sync {
        return Ok(Index::open(home)?);
    }
    Ok(crate::sync::sync(home, crate::sync::Sync::Quick)?.0)
}

pub fn run_index(home: &Path, cmd: IndexCommand) -> Result<u8> {
    let mut out = std::io::stdout().lock();
    match cmd {
        IndexCommand::Path => {
            println_out(
                &mut out,
                &transcope_index::index_path(home).display().to_string(),
            )?;
        }
        IndexCommand::Sync { json } => {
            let (_, synced) = crate::sync::sync(home, crate::sync::Sync::Full)?;
            crate::sync::summary_line(&mut out, json, &synced)?;
        }
        IndexCommand::Rebuild { json } => return crate::rebuild_cmd::run_rebuild(home, json),
    }
    Ok(exit::OK)
}

pub fn run_sessions(home: &Path, a: SessionsArgs) -> Result<u8> {
    let store = store_for(home, a.common, &a.source)?;
    let index = &*store;
    let project = match why::project(index, a.project.clone())? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let sessions = index.sessions(&SessionFilter {
        project: project.clone(),
        worktree: a.worktree.clone(),
        branch: a.branch.clone(),
        task: a.task.clone(),
        since: a.since,
        until: a.until,
        agent: a.agent.clone(),
    })?;
    if sessions.is_empty() {
        why::say_empty(
            index,
            &Asked::new("sessions", Held::Sessions)
                .named(Named::Project, project.as_deref())
                .named(Named::Worktree, a.worktree.as_deref())
                .named(Named::Branch, a.branch.as_deref())
                .named(Named::Task, a.task.as_deref())
                .window(a.since, a.until),
        )?;
    }
    let mut out = std::io::stdout().lock();
    if a.common.json {
        print_ndjson(&mut out, sessions.iter().map(|s| s.to_json()))?;
        return Ok(exit::OK);
    }
    let mut t = Table::new(&[
        "session",
        "agent",
        "first (local)",
        "last (local)",
        "projects",
        "transitions",
        "markers",
    ]);
    // The session keys and project ids are whole: they are what the next command
    // takes.
    t.whole(&[0, 4]);
    for s in &sessions {
        let mut key = s.session.clone();
        if s.parent.is_some() {
            key = format!("  ↳ {key}");
        }
        t.row(vec![
            key,
            s.agent.clone().unwrap_or_default(),
            s.first_at.as_deref().map(local_time).unwrap_or_default(),
            s.last_at.as_deref().map(local_time).unwrap_or_default(),
            s.projects.join(", "),
            s.transitions.to_string(),
            s.markers.to_string(),
        ]);
    }
    t.print(&mut out, &count(sessions.len() as u64, "session"))?;
    Ok(exit::OK)
}

pub fn run_timeline(home: &Path, a: TimelineArgs) -> Result<u8> {
    let store = store_for(home, a.common, &a.source)?;
    let index = &*store;
    let mut out = std::io::stdout().lock();
    if a.common.json {
        // Streamed: a session with a million transitions is never held whole.
        let mut nd = crate::Ndjson::new(&mut out);
        let mut failed = None;
        let mut any = false;
        index.timeline_each(&a.session, &mut |i| {
            any = true;
            match nd.push(&i.to_json()) {
                Ok(()) => true,
                Err(e) => {
                    failed = Some(e);
                    false
                }
            }
        })?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        nd.finish()?;
        if !any {
            say_no_events(index, &a.session)?;
        }
        return Ok(exit::OK);
    }
    let items = index.timeline(&a.session)?;
    if items.is_empty() {
        say_no_events(index, &a.session)?;
    }
    let mut t = Table::new(&["time (local)", "kind", "what", "attribution"]);
    for i in &items {
        match i {
            TimelineItem::Transition { at, scope } => {
                let f = |k: &str| {
                    scope
                        .get(k)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned()
                };
                let mut what = vec![f("project_id")];
                for k in ["worktree", "branch", "task"] {
                    let v = f(k);
                    if !v.is_empty() {
                        what.push(format!("{k}={v}"));
                    }
                }
                if what[0].is_empty() {
                    what[0] = format!("cwd={}", f("cwd"));
                }
                // Whole: it names the project, worktree, branch and task.
                t.row(vec![
                    local_time(at),
                    "transition".into(),
                    cut(&what.join("  "), usize::MAX),
                    String::new(),
                ]);
            }
            TimelineItem::Marker(m) => t.row(vec![
                m.at.as_deref().map(local_time).unwrap_or_default(),
                m.kind.clone(),
                cut(&m.content, 80),
                m.attribution.clone().unwrap_or_default(),
            ]),
        }
    }
    t.print(
        &mut out,
        &format!("{} of {}", count(items.len() as u64, "event"), a.session),
    )?;
    Ok(exit::OK)
}

/// Why `session`'s timeline is empty: no such session (and the keys near it), or a
/// session with neither transitions nor markers.
fn say_no_events(index: &dyn transcope_store::Store, session: &str) -> Result<()> {
    if index.knows(Named::Session, session)? {
        say!("session {session} has no transitions or markers in the index");
        Ok(())
    } else {
        why::say_empty(
            index,
            &Asked::new("events", Held::Sessions).named(Named::Session, Some(session)),
        )
    }
}

fn ledger_table(rows: &[transcope_index::LedgerRow]) -> Table {
    let mut t = Table::new(&[
        "time (local)",
        "session",
        "type",
        "content",
        "attribution",
        "project",
        "task",
        "state",
    ]);
    // The session, project and task are whole: the next command takes them.
    t.whole(&[1, 5, 6]);
    for r in rows {
        t.row(vec![
            r.at.as_deref().map(local_time).unwrap_or_default(),
            r.session.clone().unwrap_or_else(|| "-".into()),
            r.kind.clone(),
            cut(&r.content, 60),
            r.attribution.clone().unwrap_or_default(),
            r.project_id.clone().unwrap_or_default(),
            r.task.clone().unwrap_or_default(),
            r.state.as_str().to_owned(),
        ]);
    }
    t
}

pub fn run_ledger(home: &Path, a: LedgerArgs) -> Result<u8> {
    let store = store_for(home, a.common, &a.source)?;
    let index = &*store;
    let project = match why::project(index, a.project.clone())? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let rows = index.ledger(&LedgerFilter {
        project: project.clone(),
        task: a.task.clone(),
        branch: a.branch.clone(),
        session: a.session.clone(),
        kind: a.kind.clone(),
        since: a.since,
        until: a.until,
        pending: a.pending,
        ..LedgerFilter::default()
    })?;
    if rows.is_empty() {
        let mut asked = Asked::new("markers", Held::Markers)
            .named(Named::Session, a.session.as_deref())
            .named(Named::Project, project.as_deref())
            .named(Named::Task, a.task.as_deref())
            .named(Named::Branch, a.branch.as_deref())
            .named(Named::MarkerType, a.kind.as_deref())
            .window(a.since, a.until);
        asked.pending = a.pending;
        why::say_empty(index, &asked)?;
    }
    let mut out = std::io::stdout().lock();
    if a.common.json {
        print_ndjson(&mut out, rows.iter().map(|r| r.to_json()))?;
        return Ok(exit::OK);
    }
    ledger_table(&rows).print(&mut out, &count(rows.len() as u64, "marker"))?;
    Ok(exit::OK)
}

pub fn run_deliver(home: &Path, a: DeliverArgs) -> Result<u8> {
    if !a.common.no_sync {
        crate::sync::sync(home, crate::sync::Sync::Quick)?;
    }
    let env = process_env();
    let mut out = std::io::stdout().lock();
    if a.dry_run {
        let index = Index::open(home)?;
        let rows = index.pending(None, None, None)?;
        if a.common.json {
            print_ndjson(&mut out, rows.iter().map(|r| r.to_json()))?;
        } else {
            ledger_table(&rows).print(
                &mut out,
                &format!("{} would be delivered", count(rows.len() as u64, "marker")),
            )?;
        }
        return Ok(exit::OK);
    }
    let report = crate::deliver::deliver_all(home, &env)?;
    for e in &report.errors {
        say!("{e}");
    }
    let pending = Index::open(home)?.pending_count(None, None)?;
    if a.common.json {
        let mut v = report.to_json();
        v["pending"] = json!(pending);
        v["outbox_dir"] = json!(BrainConfig::from_env(home, &env).outbox);
        println_out(&mut out, &v.to_string())?;
    } else {
        println_out(
            &mut out,
            &format!(
                "{} sent, {} to the outbox ({}), {} rejected, {} failed; {} pending",
                report.sent,
                report.outbox,
                crate::deliver::outbox_shown(home, &env),
                report.rejected,
                report.failed,
                pending
            ),
        )?;
    }
    Ok(if report.failed > 0 {
        exit::RUNTIME
    } else {
        exit::OK
    })
}

pub fn run_explain(home: &Path, a: ExplainArgs) -> Result<u8> {
    if transcope_core::timestamp::parse(&a.at).is_none() {
        say!("--at: not a time: {}", quote(&a.at));
        return Ok(exit::USAGE);
    }
    let store = store_for(home, a.common, &a.source)?;
    let index = &*store;
    let e = transcope_query::explain(index, &a.session, &a.at, a.grant.as_deref())?;
    if e.rows == 0 && !index.knows(Named::Session, &a.session)? {
        why::say_empty(
            index,
            &Asked::new("rows", Held::Sessions).named(Named::Session, Some(&a.session)),
        )?;
    }
    let v = e.to_json();
    let (in_force, why, markers) = (
        e.in_force.as_ref().map(|(i, r)| (*i, r)),
        e.why(),
        &e.markers,
    );
    let (attribution, grant_says, project) = (&e.attribution, e.admits, e.project());
    let mut out = std::io::stdout().lock();
    if a.common.json {
        println_out(&mut out, &v.to_string())?;
        return Ok(exit::OK);
    }
    let label = attribution
        .as_ref()
        .map_or("none".to_owned(), |a| a.label.as_str().to_owned());
    let mut t = Table::new(&["", ""]);
    t.row(vec!["session".into(), a.session.clone()]);
    t.row(vec![
        "at".into(),
        format!("{} (local {})", a.at, local_time(&a.at)),
    ]);
    t.row(vec!["in force".into(), why]);
    if let Some((_, r)) = in_force {
        for k in ["project_id", "worktree", "branch", "task", "cwd"] {
            if let Some(v) = r.get(k).and_then(Value::as_str).filter(|v| !v.is_empty()) {
                t.row(vec![format!("  {k}"), cut(v, usize::MAX)]);
            }
        }
    }
    t.row(vec!["label".into(), label]);
    if let (Some(g), Some(ok)) = (&a.grant, grant_says) {
        t.row(vec![
            "grant".into(),
            format!(
                "{g:?} {} project {project:?}",
                if ok { "admits" } else { "does not admit" }
            ),
        ]);
    }
    for m in markers {
        t.row(vec![
            format!("marker ({})", m["type"].as_str().unwrap_or("")),
            format!(
                "{} — {}",
                m["attribution"].as_str().unwrap_or("none"),
                cut(m["content"].as_str().unwrap_or(""), 60)
            ),
        ]);
    }
    t.print(&mut out, "")?;
    Ok(exit::OK)
}

/// `transcope statusline`'s flags.
#[derive(Args, Debug)]
pub struct StatuslineArgs {
    /// Print the figures as one JSON object (`session`, `at`, `scope`, `spent`,
    /// `session_cost_usd`, `line`) instead of the line.
    #[arg(long)]
    json: bool,
}

/// `transcope statusline`: one line for Claude Code's status line (the payload on
/// stdin): the session's scope in force and what its task (else its project) and the
/// session have cost so far, as the index knows it at the last Stop. Reads, never
/// syncs; prints what it can and exits 0.
pub fn run_statusline(home: &Path, a: StatuslineArgs) -> Result<u8> {
    let mut input = String::new();
    let _ = std::io::Read::read_to_string(&mut std::io::stdin().lock().take(1 << 20), &mut input);
    let v: Value = serde_json::from_str(&input).unwrap_or(Value::Null);
    let session = v["session_id"].as_str();
    // Never made here (a status line reads); one that cannot be used is said on
    // stderr, and the line goes on without its costs.
    let index = std::fs::symlink_metadata(transcope_index::index_path(home))
        .is_ok()
        .then(|| Index::open(home).map_err(|e| say!("{e}")).ok())
        .flatten();
    let prices = with_agents(transcope_pricing::Prices::builtin());
    let status = transcope_query::status(
        home,
        index.as_ref().map(|i| i as &dyn transcope_store::Store),
        session,
        &prices,
        &transcope_core::Instant::now().to_python_isoformat(),
    );
    let mut out = std::io::stdout().lock();
    if a.json {
        println_out(&mut out, &status.to_json().to_string())?;
        return Ok(exit::OK);
    }
    // Values read from the index are shown, never obeyed (see `table`).
    println_out(
        &mut out,
        &transcope_core::quote::escape_unsafe(&status.line()),
    )?;
    Ok(exit::OK)
}

//! `transcope scope record|log|at` and `transcope attribute`.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::Value;
use transcope_core::quote::quote;
use transcope_core::session::is_valid_session_id;
use transcope_core::{py, scope::normalise, Grant, Scope, ScopeField};
use transcope_jsonl::{FinalLine, Framer, Line, LineSink};
use transcope_scopelog::{Event, RecordError, ScopeLog};

use crate::{exit, println_out};

#[derive(Subcommand, Debug)]
pub enum ScopeCommand {
    /// Record that a session moved to a scope at an instant; prints the row written, or
    /// nothing (and says why on stderr) when nothing was.
    Record(RecordArgs),
    /// Print every readable row of a session's scope log, one per line, in file order.
    Log(SessionArg),
    /// Print the scope (project, worktree, branch, task, …) in force at an instant, or
    /// null.
    At(AtArgs),
}

#[derive(Args, Debug)]
pub struct SessionArg {
    /// The session id (the scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
}

#[derive(Args, Debug)]
pub struct AtArgs {
    /// The session id (the scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
    /// The instant, ISO 8601 (e.g. 2026-10-08T10:20:00Z; no offset means UTC).
    #[arg(long, allow_hyphen_values = true)]
    at: String,
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// The session id (the scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
    /// When the session moved (ISO 8601); stored as given.
    #[arg(long, allow_hyphen_values = true)]
    at: String,
    /// Comma-separated project ids the session may claim ('' is an empty grant; no
    /// --grant is no grant).
    #[arg(long, allow_hyphen_values = true)]
    grant: Option<String>,
    /// A JSON object with any of the scope fields (project_id, project, repo, worktree,
    /// cwd, remote, branch, swarm, task, task_revision, lane); the flags below override
    /// its keys.
    #[arg(long, allow_hyphen_values = true, value_name = "JSON")]
    scope: Option<String>,
    #[arg(long = "project-id", allow_hyphen_values = true, value_name = "V")]
    /// The project id (e.g. github.com/acme/alpha).
    project_id: Option<String>,
    /// The project's name.
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    project: Option<String>,
    /// The repository (e.g. acme/alpha).
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    repo: Option<String>,
    /// The worktree's name.
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    worktree: Option<String>,
    /// The working folder.
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    cwd: Option<String>,
    /// The git remote's URL.
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    remote: Option<String>,
    /// The git branch.
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    branch: Option<String>,
    /// The swarm (AGENTIHOOKS_SWARM).
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    swarm: Option<String>,
    /// The task (AGENTIHOOKS_SWARM_TASK).
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    task: Option<String>,
    /// The task's revision.
    #[arg(long = "task-revision", allow_hyphen_values = true, value_name = "V")]
    task_revision: Option<String>,
    /// The lane (AGENTIHOOKS_SWARM_LANE).
    #[arg(long, allow_hyphen_values = true, value_name = "V")]
    lane: Option<String>,
}

impl RecordArgs {
    fn scope(&self) -> Result<Scope, String> {
        let mut scope = match &self.scope {
            Some(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(m)) => Scope::from_json_map(&m),
                Ok(_) => return Err("--scope must be a JSON object".into()),
                Err(e) => return Err(format!("--scope is not valid JSON: {e}")),
            },
            None => Scope::default(),
        };
        let flags = [
            (ScopeField::ProjectId, &self.project_id),
            (ScopeField::Project, &self.project),
            (ScopeField::Repo, &self.repo),
            (ScopeField::Worktree, &self.worktree),
            (ScopeField::Cwd, &self.cwd),
            (ScopeField::Remote, &self.remote),
            (ScopeField::Branch, &self.branch),
            (ScopeField::Swarm, &self.swarm),
            (ScopeField::Task, &self.task),
            (ScopeField::TaskRevision, &self.task_revision),
            (ScopeField::Lane, &self.lane),
        ];
        for (f, v) in flags {
            if let Some(v) = v {
                scope.set(f, normalise(&Value::String(v.clone())));
            }
        }
        Ok(scope)
    }
}

#[derive(Args, Debug)]
pub struct AttributeArgs {
    /// The session id (the scope-log key).
    #[arg(long, allow_hyphen_values = true)]
    session: String,
    /// Comma-separated project ids the session may claim.
    #[arg(long, allow_hyphen_values = true)]
    grant: Option<String>,
    /// NDJSON events, one {"at": …, "attrs": {…}} per line [default: stdin].
    file: Option<PathBuf>,
}

pub fn run_scope(home: &Path, cmd: ScopeCommand) -> Result<u8> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match cmd {
        ScopeCommand::Record(args) => {
            let scope = match args.scope() {
                Ok(s) => s,
                Err(msg) => {
                    say!("{msg}");
                    return Ok(exit::USAGE);
                }
            };
            // The reference's order (scope-log.md §2.1): the grant, then the time, then
            // the session id. `record` keeps it; an invalid id is its silent "nothing".
            let grant = args.grant.as_deref().map(Grant::parse_list);
            let log = ScopeLog::open(home, args.session.clone());
            match log.record(&scope, &args.at, grant.as_ref()) {
                Ok(Some(row)) => {
                    println_out(&mut out, &row.line)?;
                    Ok(exit::OK)
                }
                Ok(None) if !is_valid_session_id(&args.session) => {
                    say!("{}; nothing written", not_a_session(&args.session));
                    Ok(exit::OK)
                }
                Ok(None) => {
                    say!(
                        "nothing written: that scope is already the one in force at {} (or a later row is already recorded)",
                        args.at
                    );
                    Ok(exit::OK)
                }
                Err(RecordError::Refused(r)) => {
                    eprintln!("refused: {r}");
                    Ok(exit::REFUSED)
                }
                Err(e) => {
                    if matches!(e, RecordError::Io { .. }) {
                        // A write refused before its first byte leaves no empty log.
                        let _ = log.remove_if_empty();
                    }
                    Err(e).context("recording the transition")
                }
            }
        }
        ScopeCommand::Log(args) => {
            let Some(log) = existing_log(home, &args.session) else {
                return Ok(exit::OK);
            };
            let mut rows = 0usize;
            for row in log.transitions() {
                rows += 1;
                println_out(&mut out, &py::dumps(&Value::Object(row)))?;
            }
            if rows == 0 {
                say!("the scope log of {} has no readable row", args.session);
            }
            Ok(exit::OK)
        }
        ScopeCommand::At(args) => {
            if transcope_core::timestamp::parse(&args.at).is_none() {
                say!(
                    "not a time: {} (e.g. 2026-10-08T10:20:00Z); nothing is in force at it",
                    quote(&args.at)
                );
            } else if existing_log(home, &args.session).is_none() {
                println_out(&mut out, "null")?;
                return Ok(exit::OK);
            }
            let log = ScopeLog::open(home, args.session);
            let text = match log.scope_at(&args.at) {
                Some(s) => py::dumps(&Value::Object(s.to_json_map())),
                None => "null".to_owned(),
            };
            println_out(&mut out, &text)?;
            Ok(exit::OK)
        }
    }
}

fn not_a_session(id: &str) -> String {
    format!(
        "not a session id: {} (letters, digits, '.', '_' and '-' only)",
        quote(id)
    )
}

/// The session's log when there is one; else says why not on stderr.
fn existing_log(home: &Path, session: &str) -> Option<ScopeLog> {
    if !is_valid_session_id(session) {
        say!("{}", not_a_session(session));
        return None;
    }
    let log = ScopeLog::open(home, session.to_owned());
    match log.path() {
        Some(p) if p.exists() => Some(log),
        Some(p) => {
            say!("no scope log for session {session} (no {})", p.display());
            None
        }
        None => Some(log),
    }
}

pub fn run_attribute(home: &Path, args: AttributeArgs) -> Result<u8> {
    let input: Box<dyn Read> = match &args.file {
        Some(p) => {
            Box::new(std::fs::File::open(p).with_context(|| format!("opening {}", p.display()))?)
        }
        None => Box::new(io::stdin().lock()),
    };
    // Framed with the transcript line cap: an endless line costs at most the cap in
    // memory and is reported like any other unreadable event line.
    let mut sink = EventSink::default();
    let framer = Framer::builder().final_line(FinalLine::Yield).build();
    framer
        .frame_reader(input, &mut Vec::new(), 0, 1, &mut sink)
        .map_err(|e| match e {
            transcope_jsonl::Error::Io { source, .. } => anyhow::Error::new(source),
            other => anyhow::anyhow!("{other}"),
        })
        .context("reading events")?;
    let (events, bad) = (sink.events, sink.bad);
    let grant = args.grant.as_deref().map(Grant::parse_list);
    let log = ScopeLog::open(home, args.session);
    let results = log.attribute(&events, grant.as_ref());
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for r in &results {
        println_out(&mut out, &r.to_python_json())?;
    }
    out.flush().ok();
    if bad > 0 {
        bail!("{bad} event line(s) could not be read");
    }
    Ok(exit::OK)
}

/// Collects `attribute`'s events, one JSON object per line; blank lines are skipped,
/// anything else unreadable (over the line cap included) is counted and reported.
#[derive(Default)]
struct EventSink {
    events: Vec<Event>,
    bad: usize,
}

impl EventSink {
    fn bad_line(&mut self, number: u64, why: &str) {
        self.bad += 1;
        say!("event line {number} {why}; skipped");
    }
}

impl LineSink for EventSink {
    type Error = std::convert::Infallible;

    fn line(&mut self, line: Line<'_>) -> Result<bool, Self::Error> {
        let text = String::from_utf8_lossy(line.bytes);
        let text = text.trim();
        if text.is_empty() {
            return Ok(true);
        }
        match serde_json::from_str::<Value>(text)
            .ok()
            .as_ref()
            .and_then(Event::from_json)
        {
            Some(e) => self.events.push(e),
            None => self.bad_line(line.number, "is not a JSON object"),
        }
        Ok(true)
    }

    fn oversized(&mut self, _offset: u64, number: u64, len: u64) -> Result<bool, Self::Error> {
        self.bad_line(number, &format!("is {len} bytes, over the line cap"));
        Ok(true)
    }
}

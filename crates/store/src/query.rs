//! The questions people ask back, as values: which sessions, what a session did in
//! order, which markers; and the rule that decides whether a session was in a scope.
//!
//! "In force" is the scope log's own rule (scope-log.md §4.1): at an instant, the row
//! in force is the last row in file order whose time is at or before it. A session
//! matches a filter when, at some instant of the window within its life (from its
//! first to its last recorded time), the row in force matches; the row in force
//! changes only at row times, so the window's start and every row time in the window
//! are the instants to look at.

use serde_json::{json, Map, Value};

use crate::{Origin, State};

/// Which sessions (`transcope sessions`): every filter given must match the row in
/// force at one instant of the window.
#[derive(Clone, Debug, Default)]
pub struct SessionFilter {
    /// `project_id`.
    pub project: Option<String>,
    /// `worktree`.
    pub worktree: Option<String>,
    /// `branch`.
    pub branch: Option<String>,
    /// `task`.
    pub task: Option<String>,
    /// The window's start (microseconds since the epoch).
    pub since: Option<i64>,
    /// The window's end.
    pub until: Option<i64>,
    /// The agent whose session it is (`claude`, `codex`, …, as the adapter names it).
    pub agent: Option<String>,
}

impl SessionFilter {
    /// Whether a session of `agent` is kept (every session when no agent is asked
    /// for; none whose agent is not recorded when one is).
    pub fn keeps_agent(&self, agent: Option<&str>) -> bool {
        self.agent.as_deref().is_none_or(|a| agent == Some(a))
    }

    /// Whether any scope field is asked for (a window alone is not a scope).
    pub fn scoped(&self) -> bool {
        self.project.is_some()
            || self.worktree.is_some()
            || self.branch.is_some()
            || self.task.is_some()
    }
}

/// One session, as `transcope sessions` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// The scope-log key.
    pub session: String,
    /// The root session's key, for a sub-agent.
    pub parent: Option<String>,
    /// `claude`, `codex`, …
    pub agent: Option<String>,
    /// The transcript.
    pub transcript: Option<String>,
    /// The first recorded time (of the transcript or, when none is known, its log).
    pub first_at: Option<String>,
    /// The last recorded time.
    pub last_at: Option<String>,
    /// Project ids in force, in order of first appearance in the log.
    pub projects: Vec<String>,
    /// Rows in the scope log.
    pub transitions: u64,
    /// Markers in the ledger.
    pub markers: u64,
    /// The machine that recorded it (a fleet's rows; `None` on one machine).
    pub machine: Option<String>,
}

impl SessionInfo {
    /// The `--json` object (cli.md).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "session": self.session,
            "parent": self.parent,
            "agent": self.agent,
            "transcript": self.transcript,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "projects": self.projects,
            "transitions": self.transitions,
            "markers": self.markers,
        });
        with_machine(&mut v, self.machine.as_deref());
        v
    }
}

/// One scope-log row as [`matches`] reads it.
#[derive(Clone, Debug)]
pub struct Transition {
    /// The row's place in its log.
    pub seq: i64,
    /// Its time (microseconds since the epoch; `None`: not a time).
    pub at_us: Option<i64>,
    /// `project_id`, `worktree`, `branch`, `task`.
    pub fields: [String; 4],
}

/// Which markers (`transcope ledger`).
#[derive(Clone, Debug, Default)]
pub struct LedgerFilter {
    /// `project_id` of the attribution.
    pub project: Option<String>,
    /// `task`.
    pub task: Option<String>,
    /// `branch` of the attribution.
    pub branch: Option<String>,
    /// The writing session.
    pub session: Option<String>,
    /// The marker type.
    pub kind: Option<String>,
    /// Record time at or after (microseconds).
    pub since: Option<i64>,
    /// Record time at or before.
    pub until: Option<i64>,
    /// Pending markers only.
    pub pending: bool,
    /// Recorded by this origin only.
    pub origin: Option<Origin>,
    /// At most this many, in the order found.
    pub limit: Option<usize>,
    /// This idempotency key only.
    pub key: Option<String>,
}

/// One ledger row.
#[derive(Clone, Debug, PartialEq)]
pub struct LedgerRow {
    /// The idempotency key.
    pub idempotency_key: String,
    /// The writing session.
    pub session: Option<String>,
    /// The marker type.
    pub kind: String,
    /// The whole content.
    pub content: String,
    /// The marker's attributes as written.
    pub attrs: Value,
    /// The record time, as recorded.
    pub at: Option<String>,
    /// `scoped`, `fleet`, `unknown`, …
    pub attribution: Option<String>,
    /// Scope fields of the attribution.
    pub project_id: Option<String>,
    /// The worktree.
    pub worktree: Option<String>,
    /// The branch.
    pub branch: Option<String>,
    /// The task.
    pub task: Option<String>,
    /// The delivery state.
    pub state: State,
    /// The request body to deliver.
    pub body: Value,
    /// Who recorded it.
    pub origin: String,
    /// What the last delivery said (an outbox path, a refusal).
    pub detail: Option<String>,
    /// The machine that recorded it (a fleet's rows; `None` on one machine).
    pub machine: Option<String>,
}

impl LedgerRow {
    /// The `--json` object (cli.md).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "idempotency_key": self.idempotency_key,
            "session": self.session,
            "type": self.kind,
            "content": self.content,
            "attrs": self.attrs,
            "at": self.at,
            "attribution": self.attribution,
            "project_id": self.project_id,
            "worktree": self.worktree,
            "branch": self.branch,
            "task": self.task,
            "state": self.state.as_str(),
        });
        with_machine(&mut v, self.machine.as_deref());
        v
    }

    /// The record a sink delivers.
    pub fn record(&self) -> transcope_brain::MarkerRecord {
        transcope_brain::MarkerRecord {
            body: self.body.clone(),
            content: self.content.clone(),
            idempotency_key: self.idempotency_key.clone(),
            session: self.session.clone(),
        }
    }
}

/// `v` with a `machine` field last, when a row names one (a fleet's): a local
/// answer's objects are as they were.
fn with_machine(v: &mut Value, machine: Option<&str>) {
    if let (Some(m), Value::Object(o)) = (machine, v) {
        o.insert("machine".into(), Value::String(m.to_owned()));
    }
}

/// One line of `transcope timeline`.
#[derive(Clone, Debug, PartialEq)]
pub enum TimelineItem {
    /// A scope-log row: its time and the eleven scope fields.
    Transition {
        /// As recorded.
        at: String,
        /// The row's scope fields, in the log's order.
        scope: Map<String, Value>,
    },
    /// A marker.
    Marker(Box<LedgerRow>),
}

impl TimelineItem {
    /// The `--json` object (cli.md).
    pub fn to_json(&self) -> Value {
        match self {
            TimelineItem::Transition { at, scope } => {
                let mut m = Map::new();
                m.insert("at".into(), Value::String(at.clone()));
                m.insert("kind".into(), Value::String("transition".into()));
                m.extend(scope.clone());
                Value::Object(m)
            }
            TimelineItem::Marker(r) => json!({
                "at": r.at,
                "kind": "marker",
                "type": r.kind,
                "content": r.content,
                "attribution": r.attribution,
                "project_id": r.project_id,
                "task": r.task,
                "state": r.state.as_str(),
            }),
        }
    }
}

/// A mirrored scope-log line as the object it is (anything else: an empty map).
pub fn log_row(line: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// [`matches`] for a filter without a scope: whether the window meets the session's
/// life (its log's timed rows, `log_first` to `log_last`, and its transcript's times).
pub fn within(
    log_first: Option<i64>,
    log_last: Option<i64>,
    f: &SessionFilter,
    first_us: Option<i64>,
    last_us: Option<i64>,
) -> bool {
    match life(log_first, log_last, first_us, last_us) {
        Some(life) => in_window(life, f).is_some(),
        None => f.since.is_none() && f.until.is_none(),
    }
}

/// A session's life: its log's first and last timed rows and its transcript's times,
/// earliest to latest; `None` when nothing is timed.
pub fn life(
    log_first: Option<i64>,
    log_last: Option<i64>,
    first_us: Option<i64>,
    last_us: Option<i64>,
) -> Option<(i64, i64)> {
    let start = log_first.into_iter().chain(first_us).min()?;
    let end = log_last.into_iter().chain(last_us).max()?;
    Some((start, end))
}

/// The part of `life` inside `f`'s window, when there is one.
pub fn in_window((start, end): (i64, i64), f: &SessionFilter) -> Option<(i64, i64)> {
    let lo = f.since.map_or(start, |s| s.max(start));
    let hi = f.until.map_or(end, |u| u.min(end));
    (lo <= hi).then_some((lo, hi))
}

/// Whether some instant of the window, within the session's life, has a row in force
/// that matches `f`'s scope (module docs); `log` is the session's rows in file order.
pub fn matches(
    log: &[Transition],
    f: &SessionFilter,
    first_us: Option<i64>,
    last_us: Option<i64>,
) -> bool {
    let timed: Vec<&Transition> = log.iter().filter(|t| t.at_us.is_some()).collect();
    let times = timed.iter().filter_map(|t| t.at_us);
    // Nothing timed, or no part of the window in the session's life: no instant to ask.
    let Some((lo, hi)) =
        life(times.clone().min(), times.max(), first_us, last_us).and_then(|l| in_window(l, f))
    else {
        return false;
    };
    // Rows by time; the row in force at t is the greatest seq among rows at or
    // before t: a running maximum over the sorted times.
    let mut by_time: Vec<(i64, i64, usize)> = timed
        .iter()
        .enumerate()
        .map(|(i, t)| (t.at_us.unwrap_or(0), t.seq, i))
        .collect();
    by_time.sort();
    let mut best: Vec<usize> = Vec::with_capacity(by_time.len());
    for (j, &(_, seq, i)) in by_time.iter().enumerate() {
        let keep = match j.checked_sub(1).map(|p| best[p]) {
            Some(b) if timed[b].seq > seq => b,
            _ => i,
        };
        best.push(keep);
    }
    let in_force = |t: i64| -> Option<&Transition> {
        let n = by_time.partition_point(|&(at, _, _)| at <= t);
        n.checked_sub(1).map(|k| timed[best[k]])
    };
    let ok = |t: &Transition| {
        let want = [&f.project, &f.worktree, &f.branch, &f.task];
        want.iter()
            .zip(&t.fields)
            .all(|(w, v)| w.as_ref().is_none_or(|w| w == v))
    };
    std::iter::once(lo)
        .chain(
            by_time
                .iter()
                .map(|&(at, _, _)| at)
                .filter(|&at| at > lo && at <= hi),
        )
        .any(|t| in_force(t).is_some_and(ok))
}

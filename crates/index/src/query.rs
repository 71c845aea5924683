//! The questions people ask back: which sessions, what a session did in order, which
//! markers.
//!
//! "In force" is the scope log's own rule (scope-log.md §4.1): at an instant, the row
//! in force is the last row in file order whose time is at or before it. A session
//! matches a filter when, at some instant of the window within its life (from its
//! first to its last recorded time), the row in force matches; the row in force
//! changes only at row times, so the window's start and every row time in the window
//! are the instants to look at.

use std::collections::HashMap;

use rusqlite::params;
use serde_json::{json, Map, Value};

use crate::{Index, IndexError, Origin, State};

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
}

impl SessionFilter {
    fn scoped(&self) -> bool {
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
}

impl SessionInfo {
    /// The `--json` object (cli.md).
    pub fn to_json(&self) -> Value {
        json!({
            "session": self.session,
            "parent": self.parent,
            "agent": self.agent,
            "transcript": self.transcript,
            "first_at": self.first_at,
            "last_at": self.last_at,
            "projects": self.projects,
            "transitions": self.transitions,
            "markers": self.markers,
        })
    }
}

/// One transition row of the mirror.
#[derive(Clone, Debug)]
struct Transition {
    seq: i64,
    at_us: Option<i64>,
    fields: [String; 4],
}

/// Which markers (`transcope ledger`).
#[derive(Clone, Debug, Default)]
pub struct LedgerFilter {
    /// `project_id` of the attribution.
    pub project: Option<String>,
    /// `task`.
    pub task: Option<String>,
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
}

impl LedgerRow {
    /// The `--json` object (cli.md).
    pub fn to_json(&self) -> Value {
        json!({
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
        })
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

pub(crate) const LEDGER_COLUMNS: &str =
    "idempotency_key, session, type, content, attrs, at, attribution,
    project_id, worktree, branch, task, state, body, origin, detail";

pub(crate) fn ledger_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<LedgerRow> {
    let json = |i: usize| -> rusqlite::Result<Value> {
        let text: String = r.get(i)?;
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    };
    Ok(LedgerRow {
        idempotency_key: r.get(0)?,
        session: r.get(1)?,
        kind: r.get(2)?,
        content: r.get(3)?,
        attrs: json(4)?,
        at: r.get(5)?,
        attribution: r.get(6)?,
        project_id: r.get(7)?,
        worktree: r.get(8)?,
        branch: r.get(9)?,
        task: r.get(10)?,
        state: State::parse(&r.get::<_, String>(11)?).unwrap_or(State::Pending),
        body: json(12)?,
        origin: r.get(13)?,
        detail: r.get(14)?,
    })
}

impl Index {
    /// The sessions `filter` matches, by first time then key.
    pub fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionInfo>, IndexError> {
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        let mut st = conn
            .prepare(
                "SELECT session, parent, agent, transcript, first_at, first_us, last_at, last_us
                 FROM sessions",
            )
            .map_err(sql)?;
        type Head = (
            String,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<String>,
            Option<i64>,
        );
        let heads: Vec<Head> = st
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(sql)?;
        // Each log's size and time span, summed by SQLite over its index: no row of a
        // log is held, however long it is.
        let spans: HashMap<String, (u64, Option<i64>, Option<i64>)> = {
            let mut st = conn
                .prepare(
                    "SELECT session, count(*), min(at_us), max(at_us) FROM transitions
                     GROUP BY session",
                )
                .map_err(sql)?;
            let got = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        (r.get::<_, i64>(1)? as u64, r.get(2)?, r.get(3)?),
                    ))
                })
                .and_then(|rows| rows.collect());
            got.map_err(sql)?
        };
        let markers: HashMap<String, u64> = {
            let mut st = conn
                .prepare("SELECT session, count(*) FROM markers WHERE session IS NOT NULL GROUP BY session")
                .map_err(sql)?;
            let counted = st
                .query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
                })
                .and_then(|rows| rows.collect());
            counted.map_err(sql)?
        };
        let mut projects_of = conn
            .prepare_cached(
                "SELECT project_id FROM transitions WHERE session = ?1 AND project_id != ''
                 GROUP BY project_id ORDER BY min(seq)",
            )
            .map_err(sql)?;
        // The first row at the earliest time, the last at the latest (file order).
        let mut first_at_of = conn
            .prepare_cached(
                "SELECT at FROM transitions WHERE session = ?1 AND at_us = ?2 ORDER BY seq LIMIT 1",
            )
            .map_err(sql)?;
        let mut last_at_of = conn
            .prepare_cached(
                "SELECT at FROM transitions WHERE session = ?1 AND at_us = ?2
                 ORDER BY seq DESC LIMIT 1",
            )
            .map_err(sql)?;
        let mut out = Vec::new();
        for (session, parent, agent, transcript, first_at, first_us, last_at, last_us) in heads {
            let (count, log_first, log_last) = spans.get(&session).copied().unwrap_or_default();
            let matched = if filter.scoped() {
                // Which scope was in force when needs the session's rows: only its own.
                matches(&self.transitions_of(&session)?, filter, first_us, last_us)
            } else {
                within(log_first, log_last, filter, first_us, last_us)
            };
            if !matched {
                continue;
            }
            let projects: Vec<String> = projects_of
                .query_map([&session], |r| r.get(0))
                .and_then(|rows| rows.collect())
                .map_err(sql)?;
            // Without a transcript's times, the log's say when the session was.
            let at_of = |st: &mut rusqlite::CachedStatement<'_>, us: Option<i64>| {
                us.map(|us| st.query_row(rusqlite::params![session, us], |r| r.get::<_, String>(0)))
                    .transpose()
            };
            let first_at = match first_at {
                Some(t) => Some(t),
                None => at_of(&mut first_at_of, log_first).map_err(sql)?,
            };
            let last_at = match last_at {
                Some(t) => Some(t),
                None => at_of(&mut last_at_of, log_last).map_err(sql)?,
            };
            out.push((
                first_us.or(log_first),
                SessionInfo {
                    markers: markers.get(&session).copied().unwrap_or(0),
                    session,
                    parent,
                    agent,
                    transcript,
                    first_at,
                    last_at,
                    projects,
                    transitions: count,
                },
            ));
        }
        out.sort_by(|a, b| {
            (a.0.is_none(), a.0, &a.1.session).cmp(&(b.0.is_none(), b.0, &b.1.session))
        });
        Ok(out.into_iter().map(|(_, s)| s).collect())
    }

    /// `session`'s mirrored rows in file order, as [`matches`] reads them.
    fn transitions_of(&self, session: &str) -> Result<Vec<Transition>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare_cached(
                "SELECT seq, at_us, project_id, worktree, branch, task
                 FROM transitions WHERE session = ?1 ORDER BY seq",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([session], |r| {
                Ok(Transition {
                    seq: r.get(0)?,
                    at_us: r.get(1)?,
                    fields: [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                })
            })
            .and_then(|rows| rows.collect());
        rows.map_err(sql)
    }

    /// `session`'s transitions and markers in time order (ties: file order,
    /// transitions first; untimed markers last).
    pub fn timeline(&self, session: &str) -> Result<Vec<TimelineItem>, IndexError> {
        let mut items = Vec::new();
        self.timeline_each(session, |i| {
            items.push(i);
            true
        })?;
        Ok(items)
    }

    /// [`Index::timeline`] handed to `each` one item at a time, until it returns
    /// `false`: the transitions and the markers are each read in time order from an
    /// index and merged, so memory holds two rows however long the session.
    pub fn timeline_each(
        &self,
        session: &str,
        mut each: impl FnMut(TimelineItem) -> bool,
    ) -> Result<(), IndexError> {
        let sql = |e| self.sqlite(e);
        let conn = self.conn();
        type Key = (i64, u8, i64);
        let next_t = |q: &mut rusqlite::Rows<'_>| -> rusqlite::Result<Option<(Key, TimelineItem)>> {
            let Some(r) = q.next()? else {
                return Ok(None);
            };
            let key = (r.get::<_, Option<i64>>(0)?.unwrap_or(0), 0, r.get(1)?);
            let line: String = r.get(3)?;
            let scope = transcope_core::Scope::from_json_map(&log_row(&line)).to_json_map();
            let item = TimelineItem::Transition {
                at: r.get(2)?,
                scope,
            };
            Ok(Some((key, item)))
        };
        let next_m = |q: &mut rusqlite::Rows<'_>| -> rusqlite::Result<Option<(Key, TimelineItem)>> {
            let Some(r) = q.next()? else {
                return Ok(None);
            };
            let key = (r.get::<_, Option<i64>>(15)?.unwrap_or(0), 1, r.get(16)?);
            Ok(Some((key, TimelineItem::Marker(Box::new(ledger_row(r)?)))))
        };
        // The timed rows by (time, file order), then the untimed by file order; each
        // read in that order from an index.
        for timed in [true, false] {
            let (when, order) = if timed {
                ("at_us IS NOT NULL", "at_us, ")
            } else {
                ("at_us IS NULL", "")
            };
            let mut rows = conn
                .prepare(&format!(
                    "SELECT at_us, seq, at, line FROM transitions
                     WHERE session = ?1 AND {when} ORDER BY {order}seq"
                ))
                .map_err(sql)?;
            let mut markers = conn
                .prepare(&format!(
                    "SELECT {LEDGER_COLUMNS}, at_us, rowid FROM markers
                     WHERE session = ?1 AND {when} ORDER BY {order}rowid"
                ))
                .map_err(sql)?;
            let mut t = rows.query([session]).map_err(sql)?;
            let mut m = markers.query([session]).map_err(sql)?;
            let mut a = next_t(&mut t).map_err(sql)?;
            let mut b = next_m(&mut m).map_err(sql)?;
            loop {
                let take_a = match (&a, &b) {
                    (None, None) => break,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (Some((ka, _)), Some((kb, _))) => ka < kb,
                };
                let item = if take_a {
                    std::mem::replace(&mut a, next_t(&mut t).map_err(sql)?)
                } else {
                    std::mem::replace(&mut b, next_m(&mut m).map_err(sql)?)
                };
                if let Some((_, i)) = item {
                    if !each(i) {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Each of `session`'s mirrored rows in file order, handed to `each` with its time
    /// (microseconds since the epoch; `None`: not a time) and its scope's project id,
    /// project, worktree, branch, task and folder: read from an index one row at a
    /// time, the log's text never parsed.
    pub fn each_transition(
        &self,
        session: &str,
        mut each: impl FnMut(Option<i64>, [String; 6]),
    ) -> Result<(), IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare_cached(
                "SELECT at_us, project_id, project, worktree, branch, task, cwd
                 FROM transitions WHERE session = ?1 ORDER BY seq",
            )
            .map_err(sql)?;
        let mut q = st.query([session]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let f = |i| r.get::<_, String>(i);
            let fields = [f(1), f(2), f(3), f(4), f(5), f(6)];
            let fields = match fields {
                [Ok(a), Ok(b), Ok(c), Ok(d), Ok(e), Ok(g)] => [a, b, c, d, e, g],
                _ => return Err(sql(rusqlite::Error::InvalidQuery)),
            };
            each(r.get(0).map_err(sql)?, fields);
        }
        Ok(())
    }

    /// Every session's mirrored scope-log rows, in file order, as the logs wrote them
    /// (one query for all sessions; a row that is not a JSON object is an empty map, so
    /// a row's place in its log is kept).
    pub fn log_rows(&self) -> Result<HashMap<String, Vec<Map<String, Value>>>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare("SELECT session, line FROM transitions ORDER BY session, seq")
            .map_err(sql)?;
        let mut q = st.query([]).map_err(sql)?;
        let mut out: HashMap<String, Vec<Map<String, Value>>> = HashMap::new();
        while let Some(r) = q.next().map_err(sql)? {
            let line: String = r.get(1).map_err(sql)?;
            out.entry(r.get(0).map_err(sql)?)
                .or_default()
                .push(log_row(&line));
        }
        Ok(out)
    }

    /// The ledger rows `filter` matches, in the order found.
    pub fn ledger(&self, filter: &LedgerFilter) -> Result<Vec<LedgerRow>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare_cached(&format!(
                "SELECT {LEDGER_COLUMNS} FROM markers
                 WHERE (?1 IS NULL OR project_id = ?1) AND (?2 IS NULL OR task = ?2)
                   AND (?3 IS NULL OR session = ?3) AND (?4 IS NULL OR type = ?4)
                   AND (?5 IS NULL OR at_us >= ?5) AND (?6 IS NULL OR at_us <= ?6)
                   AND (?7 = 0 OR state = 'pending') AND (?8 IS NULL OR origin = ?8)
                   AND (?10 IS NULL OR idempotency_key = ?10)
                 ORDER BY rowid LIMIT ?9"
            ))
            .map_err(sql)?;
        let limit = filter.limit.map_or(-1, |l| l.min(i64::MAX as usize) as i64);
        let rows = st
            .query_map(
                params![
                    filter.project,
                    filter.task,
                    filter.session,
                    filter.kind,
                    filter.since,
                    filter.until,
                    filter.pending,
                    filter.origin.map(Origin::as_str),
                    limit,
                    filter.key,
                ],
                ledger_row,
            )
            .and_then(|rows| rows.collect());
        rows.map_err(sql)
    }
}

/// A mirrored scope-log line as the object it is (anything else: an empty map).
fn log_row(line: &str) -> Map<String, Value> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// [`matches`] for a filter without a scope: whether the window meets the session's
/// life (its log's timed rows, `log_first` to `log_last`, and its transcript's times).
fn within(
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
fn life(
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
fn in_window((start, end): (i64, i64), f: &SessionFilter) -> Option<(i64, i64)> {
    let lo = f.since.map_or(start, |s| s.max(start));
    let hi = f.until.map_or(end, |u| u.min(end));
    (lo <= hi).then_some((lo, hi))
}

/// Whether some instant of the window, within the session's life, has a row in force
/// that matches `f`'s scope (module docs); `log` is the session's rows in file order.
fn matches(
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

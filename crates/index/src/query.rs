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
use serde_json::{Map, Value};
use transcope_store::query::{log_row, matches, within, Transition};

pub use transcope_store::query::{
    LedgerFilter, LedgerRow, SessionFilter, SessionInfo, TimelineItem,
};

use crate::{Index, IndexError, Origin, State};

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
        machine: None,
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
            if !filter.keeps_agent(agent.as_deref()) {
                continue;
            }
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
                    machine: None,
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
                   AND (?11 IS NULL OR branch = ?11)
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
                    filter.branch,
                ],
                ledger_row,
            )
            .and_then(|rows| rows.collect());
        rows.map_err(sql)
    }
}

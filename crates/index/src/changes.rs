//! What changed since a number: the rows a fleet push sends (schema version 8).
//!
//! Every writing transaction stamps the sessions, markers and requests it inserts or
//! changes with the next number of `usage_meta.changes`; [`Index::changes`] opens one
//! read transaction (a snapshot: a write committed meanwhile is seen by the next
//! push, never half) and hands over, one row at a time, what was stamped after the
//! number the fleet last took. A session's scope-log rows are append-only in its log:
//! they are asked for from a place on ([`Changes::transitions`]).

use rusqlite::{params, OptionalExtension};

use crate::{Index, IndexError};

/// Where a push stands: the index it read (its random id: a rebuilt index starts its
/// numbers again) and the change number it read up to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The index's id.
    pub index_id: i64,
    /// Every change numbered up to this one was read.
    pub upto: i64,
}

/// A session's row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionRow {
    /// The scope-log key.
    pub session: String,
    /// The root session's key, for a sub-agent.
    pub parent: Option<String>,
    /// The adapter that read it.
    pub agent: Option<String>,
    /// The transcript's path.
    pub transcript: Option<String>,
    /// The first recorded time, as recorded, and in microseconds.
    pub first: (Option<String>, Option<i64>),
    /// The last recorded time.
    pub last: (Option<String>, Option<i64>),
}

/// A scope-log row, mirrored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransitionRow {
    /// The session.
    pub session: String,
    /// Its place in the log.
    pub seq: i64,
    /// Its `transition_id`.
    pub transition_id: String,
    /// Its time as recorded.
    pub at: String,
    /// In microseconds.
    pub at_us: Option<i64>,
    /// `project_id`, `project`, `repo`, `worktree`, `cwd`, `remote`, `branch`, `swarm`,
    /// `task`, `task_revision`, `lane`.
    pub fields: [String; 11],
    /// The log's line.
    pub line: String,
}

/// A ledger row, whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MarkerRow {
    /// The idempotency key, then `session`, `type`, `content`, `attrs` (JSON),
    /// `at`, `attribution`, `project_id`, `worktree`, `branch`, `task`, `body`
    /// (JSON), `origin`, `state`, `detail`.
    pub text: [Option<String>; 15],
    /// `at_us`, `found_us`, `changed_us`.
    pub times: [Option<i64>; 3],
}

/// A model request's kept copy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestRow {
    /// The request's key (the first 16 bytes of its SHA-256).
    pub key: Vec<u8>,
    /// The session, root session, project id, worktree, branch, task, lane.
    pub scope: [String; 7],
    /// Whether the copy is a root session's.
    pub is_root: bool,
    /// Its time in microseconds.
    pub at_us: Option<i64>,
    /// The model.
    pub model: Option<String>,
    /// Input, output, cache writes, 1-hour cache writes, cache reads, reasoning.
    pub counts: [i64; 6],
    /// Where the kept copy was read (its run's first place and its file's place in
    /// the run's stream): what decides between copies tied by time and root-ness.
    pub place: i64,
}

/// One read transaction over the index: the rows changed after a number.
pub struct Changes<'a> {
    index: &'a Index,
    since: i64,
    mark: Mark,
}

impl Index {
    /// The rows changed since `last` (everything when `last` is another index's, or
    /// `None`), read in one transaction that lasts as long as the [`Changes`].
    pub fn changes(&self, last: Option<Mark>) -> Result<Changes<'_>, IndexError> {
        let sql = |e| self.sqlite(e);
        self.conn().execute_batch("BEGIN").map_err(sql)?;
        let read = || -> rusqlite::Result<Mark> {
            let get = |k: &str| -> rusqlite::Result<i64> {
                self.conn()
                    .query_row("SELECT v FROM usage_meta WHERE k = ?1", [k], |r| r.get(0))
                    .optional()
                    .map(|v| v.unwrap_or(0))
            };
            Ok(Mark {
                index_id: get("index_id")?,
                upto: get("changes")?,
            })
        };
        let mark = match read() {
            Ok(m) => m,
            Err(e) => {
                let _ = self.conn().execute_batch("COMMIT");
                return Err(sql(e));
            }
        };
        let since = match last {
            Some(l) if l.index_id == mark.index_id && l.upto <= mark.upto => l.upto,
            _ => -1,
        };
        Ok(Changes {
            index: self,
            since,
            mark,
        })
    }
}

impl Changes<'_> {
    /// Where this read stands: what to record once its rows are sent.
    pub fn mark(&self) -> Mark {
        self.mark
    }

    /// Whether everything is read (a first push, or the index was made again).
    pub fn is_whole(&self) -> bool {
        self.since < 0
    }

    fn sql(&self, e: rusqlite::Error) -> IndexError {
        self.index.sqlite(e)
    }

    /// Each session changed, in key order.
    pub fn sessions(&self, mut each: impl FnMut(SessionRow)) -> Result<(), IndexError> {
        let sql = |e| self.sql(e);
        let mut st = self
            .index
            .conn()
            .prepare(
                "SELECT session, parent, agent, transcript, first_at, first_us, last_at, last_us
                 FROM sessions WHERE changed > ?1 ORDER BY session",
            )
            .map_err(sql)?;
        let mut q = st.query([self.since]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let row = (|| {
                Ok::<_, rusqlite::Error>(SessionRow {
                    session: r.get(0)?,
                    parent: r.get(1)?,
                    agent: r.get(2)?,
                    transcript: r.get(3)?,
                    first: (r.get(4)?, r.get(5)?),
                    last: (r.get(6)?, r.get(7)?),
                })
            })()
            .map_err(sql)?;
            each(row);
        }
        Ok(())
    }

    /// `session`'s scope-log rows from place `from` on, in file order.
    pub fn transitions(
        &self,
        session: &str,
        from: i64,
        mut each: impl FnMut(TransitionRow),
    ) -> Result<(), IndexError> {
        let sql = |e| self.sql(e);
        let mut st = self
            .index
            .conn()
            .prepare_cached(
                "SELECT seq, transition_id, at, at_us, project_id, project, repo, worktree, cwd,
                        remote, branch, swarm, task, task_revision, lane, line
                 FROM transitions WHERE session = ?1 AND seq >= ?2 ORDER BY seq",
            )
            .map_err(sql)?;
        let mut q = st.query(params![session, from]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let row = (|| {
                let mut fields: [String; 11] = Default::default();
                for (i, f) in fields.iter_mut().enumerate() {
                    *f = r.get(4 + i)?;
                }
                Ok::<_, rusqlite::Error>(TransitionRow {
                    session: session.to_owned(),
                    seq: r.get(0)?,
                    transition_id: r.get(1)?,
                    at: r.get(2)?,
                    at_us: r.get(3)?,
                    fields,
                    line: r.get(15)?,
                })
            })()
            .map_err(sql)?;
            each(row);
        }
        Ok(())
    }

    /// Each ledger row changed (found, or its delivery state set), in the order found.
    pub fn markers(&self, mut each: impl FnMut(MarkerRow)) -> Result<(), IndexError> {
        let sql = |e| self.sql(e);
        let mut st = self
            .index
            .conn()
            .prepare(
                "SELECT idempotency_key, session, type, content, attrs, at, attribution,
                        project_id, worktree, branch, task, body, origin, state, detail,
                        at_us, found_us, changed_us
                 FROM markers WHERE changed > ?1 ORDER BY rowid",
            )
            .map_err(sql)?;
        let mut q = st.query([self.since]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let row = (|| {
                let mut out = MarkerRow::default();
                for (i, t) in out.text.iter_mut().enumerate() {
                    *t = r.get(i)?;
                }
                for (i, t) in out.times.iter_mut().enumerate() {
                    *t = r.get(15 + i)?;
                }
                Ok::<_, rusqlite::Error>(out)
            })()
            .map_err(sql)?;
            each(row);
        }
        Ok(())
    }

    /// Each request changed (new, or its kept copy or counts changed), in key order.
    pub fn requests(&self, mut each: impl FnMut(RequestRow)) -> Result<(), IndexError> {
        let sql = |e| self.sql(e);
        let mut st = self
            .index
            .conn()
            .prepare(
                "SELECT u.message_key, s.session, s.root_session, s.project_id, s.worktree,
                        s.branch, s.task, s.lane, u.is_root, u.at_us, m.model,
                        u.input_tokens, u.output_tokens, u.cache_creation_input_tokens,
                        u.cache_creation_1h_input_tokens, u.cache_read_input_tokens,
                        u.reasoning_output_tokens, u.place
                 FROM usage u JOIN usage_scopes s ON s.id = u.scope
                 LEFT JOIN usage_models m ON m.id = u.model
                 WHERE u.changed > ?1",
            )
            .map_err(sql)?;
        let mut q = st.query([self.since]).map_err(sql)?;
        while let Some(r) = q.next().map_err(sql)? {
            let row = (|| {
                let mut scope: [String; 7] = Default::default();
                for (i, f) in scope.iter_mut().enumerate() {
                    *f = r.get(1 + i)?;
                }
                let mut counts = [0i64; 6];
                for (i, c) in counts.iter_mut().enumerate() {
                    *c = r.get::<_, Option<i64>>(11 + i)?.unwrap_or(0);
                }
                Ok::<_, rusqlite::Error>(RequestRow {
                    key: r.get(0)?,
                    scope,
                    is_root: r.get(8)?,
                    at_us: r.get(9)?,
                    model: r.get(10)?,
                    counts,
                    place: r.get(17)?,
                })
            })()
            .map_err(sql)?;
            each(row);
        }
        Ok(())
    }
}

impl Drop for Changes<'_> {
    fn drop(&mut self) {
        let _ = self.index.conn().execute_batch("COMMIT");
    }
}

//! The facts listed stages handed on ([`transcope_core::Fact`]), read back: each with
//! its session and the scope in force at its time.

use rusqlite::params;
use serde_json::{json, Value};

use crate::{Index, IndexError};

/// Which facts to read: every filter given must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FactFilter {
    /// The stage that found them.
    pub stage: Option<String>,
    /// The session they were found in.
    pub session: Option<String>,
    /// The project in force.
    pub project: Option<String>,
    /// Found at or after this time (µs since the epoch).
    pub since: Option<i64>,
    /// Found at or before this time.
    pub until: Option<i64>,
}

/// One fact as the index keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactRow {
    /// The session it was found in.
    pub session: String,
    /// The stage that found it.
    pub stage: String,
    /// Its key, unique for the stage within the session.
    pub key: String,
    /// Its time, µs since the epoch.
    pub at_us: Option<i64>,
    /// The fact, as JSON text.
    pub value: String,
    /// `project_id`, `worktree`, `branch`, `task`, `lane` in force at its time.
    pub scope: [String; 5],
}

impl FactRow {
    /// The row as one JSON object (the value parsed back).
    pub fn to_json(&self) -> Value {
        let [project, worktree, branch, task, lane] = &self.scope;
        json!({
            "session": self.session,
            "stage": self.stage,
            "key": self.key,
            "at_us": self.at_us,
            "value": serde_json::from_str::<Value>(&self.value).unwrap_or(Value::Null),
            "project_id": project,
            "worktree": worktree,
            "branch": branch,
            "task": task,
            "lane": lane,
        })
    }
}

impl Index {
    /// The facts `filter` selects, by time (untimed last), then session and key.
    pub fn facts(&self, filter: &FactFilter) -> Result<Vec<FactRow>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare_cached(
                "SELECT session, stage, key, at_us, value, project_id, worktree, branch, task, lane
                 FROM facts
                 WHERE (?1 IS NULL OR stage = ?1) AND (?2 IS NULL OR session = ?2)
                   AND (?3 IS NULL OR project_id = ?3)
                   AND (?4 IS NULL OR at_us >= ?4) AND (?5 IS NULL OR at_us <= ?5)
                 ORDER BY at_us IS NULL, at_us, session, stage, key",
            )
            .map_err(sql)?;
        let rows = st
            .query_map(
                params![
                    filter.stage,
                    filter.session,
                    filter.project,
                    filter.since,
                    filter.until
                ],
                |r| {
                    Ok(FactRow {
                        session: r.get(0)?,
                        stage: r.get(1)?,
                        key: r.get(2)?,
                        at_us: r.get(3)?,
                        value: r.get(4)?,
                        scope: [r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?],
                    })
                },
            )
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)
    }
}

//! What a query's filters can name, and what to say when one names nothing: the
//! values the index knows (sessions, projects, worktrees, branches, tasks, marker
//! types), a project named by its repository's short name, the nearest values to one
//! that matched none, and the span of times a table holds.
//!
//! Every command that answers empty asks here, so "no such session" and "no project
//! by that id" are decided one way.

use rusqlite::OptionalExtension;

pub use transcope_store::names::{
    match_project, nearest, short_name, Held, Named, ProjectMatch, NEAREST,
};

use crate::{Index, IndexError};

/// Every distinct non-empty value of `what`, from every table that records it.
fn values_sql(what: Named) -> &'static str {
    match what {
        Named::Session => {
            "SELECT session FROM sessions UNION SELECT DISTINCT session FROM transitions"
        }
        Named::Project => {
            "SELECT project_id FROM transitions WHERE project_id != ''
             UNION SELECT project_id FROM markers WHERE project_id IS NOT NULL AND project_id != ''
             UNION SELECT project_id FROM usage_scopes WHERE project_id != ''"
        }
        Named::Worktree => "SELECT DISTINCT worktree FROM transitions WHERE worktree != ''",
        Named::Branch => "SELECT DISTINCT branch FROM transitions WHERE branch != ''",
        Named::Task => {
            "SELECT task FROM transitions WHERE task != ''
             UNION SELECT task FROM markers WHERE task IS NOT NULL AND task != ''
             UNION SELECT task FROM usage_scopes WHERE task != ''"
        }
        Named::MarkerType => "SELECT DISTINCT type FROM markers",
    }
}

impl Index {
    /// Every distinct value of `what` the index knows, sorted.
    pub fn known(&self, what: Named) -> Result<Vec<String>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self.conn().prepare(values_sql(what)).map_err(sql)?;
        let mut all: Vec<String> = st
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(sql)?;
        all.sort();
        all.dedup();
        Ok(all)
    }

    /// Whether `value` is a `what` the index knows.
    pub fn knows(&self, what: Named, value: &str) -> Result<bool, IndexError> {
        Ok(self
            .known(what)?
            .binary_search_by(|v| v.as_str().cmp(value))
            .is_ok())
    }

    /// The earliest and latest time `held` holds (microseconds since the epoch), or
    /// `None` when it holds nothing timed.
    pub fn time_span(&self, held: Held) -> Result<Option<(i64, i64)>, IndexError> {
        let q = match held {
            Held::Usage => "SELECT min(at_us), max(at_us) FROM usage",
            Held::Markers => "SELECT min(at_us), max(at_us) FROM markers",
            Held::Sessions => {
                "SELECT min(lo), max(hi) FROM (
                     SELECT min(first_us) AS lo, max(last_us) AS hi FROM sessions
                     UNION ALL SELECT min(at_us), max(at_us) FROM transitions)"
            }
        };
        let got: Option<(Option<i64>, Option<i64>)> = self
            .conn()
            .query_row(q, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.sqlite(e))?;
        Ok(match got {
            Some((Some(lo), Some(hi))) => Some((lo, hi)),
            _ => None,
        })
    }

    /// What `given` names as a project ([`match_project`] over what the index knows).
    pub fn match_project(&self, given: &str) -> Result<ProjectMatch, IndexError> {
        let ids = self.known(Named::Project)?;
        Ok(match_project(given, &ids, &self.project_names()?))
    }

    /// Every (project id, project name) pair of the mirrored rows that have both.
    pub fn project_names(&self) -> Result<Vec<(String, String)>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare("SELECT DISTINCT project_id, project FROM transitions WHERE project != '' AND project_id != ''")
            .map_err(sql)?;
        let names: Vec<(String, String)> = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(sql)?;
        Ok(names)
    }
}

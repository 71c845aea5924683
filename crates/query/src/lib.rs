//! # transcope-query: the answers the query commands give
//!
//! `sessions`, `timeline` and `ledger` answer with a [`Store`]'s rows as they are
//! (each row's own `to_json`). The other questions take a few more steps over the
//! store — which project a `--project` value names ([`project`]), the row in force at
//! an instant and why ([`explain`]), the groups of `usage` with this machine's name
//! filled in ([`usage`]), the scope in force read from a session's log
//! ([`scope_in_force`]), the status line's figures ([`status`]). Those steps live
//! here, once: the `transcope` command's `--json` output and the MCP server's tools
//! (`transcope-mcp`) both call them, so an agent asking through MCP gets exactly what
//! a person's `--json` prints.
//!
//! Nothing here writes: each function reads the store it is handed (the caller
//! decides whether the index was synced first) or a scope log.
//!
//! ```
//! use transcope_query::scope_in_force;
//! let home = tempfile::tempdir().unwrap();
//! // A session with no scope log: nothing was in force.
//! let v = scope_in_force(home.path(), "s1", "2026-10-08T10:20:00Z").unwrap();
//! assert_eq!(v["scope"], serde_json::Value::Null);
//! assert!(scope_in_force(home.path(), "not a key", "2026-10-08").is_err());
//! ```
#![warn(missing_docs)]

use std::path::Path;

use serde_json::{json, Map, Value};
use transcope_core::session::is_valid_session_id;
use transcope_core::{Attribution, Grant, Scope, ScopeField};
use transcope_pricing::{PriceList, Prices};
use transcope_store::{
    LedgerFilter, ProjectMatch, Store, StoreError, UsageFilter, UsageGroup, UsageKey,
};

/// Why a question could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The store could not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A time that is not one.
    #[error("not a time: {0:?} (e.g. 2026-10-08T10:20:00Z; no offset means UTC)")]
    NotATime(String),
    /// Not a session key (the scope-log key a session is known by).
    #[error("not a session id: {0:?} (letters, digits, '.', '_' and '-' only)")]
    NotASession(String),
    /// A project short name several projects have.
    #[error("{given:?}: {} projects have that name ({}); give the whole id", ids.len(), ids.join(", "))]
    AmbiguousProject {
        /// The name given.
        given: String,
        /// The ids of the projects that have it.
        ids: Vec<String>,
    },
}

/// A time given as a filter or an instant (what `scope at --at` accepts; no offset
/// means UTC), in microseconds since the epoch.
pub fn time(text: &str) -> Result<i64, QueryError> {
    transcope_core::timestamp::parse(text)
        .map(|t| t.unix_micros())
        .ok_or_else(|| QueryError::NotATime(text.to_owned()))
}

/// A project filter as the stores take it: the id given, or the one project whose
/// short name it is; one the store does not know is kept as given (the answer is
/// then empty). Several projects of that short name is
/// [`QueryError::AmbiguousProject`].
pub fn project(store: &dyn Store, given: Option<String>) -> Result<Option<String>, QueryError> {
    let Some(given) = given else {
        return Ok(None);
    };
    match store.match_project(&given)? {
        ProjectMatch::Id(id) | ProjectMatch::Short(id) => Ok(Some(id)),
        ProjectMatch::Unknown(_) => Ok(Some(given)),
        ProjectMatch::Ambiguous(ids) => Err(QueryError::AmbiguousProject { given, ids }),
    }
}

/// `usage`'s groups: `by` (none: by project), priced by `prices`, the machine key
/// filled with `here` when the store is one machine's (`None`: a fleet, whose rows
/// name their machines).
pub fn usage(
    store: &dyn Store,
    by: &[UsageKey],
    filter: &UsageFilter,
    prices: &Prices,
    here: Option<&str>,
) -> Result<Vec<UsageGroup>, QueryError> {
    let by = usage_keys(by);
    let mut groups = store.usage(&by, filter, &PriceList::new(prices))?;
    if let (Some(name), Some(i)) = (here, by.iter().position(|k| *k == UsageKey::Machine)) {
        for g in &mut groups {
            g.keys[i] = Some(name.to_owned());
        }
    }
    Ok(groups)
}

/// The keys a usage answer is grouped by: `by`, or the project when none is given.
pub fn usage_keys(by: &[UsageKey]) -> Vec<UsageKey> {
    if by.is_empty() {
        vec![UsageKey::Project]
    } else {
        by.to_vec()
    }
}

/// What `explain` answers: the row of a session's log in force at an instant, why it
/// is that one, how an event then is attributed, what a grant admits, and the markers
/// recorded at that instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Explained {
    /// The session asked about.
    pub session: String,
    /// The instant, as given.
    pub at: String,
    /// The row in force and its place in file order (from 0).
    pub in_force: Option<(usize, Map<String, Value>)>,
    /// How many readable rows the log has.
    pub rows: usize,
    /// Rows before the one in force that are later than the instant.
    pub later_but_earlier: usize,
    /// An event at the instant, attributed through the row in force.
    pub attribution: Option<Attribution>,
    /// The grant asked about, as given.
    pub grant: Option<String>,
    /// Whether the grant admits the project in force.
    pub admits: Option<bool>,
    /// The ledger's markers recorded at the instant (their `to_json`).
    pub markers: Vec<Value>,
}

impl Explained {
    /// The project id in force ("" when none).
    pub fn project(&self) -> &str {
        self.in_force
            .as_ref()
            .and_then(|(_, r)| r.get("project_id"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Why the row in force is that one, in words.
    pub fn why(&self) -> String {
        match &self.in_force {
            None if self.rows == 0 => {
                "the session has no scope log rows: no scope was in force".to_owned()
            }
            None => format!("no row of the {} is at or before this instant", self.rows),
            Some((i, r)) => format!(
                "row {} of {} (at {}) is the last row in file order at or before this instant{}",
                i,
                self.rows,
                r.get("at").and_then(Value::as_str).unwrap_or("?"),
                if self.later_but_earlier > 0 {
                    format!(
                        "; {} earlier row(s) in the file are after it in time",
                        self.later_but_earlier
                    )
                } else {
                    String::new()
                }
            ),
        }
    }

    /// `explain --json`'s object.
    pub fn to_json(&self) -> Value {
        json!({
            "session": self.session,
            "at": self.at,
            "in_force": self.in_force.as_ref().map(|(_, r)| Value::Object(r.clone())),
            "row": self.in_force.as_ref().map(|(i, _)| i),
            "why": self.why(),
            "attribution": self.attribution.as_ref().map(|a| Value::Object(a.to_json_map())),
            "grant": self.grant.as_ref().map(|g| json!({"given": g, "admits": self.admits})),
            "markers": self.markers,
        })
    }
}

/// [`Explained`] for `session` at `at` (scope-log.md §4.1: the last row in file order
/// whose own time is at or before the instant), with `grant` (comma-separated project
/// ids; "" is an empty grant) checked against the project in force.
pub fn explain(
    store: &dyn Store,
    session: &str,
    at: &str,
    grant: Option<&str>,
) -> Result<Explained, QueryError> {
    let t = time(at)?;
    let found = store.in_force(session, t)?;
    let parsed = grant.map(Grant::parse_list);
    let event = transcope_scopelog::Event {
        at: Some(Value::String(at.to_owned())),
        attrs: None,
    };
    // Attributed through the row in force alone: the rule picks it from the whole log.
    let in_force_rows: Vec<transcope_scopelog::Row> =
        found.row.iter().map(|(_, r)| r.clone()).collect();
    let attribution = transcope_scopelog::attribute_rows(
        &in_force_rows,
        std::slice::from_ref(&event),
        parsed.as_ref(),
    )
    .pop();
    let markers = store
        .ledger(&LedgerFilter {
            session: Some(session.to_owned()),
            since: Some(t),
            until: Some(t),
            ..LedgerFilter::default()
        })?
        .iter()
        .map(|m| m.to_json())
        .collect();
    let mut e = Explained {
        session: session.to_owned(),
        at: at.to_owned(),
        in_force: found.row,
        rows: found.rows,
        later_but_earlier: found.later_but_earlier,
        attribution,
        grant: grant.map(str::to_owned),
        admits: None,
        markers,
    };
    e.admits = parsed.as_ref().map(|g| g.admits(e.project()));
    Ok(e)
}

/// The scope in force in `session` at `at`, read from its scope log (what `scope at`
/// prints: the 11 scope fields, or null when nothing was in force), as
/// `{"session", "at", "scope"}`.
pub fn scope_in_force(home: &Path, session: &str, at: &str) -> Result<Value, QueryError> {
    if !is_valid_session_id(session) {
        return Err(QueryError::NotASession(session.to_owned()));
    }
    time(at)?;
    let scope = transcope_scopelog::ScopeLog::open(home, session).scope_at(at);
    Ok(json!({
        "session": session,
        "at": at,
        "scope": scope.map(|s| Value::Object(s.to_json_map())),
    }))
}

/// What a status line shows: the session's scope in force, and what its task (else
/// its project) and the session have cost so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Status {
    /// The session (when the caller named a valid one).
    pub session: Option<String>,
    /// When the scope was read.
    pub at: String,
    /// The scope in force then.
    pub scope: Option<Scope>,
    /// What the task (else the project) in force has cost.
    pub spent: Option<Spent>,
    /// What the session has cost.
    pub session_cost_usd: Option<f64>,
}

/// The cost of the task or project in force.
#[derive(Clone, Debug, PartialEq)]
pub struct Spent {
    /// `task` or `project`.
    pub over: &'static str,
    /// Its value (the task, or the project id).
    pub value: String,
    /// Its cost so far, in USD.
    pub cost_usd: f64,
}

impl Status {
    fn field(&self, f: ScopeField) -> Option<String> {
        self.scope
            .as_ref()
            .map(|s| s.get(f).to_owned())
            .filter(|v| !v.is_empty())
    }

    /// The status line (`project · wt W · branch · task T · $1.23 task · $0.45
    /// session`), unescaped.
    pub fn line(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(
            self.field(ScopeField::Project)
                .or_else(|| self.field(ScopeField::ProjectId)),
        );
        parts.extend(self.field(ScopeField::Worktree).map(|w| format!("wt {w}")));
        parts.extend(self.field(ScopeField::Branch));
        parts.extend(self.field(ScopeField::Task).map(|t| format!("task {t}")));
        parts.extend(
            self.spent
                .as_ref()
                .map(|s| format!("${:.2} {}", s.cost_usd, s.over)),
        );
        parts.extend(self.session_cost_usd.map(|c| format!("${c:.2} session")));
        if parts.is_empty() {
            parts.push("transcope: no scope yet".into());
        }
        parts.join(" · ")
    }

    /// `statusline --json`'s object: `session`, `at`, `scope` (the 11 fields or null),
    /// `spent` (`{"over": "task"|"project", "value", "cost_usd"}` or null),
    /// `session_cost_usd` (or null), `line`.
    pub fn to_json(&self) -> Value {
        json!({
            "session": self.session,
            "at": self.at,
            "scope": self.scope.as_ref().map(|s| Value::Object(s.to_json_map())),
            "spent": self.spent.as_ref().map(|s| json!({
                "over": s.over,
                "value": s.value,
                "cost_usd": s.cost_usd,
            })),
            "session_cost_usd": self.session_cost_usd,
            "line": self.line(),
        })
    }
}

/// The status line's figures for `session` at `now`: its scope in force from its log,
/// and, when a store is given, the costs priced by `prices` (a figure the store cannot
/// give is left out, never an error: a status line shows what it can).
pub fn status(
    home: &Path,
    store: Option<&dyn Store>,
    session: Option<&str>,
    prices: &Prices,
    now: &str,
) -> Status {
    let session = session.filter(|s| is_valid_session_id(s));
    let mut st = Status {
        session: session.map(str::to_owned),
        at: now.to_owned(),
        scope: session.and_then(|s| transcope_scopelog::ScopeLog::open(home, s).scope_at(now)),
        ..Status::default()
    };
    let (Some(store), Some(s)) = (store, session) else {
        return st;
    };
    let list = PriceList::new(prices);
    let spent = |filter: UsageFilter| -> Option<f64> {
        store.usage(&[], &filter, &list).ok()?.first()?.cost_usd
    };
    let over = match (st.field(ScopeField::Task), st.field(ScopeField::ProjectId)) {
        (Some(t), _) => Some((
            "task",
            t.clone(),
            UsageFilter {
                task: Some(t),
                ..Default::default()
            },
        )),
        (None, Some(p)) => Some((
            "project",
            p.clone(),
            UsageFilter {
                project: Some(p),
                ..Default::default()
            },
        )),
        (None, None) => None,
    };
    st.spent = over.and_then(|(over, value, filter)| {
        spent(filter).map(|cost_usd| Spent {
            over,
            value,
            cost_usd,
        })
    });
    st.session_cost_usd = spent(UsageFilter {
        session: Some(s.to_owned()),
        ..Default::default()
    });
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(fields: &[(ScopeField, &str)]) -> Scope {
        let mut s = Scope::default();
        for (f, v) in fields {
            s.set(*f, (*v).to_owned());
        }
        s
    }

    /// The line names the project, else its id, then what is set, then the costs.
    #[test]
    fn the_status_line_shows_what_is_known_in_order() {
        let mut st = Status::default();
        assert_eq!(st.line(), "transcope: no scope yet");
        st.scope = Some(scope(&[
            (ScopeField::ProjectId, "github.com/acme/alpha"),
            (ScopeField::Branch, "main"),
            (ScopeField::Task, "t1"),
        ]));
        st.spent = Some(Spent {
            over: "task",
            value: "t1".into(),
            cost_usd: 1.234,
        });
        st.session_cost_usd = Some(0.5);
        assert_eq!(
            st.line(),
            "github.com/acme/alpha · main · task t1 · $1.23 task · $0.50 session"
        );
        let v = st.to_json();
        assert_eq!(v["spent"]["over"], "task");
        assert_eq!(v["scope"]["branch"], "main");
        assert_eq!(v["line"], st.line());
    }

    #[test]
    fn a_bad_instant_or_session_is_an_error_that_names_it() {
        let home = tempfile::tempdir().unwrap();
        let e = scope_in_force(home.path(), "s", "yesterday-ish").unwrap_err();
        assert!(e.to_string().contains("\"yesterday-ish\""), "{e}");
        let e = scope_in_force(home.path(), "../etc", "2026-10-08").unwrap_err();
        assert!(matches!(e, QueryError::NotASession(_)), "{e}");
    }
}

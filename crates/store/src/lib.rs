//! # transcope-store: the storage seam
//!
//! Every question a command asks of what transcope recorded — which sessions, what a
//! session did in order, the marker ledger, what was spent, which row was in force —
//! goes through one trait, [`Store`], which the embedded SQLite index
//! (`transcope-index`, one machine) and the PostgreSQL fleet (`transcope-fleet`, many
//! machines) both implement. The values they answer with live here, and so do the
//! rules both apply the same way: whether a session was in a scope at some instant of
//! a window ([`query::matches`]), how requests group and are priced ([`spend::group`]),
//! what a `--project` value names ([`names::match_project`]). A conformance kit
//! (`transcope-testkit`'s `store_kit`) asks both backends every question and requires
//! equal answers.
//!
//! This crate names no storage engine: the backends are the only crates that depend on
//! `rusqlite` or `postgres`.
#![warn(missing_docs)]

pub mod names;
pub mod query;
pub mod spend;

use serde_json::{Map, Value};

pub use names::{match_project, nearest, short_name, Held, Named, ProjectMatch, NEAREST};
pub use query::{LedgerFilter, LedgerRow, SessionFilter, SessionInfo, TimelineItem, Transition};
pub use spend::{
    group, Part, Pricer, ScopeRow, Unpriced, UsageFilter, UsageGroup, UsageKey, DAY_US,
};

/// Who recorded a marker: a Stop delivers the pending markers its hooks recorded,
/// never the ones a backfill found in the archive (those wait for `deliver`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A hook's Stop.
    Hook,
    /// `transcope observe`.
    Observe,
    /// A backfill (or a query's sync).
    Backfill,
}

impl Origin {
    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Origin::Hook => "hook",
            Origin::Observe => "observe",
            Origin::Backfill => "backfill",
        }
    }
}

/// A ledger row's delivery state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Found, not yet delivered.
    Pending,
    /// Accepted by the brain (or printed to the stream asked for).
    Delivered,
    /// Written to the outbox, which agentihooks' drains send.
    Outbox,
    /// Refused by the brain (400, 404, 422): never sent again.
    Rejected,
}

impl State {
    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Delivered => "delivered",
            State::Outbox => "outbox",
            State::Rejected => "rejected",
        }
    }

    /// The state a stored name names.
    pub fn parse(s: &str) -> Option<State> {
        Some(match s {
            "pending" => State::Pending,
            "delivered" => State::Delivered,
            "outbox" => State::Outbox,
            "rejected" => State::Rejected,
            _ => return None,
        })
    }
}

/// The row in force at an instant, as `explain` shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InForce {
    /// The row in force and its place in file order (from 0).
    pub row: Option<(usize, Map<String, Value>)>,
    /// How many readable rows the session's log has.
    pub rows: usize,
    /// Of the rows before the one in force, how many are later than the instant.
    pub later_but_earlier: usize,
}

/// Why a store could not answer: the backend's own error, whole (its message names
/// the store and says what to do).
#[derive(Debug, thiserror::Error)]
#[error("{inner}")]
pub struct StoreError {
    inner: Box<dyn std::error::Error + Send + Sync + 'static>,
    damage: bool,
}

impl StoreError {
    /// `inner`, as a store's error.
    pub fn new(inner: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        StoreError {
            inner: inner.into(),
            damage: false,
        }
    }

    /// `inner`, the store itself being damaged (a rebuild is the fix).
    pub fn damaged(inner: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        StoreError {
            inner: inner.into(),
            damage: true,
        }
    }

    /// Whether the store itself is the trouble.
    pub fn is_damage(&self) -> bool {
        self.damage
    }

    /// The backend's error.
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.inner
    }
}

/// The questions every store answers (push model: the long answers are handed over
/// one item at a time).
///
/// Required: the seven reads below. The rest are built on them, the same for every
/// store.
pub trait Store {
    /// The sessions `filter` matches, by first time then key.
    fn sessions(&self, filter: &SessionFilter) -> Result<Vec<SessionInfo>, StoreError>;

    /// `session`'s transitions and markers in time order (ties: file order,
    /// transitions first; untimed rows last), handed to `each` until it returns
    /// `false`.
    fn timeline_each(
        &self,
        session: &str,
        each: &mut dyn FnMut(TimelineItem) -> bool,
    ) -> Result<(), StoreError>;

    /// Each of `session`'s scope-log rows in file order, with its time (microseconds;
    /// `None`: not a time) and its project id, project, worktree, branch, task and
    /// folder.
    fn each_transition(
        &self,
        session: &str,
        each: &mut dyn FnMut(Option<i64>, [String; 6]),
    ) -> Result<(), StoreError>;

    /// The ledger rows `filter` matches, in the order found.
    fn ledger(&self, filter: &LedgerFilter) -> Result<Vec<LedgerRow>, StoreError>;

    /// The requests `filter` keeps, grouped by `by` (in key order), each priced by
    /// `prices`; with `by` empty, one group of everything.
    fn usage(
        &self,
        by: &[UsageKey],
        filter: &UsageFilter,
        prices: &dyn Pricer,
    ) -> Result<Vec<UsageGroup>, StoreError>;

    /// The row of `session`'s log in force at `at_us` (microseconds since the epoch).
    fn in_force(&self, session: &str, at_us: i64) -> Result<InForce, StoreError>;

    /// Every distinct non-empty value of `what` the store knows, sorted.
    fn known(&self, what: Named) -> Result<Vec<String>, StoreError>;

    /// Every (project id, project name) pair of the scope-log rows that have both.
    fn project_names(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// The earliest and latest time `held` holds (microseconds since the epoch), or
    /// `None` when it holds nothing timed.
    fn time_span(&self, held: Held) -> Result<Option<(i64, i64)>, StoreError>;

    /// `session`'s timeline, whole.
    fn timeline(&self, session: &str) -> Result<Vec<TimelineItem>, StoreError> {
        let mut items = Vec::new();
        self.timeline_each(session, &mut |i| {
            items.push(i);
            true
        })?;
        Ok(items)
    }

    /// Whether `value` is a `what` the store knows.
    fn knows(&self, what: Named, value: &str) -> Result<bool, StoreError> {
        Ok(self
            .known(what)?
            .binary_search_by(|v| v.as_str().cmp(value))
            .is_ok())
    }

    /// What `given` names as a project ([`match_project`] over what the store knows).
    fn match_project(&self, given: &str) -> Result<ProjectMatch, StoreError> {
        let ids = self.known(Named::Project)?;
        Ok(match_project(given, &ids, &self.project_names()?))
    }
}

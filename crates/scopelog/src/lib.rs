//! # transcope-scopelog: the per-session scope log
//!
//! A scope log is the authoritative history of what one session was working on: one
//! JSON line per accepted *transition* (project, worktree, branch, task, …, and the
//! instant it took effect) at `<home>/brain/session-scopes/<session>.jsonl`. The format
//! and every rule are those of agentihooks' SV2-IDN-03 (`urn:swarm-v2:session-scope`),
//! byte for byte; see `spec/scope-log.md`.
//!
//! The principal type is [`ScopeLog`], a handle on one session's log:
//!
//! * [`ScopeLog::record`] appends a transition under an exclusive lock, applying the
//!   rules in the reference's order (grant, time, session id, replay, age, task
//!   revision, unchanged scope), and returns the written row or `None`;
//! * [`ScopeLog::transitions`] reads the readable rows in file order;
//! * [`ScopeLog::scope_at`] gives the scope in force at an instant;
//! * [`ScopeLog::attribute`] labels events (`scoped`, `explicit`, `fleet`, `unknown`,
//!   `refused`) through the log, read once per call.
//!
//! ```
//! use transcope_core::{Grant, Scope, ScopeField};
//! use transcope_scopelog::{Event, ScopeLog};
//!
//! let home = tempfile::tempdir().unwrap();
//! let log = ScopeLog::open(home.path(), "first");
//! let scope = Scope::default()
//!     .with(ScopeField::ProjectId, "github.com/fixture/alpha")
//!     .with(ScopeField::Worktree, "one");
//! let row = log.record(&scope, "2026-10-08T10:00:00+00:00", None).unwrap().unwrap();
//! assert_eq!(row.sequence, 0);
//! // The same transition again is an idempotent no-op.
//! assert!(log.record(&scope, "2026-10-08T10:00:00+00:00", None).unwrap().is_none());
//!
//! let at = log.scope_at("2026-10-08T10:05:00Z").unwrap();
//! assert_eq!(at.get(ScopeField::Worktree), "one");
//! let results = log.attribute(&[Event::at("2026-10-08T09:00:00Z")], None);
//! assert_eq!(results[0].label.as_str(), "unknown");
//! # let _ = Grant::default();
//! ```
#![warn(missing_docs)]

mod attribute;
pub mod index;
pub mod lockfile;
mod read;
mod record;
mod state;

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use attribute::{attribute_rows, in_force_in, scope_at_rows, Event, InForce, InForceIn};
pub use read::{decode_lossy, rows_from_bytes, scan_lines, splitlines, Row, ScannedFrom};
pub use record::{
    row_line, RowValues, Transaction, Window, WrittenRow, KEPT_ROWS_MAX, WHOLE_ROWS_BELOW,
};

use transcope_core::session::is_valid_session_id;
use transcope_core::{Attribution, Grant, Scope};

/// The reference's fixed refusal messages. They never contain a project or a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A grant was given and the scope's `project_id` is outside it.
    #[error("project is outside the session grant")]
    OutsideGrant,
    /// `at` is not a timestamp Python's `fromisoformat` accepts.
    #[error("transition time is not an ISO 8601 timestamp")]
    NotATimestamp,
    /// `at` is strictly earlier than the latest accepted transition.
    #[error("transition is older than the latest accepted one")]
    Older,
    /// Same swarm and task, and a numerically lower task revision.
    #[error("task revision is older than the latest accepted one")]
    OlderTaskRevision,
}

/// Why [`ScopeLog::record`] wrote nothing and did not merely decline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The rules refused the transition (`ScopeRefused` in the reference).
    #[error("{0}")]
    Refused(#[from] Refusal),
    /// The log could not be written.
    #[error("while {context}: {source}")]
    Io {
        /// What was being done (never names a project).
        context: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// The lock was held by another process for longer than the configured bound.
    #[error("the scope log is locked by another process (gave up after {0:?})")]
    LockTimeout(Duration),
    /// The log's lock file (`<log>.lock`) cannot be used: a symbolic link, a folder, a
    /// FIFO or a device is in its place, it cannot be created, or the file system
    /// refuses `flock`. Nothing is written without the lock (concurrent writers would
    /// interleave); the reference would go on unlocked.
    #[error("the scope log cannot be locked (its .lock file: {0}); nothing written")]
    LockUnusable(io::Error),
}

impl RecordError {
    /// The refusal, when this is one.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            RecordError::Refused(r) => Some(*r),
            _ => None,
        }
    }
}

/// How long [`ScopeLog::record`] waits for the log's lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockWait {
    /// Block until the lock is free (the reference's behaviour).
    #[default]
    Forever,
    /// Give up with [`RecordError::LockTimeout`] after this long (hooks: never block
    /// the agent).
    AtMost(Duration),
}

/// Read one of transcope's own files (a scope log, a cursor, the session index) as of
/// its size when opened: never through a symbolic link (`O_NOFOLLOW`: `ELOOP`), and
/// never blocking — a FIFO or device planted in its place is an error, not a hang.
pub use transcope_jsonl::read_private;

/// `<home>/brain/session-scopes`.
pub fn scopes_dir(home: &Path) -> PathBuf {
    home.join("brain").join("session-scopes")
}

/// `<home>/brain/session-scopes/<session>.jsonl`, or `None` for an invalid session id.
pub fn log_path(home: &Path, session: &str) -> Option<PathBuf> {
    is_valid_session_id(session).then(|| scopes_dir(home).join(format!("{session}.jsonl")))
}

/// `<home>/transcope/scope-logs/<session>.json`: what a batch last knew of the log's
/// rows (see [`Transaction`]), or `None` for an invalid session id.
pub fn state_path(home: &Path, session: &str) -> Option<PathBuf> {
    is_valid_session_id(session).then(|| {
        home.join("transcope")
            .join("scope-logs")
            .join(format!("{session}.json"))
    })
}

/// A handle on one session's scope log. Cheap: nothing is read or created until a
/// method needs it.
#[derive(Clone, Debug)]
pub struct ScopeLog {
    session: String,
    path: Option<PathBuf>,
    /// Where batches keep the log's state (`None`: every batch reads the log whole).
    state: Option<PathBuf>,
    whole_rows_below: u64,
    lock_wait: LockWait,
}

impl ScopeLog {
    /// The log of `session` under the agentihooks `home`. An invalid session id gives a
    /// handle with no path: it reads as empty and never writes.
    pub fn open(home: impl AsRef<Path>, session: impl Into<String>) -> ScopeLog {
        let session = session.into();
        let path = log_path(home.as_ref(), &session);
        let state = state_path(home.as_ref(), &session);
        ScopeLog {
            session,
            path,
            state,
            whole_rows_below: WHOLE_ROWS_BELOW,
            lock_wait: LockWait::Forever,
        }
    }

    /// The same log, its batches reading it whole every time and keeping no state (what
    /// a batch did before states: the reference's way, to compare with).
    pub fn uncached(mut self) -> ScopeLog {
        self.state = None;
        self
    }

    /// A log of at most `bytes` is read whole by every batch, and no state is kept for it
    /// (default [`WHOLE_ROWS_BELOW`]).
    pub fn whole_rows_below(mut self, bytes: u64) -> ScopeLog {
        self.whole_rows_below = bytes;
        self
    }

    /// Where batches keep this log's state; `None` when they keep none.
    pub fn state_path(&self) -> Option<&Path> {
        self.state.as_deref()
    }

    /// Set how long `record` waits for the lock.
    pub fn with_lock_wait(mut self, wait: LockWait) -> ScopeLog {
        self.lock_wait = wait;
        self
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The log's path; `None` when the session id is invalid.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Every readable row, in file order (§1.7). Any I/O error reads as empty (a log
    /// that is a symbolic link or not a regular file too: see [`read_private`]).
    pub fn transitions(&self) -> Vec<Row> {
        match &self.path {
            Some(p) => read_private(p)
                .map(|b| rows_from_bytes(&b))
                .unwrap_or_default(),
            None => Vec::new(),
        }
    }

    /// Record a transition (`record_scope`, §2). `Ok(None)` when nothing was written
    /// (invalid session id, replay, unchanged scope).
    pub fn record(
        &self,
        scope: &Scope,
        at: &str,
        grant: Option<&Grant>,
    ) -> Result<Option<WrittenRow>, RecordError> {
        record::record(self, scope, at, grant)
    }

    /// Remove the log when it is an empty regular file — what an append refused before
    /// its first byte (a full disk) leaves behind — under its lock, waited for as
    /// `record` waits. `Ok(true)` when removed; a log holding any byte, a missing log,
    /// a symbolic link, or a lock that cannot be had is left alone.
    ///
    /// # Errors
    /// The removal's, or reading the log's metadata (other than "not found").
    pub fn remove_if_empty(&self) -> io::Result<bool> {
        let Some(path) = &self.path else {
            return Ok(false);
        };
        let Ok(sidecar) = lockfile::open_sidecar(path) else {
            return Ok(false);
        };
        let Ok(_held) = lockfile::lock(sidecar, self.lock_wait) else {
            return Ok(false);
        };
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_file() && m.len() == 0 => std::fs::remove_file(path).map(|()| true),
            Ok(_) => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The rows through which events at `times` are attributed exactly as through
    /// every row ([`ScopeLog::transitions`]), read one at a time and never all held:
    /// for each time, the row in force then (§4.1: the last in file order whose own time
    /// is at or before it), and the log's last row, in file order. No other row of those
    /// is at or before a time whose row in force is an earlier one (it would be in force
    /// instead), and the last row is in force at a time only if it is that time's row; so
    /// [`InForce`] over them picks for each time the row it picks over every row, and
    /// they are empty exactly when the log is. Memory: a row per distinct time.
    pub fn rows_in_force(&self, times: &[transcope_core::Instant]) -> Vec<Row> {
        let mut ts = times.to_vec();
        ts.sort_unstable();
        ts.dedup();
        // Slot j: the last row (file order) whose time is in (ts[j-1], ts[j]].
        let mut slots: Vec<Option<(u64, Row)>> = vec![None; ts.len()];
        let mut last: Option<(u64, Row)> = None;
        let mut n = 0u64;
        let read = self.path.as_deref().and_then(|p| {
            let (mut file, size) = transcope_jsonl::open_private(p).ok()?;
            read::scan_file(&mut file, 0, size, |row| {
                let t = row
                    .get("at")
                    .and_then(serde_json::Value::as_str)
                    .and_then(transcope_core::timestamp::parse);
                if let Some(t) = t {
                    let j = ts.partition_point(|x| *x < t);
                    if j < ts.len() {
                        slots[j] = Some((n, row.clone()));
                    }
                }
                last = Some((n, row));
                n += 1;
            })
            .ok()
        });
        if read.is_none() {
            // Unreadable part way: as empty, like a failed whole read.
            return Vec::new();
        }
        // The row in force at ts[e] is the latest (in file order) of slots 0..=e.
        let mut kept: Vec<(u64, Row)> = Vec::new();
        let mut best: Option<u64> = None;
        for slot in slots.into_iter().flatten() {
            if best.is_none_or(|b| slot.0 > b) {
                best = Some(slot.0);
                kept.push(slot);
            }
        }
        if let Some(l) = last {
            if kept.last().is_none_or(|k| k.0 != l.0) {
                kept.push(l);
            }
        }
        kept.sort_by_key(|k| k.0);
        kept.into_iter().map(|(_, r)| r).collect()
    }

    /// The scope in force at `at` (§4.1), or `None`.
    pub fn scope_at(&self, at: &str) -> Option<Scope> {
        scope_at_rows(&self.transitions(), at)
    }

    /// Attribute `events` through this log, read once (§4.2).
    pub fn attribute(&self, events: &[Event], grant: Option<&Grant>) -> Vec<Attribution> {
        attribute_rows(&self.transitions(), events, grant)
    }
}

//! `record_scope` (scope-log.md §2), step by step in the reference's order.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use transcope_core::{py, timestamp, Grant, Scope, ScopeField};

use crate::lockfile::{open_sidecar, Locked, NotLocked};
use crate::{rows_from_bytes, LockWait, RecordError, Refusal, Row, ScopeLog};

/// A row [`ScopeLog::record`] appended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WrittenRow {
    /// The row exactly as appended, without its newline (and without a fresh-line
    /// prefix).
    pub line: String,
    /// Its `sequence`.
    pub sequence: u64,
    /// Its `transition_id`.
    pub transition_id: String,
}

/// The row text: the 15 keys in order, Python `json.dumps` style.
pub fn row_line(session: &str, sequence: u64, at: &str, id: &str, scope: &Scope) -> String {
    let mut out = String::with_capacity(512);
    out.push_str("{\"session_id\": ");
    py::write_str(&mut out, session);
    out.push_str(", \"sequence\": ");
    out.push_str(&sequence.to_string());
    out.push_str(", \"at\": ");
    py::write_str(&mut out, at);
    out.push_str(", \"transition_id\": ");
    py::write_str(&mut out, id);
    for (f, v) in scope.iter() {
        out.push_str(", ");
        py::write_str(&mut out, f.key());
        out.push_str(": ");
        py::write_str(&mut out, v);
    }
    out.push('}');
    out
}

pub(crate) fn record(
    log: &ScopeLog,
    scope: &Scope,
    at: &str,
    grant: Option<&Grant>,
) -> Result<Option<WrittenRow>, RecordError> {
    let mut txn = log.transaction_unread();
    let row = txn.record(scope, at, grant)?;
    txn.commit()?;
    Ok(row)
}

/// A batch of `record` calls on one log: the rows are read once, the lock is taken at
/// the first record attempt (re-reading the rows under it) and held until
/// [`Transaction::commit`], which appends every accepted row in one `write_all`.
///
/// Each call applies exactly the rules of [`ScopeLog::record`] against the rows as they
/// stand, the earlier accepted rows of the batch included, so a batch writes the same
/// bytes as the same calls made one by one — but a process killed before `commit`
/// leaves none of the batch, never part of it.
pub struct Transaction<'l> {
    log: &'l ScopeLog,
    rows: Vec<Row>,
    /// The file's bytes are non-empty and do not end with `\n` (fresh-line rule).
    torn_tail: bool,
    locked: Option<Option<Locked>>,
    /// The lock wait already ran out once: later records fail at once instead of
    /// waiting again (a hook's whole batch is bounded by one wait).
    gave_up: Option<Duration>,
    read: bool,
    pending: String,
    written: Vec<WrittenRow>,
}

impl ScopeLog {
    /// Start a batch; the rows are read now, without the lock (as the reference's
    /// `observe_transcript` reads them).
    pub fn transaction(&self) -> Transaction<'_> {
        let mut t = self.transaction_unread();
        t.reload();
        t
    }

    fn transaction_unread(&self) -> Transaction<'_> {
        Transaction {
            log: self,
            rows: Vec::new(),
            torn_tail: false,
            locked: None,
            gave_up: None,
            read: false,
            pending: String::new(),
            written: Vec::new(),
        }
    }
}

impl Transaction<'_> {
    fn reload(&mut self) {
        let bytes = self
            .log
            .path()
            .and_then(|p| crate::read_private(p).ok())
            .unwrap_or_default();
        self.rows = rows_from_bytes(&bytes);
        self.torn_tail = !bytes.is_empty() && bytes.last() != Some(&b'\n');
        self.read = true;
    }

    /// The rows as they stand (file rows, then this batch's accepted rows).
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The rows accepted so far in this batch.
    pub fn written(&self) -> &[WrittenRow] {
        &self.written
    }

    /// `record_scope` within the batch (scope-log.md §2.1).
    pub fn record(
        &mut self,
        scope: &Scope,
        at: &str,
        grant: Option<&Grant>,
    ) -> Result<Option<WrittenRow>, RecordError> {
        // 1. The scope is already normalised (`Scope` holds the 11 strings).
        // 2. Grant.
        if let Some(g) = grant {
            if !g.admits(scope.get(ScopeField::ProjectId)) {
                return Err(Refusal::OutsideGrant.into());
            }
        }
        // 3. Time, before the session id.
        let instant = timestamp::parse(at).ok_or(Refusal::NotATimestamp)?;
        // 4. Session id.
        let Some(path) = self.log.path() else {
            return Ok(None);
        };
        if self.locked.is_none() {
            if let Some(waited) = self.gave_up {
                return Err(RecordError::LockTimeout(waited));
            }
            // 5. The directory, before locking: made (or found unmakeable, the clear
            // error) only when the lock file cannot be opened, which saves a mkdir and a
            // stat per batch.
            let sidecar = match open_sidecar(path) {
                Err(_) => {
                    if let Some(dir) = path.parent() {
                        fs::DirBuilder::new()
                            .recursive(true)
                            .mode(0o700)
                            .create(dir)
                            .map_err(|source| RecordError::Io {
                                context: "creating the session-scopes directory",
                                source,
                            })?;
                    }
                    open_sidecar(path)
                }
                opened => opened,
            };
            // 6. The exclusive lock, then 7. read under it.
            self.locked = Some(lock(sidecar, self.log.lock_wait).inspect_err(|e| {
                if let RecordError::LockTimeout(waited) = e {
                    self.gave_up = Some(*waited);
                }
            })?);
            self.reload();
        } else if !self.read {
            self.reload();
        }
        let id = scope.transition_id(self.log.session(), at);
        // 8. Idempotent replay, anywhere in the file.
        if self
            .rows
            .iter()
            .any(|r| r.get("transition_id").and_then(Value::as_str) == Some(id.as_str()))
        {
            return Ok(None);
        }
        // 9. Against the latest row in file order.
        if let Some(latest) = self.rows.last() {
            if let Some(latest_at) = latest
                .get("at")
                .and_then(Value::as_str)
                .and_then(timestamp::parse)
            {
                if instant < latest_at {
                    return Err(Refusal::Older.into());
                }
            }
            if revision_is_older(latest, scope) {
                return Err(Refusal::OlderTaskRevision.into());
            }
            if unchanged(latest, scope) {
                return Ok(None);
            }
        }
        // 10. The row, appended (in memory until commit) with the fresh-line rule.
        let sequence = self.rows.len() as u64;
        let line = row_line(self.log.session(), sequence, at, &id, scope);
        if self.torn_tail && self.pending.is_empty() && self.written.is_empty() {
            self.pending.push('\n');
        }
        self.pending.push_str(&line);
        self.pending.push('\n');
        let mut row = Row::new();
        row.insert(
            "session_id".into(),
            Value::String(self.log.session().to_owned()),
        );
        row.insert("sequence".into(), Value::from(sequence));
        row.insert("at".into(), Value::String(at.to_owned()));
        row.insert("transition_id".into(), Value::String(id.clone()));
        for (f, v) in scope.iter() {
            row.insert(f.key().into(), Value::String(v.to_owned()));
        }
        self.rows.push(row);
        let w = WrittenRow {
            line,
            sequence,
            transition_id: id,
        };
        self.written.push(w.clone());
        Ok(Some(w))
    }

    /// Append every accepted row in one write and release the lock.
    pub fn commit(mut self) -> Result<Vec<WrittenRow>, RecordError> {
        if !self.pending.is_empty() {
            if let Some(path) = self.log.path() {
                append(path, self.pending.as_bytes()).map_err(|source| RecordError::Io {
                    context: "appending to the scope log",
                    source,
                })?;
            }
        }
        self.locked = None;
        Ok(std::mem::take(&mut self.written))
    }
}

fn str_field<'a>(row: &'a Row, key: &str) -> Option<&'a str> {
    row.get(key).and_then(Value::as_str)
}

fn unchanged(latest: &Row, scope: &Scope) -> bool {
    scope
        .iter()
        .all(|(f, v)| str_field(latest, f.key()) == Some(v))
}

/// Python `str(row.get("task_revision"))` when that is made of ASCII digits.
fn digits_of(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) => is_ascii_digits(s).then(|| s.clone()),
        Some(Value::Number(n)) if n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

fn is_ascii_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Numeric `a < b` for ASCII digit strings of any length.
fn digits_less(a: &str, b: &str) -> bool {
    let a = a.trim_start_matches('0');
    let b = b.trim_start_matches('0');
    (a.len(), a) < (b.len(), b)
}

fn revision_is_older(latest: &Row, scope: &Scope) -> bool {
    let task = scope.get(ScopeField::Task);
    if task.is_empty()
        || str_field(latest, "task") != Some(task)
        || str_field(latest, "swarm") != Some(scope.get(ScopeField::Swarm))
    {
        return false;
    }
    let new = scope.get(ScopeField::TaskRevision);
    match digits_of(latest.get("task_revision")) {
        Some(old) if is_ascii_digits(new) => digits_less(new, &old),
        _ => false,
    }
}

/// The log's sidecar lock (best effort: a sidecar that cannot be opened or locked
/// means no lock, as in the reference; only a bounded wait running out is an error).
/// Lock the opened sidecar; none when it could not be opened (the reference goes on
/// without the lock then).
fn lock(sidecar: io::Result<fs::File>, wait: LockWait) -> Result<Option<Locked>, RecordError> {
    let Ok(file) = sidecar else {
        return Ok(None);
    };
    match crate::lockfile::lock(file, wait) {
        Ok(l) => Ok(Some(l)),
        Err(NotLocked::TimedOut(limit)) => Err(RecordError::LockTimeout(limit)),
        Err(NotLocked::Unavailable) => Ok(None),
    }
}

fn append(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the scope log is not a regular file",
        ));
    }
    f.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_compare_numerically() {
        assert!(digits_less("2", "10"));
        assert!(!digits_less("10", "2"));
        assert!(digits_less("002", "3"));
        assert!(!digits_less("3", "003"));
        assert!(digits_less(
            "99999999999999999999999",
            "100000000000000000000000"
        ));
    }
}

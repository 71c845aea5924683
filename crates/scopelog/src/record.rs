//! `record_scope` (scope-log.md §2), step by step in the reference's order.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use transcope_core::{py, timestamp, Grant, Scope, ScopeField};

use crate::lockfile::{self, open_sidecar, Locked, NotLocked};
use crate::read::scan_log;
use crate::{LockWait, RecordError, Refusal, Row, ScopeLog};

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
    // The keys, separators and `sequence` take under 256 bytes; values grow only when
    // escaped. Sized once: a row holding a megabyte-long folder is not grown by doubling.
    let values: usize = scope.iter().map(|(_, v)| v.len()).sum();
    let mut out = String::with_capacity(256 + session.len() + at.len() + id.len() + values);
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

/// The most rows a transaction keeps for [`Transaction::into_rows`]; a log with more
/// is read again by whoever needs its rows (a session's log holds a few rows; one of
/// tens of thousands must not cost a map per row: see [`Transaction`]'s cost).
pub const KEPT_ROWS_MAX: usize = 1024;

/// The rows a transaction holds of its log, in file order: the latest one (the rules
/// compare against it), or — asked for ([`ScopeLog::transaction_keeping_rows`]) and
/// while they are at most [`KEPT_ROWS_MAX`] — every one, the latest last.
enum Held {
    Latest(Option<Row>),
    All(Vec<Row>),
}

impl Held {
    /// `row` comes next in file order. Past [`KEPT_ROWS_MAX`] only the latest is held
    /// from then on (a batch's memory does not grow with its log).
    fn push(&mut self, row: Row) {
        match self {
            Held::All(rows) if rows.len() < KEPT_ROWS_MAX => rows.push(row),
            _ => *self = Held::Latest(Some(row)),
        }
    }

    fn latest(&self) -> Option<&Row> {
        match self {
            Held::Latest(row) => row.as_ref(),
            Held::All(rows) => rows.last(),
        }
    }

    /// None held (whether every row is, stays as it was).
    fn clear(&mut self) {
        match self {
            Held::Latest(row) => *row = None,
            Held::All(rows) => rows.clear(),
        }
    }
}

/// Accepted rows are appended once this many bytes of them are waiting (and at
/// [`Transaction::commit`]): a batch's memory stays bounded whatever its size.
const FLUSH_BYTES: usize = 1 << 20;

/// A batch of `record` calls on one log: the rows are read once, the lock is taken at
/// the first record attempt (re-reading the rows under it) and held until
/// [`Transaction::commit`].
///
/// Each call applies exactly the rules of [`ScopeLog::record`] against the rows as they
/// stand, the earlier accepted rows of the batch included, so a batch writes the same
/// bytes as the same calls made one by one (tested against them).
///
/// **Cost.** What the rules need of the rows is kept, not the rows: their number (the
/// next `sequence`), the set of their `transition_id`s (the replay check is a lookup,
/// not a scan) and the latest row. A batch of `n` records over a log of `m` rows takes
/// time linear in `n + m` and memory for `m + n` ids, plus at most about 1 MiB of rows
/// waiting to be appended.
///
/// **What a kill leaves.** Accepted rows are appended in order, in writes of whole rows
/// (whenever about 1 MiB is waiting, and at `commit`), under the lock. A process
/// killed (or cut by a hook's deadline, or stopped by a full disk) part way through a
/// batch leaves a prefix of its rows: whole rows, then at most one torn line. Readers
/// skip the torn line, and the next write starts on a fresh line. Rows still waiting
/// when a transaction is dropped without `commit` are not written.
pub struct Transaction<'l> {
    log: &'l ScopeLog,
    /// Readable rows, the file's and this batch's: the next row's `sequence`.
    count: u64,
    /// The `transition_id`s among them that could equal one this batch computes (64
    /// lowercase hex digits), as the 32 bytes they spell.
    ids: HashSet<[u8; 32]>,
    /// The latest row in file order, or every row when asked for.
    held: Held,
    /// The file's bytes are non-empty and do not end with `\n` (fresh-line rule).
    torn_tail: bool,
    /// The lock, held from the first record attempt until commit.
    locked: Option<Locked>,
    /// Why later records fail at once: the lock wait ran out (a hook's whole batch is
    /// bounded by one wait), the lock cannot be taken, or a write failed.
    stuck: Option<Stuck>,
    read: bool,
    /// Accepted rows not yet appended, and how many.
    pending: String,
    pending_rows: u64,
    /// The log, opened for appending at the first write.
    out: Option<File>,
    accepted: u64,
    durable: u64,
    /// The `transition_id` of the row accepted last (its line is the caller's).
    last_written_id: Option<String>,
}

const APPENDING: &str = "appending to the scope log";

/// A failure a transaction does not retry.
#[derive(Debug)]
enum Stuck {
    TimedOut(Duration),
    Unusable(io::ErrorKind, String),
    Io(&'static str, io::ErrorKind, String),
    /// Appending failed: rows of the batch were lost, so commit fails too.
    Write(io::ErrorKind, String),
}

impl Stuck {
    fn of(e: &RecordError) -> Option<Stuck> {
        match e {
            RecordError::LockTimeout(d) => Some(Stuck::TimedOut(*d)),
            RecordError::LockUnusable(e) => Some(Stuck::Unusable(e.kind(), e.to_string())),
            RecordError::Io { context, source } => {
                Some(Stuck::Io(context, source.kind(), source.to_string()))
            }
            _ => None,
        }
    }

    fn error(&self) -> RecordError {
        match self {
            Stuck::TimedOut(d) => RecordError::LockTimeout(*d),
            Stuck::Unusable(kind, msg) => {
                RecordError::LockUnusable(io::Error::new(*kind, msg.clone()))
            }
            Stuck::Io(context, kind, msg) => RecordError::Io {
                context,
                source: io::Error::new(*kind, msg.clone()),
            },
            Stuck::Write(kind, msg) => RecordError::Io {
                context: APPENDING,
                source: io::Error::new(*kind, msg.clone()),
            },
        }
    }
}

/// The 32 bytes a `transition_id` of 64 lowercase hex digits spells; `None` for any
/// other value (which no computed id can equal).
fn id_key(id: &str) -> Option<[u8; 32]> {
    let hex = id.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut key = [0u8; 32];
    for (k, pair) in key.iter_mut().zip(hex.chunks_exact(2)) {
        *k = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(key)
}

impl ScopeLog {
    /// Start a batch; the rows are read now, without the lock (as the reference's
    /// `observe_transcript` reads them).
    pub fn transaction(&self) -> Transaction<'_> {
        let mut t = self.transaction_unread();
        t.reload();
        t
    }

    /// [`ScopeLog::transaction`] that also keeps every row it reads and appends, for
    /// [`Transaction::into_rows`]: a caller that attributes through the log once the
    /// batch is done need not read it again.
    pub fn transaction_keeping_rows(&self) -> Transaction<'_> {
        let mut t = self.transaction_unread();
        t.held = Held::All(Vec::new());
        t.reload();
        t
    }

    fn transaction_unread(&self) -> Transaction<'_> {
        Transaction {
            log: self,
            count: 0,
            ids: HashSet::new(),
            held: Held::Latest(None),
            torn_tail: false,
            locked: None,
            stuck: None,
            read: false,
            pending: String::new(),
            pending_rows: 0,
            out: None,
            accepted: 0,
            durable: 0,
            last_written_id: None,
        }
    }
}

impl Transaction<'_> {
    /// Read the log again (any I/O error reads as empty, as for
    /// [`ScopeLog::transitions`]), one row at a time.
    fn reload(&mut self) {
        self.count = 0;
        self.ids.clear();
        self.held.clear();
        let (count, ids, held) = (&mut self.count, &mut self.ids, &mut self.held);
        let scanned = self.log.path().and_then(|p| {
            scan_log(p, |row| {
                *count += 1;
                if let Some(key) = row
                    .get("transition_id")
                    .and_then(Value::as_str)
                    .and_then(id_key)
                {
                    ids.insert(key);
                }
                held.push(row);
            })
            .ok()
        });
        if scanned.is_none() {
            // Unreadable part way: as empty, like a failed whole read.
            self.count = 0;
            self.ids.clear();
            self.held.clear();
        }
        self.torn_tail = scanned.is_some_and(|s| s.torn_tail);
        self.read = true;
    }

    /// How many readable rows the log has as this batch stands (the file's, then the
    /// rows accepted so far): the next accepted row's `sequence`.
    pub fn row_count(&self) -> u64 {
        self.count
    }

    /// The latest row in file order as this batch stands.
    pub fn last_row(&self) -> Option<&Row> {
        self.held.latest()
    }

    /// Whether a row with this `transition_id` is in the log as this batch stands.
    pub fn contains_transition(&self, id: &str) -> bool {
        id_key(id).is_some_and(|k| self.ids.contains(&k))
    }

    /// How many rows this batch accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// How many of them are in the file: appended by writes that completed.
    pub fn durable(&self) -> u64 {
        self.durable
    }

    /// The rows kept ([`ScopeLog::transaction_keeping_rows`]) once every row this batch
    /// accepted has reached the file: the rows [`ScopeLog::transitions`] would read
    /// back then (the same file order, the same values). `None` when none were kept
    /// (or more than [`KEPT_ROWS_MAX`] there were), rows still wait to be appended, or
    /// the batch failed part way (the file then holds fewer rows than the batch
    /// accepted: read it).
    pub fn into_rows(mut self) -> Option<Vec<Row>> {
        if self.stuck.is_some() || !self.pending.is_empty() || self.durable != self.accepted {
            return None;
        }
        match std::mem::replace(&mut self.held, Held::Latest(None)) {
            Held::All(rows) => Some(rows),
            Held::Latest(_) => None,
        }
    }

    /// The `transition_id` of the row this batch accepted last.
    pub fn last_written_id(&self) -> Option<&str> {
        self.last_written_id.as_deref()
    }

    /// `record_scope` within the batch (scope-log.md §2.1).
    ///
    /// # Errors
    /// A refusal (the rules); the lock's wait running out ([`RecordError::LockTimeout`])
    /// or the lock being unusable ([`RecordError::LockUnusable`]), after which every
    /// later record of the batch fails the same way at once and nothing is written; a
    /// failed write of waiting rows ([`RecordError::Io`]), likewise final.
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
        if let Some(stuck) = &self.stuck {
            return Err(stuck.error());
        }
        if self.locked.is_none() {
            // 5, 6, then 7: read under the lock.
            let locked = lock_log(path, self.log.lock_wait);
            self.locked = Some(locked.inspect_err(|e| self.stuck = Stuck::of(e))?);
            self.reload();
        } else if !self.read {
            self.reload();
        }
        let id = scope.transition_id(self.log.session(), at);
        let key = id_key(&id);
        // 8. Idempotent replay, anywhere in the file.
        if key.is_some_and(|k| self.ids.contains(&k)) {
            return Ok(None);
        }
        // 9. Against the latest row in file order.
        if let Some(latest) = self.held.latest() {
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
        // 10. The row, appended (waiting until enough is, or commit) with the
        // fresh-line rule.
        let sequence = self.count;
        let line = row_line(self.log.session(), sequence, at, &id, scope);
        if self.torn_tail && self.accepted == 0 {
            self.pending.push('\n');
        }
        self.pending.push_str(&line);
        self.pending.push('\n');
        self.pending_rows += 1;
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
        self.held.push(row);
        self.count += 1;
        if let Some(k) = key {
            self.ids.insert(k);
        }
        self.accepted += 1;
        let w = WrittenRow {
            line,
            sequence,
            transition_id: id,
        };
        self.last_written_id = Some(w.transition_id.clone());
        if self.pending.len() >= FLUSH_BYTES {
            self.flush()?;
        }
        Ok(Some(w))
    }

    /// Append the rows waiting, in one `write_all` (still under the lock).
    ///
    /// # Errors
    /// The log cannot be opened or written ([`RecordError::Io`]): what reached the file
    /// stays (whole rows, then perhaps one torn line), the rest of the batch is dropped,
    /// and every later record or flush fails the same way.
    pub fn flush(&mut self) -> Result<(), RecordError> {
        if let Some(stuck @ Stuck::Write(..)) = &self.stuck {
            return Err(stuck.error());
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        let Some(path) = self.log.path() else {
            self.pending.clear();
            return Ok(());
        };
        // The file's length before the write, to tell after a failed one (a full disk)
        // how many of the waiting rows reached it whole.
        let mut start = None;
        let written = match &mut self.out {
            Some(f) => {
                start = f.metadata().ok().map(|m| m.len());
                f.write_all(self.pending.as_bytes())
            }
            None => open_append(path).and_then(|f| {
                let f = self.out.insert(f);
                start = f.metadata().ok().map(|m| m.len());
                f.write_all(self.pending.as_bytes())
            }),
        };
        let reached = match (&written, &self.out, start) {
            (Err(_), Some(f), Some(start)) => f
                .metadata()
                .map_or(0, |m| m.len().saturating_sub(start) as usize),
            _ => 0,
        };
        match written {
            Ok(()) => {
                self.pending.clear();
                self.durable += std::mem::take(&mut self.pending_rows);
                Ok(())
            }
            Err(source) => {
                // A row is one line (JSON holds no raw newline); a leading newline is
                // the fresh-line repair, not a row.
                let done = &self.pending.as_bytes()[..reached.min(self.pending.len())];
                let ends = done.iter().filter(|&&b| b == b'\n').count();
                let repair = usize::from(self.pending.starts_with('\n') && ends > 0);
                self.durable += (ends - repair) as u64;
                self.pending.clear();
                self.pending_rows = 0;
                self.stuck = Some(Stuck::Write(source.kind(), source.to_string()));
                Err(RecordError::Io {
                    context: APPENDING,
                    source,
                })
            }
        }
    }

    /// Append the rows still waiting and release the lock. Returns how many rows the
    /// batch wrote.
    ///
    /// # Errors
    /// As [`Transaction::flush`]; [`Transaction::durable`] (before commit) or the rows
    /// readable afterwards say what was written.
    pub fn commit(mut self) -> Result<u64, RecordError> {
        self.flush()?;
        self.locked = None;
        Ok(self.durable)
    }
}

/// Steps 5 and 6: the directory, then the exclusive lock on `<log>.lock`. The
/// directory is made (or found unmakeable, the clear error) only when the lock file
/// cannot be opened, which saves a mkdir and a stat per batch.
fn lock_log(path: &Path, wait: LockWait) -> Result<Locked, RecordError> {
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
    // Without the lock nothing is written: concurrent writers would interleave.
    let file = sidecar.map_err(RecordError::LockUnusable)?;
    lockfile::lock(file, wait).map_err(|e| match e {
        NotLocked::TimedOut(limit) => RecordError::LockTimeout(limit),
        NotLocked::Unavailable(e) => RecordError::LockUnusable(e),
    })
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

/// The log opened for appending (created 0600), never through a symbolic link, and
/// only a regular file.
fn open_append(path: &Path) -> io::Result<File> {
    let f = OpenOptions::new()
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
    Ok(f)
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

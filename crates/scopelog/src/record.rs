//! `record_scope` (scope-log.md §2), step by step in the reference's order.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use transcope_core::{py, timestamp, Grant, Instant, Scope, ScopeField};

use crate::lockfile::{self, open_sidecar, Locked, NotLocked};
use crate::read::scan_file;
use crate::state;
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
    /// Its `at`, as written.
    pub at: String,
    /// Its `at` as an instant (`None`: not a time the reference reads).
    pub at_us: Option<i64>,
    /// Its scope: the values written, as values (an index takes them without parsing
    /// `line` back).
    pub scope: Scope,
}

impl WrittenRow {
    /// The row a log line holds, parsed (a line another tool wrote, a test's): `None`
    /// when it is not a JSON object. Its values are [`RowValues::of`] it at its own
    /// `sequence`.
    pub fn from_line(line: &str) -> Option<WrittenRow> {
        let Ok(Value::Object(r)) = serde_json::from_str::<Value>(line) else {
            return None;
        };
        let sequence = r.get("sequence").and_then(Value::as_u64).unwrap_or(0);
        let v = RowValues::of(&r, sequence);
        Some(WrittenRow {
            line: line.to_owned(),
            sequence,
            transition_id: v.transition_id,
            at: v.at,
            at_us: v.at_us,
            scope: v.scope,
        })
    }
}

/// What an index keeps of a log row besides its text, read from the row as any tool
/// may have written it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowValues {
    /// Its `transition_id`; `#<sequence>` for a row without one (another tool's, or
    /// hand-edited): still one row.
    pub transition_id: String,
    /// Its `at`: a string as it is, anything else as its JSON, none as empty.
    pub at: String,
    /// `at` as an instant, in microseconds (`None`: not a time the reference reads).
    pub at_us: Option<i64>,
    /// Its scope.
    pub scope: Scope,
}

impl RowValues {
    /// The values of `r`, the row at place `sequence` of its log.
    pub fn of(r: &Row, sequence: u64) -> RowValues {
        let at = match r.get("at") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let transition_id = match r.get("transition_id") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            _ => format!("#{sequence}"),
        };
        RowValues {
            transition_id,
            at_us: timestamp::parse(&at).map(Instant::unix_micros),
            at,
            scope: Scope::from_json_map(r),
        }
    }
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

/// A log at most this long is read whole, and no state is kept for it
/// ([`ScopeLog::whole_rows_below`]): it reads in a few milliseconds, a batch that keeps
/// its rows then has every one ([`Transaction::into_rows`]), and a batch over a short log
/// (nearly every log of a backfill) writes no state file.
pub const WHOLE_ROWS_BELOW: u64 = 256 * 1024;

/// The rows through which events at or after an instant are attributed exactly as
/// through every row of the log (scope-log.md §4.1: the row in force at `t` is the last
/// in file order whose time is at or before `t`).
///
/// `rows` are the last row whose `at` is a time and the last row of the part of the log
/// not kept (the "base"), then every row after it, in file order. For `t` at or after
/// `floor` — the latest time any base row has — every timed base row is at or before
/// `t`, so the row in force among all rows is the last kept row at or before `t`, or
/// else the last timed base row, which is kept: [`InForce`](crate::InForce) over `rows`
/// gives the same row. `rows` is empty exactly when the log has no rows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The rows, in file order.
    pub rows: Vec<Row>,
    /// The latest time of a base row not in `rows`; `None`: every instant is covered.
    pub floor: Option<Instant>,
    /// `rows` are every row of the log.
    pub whole: bool,
}

impl Window {
    /// Whether the row in force at `t` among `rows` is the one among all the log's rows.
    pub fn covers(&self, t: Instant) -> bool {
        self.floor.is_none_or(|f| t >= f)
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
/// next `sequence`), the latest row, and the `transition_id`s a new one could equal (the
/// replay check is a lookup, not a scan). With a cached state of the log (the module
/// `state`: its rows up to a line boundary, checked before use) only the bytes after
/// that boundary are read, and of the rows before it only the ids that are not their own
/// row's hash are held: a transition later than every one of those rows cannot equal
/// any other of their ids (the id hashes its `at` text, whose instant is that row's), so
/// the other ids are read (the whole log) only when a transition comes at or before the
/// latest time among them. A batch of `n` records after `k` new bytes takes time linear
/// in `n + k`; without a state (or with one that no longer holds), linear in the log.
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
    /// `transition_id`s of rows (as the 32 bytes they spell): every one when
    /// `ids_complete`, else those a new transition later than `id_floor` could equal.
    ids: HashSet<[u8; 32]>,
    ids_complete: bool,
    /// The latest time among the rows whose ids are not in `ids` (`ids_complete` false).
    id_floor: Option<Instant>,
    /// The latest row in file order, and whether its `at` is a time.
    latest: Option<Row>,
    latest_timed: bool,
    /// The last row before `latest` whose `at` is a time.
    earlier_timed: Option<Row>,
    /// The latest time of any row.
    max_at: Option<Instant>,
    /// The ids of rows that are not their own row's hash, while at most
    /// [`state::MAX_STRAYS`] (`None`: more, or not tracked: no state is saved).
    strays: Option<Vec<[u8; 32]>>,
    /// Keep the rows for [`Transaction::into_window`].
    keep: bool,
    window: Window,
    /// More than [`KEPT_ROWS_MAX`] rows came since the window's base: none is kept one by
    /// one until the window is based again on every row so far.
    window_over: bool,
    /// The log file read (device, inode) and the bytes of it the fields above describe.
    file: Option<state::FileId>,
    end: u64,
    /// The bytes a cached state described when one was used (nothing new: not saved).
    cached: Option<u64>,
    /// The fields above describe bytes `[0, end)` of `file` (no write went elsewhere).
    exact: bool,
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
pub(crate) fn id_key(id: &str) -> Option<[u8; 32]> {
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

    /// [`ScopeLog::transaction`] that also keeps the rows it reads and appends, for
    /// [`Transaction::into_window`] (and, while they are every row,
    /// [`Transaction::into_rows`]): a caller that attributes through the log once the
    /// batch is done need not read it again.
    pub fn transaction_keeping_rows(&self) -> Transaction<'_> {
        let mut t = self.transaction_unread();
        t.keep = true;
        t.reload();
        t
    }

    fn transaction_unread(&self) -> Transaction<'_> {
        Transaction {
            log: self,
            count: 0,
            ids: HashSet::new(),
            ids_complete: true,
            id_floor: None,
            latest: None,
            latest_timed: false,
            earlier_timed: None,
            max_at: None,
            strays: None,
            keep: false,
            window: Window::default(),
            window_over: false,
            file: None,
            end: 0,
            cached: None,
            exact: false,
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

/// Whether `id` is the `transition_id` of `row`'s own session (the log's), `at` and
/// scope: a transition equal to it has that very `at` text.
fn own_hash(session: &str, row: &Row, id: &[u8; 32]) -> bool {
    let Some(at) = row.get("at").and_then(Value::as_str) else {
        return false;
    };
    id_key(&Scope::from_json_map(row).transition_id(session, at)).as_ref() == Some(id)
}

fn time_of(row: &Row) -> Option<Instant> {
    row.get("at")
        .and_then(Value::as_str)
        .and_then(timestamp::parse)
}

fn key_of(row: &Row) -> Option<[u8; 32]> {
    row.get("transition_id")
        .and_then(Value::as_str)
        .and_then(id_key)
}

impl Transaction<'_> {
    /// Forget every row (as an empty log).
    fn forget(&mut self) {
        self.count = 0;
        self.ids.clear();
        self.ids_complete = true;
        self.id_floor = None;
        self.latest = None;
        self.latest_timed = false;
        self.earlier_timed = None;
        self.max_at = None;
        // Only a read under the lock can lead to a state being kept: the strays are
        // looked for then (a hash per row), never in the first, unlocked read.
        self.strays = (self.locked.is_some() && self.log.state_path().is_some()).then(Vec::new);
        self.window = Window {
            whole: true,
            ..Window::default()
        };
        self.window_over = false;
        self.file = None;
        self.end = 0;
        self.cached = None;
        self.exact = true;
        self.torn_tail = false;
    }

    /// Read the log again (any I/O error reads as empty, as for
    /// [`ScopeLog::transitions`]), one row at a time: from the boundary of its cached
    /// state when that holds, else whole.
    fn reload(&mut self) {
        self.forget();
        if let Some(path) = self.log.path() {
            if self.load(path).is_err() {
                // Unreadable part way: as empty, like a failed whole read.
                self.forget();
            }
        }
        self.read = true;
    }

    fn load(&mut self, path: &Path) -> io::Result<()> {
        let (mut file, size) = transcope_jsonl::open_private(path)?;
        let meta = file.metadata()?;
        let id = (meta.dev(), meta.ino());
        let known = match self.log.state_path() {
            Some(state) if size > self.log.whole_rows_below => state::load(state, &file, id, size),
            _ => None,
        };
        let start = match known {
            Some(k) => {
                let start = k.size;
                self.take_known(k);
                start
            }
            None => 0,
        };
        let scanned = scan_file(&mut file, start, size - start, |row| self.read_row(row))?;
        if self.window_over {
            self.rebase();
        }
        self.file = Some(id);
        self.end = size;
        self.torn_tail = scanned.torn_tail;
        Ok(())
    }

    /// Start from a cached state: its rows are the base, only its strays' ids are held.
    fn take_known(&mut self, k: state::Known) {
        self.count = k.count;
        self.latest_timed = k.latest.as_ref().and_then(time_of).is_some();
        self.latest = k.latest;
        self.earlier_timed = k.earlier_timed;
        self.max_at = k.max_at;
        self.ids = k.strays.iter().copied().collect();
        self.strays = Some(k.strays);
        self.ids_complete = false;
        self.id_floor = k.max_at;
        self.cached = Some(k.size);
        if self.keep {
            self.rebase();
        }
    }

    /// One row read from the file, next in file order.
    fn read_row(&mut self, row: Row) {
        if let Some(key) = key_of(&row) {
            self.ids.insert(key);
            if let Some(strays) = &mut self.strays {
                if !own_hash(self.log.session(), &row, &key) {
                    strays.push(key);
                    if strays.len() > state::MAX_STRAYS {
                        self.strays = None;
                    }
                }
            }
        }
        let time = time_of(&row);
        self.push_row(row, time);
    }

    /// `row` (whose `at` is `time`) comes next in file order.
    fn push_row(&mut self, row: Row, time: Option<Instant>) {
        self.count += 1;
        self.max_at = self.max_at.max(time);
        if self.keep && !self.window_over {
            if self.window.rows.len() < KEPT_ROWS_MAX {
                self.window.rows.push(row.clone());
            } else {
                // Based again on every row once the read or the batch is done.
                self.window_over = true;
                self.window.rows = Vec::new();
                self.window.whole = false;
            }
        }
        if let Some(prev) = self.latest.replace(row) {
            if self.latest_timed {
                self.earlier_timed = Some(prev);
            }
        }
        self.latest_timed = time.is_some();
    }

    /// Every row so far becomes the base of the window: only its last timed row and
    /// its last row are kept, and its latest time is the floor.
    fn rebase(&mut self) {
        let mut rows = Vec::with_capacity(2);
        if !self.latest_timed {
            rows.extend(self.earlier_timed.clone());
        }
        rows.extend(self.latest.clone());
        self.window = Window {
            rows,
            floor: self.max_at,
            whole: false,
        };
        self.window_over = false;
    }

    /// Make `ids` every id of the log's rows (the file's, then this batch's: those are in
    /// it already).
    fn load_all_ids(&mut self, path: &Path) -> io::Result<()> {
        let (mut file, size) = transcope_jsonl::open_private(path)?;
        let ids = &mut self.ids;
        scan_file(&mut file, 0, size, |row| {
            if let Some(k) = key_of(&row) {
                ids.insert(k);
            }
        })?;
        self.ids_complete = true;
        Ok(())
    }

    /// How many readable rows the log has as this batch stands (the file's, then the
    /// rows accepted so far): the next accepted row's `sequence`.
    pub fn row_count(&self) -> u64 {
        self.count
    }

    /// The latest row in file order as this batch stands.
    pub fn last_row(&self) -> Option<&Row> {
        self.latest.as_ref()
    }

    /// Whether a row with this `transition_id` is in the log as this batch stands (the
    /// log is read for it when the ids held cannot say).
    pub fn contains_transition(&self, id: &str) -> bool {
        let Some(key) = id_key(id) else {
            return false;
        };
        if self.ids.contains(&key) {
            return true;
        }
        if self.ids_complete {
            return false;
        }
        let mut found = false;
        if let Some(path) = self.log.path() {
            if let Ok((mut file, size)) = transcope_jsonl::open_private(path) {
                let _ = scan_file(&mut file, 0, size, |row| {
                    found |= key_of(&row) == Some(key);
                });
            }
        }
        found
    }

    /// Where the last read of the log started: the bytes a cached state stood for, or
    /// `None` when the log was read whole.
    pub fn read_from(&self) -> Option<u64> {
        self.cached
    }

    /// How many rows this batch accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted
    }

    /// How many of them are in the file: appended by writes that completed.
    pub fn durable(&self) -> u64 {
        self.durable
    }

    /// Every row were it done ok: no rows waiting, none lost.
    fn settled(&self) -> bool {
        self.stuck.is_none() && self.pending.is_empty() && self.durable == self.accepted
    }

    /// The rows kept ([`ScopeLog::transaction_keeping_rows`]) once every row this batch
    /// accepted has reached the log: the rows [`ScopeLog::transitions`] would read
    /// back then (the same file order, the same values). `None` when none were kept
    /// (or more than [`KEPT_ROWS_MAX`] there were, or a cached state stood for some),
    /// rows still wait to be appended, or the batch failed part way (the file then holds
    /// fewer rows than the batch accepted: read it).
    pub fn into_rows(self) -> Option<Vec<Row>> {
        self.into_window().filter(|w| w.whole).map(|w| w.rows)
    }

    /// The rows kept ([`ScopeLog::transaction_keeping_rows`]) as a [`Window`] on the log
    /// as this batch leaves it, once every row it accepted has reached the log; `None`
    /// when none were kept, rows still wait, or the batch failed part way.
    pub fn into_window(mut self) -> Option<Window> {
        if !self.keep || !self.settled() {
            return None;
        }
        if self.window_over {
            self.rebase();
        }
        Some(std::mem::take(&mut self.window))
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
    /// failed write of waiting rows ([`RecordError::Io`]), likewise final; the log
    /// unreadable when its ids must be read ([`RecordError::Io`]).
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
        // 8. Idempotent replay, anywhere in the file. The ids not held are of rows whose
        // time is at most `id_floor` and whose id hashes that time's own text.
        if let Some(k) = key {
            if !self.ids_complete && self.id_floor.is_some_and(|f| instant <= f) {
                self.load_all_ids(path).map_err(|source| RecordError::Io {
                    context: "reading the scope log",
                    source,
                })?;
            }
            if self.ids.contains(&k) {
                return Ok(None);
            }
        }
        // 9. Against the latest row in file order.
        if let Some(latest) = &self.latest {
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
        self.push_row(row, Some(instant));
        if let Some(k) = key {
            self.ids.insert(k);
        }
        self.accepted += 1;
        let w = WrittenRow {
            line,
            sequence,
            transition_id: id,
            at: at.to_owned(),
            at_us: Some(instant.unix_micros()),
            scope: scope.clone(),
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
                let meta = f.metadata().ok();
                start = meta.as_ref().map(|m| m.len());
                // The file appended to is the one read (or, none read, a new one).
                let id = meta.map(|m| (m.dev(), m.ino()));
                if self.file.is_some() && self.file != id || id.is_none() {
                    self.exact = false;
                }
                self.file = id;
                f.write_all(self.pending.as_bytes())
            }),
        };
        // What the state describes stays exact only if the write went just after it.
        if start != Some(self.end) {
            self.exact = false;
        }
        let reached = match (&written, &self.out, start) {
            (Err(_), Some(f), Some(start)) => f
                .metadata()
                .map_or(0, |m| m.len().saturating_sub(start) as usize),
            _ => 0,
        };
        match written {
            Ok(()) => {
                self.end += self.pending.len() as u64;
                self.torn_tail = false;
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
                self.exact = false;
                self.stuck = Some(Stuck::Write(source.kind(), source.to_string()));
                Err(RecordError::Io {
                    context: APPENDING,
                    source,
                })
            }
        }
    }

    /// Keep, for the next batch on this log, what this one knows of its rows (the
    /// cached state: see [`Transaction`]'s cost), when it holds the lock, every row it
    /// accepted reached the log, the log ends with a newline and something is new since
    /// the state it started from. A state that cannot be written costs only a whole
    /// read next time.
    pub fn save_state(&self) {
        let (Some(state), Some(path), Some(file), Some(strays)) = (
            self.log.state_path(),
            self.log.path(),
            self.file,
            &self.strays,
        ) else {
            return;
        };
        if self.locked.is_none()
            || self.end <= self.log.whole_rows_below
            || !self.read
            || !self.exact
            || !self.settled()
            || self.torn_tail
            || self.cached == Some(self.end)
        {
            return;
        }
        let known = state::Known {
            size: self.end,
            count: self.count,
            latest: self.latest.clone(),
            earlier_timed: if self.latest_timed {
                None
            } else {
                self.earlier_timed.clone()
            },
            max_at: self.max_at,
            strays: strays.clone(),
        };
        state::save(state, path, file, &known);
    }

    /// Append the rows still waiting, keep the log's state for the next batch
    /// ([`Transaction::save_state`]) and release the lock. Returns how many rows the
    /// batch wrote.
    ///
    /// # Errors
    /// As [`Transaction::flush`]; [`Transaction::durable`] (before commit) or the rows
    /// readable afterwards say what was written.
    pub fn commit(mut self) -> Result<u64, RecordError> {
        self.flush()?;
        self.save_state();
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

//! # transcope-index: ask it back
//!
//! One embedded SQLite database, `<home>/transcope/index.sqlite`, holds what transcope
//! observed: the **sessions** (scope-log keys, with parent, agent, transcript and first
//! and last times), their **transitions** (a mirror of the scope logs, which stay the
//! source of truth), the **marker ledger** and room for per-message **usage**.
//!
//! * Writers ([`Index::record`]) hand one [`Observed`] per transcript read: the rows
//!   change detection appended, the markers found (attributed), the times seen. One
//!   call is one transaction; a hook asks for it to be synced, a batch does not (the
//!   write-ahead log keeps every committed transaction across a killed process).
//! * The ledger holds every marker once, by its idempotency key, whatever the brain
//!   writer's setting: found markers are `pending` until a delivery ([`deliver`])
//!   marks them `delivered`, `outbox` (written where agentihooks' drains read) or
//!   `rejected`. A record is written before the transcript's cursor moves past it, so
//!   a killed run finds it again (and the key keeps it once). A delivery first claims
//!   the rows it sends ([`Index::claim`], a [`Lease`] per row), so concurrent
//!   deliveries send each marker once; an outbox drain's sends mark their rows
//!   `delivered` ([`Index::settle_drained`]).
//! * [`Index::sync_logs`] mirrors the scope logs that changed since (by size), so rows
//!   another tool appended are seen too; [`query`] answers `sessions`, `timeline`,
//!   `ledger`.
//!
//! ```
//! use transcope_index::{Index, Observed, Origin};
//! let home = tempfile::tempdir().unwrap();
//! let mut index = Index::open(home.path()).unwrap();
//! let line = r#"{"session_id": "s1", "sequence": 0, "at": "2026-10-08T10:00:00+00:00", "transition_id": "t1", "project_id": "p", "cwd": "/a"}"#;
//! let row = transcope_scopelog::WrittenRow::from_line(line).unwrap();
//! let seen = Observed { rows: vec![row], ..Observed::new("s1") };
//! index.record(&[seen], Origin::Backfill, false).unwrap();
//! let sessions = index.sessions(&Default::default()).unwrap();
//! assert_eq!(sessions[0].projects, ["p"]);
//! ```
#![warn(missing_docs)]

mod changes;
mod deliver;
mod exports;
mod facts;
pub mod names;
pub mod query;
pub mod recover;
pub mod schema;
mod span;
pub mod spend;
mod store;
mod usage;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use serde_json::{Map, Value};
use transcope_brain::MarkerRecord;
use transcope_core::{timestamp, Marker, Scope, ScopeField};

pub use changes::{Changes, Mark, MarkerRow, RequestRow, SessionRow, TransitionRow};
pub use deliver::{deliver, Change, Claimed, DeliverReport, Lease, Take, CLAIM_BATCH, LEASE};
pub use exports::Acknowledged;
pub use facts::{FactFilter, FactRow};
pub use names::{Held, Named, ProjectMatch};
pub use query::{LedgerFilter, LedgerRow, SessionFilter, SessionInfo, TimelineItem};
pub use span::Span;
pub use spend::{UsageFilter, UsageGroup, UsageKey};
pub use transcope_store::{InForce, Origin, State, Store, StoreError};
pub use usage::UsageBatch;

/// The page size of an index [`Index::open_at`] creates, in bytes.
pub const PAGE_SIZE: i64 = 16 * 1024;

/// A transcript as a sync saw it: its size, modification time in nanoseconds and
/// inode.
pub type FileStamp = (u64, i128, u64);

/// The transcripts a sync found read to their end ([`Index::seen`]): a path's bytes
/// ([`seen_key`]) → its [`FileStamp`] then.
pub type SeenFiles = rustc_hash::FxHashMap<Vec<u8>, FileStamp>;

/// A transcript's key among the [`SeenFiles`] (and in [`Index::set_seen`]): its path's
/// bytes, as the walk listed it.
pub fn seen_key(path: &Path) -> &[u8] {
    std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str())
}

/// `<home>/transcope/index.sqlite`.
pub fn index_path(home: &Path) -> PathBuf {
    home.join("transcope").join("index.sqlite")
}

/// Why the index could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The file is damaged, foreign, empty, a link or a newer transcope's: reported,
    /// never replaced ([`transcope_sqlite::Error::is_damage`]).
    #[error("the index {} cannot be used: {cause}; `transcope index rebuild` moves it aside (kept) and rebuilds it", path.display())]
    Damaged {
        /// The database.
        path: PathBuf,
        /// What is wrong with it (said in the message, not as a source: the message
        /// is whole, the fix last).
        cause: transcope_sqlite::Error,
    },
    /// Opening or migrating the database failed.
    #[error("the index {}: {source}", path.display())]
    Open {
        /// The database.
        path: PathBuf,
        /// The cause.
        source: transcope_sqlite::Error,
    },
    /// A statement failed.
    #[error("the index {}: {source}", path.display())]
    Sqlite {
        /// The database.
        path: PathBuf,
        /// The cause.
        source: transcope_sqlite::Error,
    },
    /// Reading a scope log or a transcript failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl IndexError {
    /// Whether the index file itself is the trouble (`index rebuild` is the fix).
    pub fn is_damage(&self) -> bool {
        matches!(self, IndexError::Damaged { .. })
    }
}

/// A recorded time: the text as recorded and the instant it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// As recorded.
    pub text: String,
    /// Microseconds since the epoch.
    pub micros: i64,
}

impl Stamp {
    /// `text` when it is a time `scope at --at` accepts.
    pub fn parse(text: &str) -> Option<Stamp> {
        timestamp::parse(text).map(|t| Stamp {
            text: text.to_owned(),
            micros: t.unix_micros(),
        })
    }
}

/// One marker found, attributed, ready for the ledger.
#[derive(Clone, Debug)]
pub struct Found {
    /// The request body, key and session.
    pub record: MarkerRecord,
    /// The holding record's time, verbatim.
    pub at: Option<Value>,
}

impl Found {
    /// The record built for `marker`.
    pub fn new(record: MarkerRecord, marker: &Marker) -> Found {
        Found {
            record,
            at: marker.at.clone(),
        }
    }
}

/// What one read of one transcript adds to the index.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The scope-log key.
    pub session: String,
    /// The root session's key, for a sub-agent.
    pub parent: Option<String>,
    /// The adapter that read it (`claude`, `codex`, …).
    pub agent: Option<String>,
    /// The transcript.
    pub transcript: Option<PathBuf>,
    /// The first and last times the read saw.
    pub span: Span,
    /// The scope-log rows change detection appended, in order, as values (their text
    /// is kept, never parsed back). Any row written makes the next
    /// [`Index::sync_logs`] read the log again (other rows may have come).
    pub rows: Vec<transcope_scopelog::WrittenRow>,
    /// The markers found.
    pub markers: Vec<Found>,
    /// The model requests' usage, attributed.
    pub usage: Vec<Spending>,
    /// What listed stages handed on to be kept, attributed.
    pub facts: Vec<Noted>,
}

/// One [`transcope_core::Fact`] with the scope in force at its time, ready for the
/// index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Noted {
    /// The stage that found it.
    pub stage: String,
    /// Its key, unique for the stage within the session.
    pub key: String,
    /// Its time, in microseconds since the epoch (`None`: no time).
    pub at_us: Option<i64>,
    /// The fact, as JSON text.
    pub value: String,
    /// `project_id`, `worktree`, `branch`, `task`, `lane` of the row in force.
    pub scope: std::sync::Arc<[String; 5]>,
}

/// One model request's usage, with the scope in force when it was spent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spending {
    /// What every copy of the request shares (`transcope_usage::Spent::key`: the
    /// text key as [`transcope_core::digest::request_key`] stores it).
    pub key: u128,
    /// The record's time, in microseconds since the epoch (`None`: no time).
    pub at_us: Option<i64>,
    /// The model.
    pub model: Option<std::sync::Arc<str>>,
    /// The counts.
    pub tokens: transcope_core::Tokens,
    /// `project_id`, `worktree`, `branch`, `task`, `lane` of the row in force (shared
    /// by the requests spent under one row).
    pub scope: std::sync::Arc<[String; 5]>,
}

impl Observed {
    /// Nothing yet, for `session`.
    pub fn new(session: impl Into<String>) -> Observed {
        Observed {
            session: session.into(),
            ..Observed::default()
        }
    }
}

/// What [`Index::record`] did for one [`Observed`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// For each marker, whether it was new to the ledger.
    pub new: Vec<bool>,
}

impl Recorded {
    /// How many markers were new.
    pub fn new_markers(&self) -> u64 {
        self.new.iter().filter(|n| **n).count() as u64
    }
}

/// The open index.
pub struct Index {
    conn: Connection,
    path: PathBuf,
    /// The `usage_scopes` and `usage_models` ids this connection has committed.
    ids: Ids,
}

/// What [`Index::record_in`] recorded, claimed and delivered.
type RecordedThen = (Vec<Recorded>, Option<Claimed>, Option<DeliverReport>);

/// What [`Index::record_in`] does after recording, in the same transaction: claim
/// `take` under `lease`, and with a `sink`, deliver the rows claimed and record what
/// it did.
struct Then<'t, 's> {
    take: &'t Take<'t>,
    lease: &'t Lease,
    sink: Option<&'s mut dyn transcope_brain::Sink>,
}

impl Then<'_, '_> {
    /// The claim inside `tx` at `now`; with a sink, its rows delivered and settled
    /// there too: the claim, the delivery's report and the state changes made.
    fn run(
        &mut self,
        tx: &rusqlite::Transaction<'_>,
        now: i64,
    ) -> rusqlite::Result<(Claimed, Option<DeliverReport>, Vec<Change>)> {
        match self.sink.as_mut() {
            Some(sink) => deliver::deliver_in_tx(tx, self.take, self.lease, &mut **sink, now)
                .map(|(claimed, report, changes)| (claimed, Some(report), changes)),
            None => deliver::claim_in(tx, self.take, self.lease, now)
                .map(|claimed| (claimed, None, Vec::new())),
        }
    }
}

/// Scope and model ids by their text (ids are never reused or removed).
#[derive(Default)]
pub(crate) struct Ids {
    /// `[session, root_session, project_id, worktree, branch, task, lane]`.
    pub(crate) scopes: rustc_hash::FxHashMap<[String; 7], i64>,
    pub(crate) models: rustc_hash::FxHashMap<String, i64>,
}

impl Index {
    /// Open the index of `home`, creating it (and migrating it) as needed.
    pub fn open(home: &Path) -> Result<Index, IndexError> {
        Index::open_at(&index_path(home))
    }

    /// Open the index at `path`, creating it when nothing is there (with pages of
    /// [`PAGE_SIZE`], whole: see [`transcope_sqlite::open_whole`]). What is there and
    /// is not an index of ours (empty, a link, garbage, another program's, a newer
    /// transcope's) is [`IndexError::Damaged`], left as it is.
    pub fn open_at(path: &Path) -> Result<Index, IndexError> {
        let open = |source: transcope_sqlite::Error| {
            if source.is_damage() {
                IndexError::Damaged {
                    path: path.to_path_buf(),
                    cause: source,
                }
            } else {
                IndexError::Open {
                    path: path.to_path_buf(),
                    source,
                }
            }
        };
        let init = |conn: &Connection| {
            // A new index's pages are 16 KiB (SQLite's default is 4 KiB): a backfill
            // writes rows by the hundred thousand, and larger pages mean fewer of them
            // to split, log and checkpoint (benches/README.md, session 11).
            conn.pragma_update(None, "page_size", PAGE_SIZE)?;
            transcope_sqlite::migrate(conn, schema::MIGRATIONS).map(drop)
        };
        let (conn, _) = transcope_sqlite::open_whole(path, true, init)
            .map_err(open)?
            .expect("created when missing");
        // Migrated (or refused: another program's, a newer one) before anything
        // writes, so a refused file is left exactly as it was.
        transcope_sqlite::migrate(&conn, schema::MIGRATIONS).map_err(open)?;
        transcope_sqlite::use_wal(&conn).map_err(|e| open(e.into()))?;
        // The write-ahead log makes a committed transaction survive a killed process;
        // `NORMAL` syncs at checkpoints, so a batch's durability costs a few syncs,
        // not one per file. A hook asks for a synced commit (`record(.., true)`).
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| open(e.into()))?;
        // Requests are keyed by hash, so a batch's inserts land all over the usage
        // table: a page cache that holds it (up to 64 MiB, taken only as used) keeps
        // SQLite from spilling and re-reading pages mid-transaction.
        conn.pragma_update(None, "cache_size", -65536)
            .map_err(|e| open(e.into()))?;
        Ok(Index {
            conn,
            path: path.to_path_buf(),
            ids: Ids::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sqlite(&self, source: rusqlite::Error) -> IndexError {
        if transcope_sqlite::is_corrupt(&source) {
            return IndexError::Damaged {
                path: self.path.clone(),
                cause: source.into(),
            };
        }
        IndexError::Sqlite {
            path: self.path.clone(),
            source: source.into(),
        }
    }

    /// Record `items` in one transaction (`sync`: synced before it returns). Markers
    /// already in the ledger (by key) keep their row and state.
    pub fn record(
        &mut self,
        items: &[Observed],
        origin: Origin,
        sync: bool,
    ) -> Result<Vec<Recorded>, IndexError> {
        self.record_in(items, origin, sync, None)
            .map(|(done, _, _)| done)
    }

    /// [`Index::record`] `items`, then [`Index::claim`] the rows `take` names under
    /// `lease`, in one transaction: a Stop that records what it read and takes the
    /// markers it delivers commits once (its write lock taken at `BEGIN`, as a claim's
    /// is), not twice. The claim sees the rows just recorded.
    pub fn record_and_claim(
        &mut self,
        items: &[Observed],
        origin: Origin,
        sync: bool,
        take: &Take<'_>,
        lease: &Lease,
    ) -> Result<(Vec<Recorded>, Claimed), IndexError> {
        let then = Then {
            take,
            lease,
            sink: None,
        };
        let (done, claimed, _) = self.record_in(items, origin, sync, Some(then))?;
        Ok((done, claimed.unwrap_or_default()))
    }

    /// [`Index::record_and_claim`], then [`deliver`] the rows claimed through `sink`
    /// and record what it did with them, all in that one transaction: for a sink that
    /// answers at once (the outbox, stdout), which then writes while the index's write
    /// lock is held; a sink that may wait (HTTP) goes through [`deliver`] after the
    /// commit instead. A run killed after its sink wrote and before the commit records
    /// nothing: the next run reads, claims and delivers the same markers again, which
    /// their idempotency keys (and the outbox's check for a file already waiting) make
    /// harmless.
    pub fn record_and_deliver(
        &mut self,
        items: &[Observed],
        origin: Origin,
        sync: bool,
        (take, lease): (&Take<'_>, &Lease),
        sink: &mut dyn transcope_brain::Sink,
    ) -> Result<(Vec<Recorded>, Claimed, DeliverReport), IndexError> {
        let then = Then {
            take,
            lease,
            sink: Some(sink),
        };
        let (done, claimed, report) = self.record_in(items, origin, sync, Some(then))?;
        Ok((
            done,
            claimed.unwrap_or_default(),
            report.unwrap_or_default(),
        ))
    }

    fn record_in(
        &mut self,
        items: &[Observed],
        origin: Origin,
        sync: bool,
        mut then: Option<Then<'_, '_>>,
    ) -> Result<RecordedThen, IndexError> {
        let now = transcope_core::Instant::now().unix_micros();
        let ids = &self.ids;
        let mut fresh_ids = Ids::default();
        let mut settled = Vec::new();
        let mut run =
            |conn: &mut Connection, fresh_ids: &mut Ids| -> rusqlite::Result<RecordedThen> {
                conn.pragma_update(None, "synchronous", if sync { "FULL" } else { "NORMAL" })?;
                let tx = match then {
                    Some(_) => {
                        conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?
                    }
                    None => conn.transaction()?,
                };
                next_change(&tx)?;
                let mut out = Vec::with_capacity(items.len());
                {
                    // Each statement prepared when first needed: a Stop after one turn
                    // has a session and a request, and parsing the statements for rows,
                    // markers and facts it does not have was a third of its record.
                    let (mut session, mut row, mut marker, mut fact) = (None, None, None, None);
                    for item in items {
                        if !item.session.is_empty() {
                            let (first, last) = (item.span.first.as_ref(), item.span.last.as_ref());
                            prepared(&tx, &mut session, UPSERT_SESSION)?.execute(params![
                                item.session,
                                item.parent,
                                item.agent,
                                item.transcript.as_ref().map(|p| p.to_string_lossy()),
                                first.map(|s| &s.text),
                                first.map(|s| s.micros),
                                last.map(|s| &s.text),
                                last.map(|s| s.micros),
                            ])?;
                        }
                        for w in &item.rows {
                            insert_written(
                                prepared(&tx, &mut row, INSERT_TRANSITION)?,
                                &item.session,
                                w,
                            )?;
                        }
                        let mut rec = Recorded::default();
                        for f in &item.markers {
                            let n = insert_marker(
                                prepared(&tx, &mut marker, INSERT_MARKER)?,
                                f,
                                origin,
                                now,
                            )?;
                            rec.new.push(n > 0);
                        }
                        for n in &item.facts {
                            let [project, worktree, branch, task, lane] = &*n.scope;
                            prepared(&tx, &mut fact, INSERT_FACT)?.execute(params![
                                item.session,
                                n.stage,
                                n.key,
                                n.at_us,
                                n.value,
                                project,
                                worktree,
                                branch,
                                task,
                                lane,
                            ])?;
                        }
                        out.push(rec);
                    }
                }
                // One run, the items read in the order given.
                let mut batch = UsageBatch::default();
                for (order, item) in (0..).zip(items) {
                    batch.add(item, order, item.usage.iter().cloned());
                }
                usage::write(&tx, ids, fresh_ids, &mut batch)?;
                let (mut claimed, mut report) = (None, None);
                if let Some(then) = then.as_mut() {
                    let (c, r, changes) = then.run(&tx, now)?;
                    (claimed, report, settled) = (Some(c), r, changes);
                }
                tx.commit()?;
                Ok((out, claimed, report))
            };
        let out = run(&mut self.conn, &mut fresh_ids).map_err(|e| self.sqlite(e))?;
        // Committed: the new ids are known from now on (a rolled-back batch's are not).
        self.ids.scopes.extend(fresh_ids.scopes);
        self.ids.models.extend(fresh_ids.models);
        // As `change_states` does: what a rebuild of a damaged index carries over.
        let _ = crate::recover::journal_states(&self.path, &settled);
        Ok(out)
    }

    /// The transcripts a sync last found read to their end: path (its bytes) → (size,
    /// modification time in nanoseconds, inode). Keyed by bytes in an FxHash map: a
    /// `Path` hashes component by component, which was a tenth of a quick sync.
    pub fn seen(&self) -> Result<SeenFiles, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn
            .prepare("SELECT path, size, mtime_ns, ino FROM seen_files")
            .map_err(sql)?;
        let mut q = st.query([]).map_err(sql)?;
        let mut out = rustc_hash::FxHashMap::default();
        while let Some(r) = q.next().map_err(sql)? {
            let path: Vec<u8> = r.get(0).map_err(sql)?;
            let (size, mtime, ino): (i64, i64, i64) = (
                r.get(1).map_err(sql)?,
                r.get(2).map_err(sql)?,
                r.get(3).map_err(sql)?,
            );
            out.insert(path, (size as u64, i128::from(mtime), ino as u64));
        }
        Ok(out)
    }

    /// Record `files` as read to their end with these stamps, and forget `gone`.
    pub fn set_seen(
        &mut self,
        files: &[(&[u8], FileStamp)],
        gone: &[&[u8]],
    ) -> Result<(), IndexError> {
        if files.is_empty() && gone.is_empty() {
            return Ok(());
        }
        let run = |conn: &mut Connection| -> rusqlite::Result<()> {
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            let tx = conn.transaction()?;
            {
                let mut put = tx.prepare_cached(
                    "INSERT INTO seen_files (path, size, mtime_ns, ino) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (path) DO UPDATE SET size = excluded.size,
                         mtime_ns = excluded.mtime_ns, ino = excluded.ino",
                )?;
                for (path, (size, mtime, ino)) in files {
                    let clamp =
                        |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
                    put.execute(params![path, *size as i64, clamp(*mtime), *ino as i64])?;
                }
                let mut del = tx.prepare_cached("DELETE FROM seen_files WHERE path = ?1")?;
                for path in gone {
                    del.execute([path])?;
                }
            }
            tx.commit()
        };
        run(&mut self.conn).map_err(|e| self.sqlite(e))
    }

    /// Write `batch`'s requests in one transaction (not synced) and empty it. The
    /// batch keeps the run its first write took: its later writes are of the same
    /// run ([`UsageBatch::add`]).
    pub fn record_usage(&mut self, batch: &mut UsageBatch) -> Result<(), IndexError> {
        let ids = &self.ids;
        let mut fresh_ids = Ids::default();
        let mut run = |conn: &mut Connection, fresh_ids: &mut Ids| -> rusqlite::Result<()> {
            conn.pragma_update(None, "synchronous", "NORMAL")?;
            // Each row's scope and model ids are the ones this transaction just found or
            // added: checking them again, row by row, against their tables (the bundled
            // SQLite enforces foreign keys) only costs time.
            conn.pragma_update(None, "foreign_keys", false)?;
            let tx = conn.transaction()?;
            usage::write(&tx, ids, fresh_ids, batch)?;
            tx.commit()
        };
        let done = run(&mut self.conn, &mut fresh_ids);
        let restored = self.conn.pragma_update(None, "foreign_keys", true);
        done.and(restored).map_err(|e| self.sqlite(e))?;
        self.ids.scopes.extend(fresh_ids.scopes);
        self.ids.models.extend(fresh_ids.models);
        Ok(())
    }

    /// Mirror every scope log under `<home>/brain/session-scopes/` whose size differs
    /// from the one last mirrored. A log that only grew past the last mirror (the bytes
    /// before the place mirrored to are still the last row mirrored and the `\n` that
    /// ended it) has only what follows read and added; any other change (a new, shrunk
    /// or rewritten log, one never mirrored) replaces the session's transitions with the
    /// log's rows. Logs are read in 64 KiB pieces, so memory never holds a log.
    /// Returns how many logs were read and how many of their bytes.
    pub fn sync_logs(&mut self, home: &Path) -> Result<Mirrored, IndexError> {
        let dir = transcope_scopelog::scopes_dir(home);
        let entries = match fs::read_dir(&dir) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Mirrored::default()),
            Err(source) => return Err(IndexError::Io { path: dir, source }),
        };
        type Known = (Option<i64>, Option<i64>);
        let known: rustc_hash::FxHashMap<String, Known> = {
            let mut st = self
                .conn
                .prepare("SELECT session, log_size, log_rows FROM sessions")
                .map_err(|e| self.sqlite(e))?;
            let rows = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?))))
                .and_then(|rows| rows.collect::<rusqlite::Result<_>>());
            rows.map_err(|e| self.sqlite(e))?
        };
        let mut changed = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(key) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            // Never through a link (the entry's metadata is the link's own, looked up
            // from the open folder); only regular files are logs.
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let size = meta.len() as i64;
            let (mirrored, rows) = known.get(key).copied().unwrap_or((None, None));
            if mirrored != Some(size) {
                let from = match (mirrored, rows) {
                    (Some(m), Some(n)) if m > 0 && m < size => Some((m as u64, n)),
                    _ => None,
                };
                changed.push((key.to_owned(), entry.path(), from));
            }
        }
        changed.sort();
        let mut read = Mirrored::default();
        for chunk in changed.chunks(256) {
            let done = self.mirror(chunk)?;
            read.logs += done.logs;
            read.bytes += done.bytes;
        }
        Ok(read)
    }

    /// Mirror each [`ChangedLog`] `(key, log, from)`: from `from` (a place just past a `\n`, and the
    /// rows before it) when given, else the whole log in place of the session's
    /// transitions; one transaction.
    fn mirror(&mut self, logs: &[ChangedLog]) -> Result<Mirrored, IndexError> {
        let sqlite = |e: rusqlite::Error| IndexError::Sqlite {
            path: self.path.clone(),
            source: e.into(),
        };
        self.conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(sqlite)?;
        let tx = self.conn.transaction().map_err(sqlite)?;
        next_change(&tx).map_err(sqlite)?;
        let mut read = Mirrored::default();
        {
            let mut last_line = tx
                .prepare_cached("SELECT line FROM transitions WHERE session = ?1 AND seq = ?2")
                .map_err(sqlite)?;
            let mut clear = tx
                .prepare_cached("DELETE FROM transitions WHERE session = ?1")
                .map_err(sqlite)?;
            let mut row = tx.prepare_cached(MIRROR_TRANSITION).map_err(sqlite)?;
            let mut size = tx
                .prepare_cached(
                    "INSERT INTO sessions (session, log_size, log_rows, changed)
                     VALUES (?1, ?2, ?3, (SELECT v FROM usage_meta WHERE k = 'changes'))
                     ON CONFLICT(session) DO UPDATE SET log_size = excluded.log_size,
                         log_rows = excluded.log_rows,
                         changed = CASE WHEN log_rows IS excluded.log_rows THEN changed
                                        ELSE excluded.changed END",
                )
                .map_err(sqlite)?;
            for (key, path, from) in logs {
                let mut mirror_from = |from: Option<(u64, i64)>| {
                    let (start, mut seq) = from.unwrap_or((0, 0));
                    if from.is_none() {
                        clear.execute([key]).map_err(sqlite)?;
                    }
                    // The last row mirrored, as read then: the log must still hold it
                    // just before `start` (else it was rewritten since).
                    let last: Option<String> = match seq {
                        0 => None,
                        n => last_line
                            .query_row(params![key, n - 1], |r| r.get(0))
                            .optional()
                            .map_err(sqlite)?,
                    };
                    let last = last.as_deref().unwrap_or("").as_bytes();
                    let mut failed = None;
                    let at = (start, last);
                    let scanned = transcope_scopelog::scan_lines(path, at, |line, r| {
                        if failed.is_none() {
                            match insert_row(&mut row, key, seq, &r, line) {
                                Ok(_) => seq += 1,
                                Err(e) => failed = Some(e),
                            }
                        }
                    });
                    match failed {
                        Some(e) => Err(sqlite(e)),
                        None => Ok(scanned),
                    }
                };
                // A log no longer whole up to where it was mirrored (cut, rewritten) is
                // read whole: the check reads one byte, before any row.
                let (from, scanned) = match mirror_from(*from)? {
                    Err(e) if e.kind() == io::ErrorKind::InvalidData && from.is_some() => {
                        (None, mirror_from(None)?)
                    }
                    scanned => (*from, scanned),
                };
                let scanned = match scanned {
                    Ok(s) => s,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(source) => {
                        return Err(IndexError::Io {
                            path: path.clone(),
                            source,
                        })
                    }
                };
                read.logs += 1;
                read.bytes += scanned.read;
                // Mirrored to the end of the last whole line: a torn or unended last
                // line is read again next time (its row, if it is one, kept once).
                let rows_whole = from.map_or(0, |(_, n)| n) + scanned.rows_before_whole as i64;
                size.execute(params![key, scanned.whole_to as i64, rows_whole])
                    .map_err(sqlite)?;
            }
        }
        tx.commit().map_err(sqlite)?;
        Ok(read)
    }

    /// The pending markers, in the order found: of `session` only when given, of
    /// `origin` only when given, at most `limit`.
    pub fn pending(
        &self,
        session: Option<&str>,
        origin: Option<Origin>,
        limit: Option<usize>,
    ) -> Result<Vec<LedgerRow>, IndexError> {
        let filter = LedgerFilter {
            session: session.map(str::to_owned),
            pending: true,
            origin,
            limit,
            ..LedgerFilter::default()
        };
        self.ledger(&filter)
    }

    /// How many markers are pending (of `session`, of `origin`, when given).
    pub fn pending_count(
        &self,
        session: Option<&str>,
        origin: Option<Origin>,
    ) -> Result<u64, IndexError> {
        // A session's count is read from `markers_session` alone (a Stop asks it
        // every time): `?1 IS NULL OR session = ?1` would keep SQLite off that index
        // and send it through every pending row's record.
        let origin = origin.map(Origin::as_str);
        let count = |sql: &str, p: &[&dyn rusqlite::ToSql]| {
            let mut st = self.conn.prepare_cached(sql)?;
            st.query_row(p, |r| r.get::<_, i64>(0))
        };
        match session {
            Some(s) => count(
                "SELECT count(*) FROM markers WHERE session = ?1 AND state = 'pending'
                 AND (?2 IS NULL OR origin = ?2)",
                params![s, origin],
            ),
            None => count(
                "SELECT count(*) FROM markers WHERE state = 'pending'
                 AND (?1 IS NULL OR origin = ?1)",
                params![origin],
            ),
        }
        .map(|n| n as u64)
        .map_err(|e| self.sqlite(e))
    }

    /// Set the state of each `(key, state, detail)` in one synced transaction, then
    /// append them to the states journal ([`recover`]: what a rebuild of a damaged
    /// index carries over; best effort, the ledger is the record).
    pub fn set_states(&mut self, changes: &[Change]) -> Result<(), IndexError> {
        self.change_states(changes, &[], None)
    }

    /// Every ledger key with its state (what `index rebuild` carries over).
    pub fn states(&self) -> Result<Vec<(String, State)>, IndexError> {
        let mut st = self
            .conn
            .prepare("SELECT idempotency_key, state FROM markers ORDER BY rowid")
            .map_err(|e| self.sqlite(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.sqlite(e))?;
        Ok(rows
            .into_iter()
            .filter_map(|(k, s)| State::parse(&s).map(|s| (k, s)))
            .collect())
    }

    /// The session's stored transcript, when one is known.
    pub fn transcript_of(&self, session: &str) -> Result<Option<PathBuf>, IndexError> {
        self.conn
            .query_row(
                "SELECT transcript FROM sessions WHERE session = ?1",
                [session],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()
            .map(|t| t.flatten().map(PathBuf::from))
            .map_err(|e| self.sqlite(e))
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// Take the next change number for this transaction's rows (schema version 8).
pub(crate) fn next_change(tx: &Connection) -> rusqlite::Result<i64> {
    // Cached: a Stop asks it up to three times in one transaction (the record, the
    // usage write, the delivery's states).
    tx.prepare_cached("UPDATE usage_meta SET v = v + 1 WHERE k = 'changes' RETURNING v")?
        .query_row([], |r| r.get(0))
}

const UPSERT_SESSION: &str = "
INSERT INTO sessions (session, parent, agent, transcript, first_at, first_us, last_at, last_us, log_size,
    changed)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, (SELECT v FROM usage_meta WHERE k = 'changes'))
ON CONFLICT(session) DO UPDATE SET
    changed = excluded.changed,
    parent = coalesce(excluded.parent, parent),
    agent = coalesce(excluded.agent, agent),
    transcript = coalesce(excluded.transcript, transcript),
    first_at = CASE WHEN excluded.first_us IS NOT NULL AND (first_us IS NULL OR excluded.first_us < first_us)
                    THEN excluded.first_at ELSE first_at END,
    first_us = CASE WHEN excluded.first_us IS NOT NULL AND (first_us IS NULL OR excluded.first_us < first_us)
                    THEN excluded.first_us ELSE first_us END,
    last_at = CASE WHEN excluded.last_us IS NOT NULL AND (last_us IS NULL OR excluded.last_us >= last_us)
                   THEN excluded.last_at ELSE last_at END,
    last_us = CASE WHEN excluded.last_us IS NOT NULL AND (last_us IS NULL OR excluded.last_us >= last_us)
                   THEN excluded.last_us ELSE last_us END";

const INSERT_TRANSITION: &str = "
INSERT OR IGNORE INTO transitions (session, transition_id, seq, at, at_us, project_id, project, repo,
    worktree, cwd, remote, branch, swarm, task, task_revision, lane, line)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)";

/// [`INSERT_TRANSITION`] for a mirror, which reads the log itself: a row's place in
/// the log is the truth, so a row recorded earlier at another place (a writer's
/// `sequence` the log does not bear out) moves to it.
const MIRROR_TRANSITION: &str = "
INSERT OR REPLACE INTO transitions (session, transition_id, seq, at, at_us, project_id, project, repo,
    worktree, cwd, remote, branch, swarm, task, task_revision, lane, line)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)";

const INSERT_MARKER: &str = "
INSERT OR IGNORE INTO markers (idempotency_key, session, type, content, attrs, at, at_us, attribution,
    project_id, worktree, branch, task, body, origin, state, found_us, changed)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 'pending', ?15,
    (SELECT v FROM usage_meta WHERE k = 'changes'))";

const INSERT_FACT: &str = "
INSERT OR IGNORE INTO facts (session, stage, key, at_us, value, project_id, worktree, branch,
    task, lane, changed)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, (SELECT v FROM usage_meta WHERE k = 'changes'))";

/// A time value as text: a string as it is, anything else as its JSON.
pub(crate) fn time_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What [`Index::sync_logs`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mirrored {
    /// The logs read (each, in part or whole).
    pub logs: u64,
    /// The bytes read of them: what they gained since the last sync (and the last row
    /// mirrored before it, read again to check that it is still there), or the whole
    /// of a log read whole.
    pub bytes: u64,
}

/// A log to mirror: its session key, its path, and where its mirror goes on from (a
/// place just past a `\n`, and the rows before it), `None` for the whole log.
type ChangedLog = (String, PathBuf, Option<(u64, i64)>);

fn insert_row(
    st: &mut rusqlite::CachedStatement<'_>,
    session: &str,
    seq: i64,
    r: &Map<String, Value>,
    line: &str,
) -> rusqlite::Result<usize> {
    let v = transcope_scopelog::RowValues::of(r, u64::try_from(seq).unwrap_or(0));
    let row = (seq, v.transition_id.as_str(), v.at.as_str(), v.at_us);
    insert_values(st, session, row, &v.scope, line)
}

/// A row change detection appended, from its values.
/// `slot`'s statement, prepared (from the connection's cache) when first used: a
/// connection parses each statement's SQL the first time it prepares it, which a
/// process that records one turn pays for every statement it names.
pub(crate) fn prepared<'c, 's>(
    conn: &'c Connection,
    slot: &'s mut Option<rusqlite::CachedStatement<'c>>,
    sql: &str,
) -> rusqlite::Result<&'s mut rusqlite::CachedStatement<'c>> {
    if slot.is_none() {
        *slot = Some(conn.prepare_cached(sql)?);
    }
    Ok(slot.as_mut().expect("prepared above"))
}

fn insert_written(
    st: &mut rusqlite::CachedStatement<'_>,
    session: &str,
    w: &transcope_scopelog::WrittenRow,
) -> rusqlite::Result<usize> {
    let seq = i64::try_from(w.sequence).unwrap_or(i64::MAX);
    let row = (seq, w.transition_id.as_str(), w.at.as_str(), w.at_us);
    insert_values(st, session, row, &w.scope, &w.line)
}

/// One `transitions` row: `(sequence, id, at, at_us)`, its scope and its text.
fn insert_values(
    st: &mut rusqlite::CachedStatement<'_>,
    session: &str,
    (seq, id, at, at_us): (i64, &str, &str, Option<i64>),
    scope: &Scope,
    line: &str,
) -> rusqlite::Result<usize> {
    let f = |field| scope.get(field).to_owned();
    st.execute(params![
        session,
        id,
        seq,
        at,
        at_us,
        f(ScopeField::ProjectId),
        f(ScopeField::Project),
        f(ScopeField::Repo),
        f(ScopeField::Worktree),
        f(ScopeField::Cwd),
        f(ScopeField::Remote),
        f(ScopeField::Branch),
        f(ScopeField::Swarm),
        f(ScopeField::Task),
        f(ScopeField::TaskRevision),
        f(ScopeField::Lane),
        line,
    ])
}

fn insert_marker(
    st: &mut rusqlite::CachedStatement<'_>,
    f: &Found,
    origin: Origin,
    now: i64,
) -> rusqlite::Result<usize> {
    let body = &f.record.body;
    let attrs = body.get("attrs").and_then(Value::as_object);
    let attr = |k: &str| attrs.and_then(|a| a.get(k)).and_then(Value::as_str);
    let at = f.at.as_ref().map(time_text);
    let at_us = at
        .as_deref()
        .and_then(timestamp::parse)
        .map(|t| t.unix_micros());
    st.execute(params![
        f.record.idempotency_key,
        f.record.session,
        f.record.kind(),
        f.record.content,
        attrs.map_or_else(|| "{}".to_owned(), |a| Value::Object(a.clone()).to_string()),
        at,
        at_us,
        attr("attribution"),
        attr("project_id"),
        attr("worktree"),
        attr("branch"),
        attr("task"),
        body.to_string(),
        origin.as_str(),
        now,
    ])
}

/// `<home>/transcope/pending/<key>`: present while `key`'s hooks left markers pending
/// in the ledger, so a Stop with nothing new learns it with one `stat`, without
/// opening the index.
pub fn pending_flag(home: &Path, key: &str) -> PathBuf {
    home.join("transcope").join("pending").join(key)
}

/// Make the flag of `key` say `pending` (created or removed; best effort: a flag left
/// behind only costs one opening of the index).
pub fn set_pending_flag(home: &Path, key: &str, pending: bool) {
    if key.is_empty() || key.contains('/') || key.starts_with('.') {
        return;
    }
    let flag = pending_flag(home, key);
    if pending {
        if fs::symlink_metadata(&flag).is_err() {
            let _ = create_flag(&flag);
        }
    } else {
        let _ = fs::remove_file(&flag);
    }
}

fn create_flag(flag: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = flag.parent().unwrap_or(Path::new("."));
    transcope_jsonl::in_private_dir(dir, || {
        fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(flag)
    })
    .map(|_| ())
}

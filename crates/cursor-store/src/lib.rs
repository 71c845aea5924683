//! # transcope-cursor-store: where cursors are kept
//!
//! One embedded SQLite database, `<home>/transcope/cursors.sqlite`, holding each
//! transcript's [`Cursor`] ([`cursor`]) for the read engine (`transcope-engine`, which
//! re-exports this crate as `transcope_engine::store`). It is a crate of its own so
//! that the storage engine stays in a backend crate: no library crate above it names
//! SQLite, and no SQLite type crosses its API ([`StoreError`] carries SQLite's message
//! in an opaque [`SqliteError`]).
//!
//! ```
//! use transcope_cursor_store::cursor::Cursor;
//! use transcope_cursor_store::{database_path, CursorStore, Encoded};
//!
//! let home = tempfile::tempdir().unwrap();
//! let t = home.path().join("t.jsonl");
//! let store = CursorStore::new(home.path(), true);
//! // A read creates nothing.
//! assert_eq!(store.load("s1", &t).unwrap(), None);
//! assert!(!database_path(home.path()).exists());
//!
//! // A cursor's stored text: its key is the row's, its default fields left out.
//! let c: Cursor = serde_json::from_str(
//!     r#"{"version":2,"adapter":"claude","offset":6,"line":3,"size":6,"head_len":6,"head_sha256":"00"}"#,
//! )
//! .unwrap();
//! store.put("s1", &t, Encoded::new(&c).unwrap()).unwrap();
//! let back = CursorStore::new(home.path(), true).load("s1", &t).unwrap().unwrap();
//! assert_eq!((back.session.as_str(), back.offset), ("s1", 6));
//! ```
//!
//! # How it keeps them
//!
//! One row per (session key, transcript path) holds that transcript's [`Cursor`] as
//! JSON. A hook's Stop reads one row and, when it read something, writes two (the
//! intent, then the cursor); a backfill writes thousands, and a file per cursor made
//! it pay two file creations per transcript (a fifth of its time, measured in
//! `benches/README.md`). In the database a backfill's cursors are buffered and written
//! in one transaction per batch ([`CursorStore::BATCH`] cursors, and the rest at
//! [`CursorStore::flush`]), synced once each, and written while the other workers go on.
//! A cursor's text leaves out its key (the row's) and its fields at their defaults.
//!
//! * **Lazily opened, never created by a read:** a Stop with nothing new opens the
//!   database once and reads one row; when it does not exist nothing is created. The
//!   database keeps a rollback journal (`journal_mode=TRUNCATE`), not a write-ahead
//!   log: a process that only reads then opens no log and builds no shared-memory
//!   index (the first connection of every hook process did, about 40 system calls and
//!   a fifth of a nothing-new Stop's time, measured in `benches/README.md`). A hook
//!   process also opens its connection without SQLite's lookaside and first page-cache
//!   allocations (`configure`).
//! * **A pass asks nothing per file:** a batched store reads the database's cursors
//!   once, in one transaction (up to [`CursorStore::SNAPSHOT`] of them; past that it
//!   asks per file). A load then asks the database only for rows the store wrote
//!   itself, and each batch's transaction checks (`PRAGMA data_version`, or the row
//!   count when there was no database) that no other connection wrote meanwhile; if
//!   one did, every later load asks. (A sync over an archive read before opens each
//!   transcript's cursor from memory: one query, not a locked read per file.) A cursor another process commits during a
//!   fresh batch is thus seen from the batch after it on, as that process sees the
//!   batch's cursors only once a batch is written.
//! * **Kill safe:** an intent is stored before the stages make anything durable (not
//!   synced: a killed process leaves the page cache). A durable store (a hook) commits
//!   it as its own transaction and each cursor with `synchronous=FULL`. A batched store
//!   appends it to the run's *intent journal* (`<home>/transcope/intents/<pid>-<n>.jsonl`,
//!   one line, one `write`; a transaction per file cost a backfill more than the file
//!   per cursor did), and each batch's transaction also stores the intents still in
//!   flight; the journal is rotated when a batch is taken and removed once its
//!   transaction commits. A journal is locked (`flock`) while its process lives; the
//!   next store to open folds in any journal left unlocked by a killed run. SQLite's
//!   journal keeps either the old row or the new.
//! * **Private and not followed:** the database and its `-wal`/`-shm`/`-journal`
//!   sidecars are created `0600` in a `0700` folder and opened with
//!   `SQLITE_OPEN_NOFOLLOW`; a symbolic link planted at any of them is removed (never
//!   written through) and the store starts empty; any other non-file there is an error.
//! * **Shared by processes:** file locks and a busy timeout; one connection per
//!   process, shared by its workers behind a mutex held for one statement or one
//!   batch's transaction.
//! * **Upgraded in place:** the per-file cursors of earlier versions
//!   (`<home>/transcope/cursors/*.json`) are imported when the database is created,
//!   then removed.

#![warn(missing_docs)]

pub mod cursor;

/// The store's maps: keyed by row keys and their hashes, never by anything an
/// attacker picks to collide (a collision only costs a question to the database).
type HashMap<K, V> = rustc_hash::FxHashMap<K, V>;
type HashSet<K> = rustc_hash::FxHashSet<K>;
use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once};

use rusqlite::{params, Connection, OptionalExtension};

use crate::cursor::{Cursor, Intent};

/// The schema version (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// `<home>/transcope/cursors.sqlite`.
pub fn database_path(home: &Path) -> PathBuf {
    home.join("transcope").join("cursors.sqlite")
}

/// The cursor store of one home (see the module docs).
pub struct CursorStore {
    path: PathBuf,
    legacy: PathBuf,
    durable: bool,
    conn: Mutex<Option<Conn>>,
    /// A batched store's cursors and intents not yet in the database.
    batch: Mutex<Batch>,
    hasher: rustc_hash::FxBuildHasher,
}

/// What a batched store knows of a row without the database.
enum Held {
    /// Its cursor, not yet written.
    Text(String),
    /// There is none.
    None,
    /// Only the database knows.
    Ask,
}

/// The open connection, and whether it was made ready to write ([`CursorStore`]'s
/// `ready`: pragmas and schema, which a read does without).
struct Conn {
    db: Connection,
    ready: bool,
}

/// What a batched store holds between two of its transactions.
#[derive(Default)]
struct Batch {
    /// Cursors saved (JSON), by key and transcript.
    saved: HashMap<RowKey, String>,
    /// Intents stored and not yet followed by their cursor (JSON), by key and
    /// transcript.
    inflight: HashMap<RowKey, String>,
    /// Rows taken for transactions that have not committed yet, oldest first: a load
    /// still finds them here.
    writing: Vec<Arc<HashMap<RowKey, String>>>,
    /// The intent journal, once an intent was stored.
    journal: Option<(File, PathBuf)>,
    /// Journals rotated out before a transaction that failed: removed (their locks
    /// released) after the next one commits.
    retired: Vec<(File, PathBuf)>,
    /// Whether the database held no cursor when this store first looked.
    fresh: Fresh,
}

/// A batched store's knowledge that the database holds only rows it wrote itself: a
/// first pass over an archive then asks the database nothing per file.
#[derive(Default)]
enum Fresh {
    /// Not looked yet (at the first load).
    #[default]
    Unknown,
    /// The database held cursors, or another process wrote one since: every load asks.
    No,
    /// It held `rows` (none, on a first pass), and no other connection has written
    /// since: a load asks the database only for the keys this store wrote.
    Yes {
        /// The rows it held, by their hash (with their key, to be sure).
        rows: HashMap<u64, (RowKey, String)>,
        /// Hashes of the rows it wrote.
        wrote: HashSet<u64>,
        /// The database's `PRAGMA data_version` when it looked (unchanged while only
        /// this connection writes); `None` when there was no database yet.
        version: Option<i64>,
    },
}

impl std::fmt::Debug for CursorStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CursorStore")
            .field("path", &self.path)
            .field("durable", &self.durable)
            .finish_non_exhaustive()
    }
}

/// A failure of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database.
    #[error("the cursor store {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: SqliteError,
    },
    /// The file system.
    #[error("the cursor store {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A cursor that could not be encoded.
    #[error("encoding a cursor: {0}")]
    Encode(#[from] serde_json::Error),
}

/// What SQLite said, as its message (and its cause, as [`std::error::Error::source`]);
/// opaque, so that no SQLite type is part of the store's API. It reads as SQLite's
/// error does, `Debug` too.
#[derive(thiserror::Error)]
#[error(transparent)]
pub struct SqliteError(rusqlite::Error);

impl std::fmt::Debug for SqliteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<StoreError> for io::Error {
    fn from(e: StoreError) -> io::Error {
        match e {
            StoreError::Io { source, .. } => source,
            other => io::Error::other(other),
        }
    }
}

impl CursorStore {
    /// Cursors written by a batched store per transaction.
    pub const BATCH: usize = 512;

    /// The most cursors a batched store reads into memory at its first load (about
    /// 400 bytes each).
    pub const SNAPSHOT: usize = 100_000;

    /// The store under `home`; `durable`: each saved cursor is committed and synced at
    /// once (a hook), else saved cursors are written in batches ([`CursorStore::flush`]).
    pub fn new(home: &Path, durable: bool) -> CursorStore {
        CursorStore {
            path: database_path(home),
            legacy: cursor::cursors_dir(home),
            durable,
            conn: Mutex::new(None),
            batch: Mutex::new(Batch::default()),
            hasher: rustc_hash::FxBuildHasher,
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved cursor of (`key`, `transcript`): a batch's unwritten one first, else
    /// the database's. `None` when there is none (or no database yet: a read creates
    /// nothing).
    pub fn load(&self, key: &str, transcript: &Path) -> Result<Option<Cursor>, StoreError> {
        let held = if self.durable {
            None
        } else {
            match self.held(key, transcript)? {
                Held::Text(text) => Some(text),
                Held::None => return Ok(None),
                Held::Ask => None,
            }
        };
        let text = match held {
            Some(text) => Some(text),
            None => {
                let mut guard = self.connection(false)?;
                let Some(conn) = guard.as_mut() else {
                    return Ok(None);
                };
                conn.db
                    .prepare_cached("SELECT cursor FROM cursors WHERE session = ?1 AND path = ?2")
                    .and_then(|mut st| {
                        st.query_row(params![key, path_bytes(transcript)], |r| r.get(0))
                            .optional()
                    })
                    .map_err(|e| self.sqlite(e))?
            }
        };
        // A row that is not a cursor of this version is no cursor: the file is read
        // from its start.
        Ok(text
            .and_then(|t: String| serde_json::from_str::<Cursor>(&t).ok())
            .filter(|c| c.version == cursor::CURSOR_VERSION)
            .and_then(|c| c.keyed(key, transcript)))
    }

    /// What a batched store knows of (`key`, `transcript`) without asking the
    /// database: its unwritten cursor, or that there is none (a fresh store that never
    /// wrote that row).
    fn held(&self, key: &str, transcript: &Path) -> Result<Held, StoreError> {
        let mut batch = lock(&self.batch);
        if matches!(batch.fresh, Fresh::Unknown) {
            // The one look of a fresh store, before it wrote anything: a database that
            // does not exist, or holds no row.
            drop(batch);
            let fresh = self.snapshot().unwrap_or(None);
            batch = lock(&self.batch);
            if matches!(batch.fresh, Fresh::Unknown) {
                batch.fresh = match fresh {
                    Some((rows, version)) => Fresh::Yes {
                        rows,
                        wrote: HashSet::default(),
                        version,
                    },
                    None => Fresh::No,
                };
            }
        }
        // No key is built for the lookup of an empty batch (most files of a first pass).
        if !(batch.saved.is_empty() && batch.writing.is_empty()) {
            let k = row_key(key, transcript);
            let found = batch
                .saved
                .get(&k)
                .or_else(|| batch.writing.iter().rev().find_map(|w| w.get(&k)));
            if let Some(text) = found {
                return Ok(Held::Text(text.clone()));
            }
        }
        Ok(match &batch.fresh {
            Fresh::Yes { wrote, rows, .. } => {
                let h = self.hash(key, transcript);
                if wrote.contains(&h) {
                    Held::Ask
                } else {
                    match rows.get(&h) {
                        Some(((k, p), text)) if k == key && p == path_bytes(transcript) => {
                            Held::Text(text.clone())
                        }
                        Some(_) => Held::Ask,
                        None => Held::None,
                    }
                }
            }
            _ => Held::Ask,
        })
    }

    /// The database's cursors and its `data_version`, read in one transaction
    /// (`None` inside: there is no database); `None` when it holds more than
    /// [`CursorStore::SNAPSHOT`].
    #[allow(clippy::type_complexity)]
    fn snapshot(
        &self,
    ) -> Result<Option<(HashMap<u64, (RowKey, String)>, Option<i64>)>, StoreError> {
        let mut guard = self.connection(false)?;
        let Some(conn) = guard.as_mut() else {
            return Ok(Some((HashMap::default(), None)));
        };
        let look = |db: &mut Connection| {
            let tx = db.transaction()?;
            let n: i64 = tx.query_row("SELECT count(*) FROM cursors", [], |r| r.get(0))?;
            if usize::try_from(n).map_or(true, |n| n > Self::SNAPSHOT) {
                return Ok(None);
            }
            let mut rows = HashMap::with_capacity_and_hasher(n as usize, Default::default());
            {
                let mut st = tx.prepare("SELECT session, path, cursor FROM cursors")?;
                let mut q = st.query([])?;
                while let Some(r) = q.next()? {
                    let (key, path, text): (String, Vec<u8>, String) =
                        (r.get(0)?, r.get(1)?, r.get(2)?);
                    let h = self.hash(&key, Path::new(OsStr::from_bytes(&path)));
                    rows.insert(h, ((key, path), text));
                }
            }
            let version: i64 = tx.pragma_query_value(None, "data_version", |r| r.get(0))?;
            tx.commit()?;
            rusqlite::Result::Ok(Some((rows, Some(version))))
        };
        look(&mut conn.db).map_err(|e| self.sqlite(e))
    }

    /// A row key's hash (a fresh store's record of the rows it wrote).
    fn hash(&self, key: &str, transcript: &Path) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(key.as_bytes());
        h.write_u8(0xff);
        h.write(path_bytes(transcript));
        h.finish()
    }

    /// Store `next` with `intent` before the stages make anything durable (not synced:
    /// a kill, the case it serves, keeps the page cache): a durable store commits it,
    /// a batched one appends it to its journal.
    pub fn put_intent(
        &self,
        key: &str,
        transcript: &Path,
        next: &Encoded,
        intent: &Intent,
    ) -> Result<(), StoreError> {
        let text = next.with_intent(intent)?;
        if self.durable {
            return self.write(&[(key, path_bytes(transcript), &text)], false);
        }
        let line = format!(
            "{{\"key\":{},\"path\":\"{}\",\"cursor\":{text}}}\n",
            serde_json::to_string(key)?,
            transcope_core::digest::hex(path_bytes(transcript)),
        );
        let mut batch = lock(&self.batch);
        let k = row_key(key, transcript);
        batch.saved.remove(&k);
        if batch.journal.is_none() {
            batch.journal = Some(self.new_journal().map_err(|source| StoreError::Io {
                path: self.intents_dir(),
                source,
            })?);
        }
        let (file, path) = batch.journal.as_mut().expect("opened");
        file.write_all(line.as_bytes())
            .map_err(|source| StoreError::Io {
                path: path.clone(),
                source,
            })?;
        batch.inflight.insert(k, text);
        Ok(())
    }

    /// Save a cursor: committed and synced now by a durable store; by a batched one,
    /// kept for the batch (written when [`CursorStore::BATCH`] are waiting, or at
    /// [`CursorStore::flush`]).
    pub fn put(&self, key: &str, transcript: &Path, c: Encoded) -> Result<(), StoreError> {
        if self.durable {
            return self.write(&[(key, path_bytes(transcript), &c.0)], true);
        }
        let mut batch = lock(&self.batch);
        let k = row_key(key, transcript);
        batch.inflight.remove(&k);
        batch.saved.insert(k, c.0);
        if batch.saved.len() >= Self::BATCH {
            self.write_batch(batch)
        } else {
            Ok(())
        }
    }

    /// Put back `prev` for (`key`, `transcript`) — or no cursor at all — after a read
    /// whose stages failed: committed and synced now.
    pub fn reset(
        &self,
        key: &str,
        transcript: &Path,
        prev: Option<&Cursor>,
    ) -> Result<(), StoreError> {
        if !self.durable {
            let mut batch = lock(&self.batch);
            let k = row_key(key, transcript);
            batch.saved.remove(&k);
            batch.inflight.remove(&k);
            let h = self.hash(key, transcript);
            if let Fresh::Yes { wrote, .. } = &mut batch.fresh {
                // The row written now (a failed write leaves the set saying the row is
                // there: the database is then asked, which costs only time).
                wrote.insert(h);
            }
        }
        match prev {
            Some(c) => {
                let text = serde_json::to_string(c)?;
                self.write(&[(key, path_bytes(transcript), &text)], true)
            }
            None => {
                let mut guard = self.connection(false)?;
                let Some(conn) = guard.as_mut() else {
                    return Ok(());
                };
                let delete = |db: &mut Connection| -> rusqlite::Result<()> {
                    let tx = write_transaction(db)?;
                    tx.execute(
                        "DELETE FROM cursors WHERE session = ?1 AND path = ?2",
                        params![key, path_bytes(transcript)],
                    )?;
                    tx.commit()
                };
                delete(&mut conn.db).map_err(|e| self.sqlite(e))
            }
        }
    }

    /// Write what a batched store is holding in one synced transaction; with no
    /// intent left in flight, the journal goes too.
    pub fn flush(&self) -> Result<(), StoreError> {
        self.write_batch(lock(&self.batch))?;
        // A transaction another thread took its rows for before has the connection:
        // it is over once the connection is free.
        drop(lock(&self.conn));
        let mut batch = lock(&self.batch);
        if batch.inflight.is_empty() && batch.saved.is_empty() && batch.writing.is_empty() {
            if let Some((_, path)) = batch.journal.take() {
                let _ = fs::remove_file(&path);
            }
            if batch.journal.is_none() {
                let _ = fs::remove_dir(self.intents_dir());
            }
        }
        Ok(())
    }

    /// Every transcript the database holds a cursor for, once each, in path order
    /// (what `index rebuild` reads again besides the folders it walks); empty when
    /// there is no database.
    pub fn transcripts(&self) -> Result<Vec<PathBuf>, StoreError> {
        let mut guard = self.connection(false)?;
        let Some(conn) = guard.as_mut() else {
            return Ok(Vec::new());
        };
        let list = |db: &Connection| -> rusqlite::Result<Vec<PathBuf>> {
            let mut st = db.prepare("SELECT DISTINCT path FROM cursors ORDER BY path")?;
            let rows = st.query_map([], |r| r.get::<_, Vec<u8>>(0))?;
            rows.map(|p| p.map(|p| PathBuf::from(OsStr::from_bytes(&p))))
                .collect()
        };
        list(&conn.db).map_err(|e| self.sqlite(e))
    }

    /// The saved cursors and the intents in flight, in one synced transaction, written
    /// after `batch` is released: the other workers go on saving meanwhile, and a load
    /// still finds these rows (`Batch::writing`) until they are in. The journal is
    /// rotated with them: the next intent opens a new one, and this one is removed once
    /// the transaction holds every intent it has.
    fn write_batch(&self, mut batch: MutexGuard<'_, Batch>) -> Result<(), StoreError> {
        if batch.saved.is_empty() && batch.inflight.is_empty() {
            return Ok(());
        }
        // Intents in flight stay in flight (their cursor is still to come).
        let mut rows = batch.inflight.clone();
        rows.extend(std::mem::take(&mut batch.saved));
        let rows = Arc::new(rows);
        let fresh = match &mut batch.fresh {
            Fresh::Yes { wrote, version, .. } => {
                wrote.extend(
                    rows.keys()
                        .map(|(k, p)| self.hash(k, Path::new(OsStr::from_bytes(p)))),
                );
                Some((*version, wrote.len()))
            }
            _ => None,
        };
        // The connection is taken before the batch is released, so transactions
        // commit in the order their rows were taken.
        let guard = self.connection(true);
        batch.writing.push(Arc::clone(&rows));
        let journal = batch.journal.take();
        drop(batch);
        let written = guard.and_then(|mut guard| {
            let mut sorted: Vec<Row<'_>> = rows
                .iter()
                .map(|((k, p), text)| (k.as_str(), p.as_slice(), text.as_str()))
                .collect();
            // In key order: the B-tree's pages are visited once each.
            sorted.sort_unstable();
            self.upsert(&mut guard, &sorted, true, fresh)
        });
        let mut batch = lock(&self.batch);
        batch.writing.retain(|w| !Arc::ptr_eq(w, &rows));
        match written {
            Ok(version) => {
                if let Fresh::Yes { version: v, .. } = &mut batch.fresh {
                    match version {
                        Some(now) => *v = Some(now),
                        // Another connection wrote: from now on every load asks.
                        None => batch.fresh = Fresh::No,
                    }
                }
                let retired = std::mem::take(&mut batch.retired);
                drop(batch);
                // Every intent of these journals is now in the database or resolved.
                for (_, path) in retired.iter().chain(&journal) {
                    let _ = fs::remove_file(path);
                }
                Ok(())
            }
            Err(e) => {
                // Kept for the next transaction, the journal with them (a later cursor
                // of the same row stands).
                let rows = Arc::try_unwrap(rows).unwrap_or_else(|a| (*a).clone());
                for (k, text) in rows {
                    if !batch.inflight.contains_key(&k) {
                        batch.saved.entry(k).or_insert(text);
                    }
                }
                batch.retired.extend(journal);
                Err(e)
            }
        }
    }

    fn intents_dir(&self) -> PathBuf {
        self.path.with_file_name("intents")
    }

    /// A journal of this process's own, locked for its lifetime.
    fn new_journal(&self) -> io::Result<(File, PathBuf)> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let dir = self.intents_dir();
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)?;
        let path = dir.join(format!(
            "{}-{}.jsonl",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)?;
        file.lock()?;
        file.set_len(0)?;
        Ok((file, path))
    }

    /// Fold in the journals of runs that were stopped (unlocked ones), each in one
    /// transaction, then remove them.
    fn fold_journals(&self, conn: &mut Connection) {
        let Ok(dir) = fs::read_dir(self.intents_dir()) else {
            return;
        };
        for entry in dir.flatten() {
            let path = entry.path();
            let Ok(mut file) = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&path)
            else {
                continue;
            };
            if file.try_lock().is_err() {
                // Its run is still going.
                continue;
            }
            // Read through the descriptor that holds the lock (the path is not opened
            // twice, nor followed).
            let mut text = Vec::new();
            if !file.metadata().is_ok_and(|m| m.is_file())
                || std::io::Read::read_to_end(&mut file, &mut text).is_err()
            {
                continue;
            }
            // A torn last line is an intent whose effects were never started.
            let lines: Vec<JournalLine> = text
                .split(|&b| b == b'\n')
                .filter_map(|l| serde_json::from_slice(l).ok())
                .collect();
            let keyed: Vec<(String, Vec<u8>, &Cursor)> = lines
                .iter()
                .filter_map(|l| {
                    Some((
                        l.key.clone(),
                        transcope_core::digest::unhex(&l.path)?,
                        &l.cursor,
                    ))
                })
                .collect();
            let run = |conn: &mut Connection| -> rusqlite::Result<()> {
                let tx = write_transaction(conn)?;
                for (key, path, c) in &keyed {
                    tx.execute(
                        UPSERT,
                        params![key, path, serde_json::to_string(c).unwrap_or_default()],
                    )?;
                }
                tx.commit()
            };
            if run(conn).is_ok() {
                let _ = fs::remove_file(&path);
            }
        }
        let _ = fs::remove_dir(self.intents_dir());
    }

    /// Upsert `rows` in one transaction; `sync`: `synchronous=FULL` for it.
    fn write(&self, rows: &[Row<'_>], sync: bool) -> Result<(), StoreError> {
        let mut guard = self.connection(true)?;
        self.upsert(&mut guard, rows, sync, None).map(drop)
    }

    /// Upsert `rows` in one transaction on the connection `guard` holds. `fresh`: the
    /// `data_version` a fresh store last saw (`None`: there was no database) and how
    /// many rows it has written, these included; the transaction then tells whether
    /// only this store wrote since (`Some` of the version to compare next time) or not
    /// (`None`).
    fn upsert(
        &self,
        guard: &mut MutexGuard<'_, Option<Conn>>,
        rows: &[Row<'_>],
        sync: bool,
        fresh: Option<(Option<i64>, usize)>,
    ) -> Result<Option<i64>, StoreError> {
        let conn = guard.as_mut().expect("created");
        let run = |conn: &mut Connection| -> rusqlite::Result<Option<i64>> {
            conn.pragma_update(None, "synchronous", if sync { "FULL" } else { "OFF" })?;
            let tx = write_transaction(conn)?;
            {
                let mut st = tx.prepare_cached(UPSERT)?;
                for (key, path, text) in rows {
                    st.execute(params![key, path, text])?;
                }
            }
            // Holding the write lock: what is there now is all that will be.
            let alone = match fresh {
                None => None,
                Some((seen, wrote)) => {
                    let now: i64 = tx.pragma_query_value(None, "data_version", |r| r.get(0))?;
                    let alone = match seen {
                        Some(seen) => seen == now,
                        // No database when the store looked: only its own rows now.
                        None => {
                            let n: i64 =
                                tx.query_row("SELECT count(*) FROM cursors", [], |r| r.get(0))?;
                            usize::try_from(n).is_ok_and(|n| n == wrote)
                        }
                    };
                    alone.then_some(now)
                }
            };
            tx.commit()?;
            Ok(alone)
        };
        run(&mut conn.db).map_err(|e| self.sqlite(e))
    }

    /// The connection, opened on first use; `create`: make the database when it does
    /// not exist (else `None` for a missing one).
    fn connection(&self, create: bool) -> Result<MutexGuard<'_, Option<Conn>>, StoreError> {
        let mut guard = lock(&self.conn);
        if guard.is_none() {
            *guard = self.open(create)?;
        }
        if create {
            if let Some(conn) = guard.as_mut() {
                self.ready(conn)?;
            }
        }
        Ok(guard)
    }

    fn open(&self, create: bool) -> Result<Option<Conn>, StoreError> {
        configure(self.durable);
        // A read creates the database only to bring in what an earlier version or a
        // stopped run left. All a read needs then: a Stop with nothing new parses no
        // pragma and no schema beyond its one SELECT.
        let opened = transcope_sqlite::open(&self.path, || {
            create || self.legacy.is_dir() || self.intents_dir().is_dir()
        })
        .map_err(|e| match e {
            transcope_sqlite::Error::Io { path, source } => StoreError::Io { path, source },
            transcope_sqlite::Error::Sqlite(e) => self.sqlite(e),
            // `open` runs no migration: nothing else comes back.
            other => StoreError::Io {
                path: self.path.clone(),
                source: io::Error::other(other.to_string()),
            },
        })?;
        let Some((conn, created)) = opened else {
            return Ok(None);
        };
        let mut conn = Conn {
            db: conn,
            ready: false,
        };
        let journals = self.intents_dir().is_dir();
        if created || journals {
            self.ready(&mut conn)?;
        }
        if created {
            self.import_legacy(&mut conn.db);
        }
        if journals {
            self.fold_journals(&mut conn.db);
        }
        Ok(Some(conn))
    }

    /// Make `conn` ready to write: the write-ahead log, the schema (created or
    /// checked).
    fn ready(&self, conn: &mut Conn) -> Result<(), StoreError> {
        if conn.ready {
            return Ok(());
        }
        let setup = |conn: &Connection| -> rusqlite::Result<i64> {
            // A rollback journal, truncated after each transaction (see the module
            // docs: a read then needs no write-ahead log and no shared-memory index).
            // A database of an earlier version in WAL mode is moved over when no other
            // connection has it open, and works as it is until then (its log and index
            // kept when the last connection closes: `transcope_sqlite::persist_wal`; emptied past 1 MiB).
            conn.pragma_update(None, "journal_size_limit", 1 << 20)?;
            let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("truncate") {
                let _ = conn.pragma_update(None, "journal_mode", "TRUNCATE");
            }
            let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if version < SCHEMA_VERSION {
                conn.execute_batch(
                    "BEGIN IMMEDIATE;
                     CREATE TABLE IF NOT EXISTS cursors (
                         session TEXT NOT NULL,
                         path BLOB NOT NULL,
                         cursor TEXT NOT NULL,
                         PRIMARY KEY (session, path)
                     ) WITHOUT ROWID;
                     PRAGMA user_version = 1;
                     COMMIT;",
                )?;
            }
            Ok(version)
        };
        let version = setup(&conn.db).map_err(|e| self.sqlite(e))?;
        if version > SCHEMA_VERSION {
            // A newer transcope's store: not ours to write.
            return Err(self.sqlite(rusqlite::Error::InvalidQuery));
        }
        conn.ready = true;
        Ok(())
    }

    /// Bring in the cursor files of earlier versions, then remove them (a file that
    /// is not a cursor is left where it is).
    fn import_legacy(&self, conn: &mut Connection) {
        let Ok(dir) = fs::read_dir(&self.legacy) else {
            return;
        };
        let mut found = Vec::new();
        for entry in dir.flatten() {
            let p = entry.path();
            if p.extension().is_some_and(|e| e == "json") {
                if let Some(c) = cursor::load(&p) {
                    found.push((p, c));
                }
            }
        }
        let run = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = write_transaction(conn)?;
            for (_, c) in &found {
                tx.execute(
                    "INSERT OR REPLACE INTO cursors (session, path, cursor) VALUES (?1, ?2, ?3)",
                    params![
                        c.session,
                        c.path.as_bytes(),
                        serde_json::to_string(c).unwrap_or_default()
                    ],
                )?;
            }
            tx.commit()
        };
        if run(conn).is_ok() {
            for (p, _) in &found {
                let _ = fs::remove_file(p);
            }
            let _ = fs::remove_dir(&self.legacy);
        }
    }

    fn sqlite(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.clone(),
            source: SqliteError(source),
        }
    }
}

/// SQLite's process-wide settings, made by the first store to open a database (before
/// SQLite initialises; later calls change nothing). No memory statistics. A durable
/// store is a hook's: it
/// reads a row or two and exits, so the per-connection memory SQLite prepares at open
/// (a 120 KB lookaside and a first 20-page cache, about 30 pages touched) is page
/// faults it never uses; a batch keeps both.
#[allow(unsafe_code)]
fn configure(durable: bool) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use rusqlite::ffi;
        use std::ffi::c_int;
        // SAFETY: each op takes the documented arguments (an int; two ints; a null
        // pointer and two ints), and runs before any connection exists in this process
        // (SQLite refuses it with SQLITE_MISUSE, changing nothing, if it is
        // initialised).
        unsafe {
            // No statistics of SQLite's own allocations (nobody reads them; each
            // allocation took a mutex to keep them).
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int);
            if !durable {
                return;
            }
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_LOOKASIDE, 0 as c_int, 0 as c_int);
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_PAGECACHE,
                std::ptr::null_mut::<std::ffi::c_void>(),
                0 as c_int,
                0 as c_int,
            );
        }
    });
}

/// A write transaction, its write lock taken at `BEGIN` (waiting on the busy timeout):
/// with a rollback journal, a deferred one that had begun reading could only be refused
/// (`SQLITE_BUSY` at once, the busy handler skipped to avoid a deadlock) when another
/// connection was writing.
fn write_transaction(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// Insert or replace one cursor row.
const UPSERT: &str = "INSERT INTO cursors (session, path, cursor) VALUES (?1, ?2, ?3)
     ON CONFLICT (session, path) DO UPDATE SET cursor = excluded.cursor";

/// One intent in the journal.
#[derive(serde::Serialize, serde::Deserialize)]
struct JournalLine {
    /// The session key.
    key: String,
    /// The transcript path's bytes, hex.
    path: String,
    /// The cursor with its intent.
    cursor: Cursor,
}

/// One row to write: the key, the transcript path's bytes, the cursor's JSON.
type Row<'a> = (&'a str, &'a [u8], &'a str);

/// A row's primary key: the session key and the transcript path's bytes.
type RowKey = (String, Vec<u8>);

fn row_key(key: &str, transcript: &Path) -> RowKey {
    (key.to_owned(), path_bytes(transcript).to_vec())
}

/// A cursor encoded once for the store (its intent added to the same text).
#[derive(Clone, Debug)]
pub struct Encoded(String);

impl Encoded {
    /// `c`'s JSON (without an intent: one is given to [`CursorStore::put_intent`]).
    pub fn new(c: &Cursor) -> Result<Encoded, StoreError> {
        debug_assert!(c.intent.is_none());
        Ok(Encoded(serde_json::to_string(c)?))
    }

    /// The JSON of the same cursor carrying `intent`: the intent is the cursor's last
    /// field, so it is this text with one more member before the closing brace.
    fn with_intent(&self, intent: &Intent) -> Result<String, StoreError> {
        let body = self.0.strip_suffix('}').unwrap_or(&self.0);
        Ok(format!(
            "{body},\"intent\":{}}}",
            serde_json::to_string(intent)?
        ))
    }
}

fn path_bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_bytes()
}

/// A lock that a panicking holder did not poison for the others (the values guarded
/// are a connection and a map, valid after any partial update).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

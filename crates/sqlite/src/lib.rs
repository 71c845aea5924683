//! # transcope-sqlite: one safe way to open a database under the home
//!
//! transcope keeps two embedded SQLite databases under `<home>/transcope/` (the cursor
//! store and the index). Both are opened here, the same way:
//!
//! * **never through a link:** a symbolic link planted at the database or at any of its
//!   `-wal`, `-shm` or `-journal` sidecars is removed (never followed, never written
//!   through) and the database starts again; any other non-file there is an error; the
//!   file is opened with `SQLITE_OPEN_NOFOLLOW`;
//! * **private:** a new database is created `0600` in a `0700` folder;
//! * **created only when asked:** [`open`] returns `None` for a missing database unless
//!   the caller wants one made, so a read that finds nothing creates nothing;
//! * **shared by processes:** a busy timeout, and ([`use_wal`]) a write-ahead log that
//!   stays when the last connection closes (no file created and deleted per process);
//! * **versioned:** [`migrate`] runs the migrations past `PRAGMA user_version` in one
//!   `BEGIN IMMEDIATE` transaction, and refuses a database a newer transcope made or
//!   one that holds another program's tables;
//! * **another program's, read only** ([`open_foreign`]): a database an agent keeps
//!   (OpenCode's `opencode.db`) is opened read-only and never written, its
//!   write-ahead log honoured (a running agent's last commits are seen; no
//!   `immutable`), with the same busy timeout, so an adapter reads it while the agent
//!   writes without taking a dependency on SQLite's client of its own;
//! * **whole or refused** ([`open_whole`], the index's way): a new database is made
//!   under a temporary name, given its schema and only then linked into place, so a
//!   database that is there is never legitimately empty; a link, a non-file, an empty
//!   file or one without SQLite's header where the database goes is
//!   [`Error::Damaged`] (reported, never replaced).
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let db = dir.path().join("t/x.sqlite");
//! assert!(transcope_sqlite::open(&db, || false).unwrap().is_none());
//! let (conn, created) = transcope_sqlite::open(&db, || true).unwrap().unwrap();
//! assert!(created);
//! transcope_sqlite::use_wal(&conn).unwrap();
//! let v = transcope_sqlite::migrate(&conn, &["CREATE TABLE t (a INTEGER);"]).unwrap();
//! assert_eq!(v, 0);
//! ```
#![warn(missing_docs)]

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use rusqlite;
use rusqlite::{Connection, OpenFlags};

/// How long a statement waits for another process's write to end.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a database could not be opened or brought to the current schema.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file system refused (or a non-file sits where the database goes).
    #[error("{}: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// SQLite refused.
    #[error("{0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database was made by a newer transcope (its schema version is past ours).
    #[error("schema version {found} is newer than this transcope's {known}")]
    Newer {
        /// `PRAGMA user_version` found.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// What sits where the database goes is not a database of ours ([`open_whole`];
    /// the message says what, the caller names the file).
    #[error("{what}")]
    Damaged {
        /// The path involved.
        path: PathBuf,
        /// What is wrong with it.
        what: &'static str,
    },
    /// The database holds tables but no schema version: another program's.
    #[error("it holds tables but no schema version: not a database this program made")]
    Foreign,
}

impl Error {
    /// Whether the file itself is the trouble (damaged, foreign, newer, or SQLite
    /// calls it corrupt or not a database), as opposed to the system refusing.
    pub fn is_damage(&self) -> bool {
        match self {
            Error::Damaged { .. } | Error::Foreign | Error::Newer { .. } => true,
            Error::Sqlite(e) => is_corrupt(e),
            Error::Io { .. } => false,
        }
    }
}

/// Whether SQLite says the file is corrupt or not a database.
pub fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// SQLite's file header: the first 16 bytes of every database file.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What sits at `path`: `Ok(false)` nothing, `Ok(true)` a regular file that starts
/// with SQLite's header; a link (never followed), a non-file, an empty file or one
/// without the header is [`Error::Damaged`].
pub fn inspect(path: &Path) -> Result<bool, Error> {
    let damaged = |what| Error::Damaged {
        path: path.to_path_buf(),
        what,
    };
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    if meta.file_type().is_symlink() {
        return Err(damaged("a symbolic link is in its place"));
    }
    if meta.is_dir() {
        return Err(damaged("a directory is in its place"));
    }
    if !meta.is_file() {
        return Err(damaged("not a regular file"));
    }
    if meta.len() == 0 {
        return Err(damaged("empty (zero bytes)"));
    }
    let mut head = [0u8; 16];
    let read = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .and_then(|mut f| io::Read::read_exact(&mut f, &mut head));
    match read {
        Ok(()) if &head == HEADER => Ok(true),
        Ok(()) => Err(damaged("not an SQLite database")),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Err(damaged("truncated: shorter than an SQLite header"))
        }
        Err(source) => Err(Error::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Open the database at `path` as [`open`] does, but whole or refused: what is there
/// must pass [`inspect`]; when nothing is, and `create`, it is made under a temporary
/// name beside it, `init` gives it its schema (run it before anything else: no
/// write-ahead log yet), and only then is it linked into place (another process that
/// linked first wins, and its database is opened). The flag returned is whether this
/// call made it.
pub fn open_whole(
    path: &Path,
    create: bool,
    init: impl FnOnce(&Connection) -> Result<(), Error>,
) -> Result<Option<(Connection, bool)>, Error> {
    let mut created = false;
    if !inspect(path)? {
        if !create {
            return Ok(None);
        }
        created = create_whole(path, init)?;
        inspect(path)?;
    }
    match open(path, || false)? {
        Some((conn, _)) => Ok(Some((conn, created))),
        None => Err(Error::Io {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotFound, "removed while being opened"),
        }),
    }
}

/// Make the database at `path` whole: `<path>.<pid>.new` created private, `init` run
/// on it, then hard-linked to `path` (never replacing what is there). `false` when
/// another process linked its own first.
fn create_whole(
    path: &Path,
    init: impl FnOnce(&Connection) -> Result<(), Error>,
) -> Result<bool, Error> {
    let tmp = sidecar(path, &format!(".{}.new", std::process::id()));
    let io = |p: &Path, source| Error::Io {
        path: p.to_path_buf(),
        source,
    };
    let clean = || {
        for suffix in ["", "-journal", "-wal", "-shm"] {
            let _ = fs::remove_file(sidecar(&tmp, suffix));
        }
    };
    clean();
    create_file(&tmp).map_err(|e| io(&tmp, e))?;
    let made = (|| {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&tmp, flags)?;
        init(&conn)?;
        conn.close().map_err(|(_, e)| Error::Sqlite(e))?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io(path, e)),
        }
    })();
    clean();
    made
}

/// `db` with `suffix` appended (`-wal`, `-shm`, `-journal`).
pub fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut s = db.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Open the database at `path`, read-write, with the busy timeout and the write-ahead
/// log kept across connections. When it does not exist, `create()` says whether to make
/// it (asked only then); `None` when it is missing and not made. The flag returned is
/// whether this call created the file.
pub fn open(
    path: &Path,
    create: impl FnOnce() -> bool,
) -> Result<Option<(Connection, bool)>, Error> {
    let io = |p: &Path, source| Error::Io {
        path: p.to_path_buf(),
        source,
    };
    let mut create = Some(create);
    let mut created = false;
    for suffix in ["-wal", "-shm", "-journal", ""] {
        let p = sidecar(path, suffix);
        let mut meta = fs::symlink_metadata(&p);
        if meta.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
            // Planted: removed, never followed; the database starts again.
            fs::remove_file(&p).map_err(|e| io(&p, e))?;
            meta = fs::symlink_metadata(&p);
        }
        match meta {
            Ok(m) if !m.is_file() => {
                return Err(io(
                    &p,
                    io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if suffix.is_empty() {
                    if !create.take().is_some_and(|f| f()) {
                        return Ok(None);
                    }
                    created = create_file(path).map_err(|e| io(path, e))?;
                }
            }
            Err(e) => return Err(io(&p, e)),
        }
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    persist_wal(&conn)?;
    Ok(Some((conn, created)))
}

/// Create the database file, private, its folder too; `false` when another process
/// created it first.
fn create_file(path: &Path) -> io::Result<bool> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let create = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
    };
    match transcope_jsonl::in_private_dir(dir, create) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Open another program's database at `path` to read it while that program may be
/// writing it: read-only (`SQLITE_OPEN_READ_ONLY`, `PRAGMA query_only`), its
/// write-ahead log read like any reader's (no `immutable=1`: a database being written is
/// not immutable), waiting up to [`BUSY_TIMEOUT`] for a writer's lock. Nothing is created:
/// a missing file is an error. Whether it is the program's database (its tables) is
/// the caller's to check.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("other.db");
/// let w = transcope_sqlite::rusqlite::Connection::open(&db).unwrap();
/// w.execute_batch("CREATE TABLE t (a); INSERT INTO t VALUES (1);").unwrap();
/// let conn = transcope_sqlite::open_foreign(&db).unwrap();
/// let n: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
/// assert_eq!(n, 1);
/// assert!(conn.execute("INSERT INTO t VALUES (2)", []).is_err());
/// assert!(transcope_sqlite::open_foreign(&dir.path().join("none.db")).is_err());
/// ```
pub fn open_foreign(path: &Path) -> Result<Connection, Error> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(conn)
}

/// Put `conn`'s database in WAL mode (a no-op when it is), the log emptied past 1 MiB.
pub fn use_wal(conn: &Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_size_limit", 1 << 20)?;
    let mode: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        conn.pragma_update(None, "journal_mode", "WAL")?;
    }
    Ok(())
}

/// Bring the schema to `migrations.len()`: migration `i` (SQL, no transaction
/// statements of its own) takes version `i` to `i + 1`. Those past the version found
/// run in one `BEGIN IMMEDIATE` transaction that reads the version again (another
/// process may have run some first): one commit, one sync, however many there are,
/// and a migration that fails leaves the database as it was. Returns the version
/// found; a version past `migrations.len()` is [`Error::Newer`].
pub fn migrate(conn: &Connection, migrations: &[&str]) -> Result<i64, Error> {
    let known = migrations.len() as i64;
    let version = |c: &Connection| -> rusqlite::Result<i64> {
        c.pragma_query_value(None, "user_version", |r| r.get(0))
    };
    let found = version(conn)?;
    if found > known {
        return Err(Error::Newer { found, known });
    }
    if found == 0 {
        let tables: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            [],
            |r| r.get(0),
        )?;
        if tables > 0 {
            return Err(Error::Foreign);
        }
    }
    if found == known {
        return Ok(found);
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let step = (|| -> rusqlite::Result<i64> {
        let now = version(conn)?;
        if now < known {
            // (A negative version is no version of ours: every migration runs, and
            // the first table that is there already refuses it.)
            for m in &migrations[now.max(0) as usize..] {
                conn.execute_batch(m)?;
            }
            conn.pragma_update(None, "user_version", known)?;
        }
        Ok(now)
    })();
    match step {
        Ok(now) => {
            conn.execute_batch("COMMIT")?;
            if now > known {
                return Err(Error::Newer { found: now, known });
            }
            Ok(found)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e.into())
        }
    }
}

/// Keep the database's `-wal` and `-shm` files when the last connection closes
/// (`SQLITE_FCNTL_PERSIST_WAL`): a process that opens and closes the database creates
/// and deletes no file.
#[allow(unsafe_code)]
pub fn persist_wal(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::ffi;
    let mut on: std::ffi::c_int = 1;
    // SAFETY: `conn.handle()` is the open connection's own handle, used only for this
    // call while `conn` is borrowed; the op takes a pointer to one `int`, which `on`
    // is, alive for the call.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_PERSIST_WAL,
            (&mut on as *mut std::ffi::c_int).cast(),
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let (conn, _) = open(&dir.path().join("t/x.sqlite"), || true)
            .unwrap()
            .unwrap();
        use_wal(&conn).unwrap();
        (dir, conn)
    }

    fn version(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap()
    }

    fn tables(conn: &Connection) -> Vec<String> {
        let mut st = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        let names = st.query_map([], |r| r.get(0)).unwrap();
        names.map(Result::unwrap).collect()
    }

    const STEPS: [&str; 3] = [
        "CREATE TABLE a (x INTEGER);",
        "CREATE TABLE b (x INTEGER); INSERT INTO a VALUES (1);",
        "ALTER TABLE a ADD COLUMN y INTEGER NOT NULL DEFAULT 7;",
    ];

    #[test]
    fn pending_migrations_run_in_one_transaction_from_the_version_found() {
        let (_dir, conn) = db();
        assert_eq!(migrate(&conn, &STEPS[..1]).unwrap(), 0);
        assert_eq!(version(&conn), 1);
        // The two left, from version 1.
        assert_eq!(migrate(&conn, &STEPS).unwrap(), 1);
        assert_eq!(version(&conn), 3);
        assert_eq!(tables(&conn), ["a", "b"]);
        let y: i64 = conn.query_row("SELECT y FROM a", [], |r| r.get(0)).unwrap();
        assert_eq!(y, 7);
        // Up to date: nothing runs (a migration run twice would fail).
        assert_eq!(migrate(&conn, &STEPS).unwrap(), 3);
        // Newer than this build.
        assert!(matches!(
            migrate(&conn, &STEPS[..2]),
            Err(Error::Newer { found: 3, known: 2 })
        ));
    }

    /// Issue 33: a zero-length file or a link where the index goes was replaced by a
    /// fresh database without a word.
    #[test]
    fn open_whole_refuses_what_is_not_a_database_and_never_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.sqlite");
        let init = |c: &Connection| migrate(c, &STEPS).map(drop);
        let damaged = |r: Result<Option<(Connection, bool)>, Error>| matches!(r, Err(ref e @ Error::Damaged { .. }) if e.is_damage());
        fs::write(&db, b"").unwrap();
        assert!(damaged(open_whole(&db, true, init)));
        assert_eq!(fs::metadata(&db).unwrap().len(), 0);
        fs::write(&db, b"SQLite format").unwrap();
        assert!(damaged(open_whole(&db, true, init)));
        fs::write(&db, vec![7u8; 4096]).unwrap();
        assert!(damaged(open_whole(&db, true, init)));
        fs::remove_file(&db).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &db).unwrap();
        assert!(damaged(open_whole(&db, true, init)));
        assert!(fs::symlink_metadata(&db).unwrap().file_type().is_symlink());
        fs::remove_file(&db).unwrap();
        fs::create_dir(&db).unwrap();
        assert!(damaged(open_whole(&db, true, init)));
        fs::remove_dir(&db).unwrap();
        // Absent: made whole (schema in, nothing left under a temporary name).
        assert!(open_whole(&db, false, init).unwrap().is_none());
        let (conn, created) = open_whole(&db, true, init).unwrap().unwrap();
        assert!(created);
        assert_eq!(version(&conn), 3);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(conn);
        // Another program's tables, no version: foreign.
        let other = dir.path().join("other.sqlite");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (a INTEGER);")
            .unwrap();
        let (conn, _) = open_whole(&other, false, init).unwrap().unwrap();
        assert!(matches!(migrate(&conn, &STEPS), Err(Error::Foreign)));
    }

    #[test]
    fn a_failing_migration_leaves_the_database_as_it_was() {
        let (_dir, conn) = db();
        let broken = [
            STEPS[0],
            STEPS[1],
            "ALTER TABLE nowhere ADD COLUMN z INTEGER;",
        ];
        assert!(matches!(migrate(&conn, &broken), Err(Error::Sqlite(_))));
        assert_eq!(version(&conn), 0);
        assert!(tables(&conn).is_empty());
        // Not left inside a transaction: the good ones run after.
        assert_eq!(migrate(&conn, &STEPS).unwrap(), 0);
        assert_eq!(version(&conn), 3);
    }
}

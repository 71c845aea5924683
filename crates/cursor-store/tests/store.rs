//! The cursor database: what a hook and a batch write, what a stopped batch leaves, and
//! what earlier versions left.

use std::collections::BTreeMap;
use std::path::Path;

use transcope_cursor_store::cursor::{Cursor, Intent, CURSOR_VERSION};
use transcope_cursor_store::{database_path, CursorStore, Encoded, StoreError};

fn cursor(key: &str, path: &Path, offset: u64) -> Cursor {
    Cursor {
        version: CURSOR_VERSION,
        session: key.into(),
        path: path.display().to_string(),
        adapter: "claude".into(),
        offset,
        line: 2,
        size: offset,
        mtime_ns: 0,
        head_len: offset.min(4096),
        head_sha256: "00".into(),
        whole: false,
        entries: 0,
        entries_sha256: String::new(),
        records: false,
        marker: String::new(),
        anchor: String::new(),
        stages: BTreeMap::from([("markers".to_owned(), serde_json::json!({"n": offset}))]),
        adapter_checkpoint: serde_json::json!({"seen": offset}),
        intent: None,
    }
}

fn encoded(c: &Cursor) -> Encoded {
    Encoded::new(c).unwrap()
}

#[test]
fn a_read_creates_nothing_and_a_hook_save_is_read_back() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let store = CursorStore::new(home.path(), true);
    assert_eq!(store.load("s1", &t).unwrap(), None);
    assert!(
        !database_path(home.path()).exists(),
        "a read made the database"
    );
    store.put("s1", &t, encoded(&cursor("s1", &t, 10))).unwrap();
    // Another process (a new store) sees it; another key or path does not.
    let other = CursorStore::new(home.path(), true);
    assert_eq!(other.load("s1", &t).unwrap(), Some(cursor("s1", &t, 10)));
    assert_eq!(other.load("s2", &t).unwrap(), None);
    assert_eq!(
        other.load("s1", &home.path().join("u.jsonl")).unwrap(),
        None
    );
    // A failed read puts back what was there, or nothing.
    other.put("s1", &t, encoded(&cursor("s1", &t, 20))).unwrap();
    other.reset("s1", &t, Some(&cursor("s1", &t, 10))).unwrap();
    assert_eq!(store.load("s1", &t).unwrap(), Some(cursor("s1", &t, 10)));
    other.reset("s1", &t, None).unwrap();
    assert_eq!(store.load("s1", &t).unwrap(), None);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(database_path(home.path()))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_batch_is_seen_by_its_own_reads_at_once_and_by_others_after_flush() {
    let home = tempfile::tempdir().unwrap();
    let batch = CursorStore::new(home.path(), false);
    let paths: Vec<_> = (0..CursorStore::BATCH + 3)
        .map(|i| home.path().join(format!("t{i}.jsonl")))
        .collect();
    for (i, p) in paths.iter().enumerate() {
        batch
            .put("k", p, encoded(&cursor("k", p, i as u64 + 1)))
            .unwrap();
    }
    let other = CursorStore::new(home.path(), true);
    // The first BATCH went in one transaction when the batch filled; the rest wait.
    assert_eq!(
        other.load("k", &paths[0]).unwrap(),
        Some(cursor("k", &paths[0], 1))
    );
    let last = paths.last().unwrap();
    assert_eq!(other.load("k", last).unwrap(), None);
    assert_eq!(
        batch.load("k", last).unwrap(),
        Some(cursor("k", last, paths.len() as u64))
    );
    batch.flush().unwrap();
    assert_eq!(
        other.load("k", last).unwrap(),
        Some(cursor("k", last, paths.len() as u64))
    );
}

#[test]
fn intents_of_a_stopped_batch_are_folded_in_and_a_live_ones_are_not() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let prev = cursor("k", &t, 5);
    let next = cursor("k", &t, 9);
    let intent = Intent {
        prev: Some(prev.clone()),
        tokens: BTreeMap::from([("change-detect".to_owned(), serde_json::json!("tid"))]),
    };
    let live = CursorStore::new(home.path(), false);
    live.put("k", &t, encoded(&prev)).unwrap();
    live.flush().unwrap();
    live.put_intent("k", &t, &encoded(&next), &intent).unwrap();
    let journals = home.path().join("transcope/intents");
    assert_eq!(std::fs::read_dir(&journals).unwrap().count(), 1);
    // While its run lives, its journal is its own: another store sees the old cursor.
    let reader = CursorStore::new(home.path(), true);
    assert_eq!(reader.load("k", &t).unwrap(), Some(prev.clone()));
    // The run is stopped before its cursor was saved (dropped: its lock goes with it).
    drop(live);
    let after = CursorStore::new(home.path(), true);
    let mut want = next.clone();
    want.intent = Some(Box::new(intent));
    assert_eq!(after.load("k", &t).unwrap(), Some(want.clone()));
    // The intent's text is the cursor's with one member more: what serde writes.
    let row: String = rusqlite::Connection::open(database_path(home.path()))
        .unwrap()
        .query_row("SELECT cursor FROM cursors", [], |r| r.get(0))
        .unwrap();
    assert_eq!(row, serde_json::to_string(&want).unwrap());
    assert!(!journals.exists(), "the folded journal was left behind");
}

#[test]
fn a_finished_batch_leaves_no_journal() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let batch = CursorStore::new(home.path(), false);
    let intent = Intent {
        prev: None,
        tokens: BTreeMap::new(),
    };
    batch
        .put_intent("k", &t, &encoded(&cursor("k", &t, 3)), &intent)
        .unwrap();
    batch.put("k", &t, encoded(&cursor("k", &t, 3))).unwrap();
    batch.flush().unwrap();
    assert!(!home.path().join("transcope/intents").exists());
    assert_eq!(
        CursorStore::new(home.path(), true).load("k", &t).unwrap(),
        Some(cursor("k", &t, 3))
    );
}

#[test]
fn an_earlier_versions_cursor_files_are_brought_in_then_removed() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let dir = home.path().join("transcope/cursors");
    std::fs::create_dir_all(&dir).unwrap();
    let old = cursor("s1", &t, 42);
    // An earlier version's file names its session and transcript (a row's text does
    // not: they are its key).
    let mut file = serde_json::to_value(&old).unwrap();
    file["session"] = "s1".into();
    file["path"] = t.display().to_string().into();
    std::fs::write(dir.join("0123.json"), serde_json::to_vec(&file).unwrap()).unwrap();
    std::fs::write(dir.join("notes.txt"), b"not a cursor").unwrap();
    let store = CursorStore::new(home.path(), true);
    // Even a read brings them in (else the first Stop after an upgrade would read
    // every transcript from its start).
    assert_eq!(store.load("s1", &t).unwrap(), Some(old));
    assert!(!dir.join("0123.json").exists());
    assert!(
        dir.join("notes.txt").exists(),
        "a file that is not a cursor was removed"
    );
}

#[test]
fn a_planted_symlink_is_removed_never_followed() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let outside = home.path().join("precious");
    std::fs::write(&outside, b"keep me").unwrap();
    std::fs::create_dir_all(home.path().join("transcope")).unwrap();
    let db = database_path(home.path());
    std::os::unix::fs::symlink(&outside, &db).unwrap();
    let store = CursorStore::new(home.path(), true);
    store.put("s1", &t, encoded(&cursor("s1", &t, 1))).unwrap();
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
    assert!(std::fs::symlink_metadata(&db)
        .unwrap()
        .file_type()
        .is_file());
    assert_eq!(store.load("s1", &t).unwrap(), Some(cursor("s1", &t, 1)));
    // A folder in its place is an error, not a store.
    let home2 = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(database_path(home2.path())).unwrap();
    let err = CursorStore::new(home2.path(), true)
        .put("s1", &t, encoded(&cursor("s1", &t, 1)))
        .unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

/// Each transcript of `n` under `home`, its cursor saved by `store`.
fn save_all(store: &CursorStore, home: &Path, key: &str, n: usize) -> Vec<std::path::PathBuf> {
    let paths: Vec<_> = (0..n).map(|i| home.join(format!("a{i}.jsonl"))).collect();
    for (i, p) in paths.iter().enumerate() {
        store
            .put(key, p, encoded(&cursor(key, p, i as u64 + 1)))
            .unwrap();
    }
    paths
}

/// A first pass over an archive asks the database nothing per file, yet a cursor
/// another connection writes meanwhile is seen from the next batch on: for a home with
/// no database (the row count tells) and for one with an empty database (its
/// `data_version` tells).
#[test]
fn a_fresh_batch_sees_another_writers_cursor_from_its_next_batch_on() {
    for empty_database in [false, true] {
        let home = tempfile::tempdir().unwrap();
        let t = home.path().join("t.jsonl");
        if empty_database {
            let s = CursorStore::new(home.path(), true);
            s.put("k", &t, encoded(&cursor("k", &t, 1))).unwrap();
            s.reset("k", &t, None).unwrap();
        }
        let batch = CursorStore::new(home.path(), false);
        assert_eq!(batch.load("k", &t).unwrap(), None);
        // A hook of another process saves the cursor of `t` while the batch runs.
        CursorStore::new(home.path(), true)
            .put("k", &t, encoded(&cursor("k", &t, 7)))
            .unwrap();
        let own = save_all(&batch, home.path(), "b", 3);
        assert_eq!(batch.load("k", &t).unwrap(), None, "asked before its batch");
        batch.flush().unwrap();
        assert_eq!(
            batch.load("k", &t).unwrap(),
            Some(cursor("k", &t, 7)),
            "empty database: {empty_database}"
        );
        assert_eq!(
            batch.load("b", &own[2]).unwrap(),
            Some(cursor("b", &own[2], 3))
        );
    }
}

/// While only the fresh batch writes, it finds its own cursors after they are written
/// (and none it did not write).
#[test]
fn a_fresh_batch_reads_back_its_own_written_cursors() {
    let home = tempfile::tempdir().unwrap();
    let batch = CursorStore::new(home.path(), false);
    assert_eq!(batch.load("b", &home.path().join("none")).unwrap(), None);
    let paths = save_all(&batch, home.path(), "b", CursorStore::BATCH * 2 + 1);
    batch.flush().unwrap();
    for (i, p) in paths.iter().enumerate().step_by(97) {
        assert_eq!(
            batch.load("b", p).unwrap(),
            Some(cursor("b", p, i as u64 + 1))
        );
    }
    assert_eq!(batch.load("b", &home.path().join("none")).unwrap(), None);
    let rows: i64 = rusqlite::Connection::open(database_path(home.path()))
        .unwrap()
        .query_row("SELECT count(*) FROM cursors", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, paths.len() as i64);
}

/// A batch's journal is rotated when the batch is taken: an intent in flight then is
/// in the database once the batch commits, one stored after it in the new journal, and
/// a run stopped after that loses neither.
#[test]
fn an_intent_survives_the_journal_rotation_of_a_batch() {
    let home = tempfile::tempdir().unwrap();
    let (t1, t2) = (home.path().join("t1.jsonl"), home.path().join("t2.jsonl"));
    let intent = |prev: Option<Cursor>| Intent {
        prev,
        tokens: BTreeMap::from([("change-detect".to_owned(), serde_json::json!("tid"))]),
    };
    let live = CursorStore::new(home.path(), false);
    live.put_intent("k", &t1, &encoded(&cursor("k", &t1, 4)), &intent(None))
        .unwrap();
    save_all(&live, home.path(), "b", CursorStore::BATCH);
    let journals = home.path().join("transcope/intents");
    assert_eq!(
        std::fs::read_dir(&journals).unwrap().count(),
        0,
        "not rotated"
    );
    live.put_intent("k", &t2, &encoded(&cursor("k", &t2, 6)), &intent(None))
        .unwrap();
    assert_eq!(std::fs::read_dir(&journals).unwrap().count(), 1);
    drop(live);
    let after = CursorStore::new(home.path(), true);
    for (t, at) in [(&t1, 4), (&t2, 6)] {
        let mut want = cursor("k", t, at);
        want.intent = Some(Box::new(intent(None)));
        assert_eq!(after.load("k", t).unwrap(), Some(want));
    }
}

/// A home whose database holds one cursor, of `t.jsonl` for `s1` at offset 1, saved
/// by a hook.
fn one_saved() -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    CursorStore::new(home.path(), true)
        .put("s1", &t, encoded(&cursor("s1", &t, 1)))
        .unwrap();
    (home, t)
}

/// The database keeps a rollback journal: a hook that only reads makes no
/// write-ahead log or shared-memory index, and a database an earlier version left in
/// WAL mode is moved over at its next write.
#[test]
fn the_database_keeps_a_rollback_journal_and_a_wal_one_is_moved_over() {
    let (home, t) = one_saved();
    let db = database_path(home.path());
    let mode = |db: &Path| -> String {
        rusqlite::Connection::open(db)
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap()
    };
    // Not WAL (which a database keeps; a rollback journal's mode is each connection's,
    // and a writer truncates its journal after each transaction).
    let journal = Path::new(&format!("{}-journal", db.display())).to_owned();
    let rollback = |db: &Path| {
        assert_eq!(mode(db), "delete");
        assert_eq!(std::fs::metadata(&journal).unwrap().len(), 0);
    };
    rollback(&db);
    assert_eq!(
        CursorStore::new(home.path(), true).load("s1", &t).unwrap(),
        Some(cursor("s1", &t, 1))
    );
    for sidecar in ["-wal", "-shm"] {
        let p = format!("{}{sidecar}", db.display());
        assert!(!Path::new(&p).exists(), "{p} was made");
    }
    let wal = rusqlite::Connection::open(&db).unwrap();
    let m: String = wal
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(m, "wal");
    drop(wal);
    let store = CursorStore::new(home.path(), true);
    assert_eq!(store.load("s1", &t).unwrap(), Some(cursor("s1", &t, 1)));
    store.put("s1", &t, encoded(&cursor("s1", &t, 2))).unwrap();
    drop(store);
    rollback(&db);
    assert_eq!(
        CursorStore::new(home.path(), true).load("s1", &t).unwrap(),
        Some(cursor("s1", &t, 2))
    );
}

/// A row's text leaves out what its key says and the fields at their defaults, and
/// a row of the earlier, longer form is still read.
#[test]
fn a_cursor_row_is_short_and_the_longer_form_is_still_read() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    let c = cursor("s1", &t, 5);
    let text = serde_json::to_string(&c).unwrap();
    for gone in [
        "session",
        "path",
        "mtime_ns",
        "whole",
        "\"entries\"",
        "entries_sha256",
    ] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
    let mut long = serde_json::to_value(&c).unwrap();
    long["session"] = "s1".into();
    long["path"] = t.display().to_string().into();
    long["mtime_ns"] = 0.into();
    long["whole"] = false.into();
    CursorStore::new(home.path(), true)
        .put("s1", &t, encoded(&cursor("s1", &t, 1)))
        .unwrap();
    let conn = rusqlite::Connection::open(database_path(home.path())).unwrap();
    conn.execute("UPDATE cursors SET cursor = ?1", [long.to_string()])
        .unwrap();
    let store = CursorStore::new(home.path(), true);
    assert_eq!(store.load("s1", &t).unwrap(), Some(c));
    // A long row naming another session is no cursor of this one.
    long["session"] = "s2".into();
    conn.execute("UPDATE cursors SET cursor = ?1", [long.to_string()])
        .unwrap();
    assert_eq!(
        CursorStore::new(home.path(), true).load("s1", &t).unwrap(),
        None
    );
}

/// A database a newer transcope made is not written, and the error says SQLite's
/// message as it did before SQLite's error was wrapped (`StoreError::Sqlite`).
#[test]
fn a_newer_database_is_refused_with_sqlites_message() {
    let (home, t) = one_saved();
    let db = database_path(home.path());
    rusqlite::Connection::open(&db)
        .unwrap()
        .pragma_update(None, "user_version", 2)
        .unwrap();
    let e = CursorStore::new(home.path(), true)
        .put("s1", &t, encoded(&cursor("s1", &t, 2)))
        .unwrap_err();
    assert!(matches!(e, StoreError::Sqlite { .. }), "{e:?}");
    let sqlite = rusqlite::Error::InvalidQuery;
    assert_eq!(
        e.to_string(),
        format!("the cursor store {}: {sqlite}", db.display())
    );
    let source = std::error::Error::source(&e).expect("SQLite's error");
    assert_eq!(source.to_string(), sqlite.to_string());
    assert_eq!(format!("{source:?}"), format!("{sqlite:?}"));
}

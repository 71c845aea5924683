//! The cursor database: what a hook and a batch write, what a stopped batch leaves, and
//! what earlier versions left.

use std::collections::BTreeMap;
use std::path::Path;

use transcope_engine::cursor::{Cursor, Intent, CURSOR_VERSION};
use transcope_engine::store::{database_path, CursorStore, Encoded};

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
    std::fs::write(dir.join("0123.json"), serde_json::to_vec(&old).unwrap()).unwrap();
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

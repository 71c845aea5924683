//! Issue 33, item 5: a sync mirrors what a scope log gained since the last one, not the
//! whole log again, and the index then holds exactly what a mirror of the whole log
//! holds — through appends, a torn last line and its completion, rows a Stop recorded
//! itself, and a log rewritten or cut (read whole again).

use std::io::Write;
use std::path::{Path, PathBuf};

use transcope_index::{Index, Observed};

/// A log row at second `i` in folder `cwd`.
fn row(session: &str, i: u64, cwd: &str) -> String {
    format!(
        "{{\"session_id\": \"{session}\", \"sequence\": {i}, \"at\": \"2026-10-08T10:{:02}:{:02}+00:00\", \"transition_id\": \"{:064x}\", \"cwd\": \"{cwd}\", \"project_id\": \"github.com/x/{cwd}\"}}\n",
        i / 60,
        i % 60,
        i + 1
    )
}

/// `n` rows, alternately in folders `even` and `odd`.
fn rows(session: &str, n: u64, (even, odd): (&str, &str)) -> String {
    (0..n)
        .map(|i| row(session, i, if i % 2 == 0 { even } else { odd }))
        .collect()
}

fn log_path(home: &Path, session: &str) -> PathBuf {
    let dir = transcope_scopelog::scopes_dir(home);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{session}.jsonl"))
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// What an index that mirrors `home`'s logs whole from nothing holds.
fn mirrored_whole(home: &Path) -> Vec<(String, Vec<serde_json::Map<String, serde_json::Value>>)> {
    let fresh = tempfile::tempdir().unwrap();
    let dir = transcope_scopelog::scopes_dir(fresh.path());
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(transcope_scopelog::scopes_dir(home)).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let mut ix = Index::open(fresh.path()).unwrap();
    ix.sync_logs(fresh.path()).unwrap();
    sorted(&ix)
}

fn sorted(ix: &Index) -> Vec<(String, Vec<serde_json::Map<String, serde_json::Value>>)> {
    let mut v: Vec<_> = ix.log_rows().unwrap().into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

#[test]
fn a_sync_reads_what_a_log_gained_and_ends_as_a_whole_mirror() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let s = "0f0e0d0c-0000-4000-8000-00000000aa01";
    let log = log_path(home, s);
    let mut ix = Index::open(home).unwrap();
    let text = rows(s, 100, ("a", "b"));
    append(&log, &text);
    assert_eq!(ix.sync_logs(home).unwrap().logs, 1);
    assert_eq!(sorted(&ix), mirrored_whole(home));
    // Nothing new: nothing read.
    assert_eq!(ix.sync_logs(home).unwrap().logs, 0);

    // Appended rows, then a torn last line: only the tail is read (the rows before it
    // are not inserted twice: the count is the whole mirror's).
    append(&log, &row(s, 100, "c"));
    append(&log, "{\"session_id\": \"torn");
    assert_eq!(ix.sync_logs(home).unwrap().logs, 1);
    assert_eq!(sorted(&ix), mirrored_whole(home));
    assert_eq!(sorted(&ix)[0].1.len(), 101);
    // The next writer starts on a fresh line (the fresh-line rule).
    append(&log, &format!("\n{}", row(s, 101, "d")));
    assert_eq!(ix.sync_logs(home).unwrap().logs, 1);
    assert_eq!(sorted(&ix), mirrored_whole(home));
    assert_eq!(sorted(&ix)[0].1.len(), 102);

    // A row a Stop recorded itself, then mirrored again from the log: kept once.
    let line = row(s, 102, "e");
    append(&log, &line);
    let seen = Observed {
        rows: vec![transcope_scopelog::WrittenRow::from_line(line.trim_end()).unwrap()],
        ..Observed::new(s)
    };
    ix.record(&[seen], transcope_index::Origin::Hook, false)
        .unwrap();
    ix.sync_logs(home).unwrap();
    assert_eq!(sorted(&ix), mirrored_whole(home));
    assert_eq!(sorted(&ix)[0].1.len(), 103);

    // A log rewritten shorter, or replaced by one as long whose earlier lines changed
    // (the byte before the place mirrored to is no longer a line's end): read whole.
    let mut short = String::new();
    for i in 0..10 {
        short.push_str(&row(s, i, "z"));
    }
    std::fs::write(&log, &short).unwrap();
    assert_eq!(ix.sync_logs(home).unwrap().logs, 1);
    assert_eq!(sorted(&ix), mirrored_whole(home));
    assert_eq!(sorted(&ix)[0].1.len(), 10);
    let mut longer = String::from("x");
    longer.push_str(&short);
    longer.push_str(&row(s, 10, "y"));
    std::fs::write(&log, &longer).unwrap();
    ix.sync_logs(home).unwrap();
    assert_eq!(sorted(&ix), mirrored_whole(home));
}

#[test]
fn a_million_row_log_grown_by_one_row_is_mirrored_by_reading_that_row() {
    // Not timed here (benches/long_session.py times it): what is read is counted.
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let s = "0f0e0d0c-0000-4000-8000-00000000aa02";
    let log = log_path(home, s);
    let text = rows(s, 20_000, ("a", "b"));
    append(&log, &text);
    let mut ix = Index::open(home).unwrap();
    ix.sync_logs(home).unwrap();
    let before = std::fs::metadata(&log).unwrap().len();
    append(&log, &row(s, 20_000, "c"));
    // Whatever the log's first 20,000 rows now say, the sync does not look at them:
    // overwrite them with others of the same length and the index keeps the old.
    let mut bytes = std::fs::read(&log).unwrap();
    let first = bytes.iter().position(|b| *b == b'\n').unwrap();
    bytes[..first].copy_from_slice(row(s, 0, "q").trim_end().as_bytes());
    std::fs::write(&log, &bytes).unwrap();
    ix.sync_logs(home).unwrap();
    let rows = &sorted(&ix)[0].1;
    assert_eq!(rows.len(), 20_001);
    assert_eq!(
        rows[0]["cwd"], "a",
        "the rows before {before} bytes were not read"
    );
    assert_eq!(rows[20_000]["cwd"], "c");
}

/// Issue 37, item 4: a sync reads only the bytes a log gained (and the last row it
/// mirrored, to see that the log still holds it), and a log replaced by another whose
/// line ends fall where the old one's did is mirrored again from its start.
#[test]
fn a_sync_reads_only_the_bytes_it_has_not_mirrored_and_sees_a_replaced_log() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let s = "0f0e0d0c-0000-4000-8000-00000000aa03";
    let log = log_path(home, s);
    let text = rows(s, 1000, ("a", "b"));
    append(&log, &text);
    let mut ix = Index::open(home).unwrap();
    let first = ix.sync_logs(home).unwrap();
    assert_eq!((first.logs, first.bytes), (1, text.len() as u64));

    // One row appended: that row is read, and the row before it (its line, its `\n`
    // and the byte before the line, where a `\r` would be).
    let last = row(s, 999, "b");
    let new = row(s, 1000, "c");
    append(&log, &new);
    let grown = ix.sync_logs(home).unwrap();
    assert_eq!(grown.logs, 1);
    assert_eq!(grown.bytes, (1 + last.len() + new.len()) as u64);
    assert!(grown.bytes < 600, "{grown:?}");
    assert_eq!(sorted(&ix), mirrored_whole(home));
    assert_eq!(sorted(&ix)[0].1.len(), 1001);
    assert_eq!(ix.sync_logs(home).unwrap().bytes, 0);

    // Replaced by a log of other rows, the same length line for line (so every `\n`
    // is where it was), and one row longer: the byte before the place mirrored to is
    // still a `\n`, but the row before it is not the one mirrored. Read whole.
    let other = rows(s, 1002, ("x", "y"));
    assert_eq!(other.as_bytes()[text.len() + new.len() - 1], b'\n');
    std::fs::write(&log, &other).unwrap();
    let replaced = ix.sync_logs(home).unwrap();
    assert_eq!(replaced.logs, 1);
    assert!(replaced.bytes >= other.len() as u64, "{replaced:?}");
    let rows = &sorted(&ix)[0].1;
    assert_eq!(rows.len(), 1002);
    assert!(rows.iter().all(|r| r["cwd"] == "x" || r["cwd"] == "y"));
    assert_eq!(sorted(&ix), mirrored_whole(home));
}

//! A transaction that keeps its rows ([`ScopeLog::transaction_keeping_rows`]) hands on
//! exactly what [`ScopeLog::transitions`] reads back once it is done: the attribution
//! of markers and usage goes through those rows instead of reading the log again.

use transcope_core::{Scope, ScopeField};
use transcope_scopelog::{row_line, ScopeLog, KEPT_ROWS_MAX};

fn at(i: u64) -> String {
    format!(
        "2026-10-01T{:02}:{:02}:{:02}Z",
        i / 3600,
        (i / 60) % 60,
        i % 60
    )
}

fn scope(i: u64) -> Scope {
    Scope::default()
        .with(ScopeField::Cwd, format!("/w/é{}", i % 3))
        .with(ScopeField::Branch, format!("b{}", i % 2))
}

/// The row another writer appends as row `seq`, at `at`, with [`scope`]`(seq)`.
fn row(log: &ScopeLog, seq: u64, at: &str) -> String {
    let id = scope(seq).transition_id(log.session(), at);
    row_line(log.session(), seq, at, &id, &scope(seq))
}

/// Write `text` as `log`'s file.
fn write_log(log: &ScopeLog, text: &str) {
    let path = log.path().unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A log as other writers leave it: rows, a line that is no JSON, a row with `\r\n`,
/// and a torn last line (no newline).
fn existing(log: &ScopeLog, torn: &str) {
    let mut text = String::new();
    for i in 0..5 {
        text.push_str(&row(log, i, &at(i * 10)));
        text.push_str(if i == 2 { "\r\n" } else { "\n" });
        if i == 1 {
            text.push_str("not json\n");
        }
    }
    text.push_str(torn);
    write_log(log, &text);
}

#[test]
fn kept_rows_are_the_rows_read_back() {
    // A torn tail that is no JSON, and one that is a whole object without its newline.
    for torn in ["{\"session_id\": \"s\", \"seq", "{\"x\": 1}"] {
        let home = tempfile::tempdir().unwrap();
        let log = ScopeLog::open(home.path(), "s");
        existing(&log, torn);
        let mut txn = log.transaction_keeping_rows();
        // New rows, a replay, an unchanged scope, an older time.
        for i in 5..40u64 {
            let _ = txn.record(&scope(i), &at(i * 10), None);
            if i % 5 == 0 {
                let _ = txn.record(&scope(i), &at(i * 10), None);
                let _ = txn.record(&scope(i + 1), &at(i * 10 - 3), None);
            }
        }
        assert!(txn.accepted() > 20);
        txn.flush().unwrap();
        let kept = txn.into_rows().expect("every row reached the log");
        assert_eq!(kept, log.transitions());
    }
}

#[test]
fn a_transaction_that_records_nothing_keeps_the_file_rows() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "s");
    existing(&log, "");
    let txn = log.transaction_keeping_rows();
    assert_eq!(txn.into_rows().unwrap(), log.transitions());
    // A log that does not exist: no rows, as read back.
    let none = ScopeLog::open(home.path(), "t");
    assert_eq!(
        none.transaction_keeping_rows().into_rows(),
        Some(Vec::new())
    );
    assert!(none.transitions().is_empty());
}

#[test]
fn rows_still_waiting_or_not_kept_are_not_handed_on() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "s");
    let mut txn = log.transaction_keeping_rows();
    txn.record(&scope(1), &at(1), None).unwrap().unwrap();
    // Accepted, not yet appended: the file would read back without it.
    assert_eq!(txn.into_rows(), None);
    // A transaction not asked to keep them.
    let mut txn = log.transaction();
    txn.record(&scope(2), &at(2), None).unwrap().unwrap();
    txn.flush().unwrap();
    assert_eq!(txn.into_rows(), None);
}

#[test]
fn a_log_of_more_rows_than_kept_is_left_to_be_read() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "s");
    // As many rows as are kept: handed on. One more (appended by the batch): not.
    let mut text = String::new();
    for i in 0..KEPT_ROWS_MAX as u64 {
        text.push_str(&row(&log, i, &at(i)));
        text.push('\n');
    }
    write_log(&log, &text);
    let txn = log.transaction_keeping_rows();
    assert_eq!(txn.into_rows().unwrap().len(), KEPT_ROWS_MAX);
    let mut txn = log.transaction_keeping_rows();
    let n = KEPT_ROWS_MAX as u64;
    txn.record(&scope(n), &at(n), None).unwrap().unwrap();
    txn.flush().unwrap();
    assert_eq!(txn.into_rows(), None);
    assert_eq!(log.transitions().len(), KEPT_ROWS_MAX + 1);
}

//! Issue 13, item 4: recording a batch cost the square of its rows (each new row's
//! replay check scanned every row, and every row was kept as a JSON map). A transaction
//! now keeps the rows' count, their ids and the latest row, and appends in pieces of
//! about 1 MiB; these tests pin that it still writes exactly what the same calls made
//! one by one write.

use std::time::{Duration, Instant};

use transcope_core::{Scope, ScopeField};
use transcope_scopelog::{row_line, RecordError, ScopeLog};

/// `2026-10-01T00:00:00Z` plus `i` seconds (under a month).
fn at(i: u64) -> String {
    format!(
        "2026-10-{:02}T{:02}:{:02}:{:02}Z",
        1 + i / 86_400,
        (i / 3600) % 24,
        (i / 60) % 60,
        i % 60
    )
}

/// A batch larger than the append piece (rows of 10 KB, 1.3 MB in all), with replays,
/// unchanged scopes, older times and bad times among the calls, writes the bytes the
/// same calls make one by one, and says the same for each call.
#[test]
fn a_batch_past_the_append_piece_writes_what_one_by_one_calls_write() {
    let pad = "p".repeat(10_000);
    let mut calls = Vec::new();
    for i in 0..130u64 {
        let cwd = format!("/w/{}/{pad}", i % 2);
        let s = Scope::default().with(ScopeField::Cwd, cwd);
        calls.push((s.clone(), at(i * 10)));
        match i % 7 {
            // The same transition again, and an older one.
            0 => calls.push((s, at(i * 10))),
            3 => calls.push((s.with(ScopeField::Branch, "b"), at(i * 10 - 5))),
            5 => calls.push((s, "not a time".into())),
            _ => {}
        }
    }
    let one = tempfile::tempdir().unwrap();
    let batch = tempfile::tempdir().unwrap();
    let a = ScopeLog::open(one.path(), "big");
    let b = ScopeLog::open(batch.path(), "big");
    let mut txn = b.transaction();
    let mut accepted = 0;
    for (s, t) in &calls {
        let r1 = a.record(s, t, None).map(|r| r.map(|w| w.line));
        let r2 = txn.record(s, t, None).map(|r| r.map(|w| w.line));
        assert_eq!(
            r1.as_ref().map_err(RecordError::to_string),
            r2.as_ref().map_err(RecordError::to_string)
        );
        accepted += u64::from(matches!(r2, Ok(Some(_))));
    }
    // Part of the batch is in the file already, the rest waits for commit.
    let mid = std::fs::metadata(b.path().unwrap()).unwrap().len();
    assert!(mid > 0, "nothing appended before commit");
    assert_eq!(txn.accepted(), accepted);
    assert!(txn.durable() < accepted);
    assert_eq!(txn.commit().unwrap(), accepted);
    let want = std::fs::read(a.path().unwrap()).unwrap();
    assert!(mid < want.len() as u64);
    assert!(want.len() > 1 << 20);
    assert_eq!(std::fs::read(b.path().unwrap()).unwrap(), want);
}

/// A log of 40,000 rows: a transaction reads it once, finds a replay of its first row
/// and of its last, counts its rows for `sequence`, and a batch of 10,000 more costs
/// time linear in the rows (a scan per record took minutes at this size).
#[test]
fn replays_are_found_anywhere_in_a_large_log_without_a_scan() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "large");
    let scope = |i: u64| Scope::default().with(ScopeField::Cwd, format!("/w/{}", i % 2));
    let mut text = String::new();
    let mut ids = Vec::new();
    for i in 0..40_000u64 {
        let id = scope(i).transition_id("large", &at(i));
        text.push_str(&row_line("large", i, &at(i), &id, &scope(i)));
        text.push('\n');
        ids.push(id);
    }
    let path = log.path().unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, &text).unwrap();

    let started = Instant::now();
    let mut txn = log.transaction();
    assert_eq!(txn.row_count(), 40_000);
    assert!(txn.contains_transition(&ids[0]) && txn.contains_transition(&ids[39_999]));
    assert!(!txn.contains_transition(&"0".repeat(64)));
    assert_eq!(txn.record(&scope(0), &at(0), None).unwrap(), None);
    assert_eq!(txn.record(&scope(39_999), &at(39_999), None).unwrap(), None);
    for i in 40_000..50_000u64 {
        let w = txn.record(&scope(i), &at(i), None).unwrap().unwrap();
        assert_eq!(w.sequence, i);
    }
    assert_eq!(txn.commit().unwrap(), 10_000);
    let took = started.elapsed();
    eprintln!("read 40,000 rows and recorded 10,000 in {took:?}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.starts_with(text.as_bytes()));
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 50_000);
}

//! Contention: many `transcope` processes writing one scope log at once.
//!
//! * 16 processes × 40 `scope record` calls, interleaved, with readers running
//!   `scope log` meanwhile: every line whole, no duplicate `transition_id`, `sequence`
//!   0..n-1 in file order, times never decreasing, exit 3 only for "older" (and only
//!   for a time really older than what was already in the log), every printed row in
//!   the file exactly once, every reader's view a prefix of the final log.
//! * 8 concurrent `hook stop` on one transcript with the brain writer on: the
//!   transitions once each, one outbox file per marker.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

use common::*;
use serde_json::Value;

const WORKERS: usize = 16;
const CALLS: usize = 40;

/// The `at` of the `n`-th call started (whoever starts it): calls get later times in
/// the order they are spawned, so a call refused as "older" is one that lost the race
/// to the lock against a later-spawned call.
fn at(n: u64) -> String {
    format!(
        "2026-10-08T10:{:02}:{:02}.{:03}+00:00",
        n / 60_000,
        (n / 1000) % 60,
        n % 1000
    )
}

#[derive(Default)]
struct Tally {
    /// Rows printed by `scope record` (exit 0 with output).
    written: Vec<String>,
    /// `at` of refused calls.
    older: Vec<String>,
    /// Exit 0 without output (a no-op).
    noop: usize,
}

#[test]
fn sixteen_processes_record_into_one_log() {
    let sb = Arc::new(Sandbox::new());
    let session = "contended";
    let tally = Arc::new(Mutex::new(Tally::default()));
    let start = Arc::new(Barrier::new(WORKERS + 2));
    let done = Arc::new(AtomicBool::new(false));
    let counter = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::new();
    for w in 0..WORKERS {
        let (sb, tally, start, counter) =
            (sb.clone(), tally.clone(), start.clone(), counter.clone());
        handles.push(std::thread::spawn(move || {
            start.wait();
            for i in 0..CALLS {
                let a = at(counter.fetch_add(1, Ordering::SeqCst));
                let cwd = format!("/work/w{w}/c{i}");
                let out = run(
                    sb.cmd(&[
                        "scope",
                        "record",
                        "--session",
                        session,
                        "--at",
                        &a,
                        "--cwd",
                        &cwd,
                    ]),
                    b"",
                );
                let mut t = tally.lock().unwrap();
                match out.status.code() {
                    Some(0) if out.stdout.is_empty() => t.noop += 1,
                    Some(0) => {
                        let s = text(&out.stdout);
                        assert!(s.ends_with('\n') && s.lines().count() == 1, "{s:?}");
                        t.written.push(s.trim_end().to_owned());
                    }
                    Some(3) => {
                        assert_eq!(
                            text(&out.stderr).trim_end(),
                            "refused: transition is older than the latest accepted one",
                            "the only refusal these calls can meet"
                        );
                        t.older.push(a);
                    }
                    other => panic!("exit {other:?}: {}", text(&out.stderr)),
                }
            }
        }));
    }
    // Two readers: every view is a prefix of the final log.
    let views = Arc::new(Mutex::new(Vec::<Vec<String>>::new()));
    let reader = {
        let (sb, start, done, views) = (sb.clone(), start.clone(), done.clone(), views.clone());
        std::thread::spawn(move || {
            start.wait();
            while !done.load(Ordering::Relaxed) {
                let out = run(sb.cmd(&["scope", "log", "--session", session]), b"");
                assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
                let s = text(&out.stdout);
                views
                    .lock()
                    .unwrap()
                    .push(s.lines().map(str::to_owned).collect());
            }
        })
    };
    start.wait();
    for h in handles {
        h.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    reader.join().unwrap();

    let bytes = std::fs::read(sb.log(session)).unwrap();
    assert!(bytes.ends_with(b"\n"));
    // Every line whole: each one parses.
    for l in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        serde_json::from_slice::<Value>(l).expect("a whole line");
    }
    let rows = check_log(&bytes);
    let t = tally.lock().unwrap();
    assert_eq!(t.written.len() + t.older.len() + t.noop, WORKERS * CALLS);
    assert_eq!(t.noop, 0, "every call names a new scope: no no-op");
    // The file holds exactly the printed rows, each once.
    let file_lines: Vec<&str> = std::str::from_utf8(&bytes).unwrap().lines().collect();
    assert_eq!(file_lines.len(), rows.len());
    let printed: BTreeSet<&str> = t.written.iter().map(String::as_str).collect();
    let in_file: BTreeSet<&str> = file_lines.iter().copied().collect();
    assert_eq!(printed.len(), t.written.len(), "a row printed twice");
    assert_eq!(printed, in_file, "printed rows and file rows differ");
    // A refusal only for a time older than the latest row: the log's final maximum is
    // above it (necessary condition; the exact moment is not observable).
    let max_at = rows.last().unwrap()["at"].as_str().unwrap().to_owned();
    for a in &t.older {
        assert!(a < &max_at, "refused {a} though the log never passed it");
    }
    // Readers saw prefixes of the final log (the rows `scope log` prints are the file's
    // rows re-rendered with the same key order and escapes).
    let final_view: Vec<String> = {
        let out = run(sb.cmd(&["scope", "log", "--session", session]), b"");
        text(&out.stdout).lines().map(str::to_owned).collect()
    };
    assert_eq!(final_view.len(), rows.len());
    let views = views.lock().unwrap();
    for v in views.iter() {
        assert!(v.len() <= final_view.len());
        assert_eq!(v[..], final_view[..v.len()], "a reader saw a non-prefix");
    }
    eprintln!(
        "{} written, {} refused as older, {} reader views",
        t.written.len(),
        t.older.len(),
        views.len()
    );
    assert!(!t.written.is_empty());
    assert!(sb.outside_home().is_empty());
}

#[test]
fn eight_concurrent_stops_on_one_transcript() {
    for round in 0..3 {
        let sb = Arc::new(Sandbox::new());
        let t = sb.user.join("t.jsonl");
        let mut lines = Vec::new();
        let mut n_transitions = 0;
        for i in 0..12u64 {
            lines.push(claude_line(i * 60, &format!("/work/p{}", i / 2), "main"));
            if i % 2 == 0 {
                n_transitions += 1;
            }
            lines.push(claude_marker_line(
                i * 60 + 30,
                &format!("/work/p{}", i / 2),
                &format!("lesson {i}"),
            ));
        }
        std::fs::write(&t, lines.join("\n") + "\n").unwrap();
        let outbox = sb.root.join("home/outbox");
        let start = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (sb, t, outbox, start) = (sb.clone(), t.clone(), outbox.clone(), start.clone());
                std::thread::spawn(move || {
                    let mut c = sb.cmd(&["hook", "stop", "--json"]);
                    c.env("BRAIN_WRITER_ENABLED", "1")
                        .env("BRAIN_WRITER_OUTBOX", &outbox)
                        .env("BRAIN_WRITER_MAX_MARKERS", "100");
                    start.wait();
                    let out = run(c, &payload("stopper", &t));
                    assert_eq!(out.status.code(), Some(0));
                    let v: Value = serde_json::from_slice(&out.stdout)
                        .unwrap_or_else(|_| panic!("{}", text(&out.stderr)));
                    assert!(v["error"].is_null(), "round {round}: {v}");
                    v
                })
            })
            .collect();
        let summaries: Vec<Value> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let recorded: u64 = summaries
            .iter()
            .map(|v| v["transitions_recorded"].as_u64().unwrap())
            .sum();
        let bytes = std::fs::read(sb.log("stopper")).unwrap();
        let rows = check_log(&bytes);
        assert_eq!(rows.len(), n_transitions, "round {round}");
        assert_eq!(
            recorded as usize, n_transitions,
            "each transition counted once"
        );
        // One outbox file per marker, whatever the interleaving.
        let mut by_marker: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for e in std::fs::read_dir(&outbox).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.ends_with(".tmp"), "a temporary file left: {name}");
            if name.starts_with('.') {
                continue;
            }
            let suffix = name.split_once('-').unwrap().1.to_owned();
            by_marker.entry(suffix).or_default().push(name);
        }
        assert_eq!(by_marker.len(), 12, "round {round}: {by_marker:?}");
        for (k, files) in &by_marker {
            assert_eq!(
                files.len(),
                1,
                "round {round}: duplicate marker files for {k}: {files:?}"
            );
        }
        assert!(sb.outside_home().iter().all(|p| p == "user/t.jsonl"));
    }
}

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

use common::reliability::*;
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

/// What can stand where a log's `.lock` sidecar should be.
#[derive(Clone, Copy, Debug)]
enum Planted {
    /// A symbolic link to a file outside the home.
    Link,
    /// A symbolic link to nothing.
    Dangling,
    Folder,
    /// A FIFO no one reads (opening it for writing fails at once).
    Fifo,
    /// A FIFO the test holds open for reading (opening it succeeds: only its type
    /// tells it from a lock file).
    ReadFifo,
}

/// A hook's one-line summary, as it prints it on stderr without `--json`.
fn summary_on_stderr(err: &str) -> Value {
    let line = err.lines().last().unwrap_or_default();
    serde_json::from_str(line.strip_prefix("transcope: ").unwrap_or(line))
        .unwrap_or_else(|e| panic!("{e}: {err}"))
}

/// Put `what` at `lock`; the returned file keeps a FIFO's reader open.
fn plant(sb: &Sandbox, lock: &std::path::Path, what: Planted) -> Option<std::fs::File> {
    match what {
        Planted::Link => {
            let target = sb.outside.join("lock-target");
            std::fs::write(&target, b"precious\n").unwrap();
            std::os::unix::fs::symlink(&target, lock).unwrap();
        }
        Planted::Dangling => {
            std::os::unix::fs::symlink(sb.outside.join("made-through-a-link"), lock).unwrap()
        }
        Planted::Folder => std::fs::create_dir(lock).unwrap(),
        Planted::Fifo | Planted::ReadFifo => mkfifo(lock),
    }
    matches!(what, Planted::ReadFifo).then(|| {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(lock)
            .unwrap()
    })
}

/// Issue 13, item 7: a symbolic link, folder or FIFO at `<log>.lock` turned locking off
/// silently, and 24 concurrent writers then wrote duplicate `sequence` values. Now no
/// writer writes without the lock: `scope record` fails with the reason, a Stop says it
/// and exits 0 having written nothing (no row, no marker, no cursor), session start
/// too; once the sidecar is a file again, the next Stop records everything.
#[test]
fn an_unusable_lock_sidecar_is_an_error_never_an_unlocked_write() {
    const WRITERS: usize = 24;
    for what in [
        Planted::Link,
        Planted::Dangling,
        Planted::Folder,
        Planted::Fifo,
        Planted::ReadFifo,
    ] {
        let sb = Arc::new(Sandbox::new());
        let session = "nolock";
        let log = sb.log(session);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let mut lock = log.clone().into_os_string();
        lock.push(".lock");
        let lock = std::path::PathBuf::from(lock);
        let _reader = plant(&sb, &lock, what);

        let start = Arc::new(Barrier::new(WRITERS));
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (sb, start) = (sb.clone(), start.clone());
                std::thread::spawn(move || {
                    let c = sb.record_cmd(session, &at(w as u64), &format!("/work/w{w}"));
                    start.wait();
                    run(c, b"")
                })
            })
            .collect();
        for h in handles {
            let out = h.join().unwrap();
            assert_eq!(
                out.status.code(),
                Some(1),
                "{what:?}: {}",
                text(&out.stderr)
            );
            assert!(out.stdout.is_empty(), "{what:?}: a row was printed");
            let err = text(&out.stderr);
            assert!(
                err.contains("cannot be locked") && err.contains("nothing written"),
                "{what:?}: {err}"
            );
        }
        assert!(
            !log.exists(),
            "{what:?}: the log was written without its lock"
        );

        // A Stop with the brain writer on: the reason on stderr, exit 0, nothing written.
        let t = sb.user.join("t.jsonl");
        let lines = [
            claude_line(0, "/work/a", "main"),
            claude_marker_line(30, "/work/a", "held back"),
            claude_line(60, "/work/b", "main"),
        ];
        std::fs::write(&t, lines.join("\n") + "\n").unwrap();
        let outbox = sb.home.join("outbox");
        let stop = |sb: &Sandbox| {
            let mut c = sb.cmd(&["hook", "stop"]);
            c.env("BRAIN_WRITER_ENABLED", "1")
                .env("BRAIN_WRITER_OUTBOX", &outbox);
            run(c, &payload(session, &t))
        };
        let out = stop(&sb);
        assert_eq!(out.status.code(), Some(0));
        let err = text(&out.stderr);
        assert!(err.contains("cannot be locked"), "{what:?}: {err}");
        let v = summary_on_stderr(&err);
        assert_eq!(v["transitions_recorded"], 0, "{what:?}: {v}");
        assert_eq!(v["written"]["outbox"], 0, "{what:?}: {v}");
        assert!(!log.exists(), "{what:?}: the Stop wrote the log");
        assert!(!outbox.exists(), "{what:?}: a marker was delivered");
        // Session start: the launch scope is not recorded either.
        let p = serde_json::json!({"session_id": session, "cwd": "/work/a"}).to_string();
        let out = run(sb.cmd(&["hook", "session-start", "--json"]), p.as_bytes());
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["recorded"], 0, "{what:?}: {v}");
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("cannot be locked")),
            "{what:?}: {v}"
        );
        assert!(!log.exists(), "{what:?}: session start wrote the log");
        if matches!(what, Planted::Link) {
            assert_eq!(
                std::fs::read(sb.outside.join("lock-target")).unwrap(),
                b"precious\n"
            );
        }
        assert!(!sb.outside.join("made-through-a-link").exists());

        // The sidecar a file again: the next Stop records what was held back.
        if matches!(what, Planted::Folder) {
            std::fs::remove_dir(&lock).unwrap();
        } else {
            std::fs::remove_file(&lock).unwrap();
        }
        let out = stop(&sb);
        let v = summary_on_stderr(&text(&out.stderr));
        assert!(v["error"].is_null(), "{what:?}: {v}");
        assert_eq!(v["written"]["outbox"], 1, "{what:?}: {v}");
        let rows = check_log(&std::fs::read(&log).unwrap());
        let cwds: Vec<&str> = rows.iter().map(|r| r["cwd"].as_str().unwrap()).collect();
        assert_eq!(cwds, ["/work/a", "/work/b"], "{what:?}");
    }
}

/// The session index's sidecar is unusable: session start says so and appends no
/// index row (the reference would append without the lock).
#[test]
fn an_unusable_index_lock_is_an_error_too() {
    let sb = Sandbox::new();
    let repo = sb.user.join("alpha");
    git_repo(&repo);
    let brain = sb.home.join("brain");
    std::fs::create_dir_all(&brain).unwrap();
    std::fs::create_dir(brain.join("project-sessions.jsonl.lock")).unwrap();
    let p = serde_json::json!({"session_id": "idx", "cwd": repo}).to_string();
    let out = run(sb.cmd(&["hook", "session-start", "--json"]), p.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["indexed"], false, "{v}");
    let e = v["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("session index") && e.contains("cannot be locked"),
        "{v}"
    );
    assert!(!brain.join("project-sessions.jsonl").exists());
}

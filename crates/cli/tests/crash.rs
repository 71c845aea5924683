//! Crash safety: writers SIGKILLed at random points (hundreds of trials in all).
//!
//! After every kill: nothing written before is lost (the old log is a byte prefix of the
//! new one), every complete row is readable, an unreadable line is only a torn row, the
//! next write starts on a fresh line, cursors and outbox files are whole. At the end, a
//! run to completion gives exactly what an uninterrupted run gives.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::reliability::*;
use serde_json::Value;
use transcope_sqlite::rusqlite;

/// Every `*.json` under `dir` that is not a temporary (`.`-prefixed) file parses.
/// The cursor database, when a Stop got as far as creating it, passes SQLite's own
/// integrity check and every row is a whole cursor.
fn cursor_store_whole(home: &Path) {
    let db = home.join("transcope/cursors.sqlite");
    if !db.exists() {
        return;
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    // Killed between creating the file and its schema: the next open makes the table.
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'cursors'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if tables == 0 {
        return;
    }
    let mut st = conn.prepare("SELECT cursor FROM cursors").unwrap();
    let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
    for row in rows {
        let text = row.unwrap();
        serde_json::from_str::<Value>(&text)
            .unwrap_or_else(|e| panic!("a cursor row is not whole JSON ({e}): {text}"));
    }
}

fn json_files_whole(dir: &Path) {
    for f in tree(dir) {
        let name = Path::new(&f)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if name.starts_with('.') || !name.ends_with(".json") {
            continue;
        }
        let bytes = std::fs::read(dir.join(&f)).unwrap();
        serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|e| panic!("{f} is not whole JSON ({e}): {:?}", text(&bytes)));
    }
}

/// Outbox files by marker (`-<type>-<8 hex>.json`), temporaries excluded.
fn outbox_markers(dir: &Path) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for f in tree(dir) {
        if f.starts_with('.') || !f.ends_with(".json") {
            continue;
        }
        *m.entry(f.split_once('-').unwrap().1.to_owned())
            .or_insert(0) += 1;
    }
    m
}

/// A ledger row's session, type, content, time and state.
type LedgerRow = (Option<String>, String, String, Option<String>, String);

/// The ledger of `home`'s index: each key with what it recorded (empty without an
/// index). The database must pass SQLite's integrity check.
fn ledger(home: &Path) -> BTreeMap<String, LedgerRow> {
    let path = home.join("transcope/index.sqlite");
    if !path.exists() {
        return BTreeMap::new();
    }
    let db = rusqlite::Connection::open(&path).unwrap();
    let ok: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let mut st = db
        .prepare("SELECT idempotency_key, session, type, content, at, state FROM markers")
        .unwrap();
    let rows = st
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                (r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?),
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

#[test]
fn scope_record_killed_at_random_points() {
    let sb = Sandbox::new();
    let session = "killed";
    let mut rng = Rng::from_env(0x5eed_0001);
    let (mut killed, mut finished, mut torn) = (0, 0, 0);
    for i in 0..200u64 {
        let before = std::fs::read(sb.log(session)).unwrap_or_default();
        if i % 25 == 24 {
            // What a kill in the middle of the one append leaves: part of a row. A
            // writer starts its row on a fresh line when the log ends in a torn one
            // (when every record since the last injected tear was killed first, as on
            // a loaded machine), so the tear it leaves does too.
            let fresh = if before.last().is_some_and(|b| *b != b'\n') {
                "\n"
            } else {
                ""
            };
            let row = format!(
                "{{\"session_id\": \"{session}\", \"sequence\": 999, \"at\": \"{}\", \"transition_id\": \"{:064x}\"",
                iso(i * 10, "+00:00"),
                i
            );
            let cut = 1 + rng.below(row.len() as u64 - 1) as usize;
            // Every record before it may have been killed before making the log's
            // folder (a loaded machine: each gets under 5 ms); made as a writer makes it.
            let log = sb.log(session);
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(log.parent().unwrap())
            .unwrap();
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(&log)
                .unwrap();
            f.write_all(format!("{fresh}{}", &row[..cut]).as_bytes())
                .unwrap();
            torn += 1;
            continue;
        }
        let c = sb.record_cmd(session, &iso(i * 10, "+00:00"), &format!("/w/{i}"));
        match kill_after(c, b"", Duration::from_micros(rng.below(5000))) {
            None => killed += 1,
            Some(st) => {
                assert_eq!(st.code(), Some(0));
                finished += 1;
            }
        }
        let after = std::fs::read(sb.log(session)).unwrap_or_default();
        assert!(
            after.starts_with(&before),
            "trial {i}: something written before was lost"
        );
        if before.last().is_some_and(|b| *b != b'\n') && after.len() > before.len() {
            assert_eq!(
                after[before.len()],
                b'\n',
                "trial {i}: no fresh line after a torn row"
            );
        }
        check_log(&after);
    }
    // A final record: after a torn tail it starts on a fresh line, and it is readable.
    let out = run(
        sb.cmd(&[
            "scope",
            "record",
            "--session",
            session,
            "--at",
            &iso(9999, "+00:00"),
            "--cwd",
            "/w/last",
        ]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = check_log(&std::fs::read(sb.log(session)).unwrap());
    assert_eq!(rows.last().unwrap()["cwd"], "/w/last");
    // `scope log` shows exactly the readable rows.
    let out = run(sb.cmd(&["scope", "log", "--session", session]), b"");
    assert_eq!(text(&out.stdout).lines().count(), rows.len());
    eprintln!(
        "scope record: {killed} killed, {finished} finished, {torn} torn rows injected, {} rows",
        rows.len()
    );
}

#[test]
fn hook_stop_killed_at_random_points() {
    let sb = Sandbox::new();
    let session = "stopkill";
    let t = sb.user.join("t.jsonl");
    let outbox = sb.home.join("outbox");
    let mut rng = Rng::from_env(0x5eed_0002);
    let mut cwds = Vec::new();
    let mut lessons = BTreeSet::new();
    let mut transcript = std::fs::File::create(&t).unwrap();
    let (mut killed, mut finished) = (0, 0);
    let stop = |sb: &Sandbox| {
        let mut c = sb.cmd(&["hook", "stop", "--json"]);
        c.env("BRAIN_WRITER_ENABLED", "1")
            .env("BRAIN_WRITER_OUTBOX", sb.home.join("outbox"))
            .env("BRAIN_WRITER_MAX_MARKERS", "1000");
        c
    };
    // Kill anywhere from before `main` to after the end: the window is 2.5 times what
    // a warm, uninterrupted Stop over a short transcript takes here.
    let window = {
        let probe = Sandbox::new();
        let pt = probe.user.join("t.jsonl");
        std::fs::write(&pt, claude_line(0, "/w/p", "main") + "\n").unwrap();
        run(stop(&probe), &payload(session, &pt));
        let started = Instant::now();
        run(stop(&probe), &payload(session, &pt));
        (started.elapsed().as_micros() as u64 * 5 / 2).min(500_000)
    };
    for i in 0..150u64 {
        // The agent writes on: a new folder each time, a marker every third time.
        let cwd = format!("/w/{i}");
        writeln!(transcript, "{}", claude_line(i * 60, &cwd, "main")).unwrap();
        cwds.push(cwd.clone());
        if i % 3 == 0 {
            let lesson = format!("lesson {i}");
            writeln!(
                transcript,
                "{}",
                claude_marker_line(i * 60 + 1, &cwd, &lesson)
            )
            .unwrap();
            lessons.insert(lesson);
        }
        let before = std::fs::read(sb.log(session)).unwrap_or_default();
        match kill_after(
            stop(&sb),
            &payload(session, &t),
            Duration::from_micros(rng.below(window)),
        ) {
            None => killed += 1,
            Some(st) => {
                assert_eq!(st.code(), Some(0));
                finished += 1;
            }
        }
        let after = std::fs::read(sb.log(session)).unwrap_or_default();
        assert!(
            after.starts_with(&before),
            "trial {i}: something written before was lost"
        );
        check_log(&after);
        cursor_store_whole(&sb.home);
        json_files_whole(&outbox);
    }
    // Run to completion: every transition exactly once, in order, as one uninterrupted
    // Stop over the same transcript records them.
    for _ in 0..2 {
        let out = run(stop(&sb), &payload(session, &t));
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["error"].is_null(), "{v}");
    }
    let bytes = std::fs::read(sb.log(session)).unwrap();
    let rows = check_log(&bytes);
    let got: Vec<&str> = rows.iter().map(|r| r["cwd"].as_str().unwrap()).collect();
    assert_eq!(got, cwds);
    let clean = Sandbox::new();
    let out = run(stop(&clean), &payload(session, &t));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        readable_rows(&bytes),
        readable_rows(&std::fs::read(clean.log(session)).unwrap()),
        "the killed-and-resumed log reads as the uninterrupted one"
    );
    // Markers: never a duplicate file.
    let files = outbox_markers(&outbox);
    assert!(
        files.values().all(|n| *n == 1),
        "duplicate outbox files: {files:?}"
    );
    let clean_files = outbox_markers(&clean.home.join("outbox"));
    assert_eq!(clean_files.len(), lessons.len());
    let lost: Vec<&String> = clean_files
        .keys()
        .filter(|k| !files.contains_key(*k))
        .collect();
    eprintln!(
        "hook stop: kill window {window} µs; {killed} killed, {finished} finished; {} transitions; {} of {} markers lost to kills",
        rows.len(),
        lost.len(),
        lessons.len()
    );
    assert!(lost.is_empty(), "markers lost to a kill: {lost:?}");
}

/// `hook stop --json`: the summary on stdout.
fn stop_cmd(sb: &Sandbox) -> std::process::Command {
    sb.cmd(&["hook", "stop", "--json"])
}

/// A sandbox holding `transcript` as `user/t.jsonl`, and that path.
fn with_transcript(transcript: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let t = sb.user.join("t.jsonl");
    std::fs::write(&t, transcript).unwrap();
    (sb, t)
}

/// The log one uninterrupted Stop over `transcript` writes for `session`, and how
/// long that Stop took.
fn uninterrupted(session: &str, transcript: &str) -> (Vec<u8>, Duration) {
    let (clean, t) = with_transcript(transcript);
    let started = Instant::now();
    let out = run(stop_cmd(&clean), &payload(session, &t));
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (std::fs::read(clean.log(session)).unwrap(), took)
}

/// `bytes` with every unreadable line (and the newline ending it) taken out: what the
/// log would be had no write ever been cut.
fn without_torn_lines(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        if serde_json::from_slice::<Value>(body).is_ok() {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Issue 13, item 9: a kill during a large batch's append left part of the batch (6,734
/// of 20,000 rows and a torn row), where DEVIATIONS.md said none. What it leaves is
/// now said as it is, and pinned at exact bytes: the first bytes the uninterrupted run
/// writes — whole rows, then one torn line — and the next Stop starts a fresh line and
/// writes the rest of the uninterrupted run's rows, byte for byte.
#[test]
fn a_batch_cut_mid_write_leaves_whole_rows_then_one_torn_line_and_the_next_stop_completes_it() {
    let session = "cut";
    let n = 8_000;
    let transcript = alternating(n);
    let (want, _) = uninterrupted(session, &transcript);
    assert_eq!(check_log(&want).len() as u64, n);
    assert!(want.len() > 2 << 20, "the batch spans several appends");
    // In the first append, and in the second.
    for cut in [want.len() / 3, want.len() * 2 / 3] {
        // Inside a row, not at its end.
        let cut = if want[cut - 1] == b'\n' { cut + 1 } else { cut };
        let (sb, t) = with_transcript(&transcript);
        let mut c = stop_cmd(&sb);
        kill_at_file_size(&mut c, cut as u64);
        let out = run(c, &payload(session, &t));
        assert_eq!(out.status.signal(), Some(libc::SIGXFSZ), "cut at {cut}");
        let cut_log = std::fs::read(sb.log(session)).unwrap();
        assert_eq!(
            cut_log,
            want[..cut],
            "cut at {cut}: not the clean run's first bytes"
        );
        let whole = cut_log
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let kept = check_log(&cut_log).len() as u64;
        assert!(kept > 0 && kept < n, "cut at {cut}: {kept} rows");
        assert_eq!(
            readable_rows(&cut_log).len(),
            readable_rows(&cut_log[..whole]).len(),
            "only the last line is torn"
        );
        // The next Stop: the rest, after a fresh line.
        let out = run(stop_cmd(&sb), &payload(session, &t));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["error"].is_null(), "{v}");
        assert_eq!(v["transitions_recorded"], n - kept, "{v}");
        let mut expected = cut_log.clone();
        expected.push(b'\n');
        expected.extend_from_slice(&want[whole..]);
        let after = std::fs::read(sb.log(session)).unwrap();
        assert!(
            after == expected,
            "cut at {cut}: not completed as the clean run"
        );
        assert_eq!(without_torn_lines(&after), want);
        check_log(&after);
    }
}

/// The same with real kills: a Stop over a large batch is `SIGKILL`ed while its log
/// grows (up to three times in a row), or cut by its own deadline, and the Stop that
/// finally runs to the end leaves the uninterrupted run's log, but for the torn lines.
#[test]
fn stops_killed_while_appending_a_large_batch_are_completed_by_the_next() {
    let session = "killed-batch";
    let n = 6_000;
    let transcript = alternating(n);
    let (want, took) = uninterrupted(session, &transcript);
    let want_rows = readable_rows(&want);
    let mut rng = Rng::from_env(0x5eed_0009);
    let (mut mid_write, mut kills) = (0, 0);
    for trial in 0..6 {
        let (sb, t) = with_transcript(&transcript);
        let log = sb.log(session);
        for _ in 0..3 {
            let before = std::fs::read(&log).unwrap_or_default();
            let mut c = stop_cmd(&sb);
            if trial % 3 == 2 {
                // The deadline instead of a signal: somewhere in the run.
                let secs = took.as_secs_f64() * (0.2 + 0.7 * rng.below(1000) as f64 / 1000.0);
                c.env("TRANSCOPE_HOOK_DEADLINE_SECS", format!("{secs:.4}"));
                let out = run(c, &payload(session, &t));
                assert_eq!(out.status.code(), Some(0));
            } else {
                // Often inside the append that made it grow (1 MiB takes about that).
                let pause = Duration::from_micros(rng.below(150));
                if kill_once_growing(c, &payload(session, &t), &log, before.len(), pause) {
                    kills += 1;
                }
            }
            let after = std::fs::read(&log).unwrap_or_default();
            assert!(after.starts_with(&before), "trial {trial}: bytes lost");
            mid_write += usize::from(after.last().is_some_and(|b| *b != b'\n'));
            // What is readable is the uninterrupted run's first rows.
            let rows = check_log(&after);
            assert_eq!(rows[..], want_rows[..rows.len()], "trial {trial}");
        }
        let out = run(stop_cmd(&sb), &payload(session, &t));
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["error"].is_null(), "trial {trial}: {v}");
        let after = std::fs::read(&log).unwrap();
        assert_eq!(readable_rows(&after), want_rows, "trial {trial}");
        assert!(
            without_torn_lines(&after) == want,
            "trial {trial}: bytes differ"
        );
    }
    eprintln!(
        "large batch: clean Stop {took:?}; {kills} kills while the log grew, {mid_write} left a torn line"
    );
}

/// Start `c` (stdin `input`) and `SIGKILL` it `pause` after its log at `log` first
/// grows past `from` bytes. `false` when it ended before that.
fn kill_once_growing(
    mut c: std::process::Command,
    input: &[u8],
    log: &Path,
    from: usize,
    pause: Duration,
) -> bool {
    use std::process::Stdio;
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let grew = loop {
        if std::fs::metadata(log).is_ok_and(|m| m.len() as usize > from) {
            break true;
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_micros(50));
    };
    if grew {
        std::thread::sleep(pause);
        let _ = child.kill();
    }
    child.wait().unwrap();
    grew
}

/// The readable rows of every scope log under `home`, by file name.
fn all_logs(home: &Path) -> BTreeMap<String, Vec<serde_json::Map<String, Value>>> {
    let dir = home.join("brain/session-scopes");
    tree(&dir)
        .into_iter()
        .filter(|f| f.ends_with(".jsonl"))
        .map(|f| {
            let rows = check_log(&std::fs::read(dir.join(&f)).unwrap());
            (f, rows)
        })
        .collect()
}

fn raw_logs(home: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = home.join("brain/session-scopes");
    tree(&dir)
        .into_iter()
        .filter(|f| f.ends_with(".jsonl"))
        .map(|f| {
            let b = std::fs::read(dir.join(&f)).unwrap();
            (f, b)
        })
        .collect()
}

#[test]
fn backfill_killed_and_rerun_equals_an_uninterrupted_run() {
    let corpus = generated_corpus(7, 3_000_000);
    let paths: Vec<PathBuf> = vec![
        testdata().join("sample-archive/claude/projects"),
        testdata().join("sample-archive/codex/sessions"),
        corpus.path().join("claude/projects"),
        corpus.path().join("codex/sessions"),
    ];
    let args = backfill_args(&paths);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let clean = Sandbox::new();
    let took = run_timed(&clean, &args);
    let want = all_logs(&clean.home);
    let want_markers = ledger(&clean.home);
    assert!(want.len() > 10 && !want_markers.is_empty());

    let sb = Sandbox::new();
    let mut rng = Rng::from_env(0x5eed_0003);
    let (mut killed, mut finished) = (0, 0);
    // Kill anywhere in a run (capped, in case a slow disk stretched the clean run).
    let window = (took.as_micros() as u64).min(1_000_000) + 20_000;
    for trial in 0..40 {
        let before = raw_logs(&sb.home);
        match kill_after(sb.cmd(&args), b"", Duration::from_micros(rng.below(window))) {
            None => killed += 1,
            Some(_) => finished += 1,
        }
        let after = raw_logs(&sb.home);
        for (f, b) in &before {
            assert!(after[f].starts_with(b), "trial {trial}: {f} lost bytes");
        }
        all_logs(&sb.home);
        // The ledger is whole after any kill (and holds each key once: its schema
        // says so); nothing reached the outbox, which a backfill no longer writes.
        let got = ledger(&sb.home);
        assert!(
            got.keys().all(|k| want_markers.contains_key(k)),
            "trial {trial}"
        );
        assert!(!sb.home.join("brain-outbox").exists(), "trial {trial}");
    }
    let out = run(sb.cmd(&args), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        all_logs(&sb.home),
        want,
        "logs differ from an uninterrupted run"
    );
    assert_eq!(ledger(&sb.home), want_markers, "no missing ledger row");
    // Byte for byte, but for torn rows a kill left behind.
    let mut torn = 0;
    for (f, b) in raw_logs(&sb.home) {
        let kept: Vec<&[u8]> = b
            .split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .filter(|l| {
                let ok = serde_json::from_slice::<Value>(l).is_ok();
                torn += usize::from(!ok);
                ok
            })
            .collect();
        let mut joined = kept.join(&b"\n"[..]);
        joined.push(b'\n');
        assert_eq!(
            joined,
            std::fs::read(clean.home.join("brain/session-scopes").join(&f)).unwrap(),
            "{f}"
        );
    }
    eprintln!(
        "backfill: uninterrupted run {took:?}; {killed} killed, {finished} finished; {} logs; {torn} torn rows left by kills",
        want.len()
    );
}

/// The checker's own time parser (used for "times never decrease"), against Python's
/// `datetime.fromisoformat(...).timestamp()` values.
#[test]
fn the_checkers_time_parser() {
    assert_eq!(instant("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        instant("2026-10-08T10:00:00Z"),
        Some(1_791_453_600_000_000_000)
    );
    assert_eq!(
        instant("2026-10-08T10:00:00.5+02:00"),
        Some(1_791_446_400_500_000_000)
    );
    assert_eq!(
        instant("2026-10-08T10:00:00+00:00"),
        instant("2026-10-08 10:00:00")
    );
    assert!(instant("2026-10-08T10:00:00Z") < instant("2026-10-08T10:00:00.5Z"));
    assert_eq!(instant("not a time"), None);
}

//! Issue 33: nothing recorded is lost when a run is interrupted. A backfill killed with
//! SIGKILL at random moments ten times, then held off the index by another process's
//! write lock past the wait, then run once more, leaves an index that answers exactly
//! as one uninterrupted run's does — sessions, usage, the ledger and the scope logs —
//! and whose usage equals the independent count ([`common::reliability::count`]). Stops the same:
//! killed at random moments and run under a held lock, then once more.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::reliability::count::*;
use common::reliability::*;
use transcope_sqlite::rusqlite;

/// What the index answers (each query's `--json` output) and the scope logs, torn
/// rows a kill left taken out.
#[derive(Debug, PartialEq, Eq)]
struct Answers {
    sessions: String,
    usage: String,
    ledger: String,
    logs: BTreeMap<String, Vec<u8>>,
}

fn query(sb: &Sandbox, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--json", "--no-sync"]);
    stdout_of(sb, &all)
}

fn answers(sb: &Sandbox) -> Answers {
    let dir = sb.home.join("brain/session-scopes");
    let logs = tree(&dir)
        .into_iter()
        .filter(|f| f.ends_with(".jsonl"))
        .map(|f| {
            let b = std::fs::read(dir.join(&f)).unwrap();
            (f, without_torn_rows(&b))
        })
        .collect();
    // The first query syncs, as a user's does: the index mirrors every scope log
    // (rows a read found already written, by a read killed before its commit, come
    // from the log itself), then the rest read what it holds.
    Answers {
        sessions: stdout_of(sb, &["sessions", "--json"]),
        usage: query(sb, &["usage", "--by", "session", "--by", "model"]),
        // In the order each marker was first recorded, which a kill may change: the
        // same rows are what must hold.
        ledger: {
            let l = query(sb, &["ledger"]);
            let mut lines: Vec<&str> = l.lines().collect();
            lines.sort_unstable();
            lines.join("\n")
        },
        logs,
    }
}

/// `bytes` without the lines that do not parse (a row a kill tore).
fn without_torn_rows(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if serde_json::from_slice::<serde_json::Value>(line).is_ok() {
            out.extend_from_slice(line);
        }
    }
    out
}

/// Differences between two answers, named, for a readable failure.
fn differences(got: &Answers, want: &Answers) -> Vec<String> {
    let mut d = Vec::new();
    for (name, g, w) in [
        ("sessions", &got.sessions, &want.sessions),
        ("usage", &got.usage, &want.usage),
        ("ledger", &got.ledger, &want.ledger),
    ] {
        if g != w {
            let (gl, wl): (Vec<_>, Vec<_>) = (g.lines().collect(), w.lines().collect());
            let missing: Vec<_> = wl.iter().filter(|l| !gl.contains(l)).take(3).collect();
            let extra: Vec<_> = gl.iter().filter(|l| !wl.contains(l)).take(3).collect();
            d.push(format!(
                "{name}: {} lines, want {}; missing {missing:?}; extra {extra:?}",
                gl.len(),
                wl.len()
            ));
        }
    }
    if got.logs != want.logs {
        let differing: Vec<_> = want
            .logs
            .iter()
            .filter(|(f, b)| got.logs.get(*f) != Some(b))
            .map(|(f, _)| f)
            .take(5)
            .collect();
        d.push(format!("scope logs differ: {differing:?}"));
    }
    d
}

/// Hold the index's write lock (an open `BEGIN IMMEDIATE`) while `f` runs (the index
/// made first by a query, as a user's would be).
fn with_index_locked<T>(sb: &Sandbox, f: impl FnOnce() -> T) -> T {
    query(sb, &["sessions"]);
    let home = &sb.home;
    let conn = rusqlite::Connection::open(home.join("transcope/index.sqlite")).unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = f();
    conn.execute_batch("ROLLBACK").unwrap();
    out
}

#[test]
fn a_backfill_killed_ten_times_and_locked_out_then_run_again_equals_one_uninterrupted_run() {
    let corpus = generated_corpus(33, 24_000_000);
    let mut roots = usage_fixture_roots();
    roots.extend(["claude/projects", "codex/sessions"].map(|d| corpus.path().join(d)));
    let args = backfill_args(&roots);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let clean = Sandbox::new();
    let took = run_timed(&clean, &args);
    let want = answers(&clean);
    assert!(
        want.usage.lines().count() > 40 && want.ledger.lines().count() > 5,
        "{} usage groups, {} markers",
        want.usage.lines().count(),
        want.ledger.lines().count(),
    );

    // The uninterrupted run's usage is the independent count's, per day and per root
    // session: what the interrupted one is held to is itself right.
    let (per_day, per_root) = expected(&roots);
    assert_eq!(usage_by(&clean, "day", "day"), per_day);
    assert_eq!(usage_by(&clean, "root-session", "root_session"), per_root);

    let sb = Sandbox::new();
    let mut rng = Rng::from_env(0x5eed_0033);
    // Anywhere in a run but its first moments (the process starting up, before it has
    // read anything): every kill then finds reads in flight.
    let window = took.as_micros() as u64;
    let mut killed = 0;
    for _ in 0..10 {
        if kill_after(
            sb.cmd(&args),
            b"",
            Duration::from_micros(window / 20 + rng.below(window)),
        )
        .is_none()
        {
            killed += 1;
        }
    }
    // Another process holds the index's write lock past the wait: the run records
    // nothing, says so, and moves no cursor.
    let locked = with_index_locked(&sb, || run(sb.cmd(&args), b""));
    assert_ne!(locked.status.code(), Some(0), "a locked-out run reports it");
    assert!(
        text(&locked.stderr).contains("index.sqlite"),
        "{}",
        text(&locked.stderr)
    );
    let out = run(sb.cmd(&args), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got = answers(&sb);
    let d = differences(&got, &want);
    assert!(
        d.is_empty(),
        "{killed} of 10 runs killed, then a locked-out run, then one more:\n{}",
        d.join("\n")
    );
    assert_eq!(usage_by(&sb, "day", "day"), per_day);
    assert_eq!(usage_by(&sb, "root-session", "root_session"), per_root);
    eprintln!(
        "uninterrupted run {took:?}; {killed} of 10 runs killed; {} usage groups, {} markers",
        want.usage.lines().count(),
        want.ledger.lines().count()
    );
}

/// A Claude Code transcript: `n` requests, a folder change every fifth line and a
/// marker every fiftieth.
fn busy_transcript(n: u64) -> String {
    let mut t = String::new();
    for i in 0..n {
        let cwd = ["/w/a", "/w/b", "/w/c"][((i / 5) % 3) as usize];
        let line = if i % 50 == 49 {
            claude_marker_line(i, cwd, &format!("lesson {i}"))
        } else if i % 2 == 0 {
            spend_line(i, cwd, "main", &format!("msg_{i:06}"), [10 + i, 20, 3])
        } else {
            claude_line(i, cwd, "main")
        };
        t.push_str(&line);
        t.push('\n');
    }
    t
}

/// Stops until one reads to the end (a Stop reads for at most half its deadline).
fn stop_until_done(sb: &Sandbox, session: &str, t: &Path) {
    for _ in 0..50 {
        let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload(session, t));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["read_cut"] == false {
            return;
        }
    }
    panic!("50 Stops did not read {} to its end", t.display());
}

#[test]
fn stops_killed_and_locked_out_then_run_again_equal_one_uninterrupted_stop() {
    const SESSION: &str = "33333333-0000-4000-8000-000000000033";
    // One transcript both homes read (the session row names its path).
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t.jsonl");
    std::fs::write(&t, busy_transcript(4_000)).unwrap();
    let clean = Sandbox::new();
    let started = Instant::now();
    stop_until_done(&clean, SESSION, &t);
    let took = started.elapsed();
    let want = answers(&clean);
    assert!(want.usage.contains("\"messages\":2000"), "{}", want.usage);
    assert_eq!(want.ledger.lines().count(), 80);

    let sb = Sandbox::new();
    let mut rng = Rng::from_env(0x5eed_3333);
    let window = took.as_micros() as u64 + 20_000;
    for _ in 0..10 {
        kill_after(
            sb.cmd(&["hook", "stop"]),
            &payload(SESSION, &t),
            Duration::from_micros(rng.below(window)),
        );
    }
    // A Stop that cannot get the index's write lock still exits 0, says why on
    // stderr, and moves no cursor.
    let locked = with_index_locked(&sb, || {
        run(sb.cmd(&["hook", "stop"]), &payload(SESSION, &t))
    });
    assert_eq!(locked.status.code(), Some(0));
    stop_until_done(&sb, SESSION, &t);
    let got = answers(&sb);
    let d = differences(&got, &want);
    assert!(d.is_empty(), "{}", d.join("\n"));
}

//! Issue 35: a Stop pushes its own rows. With `TRANSCOPE_FLEET_URL` set, a real
//! `transcope hook stop` sends the session it recorded (its row, its scope rows, its
//! marker and requests) to the fleet; with a fleet that cannot be reached (a closed
//! port) or never answers (a server that accepts and says nothing), the Stop still
//! exits 0 within its bound (2 s for the push), says one line about the push on
//! stderr beside its summary, has done its local work, and leaves the rows to the
//! next push. A real PostgreSQL (`TRANSCOPE_TEST_PG`; under CI the tests fail
//! without it).

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::reliability::*;
use serde_json::Value;
use transcope_testkit::pg;

const SESSION: &str = "35353535-0000-4000-8000-000000000035";

/// The name the Stop's machine goes by (`TRANSCOPE_MACHINE`).
const MACHINE: &str = "laptop";

/// A generous bound on a whole Stop whose push fails or times out (the push's own
/// bound is 2 s; the rest is starting a debug binary on a shared machine).
const BOUND: Duration = Duration::from_secs(6);

/// Lines of a Claude Code session from second `from` on: a request in one folder,
/// one in another (a scope row each), a marker, a third request.
fn session_lines(from: u64) -> String {
    let id = |n: u64| format!("msg_{:04}", from + n);
    [
        claude_line(from, "/w/a", "main"),
        spend_line(from + 1, "/w/a", "main", &id(1), [10, 20, 3]),
        spend_line(from + 2, "/w/b", "main", &id(2), [11, 21, 4]),
        claude_marker_line(from + 3, "/w/b", &format!("lesson {from}")),
        spend_line(from + 4, "/w/a", "main", &id(4), [12, 22, 5]),
    ]
    .map(|l| l + "\n")
    .concat()
}

/// A transcript of [`session_lines`] in `sb`.
fn transcript(sb: &Sandbox) -> PathBuf {
    let t = sb.root.join("t.jsonl");
    std::fs::write(&t, session_lines(0)).unwrap();
    t
}

/// A real Stop of [`SESSION`] on `t` with the fleet at `url`: its output and wall
/// time.
fn stop(sb: &Sandbox, url: &str, t: &Path) -> (Output, Duration) {
    let mut c = sb.cmd(&["hook", "stop"]);
    c.env("TRANSCOPE_FLEET_URL", url)
        .env("TRANSCOPE_MACHINE", MACHINE);
    let started = Instant::now();
    let out = run(c, &payload(SESSION, t));
    (out, started.elapsed())
}

/// The Stop's stderr lines without their `transcope: ` prefix: the summary (JSON)
/// and the others.
fn said(out: &Output) -> (Value, Vec<String>) {
    let mut summary = None;
    let mut other = Vec::new();
    for l in text(&out.stderr).lines() {
        let l = l.strip_prefix("transcope: ").unwrap_or(l);
        match serde_json::from_str::<Value>(l) {
            Ok(v) if summary.is_none() && v.is_object() => summary = Some(v),
            _ => other.push(l.to_owned()),
        }
    }
    let summary = summary.unwrap_or_else(|| panic!("no summary: {}", text(&out.stderr)));
    (summary, other)
}

/// The fleet at `url` answers `sessions`, `ledger` and `usage --by session` as the
/// index of `sb`'s home does, every row naming [`MACHINE`].
fn fleet_is_the_index(sb: &Sandbox, url: &str) {
    let queries: [&[&str]; 3] = [&["sessions"], &["ledger"], &["usage", "--by", "session"]];
    for q in queries {
        let ask = |source: &[&str]| {
            let mut args = q.to_vec();
            args.push("--json");
            args.extend(source);
            fleet::json_lines(&sb.home, &sb.user, &args)
        };
        let local = ask(&["--no-sync"]);
        let fleet: Vec<Value> = ask(&["--fleet", url])
            .into_iter()
            .map(|row| {
                let (row, machine) = fleet::without_machine(row);
                if q[0] != "usage" {
                    assert_eq!(machine.as_deref(), Some(MACHINE), "{q:?} {row}");
                }
                row
            })
            .collect();
        assert!(!local.is_empty(), "{q:?}: the index holds nothing");
        assert_eq!(fleet, local, "{q:?}");
    }
}

/// The fleet's scope rows of [`SESSION`].
fn fleet_rows(url: &str) -> usize {
    let n = fleet::psql(
        url,
        &format!("SELECT count(*) FROM transitions WHERE session = '{SESSION}'"),
    );
    n[0][0].parse().unwrap()
}

/// [`SESSION`]'s scope-log rows.
fn log_rows(sb: &Sandbox) -> usize {
    check_log(&std::fs::read(sb.log(SESSION)).unwrap()).len()
}

#[test]
fn a_stop_pushes_its_own_rows_to_the_fleet() {
    let Some(db) = pg::database("stop_pushes") else {
        return;
    };
    let sb = Sandbox::new();
    let t = transcript(&sb);
    let (out, took) = stop(&sb, db.url(), &t);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(took < BOUND, "the Stop took {took:?}");
    let (summary, other) = said(&out);
    assert!(other.is_empty(), "only the summary: {other:?}");
    let pushed = &summary["fleet"];
    assert_eq!(pushed["machine"], MACHINE, "{summary}");
    assert_eq!(pushed["whole"], true, "{summary}");
    assert_eq!(fleet::sent(pushed)[2..], [1, 3], "{summary}");
    // Three scope rows (/w/a, /w/b, /w/a), all in the fleet.
    assert_eq!(log_rows(&sb), 3);
    assert_eq!(fleet_rows(db.url()), 3);
    fleet_is_the_index(&sb, db.url());

    // The next Stop sends what it added.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&t)
        .and_then(|mut f| std::io::Write::write_all(&mut f, session_lines(100).as_bytes()))
        .unwrap();
    let (out, again) = stop(&sb, db.url(), &t);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (summary, _) = said(&out);
    assert_eq!(summary["fleet"]["whole"], false, "{summary}");
    assert_eq!(fleet::sent(&summary["fleet"])[2..], [1, 3], "{summary}");
    assert_eq!(log_rows(&sb), 5);
    assert_eq!(fleet_rows(db.url()), 5);
    fleet_is_the_index(&sb, db.url());
    eprintln!("Stops with their pushes: {took:?}, {again:?}");
}

/// A fleet URL on 127.0.0.1 at `port`.
fn url_at(port: u16) -> String {
    format!("host=127.0.0.1 port={port} user=postgres dbname=fleet")
}

/// A Stop whose fleet is `url` (which fails or never answers): exit 0 within
/// [`BOUND`], one line about the push beside the summary, its scope log written,
/// and the rows sent by a later push to a real fleet.
fn stop_without_its_fleet(what: &str, url: &str) {
    let sb = Sandbox::new();
    let t = transcript(&sb);
    let (out, took) = stop(&sb, url, &t);
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
    assert!(took < BOUND, "{what}: the Stop took {took:?}");
    let (summary, other) = said(&out);
    assert_eq!(other.len(), 1, "{what}: one line about the push: {other:?}");
    let line = &other[0];
    assert!(
        line.starts_with("fleet push: ") && line.ends_with("; the rows wait for the next push"),
        "{what}: {line}"
    );
    assert!(summary["fleet"]["error"].is_string(), "{what}: {summary}");
    assert_eq!(summary["error"], Value::Null, "{what}: {summary}");
    assert_eq!(log_rows(&sb), 3, "{what}");

    let db = pg::database("stop_later").expect("a server: the caller has one");
    let pushed = fleet::push(&sb.home, &sb.user, db.url(), MACHINE);
    assert_eq!(pushed["whole"], true, "{what}: {pushed}");
    assert_eq!(fleet::sent(&pushed)[2..], [1, 3], "{what}: {pushed}");
    assert_eq!(fleet_rows(db.url()), 3, "{what}");
    fleet_is_the_index(&sb, db.url());
    eprintln!("{what}: the Stop took {took:?}: {line}");
}

#[test]
fn a_stop_whose_fleet_is_unreachable_exits_0_and_leaves_the_rows_for_the_next_push() {
    if pg::admin_url().is_none() {
        return;
    }
    // A port just closed: nothing listens there.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    stop_without_its_fleet("a closed port", &url_at(port));
}

#[test]
fn a_stop_whose_fleet_never_answers_exits_0_within_the_bound_and_leaves_the_rows() {
    if pg::admin_url().is_none() {
        return;
    }
    // A server that takes every connection and never says a word.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut held = Vec::new();
            while !done.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((c, _)) => held.push(c),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            assert!(!held.is_empty(), "the Stop never connected");
        });
        let _done = Done(&done);
        stop_without_its_fleet("a silent server", &url_at(port));
    });
}

/// Sets its flag when dropped: the server's thread ends even when the test fails.
struct Done<'a>(&'a AtomicBool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

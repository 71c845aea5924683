//! Issue 33, item 6, against the real binary: a path or value a user named, or text
//! read from the archive, is shown to a person, never obeyed (no ESC or bidirectional
//! control reaches stderr, a table or the report's page; `--json` keeps the exact
//! data); an invalid time is echoed once and cut; a FIFO, socket or device named to
//! `backfill` is said to be one, without blocking and without losing the rest.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use common::reliability::*;
use serde_json::Value;

const ESC: char = '\u{1b}';
const RLO: char = '\u{202e}';

/// No raw ESC, CSI or bidirectional control in `s`.
fn nothing_raw(s: &str, what: &str) {
    let raw: Vec<char> = s
        .chars()
        .filter(|&c| {
            c.is_control() && c != '\n'
                || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?} in {s:?}");
}

/// Run `c`, failing the test (not hanging it) when it has not ended after `limit`.
fn run_bounded(c: Command, limit: Duration) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(c, b""));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still running after {limit:?}: it blocked"))
}

/// Item 1: a path named on the command line is shown escaped in the error line, by
/// every command that names it: `backfill` (a bad input of the batch), `markers` and
/// `report` (a runtime error), and in `doctor`'s report.
#[test]
fn a_path_with_an_escape_sequence_is_shown_escaped_on_stderr() {
    let sb = Sandbox::new();
    let hostile = format!("t{ESC}[31m{RLO}gnp.jsonl");
    let missing = sb.user.join(&hostile);
    let folder = sb.user.join(format!("d{ESC}]0;title\u{7}{RLO}"));
    std::fs::create_dir(&folder).unwrap();
    let fifo = folder.join(&hostile);
    mkfifo(&fifo);
    let runs: Vec<(Vec<String>, i32)> = vec![
        (
            vec![
                "backfill".into(),
                missing.display().to_string(),
                fifo.display().to_string(),
            ],
            1,
        ),
        (vec!["markers".into(), missing.display().to_string()], 1),
        (
            vec![
                "report".into(),
                "--no-sync".into(),
                "--html".into(),
                folder.join("gone").join("r.html").display().to_string(),
            ],
            1,
        ),
    ];
    for (args, code) in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_bounded(sb.cmd(&args), Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        nothing_raw(&err, args[0]);
        assert!(
            err.contains(r"t\u{1b}[31m\u{202e}gnp.jsonl")
                || err.contains(r"d\u{1b}]0;title\u{7}\u{202e}"),
            "{}: no escaped path in {err}",
            args[0]
        );
        // Ordinary text stays readable.
        assert!(err.starts_with("transcope: "), "{err}");
    }
    // `doctor` names the home (a flag) in its lines: escaped too.
    let home = sb.user.join(format!("h{ESC}[31m{RLO}"));
    let out = run(cmd_in(&home, &sb.user, &["doctor"]), b"");
    let said = text(&out.stdout) + &text(&out.stderr);
    nothing_raw(&said, "doctor");
    assert!(said.contains(r"h\u{1b}[31m\u{202e}"), "{said}");
}

/// Item 2: a U+202E (and an ESC) in a project id and in a marker's content reach no
/// table (`sessions`, `ledger`, `timeline`) and no text of the report's page, where
/// they are shown as `\u{202e}`; `--json` keeps them exactly.
#[test]
fn bidi_controls_reach_no_table_and_no_report_text() {
    let sb = Sandbox::new();
    let project = format!("github.com/acme/{RLO}gpj.exe");
    let out = run(
        sb.cmd(&[
            "scope",
            "record",
            "--session",
            "s1",
            "--at",
            "2026-10-08T09:00:00Z",
            "--project-id",
            &project,
            "--cwd",
            "/w/a",
        ]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let content = format!("use {RLO}fdp.exe{ESC}[2J now");
    let t = sb.user.join("s1.jsonl");
    std::fs::write(
        &t,
        [
            claude_line(0, "/w/a", "main"),
            claude_marker_line(30, "/w/a", &content),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let out = run(sb.cmd(&["backfill", t.to_str().unwrap()]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let table = |args: &[&str]| stdout_of(&sb, args);
    let sessions = table(&["sessions"]);
    nothing_raw(&sessions, "sessions");
    assert!(sessions.contains(r"\u{202e}gpj.exe"), "{sessions}");
    let ledger = table(&["ledger", "--no-sync"]);
    nothing_raw(&ledger, "ledger");
    assert!(ledger.contains(r"\u{202e}fdp.exe\u{1b}[2J"), "{ledger}");
    let timeline = table(&["timeline", "--no-sync", "--session", "s1"]);
    nothing_raw(&timeline, "timeline");

    // `--json` is machine-readable: the exact data.
    let json: Vec<Value> = table(&["ledger", "--no-sync", "--json"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(json.len(), 1, "{json:?}");
    assert_eq!(json[0]["content"], content.as_str());
    let json = table(&["sessions", "--no-sync", "--json"]);
    assert!(json.contains(RLO), "{json}");

    let html = sb.user.join("r.html");
    let out = run(
        sb.cmd(&["report", "--no-sync", "--html", html.to_str().unwrap()]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    nothing_raw(&page.replace(['\t', '\r'], " "), "report");
    // The JSON data block spells the escape with its backslash doubled.
    assert!(
        page.contains(r"\\u{202e}gpj.exe"),
        "project id not shown escaped"
    );
    assert!(
        page.contains(r"\\u{202e}fdp.exe\\u{1b}[2J"),
        "content not shown escaped"
    );
}

/// Item 3: a 100 KB invalid `--since` (or `--until`) is echoed once, cut, with its
/// length: the error stays under 1 KB and is a usage error.
#[test]
fn an_invalid_time_is_echoed_once_and_cut() {
    let sb = Sandbox::new();
    let huge = format!("{ESC}[31m{}", "9".repeat(100 * 1024));
    let html = sb.user.join("r.html");
    let html = html.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &["sessions", "--since"],
        &["sessions", "--until"],
        &["ledger", "--since"],
        &["usage", "--until"],
        &["report", "--html", html, "--since"],
    ];
    for args in cases {
        let mut args = args.to_vec();
        args.push(&huge);
        let out = run(sb.cmd(&args), b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.len() < 1024, "{} bytes: {err}", err.len());
        nothing_raw(&err, args[0]);
        assert_eq!(err.matches("[31m9").count(), 1, "{err}");
        assert!(err.contains(&format!("({} bytes)", huge.len())), "{err}");
        assert!(err.contains("not a time"), "{err}");
    }
    // Any other echoed argument is bounded the same way: clap's "unexpected argument"
    // and its tip (`backfill` takes paths, so clap suggests `-- <it>`) repeat it.
    let bogus = format!("--x{}{ESC}", "y".repeat(100 * 1024));
    let out = run(sb.cmd(&["backfill", &bogus]), b"");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.len() < 1024, "{} bytes: {err}", err.len());
    nothing_raw(&err, "backfill");
    assert!(err.contains("tip:"), "{err}");
}

/// Item 4: a FIFO, a socket and a character device named to `backfill` are each said
/// to be what they are (not "Not a directory"), nothing blocks on the FIFO (no writer
/// ever comes), the batch exits 1 as for any bad input, and the transcript named with
/// them is read.
#[test]
fn backfill_names_a_fifo_socket_or_device_and_reads_the_rest() {
    let sb = Sandbox::new();
    let fifo = sb.user.join("FIFO.jsonl");
    mkfifo(&fifo);
    let socket = sb.user.join("sock.jsonl");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let good = sb.user.join("good.jsonl");
    std::fs::write(
        &good,
        [
            claude_line(0, "/w/a", "main"),
            claude_line(5, "/w/b", "main"),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let args = backfill_args(&[fifo.clone(), socket.clone(), "/dev/null".into(), good]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_bounded(sb.cmd(&args), Duration::from_secs(60));
    assert_eq!(out.status.signal(), None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(!err.contains("Not a directory"), "{err}");
    for (p, kind) in [
        (fifo.as_path(), "a FIFO"),
        (socket.as_path(), "a socket"),
        (Path::new("/dev/null"), "a character device"),
    ] {
        let line = format!("{}: not a regular file or folder: {kind}", p.display());
        assert!(err.contains(&line), "wanted {line:?} in {err}");
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"], 1, "{v}");
    assert_eq!(v["errors"], 3, "{v}");
    assert_eq!(cwds(&sb, "good"), ["/w/a", "/w/b"]);
}

//! Issue 33, item 6, against the real binary: a path or value a user named is shown
//! to a person, never obeyed (no ESC or bidirectional control reaches stderr); an
//! invalid time is echoed once and cut.

mod common;

use std::process::{Command, Output};
use std::time::Duration;

use common::*;

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
/// `report` (a runtime error).
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
    // Any other echoed argument is bounded the same way (clap's "unexpected argument").
    let bogus = format!("--x{}", "y".repeat(100 * 1024));
    let out = run(sb.cmd(&["sessions", &bogus]), b"");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.len() < 1024, "{} bytes: {err}", err.len());
}

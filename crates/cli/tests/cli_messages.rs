//! A command that had nothing to do, or refused an argument, says so on stderr, with
//! the exit status of the contract; an error is said once (issue 16).

use std::process::{Command, Output};

mod common;

use common::{run, text};

/// `out` exited 0 and said `needle` on stderr.
fn says(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains(needle), "wanted {needle:?} in: {err}");
}

#[test]
fn scope_record_of_an_invalid_session_says_so_and_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "../evil",
            "--at",
            "2026-10-08T10:00:00Z",
            "--cwd",
            "/w",
        ],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("not a session id: \"../evil\"") && err.contains("nothing written"),
        "{err}"
    );
    assert!(!home.path().join("brain").exists());
}

#[test]
fn scope_record_of_the_scope_in_force_says_nothing_was_written() {
    let home = tempfile::tempdir().unwrap();
    let args = [
        "scope",
        "record",
        "--session",
        "s1",
        "--at",
        "2026-10-08T10:00:00Z",
        "--cwd",
        "/w",
    ];
    let out = run(home.path(), &args, "", &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!out.stdout.is_empty());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let out = run(home.path(), &args, "", &[]);
    assert!(out.stdout.is_empty());
    says(&out, "nothing written");
}

#[test]
fn scope_log_and_at_of_a_session_without_a_log_say_so() {
    let home = tempfile::tempdir().unwrap();
    let out = run(
        home.path(),
        &["scope", "log", "--session", "nonexistent"],
        "",
        &[],
    );
    assert!(out.stdout.is_empty());
    says(&out, "no scope log for session nonexistent");

    let out = run(
        home.path(),
        &[
            "scope",
            "at",
            "--session",
            "nonexistent",
            "--at",
            "2026-10-08T10:00:00Z",
        ],
        "",
        &[],
    );
    assert_eq!(text(&out.stdout), "null\n");
    says(&out, "no scope log");
}

#[test]
fn scope_at_a_time_that_is_not_one_prints_null_and_says_why() {
    let home = tempfile::tempdir().unwrap();
    run(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "s1",
            "--at",
            "2026-10-08T10:00:00Z",
            "--cwd",
            "/w",
        ],
        "",
        &[],
    );
    let out = run(
        home.path(),
        &["scope", "at", "--session", "s1", "--at", "yesterday"],
        "",
        &[],
    );
    assert_eq!(text(&out.stdout), "null\n");
    says(&out, "not a time: \"yesterday\"");
}

#[test]
fn backfill_with_no_archive_says_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_transcope"))
        .arg("--home")
        .arg(home.path())
        .arg("backfill")
        .env("HOME", user.path())
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("GEMINI_CLI_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("no archive here"), "{err}");
    assert!(
        err.contains(&user.path().join(".claude/projects").display().to_string()),
        "{err}"
    );

    let empty = user.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = run(home.path(), &["backfill", empty.to_str().unwrap()], "", &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("no transcript found"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_missing_transcript_is_said_once() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["markers", "/nonexistent/t.jsonl"][..],
        &["observe", "--session", "s1", "/nonexistent/t.jsonl"][..],
    ] {
        let out = run(home.path(), args, "", &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = text(&out.stderr);
        assert_eq!(err.matches("/nonexistent/t.jsonl").count(), 1, "{err}");
        assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    }
}

#[test]
fn help_speaks_the_users_words() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["scope", "record", "--help"][..],
        &["scope", "at", "--help"][..],
        &["backfill", "--help"][..],
        &["observe", "--help"][..],
        &["hook", "--help"][..],
    ] {
        let help = text(&run(home.path(), args, "", &[]).stdout);
        for internal in [
            "record_scope",
            "11-field",
            "11 scope fields",
            "Stop stages",
            "reference's",
        ] {
            assert!(
                !help.contains(internal),
                "{args:?} says {internal:?}:\n{help}"
            );
        }
    }
    let jobs = text(&run(home.path(), &["backfill", "--help"], "", &[]).stdout);
    let line = jobs.lines().find(|l| l.contains("--jobs")).unwrap();
    assert_eq!(line.matches("[default:").count(), 1, "{line}");
    let markers = text(&run(home.path(), &["markers", "--help"], "", &[]).stdout);
    assert!(!markers.contains("--home"), "{markers}");
}

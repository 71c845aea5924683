//! Golden tests of the `scope` and `attribute` commands through the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn transcope(home: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_transcope"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("AGENTIHOOKS_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut i = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            i.write_all(s.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

/// `scope record` flags for fixture transition `i`.
fn record_args(fx: &serde_json::Value, i: usize, session: &str) -> Vec<String> {
    let t = &fx["transitions"][i];
    let mut args = vec![
        "scope".to_owned(),
        "record".into(),
        format!("--session={session}"),
        format!("--at={}", t["at"].as_str().unwrap()),
        "--grant".into(),
        "github.com/fixture/alpha,github.com/fixture/beta".into(),
    ];
    for (k, v) in t["scope"].as_object().unwrap() {
        args.push(format!("--{}={}", k.replace('_', "-"), v.as_str().unwrap()));
    }
    args
}

fn fixture() -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(testdata().join("fixtures/session-scope.json")).unwrap(),
    )
    .unwrap()
}

#[test]
fn scope_record_reproduces_the_golden_rows_byte_for_byte() {
    let fx = fixture();
    let home = tempfile::tempdir().unwrap();
    let golden = text(&std::fs::read(testdata().join("golden/first.scope.jsonl")).unwrap());
    let mut printed = String::new();
    for i in 0..4 {
        let args = record_args(&fx, i, "first");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = transcope(home.path(), &args, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        printed.push_str(&text(&out.stdout));
    }
    assert_eq!(printed, golden);
    let log = home.path().join("brain/session-scopes/first.jsonl");
    assert_eq!(text(&std::fs::read(log).unwrap()), golden);
    // A replay prints nothing and exits 0.
    let args = record_args(&fx, 0, "first");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = transcope(home.path(), &args, None);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
}

#[test]
fn refusals_exit_3_with_the_fixed_message() {
    let home = tempfile::tempdir().unwrap();
    let ok = transcope(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "s",
            "--at",
            "2026-10-08T10:00:00Z",
            "--cwd",
            "/a",
        ],
        None,
    );
    assert_eq!(ok.status.code(), Some(0));
    let cases: [(&[&str], &str); 3] = [
        (
            &["--at", "2026-10-08T09:00:00Z", "--cwd", "/b"],
            "refused: transition is older than the latest accepted one\n",
        ),
        (
            &["--at", "not a time", "--cwd", "/b"],
            "refused: transition time is not an ISO 8601 timestamp\n",
        ),
        (
            &[
                "--at",
                "2026-10-08T11:00:00Z",
                "--project-id",
                "gamma",
                "--grant",
                "",
            ],
            "refused: project is outside the session grant\n",
        ),
    ];
    for (extra, msg) in cases {
        let mut args = vec!["scope", "record", "--session", "s"];
        args.extend_from_slice(extra);
        let out = transcope(home.path(), &args, None);
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(text(&out.stderr), msg);
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn invalid_session_ids_write_nothing_and_exit_0() {
    let home = tempfile::tempdir().unwrap();
    for sid in ["--session=-lead", "--session=../escape", "--session="] {
        let out = transcope(
            home.path(),
            &[
                "scope",
                "record",
                sid,
                "--at",
                "2026-10-08T10:00:00Z",
                "--cwd",
                "/a",
            ],
            None,
        );
        assert_eq!(out.status.code(), Some(0), "{sid}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
    // Also the space-separated form of a hyphen-leading value.
    let out = transcope(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "-lead",
            "--at",
            "2026-10-08T10:00:00Z",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!home.path().join("brain").exists());
}

/// Issue 33: the reference checks the grant, then the time, then the session id
/// (scope-log.md §2.1 steps 2–4), so an invalid id with a refused grant or time is a
/// refusal (exit 3), and an invalid id with nothing refused before it writes nothing
/// (exit 0) even where a valid id's log would refuse the row (older, lower revision).
#[test]
fn scope_record_checks_the_grant_then_the_time_then_the_session_id() {
    let home = tempfile::tempdir().unwrap();
    let first = transcope(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "s",
            "--at",
            "2026-10-08T10:00:00Z",
            "--task",
            "t",
            "--task-revision",
            "5",
        ],
        None,
    );
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let log = home.path().join("brain/session-scopes/s.jsonl");
    let before = std::fs::read(&log).unwrap();
    const GRANT: &str = "refused: project is outside the session grant\n";
    const TIME: &str = "refused: transition time is not an ISO 8601 timestamp\n";
    const OLDER: &str = "refused: transition is older than the latest accepted one\n";
    const REVISION: &str = "refused: task revision is older than the latest accepted one\n";
    let long = "a".repeat(129);
    let invalid = ["../escape", "-lead", "", long.as_str(), "é", "a\u{202e}b"];
    let outside: &[&str] = &["--grant", "", "--project-id", "gamma"];
    let inside: &[&str] = &["--grant", "alpha", "--project-id", "alpha"];
    let bad_time: &[&str] = &["--at", "2026-10-08T25:00:00Z"];
    let old_time: &[&str] = &["--at", "2026-10-08T09:00:00Z"];
    let new_time: &[&str] = &["--at", "2026-10-08T11:00:00Z"];
    let low_revision: &[&str] = &["--task", "t", "--task-revision", "1"];
    // (session, flags, exit status, stderr: exactly, or what it starts with)
    let mut cases: Vec<(&str, Vec<&[&str]>, i32, &str)> = Vec::new();
    for id in invalid.iter().copied().chain(["s"]) {
        // A refused grant comes first: before a bad time and before the id.
        cases.push((id, vec![outside, bad_time], 3, GRANT));
        cases.push((id, vec![outside, new_time], 3, GRANT));
        // Then the time: before the id (the regression: exit 0 on main).
        cases.push((id, vec![bad_time], 3, TIME));
        cases.push((id, vec![inside, bad_time], 3, TIME));
        cases.push((id, vec![bad_time, low_revision], 3, TIME));
    }
    for id in invalid {
        // Nothing refused before the id: an invalid id writes nothing and exits 0,
        // whatever a log would have said.
        cases.push((id, vec![old_time], 0, "transcope: not a session id: "));
        cases.push((
            id,
            vec![inside, new_time, low_revision],
            0,
            "transcope: not a session id: ",
        ));
    }
    // A valid id goes on to the log's own rules.
    cases.push(("s", vec![old_time, &["--cwd", "/b"]], 3, OLDER));
    cases.push(("s", vec![new_time, low_revision], 3, REVISION));
    for (id, flags, code, said) in &cases {
        let session = format!("--session={id}");
        let mut args = vec!["scope", "record", session.as_str()];
        for f in flags {
            args.extend_from_slice(f);
        }
        let out = transcope(home.path(), &args, None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {err}");
        if *code == 3 {
            assert_eq!(err, *said, "{args:?}");
        } else {
            assert!(
                err.starts_with(said) && err.contains("nothing written"),
                "{args:?}: {err}"
            );
        }
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // Only the valid session's log exists, unchanged.
    assert_eq!(std::fs::read(&log).unwrap(), before);
    let mut logs: Vec<_> = std::fs::read_dir(home.path().join("brain/session-scopes"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    logs.sort();
    assert_eq!(logs, ["s.jsonl", "s.jsonl.lock"]);
}

#[test]
fn scope_json_values_are_normalised_like_python_str() {
    let home = tempfile::tempdir().unwrap();
    let out = transcope(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "n",
            "--at",
            "2026-10-08T10:00:00Z",
            "--scope",
            r#"{"task": 3, "lane": true, "cwd": null, "swarm": 0, "repo": "r", "extra": "x"}"#,
            "--repo",
            "flag-wins",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["task"], "3");
    assert_eq!(row["lane"], "True");
    assert_eq!(row["cwd"], "");
    assert_eq!(row["swarm"], "");
    assert_eq!(row["repo"], "flag-wins");
    assert!(row.get("extra").is_none());
    let bad = transcope(
        home.path(),
        &[
            "scope",
            "record",
            "--session",
            "n",
            "--at",
            "2026-10-08T10:00:00Z",
            "--scope",
            "[1]",
        ],
        None,
    );
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn scope_log_at_and_attribute_print_python_json() {
    let fx = fixture();
    let home = tempfile::tempdir().unwrap();
    for i in 0..4 {
        let args = record_args(&fx, i, "first");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        transcope(home.path(), &args, None);
    }
    let log = transcope(home.path(), &["scope", "log", "--session", "first"], None);
    assert_eq!(
        text(&log.stdout),
        text(&std::fs::read(testdata().join("golden/first.scope.jsonl")).unwrap())
    );
    let at = transcope(
        home.path(),
        &[
            "scope",
            "at",
            "--session",
            "first",
            "--at",
            "2026-10-08T10:05:00Z",
        ],
        None,
    );
    assert_eq!(
        text(&at.stdout),
        "{\"project_id\": \"github.com/fixture/alpha\", \"project\": \"alpha\", \"repo\": \"fixture/alpha\", \"worktree\": \"one\", \"cwd\": \"/work/alpha/one\", \"remote\": \"\", \"branch\": \"one\", \"swarm\": \"fixture\", \"task\": \"first\", \"task_revision\": \"1\", \"lane\": \"eng\"}\n"
    );
    let none = transcope(
        home.path(),
        &[
            "scope",
            "at",
            "--session",
            "first",
            "--at",
            "2026-10-08T09:00:00Z",
        ],
        None,
    );
    assert_eq!(text(&none.stdout), "null\n");
    let events = concat!(
        r#"{"at": "2026-10-08T10:05:00Z"}"#,
        "\n",
        r#"{"at": "2026-10-08T10:05:00Z", "attrs": {"project_id": "github.com/fixture/beta", "task": "second", "task_revision": 9, "worktree": "x"}}"#,
        "\n\n",
        r#"{"at": "2026-10-08T09:00:00Z", "attrs": null}"#,
        "\n",
        r#"{"at": 7, "attrs": {"share": "fleet", "project_id": "p"}}"#,
        "\n",
        r#"{"at": "2026-10-08T10:05:00Z", "attrs": {"project_id": "github.com/fixture/gamma"}}"#,
        "\n"
    );
    let out = transcope(
        home.path(),
        &[
            "attribute",
            "--session",
            "first",
            "--grant",
            "github.com/fixture/alpha,github.com/fixture/beta",
        ],
        Some(events),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        concat!(
            r#"{"attribution": "scoped", "project_id": "github.com/fixture/alpha", "project": "alpha", "repo": "fixture/alpha", "worktree": "one", "cwd": "/work/alpha/one", "branch": "one", "swarm": "fixture", "task": "first", "task_revision": "1", "lane": "eng"}"#,
            "\n",
            r#"{"attribution": "explicit", "worktree": "one", "cwd": "/work/alpha/one", "branch": "one", "swarm": "fixture", "task": "first", "task_revision": "1", "lane": "eng", "project_id": "github.com/fixture/beta"}"#,
            "\n",
            r#"{"attribution": "unknown"}"#,
            "\n",
            r#"{"attribution": "fleet"}"#,
            "\n",
            r#"{"attribution": "refused"}"#,
            "\n"
        )
    );
    // A bad event line is reported, the others still answered, exit 1.
    let out = transcope(
        home.path(),
        &["attribute", "--session", "first"],
        Some("not json\n{\"at\": \"2026-10-08T10:05:00Z\"}\n"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout).lines().count(), 1);
    assert!(text(&out.stderr).contains("line 1"));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let out = transcope(home.path(), &["scope", "record", "--at", "x"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = transcope(home.path(), &["no-such-command"], None);
    assert_eq!(out.status.code(), Some(2));
    for cmd in [
        &["--help"][..],
        &["scope", "--help"],
        &["scope", "record", "--help"],
        &["scope", "log", "--help"],
        &["scope", "at", "--help"],
        &["attribute", "--help"],
    ] {
        let out = transcope(home.path(), cmd, None);
        assert_eq!(out.status.code(), Some(0), "{cmd:?}");
        assert!(text(&out.stdout).contains("Usage"), "{cmd:?}");
    }
}

#[test]
fn home_defaults_to_agentihooks_home() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_transcope"))
        .args([
            "scope",
            "record",
            "--session",
            "e",
            "--at",
            "2026-10-08T10:00:00Z",
            "--cwd",
            "/x",
        ])
        .env("AGENTIHOOKS_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(home.path().join("brain/session-scopes/e.jsonl").exists());
}

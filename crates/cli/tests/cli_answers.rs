//! What a person reads back (issue 34), through the real binary over the sample
//! archive backfilled into a throw-away home: a query that finds nothing says why on
//! stderr (exit 0), `--project` takes a repository's short name, a table never cuts an
//! ID (the ID read from one works in the next command) and ends no line in a space,
//! and counts are worded as counts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;

use common::{testdata, text};

/// A throw-away HOME (no agent's folders: a query's sync finds no archive of the
/// user's) holding the agentihooks home `home`.
struct Sample {
    dir: tempfile::TempDir,
}

impl Sample {
    /// The sample archive backfilled.
    fn new() -> Sample {
        let s = Sample {
            dir: tempfile::tempdir().unwrap(),
        };
        let archive = testdata().join("sample-archive");
        s.ok(&["backfill", archive.to_str().unwrap()]);
        s
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_transcope"));
        cmd.arg("--home").arg(self.home()).args(args);
        common::clean_env(&mut cmd);
        cmd.env("HOME", self.dir.path()).env_remove("COLUMNS");
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        out
    }

    /// A scope-log row in `project_id` for a session of its own (the sample's folders
    /// are no repositories, so no project resolves in it).
    fn in_project(&self, session: &str, project_id: &str) {
        self.ok(&[
            "scope",
            "record",
            "--session",
            session,
            "--at",
            "2026-10-09T10:00:00Z",
            "--project-id",
            project_id,
            "--cwd",
            "/work/x",
            "--branch",
            "main",
        ]);
    }
}

/// `out` exited 0, printed no JSON line (or an empty table), and said `needle` on
/// stderr.
fn says(out: &Output, needle: &str) {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains(needle), "wanted {needle:?} in: {err}");
}

fn no_json_lines(out: &Output) {
    assert!(text(&out.stdout).trim().is_empty(), "{}", text(&out.stdout));
}

// --- empty answers say why -----------------------------------------------------

#[test]
fn timeline_of_no_such_session_says_so_with_the_nearest_keys() {
    let s = Sample::new();
    let out = s.ok(&["timeline", "--session", "nope"]);
    assert_eq!(text(&out.stdout), "0 events of nope\n");
    says(
        &out,
        "no such session: \"nope\" (the index knows 12 sessions",
    );

    let out = s.ok(&["timeline", "--session", "0f0e0d0c", "--json"]);
    no_json_lines(&out);
    says(
        &out,
        "no such session: \"0f0e0d0c\"; nearest: 0f0e0d0c-0000-4000-8000-000000000001",
    );

    // `explain` says it too.
    let out = s.ok(&[
        "explain",
        "--session",
        "nope",
        "--at",
        "2026-10-08T10:00:00Z",
    ]);
    says(&out, "no such session: \"nope\"");

    // A session the index knows answers without a word on stderr.
    let out = s.ok(&[
        "timeline",
        "--session",
        "0f0e0d0c-0000-4000-8000-000000000001",
    ]);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

#[test]
fn sessions_of_an_unknown_project_name_the_nearest_and_a_short_name_is_taken() {
    let s = Sample::new();
    s.in_project("s-alpha", "github.com/fixture/alpha");
    s.in_project("s-beta", "github.com/fixture/beta");

    // The short name of the one project that has it.
    let out = s.ok(&["sessions", "--project", "alpha", "--json"]);
    let keys: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["session"].to_string())
        .collect();
    assert_eq!(keys, ["\"s-alpha\""]);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));

    // A near miss: no project by that id, and the ones near it.
    let out = s.ok(&["sessions", "--project", "alpah"]);
    assert_eq!(text(&out.stdout), "0 sessions\n");
    says(
        &out,
        "no project by that id: \"alpah\"; nearest: github.com/fixture/alpha",
    );
    let out = s.ok(&["sessions", "--project", "nothing-like-it", "--json"]);
    no_json_lines(&out);
    says(
        &out,
        "no project by that id: \"nothing-like-it\" (the index knows 2 projects: github.com/fixture/alpha, github.com/fixture/beta)",
    );

    // Two projects of one short name: a usage error naming both.
    s.in_project("s-fork", "gitlab.com/fork/alpha");
    let out = s.run(&["sessions", "--project", "alpha"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--project \"alpha\": 2 projects have that name (github.com/fixture/alpha, gitlab.com/fork/alpha); give the whole id"),
        "{err}"
    );
    // The whole id still answers.
    let out = s.ok(&["sessions", "--project", "gitlab.com/fork/alpha", "--json"]);
    assert_eq!(text(&out.stdout).lines().count(), 1);
}

#[test]
fn sessions_of_an_unknown_branch_and_of_an_empty_window_say_why() {
    let s = Sample::new();
    let out = s.ok(&["sessions", "--no-sync", "--branch", "tow"]);
    says(&out, "no branch \"tow\" in the index; nearest: two");
    let out = s.ok(&["sessions", "--no-sync", "--since", "2030-01-01"]);
    says(
        &out,
        "nothing in the window (2030-01-01 00:00:00 to now); the index holds sessions from ",
    );
}

#[test]
fn usage_with_nothing_in_the_window_says_what_the_index_holds() {
    let s = Sample::new();
    let out = s.ok(&[
        "usage",
        "--no-sync",
        "--by",
        "branch",
        "--since",
        "2026-10-08",
    ]);
    // The prices line alone on stdout.
    assert!(
        text(&out.stdout).starts_with("prices: "),
        "{}",
        text(&out.stdout)
    );
    says(
        &out,
        "nothing in the window (2026-10-08 00:00:00 to now); the index holds usage from 2025-09-07 ",
    );
    let out = s.ok(&["usage", "--no-sync", "--json", "--since", "2026-10-08"]);
    no_json_lines(&out);
    says(&out, "nothing in the window (2026-10-08 00:00:00 to now)");

    // `--project` takes a short name here too, and an unknown one is said.
    let out = s.ok(&["usage", "--no-sync", "--project", "alpha", "--json"]);
    no_json_lines(&out);
    says(
        &out,
        "no project by that id: \"alpha\" (the index knows 0 projects)",
    );
}

#[test]
fn usage_of_an_empty_index_says_there_is_none_yet() {
    let dir = tempfile::tempdir().unwrap();
    let s = Sample { dir };
    let out = s.ok(&["usage", "--json"]);
    no_json_lines(&out);
    says(&out, "the index holds no usage yet");
}

#[test]
fn ledger_filters_that_match_nothing_say_why() {
    let s = Sample::new();
    let out = s.ok(&["ledger", "--no-sync", "--type", "lessn"]);
    assert_eq!(text(&out.stdout), "0 markers\n");
    says(
        &out,
        "no marker type \"lessn\" in the index; nearest: lesson",
    );
    let out = s.ok(&["ledger", "--no-sync", "--session", "nope", "--json"]);
    no_json_lines(&out);
    says(&out, "no such session: \"nope\"");
    let out = s.ok(&["ledger", "--no-sync", "--project", "beta"]);
    says(&out, "no project by that id: \"beta\"");
    let out = s.ok(&["ledger", "--no-sync", "--task", "first"]);
    says(&out, "no task \"first\" in the index");
    let out = s.ok(&["ledger", "--no-sync", "--until", "2020-01-01"]);
    says(
        &out,
        "nothing in the window (the start to 2020-01-01 00:00:00); the index holds markers from ",
    );
    // Both known, never together.
    let out = s.ok(&[
        "ledger",
        "--no-sync",
        "--type",
        "signal",
        "--session",
        "ef958aa1-0e93-49f0-bb71-150f63befcd1",
    ]);
    says(&out, "no markers match these filters together");
    s.ok(&["deliver", "--no-sync"]);
    let out = s.ok(&["ledger", "--no-sync", "--pending", "--json"]);
    no_json_lines(&out);
    says(&out, "no marker is pending");
}

// --- tables never cut an ID ----------------------------------------------------

/// Every line of a table: none ends in a space.
fn no_trailing_spaces(out: &Output, what: &str) {
    for l in text(&out.stdout).lines() {
        assert!(!l.ends_with(' '), "{what}: {l:?}");
    }
}

/// The first cell of each data row of a table (after the `====` line), `↳` and
/// padding taken away.
fn column(out: &Output, at: usize) -> Vec<String> {
    text(&out.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("===="))
        .skip(1)
        .filter(|l| l.starts_with(' '))
        .map(|l| {
            l.split("   ")
                .map(|c| c.trim().trim_start_matches("↳ "))
                .filter(|c| !c.is_empty())
                .nth(at)
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

#[test]
fn every_session_key_in_the_sessions_table_works_in_the_next_command() {
    let s = Sample::new();
    let out = s.ok(&["sessions", "--no-sync"]);
    no_trailing_spaces(&out, "sessions");
    let keys = column(&out, 0);
    assert_eq!(keys.len(), 12, "{}", text(&out.stdout));
    assert!(
        keys.contains(&"ef958aa1-0e93-49f0-bb71-150f63befcd1.a4ca7529859c158c2".to_owned()),
        "{keys:?}"
    );
    for k in &keys {
        assert!(!k.contains('…'), "cut: {k}");
        let out = s.ok(&["timeline", "--no-sync", "--session", k]);
        assert!(out.stderr.is_empty(), "{k}: {}", text(&out.stderr));
        no_trailing_spaces(&out, "timeline");
        assert!(text(&out.stdout).contains(&format!(" of {k}\n")));
        let out = s.ok(&[
            "explain",
            "--no-sync",
            "--session",
            k,
            "--at",
            "2030-01-01T00:00:00Z",
        ]);
        no_trailing_spaces(&out, "explain");
        assert!(
            text(&out.stdout).contains("row "),
            "{k}: {}",
            text(&out.stdout)
        );
    }
}

#[test]
fn the_ledger_tables_session_and_project_work_in_the_next_command() {
    let s = Sample::new();
    let out = s.ok(&["ledger", "--no-sync"]);
    no_trailing_spaces(&out, "ledger");
    let sessions = column(&out, 1);
    assert_eq!(sessions.len(), 6, "{}", text(&out.stdout));
    for k in &sessions {
        assert_eq!(k, "0f0e0d0c-0000-4000-8000-000000000001");
        let out = s.ok(&["ledger", "--no-sync", "--session", k, "--json"]);
        assert_eq!(text(&out.stdout).lines().count(), 6);
    }
    let out = s.ok(&["deliver", "--no-sync", "--dry-run"]);
    no_trailing_spaces(&out, "deliver --dry-run");
    assert!(text(&out.stdout).ends_with("6 markers would be delivered\n"));

    // A project id in force: whole in the sessions, ledger and usage tables, and
    // taken back by each.
    let long = "github.com/an-organisation-with-a-long-name/a-repository-with-a-long-name-too";
    s.in_project("s-long", long);
    let out = s.ok(&["sessions", "--project", long]);
    no_trailing_spaces(&out, "sessions --project");
    assert_eq!(column(&out, 0), ["s-long"]);
    assert!(text(&out.stdout).contains(long), "{}", text(&out.stdout));
    let out = s.ok(&["timeline", "--no-sync", "--session", "s-long"]);
    assert!(text(&out.stdout).contains(long), "{}", text(&out.stdout));
    let out = s.ok(&["usage", "--no-sync", "--by", "session"]);
    no_trailing_spaces(&out, "usage");
    for k in column(&out, 0).iter().filter(|k| *k != "total") {
        let out = s.ok(&["timeline", "--no-sync", "--session", k]);
        assert!(out.stderr.is_empty(), "{k}: {}", text(&out.stderr));
    }
}

// --- counts and words ------------------------------------------------------------

#[test]
fn one_of_a_thing_is_singular() {
    let s = Sample::new();
    let out = s.ok(&["sessions", "--no-sync", "--since", "2026-10-08"]);
    assert!(
        text(&out.stdout).ends_with("\n1 session\n"),
        "{}",
        text(&out.stdout)
    );
    let out = s.ok(&["ledger", "--no-sync", "--type", "signal"]);
    assert!(
        text(&out.stdout).ends_with("\n1 marker\n"),
        "{}",
        text(&out.stdout)
    );
    let out = s.ok(&[
        "timeline",
        "--no-sync",
        "--session",
        "1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b",
    ]);
    assert!(
        text(&out.stdout).ends_with("\n1 event of 1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_second_backfill_says_nothing_new_and_the_json_keys_say_what_they_count() {
    let s = Sample::new();
    let archive = testdata().join("sample-archive");
    let out = s.ok(&["backfill", archive.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert!(
        err.starts_with(
            "transcope: 12 files looked at, nothing new since the last run (6 markers pending), "
        ),
        "{err}"
    );
    let out = s.ok(&["backfill", "--json", archive.to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["markers_not_recorded"], 0, "{v}");
    assert_eq!(v["markers_pending"], 6, "{v}");
    assert!(v.get("markers_undelivered").is_none(), "{v}");
}

#[test]
fn deliver_names_the_outbox_and_the_report_names_usage_in_no_project() {
    let s = Sample::new();
    let outbox: &Path = &s.home().join("brain-outbox");
    let out = s.ok(&["deliver", "--no-sync"]);
    assert_eq!(
        text(&out.stdout),
        format!(
            "0 sent, 6 to the outbox ({}), 0 rejected, 0 failed; 0 pending\n",
            outbox.display()
        )
    );
    assert_eq!(std::fs::read_dir(outbox).unwrap().count(), 6);

    let page = s.dir.path().join("r.html");
    let out = s.ok(&["report", "--no-sync", "--html", page.to_str().unwrap()]);
    let said = text(&out.stdout);
    assert!(
        said.contains(": 12 sessions, 19 transitions, 6 markers, usage in 1 group: no project ("),
        "{said}"
    );
    // A report of a project the index does not know says why it is empty.
    let out = s.ok(&[
        "report",
        "--no-sync",
        "--html",
        page.to_str().unwrap(),
        "--project",
        "github.com/nobody/nothing",
    ]);
    assert!(text(&out.stdout).contains(": 0 sessions, 0 transitions, 0 markers, no usage ("));
    says(&out, "no project by that id: \"github.com/nobody/nothing\"");
}

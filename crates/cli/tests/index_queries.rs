//! Issue 14: what the index answers equals what the scope logs say, computed here
//! from the log files alone.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::reliability::*;
use serde_json::Value;

/// Every scope log under `home`: key → readable rows, in file order.
fn logs(home: &Path) -> BTreeMap<String, Vec<serde_json::Map<String, Value>>> {
    let dir = home.join("brain/session-scopes");
    tree(&dir)
        .into_iter()
        .filter_map(|f| {
            let key = f.strip_suffix(".jsonl")?.to_owned();
            Some((key, readable_rows(&std::fs::read(dir.join(&f)).unwrap())))
        })
        .collect()
}

fn sessions(sb: &Sandbox, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["sessions", "--json"];
    a.extend_from_slice(args);
    let out = run(sb.cmd(&a), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The project ids of `rows` in order of first appearance.
fn projects(rows: &[serde_json::Map<String, Value>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        let p = r.get("project_id").and_then(Value::as_str).unwrap_or("");
        if !p.is_empty() && !out.iter().any(|o| o == p) {
            out.push(p.to_owned());
        }
    }
    out
}

fn check_against_logs(sb: &Sandbox) {
    let logs = logs(&sb.home);
    assert!(logs.len() > 5);
    // Unfiltered: one session per log, its rows and projects.
    let all = sessions(sb, &[]);
    let by_key: BTreeMap<String, &Value> = all
        .iter()
        .map(|v| (v["session"].as_str().unwrap().to_owned(), v))
        .collect();
    assert_eq!(
        by_key.keys().cloned().collect::<BTreeSet<_>>(),
        logs.keys().cloned().collect()
    );
    for (k, rows) in &logs {
        let v = by_key[k];
        assert_eq!(v["transitions"], rows.len(), "{k}");
        assert_eq!(v["projects"], serde_json::json!(projects(rows)), "{k}");
        let parent = k.split_once('.').map(|(p, _)| p.to_owned());
        if v["agent"] == "claude" {
            assert_eq!(v["parent"], serde_json::json!(parent), "{k}");
        }
    }
    // By project: the sessions whose log has a row in that project (every row is in
    // force at its own time, within the session's life).
    let ids: BTreeSet<String> = logs.values().flat_map(|r| projects(r)).collect();
    assert!(!ids.is_empty());
    for id in &ids {
        let want: BTreeSet<String> = logs
            .iter()
            .filter(|(_, rows)| projects(rows).contains(id))
            .map(|(k, _)| k.clone())
            .collect();
        let got: BTreeSet<String> = sessions(sb, &["--project", id, "--no-sync"])
            .iter()
            .map(|v| v["session"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, want, "--project {id}");
    }
    let none = sessions(sb, &["--project", "github.com/no/such", "--no-sync"]);
    assert!(none.is_empty());
}

/// Rows with project ids, as another tool (agentihooks' hooks, `scope record`) writes
/// them: the index mirrors them at its next sync.
fn record_projects(sb: &Sandbox, keys: &[String]) {
    for (i, k) in keys.iter().enumerate() {
        let out = run(
            sb.cmd(&[
                "scope",
                "record",
                "--session",
                k,
                "--at",
                "2030-01-01T00:00:00Z",
                "--project-id",
                &format!("github.com/acme/p{}", i % 3),
                "--cwd",
                &format!("/w/p{}", i % 3),
            ]),
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
}

#[test]
fn sessions_over_the_sample_archive_equal_the_logs() {
    let sb = Sandbox::new();
    let paths = [
        testdata().join("sample-archive/claude/projects"),
        testdata().join("sample-archive/codex/sessions"),
    ];
    let mut args = vec!["backfill".to_owned()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let out = run(
        sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let keys: Vec<String> = logs(&sb.home).keys().take(5).cloned().collect();
    record_projects(&sb, &keys);
    check_against_logs(&sb);
}

#[test]
fn sessions_over_a_generated_archive_equal_the_logs() {
    let sb = Sandbox::new();
    let corpus = tempfile::tempdir().unwrap();
    transcope_corpus::generate(
        &transcope_corpus::CorpusSpec::new(11, 2_000_000),
        corpus.path(),
    )
    .expect("generating the corpus");
    let paths: Vec<PathBuf> = vec![
        corpus.path().join("claude/projects"),
        corpus.path().join("codex/sessions"),
    ];
    let mut args = vec!["backfill".to_owned(), "--json".to_owned()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let out = run(
        sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all: Vec<String> = logs(&sb.home).keys().cloned().collect();
    let keys: Vec<String> = all.iter().step_by(3).cloned().collect();
    record_projects(&sb, &keys);
    check_against_logs(&sb);
    // A window before everything matches nothing; one over everything, everything.
    assert!(sessions(&sb, &["--until", "1990-01-01", "--no-sync"]).is_empty());
    assert_eq!(
        sessions(&sb, &["--since", "1990-01-01", "--no-sync"]).len(),
        all.len()
    );
}

#[test]
fn rebuild_recreates_the_index_and_keeps_delivery_states() {
    let sb = Sandbox::new();
    let t = sb.user.join("r.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            claude_marker_line(30, "/w/a", "one"),
            claude_marker_line(40, "/w/a", "two"),
        ],
    );
    let out = run(
        sb.cmd(&["backfill", "--deliver", "--json", t.to_str().unwrap()]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["delivered"]["outbox"], 2, "{v}");
    let before = run(sb.cmd(&["ledger", "--json", "--no-sync"]), b"");
    // Rebuild reads the transcript where the backfill was named it (issue 33), not
    // only the default folders.
    let out = run(sb.cmd(&["index", "rebuild", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = run(sb.cmd(&["ledger", "--json", "--no-sync"]), b"");
    assert_eq!(text(&after.stdout), text(&before.stdout));
    assert!(text(&after.stdout).contains("\"state\":\"outbox\""));
}

fn write_lines(p: &Path, lines: &[String]) {
    std::fs::write(p, lines.join("\n") + "\n").unwrap();
}

/// A query's sync mirrors a scope log written since (here by `scope record`, not by a
/// backfill) and its rows as it grows, and never reads a log through a link.
#[test]
fn a_query_sync_mirrors_new_and_grown_logs_and_not_links() {
    let sb = Sandbox::new();
    let (a, b) = (sb.outside.join("a"), sb.outside.join("b"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d).unwrap();
    }
    let record = |at: &str, cwd: &Path| {
        let out = run(sb.record_cmd("s-real", at, &cwd.display().to_string()), b"");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    };
    record("2025-01-01T00:00:00Z", &a);
    // A link beside it, to a copy of the log outside the home.
    let copy = sb.outside.join("copy.jsonl");
    std::fs::copy(sb.log("s-real"), &copy).unwrap();
    std::os::unix::fs::symlink(&copy, sb.log("s-link")).unwrap();
    let listed = |args: &[&str]| -> BTreeMap<String, Value> {
        sessions(&sb, args)
            .into_iter()
            .map(|v| (v["session"].as_str().unwrap().to_owned(), v))
            .collect()
    };
    let first = listed(&[]);
    assert_eq!(first.keys().collect::<Vec<_>>(), ["s-real"]);
    assert_eq!(first["s-real"]["transitions"], 1);
    // Grown by a row: mirrored at the next query, not before.
    record("2025-01-01T00:01:00Z", &b);
    assert_eq!(listed(&["--no-sync"])["s-real"]["transitions"], 1);
    let second = listed(&[]);
    assert_eq!(second.keys().collect::<Vec<_>>(), ["s-real"]);
    assert_eq!(second["s-real"]["transitions"], 2);
}

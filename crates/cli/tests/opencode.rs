//! OpenCode's database under a real home (`~/.local/share/opencode/opencode.db`),
//! backfilled from the default folders by the real binary: `sessions` shows each
//! session as agent `opencode` (the task's child under its parent, the database as its
//! transcript), its scope log follows the folder its replies worked in with the branch
//! of that folder's repository, `timeline` shows the transitions, `usage` equals the
//! sum of OpenCode's five disjoint counts (counted here by SQLite from the rows), and a
//! second run reads only what was added.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::reliability::*;
use common::{kinds_and_times, parse_json_lines, tokens_and_messages_by_session};
use serde_json::Value;
use transcope_adapter_opencode::write::{self, sample, Db, Sample};

/// A repository at `dir` on `feature/oc`, with a `pkg` folder.
fn repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    for args in [
        &["init", "-q"][..],
        &["checkout", "-q", "-b", "feature/oc"],
        &["commit", "-q", "--allow-empty", "-m", "start"],
    ] {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

/// A sandbox whose user's OpenCode database holds the sample sessions, backfilled.
fn home() -> (Sandbox, Sample) {
    let sb = Sandbox::new();
    let r = sb.user.join("work/repo");
    repo(&r);
    let s = sample(&sb.user.join(".local/share/opencode"), &r, "/srv/elsewhere").unwrap();
    let out = run(sb.cmd(&["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["errors"], 0, "{summary}");
    assert_eq!(summary["files"], 3, "one read per session: {summary}");
    (sb, s)
}

/// Per session, the sum of each assistant message's five token counts and the
/// number of replies, counted by SQLite's own JSON functions over the rows.
fn own_totals(db: &Path) -> BTreeMap<String, (u64, u64)> {
    let conn = transcope_sqlite::rusqlite::Connection::open(db).unwrap();
    let mut st = conn
        .prepare(
            "SELECT session_id,
                    sum(json_extract(data, '$.tokens.input') + json_extract(data, '$.tokens.output')
                      + json_extract(data, '$.tokens.reasoning') + json_extract(data, '$.tokens.cache.read')
                      + json_extract(data, '$.tokens.cache.write')),
                    count(*)
             FROM message WHERE json_extract(data, '$.role') = 'assistant' GROUP BY session_id",
        )
        .unwrap();
    st.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            (r.get::<_, i64>(1)? as u64, r.get::<_, i64>(2)? as u64),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn opencode_sessions_are_found_with_their_agent_parent_and_database() {
    let (sb, s) = home();
    let sessions = sessions_by_key(&sb);
    assert_eq!(sessions.len(), 3, "{sessions:?}");
    for v in sessions.values() {
        assert_eq!(v["agent"], "opencode");
        assert_eq!(v["transcript"], s.db.display().to_string());
    }
    assert_eq!(sessions[s.main]["parent"], Value::Null);
    assert_eq!(sessions[s.child]["parent"], s.main);
    assert_eq!(sessions[s.main]["transitions"], 2, "{}", sessions[s.main]);
    let table = stdout_of(&sb, &["sessions", "--no-sync"]);
    let row = table.lines().find(|l| l.contains(s.main)).unwrap();
    assert!(row.contains("opencode"), "{table}");
}

#[test]
fn scope_follows_the_folder_an_opencode_session_works_in_with_its_branch() {
    let (sb, s) = home();
    let repo = sb.user.join("work/repo").display().to_string();
    let pkg = format!("{repo}/pkg");
    assert_eq!(
        scopes(&sb, s.main),
        [
            ["2026-05-01T10:00:00.000Z", repo.as_str(), "feature/oc"],
            ["2026-05-01T10:03:00.000Z", pkg.as_str(), "feature/oc"],
        ]
    );
    // A session in "/" is in its project's worktree; no repository there, no branch.
    assert_eq!(
        scopes(&sb, s.rooted),
        [["2026-05-01T10:05:00.000Z", "/srv/elsewhere", ""]]
    );
    let timeline = parse_json_lines(&stdout_of(
        &sb,
        &["timeline", "--session", s.main, "--json", "--no-sync"],
    ));
    let kinds = kinds_and_times(&timeline);
    assert_eq!(
        kinds,
        [
            ("transition", "2026-05-01T10:00:00.000Z"),
            ("transition", "2026-05-01T10:03:00.000Z"),
        ],
        "{timeline:?}"
    );
}

#[test]
fn opencode_usage_is_the_sum_of_its_disjoint_counts_and_a_second_run_reads_only_what_is_new() {
    let (sb, s) = home();
    let want = own_totals(&s.db);
    assert_eq!(
        want[s.main],
        (1200 + 300 + 50 + 8000 + 400 + 90 + 40 + 9000, 2)
    );
    let usage_with = |sb: &Sandbox, sync: bool| -> (BTreeMap<String, (u64, u64)>, Vec<Value>) {
        let mut args = vec!["usage", "--by", "session", "--json"];
        if !sync {
            args.push("--no-sync");
        }
        let out = run(sb.cmd(&args), b"");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rows = parse_json_lines(&text(&out.stdout));
        (tokens_and_messages_by_session(&rows), rows)
    };
    let usage = |sb: &Sandbox| usage_with(sb, false);
    let usage_synced = |sb: &Sandbox| usage_with(sb, true);
    let (got, rows) = usage(&sb);
    assert_eq!(got, want);
    let row = rows.iter().find(|v| v["session"] == s.main).unwrap();
    let col = |k: &str| row[k].as_u64().unwrap();
    assert_eq!(col("input_tokens"), 1200 + 90);
    assert_eq!(
        col("output_tokens"),
        300 + 50 + 40,
        "reasoning inside the output"
    );
    assert_eq!(col("reasoning_output_tokens"), 50);
    assert_eq!(col("cache_read_input_tokens"), 8000 + 9000);
    assert_eq!(col("cache_creation_input_tokens"), 400);

    // Again: every session up to date, nothing read.
    let again: Value =
        serde_json::from_slice(&run(sb.cmd(&["backfill", "--json"]), b"").stdout).unwrap();
    assert_eq!(
        (again["entries"].as_u64(), again["bytes"].as_u64()),
        (Some(0), Some(0)),
        "{again}"
    );

    // OpenCode goes on (its connection open, the rows in its write-ahead log): a
    // query's sync reads the two new messages only, and counts the reply once.
    let db = Db::open(&s.db).unwrap();
    db.conn()
        .pragma_update(None, "wal_autocheckpoint", 0)
        .unwrap();
    let t = 1_777_629_600_000 + 20 * 60_000;
    db.message("msg_05", s.main, t, &write::user(t)).unwrap();
    let tokens = write::Tokens {
        input: 7,
        output: 3,
        reasoning: 1,
        cache_read: 100,
        cache_write: 0,
    };
    let repo = sb.user.join("work/repo").display().to_string();
    let reply = write::assistant(
        t + 1000,
        Some(t + 2000),
        "msg_05",
        ("openai", "gpt-5"),
        &repo,
        tokens,
    );
    db.message("msg_06", s.main, t + 1000, &reply).unwrap();
    // A query's quick sync looks (the database's own size and time did not move).
    let (got, _) = usage_synced(&sb);
    assert_eq!(got[s.main], (want[s.main].0 + tokens.total(), 3));
    // One more message: a backfill reads it alone.
    db.message("msg_07", s.main, t + 5000, &write::user(t + 5000))
        .unwrap();
    let more: Value =
        serde_json::from_slice(&run(sb.cmd(&["backfill", "--json"]), b"").stdout).unwrap();
    assert_eq!(more["entries"], 1, "{more}");
    // The folder went back to the repository's top: one more transition.
    assert_eq!(scopes(&sb, s.main).len(), 3);
}

#[test]
fn shards_split_a_database_by_family_and_keep_a_task_with_its_parent() {
    let (sb, s) = home();
    let mut found: Vec<(usize, String)> = Vec::new();
    for k in 0..2 {
        let other = Sandbox::new();
        let shard = format!("{k}/2");
        let out = run(
            cmd_in(
                &other.home,
                &sb.user,
                &["backfill", "--shard", &shard, "--json"],
            ),
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        for v in parse_json_lines(&stdout_in(
            &other.home,
            &sb.user,
            &["sessions", "--json", "--no-sync"],
        )) {
            found.push((k, v["session"].as_str().unwrap().to_owned()));
        }
    }
    found.sort_by(|a, b| a.1.cmp(&b.1));
    let names: Vec<&str> = found.iter().map(|f| f.1.as_str()).collect();
    assert_eq!(
        names,
        [s.child, s.main, s.rooted],
        "each session in one shard: {found:?}"
    );
    assert_eq!(
        found[0].0, found[1].0,
        "the task's session with its parent's"
    );
}

#[test]
fn a_legacy_json_tree_is_backfilled_like_the_database() {
    let sb = Sandbox::new();
    let data = sb.user.join(".local/share/opencode");
    let scratch = tempfile::tempdir().unwrap();
    let s = sample(
        &scratch.path().join("db"),
        &sb.user.join("work/repo"),
        "/srv/elsewhere",
    )
    .unwrap();
    write::export_tree(&s.db, &data.join("storage")).unwrap();
    let out = run(sb.cmd(&["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (summary["files"].as_u64(), summary["errors"].as_u64()),
        (Some(3), Some(0)),
        "{summary}"
    );
    let sessions: BTreeMap<String, Value> =
        parse_json_lines(&stdout_of(&sb, &["sessions", "--json", "--no-sync"]))
            .into_iter()
            .map(|v| (v["session"].as_str().unwrap().to_owned(), v))
            .collect();
    assert_eq!(sessions.len(), 3);
    assert_eq!(sessions[s.child]["parent"], s.main);
    assert!(sessions[s.main]["transcript"]
        .as_str()
        .unwrap()
        .ends_with("storage/session/p_repo/ses_main.json"));
    let out = run(
        sb.cmd(&["usage", "--by", "session", "--json", "--no-sync"]),
        b"",
    );
    let got: BTreeMap<String, u64> = parse_json_lines(&text(&out.stdout))
        .into_iter()
        .map(|v| {
            (
                v["session"].as_str().unwrap().to_owned(),
                v["total_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: BTreeMap<String, u64> = own_totals(&s.db)
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(got, want);
}

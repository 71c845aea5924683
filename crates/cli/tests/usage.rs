//! Issue 15: token totals equal an independent count. This file reads the fixtures
//! with its own plain reader (serde_json values, no transcope code) and the dedupe
//! rule (one request per Claude `message.id` + `requestId` across the archive, at its
//! earliest copy's time, with the largest counts any copy reports; Codex running
//! totals by their growth; Gemini messages by session and id), and compares per UTC
//! day and per root session with `transcope usage --by day|root-session --json`.

mod common;

use std::collections::BTreeMap;

use common::reliability::count::*;
use common::reliability::*;
use serde_json::Value;

#[test]
fn usage_per_day_and_root_session_equals_an_independent_count() {
    let sb = Sandbox::new();
    let roots = usage_fixture_roots();
    let mut args = vec!["backfill".to_owned()];
    args.extend(roots.iter().map(|p| p.display().to_string()));
    let out = run(
        sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got = usage_by(&sb, "day", "day");
    let got_roots = usage_by(&sb, "root-session", "root_session");
    let (want, want_roots) = expected(&roots);
    assert!(want.len() > 5, "{want:?}");
    assert_eq!(got, want);
    assert!(want_roots.len() > 10, "{want_roots:?}");
    assert_eq!(got_roots, want_roots);
    // Reading the same archive again counts nothing twice.
    let out = run(
        sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(usage_by(&sb, "day", "day"), got);
    assert_eq!(usage_by(&sb, "root-session", "root_session"), got_roots);
}

#[test]
fn usage_is_attributed_to_the_scope_in_force_when_it_was_spent() {
    let sb = Sandbox::new();
    // Two repositories (two projects), one on two branches; a task recorded in the log
    // mid-session by another tool.
    let a = sb.user.join("alpha");
    let b = sb.user.join("beta");
    transcope_testkit::git_repo(&a, "https://github.com/acme/alpha.git", "main").unwrap();
    transcope_testkit::git_repo(&b, "https://github.com/acme/beta.git", "main").unwrap();
    let (a, b) = (a.display().to_string(), b.display().to_string());
    let dir = sb.user.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("attrib.jsonl");
    let lines = [
        claude_line(0, &a, "main"),
        spend_line(10, &a, "main", "m1", [100, 10, 0]),
        spend_line(20, &a, "main", "m2", [200, 20, 0]),
        claude_line(30, &a, "feature"),
        spend_line(40, &a, "feature", "m3", [300, 30, 0]),
        claude_line(50, &b, "main"),
        spend_line(60, &b, "main", "m4", [400, 40, 0]),
        // A streamed copy of m4 (same id and request): counted once.
        spend_line(61, &b, "main", "m4", [400, 40, 0]),
        claude_line(70, &a, "main"),
        spend_line(80, &a, "main", "m5", [500, 50, 0]),
    ];
    std::fs::write(&t, lines.join("\n") + "\n").unwrap();
    // The default archive path: `usage` syncs it.
    let out = run(
        sb.cmd(&[
            "usage", "--by", "project", "--by", "branch", "--by", "task", "--json",
        ]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got: BTreeMap<(String, String, String), (u64, u64, u64)> = text(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
            (
                (s("project_id"), s("branch"), s("task")),
                (
                    v["input_tokens"].as_u64().unwrap(),
                    v["output_tokens"].as_u64().unwrap(),
                    v["messages"].as_u64().unwrap(),
                ),
            )
        })
        .collect();
    // Recomputed from the scope log: the row in force at each request's time (the last
    // in file order at or before it), one request per message id.
    let rows = check_log(&std::fs::read(sb.log("attrib")).unwrap());
    assert!(rows.len() >= 4, "{rows:?}");
    let mut want: BTreeMap<(String, String, String), (u64, u64, u64)> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for l in &lines {
        let v: Value = serde_json::from_str(l).unwrap();
        if v["type"] != "assistant" || !seen.insert(v["message"]["id"].as_str().unwrap().to_owned())
        {
            continue;
        }
        let at = instant(v["timestamp"].as_str().unwrap()).unwrap();
        let row = rows
            .iter()
            .rev()
            .find(|r| instant(r["at"].as_str().unwrap()).is_some_and(|t| t <= at))
            .unwrap();
        let s = |k: &str| row[k].as_str().unwrap_or("").to_owned();
        let e = want
            .entry((s("project_id"), s("branch"), s("task")))
            .or_default();
        e.0 += v["message"]["usage"]["input_tokens"].as_u64().unwrap();
        e.1 += v["message"]["usage"]["output_tokens"].as_u64().unwrap();
        e.2 += 1;
    }
    assert_eq!(got, want);
    let projects: std::collections::BTreeSet<&str> = want.keys().map(|k| k.0.as_str()).collect();
    assert_eq!(projects.len(), 2, "two projects: {want:?}");
    assert_eq!(
        want.len(),
        3,
        "alpha/main, alpha/feature, beta/main: {want:?}"
    );
}

/// `usage --by agent` over real transcripts of five agents (the fixtures above, and
/// Qwen Code's and Copilot CLI's where each keeps them): each agent's sums are the
/// sums of its sessions' (`--by session`, each session's agent read from `sessions`),
/// nothing is left without an agent, and `--by agent --by session` puts each session
/// under its own agent.
#[test]
fn usage_by_agent_sums_its_sessions() {
    let sb = Sandbox::new();
    let data = common::testdata().join("public");
    common::copy_tree(&data.join("qwen/home/.qwen"), &sb.user.join(".qwen"));
    common::copy_tree(
        &data.join("copilot/home/.copilot"),
        &sb.user.join(".copilot"),
    );
    let mut args = vec!["backfill".to_owned()];
    args.extend(
        usage_fixture_roots()
            .iter()
            .map(|p| p.display().to_string()),
    );
    for own in [".qwen/projects", ".copilot/session-state"] {
        args.push(sb.user.join(own).display().to_string());
    }
    let out = run(
        sb.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>()),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let agent_of: BTreeMap<String, String> =
        common::parse_json_lines(&stdout_of(&sb, &["sessions", "--json", "--no-sync"]))
            .into_iter()
            .map(|v| {
                (
                    v["session"].as_str().unwrap().to_owned(),
                    v["agent"].as_str().unwrap_or("none").to_owned(),
                )
            })
            .collect();
    let mut want: BTreeMap<String, Counts> = BTreeMap::new();
    for (session, c) in usage_by(&sb, "session", "session") {
        let agent = agent_of.get(&session).map_or("none", String::as_str);
        let sum = want.entry(agent.to_owned()).or_default();
        for (s, n) in sum.iter_mut().zip(c) {
            *s += n;
        }
    }
    let got = usage_by(&sb, "agent", "agent");
    assert_eq!(got, want);
    let agents: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(agents, ["claude", "codex", "copilot", "gemini", "qwen"]);
    assert!(got.values().all(|c| c[4] > 0), "{got:?}");
    // Both keys at once: each row's agent is its session's.
    let out = stdout_of(
        &sb,
        &[
            "usage",
            "--by",
            "agent",
            "--by",
            "session",
            "--json",
            "--no-sync",
        ],
    );
    let rows = common::parse_json_lines(&out);
    assert!(rows.len() > 10, "{out}");
    for r in rows {
        let session = r["session"].as_str().unwrap();
        assert_eq!(
            r["agent"].as_str(),
            agent_of.get(session).map(String::as_str),
            "{r}"
        );
    }
    // The table names the key.
    let table = stdout_of(&sb, &["usage", "--by", "agent", "--no-sync"]);
    assert!(
        table.contains("agent") && table.contains("copilot"),
        "{table}"
    );
}

//! Issue 15: usage attributed across switches. Sessions move between a repository's
//! main checkout and a linked worktree (a real `git worktree`), between branches,
//! into another repository, and between swarm tasks (the task of each Stop's
//! environment) in the middle of their transcripts; `transcope usage --by project
//! --by worktree --by branch --by task` must equal the totals this test recomputes
//! from the scope logs: each request (once per message id and request id) in the row
//! in force at its time, the last in file order at or before it.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use common::reliability::*;
use serde_json::Value;

/// `(project_id, worktree, branch, task)`.
type Scope = (String, String, String, String);

/// An assistant line in `cwd` with usage (half as many cache writes as input).
fn spend(secs: u64, cwd: &Path, branch: &str, id: &str, input: u64, output: u64) -> String {
    spend_line(
        secs,
        cwd.to_str().unwrap(),
        branch,
        id,
        [input, output, input / 2],
    )
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
}

/// One turn: `lines` appended to the transcript, then a Stop with `task` in force.
struct Turn {
    task: &'static str,
    lines: Vec<String>,
}

#[test]
fn usage_follows_worktree_branch_and_task_switches_mid_session() {
    let sb = Sandbox::new();
    let alpha = sb.user.join("alpha");
    let beta = sb.user.join("beta");
    transcope_testkit::git_repo(&alpha, "https://github.com/acme/alpha.git", "main").unwrap();
    transcope_testkit::git_repo(&beta, "https://github.com/acme/beta.git", "main").unwrap();
    // A linked worktree of alpha on its own branch, made by git itself.
    let wt = sb.user.join("alpha-feature");
    git(
        &alpha,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    let dir = sb.user.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();

    let sessions: Vec<(&str, Vec<Turn>)> = vec![
        (
            "switcher",
            vec![
                Turn {
                    task: "T-100",
                    lines: vec![
                        claude_line(0, alpha.to_str().unwrap(), "main"),
                        spend(10, &alpha, "main", "a1", 100, 10),
                        spend(20, &alpha, "main", "a2", 200, 20),
                    ],
                },
                Turn {
                    // Into the linked worktree (its own branch), a new task.
                    task: "T-200",
                    lines: vec![
                        claude_line(30, wt.to_str().unwrap(), "feature"),
                        spend(40, &wt, "feature", "a3", 300, 30),
                        // A streamed copy of a3: once.
                        spend(41, &wt, "feature", "a3", 300, 31),
                    ],
                },
                Turn {
                    // Another repository, same task.
                    task: "T-200",
                    lines: vec![
                        claude_line(50, beta.to_str().unwrap(), "main"),
                        spend(60, &beta, "main", "a4", 400, 40),
                    ],
                },
                Turn {
                    // Back to alpha's main checkout under a third task.
                    task: "T-300",
                    lines: vec![
                        claude_line(70, alpha.to_str().unwrap(), "main"),
                        spend(80, &alpha, "main", "a5", 500, 50),
                        spend(90, &alpha, "main", "a6", 600, 60),
                    ],
                },
            ],
        ),
        (
            "steady",
            vec![
                Turn {
                    task: "T-200",
                    lines: vec![
                        claude_line(5, wt.to_str().unwrap(), "feature"),
                        spend(15, &wt, "feature", "b1", 110, 11),
                    ],
                },
                Turn {
                    // Same place, a new task.
                    task: "T-400",
                    lines: vec![spend(35, &wt, "feature", "b2", 220, 22)],
                },
                Turn {
                    // The worktree switches branch under it.
                    task: "T-400",
                    lines: vec![
                        claude_line(55, wt.to_str().unwrap(), "hotfix"),
                        spend(65, &wt, "hotfix", "b3", 330, 33),
                    ],
                },
            ],
        ),
    ];

    // The turns of both sessions, interleaved, each ended by its Stop.
    let turns = sessions.iter().map(|(_, t)| t.len()).max().unwrap();
    for i in 0..turns {
        for (sid, session) in &sessions {
            let Some(turn) = session.get(i) else {
                continue;
            };
            let t = dir.join(format!("{sid}.jsonl"));
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&t)
                .unwrap();
            use std::io::Write;
            f.write_all((turn.lines.join("\n") + "\n").as_bytes())
                .unwrap();
            drop(f);
            let mut c = sb.cmd(&["hook", "stop"]);
            c.env("AGENTIHOOKS_SWARM", "fleet")
                .env("AGENTIHOOKS_SWARM_TASK", turn.task)
                .env("AGENTIHOOKS_SWARM_LANE", "eng");
            let out = run(c, &payload(sid, &t));
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        }
    }

    let out = run(
        sb.cmd(&[
            "usage", "--by", "project", "--by", "worktree", "--by", "branch", "--by", "task",
            "--json",
        ]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got: BTreeMap<Scope, (u64, u64, u64, u64, u64)> = text(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or("").to_owned();
            let n = |k: &str| v[k].as_u64().unwrap();
            (
                (s("project_id"), s("worktree"), s("branch"), s("task")),
                (
                    n("input_tokens"),
                    n("output_tokens"),
                    n("cache_creation_input_tokens"),
                    n("cache_read_input_tokens"),
                    n("messages"),
                ),
            )
        })
        .collect();

    // Recomputed from the scope logs alone.
    let mut want: BTreeMap<Scope, (u64, u64, u64, u64, u64)> = BTreeMap::new();
    let mut tasks_logged = BTreeSet::new();
    let mut worktrees_logged = BTreeSet::new();
    for (sid, session) in &sessions {
        let rows = check_log(&std::fs::read(sb.log(sid)).unwrap());
        for r in &rows {
            tasks_logged.insert(r["task"].as_str().unwrap_or("").to_owned());
            worktrees_logged.insert(r["worktree"].as_str().unwrap_or("").to_owned());
        }
        // Each request once: its earliest copy's time, its largest counts.
        let mut requests: BTreeMap<String, (i128, [u64; 4])> = BTreeMap::new();
        for l in session.iter().flat_map(|t| &t.lines) {
            let v: Value = serde_json::from_str(l).unwrap();
            if v["type"] != "assistant" {
                continue;
            }
            let at = instant(v["timestamp"].as_str().unwrap()).unwrap();
            let u = &v["message"]["usage"];
            let c = [
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ]
            .map(|k| u[k].as_u64().unwrap());
            let key = format!("{}:{}", v["message"]["id"], v["requestId"]);
            let e = requests.entry(key).or_insert((at, c));
            e.0 = e.0.min(at);
            for (kept, new) in e.1.iter_mut().zip(c) {
                *kept = (*kept).max(new);
            }
        }
        for (at, c) in requests.values() {
            let row = rows
                .iter()
                .rev()
                .find(|r| instant(r["at"].as_str().unwrap()).is_some_and(|t| t <= *at))
                .expect("a row in force");
            let s = |k: &str| row[k].as_str().unwrap_or("").to_owned();
            let e = want
                .entry((s("project_id"), s("worktree"), s("branch"), s("task")))
                .or_default();
            e.0 += c[0];
            e.1 += c[1];
            e.2 += c[2];
            e.3 += c[3];
            e.4 += 1;
        }
    }
    assert_eq!(got, want);
    // The archive really switches: several tasks and both checkouts of alpha in the
    // logs, and the usage spread over as many scopes.
    assert!(
        tasks_logged.len() >= 3,
        "tasks in the logs: {tasks_logged:?}"
    );
    assert!(
        worktrees_logged.len() >= 2,
        "worktrees in the logs: {worktrees_logged:?}"
    );
    let worktrees: BTreeSet<&str> = want.keys().map(|k| k.1.as_str()).collect();
    let tasks: BTreeSet<&str> = want.keys().map(|k| k.3.as_str()).collect();
    let projects: BTreeSet<&str> = want.keys().map(|k| k.0.as_str()).collect();
    assert!(worktrees.len() >= 2, "{want:?}");
    assert!(tasks.len() >= 3, "{want:?}");
    assert_eq!(projects.len(), 2, "{want:?}");
    assert_eq!(
        want.values().map(|v| v.4).sum::<u64>(),
        9,
        "nine requests, the streamed copy once"
    );
}

/// Total output tokens `usage` reports (syncing first unless `no_sync`).
fn output_tokens(sb: &Sandbox, extra: &[&str]) -> u64 {
    let mut args = vec!["usage", "--by", "session", "--json"];
    args.extend_from_slice(extra);
    let out = run(sb.cmd(&args), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["output_tokens"]
                .as_u64()
                .unwrap()
        })
        .sum()
}

#[test]
fn a_query_sync_passes_over_unchanged_transcripts_and_reads_changed_ones() {
    let sb = Sandbox::new();
    let dir = sb.user.join(".claude/projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("q.jsonl");
    let w = sb.user.display().to_string();
    std::fs::write(&t, spend_line(10, &w, "main", "q1", [1, 10, 0]) + "\n").unwrap();
    assert_eq!(output_tokens(&sb, &[]), 10);
    // Appended: a different size, read at the next query.
    let mut f = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
    use std::io::Write;
    f.write_all((spend_line(20, &w, "main", "q2", [1, 20, 0]) + "\n").as_bytes())
        .unwrap();
    drop(f);
    assert_eq!(output_tokens(&sb, &[]), 30);
    // Rewritten in place to the same size with its old modification time and inode:
    // the quick check of a query passes over it (the cursor would catch it: its head
    // changed) ...
    let before = std::fs::metadata(&t).unwrap();
    let bytes = std::fs::read(&t).unwrap();
    let edited = String::from_utf8(bytes.clone())
        .unwrap()
        .replace("\"output_tokens\":10", "\"output_tokens\":70");
    assert_eq!(edited.len(), bytes.len());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&t)
        .unwrap()
        .write_all(edited.as_bytes())
        .unwrap();
    let f = std::fs::File::options().write(true).open(&t).unwrap();
    f.set_modified(before.modified().unwrap()).unwrap();
    drop(f);
    assert_eq!(output_tokens(&sb, &[]), 30);
    // ... and `index sync` checks every cursor: the rewritten file is read again.
    let out = run(sb.cmd(&["index", "sync", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The largest copy of q1 counts (70), q2 is the same request again.
    assert_eq!(output_tokens(&sb, &["--no-sync"]), 90);
}

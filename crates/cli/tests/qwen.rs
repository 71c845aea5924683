//! Qwen Code sessions under a real home (`~/.qwen/projects/…`), backfilled from the
//! default folders by the real binary: `sessions` shows each as agent `qwen` (a
//! sub-agent under its parent), its scope log follows the `cwd` and `gitBranch` its
//! records change mid-file, `timeline` shows the transitions and the reply's marker,
//! and `usage` counts each reply once — its `ui_telemetry` copy never — with totals
//! equal to the CLI's own `totalTokenCount`, counted here from the files.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::reliability::count::usage_by;
use common::reliability::*;
use common::{copy_tree, kinds_and_times, parse_json_lines, tokens_and_messages_by_session};
use serde_json::Value;

const SID: &str = "0a0b0c0d-1111-4222-8333-444455556666";
const SUB: &str = "0a0b0c0d-1111-4222-8333-444455556666.explore-7f3c";
const FIXTURE4: &str = "019f0000-0000-7000-8000-000000000004";

fn qwen_data(rel: &str) -> PathBuf {
    common::testdata().join("public/qwen").join(rel)
}

/// A sandbox whose user's `~/.qwen` holds the synthetic session, its sub-agent, and
/// the agent-sessions fixture whose folder changes twice, placed as the CLI places it.
fn home() -> Sandbox {
    let sb = Sandbox::new();
    copy_tree(&qwen_data("home/.qwen"), &sb.user.join(".qwen"));
    let chats = sb
        .user
        .join(".qwen/projects/-tmp-as-qwen-fixture-old-project/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::copy(
        qwen_data(&format!("jazzyalex__agent-sessions__{FIXTURE4}.jsonl")),
        chats.join(format!("{FIXTURE4}.jsonl")),
    )
    .unwrap();
    let out = run(sb.cmd(&["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sb
}

/// Independently of transcope: per file, the sum of each assistant record's
/// `usageMetadata.totalTokenCount` (prompt + candidates where a record has no total),
/// and the replies with usage; and the sum of the `ui_telemetry` copies' totals.
fn own_totals(file: &Path) -> (u64, u64, u64) {
    let (mut total, mut replies, mut copies) = (0, 0, 0);
    for line in std::fs::read_to_string(file).unwrap().lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
        if v["type"] == "assistant" {
            let u = &v["usageMetadata"];
            let t = u["totalTokenCount"]
                .as_u64()
                .unwrap_or_else(|| n(u, "promptTokenCount") + n(u, "candidatesTokenCount"));
            if t > 0 {
                total += t;
                replies += 1;
            }
        }
        if v["subtype"] == "ui_telemetry" {
            copies += n(&v["systemPayload"]["uiEvent"], "total_token_count");
        }
    }
    (total, replies, copies)
}

#[test]
fn qwen_sessions_are_found_with_their_agent_parent_and_transcript() {
    let sb = home();
    let sessions = sessions_by_key(&sb);
    assert_eq!(sessions.len(), 3, "{sessions:?}");
    let projects = sb.user.join(".qwen/projects");
    let main = &sessions[SID];
    assert_eq!(main["agent"], "qwen");
    assert_eq!(main["parent"], Value::Null);
    assert_eq!(
        main["transcript"],
        projects
            .join(format!("-work-demo-app/chats/{SID}.jsonl"))
            .display()
            .to_string()
    );
    assert_eq!(main["transitions"], 2, "{main}");
    let sub = &sessions[SUB];
    assert_eq!(sub["agent"], "qwen");
    assert_eq!(sub["parent"], SID);
    assert_eq!(sub["transitions"], 1, "{sub}");
    let four = &sessions[FIXTURE4];
    assert_eq!(four["agent"], "qwen");
    assert_eq!(four["transitions"], 3, "{four}");

    // The table names the agent too.
    let table = stdout_of(&sb, &["sessions", "--no-sync"]);
    let row = table.lines().find(|l| l.contains(SID)).unwrap();
    assert!(row.contains("qwen"), "{table}");
}

#[test]
fn scope_follows_the_folder_and_branch_a_qwen_session_changes_mid_file() {
    let sb = home();
    assert_eq!(
        scopes(&sb, SID),
        [
            ["2026-05-01T10:00:00.000Z", "/work/demo-app", "main"],
            [
                "2026-05-01T10:05:00.000Z",
                "/work/demo-app/pkg",
                "feature/health"
            ],
        ]
    );
    // The public fixture: old-project, then (a rewind's record) new-project, then the
    // artifact record's folder, each at the record that first carries it.
    let rows = check_log(&std::fs::read(sb.log(FIXTURE4)).unwrap());
    let got: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["at"].as_str().unwrap(), r["cwd"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "2026-08-17T13:00:00.000Z",
                "/tmp/as-qwen-fixture/old-project"
            ),
            (
                "2026-08-17T13:00:03.000Z",
                "/tmp/as-qwen-fixture/new-project"
            ),
            (
                "2026-08-17T13:00:08.000Z",
                "/tmp/as-qwen-fixture/artifact-project"
            ),
        ]
    );
    // The sub-agent's records are its own log, in the parent's first folder.
    assert_eq!(cwds(&sb, SUB), ["/work/demo-app"]);

    let timeline = parse_json_lines(&stdout_of(
        &sb,
        &["timeline", "--session", SID, "--json", "--no-sync"],
    ));
    let kinds = kinds_and_times(&timeline);
    assert_eq!(
        kinds,
        [
            ("transition", "2026-05-01T10:00:00.000Z"),
            ("marker", "2026-05-01T10:00:09.000Z"),
            ("transition", "2026-05-01T10:05:00.000Z"),
        ],
        "{timeline:?}"
    );
    assert_eq!(timeline[1]["type"], "lesson");
    assert_eq!(timeline[1]["content"], "Keep probes cheap.");
}

#[test]
fn qwen_usage_is_each_replys_own_total_counted_once() {
    let sb = home();
    // Every `*.jsonl` transcript (not the prompt ledger).
    let mut files = Vec::new();
    transcope_testkit::jsonl_files(&sb.user.join(".qwen/projects"), &mut files);
    files.retain(|p| !p.to_string_lossy().ends_with(".ledger.jsonl"));
    assert_eq!(files.len(), 3);
    let mut want: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut copied = 0;
    for f in &files {
        let (total, replies, copies) = own_totals(f);
        let key = match f.file_stem().unwrap().to_str().unwrap() {
            s if s.starts_with("agent-") => SUB.to_owned(),
            s => s.to_owned(),
        };
        want.insert(key, (total, replies));
        copied += copies;
    }
    assert_eq!(want[SID], (1350 + 1560 + 2150, 3), "the count itself");
    // The telemetry repeats every reply of the session: counting it too would double.
    assert_eq!(copied, want[SID].0);

    let out = run(
        sb.cmd(&["usage", "--by", "session", "--json", "--no-sync"]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got = tokens_and_messages_by_session(&parse_json_lines(&text(&out.stdout)));
    assert_eq!(got, want);

    // The columns as the CLI counts them: cached tokens out of the prompt, thoughts
    // inside the output (added for the reply whose total counts them apart).
    let row = parse_json_lines(&text(&out.stdout))
        .into_iter()
        .find(|v| v["session"] == SID)
        .unwrap();
    let cols = |k: &str| row[k].as_u64().unwrap();
    assert_eq!(cols("input_tokens"), 400 + 400 + 2000);
    assert_eq!(cols("cache_read_input_tokens"), 800 + 1100);
    assert_eq!(cols("cache_creation_input_tokens"), 0);
    assert_eq!(cols("output_tokens"), 150 + 60 + 150);
    assert_eq!(cols("reasoning_output_tokens"), 40 + 50);

    // A sub-agent's usage is its root session's.
    let by_root = usage_by(&sb, "root-session", "root_session");
    assert_eq!(by_root[SID][4], want[SID].1 + want[SUB].1, "{by_root:?}");
    // By model: the Qwen and the Gemini model, and the sub-agent's unnamed one.
    let models = usage_by(&sb, "model", "model");
    assert_eq!(models["qwen3-coder-plus"][4], 2, "{models:?}");
    assert_eq!(models["gemini-2.5-pro"][4], 1, "{models:?}");
}

//! GitHub Copilot CLI sessions under a real home (`~/.copilot/session-state/…`),
//! backfilled from the default folders by the real binary: `sessions` shows each as
//! agent `copilot`, its scope log follows the `context` of `session.start`,
//! `session.resume` and `session.context_changed`, `timeline` shows the transitions,
//! and `usage` counts `session.shutdown`'s cumulative `modelMetrics` once — the last
//! shutdown's totals, not the sum of every leg's — equal to a count made here from
//! the file's own fields.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::reliability::count::usage_by;
use common::reliability::*;
use common::{copy_tree, parse_json_lines};
use serde_json::Value;

const SID: &str = "7c1e0f2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
const FLAT: &str = "3a4b5c6d-0000-4000-8000-00000000aaaa";

fn copilot_data(rel: &str) -> PathBuf {
    common::testdata().join("public/copilot").join(rel)
}

/// A sandbox whose user's `~/.copilot` holds both fixtures, backfilled.
fn home() -> Sandbox {
    let sb = Sandbox::new();
    copy_tree(&copilot_data("home/.copilot"), &sb.user.join(".copilot"));
    let out = run(sb.cmd(&["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sb
}

fn events(file: &Path) -> Vec<Value> {
    parse_json_lines(&std::fs::read_to_string(file).unwrap())
}

#[test]
fn copilot_sessions_are_found_as_copilot_with_their_transcript() {
    let sb = home();
    let sessions = sessions_by_key(&sb);
    let main = &sessions[SID];
    assert_eq!(main["agent"], "copilot");
    assert_eq!(main["parent"], Value::Null);
    assert_eq!(
        main["transcript"],
        sb.user
            .join(format!(".copilot/session-state/{SID}/events.jsonl"))
            .display()
            .to_string()
    );
    assert_eq!(main["transitions"], 3, "{main}");
    // The earlier flat layout, from a build before `context`: a session with no
    // folder, so no transition.
    let flat = &sessions[FLAT];
    assert_eq!(flat["agent"], "copilot");
    assert_eq!(flat["transitions"], 0, "{flat}");
}

#[test]
fn scope_follows_the_context_of_start_resume_and_context_changed() {
    let sb = home();
    let got = scopes(&sb, SID);
    assert_eq!(
        got,
        [
            ["2026-05-01T09:00:00.000Z", "/work/demo", "main"],
            ["2026-05-01T10:00:00.000Z", "/work/demo", "feature-x"],
            ["2026-05-01T10:00:10.000Z", "/work/demo/src", "feature-x"],
        ]
    );
    // Each from the fixture's own context events (start, resume, context_changed).
    let file = sb
        .user
        .join(format!(".copilot/session-state/{SID}/events.jsonl"));
    let want: Vec<[String; 3]> = events(&file)
        .iter()
        .filter_map(|v| {
            let ctx = match v["type"].as_str()? {
                "session.start" | "session.resume" => &v["data"]["context"],
                "session.context_changed" => &v["data"],
                _ => return None,
            };
            Some(
                [&v["timestamp"], &ctx["cwd"], &ctx["branch"]]
                    .map(|x| x.as_str().unwrap().to_owned()),
            )
        })
        .collect();
    assert_eq!(got, want);

    let timeline = parse_json_lines(&stdout_of(
        &sb,
        &["timeline", "--session", SID, "--json", "--no-sync"],
    ));
    let transitions: Vec<&str> = timeline
        .iter()
        .filter(|i| i["kind"] == "transition")
        .map(|i| i["at"].as_str().unwrap())
        .collect();
    assert_eq!(
        transitions,
        [
            "2026-05-01T09:00:00.000Z",
            "2026-05-01T10:00:00.000Z",
            "2026-05-01T10:00:10.000Z"
        ],
        "{timeline:?}"
    );
}

#[test]
fn copilot_usage_is_the_last_shutdowns_cumulative_totals_counted_once() {
    let sb = home();
    let file = sb
        .user
        .join(format!(".copilot/session-state/{SID}/events.jsonl"));
    // Independently of transcope: each model's totals in the last `session.shutdown`
    // (cumulative across resume legs), input (reads and writes inside) + output.
    let shutdowns: Vec<Value> = events(&file)
        .into_iter()
        .filter(|v| v["type"] == "session.shutdown")
        .collect();
    assert_eq!(shutdowns.len(), 2);
    let n = |u: &Value, k: &str| u[k].as_u64().unwrap_or(0);
    let totals = |s: &Value| -> BTreeMap<String, [u64; 5]> {
        s["data"]["modelMetrics"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(m, v)| {
                let u = &v["usage"];
                let (i, o, r, w) = (
                    n(u, "inputTokens"),
                    n(u, "outputTokens"),
                    n(u, "cacheReadTokens"),
                    n(u, "cacheWriteTokens"),
                );
                (m.clone(), [i - r - w, o, w, r, 1])
            })
            .collect()
    };
    let last = totals(&shutdowns[1]);
    let sum_all: u64 = shutdowns
        .iter()
        .flat_map(|s| totals(s).into_values())
        .map(|c| c[0] + c[1] + c[2] + c[3])
        .sum();
    let want: u64 = last.values().map(|c| c[0] + c[1] + c[2] + c[3]).sum();
    assert_eq!(want, 14000 + 57 + 2092 + 8, "the count itself");
    assert!(sum_all > want, "summing the legs would count leg 1 twice");

    let out = run(
        sb.cmd(&["usage", "--by", "session", "--json", "--no-sync"]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let row = parse_json_lines(&text(&out.stdout))
        .into_iter()
        .find(|v| v["session"] == SID)
        .unwrap();
    let cols = |k: &str| row[k].as_u64().unwrap();
    assert_eq!(cols("total_tokens"), want, "{row}");
    assert_eq!(cols("messages"), 2, "one per model");
    assert_eq!(cols("input_tokens"), 2000 + 2092);
    assert_eq!(cols("cache_read_input_tokens"), 10000);
    assert_eq!(cols("cache_creation_input_tokens"), 2000);
    assert_eq!(cols("output_tokens"), 57 + 8);
    assert_eq!(cols("reasoning_output_tokens"), 10);

    // By model: each model's last totals, exactly.
    let models = usage_by(&sb, "model", "model");
    for (m, c) in &last {
        assert_eq!(&models[m.as_str()], c, "{m}: {models:?}");
    }
    // Backfilling again counts nothing more.
    let out = run(sb.cmd(&["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(usage_by(&sb, "model", "model"), models);
}

/// Copilot CLI names its models with a dotted version (`claude-sonnet-4.5`): priced as
/// the list's `claude-sonnet-4-5`, as `gpt-5-mini` is as itself.
#[test]
fn copilot_models_are_priced_as_the_list_names_them() {
    let sb = home();
    let out = run(
        sb.cmd(&["usage", "--by", "model", "--json", "--no-sync"]),
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows = parse_json_lines(&text(&out.stdout));
    for model in ["claude-sonnet-4.5", "gpt-5-mini"] {
        let row = rows.iter().find(|r| r["model"] == model).unwrap();
        assert!(row["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{row}");
        assert_eq!(row["unpriced_messages"], 0, "{row}");
    }
}

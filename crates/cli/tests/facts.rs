//! `transcope facts` reads back what a listed stage kept: here the example crate's
//! replies stage (examples/third-party, listed with one line in its composition),
//! whose facts transcope's own backfill put in the index.

use std::path::Path;
use std::process::Command;

fn transcope(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_transcope"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn line(t: &str, branch: &str, kind: &str, text: &str) -> String {
    serde_json::json!({
        "type": kind, "timestamp": t, "cwd": "/work/a", "gitBranch": branch,
        "sessionId": "5d3c2b1a-0000-4000-8000-0000000000c1",
        "message": {"role": kind, "content": text},
    })
    .to_string()
        + "\n"
}

#[test]
fn facts_reads_back_what_a_listed_stage_kept_with_its_scope() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let projects = tmp.path().join("elsewhere/projects");
    std::fs::create_dir_all(projects.join("-work-a")).unwrap();
    let text = line("2026-05-01T10:00:00Z", "main", "user", "go")
        + &line(
            "2026-05-01T10:00:04Z",
            "main",
            "assistant",
            "One two three.",
        )
        + &line(
            "2026-05-01T10:05:00Z",
            "feature-x",
            "assistant",
            "Four five.",
        );
    std::fs::write(
        projects.join("-work-a/5d3c2b1a-0000-4000-8000-0000000000c1.jsonl"),
        text,
    )
    .unwrap();
    let kept = transcope_example_third_party::kept(&home, &[projects]).unwrap();
    assert_eq!(kept.len(), 2);

    let out = transcope(
        &home,
        &["facts", "--stage", "replies", "--json", "--no-sync"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(&str, &str, &serde_json::Value)> = rows
        .iter()
        .map(|r| {
            (
                r["stage"].as_str().unwrap(),
                r["branch"].as_str().unwrap(),
                &r["value"],
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("replies", "main", &serde_json::json!({"words": 3})),
            ("replies", "feature-x", &serde_json::json!({"words": 2})),
        ]
    );
    assert!(rows
        .iter()
        .all(|r| r["session"] == "5d3c2b1a-0000-4000-8000-0000000000c1"));

    // The table names them too; a stage that kept nothing is said, not an error.
    let table = transcope(&home, &["facts", "--no-sync"]);
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("feature-x") && text.contains("2 facts"),
        "{text}"
    );
    let none = transcope(&home, &["facts", "--stage", "nothing", "--no-sync"]);
    assert!(none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no facts of stage \"nothing\""));
}

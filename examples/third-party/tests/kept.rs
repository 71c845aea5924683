//! The replies stage, listed from outside transcope with one line, has its results
//! kept in transcope's index and read back, each with the scope in force when it
//! happened; a second run keeps each once.

use std::path::Path;

fn line(t: &str, cwd: &str, branch: &str, kind: &str, text: &str) -> String {
    serde_json::json!({
        "type": kind,
        "timestamp": t,
        "cwd": cwd,
        "gitBranch": branch,
        "sessionId": "5d3c2b1a-0000-4000-8000-0000000000b1",
        "message": {"role": kind, "content": text},
    })
    .to_string()
        + "\n"
}

fn write(dir: &Path, text: &str) -> std::path::PathBuf {
    let projects = dir.join("claude/projects/-work-a");
    std::fs::create_dir_all(&projects).unwrap();
    let t = projects.join("5d3c2b1a-0000-4000-8000-0000000000b1.jsonl");
    std::fs::write(&t, text).unwrap();
    dir.join("claude/projects")
}

#[test]
fn a_listed_stages_facts_are_kept_with_the_scope_in_force_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let mut text = line(
        "2026-05-01T10:00:00Z",
        "/work/a",
        "main",
        "user",
        "tidy the README",
    );
    text += &line(
        "2026-05-01T10:00:04Z",
        "/work/a",
        "main",
        "assistant",
        "Tidied the table.",
    );
    text += &line(
        "2026-05-01T10:05:00Z",
        "/work/b",
        "feature-x",
        "user",
        "now the tests",
    );
    text += &line(
        "2026-05-01T10:05:09Z",
        "/work/b",
        "feature-x",
        "assistant",
        "Six tests written for the new parser.",
    );
    let root = write(tmp.path(), &text);

    let kept = transcope_example_third_party::kept(&home, std::slice::from_ref(&root)).unwrap();
    // The branch in force when each reply was written (no resolver: no project).
    let got: Vec<(String, &str, serde_json::Value)> = kept
        .iter()
        .map(|r| {
            (
                r.session.clone(),
                r.scope[2].as_str(),
                serde_json::from_str(&r.value).unwrap(),
            )
        })
        .collect();
    let s = "5d3c2b1a-0000-4000-8000-0000000000b1".to_owned();
    assert_eq!(
        got,
        [
            (s.clone(), "main", serde_json::json!({"words": 3})),
            (s.clone(), "feature-x", serde_json::json!({"words": 7})),
        ],
        "{kept:#?}"
    );
    assert!(kept
        .iter()
        .all(|r| r.stage == "replies" && r.at_us.is_some()));

    // Again: nothing new is read, nothing is kept twice.
    let again = transcope_example_third_party::kept(&home, std::slice::from_ref(&root)).unwrap();
    assert_eq!(again, kept);

    // A reply appended later is read from where the cursor stood and kept beside them.
    text += &line(
        "2026-05-01T10:09:00Z",
        "/work/b",
        "feature-x",
        "assistant",
        "Shipped.",
    );
    write(tmp.path(), &text);
    let more = transcope_example_third_party::kept(&home, &[root]).unwrap();
    assert_eq!(more.len(), 3);
    assert_eq!(&more[..2], &kept[..]);
    assert_eq!(
        (more[2].scope[2].as_str(), more[2].value.as_str()),
        ("feature-x", r#"{"words":1}"#)
    );
}

//! Caller identity through the binary: `transcope identity`, and a sub-agent's Stop
//! writing its own scope log (`<session>.<agent>`) and naming itself in its markers.

use serde_json::{json, Value};

mod common;

use common::run;

const SID: &str = "6f1c2b3a-0000-4000-8000-00000000abcd";
const AID: &str = "a4ca7529859c158c2";

struct Layout {
    _root: tempfile::TempDir,
    home: std::path::PathBuf,
    config: std::path::PathBuf,
    parent: std::path::PathBuf,
    agent: std::path::PathBuf,
    user: std::path::PathBuf,
}

fn line(v: Value) -> String {
    format!("{v}\n")
}

/// A Claude config dir with a parent session and one sub-agent whose transcript
/// changes folder and branch and holds a marker.
fn layout() -> Layout {
    let root = tempfile::tempdir().unwrap();
    let r = root.path().canonicalize().unwrap();
    let config = r.join("claude");
    let proj = config.join("projects/-work-app");
    std::fs::create_dir_all(proj.join(SID).join("subagents")).unwrap();
    let parent = proj.join(format!("{SID}.jsonl"));
    std::fs::write(
        &parent,
        line(json!({"type": "user", "sessionId": SID, "uuid": "p1", "cwd": "/work/app", "gitBranch": "main", "timestamp": "2026-10-08T10:00:00Z", "message": {"role": "user", "content": "go"}})),
    )
    .unwrap();
    let agent = proj
        .join(SID)
        .join("subagents")
        .join(format!("agent-{AID}.jsonl"));
    let mut t = String::new();
    t.push_str(&line(json!({"type": "user", "sessionId": SID, "agentId": AID, "isSidechain": true, "uuid": "a1", "cwd": "/work/app", "gitBranch": "main", "timestamp": "2026-10-08T10:01:00Z", "message": {"role": "user", "content": "task"}})));
    t.push_str(&line(json!({"type": "assistant", "sessionId": SID, "agentId": AID, "isSidechain": true, "uuid": "a2", "cwd": "/work/app-wt", "gitBranch": "worktree-agent", "timestamp": "2026-10-08T10:02:00Z", "message": {"role": "assistant", "content": [{"type": "text", "text": "<!-- @lesson -->Worktrees isolate agents.<!-- @/lesson -->"}]}})));
    std::fs::write(&agent, t).unwrap();
    let user = r.join("user");
    std::fs::create_dir_all(&user).unwrap();
    Layout {
        home: r.join("ah"),
        config,
        parent,
        agent,
        user,
        _root: root,
    }
}

fn env(l: &Layout) -> Vec<(&'static str, String)> {
    vec![
        ("CLAUDE_CONFIG_DIR", l.config.display().to_string()),
        ("HOME", l.user.display().to_string()),
        ("BRAIN_WRITER_ENABLED", "1".into()),
    ]
}

#[test]
fn a_subagent_stop_writes_its_own_scope_log_and_names_itself() {
    let l = layout();
    let e = env(&l);
    let env: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The parent's Stop first.
    let p = json!({"hook_event_name": "Stop", "session_id": SID, "transcript_path": l.parent, "cwd": "/work/app"}).to_string();
    let out = run(&l.home, &["hook", "stop", "--json"], &p, &env);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scope_key"], SID);
    let parent_log = l.home.join(format!("brain/session-scopes/{SID}.jsonl"));
    let before = std::fs::read(&parent_log).unwrap();
    // The sub-agent's SubagentStop, named only by its id (Record builds its path).
    let p = json!({"hook_event_name": "SubagentStop", "session_id": SID, "transcript_path": l.parent, "agent_id": AID, "cwd": "/work/app"}).to_string();
    let out = run(&l.home, &["hook", "stop", "--json"], &p, &env);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = format!("{SID}.{AID}");
    assert_eq!(v["scope_key"], key.as_str());
    assert_eq!(v["transitions_recorded"], 2);
    assert_eq!(v["markers"], 1);
    let own =
        std::fs::read_to_string(l.home.join(format!("brain/session-scopes/{key}.jsonl"))).unwrap();
    let rows: Vec<Value> = own
        .lines()
        .map(|x| serde_json::from_str(x).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["cwd"], "/work/app-wt");
    assert_eq!(rows[1]["branch"], "worktree-agent");
    assert!(rows.iter().all(|r| r["session_id"] == key.as_str()));
    assert_eq!(
        std::fs::read(&parent_log).unwrap(),
        before,
        "the parent's log is untouched"
    );
    // Its marker names the sub-agent key.
    let outbox = l.home.join("brain-outbox");
    let files: Vec<_> = std::fs::read_dir(&outbox).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let rec: Value = serde_json::from_slice(&std::fs::read(files[0].path()).unwrap()).unwrap();
    assert_eq!(rec["session_id"], key.as_str());
    assert_eq!(rec["attrs"]["session_id"], key.as_str());
    assert_eq!(rec["attrs"]["branch"], "worktree-agent");
    // Also when the payload names the agent's transcript directly.
    let p = json!({"hook_event_name": "SubagentStop", "session_id": SID, "transcript_path": l.parent, "agent_transcript_path": l.agent}).to_string();
    let out = run(&l.home, &["hook", "stop", "--json"], &p, &env);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scope_key"], key.as_str());
    assert_eq!(v["transitions_recorded"], 0, "already recorded");
}

#[test]
fn a_refused_guess_writes_nothing_and_says_why() {
    let l = layout();
    let e = env(&l);
    let env: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // An agent id that is a path: refused.
    let p = json!({"hook_event_name": "SubagentStop", "session_id": SID, "transcript_path": l.parent, "agent_id": "../x"}).to_string();
    let out = run(&l.home, &["hook", "stop"], &p, &env);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused"), "{err}");
    assert!(!l.home.exists(), "nothing written");
    // No transcript path: the record is guessed from the session id and the folder, and
    // the guess holds another session's records: refused.
    let other = "11111111-2222-4333-8444-555555555555";
    let guessed = l.parent.parent().unwrap().join(format!("{other}.jsonl"));
    std::fs::write(&guessed, line(json!({"type": "user", "sessionId": SID, "uuid": "z", "cwd": "/work/app", "timestamp": "2026-10-08T10:00:00Z"}))).unwrap();
    let p = json!({"hook_event_name": "Stop", "session_id": other, "cwd": "/work/app"}).to_string();
    let out = run(&l.home, &["hook", "stop"], &p, &env);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("refused"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!l.home.exists());
    let v: Value = serde_json::from_slice(&run(&l.home, &["identity"], &p, &env).stdout).unwrap();
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()));
    assert!(v["scope_key"].is_null());
}

#[test]
fn identity_prints_the_contract_keys() {
    let l = layout();
    let e = env(&l);
    let env: Vec<(&str, &str)> = e.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let p = json!({"hook_event_name": "SubagentStop", "session_id": SID, "transcript_path": l.parent, "agent_id": AID, "cwd": "/work/app"}).to_string();
    let out = run(&l.home, &["identity"], &p, &env);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "record",
            "session_record",
            "state_cwd",
            "stable_id",
            "degraded",
            "scope_key",
            "error"
        ]
    );
    assert_eq!(v["record"], l.agent.display().to_string());
    assert_eq!(v["session_record"], l.parent.display().to_string());
    assert_eq!(v["scope_key"], format!("{SID}.{AID}"));
    assert!(v["error"].is_null());
    // A root session.
    let p = json!({"session_id": SID, "transcript_path": l.parent}).to_string();
    let v: Value = serde_json::from_slice(&run(&l.home, &["identity"], &p, &env).stdout).unwrap();
    assert_eq!(v["scope_key"], SID);
    assert_eq!(
        v["stable_id"], "p1",
        "keyed on the conversation's first record"
    );
    // An empty payload is an empty input, not an error.
    let out = run(&l.home, &["identity"], "", &env);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["scope_key"].is_null());
}

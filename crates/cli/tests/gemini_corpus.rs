//! A generated corpus with Gemini CLI sessions (`transcope-corpus --gemini-share`),
//! backfilled from the agents' default folders under a home: every Gemini session
//! appears as agent `gemini` (a sub-agent under its parent), with its one scope
//! transition — into its project's folder, at its start: the CLI records no folder per
//! message and no branch — and the tokens of its replies equal to the independent count.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::reliability::count::*;
use common::reliability::*;
use serde_json::Value;
use transcope_corpus::{CorpusSpec, FileKind};

/// A session file's `startTime`: a document's, or a log's first line's.
fn start_time(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let header: Value = if file.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).unwrap()
    } else {
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    header["startTime"].as_str().unwrap().to_owned()
}

#[test]
fn generated_gemini_sessions_are_found_with_their_scope_and_usage() {
    let corpus = tempfile::tempdir().unwrap();
    let mut spec = CorpusSpec::new(3701, 3_000_000);
    spec.gemini_share = 0.35;
    let m = transcope_corpus::generate(&spec, corpus.path()).unwrap();
    let root = Path::new(&m.root);

    // No folders named: the default ones, under the agents' homes.
    let sb = Sandbox::new();
    let out = run(sb.corpus_cmd(root, &["backfill", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let sessions: BTreeMap<String, Value> = stdout_of(&sb, &["sessions", "--json", "--no-sync"])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["session"].as_str().unwrap().to_owned(), v)
        })
        .collect();
    let (mut mains, mut subagents, mut documents, mut logs) = (0, 0, 0, 0);
    for e in &m.entries {
        let (key, parent) = match e.kind {
            FileKind::GeminiSession => (e.session_id.clone(), Value::Null),
            FileKind::GeminiSubagent => {
                let own = e.agent_id.as_deref().unwrap();
                (
                    format!("{}.{own}", e.session_id),
                    e.session_id.as_str().into(),
                )
            }
            _ => continue,
        };
        let file = root.join(&e.path);
        let session = sessions
            .get(&key)
            .unwrap_or_else(|| panic!("{key} ({}) not among the sessions", e.path));
        assert_eq!(session["agent"], "gemini", "{session}");
        assert_eq!(session["parent"], parent, "{session}");
        assert_eq!(session["transcript"], file.display().to_string());
        assert_eq!(session["transitions"], 1, "{session}");
        assert_eq!(e.cwd_switches, 0);
        let rows = check_log(&std::fs::read(sb.log(&key)).unwrap());
        assert_eq!(rows.len(), 1, "{key}: {rows:?}");
        assert_eq!(rows[0]["cwd"], e.cwds[0].as_str(), "{key}");
        assert_eq!(rows[0]["at"], start_time(&file).as_str(), "{key}");
        match e.kind {
            FileKind::GeminiSubagent => subagents += 1,
            _ => mains += 1,
        }
        if e.path.ends_with(".json") {
            documents += 1;
        } else {
            logs += 1;
        }
    }
    assert!(
        mains >= 3 && subagents >= 1,
        "{mains} sessions, {subagents} sub-agents"
    );
    assert!(
        documents >= 1 && logs >= 1,
        "{documents} documents, {logs} logs"
    );
    let others = sessions.values().filter(|s| s["agent"] != "gemini").count();
    assert!(others > 0, "the Claude and Codex sessions are there too");

    // Every reply's tokens, counted as the independent reader counts them.
    let roots = [
        root.join("claude/projects"),
        root.join("codex/sessions"),
        root.join("gemini/.gemini/tmp"),
    ];
    let (days, by_root) = expected(&roots);
    assert_eq!(usage_by(&sb, "day", "day"), days);
    assert_eq!(usage_by(&sb, "root-session", "root_session"), by_root);
    let gemini_roots = m
        .entries
        .iter()
        .filter(|e| e.kind == FileKind::GeminiSession)
        .filter(|e| by_root.get(&e.session_id).is_some_and(|c| c[4] > 0))
        .count();
    assert!(
        gemini_roots >= 2,
        "{gemini_roots} Gemini sessions with usage"
    );
}

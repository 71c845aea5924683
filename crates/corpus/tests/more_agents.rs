//! The Qwen Code and Copilot CLI sessions of a corpus (`CorpusSpec::qwen_share`,
//! `CorpusSpec::copilot_share`): byte-identical for a seed whatever the threads, where
//! each CLI keeps them, what the manifest says of each (read back here from the lines:
//! folders, branches, markers, torn and invalid lines), and the other agents' sessions
//! left as they are without them.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

mod common;

use common::{lines_of, markers, tree_hash, walk};
use serde_json::Value;
use transcope_corpus::{generate, CorpusSpec, FileKind, Manifest};

fn spec(seed: u64, bytes: u64) -> CorpusSpec {
    let mut s = CorpusSpec::new(seed, bytes);
    (s.gemini_share, s.qwen_share, s.copilot_share) = (0.15, 0.25, 0.3);
    s
}

#[test]
fn every_agent_is_byte_identical_for_a_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let m = generate(&spec(11, 3_000_000), &out).unwrap();
    for kind in [
        FileKind::ClaudeSession,
        FileKind::CodexRollout,
        FileKind::GeminiSession,
        FileKind::QwenSession,
        FileKind::QwenSubagent,
        FileKind::CopilotSession,
    ] {
        assert!(m.of_kind(kind).next().is_some(), "{kind:?}");
    }
    let first = tree_hash(&out);
    fs::remove_dir_all(&out).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| generate(&spec(11, 3_000_000), &out))
        .unwrap();
    assert_eq!(first, tree_hash(&out), "same seed, one thread");
    fs::remove_dir_all(&out).unwrap();
    generate(&spec(12, 3_000_000), &out).unwrap();
    assert_ne!(first, tree_hash(&out), "another seed");
}

#[test]
fn the_other_agents_sessions_are_as_without_qwen_and_copilot() {
    let tmp = tempfile::tempdir().unwrap();
    // The same folder for both (paths are in the files).
    let out = tmp.path().join("c");
    let mut plain = CorpusSpec::new(5, 4_000_000);
    plain.gemini_share = 0.2;
    generate(&plain, &out).unwrap();
    let mut before = BTreeMap::new();
    let mut files = Vec::new();
    walk(&out, &mut files);
    for f in files {
        before.insert(
            f.strip_prefix(&out).unwrap().to_owned(),
            fs::read(&f).unwrap(),
        );
    }
    fs::remove_dir_all(&out).unwrap();
    let mut more = plain.clone();
    (more.qwen_share, more.copilot_share) = (0.3, 0.3);
    let m = generate(&more, &out).unwrap();
    let mut kept = 0;
    for e in &m.entries {
        if matches!(
            e.kind,
            FileKind::QwenSession
                | FileKind::QwenSubagent
                | FileKind::QwenAgentMeta
                | FileKind::CopilotSession
        ) {
            continue;
        }
        let now = fs::read(out.join(&e.path)).unwrap();
        // A session past the plain corpus's size target is not in it.
        let Some(was) = before.get(Path::new(&e.path)) else {
            continue;
        };
        // The session cut at the size target is a prefix of its whole self.
        assert!(was.starts_with(&now), "{}", e.path);
        kept += usize::from(*was == now);
    }
    assert!(kept > 10, "{kept}");
}

/// The text parts of a Qwen `assistant` record that are not thoughts; a Copilot
/// `assistant.message`'s content.
fn reply_text(kind: FileKind, v: &Value) -> Option<String> {
    match kind {
        FileKind::CopilotSession if v["type"] == "assistant.message" => {
            v["data"]["content"].as_str().map(str::to_owned)
        }
        FileKind::QwenSession | FileKind::QwenSubagent if v["type"] == "assistant" => Some(
            v["message"]["parts"]
                .as_array()?
                .iter()
                .filter(|p| p["thought"] != true)
                .filter_map(|p| p["text"].as_str())
                .collect(),
        ),
        _ => None,
    }
}

/// A record's folder and branch, when it states them: every Qwen record; Copilot's
/// `session.start`/`session.resume` context and `session.context_changed` data.
fn scope_of(kind: FileKind, v: &Value) -> Option<(String, String)> {
    let pair = |c: &Value, b: &str| {
        Some((
            c["cwd"].as_str()?.to_owned(),
            c[b].as_str().unwrap_or("").to_owned(),
        ))
    };
    match kind {
        FileKind::CopilotSession => match v["type"].as_str()? {
            "session.start" | "session.resume" => pair(&v["data"]["context"], "branch"),
            "session.context_changed" => pair(&v["data"], "branch"),
            _ => None,
        },
        _ => pair(v, "gitBranch"),
    }
}

#[test]
fn qwen_and_copilot_files_sit_where_the_clis_keep_them_and_match_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let m: Manifest = generate(&spec(23, 4_000_000), tmp.path()).unwrap();
    let root = PathBuf::from(&m.root);
    let (mut switches, mut marks, mut shutdowns, mut usage, mut sidechains, mut metas) =
        (0, 0, 0, 0, 0, 0);
    for e in &m.entries {
        let file = root.join(&e.path);
        let data = fs::read(&file).unwrap();
        assert_eq!(data.len() as u64, e.bytes, "{}", e.path);
        match e.kind {
            FileKind::QwenSession => {
                let rest = e.path.strip_prefix("qwen/.qwen/projects/").unwrap();
                let parts: Vec<&str> = rest.split('/').collect();
                assert_eq!(parts[1..], ["chats", &format!("{}.jsonl", e.session_id)]);
                let folder: String = e.cwds[0]
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                    .collect();
                assert_eq!(parts[0], folder, "named by its first folder");
            }
            FileKind::QwenSubagent => {
                let agent = e.agent_id.as_deref().unwrap();
                assert!(e
                    .path
                    .ends_with(&format!("/subagents/{}/agent-{agent}.jsonl", e.session_id)));
            }
            FileKind::QwenAgentMeta => {
                metas += 1;
                let v: Value = serde_json::from_slice(&data).unwrap();
                assert_eq!(v["parentSessionId"], e.session_id.as_str());
                assert_eq!(v["agentId"].as_str(), e.agent_id.as_deref());
                continue;
            }
            FileKind::CopilotSession => {
                let rest = e
                    .path
                    .strip_prefix("copilot/.copilot/session-state/")
                    .unwrap();
                assert!(
                    rest == format!("{}/events.jsonl", e.session_id)
                        || rest == format!("{}.jsonl", e.session_id),
                    "{}",
                    e.path
                );
            }
            _ => continue,
        }
        let (lines, torn) = lines_of(&data, e);
        let (mut cwds, mut branches) = (Vec::<String>::new(), Vec::<String>::new());
        let (mut cwd_sw, mut branch_sw, mut found) = (0, 0, 0);
        let mut last: Option<(String, String)> = None;
        let mut prev_id: Option<String> = None;
        for (i, l) in lines.iter().enumerate() {
            let n = i as u64 + 1;
            if torn && n == e.lines {
                assert!(serde_json::from_slice::<Value>(l).is_err());
                continue;
            }
            let Ok(v) = serde_json::from_slice::<Value>(l).map(|v| v.is_object().then_some(v))
            else {
                assert!(e.invalid_lines.contains(&n), "{} line {n}", e.path);
                continue;
            };
            let Some(v) = v else {
                assert!(e.invalid_lines.contains(&n), "{} line {n}", e.path);
                continue;
            };
            assert!(!e.invalid_lines.contains(&n));
            // Each record names the one before it.
            let (id, parent) = match e.kind {
                FileKind::CopilotSession => ("id", "parentId"),
                _ => ("uuid", "parentUuid"),
            };
            assert_eq!(
                v[parent].as_str(),
                prev_id.as_deref(),
                "{} line {n}",
                e.path
            );
            prev_id = v[id].as_str().map(str::to_owned);
            if e.kind == FileKind::QwenSubagent {
                assert_eq!(v["isSidechain"], true);
                assert_eq!(v["sessionId"], e.session_id.as_str());
                sidechains += 1;
            }
            if let Some((c, b)) = scope_of(e.kind, &v) {
                if let Some((lc, lb)) = &last {
                    cwd_sw += u64::from(*lc != c);
                    branch_sw += u64::from(*lb != b);
                }
                if !cwds.contains(&c) {
                    cwds.push(c.clone());
                }
                if !branches.contains(&b) {
                    branches.push(b.clone());
                }
                last = Some((c, b));
            }
            if let Some(t) = reply_text(e.kind, &v) {
                found += markers(&t).len() as u64;
            }
            if v["type"] == "session.shutdown" {
                shutdowns += 1;
                for (_, mm) in v["data"]["modelMetrics"].as_object().unwrap() {
                    let u = &mm["usage"];
                    let n = |k: &str| u[k].as_u64().unwrap_or(0);
                    // Input includes the cache reads and writes.
                    assert!(n("inputTokens") >= n("cacheReadTokens") + n("cacheWriteTokens"));
                    assert!(n("outputTokens") >= n("reasoningTokens"));
                    usage += 1;
                }
            }
            if let Some(u) = v.get("usageMetadata") {
                let n = |k: &str| u[k].as_u64().unwrap();
                assert_eq!(
                    n("totalTokenCount"),
                    n("promptTokenCount") + n("candidatesTokenCount")
                );
                assert!(n("promptTokenCount") >= n("cachedContentTokenCount"));
                assert!(n("candidatesTokenCount") >= n("thoughtsTokenCount"));
                usage += 1;
            }
        }
        assert_eq!(
            (cwd_sw, branch_sw),
            (e.cwd_switches, e.branch_switches),
            "{}",
            e.path
        );
        assert_eq!((&cwds, &branches), (&e.cwds, &e.branches), "{}", e.path);
        assert_eq!(found, e.markers, "{}", e.path);
        switches += e.cwd_switches + e.branch_switches;
        marks += e.markers;
    }
    assert!(switches > 5, "{switches}");
    assert!(marks > 0, "{marks}");
    assert!(shutdowns > 2 && usage > 50, "{shutdowns} {usage}");
    assert!(sidechains > 0 && metas > 0, "{sidechains} {metas}");
}

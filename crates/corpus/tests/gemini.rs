//! The Gemini CLI sessions of a corpus (`CorpusSpec::gemini_share`): where the CLI keeps
//! them, what the manifest says of each, the CLI's records of their folders, and the
//! other agents' sessions left as they are without Gemini.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

mod common;

use common::{lines_of, markers, walk};
use serde_json::Value;
use sha2::{Digest, Sha256};
use transcope_corpus::{encode_cwd, generate, CorpusSpec, FileKind, Manifest};

fn with_gemini(seed: u64, bytes: u64, share: f64, out: &Path) -> Manifest {
    let mut spec = CorpusSpec::new(seed, bytes);
    spec.gemini_share = share;
    generate(&spec, out).unwrap()
}

fn sha256_hex(s: &str) -> String {
    format!("{:x}", Sha256::digest(s.as_bytes()))
}

/// The markers an extractor finds in a text, and how many are shared with the fleet.
fn marker_count(text: &str) -> (u64, u64) {
    let found = markers(text);
    let fleet = found
        .iter()
        .filter(|(_, attrs, _)| attrs.get("share").is_some_and(|s| s == "fleet"))
        .count();
    (found.len() as u64, fleet as u64)
}

/// A `gemini` message's marker text: its content, a string or its text parts that are
/// not thoughts.
fn reply_text(m: &Value) -> Option<String> {
    if m["type"] != "gemini" {
        return None;
    }
    Some(match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["thought"] != true)
            .filter_map(|p| p["text"].as_str())
            .collect(),
        _ => String::new(),
    })
}

#[test]
fn sessions_sit_where_the_cli_keeps_them_and_match_the_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let m = with_gemini(21, 3_000_000, 1.0, tmp.path());
    let root = PathBuf::from(&m.root);
    let home = root.join("gemini/.gemini");
    let registry: BTreeMap<String, String> =
        serde_json::from_str::<Value>(&fs::read_to_string(home.join("projects.json")).unwrap())
            .unwrap()["projects"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
    let (mut documents, mut logs, mut hashed, mut subagents, mut tokens) = (0, 0, 0, 0, 0);
    let mut all_markers = 0;
    for e in m
        .of_kind(FileKind::GeminiSession)
        .chain(m.of_kind(FileKind::GeminiSubagent))
    {
        let file = root.join(&e.path);
        let data = fs::read(&file).unwrap();
        assert_eq!(data.len() as u64, e.bytes, "{}", e.path);
        let folder = &e.cwds[..];
        assert_eq!(folder.len(), 1, "one folder a session: {}", e.path);
        let folder = &folder[0];
        assert!(Path::new(folder).is_dir(), "{folder}");
        assert_eq!((e.cwd_switches, e.branch_switches), (0, 0));
        assert!(e.branches.is_empty());

        // tmp/<dir>/chats/session-….json[l] or tmp/<dir>/chats/<parent>/<own>.json[l]
        let rel = e.path.strip_prefix("gemini/.gemini/tmp/").unwrap();
        let parts: Vec<&str> = rel.split('/').collect();
        let dir = parts[0];
        assert_eq!(parts[1], "chats", "{}", e.path);
        let own = match e.kind {
            FileKind::GeminiSession => {
                assert_eq!(parts.len(), 3, "{}", e.path);
                assert!(parts[2].starts_with("session-"), "{}", e.path);
                assert!(parts[2].contains(&format!("-{}.", &e.session_id[..8])));
                assert_eq!(e.agent_id, None);
                e.session_id.clone()
            }
            _ => {
                subagents += 1;
                assert_eq!(parts.len(), 4, "{}", e.path);
                assert_eq!(parts[2], e.session_id, "{}", e.path);
                let own = e.agent_id.clone().unwrap();
                assert!(parts[3].starts_with(&format!("{own}.")), "{}", e.path);
                own
            }
        };
        // The folder: behind a hash folder through projects.json, else .project_root.
        if dir == sha256_hex(folder) {
            hashed += 1;
            assert!(!home.join("tmp").join(dir).join(".project_root").exists());
        } else {
            let recorded = fs::read_to_string(home.join("tmp").join(dir).join(".project_root"));
            assert_eq!(recorded.unwrap(), *folder, "{}", e.path);
            assert_eq!(registry.get(folder).map(String::as_str), Some(dir));
        }
        assert!(
            registry.contains_key(folder),
            "{folder} not in projects.json"
        );

        let (header, messages, (found, fleet), echoed) = if e.path.ends_with(".json") {
            documents += 1;
            assert_eq!((e.lines, e.torn_last_line), (1, false), "{}", e.path);
            assert!(e.invalid_lines.is_empty());
            let mut doc: Value = serde_json::from_slice(&data).unwrap();
            let messages: Vec<Value> = doc["messages"].as_array().unwrap().clone();
            doc.as_object_mut().unwrap().remove("messages");
            let mut found = (0, 0);
            for t in messages.iter().filter_map(reply_text) {
                let (n, fleet) = marker_count(&t);
                found = (found.0 + n, found.1 + fleet);
            }
            (doc, messages, found, 0)
        } else {
            logs += 1;
            let (lines, torn) = lines_of(&data, e);
            let mut invalid = Vec::new();
            let mut records = Vec::new();
            for (i, l) in lines.iter().enumerate() {
                match serde_json::from_slice::<Value>(l)
                    .ok()
                    .filter(Value::is_object)
                {
                    Some(v) => records.push(v),
                    None if torn && i + 1 == lines.len() => {}
                    None => invalid.push(i as u64 + 1),
                }
            }
            assert_eq!(invalid, e.invalid_lines, "{}", e.path);
            let header = records.remove(0);
            // A message counts once, at its first record; a record again echoes it.
            let (mut found, mut echoed, mut seen) = ((0, 0), 0, BTreeSet::new());
            let mut messages = Vec::new();
            for r in records {
                if r.get("$set").is_some() || r.get("$rewindTo").is_some() {
                    continue;
                }
                let (n, fleet) = reply_text(&r).map_or((0, 0), |t| marker_count(&t));
                if seen.insert(r["id"].as_str().unwrap().to_owned()) {
                    found = (found.0 + n, found.1 + fleet);
                } else {
                    echoed += n;
                }
                messages.push(r);
            }
            (header, messages, found, echoed)
        };
        assert_eq!(header["sessionId"], own.as_str(), "{}", e.path);
        assert_eq!(header["projectHash"], sha256_hex(folder).as_str());
        assert!(header["startTime"].is_string());
        if e.kind == FileKind::GeminiSubagent {
            assert_eq!(header["kind"], "subagent");
            assert_eq!(header["directories"][0], folder.as_str());
        }
        assert_eq!(found, e.markers, "markers of {}", e.path);
        assert_eq!(fleet, e.fleet_markers, "fleet markers of {}", e.path);
        all_markers += found;
        assert_eq!(echoed, e.echoed_markers, "echoed markers of {}", e.path);
        for msg in &messages {
            assert!(
                msg["id"].is_string() && msg["timestamp"].is_string(),
                "{msg}"
            );
            if msg["type"] == "gemini" && msg["tokens"].is_object() {
                tokens += 1;
                let t = &msg["tokens"];
                let n = |k: &str| t[k].as_u64().unwrap();
                assert_eq!(
                    n("total"),
                    n("input") + n("output") + n("thoughts") + n("tool")
                );
                assert!(msg["model"].is_string());
            }
        }
    }
    assert!(
        documents >= 2 && logs >= 1,
        "{documents} documents, {logs} logs"
    );
    assert!(
        hashed >= 1 && subagents >= 2,
        "{hashed} hashed, {subagents} sub-agents"
    );
    assert!(tokens > 20, "{tokens} replies with tokens");
    assert!(all_markers > 0, "no marker in any reply");
    // The manifest lists exactly the session files on disk.
    let mut on_disk = Vec::new();
    walk(&home.join("tmp"), &mut on_disk);
    let listed: BTreeSet<PathBuf> = m
        .entries
        .iter()
        .filter(|e| e.path.starts_with("gemini/"))
        .map(|e| root.join(&e.path))
        .collect();
    let sessions: BTreeSet<PathBuf> = on_disk
        .into_iter()
        .filter(|p| !p.ends_with(".project_root"))
        .collect();
    assert_eq!(sessions, listed);
}

/// Every file of `root` but the manifest, with the root's path in names and contents
/// written `ROOT` (two corpora of one seed in two folders compare equal).
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = Vec::new();
    walk(root, &mut all);
    let r = root.to_str().unwrap();
    let (enc, plain) = (encode_cwd(r), r.to_owned());
    all.into_iter()
        .filter(|p| !p.ends_with("manifest.json"))
        .map(|p| {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .replace(&enc, "ROOT");
            let text = String::from_utf8_lossy(&fs::read(&p).unwrap())
                .replace(&plain, "ROOT")
                .replace(&enc, "ROOT");
            (rel, text.into_bytes())
        })
        .collect()
}

#[test]
fn gemini_sessions_leave_the_others_as_they_are_without_them() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let without = with_gemini(33, 10_000_000, 0.0, &a);
    let with = with_gemini(33, 3_000_000, 0.5, &b);
    assert!(
        !a.join("gemini").exists(),
        "no gemini/ folder without Gemini sessions"
    );
    let manifest = fs::read_to_string(a.join("manifest.json")).unwrap();
    assert!(
        !manifest.contains("gemini"),
        "the spec is written as before"
    );
    assert!(with.of_kind(FileKind::GeminiSession).count() >= 3);
    let (a_files, b_files) = (
        files(Path::new(&without.root)),
        files(Path::new(&with.root)),
    );
    // The last session was cut at the size target: its files are a prefix.
    let last = &with.entries.last().unwrap().session_id;
    let mut compared = 0;
    for e in &with.entries {
        if e.path.starts_with("gemini/") || e.session_id == *last {
            continue;
        }
        let rel = e.path.replace(&encode_cwd(&with.root), "ROOT");
        assert_eq!(
            b_files.get(&rel),
            a_files.get(&rel),
            "{} differs from the corpus without Gemini",
            e.path
        );
        compared += 1;
    }
    assert!(compared > 5, "{compared} files compared");
    // The repositories are the same too.
    for (rel, bytes) in b_files.iter().filter(|(r, _)| r.starts_with("repos/")) {
        assert_eq!(Some(bytes), a_files.get(rel), "{rel}");
    }
}

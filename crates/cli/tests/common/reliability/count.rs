//! The independent count of token usage: the fixtures read with a plain reader
//! (serde_json values, no transcope code) and the dedupe rule (one request per Claude
//! `message.id` + `requestId` across the archive, at its earliest copy's time, with the
//! largest counts any copy reports; Codex running totals by their growth; Gemini
//! messages by session and id), and `transcope usage` read back for comparison.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

/// The fixtures with usage of every agent: the sample archive's Claude and Codex
/// folders, the public transcripts, and Gemini CLI sessions where the CLI keeps them
/// (the detached copies beside them are read only in that layout).
pub fn usage_fixture_roots() -> Vec<PathBuf> {
    vec![
        testdata().join("sample-archive/claude/projects"),
        testdata().join("sample-archive/codex/sessions"),
        testdata().join("public/claude"),
        testdata().join("public/codex"),
        testdata().join("public/gemini/home/.gemini/tmp"),
    ]
}

/// (input without cached, output, cache writes, cache reads, requests).
pub type Counts = [u64; 5];

pub fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut es: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    es.sort();
    for p in es {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "jsonl" || e == "json") {
            out.push(p);
        }
    }
}

pub fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// A request counted: its UTC day, its root session, its counts.
pub type Counted = (String, String, Counts);

/// A Gemini CLI message with tokens: once per (session, id), its first copy, of root
/// session `root`.
pub fn gemini_message(
    gemini: &mut BTreeMap<(String, String), Counted>,
    sid: &str,
    root: &str,
    m: &Value,
) {
    let (Some(id), Some(t), Some(tok)) =
        (m["id"].as_str(), m["timestamp"].as_str(), m.get("tokens"))
    else {
        return;
    };
    if m["type"] != "gemini" || !tok.is_object() {
        return;
    }
    let cached = n(tok, "cached").min(n(tok, "input"));
    let c = [
        n(tok, "input") - cached,
        n(tok, "output") + n(tok, "thoughts"),
        0,
        cached,
        1,
    ];
    if let Some(d) = day(t) {
        gemini
            .entry((sid.to_owned(), id.to_owned()))
            .or_insert((d, root.to_owned(), c));
    }
}

pub fn day(t: &str) -> Option<String> {
    // Every fixture writes UTC (`Z` or `+00:00`) times.
    (t.len() >= 10 && (t.ends_with('Z') || t.ends_with("+00:00"))).then(|| t[..10].to_owned())
}

/// The root session of the Claude Code transcript `f` whose lines are `lines`: the
/// session a sub-agent's file (`agent-*.jsonl`) belongs to — the folder before
/// `subagents`, else the `sessionId` its lines carry — or the file's own name.
pub fn claude_root(f: &Path, lines: &[(u64, Value)]) -> (String, bool) {
    let stem = f.file_stem().unwrap().to_str().unwrap();
    if !stem.starts_with("agent-") {
        return (stem.to_owned(), true);
    }
    let parts: Vec<&str> = f.iter().map(|c| c.to_str().unwrap()).collect();
    let root = match parts.iter().rposition(|c| *c == "subagents") {
        Some(i) => parts[i - 1].to_owned(),
        None => lines
            .iter()
            .find_map(|(_, j)| j["sessionId"].as_str())
            .unwrap()
            .to_owned(),
    };
    (root, false)
}

/// The root session of the Gemini CLI session `sid` kept at `f`: a sub-agent's file
/// sits in a folder named after its parent session inside `chats`.
pub fn gemini_root(f: &Path, sid: &str) -> String {
    let folder = f
        .parent()
        .and_then(Path::file_name)
        .unwrap()
        .to_str()
        .unwrap();
    if folder == "chats" {
        sid.to_owned()
    } else {
        folder.to_owned()
    }
}

/// The independent count: per UTC day, and per root session.
pub fn expected(roots: &[PathBuf]) -> (BTreeMap<String, Counts>, BTreeMap<String, Counts>) {
    // Read in path order, as a backfill streams them.
    let mut roots = roots.to_vec();
    roots.sort();
    let mut all = Vec::new();
    for r in &roots {
        files(r, &mut all);
    }
    // Claude: one request per (message.id, requestId), the earliest copy (a root
    // session's on a tie, then the first read), with whether it is a root session's.
    let mut claude: BTreeMap<(String, String), (String, bool, String, Counts)> = BTreeMap::new();
    // Codex: per session, the growth of the running total, by line offset.
    let mut codex: BTreeMap<(String, u64), Counted> = BTreeMap::new();
    // Gemini: one request per (session, message id).
    let mut gemini: BTreeMap<(String, String), Counted> = BTreeMap::new();
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        if f.extension().is_some_and(|e| e == "json") {
            let Ok(doc) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let sid = doc["sessionId"].as_str().unwrap_or("").to_owned();
            let root = gemini_root(f, &sid);
            for m in doc["messages"].as_array().into_iter().flatten() {
                gemini_message(&mut gemini, &sid, &root, m);
            }
            continue;
        }
        let lines: Vec<(u64, Value)> = {
            let mut off = 0u64;
            let mut v = Vec::new();
            for l in text.split_inclusive('\n') {
                if let Ok(j) = serde_json::from_str::<Value>(l.trim_end()) {
                    v.push((off, j));
                }
                off += l.len() as u64;
            }
            v
        };
        // A Gemini CLI log: a header naming the session, then message records (and
        // updates of them): a message counts once, by id.
        if let Some(sid) = lines
            .first()
            .and_then(|(_, j)| j.get("projectHash").and(j["sessionId"].as_str()))
        {
            let sid = sid.to_owned();
            let root = gemini_root(f, &sid);
            for (_, m) in &lines[1..] {
                gemini_message(&mut gemini, &sid, &root, m);
            }
            continue;
        }
        let codex_session = lines
            .iter()
            .find(|(_, j)| j["type"] == "session_meta")
            .and_then(|(_, j)| j["payload"]["id"].as_str())
            .map(str::to_owned);
        if let Some(sid) = codex_session {
            let mut last: Option<Counts> = None;
            for (off, j) in &lines {
                if j["type"] != "event_msg" || j["payload"]["type"] != "token_count" {
                    continue;
                }
                let info = &j["payload"]["info"];
                let (tot, cumulative) = if info["total_token_usage"].is_object() {
                    (&info["total_token_usage"], true)
                } else if info["last_token_usage"].is_object() {
                    (&info["last_token_usage"], false)
                } else {
                    continue;
                };
                let cached = n(tot, "cached_input_tokens").min(n(tot, "input_tokens"));
                let now = [
                    n(tot, "input_tokens") - cached,
                    n(tot, "output_tokens"),
                    0,
                    cached,
                    1,
                ];
                let c = match (cumulative, last) {
                    (true, Some(prev)) => [
                        now[0].saturating_sub(prev[0]),
                        now[1].saturating_sub(prev[1]),
                        0,
                        now[3].saturating_sub(prev[3]),
                        1,
                    ],
                    _ => now,
                };
                if cumulative {
                    last = Some(now);
                }
                if c[..4].iter().all(|x| *x == 0) {
                    continue;
                }
                if let Some(d) = j["timestamp"].as_str().and_then(day) {
                    codex
                        .entry((sid.clone(), *off))
                        .or_insert((d, sid.clone(), c));
                }
            }
            continue;
        }
        let (root, is_root) = claude_root(f, &lines);
        for (_, j) in &lines {
            let u = &j["message"]["usage"];
            if j["type"] != "assistant" || !u.is_object() {
                continue;
            }
            let (Some(id), Some(t)) = (j["message"]["id"].as_str(), j["timestamp"].as_str()) else {
                continue;
            };
            let req = j["requestId"].as_str().unwrap_or("").to_owned();
            let c = [
                n(u, "input_tokens"),
                n(u, "output_tokens"),
                n(u, "cache_creation_input_tokens"),
                n(u, "cache_read_input_tokens"),
                1,
            ];
            if day(t).is_none() {
                continue;
            }
            // The earliest copy's time and root session (a root session's on a tie,
            // else the first read); the largest counts any copy reports (a streamed
            // message's lines carry its usage so far).
            let e = claude.entry((id.to_owned(), req)).or_insert((
                t.to_owned(),
                is_root,
                root.clone(),
                c,
            ));
            if t < e.0.as_str() || (t == e.0 && is_root && !e.1) {
                (e.0, e.1, e.2) = (t.to_owned(), is_root, root.clone());
            }
            for (kept, new) in e.3.iter_mut().zip(c).take(4) {
                *kept = (*kept).max(new);
            }
        }
    }
    let mut per_day: BTreeMap<String, Counts> = BTreeMap::new();
    let mut per_root: BTreeMap<String, Counts> = BTreeMap::new();
    let claude = claude
        .into_values()
        .map(|(t, _, root, c)| (day(&t).unwrap(), root, c));
    for (d, root, c) in claude
        .chain(codex.into_values())
        .chain(gemini.into_values())
    {
        for e in [
            per_day.entry(d).or_default(),
            per_root.entry(root).or_default(),
        ] {
            for i in 0..5 {
                e[i] += c[i];
            }
        }
    }
    (per_day, per_root)
}

/// `transcope usage --by KEY --json --no-sync`, each group's [`Counts`] by its key.
pub fn usage_by(sb: &Sandbox, key: &str, field: &str) -> BTreeMap<String, Counts> {
    let out = run(sb.cmd(&["usage", "--by", key, "--json", "--no-sync"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let k = |f: &str| v[f].as_u64().unwrap();
            (
                v[field].as_str().unwrap_or("none").to_owned(),
                [
                    k("input_tokens"),
                    k("output_tokens"),
                    k("cache_creation_input_tokens"),
                    k("cache_read_input_tokens"),
                    k("messages"),
                ],
            )
        })
        .collect()
}

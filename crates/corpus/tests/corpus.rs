//! End-to-end checks of the corpus generator against the files it writes and the real git CLI.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod common;

use common::{lines_of, markers, tree_hash, walk};
use serde_json::Value;
use transcope_corpus::{
    encode_cwd, generate, single_transcript, CorpusSpec, FileKind, Manifest, RepoKind,
};

const TARGET: u64 = 3_000_000;

fn spec(seed: u64) -> CorpusSpec {
    CorpusSpec::new(seed, TARGET)
}

/// One shared corpus for the read-only checks.
fn shared() -> &'static (PathBuf, Manifest) {
    static CORPUS: OnceLock<(PathBuf, Manifest)> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-shared-corpus");
        let _ = fs::remove_dir_all(&dir);
        let m = generate(&spec(42), &dir).unwrap();
        (PathBuf::from(&m.root), m)
    })
}

#[test]
fn same_seed_gives_identical_bytes_and_another_seed_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    generate(&spec(7), &out).unwrap();
    let first = tree_hash(&out);
    fs::remove_dir_all(&out).unwrap();

    // A single worker thread changes the batching but must not change a byte.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| generate(&spec(7), &out)).unwrap();
    assert_eq!(first, tree_hash(&out), "same seed, one thread");
    fs::remove_dir_all(&out).unwrap();

    generate(&spec(8), &out).unwrap();
    assert_ne!(first, tree_hash(&out), "another seed");
}

#[test]
fn refuses_to_overwrite_a_corpus() {
    let (root, _) = shared();
    let err = generate(&spec(42), root).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
}

#[test]
fn size_target_is_met_within_one_line() {
    let (root, m) = shared();
    assert!(m.bytes >= TARGET, "{} < {TARGET}", m.bytes);
    assert!(
        m.bytes <= TARGET + m.max_line_bytes,
        "overshoot {}",
        m.bytes - TARGET
    );

    // The manifest lists exactly the transcript files on disk, with their sizes.
    let mut on_disk = Vec::new();
    walk(&root.join("claude"), &mut on_disk);
    walk(&root.join("codex"), &mut on_disk);
    let mut disk: BTreeMap<String, u64> = BTreeMap::new();
    for p in on_disk {
        let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        disk.insert(rel, fs::metadata(&p).unwrap().len());
    }
    let listed: BTreeMap<String, u64> = m
        .entries
        .iter()
        .map(|e| (e.path.clone(), e.bytes))
        .collect();
    assert_eq!(disk, listed);
    assert_eq!(disk.values().sum::<u64>(), m.bytes);
    assert_eq!(m.files as usize, m.entries.len());
    assert_eq!(m.lines, m.entries.iter().map(|e| e.lines).sum::<u64>());
    assert_eq!(Manifest::load(root).unwrap(), *m);
}

#[test]
fn marker_extractor_agrees_with_the_spec_example() {
    let m = markers("x <!-- @signal severity=warning share=fleet -->Shared warning for every swarm.<!-- @/signal --> y");
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].0, "signal");
    assert_eq!(m[0].1["share"], "fleet");
    assert_eq!(m[0].2, "Shared warning for every swarm.");
    assert!(markers("<!-- @lesson -->never closed").is_empty());
    assert!(
        markers("<!-- @aside --><!-- @lesson -->x<!-- @/lesson --><!-- @/aside -->").is_empty()
    );
    assert_eq!(
        markers("<!-- @decision -->a <!-- @lesson -->b<!-- @/lesson --> c<!-- @/decision -->")
            .len(),
        1
    );
}

fn assistant_texts(kind: FileKind, v: &Value) -> Vec<String> {
    let texts = |content: &Value, ty: &str| -> Vec<String> {
        content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == ty)
            .filter_map(|b| b["text"].as_str().map(str::to_string))
            .collect()
    };
    match kind {
        FileKind::CodexRollout => {
            let p = &v["payload"];
            if v["type"] == "response_item" && p["type"] == "message" && p["role"] == "assistant" {
                texts(&p["content"], "output_text")
            } else {
                Vec::new()
            }
        }
        FileKind::CodexLegacy => {
            if v["type"] == "message" && v["role"] == "assistant" {
                texts(&v["content"], "output_text")
            } else {
                Vec::new()
            }
        }
        _ if v["type"] == "assistant" => texts(&v["message"]["content"], "text"),
        _ => Vec::new(),
    }
}

#[test]
fn lines_parse_and_match_the_manifest() {
    let (root, m) = shared();
    let mut checked_lines = 0u64;
    for e in &m.entries {
        let data = fs::read(root.join(&e.path)).unwrap();
        assert_eq!(data.len() as u64, e.bytes, "{}", e.path);
        if e.kind == FileKind::ClaudeAgentMeta {
            let v: Value = serde_json::from_slice(&data).unwrap();
            assert!(v.is_object() && v["agentType"].is_string(), "{}", e.path);
            continue;
        }
        let (lines, torn) = lines_of(&data, e);

        let mut invalid = Vec::new();
        let (mut last_cwd, mut last_branch, mut last_ts) =
            (None::<String>, None::<String>, None::<String>);
        let (mut cwd_sw, mut br_sw, mut ooo, mut found, mut fleet) = (0, 0, 0, 0, 0);
        for (i, line) in lines.iter().enumerate() {
            let n = i as u64 + 1;
            let parsed = serde_json::from_slice::<Value>(line)
                .ok()
                .filter(Value::is_object);
            if torn && n == e.lines {
                assert!(parsed.is_none(), "torn line parses in {}", e.path);
                continue;
            }
            let Some(v) = parsed else {
                invalid.push(n);
                continue;
            };
            checked_lines += 1;
            if let Some(ts) = v["timestamp"].as_str() {
                if last_ts.as_deref().is_some_and(|p| ts < p) {
                    ooo += 1;
                }
                last_ts = Some(ts.to_string());
            }
            let (cwd, branch) = match e.kind {
                FileKind::CodexRollout => {
                    let c = matches!(v["type"].as_str(), Some("session_meta" | "turn_context"))
                        .then(|| v["payload"]["cwd"].as_str())
                        .flatten();
                    (c, None)
                }
                FileKind::CodexLegacy => {
                    let t = v["content"][0]["text"].as_str().unwrap_or("");
                    let c = if n == 1 {
                        v["cwd"].as_str()
                    } else if v["role"] == "user" && t.starts_with("<environment_context>") {
                        t.split("<cwd>")
                            .nth(1)
                            .and_then(|r| r.split("</cwd>").next())
                    } else {
                        None
                    };
                    (c, None)
                }
                _ => (v["cwd"].as_str(), v["gitBranch"].as_str()),
            };
            if let Some(c) = cwd {
                if last_cwd.as_deref().is_some_and(|p| p != c) {
                    cwd_sw += 1;
                }
                last_cwd = Some(c.to_string());
            }
            if let Some(b) = branch {
                if last_branch.as_deref().is_some_and(|p| p != b) {
                    br_sw += 1;
                }
                last_branch = Some(b.to_string());
            }
            for t in assistant_texts(e.kind, &v) {
                for (_, attrs, _) in markers(&t) {
                    found += 1;
                    fleet += u64::from(attrs.get("share").is_some_and(|s| s == "fleet"));
                }
            }
        }
        assert_eq!(invalid, e.invalid_lines, "invalid lines of {}", e.path);
        assert_eq!(cwd_sw, e.cwd_switches, "cwd switches of {}", e.path);
        assert_eq!(br_sw, e.branch_switches, "branch switches of {}", e.path);
        assert_eq!(ooo, e.out_of_order_timestamps, "timestamps of {}", e.path);
        assert_eq!(found, e.markers, "markers of {}", e.path);
        assert_eq!(fleet, e.fleet_markers, "fleet markers of {}", e.path);
    }
    assert!(checked_lines > 1000);
    // The interesting cases occur at all.
    assert!(m.markers > 0);
    assert!(
        m.invalid_lines > 0 && m.torn_lines > 0,
        "{} {}",
        m.invalid_lines,
        m.torn_lines
    );
    assert!(m.cwd_switches > 0 && m.branch_switches > 0);
    assert!(m
        .of_kind(FileKind::CodexRollout)
        .any(|e| e.cwd_switches > 0));
    assert!(m.entries.iter().any(|e| e.out_of_order_timestamps > 0));
}

fn git(dir: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env(
            "GIT_CEILING_DIRECTORIES",
            Path::new(dir).parent().unwrap_or(Path::new("/")),
        )
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn canon(p: &str) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn repos_are_real_for_git() {
    let (root, m) = shared();
    let (mut mains, mut worktrees, mut plain) = (0, 0, 0);
    for r in &m.repos {
        assert!(Path::new(&r.path).starts_with(root.join("repos")));
        match r.kind {
            RepoKind::Plain => {
                plain += 1;
                assert!(
                    git(&r.path, &["rev-parse", "--show-toplevel"]).is_err(),
                    "{}",
                    r.path
                );
                continue;
            }
            RepoKind::Main => mains += 1,
            RepoKind::Worktree => worktrees += 1,
        }
        let top = git(&r.path, &["rev-parse", "--show-toplevel"]).unwrap();
        assert_eq!(canon(&top), canon(r.toplevel.as_ref().unwrap()));
        let origin = git(&r.path, &["remote", "get-url", "origin"]).unwrap();
        assert_eq!(Some(origin), r.origin);
        let common = git(
            &r.path,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        )
        .unwrap();
        assert_eq!(canon(&common), canon(r.common_dir.as_ref().unwrap()));
        let head = git(&r.path, &["rev-parse", "--abbrev-ref", "HEAD"]).unwrap();
        assert_eq!(
            head,
            r.branch.clone().unwrap_or_else(|| "HEAD".into()),
            "{}",
            r.path
        );
        let roots = git(&r.path, &["rev-list", "--max-parents=0", "HEAD"]).unwrap();
        assert_eq!(Some(roots), r.root_commit);
        if r.kind == RepoKind::Worktree {
            let git_dir = git(
                &r.path,
                &["rev-parse", "--path-format=absolute", "--git-dir"],
            )
            .unwrap();
            assert_ne!(
                canon(&git_dir),
                canon(&common),
                "a linked worktree has its own git dir"
            );
            let list = git(
                r.main_checkout.as_ref().unwrap(),
                &["worktree", "list", "--porcelain"],
            )
            .unwrap();
            assert!(list.contains(&format!("worktree {}", r.path)), "{list}");
        }
    }
    assert!(
        mains >= 1 && worktrees >= 1 && plain >= 1,
        "{mains} {worktrees} {plain}"
    );
    // The objects are well-formed.
    let first = m.repos.iter().find(|r| r.kind == RepoKind::Main).unwrap();
    git(&first.path, &["fsck", "--strict", "--no-dangling"]).unwrap();
    assert!(git(&first.path, &["cat-file", "-p", "HEAD:README.md"])
        .unwrap()
        .starts_with("# "));

    // Every transcript cwd exists on disk under repos/.
    for e in &m.entries {
        for c in &e.cwds {
            assert!(Path::new(c).is_dir(), "{c} in {}", e.path);
            assert!(Path::new(c).starts_with(root.join("repos")), "{c}");
        }
    }
}

#[test]
fn layout_covers_every_shape() {
    let (root, m) = shared();
    let has = |k: FileKind| m.of_kind(k).count();
    assert!(m
        .of_kind(FileKind::ClaudeSubagent)
        .any(|e| e.path.contains("/subagents/agent-")));
    assert!(has(FileKind::ClaudeAgentFlat) >= 1);
    assert!(has(FileKind::ClaudeAgentMeta) >= 1);
    assert!(has(FileKind::CodexLegacy) >= 1);
    let dated = m.of_kind(FileKind::CodexRollout).any(|e| {
        let parts: Vec<&str> = e.path.split('/').collect();
        parts.len() == 6
            && parts[..2] == ["codex", "sessions"]
            && parts[2].len() == 4
            && parts[3].len() == 2
            && parts[4].len() == 2
            && parts[5].starts_with(&format!("rollout-{}-{}-{}T", parts[2], parts[3], parts[4]))
    });
    assert!(dated, "no codex/sessions/YYYY/MM/DD/rollout-… file");

    for e in m.of_kind(FileKind::ClaudeSession) {
        // Main files sit in the project folder named after their first cwd.
        let parts: Vec<&str> = e.path.split('/').collect();
        assert_eq!(parts.len(), 4, "{}", e.path);
        assert_eq!(parts[3], format!("{}.jsonl", e.session_id));
        if let Some(first) = e.cwds.first() {
            assert_eq!(parts[2], encode_cwd(first), "{}", e.path);
        }
    }
    for e in m.of_kind(FileKind::ClaudeSubagent) {
        let id = e.agent_id.as_deref().unwrap();
        assert!(e.path.ends_with(&format!("agent-{id}.jsonl")));
        assert!(e.path.contains(&format!("/{}/subagents/", e.session_id)));
    }
    for e in m.of_kind(FileKind::ClaudeAgentFlat) {
        assert_eq!(e.agent_id.as_deref().map(str::len), Some(8));
    }
    // Sub-agent lines are sidechains carrying agentId; old sessions hold inline sidechains.
    let sub = m.of_kind(FileKind::ClaudeSubagent).next().unwrap();
    let first = fs::read_to_string(root.join(&sub.path)).unwrap();
    let v: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!(v["isSidechain"], true);
    assert_eq!(v["parentUuid"], Value::Null);
    assert_eq!(v["agentId"].as_str(), sub.agent_id.as_deref());
    let inline = m.of_kind(FileKind::ClaudeSession).any(|e| {
        fs::read_to_string(root.join(&e.path))
            .unwrap()
            .lines()
            .any(|l| l.contains("\"isSidechain\":true") && !l.contains("\"agentId\""))
    });
    assert!(inline, "no inline sidechain");
}

#[test]
fn claude_lines_have_the_real_field_set() {
    let (root, m) = shared();
    let mut types = BTreeMap::<String, u64>::new();
    let mut tool_results = 0;
    for e in m
        .of_kind(FileKind::ClaudeSession)
        .chain(m.of_kind(FileKind::ClaudeSubagent))
    {
        for line in fs::read_to_string(root.join(&e.path))
            .unwrap_or_default()
            .lines()
        {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let Some(t) = v["type"].as_str() else {
                continue;
            };
            *types.entry(t.to_string()).or_default() += 1;
            if matches!(t, "user" | "assistant") {
                for k in [
                    "parentUuid",
                    "isSidechain",
                    "userType",
                    "cwd",
                    "sessionId",
                    "version",
                    "gitBranch",
                    "uuid",
                    "timestamp",
                    "message",
                ] {
                    assert!(v.get(k).is_some(), "{k} missing in {}: {line:.200}", e.path);
                }
            }
            if t == "assistant" {
                assert!(v["requestId"].is_string());
            }
            if t == "user" && v.get("toolUseResult").is_some() {
                tool_results += 1;
                assert_eq!(v["message"]["content"][0]["type"], "tool_result");
            }
        }
    }
    for t in [
        "user",
        "assistant",
        "system",
        "summary",
        "file-history-snapshot",
        "progress",
        "attachment",
        "queue-operation",
    ] {
        assert!(types.contains_key(t), "no {t} line; saw {types:?}");
    }
    assert!(tool_results > 50);
}

#[test]
fn single_transcript_is_one_large_file_with_switches() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.jsonl");
    let e = single_transcript(&path, 2_000_000, 5).unwrap();
    let len = fs::metadata(&path).unwrap().len();
    assert_eq!(len, e.bytes);
    assert!(
        (2_000_000..2_000_000 + 4 * (1 << 20)).contains(&len),
        "{len}"
    );
    assert_eq!(
        fs::read_dir(tmp.path()).unwrap().count(),
        1,
        "only one file"
    );
    let moves = e.cwd_switches + e.branch_switches;
    assert!(e.cwd_switches >= 1 && (4..=8).contains(&moves), "{e:?}");
    let again = tmp.path().join("again.jsonl");
    single_transcript(&again, 2_000_000, 5).unwrap();
    assert_eq!(fs::read(&path).unwrap(), fs::read(&again).unwrap());
}

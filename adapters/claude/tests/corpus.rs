//! Every public corpus file through the detected adapter: no panic, the right adapter,
//! and line accounting that matches an independent count (Python `json.loads` per
//! stripped line): entries + skips = lines, skips by reason as counted.

mod common;

use transcope_core::adapter::Skip;
use transcope_core::EntryKind;

/// (file, lines, entries, blank, invalid_json, not_object, ignored)
const TABLE: &[(&str, usize, usize, usize, usize, usize, usize)] = &[
    ("claude/d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl", 29, 29, 0, 0, 0, 0),
    ("claude/d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl", 53, 53, 0, 0, 0, 0),
    ("claude/d-kimuson__claude-code-viewer__agent-test-hash-123.jsonl", 2, 2, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl", 61, 61, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__07f2e15c-a38b-454b-9148-60edc06de401.jsonl", 57, 57, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__1ca217c4-f55d-4f6e-a994-b7e2231336f0.jsonl", 0, 0, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl", 6, 6, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl", 54, 54, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__3680252d-d4e3-4416-bddd-8f5b5b4fdb7f.jsonl", 6, 6, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl", 1, 1, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__5ed31c36-bca8-40fd-8d24-f1a1f0af7901.jsonl", 12, 12, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__71c9afe9-d9cc-4583-86b3-e62ba682b83a.jsonl", 15, 15, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__94604a7b-062f-4369-bdf0-da948381c3e5.jsonl", 4, 4, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl", 4, 4, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__agent-1674bc8c.jsonl", 1, 1, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__agent-3ea04571.jsonl", 2, 2, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__agent-9fa17969.jsonl", 17, 17, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__agent-a2271d1.jsonl", 59, 59, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__agent-a36efb2a1231c41e2.jsonl", 18, 18, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__agent-a4ca7529859c158c2.jsonl", 56, 56, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__b45ad5d8-81fb-4bcb-baba-19d9f503d731.jsonl", 28, 28, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__dag_resume.jsonl", 8, 8, 0, 0, 0, 0),
    ("claude/handgemacht-ai__claude-code-log__edge_cases.jsonl", 19, 15, 0, 0, 3, 1),
    ("claude/handgemacht-ai__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl", 180, 180, 0, 0, 0, 0),
    ("claude/jazzyalex__agent-sessions__0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f.jsonl", 3, 3, 0, 0, 0, 0),
    ("claude/jazzyalex__agent-sessions__agent-a0ad4f44468bdf20d.jsonl", 4, 4, 0, 0, 0, 0),
    ("claude/jazzyalex__agent-sessions__small.jsonl", 89, 89, 0, 0, 0, 0),
    ("claude/lanegrid__agtrace__7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9.jsonl", 26, 26, 0, 0, 0, 0),
    ("claude/lanegrid__agtrace__agent-0c4c3cf8.jsonl", 2, 2, 0, 0, 0, 0),
    ("claude/lanegrid__agtrace__agent-90fa40b6.jsonl", 2, 2, 0, 0, 0, 0),
    ("codex/daaain__claude-code-log__rollout-44444444-4444-4444-8444-444444444444.jsonl", 3, 3, 0, 0, 0, 0),
    ("codex/daaain__claude-code-log__rollout-66666666-6666-4666-8666-666666666666.jsonl", 3, 2, 0, 1, 0, 0),
    ("codex/jazzyalex__agent-sessions__small.jsonl", 118, 118, 0, 0, 0, 0),
    ("codex/lanegrid__agtrace__rollout-2025-11-20-basic.jsonl", 13, 13, 0, 0, 0, 0),
    ("codex/lanegrid__agtrace__rollout-2025-12-10T04-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl", 55, 55, 0, 0, 0, 0),
    ("codex/lanegrid__agtrace__rollout-parent-019b88e0.jsonl", 4, 4, 0, 0, 0, 0),
    ("codex/lanegrid__agtrace__rollout-subagent-019b88e5.jsonl", 2, 2, 0, 0, 0, 0),
    ("codex/simonw__claude-code-transcripts__sample_codex_session.jsonl", 11, 11, 0, 0, 0, 0),
];

#[test]
fn every_corpus_file_decodes_with_sane_counts() {
    let mut files: Vec<String> = ["claude", "codex"]
        .iter()
        .flat_map(|d| common::jsonl_files(&format!("public/{d}")))
        .map(|p| {
            let s = p.to_string_lossy().into_owned();
            s[s.find("public/").unwrap() + 7..].to_owned()
        })
        .collect();
    files.sort();
    let listed: Vec<&str> = TABLE.iter().map(|r| r.0).collect();
    assert_eq!(files, listed, "the table lists every corpus file");

    for &(file, lines, entries, blank, invalid, not_object, ignored) in TABLE {
        let d = common::decode_path(&common::testdata(&format!("public/{file}")));
        let want_factory = if file.starts_with("codex/") {
            "codex"
        } else {
            "claude"
        };
        assert_eq!(d.factory, want_factory, "{file}");
        assert_eq!(d.entries.len(), entries, "entries of {file}");
        assert_eq!(
            d.entries.len() + d.skips.len(),
            lines,
            "accounting of {file}"
        );
        let c = d.skip_counts();
        let n = |k: &str| c.get(k).copied().unwrap_or(0);
        assert_eq!(
            (
                n("blank"),
                n("invalid_json"),
                n("not_object"),
                n("ignored"),
                n("wrong_type"),
                n("invalid_utf8")
            ),
            (blank, invalid, not_object, ignored, 0, 0),
            "skips of {file}"
        );
        assert!(d.entries.iter().all(|e| e.kind.is_some() && e.line >= 1));
        assert!(
            d.entries.windows(2).all(|w| w[0].line < w[1].line),
            "one entry per line, in order"
        );
    }
}

#[test]
fn edge_cases_skips_exactly_its_malformed_lines() {
    let d = common::decode_path(&common::testdata(
        "public/claude/handgemacht-ai__claude-code-log__edge_cases.jsonl",
    ));
    // 13: "massive error", 15: 42, 16: [1] are valid JSON but not objects;
    // 14: {"silly": "this"} has no type and no context.
    assert_eq!(
        d.skips,
        [
            (13, Skip::NotObject),
            (14, Skip::Ignored),
            (15, Skip::NotObject),
            (16, Skip::NotObject)
        ]
    );
    // Line 11 misspells `timestamp` and has a string `message`: still an entry, no time.
    let l11 = d.entries.iter().find(|e| e.line == 11).unwrap();
    assert_eq!(l11.kind, Some(EntryKind::User));
    assert_eq!(l11.time, transcope_core::TimeValue::Missing);
    assert_eq!(l11.cwd.as_deref(), Some("/tmp"));
    assert_eq!(d.scope_changes(), [("/tmp".to_owned(), String::new())]);
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn ef958aa1_cwd_and_branch_change_mid_session() {
    let d = common::decode_path(&common::testdata(
        "public/claude/handgemacht-ai__claude-code-log__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
    ));
    assert_eq!(
        d.scope_changes(),
        pairs(&[
            ("-experiments/worktrees", "master"),
            (
                "-experiments/worktrees/.claude/worktrees/agent-ab1e6e14",
                "worktree-agent-a4ca7529"
            ),
            ("-experiments/worktrees", "worktree-agent-a4ca7529"),
            ("-experiments/worktrees", "master"),
        ])
    );
    assert!(d.entries.iter().all(|e| e
        .session_id
        .as_deref()
        .is_none_or(|s| s == "ef958aa1-0e93-49f0-bb71-150f63befcd1")));
}

#[test]
fn agent_a4ca7529_branch_changes_to_its_worktree_branch() {
    let d = common::decode_path(&common::testdata(
        "public/claude/handgemacht-ai__claude-code-log__agent-a4ca7529859c158c2.jsonl",
    ));
    let wt = "-experiments/worktrees/.claude/worktrees/agent-a4ca7529";
    assert_eq!(
        d.scope_changes(),
        pairs(&[(wt, "master"), (wt, "worktree-agent-a4ca7529")])
    );
    assert!(d.entries.iter().all(|e| e.is_sidechain));
    assert!(d
        .entries
        .iter()
        .all(|e| e.agent_id.as_deref() == Some("a4ca7529859c158c2")));
}

#[test]
fn lanegrid_7f2abd2d_cwd_changes() {
    let d = common::decode_path(&common::testdata(
        "public/claude/lanegrid__agtrace__7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9.jsonl",
    ));
    assert_eq!(
        d.scope_changes(),
        pairs(&[
            ("/Users/zawakin/agent-sample", "claude"),
            ("/Users/zawakin/agent-sample/myapp", "claude")
        ])
    );
}

#[test]
fn inline_sidechains_and_compaction_ids() {
    let d = common::decode_path(&common::testdata(
        "public/claude/d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    ));
    let side = d.entries.iter().filter(|e| e.is_sidechain).count();
    assert!(
        side > 0 && side < d.entries.len(),
        "inline sidechain lines are flagged"
    );
    let roots = d
        .entries
        .iter()
        .filter(|e| e.uuid.is_some() && e.parent_uuid.is_none())
        .count();
    assert_eq!(roots, 3, "three parentUuid=null roots");

    let d = common::decode_path(&common::testdata(
        "public/claude/jazzyalex__agent-sessions__small.jsonl",
    ));
    let compact = d
        .entries
        .iter()
        .find(|e| e.logical_parent_uuid.is_some())
        .unwrap();
    assert_eq!(compact.kind, Some(EntryKind::System));
    assert!(compact.parent_uuid.is_none());
}

#[test]
fn the_reference_fixture_transcript() {
    let d = common::decode_path(&common::testdata("fixtures/session-scope.transcript.jsonl"));
    assert_eq!(
        d.scope_changes(),
        pairs(&[
            ("/scratch", ""),
            ("/work/alpha/one", "one"),
            ("/work/alpha/two", "two"),
            ("/work/beta", "main")
        ])
    );
    assert_eq!(d.texts().len(), 6);
    assert_eq!(
        d.texts()[0],
        "<!-- @lesson -->Before any scope.<!-- @/lesson -->"
    );
}

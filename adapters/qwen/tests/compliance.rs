//! The adapter compliance kit on every Qwen Code fixture (read in appended pieces,
//! at every line, at byte cuts, in many chunks, with torn and garbage lines: the
//! entries of one pass), and detection against every other agent's public file: each
//! is detected and named exactly as without the Qwen adapter, and none is claimed by
//! it.

use std::path::PathBuf;

use transcope_adapter_qwen::QwenLayout;
use transcope_core::adapter::Layout;
use transcope_testkit::compliance::{
    no_other_agents_line_is, others_untouched, AdapterKit, Check, Fixture,
};
use transcope_testkit::{first_non_empty_line, transcript_files as files};

fn qwen(rel: &str) -> PathBuf {
    transcope_testkit::testdata("public/qwen").join(rel)
}

const SESSION: &str =
    ".qwen/projects/-work-demo-app/chats/0a0b0c0d-1111-4222-8333-444455556666.jsonl";
const SUBAGENT: &str = ".qwen/projects/-work-demo-app/subagents/0a0b0c0d-1111-4222-8333-444455556666/agent-explore-7f3c.jsonl";

fn kit() -> AdapterKit<'static> {
    AdapterKit::new("qwen", transcope_testkit::engine::adapters)
}

#[test]
fn qwen_files_in_pieces_give_one_pass() {
    let home = qwen("home");
    let report = kit()
        .cuts(64)
        .check(&[
            Fixture::lines(home.join(SESSION)).within(&home),
            Fixture::lines(home.join(SUBAGENT)).within(&home),
            Fixture::lines(qwen(
                "jazzyalex__agent-sessions__019f0000-0000-7000-8000-000000000001.jsonl",
            )),
            // Placed as the CLI places it: found by its place as well as its lines.
            Fixture::lines(qwen(
                "jazzyalex__agent-sessions__019f0000-0000-7000-8000-000000000004.jsonl",
            ))
            .at("projects/-tmp-p/chats/019f0000-0000-7000-8000-000000000004.jsonl"),
            Fixture::lines(qwen("jazzyalex__agent-sessions__system_telemetry.jsonl")),
        ])
        .unwrap();
    assert_eq!(report.fixtures, 5);
    // 10 + 3 + 6 + 9 + 8 records, every one an entry.
    assert_eq!(report.entries, 36, "{report:?}");
}

/// The kit can fail: a Qwen file whose lines carry nothing only Qwen writes, out of
/// place, is Claude's — the kit says so.
#[test]
fn an_unplaced_claude_shaped_file_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.jsonl");
    std::fs::write(
        &path,
        br#"{"uuid":"u","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","type":"user","cwd":"/w","message":{"role":"user","content":"hi"}}
"#,
    )
    .unwrap();
    let err = kit().check(&[Fixture::lines(&path)]).unwrap_err();
    assert_eq!(err.check, Check::Sniff, "{err}");
}

#[test]
fn every_other_agents_public_file_is_detected_and_named_as_before() {
    let n = others_untouched("qwen");
    assert!(n >= 50, "{n}");
}

#[test]
fn no_line_of_another_agents_file_is_a_qwen_line() {
    let seen = no_other_agents_line_is("qwen", |line| {
        transcope_adapter_qwen::classify(line) == transcope_adapter_qwen::Said::Qwen
    });
    assert!(seen > 1000, "{seen}");
}

#[test]
fn every_qwen_file_is_detected_as_qwen() {
    let with = transcope_testkit::engine::adapters();
    let mut all = Vec::new();
    files(&qwen(""), &mut all);
    let mut n = 0;
    for path in all.iter().filter(|p| {
        p.extension().is_some_and(|x| x == "jsonl")
            && !p.to_str().unwrap().ends_with(".ledger.jsonl")
            && !p.to_str().unwrap().ends_with("000005.jsonl")
    }) {
        let line = first_non_empty_line(path);
        let got = with.detect(path, &line).map(|f| f.name());
        assert_eq!(got, Some("qwen"), "{}", path.display());
        n += 1;
    }
    assert_eq!(n, 5);
}

/// The prompt ledger beside a session is no transcript: Claude Code's layout, which
/// claims every `*.jsonl`, would take it; the registry does not, because Qwen's layout
/// disowns it. The sidecars are not claimed either.
#[test]
fn the_prompt_ledger_and_sidecars_are_no_transcripts() {
    let home = qwen("home/.qwen/projects/-work-demo-app");
    let ledger = home.join("chats/0a0b0c0d-1111-4222-8333-444455556666.ledger.jsonl");
    assert!(transcope_adapter_claude::layout::ClaudeLayout.claims(&ledger));
    assert!(QwenLayout.disowns(&ledger));
    let registry = transcope_testkit::engine::adapters();
    assert!(registry.claiming(&ledger).is_none());
    let meta =
        home.join("subagents/0a0b0c0d-1111-4222-8333-444455556666/agent-explore-7f3c.meta.json");
    assert!(registry.claiming(&meta).is_none());
    assert_eq!(
        registry
            .claiming(&home.join("chats/0a0b0c0d-1111-4222-8333-444455556666.jsonl"))
            .map(|f| f.name()),
        Some("qwen")
    );
    // Not a Qwen place: nothing disowned.
    let claude = transcope_testkit::testdata("public/claude")
        .join("lanegrid__agtrace__7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9.jsonl");
    assert!(!QwenLayout.disowns(&claude));
    assert_eq!(registry.claiming(&claude).map(|f| f.name()), Some("claude"));
}

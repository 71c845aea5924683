//! The adapter compliance kit on every Copilot CLI fixture (read in appended pieces,
//! at every line, at byte cuts, in many chunks, with torn and garbage lines: the
//! entries of one pass), and detection against every other agent's public file: each
//! is detected and named exactly as without the Copilot adapter, and none is claimed
//! by it.

use std::path::{Path, PathBuf};

use transcope_adapter_copilot::{is_copilot_line, CopilotLayout};
use transcope_core::adapter::Layout;
use transcope_testkit::compliance::{
    no_other_agents_line_is, others_untouched, AdapterKit, Check, Fixture,
};
use transcope_testkit::first_non_empty_line;

fn copilot(rel: &str) -> PathBuf {
    transcope_testkit::testdata("public/copilot").join(rel)
}

const SESSION: &str = ".copilot/session-state/7c1e0f2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b/events.jsonl";
const FLAT: &str = ".copilot/session-state/3a4b5c6d-0000-4000-8000-00000000aaaa.jsonl";

fn kit() -> AdapterKit<'static> {
    AdapterKit::new("copilot", transcope_testkit::engine::adapters)
}

#[test]
fn copilot_files_in_pieces_give_one_pass() {
    let home = copilot("home");
    let report = kit()
        .cuts(64)
        .check(&[
            Fixture::lines(home.join(SESSION)).within(&home),
            Fixture::lines(home.join(FLAT)).within(&home),
        ])
        .unwrap();
    assert_eq!(report.fixtures, 2);
    // 15 events (the second shutdown one entry per model: 16) + 3.
    assert_eq!(report.entries, 19, "{report:?}");
}

/// The kit can fail: a Copilot file out of place whose first line is no Copilot event
/// (a `abort` alone says nothing) is not taken.
#[test]
fn an_unplaced_file_without_a_copilot_first_line_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.jsonl");
    std::fs::write(
        &path,
        br#"{"type":"abort","data":{"reason":"x"},"id":"e1","timestamp":"2026-01-01T00:00:00Z"}
{"type":"session.resume","data":{"context":{"cwd":"/w"}},"id":"e2","timestamp":"2026-01-01T00:00:01Z"}
"#,
    )
    .unwrap();
    let err = kit().check(&[Fixture::lines(&path)]).unwrap_err();
    assert_eq!(err.check, Check::Sniff, "{err}");
}

#[test]
fn every_other_agents_public_file_is_detected_and_named_as_before() {
    let n = others_untouched("copilot");
    assert!(n >= 50, "{n}");
}

#[test]
fn no_line_of_another_agents_file_is_a_copilot_line() {
    let seen = no_other_agents_line_is("copilot", is_copilot_line);
    assert!(seen > 1000, "{seen}");
}

#[test]
fn every_copilot_file_is_detected_claimed_and_keyed_as_copilot() {
    let with = transcope_testkit::engine::adapters();
    let home = copilot("home");
    for (rel, key) in [
        (SESSION, "7c1e0f2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b"),
        (FLAT, "3a4b5c6d-0000-4000-8000-00000000aaaa"),
    ] {
        let path = home.join(rel);
        let line = first_non_empty_line(&path);
        assert!(is_copilot_line(&line), "{rel}");
        assert_eq!(with.detect(&path, &line).map(|f| f.name()), Some("copilot"));
        assert_eq!(with.claiming(&path).map(|f| f.name()), Some("copilot"));
        assert_eq!(with.scope_key(&path), Some(("copilot", Ok(key.to_owned()))));
    }
    // The sidecars beside a session are not claimed.
    let dir = home.join(".copilot/session-state/7c1e0f2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b");
    assert!(!CopilotLayout.claims(&dir.join("workspace.yaml")));
    assert!(!CopilotLayout.claims(&dir.join("checkpoints/index.jsonl")));
}

#[test]
fn default_root_follows_copilot_home() {
    let home = Path::new("/u");
    let unset = |_: &str| None;
    assert_eq!(
        CopilotLayout.default_roots(&unset, home),
        [PathBuf::from("/u/.copilot/session-state")]
    );
    let set = |k: &str| (k == "COPILOT_HOME").then(|| "/c".to_owned());
    assert_eq!(
        CopilotLayout.default_roots(&set, home),
        [PathBuf::from("/c/session-state")]
    );
    let blank = |k: &str| (k == "COPILOT_HOME").then(|| "  ".to_owned());
    assert_eq!(
        CopilotLayout.default_roots(&blank, home),
        [PathBuf::from("/u/.copilot/session-state")]
    );
}

//! The adapter compliance kit on every Codex CLI fixture, both layouts: envelope
//! rollouts (public and generated) and legacy ones (whose header, re-read on every
//! resumed read, decides how the rest is decoded).

use std::path::Path;

use transcope_corpus::{generate, CorpusSpec, FileKind};
use transcope_testkit::compliance::{AdapterKit, Fixture};
use transcope_testkit::{jsonl_files, testdata};

fn kit() -> AdapterKit<'static> {
    AdapterKit::new("codex", transcope_testkit::engine::adapters)
}

fn fixtures(dir: &Path) -> Vec<Fixture> {
    let mut paths = Vec::new();
    jsonl_files(dir, &mut paths);
    paths.sort();
    paths.into_iter().map(Fixture::lines).collect()
}

#[test]
fn envelope_rollouts_in_pieces_give_one_pass() {
    let mut fx = fixtures(&testdata("public/codex"));
    fx.push(Fixture::lines(testdata("markers/codex-markers.jsonl")));
    let report = kit().check(&fx).unwrap();
    assert_eq!(report.fixtures, 9);
}

#[test]
fn legacy_rollouts_in_pieces_give_one_pass() {
    let fx = fixtures(&testdata("codex-legacy"));
    assert_eq!(fx.len(), 2);
    kit().check(&fx).unwrap();
}

#[test]
fn generated_rollouts_both_layouts_in_pieces_give_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = CorpusSpec::new(13, 400_000);
    spec.codex_share = 1.0;
    spec.legacy_share = 1.0;
    spec.max_tool_output = 4_000;
    let manifest = generate(&spec, dir.path()).unwrap();
    assert!(manifest.of_kind(FileKind::CodexLegacy).count() > 0);
    assert!(manifest.of_kind(FileKind::CodexRollout).count() > 0);
    kit().check(&fixtures(&dir.path().join("codex"))).unwrap();
}

//! The adapter compliance kit on every Claude Code fixture: the public transcripts,
//! the sample archive, the marker fixtures, and a generated corpus with invalid and
//! torn lines — read in appended pieces cut anywhere, they give the entries of one pass.

use std::path::PathBuf;

use transcope_corpus::{generate, CorpusSpec};
use transcope_testkit::compliance::{AdapterKit, Fixture};
use transcope_testkit::{jsonl_files, testdata};

fn kit() -> AdapterKit<'static> {
    AdapterKit::new("claude", transcope_testkit::engine::adapters)
}

fn fixtures(dirs: &[PathBuf]) -> Vec<Fixture> {
    let mut paths = Vec::new();
    for d in dirs {
        jsonl_files(d, &mut paths);
    }
    paths.sort();
    paths.into_iter().map(Fixture::lines).collect()
}

#[test]
fn public_claude_transcripts_in_pieces_give_one_pass() {
    let fx = fixtures(&[testdata("public/claude")]);
    // A fixture with no entry checks nothing: those are left out by name.
    let fx: Vec<Fixture> = fx
        .into_iter()
        .filter(|f| std::fs::metadata(f.path()).is_ok_and(|m| m.len() > 0))
        .collect();
    assert!(fx.len() >= 25);
    let report = kit().check(&fx).unwrap();
    assert_eq!(report.fixtures, fx.len());
}

#[test]
fn archive_and_marker_fixtures_in_pieces_give_one_pass() {
    let mut fx = fixtures(&[testdata("sample-archive/claude")]);
    fx.push(Fixture::lines(testdata("markers/claude-markers.jsonl")));
    fx.push(Fixture::lines(testdata(
        "fixtures/session-scope.transcript.jsonl",
    )));
    let report = kit().check(&fx).unwrap();
    assert!(report.entries > 100, "{report:?}");
}

/// Generated transcripts carry what real ones rarely do at once: invalid lines
/// (numbers, arrays, cut JSON) and a torn last line.
#[test]
fn generated_claude_transcripts_in_pieces_give_one_pass() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = CorpusSpec::new(4, 400_000);
    spec.codex_share = 0.0;
    spec.max_tool_output = 4_000;
    let manifest = generate(&spec, dir.path()).unwrap();
    assert!(manifest.invalid_lines > 0 && manifest.torn_lines > 0);
    let fx = fixtures(&[dir.path().join("claude")]);
    kit().check(&fx).unwrap();
}

//! The marker stage is asked, line by line, whether it wants an entry decoded (the
//! probe: text-bearing lines only, and while no block is open only lines that may hold
//! `<!--`), and drops text once its blocks are settled. Neither changes the markers:
//! on the public transcripts, the marker fixtures, a generated corpus and lines built
//! against the rule, it finds what one scan of every entry's texts joined finds.

use std::path::{Path, PathBuf};

use transcope_core::adapter::{may_open_marker, EntrySink, Probe};
use transcope_core::{Entry, TimeValue};
use transcope_engine::scan::{scan_path, Buffers};
use transcope_markers::{markers_joined, Marker, MarkerStage};

/// The reference's way: every entry decoded, every text kept, one scan at the end.
#[derive(Default)]
struct Everything(Vec<(String, TimeValue<'static>)>);

impl EntrySink for Everything {
    fn wants(&self, _: &Probe<'_>) -> bool {
        true
    }
    fn entry(&mut self, e: &Entry<'_>) {
        for t in &e.texts {
            self.0.push((t.to_string(), e.time.clone().into_owned()));
        }
    }
}

impl Everything {
    fn finish(self) -> Vec<Marker> {
        markers_joined(self.0.iter().map(|(t, time)| (t.as_str(), time)))
    }
}

fn markers(path: &Path, everything: bool) -> Vec<Marker> {
    let registry = transcope_testkit::engine::adapters();
    let mut buffers = Buffers::default();
    let scan = |sink: &mut dyn EntrySink, buffers: &mut Buffers| {
        scan_path(path, &registry, buffers, sink).unwrap();
    };
    if everything {
        let mut all = Everything::default();
        scan(&mut all, &mut buffers);
        all.finish()
    } else {
        let mut stage = MarkerStage::default();
        scan(&mut stage, &mut buffers);
        stage.finish(None)
    }
}

fn claude(text: &str, n: u32) -> String {
    serde_json::json!({
        "type": "assistant", "cwd": "/w", "gitBranch": "main", "sessionId": "s",
        "timestamp": format!("2026-10-08T10:{n:02}:00Z"),
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
    })
    .to_string()
}

#[test]
fn skipping_unwanted_lines_never_changes_the_markers() {
    let testdata = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let mut paths = Vec::new();
    transcope_testkit::jsonl_files(&testdata.join("public"), &mut paths);
    transcope_testkit::jsonl_files(&testdata.join("markers"), &mut paths);
    let dir = tempfile::tempdir().unwrap();
    transcope_corpus::generate(
        &transcope_corpus::CorpusSpec::new(9, 4_000_000),
        &dir.path().join("corpus"),
    )
    .unwrap();
    transcope_testkit::jsonl_files(&dir.path().join("corpus/claude"), &mut paths);
    transcope_testkit::jsonl_files(&dir.path().join("corpus/codex"), &mut paths);
    // A block whose content runs through records that hold no tag; an opening tag
    // written with JSON escapes only; text before any tag.
    let crafted = dir.path().join("crafted.jsonl");
    let lines = [
        claude("intro, no tags", 0),
        claude("<!-- @lesson topic=a -->start", 1),
        claude("a middle record with no tag", 2),
        claude("end<!-- @/lesson -->", 3),
        claude("more text", 4),
        claude("<!-- @signal -->escaped<!-- @/signal -->", 5)
            .replace("<!--", "\\u003c\\u0021\\u002d\\u002d"),
        claude("then <!-- @decision -->", 6),
        claude("spans", 7),
        claude("<!-- @/decision -->", 8),
    ];
    std::fs::write(&crafted, lines.join("\n") + "\n").unwrap();
    paths.push(crafted.clone());
    let mut found = 0;
    for p in &paths {
        let all = markers(p, true);
        assert_eq!(markers(p, false), all, "{}", p.display());
        found += all.len();
    }
    let crafted_markers = markers(&crafted, false);
    let contents: Vec<&str> = crafted_markers.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(
        contents,
        [
            "start\na middle record with no tag\nend",
            "escaped",
            "spans"
        ]
    );
    assert!(found > 10, "the inputs hold markers ({found})");
}

#[test]
fn a_line_may_open_a_marker_exactly_when_its_text_could_hold_one() {
    for (line, want) in [
        (r#"{"t":"<!-- @lesson -->"}"#, true),
        (r#"{"t":"\u003c!--"}"#, true),
        (r#"{"t":"\u003C!--"}"#, true),
        (r#"{"t":"<\u0021--"}"#, true),
        (r#"{"t":"<!\u002d-"}"#, true),
        (r#"{"t":"<!-\u002D"}"#, true),
        (r#"{"t":"a <b> -- !"}"#, false),
        (r#"{"t":"\u001b[0m <!- -"}"#, false),
        (r#"{"t":"\u0041"}"#, false),
        ("", false),
    ] {
        assert_eq!(may_open_marker(line.as_bytes()), want, "{line}");
        // The rule agrees with decoding: a line said not to hold one decodes to no `<!--`.
        if !want && !line.is_empty() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(!v["t"].as_str().unwrap().contains("<!--"), "{line}");
        }
    }
}

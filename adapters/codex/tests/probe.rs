//! The envelope probe is never wrong: whenever it answers, the full decode skips the
//! line or gives one entry with that kind, folder and branch, and no marker text
//! unless the probe said it might carry some.

use std::path::PathBuf;

use transcope_adapter_codex::{probe, CodexAdapter};
use transcope_core::adapter::Adapter;
use transcope_core::entry::{Entry, LinePos};

/// (kind, folder, branch, number of marker texts) of one decoded entry.
type Decoded = (
    Option<transcope_core::EntryKind>,
    Option<String>,
    Option<String>,
    usize,
);

/// Decode `line` as a line of an envelope file (after its first line).
fn full(line: &[u8]) -> Result<Vec<Decoded>, ()> {
    let mut a = CodexAdapter::new();
    let first =
        br#"{"timestamp":"2026-10-08T10:00:00Z","type":"session_meta","payload":{"id":"x"}}"#;
    a.decode(
        first,
        LinePos { offset: 0, line: 1 },
        &mut transcope_core::adapter::from_fn(|_: &Entry<'_>| {}),
    )
    .unwrap();
    let mut out = Vec::new();
    // A sink that wants everything, so the adapter always decodes.
    a.decode(
        line,
        LinePos {
            offset: 100,
            line: 2,
        },
        &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| {
            out.push((
                e.kind,
                e.cwd.as_deref().map(str::to_owned),
                e.branch.as_deref().map(str::to_owned),
                e.texts.len(),
            ))
        }),
    )
    .map(|()| out)
    .map_err(|_| ())
}

fn check(line: &[u8]) -> bool {
    let searched = Default::default();
    let Some(p) = probe(line, &searched) else {
        return false;
    };
    if let Ok(out) = full(line) {
        if let Some(e) = out.first() {
            assert_eq!(out.len(), 1);
            let s = String::from_utf8_lossy(line);
            assert_eq!(e.0, p.kind, "{s}");
            assert_eq!(e.1.as_deref(), p.cwd, "{s}");
            assert_eq!(e.2.as_deref(), p.branch, "{s}");
            assert!(p.text || e.3 == 0, "{s}");
        }
    }
    true
}

#[test]
fn envelope_probe_agrees_with_the_full_decode() {
    let mut paths = Vec::new();
    transcope_testkit::jsonl_files(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/public/codex"),
        &mut paths,
    );
    let dir = tempfile::tempdir().unwrap();
    let mut spec = transcope_corpus::CorpusSpec::new(5, 2_000_000);
    spec.codex_share = 1.0;
    transcope_corpus::generate(&spec, dir.path()).unwrap();
    transcope_testkit::jsonl_files(&dir.path().join("codex"), &mut paths);
    let (mut n, mut answered) = (0, 0);
    for p in paths {
        for line in std::fs::read(&p).unwrap().split(|b| *b == b'\n') {
            n += 1;
            answered += usize::from(check(line));
        }
    }
    assert!(
        answered * 3 > n,
        "the probe answers for many lines ({answered} of {n})"
    );
    // Mutations of a big function output and of an assistant message.
    let big = r#"{"timestamp":"2026-10-08T10:00:00Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":"x \"y\" {[ \\ z"}}"#;
    let msg = r#"{"timestamp":"2026-10-08T10:00:00Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"<!-- @lesson -->L<!-- @/lesson -->"}]}}"#;
    for base in [big, msg] {
        for swap in [
            ("\"type\":\"response_item\"", "\"type\":\"event_msg\""),
            ("\"type\":\"response_item\"", "\"type\":\"turn_context\""),
            ("\"payload\":{", "\"payload\":{\"type\":\"task_complete\","),
            ("\"role\":\"assistant\"", "\"role\":\"user\""),
            ("\"role\":\"assistant\"", "\"role\":5"),
            (
                "\"role\":\"assistant\"",
                "\"role\":\"assistant\",\"role\":\"user\"",
            ),
            ("\"timestamp\"", "\"cwd\":\"/w\",\"timestamp\""),
            ("{\"timestamp\"", "{\"gitBranch\":\"b\",\"timestamp\""),
            ("\"type\":\"function_call_output\"", "\"type\":\"message\""),
        ] {
            let v = base.replacen(swap.0, swap.1, 1);
            check(v.as_bytes());
        }
        for cut in (1..base.len()).step_by(13) {
            check(&base.as_bytes()[..cut]);
        }
    }
}

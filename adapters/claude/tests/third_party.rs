//! A third-party format added next to the two real ones without editing either crate:
//! a toy "tsv" transcript (`#toy` header, then `time<TAB>cwd<TAB>text` lines) with its
//! own adapter and factory, registered in an `AdapterRegistry` with Claude and Codex.

mod common;

use transcope_adapter_claude::ClaudeFactory;
use transcope_adapter_codex::CodexFactory;
use transcope_adapter_common::text::py_strip;
use transcope_core::adapter::{
    Adapter, AdapterFactory, AdapterRegistry, Confidence, EntrySink, Skip,
};
use transcope_core::{Entry, EntryKind, LinePos, TimeValue};

struct ToyAdapter;

impl Adapter for ToyAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let line = std::str::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
        let line = py_strip(line);
        if line.is_empty() {
            return Err(Skip::Blank);
        }
        if line == "#toy" {
            return Err(Skip::Ignored);
        }
        let mut cols = line.splitn(3, '\t');
        let (Some(time), Some(cwd), text) = (cols.next(), cols.next(), cols.next()) else {
            return Err(Skip::InvalidJson);
        };
        let entry = Entry {
            kind: Some(EntryKind::Assistant),
            time: TimeValue::Str(time.into()),
            cwd: (!cwd.is_empty()).then_some(cwd.into()),
            texts: text
                .into_iter()
                .filter(|t| !t.is_empty())
                .map(Into::into)
                .collect(),
            offset: pos.offset,
            line: pos.line,
            ..Entry::default()
        };
        sink.entry(&entry);
        Ok(())
    }
}

struct ToyFactory;

impl AdapterFactory for ToyFactory {
    fn name(&self) -> &'static str {
        "toy"
    }
    fn sniff(&self, _path: &std::path::Path, first_line: &[u8]) -> Option<Confidence> {
        (first_line == b"#toy").then_some(Confidence::Certain)
    }
    fn build(&self) -> Box<dyn Adapter> {
        Box::new(ToyAdapter)
    }
}

fn registry() -> AdapterRegistry {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(ClaudeFactory))
        .register(Box::new(CodexFactory))
        .register(Box::new(ToyFactory));
    r
}

#[test]
fn a_new_format_is_detected_and_decoded_alongside_the_real_ones() {
    let r = registry();
    let data = b"#toy\n2026-10-08T10:00:00Z\t/work/a\t<!-- @lesson -->x<!-- @/lesson -->\n2026-10-08T10:05:00Z\t/work/b\t\n";
    let d = common::decode_bytes(&r, data);
    assert_eq!(d.factory, "toy");
    assert_eq!(d.skips, [(1, Skip::Ignored)]);
    assert_eq!(
        d.scope_changes(),
        [
            ("/work/a".to_owned(), String::new()),
            ("/work/b".to_owned(), String::new())
        ]
    );
    assert_eq!(d.texts(), ["<!-- @lesson -->x<!-- @/lesson -->"]);

    // The real formats are still detected as before with the toy registered.
    let claude = std::fs::read(common::testdata(
        "public/claude/lanegrid__agtrace__7f2abd2d-7cfc-4447-9ddd-3ca8d14e02e9.jsonl",
    ))
    .unwrap();
    assert_eq!(common::decode_bytes(&r, &claude).factory, "claude");
    let codex = std::fs::read(common::testdata(
        "public/codex/simonw__claude-code-transcripts__sample_codex_session.jsonl",
    ))
    .unwrap();
    assert_eq!(common::decode_bytes(&r, &codex).factory, "codex");
    assert_eq!(r.by_name("toy").map(|f| f.name()), Some("toy"));

    // Entries from every adapter are the same neutral type.
    let mut toy = r.by_name("toy").unwrap().build();
    let mut got = Vec::new();
    toy.decode(
        b"t\t/w\thi",
        LinePos { offset: 0, line: 1 },
        &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| got.push(e.to_static())),
    )
    .unwrap();
    assert_eq!(got[0].cwd.as_deref(), Some("/w"));
}

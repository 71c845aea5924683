//! The transcript adapters on arbitrary bytes: never panic.
//!
//! The input is framed into lines (`\n`, final line yielded). The first non-blank line
//! picks the adapter through the binary's own registry (`transcope::compose::adapters`,
//! the one list, so a new adapter is fuzzed as soon as it is registered) and every line
//! is decoded with it; independently every line is also decoded by every registered
//! adapter (and the whole input as one record by each that reads a document whole),
//! and by the Codex adapter with `legacy_env_cwd`, each keeping its per-file state
//! across the lines. For every
//! line the checked walk reads for its usage (`quick::usage_entry`), its entry must be
//! the one serde's usage-only decode gives, and its folder and branch the probe's
//! wherever the probe answers too.
#![no_main]

use std::convert::Infallible;

use libfuzzer_sys::fuzz_target;
use transcope_adapter_claude::classify;
use transcope_adapter_codex::{CodexAdapter, CodexOptions};
use transcope_core::adapter::{Adapter, Framing};
use transcope_core::entry::{Entry, LinePos};
use transcope_jsonl::{FinalLine, FnSink, Framer, Line};

fn touch(e: &Entry<'_>) -> usize {
    let owned = e.to_static();
    assert_eq!(owned.offset, e.offset);
    let mut n = e.texts.iter().map(|t| t.len()).sum::<usize>();
    for s in [
        &e.cwd,
        &e.branch,
        &e.session_id,
        &e.agent_id,
        &e.uuid,
        &e.parent_uuid,
        &e.logical_parent_uuid,
    ]
    .into_iter()
    .flatten()
    {
        n += s.len();
    }
    n += e.time.as_str().map_or(0, str::len);
    n + usize::from(e.time.is_truthy()) + usize::from(e.is_sidechain)
}

fn run(adapter: &mut dyn Adapter, lines: &[(Vec<u8>, LinePos)]) -> usize {
    let mut total = 0usize;
    for (line, pos) in lines {
        let mut sink = transcope_core::adapter::from_fn(|e: &Entry<'_>| total += touch(e) + 1);
        let _ = adapter.decode(line, *pos, &mut sink);
    }
    adapter.reset();
    total
}

fuzz_target!(|data: &[u8]| {
    let framer = Framer::builder().final_line(FinalLine::Yield).build();
    let mut lines: Vec<(Vec<u8>, LinePos)> = Vec::new();
    let _ = framer.frame_slice(
        data,
        0,
        1,
        FnSink(|l: Line<'_>| {
            lines.push((
                l.bytes.to_vec(),
                LinePos {
                    offset: l.offset,
                    line: l.number,
                },
            ));
            Ok::<_, Infallible>(true)
        }),
    );

    let registry = transcope::compose::adapters();
    let first = lines
        .iter()
        .map(|(l, _)| l.as_slice())
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
        .unwrap_or_default();
    let _ = classify(first);
    let factory = registry
        .detect(std::path::Path::new("fuzz.jsonl"), first)
        .expect("claude is the fallback: detection never fails");
    let mut detected = factory.build();
    run(&mut *detected, &lines);
    // After reset the same adapter must decode the file again without panicking.
    run(&mut *detected, &lines);

    for (line, pos) in &lines {
        if let Some(quick) = transcope_adapter_claude::quick::usage_entry(line, *pos) {
            let mut full = None;
            let _ = transcope_adapter_claude::decode_claude_usage(
                line,
                *pos,
                &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| full = Some(e.to_static())),
            );
            assert_eq!(Some(quick.to_static()), full, "the walk and serde disagree");
        }
        // The folder and branch the walk reads first, in place of the probe, are the
        // probe's wherever both answer.
        let walked = transcope_adapter_claude::quick::usage_read(line, *pos)
            .and_then(|r| r.folder_and_branch);
        if let (Some(w), Some(p)) = (
            walked,
            transcope_adapter_claude::probe::probe(line, &Default::default()),
        ) {
            assert_eq!(w, (p.cwd, p.branch), "the walk and the probe disagree");
        }
    }

    let path = std::path::Path::new("fuzz.json");
    let whole = [(data.to_vec(), LinePos::default())];
    for f in registry.factories() {
        run(&mut *f.build(), &lines);
        if f.framing(path) == Framing::Document {
            run(&mut *f.build(), &whole);
        }
    }
    run(
        &mut CodexAdapter::with_options(CodexOptions {
            legacy_env_cwd: true,
        }),
        &lines,
    );
});

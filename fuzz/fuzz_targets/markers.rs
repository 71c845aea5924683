//! The marker grammar on arbitrary UTF-8: `parse::blocks`, `parse::attributes`,
//! `markers_in` and the `MarkerStage` never panic; blocks are in order,
//! non-overlapping, start at `<!--`, end after `-->`, and every offset is a char
//! boundary; marker offsets are block starts.
//!
//! For the stage, the text is also split at NUL into several record texts, every other
//! one stamped with a time.
#![no_main]

use libfuzzer_sys::fuzz_target;
use transcope_core::adapter::EntrySink;
use transcope_core::{Entry, TimeValue};
use transcope_markers::{
    markers_in, markers_joined, markers_of_message, parse, MarkerStage, MARKER_TYPES,
};

/// Byte offset of `sub` within `text` (it must borrow from it).
fn offset_in(text: &str, sub: &str) -> usize {
    let off = (sub.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
    assert!(
        off <= text.len() && off + sub.len() <= text.len(),
        "substring borrows from text"
    );
    off
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let blocks = parse::blocks(text);
    let mut prev_end = 0;
    for b in &blocks {
        assert!(b.start >= prev_end, "blocks overlap or are out of order");
        assert!(b.start < b.end && b.end <= text.len());
        assert!(text.is_char_boundary(b.start) && text.is_char_boundary(b.end));
        assert!(text[b.start..].starts_with("<!--"));
        assert!(text[..b.end].ends_with("-->"));
        let k = offset_in(text, b.kind);
        let a = offset_in(text, b.attrs);
        let c = offset_in(text, b.content);
        assert!(!b.kind.is_empty());
        assert!(b.start < k && k + b.kind.len() <= a, "kind before attrs");
        assert!(a + b.attrs.len() <= c, "attrs before content");
        assert!(
            c + b.content.len() < b.end,
            "content before the closing tag"
        );
        let _ = parse::attributes(b.attrs);
        prev_end = b.end;
    }

    let markers = markers_in(text);
    let mut prev = None;
    for (start, m) in &markers {
        assert!(text.is_char_boundary(*start));
        assert!(prev.is_none_or(|p| p < *start), "markers in order");
        assert!(
            blocks.iter().any(|b| b.start == *start),
            "marker at a block start"
        );
        assert!(MARKER_TYPES.contains(&m.kind.as_str()));
        assert!(!m.content.is_empty());
        let _ = m.to_python_json();
        prev = Some(*start);
    }
    let _ = markers_of_message(text, "2026-10-08T10:00:00+00:00");

    let records: Vec<(&str, TimeValue<'_>)> = text
        .split('\0')
        .enumerate()
        .map(|(i, part)| {
            let time = if i % 2 == 0 {
                TimeValue::Str(format!("2026-10-08T10:{:02}:00Z", i % 60).into())
            } else {
                TimeValue::Missing
            };
            (part, time)
        })
        .collect();
    let mut stage = MarkerStage::default();
    for (part, time) in &records {
        stage.entry(&Entry {
            time: time.clone(),
            texts: vec![(*part).into()],
            ..Entry::default()
        });
    }
    let all = stage.finish(None);
    // The stage scans as records arrive and drops settled text; it must find what one
    // scan of the records joined with `\n` finds, each stamped with its record's time.
    assert_eq!(
        all,
        markers_joined(records.iter().map(|(p, t)| (*p, t))),
        "the stage finds what one scan of the joined records finds"
    );
    if !text.contains('\0') {
        assert_eq!(
            all.len(),
            markers.len(),
            "one record: the stage finds markers_in's markers"
        );
    }
});

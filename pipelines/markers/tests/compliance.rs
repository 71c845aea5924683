//! The stage compliance kit on marker extraction: split at any entry, with the
//! checkpoint of the first read restored into a fresh stage, the markers found (with
//! their times) are those of one pass — blocks opened in one read and closed in the
//! next, attributes and tags cut across records, and records without a time included.

use std::borrow::Cow;

use transcope_core::{Entry, EntryKind, TimeValue};
use transcope_markers::{Marker, MarkerStage};
use transcope_testkit::compliance::{check_stage, fixture_entries, StageHarness};
use transcope_testkit::{testdata, Rng};

/// The markers a run handed on, in order, each with its time.
struct Markers;

impl StageHarness for Markers {
    type World = ();
    type Stage<'w> = MarkerStage;
    type Output = Vec<Marker>;

    fn world(&mut self) {}

    fn build(&mut self, _: &()) -> MarkerStage {
        MarkerStage::default()
    }

    fn collect(&mut self, _: &(), mut stage: MarkerStage, out: &mut Vec<Marker>) {
        out.extend(stage.take(None));
    }
}

/// Assistant texts that open, continue and close blocks across records, with tags cut
/// between records, and times of every kind. Never a complete marker inside a block
/// still open: a read that ends inside one hands on the markers nested in it, as the
/// reference's rescan at that Stop would (DEVIATIONS.md, "Markers are read once"),
/// which one pass over the final file does not.
fn records(seed: u64, n: usize) -> Vec<Entry<'static>> {
    let mut rng = Rng::new(seed);
    // What the next text must be (a tag's rest), and the block that is open.
    let (mut next, mut open): (Option<&'static str>, Option<&'static str>) = (None, None);
    let mut text = |rng: &mut Rng| -> &'static str {
        if let Some(t) = next.take() {
            return t;
        }
        if let Some(kind) = open {
            if rng.chance(0.5) {
                return "still inside";
            }
            open = None;
            return if kind == "lesson" {
                "end<!-- @/lesson --> after"
            } else {
                "way<!-- @/milestone -->"
            };
        }
        match rng.below(6) {
            0 => "plain text",
            1 => "<!-- @decision why=\"x\" -->Pick one.<!-- @/decision -->",
            2 => {
                next = Some("nal -->s<!-- @/signal -->");
                "<!-- @sig"
            }
            3 => {
                (next, open) = (Some("-->lesson body"), Some("lesson"));
                "Start <!-- @lesson topic=t"
            }
            4 => {
                open = Some("milestone");
                "<!-- @milestone -->half"
            }
            _ => "no tag here",
        }
    };
    (0..n)
        .map(|i| {
            let time = match rng.below(6) {
                0 => TimeValue::Missing,
                1 => TimeValue::Other(Cow::Borrowed("1700000000")),
                2 => TimeValue::Str(Cow::Borrowed("")),
                _ => TimeValue::Str(Cow::Owned(format!("2026-10-08T10:{:02}:00Z", i % 60))),
            };
            let texts = (0..rng.below(3))
                .map(|_| Cow::Borrowed(text(&mut rng)))
                .collect();
            Entry {
                kind: Some(EntryKind::Assistant),
                time,
                texts,
                line: i as u64 + 1,
                ..Entry::default()
            }
        })
        .collect()
}

#[test]
fn markers_split_anywhere_are_one_pass_markers() {
    let mut found = 0;
    for seed in 0..6 {
        let entries = records(0x5eed_3a4c + seed, 60);
        found += transcope_markers::markers_joined(
            entries
                .iter()
                .flat_map(|e| e.texts.iter().map(move |t| (t.as_ref(), &e.time))),
        )
        .len();
        check_stage(&mut Markers, &entries).unwrap();
    }
    assert!(found > 20, "the records hold too few markers ({found})");
}

/// Real transcripts of every adapter, as their adapters decode them.
#[test]
fn markers_on_real_transcripts() {
    for rel in [
        "markers/claude-markers.jsonl",
        "markers/codex-markers.jsonl",
        "public/gemini/home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl",
        "public/gemini/home/.gemini/tmp/registry-only/chats/session-2026-04-01T08-00-77aa88bb.json",
    ] {
        let entries = fixture_entries(&testdata(rel)).unwrap();
        let mut one = MarkerStage::default();
        for e in &entries {
            transcope_core::adapter::EntrySink::entry(&mut one, e);
        }
        assert!(!one.finish(None).is_empty(), "{rel}: no markers to compare");
        check_stage(&mut Markers, &entries).unwrap();
    }
}

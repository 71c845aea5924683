//! The marker stage scans records as they arrive and drops settled text; it must find
//! exactly what one scan of every record's text joined with `\n` finds (the reference),
//! including blocks whose tags, attributes or content run across records, and whether
//! or not the lines it says it does not want are handed to it anyway.

use proptest::prelude::*;
use serde_json::Value;
use transcope_core::adapter::{EntrySink, Probe};
use transcope_core::{Entry, EntryKind, TimeValue};
use transcope_markers::{markers_joined, Marker, MarkerStage};

/// The reference: all texts joined with `\n`, scanned once, each marker stamped with
/// the time of the record its opening tag starts in.
fn oracle(records: &[(Vec<String>, Option<String>)]) -> Vec<Marker> {
    let times: Vec<TimeValue<'_>> = records.iter().map(|(_, t)| time(t)).collect();
    markers_joined(
        records
            .iter()
            .zip(&times)
            .flat_map(|((texts, _), t)| texts.iter().map(move |x| (x.as_str(), t))),
    )
}

fn time(t: &Option<String>) -> TimeValue<'_> {
    t.as_ref()
        .map_or(TimeValue::Missing, |t| TimeValue::Str(t.as_str().into()))
}

/// The stage as a pipeline drives it: an entry reaches it when it wants the line, or
/// when another stage does (`forced`).
fn staged(records: &[(Vec<String>, Option<String>)], forced: &[bool]) -> Vec<Marker> {
    let mut stage = MarkerStage::default();
    for (i, (texts, t)) in records.iter().enumerate() {
        // The line as a decoder sees it: the texts, JSON-escaped.
        let line = serde_json::to_string(texts).unwrap();
        let probe = Probe {
            kind: Some(EntryKind::Assistant),
            cwd: None,
            branch: None,
            text: true,
            usage: true,
            line: line.as_bytes(),
            searched: &Default::default(),
        };
        if !stage.wants(&probe) && !forced.get(i).copied().unwrap_or(false) {
            continue;
        }
        stage.entry(&Entry {
            time: time(t),
            texts: texts.iter().map(|t| t.as_str().into()).collect(),
            ..Entry::default()
        });
    }
    stage.finish(None)
}

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<!-- @lesson".to_owned()),
        Just("<!-- @signal".to_owned()),
        Just("<!-- @/lesson".to_owned()),
        Just("<!-- @/signal -->".to_owned()),
        Just("<!-- @lesson -->".to_owned()),
        Just("<!-- @/lesson -->".to_owned()),
        Just("<!--".to_owned()),
        Just("-->".to_owned()),
        Just("--".to_owned()),
        Just(" a=".to_owned()),
        Just(" b=\"".to_owned()),
        Just("\"".to_owned()),
        Just("@".to_owned()),
        Just("@/".to_owned()),
        Just("lesson".to_owned()),
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("é".to_owned()),
        "[a-z=> ]{0,5}",
    ]
}

fn record() -> impl Strategy<Value = (Vec<String>, Option<String>)> {
    (
        proptest::collection::vec(proptest::collection::vec(piece(), 0..5), 0..3),
        proptest::option::of(0u8..60),
    )
        .prop_map(|(texts, minute)| {
            (
                texts.into_iter().map(|p| p.concat()).collect(),
                minute.map(|m| format!("2026-10-08T10:{m:02}:00Z")),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_stage_finds_what_one_scan_of_everything_finds(
        records in proptest::collection::vec(record(), 0..14),
        forced in proptest::collection::vec(any::<bool>(), 14),
    ) {
        let want = oracle(&records);
        prop_assert_eq!(&staged(&records, &forced), &want, "{:?}", records);
        prop_assert_eq!(&staged(&records, &[]), &want, "{:?}", records);
    }
}

fn one(text: &str, minute: u32) -> (Vec<String>, Option<String>) {
    (
        vec![text.to_owned()],
        Some(format!("2026-10-08T10:{minute:02}:00Z")),
    )
}

#[test]
fn blocks_across_records() {
    let records = [
        one("a <!-- @lesson b=\"x", 0),
        one("y\" -->content", 1),
        one("more", 2),
        one("<!-- @/lesson", 3),
        one("--> <!-- @decision -->d<!-- @/decision", 4),
        one(" -->", 5),
        one("<!-- @signal -->never closed", 6),
        one("text after", 7),
    ];
    let got = staged(&records, &[]);
    assert_eq!(got, oracle(&records));
    let summary: Vec<(&str, &str, &str)> = got
        .iter()
        .map(|m| {
            (
                m.kind.as_str(),
                m.content.as_str(),
                m.at.as_ref().and_then(Value::as_str).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("lesson", "content\nmore", "2026-10-08T10:00:00Z"),
            ("decision", "d", "2026-10-08T10:04:00Z"),
        ]
    );
}

/// Memory follows the longest open block, not the transcript: closed markers leave
/// nothing behind, and an open block holds its text until it closes (and at most an
/// eighth more, until the next scan sees the closing tag).
#[test]
fn settled_text_is_dropped() {
    let mut stage = MarkerStage::default();
    let feed = |stage: &mut MarkerStage, text: &str| {
        stage.entry(&Entry {
            texts: vec![text.into()],
            ..Entry::default()
        })
    };
    let body = "x".repeat(1000);
    for _ in 0..1000 {
        feed(
            &mut stage,
            &format!("{body} <!-- @lesson -->L<!-- @/lesson --> {body}"),
        );
        assert_eq!(stage.held(), 0);
    }
    feed(&mut stage, "<!-- @lesson -->open");
    for _ in 0..100 {
        feed(&mut stage, &body);
    }
    assert!(stage.held() > 100 * body.len());
    feed(&mut stage, "<!-- @/lesson -->");
    let open = stage.held();
    let mut more = 0;
    while stage.held() > 0 {
        feed(&mut stage, &body);
        more += body.len() + 1;
        assert!(
            more <= open / 8 + body.len() + 1,
            "{more} bytes after the close"
        );
    }
    let found = stage.finish(None);
    assert_eq!(found.len(), 1001);
    assert_eq!(
        found[1000].content.len(),
        "open".len() + 100 * (1 + body.len())
    );
}

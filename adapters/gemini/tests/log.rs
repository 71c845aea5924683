//! The JSONL log's update records behave as documented (`$set`, `$rewindTo`,
//! re-records, checkpoints), and a document read in one piece gives the same entries as
//! the `.jsonl` form of the same session.

mod common;

use std::path::Path;

use common::{decode_as, decode_file, fixture};
use transcope_adapter_gemini::GeminiAdapter;
use transcope_core::adapter::{from_fn, Adapter, Framing, Skip};
use transcope_core::{Entry, EntryKind, LinePos};

const META: &str = r#"{"sessionId":"s1","projectHash":"h","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z"}"#;

fn log(lines: &[&str]) -> (Vec<Entry<'static>>, Vec<(u64, Skip)>) {
    let data = lines.join("\n") + "\n";
    decode_as(Path::new("/nowhere/chats/session-x.jsonl"), data.as_bytes())
}

fn ids_and_texts(entries: &[Entry<'_>]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            (
                e.uuid.as_deref().unwrap_or("-").to_owned(),
                e.texts.concat(),
            )
        })
        .collect()
}

#[test]
fn re_record_with_same_text_is_skipped_changed_text_is_a_revision() {
    let (entries, skips) = log(&[
        META,
        r#"{"id":"g","timestamp":"t1","type":"gemini","content":"a <!-- @x -->b<!-- @/x -->","tokens":null}"#,
        r#"{"id":"g","timestamp":"t1","type":"gemini","content":[{"text":"a <!-- @x -->"},{"text":"b<!-- @/x -->"}],"tokens":{"input":1,"output":1,"cached":0,"total":2}}"#,
        r#"{"id":"g","timestamp":"t1","type":"gemini","content":"a <!-- @x -->c<!-- @/x -->"}"#,
    ]);
    assert_eq!(
        ids_and_texts(&entries),
        [
            ("-".into(), "".into()),
            ("g".into(), "a <!-- @x -->b<!-- @/x -->".into()),
            // The same text with its tokens: an entry with the usage alone.
            ("g".into(), "".into()),
            ("g".into(), "a <!-- @x -->c<!-- @/x -->".into()),
        ]
    );
    assert!(entries[2].usage.is_some() && entries[2].texts.is_empty());
    assert!(skips.is_empty());
    assert_eq!(entries[3].time.as_str(), Some("t1"));
}

#[test]
fn rewind_keeps_emitted_entries_and_forgets_the_ids() {
    let (entries, skips) = log(&[
        META,
        r#"{"id":"u1","timestamp":"t1","type":"user","content":"x"}"#,
        r#"{"id":"g1","timestamp":"t2","type":"gemini","content":"one"}"#,
        r#"{"id":"g2","timestamp":"t3","type":"gemini","content":"two"}"#,
        r#"{"$rewindTo":"g1"}"#,
        // g2 was dropped: its re-appearance is new again; u1 was kept: not re-emitted.
        r#"{"id":"g2","timestamp":"t3","type":"gemini","content":"two"}"#,
        r#"{"id":"u1","timestamp":"t1","type":"user","content":"x"}"#,
        // An unknown target clears everything, as the CLI's reader does.
        r#"{"$rewindTo":"nope"}"#,
        r#"{"id":"u1","timestamp":"t1","type":"user","content":"x"}"#,
    ]);
    assert_eq!(
        entries
            .iter()
            .map(|e| (e.uuid.as_deref().unwrap_or("-"), e.line))
            .collect::<Vec<_>>(),
        [
            ("-", 1),
            ("u1", 2),
            ("g1", 3),
            ("g2", 4),
            ("g2", 6),
            ("u1", 9)
        ]
    );
    assert_eq!(
        skips,
        [(5, Skip::Ignored), (7, Skip::Ignored), (8, Skip::Ignored)]
    );
}

#[test]
fn set_updates_session_id_and_checkpoints_messages() {
    let (entries, skips) = log(&[
        META,
        r#"{"id":"g1","timestamp":"t1","type":"gemini","content":"one"}"#,
        r#"{"$set":{"lastUpdated":"t9"}}"#,
        r#"{"$set":{"sessionId":"s2"}}"#,
        r#"{"id":"g2","timestamp":"t2","type":"gemini","content":"two"}"#,
        r#"{"$set":{"messages":[{"id":"g1","timestamp":"t1","type":"gemini","content":[{"text":"one"}]},{"id":"n1","timestamp":"t3","type":"gemini","content":"new"}]}}"#,
        // g2 left the table with the checkpoint: its next record is new again.
        r#"{"id":"g2","timestamp":"t2","type":"gemini","content":"two"}"#,
        r#"{"$set":[1]}"#,
    ]);
    assert_eq!(
        entries
            .iter()
            .map(|e| (
                e.uuid.as_deref().unwrap_or("-"),
                e.session_id.as_deref().unwrap(),
                e.line
            ))
            .collect::<Vec<_>>(),
        [
            ("-", "s1", 1),
            ("g1", "s1", 2),
            ("g2", "s2", 5),
            ("n1", "s2", 6),
            ("g2", "s2", 7)
        ]
    );
    assert_eq!(
        skips,
        [(3, Skip::Ignored), (4, Skip::Ignored), (8, Skip::Ignored)]
    );
    // The checkpoint's entry points at its message inside the `$set` line.
    let data = std::fs::read_to_string(fixture(
        "home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl",
    ))
    .unwrap();
    let (entries, _) = decode_file(&fixture(
        "home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl",
    ));
    let h1 = entries
        .iter()
        .find(|e| e.uuid.as_deref() == Some("h1"))
        .unwrap();
    assert!(data[h1.offset as usize..].starts_with(r#"{"id":"h1""#));
}

#[test]
fn one_line_legacy_record_carries_its_messages() {
    let (entries, skips) = log(&[
        r#"{"sessionId":"s1","projectHash":"h","startTime":"t0","messages":[{"id":"u","timestamp":"t1","type":"user","content":"x"},{"id":"g","timestamp":"t2","type":"gemini","content":"y"}]}"#,
        r#"{"id":"g","timestamp":"t2","type":"gemini","content":"y","tokens":{}}"#,
    ]);
    assert!(skips == [(2, Skip::Ignored)]);
    assert_eq!(
        entries.iter().map(|e| e.kind.unwrap()).collect::<Vec<_>>(),
        [EntryKind::Meta, EntryKind::User, EntryKind::Assistant]
    );
    assert_eq!(entries[2].texts, ["y"]);
}

#[test]
fn document_equals_its_jsonl_form() {
    let (doc, s1) = decode_file(&fixture("lanegrid__agtrace__gemini_session.json"));
    let (log, s2) = decode_file(&fixture("synthetic__agtrace-migrated.jsonl"));
    assert!(s1.is_empty() && s2.is_empty());
    let view = |es: &[Entry<'static>]| {
        es.iter()
            .map(|e| {
                (
                    e.kind,
                    e.time.clone(),
                    e.session_id.clone(),
                    e.uuid.clone(),
                    e.texts.clone(),
                    e.cwd.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(doc.len(), 10);
    assert_eq!(view(&doc), view(&log));
}

#[test]
fn resumed_read_still_names_its_session_and_folder() {
    let path = fixture("home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl");
    let data = std::fs::read(&path).unwrap();
    // Start after the metadata line, as a cursor-resumed read does.
    let cut = data.iter().position(|b| *b == b'\n').unwrap() + 1;
    let mut adapter = GeminiAdapter::new();
    adapter.open(&path);
    assert_eq!(adapter.folder(), Some("/work/demo-app"));
    let mut got = Vec::new();
    let line_end = cut + data[cut..].iter().position(|b| *b == b'\n').unwrap();
    adapter
        .decode(
            &data[cut..line_end],
            LinePos {
                offset: cut as u64,
                line: 2,
            },
            &mut from_fn(|e: &Entry<'_>| {
                got.push((
                    e.session_id.as_deref().map(String::from),
                    e.cwd.as_deref().map(String::from),
                ));
            }),
        )
        .unwrap();
    assert_eq!(
        got,
        [(
            Some("5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001".into()),
            Some("/work/demo-app".into())
        )]
    );
    // Without open (no file to look beside) the same line names neither.
    let (entries, _) = common::decode_bytes(
        &mut GeminiAdapter::new(),
        Framing::Lines,
        &data[cut..line_end],
    );
    assert_eq!(entries[0].session_id, None);
    assert_eq!(entries[0].cwd, None);
}

#[test]
fn open_forgets_the_previous_file() {
    let a = fixture("home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl");
    let b = fixture("jazzyalex__agent-sessions__jsonl_v040.jsonl");
    let mut adapter = GeminiAdapter::new();
    let (first, _) = {
        adapter.open(&a);
        common::decode_bytes(&mut adapter, Framing::Lines, &std::fs::read(&a).unwrap())
    };
    let (second, _) = {
        adapter.open(&b);
        common::decode_bytes(&mut adapter, Framing::Lines, &std::fs::read(&b).unwrap())
    };
    // 11 messages' entries, and one with the usage a re-record of g1 adds.
    assert_eq!(first.len(), 12);
    assert_eq!(second.len(), 4);
    assert!(second
        .iter()
        .all(|e| e.cwd.is_none() && e.session_id.as_deref() == Some("gemini_stage0_jsonl")));
}

/// A log read in two pieces as the engine resumes a read — a fresh adapter, opened,
/// shown the first line again, its checkpoint restored — gives the entries of one pass
/// at every line boundary; without the checkpoint a re-record or a `$set.messages` of
/// messages seen before the cut is emitted again.
#[test]
fn the_checkpoint_carries_the_message_table_across_a_resumed_read() {
    let path = fixture("home/.gemini/tmp/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl");
    let data = std::fs::read(&path).unwrap();
    let first = &data[..data.iter().position(|b| *b == b'\n').unwrap()];
    let (one, _) = decode_file(&path);
    let cuts: Vec<usize> = (1..data.len()).filter(|&i| data[i - 1] == b'\n').collect();
    let mut differs_without = 0;
    for &cut in &cuts[1..] {
        let mut before = GeminiAdapter::new();
        before.open(&path);
        let (mut got, _) = common::decode_bytes(&mut before, Framing::Lines, &data[..cut]);
        let checkpoint: serde_json::Value =
            serde_json::from_str(&before.checkpoint().to_string()).unwrap();
        let resumed = |restore: bool| {
            let mut after = GeminiAdapter::new();
            after.open(&path);
            let pos = LinePos { offset: 0, line: 1 };
            let _ = after.decode(first, pos, &mut from_fn(|_: &Entry<'_>| {}));
            assert!(!restore || after.restore(&checkpoint));
            common::decode_bytes(&mut after, Framing::Lines, &data[cut..]).0
        };
        let without = [got.clone(), resumed(false)].concat();
        got.extend(resumed(true));
        assert_eq!(common::summary(&got), common::summary(&one), "cut at {cut}");
        differs_without += usize::from(common::summary(&without) != common::summary(&one));
    }
    assert!(
        differs_without > 3,
        "the table matters at {differs_without} cuts"
    );
}

/// A checkpoint is refused unless it is one a log wrote, and a document keeps none.
#[test]
fn checkpoints_are_a_logs_own() {
    let mut a = GeminiAdapter::new();
    a.open(Path::new("/nowhere/chats/session-x.jsonl"));
    for garbage in [
        serde_json::json!(1),
        serde_json::json!({"v": 2, "messages": []}),
        serde_json::json!({"v": 1, "messages": [["id", "not a number"]]}),
        serde_json::json!({"v": 1, "messages": [], "extra": true}),
    ] {
        assert!(!a.restore(&garbage), "{garbage}");
    }
    assert!(a.restore(&serde_json::json!({"v": 1, "messages": [["u1", 7]]})));
    assert!(a.restore(&serde_json::Value::Null));
    let mut d = GeminiAdapter::new();
    d.open(Path::new("/nowhere/chats/session-x.json"));
    assert!(d.checkpoint().is_null());
}

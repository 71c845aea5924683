//! Garbage never panics and never yields an entry it should not: truncated documents,
//! non-objects, invalid UTF-8, deep nesting, huge strings, wrong field types.

mod common;

use std::path::Path;

use common::{decode_as, fixture};
use transcope_adapter_gemini::GeminiAdapter;
use transcope_core::adapter::{from_fn, Adapter, Skip};
use transcope_core::{Entry, LinePos};

fn one(document: bool, data: &[u8]) -> (usize, Result<(), Skip>) {
    let path = if document {
        "/x/chats/session-a.json"
    } else {
        "/x/chats/session-a.jsonl"
    };
    let mut adapter = GeminiAdapter::new();
    adapter.open(Path::new(path));
    let mut n = 0;
    let r = adapter.decode(
        data,
        LinePos { offset: 0, line: 1 },
        &mut from_fn(|_: &Entry<'_>| n += 1),
    );
    (n, r)
}

#[test]
fn every_truncation_of_a_document_is_a_skip_or_whole() {
    let data = std::fs::read(fixture("lanegrid__agtrace__gemini_session.json")).unwrap();
    let end = data.iter().rposition(|b| *b == b'}').unwrap();
    for cut in (0..end).step_by(7) {
        let (n, r) = one(true, &data[..cut]);
        assert_eq!(n, 0, "cut at {cut}");
        assert!(
            matches!(r, Err(Skip::Blank | Skip::InvalidJson | Skip::InvalidUtf8)),
            "cut at {cut}: {r:?}"
        );
    }
    assert_eq!(one(true, &data), (10, Ok(())));
}

#[test]
fn non_objects_blank_and_invalid_utf8() {
    for document in [true, false] {
        assert_eq!(one(document, b"").1, Err(Skip::Blank));
        assert_eq!(one(document, b"  \t ").1, Err(Skip::Blank));
        assert_eq!(one(document, b"[1,2]").1, Err(Skip::NotObject));
        assert_eq!(one(document, b"[]").1, Err(Skip::NotObject));
        assert_eq!(one(document, b"\"s\"").1, Err(Skip::NotObject));
        assert_eq!(one(document, b"null").1, Err(Skip::NotObject));
        assert_eq!(one(document, b"{\"a\":").1, Err(Skip::InvalidJson));
        assert_eq!(one(document, b"not json").1, Err(Skip::InvalidJson));
        assert_eq!(
            one(document, b"{\"sessionId\":\"\xff\"}").1,
            Err(Skip::InvalidUtf8)
        );
        assert_eq!(one(document, b"{}").1, Err(Skip::Ignored));
    }
}

#[test]
fn wrong_types_are_skips_or_harmless() {
    // Document: messages must be an array; odd messages are left out.
    assert_eq!(
        one(true, br#"{"sessionId":"s","messages":7}"#).1,
        Err(Skip::WrongType)
    );
    assert_eq!(
        one(true, br#"{"sessionId":"s","sessionId":"t"}"#).1,
        Err(Skip::WrongType)
    );
    assert_eq!(
        one(true, br#"{"sessionId":7,"messages":[1,"x",[],{"type":7,"content":{"text":[]}},{"id":"g","type":"gemini","content":[{"text":"ok"},7,null]}]}"#),
        (3, Ok(()))
    );
    // Lines: shapes the CLI would not take are ignored.
    assert_eq!(one(false, br#"{"$rewindTo":7}"#).1, Err(Skip::Ignored));
    assert_eq!(
        one(false, br#"{"id":7,"type":"gemini"}"#).1,
        Err(Skip::Ignored)
    );
    assert_eq!(one(false, br#"{"sessionId":"s"}"#).1, Err(Skip::Ignored));
    assert_eq!(
        one(false, br#"{"$set":{"messages":"no"}}"#).1,
        Err(Skip::Ignored)
    );
    assert_eq!(
        one(false, br#"{"$set":{"messages":[{"type":"gemini"}]}}"#).1,
        Err(Skip::Ignored)
    );
    assert_eq!(
        one(false, br#"{"$set":{"sessionId":"s","sessionId":"t"}}"#).1,
        Err(Skip::WrongType)
    );
    assert_eq!(
        one(
            false,
            br#"{"id":"g","type":"gemini","timestamp":{"a": [1, 2]}}"#
        )
        .0,
        1
    );
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    for depth in [200usize, 100_000] {
        let nested = "[".repeat(depth) + &"]".repeat(depth);
        let inside = format!(r#"{{"id":"g","type":"gemini","content":{nested}}}"#);
        let doc = format!(r#"{{"sessionId":"s","projectHash":"h","messages":[{inside}]}}"#);
        for document in [true, false] {
            let top = one(document, nested.as_bytes());
            assert_eq!(top.0, 0);
            assert!(top.1.is_err());
            for data in [&inside, &doc] {
                // Refused, or read with the nested content giving no text: never a
                // stack overflow, never marker text.
                let path = if document {
                    "/x/chats/session-a.json"
                } else {
                    "/x/chats/session-a.jsonl"
                };
                let (entries, _) = decode_as(Path::new(path), data.as_bytes());
                assert!(entries.len() <= 2, "depth {depth}");
                assert!(entries.iter().all(|e| e.texts.is_empty()));
            }
        }
    }
}

#[test]
fn a_megabyte_string_is_one_text() {
    let big = "m".repeat(1 << 20);
    let line = format!(r#"{{"id":"g","timestamp":"t","type":"gemini","content":"{big}"}}"#);
    let (entries, skips) = decode_as(Path::new("/x/chats/session-a.jsonl"), line.as_bytes());
    assert!(skips.is_empty());
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].texts[0].len(), 1 << 20);
    let doc = format!(r#"{{"sessionId":"s","projectHash":"h","messages":[{line}]}}"#);
    let (entries, _) = decode_as(Path::new("/x/chats/session-a.json"), doc.as_bytes());
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1].texts[0].len(), 1 << 20);
}

#[test]
fn open_on_missing_or_odd_paths_is_harmless() {
    let mut adapter = GeminiAdapter::new();
    for p in [
        "",
        "/",
        "/nonexistent/chats/session-a.jsonl",
        "/nonexistent/chats/p/a.json",
        "relative",
    ] {
        adapter.open(Path::new(p));
        assert_eq!(adapter.folder(), None);
    }
    // A folder where .project_root should be a file.
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/p/chats");
    std::fs::create_dir_all(dir.path().join("tmp/p/.project_root")).unwrap();
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(dir.path().join("projects.json"), b"{\"projects\": 5}").unwrap();
    let file = chats.join("session-a.jsonl");
    std::fs::write(&file, b"\xff\xfe\n").unwrap();
    adapter.open(&file);
    assert_eq!(adapter.folder(), None);
}

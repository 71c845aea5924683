//! Line-level behaviour of the Claude adapter: tolerant field types, skips, BOM,
//! duplicate keys, marker texts, ids, and no panic on mangled input.

mod common;

use std::borrow::Cow;

use transcope_adapter_claude::ClaudeAdapter;
use transcope_core::adapter::Skip;
use transcope_core::{Entry, EntryKind, LinePos, TimeValue};
use transcope_testkit::decode::decode_owned;

fn at(offset: u64) -> LinePos {
    LinePos { offset, line: 2 }
}

fn one(line: &str) -> Entry<'static> {
    one_bytes(line.as_bytes())
}

fn one_bytes(line: &[u8]) -> Entry<'static> {
    let mut v = decode_owned(&mut ClaudeAdapter, line, at(10)).unwrap();
    assert_eq!(v.len(), 1);
    v.pop().unwrap()
}

fn skip(line: &[u8]) -> Skip {
    decode_owned(&mut ClaudeAdapter, line, at(10)).unwrap_err()
}

#[test]
fn wrong_field_types_do_not_fail_the_line() {
    let e = one(r#"{"type":"user","cwd":5,"timestamp":7,"gitBranch":""}"#);
    assert_eq!(e.kind, Some(EntryKind::User));
    assert_eq!(e.cwd.as_deref(), Some("5"));
    assert_eq!(e.time, TimeValue::Other("7".into()));
    assert_eq!(e.branch, None);

    let e = one(
        r#"{"type":"user","cwd":null,"gitBranch":null,"timestamp":null,"sessionId":3,"uuid":["x"],"isSidechain":"yes"}"#,
    );
    assert_eq!((e.cwd, e.branch, e.time), (None, None, TimeValue::Missing));
    assert_eq!((e.session_id, e.uuid, e.is_sidechain), (None, None, false));

    let e = one(r#"{"type":"user","cwd":true,"gitBranch":1.5,"timestamp":{"b":1, "a":[1, 2]}}"#);
    assert_eq!(e.cwd.as_deref(), Some("True"));
    assert_eq!(e.branch.as_deref(), Some("1.5"));
    assert_eq!(e.time, TimeValue::Other(r#"{"b":1,"a":[1,2]}"#.into()));

    let e = one(r#"{"type":"user","cwd":0,"gitBranch":false,"timestamp":""}"#);
    assert_eq!((e.cwd, e.branch), (None, None));
    assert_eq!(e.time, TimeValue::Str("".into()));
    assert!(!e.time.is_truthy());
}

#[test]
fn position_is_copied() {
    let e = one(r#"{"type":"summary","summary":"s"}"#);
    assert_eq!(
        (e.offset, e.line, e.kind),
        (10, 2, Some(EntryKind::Summary))
    );
}

#[test]
fn skips() {
    assert_eq!(skip(b"5"), Skip::NotObject);
    assert_eq!(skip(b"[1]"), Skip::NotObject);
    assert_eq!(skip(b"null"), Skip::NotObject);
    assert_eq!(skip(br#""massive error""#), Skip::NotObject);
    assert_eq!(skip(b"{synthetic malformed json"), Skip::InvalidJson);
    assert_eq!(
        skip(br#"{"type":"user"} {"type":"user"}"#),
        Skip::InvalidJson
    );
    assert_eq!(
        skip(br#"{"type":"user","cwd":"/a","x":NaN}"#),
        Skip::InvalidJson
    );
    assert_eq!(
        skip(b"{\"type\":\"user\",\"cwd\":\"/\xff\"}"),
        Skip::InvalidUtf8
    );
    assert_eq!(
        skip(b"{\"type\":\"user\",\"toolUseResult\":\"\xc0\x80\"}"),
        Skip::InvalidUtf8
    );
    assert_eq!(skip(b""), Skip::Blank);
    assert_eq!(skip(b" \t\r"), Skip::Blank);
    assert_eq!(skip(br#"{"silly":"this"}"#), Skip::Ignored);
    assert_eq!(
        skip(br#"{"type":"file-history-snapshot-v9","messageId":"m"}"#),
        Skip::Ignored
    );
    assert_eq!(skip(br#"{"type":5}"#), Skip::WrongType);
    assert_eq!(skip(br#"{"type":5, "cwd": ""}"#), Skip::WrongType);
}

#[test]
fn unknown_types_with_context_are_kept_as_other() {
    let e = one(r#"{"type":"brand-new","cwd":"/w"}"#);
    assert_eq!(
        (e.kind, e.cwd.as_deref()),
        (Some(EntryKind::Other), Some("/w"))
    );
    let e = one(r#"{"timestamp":"2025-01-01T00:00:00Z"}"#);
    assert_eq!(e.kind, Some(EntryKind::Other));
    let e = one(r#"{"type":["user"],"gitBranch":"b"}"#);
    assert_eq!(
        (e.kind, e.branch.as_deref()),
        (Some(EntryKind::Other), Some("b"))
    );
    // Known metadata types are kept even without context.
    assert_eq!(
        one(r#"{"type":"permission-mode","permissionMode":"plan"}"#).kind,
        Some(EntryKind::System)
    );
}

#[test]
fn bom_is_stripped_from_the_first_line_only() {
    let line = "\u{feff}{\"type\":\"user\",\"cwd\":\"/w\"}";
    let v = decode_owned(
        &mut ClaudeAdapter,
        line.as_bytes(),
        LinePos { offset: 0, line: 1 },
    )
    .unwrap();
    assert_eq!(v[0].cwd.as_deref(), Some("/w"));
    // Elsewhere a BOM is content, and the line is not JSON (as for the reference).
    assert_eq!(skip(line.as_bytes()), Skip::InvalidJson);
}

#[test]
fn python_whitespace_is_trimmed() {
    assert_eq!(
        one("\u{a0}\x1c {\"type\":\"user\",\"cwd\":\"/w\"}\u{2028}\r")
            .cwd
            .as_deref(),
        Some("/w")
    );
}

#[test]
fn duplicate_keys_last_one_wins_like_python() {
    let e = one(
        r#"{"type":"assistant","cwd":"/a","gitBranch":"x","cwd":"/b","type":"user","gitBranch":""}"#,
    );
    assert_eq!(
        (e.kind, e.cwd.as_deref(), e.branch),
        (Some(EntryKind::User), Some("/b"), None)
    );
    // The reason this needs hand-written visitors: serde's derived structs reject it.
    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Derived {
        cwd: String,
    }
    assert!(serde_json::from_str::<Derived>(r#"{"cwd":"/a","cwd":"/b"}"#).is_err());
    // …while serde_json's own map keeps the last value, as Python does.
    let v: serde_json::Value = serde_json::from_str(r#"{"cwd":"/a","cwd":"/b"}"#).unwrap();
    assert_eq!(v["cwd"], "/b");
}

#[test]
fn ids_and_flags() {
    let e = one(
        r#"{"type":"system","subtype":"compact_boundary","parentUuid":null,"logicalParentUuid":"l","uuid":"u","sessionId":"s","agentId":"a","isSidechain":true}"#,
    );
    assert_eq!(e.kind, Some(EntryKind::System));
    assert_eq!(e.parent_uuid, None);
    assert_eq!(e.logical_parent_uuid.as_deref(), Some("l"));
    assert_eq!(
        (
            e.uuid.as_deref(),
            e.session_id.as_deref(),
            e.agent_id.as_deref()
        ),
        (Some("u"), Some("s"), Some("a"))
    );
    assert!(e.is_sidechain);
}

#[test]
fn turn_context_folder_rule_applies_in_claude_files_too() {
    let e = one(r#"{"type":"turn_context","cwd":"/top","payload":{"cwd":"/inner"}}"#);
    assert_eq!(
        (e.kind, e.cwd.as_deref()),
        (Some(EntryKind::Context), Some("/inner"))
    );
    let e = one(r#"{"type":"turn_context","cwd":"/top","payload":[]}"#);
    assert_eq!(e.cwd, None);
}

#[test]
fn marker_texts() {
    // String content: one text.
    assert_eq!(
        one(r#"{"type":"assistant","message":{"content":"hello"}}"#).texts,
        ["hello"]
    );
    // Several text blocks: one text each; thinking/tool_use/empty text ignored.
    let e = one(
        r#"{"message":{"role":"assistant","content":[{"type":"thinking","thinking":"<!-- @lesson -->no<!-- @/lesson -->","signature":"s"},{"type":"text","text":"one"},{"type":"tool_use","id":"t","name":"Bash","input":{"text":"no"}},{"type":"text","text":""},{"type":"text","text":"two"}]},"type":"assistant"}"#,
    );
    assert_eq!(e.texts, ["one", "two"]);
    // User text is never a marker text, string or list.
    assert!(one(r#"{"type":"user","message":{"content":"x"}}"#)
        .texts
        .is_empty());
    assert!(
        one(r#"{"type":"user","message":{"content":[{"type":"text","text":"x"}]}}"#)
            .texts
            .is_empty()
    );
    // Codex-shaped lines are not scanned by the Claude rule.
    assert!(one(r#"{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]}}"#).texts.is_empty());
    // A message that is not an object, or a broken nested string, costs only the texts.
    let e = one(r#"{"type":"assistant","cwd":"/w","message":"error"}"#);
    assert_eq!((e.cwd.as_deref(), e.texts.len()), (Some("/w"), 0));
    let e = one(
        r#"{"type":"assistant","cwd":"/w","message":{"content":[{"type":"text","text":"\ud800"}]}}"#,
    );
    assert_eq!((e.cwd.as_deref(), e.texts.len()), (Some("/w"), 0));
}

#[test]
fn unescaped_strings_are_borrowed_from_the_line() {
    use transcope_core::adapter::Adapter;
    let line = br#"{"type":"assistant","cwd":"/w","gitBranch":"main","timestamp":"t","message":{"content":[{"type":"text","text":"plain"}]}}"#;
    let mut checked = false;
    let mut sink = transcope_core::adapter::from_fn(|e: &Entry<'_>| {
        assert!(matches!(e.cwd, Some(Cow::Borrowed(_))));
        assert!(matches!(e.branch, Some(Cow::Borrowed(_))));
        assert!(matches!(e.time, TimeValue::Str(Cow::Borrowed(_))));
        assert!(matches!(e.texts[0], Cow::Borrowed(_)));
        checked = true;
    });
    ClaudeAdapter::new()
        .decode(line, LinePos::default(), &mut sink)
        .unwrap();
    assert!(checked);
}

/// Truncations and byte flips of real lines never panic, and whatever decodes still
/// satisfies the entry invariants.
#[test]
fn mangled_corpus_lines_never_panic() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut decoded = 0usize;
    for dir in ["public/claude", "public/codex"] {
        for path in common::jsonl_files(dir) {
            let data = std::fs::read(&path).unwrap();
            for (i, (_, line)) in common::frame(&data).into_iter().enumerate() {
                if i % 5 != 0 {
                    continue;
                }
                let step = (line.len() / 40).max(1);
                for cut in (0..line.len()).step_by(step) {
                    let _ = decode_owned(&mut ClaudeAdapter, &line[..cut], at(0));
                    decoded += 1;
                }
                for _ in 0..20 {
                    let mut m = line.to_vec();
                    if m.is_empty() {
                        break;
                    }
                    for _ in 0..3 {
                        let at_ = (next() as usize) % m.len();
                        m[at_] = (next() & 0xff) as u8;
                    }
                    if let Ok(v) = decode_owned(&mut ClaudeAdapter, &m, at(0)) {
                        assert!(v.len() == 1 && v[0].kind.is_some());
                    }
                    decoded += 1;
                }
            }
        }
    }
    assert!(decoded > 10_000, "{decoded}");
}

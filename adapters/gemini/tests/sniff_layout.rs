//! Format detection, framing and the on-disk layout: the Gemini factory claims Gemini
//! files (by their first line, or by name and place for a pretty-printed document) and
//! no Claude or Codex line; the layout's roots, claims, scope keys and parents.

mod common;

use std::path::{Path, PathBuf};

use common::{fixture, public};
use transcope_adapter_gemini::{GeminiFactory, GeminiLayout};
use transcope_core::adapter::{AdapterFactory, Confidence, Framing, Layout};
use transcope_testkit::first_non_empty_line;

const HOME: &str = "home/.gemini/tmp";

fn gemini_fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![fixture("")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap() != "licenses" {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "json" || x == "jsonl")
                && p.file_name().unwrap() != "projects.json"
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn claims_every_gemini_session_file() {
    let files = gemini_fixtures();
    assert_eq!(files.len(), 10);
    for path in files {
        let head = first_non_empty_line(&path);
        let placed = path.components().any(|c| c.as_os_str() == "chats");
        let compact = !head.trim_ascii().eq(b"{");
        let sniffed = GeminiFactory.sniff(&path, &head);
        if placed || compact {
            assert_eq!(sniffed, Some(Confidence::Certain), "{}", path.display());
        } else {
            // A pretty document outside a chats folder and not named `session-*`:
            // its first line `{` alone says nothing.
            assert_eq!(sniffed, None, "{}", path.display());
        }
    }
}

#[test]
fn pretty_document_by_name() {
    let p = Path::new("/anywhere/session-2025-12-09T19-51-f0a689a6.json");
    assert_eq!(GeminiFactory.sniff(p, b"{"), Some(Confidence::Certain));
    assert_eq!(
        GeminiFactory.sniff(Path::new("/anywhere/notes.json"), b"{"),
        None
    );
    assert_eq!(
        GeminiFactory.sniff(Path::new("/x/chats/session-a.jsonl"), b"{"),
        None
    );
}

#[test]
fn does_not_claim_claude_or_codex_lines() {
    let mut seen = 0;
    for dir in ["claude", "codex"] {
        for e in std::fs::read_dir(public(dir)).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            for line in data
                .split(|b| *b == b'\n')
                .filter(|l| !l.is_empty())
                .take(50)
            {
                assert_eq!(GeminiFactory.sniff(&path, line), None, "{}", path.display());
                seen += 1;
            }
        }
    }
    assert!(seen > 100);
    // Inline, in case the corpus moves: one line of each.
    let claude = br#"{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w","sessionId":"0f0e","version":"2.0.0","gitBranch":"main","type":"user","message":{"role":"user","content":"hi"},"uuid":"u","timestamp":"2025-01-01T00:00:00Z"}"#;
    let codex = br#"{"timestamp":"2025-12-09T19:55:16.336Z","type":"session_meta","payload":{"id":"019b","cwd":"/start"}}"#;
    let p = Path::new("/x/chats/session-a.jsonl");
    assert_eq!(GeminiFactory.sniff(p, claude), None);
    assert_eq!(GeminiFactory.sniff(p, codex), None);
}

#[test]
fn framing_by_extension() {
    assert_eq!(
        GeminiFactory.framing(Path::new("/c/chats/session-a.json")),
        Framing::Document
    );
    assert_eq!(
        GeminiFactory.framing(Path::new("/c/chats/session-a.jsonl")),
        Framing::Lines
    );
    assert_eq!(GeminiFactory.name(), "gemini");
    assert!(GeminiFactory.layout().is_some());
}

#[test]
fn default_roots_honour_gemini_cli_home() {
    let none = |_: &str| None;
    let iso = |k: &str| (k == "GEMINI_CLI_HOME").then(|| "/iso".to_owned());
    assert_eq!(
        GeminiLayout.default_roots(&none, Path::new("/home/u")),
        [PathBuf::from("/home/u/.gemini/tmp")]
    );
    assert_eq!(
        GeminiLayout.default_roots(&iso, Path::new("/home/u")),
        [PathBuf::from("/iso/.gemini/tmp")]
    );
}

#[test]
fn claims_by_name_and_place() {
    let l = GeminiLayout;
    assert!(l.claims(Path::new(
        "/h/.gemini/tmp/p/chats/session-2026-01-01T00-00-abcdef12.jsonl"
    )));
    assert!(l.claims(Path::new(
        "/h/.gemini/tmp/p/chats/session-2026-01-01T00-00-abcdef12.json"
    )));
    assert!(l.claims(Path::new("/h/.gemini/tmp/p/chats/PARENT/AGENT.jsonl")));
    assert!(!l.claims(Path::new("/h/.gemini/tmp/p/chats/session-x.jsonl.tmp-42")));
    assert!(!l.claims(Path::new("/h/.gemini/tmp/p/logs/session-x.jsonl")));
    assert!(!l.claims(Path::new("/h/.gemini/tmp/p/chats/checkpoint-tag.json")));
    assert!(!l.claims(&public("claude/lanegrid__agtrace__agent-0c4c3cf8.jsonl")));

    // A document resumed into its `.jsonl` twin is not claimed twice.
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/p/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let doc = chats.join("session-2026-01-01T00-00-abcdef12.json");
    std::fs::write(&doc, "{}").unwrap();
    assert!(l.claims(&doc));
    std::fs::write(
        chats.join("session-2026-01-01T00-00-abcdef12.jsonl"),
        "{}\n",
    )
    .unwrap();
    assert!(!l.claims(&doc));
}

#[test]
fn scope_keys_and_parents() {
    let l = GeminiLayout;
    let main = fixture(&format!(
        "{HOME}/demo-app/chats/session-2026-05-01T10-00-5f1c9a2e.jsonl"
    ));
    assert_eq!(
        l.scope_key(&main),
        Some((
            Confidence::Certain,
            Ok("5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001".into())
        ))
    );
    let sub = fixture(&format!(
        "{HOME}/demo-app/chats/5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001/0c9d8e7f-0000-4000-8000-00000000a001.jsonl"
    ));
    let key = "5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001.0c9d8e7f-0000-4000-8000-00000000a001";
    assert_eq!(
        l.scope_key(&sub),
        Some((Confidence::Certain, Ok(key.into())))
    );
    assert_eq!(
        l.parent(key).as_deref(),
        Some("5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001")
    );
    assert_eq!(l.parent("5f1c9a2e-6b7d-4c1e-9a0b-3d2e1f000001"), None);

    let doc = fixture(&format!(
        "{HOME}/registry-only/chats/session-2026-04-01T08-00-77aa88bb.json"
    ));
    assert_eq!(
        l.scope_key(&doc),
        Some((
            Confidence::Certain,
            Ok("77aa88bb-1111-4222-8333-444455556666".into())
        ))
    );
    // A log outside a chats folder is named by its metadata line.
    let loose = fixture("jazzyalex__agent-sessions__jsonl_v040.jsonl");
    assert_eq!(
        l.scope_key(&loose),
        Some((Confidence::Certain, Ok("gemini_stage0_jsonl".into())))
    );
    // Not Gemini at all.
    assert_eq!(
        l.scope_key(&public(
            "codex/simonw__claude-code-transcripts__sample_codex_session.jsonl"
        )),
        None
    );

    // A session file without a readable id has no key, with the reason.
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/p/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let bad = chats.join("session-2026-01-01T00-00-abcdef12.jsonl");
    std::fs::write(&bad, "not json\n").unwrap();
    assert!(matches!(
        l.scope_key(&bad),
        Some((Confidence::Certain, Err(_)))
    ));
    let dotted = chats.join("session-2026-01-01T00-00-a.jsonl");
    std::fs::write(&dotted, "{\"sessionId\":\"a.b\",\"projectHash\":\"h\"}\n").unwrap();
    assert!(matches!(l.scope_key(&dotted), Some((_, Err(_)))));
}

/// A metadata line is one whichever way its keys are spelled: escaped letters are the
/// same key (the quick check for a `projectHash` never turns one away).
#[test]
fn metadata_keys_spelled_with_escapes() {
    use transcope_adapter_gemini::is_metadata_line;
    let plain = br#"{"sessionId":"s1","projectHash":"ab","startTime":"2025-01-01T00:00:00Z"}"#;
    let escaped =
        br#"{"sessionId":"s1","project\u0048ash":"ab","startTime":"2025-01-01T00:00:00Z"}"#;
    assert!(is_metadata_line(plain));
    assert!(is_metadata_line(escaped));
    // Without the key, in any spelling, no metadata.
    assert!(!is_metadata_line(
        br#"{"sessionId":"s1","projecthash":"ab"}"#
    ));
    assert!(!is_metadata_line(br#"{"sessionId":"s1","note":"\u0041"}"#));
}

/// Issue 37, item 4: a document's `sessionId` is taken from the head read to name the
/// file when the head holds it, and read through the document only when it does not;
/// only the top level's counts either way.
#[test]
fn a_document_is_named_from_its_head_and_read_through_only_when_the_head_lacks_the_id() {
    let l = GeminiLayout;
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join("tmp/p/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let id = "77aa88bb-1111-4222-8333-444455556666";
    let key = |name: &str, text: &str| {
        let p = chats.join(name);
        std::fs::write(&p, text).unwrap();
        l.scope_key(&p).map(|(_, k)| k)
    };
    // A message a few hundred KiB long, and one nested `sessionId` that is not the
    // document's.
    let message = format!(
        r#"{{"id":"m1","type":"user","sessionId":"nested","content":"{}"}}"#,
        "z".repeat(300 * 1024)
    );
    // The id first, as Gemini CLI writes it: found in the head. What follows the head
    // is torn here, so only a read that stops at the head can name the file; a whole
    // read would find no document.
    let torn = format!(
        "{{\n  \"sessionId\": \"{id}\",\n  \"projectHash\": \"h\",\n  \"messages\": [{message}, {{\"id\":"
    );
    assert_eq!(
        key("session-2026-01-01T00-00-77aa88bb.json", &torn),
        Some(Ok(id.into()))
    );
    // The id after the long message: the head ends first, so the document is read
    // through for it (the nested one is not the document's).
    let late = format!(r#"{{"projectHash":"h","messages":[{message}],"sessionId":"{id}"}}"#);
    assert_eq!(
        key("session-2026-01-01T00-01-77aa88bb.json", &late),
        Some(Ok(id.into()))
    );
    // ... and a document that is torn there has none.
    let late_torn = &late[..late.len() - 1];
    assert!(matches!(
        key("session-2026-01-01T00-02-77aa88bb.json", late_torn),
        Some(Err(_))
    ));
    // A whole document in the head: its top level decides.
    let nested_only = r#"{"messages":[{"sessionId":"77aa88bb-1111-4222-8333-444455556666"}]}"#;
    assert!(matches!(
        key("session-2026-01-01T00-03-77aa88bb.json", nested_only),
        Some(Err(_))
    ));
    let not_text = r#"{"sessionId": 12, "messages": []}"#;
    assert!(matches!(
        key("session-2026-01-01T00-04-77aa88bb.json", not_text),
        Some(Err(_))
    ));
    assert!(matches!(
        key("session-2026-01-01T00-05-77aa88bb.json", "[1, 2]"),
        Some(Err(_))
    ));
    let escaped = format!("{{\"messages\": [], \"session\\u0049d\": \"{id}\"}}");
    assert_eq!(
        key("session-2026-01-01T00-06-77aa88bb.json", &escaped),
        Some(Ok(id.into()))
    );
}

//! The detection rules (scope-log.md §5.2 plus the legacy Codex header of
//! transcript-formats §2.3) as a table: Claude's half through its factory, and the
//! pick of the registry of both real factories (the Codex half of the table is
//! `adapters/codex/tests/sniff.rs`).

mod common;

use transcope_adapter_claude::{classify, ClaudeFactory, FirstLine};
use transcope_core::adapter::{AdapterFactory, Confidence};

use Confidence::{Certain as C, Fallback as F};

/// (first line, Claude classification, claude sniff, registry pick)
type Row<'a> = (&'a [u8], FirstLine, Option<Confidence>, &'a str);

#[test]
fn sniff_rules_table() {
    let table: &[Row<'_>] = &[
        (br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#, FirstLine::Other, Some(F), "codex"),
        (br#"{"type":"response_item","payload":{}}"#, FirstLine::Other, Some(F), "codex"),
        (br#"{"type":"event_msg"}"#, FirstLine::Other, Some(F), "codex"),
        (br#"{"type":"turn_context","payload":5}"#, FirstLine::Other, Some(F), "codex"),
        // Other Codex envelope types do not count for the reference.
        (br#"{"type":"compacted","payload":{}}"#, FirstLine::Other, Some(F), "claude"),
        // Legacy header: the reference says Claude; the Codex adapter handles it and
        // reproduces the reference's Claude reading.
        (br#"{"id":"4444","timestamp":"2026-01-04T05:06:07.000Z"}"#, FirstLine::Other, Some(F), "codex"),
        (br#"{"id":"4444","timestamp":"t","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.34.0"}"#, FirstLine::Other, Some(F), "codex"),
        (br#"{"id":"x","payload":{}}"#, FirstLine::Other, Some(F), "claude"),
        (br#"{"id":"x","type":"user"}"#, FirstLine::ClaudeType, Some(C), "claude"),
        // Claude lines.
        (br#"{"type":"user","cwd":"/w"}"#, FirstLine::ClaudeType, Some(C), "claude"),
        (br#"{"type":"summary","summary":"s","leafUuid":"l"}"#, FirstLine::ClaudeType, Some(C), "claude"),
        (br#"{"type":"file-history-snapshot","messageId":"m"}"#, FirstLine::ClaudeType, Some(C), "claude"),
        (br#"{"type":"queue-operation","operation":"dequeue"}"#, FirstLine::ClaudeType, Some(C), "claude"),
        // Anything else is Claude by default.
        (br#"{"type":"something-new"}"#, FirstLine::Other, Some(F), "claude"),
        (br#"{"silly":"this"}"#, FirstLine::Other, Some(F), "claude"),
        (br#"[{"type":"session_meta"}]"#, FirstLine::Other, Some(F), "claude"),
        (b"[", FirstLine::Other, Some(F), "claude"),
        (b"{not json", FirstLine::Other, Some(F), "claude"),
        (b"5", FirstLine::Other, Some(F), "claude"),
        (br#""session_meta""#, FirstLine::Other, Some(F), "claude"),
        (b"", FirstLine::Other, Some(F), "claude"),
        (b"\xff\xfe", FirstLine::Other, Some(F), "claude"),
        // Whitespace and a BOM are stripped first.
        (b"  {\"type\":\"event_msg\"}\r", FirstLine::Other, Some(F), "codex"),
        ("\u{feff}{\"type\":\"session_meta\"}".as_bytes(), FirstLine::Other, Some(F), "codex"),
    ];
    let registry = common::registry();
    for (line, class, claude, pick) in table {
        let shown = String::from_utf8_lossy(line);
        assert_eq!(classify(line), *class, "{shown}");
        assert_eq!(
            ClaudeFactory.sniff(std::path::Path::new("t.jsonl"), line),
            *claude,
            "{shown}"
        );
        assert_eq!(
            registry
                .detect(std::path::Path::new("t.jsonl"), line)
                .map(|f| f.name()),
            Some(*pick),
            "{shown}"
        );
    }
    assert!(registry.by_name("claude").is_some() && registry.by_name("codex").is_some());
}

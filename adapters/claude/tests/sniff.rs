//! The detection rules (scope-log.md §5.2 plus the legacy Codex header of
//! transcript-formats §2.3) as a table, through both factories and the registry.

mod common;

use transcope_adapter_claude::{classify, ClaudeFactory, FirstLine};
use transcope_adapter_codex::CodexFactory;
use transcope_core::adapter::{AdapterFactory, Confidence};

use Confidence::{Certain as C, Fallback as F};

/// (first line, classification, reference format, claude sniff, codex sniff, registry pick)
type Row<'a> = (
    &'a [u8],
    FirstLine,
    &'a str,
    Option<Confidence>,
    Option<Confidence>,
    &'a str,
);

#[test]
fn sniff_rules_table() {
    let table: &[Row<'_>] = &[
        (br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#, FirstLine::Codex, "codex", Some(F), Some(C), "codex"),
        (br#"{"type":"response_item","payload":{}}"#, FirstLine::Codex, "codex", Some(F), Some(C), "codex"),
        (br#"{"type":"event_msg"}"#, FirstLine::Codex, "codex", Some(F), Some(C), "codex"),
        (br#"{"type":"turn_context","payload":5}"#, FirstLine::Codex, "codex", Some(F), Some(C), "codex"),
        // Other Codex envelope types do not count for the reference.
        (br#"{"type":"compacted","payload":{}}"#, FirstLine::Other, "claude", Some(F), None, "claude"),
        // Legacy header: the reference says Claude; the Codex adapter handles it and
        // reproduces the reference's Claude reading.
        (br#"{"id":"4444","timestamp":"2026-01-04T05:06:07.000Z"}"#, FirstLine::CodexLegacyHeader, "claude", Some(F), Some(C), "codex"),
        (br#"{"id":"4444","timestamp":"t","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.34.0"}"#, FirstLine::CodexLegacyHeader, "claude", Some(F), Some(C), "codex"),
        (br#"{"id":"x","payload":{}}"#, FirstLine::Other, "claude", Some(F), None, "claude"),
        (br#"{"id":"x","type":"user"}"#, FirstLine::ClaudeType, "claude", Some(C), None, "claude"),
        // Claude lines.
        (br#"{"type":"user","cwd":"/w"}"#, FirstLine::ClaudeType, "claude", Some(C), None, "claude"),
        (br#"{"type":"summary","summary":"s","leafUuid":"l"}"#, FirstLine::ClaudeType, "claude", Some(C), None, "claude"),
        (br#"{"type":"file-history-snapshot","messageId":"m"}"#, FirstLine::ClaudeType, "claude", Some(C), None, "claude"),
        (br#"{"type":"queue-operation","operation":"dequeue"}"#, FirstLine::ClaudeType, "claude", Some(C), None, "claude"),
        // Anything else is Claude by default.
        (br#"{"type":"something-new"}"#, FirstLine::Other, "claude", Some(F), None, "claude"),
        (br#"{"silly":"this"}"#, FirstLine::Other, "claude", Some(F), None, "claude"),
        (br#"[{"type":"session_meta"}]"#, FirstLine::Other, "claude", Some(F), None, "claude"),
        (b"[", FirstLine::Other, "claude", Some(F), None, "claude"),
        (b"{not json", FirstLine::Other, "claude", Some(F), None, "claude"),
        (b"5", FirstLine::Other, "claude", Some(F), None, "claude"),
        (br#""session_meta""#, FirstLine::Other, "claude", Some(F), None, "claude"),
        (b"", FirstLine::Other, "claude", Some(F), None, "claude"),
        (b"\xff\xfe", FirstLine::Other, "claude", Some(F), None, "claude"),
        // Whitespace and a BOM are stripped first.
        (b"  {\"type\":\"event_msg\"}\r", FirstLine::Codex, "codex", Some(F), Some(C), "codex"),
        ("\u{feff}{\"type\":\"session_meta\"}".as_bytes(), FirstLine::Codex, "codex", Some(F), Some(C), "codex"),
    ];
    let registry = common::registry();
    for (line, class, reference, claude, codex, pick) in table {
        let shown = String::from_utf8_lossy(line);
        assert_eq!(classify(line), *class, "{shown}");
        assert_eq!(class.reference_format(), *reference, "{shown}");
        assert_eq!(
            ClaudeFactory.sniff(std::path::Path::new("t.jsonl"), line),
            *claude,
            "{shown}"
        );
        assert_eq!(
            CodexFactory.sniff(std::path::Path::new("t.jsonl"), line),
            *codex,
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

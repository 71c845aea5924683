//! The detection rules (scope-log.md §5.2 plus the legacy Codex header of
//! transcript-formats §2.3) as a table: Codex's half, through its classification, the
//! reference's two-way decision and its factory (the Claude half and the registry's
//! pick are `adapters/claude/tests/sniff.rs`).

use transcope_adapter_codex::{classify, CodexFactory, FirstLine};
use transcope_core::adapter::{AdapterFactory, Confidence};

use Confidence::Certain as C;

/// (first line, Codex classification, reference format, codex sniff)
type Row<'a> = (&'a [u8], FirstLine, &'a str, Option<Confidence>);

#[test]
fn sniff_rules_table() {
    let table: &[Row<'_>] = &[
        (br#"{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}"#, FirstLine::Codex, "codex", Some(C)),
        (br#"{"type":"response_item","payload":{}}"#, FirstLine::Codex, "codex", Some(C)),
        (br#"{"type":"event_msg"}"#, FirstLine::Codex, "codex", Some(C)),
        (br#"{"type":"turn_context","payload":5}"#, FirstLine::Codex, "codex", Some(C)),
        // Other Codex envelope types do not count for the reference.
        (br#"{"type":"compacted","payload":{}}"#, FirstLine::Other, "claude", None),
        // Legacy header: the reference says Claude; the Codex adapter handles it and
        // reproduces the reference's Claude reading.
        (br#"{"id":"4444","timestamp":"2026-01-04T05:06:07.000Z"}"#, FirstLine::CodexLegacyHeader, "claude", Some(C)),
        (br#"{"id":"4444","timestamp":"t","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.34.0"}"#, FirstLine::CodexLegacyHeader, "claude", Some(C)),
        (br#"{"id":"x","payload":{}}"#, FirstLine::Other, "claude", None),
        (br#"{"id":"x","type":"user"}"#, FirstLine::Other, "claude", None),
        // Claude lines.
        (br#"{"type":"user","cwd":"/w"}"#, FirstLine::Other, "claude", None),
        (br#"{"type":"summary","summary":"s","leafUuid":"l"}"#, FirstLine::Other, "claude", None),
        (br#"{"type":"file-history-snapshot","messageId":"m"}"#, FirstLine::Other, "claude", None),
        (br#"{"type":"queue-operation","operation":"dequeue"}"#, FirstLine::Other, "claude", None),
        // Anything else is Claude by default.
        (br#"{"type":"something-new"}"#, FirstLine::Other, "claude", None),
        (br#"{"silly":"this"}"#, FirstLine::Other, "claude", None),
        (br#"[{"type":"session_meta"}]"#, FirstLine::Other, "claude", None),
        (b"[", FirstLine::Other, "claude", None),
        (b"{not json", FirstLine::Other, "claude", None),
        (b"5", FirstLine::Other, "claude", None),
        (br#""session_meta""#, FirstLine::Other, "claude", None),
        (b"", FirstLine::Other, "claude", None),
        (b"\xff\xfe", FirstLine::Other, "claude", None),
        // Whitespace and a BOM are stripped first.
        (b"  {\"type\":\"event_msg\"}\r", FirstLine::Codex, "codex", Some(C)),
        ("\u{feff}{\"type\":\"session_meta\"}".as_bytes(), FirstLine::Codex, "codex", Some(C)),
    ];
    for (line, class, reference, codex) in table {
        let shown = String::from_utf8_lossy(line);
        assert_eq!(classify(line), *class, "{shown}");
        assert_eq!(class.reference_format(), *reference, "{shown}");
        assert_eq!(
            CodexFactory.sniff(std::path::Path::new("t.jsonl"), line),
            *codex,
            "{shown}"
        );
    }
}

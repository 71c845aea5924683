//! Format detection from a file's first non-empty line (scope-log.md §5.2).
//!
//! The reference decides between two formats only: a first line that starts with `[`
//! or fails to parse is Claude; a first object whose `type` is `session_meta`,
//! `response_item`, `event_msg` or `turn_context` is Codex; anything else is Claude.
//! [`classify`] refines "anything else" so factories can express confidence:
//!
//! | first line | [`FirstLine`] | reference | Claude factory | Codex factory |
//! |---|---|---|---|---|
//! | object, `type` ∈ the four Codex envelope types | `Codex` | codex | `Fallback` | `Certain` |
//! | object, no `type`, has `id`, no `payload` (transcript-formats §2.3) | `CodexLegacyHeader` | **claude** | `Fallback` | `Certain` |
//! | object, `type` a Claude line type (`user`, `summary`, …) | `ClaudeType` | claude | `Certain` | — |
//! | anything else (other objects, `[`…, non-JSON, non-objects, blank) | `Other` | claude | `Fallback` | — |
//!
//! A legacy Codex file goes to the Codex adapter, which then applies the reference's
//! *Claude* marker rule to it, so the pipeline output still equals the reference's.
//! A leading BOM is stripped before classifying (the reference would see a line that
//! fails to parse, i.e. Claude).

use crate::record::{line_text, parse_str, TypeField};

/// What the first non-empty line of a file says about its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstLine {
    /// A Codex envelope line (`session_meta`, `response_item`, `event_msg`,
    /// `turn_context`).
    Codex,
    /// A pre-envelope Codex session header (`{"id":…,"timestamp":…}`).
    CodexLegacyHeader,
    /// An object whose `type` is a Claude Code line type.
    ClaudeType,
    /// Anything else; the reference treats it as Claude.
    Other,
}

impl FirstLine {
    /// The reference's decision: `"codex"` only for [`FirstLine::Codex`].
    pub fn reference_format(self) -> &'static str {
        match self {
            FirstLine::Codex => "codex",
            _ => "claude",
        }
    }
}

/// Classify a file's first non-empty line.
///
/// ```
/// use transcope_adapter_claude::detect::{classify, FirstLine};
/// assert_eq!(classify(br#"{"type":"session_meta","payload":{}}"#), FirstLine::Codex);
/// assert_eq!(classify(br#"{"id":"x","timestamp":"t"}"#), FirstLine::CodexLegacyHeader);
/// assert_eq!(classify(br#"{"type":"summary","summary":"s"}"#), FirstLine::ClaudeType);
/// assert_eq!(classify(b"[{}]"), FirstLine::Other);
/// ```
pub fn classify(first_line: &[u8]) -> FirstLine {
    let Ok(text) = line_text(first_line, true) else {
        return FirstLine::Other;
    };
    if text.starts_with('[') {
        return FirstLine::Other;
    }
    let Ok(rec) = parse_str(text) else {
        return FirstLine::Other;
    };
    match &rec.ty {
        TypeField::Str(t)
            if matches!(
                &**t,
                "session_meta" | "response_item" | "event_msg" | "turn_context"
            ) =>
        {
            FirstLine::Codex
        }
        TypeField::Str(t) if crate::record::is_claude_type(t) => FirstLine::ClaudeType,
        TypeField::Missing if rec.id.is_present() && !rec.has_payload => {
            FirstLine::CodexLegacyHeader
        }
        _ => FirstLine::Other,
    }
}

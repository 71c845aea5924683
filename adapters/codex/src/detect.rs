//! Codex's half of format detection, from a file's first non-empty line
//! (scope-log.md §5.2 plus the legacy header of transcript-formats §2.3).
//!
//! The reference decides between two formats only: a first line that starts with `[`
//! or fails to parse is Claude; a first object whose `type` is `session_meta`,
//! `response_item`, `event_msg` or `turn_context` is Codex; anything else is Claude.
//! [`classify`] also recognises the legacy session header, which the reference reads
//! as Claude:
//!
//! | first line | [`FirstLine`] | reference | Codex factory |
//! |---|---|---|---|
//! | object, `type` ∈ the four envelope types | `Codex` | codex | `Certain` |
//! | object, no `type`, has `id`, no `payload` | `CodexLegacyHeader` | **claude** | `Certain` |
//! | anything else | `Other` | claude | — (`None`) |
//!
//! A legacy Codex file goes to the Codex adapter, which then applies the reference's
//! *Claude* marker rule to it, so the pipeline output still equals the reference's.
//! A leading BOM is stripped before classifying (the reference would see a line that
//! fails to parse, i.e. Claude).

use transcope_adapter_common::record::parse_str;
use transcope_adapter_common::text::line_text;

use crate::record::{Record, ENVELOPE_TYPES};

/// What the first non-empty line of a file says about the Codex format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstLine {
    /// A Codex envelope line (`session_meta`, `response_item`, `event_msg`,
    /// `turn_context`).
    Codex,
    /// A pre-envelope Codex session header (`{"id":…,"timestamp":…}`).
    CodexLegacyHeader,
    /// Anything else: not a Codex file.
    Other,
}

impl FirstLine {
    /// The reference's two-way decision: `"codex"` only for [`FirstLine::Codex`].
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
/// use transcope_adapter_codex::detect::{classify, FirstLine};
/// assert_eq!(classify(br#"{"type":"session_meta","payload":{}}"#), FirstLine::Codex);
/// assert_eq!(classify(br#"{"id":"x","timestamp":"t"}"#), FirstLine::CodexLegacyHeader);
/// assert_eq!(classify(br#"{"type":"summary","summary":"s"}"#), FirstLine::Other);
/// assert_eq!(classify(b"[{}]"), FirstLine::Other);
/// ```
pub fn classify(first_line: &[u8]) -> FirstLine {
    let Ok(text) = line_text(first_line, true) else {
        return FirstLine::Other;
    };
    if text.starts_with('[') {
        return FirstLine::Other;
    }
    let Ok(rec) = parse_str::<Record<'_>>(text) else {
        return FirstLine::Other;
    };
    match rec.base.ty.as_str() {
        Some(t) if ENVELOPE_TYPES.contains(&t) => FirstLine::Codex,
        _ if rec.is_legacy_header() => FirstLine::CodexLegacyHeader,
        _ => FirstLine::Other,
    }
}

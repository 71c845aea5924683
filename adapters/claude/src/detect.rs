//! Claude's half of format detection, from a file's first non-empty line
//! (scope-log.md §5.2).
//!
//! The reference decides between two formats only: a first object whose `type` is one
//! of the Codex envelope types is Codex, *anything else* is Claude. So the Claude
//! format is the registry's fallback: each other format claims its own files
//! ([`Confidence::Certain`]), and this one answers for the rest.
//!
//! | first line | [`FirstLine`] | Claude factory |
//! |---|---|---|
//! | object, `type` a Claude line type (`user`, `summary`, …) | `ClaudeType` | `Certain` |
//! | anything else (other agents' lines, other objects, `[`…, non-JSON, non-objects, blank) | `Other` | `Fallback` |
//!
//! A leading BOM is stripped before classifying (the reference would see a line that
//! fails to parse, i.e. Claude).
//!
//! [`Confidence::Certain`]: transcope_core::adapter::Confidence::Certain

use transcope_adapter_common::record::parse_str;
use transcope_adapter_common::text::line_text;

use crate::record::{is_claude_type, Record};

/// What the first non-empty line of a file says about the Claude format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FirstLine {
    /// An object whose `type` is a Claude Code line type.
    ClaudeType,
    /// Anything else; the Claude adapter is the fallback for it.
    Other,
}

/// Classify a file's first non-empty line.
///
/// ```
/// use transcope_adapter_claude::detect::{classify, FirstLine};
/// assert_eq!(classify(br#"{"type":"summary","summary":"s"}"#), FirstLine::ClaudeType);
/// assert_eq!(classify(br#"{"type":"session_meta","payload":{}}"#), FirstLine::Other);
/// assert_eq!(classify(b"[{}]"), FirstLine::Other);
/// ```
pub fn classify(first_line: &[u8]) -> FirstLine {
    let Ok(text) = line_text(first_line, true) else {
        return FirstLine::Other;
    };
    if text.starts_with('[') {
        return FirstLine::Other;
    }
    match parse_str::<Record<'_>>(text) {
        Ok(rec) if rec.base.ty.as_str().is_some_and(is_claude_type) => FirstLine::ClaudeType,
        _ => FirstLine::Other,
    }
}

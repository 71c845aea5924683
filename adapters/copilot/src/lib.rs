//! # transcope-adapter-copilot: GitHub Copilot CLI sessions → [`Entry`](transcope_core::Entry) values
//!
//! Copilot CLI appends one event per line to
//! `$COPILOT_HOME|~/.copilot/session-state/<sessionId>/events.jsonl` (earlier builds:
//! `session-state/<sessionId>.jsonl`, [`layout`]). An event is an envelope
//! `{type, data, id, timestamp, parentId, agentId?}` ([`record`]); the folder and
//! branch are in `data.context` of `session.start` and `session.resume`, and in the
//! data of `session.context_changed` (after `/cd`).
//!
//! ```text
//! line ──common::record::parse──► record::Record   (data kept raw)
//!      ──Base::base_entry──► Entry { time, agentId } + uuid ← id, parent ← parentId
//!      ──record::kind(type)──► Meta (start, resume) | Context | User | Assistant | Tool | …
//!      ──context events──► cwd, branch from the context
//!      ──assistant.message──► texts: its content
//!      ──session.shutdown──► one entry per model of modelMetrics, with its totals
//!      ──common::record::emit──► EntrySink
//! ```
//!
//! Each line stands alone: the adapter keeps no state across lines. Decisions:
//!
//! * Usage is read from `session.shutdown`'s `modelMetrics` alone (see
//!   [`agent`]): the totals are cumulative across resumes and keyed by session and
//!   model, so a resumed session's later shutdowns are copies of one request whose
//!   largest counts the index keeps. `assistant.message.outputTokens` is not read (the
//!   same spending again).
//! * Sub-agents write into their parent's file; their events carry `agentId`, kept on
//!   the entry. They share the parent's scope log.
//! * A `session.context_changed` with `pendingGitContext` is kept as written: its
//!   folder is the new one even when the branch is not known yet (then it has none).
//!
//! Detection ([`CopilotFactory::sniff`]): certain for a file placed as Copilot places
//! them, or for a first line that is an envelope of a Copilot-only event type
//! (`session.start`, `session.resume`, …: dotted types no other agent writes) with a
//! `data` object; anything else is not its file.
//!
//! ```
//! use transcope_adapter_copilot::CopilotAdapter;
//! use transcope_core::adapter::{from_fn, Adapter};
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! let line = br#"{"type":"session.start","data":{"sessionId":"s1","context":{"cwd":"/w","branch":"main"}},"id":"e1","timestamp":"2026-05-01T10:00:00.000Z","parentId":null}"#;
//! let mut got = Vec::new();
//! CopilotAdapter.decode(line, LinePos { offset: 0, line: 1 }, &mut from_fn(|e: &Entry<'_>| {
//!     got.push((e.kind, e.cwd.as_deref().map(String::from), e.branch.as_deref().map(String::from)));
//! })).unwrap();
//! assert_eq!(got, [(Some(EntryKind::Meta), Some("/w".into()), Some("main".into()))]);
//! ```
#![warn(missing_docs)]

pub mod agent;
pub mod layout;
pub mod record;

use std::borrow::Cow;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;
use transcope_adapter_common::de::from_object;
use transcope_adapter_common::record::{emit, parse};
use transcope_adapter_common::text::line_text;
use transcope_core::adapter::{Adapter, AdapterFactory, Confidence, EntrySink, Layout, Skip};
use transcope_core::{LinePos, Usage};

pub use layout::CopilotLayout;

use crate::record::{context, data, kind, model_metrics, Record};

/// Decodes Copilot CLI events. Stateless: one value serves any number of files.
#[derive(Clone, Copy, Debug, Default)]
pub struct CopilotAdapter;

impl Adapter for CopilotAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let mut rec: Record<'_> = parse(line, pos)?;
        let mut entry = rec.base.base_entry(pos, None);
        entry.uuid = std::mem::take(&mut rec.id).into_str();
        entry.parent_uuid = std::mem::take(&mut rec.parent_id).into_str();
        let Some(ty) = rec.base.ty.as_str() else {
            return emit(entry, &rec.base.ty, sink);
        };
        entry.kind = kind(ty);
        let mut d = data(rec.data);
        (entry.cwd, entry.branch) = context(ty, &mut d);
        match ty {
            "assistant.message" => {
                entry.texts.extend(
                    std::mem::take(&mut d.content)
                        .into_str()
                        .filter(|t| !t.is_empty()),
                );
            }
            "session.shutdown" => {
                let metrics = d.model_metrics.map(model_metrics).unwrap_or_default();
                if !metrics.is_empty() {
                    for (model, tokens) in metrics {
                        let mut e = entry.clone();
                        e.usage = Some(Usage {
                            message_id: Some(Cow::Owned(format!("modelMetrics:{model}"))),
                            request_id: None,
                            model: Some(Cow::Owned(model)),
                            tokens: Some(tokens),
                            cumulative: false,
                        });
                        sink.entry(&e);
                    }
                    return Ok(());
                }
            }
            _ => {}
        }
        emit(entry, &rec.base.ty, sink)
    }
}

/// The top-level keys of a first line that say whose it is.
#[derive(Deserialize)]
struct FirstLine<'a> {
    /// A string, else the line is not one (the whole line then fails to decode).
    #[serde(borrow, default, rename = "type")]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

/// Whether a file's first non-empty line (a BOM stripped) is a Copilot CLI event: an
/// object whose `type` is one of the event types of Copilot's schema and whose `data`
/// is an object.
///
/// ```
/// use transcope_adapter_copilot::is_copilot_line;
/// assert!(is_copilot_line(br#"{"type":"session.start","data":{"sessionId":"s"},"id":"e"}"#));
/// assert!(!is_copilot_line(br#"{"type":"user","message":{"role":"user","content":"hi"}}"#));
/// assert!(!is_copilot_line(br#"{"type":"session_meta","payload":{}}"#));
/// ```
pub fn is_copilot_line(first_line: &[u8]) -> bool {
    let Some(rec) = line_text(first_line, true)
        .ok()
        .and_then(from_object::<FirstLine<'_>>)
    else {
        return false;
    };
    // Every Copilot type is dotted (`session.start`, `user.message`): the undotted
    // ones (`abort`) are not enough to tell a file by.
    rec.ty
        .as_deref()
        .is_some_and(|t| t.contains('.') && kind(t).is_some())
        && rec.data.is_some_and(|d| d.get().starts_with('{'))
}

/// Whether `line` may hold a Copilot event type, spelled out or with a `\u` escape: a
/// line with neither is no [`is_copilot_line`].
fn may_be_copilot(line: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    static NEEDLES: LazyLock<[Finder<'static>; 2]> =
        LazyLock::new(|| ["\"data\"", "\\u"].map(Finder::new));
    NEEDLES.iter().any(|n| n.find(line).is_some())
}

/// The `copilot` format: detection, layout, adapter and declaration.
#[derive(Clone, Copy, Debug, Default)]
pub struct CopilotFactory;

impl AdapterFactory for CopilotFactory {
    fn name(&self) -> &'static str {
        "copilot"
    }

    /// Certain for a file placed as Copilot places them ([`layout::place`]: no other
    /// agent writes a `session-state` folder), and for a Copilot first line anywhere
    /// ([`is_copilot_line`]); else not this format.
    fn sniff(&self, path: &Path, first_line: &[u8]) -> Option<Confidence> {
        if layout::place(path).is_some() {
            return Some(Confidence::Certain);
        }
        (may_be_copilot(first_line) && is_copilot_line(first_line)).then_some(Confidence::Certain)
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(&CopilotLayout)
    }

    fn build(&self) -> Box<dyn Adapter> {
        Box::new(CopilotAdapter)
    }

    fn agent(&self) -> transcope_core::agent::AgentInfo {
        agent::INFO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use transcope_core::adapter::from_fn;
    use transcope_core::{Entry, EntryKind};

    fn decode(line: &str) -> Vec<Entry<'static>> {
        let mut got = Vec::new();
        CopilotAdapter
            .decode(
                line.as_bytes(),
                LinePos { offset: 1, line: 2 },
                &mut from_fn(|e: &Entry<'_>| got.push(e.to_static())),
            )
            .unwrap();
        got
    }

    #[test]
    fn a_shutdown_gives_one_usage_entry_per_model() {
        let got = decode(
            r#"{"type":"session.shutdown","data":{"modelMetrics":{"gpt-5":{"usage":{"inputTokens":10,"outputTokens":2}},"claude-sonnet-4.5":{"usage":{"inputTokens":7,"outputTokens":1,"cacheReadTokens":3}}}},"id":"e9","timestamp":"2026-05-01T10:00:00.000Z"}"#,
        );
        let u: Vec<_> = got
            .iter()
            .map(|e| {
                let u = e.usage.as_ref().unwrap();
                (
                    u.message_id.as_deref().unwrap().to_owned(),
                    u.tokens.unwrap().total(),
                )
            })
            .collect();
        assert_eq!(
            u,
            [
                ("modelMetrics:claude-sonnet-4.5".to_owned(), 8),
                ("modelMetrics:gpt-5".to_owned(), 12)
            ]
        );
    }

    #[test]
    fn context_changed_reads_its_own_data_and_messages_their_content() {
        let got = decode(
            r#"{"type":"session.context_changed","data":{"cwd":"/w/b","branch":"dev"},"id":"e3"}"#,
        );
        assert_eq!(
            (got[0].kind, got[0].cwd.as_deref(), got[0].branch.as_deref()),
            (Some(EntryKind::Context), Some("/w/b"), Some("dev"))
        );
        // A user message's `cwd` (if any) is no context.
        let got = decode(
            r#"{"type":"assistant.message","data":{"content":"Done.","cwd":"/x","outputTokens":5},"id":"e4","parentId":"e3"}"#,
        );
        assert_eq!(got[0].cwd, None);
        assert_eq!(got[0].texts, ["Done."]);
        assert_eq!(got[0].usage, None);
        assert_eq!(got[0].parent_uuid.as_deref(), Some("e3"));
    }
}

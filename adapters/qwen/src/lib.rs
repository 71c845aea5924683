//! # transcope-adapter-qwen: Qwen Code sessions → [`Entry`](transcope_core::Entry) values
//!
//! Qwen Code (QwenLM/qwen-code) appends one `ChatRecord` per line to
//! `<runtime dir>/projects/<project>/chats/<sessionId>.jsonl` ([`layout`]), a
//! sub-agent's records to `…/subagents/<sessionId>/agent-<agentId>.jsonl`. A record
//! is Claude-Code-like on the outside — `uuid`, `parentUuid`, `sessionId`,
//! `timestamp`, `type`, `cwd`, `gitBranch` on every one, `agentId` and
//! `isSidechain: true` (with the *parent's* `sessionId`) on a sub-agent's — and
//! Gemini-like inside: `message` is a `Content` (`{role, parts}`), an `assistant`
//! record carries `model` and `usageMetadata` ([`record`]).
//!
//! ```text
//! line ──common::record::parse──► record::Record   (one pass: Base's context keys,
//!                                                   message/usageMetadata kept raw)
//!      ──Base::base_entry──► Entry { time, cwd, branch, ids, isSidechain }
//!      ──record::kind(type)──► User | Assistant | Tool (tool_result) | System
//!      ──assistant only──► texts: the message's text parts (no thoughts, no calls);
//!                          usage: usageMetadata by the declared shape (agent.rs)
//!      ──common::record::emit──► EntrySink
//! ```
//!
//! Each line stands alone: the adapter keeps no state across lines, so a file read in
//! appended pieces gives the entries of one pass with no checkpoint. Decisions:
//!
//! * A record of a type the CLI does not write yields an [`EntryKind::Other`] entry
//!   when it carries a folder, branch or time, as every adapter's shared rule says
//!   ([`transcope_adapter_common::record::emit`]); bad lines are skips, never fatal.
//! * The `system`/`ui_telemetry` records copy each reply's counts
//!   (`qwen-code.api_response`); only the reply's own `usageMetadata` is read, so a
//!   request is counted once.
//! * A `rewind` leaves the rewound records in the file on a dead branch: they were
//!   written at their time, in their folder, and stay entries (a folder change on a
//!   dead branch is still where the agent was).
//!
//! Detection ([`QwenFactory::sniff`]): Qwen's lines look like Claude's to a reader
//! of `type` alone, so the factory is certain only of a file placed as Qwen places
//! them, or of a first line typed as a Qwen record with a field no other agent writes
//! (`message.parts`, `systemPayload`, `usageMetadata`, `toolCallResult`,
//! `provenance`, or the type `tool_result`); anything else is not its file.
//! Registered before Claude (whose answer for any `user` line is certain too), it
//! takes exactly those files.
//!
//! ```
//! use transcope_adapter_qwen::QwenAdapter;
//! use transcope_core::adapter::{from_fn, Adapter};
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! let line = br#"{"uuid":"a1","parentUuid":"u1","sessionId":"s1","timestamp":"2026-05-01T10:00:02.000Z","type":"assistant","cwd":"/w","version":"0.24.4","gitBranch":"main","model":"qwen3-coder-plus","message":{"role":"model","parts":[{"text":"hm","thought":true},{"text":"Done."}]},"usageMetadata":{"promptTokenCount":10,"cachedContentTokenCount":4,"candidatesTokenCount":3,"totalTokenCount":13}}"#;
//! let mut got = Vec::new();
//! QwenAdapter.decode(line, LinePos { offset: 0, line: 1 }, &mut from_fn(|e: &Entry<'_>| {
//!     let t = e.usage.as_ref().and_then(|u| u.tokens).unwrap();
//!     got.push((e.kind, e.cwd.as_deref().map(String::from), e.branch.as_deref().map(String::from), e.texts.concat(), t.total()));
//! })).unwrap();
//! assert_eq!(got, [(Some(EntryKind::Assistant), Some("/w".into()), Some("main".into()), "Done.".into(), 13)]);
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
use transcope_core::{EntryKind, LinePos};

pub use layout::QwenLayout;

use crate::record::{kind, message_text, usage_of, Record};

/// Decodes Qwen Code records. Stateless: one value serves any number of files.
#[derive(Clone, Copy, Debug, Default)]
pub struct QwenAdapter;

impl Adapter for QwenAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let mut rec: Record<'_> = parse(line, pos)?;
        let mut entry = rec.base.base_entry(pos, None);
        entry.kind = rec.base.ty.as_str().and_then(kind);
        if entry.kind == Some(EntryKind::Assistant) {
            entry.texts.extend(rec.message.and_then(message_text));
            entry.usage = usage_of(
                rec.usage,
                entry.uuid.as_ref(),
                std::mem::take(&mut rec.model),
            );
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
    message: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "systemPayload")]
    system_payload: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "usageMetadata")]
    usage_metadata: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "toolCallResult")]
    tool_call_result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    provenance: Option<&'a RawValue>,
}

/// The keys of a `message` that say it is a Gemini `Content`.
#[derive(Deserialize)]
struct Content<'a> {
    #[serde(borrow, default)]
    parts: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

/// What a file's first non-empty line says of Qwen Code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    /// A Qwen record: its type is one, and it has a field no other agent writes.
    Qwen,
    /// An object typed as a Qwen record (`user`, `assistant`, `tool_result`,
    /// `system`), with nothing only Qwen writes (a Claude Code line may be one).
    Typed,
    /// Anything else.
    Other,
}

/// Classify a file's first non-empty line (a BOM stripped).
///
/// ```
/// use transcope_adapter_qwen::{classify, Said};
/// assert_eq!(classify(br#"{"type":"user","message":{"role":"user","parts":[{"text":"hi"}]}}"#), Said::Qwen);
/// assert_eq!(classify(br#"{"type":"user","message":{"role":"user","content":"hi"}}"#), Said::Typed);
/// assert_eq!(classify(br#"{"type":"session_meta","payload":{}}"#), Said::Other);
/// ```
pub fn classify(first_line: &[u8]) -> Said {
    let Some(rec) = line_text(first_line, true)
        .ok()
        .and_then(from_object::<FirstLine<'_>>)
    else {
        return Said::Other;
    };
    let ty = rec.ty.as_deref();
    if ty.and_then(kind).is_none() {
        return Said::Other;
    }
    let parts_message = rec.message.is_some_and(|m| {
        from_object::<Content<'_>>(m.get())
            .is_some_and(|c| c.parts.is_some() && c.content.is_none())
    });
    let own = ty == Some("tool_result")
        || parts_message
        || rec.system_payload.is_some()
        || rec.usage_metadata.is_some()
        || rec.tool_call_result.is_some()
        || rec.provenance.is_some();
    if own {
        Said::Qwen
    } else {
        Said::Typed
    }
}

/// Whether `line` may hold a key or type only Qwen writes ([`Said::Qwen`]), spelled
/// out or with a `\u` escape (which can spell any letter): a line with none of them
/// is not [`Said::Qwen`].
fn may_be_qwen(line: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    static NEEDLES: LazyLock<[Finder<'static>; 7]> = LazyLock::new(|| {
        [
            "\"parts\"",
            "systemPayload",
            "usageMetadata",
            "toolCallResult",
            "provenance",
            "tool_result",
            "\\u",
        ]
        .map(Finder::new)
    });
    NEEDLES.iter().any(|n| n.find(line).is_some())
}

/// The `qwen` format: detection, layout, adapter and declaration.
#[derive(Clone, Copy, Debug, Default)]
pub struct QwenFactory;

impl AdapterFactory for QwenFactory {
    fn name(&self) -> &'static str {
        "qwen"
    }

    /// Certain for a file placed as Qwen places them ([`layout::place`]: no other agent
    /// writes there, so even a torn first line is Qwen's), and for a Qwen first line
    /// anywhere ([`Said::Qwen`]); else not this format (never a fallback: another
    /// agent's file stays its own).
    fn sniff(&self, path: &Path, first_line: &[u8]) -> Option<Confidence> {
        let placed = layout::place(path).is_some();
        // Most files asked are another agent's: one without a key only Qwen writes is
        // not parsed unless it is placed as Qwen's.
        if !placed && !may_be_qwen(first_line) {
            return None;
        }
        (placed || classify(first_line) == Said::Qwen).then_some(Confidence::Certain)
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(&QwenLayout)
    }

    fn build(&self) -> Box<dyn Adapter> {
        Box::new(QwenAdapter)
    }

    fn agent(&self) -> transcope_core::agent::AgentInfo {
        agent::INFO
    }
}

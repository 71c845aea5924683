//! # transcope-adapter-claude: Claude Code transcripts → [`Entry`](transcope_core::Entry) values
//!
//! This crate owns the Claude Code format entirely: its record schema and vocabulary
//! ([`record`]), its half of format detection ([`detect`]), its probe ([`probe`]) and
//! its on-disk layout ([`layout`]). The machinery it decodes with — the tolerant serde
//! toolkit, the line record and context rule, the SIMD scan, the Claude-rule marker
//! texts it shares with legacy Codex files — is `transcope-adapter-common`'s.
//!
//! Design. A framed line (bytes, no terminator) goes through these steps:
//!
//! ```text
//! line ──probe::probe (not the first line)──► Probe ──EntrySink::wants?── no: done
//!      ──common::record::parse──► record::Record   (one pass: shared keys, message
//!                                                   texts, payload.cwd)
//!      ──Record::base_entry──► Entry { time, cwd, branch, ids }   (the reference's
//!                              format-independent context rule)
//!      ──record::kind(type); message texts kept for type == "assistant" only──►
//!      ──common::record::emit──► EntrySink
//! ```
//!
//! An assistant line wanted for its usage alone (no stage wants its texts) is read by
//! [`quick::usage_entry`] instead — a walk that checks what it skips as serde would —
//! and decoded as above only when the walk is unsure. A line that ends as an assistant
//! line does ([`quick::looks_assistant`]) is walked *before* it is probed, when its
//! sink likely wants its usage alone: the walk reads its folder and branch as the probe
//! would ([`quick::usage_read`]), and the sink is asked with them, so the probe's own
//! pass over the line is saved (a quarter of a backfill's probing); the answer decides
//! as after a probe.
//!
//! * [`ClaudeAdapter`] implements [`Adapter`]; [`ClaudeFactory`] implements
//!   [`AdapterFactory`] (name `claude`) and is the registry's fallback: it answers
//!   [`Confidence::Certain`] for a first line whose `type` is a Claude line type and
//!   [`Confidence::Fallback`] for everything else, exactly as the reference treats
//!   every non-Codex file as Claude ([`detect`]). Its [`Layout`] is
//!   [`layout::ClaudeLayout`]: roots, claimed files, scope keys, sub-agent parents.
//! * The Claude marker-text rule of scope-log.md §5.2 is
//!   `transcope_adapter_common::message` (the Codex adapter applies it to legacy
//!   files).
//!
//! Decisions where the reference is silent or fails (each also tested):
//!
//! * Invalid UTF-8 in a line skips that line ([`Skip::InvalidUtf8`]); the reference
//!   decodes the whole file strictly and raises.
//! * A byte-order mark at the start of the file (line at offset 0) is stripped; the
//!   reference would fail that line's JSON parse and drop it.
//! * Whitespace around a line is trimmed as Python's `str.strip()` does (Unicode
//!   whitespace and `\x1c`–`\x1f`).
//! * Duplicate keys: the last occurrence wins, as in Python's `json.loads`.
//! * JSON that Python accepts but serde_json rejects: `NaN`/`Infinity` skip the line
//!   as [`Skip::InvalidJson`]; a lone surrogate escape (`"\ud83d"`) is harmless in
//!   skipped values (tool results), costs only the texts or payload keys when it sits
//!   in a decoded string inside `message`/`payload`, and skips the line when it is in
//!   a top-level field.
//! * Lines that are not objects (`5`, `[1]`, `"s"`) are [`Skip::NotObject`] (the
//!   reference's marker scan would crash on them, §8 items 17 and 20).
//! * Every line with a known `type` yields an entry. A line with an unknown or missing
//!   `type` yields an [`EntryKind::Other`] entry when it carries a folder, a branch or
//!   a timestamp (the reference's context rule reads every object), and is
//!   [`Skip::Ignored`] otherwise ([`Skip::WrongType`] when `type` is not a string).
//! * Ids (`sessionId`, `uuid`, …) are taken only when they are JSON strings;
//!   `isSidechain` only when it is `true`.
//!
//! ```
//! use transcope_adapter_claude::ClaudeAdapter;
//! use transcope_core::adapter::Adapter;
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! let line = br#"{"type":"assistant","cwd":"/w","gitBranch":"main","timestamp":"2025-07-14T22:59:30.699Z","message":{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"<!-- @lesson -->L<!-- @/lesson -->"}]}}"#;
//! let mut got = Vec::new();
//! ClaudeAdapter::new()
//!     .decode(line, LinePos { offset: 0, line: 1 }, &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| {
//!         got.push((e.kind, e.cwd.as_deref().map(String::from), e.branch.as_deref().map(String::from), e.texts.len()));
//!     }))
//!     .unwrap();
//! assert_eq!(got, [(Some(EntryKind::Assistant), Some("/w".into()), Some("main".into()), 1)]);
//! ```
#![warn(missing_docs)]

pub mod agent;
pub mod detect;
pub mod layout;
pub mod probe;
pub mod quick;
pub mod record;

use std::cell::OnceCell;

use transcope_adapter_common::record::{emit, parse};
use transcope_core::adapter::{
    Adapter, AdapterFactory, Confidence, EntrySink, Layout, Probe, Skip,
};
use transcope_core::entry::{EntryKind, LinePos};

pub use detect::{classify, FirstLine};

/// Decodes Claude Code transcript lines. Stateless: one value can serve any number of
/// files.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaudeAdapter;

impl ClaudeAdapter {
    /// A new adapter.
    pub fn new() -> Self {
        ClaudeAdapter
    }
}

/// Decode one line by the Claude rules into `sink` — the body of
/// [`ClaudeAdapter::decode`] without its probe.
pub fn decode_claude(line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
    let mut rec: record::Record<'_> = parse(line, pos)?;
    let mut entry = rec.base_entry(pos);
    entry.kind = rec.base.ty.as_str().and_then(record::kind);
    if entry.kind == Some(EntryKind::Assistant) {
        entry.texts = rec.message_texts.take().unwrap_or_default();
        entry.usage = rec.usage.take().map(|mut u| {
            u.request_id = std::mem::take(&mut rec.request_id).into_str();
            u
        });
    }
    emit(entry, &rec.base.ty, sink)
}

/// [`decode_claude`] of a line wanted for its usage alone: the same entry but for its
/// texts (left empty), the message's content never decoded.
pub fn decode_claude_usage(
    line: &[u8],
    pos: LinePos,
    sink: &mut dyn EntrySink,
) -> Result<(), Skip> {
    let mut rec: record::UsageRecord<'_> = parse(line, pos)?;
    let mut entry = rec.base_entry(pos);
    entry.kind = rec.base.ty.as_str().and_then(record::kind);
    if entry.kind == Some(EntryKind::Assistant) {
        entry.usage = rec.usage.take().map(|mut u| {
            u.request_id = std::mem::take(&mut rec.request_id).into_str();
            u
        });
    }
    emit(entry, &rec.base.ty, sink)
}

impl Adapter for ClaudeAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        // A line no sink wants is not decoded (the first line may carry a BOM, which
        // only the full decode strips).
        if pos.offset > 0 {
            // The line's marker search, done once for every probe of it below.
            let searched = OnceCell::new();
            // What looks like an assistant line wanted for its usage is walked first:
            // the walk reads its folder and branch as the probe would, so the probe
            // need not pass over it too.
            let walked = quick::looks_assistant(line) && usage_alone_likely(line, &searched, sink);
            if walked {
                if let Some(done) = walk_first(line, &searched, pos, sink) {
                    return done;
                }
            }
            if let Some(p) = probe::probe(line, &searched) {
                if !sink.wants(&p) {
                    return Ok(());
                }
                // Wanted for its usage alone: the message's content is skipped unread,
                // by the walk when it is certain of the entry, else by serde.
                if p.usage && !sink.wants(&Probe { usage: false, ..p }) {
                    // (A line the walk was unsure of is not walked again.)
                    let quick = if walked {
                        None
                    } else {
                        quick::usage_entry(line, pos)
                    };
                    if let Some(e) = quick {
                        sink.entry(&e);
                        return Ok(());
                    }
                    return decode_claude_usage(line, pos, sink);
                }
            }
        }
        decode_claude(line, pos, sink)
    }
}

/// An assistant line's probe with no folder or branch: what a sink is asked before the
/// walk, which reads them.
fn assistant<'a>(line: &'a [u8], searched: &'a OnceCell<bool>, usage: bool) -> Probe<'a> {
    Probe {
        kind: Some(EntryKind::Assistant),
        cwd: None,
        branch: None,
        text: true,
        usage,
        line,
        searched,
    }
}

/// Whether an assistant line is likely wanted for its usage and not for its texts: the
/// answer for a line without folder or branch (a stage that wants a folder change is
/// asked again once the walk has read them).
fn usage_alone_likely(line: &[u8], searched: &OnceCell<bool>, sink: &dyn EntrySink) -> bool {
    sink.wants(&assistant(line, searched, true)) && !sink.wants(&assistant(line, searched, false))
}

/// An assistant line read by the walk, then handed on exactly as after its probe:
/// not at all when no sink wants it, decoded in full when a sink wants more than its
/// usage, else the walk's entry. `None` when the walk is unsure (the caller probes).
fn walk_first(
    line: &[u8],
    searched: &OnceCell<bool>,
    pos: LinePos,
    sink: &mut dyn EntrySink,
) -> Option<Result<(), Skip>> {
    let read = quick::usage_read(line, pos)?;
    let (cwd, branch) = read.folder_and_branch?;
    let p = Probe {
        cwd,
        branch,
        ..assistant(line, searched, true)
    };
    if !sink.wants(&p) {
        return Some(Ok(()));
    }
    if sink.wants(&Probe { usage: false, ..p }) {
        return Some(decode_claude(line, pos, sink));
    }
    sink.entry(&read.entry);
    Some(Ok(()))
}

/// The `claude` format: [`Confidence::Certain`] for a Claude first line, else
/// [`Confidence::Fallback`] (never `None`: the reference reads every non-Codex file as
/// Claude).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaudeFactory;

impl AdapterFactory for ClaudeFactory {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn sniff(&self, _path: &std::path::Path, first_line: &[u8]) -> Option<Confidence> {
        Some(match classify(first_line) {
            FirstLine::ClaudeType => Confidence::Certain,
            _ => Confidence::Fallback,
        })
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(&layout::ClaudeLayout)
    }

    fn build(&self) -> Box<dyn Adapter> {
        Box::new(ClaudeAdapter)
    }

    fn agent(&self) -> transcope_core::agent::AgentInfo {
        agent::INFO
    }
}

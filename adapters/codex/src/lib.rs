//! # transcope-adapter-codex: OpenAI Codex CLI rollouts → [`Entry`] values
//!
//! This crate owns the Codex format entirely: its record schema (the envelope
//! `payload`, the legacy header and bare items) and vocabulary ([`record`]), its half
//! of format detection ([`detect`]), its probe ([`probe()`]) and its on-disk layout
//! ([`layout`]). The machinery it decodes with — the tolerant serde toolkit, the line
//! record and context rule, the SIMD scan, the Claude-rule marker texts the reference
//! applies to legacy files — is `transcope-adapter-common`'s; it does not depend on
//! the Claude adapter.
//!
//! Design. [`CodexAdapter`] decodes one framed line in four steps:
//!
//! ```text
//! line ──common::record::parse──► record::Record (one pass: shared keys, payload keys,
//!                                                 message texts)
//!      ──Record::base_entry──► Entry { time, cwd, branch, ids }   (the reference's
//!                              format-independent rule: turn_context → payload.cwd,
//!                              anything else → top-level cwd)
//!      ──mode (first record of the file: envelope or legacy header)──►
//!        envelope: kind from type/payload.type/role; marker texts from assistant
//!                  response_item messages and task_complete
//!        legacy:   kind from the bare item; marker texts by the *Claude* rule
//!      ──common::record::emit──► EntrySink
//! ```
//!
//! [`CodexFactory`] (name `codex`) claims a file when its first line is an envelope
//! line (`session_meta`, `response_item`, `event_msg`, `turn_context`) or a legacy
//! session header (`id`, no `type`, no `payload`, transcript-formats §2.3), and
//! returns `None` otherwise so the Claude fallback takes it ([`detect`]). Its
//! [`Layout`] is [`layout::CodexLayout`]: roots, claimed files, scope keys.
//!
//! Reference fidelity (scope-log.md §3.2, §5.2):
//!
//! * Folder: `turn_context` → `payload.cwd`; every other record → its top-level
//!   `cwd`. So `session_meta.payload.cwd` and `session_meta.payload.git.branch` are
//!   **not** used (the reference ignores them); a legacy header's top-level `cwd` is.
//! * Marker texts, envelope files: a `response_item` whose payload is a `message` with
//!   role `assistant` gives one text: its content blocks of type `input_text`,
//!   `output_text` or `text`, their `text` joined by `\n` (a block without a string
//!   `text` contributes `""`, where the reference would use `""` for a missing key and
//!   raise for a non-string); an `event_msg` `task_complete` gives its
//!   `last_agent_message` when it is a non-empty string. Texts that come out empty
//!   are dropped. The same text often appears both ways (§8 item 16); both are kept.
//! * Marker texts, legacy files: the reference's format detection reads a legacy file
//!   as *Claude*, so only `type == "assistant"` lines would be scanned, and the bare
//!   `{"type":"message","role":"assistant",…}` lines are **not** marker texts. This
//!   adapter does the same (it applies [`transcope_adapter_common::message`]'s rule).
//! * Extension, off by default ([`CodexOptions::legacy_env_cwd`]): when a legacy
//!   header has no `cwd`, the first user message whose text holds
//!   `<environment_context>…<cwd>X</cwd>` yields an entry with folder `X`, stamped with
//!   the header's timestamp (legacy items carry no time of their own).
//! * Session id: `session_meta.payload.id` (else `payload.session_id`); legacy header
//!   `id`. Only JSON strings are taken.
//!
//! The mode is decided by the first record decoded after construction or
//! [`Adapter::reset`], so a resumed read of a legacy file must re-decode its header
//! line first.
//!
//! ```
//! use transcope_adapter_codex::CodexAdapter;
//! use transcope_core::adapter::Adapter;
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! let lines: [&[u8]; 3] = [
//!     br#"{"timestamp":"2025-12-09T19:55:16.336Z","type":"session_meta","payload":{"id":"019b","cwd":"/start"}}"#,
//!     br#"{"timestamp":"2025-12-09T19:55:17.000Z","type":"turn_context","payload":{"cwd":"/w","model":"m"}}"#,
//!     br#"{"timestamp":"2025-12-09T19:55:18.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}}"#,
//! ];
//! let mut adapter = CodexAdapter::new();
//! let mut got = Vec::new();
//! for (i, line) in lines.iter().enumerate() {
//!     let pos = LinePos { offset: 0, line: i as u64 + 1 };
//!     adapter.decode(line, pos, &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| {
//!         got.push((e.kind.unwrap(), e.cwd.as_deref().map(String::from), e.texts.iter().map(|t| t.to_string()).collect::<Vec<_>>()));
//!     })).unwrap();
//! }
//! assert_eq!(got[0], (EntryKind::Meta, None, vec![]));
//! assert_eq!(got[1], (EntryKind::Context, Some("/w".into()), vec![]));
//! assert_eq!(got[2], (EntryKind::Assistant, None, vec!["a\nb".to_string()]));
//! ```
#![warn(missing_docs)]

pub mod agent;
pub mod detect;
pub mod layout;
pub mod quick;
pub mod record;

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess};
use serde_json::value::RawValue;
use transcope_adapter_common::de::{deserialize_shape, skip_value, FromMap, FromShape, Loose, Obj};
use transcope_adapter_common::record::{emit, parse};
use transcope_core::adapter::{
    Adapter, AdapterFactory, Confidence, EntrySink, Layout, Probe, Skip,
};
use transcope_core::entry::{Entry, EntryKind, LinePos, TimeValue};

pub use detect::{classify, FirstLine};
use record::Record;

/// Opt-in behaviour beyond the reference. The default is the reference's behaviour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodexOptions {
    /// Legacy files whose header has no `cwd`: take the folder from the
    /// `<environment_context>` `<cwd>` of the first user message, stamped with the
    /// header's timestamp. Off by default (the reference sees no folder there).
    pub legacy_env_cwd: bool,
}

/// Which layout the current file uses, known after its first record.
#[derive(Clone, Debug, Default)]
enum Mode {
    #[default]
    Unknown,
    Envelope,
    Legacy {
        header_time: TimeValue<'static>,
        /// Still looking for an `<environment_context>` folder (extension only).
        want_env_cwd: bool,
    },
}

/// Decodes Codex CLI rollout lines (envelope and legacy layouts). Keeps per-file state
/// (the layout and a legacy header's time); call [`Adapter::reset`] between files.
#[derive(Clone, Debug, Default)]
pub struct CodexAdapter {
    options: CodexOptions,
    mode: Mode,
}

impl CodexAdapter {
    /// An adapter with the reference behaviour.
    pub fn new() -> Self {
        Self::default()
    }

    /// An adapter with the given options.
    pub fn with_options(options: CodexOptions) -> Self {
        CodexAdapter {
            options,
            mode: Mode::Unknown,
        }
    }

    /// Whether the current file was recognised as the legacy (pre-envelope) layout.
    pub fn is_legacy(&self) -> bool {
        matches!(self.mode, Mode::Legacy { .. })
    }
}

impl Adapter for CodexAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        // An envelope line no sink wants is not decoded (most bytes of a rollout are
        // tool output in response items that change no scope and hold no marker text).
        if matches!(self.mode, Mode::Envelope) {
            // The line's marker search, done once for both probes of it below.
            let searched = std::cell::OnceCell::new();
            if let Some(p) = probe(line, &searched) {
                if !sink.wants(&p) {
                    return Ok(());
                }
                // A `token_count` event wanted for its usage alone: read by the walk
                // when it is certain (the entry the full decode would give).
                if p.usage && !sink.wants(&Probe { usage: false, ..p }) {
                    if let Some(entry) = quick::token_count_entry(line, pos) {
                        sink.entry(&entry);
                        return Ok(());
                    }
                }
            }
        }
        let mut rec: Record<'_> = parse(line, pos)?;
        let first = matches!(self.mode, Mode::Unknown);
        if first {
            self.mode = Mode::Envelope;
        }
        let mut entry = rec.base_entry(pos);
        if first && rec.is_legacy_header() {
            self.mode = Mode::Legacy {
                header_time: entry.time.clone().into_owned(),
                want_env_cwd: self.options.legacy_env_cwd && entry.cwd.is_none(),
            };
            entry.kind = Some(EntryKind::Meta);
            entry.session_id = std::mem::take(&mut rec.id).into_str();
            return emit(entry, &rec.base.ty, sink);
        }
        match &mut self.mode {
            Mode::Legacy {
                header_time,
                want_env_cwd,
            } => decode_legacy(&mut rec, &mut entry, header_time, want_env_cwd),
            _ => decode_envelope(&mut rec, &mut entry),
        }
        emit(entry, &rec.base.ty, sink)
    }

    fn reset(&mut self) {
        self.mode = Mode::Unknown;
    }
}

/// The kind, folder, branch and text-bearing of an envelope line, when certain (see
/// `transcope_adapter_common::probe`): response items and events other than
/// `task_complete`. Anything else is left to the full decode. `searched` holds the
/// line's marker search ([`Probe::searched`]).
pub fn probe<'a>(
    line: &'a [u8],
    searched: &'a std::cell::OnceCell<bool>,
) -> Option<transcope_core::adapter::Probe<'a>> {
    let f = transcope_adapter_common::probe::fields(line)?;
    let (kind, text, usage) = match f.ty()? {
        "response_item" => match f.payload_ty()? {
            "message" => {
                let kind = message_kind(f.payload_role()?);
                (kind, kind == EntryKind::Assistant, false)
            }
            _ => (EntryKind::Tool, false, false),
        },
        "event_msg" => match f.payload_ty()? {
            "task_complete" => return None,
            t => (EntryKind::Event, false, t == "token_count"),
        },
        _ => return None,
    };
    let (cwd, branch) = f.folder_and_branch()?;
    Some(transcope_core::adapter::Probe {
        kind: Some(kind),
        cwd,
        branch,
        text,
        usage,
        line,
        searched,
    })
}

fn message_kind(role: Option<&str>) -> EntryKind {
    match role {
        Some("user") => EntryKind::User,
        Some("assistant") => EntryKind::Assistant,
        _ => EntryKind::Tool,
    }
}

fn decode_envelope<'a>(rec: &mut Record<'a>, entry: &mut Entry<'a>) {
    let ty = rec.base.ty.as_str();
    entry.kind = ty.and_then(record::kind);
    if ty == Some("turn_context") {
        // The model the turn runs with: the usage stage prices what follows by it.
        if let Some(model) = rec
            .payload
            .as_mut()
            .and_then(|p| std::mem::take(&mut p.model).into_str())
        {
            entry.usage = Some(transcope_core::Usage {
                model: Some(model),
                ..Default::default()
            });
        }
        return;
    }
    let Some(ty @ ("session_meta" | "response_item" | "event_msg")) = ty else {
        return;
    };
    let Some(p) = rec.payload.take() else {
        return;
    };
    match (ty, p.ty.as_str()) {
        ("session_meta", _) => {
            entry.session_id = p.id.into_str().or_else(|| p.session_id.into_str());
        }
        ("response_item", Some("message")) => {
            let kind = message_kind(p.role.as_str());
            entry.kind = Some(kind);
            if kind == EntryKind::Assistant {
                entry.texts.extend(message_text(p.content));
            }
        }
        ("event_msg", Some("token_count")) => {
            let info = p
                .info
                .and_then(transcope_adapter_common::de::decode_obj::<agent::CodexInfo>);
            entry.usage = info.and_then(|i| {
                agent::token_count_usage(i.total.map(|t| t.tokens()), i.last.map(|l| l.tokens()))
            });
        }
        ("event_msg", Some("task_complete")) => {
            if let Loose::Str(t) = p.last_agent_message {
                if !t.is_empty() {
                    entry.texts.push(t);
                }
            }
        }
        _ => {}
    }
}

fn decode_legacy<'a>(
    rec: &mut Record<'a>,
    entry: &mut Entry<'a>,
    header_time: &TimeValue<'static>,
    want_env_cwd: &mut bool,
) {
    let ty = rec.base.ty.as_str();
    entry.kind = match ty {
        Some("message") => Some(message_kind(rec.role.as_str())),
        Some(t) => record::kind(t).or(Some(EntryKind::Tool)),
        None => None,
    };
    // The reference reads a legacy file as Claude: only `assistant` lines are scanned.
    if ty == Some("assistant") {
        entry.texts = rec.message_texts.take().unwrap_or_default();
    }
    if *want_env_cwd
        && entry.cwd.is_none()
        && ty == Some("message")
        && rec.role.as_str() == Some("user")
    {
        if let Some(cwd) = message_parts(rec.content).iter().find_map(|t| env_cwd(t)) {
            entry.cwd = Some(Cow::Owned(cwd.to_owned()));
            entry.time = header_time.clone();
            *want_env_cwd = false;
        }
    }
}

/// `<cwd>X</cwd>` inside an `<environment_context>` block, trimmed.
fn env_cwd(text: &str) -> Option<&str> {
    let ctx = &text[text.find("<environment_context>")?..];
    let start = ctx.find("<cwd>")? + "<cwd>".len();
    let len = ctx[start..].find("</cwd>")?;
    let cwd = ctx[start..start + len].trim();
    (!cwd.is_empty()).then_some(cwd)
}

/// The texts of a Codex message's content blocks of type `input_text`, `output_text`
/// or `text` (a block whose `text` is missing or not a string gives `""`).
#[derive(Debug, Default)]
struct Parts<'a>(Vec<Cow<'a, str>>);

impl<'de> FromShape<'de> for Parts<'de> {
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut parts = Vec::new();
        while let Some(Obj(block)) = seq.next_element::<Obj<Block<'de>>>()? {
            if let Some(Block { wanted: true, text }) = block {
                parts.push(text.into_str().unwrap_or(Cow::Borrowed("")));
            }
        }
        Ok(Parts(parts))
    }
}

impl<'de> Deserialize<'de> for Parts<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_shape(d)
    }
}

#[derive(Debug, Default)]
struct Block<'a> {
    wanted: bool,
    text: Loose<'a>,
}

impl<'de> FromMap<'de> for Block<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => {
                self.wanted = matches!(
                    map.next_value::<Loose<'de>>()?.as_str(),
                    Some("input_text" | "output_text" | "text")
                )
            }
            "text" => self.text = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

fn message_parts(content: Option<&RawValue>) -> Vec<Cow<'_, str>> {
    content
        .and_then(|raw| serde_json::from_str::<Parts<'_>>(raw.get()).ok())
        .map(|p| p.0)
        .unwrap_or_default()
}

/// The one marker text of an assistant message: its parts joined by `\n`, or `None`
/// when that is empty.
fn message_text(content: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let mut parts = message_parts(content);
    let text = if parts.len() == 1 {
        parts.pop()?
    } else {
        Cow::Owned(parts.join("\n"))
    };
    (!text.is_empty()).then_some(text)
}

/// The `codex` format: [`Confidence::Certain`] for an envelope or legacy-header first
/// line, `None` otherwise.
#[derive(Clone, Copy, Debug, Default)]
pub struct CodexFactory;

impl CodexFactory {
    /// A factory whose adapters use `options` (same name and detection).
    pub fn with_options(options: CodexOptions) -> Box<dyn AdapterFactory> {
        Box::new(Configured(options))
    }
}

fn sniff(first_line: &[u8]) -> Option<Confidence> {
    match classify(first_line) {
        FirstLine::Codex | FirstLine::CodexLegacyHeader => Some(Confidence::Certain),
        FirstLine::Other => None,
    }
}

/// The one `codex` factory, for [`CodexFactory`] and for the one
/// [`CodexFactory::with_options`] makes: they differ only in the adapters they build.
macro_rules! codex_factory {
    ($ty:ty, |$factory:pat_param| $adapter:expr) => {
        impl AdapterFactory for $ty {
            fn name(&self) -> &'static str {
                "codex"
            }
            fn sniff(&self, _path: &std::path::Path, first_line: &[u8]) -> Option<Confidence> {
                sniff(first_line)
            }
            fn layout(&self) -> Option<&dyn Layout> {
                Some(&layout::CodexLayout)
            }
            fn build(&self) -> Box<dyn Adapter> {
                let $factory = self;
                Box::new($adapter)
            }
            fn agent(&self) -> transcope_core::agent::AgentInfo {
                agent::INFO
            }
        }
    };
}

codex_factory!(CodexFactory, |_| CodexAdapter::new());

struct Configured(CodexOptions);

codex_factory!(Configured, |f| CodexAdapter::with_options(f.0));

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(content: &str) -> Option<String> {
        let raw: &RawValue = serde_json::from_str(content).unwrap();
        message_text(Some(raw)).map(Cow::into_owned)
    }

    #[test]
    fn codex_block_joining() {
        assert_eq!(
            text_of(r#"[{"type":"output_text","text":"a"}]"#).as_deref(),
            Some("a")
        );
        assert_eq!(
            text_of(r#"[{"type":"output_text","text":"a"},{"type":"input_image"},{"type":"text","text":"b"},{"type":"input_text","text":"c"}]"#)
                .as_deref(),
            Some("a\nb\nc")
        );
        // A wanted block without text contributes "" (Python `b.get("text", "")`).
        assert_eq!(
            text_of(r#"[{"type":"output_text","text":"a"},{"type":"output_text"},{"type":"output_text","text":"b"}]"#)
                .as_deref(),
            Some("a\n\nb")
        );
        assert_eq!(
            text_of(r#"[{"type":"output_text"},{"type":"output_text"}]"#).as_deref(),
            Some("\n")
        );
        assert_eq!(text_of(r#"[{"type":"output_text","text":""}]"#), None);
        assert_eq!(text_of(r#"[]"#), None);
        assert_eq!(text_of(r#""string content""#), None);
        assert_eq!(text_of(r#"{"type":"output_text","text":"a"}"#), None);
        assert_eq!(text_of(r#"null"#), None);
        assert_eq!(
            text_of(r#"[5, "x", {"type": "refusal", "text": "no"}]"#),
            None
        );
    }

    #[test]
    fn env_cwd_extraction() {
        let t = "<environment_context>\n  <cwd>/Users/x/proj</cwd>\n  <shell>zsh</shell>\n</environment_context>";
        assert_eq!(env_cwd(t), Some("/Users/x/proj"));
        assert_eq!(env_cwd("<cwd>/x</cwd>"), None);
        assert_eq!(env_cwd("<environment_context><cwd> </cwd>"), None);
    }
}

//! A third-party adapter: "plain log", a made-up agent's NDJSON transcripts.
//!
//! The format, entirely this module's: a header line, then one line per event, each
//! with its own field names (no transcope crate knows them):
//!
//! ```text
//! {"plainlog":1,"session":"pl-0001","started":"2026-05-01T09:00:00Z"}    header → Meta
//! {"t":"…","in":"/work/alpha","who":"human","say":"…"}                    → User
//! {"t":"…","who":"agent","say":"…"}                                       → Assistant (say is its text)
//! {"t":"…","who":"tool","tool":"grep","say":"…"}                          → Tool
//! {"t":"…","who":"agent","id":"m1","model":"…","tokens":{"in":…,"cached":…,"out":…,"think":…}}
//!                                                                         → Assistant with usage
//! ```
//!
//! What transcope needs to know of the agent beyond the format, the factory declares
//! ([`transcope_core::agent`]): how its `tokens` map to transcope's columns and what
//! keys a request ([`USAGE`]: `in` includes `cached`, `think` is apart from `out`, and
//! message ids are the session's own), and the price list's provider of its models
//! ([`PRICING`]). transcope's usage stage and price list then count and price it as
//! they do the built-in agents', naming none of them.
//!
//! `in` (the folder) is written only when it changes, as Codex writes its folder only
//! in `turn_context`: an entry's `cwd` is what its own line says, and a stage that
//! wants the folder in force keeps it ([`crate::activity`] does, in its checkpoint).
//! Files are `*.plog` under `$PLAINLOG_HOME/logs` (else `~/.plainlog/logs`); a file's
//! scope-log key is its header's `session`.
//!
//! ```
//! use transcope_core::adapter::{from_fn, Adapter};
//! use transcope_core::{Entry, EntryKind, LinePos};
//! use transcope_example_third_party::plainlog::PlainLogAdapter;
//!
//! let mut got = Vec::new();
//! let line = br#"{"t":"2026-05-01T09:00:04Z","who":"agent","say":"Looking first."}"#;
//! PlainLogAdapter
//!     .decode(line, LinePos::default(), &mut from_fn(|e: &Entry<'_>| got.push((e.kind, e.texts.len()))))
//!     .unwrap();
//! assert_eq!(got, [(Some(EntryKind::Assistant), 1)]);
//! ```

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::error::Category;
use transcope_core::adapter::{Adapter, AdapterFactory, Confidence, EntrySink, Layout, Skip};
use transcope_core::agent::{
    AgentHome, AgentInfo, RequestKey, TokenCounts, TokenShape, UsageShape,
};
use transcope_core::head::Head;
use transcope_core::{Entry, EntryKind, LinePos, TimeValue, Usage};

/// The extension of a plain log.
pub const EXTENSION: &str = "plog";

/// How much of a file's head is read for its header.
const HEAD_LIMIT: u64 = 64 * 1024;

/// How plain logs carry token usage: an agent line's `tokens`, whose `in` includes the
/// `cached` tokens and whose `think` tokens are billed apart from `out`; a message
/// `id` is the session's own.
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(TOKENS),
    key: RequestKey::SessionMessage,
    starts_at_meta: false,
};

/// The fields of an agent line's `tokens`, by their role.
const TOKENS: TokenShape = TokenShape {
    cache_read: Some("cached"),
    reasoning: Some("think"),
    input_includes_cache_read: true,
    output_includes_reasoning: false,
    ..TokenShape::new("in", "out")
};

/// The price list's provider of the plain-log agent's models: a model name may carry
/// it (`plainvendor/pv-small`), and its own-named models (`plainvendor-…`) may be
/// listed under it.
pub const PRICING: &str = "plainvendor";

/// Where the agent keeps its state: `$PLAINLOG_HOME`, else `~/.plainlog`.
pub const HOME: AgentHome = AgentHome::folder("PLAINLOG_HOME", ".plainlog");

/// One line of a plain log: the header's fields and an event's, all optional.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default)]
    plainlog: Option<u32>,
    #[serde(borrow, default)]
    session: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    started: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    t: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "in")]
    folder: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    who: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    say: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tokens: Option<std::collections::BTreeMap<Cow<'a, str>, u64>>,
}

/// transcope's columns of a `tokens` object, each field read by its role in the
/// declared shape.
fn tokens_of(fields: &std::collections::BTreeMap<Cow<'_, str>, u64>) -> transcope_core::Tokens {
    let mut counts = TokenCounts::default();
    for (k, n) in fields {
        if let Some(role) = TOKENS.role(k) {
            counts.set(role, *n);
        }
    }
    TOKENS.tokens(&counts)
}

impl<'a> Line<'a> {
    fn parse(line: &'a [u8]) -> Result<Line<'a>, Skip> {
        let text = std::str::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
        let text = text.trim();
        if text.is_empty() {
            return Err(Skip::Blank);
        }
        serde_json::from_str(text).map_err(|e| match e.classify() {
            Category::Data if !text.starts_with('{') => Skip::NotObject,
            Category::Data => Skip::WrongType,
            _ => Skip::InvalidJson,
        })
    }

    fn is_header(&self) -> bool {
        self.plainlog.is_some()
    }
}

/// Decodes plain-log lines (stateless: every line stands alone).
#[derive(Clone, Copy, Debug, Default)]
pub struct PlainLogAdapter;

impl Adapter for PlainLogAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let rec = Line::parse(line)?;
        let (kind, time) = if rec.is_header() {
            (EntryKind::Meta, rec.started)
        } else {
            let kind = match rec.who.as_deref() {
                Some("human") => EntryKind::User,
                Some("agent") => EntryKind::Assistant,
                Some("tool") => EntryKind::Tool,
                Some(_) => EntryKind::Other,
                None => return Err(Skip::Ignored),
            };
            (kind, rec.t)
        };
        let texts = match (kind, rec.say) {
            (EntryKind::Assistant, Some(say)) => vec![say],
            _ => Vec::new(),
        };
        let usage = rec.tokens.as_ref().map(|t| Usage {
            message_id: rec.id,
            model: rec.model,
            tokens: Some(tokens_of(t)),
            ..Usage::default()
        });
        sink.entry(&Entry {
            kind: Some(kind),
            time: time.map_or(TimeValue::Missing, TimeValue::Str),
            cwd: rec.folder.filter(|f| !f.is_empty()),
            session_id: rec.session,
            texts,
            usage,
            offset: pos.offset,
            line: pos.line,
            ..Entry::default()
        });
        Ok(())
    }
}

/// Where plain logs live and which session wrote each.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlainLogLayout;

impl Layout for PlainLogLayout {
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        vec![HOME.resolve(lookup, home).join("logs")]
    }

    fn claims(&self, path: &Path) -> bool {
        path.extension().is_some_and(|x| x == EXTENSION)
    }

    /// The session named by the header (the first line, read through the head every
    /// layout shares, no further than [`HEAD_LIMIT`]).
    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        if !self.claims(head.path()) {
            return None;
        }
        let key = match head.find_line(HEAD_LIMIT, |l| Some(l.to_vec())) {
            Some(first) => match Line::parse(&first) {
                Ok(h) if h.is_header() => h
                    .session
                    .map(Cow::into_owned)
                    .filter(|s| transcope_core::session::is_valid_session_id(s))
                    .ok_or_else(|| "the plain log's header names no valid session".to_owned()),
                _ => Err("the plain log has no header".to_owned()),
            },
            None => Err("the plain log is empty or cannot be read".to_owned()),
        };
        Some((Confidence::Certain, key))
    }
}

/// Registers the plain-log format: one line in a composition's adapter list.
#[derive(Clone, Copy, Debug, Default)]
pub struct PlainLogFactory;

impl AdapterFactory for PlainLogFactory {
    fn name(&self) -> &'static str {
        "plainlog"
    }

    /// Only a file whose first line is a plain-log header.
    fn sniff(&self, _: &Path, first_line: &[u8]) -> Option<Confidence> {
        Line::parse(first_line)
            .is_ok_and(|l| l.is_header())
            .then_some(Confidence::Certain)
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(&PlainLogLayout)
    }

    fn build(&self) -> Box<dyn Adapter> {
        Box::new(PlainLogAdapter)
    }

    /// Its usage shape and pricing provider (no hooks: the agent runs none).
    fn agent(&self) -> AgentInfo {
        AgentInfo {
            usage: USAGE,
            pricing: Some(PRICING),
            ..AgentInfo::default()
        }
    }
}

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
//! ```
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
use transcope_core::head::Head;
use transcope_core::{Entry, EntryKind, LinePos, TimeValue};

/// The extension of a plain log.
pub const EXTENSION: &str = "plog";

/// How much of a file's head is read for its header.
const HEAD_LIMIT: u64 = 64 * 1024;

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
        sink.entry(&Entry {
            kind: Some(kind),
            time: time.map_or(TimeValue::Missing, TimeValue::Str),
            cwd: rec.folder.filter(|f| !f.is_empty()),
            session_id: rec.session,
            texts,
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
        let root = lookup("PLAINLOG_HOME")
            .filter(|v| !v.is_empty())
            .map_or_else(|| home.join(".plainlog"), PathBuf::from);
        vec![root.join("logs")]
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
}

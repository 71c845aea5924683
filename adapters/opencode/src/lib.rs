//! # transcope-adapter-opencode: OpenCode sessions → [`Entry`](transcope_core::Entry) values
//!
//! OpenCode (anomalyco/opencode, formerly sst/opencode) keeps every session in a SQLite
//! database, `~/.local/share/opencode/opencode.db`, and kept them before in a tree of
//! JSON files under `storage/` ([`layout`]). Neither is a file of lines: both are
//! containers of records, read through the engine's third framing
//! ([`Framing::Records`]) — the factory opens a container as a
//! [`RecordSource`](transcope_core::records::RecordSource) ([`db::DbSource`],
//! [`tree::TreeSource`]) that lists its sessions, tells a session's change marker, and
//! hands the session's messages in order, each as one JSON envelope
//! ([`record::envelope`]: the message with its session's folder and its text parts),
//! which [`OpenCodeAdapter::decode`] turns into one entry:
//!
//! ```text
//! container ──source.read(session, from ordinal)──► envelope ──decode──► Entry {
//!     kind: user | assistant, time: time.created (epoch ms → ISO 8601 UTC),
//!     cwd: path.cwd, else the last reply's path.cwd, else session.directory,
//!          else project.worktree (for "/" or ""),
//!     branch: the folder's repository's branch now (OpenCode records none),
//!     uuid: message id, parent_uuid: parentID, session_id, is_sidechain (a child session),
//!     texts: the assistant's text parts, usage: tokens by agent.rs, model provider/model }
//! ```
//!
//! Decisions:
//!
//! * **No branch is recorded** anywhere in OpenCode's data. It is derived from the
//!   folder's repository when the folder exists, by transcope's identity code
//!   ([`transcope_identity::live_branch`], what `git rev-parse --abbrev-ref HEAD`
//!   prints), once per folder per read; a folder that is gone or no repository has
//!   none. It is the branch when the session is read, not when it was written.
//! * A reply still being written is the container's torn last line: the source leaves
//!   it, and the cursor stops before it ([`record::being_written`]).
//! * A message that does not decode is a counted skip, never fatal; a role OpenCode
//!   does not write is an [`EntryKind::Other`] entry with its folder and time.
//!
//! Detection ([`OpenCodeFactory::sniff`]): certain of a SQLite file (its header) and of
//! a legacy session file by its place; nothing else is its file, so every other
//! agent's files stay their own, and its database is no other agent's (none reads
//! SQLite).
//!
//! ```
//! use transcope_adapter_opencode::{record::envelope, OpenCodeAdapter};
//! use transcope_core::adapter::{from_fn, Adapter};
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! let data = br#"{"role":"assistant","time":{"created":1767225600000,"completed":1767225601000},"providerID":"anthropic","modelID":"claude-sonnet-4-5","path":{"cwd":"/nowhere/w","root":"/nowhere/w"},"tokens":{"input":10,"output":5,"reasoning":2,"cache":{"read":100,"write":0}}}"#;
//! let part = br#"{"type":"text","text":"Done."}"#;
//! let rec = envelope("msg_1", "ses_1", None, "/nowhere", "", data, &[part]);
//! let mut got = Vec::new();
//! OpenCodeAdapter::default().decode(&rec, LinePos { offset: 0, line: 1 }, &mut from_fn(|e: &Entry<'_>| {
//!     let u = e.usage.as_ref().unwrap();
//!     got.push((e.kind, e.cwd.as_deref().map(String::from), e.time.as_str().map(String::from),
//!               e.texts.concat(), u.model.as_deref().map(String::from), u.tokens.unwrap().total()));
//! })).unwrap();
//! assert_eq!(got, [(Some(EntryKind::Assistant), Some("/nowhere/w".into()),
//!     Some("2026-01-01T00:00:00.000Z".into()), "Done.".into(),
//!     Some("anthropic/claude-sonnet-4-5".into()), 117)]);
//! ```
#![warn(missing_docs)]

pub mod agent;
pub mod db;
pub mod layout;
pub mod record;
pub mod tree;
pub mod write;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use transcope_core::adapter::{
    Adapter, AdapterFactory, Confidence, EntrySink, Framing, Layout, Skip,
};
use transcope_core::records::{RecordError, RecordSource};
use transcope_core::{Entry, EntryKind, LinePos, TimeValue, Usage};

pub use layout::OpenCodeLayout;

use crate::layout::Place;
use crate::record::{tokens, Envelope};

/// The first bytes of every SQLite database file.
pub const SQLITE_HEADER: &[u8] = b"SQLite format 3\0";

/// Decodes OpenCode envelopes. It keeps the folder the session's last reply worked in
/// (a user message, which records none, is in it: [`Adapter::checkpoint`] carries it
/// across reads), and, per read, the branch of each folder it has asked the repository
/// about.
#[derive(Debug, Default)]
pub struct OpenCodeAdapter {
    branches: HashMap<String, Option<String>>,
    /// The last reply's `path.cwd` (when it is a folder), for the messages after it.
    last_cwd: Option<String>,
}

impl OpenCodeAdapter {
    /// The branch of `folder`'s repository when the folder exists and is in one.
    fn branch(&mut self, folder: &str) -> Option<String> {
        self.branches
            .entry(folder.to_owned())
            .or_insert_with(|| {
                let p = Path::new(folder);
                if !p.is_absolute() || !p.is_dir() {
                    return None;
                }
                Some(transcope_identity::live_branch(p)).filter(|b| !b.is_empty())
            })
            .clone()
    }
}

/// Whether `s` names a folder a session works in (not empty, not `/`).
fn real(s: &&str) -> bool {
    !s.is_empty() && *s != "/"
}

/// The folder of a message: the assistant's `path.cwd`, else (a user message) the
/// folder the last reply worked in, else the session's directory, each when it is a
/// folder ([`real`]); else the project's worktree; else what there is.
fn folder<'a>(e: &'a Envelope<'a>, last: Option<&'a str>) -> Option<&'a str> {
    let cwd = e.data.path.as_ref().and_then(|p| p.cwd.as_deref());
    let dir = e.directory.as_deref();
    cwd.filter(real)
        .or(last.filter(real))
        .or(dir.filter(real))
        .or(e.worktree.as_deref().filter(real))
        .or(dir.filter(|d| !d.is_empty()))
        .or(cwd.filter(|c| !c.is_empty()))
}

/// `ms` (epoch milliseconds) as ISO 8601 UTC with milliseconds (`…T10:00:00.000Z`).
pub fn iso_ms(ms: f64) -> Option<String> {
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).ok()?;
    Some(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    ))
}

impl Adapter for OpenCodeAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let text = std::str::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
        if text.trim().is_empty() {
            return Err(Skip::Blank);
        }
        if !text.trim_start().starts_with('{') {
            return Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => Skip::NotObject,
                Err(_) => Skip::InvalidJson,
            });
        }
        let e: Envelope<'_> = serde_json::from_str(text).map_err(|err| match err.classify() {
            serde_json::error::Category::Data => Skip::WrongType,
            _ => Skip::InvalidJson,
        })?;
        let kind = match e.data.role.as_deref() {
            Some("user") => EntryKind::User,
            Some("assistant") => EntryKind::Assistant,
            _ => EntryKind::Other,
        };
        let cwd = folder(&e, self.last_cwd.as_deref()).map(str::to_owned);
        if let Some(c) = e
            .data
            .path
            .as_ref()
            .and_then(|p| p.cwd.as_deref())
            .filter(real)
        {
            self.last_cwd = Some(c.to_owned());
        }
        let branch = cwd.as_deref().and_then(|c| self.branch(c));
        let time = e
            .data
            .time
            .created
            .and_then(iso_ms)
            .map_or(TimeValue::Missing, |t| TimeValue::Str(Cow::Owned(t)));
        if kind == EntryKind::Other && cwd.is_none() && matches!(time, TimeValue::Missing) {
            return Err(Skip::Ignored);
        }
        let mut entry = Entry {
            kind: Some(kind),
            time,
            cwd: cwd.map(Cow::Owned),
            branch: branch.map(Cow::Owned),
            session_id: Some(e.session.clone()),
            uuid: Some(e.id.clone()),
            parent_uuid: e.data.parent_id.clone(),
            is_sidechain: e.parent.as_deref().is_some_and(|p| !p.is_empty()),
            offset: pos.offset,
            line: pos.line,
            ..Entry::default()
        };
        if kind == EntryKind::Assistant {
            entry.texts = e
                .parts
                .iter()
                .filter(|p| p.ty.as_deref() == Some("text") && p.synthetic != Some(true))
                .filter_map(|p| p.text.clone())
                .filter(|t| !t.is_empty())
                .collect();
            let model = match (e.data.provider_id.as_deref(), e.data.model_id.as_deref()) {
                (Some(p), Some(m)) if !p.is_empty() && !m.is_empty() => Some(format!("{p}/{m}")),
                (_, Some(m)) if !m.is_empty() => Some(m.to_owned()),
                _ => None,
            };
            let counted = e.data.tokens.as_ref().and_then(tokens);
            if counted.is_some() || model.is_some() {
                entry.usage = Some(Usage {
                    message_id: Some(e.id.clone()),
                    request_id: None,
                    model: model.map(Cow::Owned),
                    tokens: counted,
                    cumulative: false,
                });
            }
        }
        sink.entry(&entry);
        Ok(())
    }

    fn open(&mut self, _path: &Path) {
        self.last_cwd = None;
    }

    fn reset(&mut self) {
        self.last_cwd = None;
    }

    /// The last reply's folder (`Null` before any).
    fn checkpoint(&self) -> serde_json::Value {
        match &self.last_cwd {
            Some(c) => serde_json::json!({ "cwd": c }),
            None => serde_json::Value::Null,
        }
    }

    fn restore(&mut self, checkpoint: &serde_json::Value) -> bool {
        match checkpoint {
            serde_json::Value::Null => {
                self.last_cwd = None;
                true
            }
            serde_json::Value::Object(o) if o.len() == 1 => match o.get("cwd") {
                Some(serde_json::Value::String(c)) => {
                    self.last_cwd = Some(c.clone());
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// The `opencode` format: detection, layout, record sources, adapter and declaration.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenCodeFactory;

impl AdapterFactory for OpenCodeFactory {
    fn name(&self) -> &'static str {
        "opencode"
    }

    /// Certain of a SQLite database (its header: no other agent's transcript is one)
    /// and of a legacy session file by its place ([`layout::place`]); else not this
    /// format.
    fn sniff(&self, path: &Path, first_line: &[u8]) -> Option<Confidence> {
        let sqlite = first_line.starts_with(SQLITE_HEADER);
        let legacy = matches!(layout::place(path), Some(Place::Session { .. }));
        (sqlite || legacy).then_some(Confidence::Certain)
    }

    /// Every file this format is detected in is a container of records.
    fn framing(&self, _path: &Path) -> Framing {
        Framing::Records
    }

    fn records(&self, path: &Path) -> Result<Box<dyn RecordSource>, RecordError> {
        match layout::place(path) {
            Some(Place::Session { id, storage }) => {
                Ok(Box::new(tree::TreeSource::open(path, storage, id)?))
            }
            _ => Ok(Box::new(db::DbSource::open(path)?)),
        }
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(&OpenCodeLayout)
    }

    fn build(&self) -> Box<dyn Adapter> {
        Box::new(OpenCodeAdapter::default())
    }

    fn agent(&self) -> transcope_core::agent::AgentInfo {
        agent::INFO
    }
}

/// Every entry of session `key` in `source` from its start, decoded by a fresh
/// [`OpenCodeAdapter`] without the engine (no cursor, no stages): what a test, a tool
/// or the corpus's checks read a session with. Each record's ordinal is its entry's
/// offset (its line one more), as the engine gives them; a record that does not decode
/// gives nothing. The read's end and family root are handed back.
pub fn decode_session(
    source: &mut dyn RecordSource,
    key: &str,
    mut f: impl FnMut(&Entry<'_>),
) -> Result<transcope_core::records::RecordRead, RecordError> {
    let mut adapter = OpenCodeAdapter::default();
    source.read(
        key,
        &transcope_core::records::RecordPos::START,
        &mut |ordinal: u64, json: &[u8]| {
            let pos = LinePos {
                offset: ordinal,
                line: ordinal + 1,
            };
            let _ = adapter.decode(json, pos, &mut transcope_core::adapter::from_fn(&mut f));
            true
        },
    )
}

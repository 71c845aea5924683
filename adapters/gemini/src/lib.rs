//! # transcope-adapter-gemini: Google Gemini CLI sessions → [`Entry`] values
//!
//! Design. The CLI records a session in one of two forms (FORMAT.md has the sources):
//! a JSON **document** `chats/session-*.json` rewritten whole as the session grows
//! (before 0.39), or an append-only **log** `chats/session-*.jsonl` (0.39 on) whose
//! first line is the session's metadata and whose later lines are message records,
//! `$set` updates and `$rewindTo` rewinds. [`GeminiFactory`] picks the framing by the
//! file name ([`Framing::Document`] for `.json`, [`Framing::Lines`] for `.jsonl`) and
//! [`GeminiAdapter`] turns either into the same entries:
//!
//! ```text
//! open(path) ──place::Folder::beside──► the project folder, from .project_root or
//!            │                          projects.json (never guessed)
//!            └─(log) first line ──────► sessionId, projectHash (so a resumed read
//!                                       still names its session)
//! document ──record::RawRecord──► header ─► Meta entry (time = startTime, line 0)
//!                                 messages[i] ─► one entry each (line = i + 1,
//!                                 offset = the message's first byte)
//! log line ──record::RawRecord──► metadata ─► Meta entry
//!                                 message  ─► log::Seen: New/Revised → entry,
//!                                                         Same → Skip::Ignored
//!                                 $set     ─► sessionId; messages = checkpoint
//!                                 $rewindTo ─► drop from the table; Skip::Ignored
//! ```
//!
//! Each entry: `kind` `User` (`user`), `Assistant` (`gemini`), `Other` (`info`,
//! `error`, `warning`, anything else), `Meta` (the session header); `time` the
//! message's `timestamp` verbatim; `session_id` the header's `sessionId`; `uuid` the
//! message `id`; `cwd` the project folder when the CLI recorded it, on every entry;
//! `texts` only for `gemini` messages: their text parts concatenated with no separator
//! (thought parts, `thoughts`, tool calls and user text are never marker text). No
//! branch: the CLI records none.
//!
//! Updates and rewinds in a log. An entry is emitted when a message id first appears.
//! A later record of the same id emits again only when its kind or marker text
//! changed (a *revision*: same `uuid`, the new full text), so markers of the final
//! text are always seen; a re-record that only adds tokens or tool calls (the common
//! case: the CLI writes a reply's text once, when its stream ends) is skipped. A
//! `$rewindTo` cannot un-observe entries already emitted, and does not try to: a
//! marker in a rewound message was written by the agent at its time, which is what
//! attribution asks. The rewound ids are forgotten, so a record that reuses one later
//! is a first appearance again. A `$set.messages` checkpoint replaces the table the
//! same way, emitting its new and changed messages at the `$set` line.
//!
//! Resumed reads. What a log's lines teach the adapter — the table, and the session id
//! and project hash (a `$set` may change the id) — is its
//! [`checkpoint`](Adapter::checkpoint), stored in the transcript's cursor: a read
//! resumed from the cursor restores it, so a re-record of a message seen before the
//! cursor is still `Same`, and a log read in appended pieces gives exactly the entries
//! of one pass. A document is decoded whole every time and keeps none.
//!
//! ```
//! use transcope_adapter_gemini::GeminiAdapter;
//! use transcope_core::adapter::{from_fn, Adapter};
//! use transcope_core::{Entry, EntryKind, LinePos};
//!
//! let log: [&[u8]; 4] = [
//!     br#"{"sessionId":"s1","projectHash":"ab","startTime":"2026-05-01T10:00:00.000Z","lastUpdated":"2026-05-01T10:00:00.000Z","kind":"main"}"#,
//!     br#"{"id":"u1","timestamp":"2026-05-01T10:00:01.000Z","type":"user","content":[{"text":"hi"}]}"#,
//!     br#"{"id":"g1","timestamp":"2026-05-01T10:00:02.000Z","type":"gemini","content":"Done. <!-- @lesson topic=x -->Cache it.<!-- @/lesson -->"}"#,
//!     br#"{"$set":{"lastUpdated":"2026-05-01T10:00:02.001Z"}}"#,
//! ];
//! let mut adapter = GeminiAdapter::new();
//! let mut got = Vec::new();
//! for (i, line) in log.iter().enumerate() {
//!     let pos = LinePos { offset: 0, line: i as u64 + 1 };
//!     let _ = adapter.decode(line, pos, &mut from_fn(|e: &Entry<'_>| {
//!         got.push((e.kind.unwrap(), e.session_id.as_deref().map(String::from), e.texts.concat()));
//!     }));
//! }
//! assert_eq!(got.len(), 3);
//! assert_eq!(got[0].0, EntryKind::Meta);
//! assert_eq!(got[1], (EntryKind::User, Some("s1".into()), String::new()));
//! assert_eq!(got[2].2, "Done. <!-- @lesson topic=x -->Cache it.<!-- @/lesson -->");
//! ```
#![warn(missing_docs)]

pub mod agent;
pub mod log;
pub mod place;
pub mod record;

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use transcope_core::adapter::{
    Adapter, AdapterFactory, Confidence, EntrySink, Framing, Layout, Skip,
};
use transcope_core::head::Head;
use transcope_core::session::is_valid_session_id;
use transcope_core::{Entry, EntryKind, LinePos, TimeValue};

pub use place::project_hash;

use crate::log::{fingerprint, Seen};
use crate::place::{chats_place, first_line, ChatsPlace, Folder};
use crate::record::{string, time_value, Message, RawRecord, RawSet};

/// Bytes read at most for a log's first line (its metadata).
const HEAD_CAP: u64 = 1024 * 1024;

/// The checkpoint of a log read so far: what its lines taught the adapter.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct LogState {
    /// The checkpoint's shape (1).
    v: u32,
    session_id: Option<String>,
    project_hash: Option<String>,
    /// The message table, `[id, fingerprint]` in order.
    messages: Vec<(String, u64)>,
}

const LOG_STATE_VERSION: u32 = 1;

/// Decodes one Gemini CLI session file: a whole document, or a log line by line.
#[derive(Debug, Default)]
pub struct GeminiAdapter {
    /// `Some(true)` when [`Adapter::open`] named a `.json` document, `Some(false)` a
    /// log; `None` (not opened): a record holding a newline is a document.
    document: Option<bool>,
    folder: Folder,
    session_id: Option<String>,
    project_hash: Option<String>,
    seen: Seen,
}

impl GeminiAdapter {
    /// An adapter with no file opened.
    pub fn new() -> Self {
        Self::default()
    }

    /// The project folder known for the current file.
    pub fn folder(&self) -> Option<&str> {
        self.folder.known.as_deref()
    }

    fn header(&mut self, session_id: Option<&RawValue>, project_hash: Option<&RawValue>) {
        if let Some(s) = session_id.and_then(string) {
            self.session_id = Some(s.into_owned());
        }
        if let Some(h) = project_hash.and_then(string) {
            self.project_hash = Some(h.into_owned());
        }
        self.folder.resolve(self.project_hash.as_deref());
    }

    fn entry<'e>(&'e self, kind: EntryKind, time: TimeValue<'e>, at: (u64, u64)) -> Entry<'e> {
        Entry {
            kind: Some(kind),
            time,
            cwd: self.folder.known.as_deref().map(Cow::Borrowed),
            session_id: self.session_id.as_deref().map(Cow::Borrowed),
            offset: at.0,
            line: at.1,
            ..Entry::default()
        }
    }

    fn emit(&self, m: &Message<'_>, at: (u64, u64), sink: &mut dyn EntrySink) {
        let mut e = self.entry(m.kind, m.time.clone(), at);
        e.uuid = m.id.as_deref().map(Cow::Borrowed);
        if let Some(t) = &m.text {
            e.texts.push(Cow::Borrowed(t));
        }
        e.usage.clone_from(&m.usage);
        sink.entry(&e);
    }

    /// A message record of a log: emit unless it changes nothing the stages see.
    fn logged(&mut self, m: &Message<'_>, at: (u64, u64), sink: &mut dyn EntrySink) -> bool {
        let Some(id) = &m.id else {
            self.emit(m, at, sink);
            return true;
        };
        let text_fp = fingerprint(m.kind, m.text.as_deref());
        let (verdict, keep) = log::judge(self.seen.get(id), text_fp, m.usage.is_some());
        self.seen.record(id, keep);
        self.verdict(verdict, m, at, sink)
    }

    /// Emit what `verdict` says of `m`; whether an entry was emitted.
    fn verdict(
        &self,
        verdict: log::Verdict,
        m: &Message<'_>,
        at: (u64, u64),
        sink: &mut dyn EntrySink,
    ) -> bool {
        match verdict {
            log::Verdict::Same => false,
            log::Verdict::UsageOnly => {
                // The usage a re-record adds, without the text the stages saw already.
                let mut e = self.entry(m.kind, m.time.clone(), at);
                e.uuid = m.id.as_deref().map(Cow::Borrowed);
                e.usage.clone_from(&m.usage);
                sink.entry(&e);
                true
            }
            log::Verdict::Emit => {
                self.emit(m, at, sink);
                true
            }
        }
    }

    fn decode_document(
        &mut self,
        text: &str,
        pos: LinePos,
        sink: &mut dyn EntrySink,
    ) -> Result<(), Skip> {
        let rec = parse_record(text)?;
        if rec.session_id.is_none() && rec.messages.is_none() {
            return Err(Skip::Ignored);
        }
        let messages = match rec.messages {
            None => Vec::new(),
            Some(raw) => {
                serde_json::from_str::<Vec<&RawValue>>(raw.get()).map_err(|_| Skip::WrongType)?
            }
        };
        self.seen.clear();
        self.header(rec.session_id, rec.project_hash);
        let start = pos.offset + (text.len() - text.trim_start().len()) as u64;
        let head = self.entry(EntryKind::Meta, time_value(rec.start_time), (start, 0));
        sink.entry(&head);
        for (i, raw) in messages.iter().enumerate() {
            // A message that is not an object of the expected shape gives no entry.
            let Some(m) = Message::parse(raw.get()) else {
                continue;
            };
            let at = (pos.offset + offset_in(text, raw.get()), i as u64 + 1);
            self.emit(&m, at, sink);
        }
        Ok(())
    }

    fn decode_line(
        &mut self,
        text: &str,
        pos: LinePos,
        sink: &mut dyn EntrySink,
    ) -> Result<(), Skip> {
        let rec = parse_record(text)?;
        let at = (pos.offset, pos.line);
        // The CLI's own reader tests the shapes in this order.
        if let Some(target) = rec.rewind_to.and_then(string) {
            self.seen.rewind(&target);
            return Err(Skip::Ignored);
        }
        if rec.id.is_some_and(|id| string(id).is_some()) {
            let m = Message::from_fields(rec.id, rec.timestamp, rec.kind, rec.content)
                .with_usage(rec.tokens, rec.model);
            return if self.logged(&m, at, sink) {
                Ok(())
            } else {
                Err(Skip::Ignored)
            };
        }
        if let Some(set) = rec.set.filter(|s| s.get().trim_start().starts_with('{')) {
            let set: RawSet<'_> = serde_json::from_str(set.get()).map_err(|_| Skip::WrongType)?;
            if let Some(s) = set.session_id.and_then(string) {
                self.session_id = Some(s.into_owned());
            }
            let emitted = match set.messages {
                Some(list) => self.checkpoint(text, list, pos, sink),
                None => false,
            };
            return if emitted { Ok(()) } else { Err(Skip::Ignored) };
        }
        let header = rec.session_id.and_then(string).is_some()
            && rec.project_hash.and_then(string).is_some();
        if !header {
            return Err(Skip::Ignored);
        }
        self.header(rec.session_id, rec.project_hash);
        let head = self.entry(EntryKind::Meta, time_value(rec.start_time), at);
        sink.entry(&head);
        // A legacy record on one line carries its messages; they join the table.
        let list = rec
            .messages
            .and_then(|raw| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
            .unwrap_or_default();
        for raw in list {
            if let Some(m) = Message::parse(raw.get()).filter(|m| m.id.is_some()) {
                self.logged(
                    &m,
                    (pos.offset + offset_in(text, raw.get()), pos.line),
                    sink,
                );
            }
        }
        Ok(())
    }

    /// `$set.messages`: the table becomes the list; its new and changed messages are
    /// emitted. Whether any entry was.
    fn checkpoint(
        &mut self,
        text: &str,
        list: &RawValue,
        pos: LinePos,
        sink: &mut dyn EntrySink,
    ) -> bool {
        let Ok(raws) = serde_json::from_str::<Vec<&RawValue>>(list.get()) else {
            return false;
        };
        let messages: Vec<(u64, Message<'_>)> = raws
            .iter()
            .filter_map(|raw| {
                let m = Message::parse(raw.get()).filter(|m| m.id.is_some())?;
                Some((pos.offset + offset_in(text, raw.get()), m))
            })
            .collect();
        let judged: Vec<(log::Verdict, (String, u64))> = messages
            .iter()
            .map(|(_, m)| {
                let id = m.id.as_deref().unwrap_or_default().to_owned();
                let text_fp = fingerprint(m.kind, m.text.as_deref());
                let (verdict, keep) = log::judge(self.seen.get(&id), text_fp, m.usage.is_some());
                (verdict, (id, keep))
            })
            .collect();
        let table: Vec<(String, u64)> = judged.iter().map(|(_, t)| t.clone()).collect();
        self.seen.checkpoint(&table);
        let mut emitted = false;
        for ((offset, m), (verdict, _)) in messages.iter().zip(&judged) {
            emitted |= self.verdict(*verdict, m, (*offset, pos.line), sink);
        }
        emitted
    }
}

/// Read a record's top-level fields, or say why it is no record.
fn parse_record(text: &str) -> Result<RawRecord<'_>, Skip> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(Skip::Blank);
    }
    // A derived struct would also accept an array (as a tuple): tell objects first.
    if !trimmed.starts_with('{') {
        return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => Err(Skip::NotObject),
            Err(_) => Err(Skip::InvalidJson),
        };
    }
    match serde_json::from_str::<RawRecord<'_>>(text) {
        Ok(rec) => Ok(rec),
        Err(e) if e.is_data() => Err(Skip::WrongType),
        Err(_) => Err(Skip::InvalidJson),
    }
}

/// Where `part` (a sub-slice of `whole`) starts in `whole`.
fn offset_in(whole: &str, part: &str) -> u64 {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize) as u64
}

impl Adapter for GeminiAdapter {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let text = std::str::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
        let document = self.document.unwrap_or_else(|| line.contains(&b'\n'));
        if document {
            self.decode_document(text, pos, sink)
        } else {
            self.decode_line(text, pos, sink)
        }
    }

    /// Forget the last file; find this one's project folder beside it; for a log, read
    /// its first line for the session's id and hash (a read resumed past it still names
    /// the session).
    fn open(&mut self, path: &Path) {
        self.reset();
        let document = is_document(path);
        self.document = Some(document);
        self.folder = Folder::beside(path);
        if !document {
            let head = first_line(path, HEAD_CAP).filter(|l| is_metadata_line(l));
            if let Some(text) = head.as_deref().and_then(|h| std::str::from_utf8(h).ok()) {
                if let Ok(rec) = serde_json::from_str::<RawRecord<'_>>(text) {
                    self.header(rec.session_id, rec.project_hash);
                }
            }
        }
    }

    fn reset(&mut self) {
        *self = GeminiAdapter::default();
    }

    /// A log's session id, project hash and message table; `Null` for a document
    /// (decoded whole every time).
    fn checkpoint(&self) -> Value {
        if self.document == Some(true) {
            return Value::Null;
        }
        let state = LogState {
            v: LOG_STATE_VERSION,
            session_id: self.session_id.clone(),
            project_hash: self.project_hash.clone(),
            messages: self
                .seen
                .entries()
                .map(|(id, f)| (id.to_owned(), f))
                .collect(),
        };
        serde_json::to_value(state).unwrap_or(Value::Null)
    }

    fn restore(&mut self, checkpoint: &Value) -> bool {
        if checkpoint.is_null() {
            return true;
        }
        let Ok(state) = LogState::deserialize(checkpoint) else {
            return false;
        };
        if state.v != LOG_STATE_VERSION || self.document == Some(true) {
            return false;
        }
        self.session_id = state.session_id;
        self.project_hash = state.project_hash;
        self.folder.resolve(self.project_hash.as_deref());
        self.seen = Seen::from_entries(state.messages);
        true
    }
}

fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// Whether a first line is a log's metadata record (or a whole one-line document):
/// an object with string `sessionId` and `projectHash`, and none of the other shapes.
pub fn is_metadata_line(first_line: &[u8]) -> bool {
    metadata_session_id(first_line).is_some()
}

/// The `sessionId` of a log's metadata record ([`is_metadata_line`]), read in the one
/// parse that tells it is one.
fn metadata_session_id(first_line: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(first_line).ok()?;
    if !text.trim_start().starts_with('{') {
        return None;
    }
    // A metadata line has a `projectHash` key, spelled out or with escapes (only `\u`
    // ones can spell letters): a line with neither is none, unparsed (the first line
    // of every Claude transcript is asked).
    static KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"projectHash"));
    static ESCAPE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\\u"));
    let b = text.as_bytes();
    if KEY.find(b).is_none() && ESCAPE.find(b).is_none() {
        return None;
    }
    let rec = serde_json::from_str::<RawRecord<'_>>(text).ok()?;
    let plain = rec.rewind_to.is_none()
        && rec.id.and_then(string).is_none()
        && rec.set.is_none()
        && rec.project_hash.and_then(string).is_some();
    plain
        .then(|| rec.session_id.and_then(string))
        .flatten()
        .map(Cow::into_owned)
}

/// The `gemini` format: sniffing, framing, layout and adapters.
#[derive(Clone, Copy, Debug, Default)]
pub struct GeminiFactory;

impl AdapterFactory for GeminiFactory {
    fn name(&self) -> &'static str {
        "gemini"
    }

    /// Certain when the first line is Gemini metadata (a log, or a compact document);
    /// or when a `.json` file opens with `{` and is named like a session
    /// (`session-*.json`, or any `*.json` in `chats/<parent>/`). Else not this format.
    fn sniff(&self, path: &Path, first_line: &[u8]) -> Option<Confidence> {
        if is_metadata_line(first_line) {
            return Some(Confidence::Certain);
        }
        let opens_object = first_line.trim_ascii_start().starts_with(b"{");
        let session_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("session-"));
        let placed = chats_place(path).is_some() || session_name;
        (is_document(path) && opens_object && placed).then_some(Confidence::Certain)
    }

    fn framing(&self, path: &Path) -> Framing {
        if is_document(path) {
            Framing::Document
        } else {
            Framing::Lines
        }
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(&GeminiLayout)
    }

    fn build(&self) -> Box<dyn Adapter> {
        Box::new(GeminiAdapter::new())
    }

    fn agent(&self) -> transcope_core::agent::AgentInfo {
        agent::INFO
    }
}

/// Where Gemini CLI keeps sessions and how a file names its session (see [`place`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct GeminiLayout;

impl Layout for GeminiLayout {
    /// `$GEMINI_CLI_HOME/.gemini/tmp`, else `<home>/.gemini/tmp`.
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        vec![place::gemini_dir(lookup, home).join("tmp")]
    }

    /// `chats/session-*.json(l)` and `chats/<parent>/*.json(l)`; a `.json` document is
    /// not claimed when its `.jsonl` twin exists (resuming a document makes the CLI
    /// copy every message of it into `<same name>.jsonl` and continue there).
    fn claims(&self, path: &Path) -> bool {
        if chats_place(path).is_none() {
            return false;
        }
        if is_document(path) {
            let mut twin = path.as_os_str().to_owned();
            twin.push("l");
            return !Path::new(&twin).exists();
        }
        true
    }

    /// Certain for a file under `chats/` ([`place::chats_place`]) or a log whose first
    /// line is Gemini metadata; `None` otherwise. The key is the session's `sessionId`
    /// (read from the file: a main file's name holds only its first 8 characters); a
    /// sub-agent under `chats/<parent>/` → `<parent>.<its sessionId>` (its id, else its
    /// file name's stem).
    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        let path = head.path();
        let (place, id) = match chats_place(path) {
            Some(p) => (p, session_id_in(head)),
            // A log's metadata line names it and holds its id: parsed once for both.
            None if !is_document(path) => (ChatsPlace::Main, Some(first_metadata_id(head)?)),
            None => return None,
        };
        Some((Confidence::Certain, key_of(path, place, id)))
    }

    /// `<parent>.<id>` → `<parent>` (a Gemini parent folder name never holds a `.`:
    /// the CLI replaces every character outside `[A-Za-z0-9_-]` with `_`).
    fn parent(&self, key: &str) -> Option<String> {
        let (parent, child) = key.split_once('.')?;
        (!parent.is_empty() && !child.is_empty()).then(|| parent.to_owned())
    }
}

/// The scope-log key of the session file at `path`, placed as `place`, whose own
/// `sessionId` is `id`.
fn key_of(path: &Path, place: ChatsPlace, id: Option<String>) -> Result<String, String> {
    match place {
        ChatsPlace::Main => {
            let id = id.ok_or("no sessionId in the file")?;
            if !is_valid_session_id(&id) || id.contains('.') {
                return Err(format!("sessionId {id:?} is not a plain session id"));
            }
            Ok(id)
        }
        ChatsPlace::SubAgent { parent } => {
            let stem = path.file_stem().and_then(|s| s.to_str()).map(String::from);
            let id = id.or(stem).ok_or("no sub-agent id")?;
            let key = format!("{parent}.{id}");
            if !is_valid_session_id(&parent) || parent.contains('.') || !is_valid_session_id(&key) {
                return Err(format!("sub-agent key {key:?} is not a plain session id"));
            }
            Ok(key)
        }
    }
}

/// The `sessionId` a session file records: a log's first line, or a document's top
/// level ([`session_id_in`]).
pub fn session_id_of(path: &Path) -> Option<String> {
    session_id_in(&Head::new(path))
}

/// How much of a document's start is searched for its `sessionId` before the document
/// is read whole for it (Gemini CLI writes it first; a document's start is read to
/// name it anyway).
const DOCUMENT_HEAD: u64 = 64 * 1024;

/// The `sessionId` a session file records, from its head: a log's first line, or a
/// document's top level — found in its first [`DOCUMENT_HEAD`] bytes when they hold
/// it (or hold the whole document), else read through the file (streamed, nothing
/// else kept).
pub fn session_id_in(head: &Head<'_>) -> Option<String> {
    let path = head.path();
    if is_document(path) {
        return match head.prefix(DOCUMENT_HEAD, top_level_session_id) {
            Some(found) => found,
            None => document_session_id(path),
        };
    }
    first_metadata_id(head)
}

/// The `sessionId` of a log whose first line is its metadata record.
fn first_metadata_id(head: &Head<'_>) -> Option<String> {
    head.find_line(HEAD_CAP, |l| Some(metadata_session_id(l)))?
}

/// A document's top-level `sessionId` as far as `bytes`, its first bytes (`whole`: all
/// of it), tell: `Some(Some(id))` when the key comes with a string, `Some(None)` when
/// they show there is none (not an object, the key's value not a string, the whole
/// document without it, or bytes no document starts with), `None` when they end first.
fn top_level_session_id(bytes: &[u8], whole: bool) -> Option<Option<String>> {
    use serde::de::{Error, IgnoredAny, MapAccess, Visitor};
    struct Top<'f>(&'f mut Option<Option<String>>);
    impl<'de> Visitor<'de> for Top<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "sessionId" {
                    let id = match map.next_value::<Value>()? {
                        Value::String(s) => Some(s),
                        _ => None,
                    };
                    *self.0 = Some(id);
                    // Found: the rest is not looked at.
                    return Err(A::Error::custom("found"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            *self.0 = Some(None);
            Ok(())
        }
    }
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
    match start.map(|i| bytes[i]) {
        Some(b'{') => {}
        Some(_) => return Some(None),
        None => return whole.then_some(None),
    }
    let mut found = None;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let read = serde::Deserializer::deserialize_map(&mut de, Top(&mut found));
    match (found, read) {
        (Some(found), _) => Some(found),
        // The bytes ended first: the rest of the document decides.
        (None, Err(e)) if e.is_eof() && !whole => None,
        // A whole document that is not one has no id (as a whole read finds).
        (None, _) => Some(None),
    }
}

/// The top-level `sessionId` of the document at `path`, read through (streamed).
fn document_session_id(path: &Path) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Top {
        #[serde(default, rename = "sessionId")]
        session_id: Option<serde_json::Value>,
    }
    let mut reader = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    // A derived struct would also accept an array (as a tuple): refuse one first.
    let opens_object = loop {
        let buf = std::io::BufRead::fill_buf(&mut reader).ok()?;
        match buf.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => break buf[i] == b'{',
            None if buf.is_empty() => return None,
            None => {
                let n = buf.len();
                std::io::BufRead::consume(&mut reader, n);
            }
        }
    };
    if !opens_object {
        return None;
    }
    let top: Top = serde_json::from_reader(reader).ok()?;
    match top.session_id? {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    }
}

//! The cursor as the store keeps it: one transcript's saved position for one session
//! key, with every stage's checkpoint there and, while a read is making its effects
//! durable, that read's [`Intent`].
//!
//! Its JSON is the row's `cursor` text (without the key, which is the row's, and
//! without the fields at their defaults). How the engine reads and resumes from a
//! cursor is told in `transcope_engine::cursor`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The version written in every cursor file (2: stage checkpoints, intents).
pub const CURSOR_VERSION: u32 = 2;

/// A saved position in one transcript for one session key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cursor {
    /// Format version.
    pub version: u32,
    /// The scope-log key. Not in the stored text: it is the row's key, filled in when
    /// the row is read ([`Cursor::keyed`]).
    #[serde(default, skip_serializing)]
    pub session: String,
    /// The transcript path as given. Not in the stored text either (the row's key).
    #[serde(default, skip_serializing)]
    pub path: String,
    /// The adapter that read it.
    pub adapter: String,
    /// Offset of the first unread line (0 for a document).
    pub offset: u64,
    /// Its 1-based line number.
    pub line: u64,
    /// The file's size when the cursor was written.
    pub size: u64,
    /// The file's modification time then (nanoseconds since the epoch).
    #[serde(default, skip_serializing_if = "is_default")]
    pub mtime_ns: i128,
    /// How many head bytes the fingerprint covers (`min(size, 4096)`; 0 for a
    /// document).
    pub head_len: u64,
    /// SHA-256 of those bytes, hex.
    pub head_sha256: String,
    /// The file is read whole every time (one document, or the JSON-array form): the
    /// cursor counts entries, not bytes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub whole: bool,
    /// A document's entries already given (0 for lines).
    #[serde(default, skip_serializing_if = "is_default")]
    pub entries: u64,
    /// SHA-256 over those entries' times and texts, hex (empty for lines).
    #[serde(default, skip_serializing_if = "is_default")]
    pub entries_sha256: String,
    /// A container's session read through its records (`Framing::Records`): `offset`
    /// is then the ordinal of the next record, `line` one past it, and the file's size
    /// and head say nothing (a database is rewritten in place).
    #[serde(default, skip_serializing_if = "is_default")]
    pub records: bool,
    /// The session's change marker when it was read (records only): the same marker
    /// again is nothing new.
    #[serde(default, skip_serializing_if = "is_default")]
    pub marker: String,
    /// The id of the last record read (records only): the read resumes after it only
    /// while it is still the record before `offset`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub anchor: String,
    /// Each stage's checkpoint, by stage name.
    #[serde(default)]
    pub stages: BTreeMap<String, Value>,
    /// The adapter's checkpoint at `offset` (a Gemini log's message table), restored
    /// before the stages'; absent (`null`) when it keeps no state, or in a cursor
    /// written before adapters had checkpoints.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub adapter_checkpoint: Value,
    /// An intent not yet resolved (see the module docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Box<Intent>>,
}

/// What a read was about to make durable when this cursor was stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Intent {
    /// The cursor before the read (`None`: the file had none).
    pub prev: Option<Cursor>,
    /// Each stage's token, by stage name.
    pub tokens: BTreeMap<String, Value>,
}

/// A field left out of the stored text when it has its default value (the text stays
/// short: a batch writes one per transcript, and its pages are what a transaction
/// costs).
fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

impl Cursor {
    /// The cursor read from the row of (`session`, `path`), which the stored text does
    /// not repeat: both filled in, in the previous cursor of its intent too. `None` when
    /// the text names another session (a row written before the text left it out).
    pub fn keyed(mut self, session: &str, path: &Path) -> Option<Cursor> {
        let mut c = &mut self;
        loop {
            if !c.session.is_empty() && c.session != session {
                return None;
            }
            session.clone_into(&mut c.session);
            c.path = path.display().to_string();
            match c.intent.as_mut().and_then(|i| i.prev.as_mut()) {
                Some(prev) => c = prev,
                None => break,
            }
        }
        Some(self)
    }
}

/// `<home>/transcope/cursors`: where versions before the cursor database kept one file
/// per cursor (imported by [`crate::CursorStore`], then removed).
pub fn cursors_dir(home: &Path) -> PathBuf {
    home.join("transcope").join("cursors")
}

/// Load the cursor file at `path` (an earlier version's); a missing, unreadable or
/// foreign-version file is `None`.
pub fn load(path: &Path) -> Option<Cursor> {
    let text = transcope_jsonl::read_private(path).ok()?;
    let c: Cursor = serde_json::from_slice(&text).ok()?;
    (c.version == CURSOR_VERSION).then_some(c)
}

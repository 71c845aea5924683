//! The cursor store: where each transcript was read to, and every stage's state there.
//!
//! The reference re-reads the whole transcript every time. transcope keeps one cursor
//! per (session key, transcript) in its cursor store ([`crate::store`]), shared by every
//! path that observes a transcript (`observe`, a hook's Stop, `backfill`): the byte
//! offset after the last complete line, the file's size, a fingerprint of its first
//! 4 KiB, and each stage's [`checkpoint`](transcope_core::Stage::checkpoint) at that
//! point (and the adapter's, when it keeps per-file state:
//! [`Adapter::checkpoint`](transcope_core::adapter::Adapter::checkpoint)). The next
//! read starts there with the adapter and the stages restored, so the bytes of a
//! transcript are observed once, and a transcript read in appended pieces gives what
//! one pass gives. A file that shrank, or whose first bytes changed (rewritten or
//! replaced), is read again from the start.
//!
//! A document-framed file (one JSON document, rewritten as it grows) keeps its offset
//! at 0; the cursor counts the entries already given and fingerprints them, and the
//! next read skips those.
//!
//! **Kill safety.** A read whose stages are about to make effects durable (rows
//! appended to a scope log, markers handed on) first stores an *intent*: the new
//! cursor, the previous one, and each stage's token of what it is about to do
//! ([`Stage::prepare`](transcope_core::Stage)). The next read resolves it: when every
//! stage finds its effect made ([`Stage::recover`](transcope_core::Stage)) the new
//! cursor stands, else the previous one. A process killed at any moment therefore
//! resumes exactly where an uninterrupted run would be.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scan::Resume;

/// Bytes of the file's head the fingerprint covers.
pub const FINGERPRINT_BYTES: u64 = 4096;

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

    /// Where to resume.
    pub fn resume(&self) -> Resume {
        Resume {
            offset: self.offset,
            line: self.line,
        }
    }
}

/// `<home>/transcope/cursors`: where versions before the cursor database kept one file
/// per cursor (imported by [`crate::store`], then removed).
pub fn cursors_dir(home: &Path) -> PathBuf {
    home.join("transcope").join("cursors")
}

/// SHA-256 (hex) of the first `len` bytes of the open transcript `file`: from `known`,
/// the bytes already read from its start, when they cover them, else read in place
/// (without moving its position).
pub fn head_fingerprint(file: &File, len: u64, known: &[u8]) -> io::Result<String> {
    use std::os::unix::fs::FileExt;
    if let Some(head) = known.get(..len as usize) {
        return Ok(transcope_core::digest::sha256_hex(head));
    }
    let mut buf = vec![0; len as usize];
    // A file that shrank below `len` since it was opened is an error (`UnexpectedEof`).
    file.read_exact_at(&mut buf, 0)?;
    Ok(transcope_core::digest::sha256_hex(&buf))
}

/// Load the cursor file at `path` (an earlier version's); a missing, unreadable or
/// foreign-version file is `None`.
pub fn load(path: &Path) -> Option<Cursor> {
    let text = transcope_jsonl::read_private(path).ok()?;
    let c: Cursor = serde_json::from_slice(&text).ok()?;
    (c.version == CURSOR_VERSION).then_some(c)
}

/// Whether `c` still describes the open transcript `file` (`size_now` bytes): not
/// shorter than the cursor, same head bytes (taken from `known`, the bytes already read
/// from the file's start, when they cover the fingerprint).
pub fn still_valid(c: &Cursor, file: &File, size_now: u64, known: &[u8]) -> bool {
    size_now >= c.offset
        && size_now >= c.head_len
        && (c.head_len == 0
            || head_fingerprint(file, c.head_len, known).is_ok_and(|h| h == c.head_sha256))
}

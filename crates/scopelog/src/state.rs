//! What a scope log's rows were, up to a line boundary, kept beside transcope's own
//! files (`<home>/transcope/scope-logs/<session>.json`, never next to the log, which
//! agentihooks reads) so a batch need not read a long log whole: it reads the bytes
//! after that boundary only.
//!
//! The state is a fact about bytes `[0, size)` of one file (device and inode), checked
//! before each use: the file is still that inode, at least `size` long, and its first
//! and last 4 KiB before `size` hash as they did. Anything else — no state, an
//! unreadable or malformed one, another file, a shorter one, other bytes at either end —
//! and the log is read whole, as without a state. A state is written only under the
//! log's lock, by a batch that read the log and left it ending with a newline.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::{json, Value};
use transcope_core::digest::sha256_hex;
use transcope_core::Instant;

use crate::Row;

/// The bytes hashed at each end of the described part.
const ENDS: u64 = 4096;

/// The most `transition_id`s a state lists that are not their own row's hash.
pub(crate) const MAX_STRAYS: usize = 64;

/// A file's identity: device and inode.
pub(crate) type FileId = (u64, u64);

/// The rows of bytes `[0, size)` of a log, as far as the rules and the attribution of
/// later events need them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Known {
    /// The bytes described; 0, or the byte before is `\n`.
    pub size: u64,
    /// Readable rows among them.
    pub count: u64,
    /// The last of them in file order.
    pub latest: Option<Row>,
    /// The last row before `latest` whose `at` is a time (when `latest`'s is not).
    pub earlier_timed: Option<Row>,
    /// The latest time any of them has.
    pub max_at: Option<Instant>,
    /// The `transition_id`s among them (as the 32 bytes they spell) that are not the
    /// hash of their own row's session, `at` and scope: the only ones a transition later
    /// than `max_at` could equal.
    pub strays: Vec<[u8; 32]>,
}

/// Hash of `len` bytes of `file` from `at`; `None` when fewer can be read.
fn hash_at(file: &File, at: u64, len: u64) -> Option<String> {
    let mut buf = vec![0u8; len as usize];
    file.read_exact_at(&mut buf, at).ok()?;
    Some(sha256_hex(&buf))
}

/// The two hashes that pin `[0, size)`: its first and its last (up to) 4 KiB.
fn ends(file: &File, size: u64) -> Option<(String, String)> {
    let head = hash_at(file, 0, size.min(ENDS))?;
    let tail = hash_at(file, size - size.min(ENDS), size.min(ENDS))?;
    Some((head, tail))
}

fn row_of(v: &Value) -> Option<Option<Row>> {
    match v {
        Value::Null => Some(None),
        Value::String(text) => match serde_json::from_str::<Value>(text).ok()? {
            Value::Object(m) => Some(Some(m)),
            _ => None,
        },
        _ => None,
    }
}

fn text_of(row: Option<&Row>) -> Value {
    row.and_then(|r| serde_json::to_string(r).ok())
        .map_or(Value::Null, Value::String)
}

/// The state at `state` for the log open as `file` (identity `id`, `size` bytes), when
/// it still holds.
pub(crate) fn load(state: &Path, file: &File, id: FileId, size: u64) -> Option<Known> {
    let bytes = transcope_jsonl::read_private(state).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    let o = v.as_object()?;
    let u64_of = |k: &str| o.get(k).and_then(Value::as_u64);
    if u64_of("version")? != 1 || (u64_of("dev")?, u64_of("ino")?) != id {
        return None;
    }
    let known_size = u64_of("size")?;
    if known_size > size {
        return None;
    }
    let (head, tail) = ends(file, known_size)?;
    if o.get("head")?.as_str()? != head || o.get("tail")?.as_str()? != tail {
        return None;
    }
    if known_size > 0 {
        let mut last = [0u8];
        file.read_exact_at(&mut last, known_size - 1).ok()?;
        if last[0] != b'\n' {
            return None;
        }
    }
    let max_at = match o.get("max_at")? {
        Value::Null => None,
        v => Some(Instant::from_unix_micros(v.as_i64()?)),
    };
    let mut strays = Vec::new();
    for s in o.get("strays")?.as_array()? {
        let key = crate::record::id_key(s.as_str()?)?;
        strays.push(key);
    }
    let known = Known {
        size: known_size,
        count: u64_of("count")?,
        latest: row_of(o.get("latest")?)?,
        earlier_timed: row_of(o.get("earlier_timed")?)?,
        max_at,
        strays,
    };
    // Rows, if any, have a latest one.
    (known.count == 0 || known.latest.is_some()).then_some(known)
}

/// Write `known` as the state at `state` of the log at `log`, when that is still the
/// file `id` and holds at least `known.size` bytes, the last of them `\n`. Failures
/// only cost the next batch a whole read.
pub(crate) fn save(state: &Path, log: &Path, id: FileId, known: &Known) {
    let _ = try_save(state, log, id, known);
}

fn try_save(state: &Path, log: &Path, id: FileId, known: &Known) -> Option<()> {
    use std::os::unix::fs::MetadataExt;
    // Never into a folder planted as a symbolic link (the file itself is never followed).
    if let Some(dir) = state.parent() {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if !m.is_dir() => return None,
            _ => {}
        }
    }
    let (file, size) = transcope_jsonl::open_private(log).ok()?;
    let meta = file.metadata().ok()?;
    if (meta.dev(), meta.ino()) != id || size < known.size {
        return None;
    }
    if known.size > 0 {
        let mut last = [0u8];
        file.read_exact_at(&mut last, known.size - 1).ok()?;
        if last[0] != b'\n' {
            return None;
        }
    }
    let (head, tail) = ends(&file, known.size)?;
    let strays: Vec<String> = known
        .strays
        .iter()
        .map(|k| transcope_core::digest::hex(k))
        .collect();
    let v = json!({
        "version": 1,
        "dev": id.0,
        "ino": id.1,
        "size": known.size,
        "head": head,
        "tail": tail,
        "count": known.count,
        "latest": text_of(known.latest.as_ref()),
        "earlier_timed": text_of(known.earlier_timed.as_ref()),
        "max_at": known.max_at.map(Instant::unix_micros),
        "strays": strays,
    });
    let mut bytes = serde_json::to_vec(&v).ok()?;
    bytes.push(b'\n');
    transcope_jsonl::write_atomic(state, &bytes, false).ok()
}

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
//!
//! [`Cursor`] and [`Intent`], the form the store keeps, belong to the store's crate
//! (`transcope-cursor-store`) and are re-exported here; this module adds what the read
//! makes of a cursor: where it resumes ([`Resume::from`]), its file's fingerprint, and
//! whether it still holds ([`still_valid`]).

use std::fs::File;
use std::io;

pub use transcope_cursor_store::cursor::{cursors_dir, load, Cursor, Intent, CURSOR_VERSION};

use crate::scan::Resume;

/// Bytes of the file's head the fingerprint covers.
pub const FINGERPRINT_BYTES: u64 = 4096;

/// Where to resume from a cursor: its offset and line.
impl From<&Cursor> for Resume {
    fn from(c: &Cursor) -> Resume {
        Resume {
            offset: c.offset,
            line: c.line,
        }
    }
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

/// Whether `c` still describes the open transcript `file` (`size_now` bytes): not
/// shorter than the cursor, same head bytes. `known` holds the bytes already read from
/// the file's start; what the fingerprint needs beyond them is read into it, so the
/// format's sniffing after this check reads on from there, never the same bytes again.
pub fn still_valid(c: &Cursor, file: &File, size_now: u64, known: &mut Vec<u8>) -> bool {
    size_now >= c.offset
        && size_now >= c.head_len
        && (c.head_len == 0
            || (read_head_to(file, c.head_len, known).is_ok()
                && head_fingerprint(file, c.head_len, known).is_ok_and(|h| h == c.head_sha256)))
}

/// Reads the open `file`'s head on into `known` (its first `known.len()` bytes) until it
/// holds `len` bytes. A file that shrank below `len` leaves `known` as it was
/// (`UnexpectedEof`).
fn read_head_to(file: &File, len: u64, known: &mut Vec<u8>) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let have = known.len();
    let Ok(len) = usize::try_from(len) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    if have >= len {
        return Ok(());
    }
    known.resize(len, 0);
    let read = file.read_exact_at(&mut known[have..], have as u64);
    if read.is_err() {
        known.truncate(have);
    }
    read
}

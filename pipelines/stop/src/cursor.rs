//! The per-transcript cursor of an incremental Stop.
//!
//! The reference re-reads the whole transcript at every Stop. transcope remembers, per
//! (session, transcript), where the last complete line ended, the file's size, a
//! fingerprint of its first 4 KiB, and the change-detection state (`seen`) at that
//! point, under `<home>/transcope/cursors/`. The next Stop reads only new bytes. A file
//! that shrank, or whose first bytes changed (rewritten or replaced), is read again
//! from the start; the scope log's rules make that safe. Cursors are written tmp →
//! fsync → rename, so a crash leaves the old cursor or the new one, never half.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use transcope_change_detect::Seen;

use crate::scan::Resume;

/// Bytes of the file's head the fingerprint covers.
pub const FINGERPRINT_BYTES: u64 = 4096;

/// The version written in every cursor file.
pub const CURSOR_VERSION: u32 = 1;

/// A saved position in one transcript for one session key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cursor {
    /// Format version.
    pub version: u32,
    /// The scope-log key.
    pub session: String,
    /// The transcript path as given.
    pub path: String,
    /// The adapter that read it.
    pub adapter: String,
    /// Offset of the first unread line.
    pub offset: u64,
    /// Its 1-based line number.
    pub line: u64,
    /// The file's size when the cursor was written.
    pub size: u64,
    /// How many head bytes the fingerprint covers (`min(size, 4096)`).
    pub head_len: u64,
    /// SHA-256 of those bytes, hex.
    pub head_sha256: String,
    /// The change-detection `seen` pair (`{"cwd", "branch"}`), when there was one.
    pub seen: Option<(serde_json::Value, serde_json::Value)>,
    /// The scope log's last `transition_id` when the cursor was written; a log that
    /// has moved on since (session start recorded a launch scope) restarts `seen`.
    pub log_last_transition_id: Option<String>,
}

impl Cursor {
    /// Where to resume.
    pub fn resume(&self) -> Resume {
        Resume {
            offset: self.offset,
            line: self.line,
        }
    }

    /// The saved `seen` pair.
    pub fn seen(&self) -> Option<Seen> {
        self.seen.clone().map(|(cwd, branch)| Seen { cwd, branch })
    }
}

/// `<home>/transcope/cursors`.
pub fn cursors_dir(home: &Path) -> PathBuf {
    home.join("transcope").join("cursors")
}

/// The cursor file of (session, transcript).
pub fn cursor_path(home: &Path, session: &str, transcript: &Path) -> PathBuf {
    let mut h = Sha256::new();
    h.update(session.as_bytes());
    h.update([0]);
    h.update(transcript.as_os_str().as_encoded_bytes());
    let d = h.finalize();
    let name: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    cursors_dir(home).join(format!("{name}.json"))
}

/// SHA-256 (hex) of the first `len` bytes of `file`'s path.
pub fn head_fingerprint(path: &Path, len: u64) -> io::Result<String> {
    // Never blocks: the transcript may have been replaced by a FIFO since it was checked.
    let mut f = match crate::scan::open_regular(path) {
        Ok((f, _)) => f,
        Err(crate::scan::ScanError::Io { source, .. }) => return Err(source),
        Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidInput, e.to_string())),
    };
    let mut buf = Vec::with_capacity(len as usize);
    (&mut f).take(len).read_to_end(&mut buf)?;
    if (buf.len() as u64) < len {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "file shrank"));
    }
    Ok(hex(&Sha256::digest(&buf)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Load the cursor at `path`; a missing, unreadable or foreign-version file is `None`.
pub fn load(path: &Path) -> Option<Cursor> {
    let text = transcope_scopelog::read_private(path).ok()?;
    let c: Cursor = serde_json::from_slice(&text).ok()?;
    (c.version == CURSOR_VERSION).then_some(c)
}

/// Whether `c` still describes the file at `transcript`: not shorter than the cursor,
/// same head bytes.
pub fn still_valid(c: &Cursor, transcript: &Path, size_now: u64) -> bool {
    size_now >= c.offset
        && size_now >= c.head_len
        && head_fingerprint(transcript, c.head_len).is_ok_and(|h| h == c.head_sha256)
}

/// Write `c` to `path` atomically (tmp → fsync → rename), private to the user.
pub fn save(path: &Path, c: &Cursor) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("cursor"),
        std::process::id()
    ));
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&tmp)?;
        let written = serde_json::to_vec(c)
            .map_err(io::Error::other)
            .and_then(|bytes| f.write_all(&bytes))
            .and_then(|()| f.sync_all());
        if let Err(e) = written {
            // A full disk: leave no partial temporary behind.
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
    }
    fs::rename(&tmp, path)
}

//! # transcope-archive: never lose a transcript
//!
//! The agents delete their transcripts (Claude Code, those older than
//! `cleanupPeriodDays`, at its start); the index keeps only what was derived from them.
//! The archive keeps the evidence: every transcript transcope reads, under
//! `<home>/transcope/archive` (or where `TRANSCOPE_ARCHIVE_DIR` says), one **entry**
//! per transcript file:
//!
//! ```text
//! <root>/<h[0..2]>/<h>/path      the original absolute path, as bytes (h = SHA-256 of it)
//! <root>/<h[0..2]>/<h>/g0.zst    generation 0: the file's bytes as zstd frames
//! <root>/<h[0..2]>/<h>/g1.zst    generation 1: the file after it was cut or rewritten
//! <root>/<h[0..2]>/<h>/lock      held while the entry is written
//! ```
//!
//! * **A generation is a zstd stream**: each keep appends the bytes the file gained
//!   since the last one as data frames (4 MiB of the original at most each), each
//!   followed by a *skippable* frame holding its record ([`Record`]: where the bytes
//!   were in the original, SHA-256 of them, the chain hash of the generation so far,
//!   fingerprints of the original's head and of its tail up to there, when). `zstd -d
//!   g0.zst` gives the original bytes back; the records are skipped by any decoder.
//! * **Incremental**: a keep reads the last record (the file's tail), checks that the
//!   original still starts and continues as archived (its size, SHA-256 of its first
//!   and of its last archived 4 KiB), and appends only what is new. An original cut
//!   shorter or rewritten starts a new generation; the old one is kept, never
//!   overwritten.
//! * **Crash safe**: a data frame and its record go in one `write` at the end of the
//!   generation (`O_APPEND`), under the entry's lock; a process killed mid-write leaves
//!   a torn last pair, which the next keep (and [`Archive::verify`]) cuts off — no
//!   earlier frame is ever rewritten.
//! * **Private**: folders `0700`, files `0600`, never opened through a symbolic link.
#![warn(missing_docs)]

mod entry;
mod record;

use std::path::{Path, PathBuf};

pub use entry::{Entry, EntryInfo, Generation, Kept, Problem, Restored};
pub use record::{Record, RECORD_LEN};

/// The environment variable that moves the archive (a folder; e.g. on a mounted share).
pub const DIR_ENV: &str = "TRANSCOPE_ARCHIVE_DIR";

/// The environment variable that turns the archive off (`0`, `off`, `false`, `no`).
pub const SWITCH_ENV: &str = "TRANSCOPE_ARCHIVE";

/// The most original bytes one data frame holds.
pub const FRAME_BYTES: usize = 4 << 20;

/// The zstd level frames are written at (the library's default: fast, and JSONL
/// compresses well at it).
pub const LEVEL: i32 = 3;

/// Why the archive could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// The file system refused.
    #[error("the archive at {}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An entry is damaged where it is not its torn end (a checksum that does not
    /// match, a frame that does not decode): named, never rewritten.
    #[error("the archive entry {} is damaged: {what}", path.display())]
    Damaged {
        /// The generation file.
        path: PathBuf,
        /// What is wrong, and where.
        what: String,
    },
}

pub(crate) fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The archive: a folder of entries.
#[derive(Clone, Debug)]
pub struct Archive {
    root: PathBuf,
}

impl Archive {
    /// The archive at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Archive {
        Archive { root: root.into() }
    }

    /// The archive of `home`, as the environment `var` says: `None` when turned off
    /// ([`SWITCH_ENV`]); at [`DIR_ENV`] when set, else `<home>/transcope/archive`.
    pub fn of_home(home: &Path, var: impl Fn(&str) -> Option<String>) -> Option<Archive> {
        if let Some(v) = var(SWITCH_ENV) {
            if matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "0" | "off" | "false" | "no"
            ) {
                return None;
            }
        }
        Some(Archive::at(
            var(DIR_ENV)
                .filter(|d| !d.trim().is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| default_root(home)),
        ))
    }

    /// Its folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The entry that keeps `original` (it may not exist yet): a relative path is
    /// taken from the current folder, so an entry always names its original whole.
    pub fn entry(&self, original: &Path) -> Entry {
        let whole = std::path::absolute(original).unwrap_or_else(|_| original.to_path_buf());
        Entry::new(&self.root, &whole)
    }

    /// Bring `original`'s entry up to date with the file as it is now (module docs);
    /// `session` names the scope-log key it feeds, when known (kept beside it, for
    /// `--session` and when the original is gone).
    pub fn keep(&self, original: &Path, session: Option<&str>) -> Result<Kept, ArchiveError> {
        let e = self.entry(original);
        let kept = e.keep_file(original)?;
        if let Some(s) = session {
            e.set_session(s)?;
        }
        Ok(kept)
    }

    /// [`Archive::keep`] with the file's bytes as the caller read them whole.
    pub fn keep_bytes(
        &self,
        original: &Path,
        session: Option<&str>,
        bytes: &[u8],
    ) -> Result<Kept, ArchiveError> {
        let e = self.entry(original);
        let kept = e.keep_bytes(original, bytes)?;
        if let Some(s) = session {
            e.set_session(s)?;
        }
        Ok(kept)
    }

    /// Every entry, in the order of their folders' names (not of their paths).
    pub fn entries(&self) -> Result<Vec<Entry>, ArchiveError> {
        let mut out = Vec::new();
        let top = match std::fs::read_dir(&self.root) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io_error(&self.root)(e)),
        };
        let mut shards: Vec<PathBuf> = top
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        shards.sort();
        for shard in shards {
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(&shard)
                .map_err(io_error(&shard))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.join("path").is_file())
                .collect();
            dirs.sort();
            for d in dirs {
                if let Some(e) = Entry::open(d)? {
                    out.push(e);
                }
            }
        }
        Ok(out)
    }
}

/// Where a home's archive is by default.
pub fn default_root(home: &Path) -> PathBuf {
    home.join("transcope").join("archive")
}

//! The two guards of a **guessed** record path (identity.md §5): [`belongs_to_session`] (does
//! any record name this session?) and [`belongs_to_tree`] (was any record written in this
//! tree?). Both are containment rules over every line (up to
//! [`MAX_RECORD_BYTES`](crate::transcript::MAX_RECORD_BYTES) each) and allow what they cannot
//! judge: a missing or unreadable file, or one whose records never carry the field.
//!
//! A refusal is [`TranscriptError::WrongSession`] / [`TranscriptError::WrongTree`], naming the
//! **first** disagreeing value.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crate::claudepath::resolve_work_dir;
use crate::gopath;
use crate::transcript::{scan_lines, Entry, TranscriptError};

/// Whether `line` could hold `needle` as a JSON string (it holds it literally, or an escape).
fn could_hold(line: &[u8], needle: &[u8]) -> bool {
    memchr::memchr(b'\\', line).is_some() || memchr::memmem::find(line, needle).is_some()
}

/// What one line tells a containment rule.
enum Says {
    /// Nothing: not a record, or one without the field.
    Nothing,
    /// The record agrees: the file belongs.
    Agrees,
    /// The record gives another value.
    Other(String),
}

/// The containment rule both guards are: the first value a record gives that disagrees, or
/// `None` when some record agrees, none gives a value, or the file cannot be read to the
/// end. `judge` is told whether a disagreement is already known (then only agreement
/// matters).
fn first_disagreement(path: &Path, mut judge: impl FnMut(&[u8], bool) -> Says) -> Option<String> {
    let mut first: Option<String> = None;
    let mut agreed = false;
    let scanned = scan_lines(path, |line| match judge(line, first.is_some()) {
        Says::Nothing => ControlFlow::Continue(()),
        Says::Agrees => {
            agreed = true;
            ControlFlow::Break(())
        }
        Says::Other(value) => {
            first.get_or_insert(value);
            ControlFlow::Continue(())
        }
    });
    if scanned.is_err() || agreed {
        None
    } else {
        first
    }
}

/// `transcript.BelongsToSession`: `Ok` when `session_id` is empty, when some record's
/// `sessionId` equals it (first, middle or last), when no record carries a `sessionId`, or when
/// the file cannot be read (missing, denied, an oversized line before agreement).
///
/// # Errors
/// [`TranscriptError::WrongSession`] naming the first disagreeing id when records name other
/// sessions and never this one.
pub fn belongs_to_session(path: &Path, session_id: &str) -> Result<(), TranscriptError> {
    if session_id.is_empty() {
        return Ok(());
    }
    let exact = !session_id.contains('\u{FFFD}');
    let found = first_disagreement(path, |line, known| {
        // Once a disagreeing id is known, only agreement matters.
        if exact && known && !could_hold(line, session_id.as_bytes()) {
            return Says::Nothing;
        }
        match Entry::parse(line) {
            Some(entry) if entry.session_id.is_empty() => Says::Nothing,
            Some(entry) if entry.session_id == session_id => Says::Agrees,
            Some(entry) => Says::Other(entry.session_id),
            None => Says::Nothing,
        }
    });
    match found {
        None => Ok(()),
        Some(found) => Err(TranscriptError::WrongSession {
            path: path.to_path_buf(),
            found,
            wanted: session_id.to_owned(),
        }),
    }
}

/// `transcript.BelongsToTree`: `Ok` when `cwd` is empty, when some record's `cwd` resolves
/// ([`resolve_work_dir`]) to `cwd`'s resolution or beneath it (component-wise: `/a/b` matches
/// `/a/b/x`, not `/a/bc`), when no record names a cwd, or when the file cannot be read.
/// Literal resolved paths are compared, never encodings.
///
/// # Errors
/// [`TranscriptError::WrongTree`] naming the first recorded cwd (as written) when every
/// recorded cwd lies outside the tree.
pub fn belongs_to_tree(path: &Path, cwd: &Path) -> Result<(), TranscriptError> {
    if cwd.as_os_str().is_empty() {
        return Ok(());
    }
    let want = gopath::bytes(&resolve_work_dir(cwd)).into_owned();
    let mut want_dir = want.clone();
    want_dir.push(b'/');
    let mut judged: HashMap<String, bool> = HashMap::new();
    let found = first_disagreement(path, |line, _| {
        let Some(entry) = Entry::parse(line) else {
            return Says::Nothing;
        };
        if entry.cwd.is_empty() {
            return Says::Nothing;
        }
        let inside = *judged.entry(entry.cwd.clone()).or_insert_with(|| {
            let r = resolve_work_dir(&PathBuf::from(&entry.cwd));
            let r = gopath::bytes(&r);
            *r == *want || r.starts_with(&want_dir)
        });
        if inside {
            Says::Agrees
        } else {
            Says::Other(entry.cwd)
        }
    });
    match found {
        None => Ok(()),
        Some(recorded) => Err(TranscriptError::WrongTree {
            path: path.to_path_buf(),
            recorded,
            cwd: cwd.to_string_lossy().into_owned(),
        }),
    }
}

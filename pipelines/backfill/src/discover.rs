//! Finding archived transcripts and the scope-log key of each (cli.md, Batch).
//!
//! | layout | key |
//! | --- | --- |
//! | Claude root session `<projects>/<dir>/<sid>.jsonl` (inline sidechains included) | `<sid>` (the file stem) |
//! | Claude sub-agent `<sid>/subagents/**/agent-<aid>.jsonl` (workflows nested) | `<sid>.<aid>` |
//! | Claude flat sub-agent `<dir>/agent-<aid>.jsonl` | `<sessionId inside>.<aid>` |
//! | Codex rollout (envelope) | its `session_meta` id, else the UUID in the file name |
//! | Codex legacy file | its header `id`, else the UUID in the file name |

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;
use transcope_core::session::is_valid_session_id;

/// One transcript to process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The file.
    pub path: PathBuf,
    /// Its size when discovered.
    pub size: u64,
    /// Its modification time (seconds since the epoch), for the mmap policy.
    pub modified: u64,
}

/// A file or folder that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The path.
    pub path: PathBuf,
    /// Why.
    pub reason: String,
}

/// Every `*.jsonl` file under `paths` (a path may also be a single file), sorted.
/// Symbolic links to folders are not followed (no loops); unreadable folders are
/// reported and skipped. [`walk`] collected.
pub fn discover(paths: &[PathBuf]) -> (Vec<Job>, Vec<Problem>) {
    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    for item in walk(paths) {
        match item {
            Ok(j) => jobs.push(j),
            Err(p) => problems.push(p),
        }
    }
    (jobs, problems)
}

/// The transcripts under `paths`, one at a time in path order, each once: a streaming
/// [`discover`]. Memory is the folders being listed (each one's entries, sorted), not
/// the archive: a backfill of any size holds no list of its files.
///
/// A path inside (or equal to) a folder given before it in path order is skipped (its
/// files are that folder's); a path that cannot be read is one `Err`.
pub fn walk(paths: &[PathBuf]) -> Walk {
    let mut roots = paths.to_vec();
    roots.sort();
    roots.dedup();
    Walk {
        roots: roots.into_iter(),
        folders: Vec::new(),
        stack: Vec::new(),
    }
}

/// The iterator of [`walk`].
pub struct Walk {
    roots: std::vec::IntoIter<PathBuf>,
    /// The folders given as roots so far (later roots inside them are skipped).
    folders: Vec<PathBuf>,
    /// The listings being walked, outermost first; each yields in name order.
    stack: Vec<std::vec::IntoIter<Listed>>,
}

/// A folder entry worth yielding or entering.
enum Listed {
    Folder(PathBuf),
    Transcript(PathBuf),
}

/// A folder's sub-folders and `*.jsonl` files, by name (so a depth-first walk yields
/// paths in sorted order), or why it cannot be listed.
fn list(dir: &Path) -> Result<Vec<Listed>, Problem> {
    let entries = fs::read_dir(dir).map_err(|e| Problem {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            out.push(Listed::Folder(p));
        } else if ft.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
            out.push(Listed::Transcript(p));
        }
    }
    out.sort_by_cached_key(|l| match l {
        Listed::Folder(p) | Listed::Transcript(p) => p.file_name().map(|n| n.to_owned()),
    });
    Ok(out)
}

impl Iterator for Walk {
    type Item = Result<Job, Problem>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(top) = self.stack.last_mut() {
                match top.next() {
                    Some(Listed::Folder(p)) => match list(&p) {
                        Ok(entries) => self.stack.push(entries.into_iter()),
                        Err(problem) => return Some(Err(problem)),
                    },
                    Some(Listed::Transcript(p)) => {
                        // Gone or changed since listed: skipped, as a listing race.
                        if let Ok(m) = fs::metadata(&p) {
                            return Some(Ok(job(p, &m)));
                        }
                    }
                    None => {
                        self.stack.pop();
                    }
                }
                continue;
            }
            let root = self.roots.next()?;
            if self.folders.iter().any(|f| root.starts_with(f)) {
                continue;
            }
            match fs::metadata(&root) {
                Ok(m) if m.is_file() => return Some(Ok(job(root, &m))),
                Ok(_) => match list(&root) {
                    Ok(entries) => {
                        self.stack.push(entries.into_iter());
                        self.folders.push(root);
                    }
                    Err(problem) => return Some(Err(problem)),
                },
                Err(e) => {
                    return Some(Err(Problem {
                        path: root,
                        reason: e.to_string(),
                    }))
                }
            }
        }
    }
}

fn job(path: PathBuf, m: &fs::Metadata) -> Job {
    let modified = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    Job {
        path,
        size: m.len(),
        modified,
    }
}

/// The first line within the file's first 1 MiB that is a JSON object, parsed.
fn first_object(path: &Path) -> Option<serde_json::Map<String, Value>> {
    find_line(path, 1024 * 1024, |l| {
        let l = l.trim_ascii();
        if l.is_empty() {
            return None;
        }
        match serde_json::from_slice::<Value>(l) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        }
    })
}

/// The first string value of `key` on any line within the file's first 4 MiB.
fn first_field(path: &Path, key: &str) -> Option<String> {
    find_line(path, 4 * 1024 * 1024, |l| {
        let v: Value = serde_json::from_slice(l.trim_ascii()).ok()?;
        v.get(key)?.as_str().map(str::to_owned)
    })
}

/// The first `Some` that `f` gives for the lines (without their `\n`; the last may be
/// cut short) of the file's first `limit` bytes. The file is read only as far as the
/// line that answers: the key of a transcript is on its first line, and reading the
/// whole head of every file was a second pass over most of a corpus.
fn find_line<T>(path: &Path, limit: u64, mut f: impl FnMut(&[u8]) -> Option<T>) -> Option<T> {
    let file = fs::File::open(path).ok()?;
    let mut reader = BufReader::with_capacity(16 * 1024, file.take(limit));
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let l = line.strip_suffix(b"\n").unwrap_or(&line);
        if let Some(found) = f(l) {
            return Some(found);
        }
    }
}

/// A UUID (8-4-4-4-12 hex) at the end of a file stem.
fn trailing_uuid(stem: &str) -> Option<&str> {
    let tail = stem.get(stem.len().checked_sub(36)?..)?;
    let ok = tail.bytes().enumerate().all(|(i, b)| match i {
        8 | 13 | 18 | 23 => b == b'-',
        _ => b.is_ascii_hexdigit(),
    });
    ok.then_some(tail)
}

const CODEX_TYPES: [&str; 4] = ["session_meta", "response_item", "event_msg", "turn_context"];

/// The scope-log key of `path`, or why there is none.
pub fn scope_key(path: &Path) -> Result<String, String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("file name is not UTF-8")?;
    let first = first_object(path);
    let first_type = first
        .as_ref()
        .and_then(|m| m.get("type"))
        .and_then(Value::as_str);
    let key = if let Some(aid) = stem.strip_prefix("agent-") {
        // A sub-agent: <sid>/subagents/**/agent-<aid>.jsonl, or flat.
        let components: Vec<&str> = path.iter().filter_map(|c| c.to_str()).collect();
        let sid = match components.iter().rposition(|c| *c == "subagents") {
            Some(i) if i >= 1 => components[i - 1].to_owned(),
            _ => first_field(path, "sessionId").ok_or("sub-agent transcript names no sessionId")?,
        };
        format!("{sid}.{aid}")
    } else if first_type.is_some_and(|t| CODEX_TYPES.contains(&t)) {
        let meta_id = first
            .as_ref()
            .filter(|_| first_type == Some("session_meta"))
            .and_then(|m| m.get("payload"))
            .and_then(|p| p.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        meta_id
            .or_else(|| trailing_uuid(stem).map(str::to_owned))
            .ok_or("Codex rollout has no session_meta id and no UUID in its name")?
    } else if stem.starts_with("rollout-")
        || first.as_ref().is_some_and(|m| {
            m.contains_key("id")
                && !m.contains_key("payload")
                && !m.contains_key("sessionId")
                && !m.contains_key("type")
        })
    {
        // Legacy Codex: a bare header {id, timestamp, …}.
        first
            .as_ref()
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| trailing_uuid(stem).map(str::to_owned))
            .ok_or("legacy Codex file has no id")?
    } else {
        stem.to_owned()
    };
    if is_valid_session_id(&key) {
        Ok(key)
    } else {
        Err(format!("{key:?} is not a valid scope-log key"))
    }
}

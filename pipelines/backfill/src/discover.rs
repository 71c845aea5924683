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
/// reported and skipped.
pub fn discover(paths: &[PathBuf]) -> (Vec<Job>, Vec<Problem>) {
    let mut jobs = Vec::new();
    let mut problems = Vec::new();
    for root in paths {
        let meta = match fs::metadata(root) {
            Ok(m) => m,
            Err(e) => {
                problems.push(Problem {
                    path: root.clone(),
                    reason: e.to_string(),
                });
                continue;
            }
        };
        if meta.is_file() {
            jobs.push(job(root.clone(), &meta));
            continue;
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) => {
                    problems.push(Problem {
                        path: dir,
                        reason: e.to_string(),
                    });
                    continue;
                }
            };
            for e in entries.flatten() {
                let p = e.path();
                let Ok(ft) = e.file_type() else { continue };
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
                    if let Ok(m) = e.metadata() {
                        jobs.push(job(p, &m));
                    }
                }
            }
        }
    }
    jobs.sort_by(|a, b| a.path.cmp(&b.path));
    jobs.dedup_by(|a, b| a.path == b.path);
    (jobs, problems)
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

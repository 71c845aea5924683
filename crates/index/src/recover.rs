//! What `index rebuild` needs that the index itself may no longer say: the
//! transcripts it was fed and the ledger's delivery states, read from whatever is left
//! of an old index and from records kept beside it.
//!
//! * [`salvage`]: the sessions' transcripts and the ledger's states, read-only, as far
//!   as the old file can be read (never through a link);
//! * the **states journal** (`<index folder>/index-states.jsonl`): every delivery state
//!   [`Index::set_states`](crate::Index::set_states) commits is appended there too, one
//!   JSON line `{"key", "state"}` (last line wins), so a state outlives the index;
//! * [`outbox_keys`]: the idempotency keys of the markers waiting in the brain-writer
//!   outbox (and its `-backlog` sibling, and those a drain quarantined as `.bad`);
//! * the **backfill roots** (`<home>/transcope/backfill-roots`): each folder or file a
//!   backfill was named, with the folder it was named from (a relative path means what
//!   it meant there), so a rebuild walks it again.

use std::fs;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use crate::State;

/// What could be read of an old index.
#[derive(Debug, Default)]
pub struct Salvage {
    /// The ledger's keys with their states, in the order found.
    pub states: Vec<(String, State)>,
    /// The sessions' transcripts, as recorded.
    pub transcripts: Vec<PathBuf>,
    /// Whether both were read to their end.
    pub whole: bool,
    /// What each export sink acknowledged (`transcope export otlp`), by sink: carried
    /// into the new index, so a rebuild sends no receiver a row twice. Read as far as
    /// it can be (an index older than schema 11 has none).
    pub exported: std::collections::BTreeMap<String, crate::Acknowledged>,
}

/// Read what can be read of the index at `path`, read-only: nothing when it is not a
/// regular file starting with SQLite's header (a link is never followed); else the
/// rows up to the first that fails.
pub fn salvage(path: &Path) -> Salvage {
    let mut out = Salvage::default();
    if !matches!(transcope_sqlite::inspect(path), Ok(true)) {
        return out;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let Ok(conn) = Connection::open_with_flags(path, flags) else {
        return out;
    };
    let states = rows(
        &conn,
        "SELECT idempotency_key, state FROM markers ORDER BY rowid",
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)),
        &mut out.states,
        |(k, s)| State::parse(&s).map(|s| (k, s)),
    );
    let transcripts = rows(
        &conn,
        "SELECT transcript FROM sessions WHERE transcript IS NOT NULL",
        |r| r.get::<_, String>(0),
        &mut out.transcripts,
        |t| Some(PathBuf::from(t)),
    );
    out.whole = states && transcripts;
    let mut requests = Vec::new();
    rows(
        &conn,
        "SELECT sink, key, c0, c1, c2, c3, c4, c5 FROM export_requests",
        |r| {
            let mut counts = [0i64; 6];
            for (i, c) in counts.iter_mut().enumerate() {
                *c = r.get(2 + i)?;
            }
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?, counts))
        },
        &mut requests,
        Some,
    );
    for (sink, key, counts) in requests {
        out.exported
            .entry(sink)
            .or_default()
            .requests
            .push((key, counts));
    }
    let mut markers = Vec::new();
    rows(
        &conn,
        "SELECT sink, key FROM export_sent WHERE kind = 2",
        |r| Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?)),
        &mut markers,
        |(sink, key)| Some((sink, String::from_utf8(key).ok()?)),
    );
    for (sink, key) in markers {
        out.exported.entry(sink).or_default().markers.push(key);
    }
    let mut logs = Vec::new();
    rows(
        &conn,
        "SELECT sink, session, next_seq FROM export_logs",
        |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        },
        &mut logs,
        Some,
    );
    for (sink, session, next) in logs {
        out.exported
            .entry(sink)
            .or_default()
            .logs
            .push((session, next));
    }
    out
}

/// Push each row of `sql` (mapped by `get`, then `keep`) into `out` until one fails;
/// whether all were read.
fn rows<T, U>(
    conn: &Connection,
    sql: &str,
    get: impl Fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    out: &mut Vec<U>,
    keep: impl Fn(T) -> Option<U>,
) -> bool {
    let Ok(mut st) = conn.prepare(sql) else {
        return false;
    };
    let Ok(mut rows) = st.query([]) else {
        return false;
    };
    loop {
        match rows.next() {
            Ok(Some(r)) => match get(r) {
                Ok(v) => out.extend(keep(v)),
                Err(_) => return false,
            },
            Ok(None) => return true,
            Err(_) => return false,
        }
    }
}

/// The states journal beside the index at `index`.
pub fn states_journal(index: &Path) -> PathBuf {
    index
        .parent()
        .unwrap_or(Path::new("."))
        .join("index-states.jsonl")
}

fn journal_line(out: &mut Vec<u8>, key: &str, state: State) {
    let v = serde_json::json!({"key": key, "state": state.as_str()});
    out.extend_from_slice(v.to_string().as_bytes());
    out.push(b'\n');
}

/// Append `changes` to the states journal of `index`: one write of whole lines,
/// private, never through a link.
pub(crate) fn journal_states(
    index: &Path,
    changes: &[(String, State, Option<String>)],
) -> io::Result<()> {
    let mut text = Vec::new();
    for (k, s, _) in changes {
        journal_line(&mut text, k, *s);
    }
    if text.is_empty() {
        return Ok(());
    }
    append_private(&states_journal(index), &text)
}

/// Append `bytes` to the file at `path` in one write (created `0600` in a private
/// folder, never through a link).
fn append_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = transcope_jsonl::in_private_dir(path.parent().unwrap_or(Path::new(".")), || {
        fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
    })?;
    f.write_all(bytes)
}

/// The states the journal of `index` records: each key's last (a line that cannot be
/// read is passed over).
pub fn journaled_states(index: &Path) -> rustc_hash::FxHashMap<String, State> {
    let mut out = rustc_hash::FxHashMap::default();
    let Ok(bytes) = read_private(&states_journal(index)) else {
        return out;
    };
    for line in bytes.split(|b| *b == b'\n') {
        let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let key = m.get("key").and_then(Value::as_str);
        let state = m
            .get("state")
            .and_then(Value::as_str)
            .and_then(State::parse);
        if let (Some(k), Some(s)) = (key, state) {
            out.insert(k.to_owned(), s);
        }
    }
    out
}

/// Replace the states journal of `index` by one line per non-pending state of
/// `states` (after a rebuild: the ledger's states as they now are).
pub fn rewrite_journal(index: &Path, states: &[(String, State)]) -> io::Result<()> {
    let mut text = Vec::new();
    for (k, s) in states.iter().filter(|(_, s)| *s != State::Pending) {
        journal_line(&mut text, k, *s);
    }
    transcope_jsonl::write_atomic(&states_journal(index), &text, true)
}

/// A regular file's bytes, not through a link.
fn read_private(path: &Path) -> io::Result<Vec<u8>> {
    let mut f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !f.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut out = Vec::new();
    io::Read::read_to_end(&mut f, &mut out)?;
    Ok(out)
}

/// The largest outbox file read for its key (an outbox file is one marker).
const OUTBOX_FILE_MAX: u64 = 4 << 20;

/// The idempotency keys of the marker files in the outbox `dir` and its `-backlog`
/// sibling (waiting, or quarantined by a drain as `.bad`): regular files only.
pub fn outbox_keys(dir: &Path) -> rustc_hash::FxHashSet<String> {
    let mut out = rustc_hash::FxHashSet::default();
    let mut backlog = dir.as_os_str().to_owned();
    backlog.push("-backlog");
    for d in [dir.to_path_buf(), PathBuf::from(backlog)] {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.as_bytes();
            if name.starts_with(b".") || !(name.ends_with(b".json") || name.ends_with(b".json.bad"))
            {
                continue;
            }
            if !e.file_type().is_ok_and(|t| t.is_file())
                || e.metadata().map_or(true, |m| m.len() > OUTBOX_FILE_MAX)
            {
                continue;
            }
            let Ok(bytes) = read_private(&e.path()) else {
                continue;
            };
            if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&bytes) {
                if let Some(k) = m.get("idempotency_key").and_then(Value::as_str) {
                    out.insert(k.to_owned());
                }
            }
        }
    }
    out
}

/// `<home>/transcope/backfill-roots`: one line per path a backfill was named, `<the
/// folder it was named from>\0<the path as given>`, bytes as they are.
pub fn roots_file(home: &Path) -> PathBuf {
    home.join("transcope").join("backfill-roots")
}

/// Every path a backfill was named, with the folder it was named from, in the order
/// first named.
pub fn recorded_roots(home: &Path) -> Vec<(PathBuf, PathBuf)> {
    let Ok(bytes) = read_private(&roots_file(home)) else {
        return Vec::new();
    };
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let at = line.iter().position(|b| *b == 0)?;
            let (cwd, given) = (&line[..at], &line[at + 1..]);
            (!given.is_empty()).then(|| {
                (
                    PathBuf::from(std::ffi::OsStr::from_bytes(cwd)),
                    PathBuf::from(std::ffi::OsStr::from_bytes(given)),
                )
            })
        })
        .collect()
}

/// Add `paths`, named from `cwd`, to the backfill roots (those not there yet; a path
/// holding a newline or a NUL cannot be kept in a line and is left out: its
/// transcripts' cursors still name them).
pub fn record_roots(home: &Path, cwd: &Path, paths: &[PathBuf]) -> io::Result<()> {
    let known = recorded_roots(home);
    let mut text = Vec::new();
    let mut added: Vec<&Path> = Vec::new();
    for p in paths {
        let (c, g) = (cwd.as_os_str().as_bytes(), p.as_os_str().as_bytes());
        let cwd_matters = p.is_relative();
        let fits = |b: &[u8]| !b.contains(&b'\n') && !b.contains(&0);
        if g.is_empty() || !fits(g) || !fits(c) {
            continue;
        }
        let same = |(kc, kg): (&Path, &Path)| kg == p && (!cwd_matters || kc == cwd);
        if known.iter().any(|(kc, kg)| same((kc, kg))) || added.contains(&p.as_path()) {
            continue;
        }
        added.push(p);
        text.extend_from_slice(c);
        text.push(0);
        text.extend_from_slice(g);
        text.push(b'\n');
    }
    if text.is_empty() {
        return Ok(());
    }
    append_private(&roots_file(home), &text)
}

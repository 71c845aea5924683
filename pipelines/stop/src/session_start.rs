//! Session start (`record_session`, scope-log.md §3.1): the launch scope and the
//! session index row.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use serde_json::{Map, Value};
use transcope_change_detect::{scope_enabled, Env};
use transcope_core::{py, Instant, Scope};
use transcope_identity::ProjectIdentity;
use transcope_scopelog::lockfile::{self, open_sidecar, NotLocked};
use transcope_scopelog::{rows_from_bytes, LockWait, RecordError, ScopeLog};

/// How long session start waits for the session index's lock before giving up.
pub const INDEX_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub use transcope_scopelog::index::{index_path, lookup};

/// What session start did.
#[derive(Debug, Default)]
pub struct SessionStartReport {
    /// The launch transition was written.
    pub recorded: bool,
    /// An index row was appended.
    pub indexed: bool,
    /// Errors swallowed (session start is never blocked), for stderr.
    pub errors: Vec<String>,
}

/// The launch scope: identity attributes (or a lone empty `cwd`), then branch, swarm,
/// task and lane from `env`. `task_revision` is never set by live code.
pub fn launch_scope(identity: Option<&ProjectIdentity>, branch: &str, env: &Env) -> Scope {
    // Without an identity the reference's mapping has `cwd: None`, which normalises to "".
    transcope_change_detect::scope_of(identity, "", branch, env)
}

/// `record_session(session_id, identity)`. `live_branch` answers
/// `git rev-parse --abbrev-ref HEAD` for a folder (injected for tests); `now` is the
/// UTC instant stamped on the launch transition and the index row.
pub fn record_session(
    home: &Path,
    log: &ScopeLog,
    identity: Option<&ProjectIdentity>,
    env: &Env,
    now: Instant,
    live_branch: &mut dyn FnMut(&Path) -> String,
) -> SessionStartReport {
    let mut report = SessionStartReport::default();
    if log.session().is_empty() {
        return report;
    }
    if scope_enabled(env) {
        let branch = match identity.filter(|i| !i.cwd.is_empty()) {
            Some(i) => live_branch(Path::new(&i.cwd)),
            None => String::new(),
        };
        let scope = launch_scope(identity, &branch, env);
        match log.record(&scope, &now.to_python_isoformat(), None) {
            Ok(Some(_)) => report.recorded = true,
            Ok(None) => {}
            Err(RecordError::Refused(r)) => report.errors.push(format!("launch scope: {r}")),
            Err(e) => {
                report.errors.push(format!("launch scope: {e}"));
                if matches!(e, RecordError::Io { .. }) {
                    // A write refused before its first byte leaves no empty log.
                    let _ = log.remove_if_empty();
                }
            }
        }
    }
    if let Some(id) = identity {
        match update_index(home, log.session(), id, now) {
            Ok(indexed) => report.indexed = indexed,
            Err(e) => report.errors.push(format!("session index: {e}")),
        }
    }
    report
}

fn unlockable(why: String) -> io::Error {
    io::Error::other(format!(
        "the session index cannot be locked (its .lock file: {why}); nothing written"
    ))
}

/// Append the index row unless the session's last row already says the same.
fn update_index(
    home: &Path,
    session: &str,
    id: &ProjectIdentity,
    now: Instant,
) -> io::Result<bool> {
    let path = index_path(home);
    if let Some(dir) = path.parent() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    // Never block the agent: wait for another writer at most INDEX_LOCK_WAIT. Never
    // write without the lock either (a sidecar that is a symbolic link, a folder or a
    // FIFO, or no flock): concurrent session starts would interleave.
    let _lock = match open_sidecar(&path)
        .map(|f| lockfile::lock(f, LockWait::AtMost(INDEX_LOCK_WAIT)))
    {
        Ok(Ok(held)) => held,
        Ok(Err(NotLocked::TimedOut(limit))) => {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("the session index is locked by another process (gave up after {limit:?})"),
            ));
        }
        Ok(Err(e)) => return Err(unlockable(e.to_string())),
        Err(e) => return Err(unlockable(e.to_string())),
    };
    let bytes = match transcope_scopelog::read_private(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let mut candidate = Map::new();
    candidate.insert("session_id".into(), Value::String(session.into()));
    for key in ["project", "repo", "worktree", "cwd", "remote", "project_id"] {
        let v = id
            .attributes()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default();
        candidate.insert(key.into(), Value::String(v));
    }
    let last = rows_from_bytes(&bytes)
        .into_iter()
        .rev()
        .find(|r| r.get("session_id").and_then(Value::as_str) == Some(session));
    if let Some(last) = last {
        if candidate.iter().all(|(k, v)| last.get(k) == Some(v)) {
            return Ok(false);
        }
    }
    candidate.insert(
        "started_at".into(),
        Value::String(now.to_python_isoformat()),
    );
    let mut line = String::new();
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        line.push('\n');
    }
    line.push_str(&py::dumps(&Value::Object(candidate)));
    line.push('\n');
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)?;
    f.write_all(line.as_bytes())?;
    Ok(true)
}

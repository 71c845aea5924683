//! The session index (`<home>/brain/project-sessions.jsonl`, scope-log.md §3.1): one
//! row per session start with the launch identity. Session start appends rows; the
//! brain writer reads a session's last row as the marker's preceding identity.

use std::path::{Path, PathBuf};

use serde_json::Value;
use transcope_core::py;

use crate::rows_from_bytes;

/// `<home>/brain/project-sessions.jsonl`.
pub fn index_path(home: &Path) -> PathBuf {
    home.join("brain").join("project-sessions.jsonl")
}

/// `lookup(session_id)`: the identity of the session's last index row (scope-log.md
/// §3.1), `project_id` `"unknown"` when missing or empty. The reference's fallback
/// search of Claude's projects folder is not ported; the caller falls back to the
/// folder's own identity.
pub fn lookup(home: &Path, session: &str) -> Option<[(&'static str, String); 6]> {
    let bytes = crate::read_private(&index_path(home)).ok()?;
    let row = rows_from_bytes(&bytes)
        .into_iter()
        .rev()
        .find(|r| r.get("session_id").and_then(Value::as_str) == Some(session))?;
    let get = |k: &str| {
        row.get(k)
            .filter(|v| py::truthy(v))
            .map(py::str_of)
            .unwrap_or_default()
    };
    let pid = get("project_id");
    Some([
        ("project", get("project")),
        ("repo", get("repo")),
        ("worktree", get("worktree")),
        ("cwd", get("cwd")),
        ("remote", get("remote")),
        (
            "project_id",
            if pid.is_empty() {
                "unknown".into()
            } else {
                pid
            },
        ),
    ])
}

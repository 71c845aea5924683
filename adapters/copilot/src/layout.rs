//! Where GitHub Copilot CLI keeps its sessions, and which session wrote each file.
//!
//! ```text
//! $COPILOT_HOME, else ~/.copilot
//! └── session-state/
//!     ├── <sessionId>/events.jsonl     a session (current builds)        → <sessionId>
//!     │   (+ workspace.yaml, plan.md, checkpoints/, files/: not transcripts)
//!     └── <sessionId>.jsonl            a session (the earlier flat layout) → <sessionId>
//! ```
//!
//! A file is this agent's by its place alone ([`place`]): `events.jsonl` one folder
//! below a `session-state` folder, or a dot-free `<id>.jsonl` directly in one. No other
//! agent writes a `session-state` folder. Sub-agents write into their parent's file
//! (their events carry `agentId`), so a key has no parent.
//!
//! A hook's payload names the session by its id alone (`sessionId`, no transcript
//! path): [`CopilotLayout::session_file`] finds `<id>/events.jsonl`, else `<id>.jsonl`,
//! and takes it only when its `session.start` names that id ([`started_as`]).
//!
//! ```
//! use std::path::Path;
//! use transcope_adapter_copilot::layout::CopilotLayout;
//! use transcope_core::adapter::{Confidence, Layout};
//!
//! let l = CopilotLayout;
//! let p = Path::new("/h/.copilot/session-state/5f1c/events.jsonl");
//! assert_eq!(l.scope_key(p), Some((Confidence::Certain, Ok("5f1c".to_string()))));
//! assert!(l.claims(Path::new("/h/.copilot/session-state/5f1c.jsonl")));
//! assert!(!l.claims(Path::new("/h/.copilot/session-state/5f1c/other.jsonl")));
//! assert!(!l.claims(Path::new("/h/.claude/projects/-w/5f1c.jsonl")));
//! ```

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use transcope_adapter_common::head::checked_key;
use transcope_core::adapter::{Confidence, Layout};
use transcope_core::head::Head;

use crate::agent::HOME;

/// The folder under Copilot's home that holds the sessions.
pub const SESSIONS: &str = "session-state";

/// The `n`-th folder above `path` (1: the folder holding it), by name.
fn above(path: &Path, n: usize) -> Option<&str> {
    path.ancestors().nth(n)?.file_name()?.to_str()
}

/// The session id of `path` when it sits where Copilot CLI writes a session (by name
/// and place alone: no read), else `None`.
pub fn place(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    if name == "events.jsonl" && above(path, 2) == Some(SESSIONS) {
        let id = above(path, 1)?;
        return (!id.is_empty()).then(|| id.to_owned());
    }
    let stem = name.strip_suffix(".jsonl")?;
    (above(path, 1) == Some(SESSIONS) && !stem.is_empty() && !stem.contains('.'))
        .then(|| stem.to_owned())
}

/// How much of a file's start [`started_as`] reads for its `session.start` (the
/// event is the file's first; a few lines of slack for what an older build wrote
/// before it).
const START_WITHIN: u64 = 1 << 20;

/// The `sessionId` the file's `session.start` event names (looked for among its
/// first lines, 1 MiB at most); `None` when it has none there (not
/// written yet) or the file cannot be read.
pub fn started_as(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let reader = BufReader::new(file.take(START_WITHIN));
    reader
        .split(b'\n')
        .take(16)
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_slice::<serde_json::Value>(&line).ok())
        .find(|v| v.get("type").and_then(|t| t.as_str()) == Some("session.start"))
        .and_then(|v| {
            v.pointer("/data/sessionId")
                .and_then(|id| id.as_str())
                .map(str::to_owned)
        })
}

/// Copilot CLI's on-disk [`Layout`] (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct CopilotLayout;

impl Layout for CopilotLayout {
    /// `<home>/session-state` ([`HOME`]).
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        vec![HOME.resolve(lookup, home).join(SESSIONS)]
    }

    fn claims(&self, path: &Path) -> bool {
        place(path).is_some()
    }

    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        let id = place(head.path())?;
        Some((Confidence::Certain, checked_key(id)))
    }

    /// `<root>/<id>/events.jsonl`, else `<root>/<id>.jsonl` (the flat layout), taken
    /// when its `session.start` names `id`; refused when it names another session. A
    /// file with no `session.start` yet is none.
    fn session_file(&self, root: &Path, id: &str) -> Result<Option<PathBuf>, String> {
        let id = checked_key(id.to_owned())?;
        for path in [
            root.join(&id).join("events.jsonl"),
            root.join(format!("{id}.jsonl")),
        ] {
            if !path.is_file() {
                continue;
            }
            match started_as(&path) {
                Some(named) if named == id => return Ok(Some(path)),
                Some(named) => {
                    return Err(format!(
                        "{} starts session {named:?}, not {id:?}",
                        path.display()
                    ))
                }
                None => continue,
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(id: &str) -> String {
        format!(
            "{{\"type\":\"session.start\",\"data\":{{\"sessionId\":\"{id}\"}},\"id\":\"e1\"}}\n"
        )
    }

    /// A hook's session id finds the file of either layout only when the file's
    /// `session.start` names it; a file naming another session is refused, one with
    /// no `session.start` yet is none, and a non-id finds nothing.
    #[test]
    fn a_session_file_is_taken_only_when_it_starts_that_session() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let l = CopilotLayout;
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/events.jsonl"), start("a")).unwrap();
        std::fs::write(root.join("b.jsonl"), start("b")).unwrap();
        std::fs::create_dir_all(root.join("c")).unwrap();
        std::fs::write(root.join("c/events.jsonl"), start("a")).unwrap();
        std::fs::write(root.join("d.jsonl"), "").unwrap();
        assert_eq!(
            l.session_file(root, "a"),
            Ok(Some(root.join("a/events.jsonl")))
        );
        assert_eq!(l.session_file(root, "b"), Ok(Some(root.join("b.jsonl"))));
        let refused = l.session_file(root, "c").unwrap_err();
        assert!(
            refused.contains(r#"starts session "a", not "c""#),
            "{refused}"
        );
        assert_eq!(l.session_file(root, "d"), Ok(None));
        assert_eq!(l.session_file(root, "e"), Ok(None));
        assert!(l.session_file(root, "../a").is_err());
    }
}

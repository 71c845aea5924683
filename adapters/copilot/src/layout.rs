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
}

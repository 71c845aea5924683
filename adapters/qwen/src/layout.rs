//! Where Qwen Code keeps its sessions, and which session wrote each file.
//!
//! ```text
//! $QWEN_RUNTIME_DIR, else $QWEN_HOME, else ~/.qwen
//! └── projects/
//!     └── <sanitised project folder>/         every character outside [A-Za-z0-9] → "-"
//!         ├── chats/<sessionId>.jsonl          a session                      → <sessionId>
//!         ├── chats/archive/<sessionId>.jsonl  an archived session            → <sessionId>
//!         ├── chats/<sessionId>.ledger.jsonl   the prompt ledger: not a transcript
//!         └── subagents/<sessionId>/agent-<agentId>.jsonl  a sub-agent        → <sessionId>.<agentId>
//!                                  (+ .meta.json, .jsonl.stream: not transcripts)
//! ```
//!
//! A file is this agent's by its place alone ([`place`]): under a `projects` folder,
//! two levels down in `chats` (or `chats/archive`), or three in `subagents`. Claude
//! Code's projects folder has neither (`projects/<folder>/<id>.jsonl`,
//! `projects/<folder>/<id>/subagents/agent-<aid>.jsonl`), nor has Gemini CLI's
//! (`tmp/<id>/chats/session-*.jsonl`). The key is [`Confidence::Certain`]. A sub-agent's
//! session folder and agent id are written through the CLI's file-name sanitiser
//! (`[^A-Za-z0-9_-]` → `_`), so neither holds a `.`, and the parent of
//! `<sessionId>.<agentId>` is `<sessionId>` ([`QwenLayout::parent`]).
//!
//! ```
//! use std::path::Path;
//! use transcope_adapter_qwen::layout::QwenLayout;
//! use transcope_core::adapter::{Confidence, Layout};
//!
//! let l = QwenLayout;
//! let sub = Path::new("/h/.qwen/projects/-w/subagents/5f1c/agent-explore-7f3c.jsonl");
//! assert_eq!(l.scope_key(sub), Some((Confidence::Certain, Ok("5f1c.explore-7f3c".to_string()))));
//! assert_eq!(l.parent("5f1c.explore-7f3c").as_deref(), Some("5f1c"));
//! assert!(l.claims(Path::new("/h/.qwen/projects/-w/chats/5f1c.jsonl")));
//! assert!(!l.claims(Path::new("/h/.qwen/projects/-w/chats/5f1c.ledger.jsonl")));
//! assert!(l.disowns(Path::new("/h/.qwen/projects/-w/chats/5f1c.ledger.jsonl")));
//! assert!(!l.claims(Path::new("/h/.claude/projects/-w/5f1c.jsonl")));
//! ```

use std::path::{Path, PathBuf};

use transcope_adapter_common::head::checked_key;
use transcope_core::adapter::{Confidence, Layout};
use transcope_core::agent::folder_var;
use transcope_core::head::Head;

use crate::agent::{HOME, RUNTIME_VAR};

/// Where a file sits in Qwen Code's projects folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// `chats/<id>.jsonl` or `chats/archive/<id>.jsonl`.
    Session {
        /// The file's stem: the session id.
        id: String,
    },
    /// `subagents/<session>/agent-<agent>.jsonl`.
    SubAgent {
        /// The parent session's (sanitised) id.
        session: String,
        /// The agent's (sanitised) id.
        agent: String,
    },
}

impl Place {
    /// The scope-log key of the file.
    pub fn key(&self) -> String {
        match self {
            Place::Session { id } => id.clone(),
            Place::SubAgent { session, agent } => format!("{session}.{agent}"),
        }
    }
}

/// The `n`-th folder above `path` (1: the folder holding it), by name.
fn above(path: &Path, n: usize) -> Option<&str> {
    path.ancestors().nth(n)?.file_name()?.to_str()
}

/// Where `path` sits in Qwen Code's layout (by name and place alone: no read), or
/// `None` when it is not a session file there.
pub fn place(path: &Path) -> Option<Place> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    // `<id>.ledger.jsonl` and every other dotted name is no transcript.
    if stem.is_empty() || stem.contains('.') {
        return None;
    }
    match above(path, 1)? {
        "chats" if above(path, 3) == Some("projects") => Some(Place::Session { id: stem.into() }),
        "archive" if above(path, 2) == Some("chats") && above(path, 4) == Some("projects") => {
            Some(Place::Session { id: stem.into() })
        }
        session
            if above(path, 2) == Some("subagents")
                && above(path, 4) == Some("projects")
                && !session.contains('.') =>
        {
            let agent = stem.strip_prefix("agent-").filter(|a| !a.is_empty())?;
            Some(Place::SubAgent {
                session: session.into(),
                agent: agent.into(),
            })
        }
        _ => None,
    }
}

/// The folder Qwen Code writes `projects/` under: `$QWEN_RUNTIME_DIR` (a leading `~`
/// is the user's home, as the CLI expands it; a relative value is relative to the
/// CLI's own folder, unknown here, and counts as unset), else its home ([`HOME`]).
pub fn runtime_dir(lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> PathBuf {
    let set = folder_var(lookup(RUNTIME_VAR).as_deref()).and_then(|v| {
        let s = v.to_str()?;
        let expanded = if s == "~" {
            home.to_owned()
        } else if let Some(rest) = s.strip_prefix("~/") {
            home.join(rest)
        } else {
            v.clone()
        };
        expanded.is_absolute().then_some(expanded)
    });
    set.unwrap_or_else(|| HOME.resolve(lookup, home))
}

/// Qwen Code's on-disk [`Layout`] (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct QwenLayout;

impl Layout for QwenLayout {
    /// `<runtime dir>/projects` ([`runtime_dir`]).
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        vec![runtime_dir(lookup, home).join("projects")]
    }

    fn claims(&self, path: &Path) -> bool {
        place(path).is_some()
    }

    /// A `*.jsonl` file in a `chats` folder (or its `archive`) that is no session: the
    /// prompt ledger `<id>.ledger.jsonl` (Claude Code's rule would take any `*.jsonl`).
    fn disowns(&self, path: &Path) -> bool {
        let in_chats = match above(path, 1) {
            Some("chats") => above(path, 3) == Some("projects"),
            Some("archive") => {
                above(path, 2) == Some("chats") && above(path, 4) == Some("projects")
            }
            _ => false,
        };
        in_chats && path.extension().is_some_and(|x| x == "jsonl") && place(path).is_none()
    }

    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        let p = place(head.path())?;
        Some((Confidence::Certain, checked_key(p.key())))
    }

    /// `<session>.<agent>` → `<session>`.
    fn parent(&self, key: &str) -> Option<String> {
        let (session, agent) = key.split_once('.')?;
        (!session.is_empty() && !agent.is_empty()).then(|| session.to_owned())
    }
}

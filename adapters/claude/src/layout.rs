//! Where Claude Code keeps its transcripts, and which session wrote each
//! (cli.md, Batch).
//!
//! | layout | scope-log key | confidence |
//! | --- | --- | --- |
//! | root session `<projects>/<dir>/<sid>.jsonl` (inline sidechains included) | `<sid>` (the file stem) | `Fallback` |
//! | sub-agent `<sid>/subagents/**/agent-<aid>.jsonl` (workflows nested) | `<sid>.<aid>` | `Certain` |
//! | flat sub-agent `<dir>/agent-<aid>.jsonl` | `<sessionId inside>.<aid>` (the first `sessionId` in the file's first 4 MiB) | `Certain` |
//!
//! Every `*.jsonl` file is claimed; a file that is not a sub-agent's gets its stem at
//! [`Confidence::Fallback`], so any format that recognises the file (a Codex rollout)
//! names it instead. A sub-agent's key is [`Confidence::Certain`], and Claude is
//! registered first, so an `agent-*.jsonl` file keeps this rule on a tie. Every key is
//! checked against the scope-log grammar.
//!
//! Roots: `projects` in Claude Code's home ([`crate::agent::HOME`]:
//! `$CLAUDE_CONFIG_DIR`, else `~/.claude`; a variable that is blank after trimming
//! counts as unset).
//!
//! ```
//! use std::path::Path;
//! use transcope_adapter_claude::layout::ClaudeLayout;
//! use transcope_core::adapter::{Confidence, Layout};
//!
//! let l = ClaudeLayout;
//! let key = l.scope_key(Path::new("/p/-w/0f0e/subagents/agent-a1.jsonl"));
//! assert_eq!(key, Some((Confidence::Certain, Ok("0f0e.a1".to_string()))));
//! assert_eq!(l.parent("0f0e.a1").as_deref(), Some("0f0e"));
//! assert_eq!(l.default_roots(&|_| None, Path::new("/home/u")), [Path::new("/home/u/.claude/projects")]);
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;
use transcope_adapter_common::head::checked_key;
use transcope_core::adapter::{Confidence, Layout};
use transcope_core::head::Head;

/// How far into a flat sub-agent transcript its `sessionId` is looked for.
const SESSION_ID_LIMIT: u64 = 4 * 1024 * 1024;

/// Claude Code's on-disk [`Layout`] (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaudeLayout;

/// The first string value of `key` on any line within the file's first 4 MiB.
fn first_field(head: &Head<'_>, key: &str) -> Option<String> {
    head.find_line(SESSION_ID_LIMIT, |l| {
        let v: Value = serde_json::from_slice(l.trim_ascii()).ok()?;
        v.get(key)?.as_str().map(str::to_owned)
    })
}

/// The key of sub-agent `aid` at `path`: `<sid>.<aid>`, `<sid>` the folder before
/// `subagents`, else the file's first `sessionId`.
fn subagent_key(head: &Head<'_>, aid: &str) -> Result<String, String> {
    let components: Vec<&str> = head.path().iter().filter_map(|c| c.to_str()).collect();
    let sid = match components.iter().rposition(|c| *c == "subagents") {
        Some(i) if i >= 1 => components[i - 1].to_owned(),
        _ => first_field(head, "sessionId").ok_or("sub-agent transcript names no sessionId")?,
    };
    Ok(format!("{sid}.{aid}"))
}

impl Layout for ClaudeLayout {
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        vec![crate::agent::HOME.resolve(lookup, home).join("projects")]
    }

    fn claims(&self, path: &Path) -> bool {
        path.extension().is_some_and(|x| x == "jsonl")
    }

    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        let path = head.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            return Some((Confidence::Fallback, Err("file name is not UTF-8".into())));
        };
        Some(match stem.strip_prefix("agent-") {
            Some(aid) => (
                Confidence::Certain,
                subagent_key(head, aid).and_then(checked_key),
            ),
            None => (Confidence::Fallback, checked_key(stem.to_owned())),
        })
    }

    /// `<sid>.<aid>` → `<sid>` (a Claude session id never holds a `.`: it is a UUID,
    /// the name of the session's file and folder).
    fn parent(&self, key: &str) -> Option<String> {
        let (sid, aid) = key.split_once('.')?;
        (!sid.is_empty() && !aid.is_empty()).then(|| sid.to_owned())
    }
}

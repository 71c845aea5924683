//! Where the Codex CLI keeps its rollouts, and which session wrote each
//! (cli.md, Batch).
//!
//! | file | scope-log key |
//! | --- | --- |
//! | envelope rollout: the first JSON object (within 1 MiB) has one of the four envelope `type`s | its `session_meta` `payload.id`, else the UUID at the end of the file name |
//! | legacy file: the name starts `rollout-`, or the first object has an `id` and no `payload`, `sessionId` or `type` | its header `id`, else the UUID at the end of the file name |
//! | anything else | not a Codex file (`None`) |
//!
//! A Codex file's key is [`Confidence::Certain`]. Claude is registered first, so a
//! Claude sub-agent file (`agent-*.jsonl`, also `Certain`) keeps the Claude rule on a
//! tie. Every key is checked against the scope-log grammar. The file is read only as
//! far as its first JSON object, never past 1 MiB.
//!
//! Roots: `$CODEX_HOME/sessions`, else `~/.codex/sessions` (an empty variable counts
//! as unset).
//!
//! ```
//! use std::path::Path;
//! use transcope_adapter_codex::layout::{trailing_uuid, CodexLayout};
//! use transcope_core::adapter::Layout;
//!
//! assert_eq!(trailing_uuid("rollout-2025-08-20T09-15-00-1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b"), Some("1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b"));
//! assert_eq!(CodexLayout.default_roots(&|k| (k == "CODEX_HOME").then(|| "/c".into()), Path::new("/home/u")), [Path::new("/c/sessions")]);
//! assert!(CodexLayout.scope_key(Path::new("/nowhere/session.jsonl")).is_none());
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;
use transcope_adapter_common::head::checked_key;
use transcope_core::adapter::{Confidence, Layout};
use transcope_core::head::Head;

use crate::record::ENVELOPE_TYPES;

/// How far into a file its first JSON object is looked for.
const FIRST_OBJECT_LIMIT: u64 = 1024 * 1024;

/// The Codex CLI's on-disk [`Layout`] (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodexLayout;

/// The first line within the file's first 1 MiB that is a JSON object, parsed.
fn first_object(head: &Head<'_>) -> Option<serde_json::Map<String, Value>> {
    head.find_line(FIRST_OBJECT_LIMIT, |l| {
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

/// A UUID (8-4-4-4-12 hex) at the end of a file stem.
pub fn trailing_uuid(stem: &str) -> Option<&str> {
    let tail = stem.get(stem.len().checked_sub(36)?..)?;
    let ok = tail.bytes().enumerate().all(|(i, b)| match i {
        8 | 13 | 18 | 23 => b == b'-',
        _ => b.is_ascii_hexdigit(),
    });
    ok.then_some(tail)
}

/// The key of a file whose first object is `first` and whose stem is `stem`, or why
/// there is none; `None` when the file is not Codex's.
fn codex_key(
    stem: Option<&str>,
    first: Option<&serde_json::Map<String, Value>>,
) -> Option<Result<String, String>> {
    let first_type = first.and_then(|m| m.get("type")).and_then(Value::as_str);
    let from_name = || stem.and_then(trailing_uuid).map(str::to_owned);
    let key = if first_type.is_some_and(|t| ENVELOPE_TYPES.contains(&t)) {
        let meta_id = first
            .filter(|_| first_type == Some("session_meta"))
            .and_then(|m| m.get("payload"))
            .and_then(|p| p.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        meta_id
            .or_else(from_name)
            .ok_or("Codex rollout has no session_meta id and no UUID in its name")
    } else if stem.is_some_and(|s| s.starts_with("rollout-"))
        || first.is_some_and(|m| {
            m.contains_key("id")
                && !m.contains_key("payload")
                && !m.contains_key("sessionId")
                && !m.contains_key("type")
        })
    {
        // Legacy Codex: a bare header {id, timestamp, …}.
        first
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(from_name)
            .ok_or("legacy Codex file has no id")
    } else {
        return None;
    };
    Some(match stem {
        None => Err("file name is not UTF-8".into()),
        Some(_) => key.map_err(String::from).and_then(checked_key),
    })
}

impl Layout for CodexLayout {
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        let codex_home = lookup("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map_or_else(|| home.join(".codex"), PathBuf::from);
        vec![codex_home.join("sessions")]
    }

    fn claims(&self, path: &Path) -> bool {
        path.extension().is_some_and(|x| x == "jsonl")
    }

    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        let stem = head.path().file_stem().and_then(|s| s.to_str());
        let first = first_object(head);
        codex_key(stem, first.as_ref()).map(|key| (Confidence::Certain, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> serde_json::Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn keys_by_first_object_and_name() {
        let k = |stem: &str, first: Option<&str>| codex_key(Some(stem), first.map(obj).as_ref());
        assert_eq!(
            k("x", Some(r#"{"type":"session_meta","payload":{"id":"m"}}"#)),
            Some(Ok("m".into()))
        );
        assert_eq!(k("x", Some(r#"{"type":"user"}"#)), None);
        assert_eq!(k("x", None), None);
        assert_eq!(
            k("rollout-x", None),
            Some(Err("legacy Codex file has no id".into()))
        );
        assert_eq!(k("x", Some(r#"{"id":"h"}"#)), Some(Ok("h".into())));
        assert_eq!(k("x", Some(r#"{"id":"h","sessionId":"s"}"#)), None);
        assert_eq!(
            k("x", Some(r#"{"id":"a/b"}"#)),
            Some(Err(r#""a/b" is not a valid scope-log key"#.into()))
        );
        assert_eq!(
            codex_key(None, Some(&obj(r#"{"type":"event_msg"}"#))),
            Some(Err("file name is not UTF-8".into()))
        );
    }
}

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
//! A rollout's [origin](Layout::origin), the session whose family it belongs to, is
//! in the same `session_meta`: a fork's `forked_from_id`, else a sub-agent's
//! `parent_thread_id`.
//!
//! Roots: `sessions` in Codex's home ([`crate::agent::HOME`]: `$CODEX_HOME`, else
//! `~/.codex`; a variable that is blank after trimming counts as unset).
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
use transcope_adapter_common::de::Checked;
use transcope_adapter_common::head::checked_key;
use transcope_core::adapter::{Confidence, Layout};
use transcope_core::head::Head;

use crate::record::ENVELOPE_TYPES;

/// How far into a file its first JSON object is looked for.
const FIRST_OBJECT_LIMIT: u64 = 1024 * 1024;

/// The Codex CLI's on-disk [`Layout`] (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodexLayout;

/// The first line within the file's first 1 MiB that is a JSON object, as far as
/// naming a Codex session reads it ([`First`]).
fn first_object(head: &Head<'_>) -> Option<First> {
    head.find_line(FIRST_OBJECT_LIMIT, |l| {
        let l = l.trim_ascii();
        if l.is_empty() {
            return None;
        }
        serde_json::from_slice::<Object>(l).ok().and_then(|o| o.0)
    })
}

/// A first object's keys that name a Codex session: `type`, `id` and `payload` (their
/// values), and whether it has a `sessionId`. Read in one pass that checks every other
/// value as `serde_json::Value` would hold it (strings, numbers in range, nesting), so
/// the same lines are objects, without building what is not read: a Claude file's
/// first line, a whole message, costs no allocation.
#[derive(Debug, Default)]
struct First {
    ty: Option<Value>,
    id: Option<Value>,
    payload: Option<Value>,
    session_id: bool,
}

impl First {
    fn ty(&self) -> Option<&str> {
        self.ty.as_ref().and_then(Value::as_str)
    }
}

/// A line's JSON value: `Some` for an object, `None` for any other.
struct Object(Option<First>);

impl<'de> serde::Deserialize<'de> for Object {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Object;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut first = First::default();
                while let Some(key) = map.next_key::<transcope_adapter_common::de::CowStr<'de>>()? {
                    // The last of a repeated key wins, as in a `Value`.
                    match &*key.0 {
                        "type" => first.ty = Some(map.next_value()?),
                        "id" => first.id = Some(map.next_value()?),
                        "payload" => first.payload = Some(map.next_value()?),
                        "sessionId" => {
                            map.next_value::<Checked>()?;
                            first.session_id = true;
                        }
                        _ => {
                            map.next_value::<Checked>()?;
                        }
                    }
                }
                Ok(Object(Some(first)))
            }
            // Any other value is no object: left unread, the parse fails, which is the
            // same answer.
        }
        d.deserialize_any(V)
    }
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
fn codex_key(stem: Option<&str>, first: Option<&First>) -> Option<Result<String, String>> {
    let first_type = first.and_then(First::ty);
    let from_name = || stem.and_then(trailing_uuid).map(str::to_owned);
    let key = if first_type.is_some_and(|t| ENVELOPE_TYPES.contains(&t)) {
        let meta_id = first
            .filter(|_| first_type == Some("session_meta"))
            .and_then(|m| m.payload.as_ref())
            .and_then(|p| p.get("id"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        meta_id
            .or_else(from_name)
            .ok_or("Codex rollout has no session_meta id and no UUID in its name")
    } else if stem.is_some_and(|s| s.starts_with("rollout-"))
        || first.is_some_and(|m| {
            m.id.is_some() && m.payload.is_none() && !m.session_id && m.ty.is_none()
        })
    {
        // Legacy Codex: a bare header {id, timestamp, …}.
        first
            .and_then(|m| m.id.as_ref())
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
        vec![crate::agent::HOME.resolve(lookup, home).join("sessions")]
    }

    fn claims(&self, path: &Path) -> bool {
        path.extension().is_some_and(|x| x == "jsonl")
    }

    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        let stem = head.path().file_stem().and_then(|s| s.to_str());
        let first = first_object(head);
        codex_key(stem, first.as_ref()).map(|key| (Confidence::Certain, key))
    }

    /// A rollout whose first object is its `session_meta`: the session it was forked
    /// from (`forked_from_id`), else, a sub-agent's, its parent thread
    /// (`parent_thread_id`, at the top or under `source.subagent.thread_spawn`); a
    /// value that is no valid scope-log key is none.
    fn origin(&self, head: &Head<'_>) -> Option<String> {
        let first = first_object(head)?;
        let meta = first
            .payload
            .as_ref()
            .filter(|_| first.ty() == Some("session_meta"))?;
        [
            "/forked_from_id",
            "/parent_thread_id",
            "/source/subagent/thread_spawn/parent_thread_id",
        ]
        .iter()
        .filter_map(|at| meta.pointer(at)?.as_str())
        .find_map(|id| checked_key(id.to_owned()).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> First {
        serde_json::from_str::<Object>(s).unwrap().0.unwrap()
    }

    /// The same lines are first objects as when each was parsed into a `Value`.
    #[test]
    fn objects_are_the_lines_a_value_holds() {
        for line in [
            r#"{"a":1}"#,
            r#"{"a":"\ud800"}"#,
            r#"{"\ud800":1}"#,
            r#"{"a":[1,{"b":1e400}]}"#,
            r#"{"a":1e308,"b":-0,"c":18446744073709551616}"#,
            r#"{"a":"x","a":[}"#,
            r#"[1]"#,
            r#""s""#,
            r#"{"type":"user","message":{"content":[{"text":"\u00e9\n"}]}}"#,
            r#"{"a":1} x"#,
        ] {
            let value = matches!(serde_json::from_str::<Value>(line), Ok(Value::Object(_)));
            let first = serde_json::from_str::<Object>(line).ok().and_then(|o| o.0);
            assert_eq!(first.is_some(), value, "{line}");
        }
        let f = obj(
            r#"{"type":"a","type":"session_meta","id":null,"sessionId":0,"payload":{"id":"p"}}"#,
        );
        assert_eq!(f.ty(), Some("session_meta"));
        assert!(f.id.is_some() && f.session_id);
        assert_eq!(
            f.payload.as_ref().and_then(|p| p.get("id")),
            Some(&Value::from("p"))
        );
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

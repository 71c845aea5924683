//! The format-independent part of decoding one transcript line.
//!
//! The reference reads every JSON object of a transcript the same way, whatever its
//! format, when it looks for the folder, branch and time (scope-log.md §3.2): a Codex
//! `turn_context` takes its folder from `payload.cwd`, every other record from its
//! top-level `cwd`. Both adapters (and any third-party one that wants the rule) share
//! this module so the rule lives in one place.
//!
//! Decoding is tolerant and single-pass:
//!
//! * [`parse`] validates UTF-8 (SIMD, `simdutf8`), strips a first-line BOM and Python-`strip()`
//!   whitespace, and decodes the top-level object into a [`Record`] in **one pass**
//!   over the line. Strings are borrowed from the line when they hold no escapes.
//!   Because `type` often comes *after* `message` (most Claude assistant lines), the
//!   nested values are decoded with type-independent schemas while they stream by:
//!   `message` to its Claude marker-text candidates ([`crate::text`]), `payload` to
//!   the handful of Codex keys any rule reads ([`Payload`]); everything else inside
//!   them (tool results, tool inputs, thinking) is skipped without allocation. Which
//!   of these decoded parts matter is decided from the final `type`.
//! * If that single pass fails on a string serde_json cannot decode but Python can (a
//!   lone surrogate escape such as `"\ud83d"`, which JavaScript's `JSON.stringify`
//!   writes for a string cut mid-pair), the line is parsed again lazily: `message`
//!   and `payload` are captured as [`RawValue`] and decoded separately, so only the
//!   sub-object holding the bad string is lost, not the line's folder and time.
//! * Every field type accepts every JSON value ([`Loose`], [`Obj`], `&RawValue`), so a
//!   `cwd: 5` or `gitBranch: null` never fails the line.
//! * Duplicate keys: the **last** occurrence wins, as in Python's `json.loads`
//!   (serde's derived structs would reject the line instead).
//!
//! ```
//! use transcope_adapter_claude::record::{self, TypeField};
//! use transcope_core::LinePos;
//!
//! let line = br#"{"type":"turn_context","timestamp":"2025-01-01T00:00:00Z","payload":{"cwd":"/w"}}"#;
//! let mut rec = record::parse(line, LinePos::default()).unwrap();
//! assert!(matches!(&rec.ty, TypeField::Str(t) if t == "turn_context"));
//! let entry = rec.base_entry(LinePos::default());
//! assert_eq!(entry.cwd.as_deref(), Some("/w"));
//! assert_eq!(entry.time.as_str(), Some("2025-01-01T00:00:00Z"));
//! ```

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Number, Value};
use transcope_core::adapter::{EntrySink, Skip};
use transcope_core::entry::{Entry, EntryKind, LinePos, TimeValue};
use transcope_core::py;

use crate::text::Message;

/// A JSON string, borrowed from the input when it holds no escapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CowStr<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, decoded as loosely as Python sees it: scalars are kept (strings
/// borrowed where possible), containers are materialised only because they are rare
/// in the fields this type is used for and Python `str()` needs them.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Loose<'a> {
    /// The key is absent.
    #[default]
    Missing,
    /// JSON `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Num(Number),
    /// A string.
    Str(Cow<'a, str>),
    /// An array or an object.
    Complex(Value),
}

impl<'a> Loose<'a> {
    /// The string, when the value is a JSON string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The string, when the value is a JSON string (consuming).
    pub fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the key was present at all (even as `null`).
    pub fn is_present(&self) -> bool {
        !matches!(self, Loose::Missing)
    }

    /// Python truthiness (`None`, `False`, `0`, `""`, `[]`, `{}` are false).
    pub fn truthy(&self) -> bool {
        match self {
            Loose::Missing | Loose::Null => false,
            Loose::Bool(b) => *b,
            Loose::Num(n) => py::truthy(&Value::Number(n.clone())),
            Loose::Str(s) => !s.is_empty(),
            Loose::Complex(v) => py::truthy(v),
        }
    }

    /// `str(value)` when the value is truthy, else `None` — the reference's
    /// `str(x or "")` with `""` mapped to `None`.
    pub fn py_str_if_truthy(self) -> Option<Cow<'a, str>> {
        if !self.truthy() {
            return None;
        }
        Some(match self {
            Loose::Str(s) => s,
            Loose::Bool(b) => Cow::Borrowed(if b { "True" } else { "False" }),
            Loose::Num(n) => Cow::Owned(py::str_of(&Value::Number(n))),
            Loose::Complex(v) => Cow::Owned(py::str_of(&v)),
            Loose::Missing | Loose::Null => return None,
        })
    }
}

impl<'de> Deserialize<'de> for Loose<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Loose<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Loose::Num(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Loose::Num(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Number::from_f64(v).map_or(Loose::Null, Loose::Num))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Null)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Null)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Loose::Complex)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Loose::Complex)
            }
        }
        d.deserialize_any(V)
    }
}

/// A struct decoded from the fields of a JSON object, one key at a time; the caller of
/// [`FromMap::field`] has already read the key and must consume exactly one value.
pub trait FromMap<'de>: Default {
    /// Consume the value of `key` (use `IgnoredAny` for keys the type does not model).
    /// Called again for a repeated key, so plain assignment makes the last one win.
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
}

/// `Some(T)` when the JSON value is an object, `None` for any other value (which is
/// skipped without allocating).
#[derive(Debug, Default)]
pub struct Obj<T>(pub Option<T>);

impl<'de, T: FromMap<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: FromMap<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_seq(seq).map(|_| Obj(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut t = T::default();
                while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
                    t.field(&key, &mut map)?;
                }
                Ok(Obj(Some(t)))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Consume and drop the current value.
pub fn skip_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(|_| ())
}

/// Decode `raw` as an object of type `T`: `None` when it is not an object or does not
/// decode (a lone surrogate in a string, say), so a broken nested value never costs
/// the line its top-level fields.
pub fn decode_obj<'a, T: FromMap<'a>>(raw: &'a RawValue) -> Option<T> {
    serde_json::from_str::<Obj<T>>(raw.get())
        .ok()
        .and_then(|o| o.0)
}

/// The top-level `type` key.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TypeField<'a> {
    /// No `type` key (or `null`).
    #[default]
    Missing,
    /// A string `type`.
    Str(Cow<'a, str>),
    /// A `type` that is neither a string nor `null`.
    NotString,
}

impl TypeField<'_> {
    /// The type string, if any.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            TypeField::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// The top-level keys of one transcript record that any stage needs. Everything else
/// in the line is skipped without allocation.
#[derive(Debug, Default)]
pub struct Record<'a> {
    /// `type`.
    pub ty: TypeField<'a>,
    /// `timestamp`, undecoded.
    pub timestamp: Option<&'a RawValue>,
    /// `cwd`.
    pub cwd: Loose<'a>,
    /// `gitBranch`.
    pub git_branch: Loose<'a>,
    /// `sessionId`.
    pub session_id: Loose<'a>,
    /// `agentId`.
    pub agent_id: Loose<'a>,
    /// `uuid`.
    pub uuid: Loose<'a>,
    /// `parentUuid`.
    pub parent_uuid: Loose<'a>,
    /// `logicalParentUuid`.
    pub logical_parent_uuid: Loose<'a>,
    /// `isSidechain`.
    pub is_sidechain: Loose<'a>,
    /// The Claude marker-text candidates of `message.content` (see [`crate::text`]),
    /// decoded whatever the `type`; `None` when `message` is missing, not an object,
    /// or has no string/list `content`. Only `assistant` lines use them.
    pub message_texts: Option<Vec<Cow<'a, str>>>,
    /// `payload` (Codex envelope) when it is an object.
    pub payload: Option<Payload<'a>>,
    /// Whether the line has a `payload` key at all (even a non-object one).
    pub has_payload: bool,
    /// `id` (Codex legacy header).
    pub id: Loose<'a>,
    /// `role` (Codex legacy bare message).
    pub role: Loose<'a>,
    /// `content` (Codex legacy bare message), undecoded.
    pub content: Option<&'a RawValue>,
}

impl<'de> FromMap<'de> for Record<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => {
                self.ty = match map.next_value::<Loose<'de>>()? {
                    Loose::Str(s) => TypeField::Str(s),
                    Loose::Null => TypeField::Missing,
                    _ => TypeField::NotString,
                }
            }
            "timestamp" => self.timestamp = Some(map.next_value()?),
            "cwd" => self.cwd = map.next_value()?,
            "gitBranch" => self.git_branch = map.next_value()?,
            "sessionId" => self.session_id = map.next_value()?,
            "agentId" => self.agent_id = map.next_value()?,
            "uuid" => self.uuid = map.next_value()?,
            "parentUuid" => self.parent_uuid = map.next_value()?,
            "logicalParentUuid" => self.logical_parent_uuid = map.next_value()?,
            "isSidechain" => self.is_sidechain = map.next_value()?,
            "message" => {
                self.message_texts = map
                    .next_value::<Obj<Message<'de>>>()?
                    .0
                    .and_then(Message::texts)
            }
            "payload" => {
                self.has_payload = true;
                self.payload = map.next_value::<Obj<Payload<'de>>>()?.0;
            }
            "id" => self.id = map.next_value()?,
            "role" => self.role = map.next_value()?,
            "content" => self.content = Some(map.next_value()?),
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// The keys of a Codex envelope `payload` that any rule reads, whatever the record's
/// type (the type may come after the payload, and duplicate keys must resolve as in
/// Python): `type`, `role`, `content` (kept raw: only assistant messages decode it),
/// `id`/`session_id` (`session_meta`), `cwd` (`turn_context`) and
/// `last_agent_message` (`task_complete`).
#[derive(Debug, Default)]
pub struct Payload<'a> {
    /// `payload.type`.
    pub ty: Loose<'a>,
    /// `payload.role`.
    pub role: Loose<'a>,
    /// `payload.content`, undecoded.
    pub content: Option<&'a RawValue>,
    /// `payload.id`.
    pub id: Loose<'a>,
    /// `payload.session_id`.
    pub session_id: Loose<'a>,
    /// `payload.cwd`.
    pub cwd: Loose<'a>,
    /// `payload.last_agent_message`.
    pub last_agent_message: Loose<'a>,
}

impl<'de> FromMap<'de> for Payload<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.ty = map.next_value()?,
            "role" => self.role = map.next_value()?,
            "content" => self.content = Some(map.next_value()?),
            "id" => self.id = map.next_value()?,
            "session_id" => self.session_id = map.next_value()?,
            "cwd" => self.cwd = map.next_value()?,
            "last_agent_message" => self.last_agent_message = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// The fallback shape of [`Record`]: `message` and `payload` captured raw and decoded
/// one by one afterwards, so a string serde_json cannot decode in one of them costs
/// only that sub-object.
#[derive(Debug, Default)]
struct LazyRecord<'a> {
    rec: Record<'a>,
    message: Option<&'a RawValue>,
    payload: Option<&'a RawValue>,
}

impl<'de> FromMap<'de> for LazyRecord<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "message" => self.message = Some(map.next_value()?),
            "payload" => {
                self.rec.has_payload = true;
                self.payload = Some(map.next_value()?);
            }
            _ => self.rec.field(key, map)?,
        }
        Ok(())
    }
}

impl<'a> LazyRecord<'a> {
    fn finish(self) -> Record<'a> {
        let mut rec = self.rec;
        rec.message_texts = self
            .message
            .and_then(decode_obj::<Message<'a>>)
            .and_then(Message::texts);
        rec.payload = self.payload.and_then(decode_obj::<Payload<'a>>);
        rec
    }
}

const BOM: &str = "\u{feff}";

/// Python `str.strip()` with no argument: Unicode whitespace plus the ASCII
/// separators `\x1c`–`\x1f`, which Python counts as whitespace and Rust does not.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// The text of a line as the reference would hand it to `json.loads`: valid UTF-8,
/// Python-stripped, and without a leading byte-order mark when `first` is set (the
/// reference itself would fail the line on a BOM; stripping it is a deliberate
/// deviation, see the crate docs).
pub fn line_text(line: &[u8], first: bool) -> Result<&str, Skip> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
    let text = if first {
        text.strip_prefix(BOM).unwrap_or(text)
    } else {
        text
    };
    let text = py_strip(text);
    if text.is_empty() {
        Err(Skip::Blank)
    } else {
        Ok(text)
    }
}

/// Decode one framed line into a [`Record`]. A BOM is stripped only from the line at
/// byte offset 0.
///
/// Errors: [`Skip::Blank`], [`Skip::InvalidUtf8`], [`Skip::InvalidJson`] (including
/// JSON that Python accepts but serde_json does not: `NaN`, `Infinity`, a lone
/// surrogate escape in a decoded string), [`Skip::NotObject`].
pub fn parse(line: &[u8], pos: LinePos) -> Result<Record<'_>, Skip> {
    let text = line_text(line, pos.offset == 0)?;
    parse_str(text)
}

/// [`parse`] for text already validated and stripped.
pub fn parse_str(text: &str) -> Result<Record<'_>, Skip> {
    match serde_json::from_str::<Obj<Record<'_>>>(text) {
        Ok(Obj(Some(rec))) => Ok(rec),
        Ok(Obj(None)) => Err(Skip::NotObject),
        Err(_) => match serde_json::from_str::<Obj<LazyRecord<'_>>>(text) {
            Ok(Obj(Some(lazy))) => Ok(lazy.finish()),
            Ok(Obj(None)) => Err(Skip::NotObject),
            Err(_) => Err(Skip::InvalidJson),
        },
    }
}

/// The timestamp as [`TimeValue`]: strings verbatim (borrowed when unescaped), `null`
/// as missing, numbers and booleans as written, arrays and objects as compact JSON.
pub fn time_value(raw: Option<&RawValue>) -> TimeValue<'_> {
    let Some(raw) = raw else {
        return TimeValue::Missing;
    };
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => match serde_json::from_str::<CowStr<'_>>(text) {
            Ok(CowStr(s)) => TimeValue::Str(s),
            Err(_) => TimeValue::Missing,
        },
        Some(b'n') => TimeValue::Missing,
        Some(b'[' | b'{') => match serde_json::from_str::<Value>(text) {
            Ok(v) => TimeValue::Other(Cow::Owned(v.to_string())),
            Err(_) => TimeValue::Other(Cow::Borrowed(text)),
        },
        _ => TimeValue::Other(Cow::Borrowed(text)),
    }
}

/// The entry kind a top-level `type` names in either vocabulary (Claude or Codex
/// envelope), or `None` for a type neither format defines.
pub fn base_kind(ty: &str) -> Option<EntryKind> {
    Some(match ty {
        "user" => EntryKind::User,
        "assistant" => EntryKind::Assistant,
        "summary" => EntryKind::Summary,
        "system"
        | "attachment"
        | "progress"
        | "file-history-snapshot"
        | "queue-operation"
        | "permission-mode"
        | "last-prompt"
        | "custom-title"
        | "ai-title"
        | "agent-name"
        | "mode"
        | "pr-link"
        | "frame-link"
        | "worktree-state"
        | "relocated"
        | "started"
        | "result"
        | "bridge-session"
        | "atis-latch" => EntryKind::System,
        "session_meta" => EntryKind::Meta,
        "turn_context" => EntryKind::Context,
        "response_item" => EntryKind::Tool,
        "event_msg" => EntryKind::Event,
        "compacted"
        | "world_state"
        | "inter_agent_communication"
        | "inter_agent_communication_metadata" => EntryKind::Other,
        _ => return None,
    })
}

/// Whether `ty` is one of the Claude Code line types (used by sniffing).
pub fn is_claude_type(ty: &str) -> bool {
    matches!(
        base_kind(ty),
        Some(EntryKind::User | EntryKind::Assistant | EntryKind::Summary | EntryKind::System)
    )
}

impl<'a> Record<'a> {
    /// The folder by the reference's rule: `turn_context` → `payload.cwd` (nothing when
    /// the payload is not an object), any other record → top-level `cwd`; Python
    /// `str()` of a truthy value, `None` otherwise.
    pub fn take_folder(&mut self) -> Option<Cow<'a, str>> {
        if self.ty.as_str() == Some("turn_context") {
            std::mem::take(&mut self.payload.as_mut()?.cwd).py_str_if_truthy()
        } else {
            std::mem::take(&mut self.cwd).py_str_if_truthy()
        }
    }

    /// The entry every format starts from: time, folder, branch, Claude ids and
    /// position; no kind and no texts yet. Leaves `message_texts`, `payload`,
    /// `content`, `id`, `role` and `ty` in place for the format-specific part.
    pub fn base_entry(&mut self, pos: LinePos) -> Entry<'a> {
        Entry {
            kind: None,
            time: time_value(self.timestamp),
            cwd: self.take_folder(),
            branch: std::mem::take(&mut self.git_branch).py_str_if_truthy(),
            session_id: std::mem::take(&mut self.session_id).into_str(),
            agent_id: std::mem::take(&mut self.agent_id).into_str(),
            uuid: std::mem::take(&mut self.uuid).into_str(),
            parent_uuid: std::mem::take(&mut self.parent_uuid).into_str(),
            logical_parent_uuid: std::mem::take(&mut self.logical_parent_uuid).into_str(),
            is_sidechain: matches!(self.is_sidechain, Loose::Bool(true)),
            texts: Vec::new(),
            offset: pos.offset,
            line: pos.line,
        }
    }
}

/// Whether an entry carries anything the context stage uses (folder, time, branch).
pub fn has_context(e: &Entry<'_>) -> bool {
    e.cwd.is_some() || e.branch.is_some() || e.time != TimeValue::Missing
}

/// Push `entry` when it has a kind, or when it carries context (then as
/// [`EntryKind::Other`]); otherwise report why it was dropped: [`Skip::WrongType`] when
/// the `type` was not a string, [`Skip::Ignored`] for an unknown or missing type.
pub fn emit(
    mut entry: Entry<'_>,
    ty: &TypeField<'_>,
    sink: &mut dyn EntrySink,
) -> Result<(), Skip> {
    if entry.kind.is_none() {
        if !has_context(&entry) && entry.texts.is_empty() {
            return Err(match ty {
                TypeField::NotString => Skip::WrongType,
                _ => Skip::Ignored,
            });
        }
        entry.kind = Some(EntryKind::Other);
    }
    sink.entry(&entry);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(s: &str) -> Record<'_> {
        parse_str(s).unwrap()
    }

    #[test]
    fn loose_accepts_every_json_type() {
        let r = rec(
            r#"{"cwd": 5, "gitBranch": null, "uuid": [1], "sessionId": {"a": 1}, "agentId": true}"#,
        );
        assert_eq!(r.cwd, Loose::Num(5.into()));
        assert_eq!(r.git_branch, Loose::Null);
        assert!(matches!(r.uuid, Loose::Complex(_)));
        assert!(matches!(r.session_id, Loose::Complex(_)));
        assert_eq!(r.agent_id, Loose::Bool(true));
    }

    #[test]
    fn python_str_of_truthy_values() {
        let cases = [
            (r#"5"#, Some("5")),
            (r#"0"#, None),
            (r#"0.0"#, None),
            (r#"1.5"#, Some("1.5")),
            (r#"true"#, Some("True")),
            (r#"false"#, None),
            (r#""""#, None),
            (r#"" ""#, Some(" ")),
            (r#"[]"#, None),
            (r#"["a", 1]"#, Some("['a', 1]")),
            (r#"{"k": null}"#, Some("{'k': None}")),
            (r#"null"#, None),
        ];
        for (json, want) in cases {
            let line = format!(r#"{{"cwd": {json}}}"#);
            let mut r = rec(&line);
            assert_eq!(r.take_folder().as_deref(), want, "{json}");
        }
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let mut r = rec(r#"{"cwd": "/a/b", "gitBranch": "f\u00e9"}"#);
        let e = r.base_entry(LinePos::default());
        assert!(matches!(e.cwd, Some(Cow::Borrowed("/a/b"))));
        assert!(matches!(e.branch, Some(Cow::Owned(ref s)) if s == "fé"));
    }

    #[test]
    fn time_values() {
        let t = |s: &str| {
            let line = format!(r#"{{"timestamp": {s}}}"#);
            let r = parse_str(&line).unwrap();
            time_value(r.timestamp).into_owned()
        };
        assert_eq!(
            t(r#""2025-01-01T00:00:00Z""#),
            TimeValue::Str("2025-01-01T00:00:00Z".into())
        );
        assert_eq!(t("7"), TimeValue::Other("7".into()));
        assert_eq!(t("7.50"), TimeValue::Other("7.50".into()));
        assert_eq!(t("true"), TimeValue::Other("true".into()));
        assert_eq!(t("null"), TimeValue::Missing);
        assert_eq!(
            t(r#"[1, {"a": 2}]"#),
            TimeValue::Other(r#"[1,{"a":2}]"#.into())
        );
        assert_eq!(t(r#""""#), TimeValue::Str("".into()));
    }

    #[test]
    fn duplicate_keys_last_wins() {
        let mut r =
            rec(r#"{"cwd": "/first", "type": "user", "cwd": "/second", "type": "assistant"}"#);
        assert_eq!(r.ty.as_str(), Some("assistant"));
        assert_eq!(r.take_folder().as_deref(), Some("/second"));
        // A later null overrides an earlier value, as dict assignment does.
        let mut r = rec(r#"{"cwd": "/first", "cwd": null}"#);
        assert_eq!(r.take_folder(), None);
    }

    #[test]
    fn turn_context_folder_comes_from_payload_only() {
        let mut r = rec(r#"{"type": "turn_context", "cwd": "/top", "payload": {"cwd": "/p"}}"#);
        assert_eq!(r.take_folder().as_deref(), Some("/p"));
        let mut r = rec(r#"{"type": "turn_context", "cwd": "/top", "payload": "x"}"#);
        assert_eq!(r.take_folder(), None);
        let mut r = rec(r#"{"type": "turn_context", "cwd": "/top"}"#);
        assert_eq!(r.take_folder(), None);
        let mut r = rec(r#"{"type": "turn_context", "payload": {"cwd": 0}}"#);
        assert_eq!(r.take_folder(), None);
        let mut r = rec(r#"{"type": "session_meta", "payload": {"cwd": "/p"}}"#);
        assert_eq!(r.take_folder(), None);
    }

    #[test]
    fn line_text_rules() {
        assert_eq!(line_text(b"  \t", true), Err(Skip::Blank));
        assert_eq!(line_text(b"\xff{}", true), Err(Skip::InvalidUtf8));
        assert_eq!(line_text("\u{feff}{}".as_bytes(), true), Ok("{}"));
        assert_eq!(line_text("\u{feff}{}".as_bytes(), false), Ok("\u{feff}{}"));
        assert_eq!(line_text("\x1c\u{a0}{} \r".as_bytes(), false), Ok("{}"));
        assert_eq!(parse_str("5").unwrap_err(), Skip::NotObject);
        assert_eq!(parse_str("[1]").unwrap_err(), Skip::NotObject);
        assert_eq!(parse_str(r#""s""#).unwrap_err(), Skip::NotObject);
        assert_eq!(parse_str("{").unwrap_err(), Skip::InvalidJson);
        assert_eq!(parse_str("{} x").unwrap_err(), Skip::InvalidJson);
        assert_eq!(parse_str(r#"{"a": NaN}"#).unwrap_err(), Skip::InvalidJson);
    }

    #[test]
    fn lone_surrogates_cost_at_most_their_sub_object() {
        // In skipped values: no cost at all (single pass).
        let mut r = rec(
            r#"{"cwd": "/w", "toolUseResult": "\ud800 x", "message": {"t": "\udc00", "content": "ok"}}"#,
        );
        assert_eq!(r.take_folder().as_deref(), Some("/w"));
        assert_eq!(r.message_texts, Some(vec![Cow::Borrowed("ok")]));
        // In a decoded nested string: the lazy fallback keeps the rest of the line.
        let mut r = rec(
            r#"{"message": {"content": [{"type": "text", "text": "\ud83d"}]}, "cwd": "/w", "type": "turn_context", "payload": {"cwd": "/p"}}"#,
        );
        assert_eq!(r.message_texts, None);
        assert_eq!(r.take_folder().as_deref(), Some("/p"));
        // In a top-level string the line cannot be decoded.
        assert_eq!(
            parse_str(r#"{"cwd": "\ud83d"}"#).unwrap_err(),
            Skip::InvalidJson
        );
    }
}

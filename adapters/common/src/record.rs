//! The line record machinery every adapter decodes with, and the reference's
//! format-independent context rule.
//!
//! The reference reads every JSON object of a transcript the same way, whatever its
//! format, when it looks for the folder, branch and time (scope-log.md §3.2): a Codex
//! `turn_context` takes its folder from `payload.cwd`, every other record from its
//! top-level `cwd`. The adapters share this module so the rule lives in one place;
//! each adapter owns the rest of its record (its nested values, its vocabulary).
//!
//! Decoding is tolerant and single-pass:
//!
//! * [`parse`] validates UTF-8 ([`crate::text::line_text`]), strips a first-line BOM
//!   and Python-`strip()` whitespace, and decodes the top-level object into an
//!   adapter's [`LineRecord`] in **one pass** over the line. Strings are borrowed from
//!   the line when they hold no escapes. Because `type` often comes *after* the
//!   nested values (most Claude assistant lines), an adapter's record decodes them
//!   with type-independent schemas while they stream by, and decides from the final
//!   `type` which decoded parts matter. The keys every format shares are [`Base`].
//! * If that single pass fails on a string serde_json cannot decode but Python can (a
//!   lone surrogate escape such as `"\ud83d"`, which JavaScript's `JSON.stringify`
//!   writes for a string cut mid-pair), the line is parsed again lazily
//!   ([`LineRecord::Lazy`]): the nested values are captured as [`RawValue`] and decoded
//!   separately, so only the sub-object holding the bad string is lost, not the
//!   line's folder and time.
//! * Every field type accepts every JSON value ([`Loose`], [`crate::de::Obj`],
//!   `&RawValue`), so a `cwd: 5` or `gitBranch: null` never fails the line.
//! * Duplicate keys: the **last** occurrence wins, as in Python's `json.loads`.
//!
//! ```
//! use transcope_adapter_common::record::{self, Base, TypeField};
//! use transcope_core::LinePos;
//!
//! let line = br#"{"type":"user","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}"#;
//! let mut rec: Base<'_> = record::parse(line, LinePos::default()).unwrap();
//! assert!(matches!(&rec.ty, TypeField::Str(t) if t == "user"));
//! let entry = rec.base_entry(LinePos::default(), None);
//! assert_eq!(entry.cwd.as_deref(), Some("/w"));
//! assert_eq!(entry.time.as_str(), Some("2025-01-01T00:00:00Z"));
//! ```

use std::borrow::Cow;

use serde::de::MapAccess;
use serde_json::value::RawValue;
use serde_json::Value;
use transcope_core::adapter::{EntrySink, Skip};
use transcope_core::entry::{Entry, EntryKind, LinePos, TimeValue};

use crate::de::{decode_obj, skip_value, CowStr, FromMap, Loose, Obj};
use crate::text::line_text;

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

/// The top-level keys of a transcript record that every format's entry starts from:
/// `type`, the context keys (time, folder, branch) and the Claude Code ids every
/// [`Entry`] carries when a line has them. An adapter's record holds a `Base` and
/// hands it each key first ([`Base::field`]).
#[derive(Debug, Default)]
pub struct Base<'a> {
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
}

impl<'de> Base<'de> {
    /// Consume the value of `key` when it is one of these keys (`Ok(true)`); consume
    /// nothing and answer `Ok(false)` for any other key.
    pub fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error> {
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
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// `Base` alone is a record too: every other key skipped.
impl<'de> FromMap<'de> for Base<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        if !Base::field(self, key, map)? {
            skip_value(map)?;
        }
        Ok(())
    }
}

impl<'de> LineRecord<'de> for Base<'de> {
    type Lazy = Base<'de>;
    fn finish(lazy: Base<'de>) -> Self {
        lazy
    }
}

impl<'a> Base<'a> {
    /// The folder by the reference's rule: `turn_context` → `payload.cwd`
    /// (`payload_cwd`, `None` when the payload is missing or not an object), any other
    /// record → top-level `cwd`; Python `str()` of a truthy value, `None` otherwise.
    pub fn take_folder(&mut self, payload_cwd: Option<&mut Loose<'a>>) -> Option<Cow<'a, str>> {
        if self.ty.as_str() == Some("turn_context") {
            std::mem::take(payload_cwd?).py_str_if_truthy()
        } else {
            std::mem::take(&mut self.cwd).py_str_if_truthy()
        }
    }

    /// The entry every format starts from: time, folder ([`Base::take_folder`]),
    /// branch, Claude ids and position; no kind and no texts yet. Leaves `ty` in place
    /// for the format-specific part.
    pub fn base_entry(&mut self, pos: LinePos, payload_cwd: Option<&mut Loose<'a>>) -> Entry<'a> {
        Entry {
            kind: None,
            time: time_value(self.timestamp),
            cwd: self.take_folder(payload_cwd),
            branch: std::mem::take(&mut self.git_branch).py_str_if_truthy(),
            session_id: std::mem::take(&mut self.session_id).into_str(),
            agent_id: std::mem::take(&mut self.agent_id).into_str(),
            uuid: std::mem::take(&mut self.uuid).into_str(),
            parent_uuid: std::mem::take(&mut self.parent_uuid).into_str(),
            logical_parent_uuid: std::mem::take(&mut self.logical_parent_uuid).into_str(),
            is_sidechain: matches!(self.is_sidechain, Loose::Bool(true)),
            texts: Vec::new(),
            usage: None,
            offset: pos.offset,
            line: pos.line,
        }
    }
}

/// A format's record of one line, decoded in one pass ([`FromMap`]), with the
/// fallback shape [`LineRecord::Lazy`] for a line that pass cannot decode.
pub trait LineRecord<'de>: FromMap<'de> {
    /// The fallback shape: the same top-level keys, the nested values captured as
    /// [`RawValue`], decoded one by one in [`LineRecord::finish`] so a string
    /// serde_json cannot decode in one of them costs only that sub-object.
    type Lazy: FromMap<'de>;

    /// The record from its fallback shape.
    fn finish(lazy: Self::Lazy) -> Self;
}

/// A record whose nested values are a `message` (reduced to its marker texts,
/// [`crate::message`]) and a `payload` object — the Claude and the Codex record. It is
/// a [`LineRecord`] whose fallback shape is [`LazyNested`]: a record says only where it
/// keeps the two.
pub trait NestedRecord<'de>: FromMap<'de> {
    /// The record's schema of `payload`.
    type Payload: FromMap<'de>;

    /// Where the record keeps the `message`'s marker texts and the `payload` (`None`
    /// when missing, not an object, or not decodable).
    fn nested(&mut self) -> (&mut Option<Vec<Cow<'de, str>>>, &mut Option<Self::Payload>);

    /// The line has a `payload` key, whether or not it decodes. The default notes
    /// nothing.
    fn saw_payload(&mut self) {}
}

impl<'de, R: NestedRecord<'de>> LineRecord<'de> for R {
    type Lazy = LazyNested<'de, R>;

    fn finish(lazy: LazyNested<'de, R>) -> R {
        lazy.finish()
    }
}

/// The fallback shape ([`LineRecord::Lazy`]) of a [`NestedRecord`]: its other keys as
/// the record decodes them, `message` and `payload` captured raw and decoded one by one
/// by [`LazyNested::finish`], so a string serde_json cannot decode in one of them costs
/// only that value.
///
/// ```
/// use transcope_adapter_common::de::{skip_value, FromMap};
/// use transcope_adapter_common::record::{parse_str, NestedRecord};
/// use serde::de::MapAccess;
///
/// /// A record of a `payload.n` and `message` texts.
/// #[derive(Default)]
/// struct Rec<'a> { texts: Option<Vec<std::borrow::Cow<'a, str>>>, n: Option<Num> }
/// #[derive(Default)]
/// struct Num(u64);
/// impl<'de> FromMap<'de> for Num {
///     fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
///         if key == "n" { self.0 = map.next_value()? } else { skip_value(map)? }
///         Ok(())
///     }
/// }
/// impl<'de> FromMap<'de> for Rec<'de> {
///     fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
///         match key {
///             "message" => self.texts = transcope_adapter_common::message::message_texts(map)?,
///             "payload" => self.n = map.next_value::<transcope_adapter_common::de::Obj<Num>>()?.0,
///             _ => skip_value(map)?,
///         }
///         Ok(())
///     }
/// }
/// impl<'de> NestedRecord<'de> for Rec<'de> {
///     type Payload = Num;
///     fn nested(&mut self) -> (&mut Option<Vec<std::borrow::Cow<'de, str>>>, &mut Option<Num>) {
///         (&mut self.texts, &mut self.n)
///     }
/// }
///
/// // A lone surrogate in the message costs its texts, not the payload.
/// let r: Rec<'_> = parse_str(r#"{"message": {"content": "\ud800"}, "payload": {"n": 7}}"#).unwrap();
/// assert!(r.texts.is_none());
/// assert_eq!(r.n.map(|n| n.0), Some(7));
/// ```
#[derive(Debug, Default)]
pub struct LazyNested<'a, R> {
    rec: R,
    message: Option<&'a RawValue>,
    payload: Option<&'a RawValue>,
}

impl<'de, R: NestedRecord<'de>> FromMap<'de> for LazyNested<'de, R> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "message" => self.message = Some(map.next_value()?),
            "payload" => self.payload = Some(map.next_value()?),
            _ => self.rec.field(key, map)?,
        }
        Ok(())
    }
}

impl<'de, R: NestedRecord<'de>> LazyNested<'de, R> {
    /// The record, with its `message` and `payload` decoded one by one.
    pub fn finish(self) -> R {
        let mut rec = self.rec;
        if self.payload.is_some() {
            rec.saw_payload();
        }
        let (texts, payload) = rec.nested();
        *texts = crate::message::raw_message_texts(self.message);
        *payload = self.payload.and_then(decode_obj::<R::Payload>);
        rec
    }
}

/// Decode one framed line into a record. A BOM is stripped only from the line at
/// byte offset 0.
///
/// Errors: [`Skip::Blank`], [`Skip::InvalidUtf8`], [`Skip::InvalidJson`] (including
/// JSON that Python accepts but serde_json does not: `NaN`, `Infinity`, a lone
/// surrogate escape in a decoded string), [`Skip::NotObject`].
pub fn parse<'a, R: LineRecord<'a>>(line: &'a [u8], pos: LinePos) -> Result<R, Skip> {
    let text = line_text(line, pos.offset == 0)?;
    parse_str(text)
}

/// [`parse`] for text already validated and stripped.
pub fn parse_str<'a, R: LineRecord<'a>>(text: &'a str) -> Result<R, Skip> {
    match serde_json::from_str::<Obj<R>>(text) {
        Ok(Obj(Some(rec))) => Ok(rec),
        Ok(Obj(None)) => Err(Skip::NotObject),
        Err(_) => match serde_json::from_str::<Obj<R::Lazy>>(text) {
            Ok(Obj(Some(lazy))) => Ok(R::finish(lazy)),
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

/// The entry kind of a record of type `ty`, or `None` for a type neither format the
/// reference reads defines. The reference reads every file as Claude or as Codex and
/// meets both vocabularies in either (a Codex `turn_context` in a file read as Claude,
/// Claude line types in a legacy Codex file), so both adapters map types through this
/// one table.
pub fn kind(ty: &str) -> Option<EntryKind> {
    Some(match ty {
        // Claude Code line types.
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
        // Codex record types.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(s: &str) -> Base<'_> {
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
            assert_eq!(r.take_folder(None).as_deref(), want, "{json}");
        }
    }

    #[test]
    fn strings_borrow_unless_escaped() {
        let mut r = rec(r#"{"cwd": "/a/b", "gitBranch": "f\u00e9"}"#);
        let e = r.base_entry(LinePos::default(), None);
        assert!(matches!(e.cwd, Some(Cow::Borrowed("/a/b"))));
        assert!(matches!(e.branch, Some(Cow::Owned(ref s)) if s == "fé"));
    }

    #[test]
    fn time_values() {
        let t = |s: &str| {
            let line = format!(r#"{{"timestamp": {s}}}"#);
            let r: Base<'_> = parse_str(&line).unwrap();
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
        assert_eq!(r.take_folder(None).as_deref(), Some("/second"));
        // A later null overrides an earlier value, as dict assignment does.
        let mut r = rec(r#"{"cwd": "/first", "cwd": null}"#);
        assert_eq!(r.take_folder(None), None);
    }

    #[test]
    fn turn_context_folder_comes_from_payload_only() {
        let mut r = rec(r#"{"type": "turn_context", "cwd": "/top"}"#);
        let mut p = Loose::Str("/p".into());
        assert_eq!(r.take_folder(Some(&mut p)).as_deref(), Some("/p"));
        let mut r = rec(r#"{"type": "turn_context", "cwd": "/top"}"#);
        assert_eq!(r.take_folder(None), None);
        let mut r = rec(r#"{"type": "turn_context"}"#);
        assert_eq!(r.take_folder(Some(&mut Loose::Num(0.into()))), None);
        let mut r = rec(r#"{"type": "session_meta"}"#);
        assert_eq!(r.take_folder(Some(&mut Loose::Str("/p".into()))), None);
    }

    #[test]
    fn line_shapes() {
        let p = |s| parse_str::<Base<'_>>(s).map(|_| ());
        assert_eq!(p("5").unwrap_err(), Skip::NotObject);
        assert_eq!(p("[1]").unwrap_err(), Skip::NotObject);
        assert_eq!(p(r#""s""#).unwrap_err(), Skip::NotObject);
        assert_eq!(p("{").unwrap_err(), Skip::InvalidJson);
        assert_eq!(p("{} x").unwrap_err(), Skip::InvalidJson);
        assert_eq!(p(r#"{"a": NaN}"#).unwrap_err(), Skip::InvalidJson);
        // A lone surrogate in a top-level string: the line cannot be decoded.
        assert_eq!(p(r#"{"cwd": "\ud83d"}"#).unwrap_err(), Skip::InvalidJson);
        // In a skipped value it costs nothing.
        assert_eq!(p(r#"{"cwd": "/w", "toolUseResult": "\ud800 x"}"#), Ok(()));
    }
}

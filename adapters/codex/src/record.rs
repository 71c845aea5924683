//! The Codex record schema: the keys of one rollout line this adapter decodes, and
//! Codex's vocabulary of record types.
//!
//! A [`Record`] is a [`LineRecord`](transcope_adapter_common::record::LineRecord): the keys every format shares ([`Base`]) plus
//! Codex's own — the envelope `payload` ([`Payload`]: the handful of keys any rule
//! reads), and the legacy layout's top-level `id` (the session header), `role` and
//! `content` (bare messages) — and `message`, reduced to its Claude-rule marker texts,
//! because the reference reads a legacy file as Claude. The `type` may come after the
//! payload, so everything is decoded whatever the type, and the rules pick from it.
//!
//! ```
//! use transcope_adapter_codex::record::{kind, Record};
//! use transcope_adapter_common::record::{parse, TypeField};
//! use transcope_core::{EntryKind, LinePos};
//!
//! let line = br#"{"type":"turn_context","timestamp":"2025-01-01T00:00:00Z","payload":{"cwd":"/w"}}"#;
//! let mut rec: Record<'_> = parse(line, LinePos::default()).unwrap();
//! assert!(matches!(&rec.base.ty, TypeField::Str(t) if t == "turn_context"));
//! let entry = rec.base_entry(LinePos::default());
//! assert_eq!(entry.cwd.as_deref(), Some("/w"));
//! assert_eq!(kind("turn_context"), Some(EntryKind::Context));
//! ```

use std::borrow::Cow;

use serde::de::MapAccess;
use serde_json::value::RawValue;
use transcope_adapter_common::de::{skip_value, FromMap, Loose, Obj};
use transcope_adapter_common::message::message_texts;
use transcope_adapter_common::record::{Base, NestedRecord, TypeField};
use transcope_core::entry::{Entry, LinePos};

/// The top-level keys of one Codex line that any rule reads. Everything else in the
/// line is skipped without allocation.
#[derive(Debug, Default)]
pub struct Record<'a> {
    /// The keys every format shares.
    pub base: Base<'a>,
    /// The Claude-rule marker-text candidates of `message.content`, decoded whatever
    /// the `type` (legacy files: only `assistant` lines use them).
    pub message_texts: Option<Vec<Cow<'a, str>>>,
    /// `payload` (envelope) when it is an object.
    pub payload: Option<Payload<'a>>,
    /// Whether the line has a `payload` key at all (even a non-object one).
    pub has_payload: bool,
    /// `id` (legacy header).
    pub id: Loose<'a>,
    /// `role` (legacy bare message).
    pub role: Loose<'a>,
    /// `content` (legacy bare message), undecoded.
    pub content: Option<&'a RawValue>,
}

impl<'de> FromMap<'de> for Record<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "message" => self.message_texts = message_texts(map)?,
            "payload" => {
                self.has_payload = true;
                self.payload = map.next_value::<Obj<Payload<'de>>>()?.0;
            }
            "id" => self.id = map.next_value()?,
            "role" => self.role = map.next_value()?,
            "content" => self.content = Some(map.next_value()?),
            _ => {
                if !self.base.field(key, map)? {
                    skip_value(map)?
                }
            }
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
    /// `payload.info` (`token_count`), undecoded.
    pub info: Option<&'a RawValue>,
    /// `payload.model` (`turn_context`).
    pub model: Loose<'a>,
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
            "info" => self.info = Some(map.next_value()?),
            "model" => self.model = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// A [`LineRecord`](transcope_adapter_common::record::LineRecord) whose fallback
/// shape is [`LazyNested`](transcope_adapter_common::record::LazyNested): `message` and
/// `payload` captured raw and decoded one by one afterwards, so a string serde_json
/// cannot decode in one of them costs only that sub-object. A payload that does not
/// decode is still there: the line is no legacy header.
impl<'de> NestedRecord<'de> for Record<'de> {
    type Payload = Payload<'de>;

    fn nested(&mut self) -> (&mut Option<Vec<Cow<'de, str>>>, &mut Option<Payload<'de>>) {
        (&mut self.message_texts, &mut self.payload)
    }

    fn saw_payload(&mut self) {
        self.has_payload = true;
    }
}

impl<'a> Record<'a> {
    /// [`Base::base_entry`] with this line's `payload.cwd` (the `turn_context` folder).
    pub fn base_entry(&mut self, pos: LinePos) -> Entry<'a> {
        let payload_cwd = self.payload.as_mut().map(|p| &mut p.cwd);
        self.base.base_entry(pos, payload_cwd)
    }

    /// Whether this is a pre-envelope session header (transcript-formats §2.3): no
    /// `type`, an `id`, no `payload`.
    pub fn is_legacy_header(&self) -> bool {
        matches!(self.base.ty, TypeField::Missing) && self.id.is_present() && !self.has_payload
    }
}

/// The four envelope record types (the reference's Codex detection).
pub const ENVELOPE_TYPES: [&str; 4] =
    ["session_meta", "response_item", "event_msg", "turn_context"];

pub use transcope_adapter_common::record::kind;

#[cfg(test)]
mod tests {
    use super::*;
    use transcope_adapter_common::record::parse_str;

    #[test]
    fn payload_keys_whatever_the_type_and_last_wins() {
        let r: Record<'_> = parse_str(
            r#"{"payload":{"type":"message","role":"user","role":"assistant","id":"i","cwd":"/p"},"type":"response_item"}"#,
        )
        .unwrap();
        let p = r.payload.unwrap();
        assert_eq!(
            (
                p.ty.as_str(),
                p.role.as_str(),
                p.id.as_str(),
                p.cwd.as_str()
            ),
            (Some("message"), Some("assistant"), Some("i"), Some("/p"))
        );
        assert!(r.has_payload);
    }

    #[test]
    fn legacy_header_shape() {
        let h = |s| parse_str::<Record<'_>>(s).unwrap().is_legacy_header();
        assert!(h(r#"{"id":"x","timestamp":"t"}"#));
        assert!(h(r#"{"id":null}"#));
        assert!(!h(r#"{"id":"x","payload":5}"#));
        assert!(!h(r#"{"id":"x","type":"user"}"#));
        assert!(!h(r#"{"timestamp":"t"}"#));
    }

    #[test]
    fn a_bad_nested_string_costs_only_its_payload() {
        let mut r: Record<'_> = parse_str(
            r#"{"type":"turn_context","cwd":"/top","payload":{"cwd":"/p","role":"\ud800"}}"#,
        )
        .unwrap();
        assert!(r.payload.is_none() && r.has_payload);
        assert_eq!(r.base_entry(LinePos::default()).cwd, None);
    }
}

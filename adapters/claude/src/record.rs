//! Claude Code's record schema: the keys of one line this adapter decodes, and its
//! vocabulary of record types.
//!
//! A [`Record`] is a [`LineRecord`](transcope_adapter_common::record::LineRecord): the keys every format shares ([`Base`]: `type`,
//! `timestamp`, `cwd`, `gitBranch`, the ids) plus Claude's own — `message`, reduced to
//! its marker-text candidates while it streams by ([`transcope_adapter_common::message`])
//! — and `payload.cwd`, because the reference's folder rule takes a `turn_context`'s
//! folder from there in every file, a Claude one included. Keys the Claude rules do
//! not read but this adapter has always decoded (top-level `id` and `role`, and the
//! other `payload` keys) are [`Checked`]: a line whose value there cannot be decoded
//! is skipped, or loses its payload, exactly as before the formats were split.
//!
//! ```
//! use transcope_adapter_claude::record::{self, Record};
//! use transcope_adapter_common::record::{parse, TypeField};
//! use transcope_core::LinePos;
//!
//! let line = br#"{"type":"turn_context","timestamp":"2025-01-01T00:00:00Z","payload":{"cwd":"/w"}}"#;
//! let mut rec: Record<'_> = parse(line, LinePos::default()).unwrap();
//! assert!(matches!(&rec.base.ty, TypeField::Str(t) if t == "turn_context"));
//! let entry = rec.base_entry(LinePos::default());
//! assert_eq!(entry.cwd.as_deref(), Some("/w"));
//! assert_eq!(entry.time.as_str(), Some("2025-01-01T00:00:00Z"));
//! assert_eq!(record::kind("turn_context"), Some(transcope_core::EntryKind::Context));
//! ```

use std::borrow::Cow;

use serde::de::MapAccess;
use transcope_adapter_common::de::{skip_value, Checked, FromMap, Loose, Obj};
use transcope_adapter_common::message::message_parts;
use transcope_adapter_common::record::{Base, NestedRecord};
use transcope_core::entry::{Entry, EntryKind, LinePos};

/// The keys of one Claude transcript line that any rule reads. Everything else in the
/// line is skipped without allocation.
#[derive(Debug, Default)]
pub struct Record<'a> {
    /// The keys every format shares.
    pub base: Base<'a>,
    /// The Claude marker-text candidates of `message.content` (see
    /// [`transcope_adapter_common::message`]), decoded whatever the `type`; `None` when
    /// `message` is missing, not an object, or has no string/list `content`. Only
    /// `assistant` lines use them.
    pub message_texts: Option<Vec<Cow<'a, str>>>,
    /// `payload` when it is an object (only its `cwd` is read: the `turn_context`
    /// folder rule).
    pub payload: Option<Payload<'a>>,
    /// `message.usage` (with `message.model` and `message.id`), when present.
    pub usage: Option<transcope_core::Usage<'a>>,
    /// `requestId`.
    pub request_id: Loose<'a>,
}

impl<'de> FromMap<'de> for Record<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "message" => (self.message_texts, self.usage) = message_parts(map)?,
            "requestId" => self.request_id = map.next_value()?,
            _ => shared_field(&mut self.base, &mut self.payload, key, map)?,
        }
        Ok(())
    }
}

/// A key both record shapes read alike: `payload`, the checked `id` and `role`, the
/// shared keys ([`Base`]); anything else skipped.
fn shared_field<'de, A: MapAccess<'de>>(
    base: &mut Base<'de>,
    payload: &mut Option<Payload<'de>>,
    key: &str,
    map: &mut A,
) -> Result<(), A::Error> {
    match key {
        "payload" => *payload = map.next_value::<Obj<Payload<'de>>>()?.0,
        "id" | "role" => {
            map.next_value::<Checked>()?;
        }
        _ => {
            if !base.field(key, map)? {
                skip_value(map)?
            }
        }
    }
    Ok(())
}

/// The `payload` of a line, as the Claude rules see it: its `cwd`.
#[derive(Debug, Default)]
pub struct Payload<'a> {
    /// `payload.cwd`.
    pub cwd: Loose<'a>,
}

impl<'de> FromMap<'de> for Payload<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "cwd" => self.cwd = map.next_value()?,
            "type" | "role" | "id" | "session_id" | "last_agent_message" => {
                map.next_value::<Checked>()?;
            }
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// A [`LineRecord`](transcope_adapter_common::record::LineRecord) whose fallback
/// shape is [`LazyNested`](transcope_adapter_common::record::LazyNested): `message` and
/// `payload` captured raw and decoded one by one afterwards, so a string serde_json
/// cannot decode in one of them costs only that sub-object.
impl<'de> NestedRecord<'de> for Record<'de> {
    type Payload = Payload<'de>;

    fn nested(&mut self) -> (&mut Option<Vec<Cow<'de, str>>>, &mut Option<Payload<'de>>) {
        (&mut self.message_texts, &mut self.payload)
    }
}

impl<'a> Record<'a> {
    /// The folder by the reference's rule ([`Base::take_folder`]): `turn_context` →
    /// `payload.cwd`, any other record → top-level `cwd`.
    pub fn take_folder(&mut self) -> Option<Cow<'a, str>> {
        let payload_cwd = self.payload.as_mut().map(|p| &mut p.cwd);
        self.base.take_folder(payload_cwd)
    }

    /// [`Base::base_entry`] with this line's `payload.cwd`.
    pub fn base_entry(&mut self, pos: LinePos) -> Entry<'a> {
        let payload_cwd = self.payload.as_mut().map(|p| &mut p.cwd);
        self.base.base_entry(pos, payload_cwd)
    }
}

/// A Claude line read for its usage alone: the shared keys, `requestId` and
/// `message.usage`/`model`/`id`, the message's content skipped unread (a line only a
/// usage stage wants: its entry has no texts, which no stage asked for). The keys a
/// [`Record`] checks are checked the same way, so the same lines are skipped.
#[derive(Debug, Default)]
pub struct UsageRecord<'a> {
    /// The keys every format shares.
    pub base: Base<'a>,
    /// `message.usage` with its model and id.
    pub usage: Option<transcope_core::Usage<'a>>,
    /// `requestId`.
    pub request_id: Loose<'a>,
    texts: Option<Vec<Cow<'a, str>>>,
    payload: Option<Payload<'a>>,
}

impl<'de> FromMap<'de> for UsageRecord<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "message" => self.usage = transcope_adapter_common::message::message_usage(map)?,
            "requestId" => self.request_id = map.next_value()?,
            _ => shared_field(&mut self.base, &mut self.payload, key, map)?,
        }
        Ok(())
    }
}

impl<'de> NestedRecord<'de> for UsageRecord<'de> {
    type Payload = Payload<'de>;

    fn nested(&mut self) -> (&mut Option<Vec<Cow<'de, str>>>, &mut Option<Payload<'de>>) {
        (&mut self.texts, &mut self.payload)
    }
}

impl<'a> UsageRecord<'a> {
    /// [`Base::base_entry`] with this line's `payload.cwd`.
    pub fn base_entry(&mut self, pos: LinePos) -> Entry<'a> {
        let payload_cwd = self.payload.as_mut().map(|p| &mut p.cwd);
        self.base.base_entry(pos, payload_cwd)
    }
}

pub use transcope_adapter_common::record::kind;

/// Whether `ty` is one of the Claude Code line types (used by sniffing): the types
/// [`kind`] maps to Claude's kinds.
pub fn is_claude_type(ty: &str) -> bool {
    matches!(
        kind(ty),
        Some(EntryKind::User | EntryKind::Assistant | EntryKind::Summary | EntryKind::System)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use transcope_adapter_common::record::parse_str;
    use transcope_core::adapter::Skip;

    fn rec(s: &str) -> Record<'_> {
        parse_str(s).unwrap()
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
            parse_str::<Record<'_>>(r#"{"cwd": "\ud83d"}"#).unwrap_err(),
            Skip::InvalidJson
        );
    }

    #[test]
    fn checked_keys_fail_as_decoded_keys_do() {
        // A bad top-level `id` or `role` fails the line, as it always has.
        for line in [
            r#"{"type":"user","id":"\ud800"}"#,
            r#"{"type":"user","role":1e400}"#,
        ] {
            assert_eq!(
                parse_str::<Record<'_>>(line).unwrap_err(),
                Skip::InvalidJson,
                "{line}"
            );
        }
        // A bad payload key costs the payload (and so a turn_context's folder).
        let mut r = rec(r#"{"type":"turn_context","payload":{"cwd":"/p","role":"\ud800"}}"#);
        assert_eq!(r.take_folder(), None);
        // Undecoded keys cost nothing.
        let mut r = rec(
            r#"{"type":"turn_context","content":"\ud800","payload":{"cwd":"/p","content":"\ud800"}}"#,
        );
        assert_eq!(r.take_folder().as_deref(), Some("/p"));
    }

    #[test]
    fn vocabulary() {
        assert!(is_claude_type("user") && is_claude_type("atis-latch"));
        assert!(!is_claude_type("session_meta") && !is_claude_type("nope"));
        assert_eq!(kind("event_msg"), Some(EntryKind::Event));
        assert_eq!(kind("world_state"), Some(EntryKind::Other));
        assert_eq!(kind("nope"), None);
    }
}

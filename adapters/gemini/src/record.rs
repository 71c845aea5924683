//! One Gemini CLI message, read from its raw JSON without building a tree.
//!
//! Both on-disk forms hold the same `MessageRecord` (FORMAT.md): a JSON object with
//! `id`, `timestamp`, `type` and `content` (a string, one part, or an array of parts
//! and strings), plus fields this crate does not read (`thoughts`, `toolCalls`,
//! `tokens`, `model`, `displayContent`). [`Message::parse`] borrows the four fields it
//! needs as [`RawValue`]s and decodes only those, so a large tool result costs one
//! skim, never an allocation.
//!
//! ```
//! use transcope_adapter_gemini::record::Message;
//! use transcope_core::EntryKind;
//! let m = Message::parse(r#"{"id":"a","timestamp":"t","type":"gemini","content":[{"text":"x"},{"text":"y","thought":true},{"text":"z"}]}"#).unwrap();
//! assert_eq!(m.kind, EntryKind::Assistant);
//! assert_eq!(m.text.as_deref(), Some("xz"));
//! ```

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use transcope_core::{EntryKind, TimeValue};

/// The fields of a message record this crate reads; everything else is skipped.
#[derive(Deserialize)]
struct RawMessage<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
}

/// Every top-level field any record of either form may carry that this crate reads:
/// a message's four, a rewind's `$rewindTo`, an update's `$set`, and the session
/// header's (`sessionId`, `projectHash`, `startTime`, and `messages` for a document or
/// a one-line legacy record).
#[derive(Deserialize)]
pub(crate) struct RawRecord<'a> {
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub timestamp: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "type")]
    pub kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub tokens: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub model: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "$rewindTo")]
    pub rewind_to: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "$set")]
    pub set: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "sessionId")]
    pub session_id: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "projectHash")]
    pub project_hash: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "startTime")]
    pub start_time: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub messages: Option<&'a RawValue>,
}

/// The fields of a `$set` update this crate reads.
#[derive(Deserialize)]
pub(crate) struct RawSet<'a> {
    #[serde(borrow, default, rename = "sessionId")]
    pub session_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub messages: Option<&'a RawValue>,
}

/// A message, reduced to what an [`Entry`](transcope_core::Entry) needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// `id` when it is a string.
    pub id: Option<Cow<'a, str>>,
    /// `user` → `User`, `gemini` → `Assistant`, any other or no `type` → `Other`.
    pub kind: EntryKind,
    /// `timestamp`, verbatim.
    pub time: TimeValue<'a>,
    /// For a `gemini` message only: its text, the text parts concatenated with no
    /// separator (thought parts excluded); `None` when that is empty.
    pub text: Option<Cow<'a, str>>,
    /// For a `gemini` message with a `tokens` object: its usage (with `model`, keyed
    /// by `id`).
    pub usage: Option<transcope_core::Usage<'a>>,
}

impl<'a> Message<'a> {
    /// Read one message object; `None` when `json` is not an object of that shape.
    pub fn parse(json: &'a str) -> Option<Message<'a>> {
        // A derived struct would also accept an array (as a tuple): refuse it first.
        if !json.trim_start().starts_with('{') {
            return None;
        }
        let raw: RawMessage<'a> = serde_json::from_str(json).ok()?;
        Some(Message::from_raw(&raw))
    }

    fn from_raw(raw: &RawMessage<'a>) -> Message<'a> {
        Message::from_fields(raw.id, raw.timestamp, raw.kind, raw.content)
            .with_usage(raw.tokens, raw.model)
    }

    /// The message with its usage, from its raw `tokens` and `model` (a `gemini`
    /// message's only).
    pub(crate) fn with_usage(
        mut self,
        tokens: Option<&'a RawValue>,
        model: Option<&'a RawValue>,
    ) -> Message<'a> {
        if self.kind != EntryKind::Assistant {
            return self;
        }
        let tokens = tokens.and_then(
            transcope_adapter_common::de::decode_obj::<
                transcope_adapter_common::usage::Counted<crate::agent::GeminiTokens>,
            >,
        );
        // An empty or all-zero `tokens` says nothing was counted yet.
        let tokens = tokens.map(|t| t.tokens()).filter(|t| !t.is_zero());
        self.usage = tokens.map(|t| transcope_core::Usage {
            message_id: self.id.clone(),
            request_id: None,
            model: model.and_then(string),
            tokens: Some(t),
            cumulative: false,
        });
        self
    }

    /// A message from its four raw fields.
    pub(crate) fn from_fields(
        id: Option<&'a RawValue>,
        timestamp: Option<&'a RawValue>,
        kind: Option<&'a RawValue>,
        content: Option<&'a RawValue>,
    ) -> Message<'a> {
        let kind = match kind.and_then(string).as_deref() {
            Some("user") => EntryKind::User,
            Some("gemini") => EntryKind::Assistant,
            _ => EntryKind::Other,
        };
        let text = if kind == EntryKind::Assistant {
            content.and_then(content_text).filter(|t| !t.is_empty())
        } else {
            None
        };
        Message {
            id: id.and_then(string),
            kind,
            time: time_value(timestamp),
            text,
            usage: None,
        }
    }
}

/// The string a raw JSON value holds, borrowed when it has no escapes; `None` for any
/// other JSON type.
pub fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    if let Ok(s) = serde_json::from_str::<&str>(text) {
        return Some(Cow::Borrowed(s));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// A record's `timestamp` as the neutral model keeps it: a string verbatim, `null` or
/// absent as missing, anything else as its compact JSON text.
pub fn time_value(raw: Option<&RawValue>) -> TimeValue<'_> {
    let Some(raw) = raw else {
        return TimeValue::Missing;
    };
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => string(raw).map_or(TimeValue::Missing, TimeValue::Str),
        Some(b'n') => TimeValue::Missing,
        Some(b'[' | b'{') => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => TimeValue::Other(Cow::Owned(v.to_string())),
            Err(_) => TimeValue::Other(Cow::Borrowed(text)),
        },
        _ => TimeValue::Other(Cow::Borrowed(text)),
    }
}

/// The fields of a part this crate reads.
#[derive(Deserialize)]
struct RawPart<'a> {
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    thought: Option<&'a RawValue>,
}

/// The text of a `content` value (`PartListUnion`): a string is itself; a part is its
/// `text` unless it is a thought (`"thought": true`); an array is its elements' texts
/// concatenated in order with no separator. Other values and parts without a string
/// `text` (function calls, inline data) contribute nothing.
pub fn content_text(raw: &RawValue) -> Option<Cow<'_, str>> {
    match raw.get().as_bytes().first()? {
        b'"' => string(raw),
        b'{' => part_text(raw),
        b'[' => {
            let items: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
            let mut texts = items.iter().filter_map(|item| {
                if item.get().starts_with('"') {
                    string(item)
                } else {
                    part_text(item)
                }
            });
            let first = texts.next()?;
            match texts.next() {
                None => Some(first),
                Some(second) => {
                    let mut all = first.into_owned();
                    all.push_str(&second);
                    texts.for_each(|t| all.push_str(&t));
                    Some(Cow::Owned(all))
                }
            }
        }
        _ => None,
    }
}

fn part_text(raw: &RawValue) -> Option<Cow<'_, str>> {
    if !raw.get().trim_start().starts_with('{') {
        return None;
    }
    let part: RawPart<'_> = serde_json::from_str(raw.get()).ok()?;
    if part.thought.is_some_and(|t| t.get() == "true") {
        return None;
    }
    part.text.and_then(string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(content: &str) -> Option<String> {
        let raw: &RawValue = serde_json::from_str(content).unwrap();
        content_text(raw).map(Cow::into_owned)
    }

    #[test]
    fn content_shapes() {
        assert_eq!(text(r#""a\nb""#).as_deref(), Some("a\nb"));
        assert_eq!(text(r#"{"text":"p"}"#).as_deref(), Some("p"));
        assert_eq!(text(r#"{"text":"p","thought":true}"#), None);
        assert_eq!(
            text(r#"{"text":"p","thought":false}"#).as_deref(),
            Some("p")
        );
        assert_eq!(
            text(r#"["a",{"text":"b"},{"functionCall":{}},{"text":7}]"#).as_deref(),
            Some("ab")
        );
        assert_eq!(text("[]"), None);
        assert_eq!(text("7"), None);
        assert_eq!(text("null"), None);
    }

    #[test]
    fn kinds_and_times() {
        fn m(s: &str) -> Message<'_> {
            Message::parse(s).unwrap()
        }
        assert_eq!(m(r#"{"type":"user","content":"x"}"#).kind, EntryKind::User);
        assert_eq!(m(r#"{"type":"user","content":"x"}"#).text, None);
        assert_eq!(m(r#"{"type":"info","content":"x"}"#).kind, EntryKind::Other);
        assert_eq!(m(r#"{"type":7}"#).kind, EntryKind::Other);
        assert_eq!(m(r#"{"timestamp":7}"#).time, TimeValue::Other("7".into()));
        assert_eq!(m(r#"{"timestamp":null}"#).time, TimeValue::Missing);
        assert_eq!(m(r#"{"type":"gemini","content":""}"#).text, None);
        assert!(Message::parse("[]").is_none());
    }
}

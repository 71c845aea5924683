//! Claude-rule marker texts: which parts of an `assistant` line's `message` the
//! marker scan reads (and the `message.usage` object beside them, [`MessageUsage`]).
//!
//! The rule is Claude Code's, but two adapters apply it: Claude's, and Codex's to a
//! legacy (pre-envelope) file, which the reference reads as Claude. So it lives here.
//!
//! Rule (scope-log.md §5.2, the reference's Claude record iterator plus the marker
//! writer's "non-empty text" filter): for an entry of type `assistant`, when
//! `message` is an object —
//!
//! * `message.content` a string: that string is one text (when non-empty);
//! * `message.content` a list: each object block whose `type` is `"text"` and whose
//!   `text` is a non-empty string is one text, in order; `thinking`, `tool_use`,
//!   `tool_result` and other blocks are skipped without being decoded;
//! * anything else: no text.
//!
//! Where the reference would raise (a `text` that is a number or a list reaches its
//! `"\n".join`), this port skips the block instead.
//!
//! An adapter's record decodes every line's `message` as a [`Message`] while it
//! decodes the line (the `type` may come later), and keeps the result only for
//! `assistant` lines; [`assistant_texts`] is the same rule on its own.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess};
use serde_json::value::RawValue;

use crate::de::{decode_obj, deserialize_shape, skip_value, FromMap, FromShape, Loose, Obj};
use crate::usage::{Counted, Shape};

/// The `message.usage` object of the rule: the counts of the request the message
/// answers. The Claude adapter declares it as its agent's token shape (and a Codex
/// legacy file's `message`, read as Claude, has the same object).
pub struct MessageUsage;

impl Shape for MessageUsage {
    /// `input_tokens` (the cache reads and writes apart), `output_tokens` (thinking
    /// included), `cache_creation_input_tokens` with its hour's part in
    /// `cache_creation.ephemeral_1h_input_tokens`, `cache_read_input_tokens`.
    const TOKENS: transcope_core::agent::TokenShape = transcope_core::agent::TokenShape {
        cache_read: Some("cache_read_input_tokens"),
        cache_creation: Some("cache_creation_input_tokens"),
        cache_creation_1h: Some(("cache_creation", "ephemeral_1h_input_tokens")),
        ..transcope_core::agent::TokenShape::new("input_tokens", "output_tokens")
    };
}

/// `message.content`, reduced to its marker texts.
#[derive(Debug, Default)]
enum Content<'a> {
    #[default]
    Missing,
    Texts(Vec<Cow<'a, str>>),
}

impl<'de> FromShape<'de> for Content<'de> {
    const STR: bool = true;

    fn from_str(s: Cow<'de, str>) -> Self {
        Content::Texts(if s.is_empty() { Vec::new() } else { vec![s] })
    }

    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut texts = Vec::new();
        while let Some(Obj(block)) = seq.next_element::<Obj<Block<'de>>>()? {
            if let Some(Block {
                is_text: true,
                text: Loose::Str(t),
            }) = block
            {
                if !t.is_empty() {
                    texts.push(t);
                }
            }
        }
        Ok(Content::Texts(texts))
    }
}

impl<'de> Deserialize<'de> for Content<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_shape(d)
    }
}

/// One content block: is it a `text` block, and its `text`.
#[derive(Debug, Default)]
struct Block<'a> {
    is_text: bool,
    text: Loose<'a>,
}

impl<'de> FromMap<'de> for Block<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.is_text = map.next_value::<Loose<'de>>()?.as_str() == Some("text"),
            "text" => self.text = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// The `message` object: its `content` (the marker texts) and, for token usage, its
/// `usage`, `model` and `id`.
#[derive(Debug, Default)]
pub struct Message<'a> {
    content: Content<'a>,
    usage: Option<Counted<MessageUsage>>,
    model: Loose<'a>,
    id: Loose<'a>,
}

impl<'a> Message<'a> {
    /// The marker-text candidates, when `content` is a string or a list.
    pub fn texts(self) -> Option<Vec<Cow<'a, str>>> {
        match self.content {
            Content::Missing => None,
            Content::Texts(t) => Some(t),
        }
    }

    /// The message's token usage (with its model and id), when it has a `usage`
    /// object; the marker texts stay for [`Message::texts`].
    pub fn take_usage(&mut self) -> Option<transcope_core::Usage<'a>> {
        let usage = self.usage.take()?;
        Some(transcope_core::Usage {
            message_id: std::mem::take(&mut self.id).into_str(),
            request_id: None,
            model: std::mem::take(&mut self.model).into_str(),
            tokens: Some(usage.tokens()),
            cumulative: false,
        })
    }
}

impl<'de> FromMap<'de> for Message<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "content" => self.content = map.next_value()?,
            "usage" => self.usage = map.next_value::<Obj<Counted<MessageUsage>>>()?.0,
            "model" => self.model = map.next_value()?,
            "id" => self.id = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// The `message` value seen in one pass: its marker texts (as [`message_texts`]) and
/// its usage ([`Message::take_usage`]).
#[allow(clippy::type_complexity)]
pub fn message_parts<'de, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<
    (
        Option<Vec<Cow<'de, str>>>,
        Option<transcope_core::Usage<'de>>,
    ),
    A::Error,
> {
    Ok(match map.next_value::<Obj<Message<'de>>>()?.0 {
        Some(mut m) => {
            let usage = m.take_usage();
            (m.texts(), usage)
        }
        None => (None, None),
    })
}

/// The marker-text candidates of a `message` value seen in one pass: `None` when it is
/// not an object or has no string/list `content`.
pub fn message_texts<'de, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<Option<Vec<Cow<'de, str>>>, A::Error> {
    Ok(map
        .next_value::<Obj<Message<'de>>>()?
        .0
        .and_then(Message::texts))
}

/// [`message_texts`] of a `message` captured raw (the lazy fallback of a record):
/// `None` also when it does not decode.
pub fn raw_message_texts(raw: Option<&RawValue>) -> Option<Vec<Cow<'_, str>>> {
    raw.and_then(decode_obj::<Message<'_>>)
        .and_then(Message::texts)
}

/// Append the marker texts of a Claude `assistant` line's `message` to `out`.
///
/// ```
/// use serde_json::value::RawValue;
/// let msg: &RawValue = serde_json::from_str(
///     r#"{"content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"a"},{"type":"text","text":""},{"type":"text","text":"b"}]}"#,
/// ).unwrap();
/// let mut out = Vec::new();
/// transcope_adapter_common::message::assistant_texts(Some(msg), &mut out);
/// assert_eq!(out, ["a", "b"]);
/// ```
pub fn assistant_texts<'a>(message: Option<&'a RawValue>, out: &mut Vec<Cow<'a, str>>) {
    let Some(raw) = message else { return };
    if let Some(Message {
        content: Content::Texts(texts),
        ..
    }) = decode_obj::<Message<'a>>(raw)
    {
        if out.is_empty() {
            *out = texts;
        } else {
            out.extend(texts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(msg: &str) -> Vec<String> {
        let raw: &RawValue = serde_json::from_str(msg).unwrap();
        let mut out = Vec::new();
        assistant_texts(Some(raw), &mut out);
        out.into_iter().map(Cow::into_owned).collect()
    }

    #[test]
    fn content_shapes() {
        assert_eq!(texts(r#"{"content": "plain"}"#), ["plain"]);
        assert!(texts(r#"{"content": ""}"#).is_empty());
        assert!(texts(r#"{"content": 5}"#).is_empty());
        assert!(texts(r#"{"content": null}"#).is_empty());
        assert!(texts(r#"{"content": {"type": "text", "text": "x"}}"#).is_empty());
        assert!(texts(r#"{}"#).is_empty());
        assert!(texts(r#""not an object""#).is_empty());
        assert_eq!(
            texts(
                r#"{"content": [1, "s", null, {"text": "no type"}, {"type": "text"},
                {"type": "text", "text": 5}, {"text": "late type", "type": "text"},
                {"type": "tool_use", "input": {"text": "x"}}, {"type": "text", "text": "end"}]}"#
            ),
            ["late type", "end"]
        );
    }

    #[test]
    fn duplicate_content_last_wins() {
        assert_eq!(
            texts(r#"{"content": "first", "content": [{"type": "text", "text": "second"}]}"#),
            ["second"]
        );
    }
}

/// A `message` read for its usage alone (`usage`, `model`, `id`; the content skipped
/// unread): what a line only a usage stage wants costs.
#[derive(Debug, Default)]
struct UsageOnly<'a> {
    usage: Option<Counted<MessageUsage>>,
    model: Loose<'a>,
    id: Loose<'a>,
}

impl<'de> FromMap<'de> for UsageOnly<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "usage" => self.usage = map.next_value::<Obj<Counted<MessageUsage>>>()?.0,
            "model" => self.model = map.next_value()?,
            "id" => self.id = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// The usage of a `message` value, its content skipped unread.
pub fn message_usage<'de, A: MapAccess<'de>>(
    map: &mut A,
) -> Result<Option<transcope_core::Usage<'de>>, A::Error> {
    Ok(map.next_value::<Obj<UsageOnly<'de>>>()?.0.and_then(|m| {
        Some(transcope_core::Usage {
            message_id: m.id.into_str(),
            request_id: None,
            model: m.model.into_str(),
            tokens: Some(m.usage?.tokens()),
            cumulative: false,
        })
    }))
}

//! Claude marker texts: which parts of an `assistant` line the marker scan reads.
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
//! [`crate::record::parse`] applies this rule to every line's `message` while it
//! decodes the line (the `type` may come later), and the adapters keep the result
//! only for `assistant` lines; [`assistant_texts`] is the same rule on its own.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::record::{decode_obj, skip_value, FromMap, Loose, Obj};

/// `message.content`, reduced to its marker texts.
#[derive(Debug, Default)]
enum Content<'a> {
    #[default]
    Missing,
    Texts(Vec<Cow<'a, str>>),
}

impl<'de> Deserialize<'de> for Content<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::Missing)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::Missing)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::Missing)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::Missing)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Missing)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Content::Missing)
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(one(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(one(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(one(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
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
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                IgnoredAny.visit_map(map).map(|_| Content::Missing)
            }
        }
        d.deserialize_any(V)
    }
}

fn one(s: Cow<'_, str>) -> Content<'_> {
    Content::Texts(if s.is_empty() { Vec::new() } else { vec![s] })
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

/// The `message` object: only `content` matters.
#[derive(Debug, Default)]
pub(crate) struct Message<'a> {
    content: Content<'a>,
}

impl<'a> Message<'a> {
    /// The marker-text candidates, when `content` is a string or a list.
    pub(crate) fn texts(self) -> Option<Vec<Cow<'a, str>>> {
        match self.content {
            Content::Missing => None,
            Content::Texts(t) => Some(t),
        }
    }
}

impl<'de> FromMap<'de> for Message<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "content" => self.content = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// Append the marker texts of a Claude `assistant` line's `message` to `out`.
///
/// ```
/// use serde_json::value::RawValue;
/// let msg: &RawValue = serde_json::from_str(
///     r#"{"content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"a"},{"type":"text","text":""},{"type":"text","text":"b"}]}"#,
/// ).unwrap();
/// let mut out = Vec::new();
/// transcope_adapter_claude::text::assistant_texts(Some(msg), &mut out);
/// assert_eq!(out, ["a", "b"]);
/// ```
pub fn assistant_texts<'a>(message: Option<&'a RawValue>, out: &mut Vec<Cow<'a, str>>) {
    let Some(raw) = message else { return };
    if let Some(Message {
        content: Content::Texts(texts),
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

//! One Qwen Code record (`ChatRecord`, written by the CLI's `ChatRecordingService` and,
//! for a sub-agent, its transcript writer), read in one pass over the line.
//!
//! Every record carries Claude Code's context keys — `uuid`, `parentUuid`,
//! `sessionId`, `timestamp`, `type`, `cwd`, `gitBranch`, and on a sub-agent's records
//! `agentId` and `isSidechain` — which the shared [`Base`] reads; and Gemini's
//! `Content` as its `message` (`{role, parts: [{text}, {text, thought: true},
//! {functionCall}, {functionResponse}]}`). An `assistant` record adds `model` and
//! `usageMetadata`. This module keeps `message` and `usageMetadata` raw and decodes
//! them only for an `assistant` record.
//!
//! ```
//! use transcope_adapter_qwen::record::{kind, Record};
//! use transcope_adapter_common::record::parse_str;
//! let r: Record<'_> = parse_str(r#"{"type":"tool_result","cwd":"/w","message":{"role":"user","parts":[]}}"#).unwrap();
//! assert_eq!(r.base.ty.as_str().and_then(kind), Some(transcope_core::EntryKind::Tool));
//! assert!(r.message.is_some() && r.usage.is_none());
//! ```

use std::borrow::Cow;

use serde::de::MapAccess;
use serde::Deserialize;
use serde_json::value::RawValue;
use transcope_adapter_common::de::{decode_obj, from_object, skip_value, FromMap, Loose};
use transcope_adapter_common::record::{Base, LineRecord};
use transcope_adapter_common::usage::{Counted, Shape};
use transcope_core::agent::TokenShape;
use transcope_core::{EntryKind, Tokens, Usage};

use crate::agent::QwenTokens;

/// The keys of one record any rule reads; everything else is skipped unread.
#[derive(Debug, Default)]
pub struct Record<'a> {
    /// The keys every format shares (Claude Code's context keys and ids).
    pub base: Base<'a>,
    /// `message`, undecoded.
    pub message: Option<&'a RawValue>,
    /// `model`.
    pub model: Loose<'a>,
    /// `usageMetadata`, undecoded.
    pub usage: Option<&'a RawValue>,
}

impl<'de> FromMap<'de> for Record<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "message" => self.message = Some(map.next_value()?),
            "model" => self.model = map.next_value()?,
            "usageMetadata" => self.usage = Some(map.next_value()?),
            _ => {
                if !self.base.field(key, map)? {
                    skip_value(map)?
                }
            }
        }
        Ok(())
    }
}

/// Nothing nested is decoded in the one pass (`message` and `usageMetadata` are kept
/// raw), so the fallback shape is the record itself.
impl<'de> LineRecord<'de> for Record<'de> {
    type Lazy = Record<'de>;
    fn finish(lazy: Record<'de>) -> Self {
        lazy
    }
}

/// The entry kind of a record of type `ty` (`ChatRecord.type`); `None` for a type the
/// CLI does not write.
pub fn kind(ty: &str) -> Option<EntryKind> {
    Some(match ty {
        "user" => EntryKind::User,
        "assistant" => EntryKind::Assistant,
        "tool_result" => EntryKind::Tool,
        "system" => EntryKind::System,
        _ => return None,
    })
}

/// The `message` fields this crate reads.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    parts: Option<&'a RawValue>,
}

/// The marker text of an assistant `message`: its text parts concatenated, thought
/// parts, function calls and responses left out (Gemini's `Content` rule,
/// [`transcope_adapter_gemini::record::content_text`]); `None` when that is empty or
/// the message is not of that shape.
pub fn message_text<'a>(message: &'a RawValue) -> Option<Cow<'a, str>> {
    let parts = from_object::<Message<'a>>(message.get())?.parts?;
    if !parts.get().starts_with('[') {
        return None;
    }
    transcope_adapter_gemini::record::content_text(parts).filter(|t| !t.is_empty())
}

/// [`QwenTokens`] with the thoughts counted apart from the candidates (Gemini's native
/// counting).
struct ThoughtsApart;

impl Shape for ThoughtsApart {
    const TOKENS: TokenShape = TokenShape {
        output_includes_reasoning: false,
        ..QwenTokens::TOKENS
    };
}

/// The record's own `totalTokenCount`, read as the input of a shape of its own.
struct Total;

impl Shape for Total {
    const TOKENS: TokenShape = TokenShape::new("totalTokenCount", "");
}

/// The tokens of a `usageMetadata` object: by the declared shape ([`QwenTokens`]:
/// the thoughts inside the candidates), unless its own `totalTokenCount` is the
/// prompt, the candidates and the thoughts added up (the thoughts counted apart),
/// when the thoughts are added to the output. `None` when it is no object or counts
/// nothing (the CLI writes `{}` for a reply it has no usage of).
pub fn tokens_of(usage: &RawValue) -> Option<Tokens> {
    // One read of the counts, turned into columns both ways (the same fields).
    let counted = decode_obj::<Counted<QwenTokens>>(usage)?;
    let within = counted.tokens();
    let apart = ThoughtsApart::TOKENS.tokens(counted.counts());
    let total = decode_obj::<Counted<Total>>(usage)?.tokens().input;
    let t = if apart.output > within.output && total == apart.total() {
        apart
    } else {
        within
    };
    (!t.is_zero()).then_some(t)
}

/// The usage of an assistant record: its `usageMetadata`'s tokens, keyed by its `uuid`,
/// with its `model`.
pub fn usage_of<'a>(
    usage: Option<&'a RawValue>,
    uuid: Option<&Cow<'a, str>>,
    model: Loose<'a>,
) -> Option<Usage<'a>> {
    let tokens = tokens_of(usage?)?;
    Some(Usage {
        message_id: uuid.cloned(),
        request_id: None,
        model: model.into_str().filter(|m| !m.is_empty()),
        tokens: Some(tokens),
        cumulative: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(json: &str) -> Option<Tokens> {
        tokens_of(serde_json::from_str(json).unwrap())
    }

    #[test]
    fn cached_tokens_leave_the_prompt_and_thoughts_stay_in_the_candidates() {
        let t = tokens(r#"{"promptTokenCount":1200,"candidatesTokenCount":150,"cachedContentTokenCount":800,"thoughtsTokenCount":40,"totalTokenCount":1350}"#).unwrap();
        assert_eq!(
            (
                t.input,
                t.cache_read,
                t.output,
                t.reasoning_output,
                t.total()
            ),
            (400, 800, 150, 40, 1350)
        );
    }

    #[test]
    fn thoughts_apart_are_added_when_the_total_says_so() {
        let t = tokens(r#"{"promptTokenCount":2000,"candidatesTokenCount":100,"thoughtsTokenCount":50,"totalTokenCount":2150}"#).unwrap();
        assert_eq!(
            (t.input, t.output, t.reasoning_output, t.total()),
            (2000, 150, 50, 2150)
        );
        // No total: the declared shape.
        let t = tokens(
            r#"{"promptTokenCount":2000,"candidatesTokenCount":100,"thoughtsTokenCount":50}"#,
        )
        .unwrap();
        assert_eq!((t.output, t.reasoning_output), (100, 50));
    }

    #[test]
    fn empty_or_odd_usage_counts_nothing() {
        assert_eq!(tokens("{}"), None);
        assert_eq!(tokens("[1]"), None);
        assert_eq!(tokens(r#"{"promptTokenCount":0}"#), None);
        let t = tokens(r#"{"promptTokenCount":"x","candidatesTokenCount":3}"#).unwrap();
        assert_eq!((t.input, t.output), (0, 3));
    }

    #[test]
    fn kinds() {
        assert_eq!(kind("assistant"), Some(EntryKind::Assistant));
        assert_eq!(kind("summary"), None);
    }
}

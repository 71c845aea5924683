//! One Copilot CLI event (`events.jsonl`: `{type, data, id, timestamp, parentId,
//! agentId?}`), read in one pass over the line, and the parts of its `data` the
//! adapter reads.
//!
//! ```
//! use transcope_adapter_copilot::record::{kind, Record};
//! use transcope_adapter_common::record::parse_str;
//! let r: Record<'_> = parse_str(r#"{"type":"session.start","id":"e1","data":{"context":{"cwd":"/w"}}}"#).unwrap();
//! assert_eq!(r.base.ty.as_str().and_then(kind), Some(transcope_core::EntryKind::Meta));
//! assert!(r.data.is_some());
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::de::MapAccess;
use serde::Deserialize;
use serde_json::value::RawValue;
use transcope_adapter_common::de::{decode_obj, from_object, skip_value, FromMap, Loose};
use transcope_adapter_common::record::{Base, LineRecord};
use transcope_adapter_common::usage::Counted;
use transcope_core::{EntryKind, Tokens};

use crate::agent::CopilotTokens;

/// The keys of one event any rule reads; everything else is skipped unread.
#[derive(Debug, Default)]
pub struct Record<'a> {
    /// `type`, `timestamp` and `agentId` (a sub-agent's events).
    pub base: Base<'a>,
    /// `id`.
    pub id: Loose<'a>,
    /// `parentId` (the event before: a linear chain).
    pub parent_id: Loose<'a>,
    /// `data`, undecoded.
    pub data: Option<&'a RawValue>,
}

impl<'de> FromMap<'de> for Record<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "id" => self.id = map.next_value()?,
            "parentId" => self.parent_id = map.next_value()?,
            "data" => self.data = Some(map.next_value()?),
            _ => {
                if !self.base.field(key, map)? {
                    skip_value(map)?
                }
            }
        }
        Ok(())
    }
}

/// Nothing nested is decoded in the one pass (`data` is kept raw).
impl<'de> LineRecord<'de> for Record<'de> {
    type Lazy = Record<'de>;
    fn finish(lazy: Record<'de>) -> Self {
        lazy
    }
}

/// The event types that carry a `context` (the folder and branch).
pub const CONTEXT_TYPES: [&str; 3] = ["session.start", "session.resume", "session.context_changed"];

/// The entry kind of an event of type `ty`; `None` for a type the schema does not
/// define.
pub fn kind(ty: &str) -> Option<EntryKind> {
    Some(match ty {
        "session.start" | "session.resume" => EntryKind::Meta,
        "session.context_changed" => EntryKind::Context,
        "user.message" => EntryKind::User,
        "assistant.message" => EntryKind::Assistant,
        "tool.execution_start" | "tool.execution_complete" => EntryKind::Tool,
        "session.shutdown"
        | "session.model_change"
        | "session.compaction_start"
        | "session.compaction_complete"
        | "session.truncation"
        | "session.info"
        | "session.error" => EntryKind::System,
        "abort"
        | "hook.start"
        | "hook.end"
        | "subagent.started"
        | "subagent.completed"
        | "subagent.failed"
        | "assistant.turn_start"
        | "assistant.turn_end"
        | "assistant.reasoning" => EntryKind::Event,
        _ => return None,
    })
}

/// The `data` keys this crate reads.
#[derive(Debug, Default)]
pub struct Data<'a> {
    /// `context` (start, resume), undecoded.
    pub context: Option<&'a RawValue>,
    /// `cwd` (`session.context_changed` carries the context as its data).
    pub cwd: Loose<'a>,
    /// `branch`.
    pub branch: Loose<'a>,
    /// `content` (user and assistant messages).
    pub content: Loose<'a>,
    /// `modelMetrics` (`session.shutdown`), undecoded.
    pub model_metrics: Option<&'a RawValue>,
}

impl<'de> FromMap<'de> for Data<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "context" => self.context = Some(map.next_value()?),
            "cwd" => self.cwd = map.next_value()?,
            "branch" => self.branch = map.next_value()?,
            "content" => self.content = map.next_value()?,
            "modelMetrics" => self.model_metrics = Some(map.next_value()?),
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// The folder and branch keys of a `context` object.
#[derive(Debug, Default)]
struct Context<'a> {
    cwd: Loose<'a>,
    branch: Loose<'a>,
}

impl<'de> FromMap<'de> for Context<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "cwd" => self.cwd = map.next_value()?,
            "branch" => self.branch = map.next_value()?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// `data`'s fields, when it is an object (else nothing).
pub fn data(raw: Option<&RawValue>) -> Data<'_> {
    raw.and_then(decode_obj).unwrap_or_default()
}

/// The folder and branch an event of type `ty` sets: `data.context`'s, or
/// `data`'s own keys for a `session.context_changed` without one. Python-truthy
/// strings only (an empty folder or branch is none).
pub fn context<'a>(ty: &str, d: &mut Data<'a>) -> (Option<Cow<'a, str>>, Option<Cow<'a, str>>) {
    if !CONTEXT_TYPES.contains(&ty) {
        return (None, None);
    }
    match d.context.and_then(decode_obj::<Context<'a>>) {
        Some(c) => (c.cwd.py_str_if_truthy(), c.branch.py_str_if_truthy()),
        None if ty == "session.context_changed" => (
            std::mem::take(&mut d.cwd).py_str_if_truthy(),
            std::mem::take(&mut d.branch).py_str_if_truthy(),
        ),
        None => (None, None),
    }
}

/// One model's entry of `modelMetrics`.
#[derive(Deserialize)]
struct Metric<'a> {
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
}

/// The tokens of a `modelMetrics.<model>.usage` object by [`CopilotTokens`] (the
/// cache reads and writes out of the input); `None` when it is no object or counts
/// nothing.
pub fn tokens_of(usage: &RawValue) -> Option<Tokens> {
    let t = decode_obj::<Counted<CopilotTokens>>(usage)?.tokens();
    (!t.is_zero()).then_some(t)
}

/// Each model's totals of a `modelMetrics` object, by model name (sorted).
pub fn model_metrics(raw: &RawValue) -> Vec<(String, Tokens)> {
    let Some(map) = from_object::<BTreeMap<String, &RawValue>>(raw.get()) else {
        return Vec::new();
    };
    map.into_iter()
        .filter(|(model, _)| !model.is_empty())
        .filter_map(|(model, m)| {
            let usage = from_object::<Metric<'_>>(m.get())?.usage?;
            Some((model, tokens_of(usage)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_reads_and_writes_leave_the_input() {
        let raw: &RawValue = serde_json::from_str(r#"{"claude-sonnet-4.5":{"requests":{"count":3,"cost":1},"usage":{"inputTokens":1000,"outputTokens":200,"cacheReadTokens":600,"cacheWriteTokens":100,"reasoningTokens":50}}}"#).unwrap();
        let got = model_metrics(raw);
        assert_eq!(got.len(), 1);
        let t = got[0].1;
        assert_eq!(
            (
                t.input,
                t.cache_read,
                t.cache_creation,
                t.output,
                t.reasoning_output
            ),
            (300, 600, 100, 200, 50)
        );
        assert_eq!(t.total(), 1200);
    }

    #[test]
    fn odd_metrics_count_nothing() {
        for json in [
            "[]",
            "{}",
            r#"{"m":5}"#,
            r#"{"m":{"usage":{}}}"#,
            r#"{"":{"usage":{"inputTokens":3}}}"#,
        ] {
            let raw: &RawValue = serde_json::from_str(json).unwrap();
            assert!(model_metrics(raw).is_empty(), "{json}");
        }
    }
}

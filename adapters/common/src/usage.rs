//! Token usage as each agent writes it, reduced to [`Tokens`].
//!
//! * Claude Code: an assistant line's `message.usage` — `input_tokens`,
//!   `output_tokens`, `cache_creation_input_tokens` (with its
//!   `cache_creation.ephemeral_1h_input_tokens` part when present) and
//!   `cache_read_input_tokens`; [`ClaudeUsage`].
//! * Codex: a `token_count` event's `info.total_token_usage` (a running total) or
//!   `info.last_token_usage` — `input_tokens` (which includes `cached_input_tokens`),
//!   `output_tokens` (which includes `reasoning_output_tokens`); [`CodexTokens`].
//! * Gemini CLI: a message's `tokens` — `input` (which includes `cached`), `output`,
//!   `thoughts` (billed as output), `cached`; [`GeminiTokens`].
//!
//! A count that is not a non-negative integer counts 0; the record is never refused
//! for it.

use serde::de::MapAccess;
use transcope_core::Tokens;

use crate::de::{skip_value, FromMap, Loose, Obj};

/// A count: a non-negative integer, else 0.
fn count<'de, A: MapAccess<'de>>(map: &mut A) -> Result<u64, A::Error> {
    Ok(match map.next_value::<Loose<'de>>()? {
        Loose::Num(n) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .unwrap_or(0),
        _ => 0,
    })
}

/// Claude's `message.usage`.
#[derive(Debug, Default)]
pub struct ClaudeUsage {
    input: u64,
    output: u64,
    cache_creation: u64,
    cache_creation_1h: Option<u64>,
    cache_read: u64,
}

/// `message.usage.cache_creation`: the split of the cache writes by lifetime.
#[derive(Debug, Default)]
struct CacheSplit {
    one_hour: u64,
}

impl<'de> FromMap<'de> for CacheSplit {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "ephemeral_1h_input_tokens" => self.one_hour = count(map)?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

impl<'de> FromMap<'de> for ClaudeUsage {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "input_tokens" => self.input = count(map)?,
            "output_tokens" => self.output = count(map)?,
            "cache_creation_input_tokens" => self.cache_creation = count(map)?,
            "cache_read_input_tokens" => self.cache_read = count(map)?,
            "cache_creation" => {
                self.cache_creation_1h = map.next_value::<Obj<CacheSplit>>()?.0.map(|c| c.one_hour)
            }
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

impl ClaudeUsage {
    /// The usage of these counts (`cache_creation_1h` is `Some` when the line has a
    /// `cache_creation` object): what a reader other than serde found.
    pub fn new(
        input: u64,
        output: u64,
        cache_creation: u64,
        cache_creation_1h: Option<u64>,
        cache_read: u64,
    ) -> ClaudeUsage {
        ClaudeUsage {
            input,
            output,
            cache_creation,
            cache_creation_1h,
            cache_read,
        }
    }

    /// The counts.
    pub fn tokens(&self) -> Tokens {
        Tokens {
            input: self.input,
            output: self.output,
            cache_creation: self.cache_creation,
            cache_creation_1h: self.cache_creation_1h.unwrap_or(0).min(self.cache_creation),
            cache_read: self.cache_read,
            reasoning_output: 0,
        }
    }
}

/// Codex's `total_token_usage` / `last_token_usage`.
#[derive(Debug, Default)]
pub struct CodexTokens {
    input: u64,
    cached: u64,
    output: u64,
    reasoning: u64,
}

impl<'de> FromMap<'de> for CodexTokens {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "input_tokens" => self.input = count(map)?,
            "cached_input_tokens" => self.cached = count(map)?,
            "output_tokens" => self.output = count(map)?,
            "reasoning_output_tokens" => self.reasoning = count(map)?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

impl CodexTokens {
    /// The four counts as an event gives them: input (cached included), cached input,
    /// output (reasoning included), reasoning output.
    pub fn new(input: u64, cached: u64, output: u64, reasoning: u64) -> CodexTokens {
        CodexTokens {
            input,
            cached,
            output,
            reasoning,
        }
    }

    /// The counts, the cached tokens taken out of the input.
    pub fn tokens(&self) -> Tokens {
        let cached = self.cached.min(self.input);
        Tokens {
            input: self.input - cached,
            output: self.output,
            cache_creation: 0,
            cache_creation_1h: 0,
            cache_read: cached,
            reasoning_output: self.reasoning.min(self.output),
        }
    }
}

/// Codex's `token_count` `info`: the running total and the last request's usage.
#[derive(Debug, Default)]
pub struct CodexInfo {
    /// `total_token_usage`.
    pub total: Option<CodexTokens>,
    /// `last_token_usage`.
    pub last: Option<CodexTokens>,
}

impl<'de> FromMap<'de> for CodexInfo {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "total_token_usage" => self.total = map.next_value::<Obj<CodexTokens>>()?.0,
            "last_token_usage" => self.last = map.next_value::<Obj<CodexTokens>>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// Gemini CLI's message `tokens`.
#[derive(Debug, Default)]
pub struct GeminiTokens {
    input: u64,
    output: u64,
    cached: u64,
    thoughts: u64,
}

impl<'de> FromMap<'de> for GeminiTokens {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "input" => self.input = count(map)?,
            "output" => self.output = count(map)?,
            "cached" => self.cached = count(map)?,
            "thoughts" => self.thoughts = count(map)?,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

impl GeminiTokens {
    /// The counts: the cached tokens taken out of the input, the thoughts billed as
    /// output (and counted as its reasoning part).
    pub fn tokens(&self) -> Tokens {
        let cached = self.cached.min(self.input);
        Tokens {
            input: self.input - cached,
            output: self.output.saturating_add(self.thoughts),
            cache_creation: 0,
            cache_creation_1h: 0,
            cache_read: cached,
            reasoning_output: self.thoughts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::de::decode_obj;

    #[test]
    fn claude_usage_with_and_without_the_split() {
        let raw: &serde_json::value::RawValue = serde_json::from_str(
            r#"{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":60,"ephemeral_1h_input_tokens":40},"output_tokens":5,"service_tier":"standard"}"#,
        )
        .unwrap();
        let t = decode_obj::<ClaudeUsage>(raw).unwrap().tokens();
        assert_eq!(
            (
                t.input,
                t.output,
                t.cache_creation,
                t.cache_creation_1h,
                t.cache_read
            ),
            (3, 5, 100, 40, 7)
        );
        assert_eq!(t.total(), 115);
        let raw: &serde_json::value::RawValue = serde_json::from_str(
            r#"{"input_tokens":"x","output_tokens":-1,"cache_read_input_tokens":2.0}"#,
        )
        .unwrap();
        let t = decode_obj::<ClaudeUsage>(raw).unwrap().tokens();
        assert_eq!((t.input, t.output, t.cache_read), (0, 0, 2));
    }

    #[test]
    fn codex_cached_tokens_leave_the_input() {
        let raw: &serde_json::value::RawValue = serde_json::from_str(
            r#"{"total_token_usage":{"input_tokens":200,"cached_input_tokens":100,"output_tokens":100,"reasoning_output_tokens":50,"total_tokens":300}}"#,
        )
        .unwrap();
        let t = decode_obj::<CodexInfo>(raw)
            .unwrap()
            .total
            .unwrap()
            .tokens();
        assert_eq!(
            (
                t.input,
                t.cache_read,
                t.output,
                t.reasoning_output,
                t.total()
            ),
            (100, 100, 100, 50, 300)
        );
    }
}

//! What transcope knows of Codex beyond its rollouts, declared through
//! [`CodexFactory`](crate::CodexFactory) (`transcope_core::agent`): its token usage,
//! its home folder and hook wiring, its pricing provider.
//!
//! * Usage: a `token_count` event's `info.total_token_usage` (the session's running
//!   total: the usage stage counts its growth) or `info.last_token_usage` —
//!   `input_tokens` (which includes `cached_input_tokens`), `output_tokens` (which
//!   includes `reasoning_output_tokens`) ([`CodexTokens`], [`CodexInfo`]). A fork's
//!   rollout starts with a copy of its source's items, running totals included,
//!   stamped before its own `session_meta`: those count nothing
//!   ([`UsageShape::starts_at_meta`]).
//! * Home: `$CODEX_HOME`, else `~/.codex` ([`HOME`]); Codex reads the variable with
//!   links resolved, and names its hook-state keys by that path.
//! * Hooks: `config.toml`'s `[hooks]`, each trusted by a hash in `[hooks.state]`
//!   ([`SettingsFormat::TrustedToml`]): `SessionStart` and `Stop`.

use serde::de::MapAccess;
use transcope_adapter_common::de::{skip_value, FromMap, Obj};
use transcope_adapter_common::usage::{Counted, Shape};
use transcope_core::agent::{
    AgentHome, AgentInfo, HookPayload, HookRun, Hooks, McpFile, McpFormat, McpServers, RequestKey,
    SettingsFormat, TokenShape, UsageShape,
};
use transcope_core::{Tokens, Usage};

/// Codex's counts object (`total_token_usage`, `last_token_usage`).
pub struct CodexTokens;

impl Shape for CodexTokens {
    const TOKENS: TokenShape = TokenShape {
        cache_read: Some("cached_input_tokens"),
        reasoning: Some("reasoning_output_tokens"),
        input_includes_cache_read: true,
        output_includes_reasoning: true,
        ..TokenShape::new("input_tokens", "output_tokens")
    };
}

/// Everything the adapter declares of Codex.
pub const INFO: AgentInfo = AgentInfo {
    usage: USAGE,
    hooks: Some(HOOKS),
    pricing: Some(PRICING),
    mcp: Some(MCP),
};

/// Where MCP servers are registered for Codex: a `[mcp_servers.<name>]` table of
/// `config.toml` (`command`, `args`). Codex sets `CODEX_THREAD_ID` for its shell
/// tools but not for MCP servers, so a tool is told the session.
pub const MCP: McpServers = McpServers {
    title: "Codex",
    home: HOME,
    file: McpFile::InHome("config.toml"),
    format: McpFormat::Toml,
    session_var: None,
};

/// How Codex's records carry usage (see the module docs).
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(CodexTokens::TOKENS),
    key: RequestKey::Message,
    starts_at_meta: true,
};

/// Codex's home folder.
pub const HOME: AgentHome = AgentHome::folder("CODEX_HOME", ".codex");

/// How transcope's hooks are wired into Codex.
pub const HOOKS: Hooks = Hooks {
    title: "Codex",
    about: "OpenAI Codex CLI",
    home: HOME,
    settings: "config.toml",
    canonical_home: true,
    format: SettingsFormat::TrustedToml,
    events: &[
        ("SessionStart", HookRun::SessionStart),
        ("Stop", HookRun::Stop),
    ],
    wired_by_default: false,
    cleanup: None,
    payload: HookPayload::Transcript,
};

/// The price list's provider of Codex's models.
pub const PRICING: &str = "openai";

/// A `token_count` event's `info`: the running total and the last request's usage.
#[derive(Debug, Default)]
pub struct CodexInfo {
    /// `total_token_usage`.
    pub total: Option<Counted<CodexTokens>>,
    /// `last_token_usage`.
    pub last: Option<Counted<CodexTokens>>,
}

impl<'de> FromMap<'de> for CodexInfo {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "total_token_usage" => self.total = map.next_value::<Obj<Counted<CodexTokens>>>()?.0,
            "last_token_usage" => self.last = map.next_value::<Obj<Counted<CodexTokens>>>()?.0,
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

/// A `token_count` event's usage: the running total when there is one (a replay or a
/// repeat then counts nothing twice), else the last request's.
pub fn token_count_usage(total: Option<Tokens>, last: Option<Tokens>) -> Option<Usage<'static>> {
    let (tokens, cumulative) = match (total, last) {
        (Some(t), _) => (t, true),
        (None, Some(l)) => (l, false),
        (None, None) => return None,
    };
    Some(Usage {
        tokens: Some(tokens),
        cumulative,
        ..Usage::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use transcope_adapter_common::de::decode_obj;

    fn usage(info: &str) -> Option<Usage<'static>> {
        let raw: &serde_json::value::RawValue = serde_json::from_str(info).unwrap();
        let i = decode_obj::<CodexInfo>(raw).unwrap();
        token_count_usage(i.total.map(|t| t.tokens()), i.last.map(|l| l.tokens()))
    }

    #[test]
    fn the_running_total_wins_over_the_last_request() {
        let both = usage(
            r#"{"total_token_usage":{"input_tokens":200,"cached_input_tokens":100,"output_tokens":100,"reasoning_output_tokens":50},
                "last_token_usage":{"input_tokens":20,"output_tokens":10}}"#,
        )
        .unwrap();
        let t = both.tokens.unwrap();
        assert!(both.cumulative);
        assert_eq!((t.input, t.cache_read, t.reasoning_output), (100, 100, 50));
        let last = usage(r#"{"total_token_usage":null,"last_token_usage":{"input_tokens":20,"output_tokens":10}}"#)
            .unwrap();
        assert!(!last.cumulative);
        assert_eq!(last.tokens.unwrap().input, 20);
        assert_eq!(usage(r#"{"rate_limits":{}}"#), None);
    }
}

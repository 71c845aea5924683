//! What transcope knows of Qwen Code beyond its sessions, declared through
//! [`QwenFactory`](crate::QwenFactory) (`transcope_core::agent`): its token usage,
//! its home folder and hook wiring, its pricing provider.
//!
//! * Usage: an `assistant` record's `usageMetadata` ([`QwenTokens`]):
//!   `promptTokenCount` includes `cachedContentTokenCount` (on every path the CLI
//!   converts from: OpenAI's `prompt_tokens`, Anthropic's input plus cache reads and
//!   writes), and `candidatesTokenCount` includes `thoughtsTokenCount` (OpenAI's
//!   `completion_tokens` includes the reasoning). A record whose own
//!   `totalTokenCount` says the thoughts were counted apart (Gemini's native path:
//!   total = prompt + candidates + thoughts) has them added to its output by the
//!   adapter ([`crate::record::usage_of`]), so a request's total is always the CLI's
//!   `totalTokenCount`. The same counts are copied into `system`/`ui_telemetry`
//!   records (`qwen-code.api_response`); those copies are never read, so nothing is
//!   counted twice. Every record's `uuid` is new when written and kept verbatim when
//!   `/branch` copies a record into another session, so a request is keyed by it
//!   ([`RequestKey::Message`]): a fork's copy is the same request.
//! * Home: `$QWEN_HOME` (the folder itself), else `~/.qwen` ([`HOME`]); sessions are
//!   under the runtime folder, `$QWEN_RUNTIME_DIR` when set, else the home
//!   ([`crate::layout`]).
//! * Hooks: `settings.json`, JSON in Claude Code's dialect ([`SettingsFormat::Json`]):
//!   `SessionStart`, `Stop` and `SubagentStop`, each handler named, with a timeout in
//!   seconds.

use transcope_adapter_common::usage::Shape;
use transcope_core::agent::{
    AgentHome, AgentInfo, HookPayload, HookRun, Hooks, JsonHooks, McpServers, RequestKey,
    SettingsFormat, TimeUnit, TokenShape, UsageShape,
};

/// Qwen Code's `usageMetadata` (Gemini's `GenerateContentResponseUsageMetadata`, as
/// the CLI fills it).
pub struct QwenTokens;

impl Shape for QwenTokens {
    const TOKENS: TokenShape = TokenShape {
        cache_read: Some("cachedContentTokenCount"),
        reasoning: Some("thoughtsTokenCount"),
        input_includes_cache_read: true,
        output_includes_reasoning: true,
        ..TokenShape::new("promptTokenCount", "candidatesTokenCount")
    };
}

/// Everything the adapter declares of Qwen Code.
pub const INFO: AgentInfo = AgentInfo {
    usage: USAGE,
    hooks: Some(HOOKS),
    pricing: Some(PRICING),
    mcp: Some(MCP),
};

/// Where MCP servers are registered for Qwen Code: as for Gemini CLI, of which it is
/// a fork (`mcpServers` of the user's `settings.json`), in its own home.
pub const MCP: McpServers = McpServers {
    title: "Qwen Code",
    home: HOME,
    ..transcope_adapter_gemini::agent::MCP
};

/// How Qwen Code's records carry usage (see the module docs).
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(QwenTokens::TOKENS),
    key: RequestKey::Message,
    starts_at_meta: false,
};

/// Qwen Code's home folder (its settings; `$QWEN_HOME` names the folder itself).
pub const HOME: AgentHome = AgentHome::folder("QWEN_HOME", ".qwen");

/// The variable that moves the folder Qwen Code writes sessions under (`projects/`
/// in it); the home when unset.
pub const RUNTIME_VAR: &str = "QWEN_RUNTIME_DIR";

/// How transcope's hooks are wired into Qwen Code.
pub const HOOKS: Hooks = Hooks {
    title: "Qwen Code",
    about: "Qwen Code",
    home: HOME,
    settings: "settings.json",
    canonical_home: false,
    format: SettingsFormat::Json(JsonHooks {
        named: true,
        timeout: Some(TimeUnit::Seconds),
        switch: None,
    }),
    events: &[
        ("SessionStart", HookRun::SessionStart),
        ("Stop", HookRun::Stop),
        ("SubagentStop", HookRun::Stop),
    ],
    wired_by_default: false,
    cleanup: None,
    payload: HookPayload::Transcript,
};

/// The price list's provider of Qwen's models (litellm files them under
/// `dashscope/`, Alibaba Cloud's model service).
pub const PRICING: &str = "dashscope";

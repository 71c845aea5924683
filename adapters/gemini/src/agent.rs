//! What transcope knows of Gemini CLI beyond its sessions, declared through
//! [`GeminiFactory`](crate::GeminiFactory) (`transcope_core::agent`): its token usage,
//! its home folder and hook wiring, its pricing provider.
//!
//! * Usage: a `gemini` message's `tokens` — `input` (which includes `cached`),
//!   `output`, `thoughts` (billed as output, and counted as its reasoning part),
//!   `cached` ([`GeminiTokens`]); a message id is the session's own, so a request is
//!   keyed by the session and the id ([`RequestKey::SessionMessage`]).
//! * Home: `$GEMINI_CLI_HOME/.gemini` (the variable replaces the user's home), else
//!   `~/.gemini` ([`HOME`]).
//! * Hooks: `settings.json`, JSON ([`SettingsFormat::Json`]): `SessionStart` and
//!   `AfterAgent`, each named (shown in `/hooks panel`) with its timeout in
//!   milliseconds; `hooksConfig.enabled = false` runs none.

use transcope_adapter_common::usage::Shape;
use transcope_core::agent::{
    AgentHome, AgentInfo, HookPayload, HookRun, Hooks, JsonHooks, McpFile, McpFormat, McpServers,
    RequestKey, SettingsFormat, TimeUnit, TokenShape, UsageShape,
};

/// Gemini CLI's message `tokens`.
pub struct GeminiTokens;

impl Shape for GeminiTokens {
    const TOKENS: TokenShape = TokenShape {
        cache_read: Some("cached"),
        reasoning: Some("thoughts"),
        input_includes_cache_read: true,
        output_includes_reasoning: false,
        ..TokenShape::new("input", "output")
    };
}

/// Everything the adapter declares of Gemini CLI.
pub const INFO: AgentInfo = AgentInfo {
    usage: USAGE,
    hooks: Some(HOOKS),
    pricing: Some(PRICING),
    mcp: Some(MCP),
};

/// Where MCP servers are registered for Gemini CLI: `mcpServers` of the user's
/// `settings.json` (`command`, `args`; a stdio server needs no type).
pub const MCP: McpServers = McpServers {
    title: "Gemini CLI",
    home: HOME,
    file: McpFile::InHome("settings.json"),
    format: McpFormat::Json {
        kind: None,
        tools: false,
    },
    session_var: None,
};

/// How Gemini CLI's records carry usage (see the module docs).
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(GeminiTokens::TOKENS),
    key: RequestKey::SessionMessage,
    starts_at_meta: false,
};

/// Gemini CLI's home folder.
pub const HOME: AgentHome = AgentHome::user_home("GEMINI_CLI_HOME", ".gemini");

/// How transcope's hooks are wired into Gemini CLI.
pub const HOOKS: Hooks = Hooks {
    title: "Gemini CLI",
    about: "Gemini CLI",
    home: HOME,
    settings: "settings.json",
    canonical_home: false,
    format: SettingsFormat::Json(JsonHooks {
        named: true,
        timeout: Some(TimeUnit::Milliseconds),
        switch: Some(("hooksConfig", "enabled")),
    }),
    events: &[
        ("SessionStart", HookRun::SessionStart),
        ("AfterAgent", HookRun::Stop),
    ],
    wired_by_default: false,
    cleanup: None,
    payload: HookPayload::Transcript,
};

/// The price list's provider of Gemini CLI's models.
pub const PRICING: &str = "gemini";

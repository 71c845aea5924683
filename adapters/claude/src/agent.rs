//! What transcope knows of Claude Code beyond its transcripts, declared through
//! [`ClaudeFactory`](crate::ClaudeFactory) (`transcope_core::agent`): its token usage,
//! its home folder and hook wiring, its pricing provider.
//!
//! * Usage: an assistant line's `message.usage` (the Claude message rule's
//!   [`MessageUsage`], which legacy Codex files share), keyed by `message.id` and the
//!   line's `requestId`: the same in every file, so a resumed session's replayed line
//!   is one request however often it is copied.
//! * Home: `$CLAUDE_CONFIG_DIR`, else `~/.claude` ([`HOME`]).
//! * Hooks: `settings.json`, JSON ([`SettingsFormat::Json`]): `SessionStart`, `Stop`
//!   and `SubagentStop`, with Claude Code's default timeout (60 s, above the hook's
//!   deadline). Claude Code deletes transcripts older than `cleanupPeriodDays` (30 by
//!   default) at its start ([`Hooks::cleanup`]).

use transcope_adapter_common::message::MessageUsage;
use transcope_adapter_common::usage::Shape;
use transcope_core::agent::{
    AgentHome, AgentInfo, Cleanup, HookPayload, HookRun, Hooks, JsonHooks, McpFile, McpFormat,
    McpServers, RequestKey, SettingsFormat, UsageShape,
};

/// Everything the adapter declares of Claude Code.
pub const INFO: AgentInfo = AgentInfo {
    usage: USAGE,
    hooks: Some(HOOKS),
    pricing: Some(PRICING),
    mcp: Some(MCP),
};

/// Where MCP servers are registered for Claude Code: the user's servers are
/// `mcpServers` in `.claude.json` (in `$CLAUDE_CONFIG_DIR` when set, else the user's
/// home), a local command's entry typed `stdio`; Claude Code (2.1.154 and later) sets
/// `CLAUDE_CODE_SESSION_ID` for each stdio server to the session's id.
pub const MCP: McpServers = McpServers {
    title: "Claude Code",
    home: HOME,
    file: McpFile::BesideHome(".claude.json"),
    format: McpFormat::Json {
        kind: Some("stdio"),
        tools: false,
    },
    session_var: Some("CLAUDE_CODE_SESSION_ID"),
};

/// How Claude Code's records carry usage (see the module docs).
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(MessageUsage::TOKENS),
    key: RequestKey::Message,
    starts_at_meta: false,
};

/// Claude Code's home folder.
pub const HOME: AgentHome = AgentHome::folder("CLAUDE_CONFIG_DIR", ".claude");

/// How transcope's hooks are wired into Claude Code.
pub const HOOKS: Hooks = Hooks {
    title: "Claude Code",
    about: "Claude Code",
    home: HOME,
    settings: "settings.json",
    canonical_home: false,
    format: SettingsFormat::Json(JsonHooks {
        named: false,
        timeout: None,
        switch: None,
    }),
    events: &[
        ("SessionStart", HookRun::SessionStart),
        ("Stop", HookRun::Stop),
        ("SubagentStop", HookRun::Stop),
    ],
    wired_by_default: true,
    cleanup: Some(Cleanup {
        setting: "cleanupPeriodDays",
        default_days: 30,
    }),
    payload: HookPayload::Transcript,
};

/// The price list's provider of Claude Code's models.
pub const PRICING: &str = "anthropic";

//! What transcope knows of GitHub Copilot CLI beyond its sessions, declared through
//! [`CopilotFactory`](crate::CopilotFactory) (`transcope_core::agent`): its token
//! usage and its home folder.
//!
//! * Usage: `session.shutdown`'s `modelMetrics`, one object per model, whose `usage`
//!   is [`CopilotTokens`]: `inputTokens` includes `cacheReadTokens` *and*
//!   `cacheWriteTokens` (both taken out of the input by the declared shape), and
//!   `outputTokens` includes `reasoningTokens`. The counts are the session's totals
//!   so far, cumulative across resumes, one shutdown per resume leg: each model's
//!   totals are keyed by the session and the model ([`RequestKey::SessionMessage`],
//!   message id `modelMetrics:<model>`), so every leg's shutdown is a copy of one
//!   request and the index keeps the largest counts — the last leg's totals, never
//!   their sum. `assistant.message.outputTokens` is the same spending seen a turn at a
//!   time (output only) and is not read.
//! * Home: `$COPILOT_HOME` (the folder itself), else `~/.copilot` ([`HOME`]).
//! * Hooks: a file of transcope's own in the user's hooks folder,
//!   `<home>/hooks/transcope.json` ([`SettingsFormat::HookFile`]:
//!   `{"version":1,"hooks":{<event>:[{"type":"command","bash",…,"timeoutSec"}]}}`;
//!   Copilot CLI reads every `*.json` there): `sessionStart`, `agentStop` and
//!   `subagentStop` (a sub-agent writes into its parent's file, so its stop reads
//!   that file). The payload is camelCase and names the session by `sessionId` alone
//!   ([`HookPayload::SessionId`]): the command says `--agent=copilot`, and the file is
//!   found and checked by the layout
//!   ([`CopilotLayout::session_file`](crate::layout::CopilotLayout)).
//! * Pricing: none declared. Copilot bills premium requests, not tokens, and its
//!   models come from several providers.

use transcope_adapter_common::usage::Shape;
use transcope_core::agent::{
    AgentHome, AgentInfo, HookPayload, HookRun, Hooks, McpFile, McpFormat, McpServers, RequestKey,
    SettingsFormat, TokenShape, UsageShape,
};

/// A `modelMetrics.<model>.usage` object of `session.shutdown`.
pub struct CopilotTokens;

impl Shape for CopilotTokens {
    const TOKENS: TokenShape = TokenShape {
        cache_read: Some("cacheReadTokens"),
        cache_creation: Some("cacheWriteTokens"),
        reasoning: Some("reasoningTokens"),
        input_includes_cache_read: true,
        input_includes_cache_creation: true,
        output_includes_reasoning: true,
        ..TokenShape::new("inputTokens", "outputTokens")
    };
}

/// Everything the adapter declares of Copilot CLI.
pub const INFO: AgentInfo = AgentInfo {
    usage: USAGE,
    hooks: Some(HOOKS),
    pricing: None,
    mcp: Some(MCP),
};

/// How transcope's hooks are wired into Copilot CLI (see the module docs).
pub const HOOKS: Hooks = Hooks {
    title: "Copilot CLI",
    about: "GitHub Copilot CLI",
    home: HOME,
    settings: "hooks/transcope.json",
    canonical_home: false,
    format: SettingsFormat::HookFile,
    events: &[
        ("sessionStart", HookRun::SessionStart),
        ("agentStop", HookRun::Stop),
        ("subagentStop", HookRun::Stop),
    ],
    wired_by_default: false,
    cleanup: None,
    payload: HookPayload::SessionId("sessionId"),
};

/// Where MCP servers are registered for Copilot CLI: `mcpServers` of
/// `mcp-config.json` in its home (`$COPILOT_HOME`, else `~/.copilot`), a local
/// command's entry typed `local` and listing the tools it allows (`["*"]`).
pub const MCP: McpServers = McpServers {
    title: "Copilot CLI",
    home: HOME,
    file: McpFile::InHome("mcp-config.json"),
    format: McpFormat::Json {
        kind: Some("local"),
        tools: true,
    },
    session_var: None,
};

/// How Copilot CLI's events carry usage (see the module docs).
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(CopilotTokens::TOKENS),
    key: RequestKey::SessionMessage,
    starts_at_meta: false,
};

/// Copilot CLI's home folder (`$COPILOT_HOME` names the folder itself).
pub const HOME: AgentHome = AgentHome::folder("COPILOT_HOME", ".copilot");

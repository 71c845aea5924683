//! What transcope knows of OpenCode beyond its sessions, declared through
//! [`OpenCodeFactory`](crate::OpenCodeFactory) (`transcope_core::agent`): its token
//! usage and its pricing provider. It has no hook wiring: OpenCode runs plugins
//! (JavaScript in its own process), not commands, so a session reaches transcope by a
//! `backfill` or a query's sync, which read the database's new rows.
//!
//! * Usage: each assistant message's `tokens` ([`OpenCodeTokens`]): `input`,
//!   `output`, `reasoning`, `cache.read` and `cache.write`, five counts that do not
//!   overlap (OpenCode subtracts the cached tokens from the provider's input and the
//!   reasoning from its output before it stores them). transcope's input is the input
//!   as stored, its cache reads and writes the cache counts, and its output the output
//!   *plus* the reasoning (transcope counts reasoning inside the output, as
//!   `reasoning_output` of it): a request's total is the sum of the five, each token
//!   once. A message id is OpenCode's own (`msg_…`, unique in the database and kept
//!   when the legacy tree was imported), so a request is keyed by it
//!   ([`RequestKey::Message`]): the same message read from the old tree and from the
//!   database is one request.
//! * Model: `<providerID>/<modelID>` (`anthropic/claude-sonnet-4-5`), the name the
//!   price list strips a declared provider's namespace from ([`PRICING`]).

use transcope_core::agent::{AgentInfo, RequestKey, TokenShape, UsageShape};

/// OpenCode's `tokens` object (`{input, output, reasoning, cache: {read, write}}`),
/// as the adapter reads it ([`crate::record::tokens`]): the cache counts are nested,
/// so the shape names them by their path.
pub struct OpenCodeTokens;

impl OpenCodeTokens {
    /// The shape: nothing includes anything else.
    pub const TOKENS: TokenShape = TokenShape {
        cache_read: Some("cache.read"),
        cache_creation: Some("cache.write"),
        reasoning: Some("reasoning"),
        input_includes_cache_read: false,
        input_includes_cache_creation: false,
        output_includes_reasoning: false,
        ..TokenShape::new("input", "output")
    };
}

/// Everything the adapter declares of OpenCode.
pub const INFO: AgentInfo = AgentInfo {
    usage: USAGE,
    hooks: None,
    pricing: Some(PRICING),
    // OpenCode starts MCP servers from `opencode.json`'s `mcp` object (`{"type":
    // "local", "command": [...]}`), a dialect `hook install --mcp` does not write
    // yet: the README shows the entry to add by hand.
    mcp: None,
};

/// How OpenCode's messages carry usage (see the module docs).
pub const USAGE: UsageShape = UsageShape {
    tokens: Some(OpenCodeTokens::TOKENS),
    key: RequestKey::Message,
    starts_at_meta: false,
};

/// The price list's provider for OpenCode's most used models' namespace
/// (`anthropic/…`); `openai/…` and `google/…` are stripped by the providers the
/// other agents declare and the list's own namespaces.
pub const PRICING: &str = "anthropic";

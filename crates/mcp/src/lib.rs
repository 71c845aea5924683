//! # transcope-mcp: the query commands as MCP tools
//!
//! `transcope mcp` serves the Model Context Protocol over stdio (the official Rust
//! SDK, `rmcp`), so that an agent can ask what transcope knows of its own work: the
//! scope it is in, which row was in force at an instant and why, the sessions of a
//! project, a session's timeline, the lessons, decisions and signals of a project or
//! task, what was spent, the status line's figures. Each tool ([`tools::TOOLS`])
//! answers exactly what its query command prints with `--json`, through the same
//! library calls ([`transcope_query`], the [`Store`]'s rows).
//!
//! Data flows one way: a `tools/call` → [`tools::call`] on tokio's blocking pool (the
//! stores are synchronous) → a fresh store from [`Config::open`] → the answer as the
//! call's text content (one JSON value). A bad argument or a store that cannot answer
//! is a tool error (`isError: true`, the reason in its text); the server goes on
//! serving.
//!
//! **Read-only.** No tool records anything, and none syncs the index: the query
//! commands' first step (a backfill of the default folders) writes the index and the
//! cursors, and a tool an agent calls mid-turn must neither write nor wait on a
//! whole archive. The index is what the hooks' Stops (one a turn), `backfill` and
//! `index sync` recorded; a tool reads it as of the last of them. The CLI hands the
//! store's opener in ([`Config::open`]), so this crate names no backend.
//!
//! ```no_run
//! # fn store() -> Result<Box<dyn transcope_store::Store>, transcope_store::StoreError> { unimplemented!() }
//! let config = transcope_mcp::Config {
//!     home: "/home/u/.agentihooks".into(),
//!     open: Box::new(store),
//!     prices: transcope_pricing::Prices::builtin(),
//!     machine: Some("laptop".into()),
//!     session: None,
//!     session_vars: vec!["AGENT_SESSION_ID"],
//! };
//! transcope_mcp::serve_stdio(config).unwrap();
//! ```
#![warn(missing_docs)]

pub mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use transcope_store::{Store, StoreError};

/// Opens the store a tool reads (the local index, or a fleet), afresh for each call.
pub type Opener = Box<dyn Fn() -> Result<Box<dyn Store>, StoreError> + Send + Sync>;

/// What the server reads, handed in by the binary (library code reads no process
/// environment).
pub struct Config {
    /// The agentihooks home (the scope logs are under it).
    pub home: PathBuf,
    /// The store's opener.
    pub open: Opener,
    /// The price list usage is priced by.
    pub prices: transcope_pricing::Prices,
    /// This machine's name, filling `usage`'s machine key (`None`: a fleet's rows name
    /// their own).
    pub machine: Option<String>,
    /// The session this server runs in, from the agent's environment (a tool's default
    /// `session`).
    pub session: Option<String>,
    /// The variables that session is read from, for the message when none is set.
    pub session_vars: Vec<&'static str>,
}

/// Why the server stopped other than by its client closing the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The runtime could not start.
    #[error("while starting the MCP server's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The client's `initialize` failed.
    #[error("while starting the MCP session: {0}")]
    Initialize(String),
    /// The server's task failed.
    #[error("while serving: {0}")]
    Serve(String),
}

/// The server: the tools over a [`Config`].
#[derive(Clone)]
pub struct Server {
    config: Arc<Config>,
}

impl Server {
    /// A server over `config`.
    pub fn new(config: Config) -> Server {
        Server {
            config: Arc::new(config),
        }
    }

    /// The tools as MCP declares them.
    pub fn tools() -> Vec<Tool> {
        tools::TOOLS
            .iter()
            .map(|t| {
                let mut tool = Tool::new(t.name, t.description, t.schema());
                tool.annotations = Some(
                    ToolAnnotations::new()
                        .read_only(true)
                        .destructive(false)
                        .idempotent(true)
                        .open_world(false),
                );
                tool
            })
            .collect()
    }

    /// The answer to one call: its JSON text, or a tool error saying why not.
    pub async fn answer(
        &self,
        name: String,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> CallToolResult {
        let config = Arc::clone(&self.config);
        let asked = name.clone();
        let done =
            tokio::task::spawn_blocking(move || tools::call(&config, &name, arguments)).await;
        match done {
            Ok(Ok(v)) => CallToolResult::success(vec![ContentBlock::text(v.to_string())]),
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                "{asked} failed inside transcope ({e}); the server goes on serving"
            ))]),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("transcope", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "transcope's index of this machine's coding-agent sessions, read-only: the scope \
                 (project, worktree, branch, task) a session is in, the lessons, decisions and \
                 signals recorded for a project or task (ledger), sessions, a session's timeline, \
                 token usage and cost. Each tool answers what `transcope <command> --json` prints. \
                 Leave `session` out for the session this server runs in.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(Server::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        Ok(self
            .answer(request.name.into_owned(), arguments)
            .await
            .into())
    }
}

/// Serve `config`'s tools over stdin and stdout until the client closes them.
pub fn serve_stdio(config: Config) -> Result<(), McpError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(McpError::Runtime)?;
    let served = rt.block_on(async {
        let running = Server::new(config)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| McpError::Initialize(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| McpError::Serve(e.to_string()))?;
        Ok(())
    });
    // A read of stdin left pending cannot be cancelled; do not wait on it.
    rt.shutdown_background();
    served
}

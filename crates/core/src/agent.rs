//! What transcope knows of an agent beyond its transcript format, declared by the
//! agent's adapter factory so that no other crate names the agent.
//!
//! An [`AdapterFactory`](crate::adapter::AdapterFactory) may declare, as an
//! [`AgentInfo`] ([`agent`](crate::adapter::AdapterFactory::agent), provided: the
//! default declares nothing):
//!
//! * its [`UsageShape`]: which
//!   fields of its records hold which token counts ([`TokenShape`]: transcope's columns
//!   from the agent's), what a request's key is made of ([`RequestKey`]), and whether
//!   its running totals start at the session's meta record. The adapter reads its
//!   counts by the shape; the usage stage keys and counts requests by it.
//! * its [`Hooks`]: where its home
//!   folder is ([`AgentHome`], from the environment by the one rule of
//!   [`folder_var`]), the settings file in it, that file's dialect
//!   ([`SettingsFormat`]) and the events transcope's hooks are wired to. The binary's
//!   `hook install` and `doctor` go over the registered agents' declarations.
//! * its [`McpServers`]: where MCP servers are registered for it ([`McpFile`], in
//!   which dialect, [`McpFormat`]) and the variable it sets for them to the session's
//!   key.
//! * its pricing provider: the price list's name for the vendor of its models (`anthropic`), a namespace a model
//!   name may carry (`anthropic/claude-…`) or the list may file it under.
//!
//! Everything here is a plain value (`const`-constructible, `Copy`): a declaration, not
//! behaviour.
//!
//! ```
//! use transcope_core::agent::{AgentHome, TokenCounts, TokenShape};
//! // An agent whose `input` count includes the cached tokens.
//! const SHAPE: TokenShape = TokenShape {
//!     cache_read: Some("cached"),
//!     input_includes_cache_read: true,
//!     ..TokenShape::new("input", "output")
//! };
//! let t = SHAPE.tokens(&TokenCounts { input: 10, cache_read: 4, output: 3, ..TokenCounts::default() });
//! assert_eq!((t.input, t.cache_read, t.output), (6, 4, 3));
//!
//! const HOME: AgentHome = AgentHome::folder("TOY_HOME", ".toy");
//! let env = |k: &str| (k == "TOY_HOME").then(|| " /opt/toy \n".to_owned());
//! assert_eq!(HOME.resolve(&env, "/home/u".as_ref()), std::path::Path::new("/opt/toy"));
//! assert_eq!(HOME.resolve(&|_: &str| None, "/home/u".as_ref()), std::path::Path::new("/home/u/.toy"));
//! ```

use std::path::{Path, PathBuf};

use crate::entry::Tokens;

/// How an agent's usage object maps to transcope's token columns: the field holding
/// each count, and which counts include others.
///
/// The columns are disjoint where the agents' are not: a `cache_read` the agent counts
/// inside its input is taken out of it ([`TokenShape::input_includes_cache_read`]), and
/// reasoning the agent counts apart from its output is added to it
/// ([`TokenShape::output_includes_reasoning`] false). A count never makes another
/// negative: an included part is capped at the count that includes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenShape {
    /// The input tokens (`input_tokens`).
    pub input: &'static str,
    /// The output tokens (`output_tokens`).
    pub output: &'static str,
    /// The tokens read from the prompt cache, when the agent counts them.
    pub cache_read: Option<&'static str>,
    /// The tokens written to the prompt cache, when the agent counts them.
    pub cache_creation: Option<&'static str>,
    /// Of the cache writes, those kept for an hour: an object's field (object, field),
    /// when the agent splits its writes by lifetime.
    pub cache_creation_1h: Option<(&'static str, &'static str)>,
    /// The reasoning (thinking) tokens, when the agent counts them.
    pub reasoning: Option<&'static str>,
    /// The input count includes the cache reads.
    pub input_includes_cache_read: bool,
    /// The input count includes the cache writes too (Copilot CLI's `inputTokens`).
    pub input_includes_cache_creation: bool,
    /// The output count includes the reasoning tokens (else they are added to it).
    pub output_includes_reasoning: bool,
}

/// Which count a field of a usage object holds ([`TokenShape::role`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenRole {
    /// [`TokenShape::input`].
    Input,
    /// [`TokenShape::output`].
    Output,
    /// [`TokenShape::cache_read`].
    CacheRead,
    /// [`TokenShape::cache_creation`].
    CacheCreation,
    /// The object of [`TokenShape::cache_creation_1h`], whose field (the tuple's
    /// second) holds the count.
    CacheSplit,
    /// [`TokenShape::reasoning`].
    Reasoning,
}

/// An agent's counts as it writes them, each by its role in its [`TokenShape`] (0
/// where the record has none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// [`TokenShape::input`].
    pub input: u64,
    /// [`TokenShape::output`].
    pub output: u64,
    /// [`TokenShape::cache_read`].
    pub cache_read: u64,
    /// [`TokenShape::cache_creation`].
    pub cache_creation: u64,
    /// [`TokenShape::cache_creation_1h`].
    pub cache_creation_1h: u64,
    /// [`TokenShape::reasoning`].
    pub reasoning: u64,
}

impl TokenCounts {
    /// Set the count of `role` (a [`TokenRole::CacheSplit`] sets the hour's part).
    pub fn set(&mut self, role: TokenRole, n: u64) {
        let slot = match role {
            TokenRole::Input => &mut self.input,
            TokenRole::Output => &mut self.output,
            TokenRole::CacheRead => &mut self.cache_read,
            TokenRole::CacheCreation => &mut self.cache_creation,
            TokenRole::CacheSplit => &mut self.cache_creation_1h,
            TokenRole::Reasoning => &mut self.reasoning,
        };
        *slot = n;
    }
}

impl TokenShape {
    /// A shape with only an input and an output count, neither including anything.
    pub const fn new(input: &'static str, output: &'static str) -> TokenShape {
        TokenShape {
            input,
            output,
            cache_read: None,
            cache_creation: None,
            cache_creation_1h: None,
            reasoning: None,
            input_includes_cache_read: false,
            input_includes_cache_creation: false,
            output_includes_reasoning: true,
        }
    }

    /// The role of the usage object's field `key`, if it holds a count.
    pub fn role(&self, key: &str) -> Option<TokenRole> {
        let is = |f: Option<&str>| f == Some(key);
        Some(if key == self.input {
            TokenRole::Input
        } else if key == self.output {
            TokenRole::Output
        } else if is(self.cache_read) {
            TokenRole::CacheRead
        } else if is(self.cache_creation) {
            TokenRole::CacheCreation
        } else if is(self.cache_creation_1h.map(|(o, _)| o)) {
            TokenRole::CacheSplit
        } else if is(self.reasoning) {
            TokenRole::Reasoning
        } else {
            return None;
        })
    }

    /// Whether `key`, a field of the [`TokenRole::CacheSplit`] object, holds the hour's
    /// cache writes.
    pub fn is_split_field(&self, key: &str) -> bool {
        self.cache_creation_1h.is_some_and(|(_, f)| f == key)
    }

    /// transcope's columns of `counts`.
    pub fn tokens(&self, c: &TokenCounts) -> Tokens {
        let (input, cache_read) = if self.input_includes_cache_read {
            let cached = c.cache_read.min(c.input);
            (c.input - cached, cached)
        } else {
            (c.input, c.cache_read)
        };
        let input = if self.input_includes_cache_creation {
            input.saturating_sub(c.cache_creation)
        } else {
            input
        };
        let (output, reasoning_output) = if self.output_includes_reasoning {
            (c.output, c.reasoning.min(c.output))
        } else {
            (c.output.saturating_add(c.reasoning), c.reasoning)
        };
        Tokens {
            input,
            output,
            cache_creation: c.cache_creation,
            cache_creation_1h: c.cache_creation_1h.min(c.cache_creation),
            cache_read,
            reasoning_output,
        }
    }
}

/// What a request's key is made of: copies of one request (a streamed message's lines,
/// a resumed session's replayed lines) share it, and the index keeps one row a key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RequestKey {
    /// `<agent>:<message id>[:<request id>]`: a message id names one request wherever
    /// it is copied (another file of the archive included).
    #[default]
    Message,
    /// `<agent>:<session>:<message id>`: message ids are the session's own.
    SessionMessage,
}

/// How an agent's records carry token usage (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageShape {
    /// How its counts map to transcope's columns (`None`: it writes no usage).
    pub tokens: Option<TokenShape>,
    /// What a request's key is made of.
    pub key: RequestKey,
    /// A session starts at its first meta record: running totals stamped before it
    /// are a fork's copy of its source's history, and count nothing.
    pub starts_at_meta: bool,
}

/// Everything an adapter declares of its agent (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentInfo {
    /// How its records carry token usage.
    pub usage: UsageShape,
    /// How transcope's hooks are wired into its settings, when they can be.
    pub hooks: Option<Hooks>,
    /// The price list's provider of its models (`anthropic`), when it has one: a
    /// namespace a model name may carry, or the list may file it under.
    pub pricing: Option<&'static str>,
    /// How it starts MCP servers and where they are registered, when it does.
    pub mcp: Option<McpServers>,
}

/// Where an agent's MCP server registrations are kept (`transcope hook install --mcp`
/// adds `transcope mcp` there; `doctor` reads it back).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpFile {
    /// A file in the agent's home folder ([`Hooks::home`]: `settings.json`).
    InHome(&'static str),
    /// A file in the folder the home variable names when it is set, else in the user's
    /// home (Claude Code's `.claude.json`: `$CLAUDE_CONFIG_DIR/.claude.json`, else
    /// `~/.claude.json`).
    BesideHome(&'static str),
}

/// The dialect of an agent's MCP registrations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpFormat {
    /// JSON: `mcpServers.<name>` an object `{"command", "args"}`, with `"type": <this>`
    /// when the agent wants one (`stdio`, `local`), and `"tools": ["*"]` when it
    /// exposes only the tools listed.
    Json {
        /// The `type` of a local command's entry, when the agent writes one.
        kind: Option<&'static str>,
        /// The entry lists the tools it allows (`["*"]`: all).
        tools: bool,
    },
    /// TOML: a table `[mcp_servers.<name>]` with `command` and `args` (Codex's
    /// `config.toml`).
    Toml,
}

/// How an agent starts MCP servers (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McpServers {
    /// The agent as a person knows it (`Claude Code`).
    pub title: &'static str,
    /// Its home folder (the same as its hooks').
    pub home: AgentHome,
    /// The file the servers are registered in.
    pub file: McpFile,
    /// Its dialect.
    pub format: McpFormat,
    /// The variable the agent sets, for each MCP server it starts, to the key of the
    /// session it runs in (`CLAUDE_CODE_SESSION_ID`), when it sets one: a tool asked
    /// about no session answers for that one.
    pub session_var: Option<&'static str>,
}

impl McpServers {
    /// The registrations file's path (`lookup` reads a variable).
    pub fn file_path(&self, lookup: &dyn Fn(&str) -> Option<String>, user_home: &Path) -> PathBuf {
        match self.file {
            McpFile::InHome(f) => self.home.resolve(lookup, user_home).join(f),
            McpFile::BesideHome(f) => self
                .home
                .from_env(lookup)
                .unwrap_or_else(|| user_home.to_path_buf())
                .join(f),
        }
    }
}

/// The one rule for a variable naming a folder: its value with surrounding whitespace
/// trimmed; `None` — the default applies — when it is unset or nothing is left.
///
/// ```
/// use transcope_core::agent::folder_var;
/// assert_eq!(folder_var(Some(" /cfg\n")), Some("/cfg".into()));
/// assert_eq!(folder_var(Some(" \t")), None);
/// assert_eq!(folder_var(None), None);
/// ```
pub fn folder_var(value: Option<&str>) -> Option<PathBuf> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// What an agent's home variable names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HomeVar {
    /// The agent's folder itself (`$CLAUDE_CONFIG_DIR`).
    Folder,
    /// A home folder in place of the user's, the agent's folder under it
    /// (`$GEMINI_CLI_HOME/.gemini`).
    UserHome,
}

/// Where an agent keeps its state: a folder under the user's home, which a variable
/// may move (by [`folder_var`]'s rule, the same for every agent and every reader).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgentHome {
    /// The variable.
    pub var: &'static str,
    /// The folder under the user's home (`.claude`).
    pub folder: &'static str,
    /// What the variable names.
    pub names: HomeVar,
}

impl AgentHome {
    /// A home whose variable names the folder itself.
    pub const fn folder(var: &'static str, folder: &'static str) -> AgentHome {
        AgentHome {
            var,
            folder,
            names: HomeVar::Folder,
        }
    }

    /// A home whose variable names a home folder in place of the user's.
    pub const fn user_home(var: &'static str, folder: &'static str) -> AgentHome {
        AgentHome {
            var,
            folder,
            names: HomeVar::UserHome,
        }
    }

    /// The folder the variable moves it to (`lookup` reads a variable); `None` when the
    /// variable is unset or blank.
    pub fn from_env(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let v = folder_var(lookup(self.var).as_deref())?;
        Some(match self.names {
            HomeVar::Folder => v,
            HomeVar::UserHome => v.join(self.folder),
        })
    }

    /// The folder: [`AgentHome::from_env`], else under `user_home`.
    pub fn resolve(&self, lookup: &dyn Fn(&str) -> Option<String>, user_home: &Path) -> PathBuf {
        self.from_env(lookup)
            .unwrap_or_else(|| user_home.join(self.folder))
    }
}

/// Which of transcope's hook commands an event runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookRun {
    /// `transcope hook session-start`: where the session was launched.
    SessionStart,
    /// `transcope hook stop`: what the transcript says the session moved to.
    Stop,
}

/// A time unit of a settings file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Milliseconds,
}

/// A JSON settings file holding hooks as Claude Code's does: `hooks.<Event>` a list of
/// groups `{"hooks": [handler]}`, a handler `{"type": "command", "command": …}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonHooks {
    /// A handler carries `"name": "transcope-<command>"` (shown in the agent's lists).
    pub named: bool,
    /// A handler carries `"timeout"` in this unit (`None`: the agent's default is long
    /// enough).
    pub timeout: Option<TimeUnit>,
    /// A member (object, field) that turns every hook off when `false`.
    pub switch: Option<(&'static str, &'static str)>,
}

/// The dialect of an agent's settings file, as far as its hooks go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingsFormat {
    /// JSON ([`JsonHooks`]).
    Json(JsonHooks),
    /// TOML whose `[hooks]` tables (`[[hooks.<Event>]]` groups of `type = "command"`
    /// handlers) run only when trusted by a hash in `[hooks.state]`, and only with
    /// `[features] hooks` on (Codex's `config.toml`).
    TrustedToml,
    /// A JSON file of the agent's hooks folder that is transcope's own, every file there
    /// read by the agent: `{"version": 1, "hooks": {<event>: [handler]}}`, a handler
    /// `{"type": "command", "bash": …, "timeoutSec": …}` (Copilot CLI's
    /// `hooks/*.json`). Uninstall removes the file once nothing else is in it.
    HookFile,
}

/// What the agent's hook payload (on stdin) names, and so how a hook finds the
/// session's transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookPayload {
    /// `session_id`, `transcript_path` and `cwd` (Claude Code's keys, which Codex,
    /// Gemini CLI and Qwen Code send too): the command is `hook stop`.
    Transcript,
    /// The session's id under this key and `cwd`, no transcript path: the command
    /// names the agent (`hook stop --agent=<name>`), and the transcript is found by the
    /// agent's layout ([`Layout::session_file`](crate::adapter::Layout::session_file)),
    /// which checks that the file is that session's.
    SessionId(&'static str),
}

/// A setting of the agent's that deletes transcripts older than a number of days.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cleanup {
    /// The setting, a top-level number of the settings file (`cleanupPeriodDays`).
    pub setting: &'static str,
    /// The days when the setting is absent.
    pub default_days: u32,
}

/// How transcope's hooks are wired into an agent (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hooks {
    /// The agent as a person knows it (`Claude Code`).
    pub title: &'static str,
    /// A longer name, for a list of agents to choose from (`OpenAI Codex CLI`).
    pub about: &'static str,
    /// Its home folder.
    pub home: AgentHome,
    /// The settings file, relative to the home folder.
    pub settings: &'static str,
    /// The agent reads its home variable with symbolic links resolved (and names its
    /// settings file so).
    pub canonical_home: bool,
    /// The settings file's dialect.
    pub format: SettingsFormat,
    /// The events wired, in order, each with the command it runs.
    pub events: &'static [(&'static str, HookRun)],
    /// Wired by `hook install --agent all` even where its home folder is absent (the
    /// agent transcope is first of all for); any other only where it exists.
    pub wired_by_default: bool,
    /// A setting of the agent's that deletes old transcripts, which `doctor` reports.
    pub cleanup: Option<Cleanup>,
    /// What its hook payload names.
    pub payload: HookPayload,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_included_part_is_taken_out_and_capped() {
        let shape = TokenShape {
            cache_read: Some("c"),
            reasoning: Some("r"),
            input_includes_cache_read: true,
            ..TokenShape::new("i", "o")
        };
        let t = shape.tokens(&TokenCounts {
            input: 3,
            cache_read: 5,
            output: 2,
            reasoning: 7,
            ..TokenCounts::default()
        });
        assert_eq!(
            (t.input, t.cache_read, t.output, t.reasoning_output),
            (0, 3, 2, 2)
        );
        let apart = TokenShape {
            output_includes_reasoning: false,
            ..shape
        };
        let t = apart.tokens(&TokenCounts {
            output: 2,
            reasoning: 7,
            ..TokenCounts::default()
        });
        assert_eq!((t.output, t.reasoning_output), (9, 7));
    }

    #[test]
    fn each_field_has_its_role() {
        let shape = TokenShape {
            cache_read: Some("cr"),
            cache_creation: Some("cc"),
            cache_creation_1h: Some(("split", "1h")),
            reasoning: Some("r"),
            ..TokenShape::new("i", "o")
        };
        let roles: Vec<_> = ["i", "o", "cr", "cc", "split", "r", "1h", "x"]
            .iter()
            .map(|k| shape.role(k))
            .collect();
        use TokenRole::*;
        assert_eq!(
            roles,
            [
                Some(Input),
                Some(Output),
                Some(CacheRead),
                Some(CacheCreation),
                Some(CacheSplit),
                Some(Reasoning),
                None,
                None
            ]
        );
        assert!(shape.is_split_field("1h") && !shape.is_split_field("split"));
    }

    /// A file beside the home is in the variable's folder when it is set, else in the
    /// user's home (Claude Code's `.claude.json`); one in the home follows the home.
    #[test]
    fn an_mcp_file_is_found_by_its_place() {
        let home = Path::new("/home/u");
        let servers = |file| McpServers {
            title: "Toy",
            home: AgentHome::folder("V", ".toy"),
            file,
            format: McpFormat::Toml,
            session_var: None,
        };
        let set = |k: &str| (k == "V").then(|| "/cfg".to_owned());
        let unset = |_: &str| None;
        let beside = servers(McpFile::BesideHome(".toy.json"));
        assert_eq!(beside.file_path(&set, home), Path::new("/cfg/.toy.json"));
        assert_eq!(
            beside.file_path(&unset, home),
            Path::new("/home/u/.toy.json")
        );
        let inside = servers(McpFile::InHome("mcp.json"));
        assert_eq!(inside.file_path(&set, home), Path::new("/cfg/mcp.json"));
        assert_eq!(
            inside.file_path(&unset, home),
            Path::new("/home/u/.toy/mcp.json")
        );
    }

    #[test]
    fn a_home_variable_blank_or_unset_is_the_default() {
        let home = Path::new("/home/u");
        for (names, set, default) in [
            (
                AgentHome::folder("V", ".agent"),
                "/elsewhere",
                "/home/u/.agent",
            ),
            (
                AgentHome::user_home("V", ".agent"),
                "/elsewhere/.agent",
                "/home/u/.agent",
            ),
        ] {
            for (value, want) in [
                (None, default),
                (Some(""), default),
                (Some(" \t\n"), default),
                (Some("/elsewhere"), set),
                (Some("  /elsewhere\n"), set),
            ] {
                let lookup = |k: &str| (k == "V").then(|| value.map(str::to_owned)).flatten();
                assert_eq!(names.resolve(&lookup, home), Path::new(want), "{value:?}");
            }
        }
    }
}

//! The tools: each one's name, description and input schema ([`list`]), and what a
//! call answers ([`call`]) — the same library calls as the query command's `--json`
//! (`transcope_query`, the store's rows and their `to_json`), so a tool's answer is
//! that command's output: one JSON object, or a JSON array of the objects the command
//! prints one a line.
//!
//! Arguments are read strictly: an unknown argument, a value of the wrong type, a time
//! that is not one, all are an [`ArgError`] naming the argument, which the server
//! answers as a tool error (`isError`), never a crash.

use serde_json::{json, Map, Value};
use transcope_store::{LedgerFilter, SessionFilter, Store, UsageFilter, UsageKey};

use crate::Config;

/// What a tool cannot do with the arguments it was given, or why the store could
/// not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A bad argument.
    #[error(transparent)]
    Arg(#[from] ArgError),
    /// The question could not be answered (a bad time, an ambiguous project, the
    /// store's own error).
    #[error(transparent)]
    Query(#[from] transcope_query::QueryError),
    /// No store to read (no index yet, a fleet out of reach).
    #[error("{0}")]
    Store(String),
    /// No tool of that name.
    #[error("no tool {0:?}; the tools are: {names}", names = TOOLS.iter().map(|t| t.name).collect::<Vec<_>>().join(", "))]
    Unknown(String),
}

impl From<transcope_store::StoreError> for ToolError {
    fn from(e: transcope_store::StoreError) -> Self {
        ToolError::Query(e.into())
    }
}

/// A bad argument, named.
#[derive(Debug, thiserror::Error)]
#[error("argument {name:?}: {why}")]
pub struct ArgError {
    name: String,
    why: String,
}

fn bad(name: &str, why: impl Into<String>) -> ArgError {
    ArgError {
        name: name.to_owned(),
        why: why.into(),
    }
}

/// One tool's declaration.
pub struct Tool {
    /// Its name.
    pub name: &'static str,
    /// What it answers, for the agent choosing it.
    pub description: &'static str,
    /// Its arguments: `(name, JSON type, description)`, and which are required.
    pub args: &'static [(&'static str, Kind, &'static str)],
    /// The arguments it cannot go without.
    pub required: &'static [&'static str],
}

/// An argument's JSON type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A boolean.
    Flag,
    /// An array of usage keys.
    UsageKeys,
}

const SESSION: &str = "The session's key (its scope-log key: the agent's session or thread id, `<session>.<agent>` for a sub-agent; the `sessions` tool lists them). Leave it out for the session this server runs in, when the agent that started the server names it.";
const SINCE: &str =
    "From this time (ISO 8601, e.g. 2026-10-08 or 2026-10-08T10:00:00+02:00; no offset means UTC).";
const UNTIL: &str = "Until this time (ISO 8601; no offset means UTC).";
const PROJECT: &str = "A project: its project_id (e.g. github.com/acme/alpha), or its repository's short name when only one project has it.";

/// Every tool, in the order listed.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "current_scope",
        description: "The scope (project_id, project, repo, worktree, cwd, remote, branch, swarm, task, task_revision, lane) a session is in at an instant, read from its scope log: what `transcope scope at --session S --at T` prints, as {\"session\", \"at\", \"scope\"} (scope null when nothing was in force). With no arguments: the session this server runs in, now.",
        args: &[
            ("session", Kind::Text, SESSION),
            ("at", Kind::Text, "The instant (ISO 8601; no offset means UTC). Leave it out for now."),
        ],
        required: &[],
    },
    Tool {
        name: "explain",
        description: "Which scope-log row was in force in a session at an instant and why, how an event then is attributed, what a grant admits, and the markers recorded at that instant: what `transcope explain --json` prints ({\"session\", \"at\", \"in_force\", \"row\", \"why\", \"attribution\", \"grant\", \"markers\"}).",
        args: &[
            ("session", Kind::Text, SESSION),
            ("at", Kind::Text, "The instant to explain (ISO 8601; no offset means UTC)."),
            ("grant", Kind::Text, "A grant to check: comma-separated project ids the session may claim ('' is an empty grant)."),
        ],
        required: &["at"],
    },
    Tool {
        name: "sessions",
        description: "The sessions that were in force in a matching scope at some moment of a window, as `transcope sessions --json` prints them (a JSON array of {\"session\", \"parent\", \"agent\", \"transcript\", \"first_at\", \"last_at\", \"projects\", \"transitions\", \"markers\"}). Every filter is optional; together they must all match.",
        args: &[
            ("project", Kind::Text, PROJECT),
            ("worktree", Kind::Text, "In force in this worktree (its name)."),
            ("branch", Kind::Text, "In force on this git branch."),
            ("task", Kind::Text, "In force under this task (AGENTIHOOKS_SWARM_TASK)."),
            ("agent", Kind::Text, "Written by this agent (claude, codex, gemini, qwen, copilot, …: the adapter's name)."),
            ("since", Kind::Text, SINCE),
            ("until", Kind::Text, UNTIL),
        ],
        required: &[],
    },
    Tool {
        name: "timeline",
        description: "One session's scope transitions and brain markers in time order, as `transcope timeline --json` prints them (a JSON array; each item has `at`, `kind` (transition | marker), and the transition's scope fields or the marker's type, content, attribution, project_id, task).",
        args: &[("session", Kind::Text, SESSION)],
        required: &[],
    },
    Tool {
        name: "ledger",
        description: "The brain markers found (lessons, decisions, signals, …), each once, with its attribution, scope and delivery state, as `transcope ledger --json` prints them (a JSON array of {\"idempotency_key\", \"session\", \"type\", \"content\", \"attrs\", \"at\", \"attribution\", \"project_id\", \"worktree\", \"branch\", \"task\", \"state\"}). Ask for the lessons of a project, branch or task with project/branch/task and type.",
        args: &[
            ("project", Kind::Text, "Attributed to this project (its project_id, or its repository's short name when only one project has it)."),
            ("task", Kind::Text, "Under this task."),
            ("branch", Kind::Text, "On this git branch (the branch in force when the marker was written)."),
            ("session", Kind::Text, "Written by this session (its key)."),
            ("type", Kind::Text, "Of this marker type: lesson, decision, signal, …"),
            ("since", Kind::Text, "Recorded at or after this time (ISO 8601; no offset means UTC)."),
            ("until", Kind::Text, "Recorded at or before this time (ISO 8601; no offset means UTC)."),
            ("pending", Kind::Flag, "Only markers not yet delivered to the brain."),
        ],
        required: &[],
    },
    Tool {
        name: "usage",
        description: "Token usage and its cost in USD, attributed to the scope in force when each request was made, grouped, as `transcope usage --json` prints it (a JSON array; each group has its `by` keys — project_id, worktree, branch, task, session, root_session, model, day, machine — then input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens, reasoning_output_tokens, total_tokens, messages, cost_usd).",
        args: &[
            ("by", Kind::UsageKeys, "Group by these keys, in order (default: [\"project\"])."),
            ("since", Kind::Text, "Spent at or after this time (ISO 8601; no offset means UTC)."),
            ("until", Kind::Text, "Spent at or before this time (ISO 8601; no offset means UTC)."),
            ("project", Kind::Text, "Spent in this project only (its project_id, or its repository's short name when only one project has it)."),
        ],
        required: &[],
    },
    Tool {
        name: "status",
        description: "The status line's figures for a session: its scope in force now, and what its task (else its project) and the session have cost so far, as `transcope statusline --json` prints them ({\"session\", \"at\", \"scope\", \"spent\": {\"over\": \"task\"|\"project\", \"value\", \"cost_usd\"} or null, \"session_cost_usd\", \"line\"}).",
        args: &[("session", Kind::Text, SESSION)],
        required: &[],
    },
];

/// The names `by` takes.
const USAGE_KEYS: &[&str] = &[
    "project",
    "worktree",
    "branch",
    "task",
    "session",
    "root-session",
    "model",
    "day",
    "machine",
];

impl Tool {
    /// The JSON Schema of its arguments (an object; nothing else is accepted).
    pub fn schema(&self) -> Map<String, Value> {
        let mut props = Map::new();
        for (name, kind, description) in self.args {
            let p = match kind {
                Kind::Text => json!({"type": "string", "description": description}),
                Kind::Flag => json!({"type": "boolean", "description": description}),
                Kind::UsageKeys => json!({
                    "type": "array",
                    "items": {"type": "string", "enum": USAGE_KEYS},
                    "description": description,
                }),
            };
            props.insert((*name).to_owned(), p);
        }
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(props));
        schema.insert("required".into(), json!(self.required));
        schema.insert("additionalProperties".into(), json!(false));
        schema
    }
}

/// A call's arguments, read strictly against its tool's declaration.
struct Args<'a> {
    tool: &'a Tool,
    given: Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(tool: &'a Tool, given: Map<String, Value>) -> Result<Args<'a>, ArgError> {
        for (k, v) in &given {
            let Some((_, kind, _)) = tool.args.iter().find(|(n, _, _)| n == k) else {
                let known: Vec<_> = tool.args.iter().map(|(n, _, _)| *n).collect();
                return Err(bad(
                    k,
                    format!(
                        "{} takes no such argument (it takes: {})",
                        tool.name,
                        known.join(", ")
                    ),
                ));
            };
            let fits = match kind {
                Kind::Text => v.is_string() || v.is_null(),
                Kind::Flag => v.is_boolean() || v.is_null(),
                Kind::UsageKeys => v.is_array() || v.is_null(),
            };
            if !fits {
                let what = match kind {
                    Kind::Text => "a string",
                    Kind::Flag => "true or false",
                    Kind::UsageKeys => "an array of usage keys",
                };
                return Err(bad(k, format!("must be {what}, not {v}")));
            }
        }
        for r in tool.required {
            if given.get(*r).is_none_or(Value::is_null) {
                return Err(bad(r, "is required"));
            }
        }
        Ok(Args { tool, given })
    }

    fn text(&self, name: &str) -> Option<String> {
        debug_assert!(self.tool.args.iter().any(|(n, _, _)| *n == name));
        self.given
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn flag(&self, name: &str) -> bool {
        self.given
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn time(&self, name: &str) -> Result<Option<i64>, ArgError> {
        self.text(name)
            .map(|t| transcope_query::time(&t).map_err(|e| bad(name, e.to_string())))
            .transpose()
    }

    fn usage_keys(&self, name: &str) -> Result<Vec<UsageKey>, ArgError> {
        let Some(Value::Array(items)) = self.given.get(name) else {
            return Ok(Vec::new());
        };
        items
            .iter()
            .map(|i| {
                i.as_str().and_then(UsageKey::parse).ok_or_else(|| {
                    bad(
                        name,
                        format!("{i} is not a usage key ({})", USAGE_KEYS.join(", ")),
                    )
                })
            })
            .collect()
    }

    /// The session named, else the one this server runs in.
    fn session(&self, config: &Config) -> Result<String, ArgError> {
        if let Some(s) = self.text("session") {
            return Ok(s);
        }
        config.session.clone().ok_or_else(|| {
            bad(
                "session",
                format!(
                    "not given, and this server was not started by an agent that names its session ({} unset): give the session's key (the `sessions` tool lists them)",
                    if config.session_vars.is_empty() {
                        "no session variable known".to_owned()
                    } else {
                        config.session_vars.join(", ")
                    }
                ),
            )
        })
    }
}

/// The answer of tool `name` to `arguments`, as JSON (what its command prints with
/// `--json`: an object, or an array of the lines).
pub fn call(
    config: &Config,
    name: &str,
    arguments: Map<String, Value>,
) -> Result<Value, ToolError> {
    let tool = TOOLS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| ToolError::Unknown(name.to_owned()))?;
    let a = Args::new(tool, arguments)?;
    let now = || transcope_core::Instant::now().to_python_isoformat();
    // The questions answered from a scope log alone open no store.
    match name {
        "current_scope" => {
            let at = a.text("at").unwrap_or_else(now);
            return Ok(transcope_query::scope_in_force(
                &config.home,
                &a.session(config)?,
                &at,
            )?);
        }
        "status" => {
            let session = a.session(config)?;
            // A status line shows what it can: no store is no costs.
            let store = (config.open)().ok();
            return Ok(transcope_query::status(
                &config.home,
                store.as_deref(),
                Some(&session),
                &config.prices,
                &now(),
            )
            .to_json());
        }
        _ => {}
    }
    let store = (config.open)().map_err(|e| ToolError::Store(e.to_string()))?;
    let store: &dyn Store = &*store;
    Ok(match name {
        "explain" => {
            let at = a.text("at").unwrap_or_default();
            transcope_query::explain(store, &a.session(config)?, &at, a.text("grant").as_deref())?
                .to_json()
        }
        "sessions" => {
            let filter = SessionFilter {
                project: transcope_query::project(store, a.text("project"))?,
                worktree: a.text("worktree"),
                branch: a.text("branch"),
                task: a.text("task"),
                agent: a.text("agent"),
                since: a.time("since")?,
                until: a.time("until")?,
            };
            lines(store.sessions(&filter)?.iter().map(|s| s.to_json()))
        }
        "timeline" => lines(
            store
                .timeline(&a.session(config)?)?
                .iter()
                .map(|i| i.to_json()),
        ),
        "ledger" => {
            let filter = LedgerFilter {
                project: transcope_query::project(store, a.text("project"))?,
                task: a.text("task"),
                branch: a.text("branch"),
                session: a.text("session"),
                kind: a.text("type"),
                since: a.time("since")?,
                until: a.time("until")?,
                pending: a.flag("pending"),
                ..LedgerFilter::default()
            };
            lines(store.ledger(&filter)?.iter().map(|r| r.to_json()))
        }
        "usage" => {
            let by = transcope_query::usage_keys(&a.usage_keys("by")?);
            let filter = UsageFilter {
                since: a.time("since")?,
                until: a.time("until")?,
                project: transcope_query::project(store, a.text("project"))?,
                ..Default::default()
            };
            let groups = transcope_query::usage(
                store,
                &by,
                &filter,
                &config.prices,
                config.machine.as_deref(),
            )?;
            lines(groups.iter().map(|g| g.to_json(&by)))
        }
        _ => return Err(ToolError::Unknown(name.to_owned())),
    })
}

fn lines(values: impl Iterator<Item = Value>) -> Value {
    Value::Array(values.collect())
}

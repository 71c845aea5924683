//! `transcope hook install|uninstall --mcp`: register `transcope mcp` as an MCP server
//! with each agent that starts them, and take it out again; `doctor` reads it back
//! ([`registration`]).
//!
//! Where each agent keeps its servers is its adapter's declaration
//! ([`transcope_core::agent::McpServers`]: the file, found from the agent's home
//! variable, and its dialect); nothing here names an agent. The entry is named
//! `transcope`: in JSON `mcpServers.transcope` = `{"command": <program>, "args":
//! ["mcp"]}` (with the `type` and `tools` the agent wants); in TOML a table
//! `[mcp_servers.transcope]` with `command` and `args`. An entry is transcope's when its
//! command is a program named `transcope` (or the `--program` given) and its first
//! argument `mcp`; one of that name that is not is left alone and said. Install adds
//! the entry when it is missing (so it is idempotent); uninstall removes it, and the
//! `mcpServers` object or `[mcp_servers]` table when it held only that. Files are
//! edited as `hook install` edits them ([`crate::settings_file::replace_edited`]: every
//! other byte of a JSON file kept, TOML through `toml_edit`, a backup, under a lock).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Map, Value};
use toml_edit::{DocumentMut, Item, Table};
use transcope_core::agent::{McpFormat, McpServers};

use crate::jsontext::{self, Kind, Style};
use crate::settings_file::{replace_edited, Words};
use crate::user_home;

/// The server's name in every agent's registrations.
pub const SERVER: &str = "transcope";

/// The registrations' key in a JSON file, and their table in a TOML one.
const JSON_KEY: &str = "mcpServers";
const TOML_KEY: &str = "mcp_servers";

/// One agent that starts MCP servers: a registered adapter that declares how
/// ([`AgentInfo::mcp`](transcope_core::agent::AgentInfo::mcp)).
#[derive(Debug, Clone, Copy)]
pub struct McpAgent {
    /// The adapter's name (`--agent`'s value).
    pub name: &'static str,
    /// How it registers MCP servers.
    pub mcp: McpServers,
    /// Registered by `--agent all` even where its home folder is absent (as its hooks
    /// are wired).
    pub by_default: bool,
}

impl McpAgent {
    /// Every agent that starts MCP servers, in the order the adapters are registered.
    pub fn all() -> Vec<McpAgent> {
        let adapters = crate::compose::adapters();
        let by_default: Vec<&str> = adapters
            .hooks()
            .filter(|(_, h)| h.wired_by_default)
            .map(|(n, _)| n)
            .collect();
        adapters
            .mcp_servers()
            .map(|(name, mcp)| McpAgent {
                name,
                mcp,
                by_default: by_default.contains(&name),
            })
            .collect()
    }

    /// The file its servers are registered in.
    pub fn path(&self) -> PathBuf {
        self.mcp
            .file_path(&|k: &str| std::env::var(k).ok(), &user_home())
    }

    /// Whether the agent is installed here: its home folder exists.
    pub fn installed(&self) -> bool {
        self.mcp
            .home
            .resolve(&|k: &str| std::env::var(k).ok(), &user_home())
            .is_dir()
    }
}

/// The agents covered: the one named, else every one registered by default or
/// installed here.
fn targets(one: Option<&str>) -> Vec<McpAgent> {
    McpAgent::all()
        .into_iter()
        .filter(|a| match one {
            None => a.by_default || a.installed(),
            Some(name) => a.name == name,
        })
        .collect()
}

/// Register (or unregister) the server running `program` with the agent named `one`,
/// else every agent (`--agent all`); `dry_run` prints each file as it would be
/// written. Whether any failed (each said on stderr).
pub fn run(one: Option<&str>, program: &str, dry_run: bool, install: bool) -> bool {
    let mut failed = false;
    for agent in targets(one) {
        let words = Words {
            what: format!("the MCP server `{SERVER}`"),
            done: if install { "registered" } else { "removed" },
            things: "MCP server",
        };
        let edited = replace_edited(
            &agent.path(),
            install,
            dry_run,
            &words,
            &|text, _| match agent.mcp.format {
                McpFormat::Json { kind, tools } => edit_json(text, kind, tools, program, install),
                McpFormat::Toml => edit_toml(text, program, install),
            },
        );
        match edited {
            Ok((msg, _)) => say!("{} MCP: {msg}", agent.mcp.title),
            Err(e) => {
                failed = true;
                say!("{} MCP: {}", agent.mcp.title, crate::error_text(&e));
            }
        }
    }
    failed
}

/// The entry transcope registers in a JSON file.
fn json_entry(kind: Option<&str>, tools: bool, program: &str) -> Value {
    let mut e = Map::new();
    if let Some(k) = kind {
        e.insert("type".into(), json!(k));
    }
    e.insert("command".into(), json!(program));
    e.insert("args".into(), json!(["mcp"]));
    if tools {
        e.insert("tools".into(), json!(["*"]));
    }
    Value::Object(e)
}

/// Whether a server running `command` with `args` is transcope's: a program named
/// `transcope` (or `program`) whose first argument is `mcp`.
pub fn is_transcope_server(command: &str, args: &[&str], program: &str) -> bool {
    let named = command == program
        || Path::new(command)
            .file_name()
            .is_some_and(|n| n == "transcope");
    named && args.first() == Some(&"mcp")
}

/// A JSON entry's command and arguments, when it has a command.
fn json_command(entry: &Value) -> Option<(String, Vec<String>)> {
    let command = entry.get("command")?.as_str()?.to_owned();
    let args = entry
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some((command, args))
}

fn ours(command: &(String, Vec<String>), program: &str) -> bool {
    let args: Vec<&str> = command.1.iter().map(String::as_str).collect();
    is_transcope_server(&command.0, &args, program)
}

/// The JSON text with transcope's entry added (or removed), or `None` when it would
/// not change; every other byte kept.
fn edit_json(
    text: &str,
    kind: Option<&str>,
    tools: bool,
    program: &str,
    install: bool,
) -> Result<Option<String>> {
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    let whole: Value =
        serde_json::from_str(text).context("the file is not plain JSON (comments are not kept)")?;
    let root = jsontext::parse(text).map_err(anyhow::Error::msg)?;
    if !matches!(root.kind, Kind::Object(_)) {
        bail!("the file is not a JSON object");
    }
    let style = Style::of(text);
    let servers = root.member(JSON_KEY);
    let existing = whole.get(JSON_KEY).and_then(|s| s.get(SERVER));
    let edited = if install {
        if let Some(e) = existing {
            return match json_command(e) {
                Some(c) if ours(&c, program) => Ok(None),
                _ => bail!(
                    "`{JSON_KEY}.{SERVER}` is another server's ({e}); remove or rename it first"
                ),
            };
        }
        let entry = json_entry(kind, tools, program);
        match servers {
            None => jsontext::append_member(text, &root, &style, JSON_KEY, &json!({SERVER: entry})),
            Some((_, s)) if matches!(s.value.kind, Kind::Object(_)) => {
                jsontext::append_member(text, &s.value, &style, SERVER, &entry)
            }
            Some(_) => bail!("`{JSON_KEY}` is not a JSON object"),
        }
    } else {
        let Some((servers_at, s)) = servers else {
            return Ok(None);
        };
        let Some((at, _)) = s.value.member(SERVER) else {
            return Ok(None);
        };
        if !existing
            .and_then(json_command)
            .is_some_and(|c| ours(&c, program))
        {
            return Ok(None);
        }
        if s.value.len() > 1 {
            jsontext::remove(text, &s.value, at)
        } else {
            jsontext::remove(text, &root, servers_at)
        }
    };
    serde_json::from_str::<serde::de::IgnoredAny>(&edited)
        .context("the edit would not be JSON (a bug in transcope)")?;
    Ok(Some(edited))
}

/// A TOML table's command and arguments.
fn toml_command(t: &Item) -> Option<(String, Vec<String>)> {
    let command = t.get("command")?.as_str()?.to_owned();
    let args = t
        .get("args")
        .and_then(Item::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Some((command, args))
}

/// The TOML text with `[mcp_servers.transcope]` added (or removed), or `None` when it
/// would not change; comments and layout kept.
fn edit_toml(text: &str, program: &str, install: bool) -> Result<Option<String>> {
    let mut doc: DocumentMut = text.parse().context("the file is not valid TOML")?;
    if install {
        let servers = doc
            .entry(TOML_KEY)
            .or_insert_with(|| {
                let mut t = Table::new();
                t.set_implicit(true);
                Item::Table(t)
            })
            .as_table_mut()
            .with_context(|| format!("`{TOML_KEY}` is not a TOML table"))?;
        if let Some(e) = servers.get(SERVER) {
            return match toml_command(e) {
                Some(c) if ours(&c, program) => Ok(None),
                _ => {
                    bail!("`[{TOML_KEY}.{SERVER}]` is another server's; remove or rename it first")
                }
            };
        }
        let mut t = Table::new();
        t.insert("command", toml_edit::value(program));
        let mut args = toml_edit::Array::new();
        args.push("mcp");
        t.insert("args", toml_edit::value(args));
        t.decor_mut()
            .set_prefix("\n# added by transcope hook install --mcp\n");
        servers.insert(SERVER, Item::Table(t));
    } else {
        let Some(servers) = doc.get_mut(TOML_KEY).and_then(Item::as_table_mut) else {
            return Ok(None);
        };
        if !servers
            .get(SERVER)
            .and_then(toml_command)
            .is_some_and(|c| ours(&c, program))
        {
            return Ok(None);
        }
        servers.remove(SERVER);
        if servers.is_empty() {
            doc.remove(TOML_KEY);
        }
    }
    Ok(Some(doc.to_string()))
}

/// What `doctor` learns of one agent's MCP registrations.
#[derive(Debug, Default)]
pub struct Registration {
    /// The file exists.
    pub exists: bool,
    /// The program transcope's entry runs, when there is one.
    pub program: Option<String>,
    /// An entry named `transcope` that runs something else, or a file that cannot be
    /// read.
    pub problem: Option<String>,
}

/// Read `agent`'s registrations at `path` for `doctor`.
pub fn registration(agent: &McpAgent, path: &Path) -> Registration {
    let mut r = Registration::default();
    let Ok(text) = std::fs::read_to_string(path) else {
        return r;
    };
    r.exists = true;
    let found = match agent.mcp.format {
        McpFormat::Json { .. } => match serde_json::from_str::<Value>(&text) {
            Ok(v) => v
                .get(JSON_KEY)
                .and_then(|s| s.get(SERVER))
                .map(json_command),
            Err(e) => {
                r.problem = Some(format!("{} is not valid JSON: {e}", path.display()));
                None
            }
        },
        McpFormat::Toml => match text.parse::<DocumentMut>() {
            Ok(d) => d
                .get(TOML_KEY)
                .and_then(|s| s.get(SERVER))
                .map(toml_command),
            Err(e) => {
                r.problem = Some(format!("{} is not valid TOML: {e}", path.display()));
                None
            }
        },
    };
    match found {
        Some(Some(c)) if ours(&c, SERVER) => r.program = Some(c.0),
        Some(_) => {
            r.problem = Some(format!(
                "an MCP server named `{SERVER}` in {} runs something other than `transcope mcp`",
                path.display()
            ))
        }
        None => {}
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_entry_goes_in_and_out_keeping_every_other_byte() {
        let text = "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n";
        let added = edit_json(text, Some("stdio"), false, "transcope", true)
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(
            v["mcpServers"]["transcope"],
            json!({"type": "stdio", "command": "transcope", "args": ["mcp"]})
        );
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(
            edit_json(&added, Some("stdio"), false, "transcope", true).unwrap(),
            None
        );
        let removed = edit_json(&added, None, false, "transcope", false)
            .unwrap()
            .unwrap();
        assert_eq!(removed, text);
    }

    #[test]
    fn another_servers_entry_of_that_name_is_left_alone() {
        let text = r#"{"mcpServers": {"transcope": {"command": "node", "args": ["x.js"]}}}"#;
        let e = edit_json(text, None, false, "transcope", true).unwrap_err();
        assert!(e.to_string().contains("another server's"), "{e}");
        assert_eq!(
            edit_json(text, None, false, "transcope", false).unwrap(),
            None
        );
    }

    #[test]
    fn a_toml_table_goes_in_and_out_with_the_comments_kept() {
        let text = "# mine\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        let added = edit_toml(text, "/opt/transcope", true).unwrap().unwrap();
        assert!(added.starts_with("# mine\n"), "{added}");
        let doc: DocumentMut = added.parse().unwrap();
        assert_eq!(
            toml_command(&doc["mcp_servers"]["transcope"]),
            Some(("/opt/transcope".into(), vec!["mcp".into()]))
        );
        assert_eq!(edit_toml(&added, "/opt/transcope", true).unwrap(), None);
        let removed = edit_toml(&added, "/opt/transcope", false).unwrap().unwrap();
        assert_eq!(removed.trim_end(), text.trim_end());
        // Alone in its table, the table goes too.
        let lone = edit_toml("", "transcope", true).unwrap().unwrap();
        assert_eq!(
            edit_toml(&lone, "transcope", false)
                .unwrap()
                .unwrap()
                .trim(),
            ""
        );
    }
}

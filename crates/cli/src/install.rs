//! `transcope hook install | uninstall`: wire transcope's hooks into each agent's own
//! settings, and take them out again.
//!
//! Each agent keeps its hooks in its own file and format, which its adapter declares
//! ([`transcope_core::agent::Hooks`]: the settings file in its home folder, the home
//! found from the environment, the file's dialect, the events wired; `docs/cli.md`
//! lists them): the agents here are the registered adapters that declare a wiring
//! ([`Agent::all`]), in their order. What is left here of one agent is a settings
//! dialect's editor (the trusted-TOML dialect, which Codex uses: its trust hashes and
//! `[features]`; the hook-file dialect, Copilot CLI's: a file of transcope's own in the
//! agent's hooks folder, removed by uninstall once empty) and Codex's older `notify`
//! program below; which agent uses a dialect is the adapter's declaration. An agent
//! whose payload names no transcript has its name in the command
//! (`hook stop --agent=<name>`, [`Agent::command`]).
//!
//! The JSON files are edited as text ([`crate::jsontext`]): transcope's groups are
//! spliced in and out, and every other byte stays as it was; the TOML file is edited
//! with `toml_edit`, so the user's comments and layout survive. A hook is transcope's
//! when its command is `<program> hook session-start|stop` with `<program>` named
//! `transcope` (or the `--program` given); install adds a group of its own for each
//! event that has none (so it is idempotent) and never touches another hook; uninstall
//! removes those groups and whatever install created to hold them. A file is replaced
//! through [`crate::settings_file`]: read-only refused, under a lock, only if unchanged
//! since read, after a backup `<file>.transcope-<unix time>.bak` with its mode.
//! `--codex-notify` also sets Codex's older single `notify` program (to
//! `transcope hook codex-notify`), when the file names none.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::Args;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use toml_edit::{ArrayOfTables, DocumentMut, Item, Table};
use transcope_core::agent::{HookPayload, HookRun, Hooks, JsonHooks, SettingsFormat, TimeUnit};

use crate::jsontext::{self, Kind, Node, Style};
use crate::settings_file::{replace_edited, Words};
use crate::{exit, user_home};

/// The mark install leaves on what it adds to a TOML file.
const MARK: &str = "# added by transcope hook install";

/// How long an agent may let a hook run: above the hook's own deadline (30 s).
const HOOK_TIMEOUT_SECS: u64 = 60;

#[derive(Args, Debug, Clone)]
pub struct InstallArgs {
    // Which agent to wire (the help and the values come from the agents' wirings).
    #[arg(long, default_value = ALL, value_parser = agent_values(), help = agent_help())]
    agent: String,
    /// Edit FILE instead of the agent's own settings file (needs one --agent).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Print each file as it would be written, and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The program the hooks run: a name looked up on the PATH, or a full path.
    #[arg(long, value_name = "PROGRAM", default_value = "transcope")]
    program: String,
    /// Also set Codex's older `notify` program to `transcope hook codex-notify`, for a
    /// Codex without lifecycle hooks (install only; left alone when the file already
    /// names a notify program).
    #[arg(long)]
    codex_notify: bool,
    /// Also register `transcope mcp` as an MCP server with each agent that starts them
    /// (its own file: Claude Code's `.claude.json`, Codex's `config.toml`, Gemini CLI's
    /// and Qwen Code's `settings.json`, Copilot CLI's `mcp-config.json`); with
    /// uninstall, remove it.
    #[arg(long)]
    mcp: bool,
}

/// `--agent`'s value for every agent.
const ALL: &str = "all";

/// One agent whose hooks transcope can wire: a registered adapter that declares how
/// ([`AgentInfo::hooks`](transcope_core::agent::AgentInfo::hooks)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// The adapter's name (`--agent`'s value).
    pub name: &'static str,
    /// How its hooks are wired.
    pub hooks: Hooks,
}

impl Agent {
    /// Every agent whose hooks can be wired, in the order the adapters are registered
    /// (the order they are reported in).
    pub fn all() -> Vec<Agent> {
        crate::compose::adapters()
            .hooks()
            .map(|(name, hooks)| Agent { name, hooks })
            .collect()
    }

    /// The agent's name as a person knows it.
    pub fn title(&self) -> &'static str {
        self.hooks.title
    }

    /// The agent's home folder, found from the environment by the one rule every
    /// reader of the variable applies ([`AgentHome`](transcope_core::agent::AgentHome)),
    /// else under `$HOME`.
    pub fn home_folder(&self) -> PathBuf {
        let lookup = |k: &str| std::env::var(k).ok();
        let home = &self.hooks.home;
        match home.from_env(&lookup) {
            // The agent reads its variable canonicalised; its hook keys name that path.
            Some(h) if self.hooks.canonical_home => fs::canonicalize(&h).unwrap_or(h),
            Some(h) => h,
            None => user_home().join(home.folder),
        }
    }

    /// The agent's settings file, in its home folder.
    pub fn settings_path(&self) -> PathBuf {
        self.home_folder().join(self.hooks.settings)
    }

    /// Whether the agent is installed here: its home folder exists (the settings
    /// file's folder may not yet: Copilot CLI's `hooks/`).
    pub fn installed(&self) -> bool {
        self.home_folder().is_dir()
    }

    /// The command a hook of this agent runs: `<program> hook <sub>`, and
    /// `--agent=<name>` when the agent's payload names no transcript (the hook then
    /// finds it by the agent's layout).
    pub fn command(&self, program: &str, sub: &str) -> String {
        match self.hooks.payload {
            HookPayload::Transcript => format!("{program} hook {sub}"),
            HookPayload::SessionId(_) => format!("{program} hook {sub} --agent={}", self.name),
        }
    }

    /// The hooks transcope wires for this agent: (event, hook subcommand).
    pub fn events(&self) -> Vec<(&'static str, &'static str)> {
        self.hooks
            .events
            .iter()
            .map(|&(event, run)| (event, subcommand(run)))
            .collect()
    }
}

/// The `transcope hook` subcommand that runs `run`.
fn subcommand(run: HookRun) -> &'static str {
    match run {
        HookRun::SessionStart => "session-start",
        HookRun::Stop => "stop",
    }
}

/// `a`, `a and b`, `a, b and c`.
pub fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// `hook install`'s one-line help: whose settings it edits.
pub fn about() -> String {
    let whose: Vec<String> = Agent::all()
        .iter()
        .map(|a| format!("{}'s", a.title()))
        .collect();
    format!("Wire these hooks into {} settings", and_list(&whose))
}

/// The agents `all` wires even where they are not installed, and the others.
fn by_default() -> (Vec<String>, Vec<String>) {
    let (always, others): (Vec<Agent>, Vec<Agent>) = Agent::all()
        .into_iter()
        .partition(|a| a.hooks.wired_by_default);
    let titles = |v: Vec<Agent>| v.iter().map(|a| a.title().to_owned()).collect();
    (titles(always), titles(others))
}

/// `--agent`'s help.
fn agent_help() -> String {
    let (always, others) = by_default();
    let mut help = format!("Which agent to wire: `{ALL}` wires {}", and_list(&always));
    if !others.is_empty() {
        help.push_str(&format!(
            ", and {} when their settings folder exists",
            and_list(&others)
        ));
    }
    help
}

/// `--agent`'s values: each agent's name, then `all`.
fn agent_values() -> PossibleValuesParser {
    let (always, _) = by_default();
    let mut values: Vec<PossibleValue> = Agent::all()
        .iter()
        .map(|a| PossibleValue::new(a.name).help(a.hooks.about))
        .collect();
    values.push(PossibleValue::new(ALL).help(format!(
        "{}, and every other agent whose settings folder exists",
        and_list(&always)
    )));
    PossibleValuesParser::new(values)
}

/// The agents a run covers, each with the file it edits.
fn targets(args: &InstallArgs) -> Result<Vec<(Agent, PathBuf)>, String> {
    let agents = Agent::all();
    let one = agents.iter().find(|a| a.name == args.agent).copied();
    match (one, &args.settings) {
        (Some(a), Some(f)) => Ok(vec![(a, f.clone())]),
        (Some(a), None) => Ok(vec![(a, a.settings_path())]),
        (None, Some(_)) => Err("--settings names one file: say which --agent it is for".into()),
        (None, None) => Ok(agents
            .into_iter()
            .filter(|a| a.hooks.wired_by_default || a.installed())
            .map(|a| (a, a.settings_path()))
            .collect()),
    }
}

/// `transcope hook install` and `transcope hook uninstall`.
pub fn run(args: InstallArgs, install: bool) -> Result<u8> {
    if args.mcp && args.settings.is_some() {
        say!("--settings names the hooks' file; --mcp edits each agent's own MCP file: give one or the other");
        return Ok(exit::USAGE);
    }
    let targets = match targets(&args) {
        Ok(t) => t,
        Err(msg) => {
            say!("{msg}");
            return Ok(exit::USAGE);
        }
    };
    let mut failed = false;
    for (agent, path) in targets {
        match edit_file(agent, &path, &args, install) {
            Ok(msg) => say!("{}: {msg}", agent.title()),
            Err(e) => {
                failed = true;
                say!("{}: {}", agent.title(), crate::error_text(&e));
            }
        }
    }
    if args.mcp {
        let one = (args.agent != ALL).then_some(args.agent.as_str());
        failed |= crate::install_mcp::run(one, &args.program, args.dry_run, install);
    }
    Ok(if failed { exit::RUNTIME } else { exit::OK })
}

/// Install into (or uninstall from) one file; what was done, for a person.
fn edit_file(agent: Agent, path: &Path, args: &InstallArgs, install: bool) -> Result<String> {
    let words = Words {
        what: events_of(&agent),
        done: done_word(install),
        things: "hooks",
    };
    let (mut msg, written) =
        replace_edited(
            path,
            install,
            args.dry_run,
            &words,
            &|text, path| match agent.hooks.format {
                SettingsFormat::TrustedToml => edit_codex(&agent, text, path, args, install),
                SettingsFormat::Json(json) => edit_json(&agent, json, text, &args.program, install),
                SettingsFormat::HookFile => edit_hook_file(&agent, text, &args.program, install),
            },
        )?;
    if let (false, SettingsFormat::HookFile, Some(text)) = (install, agent.hooks.format, &written) {
        if hook_file_is_empty(text) {
            // Transcope's own file, holding nothing now: what install created goes.
            let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            if fs::read_to_string(&path).is_ok_and(|t| t == *text) {
                fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
                msg.push_str("; the file held nothing else, so it is removed");
            }
        }
    }
    if let (true, SettingsFormat::TrustedToml, Some(text)) = (install, agent.hooks.format, &written)
    {
        if let Some(note) = codex_feature_note(text) {
            msg.push_str(&format!("; {note}"));
        }
    }
    Ok(msg)
}

fn done_word(install: bool) -> &'static str {
    if install {
        "wired"
    } else {
        "removed"
    }
}

/// The events transcope wires for `agent`, for a message.
fn events_of(agent: &Agent) -> String {
    agent
        .events()
        .iter()
        .map(|(e, _)| *e)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `command` is a transcope hook command running `hook <sub>`: its program is
/// named `transcope` (anywhere) or is `program`, and only flags follow `hook <sub>`.
pub fn is_transcope_hook(command: &str, sub: &str, program: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(prog) = words.next() else {
        return false;
    };
    let named = prog == program
        || Path::new(prog.trim_matches(['"', '\'']))
            .file_name()
            .is_some_and(|n| n == "transcope");
    named
        && words.next() == Some("hook")
        && words.next() == Some(sub)
        && words.all(|w| w.starts_with("--"))
}

// ---------------------------------------------------------------------------------
// Claude Code and Gemini CLI: JSON settings.

/// The hook entry transcope adds for `sub` in the agent's JSON (a name when the agent
/// shows one, a timeout in its unit unless its default is long enough).
fn json_hook(agent: &Agent, json: JsonHooks, program: &str, sub: &str) -> Value {
    let mut handler = Map::new();
    if json.named {
        handler.insert("name".into(), json!(format!("transcope-{sub}")));
    }
    handler.insert("type".into(), json!("command"));
    handler.insert("command".into(), json!(agent.command(program, sub)));
    if let Some(unit) = json.timeout {
        let timeout = match unit {
            TimeUnit::Seconds => HOOK_TIMEOUT_SECS,
            TimeUnit::Milliseconds => HOOK_TIMEOUT_SECS * 1000,
        };
        handler.insert("timeout".into(), json!(timeout));
    }
    Value::Object(handler)
}

/// Whether a matcher group holds a transcope hook for `sub`.
fn group_has(text: &str, group: &Node, sub: &str, program: &str) -> bool {
    group.member("hooks").is_some_and(|(_, hs)| {
        hs.value
            .elements()
            .iter()
            .any(|h| hook_is(text, h, sub, program))
    })
}

fn hook_is(text: &str, hook: &Node, sub: &str, program: &str) -> bool {
    command_of(text, hook).is_some_and(|c| is_transcope_hook(&c, sub, program))
}

/// A hook handler's `"command"`, read from the text alone (the rest of the handler
/// may hold what serde_json does not read, such as `1e999`).
fn command_of(text: &str, hook: &Node) -> Option<String> {
    let (_, m) = hook.member("command")?;
    serde_json::from_str(&text[m.value.span.clone()]).ok()
}

/// The settings text with transcope's hooks added (or removed), or `None` when it
/// would not change. The text is edited in place, one item at a time
/// ([`crate::jsontext`]): every byte outside transcope's own entries stays as it was.
fn edit_json(
    agent: &Agent,
    json: JsonHooks,
    text: &str,
    program: &str,
    install: bool,
) -> Result<Option<String>> {
    edit_json_text(text, &|text, root, style| {
        if install {
            json_install_step(agent, json, text, root, style, program)
        } else {
            Ok(json_uninstall_step(agent, text, root, program))
        }
    })
}

/// One step of an edit of a JSON file: the text, its parse and layout → the text
/// with one more change, or `None` when done.
type EditStep<'a> = dyn Fn(&str, &Node, &Style) -> Result<Option<String>> + 'a;

/// A JSON object's text edited by `step` (the text, its parse, its layout) one item at
/// a time until it returns `None`, or `None` when the first step does: in place
/// ([`crate::jsontext`]), every byte outside the items edited kept.
fn edit_json_text(text: &str, step: &EditStep<'_>) -> Result<Option<String>> {
    let text = if text.trim().is_empty() { "{}\n" } else { text };
    serde_json::from_str::<serde::de::IgnoredAny>(text)
        .context("the file is not plain JSON (comments are not kept)")?;
    let style = Style::of(text);
    let mut text = text.to_owned();
    let mut changed = false;
    loop {
        let root = jsontext::parse(&text).map_err(anyhow::Error::msg)?;
        if !matches!(root.kind, Kind::Object(_)) {
            bail!("the file is not a JSON object");
        }
        match step(&text, &root, &style)? {
            Some(t) => {
                text = t;
                changed = true;
            }
            None => break,
        }
    }
    if changed {
        // What is written must stay JSON, whatever the file looked like.
        serde_json::from_str::<serde::de::IgnoredAny>(&text)
            .context("the edit would not be JSON (a bug in transcope)")?;
    }
    Ok(changed.then_some(text))
}

/// `text` with one more of transcope's groups added, or `None` when every event has one.
fn json_install_step(
    agent: &Agent,
    json: JsonHooks,
    text: &str,
    root: &Node,
    style: &Style,
    program: &str,
) -> Result<Option<String>> {
    let group = |sub: &str| json!({"hooks": [json_hook(agent, json, program, sub)]});
    let ours = |g: &Node, sub: &str| group_has(text, g, sub, program);
    add_one(agent, text, root, style, &group, &ours)
}

/// `text` with one more of transcope's entries (`entry` of a hook subcommand: a group,
/// a handler) in `hooks.<event>` (and the `hooks` object, when missing), or `None` when
/// every event has one that is `ours`.
fn add_one(
    agent: &Agent,
    text: &str,
    root: &Node,
    style: &Style,
    entry: &dyn Fn(&str) -> Value,
    ours: &dyn Fn(&Node, &str) -> bool,
) -> Result<Option<String>> {
    let Some((_, hooks)) = root.member("hooks") else {
        let mut all = Map::new();
        for (event, sub) in agent.events() {
            all.insert(event.to_owned(), json!([entry(sub)]));
        }
        let all = Value::Object(all);
        return Ok(Some(jsontext::append_member(
            text, root, style, "hooks", &all,
        )));
    };
    let hooks = &hooks.value;
    if !matches!(hooks.kind, Kind::Object(_)) {
        bail!("\"hooks\" is not a JSON object");
    }
    for (event, sub) in agent.events() {
        let Some((_, entries)) = hooks.member(event) else {
            let entries = json!([entry(sub)]);
            return Ok(Some(jsontext::append_member(
                text, hooks, style, event, &entries,
            )));
        };
        let Kind::Array(es) = &entries.value.kind else {
            bail!("\"hooks.{event}\" is not a JSON array");
        };
        if es.iter().any(|e| ours(e, sub)) {
            continue;
        }
        return Ok(Some(jsontext::append_element(
            text,
            &entries.value,
            style,
            &entry(sub),
        )));
    }
    Ok(None)
}

/// `text` with one of transcope's hooks taken out (with the group, event and `hooks`
/// object that held only it), or `None` when there is none.
fn json_uninstall_step(agent: &Agent, text: &str, root: &Node, program: &str) -> Option<String> {
    let (hooks_at, hooks) = root.member("hooks")?;
    let hooks = &hooks.value;
    for (event, sub) in agent.events() {
        let Some((event_at, groups)) = hooks.member(event) else {
            continue;
        };
        let Kind::Array(gs) = &groups.value.kind else {
            continue;
        };
        for (gi, g) in gs.iter().enumerate() {
            let Some((_, handlers)) = g.member("hooks") else {
                continue;
            };
            let Kind::Array(hs) = &handlers.value.kind else {
                continue;
            };
            let Some(hi) = hs.iter().position(|h| hook_is(text, h, sub, program)) else {
                continue;
            };
            return Some(if hs.len() > 1 {
                jsontext::remove(text, &handlers.value, hi)
            } else if gs.len() > 1 {
                jsontext::remove(text, &groups.value, gi)
            } else if hooks.len() > 1 {
                jsontext::remove(text, hooks, event_at)
            } else {
                jsontext::remove(text, root, hooks_at)
            });
        }
    }
    None
}

// ---------------------------------------------------------------------------------
// Copilot CLI: a hooks file of transcope's own, `{"version": 1, "hooks": {<event>:
// [handler]}}`, a handler `{"type": "command", "bash": …, "timeoutSec": …}`.

/// The handler transcope adds for `sub` to a hook file.
fn hook_file_handler(agent: &Agent, program: &str, sub: &str) -> Value {
    json!({
        "type": "command",
        "bash": agent.command(program, sub),
        "timeoutSec": HOOK_TIMEOUT_SECS,
    })
}

/// A hook-file handler's `"bash"`, read from the text alone.
fn bash_of(text: &str, handler: &Node) -> Option<String> {
    let (_, m) = handler.member("bash")?;
    serde_json::from_str(&text[m.value.span.clone()]).ok()
}

/// Whether a hook-file handler runs transcope's `hook <sub>`.
fn handler_is(text: &str, handler: &Node, sub: &str, program: &str) -> bool {
    bash_of(text, handler).is_some_and(|c| is_transcope_hook(&c, sub, program))
}

/// Whether a hook file holds nothing but `version` and an empty `hooks` (all that
/// install put there besides its handlers).
fn hook_file_is_empty(text: &str) -> bool {
    let Ok(Value::Object(root)) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    root.iter().all(|(k, v)| match k.as_str() {
        "version" => true,
        "hooks" => v.as_object().is_some_and(Map::is_empty),
        _ => false,
    })
}

/// The hook file's text with transcope's handlers added (or removed), or `None` when
/// it would not change; edited in place like the JSON settings ([`edit_json`]).
fn edit_hook_file(
    agent: &Agent,
    text: &str,
    program: &str,
    install: bool,
) -> Result<Option<String>> {
    edit_json_text(text, &|text, root, style| {
        if install {
            hook_file_install_step(agent, text, root, style, program)
        } else {
            Ok(hook_file_uninstall_step(agent, text, root, program))
        }
    })
}

/// `text` with `version`, `hooks` or one more of transcope's handlers added, or
/// `None` when every event has one.
fn hook_file_install_step(
    agent: &Agent,
    text: &str,
    root: &Node,
    style: &Style,
    program: &str,
) -> Result<Option<String>> {
    if root.member("version").is_none() {
        return Ok(Some(jsontext::append_member(
            text,
            root,
            style,
            "version",
            &json!(1),
        )));
    }
    let handler = |sub: &str| hook_file_handler(agent, program, sub);
    let ours = |h: &Node, sub: &str| handler_is(text, h, sub, program);
    add_one(agent, text, root, style, &handler, &ours)
}

/// `text` with one of transcope's handlers taken out (with its event when it held
/// only that), or `None` when there is none.
fn hook_file_uninstall_step(
    agent: &Agent,
    text: &str,
    root: &Node,
    program: &str,
) -> Option<String> {
    let (_, hooks) = root.member("hooks")?;
    let hooks = &hooks.value;
    for (event, sub) in agent.events() {
        let Some((event_at, handlers)) = hooks.member(event) else {
            continue;
        };
        let Kind::Array(hs) = &handlers.value.kind else {
            continue;
        };
        let Some(hi) = hs.iter().position(|h| handler_is(text, h, sub, program)) else {
            continue;
        };
        return Some(if hs.len() > 1 {
            jsontext::remove(text, &handlers.value, hi)
        } else {
            jsontext::remove(text, hooks, event_at)
        });
    }
    None
}

// ---------------------------------------------------------------------------------
// Codex: `[hooks]` in config.toml, each hook trusted by its hash in `[hooks.state]`.

/// Codex's label of an event in hook-state keys.
fn codex_label(event: &str) -> &'static str {
    match event {
        "SessionStart" => "session_start",
        _ => "stop",
    }
}

/// The hash Codex trusts a command hook by: SHA-256 of the canonical JSON (keys sorted,
/// no spaces) of `{event_name, matcher?, hooks: [handler]}`, the handler with its
/// timeout filled in, written `sha256:<hex>`.
pub fn codex_trusted_hash(label: &str, command: &str, timeout_secs: u64) -> String {
    let identity = json!({
        "event_name": label,
        "hooks": [{
            "async": false,
            "command": command,
            "timeout": timeout_secs,
            "type": "command",
        }],
    });
    let canonical = serde_json::to_string(&sorted(&identity)).unwrap_or_default();
    let digest = Sha256::digest(canonical.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// `v` with every object's keys in sorted order (serde_json here keeps insertion order).
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The key Codex keeps a hook's state under: `<file>:<event label>:<group>:<handler>`.
fn codex_state_key(path: &Path, label: &str, group: usize) -> String {
    format!("{}:{label}:{group}:0", path.display())
}

/// The groups of one event in the `[hooks]` table, whichever way they are written
/// (`[[hooks.Stop]]` tables or an inline array): each group's first command.
fn codex_groups(hooks: &Table, event: &str) -> Vec<Option<String>> {
    fn first_command(handlers: Option<&Item>) -> Option<String> {
        let pick = |t: &dyn toml_edit::TableLike| {
            let ty = t.get("type").and_then(Item::as_str);
            ty.is_none_or(|ty| ty == "command")
                .then(|| t.get("command").and_then(Item::as_str).map(str::to_owned))
                .flatten()
        };
        match handlers? {
            Item::ArrayOfTables(a) => a.get(0).and_then(|t| pick(t)),
            Item::Value(toml_edit::Value::Array(a)) => a
                .get(0)
                .and_then(toml_edit::Value::as_inline_table)
                .and_then(|t| pick(t)),
            _ => None,
        }
    }
    match hooks.get(event) {
        Some(Item::ArrayOfTables(groups)) => groups
            .iter()
            .map(|g| first_command(g.get("hooks")))
            .collect(),
        Some(Item::Value(toml_edit::Value::Array(groups))) => groups
            .iter()
            .map(|g| {
                let handlers = g.as_inline_table()?.get("hooks")?.clone();
                first_command(Some(&Item::Value(handlers)))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A `[[hooks.<Event>]]` group holding one transcope command, marked as install's.
fn codex_group(command: &str) -> Table {
    let mut handler = Table::new();
    handler.insert("type", toml_edit::value("command"));
    handler.insert("command", toml_edit::value(command));
    handler.insert("timeout", toml_edit::value(HOOK_TIMEOUT_SECS as i64));
    let mut handlers = ArrayOfTables::new();
    handlers.push(handler);
    let mut group = Table::new();
    group.insert("hooks", Item::ArrayOfTables(handlers));
    group.decor_mut().set_prefix(format!("\n{MARK}\n"));
    group
}

/// The child table `key` of `parent`, created (implicit: no header of its own) when
/// missing; an inline table is turned into a table with the same entries.
fn child_table<'a>(parent: &'a mut Table, key: &str) -> Result<&'a mut Table> {
    if !parent.contains_key(key) {
        let mut t = Table::new();
        t.set_implicit(true);
        parent.insert(key, Item::Table(t));
    }
    let item = parent.get_mut(key).expect("just inserted");
    if let Some(inline) = item.as_inline_table().cloned() {
        *item = Item::Table(inline.into_table());
    }
    item.as_table_mut()
        .with_context(|| format!("`{key}` is not a TOML table"))
}

fn edit_codex(
    agent: &Agent,
    text: &str,
    path: &Path,
    args: &InstallArgs,
    install: bool,
) -> Result<Option<String>> {
    let mut doc: DocumentMut = text.parse().context("the file is not valid TOML")?;
    let changed = if install {
        let hooks = codex_install(agent, &mut doc, path, &args.program)?;
        hooks | (args.codex_notify && codex_install_notify(&mut doc, &args.program))
    } else {
        codex_uninstall(agent, &mut doc, path, &args.program)
    };
    Ok(changed.then(|| doc.to_string()))
}

/// `notify = ["<program>", "hook", "codex-notify"]`, marked, unless a notify program
/// is already set (Codex runs only one).
fn codex_install_notify(doc: &mut DocumentMut, program: &str) -> bool {
    if doc.contains_key("notify") {
        return false;
    }
    let mut argv = toml_edit::Array::new();
    for word in [program, "hook", "codex-notify"] {
        argv.push(word);
    }
    let mut v = toml_edit::Value::Array(argv);
    v.decor_mut().set_suffix(format!(" {MARK}"));
    doc.insert("notify", Item::Value(v));
    true
}

/// Whether `item` carries install's mark after its value.
fn marked(item: Option<&Item>) -> bool {
    item.and_then(Item::as_value)
        .and_then(|v| v.decor().suffix())
        .and_then(|s| s.as_str())
        .is_some_and(|s| s.contains(MARK))
}

fn codex_install(agent: &Agent, doc: &mut DocumentMut, path: &Path, program: &str) -> Result<bool> {
    let mut changed = false;
    let mut trust = Vec::new();
    {
        let hooks = child_table(doc.as_table_mut(), "hooks")?;
        for (event, sub) in agent.events() {
            let groups = codex_groups(hooks, event);
            let label = codex_label(event);
            let ours = groups.iter().position(|c| {
                c.as_deref()
                    .is_some_and(|c| is_transcope_hook(c, sub, program))
            });
            let command = agent.command(program, sub);
            let index = match ours {
                Some(i) => i,
                None => {
                    match hooks.get_mut(event) {
                        None => {
                            let mut a = ArrayOfTables::new();
                            a.push(codex_group(&command));
                            hooks.insert(event, Item::ArrayOfTables(a));
                        }
                        Some(Item::ArrayOfTables(a)) => a.push(codex_group(&command)),
                        Some(Item::Value(toml_edit::Value::Array(a))) => {
                            let mut handler = toml_edit::InlineTable::new();
                            handler.insert("type", "command".into());
                            handler.insert("command", command.as_str().into());
                            handler.insert("timeout", (HOOK_TIMEOUT_SECS as i64).into());
                            let mut handlers = toml_edit::Array::new();
                            handlers.push(handler);
                            let mut group = toml_edit::InlineTable::new();
                            group.insert("hooks", handlers.into());
                            a.push(group);
                        }
                        Some(_) => bail!("`hooks.{event}` is not a list of hook groups"),
                    }
                    changed = true;
                    groups.len()
                }
            };
            // Trust the command as it stands in the file (it may name another path).
            let command = codex_groups(hooks, event)
                .get(index)
                .cloned()
                .flatten()
                .unwrap_or(command);
            trust.push((
                codex_state_key(path, label, index),
                codex_trusted_hash(label, &command, codex_timeout(hooks, event, index)),
            ));
        }
        let state = child_table(hooks, "state")?;
        for (key, hash) in trust {
            let entry = child_table(state, &key)?;
            entry.set_implicit(false);
            if entry.get("trusted_hash").and_then(Item::as_str) != Some(hash.as_str()) {
                entry.insert("trusted_hash", toml_edit::value(hash));
                entry.decor_mut().set_prefix(format!("\n{MARK}\n"));
                changed = true;
            }
        }
    }
    // Current Codex runs hooks unless `[features] hooks = false`; an older one only
    // with `codex_hooks = true`. Say it once, explicitly, unless the user already has.
    let new_table = !doc.contains_key("features");
    let features = child_table(doc.as_table_mut(), "features")?;
    if !features.contains_key("hooks") && !features.contains_key("codex_hooks") {
        let mut on = toml_edit::value(true);
        if let Some(v) = on.as_value_mut() {
            v.decor_mut().set_suffix(format!(" {MARK}"));
        }
        features.insert("hooks", on);
        if new_table {
            features.set_implicit(false);
            features.decor_mut().set_prefix(format!("\n{MARK}\n"));
        }
        changed = true;
    }
    Ok(changed)
}

/// The timeout (seconds) Codex gives the group's first handler: as written, else 600.
fn codex_timeout(hooks: &Table, event: &str, index: usize) -> u64 {
    let handler_timeout = |t: Option<&Item>| -> Option<u64> {
        let v = match t? {
            Item::ArrayOfTables(a) => a.get(0)?.get("timeout")?.as_integer()?,
            Item::Value(toml_edit::Value::Array(a)) => {
                a.get(0)?.as_inline_table()?.get("timeout")?.as_integer()?
            }
            _ => return None,
        };
        u64::try_from(v).ok()
    };
    let t = match hooks.get(event) {
        Some(Item::ArrayOfTables(g)) => g.get(index).and_then(|g| handler_timeout(g.get("hooks"))),
        Some(Item::Value(toml_edit::Value::Array(g))) => g
            .get(index)
            .and_then(toml_edit::Value::as_inline_table)
            .and_then(|t| t.get("hooks"))
            .and_then(|v| handler_timeout(Some(&Item::Value(v.clone())))),
        _ => None,
    };
    t.unwrap_or(600).max(1)
}

fn codex_uninstall(agent: &Agent, doc: &mut DocumentMut, path: &Path, program: &str) -> bool {
    let mut changed = false;
    if let Some(hooks) = doc.get_mut("hooks").and_then(Item::as_table_mut) {
        let mut ours_keys = Vec::new();
        for (event, sub) in agent.events() {
            let label = codex_label(event);
            let groups = codex_groups(hooks, event);
            let ours: Vec<usize> = groups
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    c.as_deref()
                        .is_some_and(|c| is_transcope_hook(c, sub, program))
                })
                .map(|(i, _)| i)
                .collect();
            for &i in &ours {
                ours_keys.push(codex_state_key(path, label, i));
            }
            if ours.is_empty() {
                continue;
            }
            changed = true;
            let now_empty = match hooks.get_mut(event) {
                Some(Item::ArrayOfTables(a)) => {
                    for &i in ours.iter().rev() {
                        a.remove(i);
                    }
                    a.is_empty()
                }
                Some(Item::Value(toml_edit::Value::Array(a))) => {
                    for &i in ours.iter().rev() {
                        a.remove(i);
                    }
                    a.is_empty()
                }
                _ => false,
            };
            if now_empty {
                hooks.remove(event);
            }
        }
        if let Some(state) = hooks.get_mut("state").and_then(Item::as_table_like_mut) {
            for key in &ours_keys {
                if state.remove(key).is_some() {
                    changed = true;
                }
            }
            if state.is_empty() {
                hooks.remove("state");
            }
        }
        if hooks.is_empty() && hooks.is_implicit() {
            doc.remove("hooks");
        }
    }
    if marked(doc.get("notify")) {
        doc.remove("notify");
        changed = true;
    }
    if let Some(features) = doc.get_mut("features").and_then(Item::as_table_mut) {
        if marked(features.get("hooks")) {
            features.remove("hooks");
            changed = true;
            let ours = features
                .decor()
                .prefix()
                .and_then(|p| p.as_str())
                .is_some_and(|p| p.contains(MARK));
            if features.is_empty() && ours {
                doc.remove("features");
            }
        }
    }
    changed
}

/// What to tell a user whose Codex will not run the hooks just wired.
fn codex_feature_note(text: &str) -> Option<String> {
    let doc: DocumentMut = text.parse().ok()?;
    let features = doc.get("features")?;
    for key in ["hooks", "codex_hooks"] {
        if features.get(key).and_then(Item::as_bool) == Some(false) {
            return Some(format!(
                "but `[features] {key} = false` keeps Codex from running hooks: set it to true"
            ));
        }
    }
    None
}

/// What `doctor` learns of one agent's settings: whether transcope's hooks are there,
/// the programs they run, and what would keep the agent from running them.
#[derive(Debug, Default)]
pub struct Wiring {
    /// The settings file exists.
    pub exists: bool,
    /// Events wired, of those transcope wires.
    pub wired: Vec<&'static str>,
    /// Events not wired.
    pub missing: Vec<&'static str>,
    /// The program each wired hook runs (first word of its command).
    pub programs: Vec<String>,
    /// What keeps the hooks from running although wired (untrusted, switched off, …).
    pub problems: Vec<String>,
}

/// The JSON file's parse for `doctor`, or `None` with the problem noted.
fn json_root(text: &str, path: &Path, w: &mut Wiring) -> Option<Node> {
    let root = serde_json::from_str::<serde::de::IgnoredAny>(text)
        .map_err(|e| e.to_string())
        .and_then(|_| jsontext::parse(text));
    match root {
        Ok(r) => Some(r),
        Err(e) => {
            w.problems
                .push(format!("{} is not valid JSON: {e}", path.display()));
            None
        }
    }
}

/// Read `agent`'s settings at `path` for `doctor`.
pub fn wiring(agent: &Agent, path: &Path) -> Wiring {
    let mut w = Wiring::default();
    let Ok(text) = fs::read_to_string(path) else {
        w.missing = agent.events().iter().map(|(e, _)| *e).collect();
        return w;
    };
    w.exists = true;
    let found = |w: &mut Wiring, event: &'static str, command: Option<String>| match command {
        Some(c) => {
            w.wired.push(event);
            w.programs
                .push(c.split_whitespace().next().unwrap_or_default().to_owned());
        }
        None => w.missing.push(event),
    };
    match agent.hooks.format {
        SettingsFormat::Json(json) => {
            let root = json_root(&text, path, &mut w);
            let hooks = root.as_ref().and_then(|r| r.member("hooks"));
            for (event, sub) in agent.events() {
                let command = hooks
                    .and_then(|(_, h)| h.value.member(event))
                    .map_or(&[][..], |(_, groups)| groups.value.elements())
                    .iter()
                    .filter_map(|g| g.member("hooks"))
                    .flat_map(|(_, hs)| hs.value.elements())
                    .filter_map(|h| command_of(&text, h))
                    .find(|c| is_transcope_hook(c, sub, "transcope"));
                found(&mut w, event, command);
            }
            if let Some((object, field)) = json.switch {
                let enabled = root
                    .as_ref()
                    .and_then(|r| r.member(object))
                    .and_then(|(_, c)| c.value.member(field))
                    .map(|(_, e)| &text[e.value.span.clone()]);
                if enabled == Some("false") {
                    w.problems.push(format!(
                        "`{object}.{field}` is false: {} runs no hooks",
                        agent.title()
                    ));
                }
            }
        }
        SettingsFormat::HookFile => {
            let root = json_root(&text, path, &mut w);
            let hooks = root.as_ref().and_then(|r| r.member("hooks"));
            for (event, sub) in agent.events() {
                let command = hooks
                    .and_then(|(_, h)| h.value.member(event))
                    .map_or(&[][..], |(_, hs)| hs.value.elements())
                    .iter()
                    .filter_map(|h| bash_of(&text, h))
                    .find(|c| is_transcope_hook(c, sub, "transcope"));
                found(&mut w, event, command);
            }
            let version = root
                .as_ref()
                .and_then(|r| r.member("version"))
                .map(|(_, v)| &text[v.value.span.clone()]);
            if root.is_some() && version != Some("1") {
                w.problems.push(format!(
                    "{} has no `\"version\": 1`: {} may not read it",
                    path.display(),
                    agent.title()
                ));
            }
        }
        SettingsFormat::TrustedToml => {
            let doc: DocumentMut = match text.parse() {
                Ok(d) => d,
                Err(e) => {
                    w.problems
                        .push(format!("{} is not valid TOML: {e}", path.display()));
                    DocumentMut::new()
                }
            };
            let empty = Table::new();
            let hooks = doc.get("hooks").and_then(Item::as_table).unwrap_or(&empty);
            for (event, sub) in agent.events() {
                let groups = codex_groups(hooks, event);
                let at = groups.iter().position(|c| {
                    c.as_deref()
                        .is_some_and(|c| is_transcope_hook(c, sub, "transcope"))
                });
                let command = at.and_then(|i| groups[i].clone());
                if let (Some(i), Some(c)) = (at, &command) {
                    let label = codex_label(event);
                    let key = codex_state_key(path, label, i);
                    let want = codex_trusted_hash(label, c, codex_timeout(hooks, event, i));
                    let have = hooks
                        .get("state")
                        .and_then(|s| s.get(&key))
                        .and_then(|s| s.get("trusted_hash"))
                        .and_then(Item::as_str);
                    if have != Some(want.as_str()) {
                        w.problems.push(format!(
                            "the {event} hook is not trusted (Codex skips it): run `transcope hook install --agent codex` again, or trust it in Codex's /hooks"
                        ));
                    }
                }
                found(&mut w, event, command);
            }
            if let Some(note) = codex_feature_note(&text) {
                w.problems.push(note.replace("but ", ""));
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcope_hook_commands_are_recognised_by_their_program_and_words() {
        assert!(is_transcope_hook(
            "transcope hook stop",
            "stop",
            "transcope"
        ));
        assert!(is_transcope_hook(
            "/opt/bin/transcope hook stop --strict",
            "stop",
            "x"
        ));
        assert!(is_transcope_hook("/a/tc hook stop", "stop", "/a/tc"));
        assert!(!is_transcope_hook(
            "transcope hook stop extra",
            "stop",
            "transcope"
        ));
        assert!(!is_transcope_hook("other hook stop", "stop", "transcope"));
        assert!(!is_transcope_hook(
            "transcope hook session-start",
            "stop",
            "transcope"
        ));
    }

    /// The identity Codex hashes, for a hook with no matcher: pinned so a change in
    /// how it is built shows.
    #[test]
    fn codex_trust_hash_is_sha256_of_the_sorted_compact_identity() {
        let canonical = r#"{"event_name":"stop","hooks":[{"async":false,"command":"transcope hook stop","timeout":60,"type":"command"}]}"#;
        let digest = Sha256::digest(canonical.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            codex_trusted_hash("stop", "transcope hook stop", 60),
            format!("sha256:{hex}")
        );
    }
}

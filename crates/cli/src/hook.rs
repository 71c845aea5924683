//! `transcope hook session-start|stop`: the hooks an agent runs (Claude Code, Codex,
//! Gemini CLI and Qwen Code send the same payload fields). An agent whose payload
//! names its session but not its transcript (Copilot CLI's camelCase `sessionId`,
//! [`HookPayload::SessionId`]) is named by `--agent=<name>`: the transcript is found
//! by that agent's layout under its roots and checked to be the session's
//! ([`Layout::session_file`](transcope_core::adapter::Layout::session_file)), then the
//! hook runs as for the others. They never block or fail the agent: every problem is
//! one line on stderr and the exit status is 0 (unless `--strict`).
//! `transcope hook install|uninstall` wires them into the agents' settings
//! ([`crate::install`]).

use std::path::Path;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use transcope_brain::BrainConfig;
use transcope_caller::{caller, HookInput};
use transcope_change_detect::Env;
use transcope_core::agent::HookPayload;
use transcope_core::Instant;
use transcope_identity::ProjectResolver;
use transcope_scopelog::{LockWait, ScopeLog};
use transcope_stop::session_start::record_session;
use transcope_stop::stop::{run_stop, StopInput};

use crate::payload::{Oversize, Payload};
use crate::transcript_cmd::{process_env, resolver_for};
use crate::{exit, println_out};

/// How long a hook waits for a scope log's lock before giving up (the next Stop
/// catches up).
pub const HOOK_LOCK_WAIT: Duration = Duration::from_secs(2);

#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// At a session's start: record where it was launched (payload on stdin).
    SessionStart(HookArgs),
    /// At the end of each turn (and of a sub-agent's): record what the transcript
    /// says the session moved to, and its markers (payload on stdin).
    Stop(HookArgs),
    /// Codex's older `notify` program (`notify = ["transcope", "hook",
    /// "codex-notify"]` in config.toml): a Stop over the turn's rollout, found by the
    /// thread id in the JSON Codex appends as the last argument.
    CodexNotify(CodexNotifyArgs),
    // Wire these hooks into each agent's settings (the agents named from their wirings).
    #[command(about = crate::install::about())]
    Install(crate::install::InstallArgs),
    /// Remove exactly the hooks `hook install` added.
    Uninstall(crate::install::InstallArgs),
}

#[derive(Args, Debug)]
pub struct HookArgs {
    /// Exit non-zero on errors instead of always 0.
    #[arg(long)]
    strict: bool,
    /// Print the summary on stdout instead of stderr.
    #[arg(long)]
    json: bool,
    /// The agent whose hook this is, when its payload names no transcript (Copilot
    /// CLI's): the transcript is found by the agent's layout and checked.
    #[arg(long, value_name = "AGENT")]
    agent: Option<String>,
}

#[derive(Args, Debug)]
pub struct CodexNotifyArgs {
    #[command(flatten)]
    hook: HookArgs,
    /// The notification Codex appends (`{"type": "agent-turn-complete", "thread-id":
    /// …, "cwd": …, …}`).
    notification: String,
}

impl HookCommand {
    /// The hook command line `[--home DIR] hook stop|session-start [--strict] [--json]
    /// [--agent=NAME]` (each flag at most once, `--home` anywhere, as `--home DIR` or
    /// `--home=DIR`),
    /// read without clap: a hook runs at every turn of every session, and building
    /// clap's command tree for all of `transcope` was a tenth of a Stop with nothing
    /// new. `None` for anything else (clap then reads it, errors and help included).
    pub fn from_plain_args(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Option<(Option<std::path::PathBuf>, HookCommand)> {
        let mut args = args.into_iter().skip(1);
        let (mut home, mut words, mut strict, mut json) = (None, Vec::new(), false, false);
        let mut agent: Option<String> = None;
        while let Some(arg) = args.next() {
            let value = if arg == "--home" {
                Some(args.next()?)
            } else {
                use std::os::unix::ffi::OsStrExt;
                arg.as_bytes()
                    .strip_prefix(b"--home=")
                    .map(|v| std::ffi::OsStr::from_bytes(v).to_owned())
            };
            if let Some(v) = value {
                if home.is_some() || v.is_empty() || v.as_encoded_bytes().starts_with(b"-") {
                    return None;
                }
                home = Some(std::path::PathBuf::from(v));
                continue;
            }
            let arg = arg.to_str()?;
            if let Some(name) = arg.strip_prefix("--agent=") {
                if words.len() != 2 || agent.is_some() || name.is_empty() {
                    return None;
                }
                agent = Some(name.to_owned());
                continue;
            }
            match arg {
                "--strict" if words.len() == 2 && !strict => strict = true,
                "--json" if words.len() == 2 && !json => json = true,
                "hook" if words.is_empty() => words.push("hook"),
                "stop" if words.len() == 1 => words.push("stop"),
                "session-start" if words.len() == 1 => words.push("session-start"),
                _ => return None,
            }
        }
        let args = HookArgs {
            strict,
            json,
            agent,
        };
        match words.as_slice() {
            ["hook", "stop"] => Some((home, HookCommand::Stop(args))),
            ["hook", "session-start"] => Some((home, HookCommand::SessionStart(args))),
            _ => None,
        }
    }
}

/// Read the hook payload in bounded memory ([`crate::payload`]). An empty body is an
/// empty payload; an invalid one is reported; an oversized one keeps its identity
/// fields and says what it left out.
pub fn read_payload() -> Payload {
    crate::payload::read(std::io::stdin().lock())
}

/// `summary` with the oversized payload's `payload` entry, when there was one.
fn with_oversize(mut summary: Value, oversize: Option<&Oversize>) -> Value {
    if let (Some(o), Value::Object(m)) = (oversize, &mut summary) {
        m.insert("payload".into(), o.to_json());
    }
    summary
}

/// Whose transcript this hook is about: the caller's own record and scope-log key
/// (a sub-agent is `<session>.<agent>`), or the refusal of a guessed identity.
struct Who {
    key: Option<String>,
    transcript: Option<std::path::PathBuf>,
    refused: Option<String>,
}

fn who(p: &HookInput, env: &Env) -> Who {
    let c = caller(p, env);
    if let Some(e) = c.error {
        return Who {
            key: None,
            transcript: None,
            refused: Some(e),
        };
    }
    Who {
        key: c
            .scope_key
            .filter(|k| transcope_core::session::is_valid_session_id(k)),
        transcript: c.record,
        refused: None,
    }
}

/// The default bound on a whole hook run (`TRANSCOPE_HOOK_DEADLINE_SECS` overrides it).
pub const DEFAULT_HOOK_DEADLINE: Duration = Duration::from_secs(30);

/// Never block the agent, whatever stalls (a FIFO planted where git metadata should
/// be, a hung file system): past the deadline the hook says so and exits. Every write
/// transcope makes survives being cut at any point (whole rows appended in order, at
/// most one torn line, to a log; tmp → rename for cursors and outbox files), and a Stop
/// that did not finish saved no cursor, so the next Stop catches up.
fn arm_deadline(strict: bool) {
    let deadline = hook_deadline();
    std::thread::spawn(move || {
        std::thread::sleep(deadline);
        say!(
            "{}",
            json!({"error": format!("hook gave up after {deadline:?}; the next Stop catches up")})
        );
        std::process::exit(if strict { i32::from(exit::RUNTIME) } else { 0 });
    });
}

/// The bound on a whole hook run: `TRANSCOPE_HOOK_DEADLINE_SECS`, else
/// [`DEFAULT_HOOK_DEADLINE`].
fn hook_deadline() -> Duration {
    std::env::var("TRANSCOPE_HOOK_DEADLINE_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT_HOOK_DEADLINE, Duration::from_secs_f64)
}

pub fn run_hook(home: &Path, cmd: HookCommand) -> anyhow::Result<u8> {
    let started = std::time::Instant::now();
    let cmd = match cmd {
        HookCommand::Install(args) => return crate::install::run(args, true),
        HookCommand::Uninstall(args) => return crate::install::run(args, false),
        hook => hook,
    };
    if let HookCommand::SessionStart(a) | HookCommand::Stop(a) = &cmd {
        arm_deadline(a.strict);
    }
    if let HookCommand::CodexNotify(n) = cmd {
        arm_deadline(n.hook.strict);
        let summary = codex_notify(home, &n.notification, started);
        return report(&n.hook, &summary);
    }
    let read = read_payload();
    let stop_hook = matches!(cmd, HookCommand::Stop(_));
    let (args, summary) = match cmd {
        HookCommand::SessionStart(args) | HookCommand::Stop(args) if read.error.is_some() => {
            (args, error_summary(read.error.clone().unwrap_or_default()))
        }
        HookCommand::SessionStart(args) | HookCommand::Stop(args) if args.agent.is_some() => {
            let agent = args.agent.as_deref().unwrap_or_default();
            let summary = match agent_payload(agent, &read.input, stop_hook) {
                Err(e) => error_summary(format!("{e}; nothing written")),
                Ok(input) if stop_hook => stop(home, &input, started),
                Ok(input) => session_start(home, &input),
            };
            (args, summary)
        }
        HookCommand::SessionStart(args) => (args, session_start(home, &read.input)),
        HookCommand::Stop(args) => (args, stop(home, &read.input, started)),
        HookCommand::CodexNotify(_) | HookCommand::Install(_) | HookCommand::Uninstall(_) => {
            unreachable!("run above")
        }
    };
    report(&args, &with_oversize(summary, read.oversize.as_ref()))
}

/// Print a hook's summary (stdout with `--json`, else stderr); its exit status.
fn report(args: &HookArgs, summary: &Value) -> anyhow::Result<u8> {
    let failed = summary.get("error").is_some_and(|e| !e.is_null());
    let line = serde_json::to_string(summary)?;
    if args.json {
        println_out(&mut std::io::stdout().lock(), &line)?;
    } else {
        say!("{line}");
    }
    Ok(if failed && args.strict {
        exit::RUNTIME
    } else {
        exit::OK
    })
}

/// Codex's `notify` notification as a Stop: the thread id is the rollout's UUID (and
/// the session's scope-log key), the rollout found under Codex's sessions folder (its
/// layout's root: `$CODEX_HOME/sessions`, else `~/.codex/sessions`), newest day first.
fn codex_notify(home: &Path, notification: &str, started: std::time::Instant) -> Value {
    let n: Value = match serde_json::from_str(notification) {
        Ok(v) => v,
        Err(e) => return error_summary(format!("the notification is not JSON: {e}")),
    };
    let kind = n.get("type").and_then(Value::as_str).unwrap_or_default();
    if kind != "agent-turn-complete" {
        return json!({"event": "codex-notify", "skipped": kind, "error": null});
    }
    let thread = n
        .get("thread-id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !transcope_core::session::is_valid_session_id(thread) {
        return error_summary(format!(
            "not a thread id: {}; nothing written",
            transcope_core::quote::quote(thread)
        ));
    }
    let Some(rollout) = codex_rollout(thread) else {
        return error_summary(format!(
            "no rollout of thread {thread} under the Codex sessions folder; nothing written"
        ));
    };
    let payload = json!({
        "session_id": thread,
        "transcript_path": rollout,
        "cwd": n.get("cwd").and_then(Value::as_str).unwrap_or_default(),
        "last_assistant_message": n.get("last-assistant-message").and_then(Value::as_str).unwrap_or_default(),
    });
    let input = HookInput::parse(payload.to_string().as_bytes());
    let mut summary = stop(home, &input, started);
    summary["event"] = json!("codex-notify");
    summary
}

/// The rollout `rollout-…-<thread>.jsonl` under Codex's `sessions/YYYY/MM/DD/`.
fn codex_rollout(thread: &str) -> Option<std::path::PathBuf> {
    let adapters = crate::compose::adapters();
    let lookup = |k: &str| std::env::var(k).ok();
    let roots = adapters
        .by_name("codex")?
        .layout()?
        .default_roots(&lookup, &crate::user_home());
    let suffix = format!("-{thread}.jsonl");
    // Newest first: the folders are dates, so their names sort as time does.
    fn entries_desc(dir: &Path) -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    }
    for year in roots.iter().flat_map(|r| entries_desc(r)) {
        for month in entries_desc(&year) {
            for day in entries_desc(&month) {
                if let Some(f) = entries_desc(&day).into_iter().find(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
                }) {
                    return Some(f);
                }
            }
        }
    }
    None
}

/// The payload of `agent`'s hook (`--agent`) as the common one: for an agent whose
/// payload names its session by a key of its own ([`HookPayload::SessionId`]), the id
/// (a valid session id) and the transcript its layout finds under its roots and checks
/// to be that session's; a Stop needs that transcript, a SessionStart only the id
/// (its file may not be written yet, and one that is there must be the session's).
/// An agent whose payload is already the common one passes as it is.
fn agent_payload(agent: &str, input: &HookInput, stop_hook: bool) -> Result<HookInput, String> {
    let adapters = crate::compose::adapters();
    let hooks = adapters
        .hooks()
        .find(|(name, _)| *name == agent)
        .map(|(_, h)| h)
        .ok_or_else(|| format!("--agent={agent} names no agent with hooks"))?;
    let HookPayload::SessionId(key) = hooks.payload else {
        return Ok(input.clone());
    };
    let raw = &input.raw;
    let id = raw.get(key).and_then(Value::as_str).unwrap_or_default();
    if !transcope_core::session::is_valid_session_id(id) {
        return Err(format!(
            "{} payload's {key} is not a session id: {}",
            hooks.title,
            transcope_core::quote::quote(id)
        ));
    }
    let layout = adapters
        .by_name(agent)
        .and_then(|f| f.layout())
        .ok_or_else(|| format!("{} has no layout to find its transcripts by", hooks.title))?;
    let lookup = |k: &str| std::env::var(k).ok();
    let roots = layout.default_roots(&lookup, &crate::user_home());
    let mut found = None;
    for root in &roots {
        if let Some(f) = layout
            .session_file(root, id)
            .map_err(|e| format!("refused: {e}"))?
        {
            found = Some(f);
            break;
        }
    }
    if found.is_none() && stop_hook {
        let under: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        return Err(format!(
            "no transcript of {} session {id} under {}",
            hooks.title,
            under.join(", ")
        ));
    }
    let mut payload = json!({
        "session_id": id,
        "cwd": raw.get("cwd").and_then(Value::as_str).unwrap_or_default(),
    });
    if let Some(f) = found {
        payload["transcript_path"] = json!(f);
    }
    Ok(HookInput::parse(payload.to_string().as_bytes()))
}

fn error_summary(msg: String) -> Value {
    json!({"error": msg})
}

fn session_start(home: &Path, payload: &HookInput) -> Value {
    let env = process_env();
    let w = who(payload, &env);
    if let Some(r) = w.refused {
        return error_summary(format!("refused: {r}; nothing written"));
    }
    let Some(session) = w.key else {
        return error_summary("hook payload has no valid session_id; nothing written".into());
    };
    let log = ScopeLog::open(home, session).with_lock_wait(LockWait::AtMost(HOOK_LOCK_WAIT));
    let identity = match resolver_for(home, &env) {
        Ok(mut r) => match (!payload.cwd.is_empty()).then(|| r.resolve(&payload.cwd, &env)) {
            Some(Ok(i)) => i,
            Some(Err(e)) => return error_summary(format!("project identity: {e}")),
            None => None,
        },
        Err(e) => return error_summary(crate::error_text(&e)),
    };
    let report = record_session(
        home,
        &log,
        identity.as_ref(),
        &env,
        Instant::now(),
        &mut |p: &Path| transcope_identity::live_branch(p),
    );
    json!({
        "event": "session-start",
        "scope_key": log.session(),
        "recorded": u64::from(report.recorded),
        "indexed": report.indexed,
        "error": report.errors.first(),
    })
}

/// The Stop hook; `started` is when the hook began (its deadline counts from there).
fn stop(home: &Path, payload: &HookInput, started: std::time::Instant) -> Value {
    let env: Env = process_env();
    let mut brain = BrainConfig::from_env(home, &env);
    // The brain's POSTs together take at most a third of the deadline: a hung or
    // slow brain leaves the rest of the Stop (and its cursor) time to finish.
    brain.budget = brain.budget.min(hook_deadline() / 3);
    let w = who(payload, &env);
    if let Some(r) = w.refused {
        // A guessed record is checked or refused, never trusted: write nothing.
        return error_summary(format!("refused: {r}; nothing written"));
    }
    if w.key.is_none() && !brain.enabled {
        return error_summary("hook payload has no valid session_id; nothing written".into());
    }
    let resolver = match resolver_for(home, &env) {
        Ok(r) => r,
        Err(e) => return error_summary(crate::error_text(&e)),
    };
    let last = (!payload.last_assistant_message.is_empty())
        .then_some(payload.last_assistant_message.as_str());
    // The evidence first: the transcript's new bytes kept before anything is derived
    // (a failure is in the summary's `archive`, and the Stop goes on; a transcript
    // that is not there is the Stop's own error to report).
    let archived = match (crate::archive_cmd::keeping(home), w.transcript.as_deref()) {
        (Some(a), Some(t)) if t.is_file() => match a.keep(t, w.key.as_deref()) {
            Ok(k) => Some(
                json!({"added": k.added, "stored": k.stored, "new_generation": k.new_generation}),
            ),
            Err(e) => Some(json!({"error": e.to_string()})),
        },
        _ => None,
    };
    let summary = run_stop(
        home,
        StopInput {
            session: w.key.as_deref(),
            transcript: w.transcript.as_deref(),
            last_message: last,
            // Half the deadline for reading: a transcript too big for one Stop is
            // read in as many as it takes, each saving where it got to.
            read_until: Some(started + hook_deadline() / 2),
        },
        &env,
        &brain,
        resolver,
        &crate::compose::pipeline(home, true),
        None,
    );
    let mut v = summary.to_json();
    v["scope_key"] = json!(w.key);
    if let Some(a) = archived {
        v["archive"] = a;
    }
    if let Some(f) = crate::fleet_cmd::stop_push(home) {
        v["fleet"] = f;
    }
    if w.key.is_none() {
        v["error"] = json!("no session could be established; markers written unattributed");
    } else if w.transcript.is_none() && v["error"].is_null() {
        v["error"] = json!("hook payload names no transcript");
    }
    v
}

/// `transcope identity`: the caller's identity for a hook payload on stdin.
pub fn run_identity() -> anyhow::Result<u8> {
    let read = read_payload();
    if let Some(e) = &read.error {
        say!("{e}");
    }
    let c = caller(&read.input, &process_env());
    println_out(&mut std::io::stdout().lock(), &serde_json::to_string(&c)?)?;
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(args: &[&str]) -> Option<HookCommand> {
        let args = std::iter::once("transcope")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from);
        HookCommand::from_plain_args(args).map(|(_, c)| c)
    }

    /// The command installed for Copilot CLI stays on the fast path; a repeated or
    /// misplaced `--agent` is left to clap.
    #[test]
    fn an_agents_hook_is_read_without_clap() {
        let Some(HookCommand::Stop(a)) = plain(&["hook", "stop", "--agent=copilot"]) else {
            panic!("not a stop");
        };
        assert_eq!(a.agent.as_deref(), Some("copilot"));
        let Some(HookCommand::SessionStart(a)) =
            plain(&["hook", "session-start", "--strict", "--agent=copilot"])
        else {
            panic!("not a session-start");
        };
        assert!(a.strict && a.agent.as_deref() == Some("copilot"));
        assert!(matches!(
            plain(&["hook", "stop"]),
            Some(HookCommand::Stop(HookArgs { agent: None, .. }))
        ));
        assert!(plain(&["hook", "--agent=copilot", "stop"]).is_none());
        assert!(plain(&["hook", "stop", "--agent=a", "--agent=b"]).is_none());
        assert!(plain(&["hook", "stop", "--agent="]).is_none());
    }
}

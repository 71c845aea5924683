//! `transcope hook session-start|stop`: Claude Code hooks. They never block or fail
//! the agent: every problem is one line on stderr and the exit status is 0 (unless
//! `--strict`).

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use transcope_change_detect::Env;
use transcope_core::Instant;
use transcope_identity::ProjectResolver;
use transcope_scopelog::{LockWait, ScopeLog};
use transcope_stop::session_start::record_session;
use transcope_stop::stop::{run_stop, BrainConfig, StopInput};

use crate::transcript_cmd::{process_env, resolver_for};
use crate::{exit, println_out};

/// The most a hook reads from stdin.
const MAX_PAYLOAD: u64 = 16 * 1024 * 1024;
/// How long a hook waits for a scope log's lock before giving up (the next Stop
/// catches up).
pub const HOOK_LOCK_WAIT: Duration = Duration::from_secs(2);

#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// SessionStart: record the launch scope and the session index row.
    SessionStart(HookArgs),
    /// Stop and SubagentStop: record the transcript's scope transitions.
    Stop(HookArgs),
}

#[derive(Args, Debug)]
pub struct HookArgs {
    /// Exit non-zero on errors instead of always 0.
    #[arg(long)]
    strict: bool,
    /// Print the summary on stdout instead of stderr.
    #[arg(long)]
    json: bool,
}

/// The fields of Claude Code's hook payload transcope reads. An empty or invalid body
/// is an empty payload.
#[derive(Debug, Default)]
pub struct Payload {
    pub session_id: Option<String>,
    pub transcript_path: Option<String>,
    pub cwd: Option<String>,
    pub last_assistant_message: Option<String>,
}

impl Payload {
    pub fn parse(bytes: &[u8]) -> (Payload, Option<String>) {
        match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(m)) => (Payload::from_map(&m), None),
            Ok(_) => (
                Payload::default(),
                Some("hook payload is not a JSON object".into()),
            ),
            Err(_) if bytes.iter().all(u8::is_ascii_whitespace) => (Payload::default(), None),
            Err(e) => (
                Payload::default(),
                Some(format!("hook payload is not JSON: {e}")),
            ),
        }
    }

    fn from_map(m: &Map<String, Value>) -> Payload {
        let s = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        Payload {
            session_id: s("session_id"),
            transcript_path: s("transcript_path"),
            cwd: s("cwd"),
            last_assistant_message: s("last_assistant_message"),
        }
    }
}

fn read_payload() -> (Payload, Option<String>) {
    let mut buf = Vec::new();
    match std::io::stdin().take(MAX_PAYLOAD).read_to_end(&mut buf) {
        Ok(_) => Payload::parse(&buf),
        Err(e) => (
            Payload::default(),
            Some(format!("reading the hook payload: {e}")),
        ),
    }
}

pub fn run_hook(home: &Path, cmd: HookCommand) -> anyhow::Result<u8> {
    let (args, summary) = match cmd {
        HookCommand::SessionStart(args) => {
            let s = session_start(home);
            (args, s)
        }
        HookCommand::Stop(args) => {
            let s = stop(home);
            (args, s)
        }
    };
    let failed = summary.get("error").is_some_and(|e| !e.is_null());
    let line = serde_json::to_string(&summary)?;
    if args.json {
        println_out(&mut std::io::stdout().lock(), &line)?;
    } else {
        eprintln!("transcope: {line}");
    }
    Ok(if failed && args.strict {
        exit::RUNTIME
    } else {
        exit::OK
    })
}

fn error_summary(msg: String) -> Value {
    json!({"error": msg})
}

fn session_start(home: &Path) -> Value {
    let (payload, err) = read_payload();
    if let Some(e) = err {
        return error_summary(e);
    }
    let Some(session) = payload.session_id else {
        return error_summary("hook payload has no session_id".into());
    };
    let env = process_env();
    let log = ScopeLog::open(home, session).with_lock_wait(LockWait::AtMost(HOOK_LOCK_WAIT));
    if log.path().is_none() {
        return error_summary("session_id is not a valid session id; nothing written".into());
    }
    let identity = match resolver_for(home, &env) {
        Ok(mut r) => match payload.cwd.as_deref().map(|c| r.resolve(c, &env)) {
            Some(Ok(i)) => i,
            Some(Err(e)) => return error_summary(format!("project identity: {e}")),
            None => None,
        },
        Err(e) => return error_summary(format!("{e:#}")),
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
        "recorded": u64::from(report.recorded),
        "indexed": report.indexed,
        "error": report.errors.first(),
    })
}

fn stop(home: &Path) -> Value {
    let (payload, err) = read_payload();
    if let Some(e) = err {
        return error_summary(e);
    }
    let env: Env = process_env();
    let brain = BrainConfig::from_env(home, &env);
    let session = payload
        .session_id
        .as_deref()
        .filter(|s| transcope_core::session::is_valid_session_id(s));
    if session.is_none() && !brain.enabled {
        return error_summary("hook payload has no valid session_id; nothing written".into());
    }
    let transcript = payload.transcript_path.as_deref().map(Path::new);
    let mut resolver = match resolver_for(home, &env) {
        Ok(r) => r,
        Err(e) => return error_summary(format!("{e:#}")),
    };
    let summary = run_stop(
        home,
        StopInput {
            session,
            transcript,
            last_message: payload.last_assistant_message.as_deref(),
        },
        &env,
        &brain,
        &mut resolver,
        &transcope_stop::default_registry(),
        &Default::default(),
        None,
    );
    let mut v = summary.to_json();
    if session.is_none() {
        v["error"] = json!("hook payload has no valid session_id; markers written unattributed");
    }
    v
}

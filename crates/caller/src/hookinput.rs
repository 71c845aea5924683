//! Claude Code's hook payload and which record identifies the caller (identity.md §1, §2).
//!
//! * [`HookInput`] is the payload, parsed tolerantly ([`HookInput::parse`] never fails).
//! * [`record`] is the record that identifies **the caller** (a sub-agent's own record for a
//!   sub-agent), [`session_record`] the **session's** record, [`state_cwd`] the directory the
//!   session's stores are keyed by. Only a record *guessed* from the session id is checked
//!   ([`belongs_to_session`], [`belongs_to_tree`]); a reported path is authoritative.
//! * [`caller`] bundles everything the `transcope identity` command prints into a [`Caller`].
//! * [`TranscriptLocator`] is a harness's optional "locate transcript" capability (Claude
//!   Code has none; see [`session_record_with_locator`]).
//!
//! Environment values (`CLAUDE_CONFIG_DIR`, `HOME`) come from the [`Env`] passed in.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::belongs::{belongs_to_session, belongs_to_tree};
use crate::claudepath::{
    check_agent_id, config_dir, project_dir, relocate_record, subagent_transcript_path,
};
use crate::gopath;
use crate::stable::stable_identity_from;
use crate::transcript::{go_field, parse_go_json, TranscriptError};
use crate::Env;

/// The hook payload Claude Code writes to a hook's stdin (identity.md §1). Every field is the
/// JSON string of the same name, `""` when absent, `null` or not a string.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct HookInput {
    /// `hook_event_name`: `PreToolUse`, `Stop`, `SessionStart`, `SubagentStop`, …
    pub hook_event_name: String,
    /// `session_id`: the id the harness reports now (never what state is keyed on).
    pub session_id: String,
    /// `transcript_path`: the **session's** record, on every event (a sub-agent's too).
    pub transcript_path: String,
    /// `agent_transcript_path`: the sub-agent's own record (sub-agent hooks only).
    pub agent_transcript_path: String,
    /// `agent_id`: the sub-agent within the dispatching session (`a` + 16 hex digits).
    pub agent_id: String,
    /// `agent_type`: SubagentStart/Stop.
    pub agent_type: String,
    /// `source`: SessionStart's `startup`, `resume`, `clear`, `compact` or `fork`.
    pub source: String,
    /// `cwd`: the directory the hook fired in.
    pub cwd: String,
    /// `worktree_path`.
    pub worktree_path: String,
    /// `tool_name`: PreToolUse/PostToolUse.
    pub tool_name: String,
    /// `tool_use_id`.
    pub tool_use_id: String,
    /// `last_assistant_message`: Stop/SubagentStop.
    pub last_assistant_message: String,
    /// `stop_hook_active`: Stop.
    pub stop_hook_active: bool,
    /// The whole payload when it was a JSON object (every key, as sent), else `Null`.
    pub raw: serde_json::Value,
}

#[derive(Clone, Copy)]
enum HookField {
    Event,
    SessionId,
    TranscriptPath,
    AgentTranscriptPath,
    AgentId,
    AgentType,
    Source,
    Cwd,
    WorktreePath,
    ToolName,
    ToolUseId,
    LastAssistantMessage,
    StopHookActive,
}

const HOOK_FIELDS: [(&str, HookField); 13] = [
    ("hook_event_name", HookField::Event),
    ("session_id", HookField::SessionId),
    ("transcript_path", HookField::TranscriptPath),
    ("agent_transcript_path", HookField::AgentTranscriptPath),
    ("agent_id", HookField::AgentId),
    ("agent_type", HookField::AgentType),
    ("source", HookField::Source),
    ("cwd", HookField::Cwd),
    ("worktree_path", HookField::WorktreePath),
    ("tool_name", HookField::ToolName),
    ("tool_use_id", HookField::ToolUseId),
    ("last_assistant_message", HookField::LastAssistantMessage),
    ("stop_hook_active", HookField::StopHookActive),
];

impl HookInput {
    /// Parses a payload the way sloprail's Go code does: an empty or invalid body, or one that
    /// is not a JSON object, is an all-empty input; a field of the wrong type is left empty and
    /// the others are still read; keys match case-insensitively; the last duplicate wins.
    ///
    /// ```
    /// use transcope_caller::hookinput::HookInput;
    ///
    /// let p = HookInput::parse(br#"{"session_id":"s","cwd":5,"Transcript_Path":"/t.jsonl"}"#);
    /// assert_eq!((p.session_id.as_str(), p.cwd.as_str(), p.transcript_path.as_str()), ("s", "", "/t.jsonl"));
    /// assert_eq!(HookInput::parse(b"{not json"), HookInput::default());
    /// ```
    pub fn parse(body: &[u8]) -> HookInput {
        parse_go_json::<HookInput>(body).unwrap_or_default()
    }

    /// Reads and parses a payload; a read failure is an empty input.
    pub fn from_reader(mut reader: impl Read) -> HookInput {
        let mut body = Vec::new();
        match reader.read_to_end(&mut body) {
            Ok(_) => HookInput::parse(&body),
            Err(_) => HookInput::default(),
        }
    }

    /// `IsSubagent`: the invocation names a sub-agent (`agent_transcript_path` or `agent_id`).
    /// Reads only the payload, never a transcript.
    pub fn is_subagent(&self) -> bool {
        !self.agent_transcript_path.is_empty() || !self.agent_id.is_empty()
    }

    fn set(&mut self, field: HookField, value: &serde_json::Value) {
        if let HookField::StopHookActive = field {
            if let serde_json::Value::Bool(b) = value {
                self.stop_hook_active = *b;
            }
            return;
        }
        let serde_json::Value::String(s) = value else {
            return;
        };
        let slot = match field {
            HookField::Event => &mut self.hook_event_name,
            HookField::SessionId => &mut self.session_id,
            HookField::TranscriptPath => &mut self.transcript_path,
            HookField::AgentTranscriptPath => &mut self.agent_transcript_path,
            HookField::AgentId => &mut self.agent_id,
            HookField::AgentType => &mut self.agent_type,
            HookField::Source => &mut self.source,
            HookField::Cwd => &mut self.cwd,
            HookField::WorktreePath => &mut self.worktree_path,
            HookField::ToolName => &mut self.tool_name,
            HookField::ToolUseId => &mut self.tool_use_id,
            HookField::LastAssistantMessage => &mut self.last_assistant_message,
            HookField::StopHookActive => return,
        };
        slot.clone_from(s);
    }
}

impl<'de> Deserialize<'de> for HookInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = HookInput;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hook payload")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<HookInput, E> {
                Ok(HookInput::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HookInput, A::Error> {
                let mut input = HookInput::default();
                let mut raw = serde_json::Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value: serde_json::Value = map.next_value()?;
                    if let Some(field) = go_field(&HOOK_FIELDS, &key) {
                        input.set(field, &value);
                    }
                    raw.insert(key, value);
                }
                input.raw = serde_json::Value::Object(raw);
                Ok(input)
            }
        }
        d.deserialize_any(V)
    }
}

/// A harness's optional "locate transcript" capability, consulted by
/// [`session_record_with_locator`] when the payload names no `transcript_path` (Cursor's first
/// events; Claude Code has none). Closures `Fn(&HookInput) -> Option<PathBuf>` implement it.
pub trait TranscriptLocator {
    /// The session's record, or `None` (an empty path counts as none).
    fn locate_transcript(&self, input: &HookInput) -> Option<PathBuf>;
}

impl<F: Fn(&HookInput) -> Option<PathBuf>> TranscriptLocator for F {
    fn locate_transcript(&self, input: &HookInput) -> Option<PathBuf> {
        self(input)
    }
}

/// `relocate`: a reported path, relocated ([`relocate_record`]) unless the session is new
/// (`source` `startup` or `clear`).
fn relocate(p: &HookInput, path: &str, env: &Env) -> PathBuf {
    let path = PathBuf::from(path);
    if p.source == "startup" || p.source == "clear" {
        return path;
    }
    match config_dir(env) {
        Some(config) => relocate_record(&config, &path),
        None => path,
    }
}

/// `hookinput.SessionRecord`: the session's own record as the payload names it, ignoring any
/// sub-agent (identity.md §2.2) — `transcript_path` (relocated, never checked), else a guess
/// `<project dir of cwd>/<session_id>.jsonl` that must pass [`belongs_to_session`] and
/// [`belongs_to_tree`] (it may not exist yet). `Ok(None)` when nothing is named or the config
/// directory is unknown.
///
/// # Errors
/// [`TranscriptError::NotASessionId`] for a session id holding `/` or `\`;
/// [`TranscriptError::WrongSession`] / [`TranscriptError::WrongTree`] for a refused guess.
pub fn session_record(p: &HookInput, env: &Env) -> Result<Option<PathBuf>, TranscriptError> {
    session_record_with_locator(p, env, None)
}

/// [`session_record`] with a harness's [`TranscriptLocator`], asked (and believed as is:
/// no relocation, no checks) after `transcript_path` and before the guess.
///
/// # Errors
/// As [`session_record`].
pub fn session_record_with_locator(
    p: &HookInput,
    env: &Env,
    locator: Option<&dyn TranscriptLocator>,
) -> Result<Option<PathBuf>, TranscriptError> {
    if !p.transcript_path.is_empty() {
        return Ok(Some(relocate(p, &p.transcript_path, env)));
    }
    if let Some(found) = locator
        .and_then(|l| l.locate_transcript(p))
        .filter(|f| !f.as_os_str().is_empty())
    {
        return Ok(Some(found));
    }
    if p.session_id.is_empty() {
        return Ok(None);
    }
    if p.session_id.contains(['/', '\\']) {
        return Err(TranscriptError::NotASessionId {
            id: p.session_id.clone(),
        });
    }
    let Some(dir) = config_dir(env).and_then(|config| project_dir(&config, Path::new(&p.cwd)))
    else {
        return Ok(None);
    };
    let file = format!("{}.jsonl", p.session_id);
    let path = gopath::join(&[&gopath::bytes(&dir), file.as_bytes()]);
    belongs_to_session(&path, &p.session_id)?;
    belongs_to_tree(&path, Path::new(&p.cwd))?;
    Ok(Some(path))
}

/// `hookinput.Record`: the record that identifies **the caller** (identity.md §2.1).
///
/// 1. `agent_transcript_path` wins, relocated and unchecked (an invalid `agent_id` is then
///    irrelevant);
/// 2. otherwise the [`session_record`]; an error, no record, or no `agent_id` ends here;
/// 3. otherwise the sub-agent named only by its id: [`subagent_transcript_path`] under the
///    (already relocated) session record.
///
/// # Errors
/// [`session_record`]'s, and [`TranscriptError::NotAnAgentId`] for an `agent_id` that is not a
/// file name.
///
/// ```
/// use transcope_caller::{hookinput::{record, HookInput}, Env};
///
/// let env = Env::new();
/// let p = HookInput::parse(br#"{"transcript_path":"/given/path.jsonl","session_id":"sid","cwd":"/proj"}"#);
/// assert_eq!(record(&p, &env).unwrap().unwrap(), std::path::Path::new("/given/path.jsonl"));
///
/// let p = HookInput::parse(br#"{"transcript_path":"/cfg/projects/-p/s.jsonl","agent_id":"a1"}"#);
/// assert_eq!(record(&p, &env).unwrap().unwrap(), std::path::Path::new("/cfg/projects/-p/s/subagents/agent-a1.jsonl"));
///
/// assert_eq!(record(&HookInput::parse(br#"{"cwd":"/proj"}"#), &env).unwrap(), None);
/// ```
pub fn record(p: &HookInput, env: &Env) -> Result<Option<PathBuf>, TranscriptError> {
    record_with_locator(p, env, None)
}

/// [`record`] with a harness's [`TranscriptLocator`] (see [`session_record_with_locator`]).
///
/// # Errors
/// As [`record`].
pub fn record_with_locator(
    p: &HookInput,
    env: &Env,
    locator: Option<&dyn TranscriptLocator>,
) -> Result<Option<PathBuf>, TranscriptError> {
    if !p.agent_transcript_path.is_empty() {
        return Ok(Some(relocate(p, &p.agent_transcript_path, env)));
    }
    let root = session_record_with_locator(p, env, locator)?;
    match root {
        Some(root) if !p.agent_id.is_empty() => {
            subagent_transcript_path(&root, &p.agent_id).map(Some)
        }
        other => Ok(other),
    }
}

/// `hookinput.StateCwd`: the directory this payload's session stores are keyed by — `cwd`
/// when [`record`] fails, else [`sessionpath::state_cwd`](crate::sessionpath::state_cwd) of
/// the record (where a root session began; a sub-agent's own `cwd`).
pub fn state_cwd(p: &HookInput, env: &Env) -> PathBuf {
    state_cwd_of(p, &record(p, env), crate::transcript::start_cwd)
}

fn state_cwd_of(
    p: &HookInput,
    record: &Result<Option<PathBuf>, TranscriptError>,
    start: impl FnOnce(&Path) -> Result<String, TranscriptError>,
) -> PathBuf {
    match record {
        Err(_) => PathBuf::from(&p.cwd),
        Ok(r) => crate::sessionpath::state_cwd_from(
            r.as_deref().unwrap_or(Path::new("")),
            Path::new(&p.cwd),
            start,
        ),
    }
}

fn lossy_path<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

fn lossy_opt_path<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match path {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// Everything `transcope identity` prints about the caller of a hook; serialises to a JSON
/// object with exactly these keys, in this order (`null` for `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Caller {
    /// [`record`]: the record identifying the caller.
    #[serde(serialize_with = "lossy_opt_path")]
    pub record: Option<PathBuf>,
    /// [`session_record`]: the session's record (`None` when it has none or it was refused).
    #[serde(serialize_with = "lossy_opt_path")]
    pub session_record: Option<PathBuf>,
    /// [`state_cwd`].
    #[serde(serialize_with = "lossy_path")]
    pub state_cwd: PathBuf,
    /// The [`stable_identity`](crate::stable::stable_identity) of the record, when it
    /// resolves.
    pub stable_id: Option<String>,
    /// Why the stable id is a fallback rather than the conversation's origin.
    pub degraded: Option<String>,
    /// `session_id` for a root session, `<session_id>.<agent_id>` for a sub-agent.
    pub scope_key: Option<String>,
    /// Why [`record`] refused (not a session id, wrong session, wrong tree, not an agent id).
    pub error: Option<String>,
}

/// Whether `id` can name a file: non-empty, no separator, not `.` or `..`.
fn is_plain_name(id: &str) -> bool {
    check_agent_id(id).is_ok()
}

/// The sub-agent's id: `agent_id`, else the `<id>` of an `agent-<id>.jsonl` reported path.
fn agent_name(p: &HookInput) -> Option<String> {
    if !p.agent_id.is_empty() {
        return Some(p.agent_id.clone());
    }
    let name = Path::new(&p.agent_transcript_path).file_name()?.to_str()?;
    let id = name.strip_suffix(".jsonl").unwrap_or(name);
    Some(id.strip_prefix("agent-").unwrap_or(id).to_owned())
}

/// The hooks' single entry point: [`record`], [`session_record`], [`state_cwd`], the
/// [`stable_identity`](crate::stable::stable_identity) of the record, and the scope key,
/// resolved once.
///
/// * `stable_id`/`degraded` are `None` when there is no record or it cannot be resolved yet
///   (a SessionStart before the first write, say).
/// * `scope_key` is `None` when `record` refused (`error` set), when there is no session id,
///   or when the session id (or a sub-agent's id) is not a plain file name.
///
/// ```
/// use transcope_caller::{hookinput::{caller, HookInput}, Env};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("s1.jsonl");
/// std::fs::write(&path, r#"{"uuid":"origin","parentUuid":null,"sessionId":"s1","cwd":"/repo"}"#).unwrap();
/// let body = format!(r#"{{"session_id":"s1","transcript_path":{:?},"cwd":"/repo/sub"}}"#, path.to_str().unwrap());
/// let c = caller(&HookInput::parse(body.as_bytes()), &Env::new());
/// assert_eq!(c.stable_id.as_deref(), Some("origin"));
/// assert_eq!(c.state_cwd, std::path::Path::new("/repo"));
/// assert_eq!(c.scope_key.as_deref(), Some("s1"));
/// let json = serde_json::to_string(&c).unwrap();
/// assert!(json.starts_with(r#"{"record":"#) && json.ends_with(r#""scope_key":"s1","error":null}"#));
/// ```
pub fn caller(p: &HookInput, env: &Env) -> Caller {
    let record = record(p, env);
    // The record's head is read once for where the session began and its root record.
    let mut root = None;
    let state_cwd = state_cwd_of(p, &record, |path| {
        let (start, found) = crate::transcript::start_cwd_and_root(path);
        root = found;
        start
    });
    let session_record = if p.agent_transcript_path.is_empty() && p.agent_id.is_empty() {
        record.as_ref().ok().cloned().flatten()
    } else {
        session_record(p, env).ok().flatten()
    };
    let mut c = Caller {
        session_record,
        state_cwd,
        ..Caller::default()
    };
    match record {
        Err(e) => {
            c.error = Some(e.to_string());
            return c;
        }
        Ok(r) => c.record = r,
    }
    if let Some(path) = &c.record {
        if let Ok(identity) = stable_identity_from(path, root) {
            c.degraded = identity.degraded.as_ref().map(ToString::to_string);
            c.stable_id = Some(identity.id);
        }
    }
    if is_plain_name(&p.session_id) {
        c.scope_key = if p.is_subagent() {
            agent_name(p)
                .filter(|a| is_plain_name(a))
                .map(|a| format!("{}.{a}", p.session_id))
        } else {
            Some(p.session_id.clone())
        };
    }
    c
}

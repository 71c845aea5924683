//! Gemini CLI sessions, in the layout the CLI keeps under its home
//! (`adapters/gemini/FORMAT.md` has the sources):
//!
//! ```text
//! gemini/.gemini/projects.json                {"projects": {"<folder>": "<short id>"}}
//! gemini/.gemini/tmp/<sha256 of the folder>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.json
//!                                             (before 0.29: no record of the folder beside it)
//! gemini/.gemini/tmp/<short id>/.project_root the folder, as text (0.29 on)
//! gemini/.gemini/tmp/<short id>/chats/session-<…>-<id8>.json   a document (0.29–0.38)
//! gemini/.gemini/tmp/<short id>/chats/session-<…>-<id8>.jsonl  a log (0.39 on)
//! gemini/.gemini/tmp/<short id>/chats/<parent id>/<own id>.json[l]  a sub-agent (0.37 on)
//! ```
//!
//! A **document** is the whole conversation rewritten at every change (written here
//! once, as its last version: two-space indented, or compact, no trailing newline); a
//! **log** is its metadata line, then a record a line: messages, `$set` updates of
//! `lastUpdated`, a reply recorded again once its tokens are known, now and then a
//! `$rewindTo`, a line that is not JSON, and a torn last line.
//!
//! A session has one folder, the project's, and no branch: the CLI records neither per
//! message, so a session's only scope transition is into that folder, at its
//! `startTime`. Replies carry `tokens` (`input`, `output`, `cached`, `thoughts`,
//! `tool`, `total`) and a `model`. `.project_root` and `projects.json` are written by
//! [`write_records`] once the sessions kept are known (a session dropped at the size
//! target leaves none behind).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::Path;

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::claude::{Env, SessionResult, INVALID_LINES, INVALID_RATE, MARKER_RATE, TORN_RATE};
use crate::clock::{iso, parts};
use crate::rng::Rng;
use crate::sink::{Budget, Sink};
use crate::text::{self, MarkerCounts};
use crate::world::World;
use crate::{FileEntry, FileKind};

/// Where the CLI's state folder sits in a corpus (`GEMINI_CLI_HOME=<corpus>/gemini`).
pub(crate) const HOME: &str = "gemini";
/// The CLI's session folders, below the corpus root.
const TMP: &str = "gemini/.gemini/tmp";

/// Which CLI version wrote a session, as far as the files show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// Before 0.29: a document in `tmp/<sha256 of the folder>/`, no `kind`.
    HashDocument,
    /// 0.29–0.38: a document in `tmp/<short id>/` beside `.project_root`.
    Document,
    /// 0.39 on: an append-only log.
    Log,
}

/// Session-level options.
pub(crate) struct Opts {
    pub(crate) budget: Option<u64>,
    pub(crate) start_ms: u64,
    pub(crate) form: Form,
    /// A sub-agent at the first turn (else one now and then, where the form has them).
    pub(crate) subagent: bool,
    /// Many invalid lines, a rewind and a torn last line (a log's coverage).
    pub(crate) quirks: bool,
}

/// Each folder's short id (a slug of its name, `-1`, `-2`… on a collision, as the CLI
/// names the folders it registers), over every folder of the world in a fixed order,
/// so a session knows its folder's id whatever the order sessions are generated in.
pub(crate) struct Projects {
    ids: HashMap<String, String>,
}

impl Projects {
    pub(crate) fn new(world: &World) -> Projects {
        let mut folders: Vec<&str> = Vec::new();
        for r in &world.repos {
            folders.push(&r.root);
            folders.extend(r.subdirs.iter().map(String::as_str));
            folders.extend(
                r.worktrees
                    .iter()
                    .chain(&r.agent_worktrees)
                    .map(|w| w.path.as_str()),
            );
        }
        let tmp: Vec<String> = world.plain.iter().map(|p| format!("{p}/tmp")).collect();
        folders.extend(world.plain.iter().map(String::as_str));
        folders.extend(tmp.iter().map(String::as_str));
        let mut taken = std::collections::HashSet::new();
        let mut ids = HashMap::new();
        for f in folders {
            if ids.contains_key(f) {
                continue;
            }
            let base = slug(f.rsplit('/').next().unwrap_or(f));
            let mut id = base.clone();
            let mut n = 0;
            while !taken.insert(id.clone()) {
                n += 1;
                id = format!("{base}-{n}");
            }
            ids.insert(f.to_owned(), id);
        }
        Projects { ids }
    }

    fn short_id(&self, folder: &str) -> String {
        self.ids
            .get(folder)
            .cloned()
            .unwrap_or_else(|| slug(folder.rsplit('/').next().unwrap_or(folder)))
    }
}

/// A folder name as the CLI's short ids spell it: lowercase `[a-z0-9-]`.
fn slug(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-');
    if s.is_empty() {
        "project".to_owned()
    } else {
        s.to_owned()
    }
}

/// The lowercase hex SHA-256 of a folder: every session's `projectHash`, and the name
/// of its tmp folder before 0.29.
pub(crate) fn project_hash(folder: &str) -> String {
    Sha256::digest(folder.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One session file being written.
struct File {
    sink: Sink,
    log: bool,
    /// A document's header fields and messages, written at the end.
    header: Map<String, Value>,
    messages: Vec<Value>,
    /// A compact document (else indented by two spaces).
    compact: bool,
    /// Bytes a document's messages will take (compact), counted against the budget
    /// before it is written.
    pending: u64,
}

struct Gen<'e> {
    env: &'e Env<'e>,
    rng: Rng,
    t: u64,
    budget: Budget,
    /// Bytes of the documents still open.
    pending: u64,
    stopped: bool,
    form: Form,
    folder: String,
    hash: String,
    chats: String,
    model: &'static str,
    invalid_rate: f64,
    files: Vec<FileEntry>,
    max_line: u64,
}

/// Generates one Gemini CLI session with its sub-agents' files.
pub(crate) fn session(
    env: &Env<'_>,
    projects: &Projects,
    seed: u64,
    opts: Opts,
) -> io::Result<SessionResult> {
    let mut rng = Rng::new(seed);
    let place = env.world.start(&mut rng);
    let folder = place.cwd;
    let hash = project_hash(&folder);
    let dir = match opts.form {
        Form::HashDocument => hash.clone(),
        Form::Document | Form::Log => projects.short_id(&folder),
    };
    let model = *rng.pick(&["gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-pro-preview"]);
    let mut g = Gen {
        env,
        rng,
        t: opts.start_ms,
        budget: Budget::new(opts.budget),
        pending: 0,
        stopped: false,
        form: opts.form,
        folder,
        hash,
        chats: format!("{TMP}/{dir}/chats"),
        model,
        invalid_rate: if opts.quirks { 0.02 } else { INVALID_RATE },
        files: Vec::new(),
        max_line: 0,
    };
    let sid = g.rng.uuid_v4();
    let p = parts(opts.start_ms);
    let ext = if opts.form == Form::Log {
        "jsonl"
    } else {
        "json"
    };
    let rel = format!(
        "{}/session-{:04}-{:02}-{:02}T{:02}-{:02}-{}.{ext}",
        g.chats,
        p.year,
        p.month,
        p.day,
        p.hour,
        p.minute,
        &sid[..8]
    );
    // `kind` from 0.31 (a document may predate it), sub-agents from 0.37.
    let kind = match opts.form {
        Form::HashDocument => false,
        Form::Document => opts.subagent || g.rng.chance(0.7),
        Form::Log => true,
    };
    let subagents = kind && (opts.subagent || g.rng.chance(0.5));
    let mut main = g.open(
        &rel,
        FileKind::GeminiSession,
        &sid,
        None,
        kind.then_some("main"),
    )?;
    let turns = g.rng.log_uniform(2, 120);
    let mut turn = 0;
    while !g.stopped && turn < turns {
        if subagents && ((opts.subagent && turn == 1) || (turn > 0 && g.rng.chance(0.08))) {
            g.subagent(&sid)?;
        }
        g.turn(&mut main, opts.quirks && turn == 2)?;
        turn += 1;
    }
    let torn = main.log && !g.stopped && (opts.quirks || g.rng.chance(TORN_RATE));
    if torn {
        g.torn(main)?;
    } else {
        g.close(main)?;
    }
    Ok(SessionResult::of(g.files, g.max_line))
}

impl Gen<'_> {
    fn open(
        &mut self,
        rel: &str,
        kind: FileKind,
        sid: &str,
        parent: Option<&str>,
        session_kind: Option<&str>,
    ) -> io::Result<File> {
        let (manifest_sid, agent) = match parent {
            Some(p) => (p, Some(sid)),
            None => (sid, None),
        };
        let mut sink = Sink::create(self.env.root, rel, kind, manifest_sid, agent)?;
        let start = iso(self.t);
        let mut header = Map::new();
        header.insert("sessionId".into(), sid.into());
        header.insert("projectHash".into(), self.hash.clone().into());
        header.insert("startTime".into(), start.clone().into());
        header.insert("lastUpdated".into(), start.into());
        if let Some(k) = session_kind {
            header.insert("kind".into(), k.into());
        }
        if parent.is_some() {
            header.insert("directories".into(), json!([self.folder]));
        }
        sink.note_cwd(&self.folder);
        let log = self.form == Form::Log;
        let mut f = File {
            sink,
            log,
            header,
            messages: Vec::new(),
            compact: !log && self.rng.chance(0.2),
            pending: 0,
        };
        if log && !self.stopped {
            // The metadata is the first line, always (what names the file a session's).
            let line = serde_json::to_vec(&f.header).map_err(io::Error::other)?;
            f.sink.line(&line, &mut self.budget)?;
            self.stopped = self.exhausted();
        }
        Ok(f)
    }

    fn exhausted(&self) -> bool {
        self.budget.used + self.pending >= self.budget.limit
    }

    /// One line of a log, after now and then a line that is not JSON; whether it was
    /// written (not past the budget).
    fn line(&mut self, f: &mut File, line: &[u8]) -> io::Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        if self.rng.chance(self.invalid_rate) {
            let bad = *self.rng.pick(INVALID_LINES);
            f.sink.invalid_line(bad.as_bytes(), &mut self.budget)?;
        }
        let written = !self.exhausted();
        if written {
            f.sink.line(line, &mut self.budget)?;
        }
        self.stopped = self.exhausted();
        Ok(written)
    }

    /// A message recorded: a log's next line, or a document's next message. Whether it
    /// was (not past the budget).
    fn record(
        &mut self,
        f: &mut File,
        m: &Value,
        markers: MarkerCounts,
        decoys: u64,
    ) -> io::Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        let bytes = serde_json::to_vec(m).map_err(io::Error::other)?;
        if f.log {
            if !self.line(f, &bytes)? {
                return Ok(false);
            }
        } else {
            f.messages.push(m.clone());
            f.pending += bytes.len() as u64;
            self.pending += bytes.len() as u64;
            self.stopped = self.exhausted();
        }
        f.sink.note_markers(markers);
        f.sink.note_decoys(decoys);
        Ok(true)
    }

    /// `{"$set":{"lastUpdated":…}}` in a log; a document's header.
    fn touch(&mut self, f: &mut File) -> io::Result<()> {
        let at = iso(self.t + 1);
        if f.log {
            let line = serde_json::to_vec(&json!({"$set": {"lastUpdated": at}}))
                .map_err(io::Error::other)?;
            self.line(f, &line).map(drop)
        } else {
            f.header.insert("lastUpdated".into(), at.into());
            Ok(())
        }
    }

    fn tick(&mut self, lo: u64, hi: u64) -> String {
        self.t += self.rng.range(lo, hi);
        iso(self.t)
    }

    /// A user prompt, a reply (with thoughts and tool calls now and then), its tokens.
    fn turn(&mut self, f: &mut File, rewind: bool) -> io::Result<()> {
        let user_id = self.rng.uuid_v4();
        let ts = self.tick(2_000, 600_000);
        let mut prompt = text::prompt(&mut self.rng);
        let mut decoys = 0;
        if self.rng.chance(0.005) {
            // A pasted marker in a prompt: never marker text.
            prompt.push_str("\n\n");
            decoys += text::append_marker(&mut self.rng, &mut prompt, false).markers;
        }
        let content = if self.form == Form::HashDocument && self.rng.chance(0.5) {
            Value::String(prompt)
        } else {
            json!([{"text": prompt}])
        };
        let user = json!({"id": user_id, "timestamp": ts, "type": "user", "content": content});
        self.record(f, &user, MarkerCounts::default(), decoys)?;
        self.touch(f)?;
        if rewind && f.log {
            // The user rewinds to before this prompt and asks again.
            let line =
                serde_json::to_vec(&json!({"$rewindTo": user_id})).map_err(io::Error::other)?;
            self.line(f, &line)?;
            return self.turn(f, false);
        }
        if self.rng.chance(0.03) {
            let info = json!({"id": self.rng.uuid_v4(), "timestamp": self.tick(5, 500),
                "type": *self.rng.pick(&["info", "warning", "error"]),
                "content": "Request cancelled."});
            self.record(f, &info, MarkerCounts::default(), 0)?;
        }

        let reply_id = self.rng.uuid_v4();
        let ts = self.tick(1_000, 90_000);
        let mut mc = MarkerCounts::default();
        let answer = text::assistant_text(&mut self.rng, MARKER_RATE, &mut mc);
        let mut decoys = 0;
        let mut thoughts = Vec::new();
        for _ in 0..self.rng.range(0, 2) {
            let mut d = text::prose(&mut self.rng, 2);
            if self.rng.chance(0.01) {
                // A marker in a thought is not the reply's text.
                d.push(' ');
                decoys += text::append_marker(&mut self.rng, &mut d, false).markers;
            }
            thoughts.push(
                json!({"subject": text::word(&mut self.rng), "description": d,
                "timestamp": iso(self.t.saturating_sub(500))}),
            );
        }
        let content = if self.rng.chance(0.3) {
            json!([{"text": answer}])
        } else {
            Value::String(answer)
        };
        let calls: Vec<Value> = (0..self.tool_count()).map(|_| self.tool_call()).collect();
        let tokens = self.tokens();
        let mut reply = json!({"id": reply_id, "timestamp": ts, "type": "gemini",
            "content": content, "thoughts": thoughts});
        if !calls.is_empty() {
            reply["toolCalls"] = Value::Array(calls);
        }
        reply["tokens"] = Value::Null;
        reply["model"] = self.model.into();
        if f.log {
            // Recorded when the stream ends, then again with its tokens: the same text,
            // its markers echoed.
            self.record(f, &reply, mc, decoys)?;
            self.touch(f)?;
            reply["tokens"] = tokens;
            if self.record(f, &reply, MarkerCounts::default(), 0)? {
                f.sink.entry.echoed_markers += mc.markers;
            }
        } else {
            reply["tokens"] = tokens;
            self.record(f, &reply, mc, decoys)?;
        }
        self.touch(f)
    }

    fn tool_count(&mut self) -> u64 {
        if self.rng.chance(0.6) {
            0
        } else {
            self.rng.range(1, 3)
        }
    }

    /// A tool call with its result (its output from the text pool).
    fn tool_call(&mut self) -> Value {
        let file = format!("{}/{}", self.folder, text::file(&mut self.rng));
        let (name, args) = match self.rng.index(3) {
            0 => (
                "run_shell_command",
                json!({"command": "cargo test", "directory": self.folder}),
            ),
            1 => ("read_file", json!({"absolute_path": file})),
            _ => (
                "search_file_content",
                json!({"pattern": text::ident(&mut self.rng)}),
            ),
        };
        let id = format!("{name}-{}-{}", self.t, self.rng.hex(8));
        let n = (self.rng.lognormal(600.0, 1.7) as usize).min(self.env.max_tool_output);
        let out = self.env.pool.slice(&mut self.rng, n);
        json!({"id": id, "name": name, "args": args,
            "result": [{"functionResponse": {"id": id, "name": name, "response": {"output": out}}}],
            "status": "success", "timestamp": iso(self.t)})
    }

    /// A reply's tokens, as the CLI records them.
    fn tokens(&mut self) -> Value {
        let input = self.rng.range(1_000, 60_000);
        let output = self.rng.range(10, 4_000);
        let cached = if self.rng.chance(0.4) { 0 } else { input / 3 };
        let thoughts = self.rng.range(0, 2_000);
        let tool = if self.rng.chance(0.8) {
            0
        } else {
            self.rng.range(1, 500)
        };
        json!({"input": input, "output": output, "cached": cached, "thoughts": thoughts,
            "tool": tool, "total": input + output + thoughts + tool})
    }

    /// A sub-agent's session, written whole between two turns of its parent's.
    fn subagent(&mut self, parent: &str) -> io::Result<()> {
        let id = self.rng.uuid_v4();
        let ext = if self.form == Form::Log {
            "jsonl"
        } else {
            "json"
        };
        let rel = format!("{}/{parent}/{id}.{ext}", self.chats);
        self.t += self.rng.range(100, 2_000);
        let mut f = self.open(
            &rel,
            FileKind::GeminiSubagent,
            &id,
            Some(parent),
            Some("subagent"),
        )?;
        for _ in 0..self.rng.range(1, 6) {
            if self.stopped {
                break;
            }
            self.turn(&mut f, false)?;
        }
        self.close(f)
    }

    /// A log ends; a document is written, its last version.
    fn close(&mut self, f: File) -> io::Result<()> {
        let mut sink = f.sink;
        if !f.log {
            let mut doc = f.header;
            doc.insert("messages".into(), Value::Array(f.messages));
            let bytes = if f.compact {
                serde_json::to_vec(&doc)
            } else {
                serde_json::to_vec_pretty(&doc)
            }
            .map_err(io::Error::other)?;
            self.pending -= f.pending;
            sink.document(&bytes, &mut self.budget)?;
        }
        let (entry, max_line) = sink.finish()?;
        self.max_line = self.max_line.max(max_line);
        self.files.push(entry);
        Ok(())
    }

    /// A log's last record cut short: the CLI was writing it.
    fn torn(&mut self, mut f: File) -> io::Result<()> {
        let torn = json!({"id": self.rng.uuid_v4(),
            "timestamp": iso(self.t + 100), "type": "gemini", "content": text::prose(&mut self.rng, 2)});
        f.sink.torn_record(&mut self.rng, &torn, &mut self.budget)?;
        self.close(f)
    }
}

/// What the CLI records beside the sessions kept: `.project_root` in every short-id
/// folder, and `projects.json` mapping every folder to its short id.
pub(crate) fn write_records(
    root: &Path,
    projects: &Projects,
    entries: &[FileEntry],
) -> io::Result<()> {
    let mut registry = BTreeMap::new();
    for e in entries {
        if !matches!(e.kind, FileKind::GeminiSession | FileKind::GeminiSubagent) {
            continue;
        }
        let (Some(dir), Some(folder)) = (
            e.path
                .strip_prefix(TMP)
                .and_then(|r| r.trim_start_matches('/').split('/').next()),
            e.cwds.first(),
        ) else {
            continue;
        };
        registry.insert(folder.clone(), projects.short_id(folder));
        if dir != project_hash(folder) {
            fs::write(root.join(TMP).join(dir).join(".project_root"), folder)?;
        }
    }
    if registry.is_empty() {
        return Ok(());
    }
    let mut text =
        serde_json::to_vec_pretty(&json!({"projects": registry})).map_err(io::Error::other)?;
    text.push(b'\n');
    fs::write(root.join(HOME).join(".gemini/projects.json"), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_slugs_as_the_cli() {
        assert_eq!(
            project_hash("/Users/test_user/agent-sample"),
            "55bddef6d3bbe1dfe2b6609854976c893af825ba17a47345d7e51d4020e0e03e"
        );
        assert_eq!(slug("docs.site"), "docs-site");
        assert_eq!(slug("Agent_X"), "agent-x");
        assert_eq!(slug("..."), "project");
    }

    #[test]
    fn short_ids_are_unique() {
        let w = World::build(Path::new("/virtual/repos"), 5, 20, false).unwrap();
        let p = Projects::new(&w);
        let mut ids: Vec<&String> = p.ids.values().collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }
}

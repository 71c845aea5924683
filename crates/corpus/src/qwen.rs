//! Qwen Code sessions, in the layout the CLI keeps under its runtime folder
//! (`adapters/qwen` has the sources; `testdata/public/qwen` real shapes):
//!
//! ```text
//! qwen/.qwen/projects/<sanitised folder>/chats/<sessionId>.jsonl          a session
//! qwen/.qwen/projects/<sanitised folder>/subagents/<sessionId>/agent-<agentId>.jsonl
//!                                              (+ agent-<agentId>.meta.json)  a sub-agent
//! ```
//!
//! (`QWEN_HOME=<corpus>/qwen/.qwen`, or `HOME=<corpus>/qwen`.) The folder is the
//! session's first `cwd` with every character outside `[A-Za-z0-9]` made `-`. One
//! `ChatRecord` a line: `uuid`, `parentUuid` (the previous record's), `sessionId`,
//! `timestamp`, `type`, `cwd`, `version`, and `gitBranch` inside a repository, on every
//! record, so a folder or branch change shows on the next record. A turn is a `user`
//! record, then `assistant` records (`message` a Gemini `Content`: thoughts, text,
//! function calls; `model`, `usageMetadata`) each followed by its `system`/`ui_telemetry`
//! copy of the counts, and a `tool_result` per call. `usageMetadata`'s prompt count
//! includes the cached tokens and its candidates count the thoughts, as the CLI's
//! OpenAI-compatible path fills them; `totalTokenCount` is their sum. A sub-agent's
//! records carry `isSidechain`, `agentId`, `agentName` and the parent's `sessionId`.

use std::io;

use serde_json::{json, Value};

use crate::claude::{Env, SessionResult, INVALID_LINES, INVALID_RATE, MARKER_RATE, TORN_RATE};
use crate::clock::iso;
use crate::rng::Rng;
use crate::sink::{Budget, Sink};
use crate::text::{self, MarkerCounts};
use crate::world::Place;
use crate::{FileEntry, FileKind};

/// Where the CLI's home sits in a corpus.
pub(crate) const HOME: &str = "qwen";
/// Its projects folder, below the corpus root.
const PROJECTS: &str = "qwen/.qwen/projects";
const VERSION: &str = "0.24.4";

/// Session-level options.
pub(crate) struct Opts {
    pub(crate) budget: Option<u64>,
    pub(crate) start_ms: u64,
    /// A sub-agent at the first turn (else one now and then).
    pub(crate) subagent: bool,
    /// Many invalid lines and a torn last line.
    pub(crate) quirks: bool,
}

/// A folder's name under `projects/` (`sanitizeCwd`).
pub(crate) fn sanitize(cwd: &str) -> String {
    cwd.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// One file being written, and the record before the next.
struct File {
    sink: Sink,
    last: Option<String>,
    /// A sub-agent's `agentId` and `agentName`.
    agent: Option<(String, String)>,
}

struct Gen<'e> {
    env: &'e Env<'e>,
    rng: Rng,
    t: u64,
    budget: Budget,
    stopped: bool,
    sid: String,
    place: Place,
    model: &'static str,
    invalid_rate: f64,
    prompt: u64,
    files: Vec<FileEntry>,
    max_line: u64,
}

/// Generates one Qwen Code session with its sub-agents' files.
pub(crate) fn session(env: &Env<'_>, seed: u64, opts: Opts) -> io::Result<SessionResult> {
    let mut rng = Rng::new(seed);
    let place = env.world.start(&mut rng);
    let model = *rng.pick(&["qwen3-coder-plus", "qwen3-coder-flash", "qwen3-max"]);
    let sid = rng.uuid_v4();
    let dir = format!("{PROJECTS}/{}", sanitize(&place.cwd));
    let mut g = Gen {
        env,
        rng,
        t: opts.start_ms,
        budget: Budget::new(opts.budget),
        stopped: false,
        sid,
        place,
        model,
        invalid_rate: if opts.quirks { 0.02 } else { INVALID_RATE },
        prompt: 0,
        files: Vec::new(),
        max_line: 0,
    };
    let rel = format!("{dir}/chats/{}.jsonl", g.sid);
    let mut main = File {
        sink: Sink::create(env.root, &rel, FileKind::QwenSession, &g.sid, None)?,
        last: None,
        agent: None,
    };
    let turns = g.rng.log_uniform(2, 100);
    let mut turn = 0;
    while !g.stopped && turn < turns {
        if turn > 0 && g.rng.chance(0.12) {
            // `cd`, a checkout, another project: the next record shows it.
            g.place = env.world.switch(&mut g.rng, &g.place);
        }
        if (opts.subagent && turn == 1) || (turn > 0 && g.rng.chance(0.06)) {
            g.subagent(&dir)?;
        }
        g.turn(&mut main)?;
        if g.rng.chance(0.03) {
            let payload = json!({"customTitle": text::prose(&mut g.rng, 1), "titleSource": "auto"});
            g.system(&mut main, "custom_title", payload)?;
        }
        turn += 1;
    }
    if !g.stopped && (opts.quirks || g.rng.chance(TORN_RATE)) {
        // The CLI was writing its next record.
        let mut b = g.base(&main, "assistant");
        b["message"] = json!({"role": "model", "parts": [{"text": text::prose(&mut g.rng, 2)}]});
        main.sink.torn_record(&mut g.rng, &b, &mut g.budget)?;
    }
    g.close(main)?;
    Ok(SessionResult::of(g.files, g.max_line))
}

impl Gen<'_> {
    fn tick(&mut self, lo: u64, hi: u64) {
        self.t += self.rng.range(lo, hi);
    }

    /// The fields every record has, in the CLI's order.
    fn base(&mut self, f: &File, kind: &str) -> Value {
        let mut r = json!({
            "uuid": self.rng.uuid_v4(),
            "parentUuid": f.last,
            "sessionId": self.sid,
            "timestamp": iso(self.t),
            "type": kind,
            "cwd": self.place.cwd,
            "version": VERSION,
        });
        if !self.place.branch.is_empty() {
            r["gitBranch"] = self.place.branch.clone().into();
        }
        if let Some((id, name)) = &f.agent {
            r["agentId"] = id.clone().into();
            r["agentName"] = name.clone().into();
            r["isSidechain"] = true.into();
        }
        r
    }

    /// Writes a record (after now and then a line that is not JSON); whether it was.
    fn write(&mut self, f: &mut File, r: &Value) -> io::Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        if self.rng.chance(self.invalid_rate) {
            let bad = *self.rng.pick(INVALID_LINES);
            f.sink.invalid_line(bad.as_bytes(), &mut self.budget)?;
        }
        let line = serde_json::to_vec(r).map_err(io::Error::other)?;
        f.sink.note_ts(r["timestamp"].as_str().unwrap_or_default());
        f.sink.note_cwd(&self.place.cwd);
        f.sink.note_branch(&self.place.branch);
        f.sink.line(&line, &mut self.budget)?;
        f.last = r["uuid"].as_str().map(str::to_owned);
        self.stopped = self.budget.exhausted();
        Ok(true)
    }

    fn system(&mut self, f: &mut File, subtype: &str, payload: Value) -> io::Result<bool> {
        self.tick(5, 50);
        let mut r = self.base(f, "system");
        r["subtype"] = subtype.into();
        r["systemPayload"] = payload;
        self.write(f, &r)
    }

    /// A prompt, then replies until one calls no tool.
    fn turn(&mut self, f: &mut File) -> io::Result<()> {
        self.prompt += 1;
        let prompt_id = format!("{}########{}", self.sid, self.prompt);
        self.tick(2_000, 600_000);
        let mut prompt = text::prompt(&mut self.rng);
        let mut decoys = 0;
        if self.rng.chance(0.005) {
            // A pasted marker in a prompt: never marker text.
            prompt.push_str("\n\n");
            decoys += text::append_marker(&mut self.rng, &mut prompt, false).markers;
        }
        let mut r = self.base(f, "user");
        r["message"] = json!({"role": "user", "parts": [{"text": prompt}]});
        if f.agent.is_none() {
            r["systemPayload"] = json!({"displayText": prompt, "hookContext": ""});
            r["promptId"] = prompt_id.clone().into();
        }
        if self.write(f, &r)? {
            f.sink.note_decoys(decoys);
        }
        for step in 0..4 {
            let calls = if step == 3 || self.rng.chance(0.55) {
                0
            } else {
                self.rng.range(1, 3)
            };
            if !self.reply(f, &prompt_id, calls)? || calls == 0 {
                break;
            }
        }
        Ok(())
    }

    /// One model response: its record, its telemetry copy, its tools' results.
    fn reply(&mut self, f: &mut File, prompt_id: &str, calls: u64) -> io::Result<bool> {
        self.tick(1_000, 90_000);
        let mut parts = Vec::new();
        let mut decoys = 0;
        if self.rng.chance(0.5) {
            let mut d = text::prose(&mut self.rng, 2);
            if self.rng.chance(0.01) {
                // A marker in a thought is not the reply's text.
                d.push(' ');
                decoys += text::append_marker(&mut self.rng, &mut d, false).markers;
            }
            parts.push(json!({"text": d, "thought": true}));
        }
        let mut mc = MarkerCounts::default();
        if calls == 0 || self.rng.chance(0.5) {
            parts.push(json!({"text": text::assistant_text(&mut self.rng, MARKER_RATE, &mut mc)}));
        }
        let mut results = Vec::new();
        for _ in 0..calls {
            let (call, result) = self.tool_call();
            parts.push(json!({"functionCall": call}));
            results.push(result);
        }
        let cached_share = if self.rng.chance(0.3) { 0 } else { 2 };
        let prompt = self.rng.range(2_000, 90_000);
        let cached = prompt * cached_share / 3;
        let thoughts = if parts[0]["thought"] == true {
            self.rng.range(10, 1_500)
        } else {
            0
        };
        let candidates = thoughts + self.rng.range(10, 3_000);
        let total = prompt + candidates;
        let mut r = self.base(f, "assistant");
        r["model"] = self.model.into();
        r["message"] = json!({"role": "model", "parts": parts});
        r["usageMetadata"] = json!({"promptTokenCount": prompt,
            "candidatesTokenCount": candidates, "cachedContentTokenCount": cached,
            "thoughtsTokenCount": thoughts, "totalTokenCount": total});
        r["contextWindowSize"] = 131_072.into();
        if !self.write(f, &r)? {
            return Ok(false);
        }
        f.sink.note_markers(mc);
        f.sink.note_decoys(decoys);
        let telemetry = json!({"uiEvent": {
            "event.name": "qwen-code.api_response", "event.timestamp": iso(self.t + 10),
            "response_id": format!("chatcmpl-{}", self.rng.hex(24)), "model": self.model,
            "status_code": 200, "duration_ms": self.rng.range(300, 20_000),
            "input_token_count": prompt, "output_token_count": candidates,
            "cached_content_token_count": cached, "thoughts_token_count": thoughts,
            "tool_token_count": 0, "total_token_count": total, "prompt_id": prompt_id,
            "auth_type": "openai"}});
        self.system(f, "ui_telemetry", telemetry)?;
        for (id, name, out) in results {
            self.tick(100, 20_000);
            let mut r = self.base(f, "tool_result");
            r["message"] = json!({"role": "user", "parts": [{"functionResponse":
                {"id": id, "name": name, "response": {"output": out}}}]});
            r["toolCallResult"] = json!({"callId": id, "status": "success", "resultDisplay": out});
            if !self.write(f, &r)? {
                return Ok(false);
            }
        }
        Ok(!self.stopped)
    }

    /// A function call and what it returned (its output from the text pool).
    fn tool_call(&mut self) -> (Value, (String, &'static str, String)) {
        let cwd = self.place.cwd.clone();
        let (name, args) = match self.rng.index(3) {
            0 => (
                "run_shell_command",
                json!({"command": "cargo test", "directory": cwd}),
            ),
            1 => (
                "read_file",
                json!({"absolute_path": format!("{cwd}/{}", text::file(&mut self.rng))}),
            ),
            _ => (
                "grep_search",
                json!({"pattern": text::ident(&mut self.rng)}),
            ),
        };
        let id = format!("call_{}", self.rng.hex(24));
        let n = (self.rng.lognormal(600.0, 1.7) as usize).min(self.env.max_tool_output);
        let out = self.env.pool.slice(&mut self.rng, n).to_owned();
        (
            json!({"id": id, "name": name, "args": args}),
            (id, name, out),
        )
    }

    /// A sub-agent's transcript and its sidecar, written whole between two turns.
    fn subagent(&mut self, dir: &str) -> io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        let name = *self
            .rng
            .pick(&["explore", "general-purpose", "code-reviewer"]);
        let id = format!("{name}-{}", self.rng.hex(4));
        let at = self.t + 500;
        let rel = format!("{dir}/subagents/{}/agent-{id}", self.sid);
        let mut f = File {
            sink: Sink::create(
                self.env.root,
                &format!("{rel}.jsonl"),
                FileKind::QwenSubagent,
                &self.sid,
                Some(&id),
            )?,
            last: None,
            agent: Some((id.clone(), name.to_owned())),
        };
        for _ in 0..self.rng.range(1, 4) {
            if self.stopped {
                break;
            }
            self.turn(&mut f)?;
        }
        self.close(f)?;
        if self.stopped {
            return Ok(());
        }
        let meta = json!({"agentId": id, "agentType": name,
            "description": text::prose(&mut self.rng, 1), "parentSessionId": self.sid,
            "parentAgentId": null, "createdAt": iso(at), "status": "completed", "depth": 1});
        let mut sink = Sink::create(
            self.env.root,
            &format!("{rel}.meta.json"),
            FileKind::QwenAgentMeta,
            &self.sid,
            Some(&id),
        )?;
        let doc = serde_json::to_vec_pretty(&meta).map_err(io::Error::other)?;
        sink.document(&doc, &mut self.budget)?;
        self.stopped = self.budget.exhausted();
        let (entry, max_line) = sink.finish()?;
        self.max_line = self.max_line.max(max_line);
        self.files.push(entry);
        Ok(())
    }

    fn close(&mut self, f: File) -> io::Result<()> {
        let (entry, max_line) = f.sink.finish()?;
        self.max_line = self.max_line.max(max_line);
        self.files.push(entry);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitises_as_the_cli() {
        assert_eq!(sanitize("/work/demo-app"), "-work-demo-app");
        assert_eq!(sanitize("/a/b.c_d"), "-a-b-c-d");
    }
}

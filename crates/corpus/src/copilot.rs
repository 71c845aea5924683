//! GitHub Copilot CLI sessions, in the layout the CLI keeps under its home
//! (`adapters/copilot` has the sources; `testdata/public/copilot` real shapes):
//!
//! ```text
//! copilot/.copilot/session-state/<sessionId>/events.jsonl   a session (current builds)
//! copilot/.copilot/session-state/<sessionId>.jsonl          an early build's session
//! ```
//!
//! (`COPILOT_HOME=<corpus>/copilot/.copilot`, or `HOME=<corpus>/copilot`.) One event a
//! line, an envelope `{type, data, id, timestamp, parentId}` (`parentId` the previous
//! event's `id`; a sub-agent's events add `agentId`). The folder and branch are in the
//! `context` of `session.start` and of each `session.resume`, and in the data of
//! `session.context_changed` (after `/cd`); an early build's session records none.
//! A session is one or more legs, each ended by a `session.shutdown` whose
//! `modelMetrics` are the session's totals so far per model, cumulative across the
//! legs: `inputTokens` includes the cache reads and writes, `outputTokens` the
//! reasoning. The last leg may end without one (the CLI killed: its spending is not
//! recorded). Sub-agents write into their parent's file, between `subagent.started`
//! and `subagent.completed`.

use std::collections::BTreeMap;
use std::io;

use serde_json::{json, Map, Value};

use crate::claude::{Env, SessionResult, INVALID_LINES, INVALID_RATE, MARKER_RATE, TORN_RATE};
use crate::clock::iso;
use crate::rng::Rng;
use crate::sink::{Budget, Sink};
use crate::text::{self, MarkerCounts};
use crate::world::{Place, World};
use crate::FileKind;

/// Where the CLI's home sits in a corpus.
pub(crate) const HOME: &str = "copilot";
/// Its session folders, below the corpus root.
const STATE: &str = "copilot/.copilot/session-state";

/// Session-level options.
pub(crate) struct Opts {
    pub(crate) budget: Option<u64>,
    pub(crate) start_ms: u64,
    /// An early build's session: a flat file, no context.
    pub(crate) early: bool,
    /// A sub-agent in the first leg, three legs, many invalid lines, a torn last line.
    pub(crate) quirks: bool,
}

/// A model's totals so far: requests, input (cache included), output (reasoning
/// included), cache reads, cache writes, reasoning.
type Metrics = BTreeMap<&'static str, [u64; 6]>;

struct Gen<'e> {
    env: &'e Env<'e>,
    rng: Rng,
    t: u64,
    budget: Budget,
    stopped: bool,
    sink: Sink,
    last: Option<String>,
    place: Place,
    context: bool,
    model: &'static str,
    invalid_rate: f64,
    metrics: Metrics,
    events: u64,
}

/// A context as the CLI records it: the folder, and the repository's facts inside one.
fn context(world: &World, p: &Place, rng: &mut Rng) -> Value {
    let Some(i) = p.repo else {
        return json!({"cwd": p.cwd});
    };
    let r = &world.repos[i];
    let name = r.origin.trim_end_matches(".git").rsplit('/').take(2);
    let name: Vec<&str> = name.collect();
    let head = &r.commit[..7.min(r.commit.len())];
    let mut c = json!({"cwd": p.cwd, "gitRoot": r.root, "branch": p.branch,
        "headCommit": head, "baseCommit": head,
        "repository": format!("{}/{}", name.get(1).copied().unwrap_or("gen"), name[0]),
        "repositoryHost": "github.com", "hostType": "github"});
    if rng.chance(0.05) {
        c.as_object_mut().map(|m| m.remove("baseCommit"));
    }
    c
}

/// Generates one Copilot CLI session.
pub(crate) fn session(env: &Env<'_>, seed: u64, opts: Opts) -> io::Result<SessionResult> {
    let mut rng = Rng::new(seed);
    let place = env.world.start(&mut rng);
    let model = *rng.pick(&[
        "claude-sonnet-4.5",
        "gpt-5",
        "gpt-5-mini",
        "claude-haiku-4.5",
    ]);
    let sid = rng.uuid_v4();
    let rel = if opts.early {
        format!("{STATE}/{sid}.jsonl")
    } else {
        format!("{STATE}/{sid}/events.jsonl")
    };
    let sink = Sink::create(env.root, &rel, FileKind::CopilotSession, &sid, None)?;
    let mut g = Gen {
        env,
        rng,
        t: opts.start_ms,
        budget: Budget::new(opts.budget),
        stopped: false,
        sink,
        last: None,
        place,
        context: !opts.early,
        model,
        invalid_rate: if opts.quirks { 0.02 } else { INVALID_RATE },
        metrics: Metrics::new(),
        events: 0,
    };
    let mut start = json!({"sessionId": sid, "version": 1, "producer": "copilot-agent",
        "copilotVersion": if opts.early { "0.0.330" } else { "1.0.102" },
        "startTime": iso(g.t)});
    if !opts.early {
        start["selectedModel"] = model.into();
        start["context"] = context(env.world, &g.place, &mut g.rng);
    }
    g.event("session.start", start, None)?;
    let legs = if opts.quirks {
        3
    } else {
        1 + g.rng.weighted(&[60, 30, 10]) as u64
    };
    for leg in 0..legs {
        if leg > 0 {
            g.tick(600_000, 86_400_000);
            if g.rng.chance(0.5) {
                g.place = env.world.switch(&mut g.rng, &g.place);
            }
            let mut data = json!({"resumeTime": iso(g.t), "eventCount": g.events});
            if g.context {
                data["context"] = context(env.world, &g.place, &mut g.rng);
            }
            g.event("session.resume", data, None)?;
        }
        let turns = g.rng.log_uniform(1, 40);
        for turn in 0..turns {
            if g.stopped {
                break;
            }
            if g.context && turn > 0 && g.rng.chance(0.1) {
                g.place = env.world.switch(&mut g.rng, &g.place);
                let mut data = context(env.world, &g.place, &mut g.rng);
                for k in ["headCommit", "baseCommit", "repositoryHost", "hostType"] {
                    data.as_object_mut().map(|m| m.remove(k));
                }
                g.tick(500, 20_000);
                g.event("session.context_changed", data, None)?;
            }
            if (opts.quirks && leg == 0 && turn == 0) || g.rng.chance(0.05) {
                g.subagent()?;
            }
            g.turn()?;
        }
        // The last leg of one session in twenty is killed: no shutdown.
        if leg + 1 < legs || !g.rng.chance(0.05) {
            g.shutdown()?;
        }
    }
    if !g.stopped && (opts.quirks || g.rng.chance(TORN_RATE)) {
        let torn = json!({"type": "assistant.message",
            "data": {"messageId": g.rng.uuid_v4(), "content": text::prose(&mut g.rng, 2)},
            "id": g.rng.uuid_v4(), "timestamp": iso(g.t + 100), "parentId": g.last});
        g.sink.torn_record(&mut g.rng, &torn, &mut g.budget)?;
    }
    let (entry, max_line) = g.sink.finish()?;
    Ok(SessionResult::of(vec![entry], max_line))
}

impl Gen<'_> {
    fn tick(&mut self, lo: u64, hi: u64) {
        self.t += self.rng.range(lo, hi);
    }

    /// Writes an event (after now and then a line that is not JSON); whether it was.
    fn event(&mut self, kind: &str, data: Value, agent: Option<&str>) -> io::Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        if self.rng.chance(self.invalid_rate) {
            let bad = *self.rng.pick(INVALID_LINES);
            self.sink.invalid_line(bad.as_bytes(), &mut self.budget)?;
        }
        let id = self.rng.uuid_v4();
        let ts = iso(self.t);
        let mut e = Map::new();
        e.insert("type".into(), kind.into());
        let states = match kind {
            "session.start" | "session.resume" => self.context,
            "session.context_changed" => true,
            _ => false,
        };
        if states {
            self.sink.note_cwd(&self.place.cwd);
            self.sink.note_branch(&self.place.branch);
        }
        e.insert("data".into(), data);
        e.insert("id".into(), id.clone().into());
        e.insert("timestamp".into(), ts.clone().into());
        e.insert("parentId".into(), self.last.clone().into());
        if let Some(a) = agent {
            e.insert("agentId".into(), a.into());
        }
        let line = serde_json::to_vec(&e).map_err(io::Error::other)?;
        self.sink.note_ts(&ts);
        self.sink.line(&line, &mut self.budget)?;
        self.last = Some(id);
        self.events += 1;
        self.stopped = self.budget.exhausted();
        Ok(true)
    }

    /// A request's spending, added to its model's totals; its output tokens.
    fn spend(&mut self, model: &'static str, cached: bool) -> u64 {
        let fresh = self.rng.range(200, 8_000);
        let read = if cached {
            self.rng.range(1_000, 60_000)
        } else {
            0
        };
        let write = if self.rng.chance(0.3) {
            self.rng.range(100, 4_000)
        } else {
            0
        };
        let reasoning = if self.rng.chance(0.4) {
            self.rng.range(10, 1_200)
        } else {
            0
        };
        let output = reasoning + self.rng.range(10, 2_500);
        let m = self.metrics.entry(model).or_default();
        for (k, v) in [1, fresh + read + write, output, read, write, reasoning]
            .into_iter()
            .enumerate()
        {
            m[k] += v;
        }
        output
    }

    /// An assistant message: its text (markers now and then) and tool requests.
    fn message(
        &mut self,
        model: &'static str,
        agent: Option<&str>,
        calls: u64,
        turn: u64,
    ) -> io::Result<Vec<(String, &'static str, Value)>> {
        self.tick(1_000, 60_000);
        let mut mc = MarkerCounts::default();
        let content = if calls == 0 || self.rng.chance(0.4) {
            text::assistant_text(&mut self.rng, MARKER_RATE, &mut mc)
        } else {
            String::new()
        };
        let cwd = self.place.cwd.clone();
        let requests: Vec<(String, &'static str, Value)> = (0..calls)
            .map(|_| {
                let id = format!("toolu_{}", self.rng.alnum(24));
                let (name, args) = match self.rng.index(3) {
                    0 => (
                        "bash",
                        json!({"command": "cargo test", "description": "Run tests"}),
                    ),
                    1 => (
                        "view",
                        json!({"path": format!("{cwd}/{}", text::file(&mut self.rng))}),
                    ),
                    _ => ("grep", json!({"pattern": text::ident(&mut self.rng)})),
                };
                (id, name, args)
            })
            .collect();
        let output = self.spend(model, self.metrics.contains_key(model));
        let mut data = json!({"messageId": self.rng.uuid_v4(), "content": content,
            "toolRequests": requests.iter().map(|(id, name, args)|
                json!({"toolCallId": id, "name": name, "arguments": args})).collect::<Vec<_>>(),
            "model": model, "outputTokens": output, "turnId": turn.to_string()});
        if self.rng.chance(0.2) {
            data["reasoningText"] = text::prose(&mut self.rng, 1).into();
        }
        if self.event("assistant.message", data, agent)? {
            self.sink.note_markers(mc);
        }
        Ok(requests)
    }

    fn tools(
        &mut self,
        requests: Vec<(String, &'static str, Value)>,
        agent: Option<&str>,
    ) -> io::Result<()> {
        for (id, name, args) in requests {
            self.tick(50, 500);
            let start = json!({"toolCallId": id, "toolName": name, "arguments": args});
            self.event("tool.execution_start", start, agent)?;
            self.tick(100, 30_000);
            let n = (self.rng.lognormal(600.0, 1.7) as usize).min(self.env.max_tool_output);
            let out = self.env.pool.slice(&mut self.rng, n);
            let done = json!({"toolCallId": id, "toolName": name, "success": true,
                "result": {"content": out}, "model": self.model});
            self.event("tool.execution_complete", done, agent)?;
        }
        Ok(())
    }

    /// A prompt and the replies to it, until one requests no tool.
    fn turn(&mut self) -> io::Result<()> {
        self.tick(2_000, 600_000);
        let mut prompt = text::prompt(&mut self.rng);
        let mut decoys = 0;
        if self.rng.chance(0.005) {
            prompt.push_str("\n\n");
            decoys += text::append_marker(&mut self.rng, &mut prompt, false).markers;
        }
        let data = json!({"content": prompt, "transformedContent": prompt, "attachments": [],
            "interactionId": self.rng.uuid_v4()});
        if self.event("user.message", data, None)? {
            self.sink.note_decoys(decoys);
        }
        for step in 0..4u64 {
            if self.stopped {
                break;
            }
            let calls = if step == 3 || self.rng.chance(0.5) {
                0
            } else {
                self.rng.range(1, 3)
            };
            let requests = self.message(self.model, None, calls, step)?;
            self.tools(requests, None)?;
            if calls == 0 {
                break;
            }
        }
        Ok(())
    }

    /// A sub-agent's run inside its parent's file.
    fn subagent(&mut self) -> io::Result<()> {
        let call = format!("toolu_{}", self.rng.alnum(24));
        let name = *self.rng.pick(&["explore", "task", "code-review"]);
        let agent = format!("{name}-{}", self.rng.hex(6));
        let model = "gpt-5-mini";
        self.tick(500, 5_000);
        let data = json!({"toolCallId": call, "agentName": name,
            "agentDisplayName": name, "agentDescription": text::prose(&mut self.rng, 1),
            "model": model});
        self.event("subagent.started", data, None)?;
        let steps = self.rng.range(1, 4);
        let mut tool_calls = 0;
        for step in 0..steps {
            let calls = if step + 1 == steps { 0 } else { 1 };
            let requests = self.message(model, Some(&agent), calls, step)?;
            tool_calls += requests.len() as u64;
            self.tools(requests, Some(&agent))?;
        }
        self.tick(100, 2_000);
        let totals = self.metrics.get(model).copied().unwrap_or_default();
        let data = json!({"toolCallId": call, "model": model, "totalTokens": totals[1] + totals[2],
            "totalToolCalls": tool_calls, "durationMs": self.rng.range(1_000, 60_000)});
        self.event("subagent.completed", data, None)?;
        Ok(())
    }

    /// The leg's end: every model's totals so far.
    fn shutdown(&mut self) -> io::Result<()> {
        self.tick(1_000, 120_000);
        let mut metrics = Map::new();
        let mut premium = 0;
        for (model, m) in &self.metrics {
            let mut usage = json!({"inputTokens": m[1], "outputTokens": m[2],
                "cacheReadTokens": m[3], "cacheWriteTokens": m[4]});
            if m[5] > 0 {
                usage["reasoningTokens"] = m[5].into();
            }
            premium += m[0];
            metrics.insert(
                (*model).to_owned(),
                json!({"requests": {"count": m[0], "cost": m[0]}, "usage": usage}),
            );
        }
        let data = json!({"shutdownType": "routine", "totalPremiumRequests": premium,
            "modelMetrics": metrics, "agentMetrics": {"main": {}}});
        self.event("session.shutdown", data, None)?;
        Ok(())
    }
}

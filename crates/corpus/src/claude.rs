//! Claude Code transcripts: main session files, inline sidechains, flat and nested sub-agent
//! files, `.meta.json` sidecars and workflow folders.

use std::io;
use std::path::Path;

use crate::clock::iso;
use crate::json::W;
use crate::rng::Rng;
use crate::sink::{Budget, Sink};
use crate::text::{self, MarkerCounts, TextPool};
use crate::world::{encode_cwd, Place, World};
use crate::{FileEntry, FileKind};

/// Everything a session generator reads.
pub(crate) struct Env<'a> {
    pub(crate) root: &'a Path,
    pub(crate) world: &'a World,
    pub(crate) pool: &'a TextPool,
    pub(crate) max_tool_output: usize,
}

/// What one generated session produced.
pub(crate) struct SessionResult {
    pub(crate) files: Vec<FileEntry>,
    pub(crate) bytes: u64,
    pub(crate) max_line: u64,
}

impl SessionResult {
    /// A session of `files`, its longest line `max_line` bytes.
    pub(crate) fn of(files: Vec<FileEntry>, max_line: u64) -> SessionResult {
        SessionResult {
            bytes: files.iter().map(|f| f.bytes).sum(),
            files,
            max_line,
        }
    }
}

/// Probability that a line is preceded by an invalid (non-object) line.
pub(crate) const INVALID_RATE: f64 = 0.0008;
/// Probability that a file that ends naturally ends with a torn line.
pub(crate) const TORN_RATE: f64 = 0.03;
/// Probability that a timestamp is earlier than the previous one.
pub(crate) const OUT_OF_ORDER_RATE: f64 = 0.004;
/// Probability that an assistant text holds brain markers.
pub(crate) const MARKER_RATE: f64 = 0.02;

pub(crate) const INVALID_LINES: &[&str] = &[
    "5",
    "[1]",
    "null",
    "not json at all <<<",
    "{\"type\":\"assistant\",\"message\":{\"role\":",
    "\"just a string\"",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Era {
    /// 1.0.98–1.0.128: inline sidechains, summaries.
    V10,
    /// 2.0.28–2.0.55: flat `agent-<8 hex>.jsonl`, snapshots, queue operations.
    V20,
    /// 2.1.17–2.1.42: `<sid>/subagents/`, progress hook lines.
    V21,
    /// 2.1.114+: attachments, permission-mode / last-prompt, `.meta.json`, worktree agents.
    V21New,
}

impl Era {
    fn versions(self) -> &'static [&'static str] {
        match self {
            Era::V10 => &["1.0.98", "1.0.108", "1.0.128"],
            Era::V20 => &["2.0.28", "2.0.42", "2.0.55"],
            Era::V21 => &["2.1.17", "2.1.42"],
            Era::V21New => &["2.1.114", "2.1.120"],
        }
    }

    fn model(self, rng: &mut Rng) -> &'static str {
        match self {
            Era::V10 => "claude-sonnet-4-20250514",
            Era::V20 => ["claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"][rng.index(2)],
            Era::V21 | Era::V21New => {
                ["claude-opus-4-6", "claude-sonnet-4-5-20250929"][rng.index(2)]
            }
        }
    }
}

/// Which rare shapes a session must contain (used to guarantee layout coverage).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Force {
    pub(crate) era: Option<Era>,
    pub(crate) agent: bool,
    pub(crate) no_edge: bool,
    /// Many invalid lines, frequent switches and a torn last line (coverage for tiny corpora).
    pub(crate) quirks: bool,
}

/// Session-level options.
pub(crate) struct Opts {
    pub(crate) budget: Option<u64>,
    pub(crate) start_ms: u64,
    pub(crate) force: Force,
    /// `None`: draw 20–2000 lines; `Some(n)`: stop after about n lines.
    pub(crate) target_lines: Option<u64>,
    /// Fixed relative path of the main file (single-transcript mode, no sub-agent files).
    pub(crate) single_file: Option<String>,
    /// Byte offsets at which to force a folder switch (single-transcript mode).
    pub(crate) switch_at: Vec<u64>,
}

struct Thread {
    sink: usize,
    parent: Option<String>,
    sidechain: bool,
    agent_id: Option<String>,
    place: Place,
}

struct Gen<'e> {
    env: &'e Env<'e>,
    rng: Rng,
    era: Era,
    version: String,
    model: &'static str,
    sid: String,
    slug: Option<String>,
    t: u64,
    budget: Budget,
    stopped: bool,
    sinks: Vec<Option<Sink>>,
    files: Vec<FileEntry>,
    max_line: u64,
    buf: Vec<u8>,
    proj_rel: String,
    single: bool,
    invalid_rate: f64,
    /// The usage of the message being streamed (by its id): every content block's
    /// line carries the same counts, as Claude Code writes them.
    usage: Option<(String, [u64; 4])>,
}

/// Generates one Claude session with its sub-agent files.
pub(crate) fn session(env: &Env<'_>, seed: u64, opts: Opts) -> io::Result<SessionResult> {
    let mut rng = Rng::new(seed);
    let era = opts.force.era.unwrap_or_else(|| {
        [Era::V10, Era::V20, Era::V21, Era::V21New][rng.weighted(&[15, 25, 25, 35])]
    });
    let version = rng.pick(era.versions()).to_string();
    let model = era.model(&mut rng);
    let sid = rng.uuid_v4();
    let slug = (era >= Era::V20 && version.as_str() != "2.0.28" && version.as_str() != "2.0.42")
        .then(|| {
            format!(
                "{}-{}-{}",
                text::word(&mut rng),
                text::word(&mut rng),
                text::ident(&mut rng)
            )
        })
        .map(|s| s.replace('_', "-"));
    let place = env.world.start(&mut rng);
    let proj_rel = format!("claude/projects/{}", encode_cwd(&place.cwd));
    let main_rel = opts
        .single_file
        .clone()
        .unwrap_or_else(|| format!("{proj_rel}/{sid}.jsonl"));
    let single = opts.single_file.is_some();
    let mut g = Gen {
        env,
        rng,
        era,
        version,
        model,
        sid,
        slug,
        t: opts.start_ms,
        budget: Budget::new(opts.budget),
        stopped: false,
        sinks: Vec::new(),
        files: Vec::new(),
        max_line: 0,
        buf: Vec::with_capacity(64 * 1024),
        proj_rel,
        single,
        invalid_rate: if opts.force.quirks {
            0.02
        } else {
            INVALID_RATE
        },
        usage: None,
    };
    let Some(main) = g.open(&main_rel, FileKind::ClaudeSession, None)? else {
        return Ok(g.result());
    };
    let mut th = Thread {
        sink: main,
        parent: None,
        sidechain: false,
        agent_id: None,
        place,
    };

    // Rare edge-case files.
    if !opts.force.no_edge && !single && g.rng.chance(0.03) {
        match g.rng.index(3) {
            0 => {}
            1 => g.summary_line(&th)?,
            _ => {
                for _ in 0..g.rng.range(1, 3) {
                    g.snapshot(&th)?;
                }
            }
        }
        g.close(main)?;
        return Ok(g.result());
    }

    let target_lines = opts
        .target_lines
        .unwrap_or_else(|| g.rng.log_uniform(20, 2000));
    g.preamble(&mut th)?;
    let mut turn = 0u64;
    let mut forced_agent = opts.force.agent;
    let mut switch_at = opts.switch_at.into_iter().peekable();
    let mut compacted = false;
    while !g.stopped && g.lines(main) < target_lines {
        if single {
            if let Some(&at) = switch_at.peek() {
                if g.budget.used >= at {
                    switch_at.next();
                    th.place = g.env.world.switch(&mut g.rng, &th.place);
                }
            }
        } else if turn > 0 && g.rng.chance(if opts.force.quirks { 0.3 } else { 0.05 }) {
            th.place = g.env.world.switch(&mut g.rng, &th.place);
        }
        if !single && turn > 0 && g.rng.chance(0.01) {
            // An upgrade in the middle of a session: later lines carry a newer version.
            let next = g.rng.pick(g.era.versions()).to_string();
            g.version = next;
        }
        g.turn(&mut th, &mut forced_agent)?;
        if !compacted && g.era >= Era::V21 && g.lines(main) > 400 && g.rng.chance(0.05) {
            compacted = true;
            g.compaction(&mut th)?;
        }
        turn += 1;
    }
    if !g.stopped && !single && (opts.force.quirks || g.rng.chance(TORN_RATE)) {
        g.torn(&th)?;
    }
    g.close(main)?;
    Ok(g.result())
}

impl<'e> Gen<'e> {
    fn result(self) -> SessionResult {
        SessionResult::of(self.files, self.max_line)
    }

    fn lines(&self, sink: usize) -> u64 {
        self.sinks[sink].as_ref().map_or(0, |s| s.entry.lines)
    }

    fn open(
        &mut self,
        rel: &str,
        kind: FileKind,
        agent: Option<&str>,
    ) -> io::Result<Option<usize>> {
        if self.stopped {
            return Ok(None);
        }
        let s = Sink::create(self.env.root, rel, kind, &self.sid, agent)?;
        self.sinks.push(Some(s));
        Ok(Some(self.sinks.len() - 1))
    }

    fn close(&mut self, sink: usize) -> io::Result<()> {
        if let Some(s) = self.sinks[sink].take() {
            let (entry, max) = s.finish()?;
            self.max_line = self.max_line.max(max);
            self.files.push(entry);
        }
        Ok(())
    }

    /// Advances the clock and returns the line's timestamp (occasionally out of order).
    fn stamp(&mut self) -> String {
        let step = if self.rng.chance(0.03) {
            self.rng.range(60_000, 1_800_000)
        } else {
            self.rng.range(150, 15_000)
        };
        self.t += step;
        if self.rng.chance(OUT_OF_ORDER_RATE) {
            iso(self.t - self.rng.range(20_000, 120_000))
        } else {
            iso(self.t)
        }
    }

    fn head(&self, w: &mut W<'_>, th: &Thread) {
        w.opt_str("parentUuid", th.parent.as_deref());
        w.bool("isSidechain", th.sidechain);
        w.str("userType", "external");
        if self.era >= Era::V21New {
            w.str("entrypoint", "cli");
        }
        w.str("cwd", &th.place.cwd);
        w.str("sessionId", &self.sid);
        w.str("version", &self.version);
        w.str("gitBranch", &th.place.branch);
        if let Some(a) = &th.agent_id {
            w.str("agentId", a);
        }
        if let Some(s) = &self.slug {
            w.str("slug", s);
        }
    }

    /// Writes the line in `b` to the thread's file, maybe after an invalid line.
    fn put(
        &mut self,
        th: &Thread,
        b: &[u8],
        ts: Option<&str>,
        scoped: bool,
        markers: MarkerCounts,
        decoys: u64,
    ) -> io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        let Some(sink) = self.sinks[th.sink].as_mut() else {
            return Ok(());
        };
        if self.rng.chance(self.invalid_rate) {
            let bad = *self.rng.pick(INVALID_LINES);
            sink.invalid_line(bad.as_bytes(), &mut self.budget)?;
            if self.budget.exhausted() {
                self.stopped = true;
                return Ok(());
            }
        }
        if let Some(ts) = ts {
            sink.note_ts(ts);
        }
        if scoped {
            sink.note_cwd(&th.place.cwd);
            sink.note_branch(&th.place.branch);
        }
        sink.note_markers(markers);
        sink.note_decoys(decoys);
        sink.line(b, &mut self.budget)?;
        if self.budget.exhausted() {
            self.stopped = true;
        }
        Ok(())
    }

    fn take(&mut self) -> Vec<u8> {
        let mut b = std::mem::take(&mut self.buf);
        b.clear();
        b
    }

    fn msg_id(&mut self) -> String {
        format!("msg_01{}", self.rng.alnum(22))
    }

    fn req_id(&mut self) -> String {
        format!("req_011C{}", self.rng.alnum(18))
    }

    fn tool_id(&mut self) -> String {
        format!("toolu_01{}", self.rng.alnum(22))
    }

    // ----- metadata lines -------------------------------------------------------------------

    fn summary_line(&mut self, th: &Thread) -> io::Result<()> {
        let mut s = String::new();
        text::sentence(&mut self.rng, &mut s);
        let leaf = self.rng.uuid_v4();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.str("type", "summary")
            .str("summary", s.trim_end_matches('.'))
            .str("leafUuid", &leaf);
        w.end();
        self.put(th, &b, None, false, MarkerCounts::default(), 0)?;
        self.buf = b;
        Ok(())
    }

    fn snapshot(&mut self, th: &Thread) -> io::Result<()> {
        let id = self.rng.uuid_v4();
        let ts = iso(self.t);
        let n = self.rng.index(3);
        let files: Vec<String> = (0..n)
            .map(|_| format!("{}/{}", th.place.cwd, text::file(&mut self.rng)))
            .collect();
        let backups: Vec<String> = (0..n)
            .map(|_| format!("{}@v{}", self.rng.hex(16), self.rng.range(1, 9)))
            .collect();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.str("type", "file-history-snapshot").str("messageId", &id);
        {
            let mut s = w.obj("snapshot");
            s.str("messageId", &id);
            {
                let mut t = s.obj("trackedFileBackups");
                for (f, bk) in files.iter().zip(&backups) {
                    let mut e = t.obj(f);
                    e.str("backupFileName", bk)
                        .num("version", 1)
                        .str("backupTime", &ts);
                    e.end();
                }
                t.end();
            }
            s.str("timestamp", &ts);
            s.end();
        }
        w.bool("isSnapshotUpdate", n > 0 && self.rng.chance(0.3));
        w.end();
        self.put(th, &b, None, false, MarkerCounts::default(), 0)?;
        self.buf = b;
        Ok(())
    }

    fn queue_op(&mut self, th: &Thread, op: &str, content: Option<&str>) -> io::Result<()> {
        let ts = self.stamp();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.str("type", "queue-operation")
            .str("operation", op)
            .str("timestamp", &ts);
        w.str("sessionId", &self.sid);
        if let Some(c) = content {
            w.str("content", c);
        }
        w.end();
        self.put(th, &b, Some(&ts), false, MarkerCounts::default(), 0)?;
        self.buf = b;
        Ok(())
    }

    fn permission_mode(&mut self, th: &Thread) -> io::Result<()> {
        let mode = *self
            .rng
            .pick(&["default", "acceptEdits", "plan", "bypassPermissions"]);
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.str("type", "permission-mode")
            .str("permissionMode", mode)
            .str("sessionId", &self.sid);
        w.end();
        self.put(th, &b, None, false, MarkerCounts::default(), 0)?;
        self.buf = b;
        Ok(())
    }

    fn last_prompt(&mut self, th: &Thread, prompt: &str) -> io::Result<()> {
        let mut b = self.take();
        let mut w = W::object(&mut b);
        let cut: String = prompt.chars().take(200).collect();
        w.str("type", "last-prompt")
            .str("lastPrompt", &cut)
            .str("sessionId", &self.sid);
        w.end();
        self.put(th, &b, None, false, MarkerCounts::default(), 0)?;
        self.buf = b;
        Ok(())
    }

    // ----- conversational lines -------------------------------------------------------------

    fn progress(&mut self, th: &mut Thread, event: &str) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let tid = self.rng.uuid_v4();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        self.head(&mut w, th);
        w.str("type", "progress");
        {
            let mut d = w.obj("data");
            d.str("type", "hook_progress").str("hookEvent", event);
            d.str("hookName", &format!("{event}:startup"));
            d.str(
                "command",
                "\"${CLAUDE_PLUGIN_ROOT}/scripts/hook.sh\" actor started",
            );
            d.end();
        }
        w.str("parentToolUseID", &tid).str("toolUseID", &tid);
        w.str("timestamp", &ts).str("uuid", &uuid);
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), 0)?;
        self.buf = b;
        th.parent = Some(uuid);
        Ok(())
    }

    fn attachment(&mut self, th: &mut Thread) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let kind = *self.rng.pick(&[
            "hook_success",
            "todo_reminder",
            "edited_text_file",
            "skill_listing",
        ]);
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.opt_str("parentUuid", th.parent.as_deref());
        w.bool("isSidechain", th.sidechain);
        {
            let mut a = w.obj("attachment");
            a.str("type", kind);
            match kind {
                "hook_success" => {
                    a.str("hookName", "SessionStart:startup")
                        .str("hookEvent", "SessionStart");
                    a.str("content", "")
                        .str("stdout", "{\"ok\":true}\n")
                        .str("stderr", "");
                    a.num("exitCode", 0)
                        .num("durationMs", self.rng.range(50, 3000));
                }
                "edited_text_file" => {
                    let f = format!("{}/{}", th.place.cwd, text::file(&mut self.rng));
                    a.str("filename", &f)
                        .str("snippet", "     1\tfn main() {}\n");
                }
                _ => {
                    a.str("content", "Reminder: keep the todo list current.");
                }
            }
            a.end();
        }
        w.str("type", "attachment")
            .str("uuid", &uuid)
            .str("timestamp", &ts);
        w.str("userType", "external")
            .str("entrypoint", "cli")
            .str("cwd", &th.place.cwd);
        w.str("sessionId", &self.sid).str("version", &self.version);
        w.str("gitBranch", &th.place.branch);
        if let Some(a) = &th.agent_id {
            w.str("agentId", a);
        }
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), 0)?;
        self.buf = b;
        th.parent = Some(uuid);
        Ok(())
    }

    fn system(&mut self, th: &mut Thread, subtype: &str) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let tool = self.tool_id();
        let dur = self.rng.range(2_000, 600_000);
        let mut content = String::new();
        if subtype == "away_summary" {
            content = text::prose(&mut self.rng, 2);
        }
        let mut b = self.take();
        let mut w = W::object(&mut b);
        self.head(&mut w, th);
        w.str("type", "system");
        match subtype {
            "" => {
                w.str("content", "Running \u{1b}[1mPostToolUse:Edit\u{1b}[22m...");
                w.bool("isMeta", false)
                    .str("level", "info")
                    .str("toolUseID", &tool);
            }
            "stop_hook_summary" => {
                w.str("subtype", subtype).num("hookCount", 1);
                {
                    let mut a = w.arr("hookInfos");
                    a.item_obj().str("command", "hooks/stop.sh").end();
                    a.end_array();
                }
                w.raw("hookErrors", "[]")
                    .bool("preventedContinuation", false);
                w.str("stopReason", "")
                    .bool("hasOutput", true)
                    .str("level", "suggestion");
                w.str("toolUseID", &tool);
            }
            "turn_duration" => {
                w.str("subtype", subtype)
                    .num("durationMs", dur)
                    .num("messageCount", dur % 97 + 3);
                w.bool("isMeta", false);
            }
            _ => {
                w.str("subtype", subtype)
                    .str("content", &content)
                    .bool("isMeta", false);
            }
        }
        w.str("timestamp", &ts).str("uuid", &uuid);
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), 0)?;
        self.buf = b;
        th.parent = Some(uuid);
        Ok(())
    }

    fn user_text(
        &mut self,
        th: &mut Thread,
        content: &str,
        meta: bool,
        decoys: u64,
    ) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let prompt_id = (self.era >= Era::V21New).then(|| self.rng.uuid_v4());
        let mut b = self.take();
        let mut w = W::object(&mut b);
        self.head(&mut w, th);
        if let Some(p) = &prompt_id {
            w.str("promptId", p);
        }
        w.str("type", "user");
        {
            let mut m = w.obj("message");
            m.str("role", "user").str("content", content);
            m.end();
        }
        if meta {
            w.bool("isMeta", true);
        }
        if self.era >= Era::V21 && !meta && !th.sidechain {
            w.str("permissionMode", "default");
        }
        w.str("uuid", &uuid).str("timestamp", &ts);
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), decoys)?;
        self.buf = b;
        th.parent = Some(uuid);
        Ok(())
    }

    /// One assistant line holding one content block. Returns the line's uuid.
    fn assistant_block(
        &mut self,
        th: &mut Thread,
        msg: &(String, String),
        block: Block<'_>,
        markers: MarkerCounts,
    ) -> io::Result<String> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        // Drawn for every block (the generator's stream of choices stays the same),
        // kept for the message's later blocks.
        let drawn = [
            self.rng.range(1, 40),
            self.rng.range(0, 30_000),
            self.rng.range(0, 200_000),
            self.rng.range(1, 4000),
        ];
        let [inp, cache_c, cache_r, out] = match &self.usage {
            Some((id, counts)) if *id == msg.0 => *counts,
            _ => {
                self.usage = Some((msg.0.clone(), drawn));
                drawn
            }
        };
        let sig = match block {
            Block::Thinking(_) => {
                let n = self.rng.range(200, 600) as usize;
                self.rng.alnum(n)
            }
            _ => String::new(),
        };
        let mut b = self.take();
        let mut w = W::object(&mut b);
        self.head(&mut w, th);
        {
            let mut m = w.obj("message");
            m.str("id", &msg.0)
                .str("type", "message")
                .str("role", "assistant");
            m.str("model", self.model);
            {
                let mut c = m.arr("content");
                let mut blk = c.item_obj();
                match block {
                    Block::Text(t) => {
                        blk.str("type", "text").str("text", t);
                    }
                    Block::Thinking(t) => {
                        blk.str("type", "thinking")
                            .str("thinking", t)
                            .str("signature", &sig);
                    }
                    Block::ToolUse { id, name, input } => {
                        blk.str("type", "tool_use").str("id", id).str("name", name);
                        blk.raw("input", input);
                        if self.era >= Era::V21New {
                            blk.raw("caller", "{\"type\":\"direct\"}");
                        }
                    }
                }
                blk.end();
                c.end_array();
            }
            m.null("stop_reason").null("stop_sequence");
            {
                let mut u = m.obj("usage");
                u.num("input_tokens", inp)
                    .num("cache_creation_input_tokens", cache_c);
                u.num("cache_read_input_tokens", cache_r)
                    .num("output_tokens", out);
                u.str("service_tier", "standard");
                u.end();
            }
            m.end();
        }
        w.str("requestId", &msg.1).str("type", "assistant");
        w.str("uuid", &uuid).str("timestamp", &ts);
        w.end();
        self.put(th, &b, Some(&ts), true, markers, 0)?;
        self.buf = b;
        th.parent = Some(uuid.clone());
        Ok(uuid)
    }

    fn tool_result(
        &mut self,
        th: &mut Thread,
        parent_tool_line: &str,
        tool_id: &str,
        r: &ToolRun,
    ) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        let saved = th.parent.replace(parent_tool_line.to_string());
        self.head(&mut w, th);
        th.parent = saved;
        w.str("type", "user");
        {
            let mut m = w.obj("message");
            m.str("role", "user");
            let mut c = m.arr("content");
            {
                let mut blk = c.item_obj();
                blk.str("tool_use_id", tool_id).str("type", "tool_result");
                if r.content_blocks.is_empty() {
                    blk.str("content", &r.content);
                } else {
                    let mut cc = blk.arr("content");
                    for t in &r.content_blocks {
                        cc.item_obj().str("type", "text").str("text", t).end();
                    }
                    cc.end_array();
                }
                if r.is_error {
                    blk.bool("is_error", true);
                }
                blk.end();
            }
            c.end_array();
            m.end();
        }
        w.str("uuid", &uuid).str("timestamp", &ts);
        w.raw("toolUseResult", &r.result_json);
        if self.era >= Era::V21 {
            w.str("sourceToolAssistantUUID", parent_tool_line);
        }
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), r.decoys)?;
        self.buf = b;
        th.parent = Some(uuid);
        Ok(())
    }

    // ----- structure -------------------------------------------------------------------------

    fn preamble(&mut self, th: &mut Thread) -> io::Result<()> {
        if self.era <= Era::V20 && self.rng.chance(0.3) {
            for _ in 0..self.rng.range(1, 3) {
                self.summary_line(th)?;
            }
        }
        match self.era {
            Era::V21New => {
                self.permission_mode(th)?;
                for _ in 0..self.rng.range(0, 2) {
                    self.attachment(th)?;
                }
            }
            Era::V21 if self.rng.chance(0.5) => self.progress(th, "SessionStart")?,
            Era::V20 if !self.single => {
                // Two-line "Warmup" sidechains that start when the session opens.
                for _ in 0..self.rng.range(0, 2) {
                    self.warmup(th)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn warmup(&mut self, th: &Thread) -> io::Result<()> {
        let id = self.rng.hex(8);
        let rel = format!("{}/agent-{id}.jsonl", self.proj_rel);
        let Some(s) = self.open(&rel, FileKind::ClaudeAgentFlat, Some(&id))? else {
            return Ok(());
        };
        let mut at = Thread {
            sink: s,
            parent: None,
            sidechain: true,
            agent_id: Some(id),
            place: th.place.clone(),
        };
        self.user_text(&mut at, "Warmup", false, 0)?;
        let msg = (self.msg_id(), self.req_id());
        let hello = "I'm ready to help. What would you like me to look at?";
        self.assistant_block(&mut at, &msg, Block::Text(hello), MarkerCounts::default())?;
        self.close(s)
    }

    fn turn(&mut self, th: &mut Thread, forced_agent: &mut bool) -> io::Result<()> {
        if self.era >= Era::V20 && self.version.as_str() != "2.0.28" && self.rng.chance(0.1) {
            let p = text::prompt(&mut self.rng);
            self.queue_op(th, "enqueue", Some(&p))?;
            self.queue_op(th, "dequeue", None)?;
        }
        if self.era >= Era::V20 && self.rng.chance(0.6) {
            self.snapshot(th)?;
        }
        if self.era >= Era::V21New && self.rng.chance(0.3) {
            self.attachment(th)?;
        }
        let prompt = if self.rng.chance(0.04) {
            self.user_text(
                th,
                "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.</local-command-caveat>",
                true,
                0,
            )?;
            let c = "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>";
            self.user_text(th, c, false, 0)?;
            c.to_string()
        } else {
            let mut p = text::prompt(&mut self.rng);
            let mut decoys = 0;
            if self.rng.chance(0.01) {
                p.push_str("\nHow do I write <!-- @lesson -->a lesson<!-- @/lesson --> markers?");
                decoys = 1;
            }
            self.user_text(th, &p, false, decoys)?;
            p
        };
        let steps = 1 + (self.rng.lognormal(2.0, 0.9) as u64).min(14);
        let mut restore: Option<(Place, u8)> = None;
        for step in 0..steps {
            if self.stopped {
                return Ok(());
            }
            restore = match restore.take() {
                Some((p, 0)) => {
                    th.place = p;
                    None
                }
                Some((p, n)) => Some((p, n - 1)),
                None => None,
            };
            let msg = (self.msg_id(), self.req_id());
            if self.rng.chance(0.3) {
                let k = self.rng.range(1, 4);
                let t = text::prose(&mut self.rng, k);
                self.assistant_block(th, &msg, Block::Thinking(&t), MarkerCounts::default())?;
            }
            if step + 1 == steps {
                let mut mc = MarkerCounts::default();
                let t = text::assistant_text(&mut self.rng, MARKER_RATE, &mut mc);
                self.assistant_block(th, &msg, Block::Text(&t), mc)?;
                break;
            }
            if self.rng.chance(0.4) {
                let mut mc = MarkerCounts::default();
                let t = text::assistant_text(&mut self.rng, MARKER_RATE / 2.0, &mut mc);
                self.assistant_block(th, &msg, Block::Text(&t), mc)?;
            }
            let n = if self.rng.chance(0.8) {
                1
            } else {
                self.rng.range(2, 3)
            };
            let mut calls = Vec::new();
            for _ in 0..n {
                let want_agent = !self.single
                    && !th.sidechain
                    && (std::mem::take(forced_agent) || self.rng.chance(0.015));
                let tool = if want_agent {
                    Tool::Task
                } else {
                    Tool::pick(&mut self.rng)
                };
                let id = self.tool_id();
                let input = self.tool_input(tool, th);
                let line = self.assistant_block(
                    th,
                    &msg,
                    Block::ToolUse {
                        id: &id,
                        name: tool.name(),
                        input: &input.0,
                    },
                    MarkerCounts::default(),
                )?;
                calls.push((tool, id, line, input.1));
            }
            for (tool, id, line, arg) in calls {
                if self.stopped {
                    return Ok(());
                }
                if tool == Tool::Task {
                    if let Some(old) = self.task(th, &id, &line, &arg)? {
                        restore = Some((old, 1));
                    }
                } else {
                    let r = self.run_tool(tool, th, &arg);
                    self.tool_result(th, &line, &id, &r)?;
                }
            }
            if self.era == Era::V21 && self.rng.chance(0.15) {
                self.progress(th, "PostToolUse")?;
            }
            if self.era == Era::V21New && self.rng.chance(0.15) {
                self.attachment(th)?;
            }
        }
        if let Some((p, _)) = restore.take() {
            th.place = p;
        }
        if self.era == Era::V10 && self.rng.chance(0.1) {
            self.system(th, "")?;
        }
        if self.era >= Era::V21 && self.rng.chance(0.3) {
            self.system(th, "stop_hook_summary")?;
        }
        if self.era >= Era::V21New {
            if self.rng.chance(0.5) {
                self.system(th, "turn_duration")?;
            }
            if self.rng.chance(0.03) {
                self.system(th, "away_summary")?;
            }
            if self.rng.chance(0.2) {
                self.last_prompt(th, &prompt)?;
                self.permission_mode(th)?;
            }
        }
        Ok(())
    }

    fn compaction(&mut self, th: &mut Thread) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let logical = th.parent.clone().unwrap_or_default();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        th.parent = None;
        self.head(&mut w, th);
        w.str("logicalParentUuid", &logical);
        w.str("type", "system").str("subtype", "compact_boundary");
        w.str("content", "Conversation compacted")
            .str("level", "info")
            .bool("isMeta", false);
        {
            let mut c = w.obj("compactMetadata");
            c.str("trigger", "auto")
                .num("preTokens", self.rng.range(100_000, 180_000));
            c.end();
        }
        w.str("uuid", &uuid).str("timestamp", &ts);
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), 0)?;
        self.buf = b;
        th.parent = Some(uuid);

        let summary = format!(
            "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n{}",
            text::prose(&mut self.rng, 6)
        );
        let uuid = self.rng.uuid_v4();
        let ts = self.stamp();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        self.head(&mut w, th);
        w.str("type", "user");
        {
            let mut m = w.obj("message");
            m.str("role", "user").str("content", &summary);
            m.end();
        }
        w.bool("isCompactSummary", true)
            .bool("isVisibleInTranscriptOnly", true);
        w.str("uuid", &uuid).str("timestamp", &ts);
        w.end();
        self.put(th, &b, Some(&ts), true, MarkerCounts::default(), 0)?;
        self.buf = b;
        th.parent = Some(uuid);
        Ok(())
    }

    fn torn(&mut self, th: &Thread) -> io::Result<()> {
        let uuid = self.rng.uuid_v4();
        let ts = iso(self.t + 500);
        let t = text::prose(&mut self.rng, 3);
        let mut b = self.take();
        let mut w = W::object(&mut b);
        self.head(&mut w, th);
        w.str("type", "assistant");
        {
            let mut m = w.obj("message");
            m.str("role", "assistant");
            let mut c = m.arr("content");
            c.item_obj().str("type", "text").str("text", &t).end();
            c.end_array();
            m.end();
        }
        w.str("uuid", &uuid).str("timestamp", &ts);
        w.end();
        let mut cut = 1 + self.rng.index(b.len() - 2);
        while cut > 1 && (b[cut] & 0xC0) == 0x80 {
            cut -= 1;
        }
        if let Some(s) = self.sinks[th.sink].as_mut() {
            s.torn_line(&b[..cut], &mut self.budget)?;
        }
        self.buf = b;
        Ok(())
    }

    // ----- tools ------------------------------------------------------------------------------

    fn out_len(&mut self) -> usize {
        if self.rng.chance(0.03) {
            return 0;
        }
        (self.rng.lognormal(600.0, 1.7) as usize).min(self.env.max_tool_output)
    }

    /// Returns the tool input JSON and a tool-specific argument (path, command, prompt).
    fn tool_input(&mut self, tool: Tool, th: &Thread) -> (String, String) {
        let f = format!("{}/{}", th.place.cwd, text::file(&mut self.rng));
        let mut b = Vec::new();
        let mut w = W::object(&mut b);
        let arg = match tool {
            Tool::Bash => {
                let cmd = match self.rng.index(5) {
                    0 => "cargo test --workspace 2>&1 | tail -50".to_string(),
                    1 => format!("rg -n \"{}\" .", text::ident(&mut self.rng)),
                    2 => "git status --short && git log --oneline -5".to_string(),
                    3 => format!("ls -la {}", th.place.cwd),
                    _ => format!("cat {f} | head -100"),
                };
                w.str("command", &cmd).str("description", "Run a command");
                cmd
            }
            Tool::Read => {
                w.str("file_path", &f);
                f
            }
            Tool::Edit => {
                w.str("file_path", &f)
                    .str("old_string", "let x = 1;")
                    .str("new_string", "let x = 2;");
                f
            }
            Tool::Write => {
                w.str("file_path", &f)
                    .str("content", "fn main() {\n    println!(\"hi\");\n}\n");
                f
            }
            Tool::Grep => {
                let p = text::ident(&mut self.rng).to_string();
                w.str("pattern", &p)
                    .str("path", &th.place.cwd)
                    .str("output_mode", "files_with_matches");
                p
            }
            Tool::Glob => {
                w.str("pattern", "**/*.rs");
                "**/*.rs".to_string()
            }
            Tool::TodoWrite => {
                {
                    let mut a = w.arr("todos");
                    for s in ["completed", "in_progress", "pending"] {
                        let mut t = a.item_obj();
                        t.str("content", text::word(&mut self.rng)).str("status", s);
                        t.str("activeForm", "Working");
                        t.end();
                    }
                    a.end_array();
                }
                String::new()
            }
            Tool::Task => {
                let mut p = String::from("Investigate: ");
                text::sentence(&mut self.rng, &mut p);
                w.str("description", "Investigate a subsystem")
                    .str("prompt", &p);
                w.str("subagent_type", "general-purpose");
                p
            }
        };
        w.end();
        (String::from_utf8(b).unwrap_or_default(), arg)
    }

    fn run_tool(&mut self, tool: Tool, th: &Thread, arg: &str) -> ToolRun {
        let pool = self.env.pool;
        let n = self.out_len();
        let out = pool.slice(&mut self.rng, n);
        let mut b = Vec::new();
        let mut w = W::object(&mut b);
        let mut decoys = 0;
        let mut is_error = false;
        let content: String = match tool {
            Tool::Bash => {
                let mut s = out.to_string();
                if self.rng.chance(0.002) {
                    s.push_str("\n<!-- @lesson -->A marker inside tool output is not an assistant marker.<!-- @/lesson -->\n");
                    decoys = 2;
                }
                is_error = self.rng.chance(0.05);
                w.str("stdout", &s)
                    .str("stderr", if is_error { "exit status 1" } else { "" });
                w.bool("interrupted", false).bool("isImage", false);
                s
            }
            Tool::Read => {
                let lines = out.lines().count() as u64;
                w.str("type", "text");
                {
                    let mut f = w.obj("file");
                    f.str("filePath", arg)
                        .str("content", out)
                        .num("numLines", lines);
                    f.num("startLine", 1).num("totalLines", lines);
                    f.end();
                }
                out.to_string()
            }
            Tool::Edit => {
                w.str("filePath", arg)
                    .str("oldString", "let x = 1;")
                    .str("newString", "let x = 2;");
                w.str("originalFile", out);
                {
                    let mut p = w.arr("structuredPatch");
                    let mut h = p.item_obj();
                    h.num("oldStart", 10)
                        .num("oldLines", 1)
                        .num("newStart", 10)
                        .num("newLines", 1);
                    let mut l = h.arr("lines");
                    l.item_str("-let x = 1;").item_str("+let x = 2;");
                    l.end_array();
                    h.end();
                    p.end_array();
                }
                w.bool("userModified", false).bool("replaceAll", false);
                format!("The file {arg} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n    10\tlet x = 2;")
            }
            Tool::Write => {
                w.str("type", "create")
                    .str("filePath", arg)
                    .str("content", out);
                w.raw("structuredPatch", "[]");
                format!("File created successfully at: {arg}")
            }
            Tool::Grep | Tool::Glob => {
                let k = self.rng.range(0, 12);
                let files: Vec<String> = (0..k)
                    .map(|_| format!("{}/{}", th.place.cwd, text::file(&mut self.rng)))
                    .collect();
                if tool == Tool::Grep {
                    w.str("mode", "files_with_matches");
                }
                {
                    let mut a = w.arr("filenames");
                    for f in &files {
                        a.item_str(f);
                    }
                    a.end_array();
                }
                w.num("numFiles", k)
                    .num("durationMs", self.rng.range(1, 400));
                if tool == Tool::Glob {
                    w.bool("truncated", false);
                }
                if k == 0 {
                    "No files found".to_string()
                } else {
                    format!("Found {k} files\n{}", files.join("\n"))
                }
            }
            Tool::TodoWrite | Tool::Task => {
                w.raw("oldTodos", "[]").raw("newTodos", "[]");
                "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress.".to_string()
            }
        };
        w.end();
        ToolRun {
            content,
            content_blocks: Vec::new(),
            result_json: String::from_utf8(b).unwrap_or_default(),
            is_error,
            decoys,
        }
    }

    /// Runs a sub-agent for a Task call, writes the parent's tool result, and returns the
    /// worktree place the parent moves to when the agent ran in one.
    fn task(
        &mut self,
        th: &mut Thread,
        tool_id: &str,
        tool_line: &str,
        prompt: &str,
    ) -> io::Result<Option<Place>> {
        let wt = if self.era >= Era::V21New && self.rng.chance(0.4) {
            self.env.world.agent_worktree(&mut self.rng, &th.place)
        } else {
            None
        };
        let agent_place = wt.clone().unwrap_or_else(|| th.place.clone());
        let started = self.t;
        let (agent_id, sink) = match self.era {
            Era::V10 => (None, Some(th.sink)),
            Era::V20 => {
                let id = self.rng.hex(8);
                let rel = format!("{}/agent-{id}.jsonl", self.proj_rel);
                let s = self.open(&rel, FileKind::ClaudeAgentFlat, Some(&id))?;
                (Some(id), s)
            }
            Era::V21 => {
                let id = self.rng.hex(7);
                let rel = format!("{}/{}/subagents/agent-{id}.jsonl", self.proj_rel, self.sid);
                let s = self.open(&rel, FileKind::ClaudeSubagent, Some(&id))?;
                (Some(id), s)
            }
            Era::V21New => {
                let id = format!("a{}", self.rng.hex(16));
                let workflow = self.rng.chance(0.1);
                let dir = if workflow {
                    format!(
                        "{}/{}/subagents/workflows/wf-{}",
                        self.proj_rel,
                        self.sid,
                        self.rng.hex(8)
                    )
                } else {
                    format!("{}/{}/subagents", self.proj_rel, self.sid)
                };
                let rel = format!("{dir}/agent-{id}.jsonl");
                let s = self.open(&rel, FileKind::ClaudeSubagent, Some(&id))?;
                if s.is_some() {
                    self.meta_sidecar(&dir, &id, wt.as_ref())?;
                    if workflow {
                        self.journal(&dir, &id)?;
                    }
                }
                (Some(id), s)
            }
        };
        let Some(sink) = sink else {
            return Ok(None);
        };
        let mut at = Thread {
            sink,
            parent: None,
            sidechain: true,
            agent_id: agent_id.clone(),
            place: agent_place,
        };
        let mut mc = MarkerCounts::default();
        let final_text = self.agent_body(&mut at, prompt, &mut mc)?;
        if sink != th.sink {
            self.close(sink)?;
        }
        if self.stopped {
            return Ok(None);
        }
        // The parent's tool result echoes the agent's final text (markers there are decoys).
        let id_note = agent_id.as_deref().map(|a| {
            format!("agentId: {a} (for resuming to continue this agent's work if needed)")
        });
        let mut b = Vec::new();
        let mut w = W::object(&mut b);
        w.str("status", "completed").str("prompt", prompt);
        if let Some(a) = &agent_id {
            w.str("agentId", a);
        }
        {
            let mut c = w.arr("content");
            c.item_obj()
                .str("type", "text")
                .str("text", &final_text)
                .end();
            c.end_array();
        }
        let dur = self.t.saturating_sub(started);
        w.num("totalDurationMs", dur)
            .num("totalTokens", self.rng.range(2_000, 90_000));
        w.num("totalToolUseCount", self.rng.range(0, 30));
        if let Some(p) = &wt {
            w.str("worktreePath", &p.cwd)
                .str("worktreeBranch", &p.branch);
        }
        w.end();
        let mut blocks = vec![final_text];
        blocks.extend(id_note);
        let run = ToolRun {
            content: String::new(),
            content_blocks: blocks,
            result_json: String::from_utf8(b).unwrap_or_default(),
            is_error: false,
            decoys: 2 * mc.markers,
        };
        let restore = wt.map(|p| std::mem::replace(&mut th.place, p));
        self.tool_result(th, tool_line, tool_id, &run)?;
        // The parent stays in the worktree for the next step; the caller restores `old`.
        Ok(restore)
    }

    fn agent_body(
        &mut self,
        at: &mut Thread,
        prompt: &str,
        mc: &mut MarkerCounts,
    ) -> io::Result<String> {
        let start_lines = self.lines(at.sink);
        self.user_text(at, prompt, false, 0)?;
        let target = self.rng.log_uniform(4, 150);
        let mut final_text = String::new();
        loop {
            if self.stopped {
                break;
            }
            let msg = (self.msg_id(), self.req_id());
            if self.lines(at.sink) - start_lines >= target {
                let t = text::assistant_text(&mut self.rng, MARKER_RATE * 2.0, mc);
                self.assistant_block(at, &msg, Block::Text(&t), *mc)?;
                final_text = t;
                break;
            }
            if self.rng.chance(0.3) {
                let mut m = MarkerCounts::default();
                let t = text::assistant_text(&mut self.rng, MARKER_RATE, &mut m);
                self.assistant_block(at, &msg, Block::Text(&t), m)?;
            }
            let tool = Tool::pick(&mut self.rng);
            let id = self.tool_id();
            let (input, arg) = self.tool_input(tool, at);
            let line = self.assistant_block(
                at,
                &msg,
                Block::ToolUse {
                    id: &id,
                    name: tool.name(),
                    input: &input,
                },
                MarkerCounts::default(),
            )?;
            let r = self.run_tool(tool, at, &arg);
            self.tool_result(at, &line, &id, &r)?;
        }
        Ok(final_text)
    }

    fn meta_sidecar(&mut self, dir: &str, id: &str, wt: Option<&Place>) -> io::Result<()> {
        let rel = format!("{dir}/agent-{id}.meta.json");
        let Some(s) = self.open(&rel, FileKind::ClaudeAgentMeta, Some(id))? else {
            return Ok(());
        };
        let mut b = Vec::new();
        let mut w = W::object(&mut b);
        w.str("agentType", "general-purpose")
            .str("description", "Investigate a subsystem");
        if let Some(p) = wt {
            w.str("worktreePath", &p.cwd);
        }
        w.end();
        if let Some(sink) = self.sinks[s].as_mut() {
            sink.document(&b, &mut self.budget)?;
        }
        if self.budget.exhausted() {
            self.stopped = true;
        }
        self.close(s)
    }

    fn journal(&mut self, dir: &str, id: &str) -> io::Result<()> {
        let rel = format!("{dir}/journal.jsonl");
        let Some(s) = self.open(&rel, FileKind::ClaudeWorkflowJournal, None)? else {
            return Ok(());
        };
        let key = format!("v2:{}", self.rng.hex(12));
        let th = Thread {
            sink: s,
            parent: None,
            sidechain: true,
            agent_id: None,
            place: Place {
                cwd: String::new(),
                branch: String::new(),
                repo: None,
            },
        };
        let mut b = Vec::new();
        let mut w = W::object(&mut b);
        w.str("type", "started").str("key", &key).str("agentId", id);
        w.end();
        self.put(&th, &b, None, false, MarkerCounts::default(), 0)?;
        b.clear();
        let mut w = W::object(&mut b);
        w.str("type", "result").str("key", &key).str("agentId", id);
        w.raw("result", "{\"summary\":\"done\"}");
        w.end();
        self.put(&th, &b, None, false, MarkerCounts::default(), 0)?;
        self.close(s)
    }
}

#[derive(Clone, Copy)]
enum Block<'a> {
    Text(&'a str),
    Thinking(&'a str),
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a str,
    },
}

struct ToolRun {
    content: String,
    content_blocks: Vec<String>,
    result_json: String,
    is_error: bool,
    decoys: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Bash,
    Read,
    Edit,
    Write,
    Grep,
    Glob,
    TodoWrite,
    Task,
}

impl Tool {
    fn pick(rng: &mut Rng) -> Tool {
        [
            Tool::Bash,
            Tool::Read,
            Tool::Edit,
            Tool::Write,
            Tool::Grep,
            Tool::Glob,
            Tool::TodoWrite,
        ][rng.weighted(&[36, 26, 12, 5, 10, 6, 5])]
    }

    fn name(self) -> &'static str {
        match self {
            Tool::Bash => "Bash",
            Tool::Read => "Read",
            Tool::Edit => "Edit",
            Tool::Write => "Write",
            Tool::Grep => "Grep",
            Tool::Glob => "Glob",
            Tool::TodoWrite => "TodoWrite",
            Tool::Task => "Task",
        }
    }
}

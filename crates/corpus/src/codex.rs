//! Codex CLI rollouts: the envelope format (`session_meta`, `turn_context`, `response_item`,
//! `event_msg`) and the legacy pre-envelope format.

use std::io;

use crate::claude::{
    Env, SessionResult, INVALID_LINES, INVALID_RATE, MARKER_RATE, OUT_OF_ORDER_RATE, TORN_RATE,
};
use crate::clock::{iso, parts};
use crate::json::{push_str, W};
use crate::rng::Rng;
use crate::sink::{Budget, Sink};
use crate::text::{self, MarkerCounts};
use crate::world::Place;
use crate::FileKind;

/// Session-level options.
pub(crate) struct Opts {
    pub(crate) budget: Option<u64>,
    pub(crate) start_ms: u64,
    pub(crate) legacy: bool,
    /// Offset of the machine's local time from UTC, used for file names and date folders.
    pub(crate) tz_offset_ms: i64,
    /// Many invalid lines, frequent cwd switches and a torn last line.
    pub(crate) quirks: bool,
}

struct Gen<'e> {
    env: &'e Env<'e>,
    rng: Rng,
    t: u64,
    budget: Budget,
    stopped: bool,
    sink: Sink,
    buf: Vec<u8>,
    invalid_rate: f64,
    switch_rate: f64,
}

fn local_name(start_ms: u64, tz_offset_ms: i64, id: &str, dated: bool) -> String {
    let local = (start_ms as i64 + tz_offset_ms).max(0) as u64;
    let p = parts(local);
    let stamp = format!(
        "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}",
        p.year, p.month, p.day, p.hour, p.minute, p.second
    );
    if dated {
        format!(
            "codex/sessions/{:04}/{:02}/{:02}/rollout-{stamp}-{id}.jsonl",
            p.year, p.month, p.day
        )
    } else {
        format!("codex/sessions/rollout-{stamp}-{id}.jsonl")
    }
}

/// Generates one Codex rollout file.
pub(crate) fn session(env: &Env<'_>, seed: u64, opts: Opts) -> io::Result<SessionResult> {
    let mut rng = Rng::new(seed);
    let (id, rel, kind) = if opts.legacy {
        let id = rng.uuid_v4();
        let dated = rng.chance(0.8);
        let rel = local_name(opts.start_ms, opts.tz_offset_ms, &id, dated);
        (id, rel, FileKind::CodexLegacy)
    } else {
        let id = rng.uuid_v7(opts.start_ms);
        let rel = local_name(opts.start_ms, opts.tz_offset_ms, &id, true);
        (id, rel, FileKind::CodexRollout)
    };
    let sink = Sink::create(env.root, &rel, kind, &id, None)?;
    let mut g = Gen {
        env,
        rng,
        t: opts.start_ms,
        budget: Budget::new(opts.budget),
        stopped: false,
        sink,
        buf: Vec::with_capacity(64 * 1024),
        invalid_rate: if opts.quirks { 0.02 } else { INVALID_RATE },
        switch_rate: if opts.quirks { 0.3 } else { 0.05 },
    };
    if opts.legacy {
        g.legacy(&id, opts.tz_offset_ms)?;
    } else {
        g.envelope(&id)?;
    }
    if !g.stopped && (opts.quirks || g.rng.chance(TORN_RATE)) {
        g.torn()?;
    }
    let (entry, max_line) = g.sink.finish()?;
    Ok(SessionResult::of(vec![entry], max_line))
}

impl Gen<'_> {
    fn stamp(&mut self) -> String {
        self.t += if self.rng.chance(0.03) {
            self.rng.range(60_000, 1_200_000)
        } else {
            self.rng.range(5, 12_000)
        };
        if self.rng.chance(OUT_OF_ORDER_RATE) {
            iso(self.t - self.rng.range(20_000, 90_000))
        } else {
            iso(self.t)
        }
    }

    fn take(&mut self) -> Vec<u8> {
        let mut b = std::mem::take(&mut self.buf);
        b.clear();
        b
    }

    fn put(
        &mut self,
        b: Vec<u8>,
        ts: Option<&str>,
        cwd: Option<&str>,
        markers: MarkerCounts,
    ) -> io::Result<()> {
        if !self.stopped {
            if self.rng.chance(self.invalid_rate) {
                let bad = *self.rng.pick(INVALID_LINES);
                self.sink.invalid_line(bad.as_bytes(), &mut self.budget)?;
            }
            if !self.budget.exhausted() {
                if let Some(ts) = ts {
                    self.sink.note_ts(ts);
                }
                if let Some(c) = cwd {
                    self.sink.note_cwd(c);
                }
                self.sink.note_markers(markers);
                self.sink.line(&b, &mut self.budget)?;
            }
            self.stopped = self.budget.exhausted();
        }
        self.buf = b;
        Ok(())
    }

    /// Writes one enveloped line whose payload is produced by `f`.
    fn env_line(
        &mut self,
        ty: &str,
        cwd: Option<&str>,
        markers: MarkerCounts,
        f: impl FnOnce(&mut W<'_>),
    ) -> io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        let ts = self.stamp();
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.str("timestamp", &ts).str("type", ty);
        {
            let mut p = w.obj("payload");
            f(&mut p);
            p.end();
        }
        w.end();
        self.put(b, Some(&ts), cwd, markers)
    }

    fn shell_output(&mut self) -> String {
        let n = if self.rng.chance(0.03) {
            0
        } else {
            (self.rng.lognormal(600.0, 1.7) as usize).min(self.env.max_tool_output)
        };
        let out = self.env.pool.slice(&mut self.rng, n);
        let mut inner = Vec::with_capacity(out.len() + 64);
        let mut w = W::object(&mut inner);
        w.str("output", out);
        {
            let mut m = w.obj("metadata");
            m.num("exit_code", u64::from(self.rng.chance(0.1)));
            m.float("duration_seconds", self.rng.f64() * 5.0);
            m.end();
        }
        w.end();
        String::from_utf8(inner).unwrap_or_default()
    }

    fn shell_args(&mut self, place: &Place) -> String {
        let cmd = match self.rng.index(4) {
            0 => "cargo test".to_string(),
            1 => format!("rg -n {} .", text::ident(&mut self.rng)),
            2 => format!("sed -n '1,120p' {}", text::file(&mut self.rng)),
            _ => "git status --short".to_string(),
        };
        let mut b = Vec::new();
        let mut w = W::object(&mut b);
        {
            let mut a = w.arr("command");
            a.item_str("bash").item_str("-lc").item_str(&cmd);
            a.end_array();
        }
        w.str("workdir", &place.cwd);
        w.end();
        String::from_utf8(b).unwrap_or_default()
    }

    fn envelope(&mut self, id: &str) -> io::Result<()> {
        let world = self.env.world;
        let mut place = world.start(&mut self.rng);
        let version = *self.rng.pick(&["0.66.0", "0.77.0", "0.98.0"]);
        let model = *self
            .rng
            .pick(&["gpt-5.1-codex-max", "gpt-5-codex", "gpt-5.2"]);
        let source = *self.rng.pick(&[
            "\"cli\"",
            "\"cli\"",
            "\"cli\"",
            "\"vscode\"",
            "\"exec\"",
            "{\"subagent\":\"review\"}",
        ]);
        let start = iso(self.t);
        let git = place.repo.map(|i| &world.repos[i]);
        let with_url = self.rng.chance(0.7);
        let branch = place.branch.clone();
        let cwd0 = place.cwd.clone();
        // session_meta carries the start cwd and (once) the branch.
        if !self.stopped {
            let ts = iso(self.t);
            let mut b = self.take();
            let mut w = W::object(&mut b);
            w.str("timestamp", &ts).str("type", "session_meta");
            {
                let mut p = w.obj("payload");
                p.str("id", id).str("timestamp", &start).str("cwd", &cwd0);
                p.str("originator", "codex_cli_rs")
                    .str("cli_version", version);
                p.null("instructions")
                    .raw("source", source)
                    .str("model_provider", "openai");
                if let Some(r) = git {
                    let mut g = p.obj("git");
                    g.str("commit_hash", &r.commit);
                    if branch != "HEAD" {
                        g.str("branch", &branch);
                    }
                    if with_url {
                        g.str("repository_url", &r.origin);
                    }
                    g.end();
                }
                p.end();
            }
            w.end();
            if git.is_some() && branch != "HEAD" {
                self.sink.note_branch(&branch);
            }
            self.put(b, Some(&ts), Some(&cwd0), MarkerCounts::default())?;
        }
        let env_ctx = format!(
            "<environment_context>\n  <cwd>{cwd0}</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>zsh</shell>\n</environment_context>"
        );
        self.env_line("response_item", None, MarkerCounts::default(), |p| {
            p.str("type", "message").str("role", "user");
            let mut c = p.arr("content");
            c.item_obj()
                .str("type", "input_text")
                .str("text", &env_ctx)
                .end();
            c.end_array();
        })?;
        let target = self.rng.log_uniform(20, 2000);
        let mut turn = 0u64;
        while !self.stopped && self.sink.entry.lines < target {
            if turn > 0 && self.rng.chance(self.switch_rate) {
                place = world.switch(&mut self.rng, &place);
            }
            self.turn(&place, model, turn)?;
            turn += 1;
        }
        Ok(())
    }

    fn turn(&mut self, place: &Place, model: &str, turn: u64) -> io::Result<()> {
        let prompt = text::prompt(&mut self.rng);
        let turn_id = format!("{turn}");
        self.env_line("response_item", None, MarkerCounts::default(), |p| {
            p.str("type", "message").str("role", "user");
            let mut c = p.arr("content");
            c.item_obj()
                .str("type", "input_text")
                .str("text", &prompt)
                .end();
            c.end_array();
        })?;
        self.env_line("event_msg", None, MarkerCounts::default(), |p| {
            p.str("type", "user_message")
                .str("message", &prompt)
                .raw("images", "[]");
        })?;
        let effort = *self.rng.pick(&["low", "medium", "high"]);
        for _ in 0..self.rng.range(1, 3) {
            self.env_line(
                "turn_context",
                Some(&place.cwd),
                MarkerCounts::default(),
                |p| {
                    p.str("cwd", &place.cwd)
                        .str("approval_policy", "on-request");
                    {
                        let mut s = p.obj("sandbox_policy");
                        s.str("type", "workspace-write")
                            .bool("network_access", false);
                        s.bool("exclude_tmpdir_env_var", false)
                            .bool("exclude_slash_tmp", false);
                        s.end();
                    }
                    p.str("model", model)
                        .str("effort", effort)
                        .str("summary", "auto");
                },
            )?;
        }
        self.env_line("event_msg", None, MarkerCounts::default(), |p| {
            p.str("type", "task_started")
                .str("turn_id", &turn_id)
                .num("model_context_window", 272_000);
        })?;
        let steps = (self.rng.lognormal(2.0, 0.9) as u64).min(14);
        let mut total = 0u64;
        for _ in 0..steps {
            if self.stopped {
                return Ok(());
            }
            if self.rng.chance(0.5) {
                let mut s = String::from("**");
                text::sentence(&mut self.rng, &mut s);
                s.push_str("**");
                let n = self.rng.range(200, 1200) as usize;
                let enc = self.rng.alnum(n);
                self.env_line("event_msg", None, MarkerCounts::default(), |p| {
                    p.str("type", "agent_reasoning").str("text", &s);
                })?;
                self.env_line("response_item", None, MarkerCounts::default(), |p| {
                    p.str("type", "reasoning");
                    {
                        let mut a = p.arr("summary");
                        a.item_obj()
                            .str("type", "summary_text")
                            .str("text", &s)
                            .end();
                        a.end_array();
                    }
                    p.null("content").str("encrypted_content", &enc);
                })?;
            }
            if self.rng.chance(0.03) {
                let (c1, c2) = (self.rng.hex(40), self.rng.hex(40));
                self.env_line("response_item", None, MarkerCounts::default(), |p| {
                    p.str("type", "ghost_snapshot");
                    let mut g = p.obj("ghost_commit");
                    g.str("id", &c1).str("parent", &c2);
                    g.raw("preexisting_untracked_files", "[]")
                        .raw("preexisting_untracked_dirs", "[]");
                    g.end();
                })?;
            }
            let call_id = format!("call_{}", self.rng.alnum(24));
            let args = self.shell_args(place);
            let output = self.shell_output();
            let name = *self.rng.pick(&["shell", "shell", "shell_command"]);
            self.env_line("response_item", None, MarkerCounts::default(), |p| {
                p.str("type", "function_call")
                    .str("name", name)
                    .str("arguments", &args);
                p.str("call_id", &call_id);
            })?;
            self.env_line("response_item", None, MarkerCounts::default(), |p| {
                p.str("type", "function_call_output")
                    .str("call_id", &call_id)
                    .str("output", &output);
            })?;
            let (inp, out) = (self.rng.range(1_000, 60_000), self.rng.range(10, 4_000));
            total += inp + out;
            let null_info = self.rng.chance(0.1);
            self.env_line("event_msg", None, MarkerCounts::default(), |p| {
                p.str("type", "token_count");
                if null_info {
                    p.null("info");
                } else {
                    let mut i = p.obj("info");
                    for key in ["total_token_usage", "last_token_usage"] {
                        let t = if key == "total_token_usage" {
                            total
                        } else {
                            inp + out
                        };
                        let mut u = i.obj(key);
                        u.num("input_tokens", inp)
                            .num("cached_input_tokens", inp / 2);
                        u.num("output_tokens", out)
                            .num("reasoning_output_tokens", out / 3);
                        u.num("total_tokens", t);
                        u.end();
                    }
                    i.num("model_context_window", 272_000);
                    i.end();
                }
                let mut r = p.obj("rate_limits");
                {
                    let mut pr = r.obj("primary");
                    pr.float("used_percent", 12.0).num("window_minutes", 300);
                    pr.num("resets_at", 1_765_328_124);
                    pr.end();
                }
                r.null("plan_type");
                r.end();
            })?;
        }
        let mut mc = MarkerCounts::default();
        let answer = text::assistant_text(&mut self.rng, MARKER_RATE, &mut mc);
        self.env_line("response_item", None, mc, |p| {
            p.str("type", "message").str("role", "assistant");
            let mut c = p.arr("content");
            c.item_obj()
                .str("type", "output_text")
                .str("text", &answer)
                .end();
            c.end_array();
        })?;
        if !self.stopped {
            self.sink.entry.echoed_markers += mc.markers;
        }
        self.env_line("event_msg", None, MarkerCounts::default(), |p| {
            p.str("type", "agent_message").str("message", &answer);
        })?;
        if !self.stopped {
            self.sink.entry.echoed_markers += mc.markers;
        }
        self.env_line("event_msg", None, MarkerCounts::default(), |p| {
            p.str("type", "task_complete")
                .str("turn_id", &turn_id)
                .str("last_agent_message", &answer);
        })
    }

    fn legacy(&mut self, id: &str, tz_offset_ms: i64) -> io::Result<()> {
        let world = self.env.world;
        let place = world.start(&mut self.rng);
        let local = iso((self.t as i64 + tz_offset_ms).max(0) as u64);
        let git = place.repo.map(|i| &world.repos[i]);
        let mut b = self.take();
        let mut w = W::object(&mut b);
        let early = self.rng.chance(0.5);
        w.str("id", id).str("timestamp", &local);
        let mut branch_noted = None;
        if early {
            w.null("instructions");
            if let Some(r) = git {
                let mut g = w.obj("git");
                g.str("commit_hash", &r.commit);
                if place.branch != "HEAD" {
                    g.str("branch", &place.branch);
                    branch_noted = Some(place.branch.clone());
                }
                g.str("repository_url", &r.origin);
                g.end();
            }
        } else {
            w.str("cwd", &place.cwd).str("originator", "codex_cli_rs");
            w.str(
                "cli_version",
                self.rng.pick(&["0.34.0", "0.36.0", "0.39.0"])[..].as_ref(),
            );
            w.str("instructions", "Be terse.");
        }
        w.end();
        if let Some(br) = branch_noted {
            self.sink.note_branch(&br);
        }
        let header_cwd = (!early).then(|| place.cwd.clone());
        self.put(b, None, header_cwd.as_deref(), MarkerCounts::default())?;
        self.state()?;
        let env_ctx = format!(
            "<environment_context>\n  <cwd>{}</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n</environment_context>",
            place.cwd
        );
        self.legacy_msg(
            "user",
            "input_text",
            &env_ctx,
            Some(&place.cwd),
            MarkerCounts::default(),
        )?;
        let target = self.rng.log_uniform(10, 400);
        while !self.stopped && self.sink.entry.lines < target {
            let p = text::prompt(&mut self.rng);
            self.legacy_msg("user", "input_text", &p, None, MarkerCounts::default())?;
            self.state()?;
            for _ in 0..self.rng.range(0, 4) {
                let call_id = format!("call_{}", self.rng.alnum(12));
                let args = self.shell_args(&place);
                let out = self.shell_output();
                let local_shell = self.rng.chance(0.3);
                let mut b = self.take();
                let mut w = W::object(&mut b);
                if local_shell {
                    w.str("type", "local_shell_call")
                        .str("id", &format!("lsc_{}", self.rng.alnum(8)));
                    w.str("call_id", &call_id).str("status", "completed");
                    let mut a = w.obj("action");
                    a.str("type", "exec");
                    {
                        let mut c = a.arr("command");
                        c.item_str("cargo").item_str("test");
                        c.end_array();
                    }
                    a.num("timeout_ms", 60_000).null("working_directory");
                    a.end();
                } else {
                    w.str("type", "function_call")
                        .str("name", "shell")
                        .str("arguments", &args);
                    w.str("call_id", &call_id);
                }
                w.end();
                self.put(b, None, None, MarkerCounts::default())?;
                let mut b = self.take();
                let mut w = W::object(&mut b);
                w.str("type", "function_call_output")
                    .str("call_id", &call_id)
                    .str("output", &out);
                w.end();
                self.put(b, None, None, MarkerCounts::default())?;
            }
            let mut mc = MarkerCounts::default();
            let answer = text::assistant_text(&mut self.rng, MARKER_RATE, &mut mc);
            self.legacy_msg("assistant", "output_text", &answer, None, mc)?;
            self.state()?;
        }
        Ok(())
    }

    fn state(&mut self) -> io::Result<()> {
        let mut b = self.take();
        b.extend_from_slice(b"{\"record_type\":\"state\"}");
        self.put(b, None, None, MarkerCounts::default())
    }

    fn legacy_msg(
        &mut self,
        role: &str,
        kind: &str,
        text: &str,
        cwd: Option<&str>,
        mc: MarkerCounts,
    ) -> io::Result<()> {
        let mut b = self.take();
        let mut w = W::object(&mut b);
        w.str("type", "message");
        if role == "assistant" {
            w.str("id", &format!("msg_{}", self.rng.alnum(16)));
        } else {
            w.null("id");
        }
        w.str("role", role);
        {
            let mut c = w.arr("content");
            c.item_obj().str("type", kind).str("text", text).end();
            c.end_array();
        }
        w.end();
        self.put(b, None, cwd, mc)
    }

    fn torn(&mut self) -> io::Result<()> {
        let mut b = self.take();
        b.extend_from_slice(b"{\"timestamp\":\"");
        b.extend_from_slice(iso(self.t + 100).as_bytes());
        b.extend_from_slice(
            b"\",\"type\":\"event_msg\",\"payload\":{\"type\":\"agent_message\",\"message\":",
        );
        let mut s = String::new();
        text::sentence(&mut self.rng, &mut s);
        push_str(&mut b, &s);
        let cut = 1 + self.rng.index(b.len() - 1);
        self.sink.torn_line(&b[..cut], &mut self.budget)?;
        self.buf = b;
        Ok(())
    }
}

//! What was spent, grouped: `transcope usage --by …`.
//!
//! Each model request counts once (the index keeps one row per request key) in the
//! scope that was in force when it was spent. Costs are summed request by request (a
//! price list's tiers apply to one request), by a pricer the caller gives: a request
//! whose model has no price adds nothing to `cost_usd` and is counted in `unpriced`;
//! a group where no request is priced has `cost_usd: null`, never 0.

use std::collections::HashMap;

use rusqlite::params;
use serde_json::{Map, Value};
use transcope_core::Tokens;

use crate::{Index, IndexError};

/// A `--by` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UsageKey {
    /// `project_id` in force.
    Project,
    /// `worktree` in force.
    Worktree,
    /// `branch` in force.
    Branch,
    /// `task` in force.
    Task,
    /// The session (a sub-agent is its own).
    Session,
    /// The root session (a sub-agent's parent).
    RootSession,
    /// The model.
    Model,
    /// The UTC day (`YYYY-MM-DD`).
    Day,
}

impl UsageKey {
    /// The name `--by` takes.
    pub fn parse(s: &str) -> Option<UsageKey> {
        Some(match s {
            "project" => UsageKey::Project,
            "worktree" => UsageKey::Worktree,
            "branch" => UsageKey::Branch,
            "task" => UsageKey::Task,
            "session" => UsageKey::Session,
            "root-session" => UsageKey::RootSession,
            "model" => UsageKey::Model,
            "day" => UsageKey::Day,
            _ => return None,
        })
    }

    /// The JSON key (cli.md).
    pub const fn json_key(self) -> &'static str {
        match self {
            UsageKey::Project => "project_id",
            UsageKey::Worktree => "worktree",
            UsageKey::Branch => "branch",
            UsageKey::Task => "task",
            UsageKey::Session => "session",
            UsageKey::RootSession => "root_session",
            UsageKey::Model => "model",
            UsageKey::Day => "day",
        }
    }
}

/// Which requests.
#[derive(Clone, Debug, Default)]
pub struct UsageFilter {
    /// Spent at or after (microseconds since the epoch).
    pub since: Option<i64>,
    /// Spent at or before.
    pub until: Option<i64>,
    /// By this session only.
    pub session: Option<String>,
    /// Under this task only.
    pub task: Option<String>,
    /// In this project only.
    pub project: Option<String>,
}

/// One group's totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UsageGroup {
    /// The group's value of each `--by` key, in order (`None`: not known, e.g. no
    /// model named).
    pub keys: Vec<Option<String>>,
    /// The tokens summed.
    pub tokens: Tokens,
    /// Requests counted.
    pub messages: u64,
    /// The cost of the priced requests; `None` when none is priced.
    pub cost_usd: Option<f64>,
    /// Requests whose model has no price.
    pub unpriced: u64,
}

impl UsageGroup {
    /// The `--json` object: the `by` keys, then the counts (cli.md).
    pub fn to_json(&self, by: &[UsageKey]) -> Value {
        let mut m = Map::new();
        for (k, v) in by.iter().zip(&self.keys) {
            m.insert(
                k.json_key().into(),
                v.clone().map_or(Value::Null, Value::String),
            );
        }
        let t = &self.tokens;
        for (k, v) in [
            ("input_tokens", t.input),
            ("output_tokens", t.output),
            ("cache_creation_input_tokens", t.cache_creation),
            ("cache_read_input_tokens", t.cache_read),
            ("reasoning_output_tokens", t.reasoning_output),
            ("total_tokens", t.total()),
            ("messages", self.messages),
        ] {
            m.insert(k.into(), Value::from(v));
        }
        m.insert(
            "cost_usd".into(),
            self.cost_usd
                .map_or(Value::Null, |c| Value::from((c * 1e6).round() / 1e6)),
        );
        m.insert("unpriced_messages".into(), Value::from(self.unpriced));
        Value::Object(m)
    }

    fn add(&mut self, t: &Tokens, cost: Option<f64>) {
        self.tokens.add(t);
        self.messages += 1;
        match cost {
            Some(c) => *self.cost_usd.get_or_insert(0.0) += c,
            None => self.unpriced += 1,
        }
    }

    /// Add `other`'s totals (a table's total row): its cost when it has one.
    pub fn absorb(&mut self, other: &UsageGroup) {
        self.tokens.add(&other.tokens);
        self.messages += other.messages;
        self.unpriced += other.unpriced;
        if let Some(c) = other.cost_usd {
            *self.cost_usd.get_or_insert(0.0) += c;
        }
    }
}

/// The UTC day of an instant.
fn day(micros: i64) -> String {
    let t = transcope_core::Instant::from_unix_micros(micros).to_python_isoformat();
    t[..10].to_owned()
}

impl Index {
    /// The requests `filter` keeps, grouped by `by` (in key order), each priced by
    /// `price(model, tokens)`; with `by` empty, one group of everything.
    pub fn usage(
        &self,
        by: &[UsageKey],
        filter: &UsageFilter,
        price: &dyn Fn(Option<&str>, &Tokens) -> Option<f64>,
    ) -> Result<Vec<UsageGroup>, IndexError> {
        let sql = |e| self.sqlite(e);
        let mut st = self
            .conn()
            .prepare_cached(
                "SELECT session, root_session, at_us, model, input_tokens, output_tokens,
                        cache_creation_input_tokens, cache_creation_1h_input_tokens,
                        cache_read_input_tokens, reasoning_output_tokens,
                        project_id, worktree, branch, task
                 FROM usage
                 WHERE (?1 IS NULL OR at_us >= ?1) AND (?2 IS NULL OR at_us <= ?2)
                   AND (?3 IS NULL OR session = ?3) AND (?4 IS NULL OR task = ?4)
                   AND (?5 IS NULL OR project_id = ?5)",
            )
            .map_err(sql)?;
        let mut groups: HashMap<Vec<Option<String>>, UsageGroup> = HashMap::new();
        let mut q = st
            .query(params![
                filter.since,
                filter.until,
                filter.session,
                filter.task,
                filter.project
            ])
            .map_err(sql)?;
        let n = |v: i64| v.max(0) as u64;
        while let Some(r) = q.next().map_err(sql)? {
            let get = |i: usize| r.get::<_, Option<String>>(i).map_err(sql);
            let num = |i: usize| r.get::<_, i64>(i).map(n).map_err(sql);
            let tokens = Tokens {
                input: num(4)?,
                output: num(5)?,
                cache_creation: num(6)?,
                cache_creation_1h: num(7)?,
                cache_read: num(8)?,
                reasoning_output: num(9)?,
            };
            let model = get(3)?;
            let at_us: Option<i64> = r.get(2).map_err(sql)?;
            let mut keys = Vec::with_capacity(by.len());
            for k in by {
                keys.push(match k {
                    UsageKey::Project => get(10)?,
                    UsageKey::Worktree => get(11)?,
                    UsageKey::Branch => get(12)?,
                    UsageKey::Task => get(13)?,
                    UsageKey::Session => get(0)?,
                    UsageKey::RootSession => get(1)?,
                    UsageKey::Model => model.clone(),
                    UsageKey::Day => at_us.map(day),
                });
            }
            let cost = price(model.as_deref(), &tokens);
            match groups.get_mut(&keys) {
                Some(g) => g.add(&tokens, cost),
                None => {
                    let mut g = UsageGroup {
                        keys: keys.clone(),
                        ..UsageGroup::default()
                    };
                    g.add(&tokens, cost);
                    groups.insert(keys, g);
                }
            }
        }
        let mut out: Vec<UsageGroup> = groups.into_values().collect();
        out.sort_by(|a, b| a.keys.cmp(&b.keys));
        Ok(out)
    }
}

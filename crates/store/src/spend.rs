//! What was spent, grouped: `transcope usage --by …`.
//!
//! Each model request counts once in the scope that was in force when it was spent.
//! Costs are summed request by request (a price list's tiers apply to one request), by
//! a [`Pricer`] the caller gives: a request whose model has no price adds nothing to
//! `cost_usd` and is counted in `unpriced`; a group where no request is priced has
//! `cost_usd: null`, never 0. A store sums its requests into parts (by scope, model,
//! day and price tier: [`Part`]) and [`group`] makes the groups asked for, the same
//! way for every store.

use std::collections::HashMap;

use serde_json::{Map, Value};
use transcope_core::Tokens;

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
    /// The machine that recorded the request (a fleet's rows; on one machine, its own
    /// name).
    Machine,
    /// The agent whose session spent it (`claude`, `codex`, …: the session's agent as
    /// its adapter names it; a sub-agent's is its own session's).
    Agent,
}

impl UsageKey {
    /// The name `--by` takes.
    pub fn parse(s: &str) -> Option<UsageKey> {
        UsageKey::ALL.into_iter().find(|k| k.name() == s)
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
            UsageKey::Machine => "machine",
            UsageKey::Agent => "agent",
        }
    }

    /// Every key, in the order `--help` lists them.
    pub const ALL: [UsageKey; 10] = [
        UsageKey::Project,
        UsageKey::Worktree,
        UsageKey::Branch,
        UsageKey::Task,
        UsageKey::Session,
        UsageKey::RootSession,
        UsageKey::Model,
        UsageKey::Day,
        UsageKey::Machine,
        UsageKey::Agent,
    ];

    /// The name `--by` takes ([`UsageKey::parse`]'s inverse).
    pub const fn name(self) -> &'static str {
        match self {
            UsageKey::Project => "project",
            UsageKey::Worktree => "worktree",
            UsageKey::Branch => "branch",
            UsageKey::Task => "task",
            UsageKey::Session => "session",
            UsageKey::RootSession => "root-session",
            UsageKey::Model => "model",
            UsageKey::Day => "day",
            UsageKey::Machine => "machine",
            UsageKey::Agent => "agent",
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

    /// Count one request of `t` tokens costing `cost` (`None`: not priced).
    pub fn add(&mut self, t: &Tokens, cost: Option<f64>) {
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

/// The UTC day of an instant (`YYYY-MM-DD`).
pub fn day(micros: i64) -> String {
    let t = transcope_core::Instant::from_unix_micros(micros).to_python_isoformat();
    t[..10].to_owned()
}

/// A day in microseconds.
pub const DAY_US: i64 = 86_400_000_000;

/// What prices requests: one request, or a sum of requests that all fall in one
/// price tier.
pub trait Pricer {
    /// The cost of one request of `model` (`None`: the model has no price).
    fn cost(&self, model: Option<&str>, tokens: &Tokens) -> Option<f64>;

    /// The cost of `sum`, the tokens of requests of `model` whose prompts (input,
    /// cache writes and reads) all select the tier a prompt of `prompt` tokens
    /// selects. Prices are linear within a tier, so this is the requests' costs
    /// summed (up to rounding).
    fn cost_in_tier(&self, model: Option<&str>, sum: &Tokens, prompt: u64) -> Option<f64>;

    /// Every tier threshold of the list, ascending, once each: a request's tier is
    /// decided by which of them its prompt is above.
    fn thresholds(&self) -> Vec<u64>;

    /// The list's fingerprint, when it has one (a store may keep sums priced by it).
    fn fingerprint(&self) -> Option<&str> {
        None
    }
}

/// A price list that prices nothing: every request is counted as unpriced.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unpriced;

impl Pricer for Unpriced {
    fn cost(&self, _: Option<&str>, _: &Tokens) -> Option<f64> {
        None
    }

    fn cost_in_tier(&self, _: Option<&str>, _: &Tokens, _: u64) -> Option<f64> {
        None
    }

    fn thresholds(&self) -> Vec<u64> {
        Vec::new()
    }
}

/// The scope of a [`Part`]: session, root session, project, worktree, branch, task.
pub type ScopeRow = [Option<String>; 6];

/// Requests summed by scope, model, day and machine, priced, with their session's
/// agent.
#[derive(Clone, Copy, Debug)]
pub struct Part<'a> {
    /// The scope they were spent in.
    pub scope: &'a ScopeRow,
    /// The model.
    pub model: Option<&'a str>,
    /// The UTC day number (microseconds / [`DAY_US`], floored).
    pub day: Option<i64>,
    /// The machine that recorded them (a fleet's rows).
    pub machine: Option<&'a str>,
    /// The agent of their session (`None`: the session is not known, or its agent is
    /// not recorded).
    pub agent: Option<&'a str>,
    /// Their sums and cost.
    pub sums: &'a UsageGroup,
}

/// The groups `by` makes of `parts` (those `filter`'s session, task and project keep;
/// its time window is the store's to apply), in key order. Parts are absorbed in the
/// order given: a store gives them in one order every time, so a cost is summed the
/// same way every time.
pub fn group<'a>(
    parts: impl IntoIterator<Item = Part<'a>>,
    by: &[UsageKey],
    filter: &UsageFilter,
) -> Vec<UsageGroup> {
    let wanted = |row: &ScopeRow| {
        let is = |f: &Option<String>, v: &Option<String>| v.is_none() || f == v;
        is(&row[0], &filter.session) && is(&row[5], &filter.task) && is(&row[2], &filter.project)
    };
    let mut groups: HashMap<Vec<Option<String>>, UsageGroup> = HashMap::new();
    for p in parts {
        if !wanted(p.scope) {
            continue;
        }
        let row = p.scope;
        let keys: Vec<Option<String>> = by
            .iter()
            .map(|k| match k {
                UsageKey::Session => row[0].clone(),
                UsageKey::RootSession => row[1].clone(),
                UsageKey::Project => row[2].clone(),
                UsageKey::Worktree => row[3].clone(),
                UsageKey::Branch => row[4].clone(),
                UsageKey::Task => row[5].clone(),
                UsageKey::Model => p.model.map(str::to_owned),
                UsageKey::Day => p.day.map(|d| self::day(d * DAY_US)),
                UsageKey::Machine => p.machine.map(str::to_owned),
                UsageKey::Agent => p.agent.map(str::to_owned),
            })
            .collect();
        match groups.get_mut(&keys) {
            Some(g) => g.absorb(p.sums),
            None => {
                groups.insert(
                    keys.clone(),
                    UsageGroup {
                        keys,
                        ..p.sums.clone()
                    },
                );
            }
        }
    }
    let mut out: Vec<UsageGroup> = groups.into_values().collect();
    out.sort_by(|a, b| a.keys.cmp(&b.keys));
    out
}

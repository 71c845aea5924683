//! # transcope-usage: what each request cost, on the session's timeline
//!
//! [`UsageStage`] takes the token usage the adapters put on entries
//! ([`transcope_core::Usage`]) and hands back one [`Spent`] per model request: its key
//! (what every copy of the request shares), its time, its model and its [`Tokens`].
//! Copies of a request that follow one another in a file (a streamed message's lines)
//! are handed on as one, merged as the index merges copies; any other copy is handed
//! on as it is, and the index keeps one by key.
//!
//! How an agent's records carry usage is its adapter's declaration
//! ([`UsageShape`](transcope_core::agent::UsageShape), handed to the stage in the
//! [`FileContext`]); no agent is named here:
//!
//! * **The key** ([`RequestKey`]): by default `<agent>:<message id>:<request id>`
//!   (or without the request id when there is none), the same in every file, so an
//!   index keeps one copy across the whole archive (the earliest), however often a
//!   resumed session replays the line; streamed chunks of one message share it. An
//!   agent whose message ids are the session's own keys by
//!   `<agent>:<session>:<message id>`. A request without a message id is keyed by its
//!   file position.
//! * **Running totals** ([`Usage::cumulative`](transcope_core::Usage)): the stage
//!   counts a total's growth since the previous one (kept in the checkpoint across
//!   appended pieces), so a repeated or replayed total counts nothing; the model is
//!   the last one named alone (a turn's context). For an agent whose sessions start
//!   at their meta record ([`UsageShape::starts_at_meta`]), totals stamped before it
//!   are a fork's copy of its source's and count nothing.
//!
//! The stage only reads; the composition attributes each [`Spent`] through the scope
//! log (`scope_at` at its time, as a marker is) and records it.
//!
//! ```
//! use transcope_core::adapter::EntrySink;
//! use transcope_core::{Entry, FileContext, Stage, Tokens, Usage};
//! use transcope_usage::UsageStage;
//! let mut s = UsageStage::default();
//! s.begin(&FileContext { path: std::path::Path::new("t"), key: Some("s1"), adapter: "claude", usage: Default::default(), resumed: false });
//! let tokens = Tokens { input: 3, output: 5, ..Tokens::default() };
//! let usage = Usage { message_id: Some("m1".into()), request_id: Some("r1".into()), tokens: Some(tokens), ..Usage::default() };
//! let e = Entry { usage: Some(usage), ..Entry::default() };
//! s.entry(&e);
//! s.entry(&e); // a streamed copy
//! let spent = s.take();
//! assert_eq!(spent.len(), 1, "a copy that follows is merged into the one before");
//! assert_eq!(spent[0].key, transcope_core::digest::request_key(&["claude:m1:r1"]));
//! assert_eq!(spent[0].copies, 2);
//! ```
#![warn(missing_docs)]

use serde_json::{json, Value};
use std::sync::Arc;
use transcope_core::adapter::{EntrySink, Probe};
use transcope_core::agent::{RequestKey, UsageShape};
use transcope_core::digest::request_key;
use transcope_core::{Entry, EntryKind, FileContext, Stage, Tokens};

/// The stage's checkpoint key.
pub const STAGE_NAME: &str = "usage";

/// One request's usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spent {
    /// What every copy of the request shares: its text key (see the crate docs) as
    /// [`transcope_core::digest::request_key`] stores it.
    pub key: u128,
    /// The record's time (when it is one).
    pub at: Option<transcope_core::Instant>,
    /// The model (shared by the requests of one file that name the same).
    pub model: Option<Arc<str>>,
    /// The counts.
    pub tokens: Tokens,
    /// How many copies of the request this is: a streamed message's copies that follow
    /// one another in a file are handed on as one, merged as the index merges copies.
    pub copies: u64,
}

/// The usage stage over one transcript (see the crate docs).
#[derive(Default)]
pub struct UsageStage {
    key: String,
    adapter: &'static str,
    /// How the adapter's agent carries usage.
    shape: UsageShape,
    /// The model last named alone (a turn's context).
    model: Option<Arc<str>>,
    /// The model last named by a request, shared by the requests that name it too.
    named: Option<Arc<str>>,
    /// The last running total seen.
    total: Option<Tokens>,
    /// When the session began (its first meta record, when the agent's sessions start
    /// there): running totals stamped before it are a fork's copy of its source's
    /// history.
    start: Option<transcope_core::Instant>,
    /// The last request keyed from a message and request id: its ids and key (a
    /// streamed message's copies follow one another).
    last: Option<(String, Option<String>, u128)>,
    spent: Vec<Spent>,
}

impl UsageStage {
    /// The requests found so far, handed on.
    pub fn take(&mut self) -> Vec<Spent> {
        std::mem::take(&mut self.spent)
    }
}

impl EntrySink for UsageStage {
    fn wants(&self, p: &Probe<'_>) -> bool {
        p.usage || p.kind == Some(EntryKind::Context)
    }

    fn entry(&mut self, e: &Entry<'_>) {
        if e.kind == Some(EntryKind::Meta) && self.start.is_none() && self.shape.starts_at_meta {
            self.start = e.time.as_str().and_then(transcope_core::timestamp::parse);
        }
        let Some(u) = &e.usage else {
            return;
        };
        if let Some(m) = u.model.as_deref().filter(|m| !m.is_empty()) {
            if u.tokens.is_none() {
                self.model = Some(m.into());
                return;
            }
        }
        let Some(tokens) = u.tokens else {
            return;
        };
        let at = e.time.as_str().and_then(transcope_core::timestamp::parse);
        let tokens = if u.cumulative {
            let delta = match &self.total {
                Some(before) => tokens.since(before),
                None => tokens,
            };
            self.total = Some(tokens);
            // A fork starts from a copy of its source's items, running totals
            // included, stamped as the source wrote them: they set where the fork's
            // own spending starts and count nothing (the source's file counts them).
            let replayed = match (self.start, at) {
                (Some(start), Some(t)) => t < start,
                _ => false,
            };
            if replayed {
                return;
            }
            delta
        } else {
            tokens
        };
        if tokens.is_zero() {
            return;
        }
        let a = self.adapter;
        let key = match u.message_id.as_deref().filter(|m| !m.is_empty()) {
            // Ids that are the session's own: scoped by it.
            Some(m) if self.shape.key == RequestKey::SessionMessage => {
                let session = e.session_id.as_deref().unwrap_or(&self.key);
                request_key(&[a, ":", session, ":", m])
            }
            Some(m) => match &self.last {
                Some((lm, lr, key)) if lm == m && lr.as_deref() == u.request_id.as_deref() => *key,
                _ => {
                    let r = u.request_id.as_deref();
                    let key = match r {
                        Some(r) => request_key(&[a, ":", m, ":", r]),
                        None => request_key(&[a, ":", m]),
                    };
                    // The strings' room is kept for the next request's ids.
                    let (lm, lr, k) = self.last.get_or_insert_with(Default::default);
                    lm.clear();
                    lm.push_str(m);
                    match (r, lr) {
                        (Some(r), Some(lr)) => {
                            lr.clear();
                            lr.push_str(r);
                        }
                        (r, lr) => *lr = r.map(str::to_owned),
                    }
                    *k = key;
                    key
                }
            },
            None => request_key(&[a, ":", &self.key, "#", &e.offset.to_string()]),
        };
        let model = match u.model.as_deref().filter(|m| !m.is_empty()) {
            Some(m) => Some(match &self.named {
                Some(n) if **n == *m => n.clone(),
                _ => self.named.insert(Arc::from(m)).clone(),
            }),
            None => self.model.clone(),
        };
        let new = Spent {
            key,
            at,
            model,
            tokens,
            copies: 1,
        };
        // The copy before is of the same request (a streamed message's next line):
        // merged here by the index's one rule (`merge_copy`: the earlier one's time
        // kept, the first on a tie, each count the largest). Only copies naming the
        // same model merge, so which copy's model the index keeps cannot depend on it.
        if let Some(last) = self.spent.last_mut() {
            if last.key == new.key && last.model == new.model {
                transcope_core::entry::merge_copy(last, &new);
                last.copies += 1;
                return;
            }
        }
        self.spent.push(new);
    }
}

fn tokens_json(t: &Tokens) -> Value {
    json!(t.counts())
}

fn tokens_of(v: &Value) -> Option<Tokens> {
    let a = v.as_array()?;
    let mut c = [0u64; 6];
    for (i, n) in c.iter_mut().enumerate() {
        *n = a.get(i).and_then(Value::as_u64)?;
    }
    Some(Tokens::from_counts(c))
}

/// Copies within one file: all of one session, root or not, read in file order (a
/// tie keeps the first); the time goes with the copy.
impl transcope_core::entry::RequestCopy for Spent {
    type Time = transcope_core::Instant;
    type Place = ();
    fn at(&self) -> Option<transcope_core::Instant> {
        self.at
    }
    fn is_root(&self) -> bool {
        false
    }
    fn place(&self) {}
    fn has_model(&self) -> bool {
        self.model.is_some()
    }
    fn tokens(&self) -> &Tokens {
        &self.tokens
    }
    fn tokens_mut(&mut self) -> &mut Tokens {
        &mut self.tokens
    }
    fn take_lead(&mut self, new: &Spent) {
        self.at = new.at;
    }
    fn take_model(&mut self, new: &Spent) {
        self.model.clone_from(&new.model);
    }
}

/// What the usage stage hands on after a read: each request's usage, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Requests(pub Vec<Spent>);

/// Builds the usage stage for each file; its stages hand on [`Requests`].
#[derive(Clone, Copy, Debug, Default)]
pub struct UsageFactory;

impl transcope_core::StageFactory for UsageFactory {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn build<'a>(
        &'a self,
        _: &transcope_core::BuildContext<'a>,
    ) -> Box<dyn transcope_core::Stage + 'a> {
        Box::new(UsageStage::default())
    }

    fn outputs(&self) -> Vec<std::any::TypeId> {
        vec![std::any::TypeId::of::<Requests>()]
    }
}

impl Stage for UsageStage {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    /// The [`Requests`] found.
    fn hand_on(&mut self, found: &mut transcope_core::Found) {
        found.put(Requests(self.take()));
    }

    fn begin(&mut self, file: &FileContext<'_>) {
        self.key = file.key.unwrap_or("").to_owned();
        self.adapter = file.adapter;
        self.shape = file.usage;
        self.last = None;
    }

    /// The model and running total an appended piece goes on from.
    fn checkpoint(&self) -> Value {
        if self.model.is_none() && self.total.is_none() && self.start.is_none() {
            return Value::Null;
        }
        json!({
            "model": self.model.as_deref(),
            "total": self.total.as_ref().map(tokens_json),
            "start": self.start.map(|t| t.unix_micros()),
        })
    }

    fn restore(&mut self, checkpoint: &Value) -> bool {
        match checkpoint {
            Value::Null => true,
            Value::Object(m) => {
                self.model = m.get("model").and_then(Value::as_str).map(Arc::from);
                self.total = m.get("total").and_then(tokens_of);
                self.start = m
                    .get("start")
                    .and_then(Value::as_i64)
                    .map(transcope_core::Instant::from_unix_micros);
                true
            }
            _ => false,
        }
    }
}

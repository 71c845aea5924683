//! The neutral entry model every adapter produces and every stage consumes.
//!
//! An [`Entry`] is what one transcript record means to transcope, whatever agent wrote
//! it: when (the time string verbatim), where (folder and branch, already reduced to the
//! reference's rules), who (session, agent, threading ids) and the assistant text a
//! marker stage scans. Fields borrow from the line when they can (`Cow`).

use std::borrow::Cow;

/// What kind of record an entry came from, in terms no agent owns: each adapter maps
/// its own record types onto these (its crate docs say how).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EntryKind {
    /// A message from the user.
    User,
    /// A message from the model (the only kind whose text may hold markers).
    Assistant,
    /// The agent's own bookkeeping (system notes, attachments, progress).
    System,
    /// A summary of earlier records.
    Summary,
    /// A session's header or metadata record.
    Meta,
    /// The context a turn runs in (its folder, model, settings).
    Context,
    /// A tool call, a tool's output, or another model item that is not a message.
    Tool,
    /// An event the agent logs (telemetry, token counts).
    Event,
    /// Anything else (unknown record types are kept, not dropped).
    Other,
}

/// The record's top-level `timestamp`, exactly as written.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum TimeValue<'a> {
    /// No `timestamp` key (or `null`).
    #[default]
    Missing,
    /// A JSON string, verbatim.
    Str(Cow<'a, str>),
    /// Another JSON value, as its compact JSON text (e.g. `7`, `true`, `[]`).
    Other(Cow<'a, str>),
}

impl TimeValue<'_> {
    /// The string form when the timestamp is a JSON string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            TimeValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Python truthiness of the value (markers keep `at` only when truthy).
    pub fn is_truthy(&self) -> bool {
        match self {
            TimeValue::Missing => false,
            TimeValue::Str(s) => !s.is_empty(),
            TimeValue::Other(raw) => {
                let raw = raw.trim();
                !matches!(raw, "false" | "null" | "0" | "[]" | "{}")
                    && !raw.parse::<f64>().is_ok_and(|f| f == 0.0)
            }
        }
    }

    /// Convert to an owned value.
    pub fn into_owned(self) -> TimeValue<'static> {
        match self {
            TimeValue::Missing => TimeValue::Missing,
            TimeValue::Str(s) => TimeValue::Str(Cow::Owned(s.into_owned())),
            TimeValue::Other(s) => TimeValue::Other(Cow::Owned(s.into_owned())),
        }
    }
}

/// One decoded transcript record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The record kind.
    pub kind: Option<EntryKind>,
    /// The top-level `timestamp`, verbatim.
    pub time: TimeValue<'a>,
    /// The folder in force, as the adapter's format records it (by the reference's rule
    /// for the formats it reads). `None` when missing or falsy; non-string values are
    /// rendered with Python `str()`.
    pub cwd: Option<Cow<'a, str>>,
    /// A truthy top-level `gitBranch`, as a string.
    pub branch: Option<Cow<'a, str>>,
    /// The session id the record names.
    pub session_id: Option<Cow<'a, str>>,
    /// The sub-agent id (`agentId`).
    pub agent_id: Option<Cow<'a, str>>,
    /// Record id (`uuid`).
    pub uuid: Option<Cow<'a, str>>,
    /// Parent record id (`parentUuid`).
    pub parent_uuid: Option<Cow<'a, str>>,
    /// Logical parent across a compaction (`logicalParentUuid`).
    pub logical_parent_uuid: Option<Cow<'a, str>>,
    /// `isSidechain` is true.
    pub is_sidechain: bool,
    /// Marker-eligible assistant texts; each is one "record" of the marker scan
    /// (scope-log.md §5.2), in order.
    pub texts: Vec<Cow<'a, str>>,
    /// The token usage the record reports, or the model a turn runs with.
    pub usage: Option<Usage<'a>>,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// 1-based line number.
    pub line: u64,
}

/// Token counts, as the usage of one model request (or a session's running total).
///
/// `input` never includes the cached tokens: `cache_creation` (written to the prompt
/// cache; `cache_creation_1h` of them at the one-hour price) and `cache_read` (read
/// from it) are apart, whatever the agent's own field layout (Codex counts its cached
/// tokens inside its input; the adapter takes them out). `reasoning_output` is a part
/// of `output` (as the agents report it), never added to it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tokens {
    /// Input tokens not read from a cache.
    pub input: u64,
    /// Output tokens (reasoning included).
    pub output: u64,
    /// Tokens written to the prompt cache.
    pub cache_creation: u64,
    /// Of `cache_creation`, those written for one hour.
    pub cache_creation_1h: u64,
    /// Tokens read from the prompt cache.
    pub cache_read: u64,
    /// Of `output`, the model's reasoning.
    pub reasoning_output: u64,
}

impl Tokens {
    /// The six counts in their stored order: input, output, cache writes, 1-hour
    /// cache writes, cache reads, reasoning output.
    pub fn counts(&self) -> [u64; 6] {
        [
            self.input,
            self.output,
            self.cache_creation,
            self.cache_creation_1h,
            self.cache_read,
            self.reasoning_output,
        ]
    }

    /// [`Tokens::counts`] back.
    pub fn from_counts(
        [input, output, cache_creation, cache_creation_1h, cache_read, reasoning_output]: [u64; 6],
    ) -> Tokens {
        Tokens {
            input,
            output,
            cache_creation,
            cache_creation_1h,
            cache_read,
            reasoning_output,
        }
    }

    /// Every token counted once: input, output, cache writes and reads.
    pub fn total(&self) -> u64 {
        self.input
            .saturating_add(self.output)
            .saturating_add(self.cache_creation)
            .saturating_add(self.cache_read)
    }

    /// Whether every count is zero.
    pub fn is_zero(&self) -> bool {
        *self == Tokens::default()
    }

    /// Add `other`'s counts, field by field.
    pub fn add(&mut self, other: &Tokens) {
        self.each(other, u64::saturating_add);
    }

    /// Keep the larger of each count (copies of one request: the whole usage).
    pub fn max_each(&mut self, other: &Tokens) {
        self.each(other, u64::max);
    }

    fn each(&mut self, o: &Tokens, f: fn(u64, u64) -> u64) {
        self.input = f(self.input, o.input);
        self.output = f(self.output, o.output);
        self.cache_creation = f(self.cache_creation, o.cache_creation);
        self.cache_creation_1h = f(self.cache_creation_1h, o.cache_creation_1h);
        self.cache_read = f(self.cache_read, o.cache_read);
        self.reasoning_output = f(self.reasoning_output, o.reasoning_output);
    }

    /// `self - earlier`, field by field, never below zero (a running total that went
    /// back, as a restarted counter does, counts nothing).
    pub fn since(&self, earlier: &Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_sub(earlier.input),
            output: self.output.saturating_sub(earlier.output),
            cache_creation: self.cache_creation.saturating_sub(earlier.cache_creation),
            cache_creation_1h: self
                .cache_creation_1h
                .saturating_sub(earlier.cache_creation_1h),
            cache_read: self.cache_read.saturating_sub(earlier.cache_read),
            reasoning_output: self
                .reasoning_output
                .saturating_sub(earlier.reasoning_output),
        }
    }
}

/// What a record says of the tokens spent: one request's usage (Claude's
/// `message.usage`, Gemini's message `tokens`), a running total (Codex's
/// `token_count`), or only the model a turn runs with (Codex's `turn_context`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage<'a> {
    /// The id every copy of the message shares (Claude's `message.id`, Gemini's
    /// message `id`); `None` when the format has none.
    pub message_id: Option<Cow<'a, str>>,
    /// Claude's `requestId`.
    pub request_id: Option<Cow<'a, str>>,
    /// The model.
    pub model: Option<Cow<'a, str>>,
    /// The counts; `None` for a record that only names the model.
    pub tokens: Option<Tokens>,
    /// `tokens` is the session's running total so far, not one request's.
    pub cumulative: bool,
}

impl Usage<'_> {
    /// A deep copy that outlives the line it borrowed from.
    pub fn to_static(&self) -> Usage<'static> {
        let own = |c: &Option<Cow<'_, str>>| c.as_ref().map(|s| Cow::Owned(s.to_string()));
        Usage {
            message_id: own(&self.message_id),
            request_id: own(&self.request_id),
            model: own(&self.model),
            tokens: self.tokens,
            cumulative: self.cumulative,
        }
    }
}

impl Entry<'_> {
    /// A deep copy that outlives the line it borrowed from.
    pub fn to_static(&self) -> Entry<'static> {
        fn own(c: &Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            c.as_ref().map(|s| Cow::Owned(s.to_string()))
        }
        Entry {
            kind: self.kind,
            time: self.time.clone().into_owned(),
            cwd: own(&self.cwd),
            branch: own(&self.branch),
            session_id: own(&self.session_id),
            agent_id: own(&self.agent_id),
            uuid: own(&self.uuid),
            parent_uuid: own(&self.parent_uuid),
            logical_parent_uuid: own(&self.logical_parent_uuid),
            is_sidechain: self.is_sidechain,
            texts: self
                .texts
                .iter()
                .map(|t| Cow::Owned(t.to_string()))
                .collect(),
            usage: self.usage.as_ref().map(Usage::to_static),
            offset: self.offset,
            line: self.line,
        }
    }
}

/// Where a line sits in its file (filled in by the framing layer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinePos {
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// 1-based line number.
    pub line: u64,
}

/// A copy of one model request's usage, as [`merge_copy`] — the usage merge rule —
/// sees it. The usage stage's `Spent` (copies that follow one another in a file) and
/// the index's `UsageBatch` (copies written together) are copies; what each carries
/// besides (a scope, a session) moves with the copy whose time is kept
/// ([`RequestCopy::take_lead`]).
pub trait RequestCopy {
    /// The copy's time.
    type Time: Ord + Copy;
    /// Where the copy was read, which breaks a tie of time and session (the lesser was
    /// read first); `()` where copies tie only within one file, the first kept.
    type Place: Ord;
    /// Its time, when its record has one.
    fn at(&self) -> Option<Self::Time>;
    /// It is a root session's (not a sub-agent's).
    fn is_root(&self) -> bool;
    /// Where it was read.
    fn place(&self) -> Self::Place;
    /// It names a model.
    fn has_model(&self) -> bool;
    /// Its counts.
    fn tokens(&self) -> &Tokens;
    /// Its counts, to change.
    fn tokens_mut(&mut self) -> &mut Tokens;
    /// Take `new`'s time, place, and all that goes with the earliest copy (its session,
    /// its scope) — not its model nor its counts.
    fn take_lead(&mut self, new: &Self);
    /// Take `new`'s model.
    fn take_model(&mut self, new: &Self);
}

/// **The usage merge rule** — its one home: merge `new`, a copy of the request `kept`
/// is a copy of, into `kept`. The request keeps the time, session and scope of its
/// earliest copy ([`copy_order`]: by time, a timed copy before an untimed one, a root
/// session's on a tie, then the copy read first: [`RequestCopy::place`]) and that
/// copy's model when it names one (a model missing is filled from any copy), and the
/// largest of each count over all copies: Claude Code writes a line per content block
/// of a streamed message, each with the usage so far (the output count grows), and a
/// resumed session replays the last of them, so the largest is the request's whole
/// usage and a replay adds nothing.
///
/// The usage stage merges a file's consecutive copies by it, the index's `UsageBatch`
/// the copies of a batch; the index's SQL upsert (`UPSERT_USAGE` in
/// `crates/index/src/usage.rs`), which merges a copy into the row already stored, is
/// held to it by a property test there (`the_sql_upsert_merges_as_merge_copy`).
///
/// ```
/// use transcope_core::entry::{merge_copy, RequestCopy};
/// use transcope_core::Tokens;
/// #[derive(Clone, Default)]
/// struct C { at: Option<i64>, root: bool, model: Option<&'static str>, tokens: Tokens }
/// impl RequestCopy for C {
///     type Time = i64;
///     type Place = ();
///     fn at(&self) -> Option<i64> { self.at }
///     fn is_root(&self) -> bool { self.root }
///     fn place(&self) {}
///     fn has_model(&self) -> bool { self.model.is_some() }
///     fn tokens(&self) -> &Tokens { &self.tokens }
///     fn tokens_mut(&mut self) -> &mut Tokens { &mut self.tokens }
///     fn take_lead(&mut self, new: &C) { self.at = new.at; self.root = new.root; }
///     fn take_model(&mut self, new: &C) { self.model = new.model; }
/// }
/// let t = |input, output| Tokens { input, output, ..Tokens::default() };
/// let mut kept = C { at: Some(5), model: None, tokens: t(10, 1), ..C::default() };
/// merge_copy(&mut kept, &C { at: Some(3), model: Some("m"), tokens: t(2, 7), ..C::default() });
/// assert_eq!((kept.at, kept.model, kept.tokens), (Some(3), Some("m"), t(10, 7)));
/// // A later copy only fills what is missing and raises the counts.
/// merge_copy(&mut kept, &C { at: Some(9), model: Some("n"), tokens: t(11, 0), ..C::default() });
/// assert_eq!((kept.at, kept.model, kept.tokens), (Some(3), Some("m"), t(11, 7)));
/// ```
pub fn merge_copy<C: RequestCopy>(kept: &mut C, new: &C) {
    let earlier = copy_order(new.at(), new.is_root(), kept.at(), kept.is_root())
        .then_with(|| new.place().cmp(&kept.place()))
        .is_lt();
    kept.tokens_mut().max_each(new.tokens());
    if earlier {
        kept.take_lead(new);
        if new.has_model() {
            kept.take_model(new);
        }
    } else if !kept.has_model() {
        kept.take_model(new);
    }
}

/// How a new copy of a request, stamped `new` (a root session's when `new_root`),
/// ranks against the copy kept so far (`kept`, `kept_root`): the copy whose time,
/// session and scope a request keeps is the earliest by time (a timed copy before an
/// untimed one), a root session's on a tie. `Less`: the new copy goes first. `Equal`
/// is a tie the caller breaks (the first seen within a file; the index, by where each
/// copy was read: `transcope_index::UsageBatch::add`).
///
/// ```
/// use std::cmp::Ordering::{Equal, Greater, Less};
/// use transcope_core::entry::copy_order;
/// assert_eq!(copy_order(Some(1), false, Some(2), true), Less);
/// assert_eq!(copy_order(None, true, Some(2), false), Greater);
/// assert_eq!(copy_order(Some(2), true, Some(2), false), Less);
/// assert_eq!(copy_order::<i64>(None, false, None, true), Greater);
/// assert_eq!(copy_order(Some(2), false, Some(2), false), Equal);
/// ```
pub fn copy_order<T: Ord>(
    new: Option<T>,
    new_root: bool,
    kept: Option<T>,
    kept_root: bool,
) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let time = match (new, kept) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => Ordering::Less,
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
    };
    // A root session's copy before a sub-agent's.
    time.then(kept_root.cmp(&new_root))
}

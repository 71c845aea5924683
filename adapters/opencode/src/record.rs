//! One OpenCode record as the sources hand it to the adapter: a message with its
//! session's context and its text parts, in one JSON object (the *envelope*).
//!
//! OpenCode spreads a message over three places — the `session` row (its folder, its
//! parent), the `message` row (`data`: `MessageV2.Info` without `id`/`sessionID`) and
//! the `part` rows (`data`: each part) — and the legacy tree over three files. Both
//! sources ([`crate::db`], [`crate::tree`]) put them together the same way, so the
//! adapter decodes one format whichever layout it came from:
//!
//! ```text
//! {"id": "msg_…", "session": "ses_…", "parent": "ses_…"|null,
//!  "directory": "<session.directory>", "worktree": "<project.worktree>",
//!  "data": <the message's JSON, verbatim>, "parts": [<each text part's JSON, verbatim>]}
//! ```
//!
//! The message JSON's fields read ([`Message`]): `role`, `time.created` (epoch ms),
//! `time.completed`, `parentID`, `providerID`, `modelID`, `path.cwd`, `tokens`,
//! `error`. A part is read for its `type` and `text` (`synthetic` text, the CLI's own,
//! is left out).
//!
//! ```
//! use transcope_adapter_opencode::record::envelope;
//! let e = envelope("msg_1", "ses_1", None, "/w", "", br#"{"role":"user","time":{"created":1}}"#, &[]);
//! let v: serde_json::Value = serde_json::from_slice(&e).unwrap();
//! assert_eq!(v["data"]["role"], "user");
//! assert_eq!(v["directory"], "/w");
//! ```

use std::borrow::Cow;

use serde::Deserialize;
use transcope_core::Tokens;

/// The envelope of one message (see the module docs): `data` and each part are JSON
/// texts put in verbatim (a source hands what the agent wrote; the adapter judges it).
pub fn envelope(
    id: &str,
    session: &str,
    parent: Option<&str>,
    directory: &str,
    worktree: &str,
    data: &[u8],
    parts: &[&[u8]],
) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(data.len() + 160 + parts.iter().map(|p| p.len() + 1).sum::<usize>());
    let string = |out: &mut Vec<u8>, s: &str| {
        // Writing a string into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    };
    out.extend_from_slice(b"{\"id\":");
    string(&mut out, id);
    out.extend_from_slice(b",\"session\":");
    string(&mut out, session);
    out.extend_from_slice(b",\"parent\":");
    match parent {
        Some(p) => string(&mut out, p),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"directory\":");
    string(&mut out, directory);
    out.extend_from_slice(b",\"worktree\":");
    string(&mut out, worktree);
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(if data.is_empty() { b"null" } else { data });
    out.extend_from_slice(b",\"parts\":[");
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(p);
    }
    out.extend_from_slice(b"]}");
    out
}

/// An envelope, decoded.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    /// The message id.
    #[serde(borrow)]
    pub id: Cow<'a, str>,
    /// The session id.
    #[serde(borrow)]
    pub session: Cow<'a, str>,
    /// The session's parent session (`session.parent_id`), for a sub-agent's.
    #[serde(borrow, default)]
    pub parent: Option<Cow<'a, str>>,
    /// `session.directory`.
    #[serde(borrow, default)]
    pub directory: Option<Cow<'a, str>>,
    /// The project's `worktree`.
    #[serde(borrow, default)]
    pub worktree: Option<Cow<'a, str>>,
    /// The message.
    #[serde(borrow)]
    pub data: Message<'a>,
    /// Its text parts.
    #[serde(borrow, default)]
    pub parts: Vec<Part<'a>>,
}

/// The fields of a message (`MessageV2.Info`) the adapter reads; the rest is skipped.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message<'a> {
    /// `user` or `assistant`.
    #[serde(borrow, default)]
    pub role: Option<Cow<'a, str>>,
    /// Its times.
    #[serde(default)]
    pub time: Times,
    /// The user message it answers (an assistant's).
    #[serde(borrow, default, rename = "parentID")]
    pub parent_id: Option<Cow<'a, str>>,
    /// The provider (an assistant's).
    #[serde(borrow, default, rename = "providerID")]
    pub provider_id: Option<Cow<'a, str>>,
    /// The model (an assistant's).
    #[serde(borrow, default, rename = "modelID")]
    pub model_id: Option<Cow<'a, str>>,
    /// Where the assistant worked.
    #[serde(borrow, default)]
    pub path: Option<MessagePath<'a>>,
    /// Its token counts (an assistant's).
    #[serde(default)]
    pub tokens: Option<MessageTokens>,
    /// Why it failed, when it did.
    #[serde(borrow, default)]
    pub error: Option<&'a serde_json::value::RawValue>,
}

/// `time`: epoch milliseconds.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct Times {
    /// When the message was made.
    #[serde(default)]
    pub created: Option<f64>,
    /// When an assistant's reply ended (absent while it is being written).
    #[serde(default)]
    pub completed: Option<f64>,
}

/// `path`: the assistant's working folder and its project root.
#[derive(Debug, Default, Deserialize)]
pub struct MessagePath<'a> {
    /// The working folder.
    #[serde(borrow, default)]
    pub cwd: Option<Cow<'a, str>>,
    /// The project root.
    #[serde(borrow, default)]
    pub root: Option<Cow<'a, str>>,
}

/// `tokens`: five counts that do not overlap.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct MessageTokens {
    /// Input tokens not read from or written to the cache.
    #[serde(default)]
    pub input: Option<f64>,
    /// Output tokens, the reasoning not among them.
    #[serde(default)]
    pub output: Option<f64>,
    /// Reasoning tokens.
    #[serde(default)]
    pub reasoning: Option<f64>,
    /// The cache counts.
    #[serde(default)]
    pub cache: Option<Cache>,
}

/// `tokens.cache`.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub struct Cache {
    /// Read from the cache.
    #[serde(default)]
    pub read: Option<f64>,
    /// Written to the cache.
    #[serde(default)]
    pub write: Option<f64>,
}

/// A part (only its type and text are read).
#[derive(Debug, Deserialize)]
pub struct Part<'a> {
    /// `text`, `reasoning`, `tool`, `step-finish`, …
    #[serde(borrow, default, rename = "type")]
    pub ty: Option<Cow<'a, str>>,
    /// A text part's text.
    #[serde(borrow, default)]
    pub text: Option<Cow<'a, str>>,
    /// Text the CLI wrote itself, not the model.
    #[serde(default)]
    pub synthetic: Option<bool>,
}

/// A count as stored (a JSON number; OpenCode writes integers): negative, fractional
/// or absent is what it can honestly mean, clamped and truncated.
fn count(n: Option<f64>) -> u64 {
    n.filter(|v| v.is_finite() && *v > 0.0)
        .map_or(0, |v| v as u64)
}

/// transcope's columns of an assistant's `tokens` ([`crate::agent`]): the input, the
/// cache reads and writes as stored; the output with the reasoning added, the
/// reasoning noted as part of it. `None` when it counts nothing.
///
/// ```
/// use transcope_adapter_opencode::record::{tokens, MessageTokens, Cache};
/// let t = tokens(&MessageTokens { input: Some(10.0), output: Some(5.0), reasoning: Some(3.0),
///     cache: Some(Cache { read: Some(100.0), write: Some(20.0) }) }).unwrap();
/// assert_eq!((t.input, t.output, t.reasoning_output, t.cache_read, t.cache_creation), (10, 8, 3, 100, 20));
/// assert_eq!(t.total(), 10 + 5 + 3 + 100 + 20);
/// ```
pub fn tokens(t: &MessageTokens) -> Option<Tokens> {
    let cache = t.cache.unwrap_or_default();
    let reasoning = count(t.reasoning);
    let out = Tokens {
        input: count(t.input),
        output: count(t.output).saturating_add(reasoning),
        reasoning_output: reasoning,
        cache_read: count(cache.read),
        cache_creation: count(cache.write),
        cache_creation_1h: 0,
    };
    (!out.is_zero()).then_some(out)
}

/// Whether a message's JSON is an assistant's reply still being written: no
/// `time.completed` and no `error` yet. Judged on the raw JSON the source holds (a
/// message that does not decode is not "being written": it is read, and skipped).
pub fn being_written(data: &[u8]) -> bool {
    serde_json::from_slice::<Message<'_>>(data).is_ok_and(|m| {
        m.role.as_deref() == Some("assistant") && m.time.completed.is_none() && m.error.is_none()
    })
}

/// The text parts of a part's JSON worth keeping in an envelope: a `text` part not
/// written by the CLI itself. Most parts are tool calls and their outputs: those
/// without a `"text"` string anywhere are passed over unparsed.
pub fn is_text_part(data: &[u8]) -> bool {
    memchr::memmem::find(data, b"\"text\"").is_some()
        && serde_json::from_slice::<Part<'_>>(data)
            .is_ok_and(|p| p.ty.as_deref() == Some("text") && p.synthetic != Some(true))
}

/// A session's context, put in each of its envelopes.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// The session id.
    pub session: String,
    /// Its parent session, for a sub-agent's.
    pub parent: Option<String>,
    /// `session.directory`.
    pub directory: String,
    /// The project's worktree.
    pub worktree: String,
}

/// Hand the message `id` (its JSON `data`, its parts' JSON `parts`, of which the text
/// ones are kept) to `sink` as the record at `ordinal`, and move `read`'s end past it;
/// what the sink says (`false`: stop).
pub fn hand(
    sink: &mut dyn transcope_core::records::RecordSink,
    read: &mut transcope_core::records::RecordRead,
    (ordinal, id): (u64, String),
    ctx: &Context,
    data: &[u8],
    parts: impl IntoIterator<Item = Vec<u8>>,
) -> bool {
    let texts: Vec<Vec<u8>> = parts.into_iter().filter(|p| is_text_part(p)).collect();
    let refs: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    let record = envelope(
        &id,
        &ctx.session,
        ctx.parent.as_deref(),
        &ctx.directory,
        &ctx.worktree,
        data,
        &refs,
    );
    read.bytes += record.len() as u64;
    let go_on = sink.record(ordinal, &record);
    read.end = transcope_core::records::RecordPos {
        ordinal: ordinal + 1,
        anchor: id,
    };
    go_on
}

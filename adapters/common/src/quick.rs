//! The shared context keys of a line ([`Base`]'s), read by the [`Walk`] for an
//! adapter's quick path: a line wanted for its usage alone, read without serde.
//!
//! [`Context::field`] reads a top-level key when it is one of [`Base`]'s, as the full
//! decode reads it, or says it is unsure (a repeated key, a string with an escape, a
//! value of an unusual type such as a number as `cwd`): the caller then leaves the
//! whole line to the full decode. [`Context::entry`] makes the entry the full decode
//! starts from ([`Base::base_entry`] of the [`Base`] it makes), built straight from
//! the values read.
//!
//! ```
//! use transcope_adapter_common::quick::{Context, Field};
//! use transcope_adapter_common::record::{self, Base};
//! use transcope_adapter_common::walk::Walk;
//! use transcope_core::LinePos;
//! let text = r#"{"type":"note","cwd":"/w","n":1}"#;
//! let w = Walk::new(text);
//! let mut c = Context::default();
//! let end = w.object(0, |key, at| match c.field(&w, text, key, at) {
//!     Field::Read(end) => Some(end),
//!     Field::Unsure => None,
//!     Field::Other => w.skip(at),
//! });
//! assert_eq!(end, Some(text.len()));
//! assert_eq!((c.ty(), c.folder_and_branch()), (Some("note"), Some((Some("/w"), None))));
//! let entry = c.entry(LinePos::default());
//! assert_eq!(entry.cwd.as_deref(), Some("/w"));
//! // The full decode's entry.
//! let mut full: Base<'_> = record::parse(text.as_bytes(), LinePos::default()).unwrap();
//! assert_eq!(entry, full.base_entry(LinePos::default(), None));
//! ```

use std::borrow::Cow;

use serde_json::value::RawValue;
use transcope_core::entry::{LinePos, TimeValue};
use transcope_core::Entry;

// Named in the docs.
#[cfg(doc)]
use crate::{de::Loose, record::Base};

use crate::walk::{Lit, Walk};

/// A wanted value the walk read: a plain string or a literal. Small and `Copy`, so
/// storing one moves a few words; the entry is made from it as the full decode makes
/// it from the [`Loose`] it reads ([`Context::entry`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Val<'a> {
    /// The key is absent.
    #[default]
    Missing,
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A string without escapes.
    Str(&'a str),
}

impl<'a> Val<'a> {
    /// The string, when it is one ([`Loose::into_str`]).
    pub fn str(self) -> Option<Cow<'a, str>> {
        match self {
            Val::Str(s) => Some(Cow::Borrowed(s)),
            _ => None,
        }
    }

    /// [`Loose::py_str_if_truthy`] of the value as [`Loose`] decodes it: the same rule
    /// for the four values a `Val` can be, written out because going through a
    /// `Loose` calls its out-of-line truthiness for every context key of every walked
    /// line (+5.9 M instructions of a 200 MB backfill, benches/README.md, session 17).
    pub fn py_str_if_truthy(self) -> Option<Cow<'a, str>> {
        match self {
            Val::Str(s) if !s.is_empty() => Some(Cow::Borrowed(s)),
            Val::Bool(true) => Some(Cow::Borrowed("True")),
            _ => None,
        }
    }

    /// The value as the probe reads a folder or branch: `Some(None)` when missing,
    /// null or empty, `None` when it is neither a string nor null.
    pub fn probed(self) -> Option<Option<&'a str>> {
        match self {
            Val::Missing | Val::Null => Some(None),
            Val::Str(s) => Some((!s.is_empty()).then_some(s)),
            Val::Bool(_) => None,
        }
    }
}

/// The value at `at`, when it is a plain string or a literal.
#[inline(always)]
pub fn val<'a>(w: &Walk<'a>, at: usize) -> Option<(Val<'a>, usize)> {
    match w.peek(at)? {
        b'"' => w.plain_str(at).map(|(s, e)| (Val::Str(s), e)),
        _ => w.literal(at).map(|(l, e)| {
            let v = match l {
                Lit::Null => Val::Null,
                Lit::True => Val::Bool(true),
                Lit::False => Val::Bool(false),
            };
            (v, e)
        }),
    }
}

/// Set bit `bit` of `seen`; `None` when it was set (a repeated key: the full decode
/// decides).
#[inline]
pub fn once(seen: &mut u32, bit: u32) -> Option<()> {
    let b = 1 << bit;
    if *seen & b != 0 {
        return None;
    }
    *seen |= b;
    Some(())
}

/// The object at `open`, a key of its line's read at most once (bit `bit` of
/// `seen`): `each(key, at, inner)` for each of its keys, `inner` the object's own
/// keys seen (for [`once`]). `None` on a repeated key or a key `each` refuses.
#[inline]
pub fn once_object<'a>(
    w: &Walk<'a>,
    open: usize,
    (seen, bit): (&mut u32, u32),
    mut each: impl FnMut(&'a str, usize, &mut u32) -> Option<usize>,
) -> Option<usize> {
    once(seen, bit)?;
    let mut inner = 0u32;
    w.object(open, |k, v| each(k, v, &mut inner))
}

/// What [`Context::field`] made of a key.
pub enum Field {
    /// One of the context keys, read: one past its value.
    Read(usize),
    /// One of them, but not read as the full decode would read it: leave the line to
    /// the full decode.
    Unsure,
    /// Not a context key.
    Other,
}

/// The context keys of a line as the walk read them.
#[derive(Default)]
pub struct Context<'a> {
    ty: Option<&'a str>,
    /// A timestamp that is not a plain string, as the full decode keeps it.
    timestamp: Option<&'a RawValue>,
    /// A plain string timestamp, which is the entry's time as it is.
    time: Option<&'a str>,
    /// `cwd`, `gitBranch`, `sessionId`, `agentId`, `uuid`, `parentUuid`,
    /// `logicalParentUuid`, `isSidechain`.
    vals: [Val<'a>; 8],
    seen: u32,
}

impl<'a> Context<'a> {
    /// Read `key`'s value at `at` of the line `text` (walked by `w`) when it is one of
    /// [`Base`]'s keys.
    #[inline]
    pub fn field(&mut self, w: &Walk<'a>, text: &'a str, key: &str, at: usize) -> Field {
        let slot = match key {
            "type" => 8,
            "timestamp" => 9,
            "cwd" => 0,
            "gitBranch" => 1,
            "sessionId" => 2,
            "agentId" => 3,
            "uuid" => 4,
            "parentUuid" => 5,
            "logicalParentUuid" => 6,
            "isSidechain" => 7,
            _ => return Field::Other,
        };
        let read = once(&mut self.seen, slot).and_then(|()| match slot {
            8 => w.plain_str(at).map(|(t, e)| {
                self.ty = Some(t);
                e
            }),
            9 => match w.plain_str(at) {
                Some((t, e)) => {
                    self.time = Some(t);
                    Some(e)
                }
                None => {
                    let e = w.skip(at)?;
                    self.timestamp = Some(serde_json::from_str(&text[at..e]).ok()?);
                    Some(e)
                }
            },
            _ => val(w, at).map(|(v, e)| {
                self.vals[slot as usize] = v;
                e
            }),
        });
        read.map_or(Field::Unsure, Field::Read)
    }

    /// The `type`, when it is a plain string.
    pub fn ty(&self) -> Option<&'a str> {
        self.ty
    }

    /// The top-level `cwd` and `gitBranch` as the probe gives them
    /// ([`transcope_core::adapter::Probe`]: `None` when missing, null or empty), or
    /// `None` when either is neither a string nor null (the probe is unsure then).
    pub fn folder_and_branch(&self) -> Option<(Option<&'a str>, Option<&'a str>)> {
        self.vals[0].probed().zip(self.vals[1].probed())
    }

    /// The entry the full decode starts from ([`Base::base_entry`] of the [`Base`] it
    /// makes of these keys, without a payload folder; a plain string timestamp is its
    /// time as it is, as the full decode's `time_value` makes it), made straight from
    /// the values as read: no [`Loose`] is made and dropped on the way (2 % of a
    /// usage-on backfill's instructions, benches/README.md, session 17).
    pub fn entry(&self, pos: LinePos) -> Entry<'a> {
        let v = &self.vals;
        Entry {
            kind: None,
            time: match self.time {
                Some(t) => TimeValue::Str(Cow::Borrowed(t)),
                None => crate::record::time_value(self.timestamp),
            },
            // A `turn_context` takes its folder from its payload (none here).
            cwd: match self.ty {
                Some("turn_context") => None,
                _ => v[0].py_str_if_truthy(),
            },
            branch: v[1].py_str_if_truthy(),
            session_id: v[2].str(),
            agent_id: v[3].str(),
            uuid: v[4].str(),
            parent_uuid: v[5].str(),
            logical_parent_uuid: v[6].str(),
            is_sidechain: v[7] == Val::Bool(true),
            texts: Vec::new(),
            usage: None,
            offset: pos.offset,
            line: pos.line,
        }
    }
}

/// Walk `line` (not a file's first line: a BOM there is the full decode's) as one JSON
/// object: every top-level key the [`Context`] does not take goes to `key` (the walk,
/// the key, where its value starts; the value's end, or `None` to leave the line to
/// the full decode). The context, when the walk read the whole line and nothing more.
pub fn walk_line<'a>(
    line: &'a [u8],
    pos: LinePos,
    mut key: impl FnMut(&Walk<'a>, &'a str, usize) -> Option<usize>,
) -> Option<Context<'a>> {
    if pos.offset == 0 {
        return None;
    }
    let text = crate::text::line_text(line, false).ok()?;
    let w = Walk::new(text);
    let mut context = Context::default();
    let end = w.object(0, |k, at| match context.field(&w, text, k, at) {
        Field::Read(end) => Some(end),
        Field::Unsure => None,
        Field::Other => key(&w, k, at),
    })?;
    (end == text.len()).then_some(context)
}

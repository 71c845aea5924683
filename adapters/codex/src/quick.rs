//! A `token_count` event read for its usage alone, without serde.
//!
//! When the usage stage is the only one that wants an envelope line (a backfill
//! without markers), a `token_count` event's entry is its context keys and the
//! counts of `payload.info` — a few numbers of a line whose rest is rate limits.
//! [`token_count_entry`] reads them with [`Walk`], which checks every byte it skips as
//! serde_json's skip would, and builds the entry through the same
//! [`transcope_adapter_common::record::Base::base_entry`] the full decode uses.
//!
//! It answers only the common shape, and `None` — decode in full — for anything else:
//! a key or wanted string with an escape, a repeated wanted key, a wanted value of an
//! unusual type (a number as `cwd`, a float or quoted count, an `info` that is
//! neither an object nor `null`), a top-level `message`, `id`, `role` or `content`
//! (the full decode reads those), another type, the file's first line. So an answer
//! is always the entry the full decode gives: the tests below check it on mutated
//! lines.
//!
//! ```
//! use transcope_adapter_codex::quick::token_count_entry;
//! use transcope_core::LinePos;
//! let line = br#"{"timestamp":"2025-10-10T05:08:30.650Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3,"reasoning_output_tokens":1}}}}"#;
//! let e = token_count_entry(line, LinePos { offset: 10, line: 2 }).unwrap();
//! let u = e.usage.unwrap();
//! assert!(u.cumulative);
//! assert_eq!((u.tokens.unwrap().input, u.tokens.unwrap().cache_read), (6, 4));
//! ```

use transcope_adapter_common::quick::{once, once_object, val, walk_line};
use transcope_adapter_common::usage::{walk_counts, Shape};
use transcope_adapter_common::walk::{Lit, Walk};
use transcope_core::entry::{Entry, EntryKind, LinePos};
use transcope_core::Tokens;

use crate::agent::{token_count_usage, CodexTokens};

/// A counts object (`total_token_usage`, `last_token_usage`): `Some` when an object,
/// `None` when `null`, and not read (the outer `None`) when anything else.
fn counts(w: &Walk<'_>, at: usize) -> Option<(Option<Tokens>, usize)> {
    if w.peek(at)? == b'n' {
        return match w.literal(at)? {
            (Lit::Null, e) => Some((None, e)),
            _ => None,
        };
    }
    let (c, end) = walk_counts(w, at, &CodexTokens::TOKENS)?;
    Some((Some(CodexTokens::TOKENS.tokens(&c)), end))
}

/// `payload.info`: the running total and the last request's counts, each when given
/// as an object (`info` itself `null`: neither).
type Info = (Option<Tokens>, Option<Tokens>);

fn info(w: &Walk<'_>, at: usize) -> Option<(Info, usize)> {
    if w.peek(at)? == b'n' {
        return match w.literal(at)? {
            (Lit::Null, e) => Some(((None, None), e)),
            _ => None,
        };
    }
    let (mut total, mut last) = (None, None);
    let mut seen = 0u32;
    let end = w.object(at, |key, v| {
        let (slot, into) = match key {
            "total_token_usage" => (0, &mut total),
            "last_token_usage" => (1, &mut last),
            _ => return w.skip(v),
        };
        once(&mut seen, slot)?;
        let (t, e) = counts(w, v)?;
        *into = t;
        Some(e)
    })?;
    Some(((total, last), end))
}

/// The entry the full decode gives `line`, a `token_count` event of an envelope file
/// (not its first line), when the walk is certain of it (see the module docs).
pub fn token_count_entry(line: &[u8], pos: LinePos) -> Option<Entry<'_>> {
    let (mut payload_ty, mut got) = (None, None);
    let mut seen = 0u32;
    let context = walk_line(line, pos, |w, key, v| match key {
        "payload" => once_object(w, v, (&mut seen, 0), |k, v, inner| {
            let slot = match k {
                "type" => 0,
                "info" => 1,
                // Decoded by the full decode (for other types): read as it
                // reads them, so a value it would refuse is left to it.
                "role" => 2,
                "id" => 3,
                "session_id" => 4,
                "cwd" => 5,
                "last_agent_message" => 6,
                "model" => 7,
                _ => return w.skip(v),
            };
            once(inner, slot)?;
            match slot {
                0 => {
                    let (t, e) = w.plain_str(v)?;
                    payload_ty = Some(t);
                    Some(e)
                }
                1 => {
                    let (i, e) = info(w, v)?;
                    got = Some(i);
                    Some(e)
                }
                _ => val(w, v).map(|(_, e)| e),
            }
        }),
        // Decoded (and checked) by the full decode.
        "message" | "id" | "role" | "content" => None,
        _ => w.skip(v),
    })?;
    if context.ty() != Some("event_msg") {
        return None;
    }
    if payload_ty != Some("token_count") {
        return None;
    }
    let mut entry = context.entry(pos);
    entry.kind = Some(EntryKind::Event);
    // As the full decode chooses.
    entry.usage = got.and_then(|(total, last)| token_count_usage(total, last));
    Some(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use transcope_core::adapter::{from_fn, Adapter};
    use transcope_testkit::decode::last_entry;
    use transcope_testkit::mutate::{self, POS};

    /// What the adapter's full decode gives `line`, owned: after a first line that
    /// makes the file an envelope file.
    fn full(line: &[u8], pos: LinePos) -> Option<Entry<'static>> {
        let mut a = crate::CodexAdapter::new();
        let first = br#"{"timestamp":"2025-10-10T05:08:00.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}"#;
        let _ = a.decode(first, LinePos::default(), &mut from_fn(|_: &Entry<'_>| {}));
        last_entry(|sink| {
            let _ = a.decode(line, pos, sink);
        })
    }

    fn quick(line: &[u8], pos: LinePos) -> Option<Entry<'static>> {
        token_count_entry(line, pos).map(|e| e.to_static())
    }

    const LINES: [&str; 4] = [
        r#"{"timestamp":"2025-10-10T05:08:30.650Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":4612,"cached_input_tokens":2306,"output_tokens":954,"reasoning_output_tokens":318,"total_tokens":5566},"last_token_usage":{"input_tokens":4612,"cached_input_tokens":2306,"output_tokens":954,"reasoning_output_tokens":318,"total_tokens":5566},"model_context_window":272000},"rate_limits":{"primary":{"used_percent":12.0,"window_minutes":300,"resets_at":1765328124},"plan_type":null}}}"#,
        r#"{"timestamp":"2025-10-10T05:08:31.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":1.5e1}}}}"#,
        r#"{"timestamp": 5, "type": "event_msg", "cwd": "/top", "gitBranch": null, "payload": {"type": "token_count", "cwd": "/p", "info": {"total_token_usage": null, "last_token_usage": {"input_tokens": 7, "output_tokens": 2, "note": "x \"q\" \u00e9 \ud800"}}}}"#,
        r#"{"timestamp":"2025-10-10T05:08:32.000Z","type":"event_msg","payload":{"type":"token_count","info":{}}}"#,
    ];

    /// Which counts a `token_count` gives (the running total, else the last
    /// request's, else none), as the full decode chooses them.
    #[test]
    fn a_token_count_is_read_for_its_counts() {
        let u = quick(LINES[0].as_bytes(), POS).unwrap().usage.unwrap();
        assert!(u.cumulative);
        assert_eq!(u.tokens.unwrap().input, 4612 - 2306);
        let u = quick(LINES[2].as_bytes(), POS).unwrap().usage.unwrap();
        assert!(!u.cumulative);
        assert_eq!(quick(LINES[1].as_bytes(), POS).unwrap().usage, None);
    }

    #[test]
    fn unusual_shapes_are_left_to_the_full_decode() {
        let cases = [
            // An escape in a wanted string, a repeated key, a number folder, a float
            // or quoted count, an info that is a number, another type, a top-level
            // message, a payload that is not an object.
            r#"{"type":"event_msg","cwd":"/w\u00e9","payload":{"type":"token_count","info":null}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","type":"token_count","info":null}}"#,
            r#"{"type":"event_msg","cwd":5,"payload":{"type":"token_count","info":null}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":1.0}}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":"1"}}}}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","info":5}}"#,
            r#"{"type":"event_msg","payload":{"type":"agent_message","info":null}}"#,
            r#"{"type":"response_item","payload":{"type":"token_count","info":null}}"#,
            r#"{"type":"event_msg","message":{},"payload":{"type":"token_count","info":null}}"#,
            r#"{"type":"event_msg","payload":[]}"#,
            r#"{"type":"event_msg","payload":{"type":"token_count","role":"\ud800"}}"#,
        ];
        for c in cases {
            assert_eq!(quick(c.as_bytes(), POS), None, "{c}");
        }
        assert_eq!(quick(LINES[0].as_bytes(), LinePos::default()), None);
    }

    transcope_testkit::quick_path_tests!(
        lines: LINES,
        bytes: &[mutate::BYTES, b"n"].concat(),
        one_in: 5,
        quick: quick,
        full: full,
        also: |_: &[u8]| {},
    );
}

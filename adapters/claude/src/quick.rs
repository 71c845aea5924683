//! An assistant line read for its usage alone, without serde.
//!
//! When no stage wants an assistant line's texts but the usage stage wants its usage
//! (a backfill without markers), the line's entry is its context keys, `requestId`
//! and `message.id`/`model`/`usage` — a few dozen bytes of a line that is mostly
//! content. [`usage_entry`] reads them with [`Walk`], which checks every byte it
//! skips as serde_json's skip would, and builds the entry through the same
//! [`Base::base_entry`] the full decode uses.
//!
//! It answers only the common shape, and `None` — decode in full
//! ([`crate::decode_claude_usage`]) — for anything else: a key or wanted string with an
//! escape, a repeated wanted key, a wanted value of an unusual type (a number as
//! `cwd`, a float count), no `message.usage` object, a `payload` or top-level `id` /
//! `role` key (the full decode checks those), a type other than `assistant`. So an
//! answer is always the entry [`crate::decode_claude_usage`] would give: the property
//! tests below check it on mutated real lines.
//!
//! ```
//! use transcope_adapter_claude::quick::usage_entry;
//! use transcope_core::LinePos;
//! let line = br#"{"type":"assistant","cwd":"/w","timestamp":"2025-01-01T00:00:00Z","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"hi\n"}],"usage":{"input_tokens":3,"output_tokens":5}},"requestId":"r1"}"#;
//! let e = usage_entry(line, LinePos { offset: 10, line: 2 }).unwrap();
//! let u = e.usage.unwrap();
//! assert_eq!((u.message_id.as_deref(), u.request_id.as_deref(), u.tokens.unwrap().output), (Some("m1"), Some("r1"), 5));
//! assert_eq!(e.cwd.as_deref(), Some("/w"));
//! ```

use transcope_adapter_common::message::MessageUsage;
use transcope_adapter_common::quick::{once, once_object, val, walk_line, Val};
use transcope_adapter_common::usage::{walk_counts, Shape};
use transcope_core::entry::{Entry, EntryKind, LinePos};
use transcope_core::Usage;

/// The entry [`crate::decode_claude_usage`] gives `line` (not the file's first line),
/// when the walk is certain of it (see the module docs).
pub fn usage_entry(line: &[u8], pos: LinePos) -> Option<Entry<'_>> {
    usage_read(line, pos).map(|r| r.entry)
}

/// What [`usage_read`] read of a line.
pub struct UsageRead<'a> {
    /// The entry, as [`usage_entry`] gives it.
    pub entry: Entry<'a>,
    /// The top-level `cwd` and `gitBranch` as the probe gives them
    /// ([`transcope_core::adapter::Probe`]: `None` when missing, null or empty), or
    /// `None` when either is neither a string nor null (the probe is unsure then).
    pub folder_and_branch: Option<(Option<&'a str>, Option<&'a str>)>,
}

/// Whether `line` ends as Claude Code ends an assistant line: its `"type":"assistant"`
/// among its last 256 bytes (after `message`, with `uuid` and `timestamp`). Only a
/// guess at which reading to try first, never an answer.
pub fn looks_assistant(line: &[u8]) -> bool {
    static NEEDLE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(br#""type":"assistant""#));
    NEEDLE
        .find(&line[line.len().saturating_sub(256)..])
        .is_some()
}

/// [`usage_entry`], with the line's folder and branch as the probe would read them, so
/// a caller that walks an assistant line first need not probe it too.
pub fn usage_read(line: &[u8], pos: LinePos) -> Option<UsageRead<'_>> {
    let mut request_id = Val::Missing;
    let (mut id, mut model, mut usage) = (Val::Missing, Val::Missing, None);
    let mut seen = 0u32;
    let context = walk_line(line, pos, |w, key, v| match key {
        "message" => once_object(w, v, (&mut seen, 0), |k, v, inner| {
            let (slot, value) = match k {
                "id" => (0, &mut id),
                "model" => (1, &mut model),
                "usage" => {
                    once(inner, 2)?;
                    let (u, e) = walk_counts(w, v, &MessageUsage::TOKENS)?;
                    usage = Some(u);
                    return Some(e);
                }
                _ => return w.skip(v),
            };
            once(inner, slot)?;
            let (l, e) = val(w, v)?;
            *value = l;
            Some(e)
        }),
        "requestId" => {
            once(&mut seen, 1)?;
            let (l, e) = val(w, v)?;
            request_id = l;
            Some(e)
        }
        // Decoded (and checked) by the full decode.
        "payload" | "id" | "role" => None,
        _ => w.skip(v),
    })?;
    let kind = context.ty().and_then(crate::record::kind);
    if kind != Some(EntryKind::Assistant) {
        return None;
    }
    let tokens = MessageUsage::TOKENS.tokens(&usage?);
    let folder_and_branch = context.folder_and_branch();
    let mut entry = context.entry(pos);
    entry.kind = kind;
    entry.usage = Some(Usage {
        message_id: id.str(),
        request_id: request_id.str(),
        model: model.str(),
        tokens: Some(tokens),
        cumulative: false,
    });
    Some(UsageRead {
        entry,
        folder_and_branch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use transcope_testkit::decode::last_entry;
    use transcope_testkit::mutate::{self, POS};

    /// What the full usage-only decode gives, owned.
    fn full(line: &[u8], pos: LinePos) -> Option<Entry<'static>> {
        last_entry(|sink| {
            let _ = crate::decode_claude_usage(line, pos, sink);
        })
    }

    fn quick(line: &[u8], pos: LinePos) -> Option<Entry<'static>> {
        usage_entry(line, pos).map(|e| e.to_static())
    }

    const LINES: [&str; 3] = [
        r#"{"parentUuid":"c25d5c7a","isSidechain":true,"userType":"external","cwd":"/w/k","sessionId":"6fa4","version":"2.1.17","gitBranch":"main","agentId":"23b6d56","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-6","content":[{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"cat src/marker.rs | head -100\n","description":"Run a command"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":30,"cache_creation_input_tokens":793,"cache_read_input_tokens":69197,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":793},"output_tokens":1117,"service_tier":"standard"}},"requestId":"req_011","type":"assistant","uuid":"68eb","timestamp":"2025-11-21T23:53:38.370Z"}"#,
        r#"{"type": "assistant", "cwd": "", "gitBranch": null, "isSidechain": false, "timestamp": 5, "message": {"model": null, "content": "x \"quoted\" \u00e9 \ud800", "usage": {"input_tokens": 0, "output_tokens": 1}}}"#,
        r#"{"type":"assistant","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":2,"cache_creation":{}}},"requestId":null}"#,
    ];

    #[test]
    fn unusual_shapes_are_left_to_the_full_decode() {
        let cases = [
            // An escape in a wanted string, a repeated key, a number folder, a float
            // count, no usage, a payload, another type, the first line.
            r#"{"type":"assistant","cwd":"/w\u00e9","message":{"usage":{"input_tokens":1}}}"#,
            r#"{"type":"assistant","cwd":"/a","cwd":"/b","message":{"usage":{"input_tokens":1}}}"#,
            r#"{"type":"assistant","cwd":5,"message":{"usage":{"input_tokens":1}}}"#,
            r#"{"type":"assistant","message":{"usage":{"input_tokens":1.0}}}"#,
            r#"{"type":"assistant","message":{"content":[]}}"#,
            r#"{"type":"assistant","payload":{},"message":{"usage":{"input_tokens":1}}}"#,
            r#"{"type":"user","message":{"usage":{"input_tokens":1}}}"#,
        ];
        for c in cases {
            assert_eq!(quick(c.as_bytes(), POS), None, "{c}");
        }
        assert_eq!(quick(LINES[0].as_bytes(), LinePos::default()), None);
    }

    /// Where the walk and the probe both answer, they read the same folder and branch.
    fn same_folder_as_the_probe(line: &[u8]) {
        let walked = usage_read(line, POS).and_then(|r| r.folder_and_branch);
        if let (Some(w), Some(p)) = (walked, crate::probe::probe(line, &Default::default())) {
            assert_eq!(w, (p.cwd, p.branch), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn the_walk_reads_folders_as_the_probe_does() {
        let line = LINES[0];
        for (folder, want) in [
            (r#""cwd":"/w/k""#, Some("/w/k")),
            (r#""cwd":"""#, None),
            (r#""cwd":null"#, None),
        ] {
            let v = line.replacen(r#""cwd":"/w/k""#, folder, 1);
            let r = usage_read(v.as_bytes(), POS).unwrap();
            assert_eq!(r.folder_and_branch, Some((want, Some("main"))), "{v}");
            same_folder_as_the_probe(v.as_bytes());
        }
        // Neither a string nor null: the probe is unsure, and so is the walk's folder.
        let v = line.replacen(r#""cwd":"/w/k""#, r#""cwd":true"#, 1);
        assert_eq!(
            usage_read(v.as_bytes(), POS).unwrap().folder_and_branch,
            None
        );
        assert!(crate::probe::probe(v.as_bytes(), &Default::default()).is_none());
    }

    transcope_testkit::quick_path_tests!(
        lines: LINES,
        bytes: mutate::BYTES,
        one_in: 4,
        quick: quick,
        full: full,
        also: same_folder_as_the_probe,
    );
}

//! A transcript's first and last recorded times, read from its head and tail.
//!
//! The stages skip decoding the lines they cannot use (most of a transcript), so the
//! times are not taken from the entries: the first `"timestamp": "<time>"` in the first
//! 64 KiB and the last one in the 64 KiB before the end of what was read are. Every
//! format transcope reads (Claude Code and Codex lines, Gemini CLI messages) names its
//! record times so, and a key inside a JSON string has its quotes escaped, so a match
//! is a real key. Two reads of the page cache per transcript.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::Stamp;

/// How much of the head and of the tail is searched first, and at most (a line can be
/// long: a window without a time is read again, this much larger).
const WINDOW: u64 = 16 * 1024;
const WIDEST: u64 = 256 * 1024;

/// The first and last times of a read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// The first time found.
    pub first: Option<Stamp>,
    /// The last time found.
    pub last: Option<Stamp>,
}

/// The span of `path`'s bytes `start..end`: the first time near `start`, the last near
/// `end`.
pub fn span(path: &Path, start: u64, end: u64) -> io::Result<Span> {
    if end <= start {
        return Ok(Span::default());
    }
    let file = File::open(path)?;
    let read = |from: u64, to: u64| -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; (to - from) as usize];
        let mut done = 0;
        while done < buf.len() {
            match file.read_at(&mut buf[done..], from + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        buf.truncate(done);
        Ok(buf)
    };
    let mut first = None;
    let mut window = WINDOW;
    while first.is_none() {
        let head = read(start, end.min(start + window))?;
        first = times(&head).next();
        if start + window >= end || window >= WIDEST {
            break;
        }
        window *= 4;
    }
    let mut last = None;
    let mut window = WINDOW;
    while last.is_none() {
        let from = end.saturating_sub(window).max(start);
        let tail = read(from, end)?;
        last = times(&tail).last();
        if from == start || window >= WIDEST {
            break;
        }
        window *= 4;
    }
    Ok(Span { first, last })
}

/// Every `"timestamp": "<time>"` in `bytes` that parses, in order.
fn times(bytes: &[u8]) -> impl Iterator<Item = Stamp> + '_ {
    memchr::memmem::find_iter(bytes, b"\"timestamp\"").filter_map(move |i| {
        let mut rest = &bytes[i + 11..];
        let skip = |r: &mut &[u8]| {
            while let [b' ' | b'\t' | b'\r' | b'\n', tail @ ..] = *r {
                *r = tail;
            }
        };
        skip(&mut rest);
        rest = rest.strip_prefix(b":")?;
        skip(&mut rest);
        rest = rest.strip_prefix(b"\"")?;
        let close = memchr::memchr(b'"', rest)?;
        let text = std::str::from_utf8(&rest[..close]).ok()?;
        if text.len() > 64 {
            return None;
        }
        Stamp::parse(text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_times_of_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        let mut text = String::new();
        text.push_str("{\"timestamp\":\"2026-10-08T10:00:00Z\",\"x\":\"\\\"timestamp\\\":\\\"1999-01-01\\\"\"}\n");
        for i in 0..3000 {
            text.push_str(&format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "y".repeat(40)));
        }
        text.push_str("{\"timestamp\" : \"2026-10-08T12:00:00Z\"}\n{\"timestamp\":\"nope\"}\n");
        std::fs::write(&p, &text).unwrap();
        let s = span(&p, 0, text.len() as u64).unwrap();
        assert_eq!(s.first.unwrap().text, "2026-10-08T10:00:00Z");
        assert_eq!(s.last.unwrap().text, "2026-10-08T12:00:00Z");
        // A piece with no time in it has none.
        let s = span(&p, 200, 300).unwrap();
        assert_eq!(s, Span::default());
    }
}

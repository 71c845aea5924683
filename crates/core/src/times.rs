//! A read's first and last record times, found in its bytes as they are framed.
//!
//! The stages skip decoding the lines they cannot use (most of a transcript), so a
//! read's times are not taken from its entries: the first `"timestamp": "<time>"` in
//! the read's first [`WINDOW`] bytes and the last one in its last [`WINDOW`] bytes
//! are, looked for in the lines the engine frames (every other line costs one
//! comparison). The last is looked for in the lines of the last [`TAIL`] bytes; only
//! when none of them names a time are the bytes before them, back to [`WINDOW`],
//! searched as well ([`Finder::wider`]: the engine reads them again, a rare case).
//! Every format transcope
//! reads (Claude Code and Codex lines, Gemini CLI messages) names its record times so,
//! and a key inside a JSON string has its quotes escaped, so a match is a real key.
//!
//! ```
//! use transcope_core::times::Finder;
//! let lines: [&[u8]; 3] = [
//!     br#"{"timestamp":"2026-10-08T10:00:00Z","x":"\"timestamp\":\"1999-01-01\""}"#,
//!     br#"{"n":1}"#,
//!     br#"{"timestamp" : "2026-10-08T12:00:00Z"}"#,
//! ];
//! let mut f = Finder::new(0, 200);
//! let mut at = 0;
//! for l in lines {
//!     f.see(l, at);
//!     at += l.len() as u64 + 1;
//! }
//! let t = f.finish();
//! assert_eq!(t.first.as_deref(), Some("2026-10-08T10:00:00Z"));
//! assert_eq!(t.last.as_deref(), Some("2026-10-08T12:00:00Z"));
//! ```

/// How far into a read its first time is looked for, and how far back from its end
/// its last (a window without one has none: a line can be long, but not every line
/// of a quarter MiB is without a time).
pub const WINDOW: u64 = 256 * 1024;

/// How far back from a read's end its lines are searched for its last time as they
/// are framed (searching every line of [`WINDOW`] was 2 % of a backfill's
/// instructions; a line of these bytes almost always names a time).
pub const TAIL: u64 = 16 * 1024;

/// The first and last times of a read, as recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Times {
    /// The first time found.
    pub first: Option<String>,
    /// The last time found.
    pub last: Option<String>,
}

/// Finds the [`Times`] of a read of bytes `[start, end)` shown its lines in order.
#[derive(Clone, Debug, Default)]
pub struct Finder {
    /// The first time is looked for before here.
    head_end: u64,
    /// The last time is looked for from here on.
    tail_start: u64,
    /// And, when none is found there, from here on to `end` ([`Finder::wider`]).
    wide_start: u64,
    end: u64,
    found: Times,
}

impl Finder {
    /// For a read of bytes `[start, end)` (`end`: where it is to end; one cut short
    /// shows its last line to [`Finder::see_last`]).
    pub fn new(start: u64, end: u64) -> Finder {
        Finder {
            head_end: start.saturating_add(WINDOW),
            tail_start: end.saturating_sub(TAIL).max(start),
            wide_start: end.saturating_sub(WINDOW).max(start),
            end,
            found: Times::default(),
        }
    }

    /// A line (or any piece of the read) at `offset`, after every piece before it.
    #[inline]
    pub fn see(&mut self, bytes: &[u8], offset: u64) {
        let end = offset.saturating_add(bytes.len() as u64);
        if self.found.first.is_none() && offset < self.head_end {
            let upto =
                usize::try_from(self.head_end - offset).map_or(bytes.len(), |n| n.min(bytes.len()));
            if let Some(t) = times(&bytes[..upto]).next() {
                self.found.first = Some(t.to_owned());
            }
        }
        if end > self.tail_start {
            let from = usize::try_from(self.tail_start.saturating_sub(offset)).unwrap_or(0);
            self.see_last(&bytes[from.min(bytes.len())..]);
        }
    }

    /// The last time of `bytes`, when they hold one, is the last time so far (the last
    /// line of a read cut short of its end, wherever it is).
    pub fn see_last(&mut self, bytes: &[u8]) {
        // One search of the line with the finder built once (building one per line,
        // or searching from the end, which memchr does without SIMD, cost more than
        // the search); a line holds one time, so one parse.
        let last = times(bytes).last();
        if let Some(t) = last {
            let last = self.found.last.get_or_insert_with(String::new);
            last.clear();
            last.push_str(t);
        }
    }

    /// The bytes to search for the last time as well, when the lines of the last
    /// [`TAIL`] bytes named none: the last [`WINDOW`] bytes (clipped to the read;
    /// whole, so a time cut by the tail's start is seen). Their last time, if any,
    /// goes to [`Finder::see_wider`].
    pub fn wider(&self) -> Option<std::ops::Range<u64>> {
        (self.found.last.is_none() && self.wide_start < self.tail_start)
            .then_some(self.wide_start..self.end)
    }

    /// The last time of the [`Finder::wider`] bytes, when they name one.
    pub fn see_wider(&mut self, bytes: &[u8]) {
        if self.found.last.is_none() {
            self.see_last(bytes);
        }
    }

    /// [`Finder::see_wider`] from a read in hand: `buf` holds the read's bytes from
    /// `base` on (nothing read again).
    pub fn widen_in(&mut self, buf: &[u8], base: u64) {
        if let Some(r) = self.wider() {
            let at = |o: u64| {
                usize::try_from(o.saturating_sub(base)).map_or(buf.len(), |i| i.min(buf.len()))
            };
            self.see_wider(&buf[at(r.start)..at(r.end)]);
        }
    }

    /// What was found.
    pub fn finish(self) -> Times {
        self.found
    }
}

/// The [`Times`] of `bytes`, a whole read in hand (one document, say).
pub fn of(bytes: &[u8]) -> Times {
    let mut f = Finder::new(0, bytes.len() as u64);
    f.see(bytes, 0);
    f.widen_in(bytes, 0);
    f.finish()
}

/// Every `"timestamp": "<time>"` in `bytes` whose time parses, in order.
pub fn times(bytes: &[u8]) -> impl Iterator<Item = &str> + '_ {
    static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(KEY));
    FINDER
        .find_iter(bytes)
        .filter_map(move |i| time_at(bytes, i))
}

/// The key searched for.
const KEY: &[u8] = b"\"timestamp\"";

/// The time of the `"timestamp"` key at `i` in `bytes`, when a `:` and a string that
/// parses as a time follow it.
fn time_at(bytes: &[u8], i: usize) -> Option<&str> {
    let mut rest = &bytes[i + KEY.len()..];
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
    crate::timestamp::parse(text).map(|_| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines of `text` shown to a finder for bytes `[start, end)` of it, as the
    /// engine frames them (a line cut by `start` or `end` only in part).
    fn framed(text: &str, start: usize, end: usize) -> Times {
        let mut f = Finder::new(start as u64, end as u64);
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let (a, b) = (at.max(start), (at + line.len()).min(end));
            if a < b {
                f.see(&text.as_bytes()[a..b], a as u64);
            }
            at += line.len();
        }
        // As the engine does: the bytes before the tail, when its lines named no time.
        f.widen_in(text.as_bytes(), 0);
        f.finish()
    }

    #[test]
    fn first_and_last_times_of_head_and_tail() {
        let mut text = String::new();
        text.push_str("{\"timestamp\":\"2026-10-08T10:00:00Z\",\"x\":\"\\\"timestamp\\\":\\\"1999-01-01\\\"\"}\n");
        for i in 0..3000 {
            text.push_str(&format!("{{\"n\":{i},\"pad\":\"{}\"}}\n", "y".repeat(40)));
        }
        text.push_str("{\"timestamp\" : \"2026-10-08T12:00:00Z\"}\n{\"timestamp\":\"nope\"}\n");
        let s = framed(&text, 0, text.len());
        assert_eq!(s.first.as_deref(), Some("2026-10-08T10:00:00Z"));
        assert_eq!(s.last.as_deref(), Some("2026-10-08T12:00:00Z"));
        assert_eq!(of(text.as_bytes()), s);
        // A piece with no time in it has none.
        assert_eq!(framed(&text, 200, 300), Times::default());
    }

    #[test]
    fn only_the_windows_are_looked_at() {
        let pad = format!("{{\"pad\":\"{}\"}}\n", "y".repeat(1000));
        let at = |h: u32| format!("{{\"timestamp\":\"2026-10-08T{h:02}:00:00Z\"}}\n");
        // A time in the middle, more than a window from either end: found by neither.
        let n = (WINDOW as usize) / pad.len() + 2;
        let text = format!("{}{}{}", pad.repeat(n), at(11), pad.repeat(n));
        assert_eq!(framed(&text, 0, text.len()), Times::default());
        // Times just inside each window.
        let text = format!(
            "{}{}{}{}",
            at(9),
            pad.repeat(2 * n),
            at(13),
            pad.repeat(n - 3)
        );
        let s = framed(&text, 0, text.len());
        assert_eq!(s.first.as_deref(), Some("2026-10-08T09:00:00Z"));
        assert_eq!(s.last.as_deref(), Some("2026-10-08T13:00:00Z"));
        // A read cut short shows its last line: its time is the last.
        let mut f = Finder::new(0, 1 << 40);
        f.see(at(9).as_bytes(), 0);
        assert_eq!(f.clone().finish().last, None);
        f.see_last(at(10).as_bytes());
        assert_eq!(f.finish().last.as_deref(), Some("2026-10-08T10:00:00Z"));
    }
}

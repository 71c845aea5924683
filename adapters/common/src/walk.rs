//! Reading a few values of a line without decoding it, checked as serde_json checks
//! what it skips.
//!
//! A line wanted for a handful of values (an assistant line's usage, when no stage
//! wants its texts) need not go through serde: [`Walk`] walks the top-level object key
//! by key, hands the caller the values it asks for, and skips the rest. Unlike the
//! probe ([`crate::probe`]), it *checks* every byte it passes over: what it skips must
//! be a value serde_json's skip would accept (the JSON grammar; strings without
//! control characters and with valid escapes, `\u` followed by four hex digits), so a
//! caller that gets an answer knows the full decode would have decoded the line, and
//! to the same values.
//!
//! It is conservative the other way: anything it is not sure of — a key or a wanted
//! string with an escape, nesting deeper than [`MAX_DEPTH`], a number that is not a
//! small unsigned integer where one is read — answers `None`, and the caller decodes
//! the line in full. One pass over the line, 64 bytes at a time with the probe's
//! masks plus a control-character mask (AVX2 when the CPU has it), checks its strings
//! and indexes their quotes; the walk then finds a string's end by a bit scan.
//!
//! ```
//! use transcope_adapter_common::walk::{Lit, Walk};
//! let text = r#"{"n": 7, "skip": [1, {"a": "x\ny"}], "s": "v", "b": null}"#;
//! let w = Walk::new(text);
//! let mut got = Vec::new();
//! let end = w.object(0, |key, at| match key {
//!     "n" => w.uint(at).map(|(n, e)| { got.push(n.to_string()); e }),
//!     "s" => w.plain_str(at).map(|(s, e)| { got.push(s.to_owned()); e }),
//!     "b" => w.literal(at).map(|(l, e)| { got.push(format!("{l:?}")); e }),
//!     _ => w.skip(at),
//! });
//! assert_eq!(end, Some(text.len()));
//! assert_eq!(got, ["7", "v", "Null"]);
//! // A control character inside a skipped string: serde_json would refuse the line.
//! let bad = "{\"skip\": \"a\u{1}b\"}";
//! let w = Walk::new(bad);
//! assert_eq!(w.object(0, |_, at| w.skip(at)), None);
//! // The same line without it.
//! let good = "{\"skip\": \"a b\"}";
//! let w = Walk::new(good);
//! assert_eq!(w.object(0, |_, at| w.skip(at)), Some(good.len()));
//! ```

#[cfg(target_arch = "x86_64")]
use crate::probe::masks_avx2;
use crate::probe::masks_baseline;
use crate::probe::{escaped_bits, prefix_xor, skip_ws, Line};

/// How deep [`Walk::skip`] follows nested values before it answers `None` (serde_json
/// skips any depth; the caller's full decode then decides).
pub const MAX_DEPTH: u32 = 64;

/// A JSON literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lit {
    /// `null`.
    Null,
    /// `true`.
    True,
    /// `false`.
    False,
}

/// Whether `c` may follow a backslash in a JSON string.
#[inline(always)]
fn escape_ok(c: u8) -> bool {
    matches!(
        c,
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' | b'u'
    )
}

/// One past the number starting at `i` (the JSON grammar serde_json's skip accepts).
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |b: &[u8], mut i: usize| {
        let from = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > from).then_some(i)
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    i = match *b.get(i)? {
        // One leading zero, never followed by a digit.
        b'0' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => return None,
        b'0' => i + 1,
        b'1'..=b'9' => digits(b, i)?,
        _ => return None,
    };
    if b.get(i) == Some(&b'.') {
        i = digits(b, i + 1)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits(b, i)?;
    }
    Some(i)
}

/// The literal at `i`, and one past it. Its first four bytes are compared as one word
/// (a slice comparison of four bytes was a call to `memcmp`).
fn literal_at(b: &[u8], i: usize) -> Option<(Lit, usize)> {
    let four: [u8; 4] = b.get(i..i + 4)?.try_into().ok()?;
    match &four {
        b"null" => Some((Lit::Null, i + 4)),
        b"true" => Some((Lit::True, i + 4)),
        b"fals" if b.get(i + 4) == Some(&b'e') => Some((Lit::False, i + 5)),
        _ => None,
    }
}

/// The index pass, compiled once per instruction set (as the probe's scan is).
macro_rules! indexer {
    ($name:ident, $masks:ident, $(#[$attr:meta])*) => {
        mod $name {
            use super::*;

            /// Index `l`: for each 64-byte block, its unescaped quotes and the closing
            /// ones of strings that hold an escape ([`Bits`]), checking every string as
            /// serde_json checks a string it skips: no control character, every escape
            /// valid. `false` when a string fails (or the line ends inside one).
            $(#[$attr])*
            pub(super) fn index(l: &Line<'_>, blocks: &mut Vec<Bits>) -> bool {
                let mut carry = 0u64;
                // All ones when the block starts inside a string.
                let mut inside_before = 0u64;
                // An escape's mark carried into the block (its string goes on).
                let mut marked = 0u64;
                let mut p = 0;
                while let Some(block) = l.block_at(p) {
                    let m = $masks::<false, true>(block);
                    let escaped = escaped_bits(m.backslash, &mut carry);
                    let quote = m.quote & !escaped;
                    // From each opening quote up to (not including) its closing one.
                    let inside = prefix_xor(quote) ^ inside_before;
                    inside_before = ((inside as i64) >> 63) as u64;
                    if m.ctrl & inside != 0 {
                        return false;
                    }
                    let inside_escapes = escaped & inside;
                    let mut e = inside_escapes;
                    while e != 0 {
                        let i = e.trailing_zeros() as usize;
                        e &= e - 1;
                        let c = block[i];
                        if !escape_ok(c) {
                            return false;
                        }
                        if c == b'u' {
                            match l.b.get(p + i + 1..p + i + 5) {
                                Some(hex) if hex.iter().all(u8::is_ascii_hexdigit) => {}
                                _ => return false,
                            }
                        }
                    }
                    // Each string is a run of ones in `inside` ending just below its
                    // closing quote: adding its escapes to it carries out of the run into
                    // that quote exactly when it holds one.
                    let (sum, over) = inside.overflowing_add(inside_escapes);
                    let (sum, over_mark) = sum.overflowing_add(marked);
                    marked = u64::from(over | over_mark);
                    blocks.push(Bits {
                        quote,
                        escaped_close: sum & quote & !inside,
                    });
                    p += 64;
                }
                inside_before == 0
            }
        }
    };
}

indexer!(baseline, masks_baseline, #[inline(always)]);
#[cfg(target_arch = "x86_64")]
indexer!(avx2, masks_avx2, #[target_feature(enable = "avx2")] #[inline]);

/// A 64-byte block of a line as the index keeps it (bit `i`: the block's byte `i`).
#[derive(Clone, Copy, Default)]
struct Bits {
    /// Its unescaped quotes.
    quote: u64,
    /// The closing quotes of strings that hold an escape.
    escaped_close: u64,
}

thread_local! {
    /// The index room of the thread's last walk, kept for its next: a caller walks
    /// line after line.
    static ROOM: std::cell::Cell<Vec<Bits>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A line being walked: its text and its string index, made in one pass.
///
/// The index holds the line's unescaped quotes, a bit each, which pair in order. The
/// walk meets them in that order: it looks at every byte outside strings itself (a
/// backslash there, which could escape a quote, is no value and ends the walk) and
/// passes over a string from its opening quote to the index's next quote, so the
/// quote it stands at is always an opening one and the next quote closes it.
pub struct Walk<'a> {
    text: &'a str,
    /// Each block's bits. Empty when a string of the line failed the index's checks
    /// (then no string is read or skipped).
    blocks: Vec<Bits>,
    /// The quotes not yet passed: those of block `.0` left in `.1`, then the later
    /// blocks'. The walk takes them two by two, a string at a time (its next
    /// string's ends never wait on where the walk stands).
    left: std::cell::Cell<(usize, u64)>,
}

impl<'a> Walk<'a> {
    /// A walk over `text` (a line's text: [`crate::text::line_text`]).
    pub fn new(text: &'a str) -> Walk<'a> {
        Walk::with_avx2(text, true)
    }

    /// [`Walk::new`] with the instruction set chosen (`avx2` only where the CPU has
    /// it). For tests and benchmarks.
    #[allow(unsafe_code)]
    pub fn with_avx2(text: &'a str, avx2: bool) -> Walk<'a> {
        let line = Line::new(text.as_bytes());
        // The room of the thread's last walk (handed back when a walk is dropped).
        let mut blocks = ROOM.take();
        blocks.reserve(text.len().div_ceil(64));
        #[cfg(target_arch = "x86_64")]
        let valid = if avx2 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            unsafe { avx2::index(&line, &mut blocks) }
        } else {
            baseline::index(&line, &mut blocks)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let valid = {
            let _ = avx2;
            baseline::index(&line, &mut blocks)
        };
        if !valid {
            blocks.clear();
        }
        let first = blocks.first().map_or(0, |b| b.quote);
        Walk {
            text,
            blocks,
            left: std::cell::Cell::new((0, first)),
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The first quote of `left`, and what is left after it.
    #[inline(always)]
    fn next_quote(&self, (mut k, mut q): (usize, u64)) -> Option<(usize, (usize, u64))> {
        while q == 0 {
            k += 1;
            q = self.blocks.get(k)?.quote;
        }
        Some((k * 64 + q.trailing_zeros() as usize, (k, q & (q - 1))))
    }

    /// The next string's quotes, `(open, close)`, when it opens at `at` or after white
    /// space from there, and the quotes left past it — looked at, not taken. The walk
    /// meets strings in order: a string read twice, or out of order, is not the next.
    #[inline]
    fn pair_at(&self, at: usize) -> Option<(usize, usize, (usize, u64))> {
        let (open, left) = self.next_quote(self.left.get())?;
        // At `at` itself (a compact line: no byte to look at first), or past white
        // space.
        if open != at && open != skip_ws(self.bytes(), at) {
            return None;
        }
        let (close, left) = self.next_quote(left)?;
        Some((open, close, left))
    }

    /// One past the closing quote of the string at `at` (white space before it
    /// allowed), taken from the index.
    #[inline]
    fn string_end(&self, at: usize) -> Option<usize> {
        let (_, close, left) = self.pair_at(at)?;
        self.left.set(left);
        Some(close + 1)
    }

    /// One past the value at `at` (white space before it allowed), checked as
    /// serde_json checks a value it skips; `None` when it is not such a value (or is
    /// nested deeper than [`MAX_DEPTH`]).
    #[inline]
    pub fn skip(&self, at: usize) -> Option<usize> {
        self.skip_within(at, MAX_DEPTH)
    }

    fn skip_within(&self, at: usize, depth: u32) -> Option<usize> {
        // A string (most values of a compact line) is found by its quotes alone.
        if let Some(e) = self.string_end(at) {
            return Some(e);
        }
        let b = self.bytes();
        let i = skip_ws(b, at);
        match *b.get(i)? {
            // A quote that is not the index's next: out of step with it.
            b'"' => None,
            open @ (b'{' | b'[') => {
                let depth = depth.checked_sub(1)?;
                let close = if open == b'{' { b'}' } else { b']' };
                let mut j = skip_ws(b, i + 1);
                if b.get(j) == Some(&close) {
                    return Some(j + 1);
                }
                loop {
                    if open == b'{' {
                        let k = self.string_end(j)?;
                        let c = skip_ws(b, k);
                        if b.get(c) != Some(&b':') {
                            return None;
                        }
                        j = c + 1;
                    }
                    j = skip_ws(b, self.skip_within(j, depth)?);
                    match *b.get(j)? {
                        b',' => j += 1,
                        c if c == close => return Some(j + 1),
                        _ => return None,
                    }
                }
            }
            b'-' | b'0'..=b'9' => number_end(b, i),
            _ => literal_at(b, i).map(|(_, e)| e),
        }
    }

    /// The string at `at` (white space before it allowed) when it holds no escape —
    /// exactly the text serde_json would decode it to — and one past it.
    #[inline]
    pub fn plain_str(&self, at: usize) -> Option<(&'a str, usize)> {
        let (open, close, left) = self.pair_at(at)?;
        if (self.blocks[close / 64].escaped_close >> (close % 64)) & 1 == 1 {
            // Not read (nor taken): the string may still be skipped.
            return None;
        }
        self.left.set(left);
        // Quotes are ASCII: both ends are character boundaries.
        Some((self.text.get(open + 1..close)?, close + 1))
    }

    /// The literal at `at` (white space before it allowed), and one past it.
    #[inline]
    pub fn literal(&self, at: usize) -> Option<(Lit, usize)> {
        literal_at(self.bytes(), skip_ws(self.bytes(), at))
    }

    /// The number at `at` when it is an unsigned integer of at most 19 digits (no
    /// fraction, no exponent: the `u64` serde_json would read), and one past it.
    #[inline]
    pub fn uint(&self, at: usize) -> Option<(u64, usize)> {
        let b = self.bytes();
        let i = skip_ws(b, at);
        // Read as the digits go by (19 digits always fit a `u64`).
        let (mut j, mut v) = (i, 0u64);
        while let Some(d) = b.get(j).filter(|c| c.is_ascii_digit()) {
            if j - i == 19 {
                return None;
            }
            v = v * 10 + u64::from(d - b'0');
            j += 1;
        }
        // No digit (a sign, another value), a leading zero, or a fraction or exponent
        // to come: not such a number.
        let leading_zero = j - i > 1 && b[i] == b'0';
        if j == i || leading_zero || matches!(b.get(j), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some((v, j))
    }

    /// The first byte of the value at `at` (after white space).
    #[inline]
    pub fn peek(&self, at: usize) -> Option<u8> {
        self.bytes().get(skip_ws(self.bytes(), at)).copied()
    }

    /// Walk the object at `open` (white space before it allowed): `each(key, at)` for
    /// every key, `at` where its value starts, answering one past the value (the
    /// caller reads or [`Walk::skip`]s it). A key with an escape answers `None` (the
    /// full decode matches keys unescaped). Returns one past the object.
    pub fn object(
        &self,
        open: usize,
        mut each: impl FnMut(&'a str, usize) -> Option<usize>,
    ) -> Option<usize> {
        let b = self.bytes();
        let i = skip_ws(b, open);
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let mut j = skip_ws(b, i + 1);
        if b.get(j) == Some(&b'}') {
            return Some(j + 1);
        }
        loop {
            let (key, k) = self.plain_str(j)?;
            let c = skip_ws(b, k);
            if b.get(c) != Some(&b':') {
                return None;
            }
            j = skip_ws(b, each(key, c + 1)?);
            match *b.get(j)? {
                // The next key, found by `plain_str` where it starts.
                b',' => j += 1,
                b'}' => return Some(j + 1),
                _ => return None,
            }
        }
    }
}

impl Drop for Walk<'_> {
    fn drop(&mut self) {
        // A rare huge line's room is not kept.
        if self.blocks.capacity() <= 1 << 14 {
            let mut blocks = std::mem::take(&mut self.blocks);
            blocks.clear();
            ROOM.set(blocks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IgnoredAny;

    /// What serde_json's skip says of `text` as one value.
    fn serde_accepts(text: &str) -> bool {
        serde_json::from_str::<IgnoredAny>(text).is_ok()
    }

    fn walk_accepts(text: &str, avx2: bool) -> bool {
        let w = Walk::with_avx2(text, avx2);
        w.skip(0)
            .is_some_and(|e| skip_ws(text.as_bytes(), e) == text.len())
    }

    #[test]
    fn skips_what_serde_skips() {
        let long = "x".repeat(150);
        let cases = [
            r#"{"a": [1, -2.5e+3, 0, true, false, null, "s", {"b": {}}, []]}"#.to_owned(),
            r#""esc \" \\ \/ \b \f \n \r \t \u00e9 \ud800""#.to_owned(),
            format!(r#"["{long}\"{long}", "{long}\\"]"#),
            format!(r#"{{"k{long}": "v\n{long}"}}"#),
            "  {  \"a\" :\t1 , \"b\"\n: [ ] }  ".to_owned(),
        ];
        for c in &cases {
            assert!(serde_accepts(c), "{c}");
            for avx2 in [false, true] {
                assert!(walk_accepts(c, avx2), "{c} (avx2 {avx2})");
            }
        }
    }

    #[test]
    fn refuses_what_serde_refuses() {
        let long = "y".repeat(100);
        let cases = [
            "{\"a\": \"x\u{1f}\"}".to_owned(),
            format!("[\"{long}\t{long}\"]"),
            r#""\x""#.to_owned(),
            r#""\u12g4""#.to_owned(),
            r#""\u12""#.to_owned(),
            "[01]".to_owned(),
            "[1.]".to_owned(),
            "[1e]".to_owned(),
            "[-]".to_owned(),
            "[.5]".to_owned(),
            "[nul]".to_owned(),
            "[NaN]".to_owned(),
            "[1,]".to_owned(),
            r#"{"a" 1}"#.to_owned(),
            r#"{"a": 1,}"#.to_owned(),
            "{1: 2}".to_owned(),
            r#"["unterminated"#.to_owned(),
            format!(r#"["{long}\"]"#),
            "[1 2]".to_owned(),
            "[truex]".to_owned(),
        ];
        for c in &cases {
            assert!(!serde_accepts(c), "{c}");
            for avx2 in [false, true] {
                assert!(!walk_accepts(c, avx2), "{c} (avx2 {avx2})");
            }
        }
    }

    #[test]
    fn reads_plain_values_only() {
        let w = Walk::new(
            r#"{"s": "a\nb", "t": "ab", "n": 12, "f": 1.0, "big": 12345678901234567890}"#,
        );
        let mut got = Vec::new();
        w.object(0, |k, at| {
            let s = w.plain_str(at);
            let n = w.uint(at);
            got.push((k, s.map(|s| s.0), n.map(|n| n.0)));
            match s {
                Some((_, end)) => Some(end),
                None => w.skip(at),
            }
        })
        .unwrap();
        assert_eq!(
            got,
            [
                ("s", None, None),
                ("t", Some("ab"), None),
                ("n", None, Some(12)),
                ("f", None, None),
                ("big", None, None),
            ]
        );
        // A key with an escape: the full decode decides.
        let w = Walk::new(r#"{"c\u0077d": 1}"#);
        assert_eq!(w.object(0, |_, at| w.skip(at)), None);
    }

    /// A number is read as the `u64` serde_json reads it, or not at all: never a
    /// different value, and every plain integer of up to 19 digits.
    #[test]
    fn unsigned_integers_read_as_serde_reads_them() {
        let cases = [
            ("0", Some(0)),
            ("7", Some(7)),
            (" 42", Some(42)),
            ("9999999999999999999", Some(9_999_999_999_999_999_999)),
            ("10000000000000000000", None),
            ("00", None),
            ("01", None),
            ("-1", None),
            ("-0", None),
            ("1.5", None),
            ("1e3", None),
            ("1E3", None),
            ("0.0", None),
            ("", None),
            ("x", None),
        ];
        for (n, want) in cases {
            let text = format!("[{n}]");
            let w = Walk::new(&text);
            let got = w.uint(1);
            assert_eq!(got.map(|g| g.0), want, "{n:?}");
            if let Some((v, end)) = got {
                assert_eq!(serde_json::from_str::<u64>(n.trim()).ok(), Some(v), "{n:?}");
                assert_eq!(&text[end..], "]", "{n:?}");
            }
        }
    }

    #[test]
    fn escapes_are_told_per_string() {
        // Strings that end in the block they start in, strings that cross one or two
        // block boundaries, an escape as a block's last or first byte.
        let pieces = [
            "a".repeat(3),
            "b\\nb".to_owned(),
            "c".repeat(70),
            format!("{}\\\"{}", "d".repeat(61), "d".repeat(5)),
            "e".repeat(130),
            format!("{}\\u00e9", "f".repeat(62)),
            "g".to_owned(),
            String::new(),
            // An escape whose string closes two blocks later: its mark is carried
            // through a block that lies wholly inside the string.
            format!("\\t{}", "h".repeat(140)),
        ];
        for shift in 0..64 {
            let mut text = format!("{{\"k{}\": 0", "k".repeat(shift));
            for (i, v) in pieces.iter().enumerate() {
                text.push_str(&format!(", \"v{i}\": \"{v}\""));
            }
            text.push('}');
            for avx2 in [false, true] {
                let w = Walk::with_avx2(&text, avx2);
                let mut got = Vec::new();
                let end = w.object(0, |k, at| {
                    if k.starts_with('k') {
                        return w.skip(at);
                    }
                    let s = w.plain_str(at);
                    got.push(s.map(|s| s.0.to_owned()));
                    s.map(|s| s.1).or_else(|| w.skip(at))
                });
                assert_eq!(end, Some(text.len()), "{text}");
                let want: Vec<_> = pieces
                    .iter()
                    .map(|v| (!v.contains('\\')).then(|| v.clone()))
                    .collect();
                assert_eq!(got, want, "shift {shift}, avx2 {avx2}");
            }
        }
    }

    #[test]
    fn a_buffer_walks_line_after_line() {
        for text in [r#"{"a": "x\"y", "b": "z"}"#, r#"{"b": "w"}"#] {
            let w = Walk::new(text);
            let mut got = None;
            w.object(0, |k, at| match k {
                "b" => w.plain_str(at).map(|(s, e)| {
                    got = Some(s);
                    e
                }),
                _ => w.skip(at),
            })
            .unwrap();
            assert!(got.is_some_and(|s| s.len() == 1));
        }
    }

    #[test]
    fn depth_is_bounded() {
        let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
        assert!(serde_accepts(&deep));
        assert!(!walk_accepts(&deep, true));
        let ok = format!("{}{}", "[".repeat(60), "]".repeat(60));
        assert!(walk_accepts(&ok, true));
    }

    proptest::proptest! {
        /// Whatever the walk accepts, serde_json's skip accepts (the other way round
        /// the walk may refuse: the full decode decides then).
        #[test]
        fn never_accepts_what_serde_refuses(s in r#"[\[\]{}",:0-9a-z\\ .eE+\-\x01\x7f-\u{ff}]{0,80}"#) {
            for avx2 in [false, true] {
                if walk_accepts(&s, avx2) {
                    proptest::prop_assert!(serde_accepts(&s), "{:?}", s);
                }
            }
        }

        #[test]
        fn mutated_documents(cut in 0usize..200, byte in proptest::sample::select(b"\"\\{}[],:0 ue\x01".to_vec())) {
            let base = r#"{"a": [1, {"b": "x\"y\\z\u00e9"}, -0.5e-3], "c": "a long enough string to cross a sixty-four byte block boundary, twice over: abcdefghijklmnopqrstuvwxyz", "d": null}"#;
            let mut v = base.as_bytes().to_vec();
            let at = cut % v.len();
            v[at] = byte;
            if let Ok(s) = std::str::from_utf8(&v) {
                for avx2 in [false, true] {
                    proptest::prop_assert_eq!(walk_accepts(s, avx2), serde_accepts(s), "{:?}", s);
                }
            }
        }
    }
}

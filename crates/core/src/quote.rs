//! Quoting an untrusted value for a message: the one way a value read from a
//! transcript, a hook payload or a file transcope does not own goes into an error.
//!
//! [`quote`] escapes the value (quotes, backslashes, control and non-printable
//! characters, as Rust's `escape_debug` does) and cuts it after [`QUOTE_CHARS`]
//! characters, saying how long the whole value was; a message built from untrusted
//! values is therefore bounded whatever their size (a 2 MB `sessionId` costs about
//! 70 bytes of stderr, not 2 MB). [`quote_path`] does the same for a path.
//!
//! [`escape_unsafe`] is the lighter rule for text shown to a person as it is (a line
//! on stderr, a table cell, the report's page): only the characters that could drive
//! the terminal or reorder what is shown ([`is_unsafe`]: controls, bidirectional
//! controls) are escaped, in the same `\u{..}` form; accents, CJK,
//! quotes and backslashes stay as they are. [`bounded`] adds the cut of [`quote`] to
//! it, for a value echoed inside someone else's quotes (clap's).
//!
//! ```
//! use transcope_core::quote::quote;
//! assert_eq!(quote("abc").to_string(), r#""abc""#);
//! assert_eq!(quote("a\nb\"").to_string(), r#""a\nb\"""#);
//! let long = "x".repeat(1000);
//! assert_eq!(
//!     quote(&long).to_string(),
//!     format!("\"{}\"… (1000 bytes)", "x".repeat(transcope_core::quote::QUOTE_CHARS))
//! );
//! ```

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

/// How many characters of a value [`quote`] shows before cutting it.
pub const QUOTE_CHARS: usize = 64;

/// A value quoted for a message: escaped, cut after [`QUOTE_CHARS`] characters, with
/// the value's length in bytes when cut. Its `Display` is at most about
/// `10 × QUOTE_CHARS + 30` bytes (an escaped character is at most `\u{10ffff}`).
#[derive(Clone, Copy, Debug)]
pub struct Quoted<'a>(&'a str);

/// Quote `value` for a message (see the [module](self) documentation).
pub fn quote(value: &str) -> Quoted<'_> {
    Quoted(value)
}

/// Quote a path for a message: its bytes read as UTF-8 (invalid sequences shown as
/// U+FFFD), then as [`quote`]. The length given when cut is the path's, in bytes.
pub fn quote_path(path: &Path) -> QuotedPath<'_> {
    QuotedPath(path)
}

/// A path quoted for a message (see [`quote_path`]).
#[derive(Clone, Copy, Debug)]
pub struct QuotedPath<'a>(&'a Path);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_cut(f, self.0, self.0.len(), "\"", true)
    }
}

impl fmt::Display for QuotedPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0.as_os_str().as_encoded_bytes();
        // Only the shown part is decoded: a 16 MiB path costs its first characters.
        let head = &bytes[..bytes.len().min(QUOTE_CHARS * 4 + 4)];
        write_cut(f, &String::from_utf8_lossy(head), bytes.len(), "\"", true)
    }
}

/// `value`'s first [`QUOTE_CHARS`] characters between `quotes`, each escaped as
/// `escape_debug` does (all of them, or only the [`is_unsafe`] ones), then
/// `… (<len> bytes)` when `value` (whose whole length is `len` bytes) was cut.
fn write_cut(
    f: &mut fmt::Formatter<'_>,
    value: &str,
    len: usize,
    quotes: &str,
    escape_all: bool,
) -> fmt::Result {
    f.write_str(quotes)?;
    let mut shown = 0;
    for c in value.chars().take(QUOTE_CHARS) {
        if escape_all || is_unsafe(c) {
            write!(f, "{}", c.escape_debug())?;
        } else {
            write!(f, "{c}")?;
        }
        shown += c.len_utf8();
    }
    f.write_str(quotes)?;
    if shown < len {
        write!(f, "… ({len} bytes)")?;
    }
    Ok(())
}

/// Whether `c` must not reach a terminal or a page as it is: a control character (C0,
/// ESC and line breaks included; DEL; C1) or a bidirectional control (U+061C, U+200E,
/// U+200F, U+202A–U+202E, U+2066–U+2069: they reorder the text shown after them).
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with each [`is_unsafe`] character escaped as Rust's `escape_debug` writes it
/// (`\u{1b}`, `\u{202e}`, `\n`, `\t`), every other character as it is; borrowed when
/// there is nothing to escape.
///
/// ```
/// use transcope_core::quote::escape_unsafe;
/// assert_eq!(escape_unsafe("caf\u{e9} \"x\" 日本"), "caf\u{e9} \"x\" 日本");
/// assert_eq!(escape_unsafe("\u{1b}[31m\u{202e}a\nb"), r"\u{1b}[31m\u{202e}a\nb");
/// ```
pub fn escape_unsafe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A value echoed inside quotes that are not ours: escaped as [`escape_unsafe`], cut
/// after [`QUOTE_CHARS`] characters with `… (<len> bytes)`, no quotes added.
///
/// ```
/// use transcope_core::quote::bounded;
/// assert_eq!(bounded("2026-13-01").to_string(), "2026-13-01");
/// let long = "y".repeat(100_000);
/// assert_eq!(bounded(&long).to_string(), format!("{}… (100000 bytes)", "y".repeat(64)));
/// ```
pub fn bounded(value: &str) -> Bounded<'_> {
    Bounded(value)
}

/// A value bounded for an echo (see [`bounded`]).
#[derive(Clone, Copy, Debug)]
pub struct Bounded<'a>(&'a str);

impl fmt::Display for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_cut(f, self.0, self.0.len(), "", false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_whole_and_escaped() {
        assert_eq!(quote("").to_string(), r#""""#);
        assert_eq!(quote("s1").to_string(), r#""s1""#);
        assert_eq!(quote("a\\b\u{1b}").to_string(), r#""a\\b\u{1b}""#);
        assert_eq!(quote_path(Path::new("/a b")).to_string(), r#""/a b""#);
    }

    #[test]
    fn long_values_are_cut_with_their_length() {
        let two_mb = "é".repeat(1 << 20);
        let q = quote(&two_mb).to_string();
        assert!(q.len() < 200, "{} bytes", q.len());
        assert!(q.ends_with("… (2097152 bytes)"), "{q}");
        let path = format!("/{}", "e/".repeat(1 << 20));
        let q = quote_path(Path::new(&path)).to_string();
        assert!(q.len() < 200, "{} bytes", q.len());
        assert!(q.ends_with(&format!("… ({} bytes)", path.len())), "{q}");
    }

    #[test]
    fn exactly_the_limit_is_not_cut() {
        let v = "x".repeat(QUOTE_CHARS);
        assert_eq!(quote(&v).to_string(), format!("\"{v}\""));
    }

    /// Issue 33: the characters that drive a terminal or reorder text are escaped,
    /// every other one is kept (a person reads accents and CJK as they are).
    #[test]
    fn unsafe_characters_are_escaped_and_the_rest_kept() {
        for c in [
            '\0', '\n', '\r', '\t', '\u{1b}', '\u{7f}', '\u{85}', '\u{9b}', '\u{61c}', '\u{200e}',
            '\u{200f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            assert!(is_unsafe(c), "{c:?}");
            let shown = escape_unsafe(&c.to_string()).into_owned();
            assert!(
                !shown.contains(c) && shown.starts_with('\\'),
                "{c:?} → {shown}"
            );
        }
        let kept = "é ü 日本語 \"q\" 'a' \\ — … \u{a0}x";
        assert!(matches!(escape_unsafe(kept), Cow::Borrowed(_)));
        assert_eq!(escape_unsafe("a\u{202e}b"), r"a\u{202e}b");
    }

    #[test]
    fn bounded_values_are_escaped_and_cut() {
        assert_eq!(bounded("a\u{1b}b").to_string(), r"a\u{1b}b");
        let v = "\u{202e}".repeat(100);
        let b = bounded(&v).to_string();
        assert!(!b.contains('\u{202e}'));
        assert!(b.ends_with("… (300 bytes)"), "{b}");
        assert_eq!(
            bounded(&"x".repeat(QUOTE_CHARS)).to_string(),
            "x".repeat(QUOTE_CHARS)
        );
    }

    #[test]
    fn the_bound_holds_for_the_widest_escapes() {
        let v = "\u{7f}".repeat(10_000);
        assert!(quote(&v).to_string().len() <= 10 * QUOTE_CHARS + 30);
    }
}

//! Quoting an untrusted value for a message: the one way a value read from a
//! transcript, a hook payload or a file transcope does not own goes into an error.
//!
//! [`quote`] escapes the value (quotes, backslashes, control and non-printable
//! characters, as Rust's `escape_debug` does) and cuts it after [`QUOTE_CHARS`]
//! characters, saying how long the whole value was; a message built from untrusted
//! values is therefore bounded whatever their size (a 2 MB `sessionId` costs about
//! 70 bytes of stderr, not 2 MB). [`quote_path`] does the same for a path.
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
        write_quoted(f, self.0, self.0.len())
    }
}

impl fmt::Display for QuotedPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.0.as_os_str().as_encoded_bytes();
        // Only the shown part is decoded: a 16 MiB path costs its first characters.
        let head = &bytes[..bytes.len().min(QUOTE_CHARS * 4 + 4)];
        write_quoted(f, &String::from_utf8_lossy(head), bytes.len())
    }
}

/// `"<escaped head>"`, then `… (<len> bytes)` when `value` (whose whole length is
/// `len` bytes) was cut.
fn write_quoted(f: &mut fmt::Formatter<'_>, value: &str, len: usize) -> fmt::Result {
    f.write_str("\"")?;
    let mut shown = 0;
    for c in value.chars().take(QUOTE_CHARS) {
        write!(f, "{}", c.escape_debug())?;
        shown += c.len_utf8();
    }
    f.write_str("\"")?;
    if shown < len {
        write!(f, "… ({len} bytes)")?;
    }
    Ok(())
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

    #[test]
    fn the_bound_holds_for_the_widest_escapes() {
        let v = "\u{7f}".repeat(10_000);
        assert!(quote(&v).to_string().len() <= 10 * QUOTE_CHARS + 30);
    }
}

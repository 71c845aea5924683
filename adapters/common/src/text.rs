//! A line's text as the reference hands it to `json.loads`: UTF-8 (checked with SIMD,
//! `simdutf8`), a first-line byte-order mark dropped, and Python's `str.strip()`.
//!
//! ```
//! use transcope_adapter_common::text::{line_text, py_strip};
//! assert_eq!(py_strip("\x1c {} \u{a0}"), "{}");
//! assert_eq!(line_text("\u{feff}{}\r".as_bytes(), true), Ok("{}"));
//! ```

use transcope_core::adapter::Skip;

const BOM: &str = "\u{feff}";

/// Python `str.strip()` with no argument: Unicode whitespace plus the ASCII
/// separators `\x1c`–`\x1f`, which Python counts as whitespace and Rust does not.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// The text of a line as the reference would hand it to `json.loads`: valid UTF-8,
/// Python-stripped, and without a leading byte-order mark when `first` is set (the
/// reference itself would fail the line on a BOM; stripping it is a deliberate
/// deviation, see the adapters' crate docs).
pub fn line_text(line: &[u8], first: bool) -> Result<&str, Skip> {
    let text = simdutf8::basic::from_utf8(line).map_err(|_| Skip::InvalidUtf8)?;
    let text = if first {
        text.strip_prefix(BOM).unwrap_or(text)
    } else {
        text
    };
    let text = py_strip(text);
    if text.is_empty() {
        Err(Skip::Blank)
    } else {
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_text_rules() {
        assert_eq!(line_text(b"  \t", true), Err(Skip::Blank));
        assert_eq!(line_text(b"\xff{}", true), Err(Skip::InvalidUtf8));
        assert_eq!(line_text("\u{feff}{}".as_bytes(), true), Ok("{}"));
        assert_eq!(line_text("\u{feff}{}".as_bytes(), false), Ok("\u{feff}{}"));
        assert_eq!(line_text("\x1c\u{a0}{} \r".as_bytes(), false), Ok("{}"));
    }
}

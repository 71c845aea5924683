//! Reading a scope log exactly as the reference does (scope-log.md §1.7).

use serde_json::{Map, Value};

/// One readable row: a JSON object, kept as written (key order preserved, no
/// validation of its keys).
pub type Row = Map<String, Value>;

/// Decode file bytes as the reference does: UTF-8 with undecodable bytes replaced.
pub fn decode_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// Python `str.splitlines()`: split on `\n`, `\r\n`, `\r`, `\v`, `\f`, `\x1c`, `\x1d`,
/// `\x1e`, `\x85`, `\u2028` and `\u2029`; no trailing empty line.
pub fn splitlines(text: &str) -> impl Iterator<Item = &str> {
    SplitLines { rest: text }
}

struct SplitLines<'a> {
    rest: &'a str,
}

impl<'a> Iterator for SplitLines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let text = self.rest;
        for (i, c) in text.char_indices() {
            let brk = matches!(
                c,
                '\n' | '\r'
                    | '\u{b}'
                    | '\u{c}'
                    | '\u{1c}'
                    | '\u{1d}'
                    | '\u{1e}'
                    | '\u{85}'
                    | '\u{2028}'
                    | '\u{2029}'
            );
            if brk {
                let mut end = i + c.len_utf8();
                if c == '\r' && text.as_bytes().get(end) == Some(&b'\n') {
                    end += 1;
                }
                self.rest = &text[end..];
                return Some(&text[..i]);
            }
        }
        self.rest = "";
        Some(text)
    }
}

/// The readable rows of a log's bytes, in file order: every line that parses as a JSON
/// object. Blank, torn and undecodable lines and non-object values are skipped.
pub fn rows_from_bytes(bytes: &[u8]) -> Vec<Row> {
    let text = decode_lossy(bytes);
    splitlines(&text)
        .filter_map(|line| match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_matches_python() {
        let cases: &[(&str, &[&str])] = &[
            ("", &[]),
            ("a", &["a"]),
            ("a\n", &["a"]),
            ("a\n\nb", &["a", "", "b"]),
            (
                "a\r\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\u{85}i\u{2028}j\u{2029}k",
                &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"],
            ),
            ("a\r\r\nb", &["a", "", "b"]),
            ("\n", &[""]),
        ];
        for (text, want) in cases {
            let got: Vec<&str> = splitlines(text).collect();
            assert_eq!(&got, want, "{text:?}");
        }
    }

    #[test]
    fn rows_skip_torn_blank_and_non_objects() {
        let rows = rows_from_bytes(b"{\"a\": 1}\n\n[1]\n5\n{}\n{\"session_id\": \"first\", \"sequ");
        assert_eq!(rows.len(), 2);
        assert!(rows[1].is_empty());
    }

    #[test]
    fn undecodable_bytes_are_replaced_not_fatal() {
        let rows = rows_from_bytes(b"{\"a\": 1}\n\xff\xfe\n{\"b\": \"\xff\"}\n");
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1]["b"], "\u{fffd}");
    }
}

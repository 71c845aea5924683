//! Reading a scope log exactly as the reference does (scope-log.md §1.7).

use std::io::{self, Read};
use std::path::Path;

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

/// Where the first line break at or after `from` in `buf` is: `(end of the line, start
/// of the next)`. The breaks are `splitlines`' (see [`splitlines`]) as they appear in the
/// bytes of a file that [`decode_lossy`] will decode: ASCII `\n`, `\r`, `\r\n`, `\v`,
/// `\f`, `\x1c`–`\x1e`, and the UTF-8 forms of U+0085, U+2028 and U+2029 (`C2 85`,
/// `E2 80 A8`, `E2 80 A9`, which decode as those characters wherever they appear: `C2`
/// and `E2` are never continuation bytes, so no earlier byte can claim them). `None` when
/// there is no break in `buf`, or when, before the end of the file (`!eof`), the bytes at
/// its end could still become one.
fn next_break(buf: &[u8], from: usize, eof: bool) -> Option<(usize, usize)> {
    let mut i = from;
    while i < buf.len() {
        let more = |n: usize| i + n < buf.len();
        match buf[i] {
            b'\n' | 0x0b | 0x0c | 0x1c..=0x1e => return Some((i, i + 1)),
            b'\r' if more(1) => {
                let end = if buf[i + 1] == b'\n' { i + 2 } else { i + 1 };
                return Some((i, end));
            }
            b'\r' => return eof.then_some((i, i + 1)),
            0xc2 if more(1) && buf[i + 1] == 0x85 => return Some((i, i + 2)),
            0xe2 if more(2) && buf[i + 1] == 0x80 && matches!(buf[i + 2], 0xa8 | 0xa9) => {
                return Some((i, i + 3))
            }
            // Possibly the start of a break whose last bytes are not read yet.
            0xc2 | 0xe2 if !eof && !more(2) => return None,
            _ => {}
        }
        i += 1;
    }
    None
}

/// What [`scan_file`] saw of a log besides its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// The bytes are non-empty and do not end with `\n` (the fresh-line rule applies).
    pub torn_tail: bool,
}

/// [`scan_file`] over the whole log at `path`, as of its size when opened.
#[cfg(test)]
pub(crate) fn scan_log(path: &Path, row: impl FnMut(Row)) -> io::Result<Scanned> {
    let (mut file, size) = transcope_jsonl::open_private(path)?;
    scan_file(&mut file, 0, size, row)
}

/// Every readable row of bytes `[start, start + len)` of an open log, in file order,
/// handed to `row` one at a time — exactly the rows [`rows_from_bytes`] gives for those
/// bytes, but read in 64 KiB pieces, so memory is the longest line, never the log (open
/// it as [`read_private`](crate::read_private) does: never through a symbolic link, a
/// regular file only). `start` must be 0 or just after a `\n` (a line boundary
/// whatever follows: the rows of the bytes before and of the bytes after are then the
/// rows of the whole); the torn-tail flag is the range's (an empty range after a `\n`
/// is not torn).
pub(crate) fn scan_file(
    file: &mut std::fs::File,
    start: u64,
    len: u64,
    mut row: impl FnMut(Row),
) -> io::Result<Scanned> {
    let scanned = scan_range(file, start, len, |_, r| row(r))?;
    Ok(Scanned {
        torn_tail: scanned.torn_tail,
    })
}

/// What [`scan_lines`] read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScannedFrom {
    /// The file's size when opened: where the read ended.
    pub size: u64,
    /// Just past the last `\n` read (`from` when there was none): every line before
    /// it is whole, so a later read from here reads exactly the lines that follow.
    pub whole_to: u64,
    /// How many readable rows were handed on before `whole_to`.
    pub rows_before_whole: u64,
    /// The bytes are non-empty and do not end with `\n`.
    pub torn_tail: bool,
    /// How many bytes of the file were read: those from `from` on, and those the check
    /// of the place read before it.
    pub read: u64,
}

/// The readable rows of the log at `path` from byte `from` on (a place just past a
/// `\n`, or 0), each with its line's text, in file order, read in 64 KiB pieces:
/// what [`rows_from_bytes`] gives for those bytes. Since `\n` always ends a line, the
/// rows from a `\n` boundary on are exactly those a whole read finds past it, so a
/// mirror can read what was appended and nothing else.
///
/// `last` is the text of the line that ends at `from` as a reader before saw it (its
/// `\n`, or `\r\n`, just before `from`), or empty: the bytes there are read and
/// compared, so a log rewritten since with a line's end at the same place is seen as
/// rewritten. A `from` past the end, not just after a `\n`, or not after `last` (the
/// log was cut or rewritten since) is an [`io::ErrorKind::InvalidData`] error, before
/// any row is handed on.
pub fn scan_lines(
    path: &Path,
    (from, last): (u64, &[u8]),
    row: impl FnMut(&str, Row),
) -> io::Result<ScannedFrom> {
    use std::os::unix::fs::FileExt;
    let (mut file, size) = transcope_jsonl::open_private(path)?;
    let mut checked = 0;
    if from > 0 {
        // The line, an optional `\r` and the `\n`, as far back as the file goes.
        let want = (last.len() as u64 + 2).min(from);
        let mut before = vec![0u8; want as usize];
        let read = from <= size && file.read_exact_at(&mut before, from - want).is_ok();
        checked = want;
        let whole = read
            && before.strip_suffix(b"\n").is_some_and(|b| {
                let b = b.strip_suffix(b"\r").unwrap_or(b);
                b.ends_with(last)
            });
        if !whole {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not just after a line's end",
            ));
        }
    }
    let mut out = scan_range(&mut file, from, size - from, row)?;
    out.size = size;
    out.read = checked + (size - from);
    Ok(out)
}

/// The one reader under [`scan_file`] and [`scan_lines`]: bytes `[start, start + len)`
/// of `file`, each readable row with its line's text; places in the result are the
/// file's (`size` is `start + len`).
fn scan_range(
    file: &mut std::fs::File,
    start: u64,
    len: u64,
    mut row: impl FnMut(&str, Row),
) -> io::Result<ScannedFrom> {
    use std::io::{Seek, SeekFrom};
    const CHUNK: usize = 64 * 1024;
    file.seek(SeekFrom::Start(start))?;
    let mut file = file.take(len);
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK.min(len as usize));
    // The file offset of `buf[0]`.
    let mut base = start;
    let mut out = ScannedFrom {
        size: start + len,
        whole_to: start,
        ..ScannedFrom::default()
    };
    let mut last_byte = None;
    let mut rows = 0u64;
    let mut eof = false;
    let mut line = |bytes: &[u8], rows: &mut u64| {
        let text = decode_lossy(bytes);
        if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(&text) {
            *rows += 1;
            row(&text, m);
        }
    };
    while !eof {
        let start = buf.len();
        // No more than what is left to read (and one byte to see the end): a short log
        // zeroes a page, not a whole chunk.
        let left = usize::try_from(file.limit()).unwrap_or(CHUNK);
        buf.resize(start + CHUNK.min(left.saturating_add(1)), 0);
        let n = loop {
            match file.read(&mut buf[start..]) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                r => break r?,
            }
        };
        buf.truncate(start + n);
        eof = n == 0;
        if let Some(b) = buf.last() {
            last_byte = Some(*b);
        }
        let mut from = 0;
        // A break is searched for from where the last search stopped, less the two
        // bytes a multi-byte break could have begun in.
        let mut search = start.saturating_sub(2);
        while let Some((end, next)) = next_break(&buf, search.max(from), eof) {
            line(&buf[from..end], &mut rows);
            if buf[next - 1] == b'\n' {
                out.whole_to = base + next as u64;
                out.rows_before_whole = rows;
            }
            from = next;
            search = next;
        }
        if eof && from < buf.len() {
            line(&buf[from..], &mut rows);
            from = buf.len();
        }
        buf.drain(..from);
        base += from as u64;
    }
    out.torn_tail = last_byte.is_some_and(|b| b != b'\n');
    Ok(out)
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

    /// The streamed scan is `rows_from_bytes` on the same bytes, whatever they hold
    /// (breaks of every kind, undecodable bytes, multi-byte breaks cut by a read) and
    /// wherever the 64 KiB reads fall.
    #[test]
    fn scan_log_reads_what_rows_from_bytes_reads() {
        let pieces: [&[u8]; 14] = [
            b"{\"a\": 1}",
            b"{}",
            b"[1]",
            b"\n",
            b"\r",
            b"\r\n",
            b"\x0b\x0c\x1c\x1d\x1e",
            "\u{85}".as_bytes(),
            "\u{2028}\u{2029}".as_bytes(),
            b"\xc2",
            b"\xe2\x80",
            b"\xff",
            b"{\"b\": \"\xe2\x80\xa8 \xc2\"}",
            b"{\"torn",
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let mut seed = 0x5eed_u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for round in 0..300 {
            let mut bytes = Vec::new();
            // Some files cross the 64 KiB read boundary, at every offset near it.
            let pad = if round % 3 == 0 {
                64 * 1024 - 8 + next(16) as usize
            } else {
                0
            };
            bytes.extend(std::iter::repeat_n(b' ', pad));
            for _ in 0..next(40) {
                bytes.extend_from_slice(pieces[next(pieces.len() as u64) as usize]);
            }
            std::fs::write(&path, &bytes).unwrap();
            let mut got = Vec::new();
            let scanned = scan_log(&path, |r| got.push(r)).unwrap();
            assert_eq!(got, rows_from_bytes(&bytes), "round {round}: {bytes:?}");
            let torn = !bytes.is_empty() && bytes.last() != Some(&b'\n');
            assert_eq!(scanned.torn_tail, torn, "round {round}");
        }
    }
}

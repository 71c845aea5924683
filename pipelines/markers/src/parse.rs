//! The marker grammar (scope-log.md §5.1), matched exactly as the reference's regular
//! expression does, without a backtracking regex engine:
//!
//! ```text
//! <!--\s*@(\w+)((?:\s+\w+=(?:"[^"]*"|[^\s>]+))*)\s*-->(.*?)<!--\s*@/\1\s*-->   (DOTALL)
//! attributes, re-scanned from group 2:  (\w+)=(?:"([^"]*)"|([^\s>]+))
//! ```
//!
//! `\w` and `\s` are Python's Unicode classes. Blocks are found left to right like
//! `re.finditer`: a failed match at one `<!--` moves on to the next; a match resumes
//! after its closing tag, so a block of any type consumes what it encloses. Work is
//! linear-ish in the text: failed attribute positions are memoised and closing-tag
//! searches are cached per type, so hostile input cannot make it backtrack
//! exponentially (Python's engine would).

use std::collections::HashMap;

use memchr::memmem;
use serde_json::{Map, Value};

/// One block as matched (before type filtering and trimming).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block<'t> {
    /// Byte offset of the opening `<!--`.
    pub start: usize,
    /// Byte offset just past the closing `-->`.
    pub end: usize,
    /// The TYPE text as written.
    pub kind: &'t str,
    /// The raw attribute text (group 2).
    pub attrs: &'t str,
    /// The content between the tags, untrimmed.
    pub content: &'t str,
}

/// Python's `\s` for `str` patterns: `str.isspace()`.
pub fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `\w` for `str` patterns (approximated by Rust's alphanumeric + `_`).
pub fn is_py_word(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn skip_while(t: &str, mut p: usize, f: impl Fn(char) -> bool) -> usize {
    while let Some(c) = t[p..].chars().next() {
        if !f(c) {
            break;
        }
        p += c.len_utf8();
    }
    p
}

/// Attribute lists deeper than this are not markers (a guard against stack exhaustion
/// on hostile input; Python would match them).
pub const MAX_ATTRIBUTES: usize = 1024;

/// Per TYPE: (searched from, the first closing tag `(start, end)` at or after it).
type CloseCache<'t> = HashMap<&'t str, (usize, Option<(usize, usize)>)>;

struct Matcher<'t> {
    t: &'t str,
    /// Attribute-list positions from which no accepted `-->` end is reachable.
    failed: std::collections::HashSet<usize>,
    /// Per TYPE: (searched from, first closing tag at or after it).
    closes: CloseCache<'t>,
}

impl<'t> Matcher<'t> {
    /// Walk `(?:\s+\w+=(?:"[^"]*"|[^\s>]+))*\s*-->` from `p` in the regex engine's
    /// preference order, offering each possible end of `-->` to `accept`; stop at the
    /// first end accepted and return it.
    fn attrs_then_close(
        &mut self,
        p: usize,
        depth: usize,
        accept: &mut dyn FnMut(&mut Self, usize) -> bool,
    ) -> Option<usize> {
        if depth > MAX_ATTRIBUTES || self.failed.contains(&p) {
            return None;
        }
        let t = self.t;
        // One more attribute (the greedy `*` tries this first).
        let ws = skip_while(t, p, is_py_space);
        if ws > p {
            let name_end = skip_while(t, ws, is_py_word);
            if name_end > ws && t[name_end..].starts_with('=') {
                let v = name_end + 1;
                // Alternative 1: "[^"]*"
                if t[v..].starts_with('"') {
                    if let Some(q) = memchr::memchr(b'"', &t.as_bytes()[v + 1..]) {
                        if let Some(end) = self.attrs_then_close(v + 1 + q + 1, depth + 1, accept) {
                            return Some(end);
                        }
                    }
                }
                // Alternative 2: [^\s>]+, longest first.
                let max = skip_while(t, v, |c| !is_py_space(c) && c != '>');
                let mut e = max;
                while e > v {
                    if let Some(end) = self.attrs_then_close(e, depth + 1, accept) {
                        return Some(end);
                    }
                    e -= t[..e].chars().next_back().map_or(1, char::len_utf8);
                }
            }
        }
        // No more attributes: \s*-->
        if t[ws..].starts_with("-->") && accept(self, ws + 3) {
            return Some(ws + 3);
        }
        self.failed.insert(p);
        None
    }

    /// The first `<!--\s*@/TYPE\s*-->` at or after `from`: (start, end).
    fn closing(&mut self, kind: &'t str, from: usize) -> Option<(usize, usize)> {
        if let Some(&(searched, found)) = self.closes.get(kind) {
            if searched <= from {
                match found {
                    None => return None,
                    Some((s, e)) if s >= from => return Some((s, e)),
                    _ => {}
                }
            }
        }
        let t = self.t;
        let finder = memmem::Finder::new("<!--");
        let mut p = from;
        let found = loop {
            let Some(i) = finder.find(&t.as_bytes()[p..]) else {
                break None;
            };
            let s = p + i;
            let q = skip_while(t, s + 4, is_py_space);
            if let Some(rest) = t[q..].strip_prefix("@/") {
                if let Some(after) = rest.strip_prefix(kind) {
                    let a = t.len() - after.len();
                    let w = skip_while(t, a, is_py_space);
                    if t[w..].starts_with("-->") {
                        break Some((s, w + 3));
                    }
                }
            }
            p = s + 1;
        };
        self.closes.insert(kind, (from, found));
        found
    }

    /// A whole block starting at the `<!--` at `start`.
    fn block(&mut self, start: usize) -> Option<Block<'t>> {
        let t = self.t;
        let p = skip_while(t, start + 4, is_py_space);
        let p = p + t[p..].starts_with('@').then_some(1)?;
        let kind_end = skip_while(t, p, is_py_word);
        if kind_end == p {
            return None;
        }
        let kind = &t[p..kind_end];
        // The failure memo depends on the acceptance test, which depends on TYPE.
        self.failed.clear();
        let mut close = None;
        let open_end = self.attrs_then_close(kind_end, 0, &mut |m: &mut Self, end| {
            close = m.closing(kind, end);
            close.is_some()
        })?;
        let (cs, ce) = close?;
        // Group 2 is the attribute list: up to the whitespace before `-->`.
        let close_ws = t[..open_end - 3]
            .char_indices()
            .rev()
            .take_while(|(i, c)| *i >= kind_end && is_py_space(*c))
            .last()
            .map_or(open_end - 3, |(i, _)| i);
        Some(Block {
            start,
            end: ce,
            kind,
            attrs: &t[kind_end..close_ws.max(kind_end)],
            content: &t[open_end..cs],
        })
    }
}

/// Every block in `text`, left to right, as `re.finditer` would find them.
pub fn blocks(text: &str) -> Vec<Block<'_>> {
    let mut m = Matcher {
        t: text,
        failed: Default::default(),
        closes: HashMap::new(),
    };
    let finder = memmem::Finder::new("<!--");
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = finder.find(&text.as_bytes()[pos..]) {
        let start = pos + i;
        match m.block(start) {
            Some(b) => {
                pos = b.end;
                out.push(b);
            }
            None => pos = start + 1,
        }
    }
    out
}

/// The attributes of a block: `(\w+)=(?:"([^"]*)"|([^\s>]+))` found left to right in
/// the attribute text; the last of a repeated name wins; `a=""` is `null`.
pub fn attributes(text: &str) -> Map<String, Value> {
    let mut map = Map::new();
    let mut pos = 0;
    while pos < text.len() {
        // Find the next position where `\w+=` matches (finditer semantics).
        let Some((name, v)) = next_name(text, pos) else {
            break;
        };
        let (value, end) = if text[v..].starts_with('"')
            && memchr::memchr(b'"', &text.as_bytes()[v + 1..]).is_some()
        {
            let q = memchr::memchr(b'"', &text.as_bytes()[v + 1..]).unwrap_or(0);
            let s = &text[v + 1..v + 1 + q];
            let val = if s.is_empty() {
                Value::Null
            } else {
                Value::String(s.to_owned())
            };
            (val, v + 1 + q + 1)
        } else {
            let e = skip_while(text, v, |c| !is_py_space(c) && c != '>');
            if e == v {
                // `name=` with no value: no match here; retry one character later.
                pos = name + text[name..].chars().next().map_or(1, char::len_utf8);
                continue;
            }
            (Value::String(text[v..e].to_owned()), e)
        };
        // A repeated name keeps its first position and takes the last value (dict).
        map.insert(text[name..v - 1].to_owned(), value);
        pos = end;
    }
    map
}

/// The next `\w+=` at or after `pos`: (name start, value start).
fn next_name(text: &str, mut pos: usize) -> Option<(usize, usize)> {
    while pos < text.len() {
        let c = text[pos..].chars().next()?;
        if is_py_word(c) {
            let e = skip_while(text, pos, is_py_word);
            if text[e..].starts_with('=') {
                return Some((pos, e + 1));
            }
            // `\w+` backtracking cannot help (the next char is not '='), so any start
            // inside this word also fails: skip the word.
            pos = e;
        } else {
            pos += c.len_utf8();
        }
    }
    None
}

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
//! after its closing tag, so a block of any type consumes what it encloses.
//!
//! Work is linear in the text, whatever the text: the closing tags are indexed by TYPE
//! in one pass, the attribute list is walked depth first on an explicit stack (no
//! recursion, so no depth limit: any list Python matches is matched), and every
//! attribute position that failed is remembered per TYPE across all opening tags, so
//! hostile input can make it neither backtrack exponentially (Python's engine would)
//! nor rescan the same positions from every `<!--`.

use std::collections::{HashMap, HashSet};

use memchr::memmem;
use serde_json::{Map, Value};

#[cfg(test)]
mod tests;

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

/// `<!--`, searched for once per text and per block: built once.
static OPENER: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new("<!--"));

/// One attribute-list position on the matcher's explicit stack: the regex engine's
/// backtracking state at `p`, with the value of its attribute starting at `v` (0 when
/// no attribute starts at `p`) and the next alternative to try in `next`.
#[derive(Clone, Copy)]
struct Frame {
    p: u32,
    v: u32,
    next: u32,
}

/// `next` before the quoted-value alternative has been tried.
const QUOTED_NEXT: u32 = u32::MAX;

struct Matcher<'t> {
    t: &'t str,
    /// Every closing tag `<!--\s*@/NAME\s*-->` by NAME: (start, end), in text order.
    closes: HashMap<&'t str, Vec<(usize, usize)>>,
    /// Per TYPE: attribute-list positions from which no accepted `-->` is reachable.
    /// Whether an end is accepted depends only on TYPE (a closing tag of that TYPE
    /// starts at or after it), so a failure holds for every opening tag of the TYPE.
    failed: HashMap<&'t str, HashSet<u32>>,
    stack: Vec<Frame>,
    /// Frames pushed so far (the work done, for the linearity test).
    frames: usize,
    /// The current attempt read to the end of the text, or found no closing tag yet:
    /// text appended later could change its outcome.
    touched: bool,
}

impl<'t> Matcher<'t> {
    fn new(t: &'t str) -> Self {
        let mut closes: HashMap<&'t str, Vec<(usize, usize)>> = HashMap::new();
        for s in OPENER.find_iter(t.as_bytes()) {
            let q = skip_while(t, s + 4, is_py_space);
            if !t[q..].starts_with("@/") {
                continue;
            }
            let name_end = skip_while(t, q + 2, is_py_word);
            let w = skip_while(t, name_end, is_py_space);
            if name_end > q + 2 && t[w..].starts_with("-->") {
                closes
                    .entry(&t[q + 2..name_end])
                    .or_default()
                    .push((s, w + 3));
            }
        }
        Matcher {
            t,
            closes,
            failed: HashMap::new(),
            stack: Vec::new(),
            frames: 0,
            touched: false,
        }
    }

    /// The frame for position `p`: whether `\s+\w+=` starts an attribute there.
    fn frame(&mut self, p: usize) -> Frame {
        self.frames += 1;
        let t = self.t;
        let ws = skip_while(t, p, is_py_space);
        let name_end = skip_while(t, ws, is_py_word);
        // An attribute name runs to the end: its `=` may still come. (Whitespace
        // running to the end is caught by the `\s*-->` check.)
        self.touched |= ws > p && name_end == t.len();
        let v = if ws > p && name_end > ws && t[name_end..].starts_with('=') {
            name_end + 1
        } else {
            0
        };
        Frame {
            p: p as u32,
            v: v as u32,
            next: if v == 0 { 0 } else { QUOTED_NEXT },
        }
    }

    /// The next position to try after one more attribute from `f`, in the regex
    /// engine's order: the quoted value, then `[^\s>]+` longest first; `None` when
    /// every alternative has been tried.
    fn next_child(&mut self, f: &mut Frame) -> Option<usize> {
        let t = self.t;
        let v = f.v as usize;
        if f.next == QUOTED_NEXT {
            // (A value running to the end is tried first, and its frame is at the end.)
            f.next = skip_while(t, v, |c| !is_py_space(c) && c != '>') as u32;
            if t[v..].starts_with('"') {
                match memchr::memchr(b'"', &t.as_bytes()[v + 1..]) {
                    Some(q) => return Some(v + 1 + q + 1),
                    None => self.touched = true,
                }
            }
        }
        let e = f.next as usize;
        if e <= v {
            return None;
        }
        f.next = (e - t[..e].chars().next_back().map_or(1, char::len_utf8)) as u32;
        Some(e)
    }

    /// Walk `(?:\s+\w+=(?:"[^"]*"|[^\s>]+))*\s*-->` from `start` in the regex engine's
    /// preference order (depth first, on an explicit stack: no recursion, no depth
    /// limit) and return the first end of `-->` that a closing tag of `kind` follows.
    fn attrs_then_close(&mut self, kind: &'t str, start: usize) -> Option<usize> {
        let t = self.t;
        // The last closing tag of this TYPE: an end is accepted when it is not after it.
        let Some(&(last, _)) = self.closes.get(kind).and_then(|c| c.last()) else {
            // A closing tag written later would make this a block.
            self.touched = true;
            return None;
        };
        let mut failed = self.failed.remove(kind).unwrap_or_default();
        let mut found = None;
        if !failed.contains(&(start as u32)) {
            let mut stack = std::mem::take(&mut self.stack);
            stack.clear();
            stack.push(self.frame(start));
            while let Some(top) = stack.last_mut() {
                if let Some(child) = self.next_child(top) {
                    if !failed.contains(&(child as u32)) {
                        let f = self.frame(child);
                        stack.push(f);
                    }
                    continue;
                }
                // No more attributes here: \s*-->
                let p = top.p as usize;
                let ws = skip_while(t, p, is_py_space);
                if t[ws..].starts_with("-->") {
                    if ws + 3 <= last {
                        found = Some(ws + 3);
                        break;
                    }
                    // No closing tag after this end yet.
                    self.touched = true;
                } else {
                    // `\s*` ran to the end, or the text ends inside `-->`.
                    self.touched |= "-->".starts_with(&t[ws..]);
                }
                failed.insert(top.p);
                stack.pop();
            }
            self.stack = stack;
        }
        self.failed.insert(kind, failed);
        found
    }

    /// The first `<!--\s*@/TYPE\s*-->` at or after `from`: (start, end).
    fn closing(&self, kind: &str, from: usize) -> Option<(usize, usize)> {
        let list = self.closes.get(kind)?;
        list.get(list.partition_point(|&(s, _)| s < from)).copied()
    }

    /// A whole block starting at the `<!--` at `start`.
    fn block(&mut self, start: usize) -> Option<Block<'t>> {
        let t = self.t;
        let p = skip_while(t, start + 4, is_py_space);
        self.touched |= p == t.len();
        let p = p + t[p..].starts_with('@').then_some(1)?;
        let kind_end = skip_while(t, p, is_py_word);
        if kind_end == p {
            // `@` is the last character: the TYPE may still come.
            self.touched |= p == t.len();
            return None;
        }
        let kind = &t[p..kind_end];
        let open_end = self.attrs_then_close(kind, kind_end)?;
        let (cs, ce) = self.closing(kind, open_end)?;
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

/// Every block in `text`, left to right, as `re.finditer` would find them. A text of
/// 4 GiB or more (far beyond any transcript line) has no blocks; the marker stage only
/// scans the text from a block still open, so only a block open across 4 GiB of text
/// is lost.
pub fn blocks(text: &str) -> Vec<Block<'_>> {
    blocks_counted(text).0
}

/// [`blocks`], with the number of backtracking states the matcher visited: at most a
/// few per byte of text, whatever the text (the linearity tests check it).
pub fn blocks_counted(text: &str) -> (Vec<Block<'_>>, usize) {
    let (blocks, _, frames) = scan(text, true);
    (blocks, frames)
}

/// The blocks of `text` that no text appended to it can change, and where the scan
/// must resume once more text is in: `None` when every `<!--` in `text` is settled,
/// else the offset of the first opening tag whose match read to the end of `text` (an
/// attribute, `-->` or the closing tag may still be written), or of a `<!--` cut at
/// the end. For any `more`, the blocks of `text + more` are these, then the blocks of
/// `(text + more)[offset..]` (of `more` alone when `None`).
///
/// ```
/// use transcope_markers::parse::blocks_settled;
/// let (done, rest) = blocks_settled("<!-- @a -->x<!-- @/a --> <!-- @b -->y");
/// assert_eq!(done.len(), 1);
/// assert_eq!(rest, Some(25)); // `<!-- @b -->` waits for its closing tag
/// ```
pub fn blocks_settled(text: &str) -> (Vec<Block<'_>>, Option<usize>) {
    let (blocks, rest, _) = scan(text, false);
    (blocks, rest)
}

/// The finditer loop. With `complete`, `text` is all there is; without it, the loop
/// stops at the first attempt that read to the end of `text`.
fn scan(text: &str, complete: bool) -> (Vec<Block<'_>>, Option<usize>, usize) {
    if u32::try_from(text.len()).is_err() {
        return (Vec::new(), None, 0);
    }
    let mut m = Matcher::new(text);
    let finder = &*OPENER;
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = finder.find(&text.as_bytes()[pos..]) {
        let start = pos + i;
        m.touched = false;
        let block = m.block(start);
        if m.touched && !complete {
            return (out, Some(start), m.frames);
        }
        match block {
            Some(b) => {
                pos = b.end;
                out.push(b);
            }
            None => pos = start + 1,
        }
    }
    if !complete {
        // `<!--` itself may be cut at the end.
        if let Some(k) = (1..4)
            .rev()
            .find(|&k| text.as_bytes().ends_with(&b"<!--"[..k]))
        {
            return (out, Some(text.len() - k), m.frames);
        }
    }
    (out, None, m.frames)
}

/// The attributes of a block: `(\w+)=(?:"([^"]*)"|([^\s>]+))` found left to right in
/// the attribute text; the last of a repeated name wins; `a=""` is `null`.
pub fn attributes(text: &str) -> Map<String, Value> {
    attributes_counted(text).0
}

/// [`attributes`], with the number of `\w+=` tried as a match's start: at most one per
/// `=` in the text.
fn attributes_counted(text: &str) -> (Map<String, Value>, usize) {
    let mut map = Map::new();
    let mut tried = 0;
    let mut pos = 0;
    while pos < text.len() {
        // Find the next position where `\w+=` matches (finditer semantics).
        let Some((name, v)) = next_name(text, pos) else {
            break;
        };
        tried += 1;
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
                // `name=` with no value: no match here, nor from any later start in
                // `name` (`\w+` runs to the same `=`) or at the `=`: go on after it.
                pos = v;
                continue;
            }
            (Value::String(text[v..e].to_owned()), e)
        };
        // A repeated name keeps its first position and takes the last value (dict).
        map.insert(text[name..v - 1].to_owned(), value);
        pos = end;
    }
    (map, tried)
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

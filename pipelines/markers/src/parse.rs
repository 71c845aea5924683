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
//! Time and memory are linear in the text, whatever the text:
//!
//! * The TYPE, and each attribute's `\s+\w+=`, match one way only. What the regex engine
//!   backtracks over is each value (the quoted string, or any non-empty prefix of the
//!   `[^\s>]+` run) and how many attributes to take. So the attribute list is a walk
//!   over positions ("the list may go on, or `\s*-->` may follow, here"), and a position
//!   has at most three successors that can lead anywhere: after the quoted value, after
//!   the whole unquoted run, and two bytes before its end when the run ends in `--`
//!   just before `>`. Every other prefix of a run ends where neither `\s` nor `-->` can
//!   follow, so it is never visited.
//! * The shortest content then needs only some closing tag of the TYPE at or after the
//!   end of `-->`: an end is accepted when it is not after the start of the TYPE's last
//!   closing tag. That start, per TYPE, is the only index built (one pass).
//! * The least end of `-->` reachable from a position is a property of the text, the
//!   same for every opening tag and TYPE. A walk that exhausts a position records it;
//!   later walks, of any TYPE, pass a recorded position by when its least end is beyond
//!   their last closing tag, and enter it only when it is sure to hold their match. So
//!   every position is exhausted once, and walked again at most once, on the path to
//!   a match, which the scan then steps past (it resumes after the closing tag).
//! * The walk is depth first on an explicit stack (no recursion, so no depth limit: any
//!   list Python matches is matched), and the closing tag of a match is found by
//!   scanning forward from its `-->`, which the scan also steps past.
//!
//! Memory besides the text, whatever the text: the stack, at most 3 bytes a byte of text
//! (12 bytes an attribute, and an attribute takes at least 4 bytes); once a walk fails,
//! the record of exhausted positions, 4 bytes a byte of text (zeroed, so only its pages
//! that hold a record are touched); and the index, one map entry (under 60 bytes) a
//! TYPE closed somewhere, each closing tag being at least 10 bytes of text.

use std::collections::HashMap;

use memchr::memmem;
use serde_json::{Map, Value};

#[cfg(test)]
mod oracle;
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

/// The end of the run of chars from `p` (a char boundary) that `f` accepts.
fn skip_while(t: &str, mut p: usize, f: impl Fn(char) -> bool) -> usize {
    let b = t.as_bytes();
    while let Some(&x) = b.get(p) {
        // ASCII (most of any text) without decoding; a longer char decoded.
        let c = if x.is_ascii() {
            char::from(x)
        } else {
            t[p..].chars().next().unwrap_or(char::REPLACEMENT_CHARACTER)
        };
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

/// The closing tag `<!--\s*@/NAME\s*-->` whose `<!--` is at `s`: NAME and the tag's end.
fn closing_tag_at(t: &str, s: usize) -> Option<(&str, usize)> {
    let q = skip_while(t, s + 4, is_py_space);
    if !t[q..].starts_with("@/") {
        return None;
    }
    let name_end = skip_while(t, q + 2, is_py_word);
    let w = skip_while(t, name_end, is_py_space);
    (name_end > q + 2 && t[w..].starts_with("-->")).then(|| (&t[q + 2..name_end], w + 3))
}

/// What one attempt at a `<!--` did, besides its outcome.
#[derive(Default)]
struct Effort {
    /// Attribute-list positions walked (the work done, for the linearity tests).
    frames: usize,
    /// The current attempt read to the end of the text, or found no closing tag yet:
    /// text appended later could change its outcome.
    touched: bool,
}

/// How the attribute list and the closing tag are matched: [`Walker`], and the test
/// oracle (the matcher before it, kept to check it against).
trait Grammar<'t> {
    /// Ready to match in `t`.
    fn new(t: &'t str) -> Self;
    /// `(?:\s+\w+=(?:"[^"]*"|[^\s>]+))*\s*-->` from `start`, in the regex engine's
    /// preference order: the first end of `-->` that a closing tag of `kind` follows.
    fn attrs_then_close(&mut self, kind: &'t str, start: usize) -> Option<usize>;
    /// The first `<!--\s*@/kind\s*-->` at or after `from`: (start, end).
    fn closing(&mut self, kind: &str, from: usize) -> Option<(usize, usize)>;
    /// The attempt's bookkeeping.
    fn effort(&mut self) -> &mut Effort;
}

/// The least end of `-->` reachable from a position: none.
const NO_END: u32 = u32::MAX;

/// The next successor of a [`Frame`] to walk, in the regex engine's order.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Next {
    /// After the quoted value.
    Quoted,
    /// After the whole unquoted run (the longest prefix first).
    Run,
    /// Before the `--` that ends the run just before `>`, so that `-->` follows.
    Dashes,
    /// Every successor walked: only `\s*-->` here is left.
    Close,
}

/// One attribute-list position on the walk's explicit stack: 12 bytes, a level per
/// attribute (at least 4 bytes of text). What can be found again from `p` (where its
/// attribute's value starts, where the value's run ends) is, not stored.
#[derive(Clone, Copy)]
struct Frame {
    /// The position.
    p: u32,
    /// The least end of `-->` reachable through the successors walked so far.
    least: u32,
    next: Next,
}

const _: () = assert!(std::mem::size_of::<Frame>() == 12);

/// The linear matcher (module docs).
struct Walker<'t> {
    t: &'t str,
    /// The start of the last closing tag of each TYPE.
    last_close: HashMap<&'t str, u32>,
    /// By position, once exhausted: the least end of `-->` reachable from it (`NO_END`
    /// for none, 0 while not exhausted). Four bytes a byte of text, allocated (zeroed,
    /// so untouched pages cost nothing) when a walk first fails.
    least_end: Vec<u32>,
    stack: Vec<Frame>,
    effort: Effort,
}

impl<'t> Walker<'t> {
    /// `\s+\w+=` at `p`: where `\s*` and the name end, and where the attribute's value
    /// starts (none when no attribute starts at `p`).
    fn attribute_at(&self, p: usize) -> (usize, usize, Option<usize>) {
        let t = self.t;
        let ws = skip_while(t, p, is_py_space);
        let name_end = skip_while(t, ws, is_py_word);
        let starts = ws > p && name_end > ws && t[name_end..].starts_with('=');
        (ws, name_end, starts.then_some(name_end + 1))
    }

    /// The frame for position `p`.
    fn frame(&mut self, p: usize) -> Frame {
        self.effort.frames += 1;
        let (ws, name_end, v) = self.attribute_at(p);
        // An attribute name runs to the end: its `=` may still come. (Whitespace
        // running to the end is caught by the `\s*-->` check.)
        self.effort.touched |= ws > p && name_end == self.t.len();
        Frame {
            p: p as u32,
            least: NO_END,
            next: if v.is_some() {
                Next::Quoted
            } else {
                Next::Close
            },
        }
    }

    /// The next successor of `f` to walk; `None` when all have been.
    fn successor(&mut self, f: &mut Frame) -> Option<usize> {
        let t = self.t;
        let v = self.attribute_at(f.p as usize).2?;
        let run_end = || skip_while(t, v, |c| !is_py_space(c) && c != '>');
        loop {
            match f.next {
                Next::Quoted => {
                    f.next = Next::Run;
                    if t[v..].starts_with('"') {
                        match memchr::memchr(b'"', &t.as_bytes()[v + 1..]) {
                            Some(q) => return Some(v + 1 + q + 1),
                            // The closing quote may still be written.
                            None => self.effort.touched = true,
                        }
                    }
                }
                Next::Run => {
                    f.next = Next::Dashes;
                    let e = run_end();
                    if e > v {
                        return Some(e);
                    }
                }
                Next::Dashes => {
                    f.next = Next::Close;
                    let e = run_end();
                    // (`-` is ASCII, so `e - 2` is then a char boundary.)
                    if e >= v + 3 && t.as_bytes()[e - 2..].starts_with(b"-->") {
                        return Some(e - 2);
                    }
                }
                Next::Close => return None,
            }
        }
    }

    /// Whether to pass `p` by (its least end is beyond `last`), counting what it offers
    /// into `least`.
    fn pass_by(&mut self, p: usize, last: usize, least: &mut u32) -> bool {
        match self.least_end.get(p).copied() {
            Some(end) if end != 0 && end as usize > last => {
                *least = (*least).min(end);
                // A closing tag written later would accept that end. (A scan that stops
                // at its first touched attempt has stopped already: the attempt that
                // recorded a finite end saw it rejected, which touched it.)
                self.effort.touched |= end != NO_END;
                true
            }
            _ => false,
        }
    }

    /// Record that `p` is exhausted, with the least end of `-->` reachable from it.
    fn exhausted(&mut self, p: u32, least: u32) {
        if self.least_end.is_empty() {
            self.least_end = vec![0; self.t.len() + 1];
        }
        self.least_end[p as usize] = least;
    }
}

impl<'t> Grammar<'t> for Walker<'t> {
    fn new(t: &'t str) -> Self {
        let mut last_close = HashMap::new();
        for s in OPENER.find_iter(t.as_bytes()) {
            if let Some((name, _)) = closing_tag_at(t, s) {
                last_close.insert(name, s as u32);
            }
        }
        Walker {
            t,
            last_close,
            least_end: Vec::new(),
            stack: Vec::new(),
            effort: Effort::default(),
        }
    }

    fn attrs_then_close(&mut self, kind: &'t str, start: usize) -> Option<usize> {
        let t = self.t;
        // An end is accepted when it is not after the TYPE's last closing tag.
        let Some(&last) = self.last_close.get(kind) else {
            // A closing tag written later would make this a block.
            self.effort.touched = true;
            return None;
        };
        let last = last as usize;
        let mut unused = NO_END;
        if self.pass_by(start, last, &mut unused) {
            return None;
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.frame(start));
        let mut found = None;
        while let Some(top) = stack.last_mut() {
            if let Some(next) = self.successor(top) {
                if !self.pass_by(next, last, &mut top.least) {
                    let f = self.frame(next);
                    stack.push(f);
                }
                continue;
            }
            // Every successor failed: \s*-->
            let ws = skip_while(t, top.p as usize, is_py_space);
            let mut least = top.least;
            if t[ws..].starts_with("-->") {
                if ws + 3 <= last {
                    found = Some(ws + 3);
                    break;
                }
                // No closing tag after this end yet.
                self.effort.touched = true;
                least = least.min((ws + 3) as u32);
            } else {
                // `\s*` ran to the end, or the text ends inside `-->`.
                self.effort.touched |= "-->".starts_with(&t[ws..]);
            }
            let p = top.p;
            stack.pop();
            self.exhausted(p, least);
            if let Some(parent) = stack.last_mut() {
                parent.least = parent.least.min(least);
            }
        }
        self.stack = stack;
        found
    }

    fn closing(&mut self, kind: &str, from: usize) -> Option<(usize, usize)> {
        let t = self.t;
        OPENER
            .find_iter(&t.as_bytes()[from..])
            .map(|i| from + i)
            .find_map(|s| match closing_tag_at(t, s) {
                Some((name, end)) if name == kind => Some((s, end)),
                _ => None,
            })
    }

    fn effort(&mut self) -> &mut Effort {
        &mut self.effort
    }
}

/// A whole block starting at the `<!--` at `start`.
fn block<'t>(g: &mut impl Grammar<'t>, t: &'t str, start: usize) -> Option<Block<'t>> {
    let p = skip_while(t, start + 4, is_py_space);
    g.effort().touched |= p == t.len();
    let p = p + t[p..].starts_with('@').then_some(1)?;
    let kind_end = skip_while(t, p, is_py_word);
    if kind_end == p {
        // `@` is the last character: the TYPE may still come.
        g.effort().touched |= p == t.len();
        return None;
    }
    let kind = &t[p..kind_end];
    let open_end = g.attrs_then_close(kind, kind_end)?;
    let (cs, ce) = g.closing(kind, open_end)?;
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

/// Every block in `text`, left to right, as `re.finditer` would find them. A text of
/// 4 GiB or more (far beyond any transcript line) has no blocks; the marker stage only
/// scans the text from a block still open, so only a block open across 4 GiB of text
/// is lost.
pub fn blocks(text: &str) -> Vec<Block<'_>> {
    blocks_counted(text).0
}

/// [`blocks`], with the number of attribute-list positions the matcher walked: at most
/// a few per byte of text, whatever the text (the linearity tests check it).
pub fn blocks_counted(text: &str) -> (Vec<Block<'_>>, usize) {
    let (blocks, _, frames) = scan::<Walker<'_>>(text, true);
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
    let (blocks, rest, _) = scan::<Walker<'_>>(text, false);
    (blocks, rest)
}

/// The finditer loop. With `complete`, `text` is all there is; without it, the loop
/// stops at the first attempt that read to the end of `text`.
fn scan<'t, G: Grammar<'t>>(
    text: &'t str,
    complete: bool,
) -> (Vec<Block<'t>>, Option<usize>, usize) {
    if u32::try_from(text.len()).is_err() {
        return (Vec::new(), None, 0);
    }
    let mut g = G::new(text);
    let finder = &*OPENER;
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(i) = finder.find(&text.as_bytes()[pos..]) {
        let start = pos + i;
        g.effort().touched = false;
        let block = block(&mut g, text, start);
        if g.effort().touched && !complete {
            return (out, Some(start), g.effort().frames);
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
            return (out, Some(text.len() - k), g.effort().frames);
        }
    }
    (out, None, g.effort().frames)
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

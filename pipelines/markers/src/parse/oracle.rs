//! The attribute-list matcher before the linear [`Walker`](super::Walker), kept as an
//! oracle for it: the same walk in the same order, but it visits every prefix of an
//! unquoted value, indexes every closing tag by TYPE, and remembers failures per TYPE,
//! so text with many TYPEs costs it the square of its length (issue 13). Its output is
//! the one the reference's regex gives (the fancy-regex differential test in
//! `tests/parse.rs` pinned it), so the new matcher must give the same on every text.

use std::collections::{HashMap, HashSet};

use super::{closing_tag_at, is_py_space, is_py_word, skip_while, Block, Effort, Grammar, OPENER};

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

/// The old matcher.
pub(super) struct Matcher<'t> {
    t: &'t str,
    /// Every closing tag `<!--\s*@/NAME\s*-->` by NAME: (start, end), in text order.
    closes: HashMap<&'t str, Vec<(usize, usize)>>,
    /// Per TYPE: attribute-list positions from which no accepted `-->` is reachable.
    failed: HashMap<&'t str, HashSet<u32>>,
    stack: Vec<Frame>,
    effort: Effort,
}

impl Matcher<'_> {
    /// The frame for position `p`: whether `\s+\w+=` starts an attribute there.
    fn frame(&mut self, p: usize) -> Frame {
        self.effort.frames += 1;
        let t = self.t;
        let ws = skip_while(t, p, is_py_space);
        let name_end = skip_while(t, ws, is_py_word);
        self.effort.touched |= ws > p && name_end == t.len();
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
            f.next = skip_while(t, v, |c| !is_py_space(c) && c != '>') as u32;
            if t[v..].starts_with('"') {
                match memchr::memchr(b'"', &t.as_bytes()[v + 1..]) {
                    Some(q) => return Some(v + 1 + q + 1),
                    None => self.effort.touched = true,
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
}

impl<'t> Grammar<'t> for Matcher<'t> {
    fn new(t: &'t str) -> Self {
        let mut closes: HashMap<&'t str, Vec<(usize, usize)>> = HashMap::new();
        for s in OPENER.find_iter(t.as_bytes()) {
            if let Some((name, end)) = closing_tag_at(t, s) {
                closes.entry(name).or_default().push((s, end));
            }
        }
        Matcher {
            t,
            closes,
            failed: HashMap::new(),
            stack: Vec::new(),
            effort: Effort::default(),
        }
    }

    fn attrs_then_close(&mut self, kind: &'t str, start: usize) -> Option<usize> {
        let t = self.t;
        let Some(&(last, _)) = self.closes.get(kind).and_then(|c| c.last()) else {
            self.effort.touched = true;
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
                let p = top.p as usize;
                let ws = skip_while(t, p, is_py_space);
                if t[ws..].starts_with("-->") {
                    if ws + 3 <= last {
                        found = Some(ws + 3);
                        break;
                    }
                    self.effort.touched = true;
                } else {
                    self.effort.touched |= "-->".starts_with(&t[ws..]);
                }
                failed.insert(top.p);
                stack.pop();
            }
            self.stack = stack;
        }
        self.failed.insert(kind, failed);
        found
    }

    fn closing(&mut self, kind: &str, from: usize) -> Option<(usize, usize)> {
        let list = self.closes.get(kind)?;
        list.get(list.partition_point(|&(s, _)| s < from)).copied()
    }

    fn effort(&mut self) -> &mut Effort {
        &mut self.effort
    }
}

/// [`super::blocks_counted`], the old way.
pub(super) fn blocks_counted(text: &str) -> (Vec<Block<'_>>, usize) {
    let (blocks, _, frames) = super::scan::<Matcher<'_>>(text, true);
    (blocks, frames)
}

/// [`super::blocks_settled`], the old way.
pub(super) fn blocks_settled(text: &str) -> (Vec<Block<'_>>, Option<usize>) {
    let (blocks, rest, _) = super::scan::<Matcher<'_>>(text, false);
    (blocks, rest)
}

//! What the corpus tests share: walking a corpus, a transcript's lines as the
//! manifest counts them, and a brain-marker extractor of their own.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use transcope_corpus::FileEntry;

/// Every file under `dir`, appended to `out`.
pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Hash of every file under `root` (paths and contents), in sorted order.
pub fn tree_hash(root: &Path) -> String {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let mut h = Sha256::new();
    for f in files {
        h.update(f.strip_prefix(root).unwrap().to_string_lossy().as_bytes());
        h.update([0]);
        h.update(fs::read(&f).unwrap());
        h.update([0]);
    }
    format!("{:x}", h.finalize())
}

/// The lines of a transcript's bytes as its manifest entry counts them (a torn last
/// line included), and whether the last is torn; both checked against the entry.
pub fn lines_of<'a>(data: &'a [u8], e: &FileEntry) -> (Vec<&'a [u8]>, bool) {
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let torn = lines.last().is_some_and(|l| !l.is_empty());
    if !torn {
        lines.pop();
    }
    assert_eq!(torn, e.torn_last_line, "{}", e.path);
    assert_eq!(lines.len() as u64, e.lines, "{}", e.path);
    (lines, torn)
}

/// A brain-marker extractor following scope-log §5.1, enough for generated text.
pub fn markers(text: &str) -> Vec<(String, BTreeMap<String, String>, String)> {
    fn ws(s: &[u8], mut i: usize) -> usize {
        while i < s.len() && s[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }
    fn word(s: &[u8], mut i: usize) -> usize {
        while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
            i += 1;
        }
        i
    }
    /// Parses an opening tag at `i`; returns (type, attrs, end).
    fn open(s: &[u8], i: usize) -> Option<(String, BTreeMap<String, String>, usize)> {
        let mut j = ws(s, i + 4);
        if s.get(j) != Some(&b'@') {
            return None;
        }
        let t0 = j + 1;
        j = word(s, t0);
        if j == t0 {
            return None;
        }
        let ty = String::from_utf8(s[t0..j].to_vec()).ok()?;
        let mut attrs = BTreeMap::new();
        loop {
            let k = ws(s, j);
            let n1 = word(s, k);
            if k == j || n1 == k || s.get(n1) != Some(&b'=') {
                break;
            }
            let v0 = n1 + 1;
            let (val, end) = if s.get(v0) == Some(&b'"') {
                let close = s[v0 + 1..].iter().position(|&c| c == b'"')? + v0 + 1;
                (&s[v0 + 1..close], close + 1)
            } else {
                let mut e = v0;
                while e < s.len() && !s[e].is_ascii_whitespace() && s[e] != b'>' {
                    e += 1;
                }
                (&s[v0..e], e)
            };
            attrs.insert(
                String::from_utf8_lossy(&s[k..n1]).into_owned(),
                String::from_utf8_lossy(val).into_owned(),
            );
            j = end;
        }
        j = ws(s, j);
        s[j..].starts_with(b"-->").then_some((ty, attrs, j + 3))
    }
    let s = text.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(off) = text[pos..].find("<!--") {
        let i = pos + off;
        let Some((ty, attrs, c0)) = open(s, i) else {
            pos = i + 4;
            continue;
        };
        // Earliest closing tag of exactly this type.
        let mut k = c0;
        let mut found = None;
        while let Some(o) = text[k..].find("<!--") {
            let at = k + o;
            let j = ws(s, at + 4);
            if s[j..].starts_with(b"@/") && s[j + 2..].starts_with(ty.as_bytes()) {
                let e = ws(s, j + 2 + ty.len());
                if s[e..].starts_with(b"-->") {
                    found = Some((at, e + 3));
                    break;
                }
            }
            k = at + 4;
        }
        let Some((c1, end)) = found else {
            pos = i + 4;
            continue;
        };
        let lower = ty.to_lowercase();
        let content = text[c0..c1].trim();
        if ["lesson", "milestone", "signal", "decision"].contains(&lower.as_str())
            && !content.is_empty()
        {
            out.push((lower, attrs, content.to_string()));
        }
        pos = end;
    }
    out
}

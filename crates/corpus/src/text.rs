//! Synthetic text: a shared pool of tool-output text, prose, prompts and brain markers.

use crate::rng::{derive, Rng};

const WORDS: &[&str] = &[
    "cache",
    "index",
    "scope",
    "branch",
    "worktree",
    "session",
    "transcript",
    "parser",
    "line",
    "record",
    "marker",
    "lesson",
    "signal",
    "buffer",
    "stream",
    "offset",
    "commit",
    "remote",
    "origin",
    "config",
    "path",
    "folder",
    "project",
    "repository",
    "timestamp",
    "sidecar",
    "agent",
    "thread",
    "rollout",
    "envelope",
    "payload",
    "schema",
    "field",
    "value",
    "error",
    "retry",
    "budget",
    "limit",
    "test",
    "fixture",
    "bench",
    "pipeline",
    "stage",
    "sink",
    "adapter",
    "identity",
    "resolver",
    "checkout",
    "fallback",
    "encoding",
    "decoder",
    "encoder",
    "the",
    "a",
    "we",
    "it",
    "this",
    "that",
    "now",
    "then",
    "first",
    "next",
    "also",
    "only",
    "should",
    "must",
    "will",
    "can",
    "does",
    "not",
    "because",
    "so",
    "when",
    "if",
    "after",
    "before",
    "while",
    "fast",
    "slow",
    "small",
    "large",
    "stable",
    "broken",
    "fixed",
    "missing",
    "unknown",
    "duplicate",
    "ordered",
    "sorted",
    "parallel",
    "lazy",
    "eager",
    "hot",
    "cold",
    "read",
    "write",
    "parse",
    "skip",
    "emit",
    "flush",
    "merge",
    "split",
    "hash",
    "map",
    "scan",
    "walk",
    "resolve",
    "rename",
    "move",
    "copy",
    "delete",
    "update",
    "insert",
    "check",
    "verify",
    "measure",
    "profile",
    "tune",
    "inline",
    "allocate",
    "reuse",
    "borrow",
    "clone",
    "spawn",
];

const IDENTS: &[&str] = &[
    "entries",
    "scope",
    "cursor",
    "reader",
    "writer",
    "line",
    "buf",
    "offset",
    "total",
    "seen",
    "cwd",
    "branch",
    "session_id",
    "agent_id",
    "marker",
    "attrs",
    "path",
    "root",
    "repo",
    "cfg",
    "stats",
    "cache",
    "index",
    "bytes",
    "count",
    "state",
    "next",
    "prev",
    "result",
    "item",
];

const FNS: &[&str] = &[
    "parse_line",
    "resolve_scope",
    "read_transcript",
    "emit_marker",
    "flush",
    "open_repo",
    "git_toplevel",
    "encode_cwd",
    "scan_dir",
    "decode_envelope",
    "merge_ranges",
    "hash_file",
    "load_manifest",
    "next_record",
    "with_capacity",
    "extend_from_slice",
    "split_at",
    "find",
];

const MODULES: &[&str] = &[
    "transcope::backfill",
    "transcope::jsonl",
    "transcope::identity",
    "transcope::markers",
    "transcope::scopelog",
    "transcope::adapter::claude",
    "transcope::adapter::codex",
    "hyper::client",
    "tokio::runtime",
    "cargo::core::compiler",
];

pub(crate) const FILES: &[&str] = &[
    "src/lib.rs",
    "src/main.rs",
    "src/scope.rs",
    "src/reader.rs",
    "src/marker.rs",
    "src/identity/mod.rs",
    "src/identity/git.rs",
    "tests/backfill.rs",
    "Cargo.toml",
    "README.md",
    "docs/design.md",
    "crates/core/src/lib.rs",
    "crates/jsonl/src/decode.rs",
    "web/src/App.tsx",
    "web/package.json",
    "scripts/release.sh",
    "Makefile",
    ".github/ci.yml",
];

const UNICODE: &[&str] = &[
    "✓",
    "✗",
    "→",
    "—",
    "résumé",
    "naïve",
    "日本語",
    "Grüße",
    "🚀",
    "⚠️",
    "…",
    "λ",
    "Ω",
    "😀",
];

/// A large block of pseudo tool output shared by every session, sliced at random offsets.
pub(crate) struct TextPool {
    pool: String,
}

impl TextPool {
    /// Builds a pool of at least `min_len` bytes from `seed`.
    pub(crate) fn new(seed: u64, min_len: usize) -> Self {
        let mut rng = Rng::new(derive(seed, 0x7e47, 0));
        let target = min_len.max(1 << 20) + 4096;
        let mut pool = String::with_capacity(target + 256);
        while pool.len() < target {
            pool_line(&mut rng, &mut pool);
            pool.push('\n');
        }
        TextPool { pool }
    }

    /// A slice of about `len` bytes (adjusted to UTF-8 boundaries).
    pub(crate) fn slice(&self, rng: &mut Rng, len: usize) -> &str {
        let len = len.min(self.pool.len() - 8);
        let mut start = rng.index(self.pool.len() - len);
        while !self.pool.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = start + len;
        while !self.pool.is_char_boundary(end) {
            end -= 1;
        }
        &self.pool[start..end]
    }
}

fn pool_line(rng: &mut Rng, out: &mut String) {
    use std::fmt::Write;
    match rng.weighted(&[30, 30, 12, 10, 5, 5, 4, 4]) {
        0 => {
            let lvl = rng.pick(&["INFO ", "DEBUG", "WARN ", "ERROR", "TRACE"]);
            let _ = write!(
                out,
                "2025-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z {lvl} {}: {} {} {} in {}ms ({}={})",
                rng.range(1, 12),
                rng.range(1, 28),
                rng.below(24),
                rng.below(60),
                rng.below(60),
                rng.below(1000),
                rng.pick(MODULES),
                rng.pick(WORDS),
                rng.range(1, 99_999),
                rng.pick(WORDS),
                rng.range(1, 5000),
                rng.pick(IDENTS),
                rng.pick(WORDS),
            );
        }
        1 => {
            let indent = " ".repeat(4 * rng.index(4));
            let _ = match rng.index(5) {
                0 => write!(
                    out,
                    "{indent}let {} = {}(&{}, \"{}\")?;",
                    rng.pick(IDENTS),
                    rng.pick(FNS),
                    rng.pick(IDENTS),
                    rng.pick(WORDS)
                ),
                1 => write!(
                    out,
                    "{indent}for {} in {}.iter() {{",
                    rng.pick(IDENTS),
                    rng.pick(IDENTS)
                ),
                2 => write!(
                    out,
                    "{indent}if {}.len() > {} {{ return Err(Error::{}); }}",
                    rng.pick(IDENTS),
                    rng.below(4096),
                    rng.pick(&["Io", "Parse", "Missing", "Budget"])
                ),
                3 => write!(
                    out,
                    "{indent}// {} the {} before {} {}",
                    rng.pick(WORDS),
                    rng.pick(WORDS),
                    rng.pick(WORDS),
                    rng.pick(WORDS)
                ),
                _ => write!(out, "{indent}}}"),
            };
        }
        2 => {
            let _ = write!(
                out,
                "test {}::tests::{}_{} ... {}",
                rng.pick(&["scope", "jsonl", "identity", "markers", "backfill"]),
                rng.pick(FNS),
                rng.pick(WORDS),
                rng.pick(&["ok", "ok", "ok", "ok", "FAILED", "ignored"])
            );
        }
        3 => {
            let _ = write!(
                out,
                "{}:{}:{}: {}: {} `{}`",
                rng.pick(FILES),
                rng.range(1, 900),
                rng.range(1, 80),
                rng.pick(&["warning", "error[E0308]", "note", "help"]),
                rng.pick(&[
                    "unused variable",
                    "mismatched types",
                    "borrowed value",
                    "consider"
                ]),
                rng.pick(IDENTS)
            );
        }
        4 => {
            let _ = write!(
                out,
                "{} {} passed {} {} failed ({}.{}s) {} {}",
                rng.pick(UNICODE),
                rng.below(300),
                rng.pick(UNICODE),
                rng.below(3),
                rng.below(60),
                rng.below(10),
                rng.pick(UNICODE),
                rng.pick(WORDS)
            );
        }
        5 => {
            let _ = write!(
                out,
                "{{\"{}\": \"{}\", \"path\": \"C:\\\\Users\\\\dev\\\\{}\", \"n\": {}}}",
                rng.pick(IDENTS),
                rng.pick(WORDS),
                rng.pick(IDENTS),
                rng.below(1000)
            );
        }
        6 => {
            let _ = write!(
                out,
                "{}\t{}\t{}.{}\t{}",
                rng.range(100, 99_999),
                rng.pick(FNS),
                rng.below(100),
                rng.below(10),
                rng.pick(WORDS)
            );
        }
        _ => {
            let _ = write!(
                out,
                "\u{1b}[32m{:>12}\u{1b}[0m {} v0.{}.{} ({})",
                rng.pick(&["Compiling", "Checking", "Finished", "Running"]),
                rng.pick(IDENTS),
                rng.below(20),
                rng.below(10),
                rng.pick(FILES)
            );
        }
    }
}

/// A sentence of 5–16 words ending in a period.
pub(crate) fn sentence(rng: &mut Rng, out: &mut String) {
    let n = rng.range(5, 16);
    for i in 0..n {
        let w = *rng.pick(WORDS);
        if i == 0 {
            let mut c = w.chars();
            if let Some(f) = c.next() {
                out.extend(f.to_uppercase());
                out.push_str(c.as_str());
            }
        } else {
            out.push(' ');
            if rng.chance(0.04) {
                out.push('`');
                out.push_str(ident(rng));
                out.push('`');
            } else {
                out.push_str(w);
            }
        }
    }
    out.push('.');
}

/// Assistant prose: a few sentences, sometimes with a list or a code block.
pub(crate) fn prose(rng: &mut Rng, sentences: u64) -> String {
    let mut s = String::new();
    for i in 0..sentences {
        if i > 0 {
            s.push(if rng.chance(0.2) { '\n' } else { ' ' });
        }
        sentence(rng, &mut s);
    }
    if rng.chance(0.15) {
        s.push_str("\n\n");
        for _ in 0..rng.range(2, 5) {
            s.push_str("- ");
            sentence(rng, &mut s);
            s.push('\n');
        }
    }
    if rng.chance(0.1) {
        s.push_str("\n```rust\nlet ");
        s.push_str(ident(rng));
        s.push_str(" = ");
        s.push_str(FNS[rng.index(FNS.len())]);
        s.push_str("(\"");
        s.push_str(word(rng));
        s.push_str("\\n\")?;\n```");
    }
    s
}

/// A typed user prompt.
pub(crate) fn prompt(rng: &mut Rng) -> String {
    let f = *rng.pick(FILES);
    let i = *rng.pick(IDENTS);
    let w = *rng.pick(WORDS);
    match rng.index(8) {
        0 => format!("Fix the failing test in {f}"),
        1 => format!("Why does `{i}` end up {w} after the {} step?", rng.pick(WORDS)),
        2 => format!("Refactor {f} so that {i} is {w}. Keep the public API."),
        3 => format!("Run the tests and tell me what breaks in {f}"),
        4 => format!("Add a {w} check to {} and a test for it", rng.pick(FNS)),
        5 => "continue".to_string(),
        6 => format!(
            "Here is the error:\n\n```\nerror: {w} {i} at {f}:{}\n```\nplease fix \"{w}\" \u{2014} thanks",
            rng.range(1, 500)
        ),
        _ => {
            let mut s = String::from("Plan: ");
            sentence(rng, &mut s);
            s.push(' ');
            sentence(rng, &mut s);
            s
        }
    }
}

/// A random identifier-ish word.
pub(crate) fn ident(rng: &mut Rng) -> &'static str {
    IDENTS[rng.index(IDENTS.len())]
}

/// A random word.
pub(crate) fn word(rng: &mut Rng) -> &'static str {
    WORDS[rng.index(WORDS.len())]
}

/// A random file path relative to a repo.
pub(crate) fn file(rng: &mut Rng) -> &'static str {
    FILES[rng.index(FILES.len())]
}

/// Counts of brain markers placed into one text.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MarkerCounts {
    /// Markers a spec-conforming extractor returns (types lesson/milestone/signal/decision,
    /// non-empty content, terminated).
    pub(crate) markers: u64,
    /// Of those, how many carry `share=fleet`.
    pub(crate) fleet: u64,
    /// Opening tags of a known type that are never closed.
    pub(crate) unterminated: u64,
}

impl MarkerCounts {
    pub(crate) fn add(&mut self, o: MarkerCounts) {
        self.markers += o.markers;
        self.fleet += o.fleet;
        self.unterminated += o.unterminated;
    }
}

const TYPES: &[&str] = &["lesson", "milestone", "signal", "decision"];

fn marker_content(rng: &mut Rng) -> String {
    let mut s = String::new();
    sentence(rng, &mut s);
    if rng.chance(0.25) {
        s.push('\n');
        sentence(rng, &mut s);
    }
    s
}

/// Appends one marker construct to `text` and returns what an extractor should find.
///
/// `allow_unterminated` is false when the surrounding message already holds other markers: an
/// unterminated opening tag would swallow a later marker of the same type.
pub(crate) fn append_marker(
    rng: &mut Rng,
    text: &mut String,
    allow_unterminated: bool,
) -> MarkerCounts {
    let mut c = MarkerCounts::default();
    let ty = *rng.pick(TYPES);
    let body = marker_content(rng);
    let kind = rng.weighted(&[
        40,
        25,
        6,
        4,
        4,
        3,
        3,
        3,
        if allow_unterminated { 6 } else { 0 },
    ]);
    match kind {
        0 => {
            text.push_str(&format!("<!-- @{ty} -->{body}<!-- @/{ty} -->"));
            c.markers = 1;
        }
        1 => {
            // Attributes; some shared with the fleet.
            let mut attrs = String::new();
            let fleet = rng.chance(0.4);
            if ty == "signal" || rng.chance(0.3) {
                attrs.push_str(&format!(
                    " severity={}",
                    rng.pick(&["info", "warning", "critical"])
                ));
            }
            if fleet {
                attrs.push_str(" share=fleet");
            }
            if rng.chance(0.3) {
                attrs.push_str(&format!(" title=\"{} {}\"", word(rng), word(rng)));
            }
            if rng.chance(0.15) {
                attrs.push_str(" ts=2020-01-01T00:00:00Z");
            }
            if rng.chance(0.1) {
                attrs.push_str(" note=\"\"");
            }
            text.push_str(&format!("<!-- @{ty}{attrs} -->{body}<!-- @/{ty} -->"));
            c.markers = 1;
            c.fleet = u64::from(fleet);
        }
        2 => {
            // Compact and padded spacing, multi-line content.
            text.push_str(&format!("<!--@{ty}-->\n  {body}\n<!--   @/{ty}   -->"));
            c.markers = 1;
        }
        3 => {
            // Capitalised type: lowercased after matching.
            let cap = format!("{}{}", ty[..1].to_uppercase(), &ty[1..]);
            text.push_str(&format!("<!-- @{cap} -->{body}<!-- @/{cap} -->"));
            c.markers = 1;
        }
        4 => {
            // Nested: the outer block wins and swallows the inner one.
            let inner = TYPES
                .iter()
                .find(|t| **t != ty)
                .copied()
                .unwrap_or("lesson");
            text.push_str(&format!(
                "<!-- @{ty} -->{body} <!-- @{inner} -->{}<!-- @/{inner} --> done.<!-- @/{ty} -->",
                marker_content(rng)
            ));
            c.markers = 1;
        }
        5 => {
            // A marker inside a block of an unknown type is not seen.
            text.push_str(&format!(
                "<!-- @aside -->{body} <!-- @{ty} -->{}<!-- @/{ty} --><!-- @/aside -->",
                marker_content(rng)
            ));
        }
        6 => {
            // Unknown type alone: dropped.
            text.push_str(&format!("<!-- @note -->{body}<!-- @/note -->"));
        }
        7 => {
            // Empty content: dropped.
            text.push_str(&format!("<!-- @{ty} -->  \n <!-- @/{ty} -->"));
        }
        _ => {
            text.push_str(&format!("<!-- @{ty} -->{body}"));
            c.unterminated = 1;
        }
    }
    c
}

/// Assistant text with brain markers inserted at probability `rate` per text.
pub(crate) fn assistant_text(rng: &mut Rng, rate: f64, counts: &mut MarkerCounts) -> String {
    let n = rng.range(1, 6);
    let mut s = prose(rng, n);
    if rng.chance(rate) {
        let n = if rng.chance(0.2) { 2 } else { 1 };
        for i in 0..n {
            s.push_str(if rng.chance(0.5) { "\n\n" } else { " " });
            let c = append_marker(rng, &mut s, n == 1 && i == 0);
            counts.add(c);
        }
        if rng.chance(0.5) {
            s.push('\n');
            sentence(rng, &mut s);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_slices_are_utf8_and_bounded() {
        let pool = TextPool::new(1, 1 << 20);
        let mut rng = Rng::new(9);
        for _ in 0..200 {
            let want = rng.index(50_000);
            let s = pool.slice(&mut rng, want);
            assert!(s.len() <= want);
            assert!(s.len() + 4 >= want);
        }
    }
}

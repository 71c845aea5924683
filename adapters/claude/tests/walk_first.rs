//! An assistant line walked before it is probed is handed on exactly as after its probe:
//! for sinks that want a line's usage alone, its folder changes too, or its marker text,
//! the adapter gives what the probe-first reading gives (the walk's folder and branch
//! are the probe's), on the public corpus, a generated one, and mutated lines.

mod common;

use transcope_adapter_claude::quick::{looks_assistant, usage_entry, usage_read};
use transcope_adapter_claude::{decode_claude, decode_claude_usage, probe::probe};
use transcope_core::adapter::{Adapter, EntrySink, Probe};
use transcope_core::entry::{Entry, EntryKind, LinePos};

/// What a sink wants besides usage.
#[derive(Clone, Copy, Debug)]
enum Wants {
    /// Usage alone (a backfill without markers, the folder in force).
    Usage,
    /// Usage and any folder but `/seen` (change detection after a folder change).
    Folders,
    /// Usage and marker text (a backfill with markers).
    Markers,
    /// Usage, and the texts of lines in any folder but `/seen` (a stage whose want of
    /// more than usage depends on the folder, which the walk reads).
    FolderTexts,
}

/// Records what it is given; wants by its policy.
struct Sink {
    wants: Wants,
    got: Vec<Entry<'static>>,
}

impl EntrySink for Sink {
    fn wants(&self, p: &Probe<'_>) -> bool {
        let more = match self.wants {
            Wants::Usage => false,
            Wants::Folders => p.cwd.is_some_and(|c| c != "/seen"),
            Wants::Markers => p.opens_marker(),
            Wants::FolderTexts => p.text && p.cwd.is_some_and(|c| c != "/seen"),
        };
        p.usage || p.kind == Some(EntryKind::Context) || more
    }

    fn entry(&mut self, e: &Entry<'_>) {
        let mut e = e.to_static();
        // Marker text matters only to the marker sink, and only where it asked for it
        // (a line whose text cannot open a marker gives it nothing).
        let keep = match self.wants {
            Wants::Usage | Wants::Folders => false,
            Wants::Markers => probe_text(&e),
            Wants::FolderTexts => true,
        };
        if !keep {
            e.texts.clear();
        }
        self.got.push(e);
    }
}

fn probe_text(e: &Entry<'_>) -> bool {
    e.texts.iter().any(|t| t.contains("<!--"))
}

/// The adapter as it read before the walk came first: probe, then ask, then read.
fn probe_first(line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) {
    if pos.offset > 0 {
        let searched = Default::default();
        if let Some(p) = probe(line, &searched) {
            if !sink.wants(&p) {
                return;
            }
            if p.usage && !sink.wants(&Probe { usage: false, ..p }) {
                if let Some(e) = usage_entry(line, pos) {
                    sink.entry(&e);
                    return;
                }
                let _ = decode_claude_usage(line, pos, sink);
                return;
            }
        }
    }
    let _ = decode_claude(line, pos, sink);
}

const POS: LinePos = LinePos {
    offset: 10,
    line: 2,
};

/// Both readings of `line` for every sink; true when the line looked like an
/// assistant line and the walk answered.
fn check(line: &[u8]) -> bool {
    for wants in [
        Wants::Usage,
        Wants::Folders,
        Wants::Markers,
        Wants::FolderTexts,
    ] {
        let mut now = Sink {
            wants,
            got: Vec::new(),
        };
        let _ = transcope_adapter_claude::ClaudeAdapter::new().decode(line, POS, &mut now);
        let mut before = Sink {
            wants,
            got: Vec::new(),
        };
        probe_first(line, POS, &mut before);
        assert_eq!(
            now.got,
            before.got,
            "{wants:?}: {}",
            String::from_utf8_lossy(line)
        );
    }
    looks_assistant(line) && usage_read(line, POS).is_some()
}

/// Real lines, generated lines, and each assistant line with a changed folder.
fn lines() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let paths = common::public_and_generated(dir.path(), 5, 2_000_000);
    let mut out = Vec::new();
    for p in paths {
        for line in std::fs::read(&p).unwrap().split(|b| *b == b'\n') {
            out.push(line.to_vec());
        }
    }
    out
}

#[test]
fn the_walk_first_hands_on_what_the_probe_first_did() {
    let (mut walked, mut assistant) = (0, 0);
    for line in lines() {
        assistant += usize::from(looks_assistant(&line));
        walked += usize::from(check(&line));
        // The same line in the folder a sink has seen, with no folder, with a number
        // as its folder, without a branch.
        let text = String::from_utf8_lossy(&line).into_owned();
        if let Some(at) = text.find("\"cwd\":\"") {
            let end = at + 7 + text[at + 7..].find('"').unwrap_or(0);
            for folder in ["\"/seen\"", "\"\"", "null", "5", "true"] {
                let v = format!("{}\"cwd\":{folder}{}", &text[..at], &text[end + 1..]);
                check(v.as_bytes());
            }
        }
        check(
            text.replacen("\"gitBranch\":\"", "\"gitBranch\":\"x", 1)
                .as_bytes(),
        );
        check(
            text.replacen("\"gitBranch\":", "\"gitBranch\":false,\"g\":", 1)
                .as_bytes(),
        );
    }
    assert!(assistant > 100, "{assistant} assistant lines");
    assert!(
        walked * 10 > assistant * 9,
        "the walk answers for most assistant lines ({walked} of {assistant})"
    );
}

#[test]
fn the_walk_first_hands_on_what_the_probe_first_did_on_mutated_lines() {
    let mut rng = transcope_testkit::Rng::new(11);
    let lines: Vec<Vec<u8>> = lines()
        .into_iter()
        .filter(|l| looks_assistant(l))
        .take(300)
        .collect();
    let bytes = b"\"\\{}[],:0 u1e.-\x01a<!";
    for line in &lines {
        for _ in 0..40 {
            let mut v = line.clone();
            for _ in 0..1 + rng.next_u64() % 3 {
                let at = (rng.next_u64() as usize) % v.len();
                v[at] = bytes[(rng.next_u64() as usize) % bytes.len()];
            }
            check(&v);
        }
    }
}

//! Shared helpers for the integration tests: framing, detection, decoding a file.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use transcope_adapter_claude::ClaudeFactory;
use transcope_adapter_codex::CodexFactory;
use transcope_core::adapter::{AdapterRegistry, Skip};
use transcope_core::{Entry, LinePos};

/// `testdata/<rel>` of the workspace.
pub fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

/// The two real factories, Claude first (it is the fallback).
pub fn registry() -> AdapterRegistry {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(ClaudeFactory))
        .register(Box::new(CodexFactory));
    r
}

/// Split on `\n` (a final line without terminator included, as the reference's loader
/// does), dropping one trailing `\r` as the framing layer does.
pub fn frame(data: &[u8]) -> Vec<(LinePos, &[u8])> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for (i, mut line) in data.split(|b| *b == b'\n').enumerate() {
        let len = line.len();
        if offset + len >= data.len() && len == 0 {
            break; // the empty piece after a final "\n"
        }
        if let Some(l) = line.strip_suffix(b"\r") {
            line = l;
        }
        out.push((
            LinePos {
                offset: offset as u64,
                line: i as u64 + 1,
            },
            line,
        ));
        offset += len + 1;
    }
    out
}

/// The result of decoding one file through the detected adapter.
#[derive(Debug, Default)]
pub struct Decoded {
    pub factory: &'static str,
    pub entries: Vec<Entry<'static>>,
    pub skips: Vec<(u64, Skip)>,
}

impl Decoded {
    pub fn skip_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for (_, s) in &self.skips {
            *m.entry(s.as_str()).or_insert(0) += 1;
        }
        m
    }

    /// The sequence of distinct consecutive (cwd, branch) pairs among entries with a cwd.
    pub fn scope_changes(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for e in &self.entries {
            let Some(cwd) = e.cwd.as_deref() else {
                continue;
            };
            let pair = (cwd.to_owned(), e.branch.as_deref().unwrap_or("").to_owned());
            if out.last() != Some(&pair) {
                out.push(pair);
            }
        }
        out
    }

    pub fn texts(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|e| e.texts.iter().map(|t| t.to_string()))
            .collect()
    }
}

pub fn decode_bytes(registry: &AdapterRegistry, data: &[u8]) -> Decoded {
    let lines = frame(data);
    let first = lines
        .iter()
        .map(|(_, l)| *l)
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
        .unwrap_or(b"");
    let factory = registry
        .detect(std::path::Path::new("transcript.jsonl"), first)
        .expect("the Claude fallback always answers");
    let mut adapter = factory.build();
    let mut out = Decoded {
        factory: factory.name(),
        ..Decoded::default()
    };
    for (pos, line) in lines {
        let mut sink =
            transcope_core::adapter::from_fn(|e: &Entry<'_>| out.entries.push(e.to_static()));
        if let Err(skip) = adapter.decode(line, pos, &mut sink) {
            out.skips.push((pos.line, skip));
        }
    }
    out
}

pub fn decode_path(path: &Path) -> Decoded {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    decode_bytes(&registry(), &data)
}

/// Every `*.jsonl` under `testdata/<dir>`, sorted.
pub fn jsonl_files(dir: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(testdata(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

/// The `.jsonl` files of the public Claude corpus and of a corpus generated into `dir`
/// (from `seed`, about `bytes` bytes).
pub fn public_and_generated(dir: &Path, seed: u64, bytes: u64) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    transcope_testkit::jsonl_files(&testdata("public/claude"), &mut paths);
    transcope_corpus::generate(&transcope_corpus::CorpusSpec::new(seed, bytes), dir).unwrap();
    transcope_testkit::jsonl_files(&dir.join("claude"), &mut paths);
    paths
}

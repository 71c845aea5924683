//! Shared test helpers: read a file the way the engine does (open, then the whole
//! document once or each line), collecting owned entries and the skips.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use transcope_adapter_gemini::GeminiFactory;
use transcope_core::adapter::{from_fn, Adapter, AdapterFactory, Framing, Skip};
use transcope_core::{Entry, LinePos};

/// A path under `testdata/public/gemini`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/public/gemini")
        .join(rel)
}

/// A path under `testdata/public`.
pub fn public(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/public")
        .join(rel)
}

/// An entry with every borrow made owned.
pub fn owned(e: &Entry<'_>) -> Entry<'static> {
    e.to_static()
}

/// Decode `data` as the file at `path`, by the factory's framing.
pub fn decode_as(path: &Path, data: &[u8]) -> (Vec<Entry<'static>>, Vec<(u64, Skip)>) {
    let mut adapter = GeminiFactory.build();
    adapter.open(path);
    decode_with(&mut adapter, GeminiFactory.framing(path), data)
}

/// Decode `data` with `adapter` (already opened) by `framing`.
pub fn decode_with(
    adapter: &mut dyn Adapter,
    framing: Framing,
    data: &[u8],
) -> (Vec<Entry<'static>>, Vec<(u64, Skip)>) {
    let (mut entries, mut skips) = (Vec::new(), Vec::new());
    if framing == Framing::Document {
        let pos = LinePos { offset: 0, line: 1 };
        if let Err(s) = adapter.decode(
            data,
            pos,
            &mut from_fn(|e: &Entry<'_>| entries.push(owned(e))),
        ) {
            skips.push((1, s));
        }
        return (entries, skips);
    }
    let mut offset = 0u64;
    for (i, line) in data.split(|b| *b == b'\n').enumerate() {
        let pos = LinePos {
            offset,
            line: i as u64 + 1,
        };
        offset += line.len() as u64 + 1;
        if line.is_empty() && offset > data.len() as u64 {
            break;
        }
        if let Err(s) = adapter.decode(
            line,
            pos,
            &mut from_fn(|e: &Entry<'_>| entries.push(owned(e))),
        ) {
            skips.push((pos.line, s));
        }
    }
    (entries, skips)
}

/// Decode the file at `path`.
pub fn decode_file(path: &Path) -> (Vec<Entry<'static>>, Vec<(u64, Skip)>) {
    let data = std::fs::read(path).unwrap();
    decode_as(path, &data)
}

/// (kind, time, texts joined by `|`, cwd, uuid) of one entry.
pub type Summary = (String, String, String, Option<String>, Option<String>);

/// (kind, time, texts joined by `|`, cwd, uuid) of each entry, for compact asserts.
pub fn summary(entries: &[Entry<'_>]) -> Vec<Summary> {
    entries
        .iter()
        .map(|e| {
            (
                format!("{:?}", e.kind.unwrap()),
                e.time.as_str().unwrap_or("-").to_owned(),
                e.texts.join("|"),
                e.cwd.as_deref().map(String::from),
                e.uuid.as_deref().map(String::from),
            )
        })
        .collect()
}

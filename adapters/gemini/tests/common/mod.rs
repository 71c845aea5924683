//! Shared test helpers: read a file the way the engine does (open, then the whole
//! document once or each line as the framing layer cuts it: the test kit's
//! `decode_bytes`), collecting owned entries and the skips.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use transcope_adapter_gemini::GeminiFactory;
use transcope_core::adapter::AdapterFactory;
use transcope_core::Entry;
pub use transcope_testkit::decode::{decode_bytes, Decoded};

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
pub fn decode_as(path: &Path, data: &[u8]) -> Decoded {
    let mut adapter = GeminiFactory.build();
    adapter.open(path);
    decode_bytes(adapter.as_mut(), GeminiFactory.framing(path), data)
}

/// Decode the file at `path`.
pub fn decode_file(path: &Path) -> Decoded {
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

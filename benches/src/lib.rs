//! Benchmarks for transcope live in `benches/` (criterion, `harness = false`) and
//! `bench.sh` (whole-CLI). This library holds what the criterion benches share.

use std::path::{Path, PathBuf};

/// The `.jsonl` files of `testdata/public/<dir>`, sorted.
pub fn public_files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/public")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

//! The storage seam holds: only the backend crates depend on a database engine's
//! client (`rusqlite`: the SQLite backends; `postgres`: the fleet). Any other crate
//! reads and writes through `transcope-store`, `transcope-index` or
//! `transcope-fleet`. Dev-dependencies (tests that look inside a database) are free.

use std::path::{Path, PathBuf};

/// The `[dependencies]` names of a manifest (the section only; not dev- or build-).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == "[dependencies]";
            continue;
        }
        if inside && !t.is_empty() && !t.starts_with('#') {
            if let Some(name) = t.split(['=', '.', ' ']).next() {
                out.push(name.trim().to_owned());
            }
        }
    }
    out
}

fn manifests(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for group in ["crates", "adapters", "pipelines", "examples"] {
        for e in std::fs::read_dir(root.join(group)).unwrap() {
            let m = e.unwrap().path().join("Cargo.toml");
            if m.exists() {
                out.push(m);
            }
        }
    }
    out.push(root.join("benches/Cargo.toml"));
    out
}

#[test]
fn only_the_backend_crates_depend_on_rusqlite_or_postgres() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let allowed = [
        ("rusqlite", &["sqlite", "index", "cursor-store"][..]),
        ("postgres", &["fleet"][..]),
        ("tokio-postgres", &["fleet"][..]),
        ("tokio-postgres-rustls", &["fleet"][..]),
    ];
    let mut seen = 0;
    for m in manifests(&root) {
        let crate_dir = m
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let deps = dependencies(&std::fs::read_to_string(&m).unwrap());
        for (engine, owners) in allowed {
            if deps.iter().any(|d| d == engine) {
                assert!(
                    owners.contains(&crate_dir.as_str()),
                    "{} depends on {engine}: only {owners:?} may (a backend crate); read and write through the store",
                    m.display()
                );
                seen += 1;
            }
        }
    }
    // The backends themselves were found (the check looked where the crates are).
    assert!(seen >= 4, "{seen}");
}

//! An adapter among the others: every other agent's public transcript
//! (`testdata/public/<agent>/`, each agent's folder named as its adapter) is detected,
//! named and claimed with the adapter registered exactly as without it, and none of
//! their lines is the adapter's.

use std::path::PathBuf;

use transcope_core::head::Head;

use crate::{engine, first_non_empty_line, testdata, transcript_files};

/// The public transcripts of every agent but `name`.
fn others_files(name: &str) -> Vec<PathBuf> {
    let public = testdata("public");
    let mut dirs: Vec<String> = std::fs::read_dir(&public)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|d| d != "licenses" && d != name)
        .collect();
    dirs.sort();
    let mut files = Vec::new();
    for d in &dirs {
        transcript_files(&public.join(d), &mut files);
    }
    files
}

/// For every other agent's public transcript: `name`'s factory does not sniff it, its
/// layout neither claims nor names it, and the binary's registry detects, names and
/// claims it as the registry without `name` does. Panics on the first that differs;
/// returns how many files were checked.
pub fn others_untouched(name: &str) -> usize {
    let with = engine::adapters();
    let without = engine::adapters().without(name);
    let own = with.by_name(name).expect("a registered adapter");
    let files = others_files(name);
    for path in &files {
        let at = path.display();
        let line = first_non_empty_line(path);
        assert_eq!(own.sniff(path, &line), None, "{at}");
        if let Some(layout) = own.layout() {
            assert!(!layout.claims(path), "{at}");
            assert!(layout.key_of(&Head::new(path)).is_none(), "{at}");
        }
        let name_of = |f: Option<&dyn transcope_core::adapter::AdapterFactory>| f.map(|f| f.name());
        assert_eq!(
            name_of(with.detect(path, &line)),
            name_of(without.detect(path, &line)),
            "{at}"
        );
        assert_eq!(with.scope_key(path), without.scope_key(path), "{at}");
        assert_eq!(
            name_of(with.claiming(path)),
            name_of(without.claiming(path)),
            "{at}"
        );
    }
    files.len()
}

/// Every non-empty line of every other agent's public transcript (not `name`'s) is
/// not one of `name`'s by `is_own` (its adapter's own test of a line); panics naming
/// the first that is. Returns how many lines were shown.
pub fn no_other_agents_line_is(name: &str, is_own: impl Fn(&[u8]) -> bool) -> usize {
    let files = others_files(name);
    let mut seen = 0;
    for path in &files {
        let data = std::fs::read(path).unwrap();
        for line in data.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            assert!(
                !is_own(line),
                "{}: {}",
                path.display(),
                String::from_utf8_lossy(&line[..line.len().min(200)])
            );
            seen += 1;
        }
    }
    seen
}

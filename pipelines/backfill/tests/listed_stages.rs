//! A stage listed in the pipeline runs over every file of a backfill, in the same pass
//! and under the same cursor as change detection and markers, and changes nothing they
//! write.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use transcope_backfill::{backfill, discover, MarkersOut, Options, Summary};
use transcope_engine::Pipeline;
use transcope_testkit::engine::{adapters, pipeline, pipeline_listing, TallyFactory};

fn archive() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/sample-archive")
}

/// Every file under `dir`, by path relative to it.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn run(home: &Path, p: Pipeline) -> Summary {
    let (jobs, problems) = discover(&[archive()], &adapters());
    assert!(problems.is_empty(), "{problems:?}");
    let mut o = Options::new(home, p);
    o.jobs = 2;
    o.markers = MarkersOut::Ndjson(home.join("markers.ndjson"));
    let s = backfill(jobs, &o, &|_, _| {});
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    s
}

#[test]
fn a_listed_stage_sees_every_file_once_and_changes_no_output() {
    let home = tempfile::tempdir().unwrap();
    let tally = TallyFactory::default();
    let s = run(home.path(), pipeline_listing(home.path(), tally.listed()));
    let told = tally.told();
    assert_eq!(told.len() as u64, s.files);
    assert_eq!(told.iter().map(|t| t.read).sum::<u64>(), s.entries);
    assert!(told.iter().all(|t| !t.resumed && t.key.is_some()));

    let bare = tempfile::tempdir().unwrap();
    run(bare.path(), pipeline(bare.path()));
    let logs = |home: &Path| tree(&home.join("brain/session-scopes"));
    assert_eq!(logs(home.path()), logs(bare.path()));
    // Files end in the scheduler's order: compare the markers as sets of lines.
    let markers = |home: &Path| {
        let text = std::fs::read_to_string(home.join("markers.ndjson")).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort();
        lines
    };
    assert!(s.markers > 0, "the sample archive holds markers");
    assert_eq!(markers(home.path()), markers(bare.path()));

    // Again: every byte was observed, by the listed stage too.
    let again = run(home.path(), pipeline_listing(home.path(), tally.listed()));
    assert_eq!(again.transitions, 0);
    assert_eq!(tally.told().len(), told.len());
}

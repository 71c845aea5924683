//! A resumed Claude Code session replays its parent's lines with their own times, so
//! two root sessions hold copies of one request that tie by every rule but one: the
//! copy kept is the one of the file earlier in the run's stream, whichever worker
//! reads it and whenever its requests are written. Two workers with many small
//! flushes leave the index exactly as one worker does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use transcope_backfill::{backfill, discover, Options};
use transcope_index::{Index, UsageFilter, UsageKey};

/// Files per archive.
const FILES: usize = 300;

/// Requests a file spends itself.
const OWN: usize = 12;

/// An assistant line of session `file` for request `(owner, j)`, stamped with the
/// owner's time for it: a replayed line keeps the time it had.
fn line(owner: usize, file: usize, j: usize) -> String {
    format!(
        concat!(
            r#"{{"type":"assistant","cwd":"/w","gitBranch":"main","sessionId":"s{file:03}","#,
            r#""timestamp":"2026-02-{day:02}T{h:02}:{m:02}:{j:02}Z","message":{{"id":"m{owner}_{j}","#,
            r#""model":"claude-x","content":[{{"type":"text","text":"t"}}],"#,
            r#""usage":{{"input_tokens":{i},"output_tokens":{o}}}}},"requestId":"r{owner}_{j}"}}"#
        ),
        file = file,
        day = 1 + owner / 100,
        h = owner % 100 / 5,
        m = owner % 5 * 10,
        j = j,
        owner = owner,
        i = owner + 1,
        o = j + 1,
    )
}

/// `FILES` root sessions in one folder; every other one (a resumed session) first
/// replays the last four requests of the one before it, same ids, same times.
fn archive(dir: &Path) -> Vec<PathBuf> {
    let projects = dir.join("projects");
    let folder = projects.join("-w");
    std::fs::create_dir_all(&folder).unwrap();
    for file in 0..FILES {
        let mut text = String::new();
        if file % 2 == 1 {
            for j in OWN - 4..OWN {
                text.push_str(&line(file - 1, file, j));
                text.push('\n');
            }
        }
        for j in 0..OWN {
            text.push_str(&line(file, file, j));
            text.push('\n');
        }
        std::fs::write(folder.join(format!("s{file:03}.jsonl")), text).unwrap();
    }
    vec![projects]
}

/// Requests kept by each session, as the index counts them.
fn kept(home: &Path) -> BTreeMap<String, u64> {
    let ix = Index::open(home).unwrap();
    let by = [UsageKey::Session];
    ix.usage(&by, &UsageFilter::default(), &|_, _| None, None)
        .unwrap()
        .iter()
        .map(|g| {
            let v = g.to_json(&by);
            (
                v["session"].as_str().unwrap().to_owned(),
                v["messages"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn run(home: &Path, roots: &[PathBuf], jobs: usize, flush: usize) -> BTreeMap<String, u64> {
    let (files, problems) = discover(roots, &transcope_testkit::engine::adapters());
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(files.len(), FILES);
    let mut o = Options::new(home, transcope_testkit::engine::pipeline(home));
    o.jobs = jobs;
    o.usage_flush = flush;
    let s = backfill(files, &o, &|_, _| {});
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    kept(home)
}

#[test]
fn a_tie_between_root_sessions_goes_to_the_file_earlier_in_the_stream() {
    let corpus = tempfile::tempdir().unwrap();
    let roots = archive(corpus.path());
    // The stream is in path order: a parent (even number) comes just before the
    // session replaying it, so it keeps every request it spent.
    let want: BTreeMap<String, u64> = (0..FILES)
        .map(|f| (format!("s{f:03}"), OWN as u64))
        .collect();
    let one = tempfile::tempdir().unwrap();
    assert_eq!(run(one.path(), &roots, 1, 1 << 16), want);
    // Two workers read a parent and its resumed session side by side, and write what
    // they hold in flushes of a few dozen copies: still the stream's order decides.
    for _ in 0..4 {
        let two = tempfile::tempdir().unwrap();
        assert_eq!(run(two.path(), &roots, 2, 40), want);
    }
}

#[test]
fn a_later_run_never_takes_a_tie_from_an_earlier_one() {
    // The resumed session is indexed first (its parent's file is not there yet): the
    // parent's copies, read by a later run, tie with them and are not kept, whatever
    // their place in that run's stream.
    let corpus = tempfile::tempdir().unwrap();
    let roots = archive(corpus.path());
    let folder = roots[0].join("-w");
    let aside = corpus.path().join("aside");
    std::fs::create_dir_all(&aside).unwrap();
    std::fs::rename(folder.join("s000.jsonl"), aside.join("s000.jsonl")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let (files, _) = discover(&roots, &transcope_testkit::engine::adapters());
    let o = Options::new(
        home.path(),
        transcope_testkit::engine::pipeline(home.path()),
    );
    assert!(backfill(files, &o, &|_, _| {}).errors.is_empty());
    std::fs::rename(aside.join("s000.jsonl"), folder.join("s000.jsonl")).unwrap();
    let (files, _) = discover(&roots, &transcope_testkit::engine::adapters());
    assert!(backfill(files, &o, &|_, _| {}).errors.is_empty());
    let got = kept(home.path());
    assert_eq!(got["s000"], OWN as u64 - 4);
    assert_eq!(got["s001"], OWN as u64 + 4);
    assert_eq!(got["s002"], OWN as u64);
}

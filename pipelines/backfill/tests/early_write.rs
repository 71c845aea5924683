//! The held requests written near the end of a run, beside the last files' reading
//! (`tail`), leave the index exactly as writing them after the last file does.

use std::path::{Path, PathBuf};

use transcope_backfill::{backfill, discover, Options, Summary};
use transcope_index::{Index, UsageFilter, UsageKey};

/// An archive of 600 Claude Code sessions of 20 requests each, of sizes from 6 KB to
/// 46 KB (a text block pads some), every fifth replaying its predecessor's last three
/// requests (the same ids, later: which copy a request keeps never depends on the
/// order the files are read in, so one worker and two must agree).
fn archive(dir: &Path) -> Vec<PathBuf> {
    let projects = dir.join("projects");
    let folder = projects.join("-w");
    std::fs::create_dir_all(&folder).unwrap();
    let line = |s: usize, file: usize, j: usize, pad: &str| {
        format!(
            concat!(
                r#"{{"type":"assistant","cwd":"/w/{}","gitBranch":"b{}","sessionId":"s{}","#,
                r#""timestamp":"2026-01-0{}T{:02}:{:02}:{:02}Z","message":{{"id":"m{}_{}","#,
                r#""model":"claude-x{}","content":[{{"type":"text","text":"{}"}}],"#,
                r#""usage":{{"input_tokens":{},"output_tokens":{},"cache_read_input_tokens":{}}}}},"#,
                r#""requestId":"r{}_{}"}}"#
            ),
            s % 3,
            j % 2,
            file,
            1 + file / 100,
            file % 100 / 5,
            file % 5 * 10,
            j,
            s,
            j,
            s % 2,
            pad,
            j + 1,
            s * 7 + j,
            s + j * 3,
            s,
            j
        )
    };
    for file in 0..600 {
        let pad = "x".repeat((file * 7919) % 6 * 8_000);
        let mut text = String::new();
        if file % 5 == 0 && file > 0 {
            for j in 17..20 {
                text.push_str(&line(file - 1, file, j, ""));
                text.push('\n');
            }
        }
        for j in 0..20 {
            text.push_str(&line(file, file, j, if j == 0 { &pad } else { "" }));
            text.push('\n');
        }
        std::fs::write(folder.join(format!("s{file}.jsonl")), text).unwrap();
    }
    vec![projects]
}

fn run(home: &Path, roots: &[PathBuf], jobs: usize, flush: usize) -> Summary {
    let (files, problems) = discover(roots, &transcope_testkit::engine::adapters());
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(files.len(), 600, "{} files", files.len());
    let mut o = Options::new(home, transcope_testkit::engine::pipeline(home));
    o.jobs = jobs;
    o.usage_flush = flush;
    let s = backfill(files, &o, &|_, _| {});
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    s
}

/// Every request's tokens by scope, session, model, day and agent, as the index sums
/// them.
fn usage(home: &Path) -> Vec<String> {
    let ix = Index::open(home).unwrap();
    // Every key, the session's agent and the (absent) machine too.
    let by = UsageKey::ALL;
    ix.usage(&by, &UsageFilter::default(), &|_, _| None, None)
        .unwrap()
        .iter()
        .map(|g| g.to_json(&by).to_string())
        .collect()
}

#[test]
fn an_early_write_changes_nothing_the_index_holds() {
    let corpus = tempfile::tempdir().unwrap();
    let roots = archive(corpus.path());
    // One worker never writes early: what is held is written after the last file.
    let one = tempfile::tempdir().unwrap();
    let s = run(one.path(), &roots, 1, 500);
    assert_eq!(s.early_writes, 0);
    let want = usage(one.path());
    assert!(want.len() > 30, "{} groups", want.len());
    // Two workers, flushes of a few hundred copies: the end is seen ahead, and what is
    // held is written beside the other worker's last files. Whether it is depends on
    // the two workers' pace (a loaded machine can starve one worker for a whole run);
    // up to twenty runs make sure one did, and every run must agree whatever it did.
    let mut early = 0;
    for _ in 0..20 {
        let two = tempfile::tempdir().unwrap();
        let s = run(two.path(), &roots, 2, 500);
        assert!(s.early_writes <= 1, "{}", s.early_writes);
        assert_eq!(usage(two.path()), want);
        early += s.early_writes;
        if early > 0 {
            break;
        }
    }
    assert!(early > 0, "no run wrote early");
}

//! The fleet against the local index, with a real PostgreSQL (`TRANSCOPE_TEST_PG`,
//! started by `.ci/run`; under CI these tests fail rather than skip without it).
//!
//! The conformance kit asks the index of a home and the fleet that home was pushed to
//! every question, over the sample archive and a generated one, and requires equal
//! answers.

mod common;

use std::path::Path;

use common::{run, testdata, text};
use transcope_testkit::pg;

/// `transcope --home HOME args`, which must succeed; its stdout.
fn ok(home: &Path, args: &[&str]) -> String {
    let out = run(home, args, "", &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A home backfilled from `archive`, pushed to `url` as `machine`.
fn pushed_home(archive: &Path, url: &str, machine: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    ok(
        home.path(),
        &["backfill", "--json", archive.to_str().unwrap()],
    );
    ok(
        home.path(),
        &["fleet", "push", "--to", url, "--machine", machine, "--json"],
    );
    home
}

fn conform(home: &Path, url: &str) -> transcope_testkit::store_kit::Asked {
    let index = transcope_index::Index::open(home).unwrap();
    let fleet = transcope_fleet::Fleet::connect(url, None).unwrap();
    let prices = transcope_pricing::Prices::builtin();
    transcope_testkit::store_kit::conform(
        &index,
        &fleet,
        &transcope_pricing::PriceList::new(&prices),
    )
}

#[test]
fn the_fleet_answers_every_question_as_the_index_does_over_the_sample_archive() {
    let Some(db) = pg::database("conform_sample") else {
        return;
    };
    let home = pushed_home(&testdata().join("sample-archive"), db.url(), "laptop");
    let asked = conform(home.path(), db.url());
    assert!(asked.questions > 500, "{asked:?}");
    assert!(asked.answered > 150, "{asked:?}");
}

#[test]
fn the_fleet_answers_every_question_as_the_index_does_over_a_generated_archive() {
    let Some(db) = pg::database("conform_generated") else {
        return;
    };
    let corpus = tempfile::tempdir().unwrap();
    transcope_testkit::generate(
        &transcope_testkit::CorpusSpec::new(35, 4 << 20),
        corpus.path(),
    )
    .unwrap();
    let home = pushed_home(corpus.path(), db.url(), "generated");
    let asked = conform(home.path(), db.url());
    assert!(asked.questions > 1000, "{asked:?}");
    assert!(asked.answered > 300, "{asked:?}");
}

/// `usage --by session --json` of the fleet at `url`, each line without its machine.
fn usage_by_session(home: &Path, url: &str) -> Vec<String> {
    ok(
        home,
        &["usage", "--by", "session", "--json", "--fleet", url],
    )
    .lines()
    .map(|l| {
        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
        v.as_object_mut().unwrap().remove("machine");
        v.to_string()
    })
    .collect()
}

/// A request copied into two families (`public/claude` keeps sample transcripts under
/// other names: the same requests, times and all) is kept by each of two shards'
/// indexes. Pushed to one fleet, in either order, the fleet keeps the copy one run
/// keeps: the one read first (its place, which every shard numbers alike), not the
/// one of the smaller session key.
#[test]
fn two_shards_copies_of_a_request_keep_in_the_fleet_the_copy_one_run_keeps() {
    let (Some(one), Some(two)) = (pg::database("copies_one"), pg::database("copies_two")) else {
        return;
    };
    let roots = [
        testdata().join("sample-archive/claude/projects"),
        testdata().join("public/claude"),
    ];
    let backfill = |home: &Path, shard: Option<&str>| {
        let mut args = vec!["backfill", "--json"];
        args.extend(shard.map(|s| ["--shard", s]).into_iter().flatten());
        args.extend(roots.iter().map(|r| r.to_str().unwrap()));
        ok(home, &args);
    };
    let push = |home: &Path, url: &str, machine: &str| -> u64 {
        let out = ok(
            home,
            &["fleet", "push", "--to", url, "--machine", machine, "--json"],
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["requests"].as_u64().unwrap()
    };
    let whole = tempfile::tempdir().unwrap();
    backfill(whole.path(), None);
    let requests = push(whole.path(), one.url(), "whole");
    let shards = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let mut held = 0;
    for (k, home) in shards.iter().enumerate().rev() {
        backfill(home.path(), Some(&format!("{k}/2")));
        held += push(home.path(), two.url(), &format!("shard-{k}"));
    }
    assert!(
        held > requests,
        "no copy in two shards: {held} ≤ {requests}"
    );
    assert_eq!(
        usage_by_session(whole.path(), two.url()),
        usage_by_session(whole.path(), one.url())
    );
}

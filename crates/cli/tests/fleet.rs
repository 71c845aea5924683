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

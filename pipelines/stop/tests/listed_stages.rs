//! A stage listed in the pipeline ([`StageRegistry`]) runs wherever change detection
//! runs — `observe` and a Stop — in the same pass and under the same cursor, without
//! changing a byte of what the compositions' own stages write.
//!
//! [`StageRegistry`]: transcope_core::stage::StageRegistry

use std::io::Write;
use std::path::{Path, PathBuf};

use transcope_brain::{BrainConfig, NdjsonSink};
use transcope_change_detect::{Env, NoProjects};
use transcope_engine::{Buffers, Pipeline};
use transcope_observe::{observe, Observe};
use transcope_scopelog::ScopeLog;
use transcope_stop::stop::{run_stop, StopInput};
use transcope_testkit::engine::{pipeline_listing, TallyFactory, Told};

fn listed(home: &Path, tally: &TallyFactory) -> Pipeline {
    pipeline_listing(home, tally.listed())
}

fn fixture_into(dir: &Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/fixtures/session-scope.transcript.jsonl");
    let dst = dir.join("t.jsonl");
    std::fs::copy(src, &dst).unwrap();
    dst
}

fn log_bytes(home: &Path, session: &str) -> String {
    std::fs::read_to_string(home.join(format!("brain/session-scopes/{session}.jsonl")))
        .unwrap_or_default()
}

fn observe_with(p: &Pipeline, home: &Path, t: &Path) -> transcope_observe::ObserveReport {
    let log = ScopeLog::open(home, "s1");
    observe(
        p,
        &Observe::new(&log, t, &Env::new()),
        NoProjects,
        &mut Buffers::default(),
    )
    .unwrap()
}

#[test]
fn a_listed_stage_sees_every_byte_once_beside_change_detection() {
    let home = tempfile::tempdir().unwrap();
    let t = fixture_into(home.path());
    let tally = TallyFactory::default();
    let p = listed(home.path(), &tally);
    let first = observe_with(&p, home.path(), &t);
    assert!(first.outcome.recorded > 0);
    let entries = first.scan.entries;
    assert_eq!(
        tally.told(),
        [Told {
            key: Some("s1".into()),
            resumed: false,
            read: entries,
            total: entries
        }]
    );

    // The same bytes again: nothing read, the stage not even begun.
    assert!(observe_with(&p, home.path(), &t).up_to_date);
    assert_eq!(tally.told().len(), 1);

    // Appended bytes: resumed from the stage's checkpoint.
    let line = r#"{"type":"user","timestamp":"2099-01-01T00:00:00Z","cwd":"/work/gamma","gitBranch":"main"}"#;
    let mut f = std::fs::OpenOptions::new().append(true).open(&t).unwrap();
    f.write_all(format!("{line}\n").as_bytes()).unwrap();
    let again = observe_with(&p, home.path(), &t);
    assert!(again.resumed);
    assert_eq!(again.outcome.recorded, 1);
    assert_eq!(
        tally.told()[1],
        Told {
            key: Some("s1".into()),
            resumed: true,
            read: 1,
            total: entries + 1
        }
    );

    // The scope log is the one the pipeline without the stage writes.
    let bare = tempfile::tempdir().unwrap();
    let plain = transcope_testkit::engine::pipeline(bare.path());
    observe_with(&plain, bare.path(), &t);
    assert_eq!(log_bytes(home.path(), "s1"), log_bytes(bare.path(), "s1"));
}

/// A Stop with the brain writer on: the transitions recorded and the marker bodies
/// delivered (NDJSON).
fn stop_with(p: &Pipeline, home: &Path, t: &Path) -> (u64, String) {
    let mut env = Env::new();
    env.insert("BRAIN_WRITER_ENABLED".into(), "true".into());
    let brain = BrainConfig::from_env(home, &env);
    let mut bodies = Vec::new();
    let sum = run_stop(
        home,
        StopInput {
            session: Some("s1"),
            transcript: Some(t),
            last_message: None,
            read_until: None,
        },
        &env,
        &brain,
        NoProjects,
        p,
        Some(&mut NdjsonSink::new(&mut bodies)),
    );
    assert!(sum.errors.is_empty(), "{:?}", sum.errors);
    (
        sum.observe.map_or(0, |o| o.outcome.recorded),
        String::from_utf8(bodies).unwrap(),
    )
}

#[test]
fn a_stop_runs_the_listed_stage_and_writes_what_it_wrote_without_it() {
    let home = tempfile::tempdir().unwrap();
    let t = fixture_into(home.path());
    let tally = TallyFactory::default();
    let with = stop_with(&listed(home.path(), &tally), home.path(), &t);
    let told = tally.told();
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].key.as_deref(), Some("s1"));
    assert!(told[0].read > 0);

    let bare = tempfile::tempdir().unwrap();
    let without = stop_with(
        &transcope_testkit::engine::pipeline(bare.path()),
        bare.path(),
        &t,
    );
    assert!(!with.1.is_empty(), "the fixture holds markers");
    assert_eq!(with, without);
    assert_eq!(log_bytes(home.path(), "s1"), log_bytes(bare.path(), "s1"));

    // A second Stop over the same bytes: neither the stage nor the markers see them;
    // it only sends the marker the first left pending past the cap (5), and a third
    // sends nothing.
    let second = stop_with(&listed(home.path(), &tally), home.path(), &t);
    assert_eq!(second.0, 0);
    assert_eq!(second.1.lines().count(), 1, "{}", second.1);
    let third = stop_with(&listed(home.path(), &tally), home.path(), &t);
    assert_eq!(third, (0, String::new()));
    assert_eq!(tally.told().len(), 1);
}

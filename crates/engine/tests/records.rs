//! The third framing: a container of many sessions' records read one session at a
//! time from an ordinal, "nothing new" told by the session's change marker.
//!
//! The container here is a made-up one, a JSON file `{"<session>": [<record>, …]}`
//! whose source counts every record it hands out, so each test can say what a read
//! cost. A record `{"done": false}` at a session's end is one still being written.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;
use transcope_core::adapter::{
    Adapter, AdapterFactory, AdapterRegistry, Confidence, EntrySink, Framing, Skip,
};
use transcope_core::records::{Held, RecordError, RecordPos, RecordRead, RecordSink, RecordSource};
use transcope_core::{Entry, LinePos, Stage};
use transcope_engine::{Buffers, CursorPolicy, Pipeline, Request};

/// One entry per record, its `uuid` the record's `id`.
struct Ids;

impl Adapter for Ids {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let v: Value = serde_json::from_slice(line).map_err(|_| Skip::InvalidJson)?;
        let id = v["id"].as_str().ok_or(Skip::WrongType)?;
        sink.entry(&Entry {
            uuid: Some(id.to_owned().into()),
            time: transcope_core::TimeValue::Str(
                format!("2026-01-01T00:00:0{}Z", pos.line % 10).into(),
            ),
            offset: pos.offset,
            line: pos.line,
            ..Entry::default()
        });
        Ok(())
    }
}

/// Records handed out by every source of one test.
#[derive(Clone, Default)]
struct Cost(Arc<AtomicU64>);

impl Cost {
    fn take(&self) -> u64 {
        self.0.swap(0, Ordering::SeqCst)
    }
}

struct Toy {
    cost: Cost,
}

struct ToySource {
    all: serde_json::Map<String, Value>,
    cost: Cost,
}

impl ToySource {
    fn rows(&self, key: &str) -> Vec<Value> {
        self.all
            .get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    }
}

impl RecordSource for ToySource {
    fn sessions(&mut self) -> Result<Vec<Held>, RecordError> {
        Ok(self.all.keys().map(Held::new).collect())
    }

    fn marker(&mut self, key: &str) -> Result<Option<String>, RecordError> {
        Ok(self.all.get(key).map(|v| v.to_string()))
    }

    fn holds(&mut self, key: &str, at: &RecordPos) -> Result<bool, RecordError> {
        let rows = self.rows(key);
        Ok(at.ordinal == 0
            || rows
                .get(at.ordinal as usize - 1)
                .is_some_and(|r| r["id"] == at.anchor.as_str()))
    }

    fn read(
        &mut self,
        key: &str,
        from: &RecordPos,
        sink: &mut dyn RecordSink,
    ) -> Result<RecordRead, RecordError> {
        let rows = self.rows(key);
        let mut read = RecordRead {
            end: from.clone(),
            ..RecordRead::default()
        };
        for (i, r) in rows.iter().enumerate().skip(from.ordinal as usize) {
            if i + 1 == rows.len() && r["done"] == false {
                read.held = true;
                break;
            }
            let bytes = r.to_string().into_bytes();
            self.cost.0.fetch_add(1, Ordering::SeqCst);
            let go_on = sink.record(i as u64, &bytes);
            read.end = RecordPos {
                ordinal: i as u64 + 1,
                anchor: r["id"].as_str().unwrap_or("").to_owned(),
            };
            if !go_on {
                break;
            }
        }
        Ok(read)
    }
}

impl AdapterFactory for Toy {
    fn name(&self) -> &'static str {
        "toy"
    }
    fn sniff(&self, path: &Path, _: &[u8]) -> Option<Confidence> {
        path.extension()
            .is_some_and(|e| e == "rec")
            .then_some(Confidence::Certain)
    }
    fn framing(&self, _: &Path) -> Framing {
        Framing::Records
    }
    fn records(&self, path: &Path) -> Result<Box<dyn RecordSource>, RecordError> {
        let text = std::fs::read(path).map_err(|e| RecordError::new(e.to_string()))?;
        let all = serde_json::from_slice::<serde_json::Map<String, Value>>(&text)
            .map_err(|e| RecordError::new(format!("damaged: {e}")))?;
        Ok(Box::new(ToySource {
            all,
            cost: self.cost.clone(),
        }))
    }
    fn build(&self) -> Box<dyn Adapter> {
        Box::new(Ids)
    }
}

/// The ids a stage saw, and how many reads began from a restored checkpoint.
#[derive(Default)]
struct Seen {
    ids: Vec<String>,
}

impl EntrySink for Seen {
    fn entry(&mut self, e: &Entry<'_>) {
        self.ids.push(e.uuid.as_deref().unwrap_or("").to_owned());
    }
}

impl Stage for Seen {
    fn name(&self) -> &'static str {
        "seen"
    }
    fn checkpoint(&self) -> Value {
        Value::from(self.ids.len())
    }
    fn restore(&mut self, v: &Value) -> bool {
        v.is_null() || v.is_u64()
    }
}

struct Setup {
    _home: tempfile::TempDir,
    container: std::path::PathBuf,
    pipeline: Pipeline,
    cost: Cost,
}

fn setup() -> Setup {
    let home = tempfile::tempdir().unwrap();
    let container = home.path().join("c.rec");
    let cost = Cost::default();
    let mut registry = AdapterRegistry::new();
    registry.register(Box::new(Toy { cost: cost.clone() }));
    let pipeline = Pipeline::builder(registry)
        .cursors(CursorPolicy::store(home.path()))
        .build();
    Setup {
        container,
        pipeline,
        cost,
        _home: home,
    }
}

fn write(path: &Path, v: Value) {
    std::fs::write(path, v.to_string()).unwrap();
}

/// Read `key` and save the cursor; the ids seen.
fn read(s: &Setup, key: &str) -> (Vec<String>, transcope_engine::Observation) {
    let mut seen = Seen::default();
    let obs = s
        .pipeline
        .observe(
            &Request::new(&s.container, Some(key)),
            &mut [&mut seen],
            &mut Buffers::default(),
        )
        .unwrap();
    (seen.ids, obs)
}

fn rec(id: &str) -> Value {
    serde_json::json!({"id": id, "done": true})
}

#[test]
fn a_second_read_costs_only_the_new_records_and_the_same_marker_costs_none() {
    let s = setup();
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b")], "s2": [rec("x")]}),
    );
    let (ids, obs) = read(&s, "s1");
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(obs.scan.adapter, "toy");
    assert_eq!((obs.scan.lines, obs.scan.entries), (2, 2));
    assert_eq!(
        obs.scan.times.first.as_deref(),
        Some("2026-01-01T00:00:01Z")
    );
    obs.save().unwrap();
    assert_eq!(s.cost.take(), 2);

    // Nothing new for s1 (s2 grew: another session's records are not this one's).
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b")], "s2": [rec("x"), rec("y")]}),
    );
    let (ids, obs) = read(&s, "s1");
    assert!(obs.up_to_date && ids.is_empty());
    assert_eq!(s.cost.take(), 0);

    // Two appended: only they are read, from the restored checkpoint.
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b"), rec("c"), rec("d")]}),
    );
    let (ids, obs) = read(&s, "s1");
    assert!(obs.resumed);
    assert_eq!(ids, ["c", "d"]);
    assert_eq!(obs.scan.resume.offset, 4);
    obs.save().unwrap();
    assert_eq!(s.cost.take(), 2);

    // Each session of the container has its own cursor.
    let (ids, _) = read(&s, "s2");
    assert!(
        ids.is_empty(),
        "s2 is gone from the container: nothing to read"
    );
}

#[test]
fn a_record_being_written_is_not_passed_and_is_read_once_complete() {
    let s = setup();
    let writing = serde_json::json!({"id": "b", "done": false});
    write(&s.container, serde_json::json!({"s1": [rec("a"), writing]}));
    let (ids, obs) = read(&s, "s1");
    assert_eq!(ids, ["a"]);
    assert_eq!(obs.scan.resume.offset, 1, "the cursor stops before it");
    obs.save().unwrap();
    // Still being written: looked at again (the marker of a held read is not kept),
    // and still not passed.
    let (ids, obs) = read(&s, "s1");
    assert!(ids.is_empty() && !obs.up_to_date);
    obs.save().unwrap();
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b")]}),
    );
    let (ids, obs) = read(&s, "s1");
    assert_eq!(ids, ["b"]);
    obs.save().unwrap();
    assert!(read(&s, "s1").1.up_to_date);
}

#[test]
fn a_read_whose_cursor_was_never_saved_is_read_again_not_lost() {
    let s = setup();
    write(&s.container, serde_json::json!({"s1": [rec("a")]}));
    read(&s, "s1").1.save().unwrap();
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b")]}),
    );
    // Killed before the cursor was saved (what it found never reached the commit).
    let (ids, obs) = read(&s, "s1");
    assert_eq!(ids, ["b"]);
    drop(obs);
    let (ids, obs) = read(&s, "s1");
    assert_eq!(ids, ["b"], "read again");
    obs.save().unwrap();
    assert!(read(&s, "s1").1.up_to_date);
}

#[test]
fn records_removed_before_the_cursor_make_a_read_from_the_start() {
    let s = setup();
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b")]}),
    );
    read(&s, "s1").1.save().unwrap();
    // An undo took "b" away and the session went on: the anchor is gone.
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("c"), rec("d")]}),
    );
    let (ids, obs) = read(&s, "s1");
    assert!(!obs.resumed);
    assert_eq!(ids, ["a", "c", "d"]);
}

#[test]
fn a_time_limit_cuts_between_records_and_the_next_read_goes_on() {
    let s = setup();
    write(
        &s.container,
        serde_json::json!({"s1": [rec("a"), rec("b"), rec("c")]}),
    );
    let mut seen = Seen::default();
    let past = std::time::Instant::now();
    let obs = s
        .pipeline
        .observe(
            &Request::new(&s.container, Some("s1")).until(Some(past)),
            &mut [&mut seen],
            &mut Buffers::default(),
        )
        .unwrap();
    assert!(obs.scan.cut);
    assert_eq!(seen.ids, ["a"]);
    obs.save().unwrap();
    let (ids, obs) = read(&s, "s1");
    assert_eq!(ids, ["b", "c"]);
    obs.save().unwrap();
}

#[test]
fn a_damaged_container_is_an_error_naming_it_and_a_keyless_read_is_refused() {
    let s = setup();
    std::fs::write(&s.container, b"{ not json").unwrap();
    let mut seen = Seen::default();
    let err = s
        .pipeline
        .observe(
            &Request::new(&s.container, Some("s1")),
            &mut [&mut seen],
            &mut Buffers::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("c.rec") && err.contains("damaged"), "{err}");
    write(&s.container, serde_json::json!({"s1": [rec("a")]}));
    let err = s
        .pipeline
        .observe(
            &Request::new(&s.container, None),
            &mut [&mut seen],
            &mut Buffers::default(),
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("one session at a time"), "{err}");
}

//! Resumed reads give what one pass gives, at the edges the compliance kit found: a
//! read that ends on a complete last line before its newline, a number at the end of
//! the file, a document caught half-written, and an adapter that keeps state across
//! the records of a file (its checkpoint is restored before the stages', or the file
//! is read from its start).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use transcope_core::adapter::{
    Adapter, AdapterFactory, AdapterRegistry, Confidence, EntrySink, Framing, Skip,
};
use transcope_core::{Entry, LinePos, Stage};
use transcope_engine::{Buffers, CursorPolicy, Pipeline, Request, ScanReport};

/// One entry per JSON object (its `uuid` the number of objects seen in the file so
/// far: state carried across records); a document is an array of objects.
#[derive(Default)]
struct Counting {
    seen: u64,
    document: bool,
}

impl Adapter for Counting {
    fn decode(&mut self, line: &[u8], pos: LinePos, sink: &mut dyn EntrySink) -> Result<(), Skip> {
        let v: Value = serde_json::from_slice(line).map_err(|_| Skip::InvalidJson)?;
        let items = match (&v, self.document) {
            (Value::Array(items), true) => items.len(),
            (Value::Object(_), false) => 1,
            _ => return Err(Skip::NotObject),
        };
        for _ in 0..items {
            self.seen += 1;
            sink.entry(&Entry {
                uuid: Some(self.seen.to_string().into()),
                offset: pos.offset,
                line: pos.line,
                ..Entry::default()
            });
        }
        Ok(())
    }

    fn open(&mut self, path: &Path) {
        self.seen = 0;
        self.document = path.extension().is_some_and(|e| e == "json");
    }

    fn checkpoint(&self) -> Value {
        Value::from(self.seen)
    }

    fn restore(&mut self, v: &Value) -> bool {
        match v {
            Value::Null => true,
            _ => v.as_u64().map(|n| self.seen = n).is_some(),
        }
    }
}

struct CountingFactory;

impl AdapterFactory for CountingFactory {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn sniff(&self, _: &Path, _: &[u8]) -> Option<Confidence> {
        Some(Confidence::Fallback)
    }
    fn framing(&self, path: &Path) -> Framing {
        if path.extension().is_some_and(|e| e == "json") {
            Framing::Document
        } else {
            Framing::Lines
        }
    }
    fn build(&self) -> Box<dyn Adapter> {
        Box::new(Counting::default())
    }
}

#[derive(Default)]
struct Collect(Vec<(String, u64)>);

impl EntrySink for Collect {
    fn entry(&mut self, e: &Entry<'_>) {
        self.0
            .push((e.uuid.as_deref().unwrap_or("").to_owned(), e.line));
    }
}

impl Stage for Collect {
    fn name(&self) -> &'static str {
        "collect"
    }
}

fn pipeline(home: &Path) -> Pipeline {
    let mut r = AdapterRegistry::new();
    r.register(Box::new(CountingFactory));
    Pipeline::builder(r)
        .cursors(CursorPolicy::store(home))
        .build()
}

/// Observe `t` once (cursor saved): (uuid, line) of each entry, and the report.
fn observe(home: &Path, t: &Path) -> (Vec<(String, u64)>, ScanReport, bool) {
    let mut c = Collect::default();
    let obs = pipeline(home)
        .observe(
            &Request::new(t, Some("s")),
            &mut [&mut c],
            &mut Buffers::default(),
        )
        .unwrap();
    let (scan, resumed) = (obs.scan.clone(), obs.resumed);
    obs.save().unwrap();
    (c.0, scan, resumed)
}

fn append(t: &Path, bytes: &[u8]) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(t)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    v.iter().map(|(u, l)| (u.to_string(), *l)).collect()
}

#[test]
fn a_read_ending_before_a_newline_leaves_the_next_line_its_number() {
    for newline in ["\n", "\r\n", "  \n"] {
        let home = tempfile::tempdir().unwrap();
        let t = home.path().join("t.jsonl");
        append(&t, b"{}\n{\"a\":1}");
        let (first, ..) = observe(home.path(), &t);
        assert_eq!(first, pairs(&[("1", 1), ("2", 2)]));
        // The newline arrives in pieces; it ends line 2, it is no line of its own.
        for piece in [&newline[..1], &newline[1..]] {
            append(&t, piece.as_bytes());
            let (got, scan, _) = observe(home.path(), &t);
            assert!(got.is_empty() && scan.skipped.is_empty(), "{newline:?}");
        }
        append(&t, b"{}\n");
        let (got, scan, resumed) = observe(home.path(), &t);
        assert!(resumed);
        assert_eq!(got, pairs(&[("3", 3)]), "{newline:?}");
        assert_eq!(scan.skipped, [], "{newline:?}");
    }
}

#[test]
fn a_number_at_the_end_of_the_file_waits_for_its_newline() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    append(&t, b"{}\n12");
    let (_, scan, _) = observe(home.path(), &t);
    assert_eq!(scan.skipped, [], "12 may be the start of 1234");
    append(&t, b"34\n{}\n");
    let (got, scan, _) = observe(home.path(), &t);
    assert_eq!(scan.skipped, [(Skip::NotObject, 1)]);
    assert_eq!(got, pairs(&[("2", 3)]));
}

#[test]
fn a_document_caught_half_written_keeps_the_cursor_before_it() {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.json");
    std::fs::write(&t, "[{}, {}]").unwrap();
    assert_eq!(observe(home.path(), &t).0.len(), 2);
    std::fs::write(&t, "[{}, {}, {").unwrap();
    let (got, scan, _) = observe(home.path(), &t);
    assert!(got.is_empty());
    assert_eq!(scan.skipped, [(Skip::InvalidJson, 1)]);
    std::fs::write(&t, "[{}, {}, {}]").unwrap();
    let (got, ..) = observe(home.path(), &t);
    assert_eq!(got, pairs(&[("3", 1)]), "only the new entry");
}

/// A home with `t.jsonl` of two objects, read once: its cursor saved.
fn two_read() -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let t = home.path().join("t.jsonl");
    append(&t, b"{}\n{}\n");
    observe(home.path(), &t);
    (home, t)
}

/// Rewrite the stored cursor of `t` with `edit` applied to its JSON.
fn edit_cursor(home: &Path, t: &Path, edit: impl FnOnce(&mut Value)) {
    let db = rusqlite::Connection::open(transcope_engine::store::database_path(home)).unwrap();
    let key = t.as_os_str().as_encoded_bytes();
    let text: String = db
        .query_row(
            "SELECT cursor FROM cursors WHERE session = 's' AND path = ?1",
            [key],
            |r| r.get(0),
        )
        .unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    edit(&mut json);
    db.execute(
        "UPDATE cursors SET cursor = ?1 WHERE session = 's' AND path = ?2",
        rusqlite::params![json.to_string(), key],
    )
    .unwrap();
}

#[test]
fn an_adapters_state_survives_a_resumed_read() {
    let (home, t) = two_read();
    let saved = transcope_engine::CursorStore::new(home.path(), true)
        .load("s", &t)
        .unwrap()
        .unwrap();
    assert_eq!(saved.adapter_checkpoint, Value::from(2));
    append(&t, b"{}\n");
    let (got, _, resumed) = observe(home.path(), &t);
    assert!(resumed);
    assert_eq!(got, pairs(&[("3", 3)]), "the count goes on from the cursor");
}

/// A checkpoint the adapter cannot read means a read from the start, stages and all;
/// a cursor written before adapters had checkpoints still resumes.
#[test]
fn an_unreadable_adapter_checkpoint_reads_from_the_start() {
    let (home, t) = two_read();
    edit_cursor(home.path(), &t, |c| {
        c["adapter_checkpoint"] = Value::from("garbage")
    });
    append(&t, b"{}\n");
    let (got, _, resumed) = observe(home.path(), &t);
    assert!(!resumed);
    assert_eq!(got, pairs(&[("1", 1), ("2", 2), ("3", 3)]));

    // Without the key (an older cursor): resumed, the adapter in the state the first
    // record, shown to it again, leaves it in (it counts that one).
    edit_cursor(home.path(), &t, |c| {
        c.as_object_mut().unwrap().remove("adapter_checkpoint");
    });
    append(&t, b"{}\n");
    let (got, _, resumed) = observe(home.path(), &t);
    assert!(resumed);
    assert_eq!(got, pairs(&[("2", 4)]));
}

/// [`observe`] with the file handed over already open, its first `k` bytes read (as
/// naming a file reads its head).
fn observe_handed(home: &Path, t: &Path, k: usize) -> (Vec<(String, u64)>, ScanReport, bool) {
    use std::io::Read;
    let (mut f, size) = transcope_engine::open_regular(t).unwrap();
    let mut head = vec![0; k];
    f.read_exact(&mut head).unwrap();
    let handed = transcope_engine::Handoff::new((f, size), head);
    let mut c = Collect::default();
    let obs = pipeline(home)
        .observe(
            &Request::new(t, Some("s")).opened(Some(&handed)),
            &mut [&mut c],
            &mut Buffers::default(),
        )
        .unwrap();
    assert!(handed.take().is_none(), "the read took the file");
    let (scan, resumed) = (obs.scan.clone(), obs.resumed);
    obs.save().unwrap();
    (c.0, scan, resumed)
}

/// A read handed the file already open, with any number of its first bytes read,
/// reads what a read that opens the file reads — blank first lines, a head cut inside
/// the first line or past it, the whole file — and so does the next read after an
/// append (its cursor's head checked against the bytes handed on when they cover it).
#[test]
fn a_file_handed_over_open_reads_as_one_opened() {
    let body: &[u8] = b"\n\n{\"a\":1}\n{\"b\":2222222222}\n{\"c\":3}\n";
    for name in ["t.jsonl", "t.json"] {
        let body: &[u8] = if name == "t.json" {
            b"[{},{},{}]"
        } else {
            body
        };
        for k in [0, 1, 3, 10, 20, body.len()] {
            let k = k.min(body.len());
            let d = tempfile::tempdir().unwrap();
            let t = d.path().join(name);
            std::fs::write(&t, body).unwrap();
            let (plain, handed) = (d.path().join("plain"), d.path().join("handed"));
            let first = observe(&plain, &t);
            assert!(!first.0.is_empty(), "{name}");
            let got = observe_handed(&handed, &t, k);
            assert_eq!(
                format!("{got:?}"),
                format!("{first:?}"),
                "{name}, {k} bytes handed"
            );
            append(
                &t,
                if name == "t.json" {
                    b" "
                } else {
                    b"{\"d\":4}\n"
                },
            );
            let next = observe(&plain, &t);
            let got = observe_handed(&handed, &t, k);
            assert_eq!(
                format!("{got:?}"),
                format!("{next:?}"),
                "{name}, {k} bytes handed, appended"
            );
        }
    }
}

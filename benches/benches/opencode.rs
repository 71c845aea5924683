//! OpenCode's database read through the engine's records framing, beside SQLite's own
//! scan of the same rows.
//!
//! Input: a generated database (`transcope_adapter_opencode::write::generated`: 800
//! sessions of 30 exchanges, tool outputs of 2–12 KB, about 200 MB), made once under
//! the target folder. `Throughput::Bytes` is the database file's size: the figure is
//! "MB/s of database", the unit issue 38 sets its target in (≥ 50 MB/s).
//!
//! * `opencode/read_sessions`: every session read as a backfill reads it with no cursor
//!   (`Pipeline::observe` of each session's key: the source's queries, the envelopes,
//!   the adapter's decode, one counting stage), one thread;
//! * `opencode/sqlite_baseline`: every message's and part's `data` selected in the
//!   reader's order and its bytes touched, nothing decoded: what SQLite alone costs.
//!
//! Run: `cargo bench -p transcope-benches --bench opencode` (set `OPENCODE_BENCH_SESSIONS`
//! for another size).

use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput};
use transcope_core::adapter::{AdapterRegistry, EntrySink};
use transcope_core::records::RecordSource;
use transcope_core::{Entry, Stage};
use transcope_engine::{Buffers, Pipeline, Request};

#[derive(Default)]
struct Count(u64);

impl EntrySink for Count {
    fn entry(&mut self, e: &Entry<'_>) {
        self.0 += 1 + e.texts.len() as u64;
    }
}

impl Stage for Count {
    fn name(&self) -> &'static str {
        "count"
    }
}

fn database() -> PathBuf {
    let sessions: usize = std::env::var("OPENCODE_BENCH_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(800);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-opencode");
    let db = dir.join(format!("opencode-{sessions}.db"));
    if !db.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join("opencode-new.db");
        let _ = std::fs::remove_file(&tmp);
        transcope_adapter_opencode::write::generated(&tmp, sessions).unwrap();
        std::fs::rename(&tmp, &db).unwrap();
    }
    db
}

fn main() {
    let db = database();
    let size = std::fs::metadata(&db).unwrap().len();
    let mut registry = AdapterRegistry::new();
    registry.register(Box::new(transcope_adapter_opencode::OpenCodeFactory));
    let pipeline = Pipeline::builder(registry).build();
    let keys: Vec<String> = transcope_adapter_opencode::db::DbSource::open(&db)
        .unwrap()
        .sessions()
        .unwrap()
        .into_iter()
        .map(|h| h.key)
        .collect();
    eprintln!(
        "{}: {:.1} MB, {} sessions",
        db.display(),
        size as f64 / 1e6,
        keys.len()
    );

    let mut c = Criterion::default().configure_from_args().sample_size(10);
    let mut g = c.benchmark_group("opencode");
    g.throughput(Throughput::Bytes(size));
    g.bench_function("read_sessions", |b| {
        let mut buffers = Buffers::default();
        b.iter(|| {
            let mut count = Count::default();
            for key in &keys {
                let obs = pipeline
                    .observe(
                        &Request::new(&db, Some(key)),
                        &mut [&mut count],
                        &mut buffers,
                    )
                    .unwrap();
                black_box(obs.scan.entries);
            }
            black_box(count.0)
        })
    });
    g.bench_function("sqlite_baseline", |b| {
        b.iter(|| {
            let conn = transcope_sqlite::open_foreign(&db).unwrap();
            let mut touched = 0u64;
            let mut st = conn
                .prepare("SELECT m.data, (SELECT sum(length(p.data)) FROM part p WHERE p.message_id = m.id) FROM message m ORDER BY m.session_id, m.time_created, m.id")
                .unwrap();
            let mut rows = st.query([]).unwrap();
            while let Some(r) = rows.next().unwrap() {
                touched += r.get_ref(0).unwrap().as_bytes().map_or(0, |b| b.len() as u64);
                touched += r.get::<_, Option<i64>>(1).unwrap().unwrap_or(0) as u64;
            }
            black_box(touched)
        })
    });
    g.finish();
    c.final_summary();
}

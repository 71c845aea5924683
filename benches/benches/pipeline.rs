//! The stages and one file end to end, each beside a baseline over the same bytes.
//!
//! Input: one generated Claude transcript (`transcope_corpus::single_transcript`, 32 MB,
//! log-normal tool outputs, four folder switches, markers), decoded once up front for
//! the stage benches. `Throughput::Bytes` is always the transcript's size, so the
//! figures compare directly with the framing and decode benches.
//!
//! * `stages/change_detect` vs `stages/entries_baseline` (walking the same decoded
//!   entries and touching their folder and time): the change-detection stage with its
//!   log in a fresh temporary home per iteration;
//! * `stages/markers` vs the same baseline: the marker-extraction stage (collect the
//!   eligible texts, join, scan);
//! * `end_to_end/observe_whole` vs `end_to_end/read_baseline` (the same file read
//!   through the same reusable buffer and thrown away) and
//!   `end_to_end/frame_baseline` (read + memchr framing, no decoding): one file
//!   through framing, detection, the adapter and both stages, as `transcope observe`.
//!
//! Run: `cargo bench -p transcope-benches --bench pipeline -- --warm-up-time 1 --measurement-time 5`

use std::hint::black_box;
use std::io::Read;
use std::path::Path;

use criterion::{BatchSize, Criterion, Throughput};
use transcope_adapter_claude::ClaudeAdapter;
use transcope_change_detect::{ChangeDetect, Env, NoProjects, Resolving};
use transcope_core::adapter::{Adapter, EntrySink};
use transcope_core::{Entry, LinePos};
use transcope_engine::Buffers;
use transcope_jsonl::{FnSink, Framer, Line};
use transcope_markers::{MarkerStage, Markers};
use transcope_observe::{observe_deferred, Observe, Routes};
use transcope_scopelog::ScopeLog;

const SIZE: u64 = 32 * 1024 * 1024;

fn decode_all(bytes: &[u8]) -> Vec<Entry<'static>> {
    let mut a = ClaudeAdapter::new();
    let mut out = Vec::new();
    let framer = Framer::default();
    let _ = framer.frame_slice(
        bytes,
        0,
        1,
        FnSink(|l: Line<'_>| {
            let _ = a.decode(
                l.bytes,
                LinePos {
                    offset: l.offset,
                    line: l.number,
                },
                &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| out.push(e.to_static())),
            );
            Ok::<_, std::convert::Infallible>(true)
        }),
    );
    out
}

fn stages(c: &mut Criterion, bytes: &[u8]) {
    let entries = decode_all(bytes);
    let mut g = c.benchmark_group("stages");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("entries_baseline", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for e in &entries {
                n += e.cwd.as_deref().map_or(0, str::len) + e.time.as_str().map_or(0, str::len);
            }
            black_box(n)
        })
    });
    g.bench_function("change_detect", |b| {
        b.iter_batched(
            || tempfile::tempdir().unwrap(),
            |home| {
                let log = ScopeLog::open(home.path(), "bench");
                let env = Env::new();
                let mut stage = ChangeDetect::begin(&log, &env, NoProjects);
                for e in &entries {
                    stage.entry(e);
                }
                black_box(stage.finish().recorded);
                home
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("markers", |b| {
        b.iter(|| {
            let mut stage = MarkerStage::default();
            for e in &entries {
                stage.entry(e);
            }
            black_box(stage.finish(None).len())
        })
    });
    g.finish();
}

fn end_to_end(c: &mut Criterion, path: &Path, size: u64) {
    let mut g = c.benchmark_group("end_to_end");
    g.throughput(Throughput::Bytes(size));
    let mut buf = vec![0u8; 256 * 1024];
    g.bench_function("read_baseline", |b| {
        b.iter(|| {
            let mut f = std::fs::File::open(path).unwrap();
            let mut n = 0;
            loop {
                let k = f.read(&mut buf).unwrap();
                if k == 0 {
                    break;
                }
                n += k;
            }
            black_box(n)
        })
    });
    g.bench_function("frame_baseline", |b| {
        let framer = Framer::default();
        let mut fb = Vec::new();
        b.iter(|| {
            let f = std::fs::File::open(path).unwrap();
            let mut lines = 0u64;
            framer
                .frame_reader(
                    f,
                    &mut fb,
                    0,
                    1,
                    FnSink(|_l: Line<'_>| {
                        lines += 1;
                        Ok::<_, std::convert::Infallible>(true)
                    }),
                )
                .unwrap();
            black_box(lines)
        })
    });
    let pipeline = transcope_testkit::engine::pipeline_full();
    let mut buffers = Buffers::default();
    g.bench_function("observe_whole", |b| {
        b.iter_batched(
            || tempfile::tempdir().unwrap(),
            |home| {
                let log = ScopeLog::open(home.path(), "bench");
                let env = Env::new();
                let routes = Routes {
                    changes: true,
                    markers: true,
                    ..Routes::NONE
                };
                let (r, mut found, _) = observe_deferred(
                    &pipeline,
                    &Observe::new(&log, path, &env),
                    &Resolving::None,
                    &mut buffers,
                    routes,
                )
                .unwrap();
                let markers = found.take::<Markers>().unwrap_or_default();
                black_box((r.outcome.recorded, markers.found.len()));
                home
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// The marker grammar on text built against it: every opening tag starts an attribute
/// chain that runs to the end of the text (quadratic before failures were remembered
/// across opening tags: 1.5 s at 64 KB, 6 s at 256 KB).
fn hostile_markers(c: &mut Criterion) {
    let mut g = c.benchmark_group("markers_hostile");
    for kb in [64usize, 256] {
        let text = "<!--@a x=".repeat(kb * 1024 / 9);
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("chained_openings_{kb}k"), |b| {
            b.iter(|| black_box(transcope_markers::parse::blocks(black_box(&text)).len()))
        });
    }
    g.finish();
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.jsonl");
    transcope_corpus::single_transcript(&path, SIZE, 42).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut c = Criterion::default().configure_from_args();
    hostile_markers(&mut c);
    stages(&mut c, &bytes);
    end_to_end(&mut c, &path, bytes.len() as u64);
    c.final_summary();
}

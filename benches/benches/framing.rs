//! JSONL framing throughput: `memchr` newline count (baseline) vs
//! `Framer::frame_slice` vs `Framer::frame_reader` over a `Cursor`.
//!
//! `cargo bench -p transcope-benches --bench framing`

use std::convert::Infallible;
use std::hint::black_box;
use std::io::Cursor;

use criterion::{Criterion, Throughput};
use transcope_jsonl::{Framer, Line, LineSink};

const TARGET: usize = 32 * 1024 * 1024;

/// ~32 MiB of transcript-like JSONL: line sizes log-uniform in 200 B – 200 KB.
fn corpus() -> Vec<u8> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    const WORDS: &[&str] = &[
        "the",
        "file",
        "cargo",
        "test",
        "error",
        "fn",
        "let",
        "src/lib.rs",
        "\\n",
        "\\\"ok\\\"",
        "passed",
        "struct",
        "=>",
        "{",
        "}",
        "impl",
        "memchr",
        "offset",
        "\\t",
    ];
    let (lo, hi) = (200f64.ln(), 200_000f64.ln());
    let mut out = Vec::with_capacity(TARGET + 256 * 1024);
    let mut i = 0u64;
    while out.len() < TARGET {
        let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
        let size = (lo + u * (hi - lo)).exp() as usize;
        let start = out.len();
        let kind = if i.is_multiple_of(3) {
            "user"
        } else {
            "assistant"
        };
        out.extend_from_slice(
            format!(
                "{{\"type\":\"{kind}\",\"uuid\":\"{:016x}-{:04x}\",\"timestamp\":\"2025-06-01T12:{:02}:{:02}.000Z\",\
                 \"sessionId\":\"s-42\",\"message\":{{\"role\":\"{kind}\",\"content\":[{{\"type\":\"text\",\"text\":\"",
                next(),
                i % 65536,
                i % 60,
                (i / 60) % 60
            )
            .as_bytes(),
        );
        while out.len() - start < size.saturating_sub(8) {
            out.extend_from_slice(WORDS[(next() % WORDS.len() as u64) as usize].as_bytes());
            out.push(b' ');
        }
        out.extend_from_slice(b"\"}]}}\n");
        i += 1;
    }
    out
}

struct Count {
    lines: u64,
    bytes: u64,
}

impl LineSink for Count {
    type Error = Infallible;

    #[inline]
    fn line(&mut self, line: Line<'_>) -> Result<bool, Infallible> {
        self.lines += 1;
        self.bytes += line.bytes.len() as u64;
        Ok(true)
    }
}

fn framing(c: &mut Criterion) {
    let data = corpus();
    let lines = memchr::memchr_iter(b'\n', &data).count();
    eprintln!("corpus: {} bytes, {lines} lines", data.len());
    let framer = Framer::default();
    let mut group = c.benchmark_group("framing");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(20);

    group.bench_function("memchr_count_baseline", |b| {
        b.iter(|| memchr::memchr_iter(b'\n', black_box(&data)).count())
    });
    group.bench_function("frame_slice", |b| {
        b.iter(|| {
            let mut sink = Count { lines: 0, bytes: 0 };
            let s = framer
                .frame_slice(black_box(&data), 0, 1, &mut sink)
                .unwrap();
            black_box((s, sink.lines, sink.bytes))
        })
    });
    let mut buf = Vec::new();
    group.bench_function("frame_reader", |b| {
        b.iter(|| {
            let mut sink = Count { lines: 0, bytes: 0 };
            let s = framer
                .frame_reader(Cursor::new(black_box(&data)), &mut buf, 0, 1, &mut sink)
                .unwrap();
            black_box((s, sink.lines, sink.bytes))
        })
    });
    group.finish();
}

// Equivalent to `criterion_group!` + `criterion_main!`, whose generated
// `pub fn` would trip the workspace's `missing_docs` lint.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    framing(&mut c);
    c.final_summary();
}

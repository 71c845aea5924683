//! The marker grammar on the two inputs of issue 13 that cost the square of their size,
//! each at sizes n, 2n and 4n (4n is the size), beside a baseline over the same
//! text: counting its `<!--` (memmem), which any scan of it does at least.
//!
//! * `markers_scaling/many_types_{n}`: `n` opening tags of distinct TYPEs, each one's
//!   attribute list running through all the later ones, then their closing tags
//!   (item 1: 442 KB took 80 s and 11.3 GB);
//! * `markers_scaling/attr_rescan_{w}`: a block whose attribute text holds a `name=`
//!   with no value after `w` word characters (item 2: 160 KB took 15.6 s).
//!
//! Each iteration is `markers_in` (the grammar, then the attribute scanner on every
//! block). Linear growth shows as about 2× per doubling of the size; the figures are in
//! `benches/README.md`. The whole CLI on the same inputs (time and peak RSS) is
//! `benches/markers_scaling.sh`.
//!
//! Run: `cargo bench -p transcope-benches --bench markers_scaling`

use std::hint::black_box;

use criterion::{Criterion, Throughput};

/// Issue 13 item 1's text with `n` TYPEs.
fn many_types(n: usize) -> String {
    let opens: String = (0..n).map(|i| format!("<!--@t{i} x=")).collect();
    let closes: String = (0..n).map(|i| format!("<!--@/t{i}-->")).collect();
    format!("{opens} {closes}")
}

/// Issue 13 item 2's text with `w` word characters before the value-less `=`.
fn attr_rescan(w: usize) -> String {
    format!(
        "<!-- @lesson a=\"x b=y\"{}= c=d -->c<!-- @/lesson -->",
        "w".repeat(w)
    )
}

fn scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("markers_scaling");
    let cases = [4_000, 8_000, 16_000]
        .map(|n| (format!("many_types_{n}"), many_types(n), 0))
        .into_iter()
        .chain(
            [100_000, 200_000, 400_000].map(|w| (format!("attr_rescan_{w}"), attr_rescan(w), 1)),
        );
    for (name, text, markers) in cases {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("{name}/count_openers_baseline"), |b| {
            b.iter(|| memchr::memmem::find_iter(black_box(text.as_bytes()), "<!--").count())
        });
        g.bench_function(format!("{name}/markers_in"), |b| {
            b.iter(|| {
                let found = transcope_markers::markers_in(black_box(&text));
                assert_eq!(found.len(), markers);
                found
            })
        });
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    scaling(&mut c);
    c.final_summary();
}

//! A backfill's usage write on its own: the requests of a 1 GB archive's worth of
//! reads (as many as the generated 1 GB corpus gives: 165,000 requests, in about
//! 3,000 reads of two scopes and a few models; a resumed session's read replays some
//! of the read before it, the copies the stage hands on number about 200,000)
//! gathered in a [`UsageBatch`] and written to a fresh index in flushes of 65,536
//! copies, as `backfill` does. Measured: the whole (add and write), and the add
//! alone. Run it with `TMPDIR` on a tmpfs (`/dev/shm`) to leave the disk out.
//!
//! Run: `cargo bench -p transcope-benches --bench usage_write -- --warm-up-time 1 --measurement-time 10`

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput};
use transcope_core::Tokens;
use transcope_index::{Index, Observed, Spending, UsageBatch};

const READS: usize = 3_000;
const COPIES: usize = 200_000;
const FLUSH: usize = 1 << 16;

/// Each read's session and its requests, with a key that repeats as a replay does.
fn reads() -> Vec<(Observed, Vec<Spending>)> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || -> u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let models: Vec<Arc<str>> = [
        "claude-opus-4-6",
        "claude-sonnet-4-5",
        "gpt-5-codex",
        "gemini-2.5-pro",
    ]
    .into_iter()
    .map(Arc::from)
    .collect();
    let per = COPIES / READS;
    let mut before: Vec<u128> = Vec::new();
    (0..READS)
        .map(|r| {
            let mut o = Observed::new(format!("00000000-0000-4000-8000-{r:012}"));
            if r % 3 == 0 {
                o.parent = Some(format!("00000000-0000-4000-8000-{:012}", r + 1));
            }
            let scopes: Vec<Arc<[String; 5]>> = (0..2)
                .map(|s| {
                    Arc::new([
                        format!("github.com/acme/repo-{}", r % 38),
                        format!("/home/dev/repos/repo-{}", r % 38),
                        format!("feature/branch-{s}"),
                        format!("TASK-{}", r % 100),
                        String::new(),
                    ])
                })
                .collect();
            let model = models[r % models.len()].clone();
            let keys: Vec<u128> = (0..per)
                .map(|i| {
                    // A new request, or (the first half of one read in three) a replay
                    // of the read before.
                    if r % 3 == 1 && i < per / 2 {
                        before[i]
                    } else {
                        (u128::from(next()) << 64) | u128::from(next())
                    }
                })
                .collect();
            before.clone_from(&keys);
            let spent = (0..per)
                .map(|i| {
                    let n = r * per + i;
                    let key = keys[i];
                    Spending {
                        key,
                        at_us: Some(1_750_000_000_000_000 + n as i64 * 1_000_000),
                        model: Some(model.clone()),
                        tokens: Tokens::from_counts([30, 1117 + i as u64, 793, 793, 69_197, 0]),
                        scope: scopes[usize::from(i >= per / 2)].clone(),
                    }
                })
                .collect();
            (o, spent)
        })
        .collect()
}

fn write_all(reads: &[(Observed, Vec<Spending>)]) {
    let home = tempfile::tempdir().unwrap();
    let mut ix = Index::open(home.path()).unwrap();
    let mut batch = UsageBatch::with_capacity(FLUSH);
    for ((o, spent), order) in reads.iter().zip(0..) {
        batch.add(o, order, spent.iter().cloned());
        if batch.len() >= FLUSH {
            ix.record_usage(&mut batch).unwrap();
        }
    }
    ix.record_usage(&mut batch).unwrap();
}

fn bench(c: &mut Criterion) {
    let reads = reads();
    let mut g = c.benchmark_group("usage_write");
    g.sample_size(10);
    g.throughput(Throughput::Elements(COPIES as u64));
    g.bench_function("add_and_write_fresh_index", |b| {
        b.iter(|| write_all(black_box(&reads)))
    });
    g.bench_function("add_only", |b| {
        b.iter(|| {
            let mut batch = UsageBatch::with_capacity(FLUSH);
            for ((o, spent), order) in reads.iter().zip(0..) {
                batch.add(o, order, spent.iter().cloned());
                if batch.len() >= FLUSH {
                    black_box(&batch);
                    batch = UsageBatch::with_capacity(FLUSH);
                }
            }
            black_box(batch);
        })
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}

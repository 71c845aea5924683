//! The stage kit: [`check_stage`] over a [`StageHarness`].

use std::fmt::Debug;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use serde_json::Value;
use transcope_core::adapter::from_fn;
use transcope_core::{Entry, FileContext, Stage};
use transcope_engine::scan::scan_path;
use transcope_engine::{Buffers, ScanError};

use super::{first_difference, garbage_checkpoints, Check, Violation};

/// How to build the stage under check and what its output is.
///
/// A *run* is one pass over the entries, or two reads that split them at a boundary;
/// each run has its own [`StageHarness::World`] (a temporary folder with a scope log,
/// say), so runs never see each other's effects. After every read the kit hands the
/// finished stage to [`StageHarness::collect`], which folds what the read produced into
/// the run's output: the markers a read found are appended, a log's bytes are read
/// again, counts are added. Two runs agree when their outputs are equal.
pub trait StageHarness {
    /// What a run's stages share and outlive.
    type World;
    /// The stage under check, borrowing from the world.
    type Stage<'w>: Stage
    where
        Self: 'w;
    /// What a run produced.
    type Output: PartialEq + Debug + Default;

    /// A fresh world for one run.
    fn world(&mut self) -> Self::World;

    /// A fresh stage in `world` (the engine builds one for every read).
    fn build<'w>(&mut self, world: &'w Self::World) -> Self::Stage<'w>;

    /// A read has finished with `stage`: fold what it produced into `output`.
    fn collect<'w>(
        &mut self,
        world: &'w Self::World,
        stage: Self::Stage<'w>,
        output: &mut Self::Output,
    );

    /// Values the stage must refuse as a checkpoint (default
    /// [`garbage_checkpoints`]).
    fn garbage(&self) -> Vec<Value> {
        garbage_checkpoints()
    }
}

/// What a [`check_stage`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StageReport {
    /// The stage's name.
    pub stage: &'static str,
    /// Entry boundaries split at (the entries plus one).
    pub boundaries: usize,
    /// Reads run.
    pub reads: usize,
}

/// The file every read of the kit is of (stages are told it, none reads it).
const CONTEXT_PATH: &str = "compliance.jsonl";

fn context(resumed: bool) -> FileContext<'static> {
    FileContext {
        path: Path::new(CONTEXT_PATH),
        key: Some("compliance"),
        adapter: "compliance",
        usage: Default::default(),
        resumed,
    }
}

/// What one read left: the token of its intent and its checkpoint (both taken where
/// the engine takes them, before `finish`).
struct Read {
    token: Value,
    checkpoint: Value,
}

/// One read as the engine runs it: `begin`, the entries, `prepare`, `checkpoint`,
/// `finish`.
fn read<S: Stage>(stage: &mut S, entries: &[Entry<'_>], resumed: bool) -> Read {
    let ctx = context(resumed);
    stage.begin(&ctx);
    for e in entries {
        stage.entry(e);
    }
    let token = stage.prepare();
    let checkpoint = stage.checkpoint();
    stage.finish(&ctx);
    Read { token, checkpoint }
}

/// A checkpoint as the cursor store gives it back: through its JSON text.
fn stored(v: &Value) -> Value {
    serde_json::from_str(&v.to_string()).unwrap_or(Value::Null)
}

/// Check the stage `harness` builds over `entries` (see the [module docs](super)):
/// one pass, then for every boundary `k` a read of `entries[..k]`, its checkpoint
/// restored into a fresh stage, and a read of the rest — the output and the final
/// checkpoint must be the one pass's.
pub fn check_stage<H: StageHarness>(
    harness: &mut H,
    entries: &[Entry<'_>],
) -> Result<StageReport, Violation> {
    let mut report = StageReport {
        boundaries: entries.len() + 1,
        ..StageReport::default()
    };
    let world = harness.world();
    let mut stage = harness.build(&world);
    let name = stage.name();
    report.stage = name;
    let fail = |check, subject: String, detail: String| Violation {
        check,
        subject: format!("stage {name:?}, {subject}"),
        detail,
    };
    if !stage.restore(&Value::Null) {
        return Err(fail(
            Check::StageRestore,
            "a fresh stage".into(),
            "refuses Null".into(),
        ));
    }
    let one_read = read(&mut stage, entries, false);
    if stage.failed() {
        return Err(fail(
            Check::StagePieces,
            "one pass".into(),
            "finish failed".into(),
        ));
    }
    let mut one = H::Output::default();
    harness.collect(&world, stage, &mut one);
    report.reads += 1;
    drop(world);

    for k in 0..=entries.len() {
        let subject = format!("split before entry {k} of {}", entries.len());
        let world = harness.world();
        let mut first = harness.build(&world);
        first.restore(&Value::Null);
        let before = read(&mut first, &entries[..k], false);
        let mut out = H::Output::default();
        harness.collect(&world, first, &mut out);
        if !before.token.is_null() {
            // A read stopped before its cursor was saved asks fresh stages whether its
            // effects were made; a finished read's were.
            let mut fresh = harness.build(&world);
            if !fresh.recover(&stored(&before.token)) {
                return Err(fail(
                    Check::StageRecover,
                    subject,
                    format!(
                        "a finished read's effects are not recovered: {}",
                        before.token
                    ),
                ));
            }
        }
        let mut second = harness.build(&world);
        if !second.restore(&stored(&before.checkpoint)) {
            return Err(fail(
                Check::StageRestore,
                subject,
                format!("refuses its own checkpoint {}", before.checkpoint),
            ));
        }
        let after = read(&mut second, &entries[k..], true);
        let failed = second.failed();
        harness.collect(&world, second, &mut out);
        report.reads += 2;
        if failed {
            return Err(fail(Check::StagePieces, subject, "finish failed".into()));
        }
        if out != one {
            // The first line of the outputs' renderings that differs.
            let (a, b) = (format!("{one:#?}"), format!("{out:#?}"));
            let detail = first_difference(
                &a.lines().collect::<Vec<_>>(),
                &b.lines().collect::<Vec<_>>(),
            )
            .unwrap_or_default();
            return Err(fail(Check::StagePieces, subject, detail));
        }
        if after.checkpoint != one_read.checkpoint {
            return Err(fail(
                Check::StageCheckpoint,
                subject,
                format!(
                    "final checkpoint {}, one pass {}",
                    after.checkpoint, one_read.checkpoint
                ),
            ));
        }
    }

    let world = harness.world();
    for g in harness.garbage() {
        let mut stage = harness.build(&world);
        match catch_unwind(AssertUnwindSafe(|| stage.restore(&g))) {
            Ok(false) => {}
            Ok(true) => {
                return Err(fail(
                    Check::StageRestore,
                    "garbage".into(),
                    format!("accepts {g} as its checkpoint"),
                ))
            }
            Err(_) => {
                return Err(fail(
                    Check::StageRestore,
                    "garbage".into(),
                    format!("panics restoring {g}"),
                ))
            }
        }
    }
    Ok(report)
}

/// The entries of the fixture at `path`, as the built-in adapters read it whole
/// ([`crate::engine::adapters`]): a stage check's input.
pub fn fixture_entries(path: &Path) -> Result<Vec<Entry<'static>>, ScanError> {
    let mut out = Vec::new();
    scan_path(
        path,
        &crate::engine::adapters(),
        &mut Buffers::default(),
        &mut from_fn(|e: &Entry<'_>| out.push(e.to_static())),
    )?;
    Ok(out)
}

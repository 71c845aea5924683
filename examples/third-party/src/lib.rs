//! # transcope-example-third-party: a new agent and a new stage, from outside
//!
//! Everything here uses only transcope's public crates (`transcope-core`,
//! `transcope-engine`, and the binary's adapter list, `transcope::compose`) and changes
//! none of them:
//!
//! * [`plainlog`]: a third-party **adapter** for a made-up agent's NDJSON transcripts
//!   ([`AdapterFactory`](transcope_core::adapter::AdapterFactory), its
//!   [`Adapter`](transcope_core::adapter::Adapter) and its
//!   [`Layout`](transcope_core::adapter::Layout)), which declares its token usage
//!   shape and pricing provider, so transcope's usage stage counts and its price list
//!   prices the agent's requests without a change of theirs (`tests/usage.rs`);
//! * [`activity`]: a third-party **stage** counting messages, tool calls and words per
//!   folder, with a checkpoint ([`Stage`] and its
//!   [`StageFactory`](transcope_core::stage::StageFactory));
//! * [`replies`]: a third-party stage whose results transcope **keeps and answers**:
//!   it hands its [`Facts`](transcope_core::Facts) on, and [`kept`] — transcope's own
//!   backfill over a stage list with it added, one line — finds them in the index,
//!   each with the scope in force when it happened;
//! * [`adapters`], [`stages`] and [`pipeline`]: the composition — transcope's
//!   adapters (its own list, `transcope::compose::adapters`) plus the plain log, one
//!   line, and the activity stage, one line — in the shape of transcope's own
//!   `crates/cli/src/compose.rs`;
//! * [`run`]: every transcript under some paths through that pipeline, with the cursor
//!   store, so every byte is observed once: a second run over the same bytes reads
//!   nothing, and bytes appended later are read from where the last run stopped, the
//!   stage resuming from its checkpoint.
//!
//! The binary (`cargo run -p transcope-example-third-party -- --home DIR PATH…`) prints
//! what [`run`] found; over the bundled `fixtures/` it reads one plain log and one
//! Claude Code transcript.
//!
//! ```
//! let home = tempfile::tempdir().unwrap();
//! let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
//! let first = transcope_example_third_party::run(home.path(), &[fixtures.clone()]).unwrap();
//! assert_eq!(first.len(), 2);
//! assert!(first.iter().all(|f| f.activity.is_some()));
//! // The same bytes again: the cursor store says nothing is new.
//! let again = transcope_example_third_party::run(home.path(), &[fixtures]).unwrap();
//! assert!(again.iter().all(|f| f.up_to_date && f.activity.is_none()));
//! ```
#![warn(missing_docs)]

pub mod activity;
pub mod plainlog;
pub mod replies;

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use transcope_core::adapter::AdapterRegistry;
use transcope_core::stage::{BuildContext, StageRegistry};
use transcope_core::{Env, Stage};
use transcope_engine::{Buffers, CursorPolicy, Pipeline, Request, ScanError};

use activity::{ActivityFactory, Report};

/// transcope's adapters (the binary's list), then the plain log: one line.
pub fn adapters() -> AdapterRegistry {
    let mut r = transcope::compose::adapters();
    r.register(Box::new(plainlog::PlainLogFactory));
    r
}

/// The stages, one line each; the activity stage reports down `activity`.
pub fn stages(activity: mpsc::Sender<Report>) -> StageRegistry {
    let mut r = StageRegistry::new();
    r.register(Box::new(ActivityFactory::new(activity)));
    r
}

/// The engine: [`adapters`], [`stages`] and the cursor store under `home`.
pub fn pipeline(home: &Path, activity: mpsc::Sender<Report>) -> Pipeline {
    Pipeline::builder(adapters())
        .cursors(CursorPolicy::store(home))
        .stages(stages(activity))
        .build()
}

/// What one run did with one transcript.
#[derive(Debug)]
pub struct FileRun {
    /// The transcript.
    pub path: PathBuf,
    /// The adapter whose layout named its session (`None`: no layout knows it).
    pub layout: Option<&'static str>,
    /// Its session key, or why it has none (it is then not read: no key, no cursor).
    pub key: Result<String, String>,
    /// Nothing new since the last run: nothing was read.
    pub up_to_date: bool,
    /// The read started where the last run stopped.
    pub resumed: bool,
    /// Bytes read.
    pub bytes: u64,
    /// Entries decoded.
    pub entries: u64,
    /// The activity stage's report, when it read anything.
    pub activity: Option<Report>,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A transcript could not be read.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// A cursor could not be saved.
    #[error("while saving the cursor of {path}: {source}")]
    SaveCursor {
        /// The transcript.
        path: PathBuf,
        /// The cause.
        source: transcope_engine::StoreError,
    },
    /// A folder could not be listed.
    #[error("while listing {path}: {source}")]
    List {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The transcripts at `paths`: each file given, and every file under each folder
/// given that some adapter's layout claims, in path order.
pub fn transcripts(
    registry: &AdapterRegistry,
    paths: &[PathBuf],
) -> Result<Vec<PathBuf>, RunError> {
    fn walk(
        registry: &AdapterRegistry,
        dir: &Path,
        out: &mut Vec<PathBuf>,
    ) -> Result<(), RunError> {
        let list = |source| RunError::List {
            path: dir.to_path_buf(),
            source,
        };
        for e in std::fs::read_dir(dir).map_err(list)? {
            let path = e.map_err(list)?.path();
            if path.is_dir() {
                walk(registry, &path, out)?;
            } else if registry.claiming(&path).is_some() {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(registry, p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    Ok(out)
}

/// Observe every transcript at `paths` with [`pipeline`] under `home`: each one's
/// stages fed from where its cursor stands, the activity report taken, then the
/// cursor saved (so a run stopped before that reads the same bytes again).
pub fn run(home: &Path, paths: &[PathBuf]) -> Result<Vec<FileRun>, RunError> {
    let (tx, rx) = mpsc::channel();
    let pipeline = pipeline(home, tx);
    let mut buffers = Buffers::default();
    // The environment the stages see: none (the activity stage reads no variable).
    let env = Env::new();
    let mut runs = Vec::new();
    for path in transcripts(pipeline.registry(), paths)? {
        let (layout, key) = match pipeline.registry().scope_key(&path) {
            Some((name, key)) => (Some(name), key),
            None => (None, Err("no adapter's layout knows this file".to_owned())),
        };
        let mut run = FileRun {
            path,
            layout,
            key,
            up_to_date: false,
            resumed: false,
            bytes: 0,
            entries: 0,
            activity: None,
        };
        if let Ok(key) = &run.key {
            let req = Request::new(&run.path, Some(key));
            let ctx = BuildContext::new(&run.path, Some(key), &env);
            // The listed stages, built fresh for this file; the engine restores their
            // checkpoints from the cursor before the first new entry.
            let mut stages = pipeline.stages().build(&ctx);
            let mut each: Vec<&mut dyn Stage> = stages
                .iter_mut()
                .map(|s| &mut **s as &mut dyn Stage)
                .collect();
            let seen = pipeline.observe(&req, &mut each, &mut buffers)?;
            run.up_to_date = seen.up_to_date;
            run.resumed = seen.resumed;
            run.bytes = seen.scan.bytes;
            run.entries = seen.scan.entries;
            run.activity = rx.try_iter().last();
            seen.save().map_err(|source| RunError::SaveCursor {
                path: run.path.clone(),
                source,
            })?;
        }
        runs.push(run);
    }
    Ok(runs)
}

/// transcope's own stages (its one list: change detection, markers, usage), then the
/// replies stage: one line, as it would be in transcope's `crates/cli/src/compose.rs`.
pub fn kept_stages() -> StageRegistry {
    let mut r = transcope::compose::stages();
    r.register(Box::new(replies::RepliesFactory));
    r
}

/// Backfill `paths` into the index under `home` with [`kept_stages`] (transcope's
/// backfill, cursors and index, unchanged), then read back what the replies stage
/// found: every reply with the session, project, branch and task in force when it was
/// written. A second call reads no byte twice and keeps each reply once.
pub fn kept(
    home: &Path,
    paths: &[PathBuf],
) -> Result<Vec<transcope_index::FactRow>, transcope_index::IndexError> {
    let pipeline = Pipeline::builder(adapters())
        .cursors(CursorPolicy::batched(home))
        .stages(kept_stages())
        .build();
    let listed = adapters();
    let jobs = transcope_backfill::walk(paths, &listed);
    let summary = transcope_backfill::backfill_iter(
        jobs,
        &transcope_backfill::Options::new(home, pipeline),
        &|_, _| {},
    );
    for p in &summary.errors {
        eprintln!("{}: {}", p.path.display(), p.reason);
    }
    transcope_index::Index::open(home)?.facts(&transcope_index::FactFilter {
        stage: Some(replies::STAGE_NAME.to_owned()),
        ..Default::default()
    })
}

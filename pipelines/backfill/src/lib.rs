//! # transcope-backfill: years of archived transcripts, in parallel
//!
//! [`walk`] streams the transcripts under some folders in path order (Claude Code
//! projects folders in every layout, Codex sessions folders, current and legacy;
//! [`discover`] collects it) and [`scope_key`] names the scope log each one feeds.
//! [`backfill_iter`] runs the same stages as a Stop over each file — change detection
//! into the scope log, then, unless disabled, marker extraction and attribution — with
//! rayon, taking files from the stream as workers free up (`par_bridge`), so nothing
//! is held per file and memory does not grow with the archive:
//!
//! * the file is the unit; files that feed the same scope log are processed one after
//!   the other in path order (a file whose key is being worked on waits for it), so
//!   the result never depends on scheduling;
//! * each worker builds its reusable state once (`map_init`): read buffer, adapter
//!   registry, framer, a clone of the shared project resolver (one cache for all);
//! * each file's transitions are appended in order by one [`Transaction`] (whole
//!   rows; a kill leaves a prefix of them and at most one torn line), and its markers
//!   written in one piece, so a run killed at any moment and run again ends with the
//!   same logs as an uninterrupted one, but for torn lines;
//! * the environment is the bare one: never the backfilling process's
//!   `AGENTIHOOKS_SWARM*` variables;
//! * one bad file is reported (path and reason), counted, and never stops the others.
//!
//! Whole files are read through the named [`IoPolicy`]: plain reads by default, or
//! ([`MAP_QUIET`]) memory-mapped when large and not modified recently (a live agent may
//! still be appending: never a growing file).
//!
//! [`Transaction`]: transcope_scopelog::Transaction
//!
//! ```
//! use transcope_backfill::{backfill, discover, Options};
//! let home = tempfile::tempdir().unwrap();
//! let dir = home.path().join("projects/-work-a");
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join("s1.jsonl"), concat!(
//!     r#"{"type":"user","timestamp":"2026-10-08T10:00:00Z","cwd":"/a","sessionId":"s1"}"#, "\n",
//!     r#"{"type":"user","timestamp":"2026-10-08T10:05:00Z","cwd":"/b","sessionId":"s1"}"#, "\n",
//! )).unwrap();
//! let mut adapters = transcope_core::adapter::AdapterRegistry::new();
//! adapters.register(Box::new(transcope_adapter_claude::ClaudeFactory));
//! let (jobs, _) = discover(&[home.path().join("projects")], &adapters);
//! let ah = home.path().join("ah");
//! let pipeline = transcope_engine::Pipeline::builder(adapters)
//!     .cursors(transcope_engine::CursorPolicy::batched(&ah))
//!     .build();
//! let summary = backfill(jobs.clone(), &Options::new(&ah, pipeline.clone()), &|_, _| {});
//! assert_eq!((summary.files, summary.transitions), (1, 2));
//! // Again over the same archive: every byte was observed; nothing is written.
//! let again = backfill(jobs, &Options::new(&ah, pipeline), &|_, _| {});
//! assert_eq!(again.transitions, 0);
//! ```
#![warn(missing_docs)]

mod discover;

use std::collections::{HashMap, VecDeque};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use transcope_brain::{OutboxSink, Writer};
use transcope_change_detect::{Env, NoProjects, ProjectResolver};
use transcope_core::Stage;
use transcope_engine::{Buffers, Pipeline};
use transcope_identity::{GitResolver, ProjectIdentity, ResolveError};
use transcope_jsonl::ReadPolicy;
use transcope_markers::MarkerStage;
use transcope_scopelog::ScopeLog;
use transcope_stop::observe::{observe_deferred, Observe};

pub use discover::{discover, scope_key, walk, Job, Problem, Walk};

/// How whole files are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoPolicy {
    /// Always read into the worker's reusable buffer.
    Read,
    /// Memory-map files of at least `min_size` bytes that were last modified longer
    /// than `quiet` ago; read the others (a live agent may still be appending: never
    /// map a growing file).
    MapQuiet {
        /// How long a file must have been left alone to be mapped.
        quiet: Duration,
        /// The smallest file worth a mapping.
        min_size: u64,
    },
}

/// The mapping policy `--mmap` selects: files of 64 KiB or more untouched for five
/// minutes.
pub const MAP_QUIET: IoPolicy = IoPolicy::MapQuiet {
    quiet: Duration::from_secs(300),
    min_size: 64 * 1024,
};

/// The default: plain reads. Measured on the 150 MB generated corpus (benches/README.md),
/// mapping saved the copy but paid the same in page faults (230 ms of CPU either way),
/// so the safer policy is the default and mapping stays an opt-in.
pub const DEFAULT_IO_POLICY: IoPolicy = IoPolicy::Read;

/// Where markers go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkersOut {
    /// Not extracted (`--no-markers`).
    Skip,
    /// Request bodies, one per line, appended to this file (`--markers-out`).
    Ndjson(PathBuf),
    /// One outbox file per marker, in this folder.
    Outbox(PathBuf),
}

/// The most worker threads a backfill starts: past a few per core they only cost
/// memory (each has its own stack and read buffer), and thousands of them exhaust the
/// process's threads or address space. [`Options::jobs`] above it is lowered to it.
pub const MAX_JOBS: usize = 256;

/// How a backfill runs.
pub struct Options {
    /// The agentihooks home.
    pub home: PathBuf,
    /// The engine: the adapters, and the cursor store under the home that a Stop and
    /// `observe` share (each file's bytes observed once, whatever read them first).
    pub pipeline: Pipeline,
    /// Worker threads (0: rayon's default, one per core), at most [`MAX_JOBS`].
    pub jobs: usize,
    /// Markers.
    pub markers: MarkersOut,
    /// The environment the stages see (bare: no swarm variables).
    pub env: Env,
    /// The project resolver (cloned per worker; clones share one cache).
    pub resolver: Option<GitResolver>,
    /// Whole-file reads.
    pub io: IoPolicy,
}

impl Options {
    /// Defaults: all cores, markers skipped, an empty environment, no resolver (raw
    /// folders), [`DEFAULT_IO_POLICY`]; `pipeline` reads the files.
    pub fn new(home: impl Into<PathBuf>, pipeline: Pipeline) -> Options {
        Options {
            home: home.into(),
            pipeline,
            jobs: 0,
            markers: MarkersOut::Skip,
            env: Env::new(),
            resolver: None,
            io: DEFAULT_IO_POLICY,
        }
    }
}

/// What a backfill did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Files processed (including failed ones).
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Entries decoded.
    pub entries: u64,
    /// Lines skipped (invalid, not objects, over the cap).
    pub skipped_lines: u64,
    /// Transitions written.
    pub transitions: u64,
    /// Markers delivered (written to the outbox or the markers file).
    pub markers: u64,
    /// Markers found but not delivered (the write failed; the file's cursor is not
    /// saved, so the next run finds them again).
    pub markers_undelivered: u64,
    /// Markers labelled unknown or refused (of those found).
    pub unattributed: u64,
    /// Every problem, with its file: a file may have several (its transitions and its
    /// markers can fail apart).
    pub errors: Vec<Problem>,
    /// Wall time.
    pub seconds: f64,
}

impl Summary {
    /// Throughput in MB/s (10^6 bytes).
    pub fn mb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / 1e6 / self.seconds
        } else {
            0.0
        }
    }

    /// The `--json` summary.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "files": self.files,
            "bytes": self.bytes,
            "entries": self.entries,
            "skipped_lines": self.skipped_lines,
            "transitions_written": self.transitions,
            "markers": self.markers,
            "markers_undelivered": self.markers_undelivered,
            "unattributed": self.unattributed,
            "errors": self.errors.len(),
            "seconds": (self.seconds * 1000.0).round() / 1000.0,
            "mb_per_s": (self.mb_per_s() * 10.0).round() / 10.0,
        })
    }
}

/// Either the shared git resolver or none.
#[derive(Clone)]
enum Resolver {
    Git(GitResolver),
    None,
}

impl ProjectResolver for Resolver {
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        match self {
            Resolver::Git(g) => g.resolve(folder, env),
            Resolver::None => NoProjects.resolve(folder, env),
        }
    }
}

thread_local! {
    /// The read buffer of each worker thread. rayon's `map_init` builds its state once
    /// per job split, not once per thread, so the buffer (grown to the longest line
    /// seen) lives here instead: a fresh `Vec` per split meant zeroing and regrowing it.
    static BUFFERS: std::cell::RefCell<Buffers> = std::cell::RefCell::new(Buffers::default());
}

struct Worker {
    pipeline: Pipeline,
    resolver: Resolver,
}

#[derive(Default)]
struct FileOutcome {
    bytes: u64,
    entries: u64,
    skipped: u64,
    transitions: u64,
    markers: u64,
    markers_undelivered: u64,
    unattributed: u64,
    /// Every problem of this file, in the order met.
    errors: Vec<String>,
}

/// Process `jobs`; `progress(files_done, bytes_done)` is called after each file.
pub fn backfill(jobs: Vec<Job>, opts: &Options, progress: &(dyn Fn(u64, u64) + Sync)) -> Summary {
    backfill_iter(jobs.into_iter().map(Ok), opts, progress)
}

/// [`backfill`] over a stream of files, as [`walk`] yields them (a discovery problem,
/// an `Err`, is reported like a failed file but not counted as one). Nothing is kept
/// per file: files are taken as the workers need them, in the stream's order, and
/// memory does not grow with the archive.
///
/// Files that feed the same scope log (one key) are processed one after the other in
/// the stream's order: a file whose key is still being worked on waits beside that
/// key, and the worker that finishes the key's file takes it next.
pub fn backfill_iter<I>(jobs: I, opts: &Options, progress: &(dyn Fn(u64, u64) + Sync)) -> Summary
where
    I: Iterator<Item = Result<Job, Problem>> + Send,
{
    let start = std::time::Instant::now();
    let summary = Mutex::new(Summary::default());
    // A pool that cannot be built (threads or memory refused by a limit) is the run's
    // error, not a panic.
    let pool = match rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs.min(MAX_JOBS))
        .build()
    {
        Ok(pool) => pool,
        Err(e) => {
            let mut summary = Summary::default();
            summary.errors.push(Problem {
                path: opts.home.clone(),
                reason: format!(
                    "cannot start {} worker threads: {e}",
                    opts.jobs.min(MAX_JOBS)
                ),
            });
            summary.seconds = start.elapsed().as_secs_f64();
            return summary;
        }
    };
    let destination = match &opts.markers {
        MarkersOut::Ndjson(p) => match p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(p))
        {
            Ok(f) => Out::Ndjson(Mutex::new(f)),
            Err(e) => {
                let mut summary = Summary::default();
                summary.errors.push(Problem {
                    path: p.clone(),
                    reason: format!("cannot open the markers file: {e}"),
                });
                summary.seconds = start.elapsed().as_secs_f64();
                return summary;
            }
        },
        // One outbox writer for the whole run: it keeps the outbox's listing between
        // markers instead of reading the folder again for each one.
        MarkersOut::Outbox(dir) => Out::Outbox(Mutex::new(OutboxSink::new(dir, "backfill", ""))),
        MarkersOut::Skip => Out::Skip,
    };
    let files_done = AtomicU64::new(0);
    let bytes_done = AtomicU64::new(0);
    let resolver = match &opts.resolver {
        Some(g) => Resolver::Git(g.clone()),
        None => Resolver::None,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The keys being worked on, each with the files of that key that came since, in
    // stream order. A worker finishing a key's file takes the next one waiting.
    let busy: Mutex<HashMap<String, VecDeque<Job>>> = Mutex::new(HashMap::new());
    // Runs under par_bridge's lock, one file at a time in stream order: the key is
    // claimed (or the file queued behind it) before any later file is looked at.
    let source = jobs.filter_map(|item| {
        let job = match item {
            Ok(job) => job,
            Err(problem) => {
                lock(&summary).errors.push(problem);
                return None;
            }
        };
        let key = match scope_key(opts.pipeline.registry(), &job.path) {
            Ok(k) => k,
            Err(reason) => {
                // A file without a key counts as a failed file.
                lock(&summary).add(
                    &job.path,
                    FileOutcome {
                        errors: vec![reason],
                        ..FileOutcome::default()
                    },
                );
                return None;
            }
        };
        let mut busy = lock(&busy);
        match busy.get_mut(&key) {
            Some(waiting) => {
                waiting.push_back(job);
                None
            }
            None => {
                busy.insert(key.clone(), VecDeque::new());
                Some((key, job))
            }
        }
    });
    // Each file's outcome is folded into counters as it ends (files with an error keep
    // their path), so memory does not grow with the number of files processed.
    let processed: Summary = pool.install(|| {
        source
            .par_bridge()
            .map_init(
                || Worker {
                    pipeline: opts.pipeline.clone(),
                    resolver: resolver.clone(),
                },
                |w, (key, first)| {
                    let mut out = Summary::default();
                    let mut next = Some(first);
                    while let Some(job) = next {
                        let policy = match opts.io {
                            IoPolicy::Read => ReadPolicy::Read,
                            IoPolicy::MapQuiet { quiet, min_size } => {
                                if job.size >= min_size
                                    && now.saturating_sub(job.modified) >= quiet.as_secs()
                                {
                                    ReadPolicy::Mmap
                                } else {
                                    ReadPolicy::Read
                                }
                            }
                        };
                        let o = process_file(w, opts, &key, &job, policy, &destination);
                        let f = files_done.fetch_add(1, Ordering::Relaxed) + 1;
                        let b = bytes_done.fetch_add(o.bytes, Ordering::Relaxed) + o.bytes;
                        progress(f, b);
                        out.add(&job.path, o);
                        // The key's next file, or the key is free again.
                        let mut busy = lock(&busy);
                        next = busy.get_mut(&key).and_then(VecDeque::pop_front);
                        if next.is_none() {
                            busy.remove(&key);
                        }
                    }
                    out
                },
            )
            .reduce(Summary::default, |mut a, b| {
                a.absorb(b);
                a
            })
    });
    let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.absorb(processed);
    // The order files finished in is the scheduler's: report problems by path.
    summary.errors.sort_by(|a, b| a.path.cmp(&b.path));
    if let Out::Ndjson(f) = destination {
        if let Ok(f) = f.into_inner() {
            let _ = f.sync_all();
        }
    }
    // The run's last cursors, held for their batch, written in one synced transaction.
    if let Err(e) = opts.pipeline.sync() {
        summary.errors.push(Problem {
            path: transcope_engine::store::database_path(&opts.home),
            reason: format!("saving the cursors: {e}"),
        });
    }
    summary.seconds = start.elapsed().as_secs_f64();
    summary
}

impl Summary {
    /// Count one file's outcome (a failed file keeps its path and reason).
    fn add(&mut self, path: &Path, o: FileOutcome) {
        self.absorb(Summary {
            files: 1,
            bytes: o.bytes,
            entries: o.entries,
            skipped_lines: o.skipped,
            transitions: o.transitions,
            markers: o.markers,
            markers_undelivered: o.markers_undelivered,
            unattributed: o.unattributed,
            errors: o
                .errors
                .into_iter()
                .map(|reason| Problem {
                    path: path.to_path_buf(),
                    reason,
                })
                .collect(),
            seconds: 0.0,
        });
    }

    /// Add `other`'s counts; its errors go after `self`'s.
    fn absorb(&mut self, other: Summary) {
        self.files += other.files;
        self.bytes += other.bytes;
        self.entries += other.entries;
        self.skipped_lines += other.skipped_lines;
        self.transitions += other.transitions;
        self.markers += other.markers;
        self.markers_undelivered += other.markers_undelivered;
        self.unattributed += other.unattributed;
        self.errors.extend(other.errors);
    }
}

/// A lock that a panicking holder did not poison for the others: every value guarded
/// here is a counter or an output handle, valid after any partial update.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where the run's markers go, opened once ([`MarkersOut`] as given).
enum Out {
    Ndjson(Mutex<std::fs::File>),
    Outbox(Mutex<OutboxSink>),
    Skip,
}

fn process_file(
    w: &mut Worker,
    opts: &Options,
    key: &str,
    job: &Job,
    policy: ReadPolicy,
    destination: &Out,
) -> FileOutcome {
    let mut o = FileOutcome::default();
    let log = ScopeLog::open(&opts.home, key);
    let mut stage = (!matches!(destination, Out::Skip)).then(MarkerStage::default);
    let observe = Observe {
        read: policy,
        ..Observe::new(&log, &job.path, &opts.env)
    };
    let report = BUFFERS.with(|b| {
        observe_deferred(
            &w.pipeline,
            &observe,
            &mut w.resolver,
            &mut b.borrow_mut(),
            stage.as_mut().map(|s| s as &mut dyn Stage),
        )
    });
    let pending = match report {
        Ok((r, pending)) => {
            o.bytes = r.scan.bytes;
            o.entries = r.scan.entries;
            o.skipped = r.scan.skipped_total() + r.scan.oversized;
            o.transitions = r.outcome.recorded;
            if r.outcome.io_errors > 0 {
                o.errors.push(
                    r.outcome
                        .first_error
                        .clone()
                        .unwrap_or_else(|| "writing the scope log failed".to_owned()),
                );
            }
            pending
        }
        Err(e) => {
            o.errors.push(e.to_string());
            return o;
        }
    };
    // The cursor is saved once the file's markers are handed on.
    let save = |o: &mut FileOutcome| {
        if let Some(p) = pending {
            if let Err(e) = p.save() {
                o.errors.push(format!("saving the cursor: {e}"));
            }
        }
    };
    let Some(mut stage) = stage else {
        save(&mut o);
        return o;
    };
    let markers = stage.take(None);
    if markers.is_empty() {
        save(&mut o);
        return o;
    }
    let rows = log.transitions();
    let writer = Writer {
        home: &opts.home,
        session: Some(key),
        scope_on: true,
        env: &opts.env,
        folder: "",
        source: "agent",
    };
    let (records, unattributed) = writer.attribute(&markers, &rows, &mut w.resolver);
    o.unattributed = unattributed;
    let found = records.len() as u64;
    let delivered = match destination {
        Out::Ndjson(f) => {
            let mut text = String::new();
            for r in &records {
                text.push_str(&transcope_core::py::dumps(&r.body));
                text.push('\n');
            }
            let mut f = lock(f);
            match f.write_all(text.as_bytes()) {
                Ok(()) => found,
                Err(e) => {
                    // The file's markers are one write: count none as delivered.
                    o.errors.push(format!("writing markers: {e}"));
                    0
                }
            }
        }
        Out::Outbox(sink) => {
            let (written, failed) = lock(sink).deliver_counted(&records);
            if let Some(e) = failed {
                o.errors.push(e.to_string());
            }
            written.len() as u64
        }
        Out::Skip => found,
    };
    o.markers = delivered;
    o.markers_undelivered = found - delivered;
    if o.errors.is_empty() {
        save(&mut o);
    }
    o
}

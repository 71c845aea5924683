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
//! * one bad file is reported (path and reason), counted, and never stops the others;
//! * with a [`Shard`] `K/N` ([`Options::shard`]), only the files whose family's root
//!   session hashes to K are read (each other file's head is read to name it, and it
//!   is counted in [`Summary::other_shards`]): N runs in N homes write what one run
//!   writes, each scope log in one of them;
//! * model requests for the index are held and written many files' worth at a time
//!   ([`USAGE_FLUSH`] copies, in key order); near the end of a run what is held is
//!   written beside the last files' reading, not after it (the stream is read ahead
//!   to see its end: the `tail` module).
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
//! let mut stages = transcope_core::StageRegistry::new();
//! stages.register(Box::new(transcope_change_detect::ChangeDetectFactory));
//! let pipeline = transcope_engine::Pipeline::builder(adapters)
//!     .cursors(transcope_engine::CursorPolicy::batched(&ah))
//!     .stages(stages)
//!     .build();
//! let summary = backfill(jobs.clone(), &Options::new(&ah, pipeline.clone()), &|_, _| {});
//! assert_eq!((summary.files, summary.transitions), (1, 2));
//! // Again over the same archive: every byte was observed; nothing is written.
//! let again = backfill(jobs, &Options::new(&ah, pipeline), &|_, _| {});
//! assert_eq!(again.transitions, 0);
//! ```
#![warn(missing_docs)]

mod discover;
mod shard;
mod tail;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use transcope_brain::Writer;
use transcope_change_detect::{Env, Resolving};
use transcope_engine::{Buffers, PendingCursor, Pipeline};
use transcope_identity::GitResolver;
use transcope_index::{Found, Index, Observed, Origin, Recorded};
use transcope_jsonl::ReadPolicy;
use transcope_observe::{observe_deferred, observed, read_with_stages, Observe, Routes};
use transcope_scopelog::ScopeLog;

pub use discover::{discover, family, scope_key, walk, Job, Problem, Walk};
pub use shard::{ParseShardError, Shard};

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
    /// Into the index's ledger, pending (the default): delivered by `transcope
    /// deliver` or `backfill --deliver`, never here.
    Ledger,
    /// Into the ledger, and each marker new to it appended to this file as one line
    /// (its request body, `at` and idempotency key: `--markers-out`).
    Ndjson(PathBuf),
}

/// The most worker threads a backfill starts: past a few per core they only cost
/// memory (each has its own stack and read buffer), and thousands of them exhaust the
/// process's threads or address space. [`Options::jobs`] above it is lowered to it.
pub const MAX_JOBS: usize = 256;

/// How many files waiting behind their key's other file keep the open that named them
/// (a file descriptor and the head's bytes each), for their read to go on from; one
/// past them is opened and its head read again when its turn comes.
const HELD_OPENS: usize = 64;

/// The address space a worker thread takes: its 2 MiB stack, its guard page and its
/// signal stack, with room to spare.
const THREAD_SPACE: u64 = (2 << 20) + (256 << 10);

/// The address space a run needs besides its workers' stacks (buffers, the index's
/// page cache as it fills, the allocator's arenas).
const RUN_SPACE: u64 = 96 << 20;

/// The address space this process may still map, when `RLIMIT_AS` limits it (read from
/// `/proc/self/limits` and `/proc/self/statm`); `None` when unlimited or unknown.
fn address_space_room() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().next()?.parse().ok()?;
    Some(soft.saturating_sub(pages.saturating_mul(4096)))
}

/// The path the index records for a path read ([`Options::recorded_as`]).
pub type RecordedAs = std::sync::Arc<dyn Fn(&Path) -> PathBuf + Send + Sync>;

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
    /// Keep the index (`<home>/transcope/index.sqlite`) current: sessions,
    /// transitions, the ledger. Without it markers are only counted (and written to
    /// the markers file, once each per run).
    pub index: bool,
    /// Record each model request's token usage (the usage stage; `--no-usage` turns
    /// it off).
    pub usage: bool,
    /// Rebuild the index: read every file whole for its session and markers, without
    /// cursors and without change detection (the scope logs are not written; an
    /// index sync mirrors them).
    pub rebuild: bool,
    /// How many copies of requests a run gathers before it writes them
    /// ([`USAGE_FLUSH`]; a flush passes over the usage table in key order once).
    pub usage_flush: usize,
    /// Only the files whose family is this shard's ([`Shard`]); the others are named
    /// (their head read), counted in [`Summary::other_shards`] and left. `None`, like
    /// `0/1`, is every file.
    pub shard: Option<Shard>,
    /// Keep each file in this archive before reading it (`None`: `--no-archive`, or
    /// the archive turned off).
    pub archive: Option<transcope_archive::Archive>,
    /// The path the index records for a file read (`None`: the path read): a copy
    /// restored from the archive is recorded as the transcript it is a copy of.
    pub recorded_as: Option<RecordedAs>,
}

impl Options {
    /// Defaults: all cores, markers skipped, the index kept, an empty environment, no
    /// resolver (raw folders), [`DEFAULT_IO_POLICY`]; `pipeline` reads the files.
    pub fn new(home: impl Into<PathBuf>, pipeline: Pipeline) -> Options {
        Options {
            home: home.into(),
            pipeline,
            jobs: 0,
            markers: MarkersOut::Skip,
            env: Env::new(),
            resolver: None,
            io: DEFAULT_IO_POLICY,
            index: true,
            usage: true,
            rebuild: false,
            usage_flush: USAGE_FLUSH,
            shard: None,
            archive: None,
            recorded_as: None,
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
    /// Markers found.
    pub markers: u64,
    /// Of those, new to the ledger (recorded pending).
    pub markers_recorded: u64,
    /// Markers found but not recorded (the index or the markers file could not be
    /// written; the file's cursor is not saved, so the next run finds them again).
    pub markers_not_recorded: u64,
    /// Transcripts whose last marker block was never closed (reported, not recorded).
    pub unclosed: u64,
    /// Model requests whose token usage was read (copies included: the index keeps
    /// one per request).
    pub requests: u64,
    /// Markers labelled unknown or refused (of those found).
    pub unattributed: u64,
    /// Writes of the held requests made near the end, beside the last files' reading
    /// (at most one a run; not in the `--json` summary).
    pub early_writes: u64,
    /// Files left to other shards ([`Options::shard`]): with [`Summary::files`], every
    /// file the run was given.
    pub other_shards: u64,
    /// Original bytes added to the archive ([`Options::archive`]).
    pub archived: u64,
    /// Bytes the archive stored for them (compressed, with their records).
    pub archive_stored: u64,
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
            "markers_recorded": self.markers_recorded,
            "markers_not_recorded": self.markers_not_recorded,
            "unclosed": self.unclosed,
            "usage_records": self.requests,
            "unattributed": self.unattributed,
            "errors": self.errors.len(),
            "other_shards": self.other_shards,
            "archived_bytes": self.archived,
            "archive_stored_bytes": self.archive_stored,
            "seconds": (self.seconds * 1000.0).round() / 1000.0,
            "mb_per_s": (self.mb_per_s() * 10.0).round() / 10.0,
        })
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
    resolver: Resolving,
}

#[derive(Default)]
struct FileOutcome {
    bytes: u64,
    entries: u64,
    skipped: u64,
    transitions: u64,
    markers: u64,
    markers_not_recorded: u64,
    unclosed: u64,
    unattributed: u64,
    requests: u64,
    archived: u64,
    archive_stored: u64,
    /// Every problem of this file, in the order met.
    errors: Vec<String>,
}

impl FileOutcome {
    /// What a file's read gave, its scan counted here; `None` (its error kept) when
    /// it failed.
    fn read<T>(
        &mut self,
        r: Result<T, transcope_engine::ScanError>,
        scan: impl Fn(&T) -> &transcope_engine::ScanReport,
    ) -> Option<T> {
        match r {
            Ok(t) => {
                let s = scan(&t);
                self.bytes = s.bytes;
                self.entries = s.entries;
                self.skipped = s.skipped_total() + s.oversized;
                Some(t)
            }
            Err(e) => {
                self.errors.push(e.to_string());
                None
            }
        }
    }
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
    let threads = opts.jobs.min(MAX_JOBS);
    // Under an address-space limit, a thread whose stack fits but whose signal stack
    // does not dies in the standard library's own start-up (a panic message, not an
    // error): ask for no more threads than the limit leaves room for.
    let fits = match address_space_room() {
        Some(room) if threads > 0 && (threads as u64) * THREAD_SPACE + RUN_SPACE > room => {
            Err(format!(
                "the address-space limit leaves room for {} of them",
                room.saturating_sub(RUN_SPACE) / THREAD_SPACE
            ))
        }
        _ => Ok(()),
    };
    let pool = match fits.and_then(|()| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| e.to_string())
    }) {
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
    let recorder = match Recorder::new(opts, start, pool.current_num_threads()) {
        Ok(r) => r,
        Err(problem) => {
            let mut summary = Summary::default();
            summary.errors.push(problem);
            summary.seconds = start.elapsed().as_secs_f64();
            return summary;
        }
    };
    let files_done = AtomicU64::new(0);
    let bytes_done = AtomicU64::new(0);
    let resolver = match &opts.resolver {
        Some(g) => Resolving::Git(g.clone()),
        None => Resolving::None,
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // The keys being worked on, each with the files of that key that came since, in
    // stream order (each with its place in the stream: the index breaks a tie between
    // two files' copies of a request by it, and the open that named it, for its read to
    // go on from: its head is not read twice). A worker finishing a key's file takes
    // the next one waiting. Beside them, how many opens they hold.
    type Queued = (u32, Job, Option<transcope_engine::Handoff>);
    let busy: Mutex<(HashMap<String, VecDeque<Queued>>, usize)> = Mutex::new((HashMap::new(), 0));
    // Set once the stream has given its last file.
    let drained = AtomicBool::new(false);
    // Runs under par_bridge's lock, one file at a time in stream order: the key is
    // claimed (or the file queued behind it) before any later file is looked at.
    // Read ahead when requests are held for the index, so they are written beside the
    // last files' reading rather than after it (`tail`).
    let early = opts.index && opts.usage;
    let ahead = if early { tail::LOOKAHEAD } else { 0 };
    let mut order = 0u32;
    let source = tail::ReadAhead::new(jobs, ahead, &recorder.tail).filter_map(|item| {
        let place = order;
        order = order.saturating_add(1);
        let job = match item {
            Ok(job) => job,
            Err(problem) => {
                lock(&summary).errors.push(problem);
                return None;
            }
        };
        let named = discover::name_opened(opts.pipeline.registry(), &job, opts.shard);
        let (key, opened) = match named {
            discover::Named::Key(key, opened) => (key, opened),
            discover::Named::OtherShard => {
                recorder.tail.file_done(job.size);
                lock(&summary).other_shards += 1;
                return None;
            }
            discover::Named::Keyless(reason) => {
                // A file without a key counts as a failed file.
                recorder.tail.file_done(job.size);
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
        let (keys, held) = &mut *busy;
        match keys.get_mut(&key) {
            // Queued behind its key's other file, with the open that named it (past
            // HELD_OPENS of them, opened and its head read again when its turn comes).
            Some(waiting) => {
                let opened = opened.filter(|_| *held < HELD_OPENS);
                *held += usize::from(opened.is_some());
                waiting.push_back((place, job, opened));
                None
            }
            None => {
                keys.insert(key.clone(), VecDeque::new());
                Some((key, (place, job, opened)))
            }
        }
    });
    let source = source.chain(std::iter::from_fn(|| {
        drained.store(true, Ordering::Release);
        None
    }));
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
                    // Each file goes on from the open that named it.
                    while let Some((place, job, mut opened)) = next {
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
                        let (o, mut waiting) =
                            process_file(w, opts, (&key, &job, opened.take()), policy);
                        if let Some(w) = &mut waiting {
                            w.place = place;
                        }
                        let f = files_done.fetch_add(1, Ordering::Relaxed) + 1;
                        let b = bytes_done.fetch_add(o.bytes, Ordering::Relaxed) + o.bytes;
                        progress(f, b);
                        out.add(&job.path, o);
                        recorder.tail.file_done(job.size);
                        if let Some(written) = waiting.and_then(|w| recorder.push(w)) {
                            out.absorb(written);
                        }
                        // Near the end: what is held is written now, beside the other
                        // workers' last files.
                        if early && recorder.tail.due(recorder.held()) {
                            match recorder.flush() {
                                Some(written) => {
                                    out.absorb(written);
                                    out.early_writes += 1;
                                }
                                None => recorder.tail.not_written(),
                            }
                        }
                        // The key's next file, or the key is free again.
                        let mut busy = lock(&busy);
                        let (keys, held) = &mut *busy;
                        next = keys.get_mut(&key).and_then(VecDeque::pop_front);
                        match &next {
                            None => {
                                keys.remove(&key);
                            }
                            Some((_, _, Some(_))) => *held -= 1,
                            Some(_) => {}
                        }
                    }
                    // Nothing is left for this worker: what waits is written now,
                    // while the others finish their last files, rather than after.
                    if drained.load(Ordering::Acquire) {
                        if let Some(written) = recorder.flush() {
                            out.absorb(written);
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
    // The files still waiting: their records, then their cursors.
    summary.absorb(recorder.finish());
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
            markers_recorded: 0,
            markers_not_recorded: o.markers_not_recorded,
            unclosed: o.unclosed,
            requests: o.requests,
            unattributed: o.unattributed,
            early_writes: 0,
            other_shards: 0,
            archived: o.archived,
            archive_stored: o.archive_stored,
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
    pub fn absorb(&mut self, other: Summary) {
        self.files += other.files;
        self.bytes += other.bytes;
        self.entries += other.entries;
        self.skipped_lines += other.skipped_lines;
        self.transitions += other.transitions;
        self.markers += other.markers;
        self.markers_recorded += other.markers_recorded;
        self.markers_not_recorded += other.markers_not_recorded;
        self.unclosed += other.unclosed;
        self.requests += other.requests;
        self.unattributed += other.unattributed;
        self.early_writes += other.early_writes;
        self.other_shards += other.other_shards;
        self.archived += other.archived;
        self.archive_stored += other.archive_stored;
        self.errors.extend(other.errors);
    }
}

/// A lock that a panicking holder did not poison for the others: every value guarded
/// here is a counter or an output handle, valid after any partial update.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One file's record for the index and its cursor, waiting for their batch.
struct Waiting {
    path: PathBuf,
    item: Observed,
    cursor: Option<PendingCursor>,
    /// The file's place in the run's stream.
    place: u32,
}

/// The markers file, open for appending, and the keys already in it.
type MarkersFile = (std::fs::File, HashSet<String>);

/// How many files' records one index transaction writes.
const INDEX_BATCH: usize = 256;

/// How many copies of requests a run gathers before it writes them, by default
/// ([`Options::usage_flush`]): about 6 MB; a flush passes over the usage table in key
/// order once.
pub const USAGE_FLUSH: usize = 1 << 16;

/// Requests gathered across batches, and the cursors of the files they came from,
/// saved once the requests are written.
#[derive(Default)]
struct HeldUsage {
    batch: transcope_index::UsageBatch,
    cursors: Vec<(PathBuf, PendingCursor)>,
}

/// The index side of a run. Each file's record and cursor wait here; every
/// [`INDEX_BATCH`] files, one transaction writes the records (not synced: the
/// write-ahead log keeps a committed transaction across a killed process, and its
/// checkpoints sync it), the markers file gets the markers it lacks, and only then are
/// the files' cursors saved, so a killed run finds again whatever was not recorded.
struct Recorder {
    index: Option<Mutex<Index>>,
    index_path: PathBuf,
    waiting: Mutex<Vec<Waiting>>,
    /// A worker is writing a batch ([`Recorder::push`]).
    writing: AtomicBool,
    usage: Mutex<HeldUsage>,
    /// The markers file and the keys already in it.
    out: Option<(PathBuf, Mutex<MarkersFile>)>,
    /// What the run knows of its end, and what its flushes cost.
    tail: tail::Tail,
    /// [`Options::usage_flush`].
    usage_flush: usize,
    /// Copies of requests queued and not yet written ([`Recorder::held`]).
    queued: AtomicUsize,
}

impl Recorder {
    fn new(opts: &Options, start: std::time::Instant, threads: usize) -> Result<Recorder, Problem> {
        let index_path = transcope_index::index_path(&opts.home);
        let index = if opts.index {
            let ix = Index::open(&opts.home).map_err(|e| Problem {
                path: index_path.clone(),
                reason: e.to_string(),
            })?;
            Some(Mutex::new(ix))
        } else {
            None
        };
        let out = match &opts.markers {
            MarkersOut::Ndjson(p) => {
                let open = || -> std::io::Result<MarkersFile> {
                    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                        std::fs::create_dir_all(d)?;
                    }
                    let mut keys = HashSet::new();
                    match std::fs::read(p) {
                        Ok(bytes) => {
                            for line in bytes.split(|b| *b == b'\n') {
                                if let Ok(serde_json::Value::Object(m)) =
                                    serde_json::from_slice(line)
                                {
                                    if let Some(k) =
                                        m.get("idempotency_key").and_then(|k| k.as_str())
                                    {
                                        keys.insert(k.to_owned());
                                    }
                                }
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(e),
                    }
                    let f = OpenOptions::new().create(true).append(true).open(p)?;
                    Ok((f, keys))
                };
                let opened = open().map_err(|e| Problem {
                    path: p.clone(),
                    reason: format!("cannot open the markers file: {e}"),
                })?;
                Some((p.clone(), Mutex::new(opened)))
            }
            _ => None,
        };
        Ok(Recorder {
            index,
            index_path,
            waiting: Mutex::new(Vec::new()),
            writing: AtomicBool::new(false),
            usage: Mutex::new(HeldUsage {
                batch: transcope_index::UsageBatch::with_capacity(if opts.index && opts.usage {
                    opts.usage_flush.clamp(1, USAGE_FLUSH)
                } else {
                    0
                }),
                cursors: Vec::new(),
            }),
            out,
            tail: tail::Tail::new(start, threads),
            usage_flush: opts.usage_flush.max(1),
            queued: AtomicUsize::new(0),
        })
    }

    /// How many copies of requests a flush would write now: those held, and those of
    /// the files whose records wait for their batch. Read without a lock: a worker
    /// asks after every file, and the usage lock is held through a flush.
    fn held(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// Queue one file; a full batch is written now, by the caller's thread — unless
    /// another worker is writing: then the batch keeps growing and this worker goes on
    /// reading (the index has one connection; waiting for it would idle a core while
    /// a large usage flush runs).
    fn push(&self, w: Waiting) -> Option<Summary> {
        self.queued.fetch_add(w.item.usage.len(), Ordering::Relaxed);
        let batch = {
            let mut waiting = lock(&self.waiting);
            waiting.push(w);
            (waiting.len() >= INDEX_BATCH && !self.writing.swap(true, Ordering::Acquire))
                .then(|| std::mem::take(&mut *waiting))
        };
        batch.map(|b| {
            let written = self.write(b);
            self.writing.store(false, Ordering::Release);
            written
        })
    }

    /// Write what is waiting, requests included, unless another worker is writing.
    fn flush(&self) -> Option<Summary> {
        if self.writing.swap(true, Ordering::Acquire) {
            return None;
        }
        let written = self.write_waiting();
        self.writing.store(false, Ordering::Release);
        Some(written)
    }

    /// Write every record waiting, then every request held.
    fn write_waiting(&self) -> Summary {
        let batch = std::mem::take(&mut *lock(&self.waiting));
        let mut written = self.write(batch);
        written.absorb(self.write_usage(&mut lock(&self.usage)));
        written
    }

    /// Write what is still waiting, and sync the markers file.
    fn finish(&self) -> Summary {
        let summary = self.write_waiting();
        if let Some((_, out)) = &self.out {
            let _ = lock(out).0.sync_all();
        }
        summary
    }

    /// Write the requests held, then save the cursors that waited for them.
    fn write_usage(&self, held: &mut HeldUsage) -> Summary {
        let mut s = Summary::default();
        let Some(ix) = &self.index else {
            return s;
        };
        if held.batch.is_empty() {
            return s;
        }
        let (copies, began) = (held.batch.len(), std::time::Instant::now());
        // Being written (or given up: a failed batch is not written again), so no
        // longer what a flush would write.
        let _ = self
            .queued
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |q| {
                Some(q.saturating_sub(copies))
            });
        let recorded = lock(ix).record_usage(&mut held.batch);
        self.tail.flushed(copies, began.elapsed().as_secs_f64());
        if let Err(e) = recorded {
            // Not saved: the next run reads those files again.
            held.cursors.clear();
            s.errors.push(Problem {
                path: self.index_path.clone(),
                reason: e.to_string(),
            });
            return s;
        }
        for (path, cursor) in held.cursors.drain(..) {
            if let Err(e) = cursor.save() {
                s.errors.push(Problem {
                    path,
                    reason: format!("saving the cursor: {e}"),
                });
            }
        }
        s
    }

    fn write(&self, mut batch: Vec<Waiting>) -> Summary {
        let mut s = Summary::default();
        if batch.is_empty() {
            return s;
        }
        // The requests wait to be written with many other files' (their cursors with
        // them); the rest is written now.
        let mut spent = Vec::with_capacity(batch.len());
        if self.index.is_some() {
            let mut held = lock(&self.usage);
            for w in &mut batch {
                let usage = std::mem::take(&mut w.item.usage);
                spent.push(!usage.is_empty());
                held.batch.add(&w.item, w.place, usage);
            }
        }
        let (items, rest): (Vec<Observed>, Vec<(PathBuf, Option<PendingCursor>)>) = batch
            .into_iter()
            .map(|w| (w.item, (w.path, w.cursor)))
            .unzip();
        let found = |i: &Observed| i.markers.len() as u64;
        // The records first.
        let recorded = match &self.index {
            Some(ix) => match lock(ix).record(&items, Origin::Backfill, false) {
                Ok(done) => {
                    s.markers_recorded = done.iter().map(Recorded::new_markers).sum();
                    true
                }
                Err(e) => {
                    s.errors.push(Problem {
                        path: self.index_path.clone(),
                        reason: e.to_string(),
                    });
                    false
                }
            },
            None => true,
        };
        // Then the markers file: each marker once, whatever run found it first.
        let mut written = true;
        if let (Some((path, out)), true) = (&self.out, recorded) {
            let mut guard = lock(out);
            let (file, keys) = &mut *guard;
            let mut text = String::new();
            let mut adding = Vec::new();
            for f in items.iter().flat_map(|i| &i.markers) {
                let key = &f.record.idempotency_key;
                if keys.contains(key) || adding.contains(key) {
                    continue;
                }
                text.push_str(&marker_line(f));
                text.push('\n');
                adding.push(key.clone());
            }
            match file.write_all(text.as_bytes()) {
                Ok(()) => keys.extend(adding),
                Err(e) => {
                    written = false;
                    s.errors.push(Problem {
                        path: path.clone(),
                        reason: format!("writing markers: {e}"),
                    });
                }
            }
        }
        // Then the cursors of what was recorded (of a file whose requests wait, once
        // they are written).
        let mut held = Vec::new();
        for (i, (item, (path, cursor))) in items.iter().zip(rest).enumerate() {
            let has_markers = !item.markers.is_empty();
            if !recorded || (has_markers && !written) {
                s.markers_not_recorded += found(item);
                continue;
            }
            if spent.get(i).copied().unwrap_or(false) {
                held.extend(cursor.map(|c| (path, c)));
                continue;
            }
            if let Some(p) = cursor {
                if let Err(e) = p.save() {
                    s.errors.push(Problem {
                        path,
                        reason: format!("saving the cursor: {e}"),
                    });
                }
            }
        }
        if self.index.is_some() {
            let mut usage = lock(&self.usage);
            usage.cursors.append(&mut held);
            if usage.batch.len() >= self.usage_flush {
                s.absorb(self.write_usage(&mut usage));
            }
        }
        s
    }
}

/// A marker's line in the markers file: its request body, then `at` and the
/// idempotency key.
fn marker_line(f: &Found) -> String {
    let mut v = f.record.body.clone();
    if let Some(m) = v.as_object_mut() {
        m.insert("at".into(), f.at.clone().unwrap_or(serde_json::Value::Null));
        m.insert(
            "idempotency_key".into(),
            serde_json::Value::String(f.record.idempotency_key.clone()),
        );
    }
    transcope_core::py::dumps(&v)
}

fn process_file(
    w: &mut Worker,
    opts: &Options,
    (key, job, opened): (&str, &Job, Option<transcope_engine::Handoff>),
    policy: ReadPolicy,
) -> (FileOutcome, Option<Waiting>) {
    let mut o = FileOutcome::default();
    // The evidence first: the file's new bytes kept before anything is derived. A
    // container of records (a database, rewritten in place) is not an append-only
    // transcript the archive can keep by its new bytes: it is read, not archived.
    if let Some(a) = opts.archive.as_ref().filter(|_| job.session.is_none()) {
        match a.keep(&job.path, Some(key)) {
            Ok(k) => {
                o.archived = k.added;
                o.archive_stored = k.stored;
            }
            Err(e) => o.errors.push(format!("not archived: {e}")),
        }
    }
    let log = ScopeLog::open(&opts.home, key);
    let routes = Routes {
        changes: !opts.rebuild,
        markers: !matches!(opts.markers, MarkersOut::Skip),
        usage: opts.usage,
        facts: opts.index,
    };
    if opts.rebuild {
        return rebuild_file(w, opts, key, job, policy, &log, routes);
    }
    let observe = Observe {
        read: policy,
        opened: opened.as_ref(),
        indexed: opts.index,
        ..Observe::new(&log, &job.path, &opts.env)
    };
    let report = BUFFERS.with(|b| {
        observe_deferred(
            &w.pipeline,
            &observe,
            &w.resolver,
            &mut b.borrow_mut(),
            routes,
        )
    });
    let Some((mut report, mut stages_found, pending)) = o.read(report, |r| &r.0.scan) else {
        return (o, None);
    };
    o.transitions = report.outcome.recorded;
    if report.outcome.io_errors > 0 {
        o.errors.push(
            report
                .outcome
                .first_error
                .clone()
                .unwrap_or_else(|| "writing the scope log failed".to_owned()),
        );
    }
    let Some(mut item) = observed(&w.pipeline, &observe, &mut report) else {
        // Nothing read: nothing to record, no cursor to move.
        return (o, None);
    };
    let rows = report.outcome.rows.take();
    found(
        w,
        opts,
        key,
        (&log, rows),
        &mut stages_found,
        &mut o,
        &mut item,
    );
    // A file whose log could not be written keeps its old cursor (read again next
    // time), and its markers wait for that read: attributed now, against a log
    // lacking this file's rows, they would keep a wrong attribution in the ledger.
    if !o.errors.is_empty() {
        o.markers_not_recorded = item.markers.len() as u64;
        item.markers.clear();
    }
    let cursor = pending.filter(|_| o.errors.is_empty());
    if let Some(name) = &opts.recorded_as {
        item.transcript = Some(name(&job.path));
    }
    let waiting = Waiting {
        path: job.path.clone(),
        item,
        cursor,
        place: 0,
    };
    (o, Some(waiting))
}

/// What the stages handed on (`stages_found`), attributed through `log` (its rows as
/// change detection left them, when it handed them on), into `item` and counted in
/// `o`.
fn found(
    w: &mut Worker,
    opts: &Options,
    key: &str,
    (log, rows): (&ScopeLog, Option<transcope_scopelog::Window>),
    stages_found: &mut transcope_core::Found,
    o: &mut FileOutcome,
    item: &mut Observed,
) {
    let writer = Writer::archived(&opts.home, key, &opts.env);
    let done =
        transcope_observe::attribute_into(item, log, rows, &writer, stages_found, &mut w.resolver);
    o.unclosed = u64::from(done.unclosed);
    o.unattributed = done.unattributed;
    o.markers = done.markers;
    o.requests = done.requests;
}

/// [`Options::rebuild`]: the whole file for its session and what the stages find, no
/// cursor, no change detection.
fn rebuild_file(
    w: &mut Worker,
    opts: &Options,
    key: &str,
    job: &Job,
    policy: ReadPolicy,
    log: &ScopeLog,
    routes: Routes,
) -> (FileOutcome, Option<Waiting>) {
    let mut o = FileOutcome::default();
    if log.path().is_none() {
        return (o, None);
    }
    // The session's key (its usage stage keys id-less requests by it), no cursor.
    let req = transcope_engine::Request::new(&job.path, Some(key))
        .without_cursor()
        .read(policy);
    let seen = BUFFERS.with(|b| {
        read_with_stages(
            &w.pipeline,
            &req,
            (Some(log), &w.resolver, &opts.env),
            routes,
            &mut b.borrow_mut(),
        )
    });
    let Some((seen, mut stages_found)) = o.read(seen, |s| &s.0.scan) else {
        return (o, None);
    };
    let mut report = transcope_observe::ObserveReport {
        scan: seen.scan,
        ..Default::default()
    };
    let observe = Observe::new(log, &job.path, &opts.env);
    let Some(mut item) = observed(&w.pipeline, &observe, &mut report) else {
        return (o, None);
    };
    // No change detection here: the log is read for the attribution.
    found(
        w,
        opts,
        key,
        (log, None),
        &mut stages_found,
        &mut o,
        &mut item,
    );
    if let Some(name) = &opts.recorded_as {
        item.transcript = Some(name(&job.path));
    }
    let waiting = Waiting {
        path: job.path.clone(),
        item,
        cursor: None,
        place: 0,
    };
    (o, Some(waiting))
}

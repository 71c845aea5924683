//! # transcope-engine: one read engine for every path that observes a transcript
//!
//! A [`Pipeline`] is built once from an [`AdapterRegistry`], a [`Framer`] and a
//! [`CursorPolicy`], and is cheap to clone per worker (its parts are shared). Its
//! [`Pipeline::observe`] reads one transcript for one session key and feeds the
//! entries to the [`Stage`]s it is given, in one pass:
//!
//! ```text
//! cursor store ──load──► resolve an intent ──► restore the adapter's checkpoint, then
//!      │                                       each stage's (all, or a read from 0)
//!      ▼                                                        │
//! file ──framing (lines | document)──► adapter ──entries──► stages (wants → entry)
//!                                                               │
//!      ┌───────────────── prepare (tokens) ◄────────────────────┘
//!      ▼
//! intent stored ──► finish (effects made durable) ──► PendingCursor (caller saves it
//!                                                      once it has handed on outputs)
//! ```
//!
//! `observe`, a hook's Stop and `backfill` are thin compositions over it: they differ
//! only in the stages they pass, the tail policy, and when they save the cursor. Beside
//! the adapters, a pipeline carries the list of further stages
//! ([`StageRegistry`], [`Builder::stages`]) that every composition builds for each
//! file and runs with its own. With
//! the cursor store on, the bytes of a transcript are observed once: observing the same
//! bytes again does nothing, and appended bytes are observed as if the file had been
//! read in one pass ([`cursor`] has the details, kill safety included).
//!
//! A [`Request`] may carry a time limit ([`Request::until`]): a line read then stops
//! after the first line decoded past it ([`ScanReport::cut`]), and everything after —
//! `prepare`, `finish`, the cursor and its checkpoints — covers the lines read, as if
//! the file had ended there. The next read goes on from that point, so a transcript
//! too big for one hook run is read over several instead of never.
//!
//! ```
//! use transcope_core::adapter::{AdapterRegistry, EntrySink};
//! use transcope_core::stage::Stage;
//! use transcope_core::Entry;
//! use transcope_engine::{CursorPolicy, Pipeline, Request};
//!
//! #[derive(Default)]
//! struct Count(u64);
//! impl EntrySink for Count {
//!     fn entry(&mut self, _: &Entry<'_>) { self.0 += 1 }
//! }
//! impl Stage for Count {
//!     fn name(&self) -> &'static str { "count" }
//! }
//!
//! /// Every line is one entry.
//! struct Lines;
//! impl transcope_core::adapter::Adapter for Lines {
//!     fn decode(&mut self, _: &[u8], _: transcope_core::LinePos, sink: &mut dyn EntrySink)
//!         -> Result<(), transcope_core::adapter::Skip> {
//!         sink.entry(&Entry::default());
//!         Ok(())
//!     }
//! }
//! struct LinesFactory;
//! impl transcope_core::adapter::AdapterFactory for LinesFactory {
//!     fn name(&self) -> &'static str { "lines" }
//!     fn sniff(&self, _: &std::path::Path, _: &[u8]) -> Option<transcope_core::adapter::Confidence> {
//!         Some(transcope_core::adapter::Confidence::Fallback)
//!     }
//!     fn build(&self) -> Box<dyn transcope_core::adapter::Adapter> { Box::new(Lines) }
//! }
//!
//! let home = tempfile::tempdir().unwrap();
//! let t = home.path().join("t.jsonl");
//! std::fs::write(&t, "{}\n{}\n").unwrap();
//! let mut registry = AdapterRegistry::new();
//! registry.register(Box::new(LinesFactory));
//! let pipeline = Pipeline::builder(registry).cursors(CursorPolicy::store(home.path())).build();
//!
//! let mut count = Count::default();
//! let seen = pipeline.observe(&Request::new(&t, Some("s1")), &mut [&mut count], &mut Default::default()).unwrap();
//! seen.save().unwrap();
//! assert_eq!(count.0, 2);
//!
//! // The same bytes again: nothing is read.
//! let again = pipeline.observe(&Request::new(&t, Some("s1")), &mut [&mut count], &mut Default::default()).unwrap();
//! assert!(again.up_to_date);
//! assert_eq!(count.0, 2);
//! ```
#![warn(missing_docs)]

pub mod cursor;
mod records;
pub mod scan;
/// The cursor store, `<home>/transcope/cursors.sqlite`: the backend crate
/// `transcope-cursor-store` (the only one here that knows SQLite), re-exported where it
/// has always been.
pub use transcope_cursor_store as store;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use transcope_core::adapter::{AdapterRegistry, EntrySink, Probe};
use transcope_core::stage::{FileContext, Stage, StageRegistry};
use transcope_core::{Entry, TimeValue};
use transcope_jsonl::{Framer, ReadPolicy};

pub use cursor::{Cursor, Intent};
pub use scan::{open_regular, Buffers, Resume, ScanError, ScanReport, Source, Tail};
pub use store::{CursorStore, Encoded, StoreError};

/// Where a pipeline keeps its cursors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CursorPolicy {
    /// None: every read is a whole read from the start (`observe --full`, the
    /// reference's algorithm).
    Off,
    /// In `<home>/transcope/cursors.sqlite` ([`store`]).
    Store {
        /// The agentihooks home.
        home: PathBuf,
        /// Commit and sync each saved cursor (a hook); a batch passes `false` and
        /// writes its cursors in batches, one sync each ([`Pipeline::sync`] at its end).
        durable: bool,
    },
}

impl CursorPolicy {
    /// The store under `home`, each cursor synced as it is saved.
    pub fn store(home: impl Into<PathBuf>) -> CursorPolicy {
        CursorPolicy::Store {
            home: home.into(),
            durable: true,
        }
    }

    /// The store under `home`, synced by the caller in batches ([`Pipeline::sync`]).
    pub fn batched(home: impl Into<PathBuf>) -> CursorPolicy {
        CursorPolicy::Store {
            home: home.into(),
            durable: false,
        }
    }
}

struct Inner {
    registry: AdapterRegistry,
    framer: Framer,
    cursors: CursorPolicy,
    store: Option<CursorStore>,
    stages: StageRegistry,
}

/// The read engine: adapters, framing and the cursor store, built once.
#[derive(Clone)]
pub struct Pipeline {
    inner: Arc<Inner>,
}

/// Builds a [`Pipeline`].
pub struct Builder {
    registry: AdapterRegistry,
    framer: Framer,
    cursors: CursorPolicy,
    stages: StageRegistry,
}

impl Builder {
    /// The framer (line cap, buffer size); default [`Framer::default`].
    pub fn framer(mut self, framer: Framer) -> Builder {
        self.framer = framer;
        self
    }

    /// The cursor policy; default [`CursorPolicy::Off`].
    pub fn cursors(mut self, cursors: CursorPolicy) -> Builder {
        self.cursors = cursors;
        self
    }

    /// The stages the compositions build for each file and run beside their own
    /// ([`StageRegistry`]); default none.
    pub fn stages(mut self, stages: StageRegistry) -> Builder {
        self.stages = stages;
        self
    }

    /// The pipeline.
    pub fn build(self) -> Pipeline {
        let store = match &self.cursors {
            CursorPolicy::Store { home, durable } => Some(CursorStore::new(home, *durable)),
            CursorPolicy::Off => None,
        };
        Pipeline {
            inner: Arc::new(Inner {
                registry: self.registry,
                framer: self.framer,
                cursors: self.cursors,
                store,
                stages: self.stages,
            }),
        }
    }
}

/// A transcript its caller has opened already, with the bytes read from its start
/// (naming a file reads its head, [`transcope_core::head::Head::into_parts`]), handed
/// to the read that follows: the read goes on from them instead of opening the file
/// and reading its head again. Taken once.
#[derive(Default)]
pub struct Handoff(std::cell::Cell<Option<(File, u64, Vec<u8>)>>);

impl Handoff {
    /// `file`, opened on the transcript as [`open_regular`] opens it (a regular file,
    /// `size` bytes then), and `head`, the bytes read from its offset 0.
    pub fn new((file, size): (File, u64), head: Vec<u8>) -> Handoff {
        Handoff(std::cell::Cell::new(Some((file, size, head))))
    }

    /// The file, its size and its head, once.
    pub fn take(&self) -> Option<(File, u64, Vec<u8>)> {
        self.0.take()
    }
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Handoff")
    }
}

/// One transcript to observe.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The transcript.
    pub path: &'a Path,
    /// The session key it feeds (`None`: none could be established; no cursor).
    pub key: Option<&'a str>,
    /// How a whole-file read reads (a growing file is never mapped).
    pub read: ReadPolicy,
    /// A time limit: a line read stops at the first line boundary past it, and the
    /// cursor handed back covers the lines read, so the next read goes on from there
    /// instead of starting over (a first read of a huge transcript spreads over as
    /// many reads as it needs). `None`: read to the end.
    pub until: Option<std::time::Instant>,
    /// The transcript already opened by the caller, its head read ([`Handoff`]);
    /// `None`: the read opens it.
    pub opened: Option<&'a Handoff>,
    /// The caller commits what the read found after it (an index transaction taking
    /// the session, its markers and its usage), and only then saves the cursor: a read
    /// stopped before that is **read again**, never taken as made. No intent is stored
    /// for such a read, and an intent an earlier read left is resolved to the cursor
    /// before it. Every effect of a read made twice is idempotent (transition ids, the
    /// ledger's idempotency keys, the usage merge rule), so exactly-once needs only
    /// that the cursor never runs ahead of the commit.
    pub committed_after: bool,
    /// Whether the read loads and hands back the key's cursor (a rebuild reads every
    /// file whole for its session without one).
    pub cursor: bool,
}

impl<'a> Request<'a> {
    /// `path` for `key`, read with plain reads, the adapter sniffed.
    pub fn new(path: &'a Path, key: Option<&'a str>) -> Request<'a> {
        Request {
            path,
            key,
            read: ReadPolicy::Read,
            until: None,
            opened: None,
            committed_after: false,
            cursor: true,
        }
    }

    /// The same request read whole for its key, no cursor loaded or kept
    /// ([`Request::cursor`]): the stages still know whose file it is.
    pub fn without_cursor(mut self) -> Request<'a> {
        self.cursor = false;
        self
    }

    /// The same request, its results committed by the caller after the read
    /// ([`Request::committed_after`]).
    pub fn committed_after(mut self, yes: bool) -> Request<'a> {
        self.committed_after = yes;
        self
    }

    /// The same request reading the file `opened` holds ([`Request::opened`]).
    pub fn opened(mut self, opened: Option<&'a Handoff>) -> Request<'a> {
        self.opened = opened;
        self
    }

    /// The same request with a read policy.
    pub fn read(mut self, read: ReadPolicy) -> Request<'a> {
        self.read = read;
        self
    }

    /// The same request with a time limit ([`Request::until`]).
    pub fn until(mut self, until: Option<std::time::Instant>) -> Request<'a> {
        self.until = until;
        self
    }
}

/// What one observation did.
#[derive(Debug, Default)]
pub struct Observation {
    /// Nothing new since the cursor: nothing was read.
    pub up_to_date: bool,
    /// The read started from a saved cursor (the stages' checkpoints restored).
    pub resumed: bool,
    /// A stored intent was resolved (`Some(true)`: its effects were made).
    pub recovered: Option<bool>,
    /// A stage failed to make its effects durable: the old cursor stays.
    pub failed: bool,
    /// What was read.
    pub scan: ScanReport,
    /// The new cursor, to save once the outputs read with it are handed on.
    pub pending: Option<PendingCursor>,
}

impl Observation {
    /// Save the new cursor, if any (a cursor that cannot be saved only costs a read of
    /// the same bytes next time).
    pub fn save(self) -> Result<(), StoreError> {
        match self.pending {
            Some(p) => p.save(),
            None => Ok(()),
        }
    }
}

/// A cursor not yet saved: the caller saves it once everything taken from the bytes
/// it covers has been handed on, so a crash or a failed hand-off before that reads
/// those bytes again (or resolves the intent) next time.
#[derive(Clone)]
pub struct PendingCursor {
    pipeline: Pipeline,
    key: String,
    transcript: PathBuf,
    cursor: Encoded,
}

impl std::fmt::Debug for PendingCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingCursor")
            .field("key", &self.key)
            .field("transcript", &self.transcript)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl PendingCursor {
    /// Save the cursor in the store (a batched store writes it with its batch).
    pub fn save(self) -> Result<(), StoreError> {
        match &self.pipeline.inner.store {
            Some(store) => store.put(&self.key, &self.transcript, self.cursor),
            None => Ok(()),
        }
    }
}

impl Pipeline {
    /// A builder over `registry`.
    pub fn builder(registry: AdapterRegistry) -> Builder {
        Builder {
            registry,
            framer: Framer::default(),
            cursors: CursorPolicy::Off,
            stages: StageRegistry::new(),
        }
    }

    /// The adapters.
    pub fn registry(&self) -> &AdapterRegistry {
        &self.inner.registry
    }

    /// The framer.
    pub fn framer(&self) -> &Framer {
        &self.inner.framer
    }

    /// The cursor policy.
    pub fn cursors(&self) -> &CursorPolicy {
        &self.inner.cursors
    }

    /// The cursor store (`None` with [`CursorPolicy::Off`]).
    pub fn store(&self) -> Option<&CursorStore> {
        self.inner.store.as_ref()
    }

    /// The listed stages: [`Pipeline::observe`] runs only the stages it is given, and
    /// a composition builds these for each file and gives them beside its own.
    pub fn stages(&self) -> &StageRegistry {
        &self.inner.stages
    }

    /// Write the cursors a batched policy still holds (one synced transaction).
    pub fn sync(&self) -> Result<(), StoreError> {
        match &self.inner.store {
            Some(store) => store.flush(),
            None => Ok(()),
        }
    }

    /// Read `req.path` for `req.key` into `stages` (see the crate docs). The stages
    /// are fresh for this file: the engine restores their checkpoints from the cursor
    /// before any entry, calls `begin`, feeds them, then `prepare` and `finish`.
    pub fn observe(
        &self,
        req: &Request<'_>,
        stages: &mut [&mut (dyn Stage + '_)],
        buffers: &mut Buffers,
    ) -> Result<Observation, ScanError> {
        let mut obs = Observation::default();
        // One open serves the cursor's checks, the fingerprint and the read: the
        // caller's, when it opened the file to name it, with the head it read.
        let (file, size, mut known) = match req.opened.and_then(Handoff::take) {
            Some(opened) => opened,
            None => {
                let (file, size) = open_regular(req.path)?;
                (file, size, Vec::new())
            }
        };
        let store = match (&self.inner.store, req.key) {
            (Some(store), Some(key)) if req.cursor => Some(Store { store, key }),
            _ => None,
        };
        // The saved cursor as it is on disk (what the next intent falls back to), and
        // the cursor this read resumes from, its intent resolved. A store that cannot
        // be read is no cursor: the file is read from its start, and saving the new
        // cursor reports the problem.
        let on_disk: Option<Cursor> = store
            .as_ref()
            .and_then(|st| st.store.load(st.key, req.path).ok().flatten());
        let mut saved = on_disk.clone();
        while let Some(mut c) = saved.take() {
            let Some(intent) = c.intent.take() else {
                saved = Some(c);
                break;
            };
            // A caller that commits after the read never counts a stopped read as
            // made: what it found may not have reached the caller's commit.
            let made = !req.committed_after
                && stages
                    .iter_mut()
                    .all(|s| intent.tokens.get(s.name()).is_none_or(|t| s.recover(t)));
            obs.recovered = Some(made);
            if made {
                for s in stages.iter_mut() {
                    if let Some(t) = intent.tokens.get(s.name()) {
                        s.replay(t);
                    }
                }
                saved = Some(c);
                break;
            }
            // Not made: the read before it stands (itself perhaps an intent).
            saved = intent.prev;
        }
        // A session of a container read by its records: no byte offsets, no head.
        if let Some(c) = saved.as_ref().filter(|c| c.records) {
            if let Some(factory) = self.inner.registry.by_name(&c.adapter) {
                let held = Loaded { on_disk, saved };
                return self.observe_records(req, factory, (store, held), obs, stages);
            }
        }
        saved = saved.filter(|c| !c.records && cursor::still_valid(c, &file, size, &mut known));
        // Only a file read whole is told unchanged by its modification time.
        let saved_mtime = saved.as_ref().filter(|c| c.whole).map(|_| mtime_ns(&file));
        if let Some(c) = &saved {
            let unchanged = if c.whole {
                c.size == size && Some(c.mtime_ns) == saved_mtime
            } else {
                c.offset == size
            };
            if unchanged && obs.recovered != Some(true) {
                obs.up_to_date = true;
                return Ok(obs);
            }
        }
        let head_len = size.min(cursor::FINGERPRINT_BYTES);
        let mut source = Source::detect_from(
            req.path,
            (file, size, known),
            &self.inner.registry,
            saved.as_ref().map(|c| c.adapter.as_str()),
            &self.inner.framer,
        )?;
        if let Some(factory) = source.as_ref().and_then(Source::records) {
            let held = Loaded { on_disk, saved };
            return self.observe_records(req, factory, (store, held), obs, stages);
        }
        // The head's fingerprint for the new cursor: the saved one when it covers the
        // same bytes (it was just checked), else of the bytes read to sniff the file,
        // before the file is read.
        let head_sha256 = match (&saved, &source) {
            (Some(c), _) if c.head_len == head_len => Some(c.head_sha256.clone()),
            (_, Some(src)) if store.is_some() => {
                cursor::head_fingerprint(src.file(), head_len, src.head()).ok()
            }
            _ => None,
        };
        // Restore the adapter and every stage, or none: a checkpoint one of them cannot
        // read means a read from the start.
        if let Some(c) = &saved {
            let ok = restore_adapter(c, source.as_mut())
                && stages
                    .iter_mut()
                    .all(|s| s.restore(c.stages.get(s.name()).unwrap_or(&Value::Null)));
            if !ok {
                saved = None;
            }
        }
        obs.resumed = saved.is_some();
        let document = saved.as_ref().is_some_and(|c| c.whole);
        let from = match &saved {
            Some(c) if !document => Resume::from(c),
            _ => Resume::START,
        };
        let whole = source.as_ref().is_some_and(Source::whole);
        let mtime = match (&source, saved_mtime) {
            (Some(src), None) if whole && store.is_some() => src.modified_ns(),
            (_, Some(t)) => t,
            _ => 0,
        };
        let ctx = FileContext {
            path: req.path,
            key: req.key,
            adapter: source.as_ref().map_or("", Source::adapter),
            usage: source.as_ref().map(Source::usage).unwrap_or_default(),
            resumed: obs.resumed,
        };
        for s in stages.iter_mut() {
            s.begin(&ctx);
        }
        let tail = if store.is_some() {
            Tail::DecodeIfComplete
        } else {
            Tail::Decode
        };
        let skip = match &saved {
            Some(c) if document && whole => c.entries,
            _ => 0,
        };
        let mut fan = Fan {
            stages: &mut *stages,
            skip,
            // Only a file read whole is fingerprinted by its entries.
            hash: whole.then(Sha256::new),
            skipped_hash: None,
        };
        obs.scan = match source {
            Some(source) => source.until(req.until).read(
                from,
                &self.inner.framer,
                tail,
                req.read,
                buffers,
                &mut fan,
            )?,
            None => ScanReport {
                resume: from,
                ..ScanReport::default()
            },
        };
        let (hash, skipped_hash) = (fan.hash, fan.skipped_hash);
        // A rewritten document whose first entries changed: read it again whole.
        if let (true, Some(c)) = (document && skip > 0, &saved) {
            if skipped_hash.as_deref() != Some(c.entries_sha256.as_str()) {
                obs.resumed = false;
            }
        }
        let tokens = prepare(stages);
        let next = match (&store, head_sha256) {
            (Some(st), Some(head_sha256)) if !obs.scan.adapter.is_empty() => next_cursor(
                Read {
                    path: req.path,
                    key: st.key,
                    size,
                    mtime,
                    head: (head_len, head_sha256),
                },
                &obs.scan,
                hash,
                // Asked only when a cursor will keep them.
                stages
                    .iter()
                    .map(|s| (s.name().to_owned(), s.checkpoint()))
                    .collect(),
            ),
            _ => None,
        };
        self.conclude(
            req,
            (store.as_ref(), on_disk.as_ref()),
            &mut obs,
            stages,
            &ctx,
            (tokens, next),
        );
        Ok(obs)
    }

    /// What every read ends with, once its entries are fed and each stage's token
    /// taken ([`prepare`]) and its checkpoint put in `next` (the cursor of the read's
    /// end): the intent stored beside the new cursor, `finish`, and the cursor handed
    /// back to be saved (or what was on disk put back when a stage failed).
    fn conclude(
        &self,
        req: &Request<'_>,
        (store, on_disk): (Option<&Store<'_>>, Option<&Cursor>),
        obs: &mut Observation,
        stages: &mut [&mut (dyn Stage + '_)],
        ctx: &FileContext<'_>,
        (tokens, next): (BTreeMap<String, Value>, Option<Cursor>),
    ) {
        // Encoded once, for the intent and the cursor saved after it.
        let next = next.and_then(|n| Encoded::new(&n).ok());
        // The intent: what finish is about to make durable, beside both cursors.
        let journaled = !tokens.is_empty() && !req.committed_after;
        if let (Some(n), Some(st), true) = (&next, store, journaled) {
            let intent = Intent {
                // What stands if this read is stopped: the cursor as it was on disk,
                // its own unresolved intent included.
                prev: on_disk.cloned(),
                tokens,
            };
            // Not synced: a kill (the case it serves) keeps the page cache.
            let _ = st.store.put_intent(st.key, req.path, n, &intent);
        }
        for s in stages.iter_mut() {
            s.finish(ctx);
        }
        obs.failed = stages.iter().any(|s| s.failed());
        if obs.failed {
            // Put back what was on disk: these bytes are read again next time.
            if let Some(st) = store {
                let _ = st.store.reset(st.key, req.path, on_disk);
            }
        } else if let (Some(n), Some(st)) = (next, store) {
            obs.pending = Some(PendingCursor {
                pipeline: self.clone(),
                key: st.key.to_owned(),
                transcript: req.path.to_path_buf(),
                cursor: n,
            });
        }
    }
}

/// Each stage's token of what its `finish` is about to make durable, by stage name
/// (`Null` tokens left out).
fn prepare(stages: &mut [&mut (dyn Stage + '_)]) -> BTreeMap<String, Value> {
    stages
        .iter_mut()
        .map(|s| (s.name().to_owned(), s.prepare()))
        .filter(|(_, t)| !t.is_null())
        .collect()
}

/// Make the adapter of a line read resumed from `c` ready in the state `c` left it in
/// (its [`Adapter::checkpoint`](transcope_core::adapter::Adapter::checkpoint)); `false`
/// when it cannot read that state. A file read whole starts every read afresh.
fn restore_adapter(c: &Cursor, source: Option<&mut Source<'_>>) -> bool {
    match source {
        Some(src) if !c.whole => src.resume_adapter(Resume::from(c), &c.adapter_checkpoint),
        _ => true,
    }
}

/// The cursor a read found: as it is on disk, and the one it resumes from (its intent
/// resolved).
struct Loaded {
    on_disk: Option<Cursor>,
    saved: Option<Cursor>,
}

/// Where one read's cursor lives.
struct Store<'a> {
    store: &'a CursorStore,
    key: &'a str,
}

/// What one read was of: the file as it stood.
struct Read<'a> {
    path: &'a Path,
    key: &'a str,
    size: u64,
    mtime: i128,
    /// The head fingerprint's length and SHA-256 (hex).
    head: (u64, String),
}

/// The cursor after `scan`; `entries` is the fingerprint of the entries given, for a
/// file read whole (whose cursor counts entries, not bytes).
fn next_cursor(
    read: Read<'_>,
    scan: &ScanReport,
    entries: Option<Sha256>,
    stages: BTreeMap<String, Value>,
) -> Option<Cursor> {
    let whole = scan.array;
    if !whole && scan.resume.offset == 0 {
        // Not even a first line is complete: the format was sniffed from part of
        // it. Keep no cursor, so the next read sniffs the whole line.
        return None;
    }
    if whole && scan.entries == 0 && scan.skipped_total() > 0 {
        // A file read whole that did not decode (a rewrite caught half-written): keep
        // the cursor before it, which still counts the entries already given.
        return None;
    }
    let (head_len, head_sha256) = if whole { (0, String::new()) } else { read.head };
    Some(Cursor {
        version: cursor::CURSOR_VERSION,
        session: read.key.to_owned(),
        path: read.path.display().to_string(),
        adapter: scan.adapter.to_owned(),
        offset: if whole { 0 } else { scan.resume.offset },
        line: if whole { 1 } else { scan.resume.line },
        size: read.size,
        mtime_ns: read.mtime,
        head_len,
        head_sha256,
        entries: if whole { scan.entries } else { 0 },
        entries_sha256: match entries {
            Some(h) if whole => transcope_core::digest::hex(&h.finalize()),
            _ => String::new(),
        },
        whole,
        records: false,
        marker: String::new(),
        anchor: String::new(),
        stages,
        adapter_checkpoint: if whole {
            Value::Null
        } else {
            scan.checkpoint.clone()
        },
        intent: None,
    })
}

/// The modification time of `file`, in nanoseconds since the epoch (0 when unknown).
pub(crate) fn mtime_ns(file: &std::fs::File) -> i128 {
    file.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Feeds every stage; for a whole-read file resumed from a cursor, drops the entries an
/// earlier read gave (fingerprinting a file read whole, to notice a rewritten start).
struct Fan<'s, 'a, 'o> {
    stages: &'s mut [&'a mut (dyn Stage + 'o)],
    /// Entries still to drop.
    skip: u64,
    hash: Option<Sha256>,
    skipped_hash: Option<String>,
}

impl EntrySink for Fan<'_, '_, '_> {
    fn entry(&mut self, e: &Entry<'_>) {
        if let Some(h) = &mut self.hash {
            fingerprint(h, e);
        }
        if self.skip > 0 {
            self.skip -= 1;
            if self.skip == 0 {
                self.skipped_hash = self
                    .hash
                    .as_ref()
                    .map(|h| transcope_core::digest::hex(&h.clone().finalize()));
            }
            return;
        }
        for s in self.stages.iter_mut() {
            s.entry(e);
        }
    }

    fn wants(&self, p: &Probe<'_>) -> bool {
        // While skipping, every entry must be decoded to be counted.
        self.skip > 0 || self.stages.iter().any(|s| s.wants(p))
    }
}

fn fingerprint(h: &mut Sha256, e: &Entry<'_>) {
    match &e.time {
        TimeValue::Str(s) | TimeValue::Other(s) => h.update(s.as_bytes()),
        TimeValue::Missing => {}
    }
    h.update([0]);
    for t in &e.texts {
        h.update(t.as_bytes());
        h.update([0]);
    }
    h.update([1]);
}

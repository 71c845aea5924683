//! # transcope-engine: one read engine for every path that observes a transcript
//!
//! A [`Pipeline`] is built once from an [`AdapterRegistry`], a [`Framer`] and a
//! [`CursorPolicy`], and is cheap to clone per worker (its parts are shared). Its
//! [`Pipeline::observe`] reads one transcript for one session key and feeds the
//! entries to the [`Stage`]s it is given, in one pass:
//!
//! ```text
//! cursor store ──load──► restore each stage's checkpoint ──► resolve an intent
//!      │                                                        │
//!      ▼                                                        ▼
//! file ──framing (lines | document)──► adapter ──entries──► stages (wants → entry)
//!                                                               │
//!      ┌───────────────── prepare (tokens) ◄────────────────────┘
//!      ▼
//! intent stored ──► finish (effects made durable) ──► PendingCursor (caller saves it
//!                                                      once it has handed on outputs)
//! ```
//!
//! `observe`, a hook's Stop and `backfill` are thin compositions over it: they differ
//! only in the stages they pass, the tail policy, and when they save the cursor. With
//! the cursor store on, the bytes of a transcript are observed once: observing the same
//! bytes again does nothing, and appended bytes are observed as if the file had been
//! read in one pass ([`cursor`] has the details, kill safety included).
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
pub mod scan;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};
use transcope_core::adapter::{AdapterRegistry, EntrySink, Probe};
use transcope_core::stage::{FileContext, Stage};
use transcope_core::{Entry, TimeValue};
use transcope_jsonl::{Framer, ReadPolicy};

pub use cursor::{Cursor, Intent};
pub use scan::{open_regular, Buffers, Resume, ScanError, ScanReport, Tail};

/// Where a pipeline keeps its cursors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CursorPolicy {
    /// None: every read is a whole read from the start (`observe --full`, the
    /// reference's algorithm).
    Off,
    /// Under `<home>/transcope/cursors/`.
    Store {
        /// The agentihooks home.
        home: PathBuf,
        /// `fsync` each saved cursor (a hook); a batch passes `false` and syncs once
        /// per batch ([`Pipeline::sync`]).
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

    /// The pipeline.
    pub fn build(self) -> Pipeline {
        Pipeline {
            inner: Arc::new(Inner {
                registry: self.registry,
                framer: self.framer,
                cursors: self.cursors,
            }),
        }
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
    /// The adapter, when the caller already knows it (else sniffed).
    pub adapter: Option<&'a str>,
}

impl<'a> Request<'a> {
    /// `path` for `key`, read with plain reads, the adapter sniffed.
    pub fn new(path: &'a Path, key: Option<&'a str>) -> Request<'a> {
        Request {
            path,
            key,
            read: ReadPolicy::Read,
            adapter: None,
        }
    }

    /// The same request with a read policy.
    pub fn read(mut self, read: ReadPolicy) -> Request<'a> {
        self.read = read;
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
    pub fn save(self) -> std::io::Result<()> {
        match self.pending {
            Some(p) => p.save(),
            None => Ok(()),
        }
    }
}

/// A cursor not yet saved: the caller saves it once everything taken from the bytes
/// it covers has been handed on, so a crash or a failed hand-off before that reads
/// those bytes again (or resolves the intent) next time.
#[derive(Clone, Debug)]
pub struct PendingCursor {
    path: PathBuf,
    cursor: Cursor,
    durable: bool,
}

impl PendingCursor {
    /// Write the cursor (atomically, see [`cursor::save`]).
    pub fn save(self) -> std::io::Result<()> {
        cursor::save(&self.path, &self.cursor, self.durable)
    }
}

impl Pipeline {
    /// A builder over `registry`.
    pub fn builder(registry: AdapterRegistry) -> Builder {
        Builder {
            registry,
            framer: Framer::default(),
            cursors: CursorPolicy::Off,
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

    /// Flush cursors saved with a batched policy (one `syncfs` for the batch).
    pub fn sync(&self) -> std::io::Result<()> {
        match &self.inner.cursors {
            CursorPolicy::Store { home, .. } => {
                let dir = cursor::cursors_dir(home);
                if dir.is_dir() {
                    transcope_jsonl::sync_filesystem(&dir)
                } else {
                    Ok(())
                }
            }
            CursorPolicy::Off => Ok(()),
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
        let store = match (&self.inner.cursors, req.key) {
            (CursorPolicy::Store { home, durable }, Some(key)) => {
                let (_, size) = open_regular(req.path)?;
                Some((
                    cursor::cursor_path(home, key, req.path),
                    size,
                    *durable,
                    key,
                ))
            }
            _ => None,
        };
        // The saved cursor as it is on disk (what the next intent falls back to), and
        // the cursor this read resumes from, its intent resolved.
        let on_disk: Option<Cursor> = store
            .as_ref()
            .and_then(|(file, _, _, key)| cursor::load(file).filter(|c| c.session == *key));
        let mut saved = on_disk.clone();
        while let Some(mut c) = saved.take() {
            let Some(intent) = c.intent.take() else {
                saved = Some(c);
                break;
            };
            let made = stages
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
        if let Some((_, size, _, _)) = &store {
            saved = saved.filter(|c| cursor::still_valid(c, req.path, *size));
        }
        let mtime = mtime_ns(req.path);
        let document = saved.as_ref().is_some_and(|c| c.whole);
        if let (Some(c), Some((_, size, _, _))) = (&saved, &store) {
            let unchanged = if document {
                c.size == *size && c.mtime_ns == mtime
            } else {
                c.offset == *size
            };
            if unchanged && obs.recovered != Some(true) {
                obs.up_to_date = true;
                return Ok(obs);
            }
        }
        // Restore every stage, or none: a checkpoint a stage cannot read means a read
        // from the start.
        if let Some(c) = &saved {
            let ok = stages
                .iter_mut()
                .all(|s| s.restore(c.stages.get(s.name()).unwrap_or(&Value::Null)));
            if !ok {
                saved = None;
            }
        }
        obs.resumed = saved.is_some();
        let from = match &saved {
            Some(c) if !document => c.resume(),
            _ => Resume::START,
        };
        let adapter = req
            .adapter
            .or(saved.as_ref().map(|c| c.adapter.as_str()))
            .and_then(|n| self.inner.registry.by_name(n))
            .map(|f| f.name());
        let ctx_adapter = adapter.unwrap_or("");
        {
            let ctx = FileContext {
                path: req.path,
                key: req.key,
                adapter: ctx_adapter,
                resumed: obs.resumed,
            };
            for s in stages.iter_mut() {
                s.begin(&ctx);
            }
        }
        let tail = if store.is_some() {
            Tail::DecodeIfComplete
        } else {
            Tail::Decode
        };
        let skip = match &saved {
            Some(c) if document => c.entries,
            _ => 0,
        };
        let mut fan = Fan {
            stages: &mut *stages,
            skip,
            given: 0,
            hash: Sha256::new(),
            skipped_hash: None,
        };
        obs.scan = scan::scan_file_with(
            req.path,
            from,
            &self.inner.registry,
            adapter,
            &self.inner.framer,
            tail,
            req.read,
            buffers,
            &mut fan,
        )?;
        let (given, hash, skipped_hash) = (fan.given, fan.hash, fan.skipped_hash);
        // A rewritten document whose first entries changed: read it again whole.
        if let (true, Some(c)) = (document && skip > 0, &saved) {
            if skipped_hash.as_deref() != Some(c.entries_sha256.as_str()) {
                obs.resumed = false;
            }
        }
        let ctx = FileContext {
            path: req.path,
            key: req.key,
            adapter: obs.scan.adapter,
            resumed: obs.resumed,
        };
        let tokens: BTreeMap<String, Value> = stages
            .iter_mut()
            .map(|s| (s.name().to_owned(), s.prepare()))
            .filter(|(_, t)| !t.is_null())
            .collect();
        let checkpoints: BTreeMap<String, Value> = stages
            .iter()
            .map(|s| (s.name().to_owned(), s.checkpoint()))
            .collect();
        let next = match &store {
            Some((_, size, _, key)) if !obs.scan.adapter.is_empty() => next_cursor(
                Read {
                    path: req.path,
                    key,
                    size: *size,
                    mtime,
                    document,
                },
                &obs.scan,
                (given, hash),
                checkpoints,
            ),
            _ => None,
        };
        // The intent: what finish is about to make durable, beside both cursors.
        if let (Some(n), Some((file, _, _, _)), false) = (&next, &store, tokens.is_empty()) {
            let mut with_intent = n.clone();
            with_intent.intent = Some(Box::new(Intent {
                // What stands if this read is stopped: the cursor as it was on disk,
                // its own unresolved intent included.
                prev: on_disk.clone(),
                tokens,
            }));
            // Not synced: a kill (the case it serves) keeps the page cache.
            let _ = cursor::save(file, &with_intent, false);
        }
        for s in stages.iter_mut() {
            s.finish(&ctx);
        }
        obs.failed = stages.iter().any(|s| s.failed());
        if obs.failed {
            // Put back what was on disk: these bytes are read again next time.
            if let Some((file, _, durable, _)) = &store {
                let _ = match &on_disk {
                    Some(c) => cursor::save(file, c, *durable),
                    None => std::fs::remove_file(file).or_else(|e| {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    }),
                };
            }
        } else {
            if let (Some(n), Some((file, _, durable, _))) = (next, store) {
                obs.pending = Some(PendingCursor {
                    path: file,
                    cursor: n,
                    durable,
                });
            }
        }
        Ok(obs)
    }
}

/// What one read was of: the file as it stood, and its framing.
struct Read<'a> {
    path: &'a Path,
    key: &'a str,
    size: u64,
    mtime: i128,
    document: bool,
}

/// The cursor after `scan`: `entries` is how many entries were given and their
/// fingerprint (for a file read whole).
fn next_cursor(
    read: Read<'_>,
    scan: &ScanReport,
    entries: (u64, Sha256),
    stages: BTreeMap<String, Value>,
) -> Option<Cursor> {
    let Read {
        path,
        key,
        size,
        mtime,
        document,
    } = read;
    let (given, hash) = entries;
    let whole = document || scan.array;
    if !whole && scan.resume.offset == 0 {
        // Not even a first line is complete: the format was sniffed from part of
        // it. Keep no cursor, so the next read sniffs the whole line.
        return None;
    }
    let head_len = if whole {
        0
    } else {
        size.min(cursor::FINGERPRINT_BYTES)
    };
    let head_sha256 = if whole {
        String::new()
    } else {
        cursor::head_fingerprint(path, head_len).ok()?
    };
    Some(Cursor {
        version: cursor::CURSOR_VERSION,
        session: key.to_owned(),
        path: path.display().to_string(),
        adapter: scan.adapter.to_owned(),
        offset: if whole { 0 } else { scan.resume.offset },
        line: if whole { 1 } else { scan.resume.line },
        size,
        mtime_ns: mtime,
        head_len,
        head_sha256,
        entries: if whole { given } else { 0 },
        entries_sha256: if whole {
            cursor::hex(&hash.finalize())
        } else {
            String::new()
        },
        whole,
        stages,
        intent: None,
    })
}

fn mtime_ns(path: &Path) -> i128 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// Feeds every stage; for a whole-read file resumed from a cursor, drops the entries an
/// earlier read gave (fingerprinting them, to notice a rewritten start).
struct Fan<'s, 'a, 'o> {
    stages: &'s mut [&'a mut (dyn Stage + 'o)],
    skip: u64,
    given: u64,
    hash: Sha256,
    skipped_hash: Option<String>,
}

impl EntrySink for Fan<'_, '_, '_> {
    fn entry(&mut self, e: &Entry<'_>) {
        self.given += 1;
        fingerprint(&mut self.hash, e);
        if self.given <= self.skip {
            if self.given == self.skip {
                self.skipped_hash = Some(cursor::hex(&self.hash.clone().finalize()));
            }
            return;
        }
        for s in self.stages.iter_mut() {
            s.entry(e);
        }
    }

    fn wants(&self, p: &Probe<'_>) -> bool {
        // While skipping, every entry must be decoded to be counted.
        self.skip > self.given || self.stages.iter().any(|s| s.wants(p))
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

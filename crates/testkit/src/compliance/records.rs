//! The records kit: [`RecordsKit`] over a [`Container`] of many sessions' records (a
//! database), for a format framed as
//! [`Framing::Records`](transcope_core::adapter::Framing::Records).
//!
//! A container is not a file of lines, so the kit cannot cut it at bytes: the adapter's
//! test says how to write one ([`Container`]: a session's first `k` records, one
//! transaction each; a record still being written; a record's JSON replaced), and the
//! kit reads it through the engine with the real cursor store:
//!
//! * **sniff**: the factory is certain of the container from its head, the registry
//!   picks it, it frames it as records, its source lists the sessions written; no
//!   other registered factory is certain of it, no other layout claims it;
//! * **pieces**: every session written one record at a time, read after each write
//!   (the sessions interleaved), gives the one pass's entries, and one more read gives
//!   none;
//! * **being written**: a session's last record left half-written is not passed (the
//!   cursor stops before it), and once complete it is read, the total the one pass's;
//! * **every one-byte change** of a record's JSON (three substitutes at every byte of
//!   the records just before the last, never the last): no panic, every record still counted, at
//!   most one skip, and the entries of the records before it unchanged (those after
//!   may follow it: an adapter may carry a record's folder to the next).

use std::collections::BTreeMap;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use transcope_core::adapter::{AdapterRegistry, Framing};
use transcope_core::Entry;
use transcope_engine::scan::first_line;
use transcope_engine::{Buffers, CursorPolicy, Pipeline, Request, ScanReport};

use super::adapter::Collect;
use super::{first_difference, Check, Violation};

/// A container the kit can write, as its agent writes it (see the module docs).
pub trait Container {
    /// The container's file.
    fn path(&self) -> &Path;
    /// Each session's key and how many records it has in full.
    fn sessions(&self) -> Vec<(String, usize)>;
    /// Make `key`'s first `upto` records present (those before already are), in one
    /// transaction.
    fn write(&mut self, key: &str, upto: usize) -> io::Result<()>;
    /// Make `key`'s record `ordinal` present but still being written.
    fn writing(&mut self, key: &str, ordinal: usize) -> io::Result<()>;
    /// The JSON of `key`'s record `ordinal`, as stored.
    fn row(&self, key: &str, ordinal: usize) -> io::Result<Vec<u8>>;
    /// Replace it.
    fn set_row(&mut self, key: &str, ordinal: usize, json: &[u8]) -> io::Result<()>;
}

/// What a [`RecordsKit::check`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordsReport {
    /// Sessions checked.
    pub sessions: usize,
    /// Records of the one pass.
    pub records: u64,
    /// Entries of the one pass.
    pub entries: u64,
    /// Reads through the engine.
    pub reads: u64,
    /// One-byte changes read.
    pub mutations: u64,
}

/// Checks one records-framed adapter (see the module docs).
pub struct RecordsKit<'r> {
    name: &'static str,
    registry: Box<dyn Fn() -> AdapterRegistry + 'r>,
    rows: usize,
}

/// One read: the entries and the scan.
type Read = (Vec<Entry<'static>>, ScanReport, bool);

impl<'r> RecordsKit<'r> {
    /// The kit for the adapter named `name` among the factories `registry` builds.
    pub fn new(name: &'static str, registry: impl Fn() -> AdapterRegistry + 'r) -> Self {
        RecordsKit {
            name,
            registry: Box::new(registry),
            rows: 2,
        }
    }

    /// How many of a session's records (those just before its last) get every one-byte
    /// change (default 2).
    pub fn mutated_rows(mut self, n: usize) -> Self {
        self.rows = n;
        self
    }

    fn fail(
        &self,
        check: Check,
        subject: impl Into<String>,
        detail: impl Into<String>,
    ) -> Violation {
        Violation {
            check,
            subject: subject.into(),
            detail: detail.into(),
        }
    }

    fn setup(&self, e: impl std::fmt::Display) -> Violation {
        self.fail(Check::Setup, self.name, e.to_string())
    }

    /// Check the containers `make` writes (each call a fresh, empty one in the folder
    /// it is given: its sessions there, no records yet).
    pub fn check<C: Container>(
        &self,
        make: impl Fn(&Path) -> io::Result<C>,
    ) -> Result<RecordsReport, Violation> {
        let tmp = tempfile::tempdir().map_err(|e| self.setup(e))?;
        let world = |n: &str| -> Result<(C, Pipeline), Violation> {
            let dir = tmp.path().join(n);
            std::fs::create_dir_all(&dir).map_err(|e| self.setup(e))?;
            let c = make(&dir).map_err(|e| self.setup(e))?;
            let p = Pipeline::builder((self.registry)())
                .cursors(CursorPolicy::store(dir.join("home")))
                .build();
            Ok((c, p))
        };
        let mut report = RecordsReport::default();

        // One pass, after every record is written.
        let (mut full, pipeline) = world("one")?;
        let sessions = full.sessions();
        for (key, n) in &sessions {
            full.write(key, *n).map_err(|e| self.setup(e))?;
        }
        self.sniff(full.path(), &sessions)?;
        let mut one: BTreeMap<String, Vec<Entry<'static>>> = BTreeMap::new();
        for (key, _) in &sessions {
            let (entries, scan, _) = self.read(&pipeline, full.path(), key, &mut report)?;
            report.records += scan.lines;
            report.entries += entries.len() as u64;
            one.insert(key.clone(), entries);
        }
        if report.entries == 0 {
            return Err(self.fail(Check::Fixture, self.name, "the container gives no entries"));
        }
        report.sessions = sessions.len();

        // In pieces: one record a transaction, every session read after each.
        let (mut c, pipeline) = world("pieces")?;
        let mut got: BTreeMap<String, Vec<Entry<'static>>> = BTreeMap::new();
        let most = sessions.iter().map(|s| s.1).max().unwrap_or(0);
        for k in 1..=most {
            for (key, n) in sessions.iter().filter(|s| s.1 >= k) {
                c.write(key, k).map_err(|e| self.setup(e))?;
                let (entries, _, _) = self.read(&pipeline, c.path(), key, &mut report)?;
                got.entry(key.clone()).or_default().extend(entries);
                let _ = n;
            }
        }
        for (key, _) in &sessions {
            let (entries, _, up_to_date) = self.read(&pipeline, c.path(), key, &mut report)?;
            if !entries.is_empty() || !up_to_date {
                return Err(self.fail(
                    Check::Twice,
                    key.as_str(),
                    format!("{} entries read again", entries.len()),
                ));
            }
            let want = &one[key];
            let had = got.get(key).map(Vec::as_slice).unwrap_or(&[]);
            if let Some(d) = first_difference(want, had) {
                return Err(self.fail(
                    Check::Chunks,
                    format!("{key}: one record a transaction"),
                    d,
                ));
            }
        }

        // The last record being written.
        let (mut c, pipeline) = world("writing")?;
        for (key, n) in sessions.iter().filter(|s| s.1 > 0) {
            c.write(key, n - 1).map_err(|e| self.setup(e))?;
            c.writing(key, n - 1).map_err(|e| self.setup(e))?;
            let (mut entries, scan, _) = self.read(&pipeline, c.path(), key, &mut report)?;
            if scan.resume.offset != (n - 1) as u64 {
                return Err(self.fail(
                    Check::LineSplits,
                    format!("{key}: record {} being written", n - 1),
                    format!("the cursor is at {}, not before it", scan.resume.offset),
                ));
            }
            c.write(key, *n).map_err(|e| self.setup(e))?;
            let (rest, _, _) = self.read(&pipeline, c.path(), key, &mut report)?;
            entries.extend(rest);
            if let Some(d) = first_difference(&one[key], &entries) {
                return Err(self.fail(Check::LineSplits, format!("{key}: completed later"), d));
            }
        }

        // Every one-byte change of the records before the last, read whole (no cursors).
        let whole = Pipeline::builder((self.registry)()).build();
        for (key, n) in &sessions {
            let last = n.saturating_sub(1);
            for ordinal in last.saturating_sub(self.rows)..last {
                let row = full.row(key, ordinal).map_err(|e| self.setup(e))?;
                let before: Vec<&Entry<'static>> = one[key]
                    .iter()
                    .filter(|e| e.line <= ordinal as u64)
                    .collect();
                for i in 0..row.len() {
                    for sub in [b'x', b'"', 0xff] {
                        if row[i] == sub {
                            continue;
                        }
                        let mut bad = row.clone();
                        bad[i] = sub;
                        full.set_row(key, ordinal, &bad)
                            .map_err(|e| self.setup(e))?;
                        report.mutations += 1;
                        let case = format!("{key}: record {ordinal}, byte {i} set to {sub:#04x}");
                        let read = catch_unwind(AssertUnwindSafe(|| {
                            self.read(&whole, full.path(), key, &mut RecordsReport::default())
                        }))
                        .map_err(|_| self.fail(Check::Skips, case.as_str(), "panicked"))??;
                        let (entries, scan, _) = read;
                        if scan.lines != *n as u64 || scan.skipped_total() > 1 {
                            return Err(self.fail(
                                Check::Skips,
                                case,
                                format!(
                                    "{} records seen of {n}, {} skipped",
                                    scan.lines,
                                    scan.skipped_total()
                                ),
                            ));
                        }
                        let kept: Vec<&Entry<'static>> = entries
                            .iter()
                            .filter(|e| e.line <= ordinal as u64)
                            .collect();
                        if let Some(d) = first_difference(&before, &kept) {
                            return Err(self.fail(Check::Skips, case, d));
                        }
                    }
                }
                full.set_row(key, ordinal, &row)
                    .map_err(|e| self.setup(e))?;
            }
        }
        Ok(report)
    }

    /// The factory is certain of the container, the registry picks it and frames it
    /// as records, its source lists the sessions; no other factory or layout takes it.
    fn sniff(&self, path: &Path, sessions: &[(String, usize)]) -> Result<(), Violation> {
        let registry = (self.registry)();
        let subject = path.display().to_string();
        let head = std::fs::read(path).map_err(|e| self.setup(e))?;
        let line = first_line(&head[..head.len().min(64 * 1024)]);
        let picked = registry.detect(path, line).map(|f| f.name());
        if picked != Some(self.name) {
            return Err(self.fail(
                Check::Sniff,
                subject,
                format!("the registry picks {picked:?}"),
            ));
        }
        for f in registry.factories() {
            let own = f.name() == self.name;
            let certain = f.sniff(path, line) == Some(transcope_core::adapter::Confidence::Certain);
            let claims = f.layout().is_some_and(|l| l.claims(path));
            if !own && (certain || claims) {
                return Err(self.fail(Check::Sniff, subject, format!("{} takes it too", f.name())));
            }
        }
        let factory = registry
            .by_name(self.name)
            .ok_or_else(|| self.setup("no such adapter"))?;
        if factory.framing(path) != Framing::Records {
            return Err(self.fail(Check::Framing, subject, "not framed as records"));
        }
        let mut listed: Vec<String> = factory
            .records(path)
            .and_then(|mut s| s.sessions())
            .map_err(|e| self.fail(Check::Framing, subject.as_str(), e.to_string()))?
            .into_iter()
            .map(|h| h.key)
            .collect();
        listed.sort();
        let mut want: Vec<String> = sessions.iter().map(|s| s.0.clone()).collect();
        want.sort();
        if listed != want {
            return Err(self.fail(
                Check::Framing,
                subject,
                format!("lists {listed:?}, not {want:?}"),
            ));
        }
        Ok(())
    }

    /// One read of `key` through `pipeline`, its cursor saved.
    fn read(
        &self,
        pipeline: &Pipeline,
        path: &Path,
        key: &str,
        report: &mut RecordsReport,
    ) -> Result<Read, Violation> {
        report.reads += 1;
        let mut collect = Collect::default();
        let obs = pipeline
            .observe(
                &Request::new(path, Some(key)),
                &mut [&mut collect],
                &mut Buffers::default(),
            )
            .map_err(|e| self.fail(Check::Setup, key, format!("the engine failed: {e}")))?;
        let scan = obs.scan.clone();
        let up_to_date = obs.up_to_date;
        obs.save().map_err(|e| self.setup(e))?;
        Ok((collect.0, scan, up_to_date))
    }
}

//! The adapter kit: [`AdapterKit`] over [`Fixture`] files.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use serde_json::Value;
use transcope_core::adapter::{AdapterFactory, AdapterRegistry, EntrySink, Framing, Skip};
use transcope_core::{Entry, Stage};
use transcope_engine::scan::first_line;
use transcope_engine::{Buffers, CursorPolicy, Pipeline, Request, ScanReport};

use super::{first_difference, garbage_checkpoints, Check, Violation};
use crate::decode::decode_bytes;
use crate::Rng;

/// The session key the kit's reads use.
const KEY: &str = "compliance";

/// Garbage records inserted between lines, each with the reason the
/// [`Skip`] contract gives it.
const GARBAGE: [(&[u8], Skip); 6] = [
    (b"{\"torn\": [1, 2", Skip::InvalidJson),
    (b"[1, 2, 3]", Skip::NotObject),
    (b"\"just a string\"", Skip::NotObject),
    (b"\xff\xfe not UTF-8 {}", Skip::InvalidUtf8),
    (b" \t ", Skip::Blank),
    (b"1234567", Skip::NotObject),
];

/// One fixture file of an adapter's format, and how it is framed.
#[derive(Clone, Debug)]
pub struct Fixture {
    path: PathBuf,
    framing: Framing,
    /// A document's array that grows as the session does.
    grows: Option<String>,
    /// A folder holding the file, copied around it for every read.
    root: Option<PathBuf>,
    /// Where in a run's folder the file is read (its own name otherwise).
    at: Option<PathBuf>,
}

impl Fixture {
    /// A line-framed file ([`Framing::Lines`]).
    pub fn lines(path: impl Into<PathBuf>) -> Fixture {
        Fixture {
            path: path.into(),
            framing: Framing::Lines,
            grows: None,
            root: None,
            at: None,
        }
    }

    /// A document ([`Framing::Document`]) whose top-level array `key` grows as the
    /// session does (Gemini CLI's `messages`): the kit writes it with the first `k`
    /// elements for every `k`, each version over the last.
    pub fn document(path: impl Into<PathBuf>, key: &str) -> Fixture {
        Fixture {
            path: path.into(),
            framing: Framing::Document,
            grows: Some(key.to_owned()),
            root: None,
            at: None,
        }
    }

    /// Read the file inside a copy of `root`, the folder that holds it, for a format
    /// whose adapter looks beside the file (Gemini CLI's `.project_root` and
    /// `projects.json`). Without it the file is read alone.
    pub fn within(mut self, root: impl Into<PathBuf>) -> Fixture {
        self.root = Some(root.into());
        self
    }

    /// Read the file at `rel` inside a run's folder instead of under its own name, for
    /// a format that sniffs names (a Gemini CLI document is `chats/session-*.json`).
    pub fn at(mut self, rel: impl Into<PathBuf>) -> Fixture {
        self.at = Some(rel.into());
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// What an [`AdapterKit::check`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdapterReport {
    /// Fixtures checked.
    pub fixtures: usize,
    /// Reads through the engine.
    pub reads: u64,
    /// Entries of the fixtures' one passes.
    pub entries: u64,
    /// Resume points compared with one pass (line boundaries, byte cuts, chunk
    /// boundaries, document versions).
    pub splits: u64,
}

/// Checks one adapter over its fixtures (see the [module docs](super)).
///
/// ```
/// use transcope_testkit::compliance::{AdapterKit, Fixture};
/// let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
///     .join("../../testdata/public/codex/lanegrid__agtrace__rollout-2025-11-20-basic.jsonl");
/// let report = AdapterKit::new("codex", transcope_testkit::engine::adapters)
///     .cuts(8)
///     .check(&[Fixture::lines(fixture)])
///     .unwrap();
/// assert!(report.entries > 0 && report.splits > 8);
/// ```
pub struct AdapterKit<'r> {
    name: &'static str,
    registry: Box<dyn Fn() -> AdapterRegistry + 'r>,
    cuts: usize,
    chunks: usize,
    seed: u64,
    garbage: Vec<Value>,
}

impl<'r> AdapterKit<'r> {
    /// The kit for the adapter named `name` among the factories `registry` builds (its
    /// detection must pick that adapter for each fixture).
    pub fn new(name: &'static str, registry: impl Fn() -> AdapterRegistry + 'r) -> Self {
        AdapterKit {
            name,
            registry: Box::new(registry),
            cuts: 32,
            chunks: 16,
            seed: 0x5eed_c0de,
            garbage: garbage_checkpoints(),
        }
    }

    /// Values the adapter must refuse as its checkpoint (default
    /// [`garbage_checkpoints`]).
    pub fn garbage(mut self, values: Vec<Value>) -> Self {
        self.garbage = values;
        self
    }

    /// Byte cuts tried per line-framed fixture (default 32), spread over the kinds of
    /// place (before a newline, inside a UTF-8 character, at a line start, anywhere).
    /// They are tried in one run of appended pieces; on a difference, one by one.
    pub fn cuts(mut self, n: usize) -> Self {
        self.cuts = n;
        self
    }

    /// Pieces of the many-pieces runs (default 16).
    pub fn chunks(mut self, n: usize) -> Self {
        self.chunks = n.max(2);
        self
    }

    /// Check every fixture; the first [`Violation`] stops the check.
    pub fn check(&self, fixtures: &[Fixture]) -> Result<AdapterReport, Violation> {
        let mut report = AdapterReport::default();
        for fx in fixtures {
            Case::new(self, fx)?.run(&mut report)?;
            report.fixtures += 1;
        }
        Ok(report)
    }

    fn pipeline(&self, home: &Path) -> Pipeline {
        Pipeline::builder((self.registry)())
            .cursors(CursorPolicy::batched(home))
            .build()
    }
}

/// Collects every entry the engine gives, as an owned value.
#[derive(Default)]
pub(super) struct Collect(pub(super) Vec<Entry<'static>>);

impl EntrySink for Collect {
    fn entry(&mut self, e: &Entry<'_>) {
        self.0.push(e.to_static());
    }
}

impl Stage for Collect {
    fn name(&self) -> &'static str {
        "compliance-collect"
    }
}

/// One read through the engine.
struct Seen {
    entries: Vec<Entry<'static>>,
    scan: ScanReport,
}

/// What a run of appended pieces of `data` must give: `one`, the one pass's; a
/// difference is a violation of `check`.
#[derive(Clone, Copy)]
struct Against<'a> {
    data: &'a [u8],
    one: &'a Run,
    check: Check,
}

/// The entries and skips a run of reads gave, summed.
#[derive(Default)]
struct Run {
    entries: Vec<Entry<'static>>,
    skips: BTreeMap<&'static str, u64>,
}

impl Run {
    fn add(&mut self, seen: Seen) {
        self.entries.extend(seen.entries);
        add_skips(&mut self.skips, &seen.scan);
    }
}

fn add_skips(to: &mut BTreeMap<&'static str, u64>, scan: &ScanReport) {
    for (s, n) in &scan.skipped {
        *to.entry(s.as_str()).or_insert(0) += n;
    }
}

/// One fixture under check: its bytes, a temporary home, and its one pass.
struct Case<'k> {
    kit: &'k AdapterKit<'k>,
    fx: &'k Fixture,
    data: Vec<u8>,
    home: tempfile::TempDir,
    pipeline: Pipeline,
    places: usize,
    reads: u64,
    rng: Rng,
}

impl<'k> Case<'k> {
    fn new(kit: &'k AdapterKit<'k>, fx: &'k Fixture) -> Result<Case<'k>, Violation> {
        let subject = fx.path.display().to_string();
        let data = fs::read(&fx.path).map_err(|e| Violation {
            check: Check::Fixture,
            subject: subject.clone(),
            detail: format!("unreadable: {e}"),
        })?;
        let home = tempfile::tempdir().map_err(|e| Violation {
            check: Check::Setup,
            subject,
            detail: format!("no temporary folder: {e}"),
        })?;
        Ok(Case {
            pipeline: kit.pipeline(home.path()),
            kit,
            fx,
            data,
            home,
            places: 0,
            reads: 0,
            rng: Rng::new(kit.seed),
        })
    }

    fn fail(&self, check: Check, case: &str, detail: impl Into<String>) -> Violation {
        let mut subject = self.fx.path.display().to_string();
        if !case.is_empty() {
            subject = format!("{subject} ({case})");
        }
        Violation {
            check,
            subject,
            detail: detail.into(),
        }
    }

    fn setup(&self, e: io::Error) -> Violation {
        self.fail(Check::Setup, "", e.to_string())
    }

    /// A fresh place for the file (inside a fresh copy of its root when it has one),
    /// holding `bytes`.
    fn place(&mut self, bytes: &[u8]) -> Result<PathBuf, Violation> {
        self.places += 1;
        let dir = self.home.path().join("runs").join(self.places.to_string());
        let path = match &self.fx.root {
            Some(root) => {
                let rel = self.fx.path.strip_prefix(root).map_err(|_| {
                    self.fail(Check::Setup, "", format!("not under {}", root.display()))
                })?;
                copy_tree(root, &dir, &self.fx.path).map_err(|e| self.setup(e))?;
                dir.join(rel)
            }
            None => match &self.fx.at {
                Some(rel) => dir.join(rel),
                None => dir.join(self.fx.path.file_name().unwrap_or("fixture".as_ref())),
            },
        };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| self.setup(e))?;
        }
        fs::write(&path, bytes).map_err(|e| self.setup(e))?;
        Ok(path)
    }

    /// Append `bytes` to the file at `path`.
    fn append(&self, path: &Path, bytes: &[u8]) -> Result<(), Violation> {
        fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes))
            .map_err(|e| self.setup(e))
    }

    /// One read of `path` through the engine, its cursor saved.
    fn observe(&mut self, path: &Path) -> Result<Seen, Violation> {
        self.reads += 1;
        let mut collect = Collect::default();
        let obs = self
            .pipeline
            .observe(
                &Request::new(path, Some(KEY)),
                &mut [&mut collect],
                &mut Buffers::default(),
            )
            .map_err(|e| self.fail(Check::Setup, "", format!("the engine failed: {e}")))?;
        let scan = obs.scan.clone();
        obs.save().map_err(|e| self.setup(e.into()))?;
        Ok(Seen {
            entries: collect.0,
            scan,
        })
    }

    fn run(mut self, report: &mut AdapterReport) -> Result<(), Violation> {
        let data = self.data.clone();
        let path = self.place(&data)?;
        self.sniff(&path)?;
        let (one, scan) = self.one_pass(&path)?;
        report.entries += one.entries.len() as u64;
        self.adapter_state()?;
        report.splits += match self.fx.framing {
            Framing::Lines => self.line_framed(&one, &scan)?,
            Framing::Document => self.growth(&one)?,
            // No fixture file is a container: containers have a kit of their own.
            Framing::Records => 0,
        };
        report.reads += self.reads;
        Ok(())
    }

    /// (a) The factory claims its fixture (placed at `path` as every read places it),
    /// the registry picks it, and it frames it as declared.
    fn sniff(&self, path: &Path) -> Result<(), Violation> {
        let registry = (self.kit.registry)();
        let factory = self.factory(&registry)?;
        let first = first_line(&self.data);
        if factory.sniff(path, first).is_none() {
            return Err(self.fail(
                Check::Sniff,
                "",
                "the factory does not claim its own fixture",
            ));
        }
        match registry.detect(path, first) {
            Some(f) if f.name() == self.kit.name => {}
            other => {
                return Err(self.fail(
                    Check::Sniff,
                    "",
                    format!("the registry picks {:?}", other.map(AdapterFactory::name)),
                ))
            }
        }
        let framing = factory.framing(path);
        if framing != self.fx.framing {
            return Err(self.fail(
                Check::Framing,
                "",
                format!("framed {framing:?}, declared {:?}", self.fx.framing),
            ));
        }
        Ok(())
    }

    fn factory<'a>(
        &self,
        registry: &'a AdapterRegistry,
    ) -> Result<&'a dyn AdapterFactory, Violation> {
        registry.by_name(self.kit.name).ok_or_else(|| {
            self.fail(
                Check::Setup,
                "",
                format!("no factory named {:?} in the registry", self.kit.name),
            )
        })
    }

    /// The engine's one pass over the whole file, checked against the framing alone;
    /// reading it again gives nothing.
    fn one_pass(&mut self, path: &Path) -> Result<(Run, ScanReport), Violation> {
        let seen = self.observe(path)?;
        if seen.scan.adapter != self.kit.name {
            return Err(self.fail(
                Check::Framing,
                "one pass",
                format!("the engine read it with {:?}", seen.scan.adapter),
            ));
        }
        let array_form = self.data.trim_ascii_start().starts_with(b"[");
        if !array_form && seen.scan.array != (self.fx.framing == Framing::Document) {
            return Err(self.fail(
                Check::Framing,
                "one pass",
                format!(
                    "read whole: {}, framing {:?}",
                    seen.scan.array, self.fx.framing
                ),
            ));
        }
        if seen.entries.is_empty() {
            return Err(self.fail(Check::Fixture, "one pass", "no entries to compare"));
        }
        let registry = (self.kit.registry)();
        let mut adapter = self.factory(&registry)?.build();
        adapter.open(path);
        let (direct, _) = decode_bytes(adapter.as_mut(), self.fx.framing, &self.data);
        if let Some(d) = first_difference(&direct, &seen.entries) {
            return Err(self.fail(Check::OnePass, "the engine against the framing alone", d));
        }
        self.twice(path, "one pass")?;
        let scan = seen.scan.clone();
        let mut run = Run::default();
        run.add(seen);
        Ok((run, scan))
    }

    /// Reading the same bytes again gives no entry and counts no skip (a torn last
    /// line is looked at again, and held again).
    fn twice(&mut self, path: &Path, case: &str) -> Result<(), Violation> {
        let again = self.observe(path)?;
        if !again.entries.is_empty() || again.scan.skipped_total() > 0 {
            return Err(self.fail(
                Check::Twice,
                case,
                format!(
                    "read again: {} entries, {} skips",
                    again.entries.len(),
                    again.scan.skipped_total()
                ),
            ));
        }
        Ok(())
    }

    /// The adapter's checkpoint after the whole file round-trips; `Null` is accepted by
    /// a fresh adapter, garbage refused without a panic.
    fn adapter_state(&mut self) -> Result<(), Violation> {
        let registry = (self.kit.registry)();
        let factory = self.factory(&registry)?;
        if !factory.build().restore(&Value::Null) {
            return Err(self.fail(Check::AdapterState, "", "a fresh adapter refuses Null"));
        }
        for g in &self.kit.garbage {
            let accepted = catch_unwind(AssertUnwindSafe(|| factory.build().restore(g)));
            match accepted {
                Ok(false) => {}
                Ok(true) => {
                    return Err(self.fail(
                        Check::AdapterState,
                        "",
                        format!("accepts {g} as its checkpoint"),
                    ))
                }
                Err(_) => {
                    return Err(self.fail(Check::AdapterState, "", format!("panics restoring {g}")))
                }
            }
        }
        let data = self.data.clone();
        let path = self.place(&data)?;
        let mut a = factory.build();
        a.open(&path);
        decode_bytes(a.as_mut(), self.fx.framing, &self.data);
        let checkpoint = a.checkpoint();
        let stored: Value = serde_json::from_str(&checkpoint.to_string()).map_err(|e| {
            self.fail(
                Check::AdapterState,
                "",
                format!("its checkpoint is not JSON: {e}"),
            )
        })?;
        let mut b = factory.build();
        b.open(&path);
        if !b.restore(&stored) || b.checkpoint() != checkpoint {
            return Err(self.fail(
                Check::AdapterState,
                "",
                format!("its checkpoint does not round-trip: {checkpoint}"),
            ));
        }
        Ok(())
    }

    /// (b, c) Line-framed: every kind of split, then garbage. Returns the splits run.
    fn line_framed(&mut self, one: &Run, scan: &ScanReport) -> Result<u64, Violation> {
        let data = self.data.clone();
        let to = Against {
            data: &data,
            one,
            check: Check::LineSplits,
        };
        // Every line boundary: the file appended a line at a time.
        let lines: Vec<usize> = (1..data.len()).filter(|&i| data[i - 1] == b'\n').collect();
        self.cut_run(to, &lines, "a line at a time")?;
        // Bytes before a newline, inside a UTF-8 character, at line starts, anywhere.
        let cuts = cut_points(&data, self.kit.cuts, &mut self.rng);
        let to = Against {
            check: Check::ByteSplits,
            ..to
        };
        self.cut_run(to, &cuts, "cut at bytes")?;
        // Many pieces of any size.
        let chunks = chunk_cuts(data.len(), self.kit.chunks, &mut self.rng);
        let to = Against {
            check: Check::Chunks,
            ..to
        };
        self.cut_run(to, &chunks, "many pieces")?;
        Ok(lines.len() as u64
            + cuts.len() as u64
            + chunks.len() as u64
            + self.garbage(one, scan)?)
    }

    /// Append `to.data` in pieces cut at `cuts` (sorted), reading after each; the
    /// entries and skips must be the one pass's, and a last read of the same bytes
    /// gives none. On a difference, the first cut that differs alone (in two pieces) is
    /// named.
    fn cut_run(&mut self, to: Against<'_>, cuts: &[usize], case: &str) -> Result<(), Violation> {
        let Err(all) = self.pieces(to, cuts, case) else {
            return Ok(());
        };
        for &cut in cuts {
            let (line, col) = line_col(to.data, cut);
            let alone = format!("{case}: cut at byte {cut}, line {line} column {col}");
            self.pieces(to, &[cut], &alone)?;
        }
        Err(all)
    }

    fn pieces(&mut self, to: Against<'_>, cuts: &[usize], case: &str) -> Result<(), Violation> {
        let data = to.data;
        let path = self.place(b"")?;
        let mut run = Run::default();
        let mut from = 0;
        for &cut in cuts.iter().chain([data.len()].iter()) {
            if cut <= from || cut > data.len() {
                continue;
            }
            self.append(&path, &data[from..cut])?;
            from = cut;
            let seen = self.observe(&path)?;
            run.add(seen);
        }
        let case = if cuts.len() > 1 {
            format!("{case}, {} cuts", cuts.len())
        } else {
            case.to_owned()
        };
        if let Some(d) = first_difference(&to.one.entries, &run.entries) {
            return Err(self.fail(to.check, &case, d));
        }
        if run.skips != to.one.skips {
            return Err(self.fail(
                to.check,
                &case,
                format!(
                    "skips {:?}, one pass {:?} (each record is read once)",
                    run.skips, to.one.skips
                ),
            ));
        }
        self.twice(&path, &case)
    }

    /// (c) Garbage lines inserted between the fixture's lines: the same entries (lines
    /// and offsets moved by what was inserted), one skip each of the contract's
    /// reason; then the garbage file's own splits (inside each garbage line and just
    /// before its newline, and many pieces) against its one pass.
    fn garbage(&mut self, one: &Run, scan: &ScanReport) -> Result<u64, Violation> {
        let starts: Vec<usize> = (1..self.data.len())
            .filter(|&i| self.data[i - 1] == b'\n')
            .collect();
        if starts.is_empty() {
            return Ok(0);
        }
        let count = GARBAGE.len().min(starts.len());
        let at: Vec<usize> = (0..count)
            .map(|i| starts[i * starts.len() / count])
            .collect();
        let mut data = Vec::with_capacity(self.data.len() + 128);
        // (line the garbage follows, bytes inserted, where in the new file).
        let mut inserted: Vec<(u64, u64, usize)> = Vec::new();
        let mut prev = 0;
        for (i, &pos) in at.iter().enumerate() {
            data.extend_from_slice(&self.data[prev..pos]);
            let (g, _) = GARBAGE[i % GARBAGE.len()];
            let after = self.data[..pos].iter().filter(|b| **b == b'\n').count() as u64;
            inserted.push((after, g.len() as u64 + 1, data.len()));
            data.extend_from_slice(g);
            data.push(b'\n');
            prev = pos;
        }
        data.extend_from_slice(&self.data[prev..]);
        let want: Vec<Entry<'static>> = one
            .entries
            .iter()
            .map(|e| {
                let (mut e, line) = (e.clone(), e.line);
                for (after, len, _) in &inserted {
                    if line > *after {
                        e.line += 1;
                        e.offset += len;
                    }
                }
                e
            })
            .collect();
        let mut want_skips = BTreeMap::new();
        add_skips(&mut want_skips, scan);
        for (g, _) in GARBAGE.iter().zip(0..count) {
            *want_skips.entry(g.1.as_str()).or_insert(0) += 1;
        }
        let case = "garbage inserted";
        let path = self.place(&data)?;
        let seen = self.observe(&path)?;
        if let Some(d) = first_difference(&want, &seen.entries) {
            return Err(self.fail(Check::Skips, case, d));
        }
        let mut got_skips = BTreeMap::new();
        add_skips(&mut got_skips, &seen.scan);
        if got_skips != want_skips {
            return Err(self.fail(
                Check::Skips,
                case,
                format!("skips {got_skips:?}, want {want_skips:?}"),
            ));
        }
        let records = scan.lines + count as u64;
        if seen.scan.lines != records {
            return Err(self.fail(
                Check::Skips,
                case,
                format!("{} records read, want {records}", seen.scan.lines),
            ));
        }
        let with_garbage = Run {
            entries: want,
            skips: want_skips,
        };
        // Inside each garbage line (a number's prefix is a number), and just before
        // its newline.
        let cuts: Vec<usize> = inserted
            .iter()
            .flat_map(|(_, len, start)| {
                [start + (*len as usize - 1) / 2, start + *len as usize - 1]
            })
            .filter(|&c| c > 0 && c < data.len())
            .collect();
        let to = Against {
            data: &data,
            one: &with_garbage,
            check: Check::Skips,
        };
        self.cut_run(to, &cuts, "garbage inserted, cut at bytes")?;
        let chunks = chunk_cuts(data.len(), self.kit.chunks, &mut self.rng);
        self.cut_run(to, &chunks, "garbage inserted, many pieces")?;
        Ok(cuts.len() as u64 + chunks.len() as u64)
    }

    /// (b, c) Document-framed: the versions of a growing document, each written over
    /// the last (one caught cut short), give the one-pass entries of the last.
    fn growth(&mut self, one: &Run) -> Result<u64, Violation> {
        let Some(key) = self.fx.grows.clone() else {
            return Ok(0);
        };
        let versions = grown(&self.data, &key)
            .ok_or_else(|| self.fail(Check::Fixture, "", format!("no top-level array {key:?}")))?;
        let Some(last) = versions.last().cloned() else {
            return Ok(0);
        };
        // The one pass over the last version as the kit writes it (offsets follow its
        // layout, not the fixture's): the fixture's entries but for offsets.
        let path = self.place(&last)?;
        let whole = self.observe(&path)?;
        let unplaced = |es: &[Entry<'static>]| -> Vec<Entry<'static>> {
            es.iter()
                .map(|e| Entry {
                    offset: 0,
                    ..e.clone()
                })
                .collect()
        };
        if let Some(d) = first_difference(&unplaced(&one.entries), &unplaced(&whole.entries)) {
            return Err(self.fail(Check::Growth, "the last version rewritten", d));
        }
        let path = self.place(b"")?;
        let mut got = Vec::new();
        let torn_at = versions.len() / 2;
        for (k, v) in versions.iter().enumerate() {
            if k == torn_at && v.len() > 2 {
                // A reader may catch the file half-rewritten: that read gives nothing
                // and counts a skip; the complete version after it gives the rest.
                fs::write(&path, &v[..v.len() / 2]).map_err(|e| self.setup(e))?;
                let torn = self.observe(&path)?;
                if !torn.entries.is_empty() || torn.scan.skipped_total() == 0 {
                    return Err(self.fail(
                        Check::Skips,
                        &format!("version {k} cut short"),
                        format!(
                            "{} entries and {} skips, want none and a skip",
                            torn.entries.len(),
                            torn.scan.skipped_total()
                        ),
                    ));
                }
            }
            fs::write(&path, v).map_err(|e| self.setup(e))?;
            got.extend(self.observe(&path)?.entries);
        }
        if let Some(d) = first_difference(&whole.entries, &got) {
            return Err(self.fail(
                Check::Growth,
                &format!("{} versions, each over the last", versions.len()),
                d,
            ));
        }
        self.twice(&path, "the last version")?;
        Ok(versions.len() as u64)
    }
}

/// The versions of a document whose top-level array `key` grows: with its first `k`
/// elements, for `k` = 0 to all of them (pretty-printed, keys in their order).
fn grown(data: &[u8], key: &str) -> Option<Vec<Vec<u8>>> {
    let doc: Value = serde_json::from_slice(data).ok()?;
    let all = doc.get(key)?.as_array()?.clone();
    (0..=all.len())
        .map(|k| {
            let mut v = doc.clone();
            v[key] = Value::Array(all[..k].to_vec());
            serde_json::to_vec_pretty(&v).ok()
        })
        .collect()
}

/// Up to `n` cut points in `data`, spread over four kinds of place: just before a
/// newline (and between `\r` and `\n`), inside a UTF-8 character, at a line start,
/// anywhere.
fn cut_points(data: &[u8], n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut kinds: [Vec<usize>; 3] = Default::default();
    for i in 1..data.len() {
        match data[i] {
            b'\n' => kinds[0].push(i),
            b if b & 0xC0 == 0x80 => kinds[1].push(i),
            _ => {}
        }
        if data[i - 1] == b'\n' {
            kinds[2].push(i);
        }
    }
    let mut out = Vec::new();
    for kind in &kinds {
        for _ in 0..(n / 4).min(kind.len()) {
            out.push(kind[rng.index(kind.len())]);
        }
    }
    while out.len() < n && data.len() > 1 {
        out.push(1 + rng.index(data.len() - 1));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// About `n` cut points, sorted, anywhere in `len` bytes.
fn chunk_cuts(len: usize, n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut cuts: Vec<usize> = (1..n)
        .filter(|_| len > 1)
        .map(|_| 1 + rng.index(len - 1))
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The 1-based line and column of byte `at`.
fn line_col(data: &[u8], at: usize) -> (usize, usize) {
    let before = &data[..at];
    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
    let col = at
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    (line, col)
}

/// Copy the tree at `from` to `to`, all but the file `except`.
fn copy_tree(from: &Path, to: &Path, except: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src == except {
            continue;
        }
        if e.file_type()?.is_dir() {
            copy_tree(&src, &dst, except)?;
        } else {
            fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_points_cover_every_kind_of_place() {
        let data = "{\"a\":\"é\"}\r\n{\"b\":1}\n".as_bytes();
        let cuts = cut_points(data, 40, &mut Rng::new(1));
        assert!(cuts.iter().all(|c| (1..data.len()).contains(c)));
        let nl = data.iter().position(|b| *b == b'\n').unwrap();
        assert!(cuts.contains(&nl), "between \\r and \\n");
        let mid = data.iter().position(|b| *b & 0xC0 == 0x80).unwrap();
        assert!(cuts.contains(&mid), "inside é");
        assert!(cuts.contains(&(nl + 1)), "a line start");
    }

    #[test]
    fn documents_grow_by_prefixes() {
        let v = grown(br#"{"id": 1, "messages": [1, 2]}"#, "messages").unwrap();
        let texts: Vec<Value> = v
            .iter()
            .map(|b| serde_json::from_slice(b).unwrap())
            .collect();
        assert_eq!(texts[0], serde_json::json!({"id": 1, "messages": []}));
        assert_eq!(texts[2], serde_json::json!({"id": 1, "messages": [1, 2]}));
        assert!(grown(b"{}", "messages").is_none());
    }

    #[test]
    fn line_and_column() {
        assert_eq!(line_col(b"ab\ncd", 0), (1, 1));
        assert_eq!(line_col(b"ab\ncd", 4), (2, 2));
    }
}

//! The brain-writer outbox (scope-log.md §5.7) and its drain.

use std::fs::{self, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::body::{build_body, idempotency_key, is_recorded_key, BodyContext, Identity};
use serde_json::{Map, Value};
use transcope_core::Marker;
use transcope_core::{py, Instant};
use transcope_scopelog::lockfile;
use transcope_scopelog::LockWait;

use crate::{BrainClient, Delivery, MarkerRecord, PostResult, Sink, SinkError};

/// `BRAIN_WRITER_OUTBOX`, else `<home>/brain-outbox`.
pub fn outbox_dir_from_env(home: &Path, env_value: Option<&str>) -> PathBuf {
    match env_value.filter(|v| !v.is_empty()) {
        Some(v) => PathBuf::from(v),
        None => home.join("brain-outbox"),
    }
}

/// Writes each record as one outbox file.
#[derive(Clone, Debug)]
pub struct OutboxSink {
    dir: PathBuf,
    agent_name: String,
    project: String,
    now: Option<Instant>,
    /// The outbox's file names as last read, valid while the folder is unchanged.
    listing: Option<Listing>,
    /// Temporaries of killed writers removed so far (see [`OutboxSink::stale_removed`]).
    stale_removed: u64,
}

/// What the outbox held when last listed, and the folder's modification stamp then. A
/// sink delivering many records (a backfill) lists the folder again only when
/// something else changed it, instead of once per record (quadratic in the outbox).
///
/// A marker's file is found by its name's `-<kind>-<tag>.json` end, which holds exactly
/// two `-` (the kind is made of `[A-Za-z0-9_]`, the tag is hex): so each name is kept
/// once, split at its second-to-last `-`, end → the part before it. "The file that ends
/// with this suffix" is one lookup, at about 0.1 KB a waiting file.
#[derive(Clone, Debug)]
struct Listing {
    stamp: Option<(std::time::SystemTime, u64, u64)>,
    ends: std::collections::HashMap<Box<str>, Box<str>>,
    /// The only ends kept, when the listing was read for a few records (`None`: all).
    only: Option<Vec<String>>,
}

impl Listing {
    /// The waiting file whose name ends with `suffix` (a `-<kind>-<tag>.json`).
    fn find(&self, suffix: &str) -> Option<String> {
        self.ends
            .get(suffix)
            .map(|start| format!("{start}{suffix}"))
    }

    /// Whether the listing answers for `suffix`: a whole listing for every end, a
    /// partial one for the ends it was read for.
    fn covers(&self, suffix: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|s| s == suffix))
    }

    /// Remember `name` (the first name listed for an end wins): its end is from its
    /// second-last `-` on. It runs once a waiting file a listing reads (the string
    /// searcher `rmatch_indices` builds cost more than the rest); a partial listing
    /// keeps only the ends it was read for (a Stop's one or five markers: nothing
    /// allocated for the rest).
    fn add(&mut self, name: &str) {
        let b = name.as_bytes();
        let Some(last) = b.iter().rposition(|&c| c == b'-') else {
            return;
        };
        if let Some(i) = b[..last].iter().rposition(|&c| c == b'-') {
            let end = &name[i..];
            if self.covers(end) && !self.ends.contains_key(end) {
                self.ends.insert(end.into(), name[..i].into());
            }
        }
    }
}

/// The folder's (mtime, size, inode): changes whenever an entry is added or removed.
fn dir_stamp(dir: &Path) -> Option<(std::time::SystemTime, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(dir).ok()?;
    Some((m.modified().ok()?, m.size(), m.ino()))
}

/// How old an outbox temporary (`.<name>.<pid>.tmp`) must be to be a killed writer's:
/// a live one is renamed within its write and fsync, and every hook run ends at its
/// deadline (30 s by default), so one this old was left by a process that died.
pub const STALE_TMP_AGE: Duration = Duration::from_secs(600);

/// Whether `name` is a temporary [`transcope_jsonl::write_atomic`] makes for an outbox
/// file: `.<something>.json.<pid>.tmp`.
fn is_outbox_tmp(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) else {
        return false;
    };
    rest.rsplit_once('.').is_some_and(|(file, pid)| {
        file.ends_with(".json") && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
    })
}

impl Listing {
    /// The outbox's names (with `only`, just those with one of these ends);
    /// temporaries older than [`STALE_TMP_AGE`] (left by killed writers) are removed on
    /// the way, and counted in `removed`. Called under the outbox lock.
    fn read(dir: &Path, only: Option<Vec<String>>, removed: &mut u64) -> Listing {
        let mut listing = Listing {
            stamp: None,
            ends: std::collections::HashMap::new(),
            only,
        };
        let now = std::time::SystemTime::now();
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if !name.starts_with('.') {
                listing.add(&name);
            } else if is_outbox_tmp(&name) {
                let stale = e
                    .metadata()
                    .ok()
                    .filter(fs::Metadata::is_file)
                    .is_some_and(|m| {
                        m.modified()
                            .ok()
                            .and_then(|t| now.duration_since(t).ok())
                            .is_some_and(|age| age >= STALE_TMP_AGE)
                    });
                if stale && fs::remove_file(e.path()).is_ok() {
                    *removed += 1;
                }
            }
        }
        // After the removals: the stamp is of the folder as listed.
        listing.stamp = dir_stamp(dir);
        listing
    }
}

impl OutboxSink {
    /// An outbox in `dir`; `agent_name` is `AGENTICORE_AGENT_NAME`, else `USER`, else
    /// `"unknown"`; `project` is `CLAUDE_PROJECT_DIR` or `""`.
    pub fn new(
        dir: impl Into<PathBuf>,
        agent_name: impl Into<String>,
        project: impl Into<String>,
    ) -> Self {
        OutboxSink {
            dir: dir.into(),
            agent_name: agent_name.into(),
            project: project.into(),
            now: None,
            listing: None,
            stale_removed: 0,
        }
    }

    /// How many temporaries left by killed writers (older than [`STALE_TMP_AGE`]) this
    /// sink removed from the outbox while listing it.
    pub fn stale_removed(&self) -> u64 {
        self.stale_removed
    }

    /// Stamp files with a fixed instant (tests).
    pub fn with_clock(mut self, now: Instant) -> Self {
        self.now = Some(now);
        self
    }

    /// The outbox directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file content for `rec` at `now` (indent-2 JSON, the reference's key order).
    pub fn payload(&self, rec: &MarkerRecord, now: Instant) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(rec.kind().to_owned()));
        m.insert("content".into(), Value::String(rec.content.clone()));
        m.insert(
            "attrs".into(),
            rec.body
                .get("attrs")
                .cloned()
                .unwrap_or(Value::Object(Map::new())),
        );
        m.insert(
            "idempotency_key".into(),
            Value::String(rec.idempotency_key.clone()),
        );
        if let Some(s) = &rec.session {
            m.insert("session_id".into(), Value::String(s.clone()));
        }
        m.insert("agent_name".into(), Value::String(self.agent_name.clone()));
        m.insert("project".into(), Value::String(self.project.clone()));
        m.insert("ts".into(), Value::String(now.to_python_isoformat()));
        Value::Object(m)
    }
}

fn safe_kind(kind: &str) -> String {
    kind.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

impl Sink for OutboxSink {
    fn deliver(&mut self, rec: &MarkerRecord) -> Result<Delivery, SinkError> {
        let mut out = self.deliver_all(std::slice::from_ref(rec))?;
        Ok(out.remove(0))
    }

    /// The folder is made, locked and its listing checked once for the whole batch.
    fn deliver_all(&mut self, recs: &[MarkerRecord]) -> Result<Vec<Delivery>, SinkError> {
        match self.deliver_counted(recs) {
            (out, None) => Ok(out),
            (_, Some(e)) => Err(e),
        }
    }
}

impl OutboxSink {
    /// Deliver `recs` in order, stopping at the first that fails, and say how far it
    /// got: the deliveries made (one per record before the failure, which stay
    /// written) and the failure, if any. [`Sink::deliver_all`] without losing the
    /// count of what was written before an error (a backfill reports both).
    pub fn deliver_counted(&mut self, recs: &[MarkerRecord]) -> (Vec<Delivery>, Option<SinkError>) {
        if recs.is_empty() {
            return (Vec::new(), None);
        }
        // One file per marker: a second Stop (or a concurrent one) that fails to send
        // the same marker finds it already waiting. Concurrent Stops serialise the
        // look-then-write on the outbox's lock (held until this function returns).
        let _lock = match open_dir(&self.dir) {
            Ok(d) => lockfile::lock(d, LockWait::AtMost(OUTBOX_LOCK_WAIT)).ok(),
            Err(_) => {
                // Made only when it cannot be opened: not a mkdir and a stat per call.
                if let Err(source) = fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&self.dir)
                {
                    let e = SinkError::Io {
                        context: "creating the outbox",
                        source,
                    };
                    return (Vec::new(), Some(e));
                }
                open_dir(&self.dir)
                    .ok()
                    .and_then(|d| lockfile::lock(d, LockWait::AtMost(OUTBOX_LOCK_WAIT)).ok())
            }
        };
        let stamp = dir_stamp(&self.dir);
        // Each record's file-name end, once: what the listing is checked and read for,
        // and what finds the record waiting.
        let ends: Vec<String> = recs.iter().map(suffix).collect();
        let fresh = |l: &Listing| {
            l.stamp == stamp && (l.only.is_none() || ends.iter().all(|e| l.covers(e)))
        };
        if stamp.is_none() || !self.listing.as_ref().is_some_and(fresh) {
            // A sink's first listing is for its records alone when they are few (a
            // Stop's): every later one is whole, so a backfill, which delivers batch
            // after batch, lists the folder again only when something else changed it.
            let only =
                (self.listing.is_none() && recs.len() <= PARTIAL_LISTING_MAX).then(|| ends.clone());
            self.listing = Some(Listing::read(&self.dir, only, &mut self.stale_removed));
        }
        let mut out = Vec::with_capacity(recs.len());
        let mut failed = None;
        for (rec, end) in recs.iter().zip(&ends) {
            match self.write_one(rec, end) {
                Ok(d) => out.push(d),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // Still under the lock: the folder changed by these files alone.
        if let Some(l) = &mut self.listing {
            l.stamp = dir_stamp(&self.dir);
        }
        (out, failed)
    }

    /// One record's file, its name ending `suffix` ([`suffix`]), under the outbox lock
    /// with the listing fresh.
    fn write_one(&mut self, rec: &MarkerRecord, suffix: &str) -> Result<Delivery, SinkError> {
        let io = |context| move |source| SinkError::Io { context, source };
        if let Some(name) = self.listing.as_ref().and_then(|l| l.find(suffix)) {
            // Already waiting (unless it went within the stamp's clock tick).
            let waiting = self.dir.join(name);
            if waiting.symlink_metadata().is_ok() {
                return Ok(Delivery::Outboxed(waiting));
            }
        }
        let now = self.now.unwrap_or_else(Instant::now);
        let name = format!("{}{suffix}", now.to_compact_utc());
        let path = self.dir.join(&name);
        let mut text = String::new();
        py::write_value(
            &mut text,
            &self.payload(rec, now),
            py::DumpOptions {
                indent: Some(2),
                sort_keys: false,
            },
        );
        transcope_jsonl::write_atomic(&path, text.as_bytes(), true)
            .map_err(io("writing an outbox file"))?;
        if let Some(l) = &mut self.listing {
            l.add(&name);
        }
        Ok(Delivery::Outboxed(path))
    }
}

/// The end of `rec`'s outbox file name, `-<kind>-<tag>.json`: what finds it waiting.
fn suffix(rec: &MarkerRecord) -> String {
    let kind = safe_kind(rec.kind());
    let tag: String = rec.idempotency_key.chars().take(8).collect();
    format!("-{kind}-{tag}.json")
}

/// The most records a sink's first listing is read for alone (see
/// [`OutboxSink::deliver_counted`]); a Stop delivers at most five by default.
const PARTIAL_LISTING_MAX: usize = 16;

/// How long a Stop waits for another Stop's hold on the outbox before writing anyway.
const OUTBOX_LOCK_WAIT: Duration = Duration::from_secs(2);

/// The outbox folder opened for its advisory lock (`flock` on the directory itself: no
/// extra file), waited for at most [`OUTBOX_LOCK_WAIT`]; no lock when it cannot be had
/// (the write goes ahead: a duplicate file is better than a blocked agent).
fn open_dir(dir: &Path) -> std::io::Result<fs::File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
}

/// `<outbox>/.drain`: its `.lock` sidecar serialises drains (a dot name: never
/// drained, never listed as a waiting marker).
const DRAIN_LOCK_STEM: &str = ".drain";

/// What a drain did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainReport {
    /// Files accepted by the brain and deleted.
    pub sent: u64,
    /// Files renamed to `.bad` (unparseable, or refused with 400/404/422).
    pub quarantined: u64,
    /// The drain stopped at a refusal or an unreachable brain; files remain.
    pub stopped: bool,
    /// Why it stopped.
    pub reason: Option<String>,
    /// A POST failed or was refused (not a 400/404/422): the brain is down or
    /// unwell, and the rest of the run sends nothing more.
    pub post_failed: bool,
    /// Another process holds the drain lock: it sends the files, this drain sent none.
    pub busy: bool,
    /// The idempotency keys of the files the brain accepted, in order (the ledger
    /// marks them delivered).
    pub delivered: Vec<String>,
    /// The keys of the files the brain refused (400, 404, 422) with its status.
    pub refused: Vec<(String, u16)>,
}

/// Builds the replay identity lookup: (attrs, writing session, folder) → identity.
pub type Replay<'a> = dyn FnMut(&Map<String, Value>, Option<&str>, &str) -> Option<Identity> + 'a;

/// Replay the outbox: `<dir>-backlog` first, then `dir`, each sorted by name.
///
/// One drain at a time: the drain holds an exclusive `flock` of `<dir>/.drain.lock`
/// (created `0600`, never through a symbolic link) from its listing to its last
/// POST, so each file is sent by one process. A drain that finds the lock held does
/// not wait: it sends nothing and says [`DrainReport::busy`] (the holder is sending
/// those files). A lock file that cannot be opened (a symbolic link, a directory)
/// stops the drain with its reason: never an unlocked drain. An outbox folder that
/// does not exist has nothing to lock, and only its `-backlog` sibling is read.
pub fn drain(
    dir: &Path,
    client: &BrainClient,
    source: &str,
    lookup: &mut Replay<'_>,
) -> DrainReport {
    let mut report = DrainReport::default();
    let _held = match lockfile::open_sidecar(&dir.join(DRAIN_LOCK_STEM)) {
        Ok(f) => match lockfile::lock(f, LockWait::AtMost(Duration::ZERO)) {
            Ok(l) => Some(l),
            Err(lockfile::NotLocked::TimedOut(_)) => {
                report.busy = true;
                return report;
            }
            Err(e) => {
                report.stopped = true;
                report.reason = Some(format!("the outbox's drain lock: {e}"));
                return report;
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            report.stopped = true;
            report.reason = Some(format!("while opening the outbox's drain lock: {e}"));
            return report;
        }
    };
    let mut backlog = dir.as_os_str().to_owned();
    backlog.push("-backlog");
    for d in [PathBuf::from(backlog), dir.to_owned()] {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && !p
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with('.'))
            })
            .collect();
        files.sort();
        for f in files {
            let Some((body, key)) = replay_body(&f, source, lookup) else {
                quarantine(&f);
                report.quarantined += 1;
                continue;
            };
            match client.post(&body, &key) {
                PostResult::Accepted => {
                    let _ = fs::remove_file(&f);
                    report.sent += 1;
                    report.delivered.push(key);
                }
                PostResult::Status(s @ (400 | 404 | 422)) => {
                    quarantine(&f);
                    report.quarantined += 1;
                    report.refused.push((key, s));
                }
                PostResult::Status(s) => {
                    report.stopped = true;
                    report.post_failed = true;
                    report.reason = Some(format!("brain answered HTTP {s}"));
                    return report;
                }
                PostResult::Failed(e) => {
                    report.stopped = true;
                    report.post_failed = true;
                    report.reason = Some(format!("brain unreachable: {e}"));
                    return report;
                }
            }
        }
    }
    report
}

fn quarantine(f: &Path) {
    let mut bad = f.as_os_str().to_owned();
    bad.push(".bad");
    let _ = fs::rename(f, PathBuf::from(bad));
}

/// The body and key of one outbox file, or `None` when it cannot be parsed.
fn replay_body(f: &Path, source: &str, lookup: &mut Replay<'_>) -> Option<(Value, String)> {
    let text = fs::read(f).ok()?;
    let Value::Object(p) = serde_json::from_slice::<Value>(&text).ok()? else {
        return None;
    };
    let kind = p.get("type")?.as_str()?.to_owned();
    let content = p.get("content")?.as_str()?.to_owned();
    let mut attrs = match p.get("attrs") {
        Some(Value::Object(a)) => a.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => return None,
    };
    if let Some(ts) = p.get("ts") {
        attrs.entry("ts".to_owned()).or_insert(ts.clone());
    }
    // The writer's session, never the draining session (decision 164).
    let session = p
        .get("session_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let folder = p
        .get("cwd")
        .and_then(Value::as_str)
        .or_else(|| p.get("project").and_then(Value::as_str))
        .unwrap_or("")
        .to_owned();
    let marker = Marker {
        kind: kind.clone(),
        attrs,
        content: content.clone(),
        at: None,
    };
    // Replay: no `at`, so only a fleet marker gets a scope again.
    let scope = (marker.attrs.get("share").and_then(Value::as_str) == Some("fleet"))
        .then(|| transcope_core::Attribution::bare(transcope_core::Label::Fleet));
    let mut look = |a: &Map<String, Value>| lookup(a, session.as_deref(), &folder);
    let body = build_body(
        &marker,
        BodyContext {
            session: session.as_deref(),
            scope: scope.as_ref(),
            live: false,
            lookup: &mut look,
            source,
        },
    );
    let key = match p.get("idempotency_key").and_then(Value::as_str) {
        Some(k) if is_recorded_key(k) => k.to_owned(),
        _ => idempotency_key(session.as_deref().unwrap_or(""), &kind, &content),
    };
    Some((body, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(content: &str) -> MarkerRecord {
        MarkerRecord {
            body: serde_json::json!({"type": "lesson", "content": content, "attrs": {}}),
            content: content.to_owned(),
            idempotency_key: format!("{:032x}", content.len()),
            session: Some("s1".to_owned()),
        }
    }

    /// Issue 13, item 11: a killed run's `.…<pid>.tmp` stayed in the outbox for ever.
    /// Old ones go at the next delivery (and are counted); a fresh one (a writer still
    /// at work) and other dot files stay.
    #[test]
    fn temporaries_left_by_killed_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir
            .path()
            .join(".20260101T000000-lesson-0000abcd.json.4242.tmp");
        let fresh = dir
            .path()
            .join(".20260101T000001-lesson-0000abce.json.4343.tmp");
        let other = dir.path().join(".keep.tmp");
        for f in [&old, &fresh, &other] {
            fs::write(f, b"{").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - STALE_TMP_AGE * 2;
        for f in [&old, &other] {
            fs::File::options()
                .write(true)
                .open(f)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        let mut sink = OutboxSink::new(dir.path(), "t", "");
        let (done, failed) = sink.deliver_counted(&[record("x")]);
        assert!(failed.is_none());
        assert_eq!(done.len(), 1);
        assert!(!old.exists(), "a stale temporary is removed");
        assert!(fresh.exists(), "a writer's live temporary is kept");
        assert!(other.exists(), "only outbox temporaries are touched");
        assert_eq!(sink.stale_removed(), 1);
    }

    #[test]
    fn outbox_temporaries_are_told_from_other_names() {
        assert!(is_outbox_tmp(
            ".20260101T000000-lesson-0000abcd.json.17.tmp"
        ));
        assert!(!is_outbox_tmp(".keep.tmp"));
        assert!(!is_outbox_tmp(".x.json.tmp"));
        assert!(!is_outbox_tmp(".x.json.1a.tmp"));
        assert!(!is_outbox_tmp("x.json.1.tmp"));
    }

    /// A write that fails part way through a batch still says what it wrote before
    /// (backfill counts delivered and undelivered markers from it).
    #[test]
    fn a_failed_batch_says_how_far_it_got() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = OutboxSink::new(dir.path(), "t", "");
        let (done, failed) = sink.deliver_counted(&[record("a"), record("bb")]);
        assert_eq!((done.len(), failed.is_none()), (2, true));
        let (done, failed) = sink.deliver_counted(&[]);
        assert_eq!((done.len(), failed.is_none()), (0, true));
        let missing = OutboxSink::new("/dev/null/outbox", "t", "").deliver_counted(&[record("a")]);
        assert_eq!((missing.0.len(), missing.1.is_some()), (0, true));
    }

    /// A sink's first listing, read for its few records alone, finds theirs waiting;
    /// a later batch with other records lists again (the folder unchanged) and finds
    /// its own waiting too: no second file for a marker either way.
    #[test]
    fn a_partial_listing_answers_only_for_the_records_it_was_read_for() {
        let dir = tempfile::tempdir().unwrap();
        let keyed = |tag: &str| MarkerRecord {
            idempotency_key: format!("{tag:0<32}"),
            ..record(tag)
        };
        let (a, b, c) = (keyed("0000000a"), keyed("0000000b"), keyed("0000000c"));
        let (done, failed) =
            OutboxSink::new(dir.path(), "t", "").deliver_counted(&[a.clone(), b.clone()]);
        assert_eq!((done.len(), failed.is_none()), (2, true));
        let files = || fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files(), 2);
        let mut sink = OutboxSink::new(dir.path(), "t", "");
        let (done, _) = sink.deliver_counted(&[a]);
        assert!(matches!(&done[..], [Delivery::Outboxed(p)] if p.exists()));
        let l = sink.listing.as_ref().unwrap();
        assert_eq!(
            (l.only.is_some(), l.ends.len()),
            (true, 1),
            "only the record's end kept"
        );
        let (done, _) = sink.deliver_counted(std::slice::from_ref(&b));
        assert!(matches!(&done[..], [Delivery::Outboxed(p)] if p.exists()));
        assert_eq!(
            files(),
            2,
            "the other waiting marker found, not written again"
        );
        assert!(
            sink.listing.as_ref().unwrap().only.is_none(),
            "the second listing is whole"
        );
        let (done, _) = sink.deliver_counted(&[c, b]);
        assert_eq!(done.len(), 2);
        assert_eq!(files(), 3);
    }

    /// A waiting file is found by its `-<kind>-<tag>.json` end whatever comes before
    /// it (another writer's prefix may hold `-` too), the first listed name for an end
    /// wins, and a name that cannot end that way is not kept.
    #[test]
    fn the_listing_finds_a_file_by_its_end() {
        let mut l = Listing {
            stamp: None,
            ends: std::collections::HashMap::new(),
            only: None,
        };
        for name in [
            "20261008T100000-lesson-0123abcd.json",
            "2026-10-08-other-writer-signal-89ab4567.json",
            "20261008T110000-lesson-0123abcd.json",
            "README",
            "one-dash.json",
        ] {
            l.add(name);
        }
        assert_eq!(
            l.find("-lesson-0123abcd.json").as_deref(),
            Some("20261008T100000-lesson-0123abcd.json")
        );
        assert_eq!(
            l.find("-signal-89ab4567.json").as_deref(),
            Some("2026-10-08-other-writer-signal-89ab4567.json")
        );
        assert_eq!(l.find("-lesson-89ab4567.json"), None);
        assert_eq!(l.find("-dash.json"), None);
        assert_eq!(l.ends.len(), 2);
    }
}

//! `observe_transcript`: a transcript's folder and branch changes into the scope log,
//! whole or incrementally from a cursor.

use std::path::Path;

use serde_json::Value;
use transcope_change_detect::{scope_enabled, ChangeDetect, Env, Outcome, ProjectResolver};
use transcope_core::adapter::{AdapterRegistry, EntrySink};
use transcope_core::Entry;
use transcope_jsonl::{Framer, ReadPolicy};
use transcope_scopelog::ScopeLog;

use crate::cursor::{self, Cursor, CURSOR_VERSION, FINGERPRINT_BYTES};
use crate::scan::{open_regular, scan_file_with, Buffers, Resume, ScanError, ScanReport, Tail};

/// How a transcript is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// The whole file, every time (the reference's behaviour; `transcope observe`).
    Whole,
    /// From the saved cursor under `<home>/transcope/cursors/` (a hook's Stop).
    Incremental,
}

/// What one observation did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObserveReport {
    /// The switch `AGENTIHOOKS_SESSION_SCOPE=0` was set: nothing was read.
    pub disabled: bool,
    /// Nothing new since the cursor: nothing was read.
    pub up_to_date: bool,
    /// The read started from a saved cursor.
    pub resumed: bool,
    /// What was read.
    pub scan: ScanReport,
    /// What the change-detection stage did.
    pub outcome: Outcome,
}

/// Change detection and an optional second stage fed the same entries; a line is
/// decoded only when one of them may want it.
struct Both<'s, 'a, 't, R: ProjectResolver> {
    stage: &'s mut ChangeDetect<'a, R>,
    also: Option<&'s mut (dyn EntrySink + 't)>,
}

impl<R: ProjectResolver> EntrySink for Both<'_, '_, '_, R> {
    fn entry(&mut self, e: &Entry<'_>) {
        self.stage.entry(e);
        if let Some(a) = self.also.as_mut() {
            a.entry(e);
        }
    }

    fn wants(&self, p: &transcope_core::adapter::Probe<'_>) -> bool {
        EntrySink::wants(&*self.stage, p) || self.also.as_ref().is_some_and(|a| a.wants(p))
    }
}

/// [`observe_with`] reading whole files with plain reads (a hook: the transcript may be
/// growing).
#[allow(clippy::too_many_arguments)]
pub fn observe<R: ProjectResolver>(
    home: &Path,
    log: &ScopeLog,
    transcript: &Path,
    env: &Env,
    resolver: R,
    registry: &AdapterRegistry,
    framer: &Framer,
    mode: ReadMode,
    buffers: &mut Buffers,
    also: Option<&mut dyn EntrySink>,
) -> Result<ObserveReport, ScanError> {
    observe_with(
        home,
        log,
        transcript,
        env,
        resolver,
        registry,
        framer,
        mode,
        ReadPolicy::Read,
        buffers,
        also,
    )
}

/// Observe `transcript` for `log` (scope-log.md §3.2). `home` holds the cursors;
/// `also` is an extra per-entry stage fed the same entries in the same pass (markers).
/// `policy` applies to whole-file reads. An incremental read saves its cursor before
/// returning.
#[allow(clippy::too_many_arguments)]
pub fn observe_with<R: ProjectResolver>(
    home: &Path,
    log: &ScopeLog,
    transcript: &Path,
    env: &Env,
    resolver: R,
    registry: &AdapterRegistry,
    framer: &Framer,
    mode: ReadMode,
    policy: ReadPolicy,
    buffers: &mut Buffers,
    also: Option<&mut dyn EntrySink>,
) -> Result<ObserveReport, ScanError> {
    let (report, pending) = observe_deferred(
        home, log, transcript, env, resolver, registry, framer, mode, policy, buffers, also,
    )?;
    if let Some(p) = pending {
        // A cursor that cannot be saved only costs a full read next time.
        let _ = p.save();
    }
    Ok(report)
}

/// A cursor not yet saved: the caller saves it once everything taken from the lines it
/// covers (the markers fed to `also`) has been delivered, so a crash or a failed
/// delivery before that reads those lines again at the next Stop.
#[derive(Clone, Debug)]
pub struct PendingCursor {
    path: std::path::PathBuf,
    cursor: Cursor,
}

impl PendingCursor {
    /// Write the cursor (atomically, see [`cursor::save`]).
    pub fn save(self) -> std::io::Result<()> {
        cursor::save(&self.path, &self.cursor)
    }
}

/// [`observe_with`], handing back the incremental read's new cursor instead of saving
/// it. `None` for a whole read, or when the log could not be written (the old cursor
/// stays, so the next Stop reads those lines again and records them then).
#[allow(clippy::too_many_arguments)]
pub fn observe_deferred<R: ProjectResolver>(
    home: &Path,
    log: &ScopeLog,
    transcript: &Path,
    env: &Env,
    resolver: R,
    registry: &AdapterRegistry,
    framer: &Framer,
    mode: ReadMode,
    policy: ReadPolicy,
    buffers: &mut Buffers,
    mut also: Option<&mut dyn EntrySink>,
) -> Result<(ObserveReport, Option<PendingCursor>), ScanError> {
    let mut report = ObserveReport::default();
    if !scope_enabled(env) {
        report.disabled = true;
        return Ok((report, None));
    }
    // Only an incremental read has a cursor (and needs the size now); a whole read
    // checks the file when it opens it.
    let cursor = match mode {
        ReadMode::Incremental => Some((
            open_regular(transcript)?.1,
            cursor::cursor_path(home, log.session(), transcript),
        )),
        ReadMode::Whole => None,
    };
    let saved = cursor.as_ref().and_then(|(size, file)| {
        cursor::load(file)
            .filter(|c| c.session == log.session() && cursor::still_valid(c, transcript, *size))
    });
    // Nothing appended since the cursor: done, without reading the log (the common
    // Stop).
    if saved
        .as_ref()
        .zip(cursor.as_ref())
        .is_some_and(|(c, (size, _))| c.offset == *size)
    {
        report.up_to_date = true;
        return Ok((report, None));
    }
    let (from, adapter, seen) = match &saved {
        Some(c) => {
            let log_moved = last_transition_id(log) != c.log_last_transition_id;
            (
                c.resume(),
                Some(c.adapter.as_str()),
                if log_moved { None } else { c.seen() },
            )
        }
        None => (Resume::START, None, None),
    };
    report.resumed = saved.is_some();
    let mut stage = ChangeDetect::resume(log, env, resolver, seen);
    let tail = match mode {
        ReadMode::Whole => Tail::Decode,
        ReadMode::Incremental => Tail::DecodeIfComplete,
    };
    {
        let mut sink = Both {
            stage: &mut stage,
            also: match also {
                Some(ref mut a) => Some(&mut **a),
                None => None,
            },
        };
        report.scan = scan_file_with(
            transcript, from, registry, adapter, framer, tail, policy, buffers, &mut sink,
        )?;
    }
    report.outcome = stage.finish();
    // A run that could not write the log (its lock held too long, a full disk) keeps
    // the old cursor: the next Stop reads those lines again and records them then.
    let wrote_all = report.outcome.io_errors == 0;
    let mut pending = None;
    if let Some((size, cursor_file)) =
        cursor.filter(|_| !report.scan.adapter.is_empty() && wrote_all)
    {
        let head_len = size.min(FINGERPRINT_BYTES);
        if let Ok(head) = cursor::head_fingerprint(transcript, head_len) {
            let c = Cursor {
                version: CURSOR_VERSION,
                session: log.session().to_owned(),
                path: transcript.display().to_string(),
                adapter: report.scan.adapter.to_owned(),
                offset: if report.scan.array {
                    0
                } else {
                    report.scan.resume.offset
                },
                line: if report.scan.array {
                    1
                } else {
                    report.scan.resume.line
                },
                size,
                head_len,
                head_sha256: head,
                seen: report.outcome.seen.clone().map(|s| (s.cwd, s.branch)),
                log_last_transition_id: last_transition_id(log),
            };
            pending = Some(PendingCursor {
                path: cursor_file,
                cursor: c,
            });
        }
    }
    Ok((report, pending))
}

fn last_transition_id(log: &ScopeLog) -> Option<String> {
    log.transitions()
        .last()
        .and_then(|r| r.get("transition_id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

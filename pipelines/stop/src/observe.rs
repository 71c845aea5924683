//! `observe_transcript`: a transcript's folder and branch changes into the scope log,
//! through the engine's cursor store (every byte observed once) or, with a pipeline
//! built without cursors, the reference's whole-file algorithm (`observe --full`).

use std::path::Path;

use transcope_change_detect::{scope_enabled, ChangeDetect, Env, Outcome, ProjectResolver};
use transcope_core::stage::{BuildContext, Stage};
use transcope_engine::{Buffers, PendingCursor, Pipeline, Request, ScanError, ScanReport};
use transcope_jsonl::ReadPolicy;
use transcope_scopelog::ScopeLog;

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

/// One transcript to observe for one session's log.
#[derive(Clone, Copy)]
pub struct Observe<'a> {
    /// The session's log (its key is the cursor's).
    pub log: &'a ScopeLog,
    /// The transcript.
    pub transcript: &'a Path,
    /// The environment change detection records swarm, task and lane from.
    pub env: &'a Env,
    /// How a whole-file read reads.
    pub read: ReadPolicy,
    /// Stop reading at the first line boundary past this instant (the cursor then
    /// covers what was read: [`Request::until`]).
    pub until: Option<std::time::Instant>,
}

impl<'a> Observe<'a> {
    /// `transcript` for `log`, with plain reads.
    pub fn new(log: &'a ScopeLog, transcript: &'a Path, env: &'a Env) -> Observe<'a> {
        Observe {
            log,
            transcript,
            env,
            read: ReadPolicy::Read,
            until: None,
        }
    }

    /// The same, its read stopping at the first line boundary past `until`.
    pub fn until(mut self, until: Option<std::time::Instant>) -> Observe<'a> {
        self.until = until;
        self
    }
}

/// Observe `o.transcript` for `o.log` (scope-log.md §3.2) and save the cursor.
pub fn observe<R: ProjectResolver + Send>(
    pipeline: &Pipeline,
    o: &Observe<'_>,
    resolver: R,
    buffers: &mut Buffers,
) -> Result<ObserveReport, ScanError> {
    let (report, pending) = observe_deferred(pipeline, o, resolver, buffers, None)?;
    if let Some(p) = pending {
        // A cursor that cannot be saved only costs a read of the same bytes next time.
        let _ = p.save();
    }
    Ok(report)
}

/// [`observe`] with `also` (another stage, markers) fed the same entries in the same
/// pass, handing back the new cursor instead of saving it: the caller saves it once
/// what `also` found is handed on. `None` when nothing is to be saved (no cursor
/// store, or the log could not be written: the old cursor stays and the next read
/// takes those bytes again).
///
/// The stages the pipeline lists ([`Pipeline::stages`]) are built for the file and
/// run after change detection and `also`, in the same pass and under the same cursor:
/// a Stop, `observe` and a backfill all run them, and none of them names them.
pub fn observe_deferred<'o: 'x, 'x, R: ProjectResolver + Send + 'x>(
    pipeline: &Pipeline,
    o: &Observe<'o>,
    resolver: R,
    buffers: &mut Buffers,
    also: Option<&mut (dyn Stage + 'x)>,
) -> Result<(ObserveReport, Option<PendingCursor>), ScanError> {
    let mut report = ObserveReport::default();
    if !scope_enabled(o.env) {
        report.disabled = true;
        return Ok((report, None));
    }
    let mut stage = ChangeDetect::begin(o.log, o.env, resolver);
    // An invalid session id has no log, and so no cursor either.
    let key = o.log.path().map(|_| o.log.session());
    let req = Request::new(o.transcript, key).read(o.read).until(o.until);
    let mut listed = pipeline
        .stages()
        .build(&BuildContext::new(o.transcript, key, o.env));
    let seen = {
        let mut stages: Vec<&mut dyn Stage> = vec![&mut stage];
        stages.extend(also.map(|s| s as &mut dyn Stage));
        stages.extend(listed.iter_mut().map(|s| &mut **s as &mut dyn Stage));
        pipeline.observe(&req, &mut stages, buffers)?
    };
    report.up_to_date = seen.up_to_date;
    report.resumed = seen.resumed;
    report.scan = seen.scan;
    report.outcome = stage.into_outcome();
    Ok((report, seen.pending))
}

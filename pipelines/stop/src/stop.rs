//! The whole Stop: change detection at every Stop, then — when the brain writer is on
//! — drain the outbox, extract markers, attribute them through the writing session's
//! own scope log, and deliver them (scope-log.md §5.5).

use std::path::Path;

use serde_json::{json, Map, Value};
use transcope_brain::{
    drain, legacy_identity, BrainClient, BrainConfig, Delivery, DrainReport, HttpSink,
    MarkerRecord, OutboxSink, Sink, Writer, DEFAULT_TIMEOUT,
};
use transcope_change_detect::{scope_enabled, Env, ProjectResolver};
use transcope_core::{Instant, Marker, Stage};
use transcope_engine::{Buffers, PendingCursor, Pipeline, Request};
use transcope_markers::{markers_of_message, MarkerStage};
use transcope_scopelog::ScopeLog;

use crate::observe::{observe_deferred, Observe, ObserveReport};

/// One Stop's input.
pub struct StopInput<'a> {
    /// The writing session's scope-log key; `None` when no identity was established
    /// (its markers are still written, unattributed and naming no session).
    pub session: Option<&'a str>,
    /// The transcript, when the payload names one.
    pub transcript: Option<&'a Path>,
    /// The payload's `last_assistant_message`.
    pub last_message: Option<&'a str>,
    /// Stop reading the transcript at the first line boundary past this instant
    /// ([`Request::until`]): what was read is recorded, delivered and its cursor saved,
    /// and the next Stop reads on from there. `None`: read to the end.
    pub read_until: Option<std::time::Instant>,
}

/// What one Stop did.
#[derive(Debug, Default)]
pub struct StopSummary {
    /// Change detection's report.
    pub observe: Option<ObserveReport>,
    /// Markers found (after the per-Stop cap).
    pub markers: Vec<Marker>,
    /// Records POSTed and accepted.
    pub http: u64,
    /// Records written to the outbox.
    pub outbox: u64,
    /// Markers past the per-Stop cap (`BRAIN_WRITER_MAX_MARKERS`): attributed like
    /// the others and written to the outbox (the next drain sends them), never POSTed
    /// by this Stop and never dropped. Counted in `outbox` too.
    pub over_cap: u64,
    /// Markers found but not delivered because the scope log could not be read and
    /// written under its lock: the cursor stays, and the next Stop reads and
    /// attributes them again.
    pub held_back: u64,
    /// Records printed.
    pub printed: u64,
    /// The drain's report.
    pub drained: Option<DrainReport>,
    /// `unattributed_session_events_total`.
    pub unattributed: u64,
    /// The delivered records, in order.
    pub records: Vec<MarkerRecord>,
    /// Why the brain was not reached, when it was not (the drain's or a POST's
    /// failure; the markers then went to the outbox). Not an error of the Stop.
    pub brain_error: Option<String>,
    /// Errors (never fatal).
    pub errors: Vec<String>,
}

impl StopSummary {
    /// The one-line JSON summary a hook prints.
    pub fn to_json(&self) -> Value {
        let o = self.observe.as_ref();
        json!({
            "event": "stop",
            "transitions_recorded": o.map_or(0, |o| o.outcome.recorded),
            "markers": self.markers.len(),
            "written": {"http": self.http, "outbox": self.outbox, "stdout": self.printed},
            "over_cap": self.over_cap,
            "held_back": self.held_back,
            "drained": self.drained.as_ref().map_or(0, |d| d.sent),
            "read_cut": o.is_some_and(|o| o.scan.cut),
            "brain_error": self.brain_error,
            "unattributed": self.unattributed,
            "error": self.errors.first(),
        })
    }
}

/// Run one Stop: `pipeline` holds the adapters and the cursor store.
pub fn run_stop<R: ProjectResolver + Send>(
    home: &Path,
    input: StopInput<'_>,
    env: &Env,
    brain: &BrainConfig,
    mut resolver: R,
    pipeline: &Pipeline,
    sink: Option<&mut dyn Sink>,
) -> StopSummary {
    let mut sum = StopSummary::default();
    let scope_on = scope_enabled(env);
    let log = input.session.map(|s| {
        ScopeLog::open(home, s).with_lock_wait(transcope_scopelog::LockWait::AtMost(
            std::time::Duration::from_secs(2),
        ))
    });
    let client = brain
        .url
        .as_deref()
        .map(|u| BrainClient::new(u, DEFAULT_TIMEOUT).within(brain.budget));
    // 1. Drain the outbox first. A drain that could not reach the brain means no
    // POST for this Stop's markers either: they go straight to the outbox.
    let mut brain_down: Option<String> = None;
    if brain.enabled {
        if let Some(c) = &client {
            let mut replay = |attrs: &Map<String, Value>, session: Option<&str>, folder: &str| {
                legacy_identity(home, session, attrs, folder, &Env::new(), &mut resolver)
            };
            let report = drain(&brain.outbox, c, &brain.source, &mut replay);
            if report.post_failed {
                brain_down = report.reason.clone();
            }
            sum.drained = Some(report);
        }
    }
    // 2. Change detection (and marker extraction in the same pass).
    let mut stage = brain.enabled.then(MarkerStage::default);
    let mut buffers = Buffers::default();
    // Saved only once the markers read with it are delivered (at-least-once: a Stop
    // killed or failing before that reads the same lines again; the outbox and the
    // idempotency key make the repeat harmless).
    let mut pending: Option<PendingCursor> = None;
    if let (Some(t), Some(log)) = (input.transcript, &log) {
        if scope_on {
            let also = stage.as_mut().map(|s| s as &mut dyn Stage);
            match observe_deferred(
                pipeline,
                &Observe::new(log, t, env).until(input.read_until),
                &mut resolver,
                &mut buffers,
                also,
            ) {
                Ok((r, p)) => {
                    if let Some(e) = &r.outcome.first_error {
                        sum.errors.push(e.clone());
                    }
                    sum.observe = Some(r);
                    pending = p;
                }
                Err(e) => sum.errors.push(e.to_string()),
            }
        }
    }
    if let (Some(t), Some(s), true) = (input.transcript, stage.as_mut(), log.is_none() || !scope_on)
    {
        // No session, or the switch is off: markers as before, from the whole
        // transcript, with no cursor.
        let req = Request::new(t, None);
        if let Err(e) = pipeline.observe(&req, &mut [s], &mut buffers) {
            sum.errors.push(e.to_string());
        }
    }
    let Some(mut stage) = stage else {
        if let Some(p) = pending {
            // A cursor that cannot be saved only costs a full read next time.
            let _ = p.save();
        }
        return sum;
    };
    if sum
        .observe
        .as_ref()
        .is_some_and(|o| o.outcome.lock_unusable)
    {
        // The log cannot be locked, so it cannot be read as it stands: attributing
        // through it is a guess. Nothing is delivered, no cursor saved; the next Stop
        // with a usable lock reads these lines again.
        return sum;
    }
    // 3. Markers, with the payload's last message as the fallback.
    let mut markers = stage.take(None);
    if markers.is_empty() {
        if let Some(msg) = input.last_message.filter(|m| !m.is_empty()) {
            markers = markers_of_message(msg, &Instant::now().to_python_isoformat());
        }
    }
    // The log could not be read and written under its lock: attributing now would
    // use a log that may lack this very transcript's rows. Deliver nothing and save
    // no cursor (the engine kept the old one): the next Stop reads these bytes
    // again and attributes their markers against the log as it then stands.
    if sum
        .observe
        .as_ref()
        .is_some_and(|o| o.outcome.io_errors > 0)
    {
        sum.held_back = markers.len() as u64;
        return sum;
    }
    let over_cap = markers.split_off(brain.max_markers.min(markers.len()));
    // 4. Attribution through the writing session's own log, read once (and not at all
    // when there is nothing to attribute: the common Stop).
    let rows = match &log {
        Some(l) if !markers.is_empty() || !over_cap.is_empty() => l.transitions(),
        _ => Vec::new(),
    };
    sum.brain_error.clone_from(&brain_down);
    let (mut http, mut plain) = (None, None);
    let sink: &mut dyn Sink = match sink {
        Some(s) => s,
        None => {
            let outbox = OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
            match (&client, brain_down) {
                (Some(c), Some(why)) => http.insert(HttpSink::new(c.clone(), outbox).given_up(why)),
                (Some(c), None) => http.insert(HttpSink::new(c.clone(), outbox)),
                (None, _) => plain.insert(outbox),
            }
        }
    };
    let writer = Writer {
        home,
        session: input.session,
        scope_on,
        env,
        folder: &brain.folder,
        source: &brain.source,
    };
    let (records, unattributed) = writer.attribute(&markers, &rows, &mut resolver);
    sum.unattributed = unattributed;
    let mut delivered_all = true;
    for rec in records {
        match sink.deliver(&rec) {
            Ok(Delivery::Sent) => sum.http += 1,
            Ok(Delivery::Outboxed(_)) => sum.outbox += 1,
            Ok(Delivery::Printed) => sum.printed += 1,
            Err(e) => {
                delivered_all = false;
                sum.errors.push(e.to_string());
            }
        }
        sum.records.push(rec);
    }
    if let Some(f) = http.and_then(|h: HttpSink| h.last_failure) {
        sum.brain_error = Some(f);
    }
    // Past the cap: to the outbox, attributed now (under the log just written), so
    // a Stop that reads two turns at once loses neither.
    if !over_cap.is_empty() {
        let (records, unattributed) = writer.attribute(&over_cap, &rows, &mut resolver);
        sum.unattributed += unattributed;
        let mut outbox = OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
        match outbox.deliver_all(&records) {
            Ok(done) => {
                sum.over_cap = done.len() as u64;
                sum.outbox += done.len() as u64;
                sum.records.extend(records);
            }
            Err(e) => {
                delivered_all = false;
                sum.errors.push(e.to_string());
            }
        }
    }
    sum.markers = markers;
    if let Some(p) = pending.filter(|_| delivered_all) {
        let _ = p.save();
    }
    sum
}

//! The whole Stop: change detection at every Stop, then — when the brain writer is on
//! — drain the outbox, extract markers, attribute them through the writing session's
//! own scope log, and deliver them (scope-log.md §5.5).

use std::path::Path;

use serde_json::{json, Map, Value};
use transcope_brain::{
    drain, legacy_identity, BrainClient, BrainConfig, Delivery, DrainReport, HttpSink,
    MarkerRecord, OutboxSink, Sink, Writer, DEFAULT_TIMEOUT,
};
use transcope_change_detect::{scope_enabled, Env, Resolving};
use transcope_core::{Found, Instant, Marker};
use transcope_engine::{Buffers, PendingCursor, Pipeline, Request};
use transcope_index::{
    deliver, pending_flag, set_pending_flag, Change, Claimed, DeliverReport, Index, Lease,
    Observed, Origin, State, Take,
};
use transcope_markers::markers_of_message;
use transcope_scopelog::ScopeLog;

use transcope_observe::{
    observe_deferred, read_with_stages, Handed, Observe, ObserveReport, Routes,
};

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
    /// Markers found (the transcript's new bytes, else the payload's last message).
    pub markers: Vec<Marker>,
    /// Of those, new to the ledger.
    pub recorded: u64,
    /// Records POSTed and accepted.
    pub http: u64,
    /// Records written to the outbox.
    pub outbox: u64,
    /// The session's markers still pending in the ledger after this Stop: past the
    /// per-Stop cap (`BRAIN_WRITER_MAX_MARKERS`), found with the brain writer off, or
    /// not delivered; a later Stop or `transcope deliver` sends them. Never dropped.
    pub pending: u64,
    /// Markers this Stop left pending because of the per-Stop cap alone.
    pub over_cap: u64,
    /// Markers found but not recorded because the scope log could not be read and
    /// written under its lock: the cursor stays, and the next Stop reads and
    /// attributes them again.
    pub held_back: u64,
    /// A marker block opened and not closed by the end of what was read (it is
    /// delivered once it closes; until then, reported here).
    pub unclosed: u64,
    /// Records the brain refused (400, 404, 422): marked rejected in the ledger, never
    /// sent again.
    pub rejected: u64,
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
            "recorded": self.recorded,
            "written": {"http": self.http, "outbox": self.outbox, "stdout": self.printed},
            "pending": self.pending,
            "rejected": self.rejected,
            "over_cap": self.over_cap,
            "held_back": self.held_back,
            "unclosed": self.unclosed,
            "drained": self.drained.as_ref().map_or(0, |d| d.sent),
            "read_cut": o.is_some_and(|o| o.scan.cut),
            "brain_error": self.brain_error,
            "unattributed": self.unattributed,
            "error": self.errors.first(),
        })
    }
}

/// Run one Stop: `pipeline` holds the adapters and the cursor store.
///
/// Every marker found goes to the ledger (the index's `markers`), whatever the brain
/// writer's setting, before the cursor moves past it. With the writer on, the Stop
/// then delivers the oldest of its session's pending markers its hooks recorded, at
/// most `BRAIN_WRITER_MAX_MARKERS`; the rest stay pending for the next Stop (which,
/// even with nothing new to read, learns of them from one flag file) or `transcope
/// deliver`.
pub fn run_stop(
    home: &Path,
    input: StopInput<'_>,
    env: &Env,
    brain: &BrainConfig,
    resolver: impl Into<Resolving>,
    pipeline: &Pipeline,
    sink: Option<&mut dyn Sink>,
) -> StopSummary {
    let mut resolver: Resolving = resolver.into();
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
    // 2. Every listed stage in one pass: change detection, markers, usage, the rest.
    let mut buffers = Buffers::default();
    // Saved only once the markers read with it are in the ledger (or delivered): a
    // Stop killed or failing before that reads the same lines again, and the
    // idempotency key keeps each marker once.
    let mut pending: Option<PendingCursor> = None;
    let mut observed = None;
    let mut found = Found::new();
    if let (Some(t), Some(log)) = (input.transcript, &log) {
        if scope_on {
            let o = Observe::new(log, t, env)
                .until(input.read_until)
                .indexed(true);
            match observe_deferred(pipeline, &o, &resolver, &mut buffers, Routes::ALL) {
                Ok((mut r, f, p)) => {
                    if let Some(e) = &r.outcome.first_error {
                        sum.errors.push(e.clone());
                    }
                    observed = transcope_observe::observed(pipeline, &o, &mut r);
                    sum.observe = Some(r);
                    found = f;
                    pending = p;
                }
                Err(e) => sum.errors.push(e.to_string()),
            }
        }
    }
    if let (Some(t), true) = (
        input.transcript,
        brain.enabled && (log.is_none() || !scope_on),
    ) {
        // No session, or the switch is off: markers as before, from the whole
        // transcript, with no cursor (the ledger keeps each once).
        let req = Request::new(t, None);
        let markers_only = Routes {
            markers: true,
            ..Routes::NONE
        };
        match read_with_stages(
            pipeline,
            &req,
            (None, &resolver, env),
            markers_only,
            &mut buffers,
        ) {
            Ok((_, f)) => found = f,
            Err(e) => sum.errors.push(e.to_string()),
        }
    }
    if sum
        .observe
        .as_ref()
        .is_some_and(|o| o.outcome.lock_unusable)
    {
        // The log cannot be locked, so it cannot be read as it stands: attributing
        // through it is a guess. Nothing is recorded, no cursor saved; the next Stop
        // with a usable lock reads these lines again.
        return sum;
    }
    // 3. Markers, with the payload's last message as the fallback.
    let Handed {
        mut markers,
        unclosed,
        spent,
        facts,
    } = Handed::take(&mut found);
    sum.unclosed = u64::from(unclosed);
    if markers.is_empty() {
        if let Some(msg) = input.last_message.filter(|m| !m.is_empty()) {
            markers = markers_of_message(msg, &Instant::now().to_python_isoformat());
        }
    }
    // The log could not be read and written under its lock: attributing now would
    // use a log that may lack this very transcript's rows. Record nothing and save
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
    // 4. Attribution through the writing session's own log: the rows change detection
    // read and left (not read again) when they cover every event, else the log read
    // now; not at all when there is nothing to attribute (the common Stop with nothing
    // new).
    let rows = match &log {
        Some(l) if !markers.is_empty() || !spent.is_empty() || !facts.is_empty() => {
            let window = sum.observe.as_mut().and_then(|o| o.outcome.rows.take());
            let times = spent.iter().filter_map(|s| s.at);
            let times = times.chain(facts.iter().filter_map(|f| f.at));
            transcope_observe::rows_for(l, window, &markers, times)
        }
        _ => Vec::new(),
    };
    if let Some(item) = observed.as_mut() {
        item.usage = transcope_observe::spending(&rows, spent);
        item.facts = transcope_observe::noted(&rows, facts);
    }
    let writer = Writer {
        home,
        session: input.session,
        scope_on,
        env,
        folder: &brain.folder,
        source: &brain.source,
    };
    let (found, unattributed) = transcope_observe::found(&writer, &markers, &rows, &mut resolver);
    sum.unattributed = unattributed;
    let records: Vec<MarkerRecord> = found.iter().map(|f| f.record.clone()).collect();
    sum.markers = markers;
    // 5. The ledger: opened only when there is something to record, or the writer is
    // on and this session's flag says markers wait.
    let key = log
        .as_ref()
        .filter(|l| l.path().is_some())
        .map(ScopeLog::session);
    let something = observed.is_some() || !found.is_empty();
    // The flag matters only to a Stop that would not open the index anyway.
    let flagged =
        !something && brain.enabled && key.is_some_and(|k| pending_flag(home, k).exists());
    let drained = sum.drained.as_ref().map(drained_states).unwrap_or_default();
    let mut index = None;
    if something || flagged || !drained.is_empty() {
        match Index::open(home) {
            Ok(i) => index = Some(i),
            Err(e) => sum.errors.push(e.to_string()),
        }
    }
    // What the drain sent is delivered: the ledger says so (the markers a drain
    // refused, rejected).
    if let Some(ix) = index.as_mut() {
        if let Err(e) = ix.settle_drained(&drained) {
            sum.errors.push(e.to_string());
        }
    }
    let mut recorded = !something;
    let mut new_keys = Vec::new();
    // With the writer on and a session, the markers this Stop delivers (its session's
    // oldest pending) are claimed in the transaction that records what it read: one
    // commit, not two.
    let mut claimed = None;
    // With no brain to post to, they are delivered there too: the outbox answers at
    // once, so the index's write lock is not held waiting on it, and what it did is
    // recorded in the same commit.
    let mut delivered = None;
    let local = sink.is_none() && client.is_none();
    if let (Some(ix), true) = (index.as_mut(), something) {
        let mut item = observed.unwrap_or_else(|| Observed::new(key.unwrap_or("")));
        item.markers = found.clone();
        let items = std::slice::from_ref(&item);
        let done = match key.filter(|_| brain.enabled) {
            Some(k) => {
                let (take, lease) = (session_take(k, brain), Lease::new());
                if local {
                    let mut outbox =
                        OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
                    ix.record_and_deliver(items, Origin::Hook, true, (&take, &lease), &mut outbox)
                        .map(|(done, c, report)| {
                            delivered = Some((c, report));
                            done
                        })
                } else {
                    ix.record_and_claim(items, Origin::Hook, true, &take, &lease)
                        .map(|(done, c)| {
                            claimed = Some((c, lease));
                            done
                        })
                }
            }
            None => ix.record(items, Origin::Hook, true),
        };
        match done {
            Ok(done) => {
                recorded = true;
                sum.recorded = done[0].new_markers();
                new_keys = found
                    .iter()
                    .zip(&done[0].new)
                    .filter(|(_, n)| **n)
                    .map(|(f, _)| f.record.idempotency_key.clone())
                    .collect();
            }
            Err(e) => sum.errors.push(e.to_string()),
        }
    }
    sum.brain_error.clone_from(&brain_down);
    if brain.enabled {
        let (mut http, mut plain) = (None, None);
        let sink: &mut dyn Sink = match sink {
            Some(s) => s,
            None => {
                let outbox = OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
                match (&client, brain_down) {
                    // With a ledger, a record the brain refuses is marked rejected there
                    // (the outbox would only quarantine it).
                    (Some(c), Some(why)) => http.insert(
                        HttpSink::new(c.clone(), outbox)
                            .given_up(why)
                            .rejecting(recorded),
                    ),
                    (Some(c), None) => {
                        http.insert(HttpSink::new(c.clone(), outbox).rejecting(recorded))
                    }
                    (None, _) => plain.insert(outbox),
                }
            }
        };
        match index.as_mut().filter(|_| recorded) {
            Some(ix) => match (&claimed, delivered) {
                (_, Some((c, report))) => tally(&c, Ok(report), &mut sum),
                (Some((c, lease)), None) => deliver_claimed(ix, c, lease, sink, &mut sum),
                (None, None) => deliver_pending(ix, key, &new_keys, brain, sink, &mut sum),
            },
            // No ledger: deliver directly, as before it (the first `max` through the
            // sink, the rest to the outbox), so nothing found is lost.
            None => deliver_direct(&records, brain, sink, &mut sum),
        }
        if let Some(f) = http.and_then(|h: HttpSink| h.last_failure) {
            sum.brain_error = Some(f);
        }
    }
    if let (Some(ix), Some(k), true) = (index.as_ref(), key, recorded) {
        match ix.pending_count(Some(k), Some(Origin::Hook)) {
            Ok(n) => {
                sum.pending = n;
                set_pending_flag(home, k, n > 0);
            }
            Err(e) => sum.errors.push(e.to_string()),
        }
    }
    // The cursor moves only once the index holds what was read (the session, its
    // usage, its markers): a Stop that could not record reads the same bytes again
    // next time, and every effect of a second read is idempotent. Markers delivered
    // directly meanwhile (no ledger) may be delivered again; their idempotency keys
    // make that harmless, where a lost request or marker could not be undone.
    if let Some(p) = pending.filter(|_| recorded) {
        let _ = p.save();
    }
    sum
}

/// The ledger states an outbox drain's sends give their keys.
fn drained_states(d: &DrainReport) -> Vec<Change> {
    let sent = d
        .delivered
        .iter()
        .map(|k| (k.clone(), State::Delivered, None));
    let refused = d
        .refused
        .iter()
        .map(|(k, s)| (k.clone(), State::Rejected, Some(format!("HTTP {s}"))));
    sent.chain(refused).collect()
}

/// What a Stop of session `key` delivers: the oldest pending markers its hooks
/// recorded, at most `BRAIN_WRITER_MAX_MARKERS`.
fn session_take<'a>(key: &'a str, brain: &BrainConfig) -> Take<'a> {
    Take {
        session: Some(key),
        origin: Some(Origin::Hook),
        limit: Some(brain.max_markers),
        ..Take::default()
    }
}

/// Deliver the oldest pending markers of `key` that hooks recorded (or, with no
/// session, the ones this Stop recorded), at most `max`: claimed first, as `deliver`
/// claims them, so a marker another run is sending is not sent twice.
fn deliver_pending(
    ix: &mut Index,
    key: Option<&str>,
    new_keys: &[String],
    brain: &BrainConfig,
    sink: &mut dyn Sink,
    sum: &mut StopSummary,
) {
    let take = match key {
        Some(k) => session_take(k, brain),
        None => Take {
            keys: Some(new_keys),
            limit: Some(brain.max_markers),
            ..Take::default()
        },
    };
    let lease = Lease::new();
    match ix.claim(&take, &lease) {
        Ok(claimed) => deliver_claimed(ix, &claimed, &lease, sink, sum),
        Err(e) => sum.errors.push(e.to_string()),
    }
}

/// Deliver the rows `claimed` under `lease` through `sink` and settle them.
fn deliver_claimed(
    ix: &mut Index,
    claimed: &Claimed,
    lease: &Lease,
    sink: &mut dyn Sink,
    sum: &mut StopSummary,
) {
    let report = deliver(ix, claimed, lease, sink);
    tally(claimed, report, sum);
}

/// What delivering the rows `claimed` did, in the Stop's summary.
fn tally(
    claimed: &Claimed,
    report: Result<DeliverReport, transcope_index::IndexError>,
    sum: &mut StopSummary,
) {
    sum.over_cap = claimed.left;
    let rows = &claimed.rows;
    match report {
        Ok(report) => {
            sum.http += report.sent;
            sum.outbox += report.outbox;
            sum.printed += report.printed;
            sum.rejected += report.rejected;
            let done: std::collections::HashSet<&str> =
                report.keys.iter().map(|(k, _)| k.as_str()).collect();
            sum.records.extend(
                rows.iter()
                    .filter(|r| done.contains(r.idempotency_key.as_str()))
                    .map(|r| r.record()),
            );
            sum.errors.extend(report.errors);
        }
        Err(e) => sum.errors.push(e.to_string()),
    }
}

/// Deliver `records` without a ledger: the first `max` through `sink`, the rest to
/// the outbox.
fn deliver_direct(
    records: &[MarkerRecord],
    brain: &BrainConfig,
    sink: &mut dyn Sink,
    sum: &mut StopSummary,
) {
    let cap = brain.max_markers.min(records.len());
    for rec in &records[..cap] {
        match sink.deliver(rec) {
            Ok(Delivery::Sent) => sum.http += 1,
            Ok(Delivery::Outboxed(_)) => sum.outbox += 1,
            Ok(Delivery::Printed) => sum.printed += 1,
            Ok(Delivery::Rejected(_)) => sum.rejected += 1,
            Err(e) => sum.errors.push(e.to_string()),
        }
        sum.records.push(rec.clone());
    }
    if cap < records.len() {
        let mut outbox = OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
        match outbox.deliver_all(&records[cap..]) {
            Ok(done) => {
                sum.over_cap = done.len() as u64;
                sum.outbox += done.len() as u64;
                sum.records.extend_from_slice(&records[cap..]);
            }
            Err(e) => sum.errors.push(e.to_string()),
        }
    }
}

//! The whole Stop: change detection at every Stop, then — when the brain writer is on
//! — drain the outbox, extract markers, attribute them through the writing session's
//! own scope log, and deliver them (scope-log.md §5.5).

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use transcope_change_detect::{scope_enabled, Env, ProjectResolver};
use transcope_core::adapter::AdapterRegistry;
use transcope_core::{Attribution, Instant, Label};
use transcope_jsonl::Framer;
use transcope_markers::body::{build_body, idempotency_key, marker_scope, BodyContext, Identity};
use transcope_markers::{markers_of_message, Marker, MarkerStage};
use transcope_scopelog::ScopeLog;
use transcope_sinks::{
    drain, BrainClient, Delivery, DrainReport, HttpSink, MarkerRecord, OutboxSink, Sink,
    DEFAULT_TIMEOUT,
};

use crate::observe::{observe_deferred, ObserveReport, PendingCursor, ReadMode};
use crate::scan::{scan_file, Buffers, Resume, Tail};
use crate::session_start::lookup;

/// The default `BRAIN_WRITER_MAX_MARKERS`.
pub const DEFAULT_MAX_MARKERS: usize = 5;

/// Brain-writer settings, read once from the environment.
#[derive(Clone, Debug)]
pub struct BrainConfig {
    /// `BRAIN_WRITER_ENABLED` is on.
    pub enabled: bool,
    /// `BRAIN_URL`.
    pub url: Option<String>,
    /// The outbox directory.
    pub outbox: PathBuf,
    /// `BRAIN_WRITER_MAX_MARKERS` (markers per Stop).
    pub max_markers: usize,
    /// `AGENTICORE_AGENT_NAME`, else `"agent"` (the body's `source`).
    pub source: String,
    /// `AGENTICORE_AGENT_NAME`, else `USER`, else `"unknown"` (the outbox's `agent_name`).
    pub agent_name: String,
    /// `CLAUDE_PROJECT_DIR` or `""` (the outbox's `project`).
    pub project: String,
    /// The live folder: `CLAUDE_PROJECT_DIR`, else the process's directory.
    pub folder: String,
}

/// Whether an environment value means "on".
pub fn truthy_flag(v: Option<&String>) -> bool {
    v.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

impl BrainConfig {
    /// Read the settings from `env` (the hook's environment).
    pub fn from_env(home: &Path, env: &Env) -> BrainConfig {
        let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let name = get("AGENTICORE_AGENT_NAME");
        BrainConfig {
            enabled: truthy_flag(env.get("BRAIN_WRITER_ENABLED")),
            url: get("BRAIN_URL"),
            outbox: transcope_sinks::outbox_dir_from_env(
                home,
                env.get("BRAIN_WRITER_OUTBOX").map(String::as_str),
            ),
            max_markers: get("BRAIN_WRITER_MAX_MARKERS")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(DEFAULT_MAX_MARKERS),
            source: name.clone().unwrap_or_else(|| "agent".into()),
            agent_name: name
                .or_else(|| get("USER"))
                .unwrap_or_else(|| "unknown".into()),
            project: get("CLAUDE_PROJECT_DIR").unwrap_or_default(),
            folder: get("CLAUDE_PROJECT_DIR").unwrap_or_else(|| {
                std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            }),
        }
    }
}

/// One Stop's input.
pub struct StopInput<'a> {
    /// The writing session's scope-log key; `None` when no identity was established
    /// (its markers are still written, unattributed and naming no session).
    pub session: Option<&'a str>,
    /// The transcript, when the payload names one.
    pub transcript: Option<&'a Path>,
    /// The payload's `last_assistant_message`.
    pub last_message: Option<&'a str>,
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
    /// Records printed.
    pub printed: u64,
    /// The drain's report.
    pub drained: Option<DrainReport>,
    /// `unattributed_session_events_total`.
    pub unattributed: u64,
    /// The delivered records, in order.
    pub records: Vec<MarkerRecord>,
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
            "drained": self.drained.as_ref().map_or(0, |d| d.sent),
            "unattributed": self.unattributed,
            "error": self.errors.first(),
        })
    }
}

/// Run one Stop.
#[allow(clippy::too_many_arguments)]
pub fn run_stop<R: ProjectResolver>(
    home: &Path,
    input: StopInput<'_>,
    env: &Env,
    brain: &BrainConfig,
    mut resolver: R,
    registry: &AdapterRegistry,
    framer: &Framer,
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
        .map(|u| BrainClient::new(u, DEFAULT_TIMEOUT));
    // 1. Drain the outbox first.
    if brain.enabled {
        if let Some(c) = &client {
            let mut replay = |attrs: &Map<String, Value>, session: Option<&str>, folder: &str| {
                legacy_identity(home, session, attrs, folder, &Env::new(), &mut resolver)
            };
            sum.drained = Some(drain(&brain.outbox, c, &brain.source, &mut replay));
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
            let also = stage
                .as_mut()
                .map(|s| s as &mut dyn transcope_core::adapter::EntrySink);
            match observe_deferred(
                home,
                log,
                t,
                env,
                &mut resolver,
                registry,
                framer,
                ReadMode::Incremental,
                transcope_jsonl::ReadPolicy::Read,
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
        } else if let Some(s) = stage.as_mut() {
            // The switch is off: markers as before, from the whole transcript.
            if let Err(e) = scan_file(
                t,
                Resume::START,
                registry,
                None,
                framer,
                Tail::Decode,
                &mut buffers,
                s,
            ) {
                sum.errors.push(e.to_string());
            }
        }
    } else if let (Some(t), Some(s)) = (input.transcript, stage.as_mut()) {
        // No session: markers are still read and written, unattributed.
        if let Err(e) = scan_file(
            t,
            Resume::START,
            registry,
            None,
            framer,
            Tail::Decode,
            &mut buffers,
            s,
        ) {
            sum.errors.push(e.to_string());
        }
    }
    let Some(stage) = stage else {
        if let Some(p) = pending {
            // A cursor that cannot be saved only costs a full read next time.
            let _ = p.save();
        }
        return sum;
    };
    // 3. Markers, with the payload's last message as the fallback.
    let mut markers = stage.finish(Some(brain.max_markers));
    if markers.is_empty() {
        if let Some(msg) = input.last_message.filter(|m| !m.is_empty()) {
            markers = markers_of_message(msg, &Instant::now().to_python_isoformat());
            markers.truncate(brain.max_markers);
        }
    }
    // 4. Attribution through the writing session's own log, read once.
    let rows = log.as_ref().map(|l| l.transitions()).unwrap_or_default();
    let mut owned_sink;
    let sink: &mut dyn Sink = match sink {
        Some(s) => s,
        None => {
            let outbox = OutboxSink::new(&brain.outbox, &brain.agent_name, &brain.project);
            owned_sink = match &client {
                Some(c) => Box::new(HttpSink::new(c.clone(), outbox)) as Box<dyn Sink>,
                None => Box::new(outbox),
            };
            &mut owned_sink
        }
    };
    let (records, unattributed) = attribute_markers(
        home,
        input.session,
        &markers,
        &rows,
        scope_on,
        env,
        &brain.folder,
        &brain.source,
        &mut resolver,
    );
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
    sum.markers = markers;
    if let Some(p) = pending.filter(|_| delivered_all) {
        let _ = p.save();
    }
    sum
}

/// Attribute `markers` through the writing session's `rows` and build their records
/// (scope-log.md §5.3–§5.6, decision 164). Returns the records and
/// `unattributed_session_events_total`.
#[allow(clippy::too_many_arguments)]
pub fn attribute_markers<R: ProjectResolver>(
    home: &Path,
    session: Option<&str>,
    markers: &[Marker],
    rows: &[transcope_scopelog::Row],
    scope_on: bool,
    env: &Env,
    folder: &str,
    source: &str,
    resolver: &mut R,
) -> (Vec<MarkerRecord>, u64) {
    let mut unattributed = 0;
    let mut out = Vec::with_capacity(markers.len());
    for m in markers {
        let scope: Option<Attribution> = match session {
            Some(_) => marker_scope(rows, m, None, false, scope_on),
            // No identity: unknown, unless the marker says fleet (decision 164).
            None if scope_on => Some(
                marker_scope(&[], m, None, false, true)
                    .unwrap_or_else(|| Attribution::bare(Label::Unknown)),
            ),
            None => None,
        };
        if scope.as_ref().is_some_and(|s| s.label.is_unattributed()) {
            unattributed += 1;
        }
        let mut look = |attrs: &Map<String, Value>| {
            legacy_identity(home, session, attrs, folder, env, resolver)
        };
        let body = build_body(
            m,
            BodyContext {
                session,
                scope: scope.as_ref(),
                live: true,
                lookup: &mut look,
                source,
            },
        );
        out.push(MarkerRecord {
            body,
            content: m.content.clone(),
            idempotency_key: idempotency_key(session.unwrap_or(""), &m.kind, &m.content),
            session: session.map(str::to_owned),
        });
    }
    (out, unattributed)
}

/// The preceding identity: the session index's row for the writing session, else the
/// marker's own `cwd` (or the folder) resolved with `env`.
fn legacy_identity<R: ProjectResolver>(
    home: &Path,
    session: Option<&str>,
    attrs: &Map<String, Value>,
    folder: &str,
    env: &Env,
    resolver: &mut R,
) -> Option<Identity> {
    if let Some(id) = session.and_then(|s| lookup(home, s)) {
        return Some(id);
    }
    let target = attrs
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .unwrap_or(folder);
    if target.is_empty() {
        return None;
    }
    let identity = resolver.resolve(target, env).ok()??;
    let a = identity.attributes();
    Some(a.map(|(k, v)| (k, v.to_owned())))
}

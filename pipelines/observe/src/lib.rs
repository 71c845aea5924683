//! # transcope-observe: one read of one transcript for its session
//!
//! What a Stop, `observe` and a backfill share, so that neither composition depends on
//! the other: a transcript's new bytes read through the engine's pipeline (the cursor
//! store: every byte observed once, or the reference's whole-file read with a pipeline
//! built without one), change detection's folder and branch changes appended to the
//! session's scope log, the other stages fed the same entries in the same pass, and
//! what they found attributed through the log's rows ([`attribute_into`]) into the
//! index's [`Observed`] record.
//!
//! ```
//! use transcope_change_detect::{Env, NoProjects};
//! use transcope_engine::{CursorPolicy, Pipeline};
//! use transcope_scopelog::ScopeLog;
//! use transcope_observe::{observe, Observe};
//!
//! let home = tempfile::tempdir().unwrap();
//! let t = home.path().join("t.jsonl");
//! std::fs::write(&t, concat!(
//!     r#"{"type":"user","timestamp":"2026-10-08T10:00:00Z","cwd":"/a","gitBranch":"main"}"#, "\n",
//!     r#"{"type":"user","timestamp":"2026-10-08T10:05:00Z","cwd":"/b","gitBranch":"main"}"#, "\n",
//! )).unwrap();
//! let mut adapters = transcope_core::adapter::AdapterRegistry::new();
//! adapters.register(Box::new(transcope_adapter_claude::ClaudeFactory));
//! let mut stages = transcope_core::StageRegistry::new();
//! stages.register(Box::new(transcope_change_detect::ChangeDetectFactory));
//! let pipeline = Pipeline::builder(adapters)
//!     .cursors(CursorPolicy::store(home.path()))
//!     .stages(stages)
//!     .build();
//! let log = ScopeLog::open(home.path(), "s1");
//! let env = Env::new();
//! let report = observe(&pipeline, &Observe::new(&log, &t, &env), NoProjects, &mut Default::default()).unwrap();
//! assert_eq!(report.outcome.recorded, 2);
//! // The same bytes again: nothing.
//! let again = observe(&pipeline, &Observe::new(&log, &t, &env), NoProjects, &mut Default::default()).unwrap();
//! assert!(again.up_to_date);
//! ```
#![warn(missing_docs)]

use std::path::Path;

use std::any::{Any, TypeId};

use transcope_change_detect::{scope_enabled, Env, Outcome, ProjectResolver, Resolving};
use transcope_core::stage::{BuildContext, Facts, Found, Stage, StageFactory};
use transcope_engine::{Buffers, PendingCursor, Pipeline, Request, ScanError, ScanReport};
use transcope_index::Observed;
use transcope_jsonl::ReadPolicy;
use transcope_markers::Markers;
use transcope_scopelog::ScopeLog;
use transcope_usage::Requests;

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
    /// The transcript, opened already by the caller ([`Request::opened`]).
    pub opened: Option<&'a transcope_engine::Handoff>,
    /// The caller records what the read found in the index before it saves the cursor
    /// ([`Request::committed_after`]): a read stopped before then is read again.
    pub indexed: bool,
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
            opened: None,
            indexed: false,
        }
    }

    /// The same, its results recorded in the index before its cursor is saved
    /// ([`Observe::indexed`]).
    pub fn indexed(mut self, yes: bool) -> Observe<'a> {
        self.indexed = yes;
        self
    }

    /// The same, its read stopping at the first line boundary past `until`.
    pub fn until(mut self, until: Option<std::time::Instant>) -> Observe<'a> {
        self.until = until;
        self
    }
}

/// Observe `o.transcript` for `o.log` (scope-log.md §3.2) and save the cursor: change
/// detection and the listed stages that keep their own results (nothing is recorded in
/// the index, so no stage whose results go there is built).
pub fn observe(
    pipeline: &Pipeline,
    o: &Observe<'_>,
    resolver: impl Into<Resolving>,
    buffers: &mut Buffers,
) -> Result<ObserveReport, ScanError> {
    // Change detection is always routed (observe_deferred).
    let (report, _, pending) =
        observe_deferred(pipeline, o, &resolver.into(), buffers, Routes::NONE)?;
    if let Some(p) = pending {
        // A cursor that cannot be saved only costs a read of the same bytes next time.
        let _ = p.save();
    }
    Ok(report)
}

/// Which outputs a read routes somewhere ([`StageFactory::outputs`]): a listed stage
/// that hands on a type the read does not route is not built for it (a rebuild records
/// no transitions; a backfill without markers builds no marker stage; a read that
/// keeps no index keeps no [`Facts`]). A stage that declares no output is always built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Routes {
    /// Change detection's [`Outcome`]: the transitions recorded in the session's log.
    pub changes: bool,
    /// The [`Markers`] found.
    pub markers: bool,
    /// The requests' usage ([`Requests`]).
    pub usage: bool,
    /// [`Facts`] for the index.
    pub facts: bool,
}

impl Routes {
    /// Nothing routed: only the stages that declare no output.
    pub const NONE: Routes = Routes {
        changes: false,
        markers: false,
        usage: false,
        facts: false,
    };
    /// Everything routed: every listed stage.
    pub const ALL: Routes = Routes {
        changes: true,
        markers: true,
        usage: true,
        facts: true,
    };

    /// Whether a stage of `f` is built.
    pub fn keeps(&self, f: &dyn StageFactory) -> bool {
        let routed = [
            (TypeId::of::<Outcome>(), self.changes),
            (TypeId::of::<Markers>(), self.markers),
            (TypeId::of::<Requests>(), self.usage),
            (TypeId::of::<Facts>(), self.facts),
        ];
        f.outputs()
            .iter()
            .all(|t| routed.iter().all(|(r, on)| r != t || *on))
    }
}

/// The listed stages `routes` keeps, built for one read of `path` (session `key`) with
/// the session's log and `resolver` lent, fed by `pipeline` as `req` asks; what they
/// handed on, in [`Found`]. Every composition reads through here (a rebuild without a
/// log as much as a Stop).
pub fn read_with_stages(
    pipeline: &Pipeline,
    req: &Request<'_>,
    (log, resolver, env): (Option<&ScopeLog>, &Resolving, &Env),
    routes: Routes,
    buffers: &mut Buffers,
) -> Result<(transcope_engine::Observation, Found), ScanError> {
    // Found by type: the order does not matter.
    let mut lending: Vec<&(dyn Any + Sync)> = vec![resolver];
    lending.extend(log.map(|l| l as &(dyn Any + Sync)));
    let ctx = BuildContext::new(req.path, req.key, env).lending(&lending);
    let mut stages = pipeline.stages().build_where(&ctx, |f| routes.keeps(f));
    let seen = {
        let mut refs: Vec<&mut dyn Stage> = stages
            .iter_mut()
            .map(|s| &mut **s as &mut dyn Stage)
            .collect();
        pipeline.observe(req, &mut refs, buffers)?
    };
    let mut found = Found::new();
    for s in &mut stages {
        s.hand_on(&mut found);
    }
    Ok((seen, found))
}

/// [`observe`] with every stage `routes` keeps fed the same entries in the same pass,
/// handing back what they found ([`Found`], change detection's [`Outcome`] taken out
/// into the report) and the new cursor instead of saving it: the caller saves it once
/// what they found is handed on. No cursor (`None`) when nothing is to be saved (no
/// cursor store, or the log could not be written: the old cursor stays and the next
/// read takes those bytes again).
pub fn observe_deferred(
    pipeline: &Pipeline,
    o: &Observe<'_>,
    resolver: &Resolving,
    buffers: &mut Buffers,
    routes: Routes,
) -> Result<(ObserveReport, Found, Option<PendingCursor>), ScanError> {
    let mut report = ObserveReport::default();
    if !scope_enabled(o.env) {
        report.disabled = true;
        return Ok((report, Found::new(), None));
    }
    // An invalid session id has no log, and so no cursor either.
    let key = o.log.path().map(|_| o.log.session());
    let req = Request::new(o.transcript, key)
        .read(o.read)
        .until(o.until)
        .opened(o.opened)
        .committed_after(o.indexed);
    let (seen, mut found) = read_with_stages(
        pipeline,
        &req,
        (Some(o.log), resolver, o.env),
        Routes {
            changes: true,
            ..routes
        },
        buffers,
    )?;
    report.up_to_date = seen.up_to_date;
    report.resumed = seen.resumed;
    report.scan = seen.scan;
    report.outcome = found.take::<Outcome>().unwrap_or_default();
    Ok((report, found, seen.pending))
}

/// What a read adds to the index: the session (its parent, agent and transcript), the
/// first and last times of the bytes read, the rows change detection appended (taken
/// from `report`). `None` when nothing was read.
pub fn observed(
    pipeline: &Pipeline,
    o: &Observe<'_>,
    report: &mut ObserveReport,
) -> Option<Observed> {
    if report.disabled || report.up_to_date || o.log.path().is_none() {
        return None;
    }
    let scan = &report.scan;
    let key = o.log.session();
    // A container that records the session's family says so in the read; else the
    // layout tells it from the key.
    let parent = scan.parent.clone().or_else(|| {
        pipeline
            .registry()
            .by_name(scan.adapter)
            .and_then(|f| f.layout())
            .and_then(|l| l.parent(key))
    });
    Some(Observed {
        session: key.to_owned(),
        parent,
        agent: (!scan.adapter.is_empty()).then(|| scan.adapter.to_owned()),
        transcript: Some(o.transcript.to_path_buf()),
        // Found in the bytes as the read framed them (`transcope_core::times`).
        span: transcope_index::Span::of(&scan.times),
        rows: std::mem::take(&mut report.outcome.written),
        markers: Vec::new(),
        usage: Vec::new(),
        facts: Vec::new(),
    })
}

/// `markers` attributed by `writer` through `rows`, as ledger entries, with
/// `unattributed_session_events_total`.
pub fn found<R: ProjectResolver>(
    writer: &transcope_brain::Writer<'_>,
    markers: &[transcope_core::Marker],
    rows: &[transcope_scopelog::Row],
    resolver: &mut R,
) -> (Vec<transcope_index::Found>, u64) {
    let (records, unattributed) = writer.attribute(markers, rows, resolver);
    let found = records
        .into_iter()
        .zip(markers)
        .map(|(r, m)| transcope_index::Found::new(r, m))
        .collect();
    (found, unattributed)
}

/// What [`observe_indexed`] did besides observing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Indexed {
    /// Markers found.
    pub markers: u64,
    /// Of those, new to the ledger.
    pub recorded: u64,
    /// Why the index could not be written (the cursor then stays where it was).
    pub error: Option<String>,
}

/// [`observe`] with every listed stage, that records the read in the index of `home`
/// (origin `observe`): the session, its transitions, the markers, usage and facts
/// found, attributed through the session's log. The cursor is saved once they are.
pub fn observe_indexed(
    pipeline: &Pipeline,
    o: &Observe<'_>,
    home: &Path,
    resolver: impl Into<Resolving>,
    buffers: &mut Buffers,
) -> Result<(ObserveReport, Indexed), ScanError> {
    let mut resolver = resolver.into();
    let o = &o.indexed(true);
    let (mut report, mut found, pending) =
        observe_deferred(pipeline, o, &resolver, buffers, Routes::ALL)?;
    let mut done = Indexed::default();
    let Some(mut item) = observed(pipeline, o, &mut report) else {
        return Ok((report, done));
    };
    let writer = transcope_brain::Writer::archived(home, o.log.session(), o.env);
    done.markers = attribute_into(
        &mut item,
        o.log,
        report.outcome.rows.take(),
        &writer,
        &mut found,
        &mut resolver,
    )
    .markers;
    let recorded = transcope_index::Index::open(home).and_then(|mut ix| {
        ix.record(
            std::slice::from_ref(&item),
            transcope_index::Origin::Observe,
            true,
        )
    });
    match recorded {
        Ok(r) => {
            done.recorded = r[0].new_markers();
            if let Some(p) = pending {
                // A cursor that cannot be saved only costs a read of the same bytes next time.
                let _ = p.save();
            }
        }
        Err(e) => done.error = Some(e.to_string()),
    }
    Ok((report, done))
}

/// The scope in force at each time asked, from `rows`: the last row in file order
/// whose time is at or before it (scope-log.md §4.1, [`transcope_scopelog::InForce`],
/// as a marker is attributed); none when no row is, or there is no time. Each row's
/// scope is made once and shared by everything under it.
struct ScopeAt<'r> {
    rows: &'r [transcope_scopelog::Row],
    in_force: transcope_scopelog::InForce,
    scopes: Vec<Option<std::sync::Arc<[String; 5]>>>,
}

impl<'r> ScopeAt<'r> {
    fn new(rows: &'r [transcope_scopelog::Row]) -> ScopeAt<'r> {
        ScopeAt {
            rows,
            in_force: transcope_scopelog::InForce::new(rows),
            scopes: vec![None; rows.len() + 1],
        }
    }

    fn at(&mut self, t: Option<transcope_core::Instant>) -> std::sync::Arc<[String; 5]> {
        let i = t.and_then(|t| self.in_force.at(t));
        let rows = self.rows;
        self.scopes[i.map_or(rows.len(), |i| i)]
            .get_or_insert_with(|| {
                std::sync::Arc::new(match i.map(|i| &rows[i]) {
                    None => Default::default(),
                    Some(r) => ["project_id", "worktree", "branch", "task", "lane"].map(|k| {
                        r.get(k)
                            .map(transcope_core::scope::normalise)
                            .unwrap_or_default()
                    }),
                })
            })
            .clone()
    }
}

/// Each request of `spent` with the scope in force when it was spent ([`ScopeAt`]).
///
/// Copies of a request stay apart: the index merges them, these with every other
/// file's, by its one rule ([`transcope_index::UsageBatch`]).
pub fn spending(
    rows: &[transcope_scopelog::Row],
    spent: Vec<transcope_usage::Spent>,
) -> Vec<transcope_index::Spending> {
    let mut scope = ScopeAt::new(rows);
    spent
        .into_iter()
        .map(|s| transcope_index::Spending {
            key: s.key,
            at_us: s.at.map(|t| t.unix_micros()),
            model: s.model,
            tokens: s.tokens,
            scope: scope.at(s.at),
        })
        .collect()
}

/// Each fact with the scope in force at its time ([`ScopeAt`]).
pub fn noted(
    rows: &[transcope_scopelog::Row],
    facts: Vec<transcope_core::Fact>,
) -> Vec<transcope_index::Noted> {
    let mut scope = ScopeAt::new(rows);
    facts
        .into_iter()
        .map(|f| transcope_index::Noted {
            stage: f.stage.to_owned(),
            key: f.key,
            at_us: f.at.map(|t| t.unix_micros()),
            value: f.value.to_string(),
            scope: scope.at(f.at),
        })
        .collect()
}

/// What the stages of one read handed on for the index, taken out of a [`Found`] by
/// type: the [`Markers`], the usage [`Requests`] and the [`Facts`], each stage's in
/// the order listed.
#[derive(Debug, Default)]
pub struct Handed {
    /// The markers found.
    pub markers: Vec<transcope_core::Marker>,
    /// A marker block was still open at the end of the read.
    pub unclosed: bool,
    /// The requests' usage.
    pub spent: Vec<transcope_usage::Spent>,
    /// The facts to keep.
    pub facts: Vec<transcope_core::Fact>,
}

impl Handed {
    /// Take what `found` holds of the three types.
    pub fn take(found: &mut Found) -> Handed {
        let mut h = Handed::default();
        for m in found.take_all::<Markers>() {
            h.unclosed |= m.unclosed;
            h.markers.extend(m.found);
        }
        h.spent = found
            .take_all::<Requests>()
            .into_iter()
            .flat_map(|r| r.0)
            .collect();
        h.facts = found
            .take_all::<Facts>()
            .into_iter()
            .flat_map(|f| f.0)
            .collect();
        h
    }
}

/// What the marker, usage and listed stages found in one read, attributed through the
/// session's log (read once, and only when there is something to attribute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attributed {
    /// Markers found.
    pub markers: u64,
    /// Of those, labelled unknown or refused.
    pub unattributed: u64,
    /// A marker block was still open at the end of the read.
    pub unclosed: bool,
    /// Requests whose usage was read (copies included).
    pub requests: u64,
    /// Facts handed on.
    pub facts: u64,
}

/// Put into `item` what the stages of one read handed on (`found`: [`Markers`],
/// [`Requests`], [`Facts`]), attributed by `writer` through `log` (an archived
/// session's: [`transcope_brain::Writer::archived`]): through `rows` when change
/// detection handed the log's rows on ([`Outcome::rows`]: a window on the log as its
/// run left it) and they cover every event, else through the log read now
/// ([`rows_for`]).
///
/// [`Outcome::rows`]: transcope_change_detect::Outcome::rows
pub fn attribute_into<R: ProjectResolver>(
    item: &mut Observed,
    log: &ScopeLog,
    rows: Option<transcope_scopelog::Window>,
    writer: &transcope_brain::Writer<'_>,
    found: &mut Found,
    resolver: &mut R,
) -> Attributed {
    let mut done = Attributed::default();
    let Handed {
        markers: found_markers,
        unclosed,
        spent,
        facts,
    } = Handed::take(found);
    done.unclosed = unclosed;
    if found_markers.is_empty() && spent.is_empty() && facts.is_empty() {
        return done;
    }
    let times = spent.iter().filter_map(|s| s.at);
    let rows = rows_for(
        log,
        rows,
        &found_markers,
        times.chain(facts.iter().filter_map(|f| f.at)),
    );
    if !found_markers.is_empty() {
        let (f, unattributed) = self::found(writer, &found_markers, &rows, resolver);
        done.markers = f.len() as u64;
        done.unattributed = unattributed;
        item.markers = f;
    }
    done.requests = spent.iter().map(|s| s.copies).sum();
    done.facts = facts.len() as u64;
    item.usage = spending(&rows, spent);
    item.facts = noted(&rows, facts);
    done
}

/// The rows to attribute `markers` and the events at `times` (requests, facts)
/// through: `window`'s when it covers each of their times (a Stop's events are as
/// late as the log's rows, nearly always: then the log is not read again), else the
/// rows in force at their times ([`ScopeLog::rows_in_force`]: the log read once more, a
/// row at a time). Either way memory does not grow with the log, and each event finds
/// the row it finds among every row.
pub fn rows_for(
    log: &ScopeLog,
    window: Option<transcope_scopelog::Window>,
    markers: &[transcope_core::Marker],
    times: impl IntoIterator<Item = transcope_core::Instant>,
) -> Vec<transcope_scopelog::Row> {
    let marker_times = markers.iter().filter_map(|m| match &m.at {
        Some(serde_json::Value::String(s)) => transcope_core::timestamp::parse(s),
        _ => None,
    });
    let times: Vec<transcope_core::Instant> = marker_times.chain(times).collect();
    match window {
        Some(w) if times.iter().all(|t| w.covers(*t)) => w.rows,
        _ => log.rows_in_force(&times),
    }
}

//! # transcope-report: see it
//!
//! `transcope report --html FILE` draws, in one HTML file that works offline, which
//! sessions worked on which project, worktree, branch and task over time, where their
//! markers were recorded and what each project and task spent.
//!
//! Data flows one way: [`collect`] reads the index ([`transcope_index::Index`]:
//! sessions, the mirrored scope-log rows, the ledger, usage) into a [`Report`], a
//! plain JSON model; [`render`] writes the page: the model embedded as JSON
//! ([`embed_json`], safe inside `<script>`), the vendored d3 and the page's own script
//! and style inlined, and a Content-Security-Policy that allows no network at all
//! ([`CSP`] plus the inline scripts' hashes). The page draws itself in the browser
//! with d3 (scales, axis, zoom, symbols); nothing here computes chart geometry.
//!
//! The model, in terms a reader of the page checks:
//!
//! * one **lane** per session (sub-agents right after their root session, one level
//!   in), spanning the session's first to last recorded time, labelled with its key
//!   and its agent (`claude`, `codex`, `gemini`, `qwen`, `copilot`, …);
//! * one **segment** per scope-log row (a transition): from the row's time to the next
//!   row's time (or the lane's end), coloured by the project of the row *in force*
//!   then (scope-log.md §4.1, the rule [`transcope_scopelog::InForce`] keeps), so the
//!   row boundaries are the transitions;
//! * one **glyph** per ledger marker, on its session's lane at its record time;
//! * usage per project, per (project, task) and per agent, priced by the caller's
//!   pricer.
//!
//! A window (`--since`/`--until`) keeps the sessions in force in it and the segments
//! and markers that overlap it (clipped to it); `--project` keeps the sessions in force
//! in one of the projects (each shown whole within the window) and the usage of those
//! projects. What cannot be placed (a row or marker without a time, a marker without
//! a session) is counted in `hidden`, never silently lost.
//!
//! Text from the archive is shown, never obeyed: besides being set with `.text()`
//! (never parsed as HTML) and embedded safely ([`embed_json`]), every string of the
//! model has its control and bidirectional-control characters (U+202E, …) written as
//! visible escapes (`\u{202e}`), so a name cannot reorder or hide what the page draws.
//!
//! ```
//! use transcope_index::Index;
//! use transcope_report::{collect, render, Window};
//! let home = tempfile::tempdir().unwrap();
//! let index = Index::open(home.path()).unwrap();
//! let report = collect(&index, &Window::default(), &transcope_store::Unpriced).unwrap();
//! assert_eq!(report.counts().lanes, 0);
//! let html = render(&report);
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(html.contains("default-src 'none'"));
//! ```
#![warn(missing_docs)]

mod html;

use std::collections::HashMap;

use serde_json::{json, Value};
use transcope_core::Instant;
use transcope_store::{
    LedgerFilter, Pricer, SessionFilter, SessionInfo, Store, StoreError, UsageFilter, UsageKey,
};

pub use html::{embed_json, render, CSP};

/// Which part of the index the report shows.
#[derive(Clone, Debug, Default)]
pub struct Window {
    /// From this instant (microseconds since the epoch).
    pub since: Option<i64>,
    /// Until this instant.
    pub until: Option<i64>,
    /// Only sessions in force in one of these projects (`project_id`), and only their
    /// usage; empty: every project.
    pub projects: Vec<String>,
}

/// Colours of the palette: the first [`SOLID`] keys (by time in force) get a solid
/// colour, the next as many the same colours hatched, the rest "other".
pub const SOLID: usize = 7;

/// What the page will hold, as counts (the command's summary line; the browser test
/// compares the page's DOM with the same numbers from the query commands).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lanes (sessions).
    pub lanes: usize,
    /// Segments (scope-log rows placed).
    pub segments: usize,
    /// Marker glyphs.
    pub markers: usize,
    /// Usage groups (per project; the group of usage in no project included).
    pub usage_projects: usize,
    /// Whether one of those groups is the usage in no project.
    pub usage_without_project: bool,
    /// Rows and markers that could not be placed.
    pub hidden: usize,
}

/// The report's model: a JSON value the page reads (see the module docs).
#[derive(Clone, Debug)]
pub struct Report {
    model: Value,
    counts: Counts,
}

impl Report {
    /// The model the page embeds.
    pub fn model(&self) -> &Value {
        &self.model
    }

    /// What it holds.
    pub fn counts(&self) -> Counts {
        self.counts
    }
}

fn ms(micros: i64) -> i64 {
    micros.div_euclid(1000)
}

/// A session's rows placed in time: `(start, end, in force)` per timed row, by time
/// (ties in file order), each from its own time to the next row's (the last to `end`);
/// `in force` is the index of the row in force over it: the last row in file order
/// among those at or before its start (the rule of [`transcope_scopelog::InForce::at`], computed for all
/// rows in one pass over the rows sorted by time).
fn place_rows(times: &[Option<Instant>], end: i64) -> Vec<(i64, i64, usize)> {
    let mut timed: Vec<(i64, usize)> = times
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.map(|t| (t.unix_micros(), i)))
        .collect();
    timed.sort_unstable();
    let mut out = Vec::with_capacity(timed.len());
    let mut best: Option<usize> = None;
    let mut k = 0;
    while k < timed.len() {
        // Every row at this instant is at or before it: the group decides together.
        let at = timed[k].0;
        let group_end = k + timed[k..].partition_point(|&(t, _)| t == at);
        for &(_, i) in &timed[k..group_end] {
            best = Some(best.map_or(i, |b| b.max(i)));
        }
        let next = timed.get(group_end).map_or(end.max(at), |&(t, _)| t);
        for (j, _) in timed[k..group_end].iter().enumerate() {
            let until = if k + j + 1 < group_end { at } else { next };
            out.push((at, until, best.unwrap_or(timed[k + j].1)));
        }
        k = group_end;
    }
    out
}

/// The scope fields a segment shows, and the key its colour comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Shown {
    key: String,
    fields: [String; 6],
}

impl Shown {
    /// A row's project id, project, worktree, branch, task and folder, as the index
    /// mirrors them ([`Store::each_transition`]).
    fn of_fields(fields: [String; 6]) -> Shown {
        // A row without a project id is coloured by its folder: the best the log
        // knows of where the session was (the legend says which is which).
        let key = if !fields[0].is_empty() {
            format!("p:{}", fields[0])
        } else if !fields[5].is_empty() {
            format!("f:{}", fields[5])
        } else {
            "n:".to_owned()
        };
        Shown { key, fields }
    }
}

/// Interns values, keeping first-seen order.
struct Interner<T> {
    ids: HashMap<T, usize>,
    items: Vec<T>,
}

impl<T: Clone + Eq + std::hash::Hash> Interner<T> {
    fn new() -> Self {
        Interner {
            ids: HashMap::new(),
            items: Vec::new(),
        }
    }

    fn id(&mut self, v: &T) -> usize {
        if let Some(&i) = self.ids.get(v) {
            return i;
        }
        self.items.push(v.clone());
        self.ids.insert(v.clone(), self.items.len() - 1);
        self.items.len() - 1
    }
}

/// The most of a marker's content the page carries (the ledger keeps it whole).
pub const CONTENT_CHARS: usize = 400;

fn clipped(text: &str) -> String {
    match text.char_indices().nth(CONTENT_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Read what `window` shows from `index` (the local index, or a fleet: any
/// [`Store`]); `prices` prices the requests.
pub fn collect(
    index: &dyn Store,
    window: &Window,
    prices: &dyn Pricer,
) -> Result<Report, StoreError> {
    let filter = |project: Option<&String>| SessionFilter {
        project: project.cloned(),
        since: window.since,
        until: window.until,
        ..SessionFilter::default()
    };
    let sessions = if window.projects.is_empty() {
        index.sessions(&filter(None))?
    } else {
        let mut seen = std::collections::HashSet::new();
        let mut all = Vec::new();
        for p in &window.projects {
            for s in index.sessions(&filter(Some(p)))? {
                if seen.insert(s.session.clone()) {
                    all.push(s);
                }
            }
        }
        // One order whatever the projects' order: by first time, then key.
        let first = |s: &SessionInfo| {
            s.first_at
                .as_deref()
                .and_then(transcope_core::timestamp::parse)
        };
        all.sort_by(|a, b| {
            let (fa, fb) = (first(a), first(b));
            (fa.is_none(), fa, &a.session).cmp(&(fb.is_none(), fb, &b.session))
        });
        all
    };

    // Lanes: roots in the index's order, each followed by its sub-agents (in the same
    // order); a sub-agent whose root is not shown stands alone.
    let shown: std::collections::HashSet<&str> =
        sessions.iter().map(|s| s.session.as_str()).collect();
    let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut order: Vec<(usize, usize)> = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        match s.parent.as_deref().filter(|p| shown.contains(p)) {
            Some(p) => children.entry(p).or_default().push(i),
            None => order.push((i, 0)),
        }
    }
    let mut lanes_order = Vec::with_capacity(sessions.len());
    for (i, _) in order {
        lanes_order.push((i, 0));
        if let Some(kids) = children.get(sessions[i].session.as_str()) {
            lanes_order.extend(kids.iter().map(|&k| (k, 1)));
        }
    }

    let lo = window.since;
    let hi = window.until;
    let mut scopes: Interner<Shown> = Interner::new();
    let mut key_time: HashMap<usize, i64> = HashMap::new();
    let mut lanes = Vec::with_capacity(lanes_order.len());
    let mut lane_of: HashMap<&str, usize> = HashMap::new();
    let mut counts = Counts::default();
    let parse = |t: &Option<String>| {
        t.as_deref()
            .and_then(transcope_core::timestamp::parse)
            .map(Instant::unix_micros)
    };
    for &(i, depth) in &lanes_order {
        let s = &sessions[i];
        // The session's rows one at a time from the index: each row's time and the
        // id of the scope it shows, never the rows themselves.
        let mut times: Vec<Option<Instant>> = Vec::new();
        let mut shown_ids: Vec<usize> = Vec::new();
        index.each_transition(&s.session, &mut |at_us, fields| {
            times.push(at_us.map(Instant::from_unix_micros));
            shown_ids.push(scopes.id(&Shown::of_fields(fields)));
        })?;
        let times = &times[..];
        let row_times = times.iter().flatten().map(|t| t.unix_micros());
        let start = row_times.clone().chain(parse(&s.first_at)).min();
        let end = row_times.chain(parse(&s.last_at)).max();
        counts.hidden += times.iter().filter(|t| t.is_none()).count();
        let mut segs = Vec::new();
        if let Some(end) = end {
            for (a, b, row) in place_rows(times, end) {
                let (a, b) = (lo.map_or(a, |l| a.max(l)), hi.map_or(b, |h| b.min(h)));
                if a > b {
                    continue;
                }
                let id = shown_ids[row];
                *key_time.entry(id).or_default() += b - a;
                segs.push(json!([ms(a), ms(b), id]));
            }
        }
        counts.segments += segs.len();
        lane_of.insert(s.session.as_str(), lanes.len());
        let clip = |t: Option<i64>, f: fn(i64, i64) -> i64, w: Option<i64>| {
            t.map(|t| w.map_or(t, |w| f(t, w)))
        };
        lanes.push(json!({
            "key": s.session,
            "parent": s.parent,
            "depth": depth,
            "agent": s.agent,
            "transcript": s.transcript,
            "start": clip(start, i64::max, lo).map(ms),
            "end": clip(end, i64::min, hi).map(ms),
            "segs": segs,
        }));
    }
    counts.lanes = lanes.len();

    // Colour keys: by time in force, longest first.
    let mut keys: Vec<(String, i64)> = Vec::new();
    {
        let mut by_key: HashMap<&str, i64> = HashMap::new();
        for (id, s) in scopes.items.iter().enumerate() {
            *by_key.entry(s.key.as_str()).or_default() += key_time.get(&id).copied().unwrap_or(0);
        }
        keys.extend(by_key.into_iter().map(|(k, t)| (k.to_owned(), t)));
    }
    keys.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let key_index: HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.as_str(), i))
        .collect();
    let keys_json: Vec<Value> = keys
        .iter()
        .enumerate()
        .map(|(i, (k, t))| {
            let (kind, label) = k.split_once(':').unwrap_or(("n", ""));
            json!({
                "kind": match kind { "p" => "project", "f" => "folder", _ => "none" },
                "label": label,
                "colour": if i < 2 * SOLID { i as i64 } else { -1 },
                "ms": ms(*t),
            })
        })
        .collect();
    let scopes_json: Vec<Value> = scopes
        .items
        .iter()
        .map(|s| {
            let mut v = vec![json!(key_index[s.key.as_str()])];
            v.extend(s.fields.iter().map(|f| json!(f)));
            Value::Array(v)
        })
        .collect();

    // Markers: the ledger in the window, on their sessions' lanes.
    let mut types: Interner<String> = Interner::new();
    let mut markers = Vec::new();
    for m in index.ledger(&LedgerFilter {
        since: lo,
        until: hi,
        ..LedgerFilter::default()
    })? {
        let lane = m.session.as_deref().and_then(|s| lane_of.get(s));
        let (Some(&lane), Some(at)) = (lane, parse(&m.at)) else {
            if m.session.as_deref().is_none_or(|s| shown.contains(s)) {
                counts.hidden += 1;
            }
            continue;
        };
        markers.push(json!([
            lane,
            ms(at),
            types.id(&m.kind),
            clipped(&m.content),
            m.attribution,
            m.project_id,
            m.worktree,
            m.branch,
            m.task,
            m.state.as_str(),
            m.at,
        ]));
    }
    counts.markers = markers.len();

    // Usage per project, per (project, task) and per agent.
    let usage = |by: &[UsageKey]| -> Result<Vec<Value>, StoreError> {
        let mut groups = Vec::new();
        let projects: Vec<Option<String>> = if window.projects.is_empty() {
            vec![None]
        } else {
            window.projects.iter().cloned().map(Some).collect()
        };
        for p in projects {
            let f = UsageFilter {
                since: lo,
                until: hi,
                project: p,
                ..UsageFilter::default()
            };
            groups.extend(index.usage(by, &f, prices)?);
        }
        groups.sort_by_key(|g| std::cmp::Reverse(g.tokens.total()));
        Ok(groups.iter().map(|g| g.to_json(by)).collect())
    };
    let by_project = usage(&[UsageKey::Project])?;
    let by_task = usage(&[UsageKey::Project, UsageKey::Task])?;
    let by_agent = usage(&[UsageKey::Agent])?;
    counts.usage_projects = by_project.len();
    counts.usage_without_project = by_project
        .iter()
        .any(|g| g["project_id"].as_str().is_none_or(str::is_empty));

    let extent = {
        let starts = lanes.iter().filter_map(|l| l["start"].as_i64());
        let ends = lanes.iter().filter_map(|l| l["end"].as_i64());
        let a = lo.map(ms).or(starts.min());
        let b = hi.map(ms).or(ends.max());
        match (a, b) {
            (Some(a), Some(b)) if a <= b => json!([a, b]),
            _ => Value::Null,
        }
    };
    let mut model = json!({
        "version": 1,
        "generated_at": Instant::now().to_python_isoformat(),
        "window": {
            "since": lo.map(ms),
            "until": hi.map(ms),
            "projects": window.projects,
        },
        "extent": extent,
        "keys": keys_json,
        "scopes": scopes_json,
        "lanes": lanes,
        "types": types.items,
        "markers": markers,
        "usage": {"projects": by_project, "tasks": by_task, "agents": by_agent},
        "hidden": counts.hidden,
    });
    shown_as_text(&mut model);
    Ok(Report { model, counts })
}

/// Every string of `v` (keys too) with its control and bidirectional-control
/// characters written as visible escapes (`\u{202e}`: [`escape_unsafe`]). The page
/// sets text with d3's `.text()`, so nothing is read as HTML, but a U+202E in a project
/// name or a marker's content would still reorder what is drawn after it (and ESC or
/// NUL show as nothing). The same value is escaped the same way everywhere in the
/// model, so keys and labels still match; the index and `--json` keep the exact text.
///
/// [`escape_unsafe`]: transcope_core::quote::escape_unsafe
fn shown_as_text(v: &mut Value) {
    use std::borrow::Cow;
    use transcope_core::quote::escape_unsafe;
    match v {
        Value::String(s) => {
            if let Cow::Owned(e) = escape_unsafe(s) {
                *s = e;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(shown_as_text),
        Value::Object(map) => {
            if map
                .keys()
                .any(|k| matches!(escape_unsafe(k), Cow::Owned(_)))
            {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (escape_unsafe(&k).into_owned(), v))
                    .collect();
            }
            map.values_mut().for_each(shown_as_text);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use transcope_scopelog::InForce;

    fn t(s: i64) -> Option<Instant> {
        Some(Instant::from_unix_micros(s))
    }

    /// Each placed row's colour comes from the row `InForce::at` names at its start,
    /// whatever the order of times in the file (times going backwards, ties, untimed
    /// rows).
    #[test]
    fn placed_rows_follow_the_one_in_force_rule() {
        let cases: Vec<Vec<Option<Instant>>> = vec![
            vec![t(10), t(20), t(30)],
            vec![t(30), t(10), t(20)],
            vec![t(10), t(10), t(5), None, t(10), t(40)],
            vec![None, t(7)],
            vec![t(5), t(5), t(5)],
            vec![t(50), t(40), t(30), t(20), t(60)],
        ];
        for times in cases {
            let rows: Vec<Map<String, Value>> = times
                .iter()
                .map(|t| {
                    let mut m = Map::new();
                    let at = t.map_or("not a time".to_owned(), |t| t.to_python_isoformat());
                    m.insert("at".into(), Value::String(at));
                    m
                })
                .collect();
            let rule = InForce::new(&rows);
            assert_eq!(rule.times(), &times[..]);
            let placed = place_rows(&times, 100);
            assert_eq!(placed.len(), times.iter().flatten().count(), "{times:?}");
            let mut last_end = None;
            for &(a, b, row) in &placed {
                assert!(a <= b, "{times:?}");
                assert_eq!(
                    Some(row),
                    rule.at(Instant::from_unix_micros(a)),
                    "{times:?}"
                );
                if let Some(e) = last_end {
                    assert_eq!(e, a, "segments are contiguous: {times:?}");
                }
                last_end = Some(b);
            }
            assert_eq!(last_end, Some(100), "{times:?}");
        }
    }

    #[test]
    fn long_content_is_cut_at_a_character() {
        let long = "é".repeat(CONTENT_CHARS + 5);
        let cut = clipped(&long);
        assert_eq!(cut.chars().count(), CONTENT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(clipped("short"), "short");
    }
}

//! # transcope-markers: brain markers, stamped with their own record's time
//!
//! A brain marker is an HTML comment block in assistant text
//! (`<!-- @lesson -->Text.<!-- @/lesson -->`, scope-log.md §5.1). [`MarkerStage`] is a
//! per-entry stage: it collects the marker-eligible texts adapters put in
//! [`Entry::texts`](transcope_core::Entry) together with each record's time, and
//! [`MarkerStage::finish`] scans them the way the reference does — all record texts
//! joined with `\n` and scanned once — giving each [`Marker`] the time of the record in
//! which its opening tag starts (no `at` at all when that record has no time).
//!
//! ```
//! use transcope_core::{Entry, TimeValue, adapter::EntrySink};
//! use transcope_markers::MarkerStage;
//!
//! let mut stage = MarkerStage::default();
//! let e = Entry {
//!     time: TimeValue::Str("2026-10-08T10:05:00Z".into()),
//!     texts: vec!["Done. <!-- @lesson topic=x -->Cache the probe.<!-- @/lesson -->".into()],
//!     ..Entry::default()
//! };
//! stage.entry(&e);
//! let markers = stage.finish(None);
//! assert_eq!(markers[0].kind, "lesson");
//! assert_eq!(markers[0].content, "Cache the probe.");
//! assert_eq!(markers[0].attrs["topic"], "x");
//! assert_eq!(markers[0].at.as_ref().unwrap(), "2026-10-08T10:05:00Z");
//! ```
#![warn(missing_docs)]

pub mod body;
pub mod parse;

use serde_json::{Map, Value};
use transcope_core::adapter::EntrySink;
use transcope_core::{py, Entry, TimeValue};

/// The marker types kept; other blocks are consumed and dropped.
pub const MARKER_TYPES: [&str; 4] = ["lesson", "milestone", "signal", "decision"];

/// One brain marker.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// The type, lowercased (`lesson`, `milestone`, `signal`, `decision`).
    pub kind: String,
    /// Attributes as written (values are strings, or `null` for `a=""`), `ts` removed.
    pub attrs: Map<String, Value>,
    /// The trimmed content.
    pub content: String,
    /// The holding record's `timestamp`, verbatim (any JSON type), when truthy.
    pub at: Option<Value>,
}

impl Marker {
    /// `{"type", "attrs", "content", "at"}` (`at` absent when the record had no time).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.kind.clone()));
        m.insert("attrs".into(), Value::Object(self.attrs.clone()));
        m.insert("content".into(), Value::String(self.content.clone()));
        if let Some(at) = &self.at {
            m.insert("at".into(), at.clone());
        }
        Value::Object(m)
    }

    /// [`Marker::to_json`] in Python `json.dumps` form.
    pub fn to_python_json(&self) -> String {
        py::dumps(&self.to_json())
    }
}

/// Python `str.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(parse::is_py_space)
}

/// The markers in one text, with the byte offset of each opening tag.
pub fn markers_in(text: &str) -> Vec<(usize, Marker)> {
    parse::blocks(text)
        .into_iter()
        .filter_map(|b| {
            let kind = b.kind.to_lowercase();
            if !MARKER_TYPES.contains(&kind.as_str()) {
                return None;
            }
            let content = py_strip(b.content);
            if content.is_empty() {
                return None;
            }
            let mut attrs = parse::attributes(b.attrs);
            attrs.shift_remove("ts");
            Some((
                b.start,
                Marker {
                    kind,
                    attrs,
                    content: content.to_owned(),
                    at: None,
                },
            ))
        })
        .collect()
}

/// Markers of a Stop payload's `last_assistant_message`, stamped with `now` (the
/// reference's fallback when the transcript yields none).
pub fn markers_of_message(text: &str, now_iso: &str) -> Vec<Marker> {
    markers_in(text)
        .into_iter()
        .map(|(_, mut m)| {
            m.at = Some(Value::String(now_iso.to_owned()));
            m
        })
        .collect()
}

/// The marker-extraction stage: collects eligible record texts, scans them at the end.
#[derive(Default)]
pub struct MarkerStage {
    text: String,
    /// (offset of the record's text in `text`, the record's time).
    records: Vec<(usize, TimeValue<'static>)>,
    /// Some record's text holds `<!--`: every text-bearing line is wanted from now on.
    armed: bool,
}

impl EntrySink for MarkerStage {
    /// Only entries that may carry marker text ([`Probe::text`]): tool calls and their
    /// output, user, system and summary records are never decoded for markers.
    ///
    /// [`Probe::text`]: transcope_core::adapter::Probe::text
    ///
    /// Until a record's text holds `<!--`, a line that cannot hold one
    /// ([`Probe::opens_marker`]) is not wanted either: no block can start in it, and no
    /// block has started that it could be the content of (records are joined with
    /// `\n`, so `<!--` never spans two).
    ///
    /// [`Probe::opens_marker`]: transcope_core::adapter::Probe::opens_marker
    fn wants(&self, p: &transcope_core::adapter::Probe<'_>) -> bool {
        p.text && (self.armed || p.opens_marker)
    }

    fn entry(&mut self, e: &Entry<'_>) {
        for t in &e.texts {
            self.armed = self.armed || t.contains("<!--");
            if !self.records.is_empty() {
                self.text.push('\n');
            }
            self.records
                .push((self.text.len(), e.time.clone().into_owned()));
            self.text.push_str(t);
        }
    }
}

impl MarkerStage {
    /// Whether any eligible text was seen.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Scan everything collected; keep the first `max` markers when given.
    pub fn finish(self, max: Option<usize>) -> Vec<Marker> {
        if !self.text.contains("<!--") {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (start, mut m) in markers_in(&self.text) {
            if max.is_some_and(|n| out.len() >= n) {
                break;
            }
            let i = self.records.partition_point(|(s, _)| *s <= start);
            let time = &self.records[i.saturating_sub(1)].1;
            m.at = time_json(time);
            out.push(m);
        }
        out
    }
}

/// A record time as the marker's `at`: the JSON value when truthy, else none.
fn time_json(t: &TimeValue<'_>) -> Option<Value> {
    if !t.is_truthy() {
        return None;
    }
    match t {
        TimeValue::Missing => None,
        TimeValue::Str(s) => Some(Value::String(s.to_string())),
        TimeValue::Other(raw) => serde_json::from_str(raw).ok(),
    }
}

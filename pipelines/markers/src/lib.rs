//! # transcope-markers: brain markers, stamped with their own record's time
//!
//! A brain marker is an HTML comment block in assistant text
//! (`<!-- @lesson -->Text.<!-- @/lesson -->`, scope-log.md §5.1). [`MarkerStage`] is a
//! per-entry stage: it takes the marker-eligible texts adapters put in
//! [`Entry::texts`](transcope_core::Entry) with each record's time, and finds exactly
//! the markers the reference finds by joining all record texts with `\n` and scanning
//! them once, giving each [`Marker`] the time of the record in which its opening tag
//! starts (no `at` at all when that record has no time). It scans as records arrive and
//! keeps only the text of a block still open ([`parse::blocks_settled`]), so memory does
//! not grow with the transcript; [`MarkerStage::finish`] returns the markers.
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

pub mod parse;

use serde_json::Value;
use transcope_core::adapter::EntrySink;
pub use transcope_core::marker::Marker;
use transcope_core::{Entry, TimeValue};

/// The marker types kept; other blocks are consumed and dropped.
pub const MARKER_TYPES: [&str; 4] = ["lesson", "milestone", "signal", "decision"];

/// Python `str.strip()`.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(parse::is_py_space)
}

/// The markers in one text, with the byte offset of each opening tag.
pub fn markers_in(text: &str) -> Vec<(usize, Marker)> {
    parse::blocks(text)
        .iter()
        .filter_map(|b| Some((b.start, marker_of(b)?)))
        .collect()
}

/// A block as a marker (no `at`): `None` for other types and for empty content.
fn marker_of(b: &parse::Block<'_>) -> Option<Marker> {
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
    Some(Marker {
        kind,
        attrs,
        content: content.to_owned(),
        at: None,
    })
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

/// The marker-extraction stage: scans eligible record texts as they arrive, exactly as
/// the reference scans all of them joined with `\n`, holding only the text a later
/// record could still change.
///
/// The scan runs over a window: the joined text from the first opening tag whose block
/// is not yet settled (it still needs an attribute, its `-->` or its closing tag from a
/// later record; [`parse::blocks_settled`]). Markers before it are final and the text
/// before it is dropped, so memory follows the longest open block, not the transcript.
/// While no block is open, a record without `<!--` can change nothing and is dropped
/// unread. While one is open, the window is rescanned only when it has grown by an
/// eighth since the last scan, so the work stays linear in the text (at most about nine
/// scans' worth of each byte) however long a block stays open, and a block that has
/// closed holds at most an eighth more text than it enclosed.
#[derive(Default)]
pub struct MarkerStage {
    /// The joined text from the unsettled opening tag on (empty when none is open).
    window: String,
    /// (offset in `window` of each record's text, clamped at 0, the record's time).
    records: Vec<(usize, TimeValue<'static>)>,
    /// Some eligible text was seen (the next is joined with `\n`).
    seen: bool,
    /// An opening tag in `window` is not settled.
    open: bool,
    /// The window's length after the last scan that left a block open.
    scanned: usize,
    /// Markers settled so far, in text order, not yet taken.
    found: Vec<Marker>,
    /// Scans run (the linearity test counts them).
    scans: usize,
    /// Offset in the whole joined text of `window`'s first byte.
    base: u64,
    /// Whole-text offsets of the markers already handed on from inside a block that
    /// was still open when a read ended ([`Stage::prepare`]); never handed on again.
    ///
    /// [`Stage::prepare`]: transcope_core::Stage::prepare
    emitted: std::collections::BTreeSet<u64>,
    /// The text ends where the read ends ([`TextEnds`]): a block never closed is
    /// settled when the markers are handed on.
    text_ends: bool,
}

impl EntrySink for MarkerStage {
    /// Only entries that may carry marker text ([`Probe::text`]): tool calls and their
    /// output, user, system and summary records are never decoded for markers.
    ///
    /// [`Probe::text`]: transcope_core::adapter::Probe::text
    ///
    /// While no block is open, a line that cannot hold `<!--`
    /// ([`Probe::opens_marker`]) is not wanted either: no block can start in it, and no
    /// open block could take it as content (records are joined with `\n`, so `<!--`
    /// never spans two).
    ///
    /// [`Probe::opens_marker`]: transcope_core::adapter::Probe::opens_marker
    fn wants(&self, p: &transcope_core::adapter::Probe<'_>) -> bool {
        p.text && (self.open || p.opens_marker())
    }

    fn entry(&mut self, e: &Entry<'_>) {
        for t in &e.texts {
            let joined = std::mem::replace(&mut self.seen, true);
            if !self.open && !t.contains("<!--") {
                // Nothing is open and nothing opens here: this text is in no block.
                continue;
            }
            if joined {
                self.window.push('\n');
            }
            self.records
                .push((self.window.len(), e.time.clone().into_owned()));
            self.window.push_str(t);
            if self.window.len() >= self.scanned + self.scanned / 8 {
                self.scan(false);
            }
        }
    }
}

impl MarkerStage {
    /// Whether any eligible text was seen.
    pub fn is_empty(&self) -> bool {
        !self.seen
    }

    /// An opening tag is not settled: at the end of a transcript, a marker left
    /// unclosed (counted and reported, never delivered as it stands).
    pub fn unclosed(&self) -> bool {
        self.open
    }

    /// Bytes of text held: the window from the first open block on (0 when none is).
    pub fn held(&self) -> usize {
        self.window.len()
    }

    /// Scan the window: keep the settled markers and drop the text before the first
    /// open block (all of it when none is open). `complete`: no more text will come.
    fn scan(&mut self, complete: bool) {
        self.scans += 1;
        let (blocks, rest) = if complete {
            (parse::blocks(&self.window), None)
        } else {
            parse::blocks_settled(&self.window)
        };
        keep(
            &blocks,
            &self.records,
            self.base,
            &mut self.emitted,
            &mut self.found,
            false,
        );
        match rest {
            None => {
                self.base += self.window.len() as u64;
                self.window.clear();
                self.records.clear();
                self.open = false;
                self.scanned = 0;
                self.emitted.clear();
            }
            Some(from) => {
                // Keep the record holding `from` and those after it.
                let i = self.records.partition_point(|(s, _)| *s <= from);
                self.records.drain(..i.saturating_sub(1));
                for (s, _) in &mut self.records {
                    *s = s.saturating_sub(from);
                }
                self.window.drain(..from);
                self.base += from as u64;
                self.emitted = self.emitted.split_off(&self.base);
                self.open = true;
                self.scanned = self.window.len();
            }
        }
    }

    /// The markers found so far, handed on (the first `max` when given; the rest are
    /// dropped, as the reference's per-Stop cap drops them).
    pub fn take(&mut self, max: Option<usize>) -> Vec<Marker> {
        let mut out = std::mem::take(&mut self.found);
        if let Some(n) = max {
            out.truncate(n);
        }
        out
    }

    /// The read ends but more text may come: hand on, besides the settled markers,
    /// those a scan would find if the text ended here — the markers inside a block that
    /// is still open (the reference, which rescans the whole transcript at every Stop,
    /// finds them) — once each, keeping the open block for the text to come.
    fn settle_for_now(&mut self) {
        if !self.open {
            return;
        }
        let blocks = parse::blocks(&self.window);
        keep(
            &blocks,
            &self.records,
            self.base,
            &mut self.emitted,
            &mut self.found,
            true,
        );
    }

    /// Settle what is left; keep the first `max` markers when given.
    pub fn finish(mut self, max: Option<usize>) -> Vec<Marker> {
        if self.open {
            self.scan(true);
        }
        if let Some(n) = max {
            self.found.truncate(n);
        }
        self.found
    }
}

/// Push the markers of `blocks` (found in a window starting at `base` of the whole
/// text, its records at `records`) that were not handed on already; `remember`: they
/// come from inside a block still open, and must not be handed on again when it
/// settles.
fn keep(
    blocks: &[parse::Block<'_>],
    records: &[(usize, TimeValue<'static>)],
    base: u64,
    emitted: &mut std::collections::BTreeSet<u64>,
    found: &mut Vec<Marker>,
    remember: bool,
) {
    for b in blocks {
        let abs = base + b.start as u64;
        if emitted.contains(&abs) {
            continue;
        }
        if let Some(mut m) = marker_of(b) {
            m.at = time_at(records, b.start);
            found.push(m);
            if remember {
                emitted.insert(abs);
            }
        }
    }
}

/// The name of this stage's checkpoint in a cursor.
pub const STAGE_NAME: &str = "markers";

/// A record time in a checkpoint: `null`, `{"s": text}` or `{"o": raw JSON}`.
fn time_to_json(t: &TimeValue<'_>) -> Value {
    match t {
        TimeValue::Missing => Value::Null,
        TimeValue::Str(s) => serde_json::json!({ "s": s }),
        TimeValue::Other(s) => serde_json::json!({ "o": s }),
    }
}

fn time_from_json(v: &Value) -> Option<TimeValue<'static>> {
    if v.is_null() {
        return Some(TimeValue::Missing);
    }
    let o = v.as_object()?;
    if let Some(s) = o.get("s").and_then(Value::as_str) {
        return Some(TimeValue::Str(s.to_owned().into()));
    }
    o.get("o")
        .and_then(Value::as_str)
        .map(|s| TimeValue::Other(s.to_owned().into()))
}

/// What the marker stage hands on after a read ([`transcope_core::Stage::hand_on`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Markers {
    /// The markers found, in order (settled, and those of a read stopped before its
    /// cursor was saved, again).
    pub found: Vec<Marker>,
    /// A marker block was opened and not closed by the end of the read.
    pub unclosed: bool,
}

/// Lent to the stages of a one-off read of a whole text (`transcope markers`): the
/// text ends where the read ends, so a block never closed is settled as the reference
/// settles it, instead of waiting for the next read.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextEnds;

/// Builds the marker stage for each file; its stages hand on [`Markers`] (settled at
/// the read's end when [`TextEnds`] is lent).
#[derive(Clone, Copy, Debug, Default)]
pub struct MarkersFactory;

impl transcope_core::StageFactory for MarkersFactory {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn build<'a>(
        &'a self,
        ctx: &transcope_core::BuildContext<'a>,
    ) -> Box<dyn transcope_core::Stage + 'a> {
        Box::new(MarkerStage {
            text_ends: ctx.lent::<TextEnds>().is_some(),
            ..MarkerStage::default()
        })
    }

    fn outputs(&self) -> Vec<std::any::TypeId> {
        vec![std::any::TypeId::of::<Markers>()]
    }
}

/// The stage's lifecycle in a pipeline: a read hands on the settled markers and those
/// inside a block still open ([`MarkerStage::take`] collects them); the checkpoint
/// holds the open block's text, so a block opened in one read and closed in a later
/// one is found.
impl transcope_core::Stage for MarkerStage {
    fn name(&self) -> &'static str {
        STAGE_NAME
    }

    fn prepare(&mut self) -> Value {
        self.settle_for_now();
        if self.found.is_empty() {
            Value::Null
        } else {
            serde_json::to_value(&self.found).unwrap_or(Value::Null)
        }
    }

    /// The [`Markers`] found, and whether a block is still open (settled first when
    /// the text ends with the read: [`TextEnds`]).
    fn hand_on(&mut self, found: &mut transcope_core::Found) {
        if self.text_ends {
            found.put(Markers {
                found: std::mem::take(self).finish(None),
                unclosed: false,
            });
            return;
        }
        found.put(Markers {
            found: self.take(None),
            unclosed: self.unclosed(),
        });
    }

    fn replay(&mut self, token: &Value) {
        // The markers of a read stopped before its cursor was saved: hand them on again
        // (their idempotency keys make a repeat harmless).
        if let Ok(mut ms) = serde_json::from_value::<Vec<Marker>>(token.clone()) {
            ms.append(&mut self.found);
            self.found = ms;
        }
    }

    fn checkpoint(&self) -> Value {
        if !self.seen {
            return Value::Null;
        }
        serde_json::json!({
            "window": self.window,
            "records": self.records.iter().map(|(o, t)| serde_json::json!([o, time_to_json(t)])).collect::<Vec<_>>(),
            "open": self.open,
            "scanned": self.scanned,
            "base": self.base,
            "emitted": self.emitted,
        })
    }

    fn restore(&mut self, v: &Value) -> bool {
        if v.is_null() {
            return true;
        }
        let Some(o) = v.as_object() else {
            return false;
        };
        let (Some(window), Some(records)) = (
            o.get("window").and_then(Value::as_str),
            o.get("records").and_then(Value::as_array),
        ) else {
            return false;
        };
        let mut recs = Vec::with_capacity(records.len());
        for r in records {
            let Some([off, t]) = r
                .as_array()
                .map(Vec::as_slice)
                .and_then(|a| <&[Value; 2]>::try_from(a).ok())
            else {
                return false;
            };
            let (Some(off), Some(t)) = (off.as_u64(), time_from_json(t)) else {
                return false;
            };
            recs.push((off as usize, t));
        }
        self.window = window.to_owned();
        self.records = recs;
        self.seen = true;
        self.open = o.get("open").and_then(Value::as_bool).unwrap_or(false);
        self.scanned = o.get("scanned").and_then(Value::as_u64).unwrap_or(0) as usize;
        self.base = o.get("base").and_then(Value::as_u64).unwrap_or(0);
        self.emitted = o
            .get("emitted")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        true
    }
}

/// The reference's own way, which [`MarkerStage`] always agrees with: every record's
/// texts joined with `\n` and scanned once, each marker stamped with the time of the
/// record its opening tag starts in. It holds the whole text, so it is for checks (the
/// stage's tests compare against it), not for pipelines.
///
/// ```
/// use transcope_core::TimeValue;
/// let t = TimeValue::Str("2026-10-08T10:00:00Z".into());
/// let none = TimeValue::Missing;
/// let found = transcope_markers::markers_joined([
///     ("<!-- @lesson -->spans", &t),
///     ("records<!-- @/lesson -->", &none),
/// ]);
/// assert_eq!(found[0].content, "spans\nrecords");
/// assert_eq!(found[0].at.as_ref().unwrap(), "2026-10-08T10:00:00Z");
/// ```
pub fn markers_joined<'a, I>(records: I) -> Vec<Marker>
where
    I: IntoIterator<Item = (&'a str, &'a TimeValue<'a>)>,
{
    let mut text = String::new();
    let mut starts: Vec<(usize, TimeValue<'a>)> = Vec::new();
    for (t, time) in records {
        if !starts.is_empty() {
            text.push('\n');
        }
        starts.push((text.len(), time.clone()));
        text.push_str(t);
    }
    markers_in(&text)
        .into_iter()
        .map(|(start, mut m)| {
            m.at = time_at(&starts, start);
            m
        })
        .collect()
}

/// The `at` of a marker whose opening tag starts at `start`: the time of the record
/// whose text (at the offsets given, in order) holds it.
fn time_at(records: &[(usize, TimeValue<'_>)], start: usize) -> Option<Value> {
    let i = records.partition_point(|(s, _)| *s <= start);
    time_json(&records[i.saturating_sub(1)].1)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A block left open is rescanned only each time its text grows by an eighth,
    /// however many records (with or without tags) follow it.
    #[test]
    fn an_open_block_is_rescanned_only_as_it_grows() {
        let mut stage = MarkerStage::default();
        let mut feed = |text: &str| {
            stage.entry(&Entry {
                texts: vec![text.into()],
                ..Entry::default()
            })
        };
        feed("<!-- @lesson -->never closed");
        for i in 0..20_000 {
            feed(if i % 2 == 0 {
                "<!-- @signal -->s<!-- @/signal -->"
            } else {
                "plain"
            });
        }
        let held = stage.held();
        let scans = stage.scans;
        assert!(held > 20_000 * 5, "the open block holds its text ({held})");
        // One scan per growth by an eighth (about a hundred), not one per record.
        let bound = 2.0 + (held as f64).ln() / (9.0f64 / 8.0).ln();
        assert!((scans as f64) <= bound, "{scans} scans, bound {bound}");
        let found = stage.finish(None);
        // The lesson never closes, so the signals inside it are found once it fails.
        assert_eq!(found.len(), 10_000);
    }
}

//! `scope_at` and `attribute` (scope-log.md §4).

use serde_json::{Map, Value};
use transcope_core::scope::is_unclaimed;
use transcope_core::{py, timestamp, Attribution, Grant, Label, Scope, ScopeField};

use crate::Row;

/// One event to attribute: its time (any JSON value) and its attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    /// The event's `at`; only a string that parses as a timestamp finds a scope.
    pub at: Option<Value>,
    /// The event's `attrs` (`None` is the same as empty).
    pub attrs: Option<Map<String, Value>>,
}

impl Event {
    /// An event at `at` with no attributes.
    pub fn at(at: &str) -> Event {
        Event {
            at: Some(Value::String(at.into())),
            attrs: None,
        }
    }

    /// Builder: set the attributes.
    pub fn with_attrs(mut self, attrs: Map<String, Value>) -> Event {
        self.attrs = Some(attrs);
        self
    }

    /// Decode one NDJSON event object (`{"at": …, "attrs": {…}}`). A non-object
    /// `attrs` counts as empty.
    pub fn from_json(v: &Value) -> Option<Event> {
        let m = v.as_object()?;
        Some(Event {
            at: m.get("at").cloned(),
            attrs: m.get("attrs").and_then(Value::as_object).cloned(),
        })
    }
}

/// The scope in force at `at` among `rows` (§4.1): the last row in file order whose own
/// `at` parses and is at or before the instant.
pub fn scope_at_rows(rows: &[Row], at: &str) -> Option<Scope> {
    let t = timestamp::parse(at)?;
    InForce::new(rows)
        .at(t)
        .map(|i| Scope::from_json_map(&rows[i]))
}

/// The rule of [`scope_at_rows`] for many instants over one log: each row's time is
/// parsed once.
#[derive(Clone, Debug)]
pub struct InForce {
    times: Vec<Option<transcope_core::Instant>>,
}

impl InForce {
    /// The rows' times (a row whose `at` is not a string time is never in force).
    pub fn new(rows: &[Row]) -> InForce {
        InForce {
            times: rows
                .iter()
                .map(|r| {
                    r.get("at")
                        .and_then(Value::as_str)
                        .and_then(timestamp::parse)
                })
                .collect(),
        }
    }

    /// The index of the row in force at `t`: the last in file order whose own time is
    /// at or before it.
    pub fn at(&self, t: transcope_core::Instant) -> Option<usize> {
        self.times
            .iter()
            .rposition(|rt| rt.is_some_and(|rt| rt <= t))
    }

    /// Each row's time, in file order (`None`: never in force).
    pub fn times(&self) -> &[Option<transcope_core::Instant>] {
        &self.times
    }
}

/// The row in force at an instant in a log read in pieces ([`in_force_in`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InForceIn {
    /// The row in force and its place in file order.
    pub row: Option<(usize, Row)>,
    /// How many readable rows the log has.
    pub rows: usize,
    /// Of the rows before the one in force, how many are later than the instant.
    pub later_but_earlier: usize,
}

/// [`InForce::at`] over the log at `path`, read in 64 KiB pieces: memory holds one
/// row however long the log (`explain` on a session with a million transitions). A
/// log that cannot be read is no rows, as for [`ScopeLog::transitions`].
///
/// [`ScopeLog::transitions`]: crate::ScopeLog::transitions
pub fn in_force_in(path: &std::path::Path, t: transcope_core::Instant) -> InForceIn {
    let mut out = InForceIn::default();
    let mut later = 0;
    let read = crate::read::scan_lines(path, (0, b""), |_, r| {
        match r
            .get("at")
            .and_then(Value::as_str)
            .and_then(timestamp::parse)
        {
            Some(rt) if rt <= t => {
                out.later_but_earlier = later;
                out.row = Some((out.rows, r));
            }
            Some(_) => later += 1,
            None => {}
        }
        out.rows += 1;
    });
    match read {
        Ok(_) => out,
        Err(_) => InForceIn::default(),
    }
}

/// Attribute each event through `rows` (§4.2).
pub fn attribute_rows(rows: &[Row], events: &[Event], grant: Option<&Grant>) -> Vec<Attribution> {
    events
        .iter()
        .map(|e| attribute_one(rows, e, grant))
        .collect()
}

fn attribute_one(rows: &[Row], event: &Event, grant: Option<&Grant>) -> Attribution {
    let empty = Map::new();
    let attrs = event.attrs.as_ref().unwrap_or(&empty);
    if attrs.get("share").and_then(Value::as_str) == Some("fleet") {
        return Attribution::bare(Label::Fleet);
    }
    let scope = match &event.at {
        Some(Value::String(s)) => scope_at_rows(rows, s),
        _ => None,
    };
    let explicit: Vec<(ScopeField, String)> = ScopeField::PROJECT
        .into_iter()
        .filter_map(|f| {
            attrs
                .get(f.key())
                .filter(|v| py::truthy(v))
                .map(|v| (f, py::str_of(v)))
        })
        .collect();
    let claimed = explicit
        .iter()
        .find(|(f, _)| *f == ScopeField::ProjectId)
        .map(|(_, v)| v.as_str())
        .filter(|id| !is_unclaimed(id));
    let non_empty = |s: &Scope, keep: &dyn Fn(ScopeField) -> bool| -> Vec<(ScopeField, String)> {
        s.iter()
            .filter(|(f, v)| !v.is_empty() && keep(*f))
            .map(|(f, v)| (f, v.to_owned()))
            .collect()
    };
    if let Some(id) = claimed {
        if grant.is_some_and(|g| !g.admits(id)) {
            return Attribution::bare(Label::Refused);
        }
        let mut fields = scope
            .as_ref()
            .map(|s| non_empty(s, &|f| !f.is_project()))
            .unwrap_or_default();
        fields.extend(explicit);
        return Attribution {
            label: Label::Explicit,
            fields,
        };
    }
    match scope {
        Some(s) => {
            let label = if is_unclaimed(s.get(ScopeField::ProjectId)) {
                Label::Unknown
            } else {
                Label::Scoped
            };
            Attribution {
                label,
                fields: non_empty(&s, &|_| true),
            }
        }
        None => Attribution::bare(Label::Unknown),
    }
}

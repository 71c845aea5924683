//! Reading a scope log from arbitrary bytes: `rows_from_bytes` never panics, and
//! `scope_at_rows` / `attribute_rows` over the rows never panic — for a fixed event list
//! (with and without a grant), at each row's own `at`, and with each row reused as an
//! event (`Event::from_json`) so arbitrary attribute values reach the Python `str()`
//! rendering.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};
use transcope_core::{py, Grant};
use transcope_scopelog::{attribute_rows, rows_from_bytes, scope_at_rows, splitlines, Event};

fn attrs(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn fixed_events() -> Vec<Event> {
    vec![
        Event::at("2026-10-08T10:05:00Z"),
        Event::at("2026-10-08T09:00:00+00:00"),
        Event::at("9999-12-31T23:59:59.999999"),
        Event::at("0001-01-01T00:00:00+01:00"),
        Event::at("not a time"),
        Event::default(),
        Event {
            at: Some(json!(5)),
            attrs: None,
        },
        Event::at("2026-10-08T10:15:00Z").with_attrs(attrs(json!({"share": "fleet"}))),
        Event::at("2026-10-08T10:15:00Z").with_attrs(attrs(
            json!({"project_id": "github.com/fixture/alpha", "worktree": "x"}),
        )),
        Event::at("2026-10-08T10:15:00Z")
            .with_attrs(attrs(json!({"project_id": "github.com/fixture/gamma"}))),
        Event::at("2026-10-08T10:15:00Z").with_attrs(attrs(json!({"project_id": "unknown"}))),
        Event::at("2026-10-08T10:15:00Z").with_attrs(attrs(json!({
            "project_id": 1.5e300, "project": [1, {"a": null}], "repo": true, "cwd": -0.0
        }))),
    ]
}

fuzz_target!(|data: &[u8]| {
    let rows = rows_from_bytes(data);
    let text = String::from_utf8_lossy(data);
    assert!(
        rows.len() <= splitlines(&text).count(),
        "at most one row per line"
    );

    let grant = Grant::new(["github.com/fixture/alpha", "github.com/fixture/beta"]);
    let mut events = fixed_events();
    let n = events.len();
    let _ = attribute_rows(&rows, &events, None);
    let got = attribute_rows(&rows, &events, Some(&grant));
    assert_eq!(got.len(), n);

    for row in rows.iter().take(64) {
        let _ = py::dumps(&Value::Object(row.clone()));
        if let Some(at) = row.get("at").and_then(Value::as_str) {
            let _ = scope_at_rows(&rows, at);
        }
        if let Some(e) = Event::from_json(&Value::Object(row.clone())) {
            events.push(e);
        }
        // The row itself as an event's attributes.
        events.push(Event::at("2026-10-08T10:05:00Z").with_attrs(row.clone()));
    }
    let _ = scope_at_rows(&rows, "2026-10-08T10:05:00Z");
    let got = attribute_rows(&rows, &events, None);
    assert_eq!(got.len(), events.len());
    let _ = attribute_rows(&rows, &events[n..], Some(&grant));
});

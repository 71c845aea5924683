//! Attributing a marker and building the brain writer's request body
//! (scope-log.md §5.3–§5.6, decision 164).
//!
//! * [`marker_scope`]: `fleet`, nothing (switch off, untimed replay, no scope log), or
//!   the single-event attribution through the writing session's own log;
//! * [`build_body`]: the POST body `{"type", "content", "attrs"}` — model-written scope
//!   attributes dropped and replaced by the scope in force, or the preceding
//!   identity lookup when there is no scope;
//! * [`idempotency_key`]: the SV2-IDN-03 key.
//!
//! Deliberate fixes of the reference (§8 item 8, decision 164): on a live Stop a
//! model-written `attribution` or `session_id` attribute is dropped, never kept; the
//! `session_id` is the writing session's own scope-log key (a sub-agent's
//! `<session>.<agent>`), and when no session could be established the body carries no
//! `session_id` at all (never `null` or `""`) and attribution `unknown` — nothing is
//! attributed to the most recently active session.

use serde_json::{Map, Value};
use transcope_core::{Attribution, Grant, Label, ScopeField};
use transcope_scopelog::{attribute_rows, Event, Row};

use transcope_core::Marker;

/// The longest `content` a body carries, in characters.
pub const MAX_CONTENT_CHARS: usize = 4096;

/// `marker_scope(session, marker, grant, replay)` over the session's rows (read once
/// by the caller). `enabled` is the `AGENTIHOOKS_SESSION_SCOPE` switch.
pub fn marker_scope(
    rows: &[Row],
    marker: &Marker,
    grant: Option<&Grant>,
    replay: bool,
    enabled: bool,
) -> Option<Attribution> {
    if !enabled {
        return None;
    }
    if marker.attrs.get("share").and_then(Value::as_str) == Some("fleet") {
        return Some(Attribution::bare(Label::Fleet));
    }
    let timed = marker.at.as_ref().is_some_and(transcope_core::py::truthy);
    if replay && !timed {
        return None;
    }
    if rows.is_empty() {
        return None;
    }
    let event = Event {
        at: marker.at.clone(),
        attrs: Some(marker.attrs.clone()),
    };
    attribute_rows(rows, std::slice::from_ref(&event), grant).pop()
}

/// The six identity attributes the preceding (legacy) body fills in.
pub type Identity = [(&'static str, String); 6];

/// Everything [`build_body`] needs besides the marker.
pub struct BodyContext<'a> {
    /// The writing session's scope-log key; `None` when no identity could be
    /// established.
    pub session: Option<&'a str>,
    /// The scope computed for the marker (`None`: no scope, the legacy body).
    pub scope: Option<&'a Attribution>,
    /// A live Stop (`false`: an outbox replay, whose attributes are ours).
    pub live: bool,
    /// The preceding identity lookup, consulted only for the legacy body.
    pub lookup: &'a mut dyn FnMut(&Map<String, Value>) -> Option<Identity>,
    /// `AGENTICORE_AGENT_NAME`, else `"agent"`.
    pub source: &'a str,
}

/// The request body `{"type", "content", "attrs"}` (§5.4).
pub fn build_body(marker: &Marker, cx: BodyContext<'_>) -> Value {
    let mut attrs = marker.attrs.clone();
    if cx.live {
        // Only the hook may say how a marker is attributed and who wrote it.
        attrs.shift_remove("attribution");
        attrs.shift_remove("session_id");
    }
    match cx.scope {
        Some(scope) => {
            for f in ScopeField::ALL {
                attrs.shift_remove(f.key());
            }
            for (k, v) in scope.to_json_map() {
                attrs.entry(k).or_insert(v);
            }
        }
        None if !attrs.contains_key("attribution") => {
            if let Some(identity) = (cx.lookup)(&attrs) {
                for (k, v) in identity {
                    attrs.entry(k.to_owned()).or_insert(Value::String(v));
                }
            }
        }
        None => {}
    }
    if let Some(s) = cx.session {
        attrs
            .entry("session_id".to_owned())
            .or_insert(Value::String(s.to_owned()));
    }
    attrs
        .entry("source".to_owned())
        .or_insert(Value::String(cx.source.to_owned()));
    let content: String = marker.content.chars().take(MAX_CONTENT_CHARS).collect();
    let mut body = Map::new();
    body.insert("type".into(), Value::String(marker.kind.clone()));
    body.insert("content".into(), Value::String(content));
    body.insert("attrs".into(), Value::Object(attrs));
    Value::Object(body)
}

/// The SV2-IDN-03 idempotency key: the 32 hex digits of the UUIDv5 (URL namespace) of
/// `<session>-<type>-<content truncated to 4096 characters>`.
pub fn idempotency_key(session: &str, kind: &str, content: &str) -> String {
    let content: String = content.chars().take(MAX_CONTENT_CHARS).collect();
    let name = format!("{session}-{kind}-{content}");
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_URL, name.as_bytes())
        .simple()
        .to_string()
}

/// Whether a recorded key is reusable (32 lowercase hex digits).
pub fn is_recorded_key(k: &str) -> bool {
    k.len() == 32 && k.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

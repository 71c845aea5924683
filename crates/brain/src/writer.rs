//! The brain writer's attribution: each marker through the writing session's own scope
//! log (scope-log.md §5.3–§5.6, decision 164), into the request body and idempotency key
//! a sink delivers; and the settings the writer reads from the environment.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use transcope_core::{Attribution, Env, Label, Marker};
use transcope_identity::ProjectResolver;
use transcope_scopelog::index::lookup;

use crate::body::{build_body, idempotency_key, marker_scope, BodyContext, Identity};
use crate::MarkerRecord;

/// The default `BRAIN_WRITER_MAX_MARKERS`.
pub const DEFAULT_MAX_MARKERS: usize = 5;

/// The default time all of one run's POSTs (drain and markers) may take together.
pub const DEFAULT_BUDGET: std::time::Duration = std::time::Duration::from_secs(8);

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
    /// The most time one run's POSTs may take together ([`DEFAULT_BUDGET`]; a hook
    /// lowers it to fit its deadline).
    pub budget: std::time::Duration,
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
            outbox: crate::outbox_dir_from_env(
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
            budget: DEFAULT_BUDGET,
        }
    }
}

/// Who writes markers, and how: what attribution needs besides the markers.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The agentihooks home (the session index).
    pub home: &'a Path,
    /// The writing session's scope-log key; `None` when none could be established.
    pub session: Option<&'a str>,
    /// The event-time scope switch is on.
    pub scope_on: bool,
    /// The environment a marker's own folder is resolved with.
    pub env: &'a Env,
    /// The live folder (the fallback for a marker with no `cwd`).
    pub folder: &'a str,
    /// The body's `source`.
    pub source: &'a str,
}

impl<'a> Writer<'a> {
    /// The writer of an archived session's markers (a backfill, `observe`): the scope
    /// switch on, no live folder, the default `source`.
    pub fn archived(home: &'a Path, session: &'a str, env: &'a Env) -> Writer<'a> {
        Writer {
            home,
            session: Some(session),
            scope_on: true,
            env,
            folder: "",
            source: "agent",
        }
    }

    /// Attribute `markers` through the writing session's `rows` and build their
    /// records (scope-log.md §5.3–§5.6, decision 164). Returns the records and
    /// `unattributed_session_events_total`.
    pub fn attribute<R: ProjectResolver>(
        &self,
        markers: &[Marker],
        rows: &[transcope_scopelog::Row],
        resolver: &mut R,
    ) -> (Vec<MarkerRecord>, u64) {
        let Writer {
            home,
            session,
            scope_on,
            env,
            folder,
            source,
        } = *self;
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
}

/// The preceding identity: the session index's row for the writing session, else the
/// marker's own `cwd` (or the folder) resolved with `env`.
pub fn legacy_identity<R: ProjectResolver>(
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

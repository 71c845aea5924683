//! Scopes, grants and attribution results (scope-log.md §1.1, §1.3, §4).
//!
//! A [`Scope`] is the 11 normalised strings a transition carries, always in the fixed
//! [`ScopeField`] order. [`Scope::transition_id`] is the SV2-IDN-03 identity of a
//! transition. A [`Grant`] lists the project ids a session may claim, and an
//! [`Attribution`] is the label and fields `attribute` gives one event.
//!
//! ```
//! use transcope_core::scope::{Scope, ScopeField};
//! let mut s = Scope::default();
//! s.set(ScopeField::Task, "café 😀");
//! assert_eq!(
//!     s.transition_id("u", "2026-10-08T10:00:00Z"),
//!     "03d2921f62e82dc59c62750c73f0e99a10a88f589d65b6475f8fe9e06ec1891e"
//! );
//! ```

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::py;

/// The 11 scope fields, in the fixed order used everywhere a scope is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum ScopeField {
    ProjectId,
    Project,
    Repo,
    Worktree,
    Cwd,
    Remote,
    Branch,
    Swarm,
    Task,
    TaskRevision,
    Lane,
}

impl ScopeField {
    /// All fields in scope order.
    pub const ALL: [ScopeField; 11] = [
        ScopeField::ProjectId,
        ScopeField::Project,
        ScopeField::Repo,
        ScopeField::Worktree,
        ScopeField::Cwd,
        ScopeField::Remote,
        ScopeField::Branch,
        ScopeField::Swarm,
        ScopeField::Task,
        ScopeField::TaskRevision,
        ScopeField::Lane,
    ];

    /// The project fields an explicit claim replaces, in project-field order.
    pub const PROJECT: [ScopeField; 4] = [
        ScopeField::ProjectId,
        ScopeField::Project,
        ScopeField::Repo,
        ScopeField::Remote,
    ];

    /// The key as stored (`project_id`, …, `lane`).
    pub const fn key(self) -> &'static str {
        match self {
            ScopeField::ProjectId => "project_id",
            ScopeField::Project => "project",
            ScopeField::Repo => "repo",
            ScopeField::Worktree => "worktree",
            ScopeField::Cwd => "cwd",
            ScopeField::Remote => "remote",
            ScopeField::Branch => "branch",
            ScopeField::Swarm => "swarm",
            ScopeField::Task => "task",
            ScopeField::TaskRevision => "task_revision",
            ScopeField::Lane => "lane",
        }
    }

    /// The field named `key`, if it is one of the 11.
    pub fn from_key(key: &str) -> Option<ScopeField> {
        ScopeField::ALL.into_iter().find(|f| f.key() == key)
    }

    /// Whether this is one of the four project fields.
    pub fn is_project(self) -> bool {
        ScopeField::PROJECT.contains(&self)
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ScopeField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The 11 normalised scope strings of a transition; empty means "not set".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    values: [String; 11],
}

impl Scope {
    /// The value of `field` (`""` when unset).
    pub fn get(&self, field: ScopeField) -> &str {
        &self.values[field.index()]
    }

    /// Set `field`; `None`-like empty strings stay `""`.
    pub fn set(&mut self, field: ScopeField, value: impl Into<String>) {
        self.values[field.index()] = value.into();
    }

    /// Builder form of [`Scope::set`].
    pub fn with(mut self, field: ScopeField, value: impl Into<String>) -> Self {
        self.set(field, value);
        self
    }

    /// `(field, value)` pairs in scope order, empty values included.
    pub fn iter(&self) -> impl Iterator<Item = (ScopeField, &str)> + '_ {
        ScopeField::ALL.into_iter().map(move |f| (f, self.get(f)))
    }

    /// Normalise a caller's mapping as the reference does (§1.3): for each of the 11
    /// fields, a missing or falsy value becomes `""`, anything else its Python `str()`.
    /// Keys that are not scope fields are ignored.
    pub fn from_json_map(map: &Map<String, Value>) -> Scope {
        let mut s = Scope::default();
        for f in ScopeField::ALL {
            if let Some(v) = map.get(f.key()) {
                s.set(f, normalise(v));
            }
        }
        s
    }

    /// This scope as a JSON object in scope order (all 11 keys).
    pub fn to_json_map(&self) -> Map<String, Value> {
        self.iter()
            .map(|(f, v)| (f.key().to_owned(), Value::String(v.to_owned())))
            .collect()
    }

    /// The exact text hashed for a transition id (§1.6):
    /// `[session_id, at, {sorted scope}]` in Python `json.dumps` style.
    pub fn transition_id_input(&self, session_id: &str, at: &str) -> String {
        let mut fields: Vec<ScopeField> = ScopeField::ALL.to_vec();
        fields.sort_by(|a, b| py::cmp_code_points(a.key(), b.key()));
        let mut out = String::with_capacity(256);
        out.push('[');
        py::write_str(&mut out, session_id);
        out.push_str(", ");
        py::write_str(&mut out, at);
        out.push_str(", {");
        for (i, f) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            py::write_str(&mut out, f.key());
            out.push_str(": ");
            py::write_str(&mut out, self.get(f));
        }
        out.push_str("}]");
        out
    }

    /// The SV2-IDN-03 `transition_id`: lowercase hex SHA-256 of
    /// [`Scope::transition_id_input`].
    pub fn transition_id(&self, session_id: &str, at: &str) -> String {
        crate::digest::sha256_hex(self.transition_id_input(session_id, at).as_bytes())
    }
}

/// Normalise one value (§1.3): falsy → `""`, otherwise Python `str()`.
pub fn normalise(v: &Value) -> String {
    if py::truthy(v) {
        py::str_of(v)
    } else {
        String::new()
    }
}

/// Project ids that make no claim.
pub fn is_unclaimed(project_id: &str) -> bool {
    project_id.is_empty() || project_id == "unknown"
}

/// The project ids a session may claim (`SessionGrant`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grant {
    ids: BTreeSet<String>,
}

impl Grant {
    /// A grant of exactly these project ids.
    pub fn new<I, S>(ids: I) -> Grant
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Grant {
            ids: ids.into_iter().map(Into::into).collect(),
        }
    }

    /// Parse the CLI form: comma-separated ids; `""` is the empty grant. Empty items
    /// between commas are ignored.
    pub fn parse_list(s: &str) -> Grant {
        Grant::new(s.split(',').map(str::trim).filter(|x| !x.is_empty()))
    }

    /// Whether `project_id` is admitted: `""`, `"unknown"`, or one of the ids.
    pub fn admits(&self, project_id: &str) -> bool {
        is_unclaimed(project_id) || self.ids.contains(project_id)
    }
}

/// The five attribution labels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    /// The transition in force names a project.
    Scoped,
    /// The event names its own, admitted, project id.
    Explicit,
    /// The event says `share=fleet`.
    Fleet,
    /// No transition in force, or it names no project.
    Unknown,
    /// The event names a project outside the grant.
    Refused,
}

impl Label {
    /// The label as written (`scoped`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Label::Scoped => "scoped",
            Label::Explicit => "explicit",
            Label::Fleet => "fleet",
            Label::Unknown => "unknown",
            Label::Refused => "refused",
        }
    }

    /// Whether this label counts towards `unattributed_session_events_total`.
    pub const fn is_unattributed(self) -> bool {
        matches!(self, Label::Unknown | Label::Refused)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One attribution result: the label, then the non-empty scope fields in output order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribution {
    /// The label.
    pub label: Label,
    /// The fields, in the order they are written (§4.2 step 7).
    pub fields: Vec<(ScopeField, String)>,
}

impl Attribution {
    /// A result with only a label.
    pub fn bare(label: Label) -> Attribution {
        Attribution {
            label,
            fields: Vec::new(),
        }
    }

    /// The value of `field`, when present.
    pub fn get(&self, field: ScopeField) -> Option<&str> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| v.as_str())
    }

    /// The result as an ordered JSON object (`attribution` first).
    pub fn to_json_map(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "attribution".into(),
            Value::String(self.label.as_str().into()),
        );
        for (f, v) in &self.fields {
            m.insert(f.key().into(), Value::String(v.clone()));
        }
        m
    }

    /// The result in Python `json.dumps` form.
    pub fn to_python_json(&self) -> String {
        py::dumps(&Value::Object(self.to_json_map()))
    }
}

/// `unattributed_session_events_total`: results labelled `unknown` or `refused`.
pub fn unattributed_total<'a>(results: impl IntoIterator<Item = &'a Attribution>) -> usize {
    results
        .into_iter()
        .filter(|a| a.label.is_unattributed())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_keys_are_code_point_order() {
        let s = Scope::default();
        let text = s.transition_id_input("s", "t");
        assert!(text.starts_with(
            r#"["s", "t", {"branch": "", "cwd": "", "lane": "", "project": "", "project_id": """#
        ));
        assert!(text.ends_with(r#""task": "", "task_revision": "", "worktree": ""}]"#));
    }

    #[test]
    fn grant_admits_unclaimed_and_listed() {
        let g = Grant::parse_list("a,b");
        assert!(g.admits(""));
        assert!(g.admits("unknown"));
        assert!(g.admits("a"));
        assert!(!g.admits("c"));
        assert!(!Grant::parse_list("").admits("a"));
    }
}

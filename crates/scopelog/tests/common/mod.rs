//! The §7.1 fixture (`testdata/fixtures/session-scope.json`) and its helpers.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::{Map, Value};
use transcope_core::{Attribution, Grant, Scope};
use transcope_scopelog::{Event, ScopeLog};

pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

pub struct Fixture {
    pub json: Value,
}

impl Fixture {
    pub fn load() -> Fixture {
        Self::from_text(
            &std::fs::read_to_string(testdata().join("fixtures/session-scope.json")).unwrap(),
        )
    }

    pub fn from_text(text: &str) -> Fixture {
        Fixture {
            json: serde_json::from_str(text).unwrap(),
        }
    }

    pub fn grant(&self) -> Grant {
        Grant::new(
            self.json["grant"]["project_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_owned()),
        )
    }

    /// (at, scope) of transition `i`.
    pub fn transition(&self, i: usize) -> (String, Scope) {
        let t = &self.json["transitions"][i];
        (
            t["at"].as_str().unwrap().to_owned(),
            Scope::from_json_map(t["scope"].as_object().unwrap()),
        )
    }

    pub fn scope_map(&self, i: usize) -> Map<String, Value> {
        self.json["transitions"][i]["scope"]
            .as_object()
            .unwrap()
            .clone()
    }

    pub fn outside_grant(&self) -> Scope {
        Scope::from_json_map(self.json["outside_grant"].as_object().unwrap())
    }

    /// "record all": the four transitions with the grant; returns the sequences.
    pub fn record_all(&self, log: &ScopeLog) -> Vec<Option<u64>> {
        let g = self.grant();
        (0..4)
            .map(|i| {
                let (at, s) = self.transition(i);
                log.record(&s, &at, Some(&g)).unwrap().map(|r| r.sequence)
            })
            .collect()
    }

    /// The transcript's markers as events: (at, attrs) of each entry's one marker.
    pub fn marker_events(&self) -> Vec<Event> {
        self.json["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let text = e["message"]["content"][0]["text"].as_str().unwrap();
                let mut attrs = Map::new();
                if text.contains("share=fleet") {
                    attrs.insert("severity".into(), "warning".into());
                    attrs.insert("share".into(), "fleet".into());
                }
                Event {
                    at: Some(e["timestamp"].clone()),
                    attrs: Some(attrs),
                }
            })
            .collect()
    }

    pub fn expected(&self) -> Vec<Value> {
        self.json["expected"].as_array().unwrap().clone()
    }
}

/// The projection: attribution, project_id, worktree, task, task_revision, lane, where truthy.
pub fn project(a: &Attribution) -> Value {
    let m = a.to_json_map();
    let mut out = Map::new();
    for k in [
        "attribution",
        "project_id",
        "worktree",
        "task",
        "task_revision",
        "lane",
    ] {
        if let Some(v) = m
            .get(k)
            .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        {
            out.insert(k.into(), v.clone());
        }
    }
    Value::Object(out)
}

pub fn worktrees(log: &ScopeLog) -> Vec<String> {
    log.transitions()
        .iter()
        .map(|r| r["worktree"].as_str().unwrap().to_owned())
        .collect()
}

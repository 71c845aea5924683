//! The brain marker every marker stage finds and every brain sink delivers.
//!
//! A [`Marker`] is one block of assistant text (`<!-- @lesson -->…<!-- @/lesson -->`,
//! scope-log.md §5.1) with the time of the record that held it. It lives here, below
//! both the stage that finds markers and the crate that attributes and delivers them,
//! so neither depends on the other.
//!
//! ```
//! use transcope_core::marker::Marker;
//! let m = Marker { kind: "lesson".into(), attrs: Default::default(), content: "x".into(), at: None };
//! assert_eq!(m.to_python_json(), r#"{"type": "lesson", "attrs": {}, "content": "x"}"#);
//! ```

use serde_json::{Map, Value};

use crate::py;

/// One brain marker.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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

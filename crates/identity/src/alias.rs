//! The project alias map: `project_id` → `project_id`, applied transitively.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use transcope_core::quote::quote;

use crate::{canonical_remote, ResolveError, UNKNOWN_PROJECT_ID};

/// The only accepted `schema_version`.
pub const ALIAS_SCHEMA_VERSION: &str = "2.0";

/// Default file name of the alias map inside `$AGENTIHOOKS_HOME`.
pub const ALIAS_FILE_NAME: &str = "project-aliases.json";

/// A validated project alias map.
///
/// The document is a JSON object with exactly two keys:
///
/// ```json
/// {"schema_version": "2.0", "aliases": {"github.com/old/name": "github.com/new/name"}}
/// ```
///
/// Validation is strict, as in the reference: `schema_version` must be the string `"2.0"`,
/// no other top-level key is allowed, `aliases` must be an object of strings, no source or
/// target may be `"unknown"`, each source and target must already be canonical (that is,
/// `canonical_remote("https://" + id) == id`, so `local:…` ids and upper-case github ids are
/// rejected), and following any source must not come back to itself (cycles are rejected).
/// Rewriting is transitive: `a → b`, `b → c` rewrites `a` to `c`.
///
/// ```
/// use transcope_identity::AliasMap;
///
/// let map = AliasMap::from_json_str(
///     r#"{"schema_version": "2.0", "aliases": {"github.com/a/a": "github.com/b/b", "github.com/b/b": "github.com/c/c"}}"#,
/// ).unwrap();
/// assert_eq!(map.rewrite("github.com/a/a"), "github.com/c/c");
/// assert_eq!(map.rewrite("github.com/z/z"), "github.com/z/z");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AliasMap {
    aliases: BTreeMap<String, String>,
}

fn invalid(reason: impl Into<String>) -> ResolveError {
    ResolveError::InvalidAliasMap {
        reason: reason.into(),
    }
}

impl AliasMap {
    /// Validates a parsed alias document.
    pub fn from_document(document: &Value) -> Result<Self, ResolveError> {
        let object = document
            .as_object()
            .ok_or_else(|| invalid("the document is not an object"))?;
        if object.get("schema_version").and_then(Value::as_str) != Some(ALIAS_SCHEMA_VERSION) {
            return Err(invalid("schema_version must be \"2.0\""));
        }
        if object.len() != 2 || !object.contains_key("aliases") {
            return Err(invalid(
                "the document must have exactly the keys schema_version and aliases",
            ));
        }
        let entries = object["aliases"]
            .as_object()
            .ok_or_else(|| invalid("aliases is not an object"))?;
        let mut aliases = BTreeMap::new();
        for (source, target) in entries {
            let target = target.as_str().ok_or_else(|| {
                invalid(format!("the alias of {} is not a string", quote(source)))
            })?;
            for id in [source.as_str(), target] {
                if id == UNKNOWN_PROJECT_ID || canonical_remote(&format!("https://{id}")) != id {
                    return Err(invalid(format!(
                        "{} is not a canonical project id",
                        quote(id)
                    )));
                }
            }
            aliases.insert(source.clone(), target.to_owned());
        }
        let map = AliasMap { aliases };
        for source in map.aliases.keys() {
            map.follow(source)?;
        }
        Ok(map)
    }

    /// Parses and validates an alias document from JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, ResolveError> {
        let document: Value =
            serde_json::from_str(text).map_err(|err| invalid(format!("not valid JSON: {err}")))?;
        Self::from_document(&document)
    }

    /// Reads, parses and validates an alias file.
    pub fn load(path: &Path) -> Result<Self, ResolveError> {
        let bytes = std::fs::read(path).map_err(|source| ResolveError::ReadAliasMap {
            path: path.to_owned(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|_| invalid("the file is not UTF-8"))?;
        Self::from_json_str(&text)
    }

    /// Like [`AliasMap::load`], but a missing file is no alias map.
    pub fn load_optional(path: &Path) -> Result<Option<Self>, ResolveError> {
        match Self::load(path) {
            Ok(map) => Ok(Some(map)),
            Err(ResolveError::ReadAliasMap { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// Follows the map from `project_id` until an id with no alias; returns `project_id`
    /// itself when it has none.
    pub fn rewrite<'a>(&'a self, project_id: &'a str) -> &'a str {
        // Validation rejected cycles, so this terminates.
        self.follow(project_id).unwrap_or(project_id)
    }

    fn follow<'a>(&'a self, project_id: &'a str) -> Result<&'a str, ResolveError> {
        let mut current = project_id;
        let mut steps = 0usize;
        while let Some(next) = self.aliases.get(current) {
            // A chain longer than the map must revisit an id.
            if steps >= self.aliases.len() {
                return Err(ResolveError::AliasCycle {
                    project_id: project_id.to_owned(),
                });
            }
            steps += 1;
            current = next;
        }
        Ok(current)
    }

    /// The number of aliases.
    pub fn len(&self) -> usize {
        self.aliases.len()
    }

    /// `true` when the map has no alias.
    pub fn is_empty(&self) -> bool {
        self.aliases.is_empty()
    }

    /// The aliases, sorted by source.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.aliases.iter().map(|(s, t)| (s.as_str(), t.as_str()))
    }
}

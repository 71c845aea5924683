//! Where Gemini CLI keeps sessions, and the project folder it recorded for them.
//!
//! ```text
//! $GEMINI_CLI_HOME or ~            (GEMINI_CLI_HOME replaces the home folder)
//! └── .gemini/
//!     ├── projects.json            {"projects": {"<absolute folder>": "<short id>"}}  (≥ 0.29)
//!     └── tmp/
//!         └── <short id>  | <sha256 of the folder, before 0.29>
//!             ├── .project_root    the folder, as text                          (≥ 0.29)
//!             └── chats/
//!                 ├── session-<YYYY-MM-DDTHH-MM>-<first 8 of the id>.json | .jsonl
//!                 └── <parent session id>/<sub-agent session id>.json | .jsonl  (≥ 0.37)
//! ```
//!
//! [`Folder`] finds a session file's project folder only from those records, never by
//! guessing: the `.project_root` beside `chats/`; else the one folder `projects.json`
//! maps to that short id; else (needs the session's `projectHash`) the folder listed in
//! `projects.json` whose SHA-256 ([`project_hash`]) is the hash. [`chats_place`] says
//! whether a path sits where the CLI writes sessions.
//!
//! ```
//! use transcope_adapter_gemini::place::{chats_place, ChatsPlace};
//! use std::path::Path;
//! assert_eq!(chats_place(Path::new("/h/.gemini/tmp/p/chats/session-2026-01-02T03-04-abcd1234.jsonl")), Some(ChatsPlace::Main));
//! assert_eq!(chats_place(Path::new("/h/.gemini/tmp/p/chats/P1/A1.jsonl")), Some(ChatsPlace::SubAgent { parent: "P1".into() }));
//! assert_eq!(chats_place(Path::new("/h/.gemini/tmp/p/chats/notes.json")), None);
//! ```

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes read at most from `.project_root` (a folder path).
const PROJECT_ROOT_CAP: u64 = 64 * 1024;
/// Bytes read at most from `projects.json`.
const REGISTRY_CAP: u64 = 16 * 1024 * 1024;

/// The lowercase hex SHA-256 of `folder`'s UTF-8 bytes: the `projectHash` every
/// session records, and the name of a project's tmp folder before version 0.29.
///
/// ```
/// assert_eq!(
///     transcope_adapter_gemini::project_hash("/Users/test_user/agent-sample"),
///     "55bddef6d3bbe1dfe2b6609854976c893af825ba17a47345d7e51d4020e0e03e"
/// );
/// ```
pub fn project_hash(folder: &str) -> String {
    transcope_core::digest::sha256_hex(folder.as_bytes())
}

/// Where a session file sits under a `chats` folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatsPlace {
    /// `chats/session-*.json(l)`: a main session (or, before 0.37, a sub-agent).
    Main,
    /// `chats/<parent>/<id>.json(l)`: a sub-agent of the session whose (sanitised) id
    /// is `parent`.
    SubAgent {
        /// The parent folder's name.
        parent: String,
    },
}

/// Whether `path` is named and placed as a Gemini CLI session file (no read).
pub fn chats_place(path: &Path) -> Option<ChatsPlace> {
    let name = path.file_name()?.to_str()?;
    let stem = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))?;
    if stem.is_empty() {
        return None;
    }
    let parent = path.parent()?;
    let parent_name = parent.file_name()?.to_str()?;
    if parent_name == "chats" {
        return name.starts_with("session-").then_some(ChatsPlace::Main);
    }
    let grand = parent.parent()?;
    (grand.file_name()? == "chats").then(|| ChatsPlace::SubAgent {
        parent: parent_name.to_owned(),
    })
}

/// The project's tmp folder (`tmp/<id>`) of a session file, when it sits under
/// `chats/` or `chats/<parent>/`.
pub fn project_dir(path: &Path) -> Option<&Path> {
    let chats = match chats_place(path)? {
        ChatsPlace::Main => path.parent()?,
        ChatsPlace::SubAgent { .. } => path.parent()?.parent()?,
    };
    chats.parent()
}

/// The folder the CLI keeps its state in: `$GEMINI_CLI_HOME/.gemini` when that
/// variable is set and not blank, else `<home>/.gemini` ([`crate::agent::HOME`]).
pub fn gemini_dir(lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> PathBuf {
    crate::agent::HOME.resolve(lookup, home)
}

/// A session file's project folder, as far as the CLI's own records tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folder {
    /// The folder found from the file's place alone.
    pub known: Option<String>,
    /// Folders `projects.json` lists, for a match by `projectHash`.
    registry: Vec<String>,
}

impl Folder {
    /// Look beside the session file at `path`: `<project dir>/.project_root`, then
    /// `<gemini dir>/projects.json` (two folders above the project dir). Unreadable or
    /// malformed records count as absent.
    pub fn beside(path: &Path) -> Folder {
        let Some(dir) = project_dir(path) else {
            return Folder::default();
        };
        if let Some(root) = read_capped(&dir.join(".project_root"), PROJECT_ROOT_CAP) {
            // The CLI writes the folder alone and trims what it reads back.
            let root = root.trim();
            if !root.is_empty() {
                return Folder {
                    known: Some(root.to_owned()),
                    registry: Vec::new(),
                };
            }
        }
        let registry_path = dir
            .parent()
            .and_then(Path::parent)
            .map(|g| g.join("projects.json"));
        let entries = registry_path
            .and_then(|p| read_capped(&p, REGISTRY_CAP))
            .map(|text| registry(&text))
            .unwrap_or_default();
        let id = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let mut owners = entries.iter().filter(|(_, short)| short == id);
        let known = match (owners.next(), owners.next()) {
            (Some((folder, _)), None) => Some(folder.clone()),
            _ => None,
        };
        let mut folder = Folder {
            known,
            registry: entries.into_iter().map(|(f, _)| f).collect(),
        };
        if folder.known.is_none() && is_sha256_hex(id) {
            folder.known = folder.by_hash(id);
        }
        folder
    }

    /// The folder, using the session's `projectHash` when the place alone told none.
    pub fn resolve(&mut self, project_hash: Option<&str>) -> Option<&str> {
        if self.known.is_none() {
            if let Some(h) = project_hash.filter(|h| is_sha256_hex(h)) {
                self.known = self.by_hash(h);
            }
        }
        self.known.as_deref()
    }

    fn by_hash(&self, hash: &str) -> Option<String> {
        let mut hits = self.registry.iter().filter(|f| project_hash(f) == hash);
        match (hits.next(), hits.next()) {
            (Some(f), None) => Some(f.clone()),
            _ => None,
        }
    }
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `projects.json`'s `projects` map as (folder, short id) pairs; empty when malformed.
fn registry(text: &str) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Registry {
        projects: indexmap::IndexMap<String, String>,
    }
    serde_json::from_str::<Registry>(text)
        .map(|r| r.projects.into_iter().collect())
        .unwrap_or_default()
}

/// A file's text, when it is a regular file of at most `cap` bytes and UTF-8.
pub(crate) fn read_capped(path: &Path, cap: u64) -> Option<String> {
    let file = fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(cap + 1).read_to_string(&mut text).ok()?;
    (text.len() as u64 <= cap).then_some(text)
}

/// The first line of the file at `path` (without its `\n`), read only as far as that
/// line and never past `cap` bytes (a longer line comes back cut short).
pub(crate) fn first_line(path: &Path, cap: u64) -> Option<Vec<u8>> {
    transcope_adapter_common::head::find_line(path, cap, |l| Some(l.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places() {
        let p = |s: &str| chats_place(Path::new(s));
        assert_eq!(p("/t/x/chats/session-a.json"), Some(ChatsPlace::Main));
        assert_eq!(p("/t/x/chats/other.jsonl"), None);
        assert_eq!(p("/t/x/chats/session-a.json.tmp-12"), None);
        assert_eq!(p("/t/x/logs/session-a.jsonl"), None);
        assert_eq!(
            p("/t/x/chats/p/a.json"),
            Some(ChatsPlace::SubAgent { parent: "p".into() })
        );
        assert_eq!(p("/t/x/chats/p/.jsonl"), None);
    }

    #[test]
    fn gemini_dir_override() {
        let none = |_: &str| None;
        let set = |k: &str| (k == "GEMINI_CLI_HOME").then(|| "/iso".to_owned());
        let empty = |_: &str| Some(String::new());
        assert_eq!(gemini_dir(&none, Path::new("/h")), Path::new("/h/.gemini"));
        assert_eq!(gemini_dir(&set, Path::new("/h")), Path::new("/iso/.gemini"));
        assert_eq!(gemini_dir(&empty, Path::new("/h")), Path::new("/h/.gemini"));
    }
}

//! Where OpenCode keeps its sessions, and which container holds each.
//!
//! ```text
//! $OPENCODE_DB                                  the database, wherever it is put
//! $XDG_DATA_HOME/opencode, else ~/.local/share/opencode
//! ├── opencode.db                               the database (latest, beta, prod channels)
//! ├── opencode-<channel>.db                     another channel's database
//! │   (+ -wal, -shm: SQLite's own, not containers)
//! └── storage/                                  the legacy JSON tree (imported on upgrade)
//!     ├── project/<projectID>.json              {id, worktree, vcs, …}
//!     ├── session/<projectID>/<sessionID>.json  a session: one container  → <sessionID>
//!     ├── message/<sessionID>/<messageID>.json  its messages
//!     └── part/<messageID>/<partID>.json        their parts
//! ```
//!
//! A database holds every session: it is claimed by its name and read one session at a
//! time (its key is each session's id, `ses_…`, listed by
//! [`RecordSource::sessions`](transcope_core::records::RecordSource::sessions)), so it
//! has no key of its own ([`OpenCodeLayout::key_of`] says so). A legacy session file is
//! a container of one session, its key its file name (the import takes ids from file
//! names too). Builds from before mid-2025 kept `storage/session/{info,message,part}/`:
//! not read.
//!
//! ```
//! use std::path::Path;
//! use transcope_adapter_opencode::layout::OpenCodeLayout;
//! use transcope_core::adapter::{Confidence, Layout};
//!
//! let l = OpenCodeLayout;
//! assert!(l.claims(Path::new("/h/.local/share/opencode/opencode.db")));
//! assert!(l.claims(Path::new("/h/.local/share/opencode/opencode-dev.db")));
//! assert!(!l.claims(Path::new("/h/.local/share/opencode/opencode.db-wal")));
//! let legacy = Path::new("/h/.local/share/opencode/storage/session/global/ses_1.json");
//! assert_eq!(l.scope_key(legacy), Some((Confidence::Certain, Ok("ses_1".to_string()))));
//! assert!(!l.claims(Path::new("/h/.local/share/opencode/storage/message/ses_1/msg_1.json")));
//! ```

use std::path::{Path, PathBuf};

use transcope_adapter_common::head::checked_key;
use transcope_core::adapter::{Confidence, Layout};
use transcope_core::head::Head;

/// The variable that names the database file itself.
pub const DB_VAR: &str = "OPENCODE_DB";

/// The XDG variable the data folder is under.
pub const DATA_VAR: &str = "XDG_DATA_HOME";

/// What a path is in OpenCode's layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// A database, by its name (`opencode.db`, `opencode-<channel>.db`).
    Database,
    /// A legacy session file: `storage/session/<project>/<id>.json`.
    Session {
        /// The session id (the file's stem).
        id: String,
        /// The `storage` folder.
        storage: PathBuf,
    },
}

/// The `n`-th folder above `path` (1: the folder holding it), by name.
fn above(path: &Path, n: usize) -> Option<&str> {
    path.ancestors().nth(n)?.file_name()?.to_str()
}

/// Whether `name` is a database OpenCode names: `opencode.db` or
/// `opencode-<channel>.db`.
pub fn database_name(name: &str) -> bool {
    name.strip_suffix(".db").is_some_and(|s| {
        s == "opencode" || s.strip_prefix("opencode-").is_some_and(|c| !c.is_empty())
    })
}

/// Where `path` sits in OpenCode's layout, by name and place alone, or `None`.
pub fn place(path: &Path) -> Option<Place> {
    let name = path.file_name()?.to_str()?;
    if database_name(name) {
        return Some(Place::Database);
    }
    let id = name.strip_suffix(".json")?;
    let project = above(path, 1)?;
    let legacy = above(path, 2) == Some("session")
        && above(path, 3) == Some("storage")
        // The older per-project layout's folders.
        && !matches!(project, "info" | "message" | "part")
        && !id.is_empty();
    legacy.then(|| Place::Session {
        id: id.to_owned(),
        storage: path.ancestors().nth(3).unwrap_or(path).to_path_buf(),
    })
}

/// OpenCode's data folder: `$XDG_DATA_HOME/opencode` (an absolute value; XDG says a
/// relative one is ignored), else `~/.local/share/opencode`.
pub fn data_dir(lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> PathBuf {
    let xdg = lookup(DATA_VAR)
        .map(|v| v.trim().to_owned())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    xdg.unwrap_or_else(|| home.join(".local/share"))
        .join("opencode")
}

/// OpenCode's on-disk [`Layout`] (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct OpenCodeLayout;

impl Layout for OpenCodeLayout {
    /// `$OPENCODE_DB` when set (an absolute path: the database wherever it is), and the
    /// data folder ([`data_dir`]: its databases and its legacy tree).
    fn default_roots(&self, lookup: &dyn Fn(&str) -> Option<String>, home: &Path) -> Vec<PathBuf> {
        let mut roots = Vec::new();
        if let Some(db) = lookup(DB_VAR)
            .map(|v| PathBuf::from(v.trim()))
            .filter(|p| p.is_absolute())
        {
            roots.push(db);
        }
        roots.push(data_dir(lookup, home));
        roots
    }

    fn claims(&self, path: &Path) -> bool {
        place(path).is_some()
    }

    /// A legacy session file is its session ([`Confidence::Certain`]); a database
    /// holds many and is named one session at a time, so it has no key.
    fn key_of(&self, head: &Head<'_>) -> Option<(Confidence, Result<String, String>)> {
        match place(head.path())? {
            Place::Database => Some((
                Confidence::Certain,
                Err("an OpenCode database holds many sessions: each is read by its own key".into()),
            )),
            Place::Session { id, .. } => Some((Confidence::Certain, checked_key(id))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_follow_the_variables() {
        let home = Path::new("/home/u");
        let none = |_: &str| None;
        assert_eq!(
            OpenCodeLayout.default_roots(&none, home),
            [PathBuf::from("/home/u/.local/share/opencode")]
        );
        let set = |k: &str| match k {
            DB_VAR => Some("/data/oc.db".to_owned()),
            DATA_VAR => Some("/xdg".to_owned()),
            _ => None,
        };
        assert_eq!(
            OpenCodeLayout.default_roots(&set, home),
            [PathBuf::from("/data/oc.db"), PathBuf::from("/xdg/opencode")]
        );
        // Relative values are ignored, as XDG says.
        let relative = |k: &str| (k == DATA_VAR || k == DB_VAR).then(|| "rel".to_owned());
        assert_eq!(
            OpenCodeLayout.default_roots(&relative, home),
            [PathBuf::from("/home/u/.local/share/opencode")]
        );
    }

    #[test]
    fn databases_and_legacy_sessions_are_claimed_by_name() {
        for yes in ["opencode.db", "opencode-beta.db", "opencode-local.db"] {
            assert!(database_name(yes), "{yes}");
        }
        for no in [
            "opencode.db-wal",
            "opencode-.db",
            "other.db",
            "opencode.sqlite",
        ] {
            assert!(!database_name(no), "{no}");
        }
        assert!(place(Path::new("/d/storage/session/info/ses_1.json")).is_none());
        assert!(place(Path::new("/d/storage/session/p1/ses_1.json")).is_some());
        assert!(place(Path::new("/d/other/session/p1/ses_1.json")).is_none());
    }
}

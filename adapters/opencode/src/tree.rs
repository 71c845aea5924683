//! OpenCode's legacy JSON tree as a [`RecordSource`]: one session file is a container
//! of one session.
//!
//! ```text
//! storage/session/<projectID>/<sessionID>.json   {id, projectID, directory, parentID?, time, …}
//! storage/message/<sessionID>/<messageID>.json   {id, sessionID, role, time, …}: the records
//! storage/part/<messageID>/<partID>.json         {id, messageID, sessionID, type, …}
//! storage/project/<projectID>.json               {id, worktree, …}
//! ```
//!
//! Ids are taken from file names, as OpenCode's own import does. Messages are ordered
//! as in the database (`time.created`, then id); the change marker is the number of
//! message files and their latest modification time, with the session file's. A reply
//! being written that is the last message is left for the next read, as in the
//! database ([`crate::db`]).

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use transcope_core::records::{Held, RecordError, RecordPos, RecordRead, RecordSink, RecordSource};

use crate::record::{being_written, hand, Context, Times};

/// One legacy session file and the tree around it.
pub struct TreeSource {
    /// The session file.
    path: PathBuf,
    /// The `storage` folder.
    storage: PathBuf,
    /// The session id (the file's stem).
    id: String,
}

/// The keys of a session or project file read.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionFile {
    #[serde(default)]
    directory: Option<String>,
    #[serde(default, rename = "parentID")]
    parent_id: Option<String>,
    #[serde(default, rename = "projectID")]
    project_id: Option<String>,
    #[serde(default)]
    worktree: Option<String>,
}

/// A message file's order keys.
#[derive(Default, Deserialize)]
struct Ordered {
    #[serde(default)]
    time: Times,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> RecordError + '_ {
    move |e| RecordError::new(format!("{}: {e}", path.display()))
}

/// A JSON file's keys, or the default when it is missing or not that JSON.
fn keys<T: Default + for<'de> Deserialize<'de>>(path: &Path) -> T {
    fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The `.json` files of `dir` (none when it is missing), with their modification
/// times, by name.
fn json_files(dir: &Path) -> Result<Vec<(String, PathBuf, i128)>, RecordError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(dir)(e)),
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let p = e.path();
        let Some(stem) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        let Ok(m) = e.metadata() else { continue };
        if !m.is_file() {
            continue;
        }
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        out.push((stem.to_owned(), p, mtime));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

impl TreeSource {
    /// The session file at `path` (`storage/session/<project>/<id>.json`).
    pub fn open(path: &Path, storage: PathBuf, id: String) -> Result<TreeSource, RecordError> {
        if !path.is_file() {
            return Err(RecordError::new(format!(
                "{}: no session file",
                path.display()
            )));
        }
        Ok(TreeSource {
            path: path.to_path_buf(),
            storage,
            id,
        })
    }

    fn session(&self) -> SessionFile {
        keys(&self.path)
    }

    /// The session's family root: parent files followed in the same project folder.
    fn root(&self) -> String {
        let folder = self.path.parent().unwrap_or(&self.path);
        let mut at = self.id.clone();
        let mut parent = self.session().parent_id;
        let mut seen = vec![at.clone()];
        while let Some(p) = parent.filter(|p| !seen.contains(p)) {
            let file = folder.join(format!("{p}.json"));
            if !file.is_file() {
                break;
            }
            parent = keys::<SessionFile>(&file).parent_id;
            seen.push(p.clone());
            at = p;
        }
        at
    }

    /// The session's messages in order: (id, file).
    fn messages(&self) -> Result<Vec<(String, PathBuf)>, RecordError> {
        let mut files: Vec<(f64, String, PathBuf)> =
            json_files(&self.storage.join("message").join(&self.id))?
                .into_iter()
                .map(|(id, p, _)| {
                    let created = keys::<Ordered>(&p).time.created.unwrap_or(0.0);
                    (created, id, p)
                })
                .collect();
        files.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
        Ok(files.into_iter().map(|(_, id, p)| (id, p)).collect())
    }
}

impl RecordSource for TreeSource {
    fn sessions(&mut self) -> Result<Vec<Held>, RecordError> {
        Ok(vec![Held {
            key: self.id.clone(),
            root: self.root(),
        }])
    }

    fn marker(&mut self, key: &str) -> Result<Option<String>, RecordError> {
        if key != self.id {
            return Ok(None);
        }
        let files = json_files(&self.storage.join("message").join(&self.id))?;
        let latest = files.iter().map(|f| f.2).max().unwrap_or(0);
        let own = fs::metadata(&self.path)
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Ok(Some(format!("{own}:{}:{latest}", files.len())))
    }

    fn holds(&mut self, key: &str, at: &RecordPos) -> Result<bool, RecordError> {
        if at.ordinal == 0 {
            return Ok(true);
        }
        let messages = self.messages()?;
        Ok(key == self.id
            && messages
                .get(at.ordinal as usize - 1)
                .is_some_and(|(id, _)| *id == at.anchor))
    }

    fn read(
        &mut self,
        key: &str,
        from: &RecordPos,
        sink: &mut dyn RecordSink,
    ) -> Result<RecordRead, RecordError> {
        let mut read = RecordRead {
            end: from.clone(),
            ..RecordRead::default()
        };
        if key != self.id {
            return Ok(read);
        }
        let session = self.session();
        let worktree = session
            .project_id
            .as_ref()
            .map(|p| keys::<SessionFile>(&self.storage.join("project").join(format!("{p}.json"))))
            .and_then(|p| p.worktree)
            .unwrap_or_default();
        let root = self.root();
        read.parent = (root != self.id).then_some(root);
        let ctx = Context {
            session: key.to_owned(),
            parent: session.parent_id.clone(),
            directory: session.directory.clone().unwrap_or_default(),
            worktree,
        };
        let messages = self.messages()?;
        let total = messages.len();
        for (i, (id, file)) in messages.into_iter().enumerate().skip(from.ordinal as usize) {
            let data = fs::read(&file).map_err(io(&file))?;
            if i + 1 == total && being_written(&data) {
                read.held = true;
                break;
            }
            let mut parts = Vec::new();
            for (_, p, _) in json_files(&self.storage.join("part").join(&id))? {
                parts.push(fs::read(&p).map_err(io(&p))?);
            }
            let go_on = hand(sink, &mut read, (i as u64, id), &ctx, &data, parts);
            if !go_on {
                break;
            }
        }
        Ok(read)
    }
}

//! Where transcope keeps a session's state (identity.md §3): [`data_home`], the git-anchored
//! [`workspace_anchor`] and [`encode_workspace`], [`state_db`], the repository-keyed
//! [`checks_db`] (via [`root_commit`]), [`project_dir_of`] and [`state_cwd`].
//!
//! ```text
//! {data_home}/transcope/sessions/{encode_workspace(cwd)}/{session}/state.db
//! {data_home}/transcope/checks/{root commit}/results.jsonl
//! ```
//!
//! Git is read by `transcope-identity` ([`git_facts`] for the top level, [`root_commit`]); no
//! process is spawned. Environment values come from the [`Env`] passed in.

use std::path::{Path, PathBuf};

use transcope_identity::git_facts;

use crate::claudepath::{config_dir, encode_bytes, home_dir, project_dir, session_dir_of_subagent};
use crate::gopath;
use crate::memo::Memo;
use crate::transcript::{start_cwd, TranscriptError};
use crate::Env;

/// The repository's first commit, which [`checks_db`] is keyed on (read by
/// `transcope-identity`, the workspace's git reader).
pub use transcope_identity::{root_commit, RootCommitError};

/// The application's directory name under the data home (sloprail's `AppName`).
pub const APP_NAME: &str = "transcope";

/// Why a state location could not be resolved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionPathError {
    /// [`state_db`] was given no session id.
    #[error("transcope: no session id")]
    NoSessionId,
    /// [`state_db`] was given an id holding a separator, or `.` / `..`.
    #[error(
        "transcope: {id:?} is not a session id: it would resolve outside this session's own state"
    )]
    NotASessionId {
        /// The refused id.
        id: String,
    },
    /// No home directory in the environment (and no `XDG_DATA_HOME`).
    #[error("transcope: locate home directory: $HOME is not defined")]
    NoHome,
    /// `cwd` was empty and the process working directory could not be read.
    #[error("transcope: locate working directory: {0}")]
    NoWorkingDir(#[source] std::io::Error),
    /// The repository has no root commit to key check results on.
    #[error("transcope: no repository identity for {}: {source}", repo_root.display())]
    NoRepositoryIdentity {
        /// The repository asked about.
        repo_root: PathBuf,
        /// Why.
        #[source]
        source: RootCommitError,
    },
}

/// `sessionpath.DataHome`: `XDG_DATA_HOME` verbatim when non-empty (every OS); otherwise
/// `<home>/Library/Application Support` on macOS, `%LocalAppData%` (else
/// `<home>/AppData/Local`) on Windows, `<home>/.local/share` elsewhere.
///
/// In this crate's own unit tests a root outside the temporary directory panics ("real data
/// directory"), as sloprail's test guard does.
///
/// # Errors
/// [`SessionPathError::NoHome`] when the home directory is needed and not in `env`.
pub fn data_home(env: &Env) -> Result<PathBuf, SessionPathError> {
    let root = data_home_unguarded(env)?;
    #[cfg(test)]
    refuse_real_store(&root);
    Ok(root)
}

fn data_home_unguarded(env: &Env) -> Result<PathBuf, SessionPathError> {
    if let Some(xdg) = env.get("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(xdg));
    }
    let home = home_dir(env).ok_or(SessionPathError::NoHome)?;
    let home = gopath::bytes(&home).into_owned();
    if cfg!(target_os = "macos") {
        return Ok(gopath::join(&[&home, b"Library", b"Application Support"]));
    }
    if cfg!(windows) {
        let local = env
            .get("LocalAppData")
            .or_else(|| env.get("LOCALAPPDATA"))
            .filter(|v| !v.is_empty());
        if let Some(local) = local {
            return Ok(PathBuf::from(local));
        }
        return Ok(gopath::join(&[&home, b"AppData", b"Local"]));
    }
    Ok(gopath::join(&[&home, b".local", b"share"]))
}

/// The test guard of `DataHome` (identity.md §3.2 step 4): panics unless `root` lies in the
/// temporary directory, both resolved on their longest existing prefix.
#[cfg(test)]
fn refuse_real_store(root: &Path) {
    use crate::claudepath::resolve_work_dir;
    let tmp = resolve_work_dir(&std::env::temp_dir());
    let resolved = resolve_work_dir(root);
    if !gopath::within(&resolved, &tmp) {
        panic!(
            "transcope: refusing the real data directory {} in a test: point XDG_DATA_HOME or HOME at a temporary directory",
            root.display()
        );
    }
}

/// Git top levels found, by the exact `dir` asked about.
static ANCHORS: Memo<PathBuf, PathBuf> = Memo::new();

/// `sessionpath.WorkspaceAnchor`: the tree `dir` belongs to — its git top level (a linked
/// worktree is its own), else `dir` with its symlinks resolved (it must exist), else `dir`
/// unchanged. Git roots are remembered for the process, keyed by the exact `dir`.
pub fn workspace_anchor(dir: &Path) -> PathBuf {
    if let Some(hit) = ANCHORS.get(dir) {
        return hit;
    }
    let toplevel = if dir.as_os_str().is_empty() {
        None
    } else {
        git_facts(dir).and_then(|facts| facts.toplevel)
    };
    if let Some(root) = toplevel.filter(|t| !t.as_os_str().is_empty()) {
        ANCHORS.insert(dir.to_path_buf(), root.clone());
        return root;
    }
    gopath::eval_symlinks(dir).unwrap_or_else(|_| dir.to_path_buf())
}

/// `sessionpath.EncodeWorkspace`: [`workspace_anchor`] turned into one path component, every
/// character that is not an ASCII letter or digit replaced by `-` (per character, like
/// [`encode_project_dir`](crate::claudepath::encode_project_dir)).
pub fn encode_workspace(dir: &Path) -> String {
    encode_bytes(&gopath::bytes(&workspace_anchor(dir)))
}

/// `sessionpath.StateDB`: `{data_home}/transcope/sessions/{encode_workspace(cwd)}/{id}/state.db`;
/// an empty `cwd` means the process working directory.
///
/// # Errors
/// In order: [`SessionPathError::NoSessionId`], [`SessionPathError::NotASessionId`] (a
/// separator, `.` or `..`), [`data_home`]'s error, [`SessionPathError::NoWorkingDir`].
pub fn state_db(cwd: &Path, session_id: &str, env: &Env) -> Result<PathBuf, SessionPathError> {
    if session_id.is_empty() {
        return Err(SessionPathError::NoSessionId);
    }
    if session_id.contains(['/', '\\']) || session_id == "." || session_id == ".." {
        return Err(SessionPathError::NotASessionId {
            id: session_id.to_owned(),
        });
    }
    let data = data_home(env)?;
    let cwd = if cwd.as_os_str().is_empty() {
        std::env::current_dir().map_err(SessionPathError::NoWorkingDir)?
    } else {
        cwd.to_path_buf()
    };
    let workspace = encode_workspace(&cwd);
    Ok(gopath::join(&[
        &gopath::bytes(&data),
        APP_NAME.as_bytes(),
        b"sessions",
        workspace.as_bytes(),
        session_id.as_bytes(),
        b"state.db",
    ]))
}

/// `sessionpath.ChecksDB` (latest): `{data_home}/transcope/checks/{root commit}/results.jsonl`,
/// keyed by the repository alone (every worktree and clone shares its root commit).
///
/// # Errors
/// [`data_home`]'s error, or [`SessionPathError::NoRepositoryIdentity`] wrapping
/// [`root_commit`]'s.
pub fn checks_db(repo_root: &Path, env: &Env) -> Result<PathBuf, SessionPathError> {
    let data = data_home(env)?;
    let root = root_commit(repo_root).map_err(|source| SessionPathError::NoRepositoryIdentity {
        repo_root: repo_root.to_path_buf(),
        source,
    })?;
    Ok(gopath::join(&[
        &gopath::bytes(&data),
        APP_NAME.as_bytes(),
        b"checks",
        root.as_bytes(),
        b"results.jsonl",
    ]))
}

/// `sessionpath.ProjectDirOf`: where the conversation's other transcripts are — for a
/// sub-agent record the project directory above `<session>/subagents/…`, for any other record
/// its own directory, and for no record (`path` empty) the project directory of `cwd` under
/// the config directory of `env` (`None` when that is unknown). `cwd` is ignored when `path`
/// is given.
pub fn project_dir_of(path: &Path, cwd: &Path, env: &Env) -> Option<PathBuf> {
    if path.as_os_str().is_empty() {
        return config_dir(env).and_then(|config| project_dir(&config, cwd));
    }
    Some(project_dir_of_record(path))
}

/// [`project_dir_of`] for a non-empty path.
pub(crate) fn project_dir_of_record(path: &Path) -> PathBuf {
    match session_dir_of_subagent(path) {
        Some(session) => gopath::dir(&session),
        None => gopath::dir(path),
    }
}

/// `sessionpath.StateCwd`: the directory a session's stores are keyed by — for a root
/// session's record the first `cwd` it names (where it began), otherwise (no record, a
/// sub-agent's record, a record naming no cwd, an unreadable record) `cwd`.
pub fn state_cwd(record: &Path, cwd: &Path) -> PathBuf {
    state_cwd_from(record, cwd, start_cwd)
}

/// [`state_cwd`], with `start` answering [`start_cwd`] for the record when it is asked.
pub(crate) fn state_cwd_from(
    record: &Path,
    cwd: &Path,
    start: impl FnOnce(&Path) -> Result<String, TranscriptError>,
) -> PathBuf {
    if record.as_os_str().is_empty() || session_dir_of_subagent(record).is_some() {
        return cwd.to_path_buf();
    }
    match start(record) {
        Ok(start) if !start.is_empty() => PathBuf::from(start),
        _ => cwd.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// §6.8 test 87.
    #[test]
    #[should_panic(expected = "real data directory")]
    fn data_home_refuses_the_real_store_in_a_test() {
        let _ = data_home(&env(&[("HOME", "/Users/someone")]));
    }

    /// §6.8 test 88.
    #[test]
    #[should_panic(expected = "real data directory")]
    fn state_db_refuses_the_real_store_in_a_test() {
        let tmp = tempfile::tempdir().unwrap();
        let _ = state_db(
            tmp.path(),
            "s1",
            &env(&[(
                "XDG_DATA_HOME",
                "/Users/someone/Library/Application Support",
            )]),
        );
    }

    /// §6.8 test 88: the id checks run before the guard.
    #[test]
    fn state_db_checks_the_id_before_the_guard() {
        let e = env(&[("HOME", "/Users/someone")]);
        assert!(matches!(
            state_db(Path::new("/x"), "", &e),
            Err(SessionPathError::NoSessionId)
        ));
        assert!(matches!(
            state_db(Path::new("/x"), "..", &e),
            Err(SessionPathError::NotASessionId { .. })
        ));
    }

    /// §6.8 test 89.
    #[test]
    fn data_home_allows_a_temp_store() {
        let tmp = tempfile::tempdir().unwrap();
        let xdg = tmp.path().to_str().unwrap();
        assert_eq!(
            data_home(&env(&[("XDG_DATA_HOME", xdg)])).unwrap(),
            tmp.path()
        );
        let home = data_home(&env(&[("XDG_DATA_HOME", ""), ("HOME", xdg)])).unwrap();
        assert!(home.starts_with(tmp.path()));
        let later = tmp.path().join("not/yet/there");
        let later_s = later.to_str().unwrap();
        assert_eq!(
            data_home(&env(&[("XDG_DATA_HOME", later_s)])).unwrap(),
            later
        );
    }
}

//! The stable identity of a conversation (identity.md §4): the uuid state is keyed on, found by
//! walking from a transcript through the continuations (compactions, resumes, forks) that
//! precede it to the origin record of the oldest one.
//!
//! * [`Identity`] is the answer: the id, whether it is [`Degraded`] (a fallback rather than a
//!   true origin), and the [`Identity::unreadable_siblings`] the walk skipped.
//! * [`resolve_stable_session_id`] is the walk over one project directory;
//!   [`stable_session_id`] drops the degradation; [`stable_identity`] adds the project
//!   directory of a record and a per-process cache.
//! * [`root_record`] is a transcript's first parentless record.
//!
//! The walk never fails on a sibling: an unreadable one is listed and skipped, a missing or
//! looping predecessor degrades the answer ([`Degraded::ContinuationMissing`],
//! [`Degraded::ChainRunaway`]). Only the starting transcript itself (missing, unreadable, no
//! parentless record), an unlistable project directory, or a continuation with no project
//! directory to look in are errors.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::gopath;
use crate::memo::Memo;
use crate::sessionpath::project_dir_of_record;
use transcope_core::timestamp::parse_go_rfc3339;

use crate::transcript::{any_entry_holding, scan_head, Entry, TranscriptError};

/// `maxRestartHops`: continuations followed in depth before the walk gives up.
pub const MAX_RESTART_HOPS: usize = 64;
/// `maxWalkVisits`: candidate transcripts opened by one walk before it gives up.
pub const MAX_WALK_VISITS: usize = 512;

/// Why an [`Identity`] is a fallback rather than the conversation's origin. Compare on the
/// variant; the `detail` is for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Degraded {
    /// `ErrContinuationMissing`: no transcript holds the record a continuation continues
    /// (deleted by Claude Code's cleanup, never written, or unreadable).
    #[error("the record this transcript continues is in no other transcript: {detail}")]
    ContinuationMissing {
        /// Which transcript, directory and records.
        detail: String,
    },
    /// `ErrChainRunaway`: the continuations loop, or run past [`MAX_RESTART_HOPS`] or
    /// [`MAX_WALK_VISITS`].
    #[error("the chain of continuations loops or is longer than a real conversation: {detail}")]
    ChainRunaway {
        /// Where the walk gave up.
        detail: String,
    },
}

/// The identity of the conversation a transcript belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// The uuid state is keyed on: the origin record's, or the fallback's when degraded.
    pub id: String,
    /// Set when `id` is not a true origin.
    pub degraded: Option<Degraded>,
    /// Transcripts of the project directory the walk could not read and skipped (each once,
    /// in the order first noted).
    pub unreadable_siblings: Vec<PathBuf>,
}

impl Identity {
    fn origin(id: &str) -> Self {
        Identity {
            id: id.to_owned(),
            ..Identity::default()
        }
    }

    fn degraded(id: &str, why: Degraded) -> Self {
        Identity {
            id: id.to_owned(),
            degraded: Some(why),
            unreadable_siblings: Vec::new(),
        }
    }

    /// The notice a hook prints once per session at SessionStart for a degraded identity
    /// (identity.md §4.4), or `None` when there is nothing to say (not degraded, or no id).
    ///
    /// ```
    /// use transcope_caller::stable::Identity;
    ///
    /// assert_eq!(Identity { id: "origin".into(), ..Default::default() }.notice(), None);
    /// ```
    pub fn notice(&self) -> Option<String> {
        let why = self.degraded.as_ref()?;
        if self.id.is_empty() {
            return None;
        }
        let reason = match why {
            Degraded::ChainRunaway { .. } => {
                "whose chain of earlier transcripts loops or runs past any real conversation's length"
                    .to_owned()
            }
            Degraded::ContinuationMissing { .. } if !self.unreadable_siblings.is_empty() => {
                format!(
                    "whose earlier transcript could not be reached — {} file(s) of its project directory could not be read: {}",
                    self.unreadable_siblings.len(),
                    join_paths(&self.unreadable_siblings)
                )
            }
            Degraded::ContinuationMissing { .. } => "whose earlier transcript is gone".to_owned(),
        };
        Some(format!(
            "transcope: identity: this session continues a conversation {reason}; its state is keyed on {} ({why})",
            self.id
        ))
    }
}

fn join_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `rootRecord`: the first record of `path` with a uuid and no parent (`parentUuid` absent or
/// `null`). A root seen before a read failure (an oversized line, say) is still the answer.
///
/// # Errors
/// [`TranscriptError::Read`] when the file cannot be opened or read before a root (a missing
/// file satisfies [`TranscriptError::is_not_found`]); [`TranscriptError::NoOriginRecord`] when
/// it ends without one.
pub fn root_record(path: &Path) -> Result<Entry, TranscriptError> {
    match scan_head(path, false, true) {
        (_, Some(root), _) => Ok(root),
        (_, None, Err(e)) => Err(TranscriptError::read(path, e)),
        (_, None, Ok(())) => Err(TranscriptError::NoOriginRecord {
            path: path.to_path_buf(),
        }),
    }
}

/// `transcript.ResolveStableSessionID`: the identity of the transcript at `path`, looking for
/// the transcripts it continues among the `*.jsonl` files of `project_dir` (identity.md §4.2,
/// §4.3).
///
/// # Errors
/// [`TranscriptError::NoTranscriptPath`] for an empty path; [`root_record`]'s errors for the
/// starting file; [`TranscriptError::NoProjectDir`] when it continues another and
/// `project_dir` is empty; [`TranscriptError::ListProjectDir`] when `project_dir` cannot be
/// listed. Siblings never cause an error.
pub fn resolve_stable_session_id(
    project_dir: &Path,
    path: &Path,
) -> Result<Identity, TranscriptError> {
    if path.as_os_str().is_empty() {
        return Err(TranscriptError::NoTranscriptPath);
    }
    resolve_from_root(project_dir, path, root_record(path)?)
}

/// [`resolve_stable_session_id`] of a transcript whose root record is read already.
fn resolve_from_root(
    project_dir: &Path,
    path: &Path,
    root: Entry,
) -> Result<Identity, TranscriptError> {
    if root.logical_parent_uuid.is_empty() {
        return Ok(Identity::origin(&root.uuid));
    }
    if project_dir.as_os_str().is_empty() {
        return Err(TranscriptError::NoProjectDir {
            path: path.to_path_buf(),
        });
    }
    let mut walk = Walk {
        dir: project_dir,
        listing: None,
        unreadable: Vec::new(),
        visits: 0,
        predecessors: HashMap::new(),
    };
    let mut in_path = HashSet::new();
    let mut identity = walk.resolve_root(path, &root, &mut in_path, 0)?;
    identity.unreadable_siblings = walk.unreadable;
    Ok(identity)
}

/// `transcript.StableSessionID`: [`resolve_stable_session_id`]'s id, the degradation dropped
/// (a fallback id is returned as the answer).
///
/// # Errors
/// As [`resolve_stable_session_id`].
pub fn stable_session_id(project_dir: &Path, path: &Path) -> Result<String, TranscriptError> {
    resolve_stable_session_id(project_dir, path).map(|identity| identity.id)
}

/// Identities resolved, by project directory, path, size and modification time.
static IDENTITIES: Memo<(PathBuf, PathBuf, u64, i128), Identity> = Memo::new();

/// `sessionpath.StableIdentity`: [`resolve_stable_session_id`] over the record's own project
/// directory ([`project_dir_of`](crate::sessionpath::project_dir_of): a sub-agent's climbs out
/// of `<session>/subagents/`), remembered for the life of the process.
///
/// The cache key is the project directory, the path, and the file's size and modification
/// time (nanoseconds), so a rewritten record is resolved again; a file that cannot be
/// stat'ed is not cached. Degraded answers are cached; errors are not. `cwd` is not consulted
/// for a non-empty path (kept for the shape of the reference's API).
///
/// # Errors
/// As [`resolve_stable_session_id`].
pub fn stable_identity(path: &Path, cwd: &Path) -> Result<Identity, TranscriptError> {
    let _ = cwd;
    stable_identity_from(path, None)
}

/// [`stable_identity`], given the root record of `path` when a scan of its head found it
/// already ([`crate::transcript::start_cwd_and_root`]); without one the head is read
/// for it (and for the reason there is none).
pub(crate) fn stable_identity_from(
    path: &Path,
    root: Option<Entry>,
) -> Result<Identity, TranscriptError> {
    if path.as_os_str().is_empty() {
        return Err(TranscriptError::NoTranscriptPath);
    }
    let dir = project_dir_of_record(path);
    let key = path.metadata().ok().map(|meta| {
        let mtime = meta
            .modified()
            .ok()
            .map(|t| match t.duration_since(UNIX_EPOCH) {
                Ok(d) => d.as_nanos() as i128,
                Err(e) => -(e.duration().as_nanos() as i128),
            })
            .unwrap_or(0);
        (dir.clone(), path.to_path_buf(), meta.len(), mtime)
    });
    if let Some(key) = &key {
        if let Some(hit) = IDENTITIES.get(key) {
            return Ok(hit);
        }
    }
    let identity = match root {
        Some(root) => resolve_from_root(&dir, path, root)?,
        None => resolve_stable_session_id(&dir, path)?,
    };
    if let Some(key) = key {
        IDENTITIES.insert(key, identity.clone());
    }
    Ok(identity)
}

/// A transcript of the project directory and its root record.
struct Candidate {
    path: PathBuf,
    root: Entry,
}

/// The state of one walk: the listing (read once), the unreadable files, the visit count, and
/// the predecessors already computed for a root.
struct Walk<'a> {
    dir: &'a Path,
    listing: Option<Vec<Candidate>>,
    unreadable: Vec<PathBuf>,
    visits: usize,
    predecessors: HashMap<(String, String, String), Vec<usize>>,
}

/// Whether `c` began strictly after `r` (both timestamps parse).
fn started_after(c: &Entry, r: &Entry) -> bool {
    match (
        parse_go_rfc3339(&c.timestamp),
        parse_go_rfc3339(&r.timestamp),
    ) {
        (Some(c), Some(r)) => c > r,
        _ => false,
    }
}

impl Walk<'_> {
    fn note_unreadable(&mut self, path: &Path) {
        if !self.unreadable.iter().any(|p| p == path) {
            self.unreadable.push(path.to_path_buf());
        }
    }

    /// `transcripts`: the `*.jsonl` files of the directory with their roots, byte-wise name
    /// order, read once per walk.
    fn list(&mut self, cur: &Path) -> Result<(), TranscriptError> {
        if self.listing.is_some() {
            return Ok(());
        }
        let unlistable = |source| TranscriptError::ListProjectDir {
            path: cur.to_path_buf(),
            dir: self.dir.to_path_buf(),
            source,
        };
        let mut files: Vec<(Vec<u8>, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(self.dir).map_err(unlistable)? {
            let entry = entry.map_err(unlistable)?;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = gopath::bytes(Path::new(&entry.file_name())).into_owned();
            if !name.ends_with(b".jsonl") {
                continue;
            }
            let path = gopath::join(&[&gopath::bytes(self.dir), &name]);
            files.push((name, path));
        }
        files.sort();
        let mut listing = Vec::with_capacity(files.len());
        for (_, path) in files {
            match root_record(&path) {
                Ok(root) => listing.push(Candidate { path, root }),
                Err(TranscriptError::NoOriginRecord { .. }) => {}
                Err(e) if e.is_not_found() => {}
                Err(_) => self.note_unreadable(&path),
            }
        }
        self.listing = Some(listing);
        Ok(())
    }

    /// The listed transcripts that may hold what `r` continues (indices into the listing).
    fn predecessors_of(&mut self, cur: &Path, r: &Entry) -> Result<Vec<usize>, TranscriptError> {
        let key = (
            r.uuid.clone(),
            r.logical_parent_uuid.clone(),
            r.timestamp.clone(),
        );
        if let Some(known) = self.predecessors.get(&key) {
            return Ok(known.clone());
        }
        self.list(cur)?;
        let listing = self.listing.take().unwrap_or_default();
        let mut found = Vec::new();
        for (index, c) in listing.iter().enumerate() {
            if c.root.uuid == r.uuid || started_after(&c.root, r) {
                continue;
            }
            let targets = [r.logical_parent_uuid.as_str(), r.uuid.as_str()];
            let holds = any_entry_holding(&c.path, &targets, |entry| {
                !entry.uuid.is_empty() && targets.contains(&entry.uuid.as_str())
            });
            match holds {
                Ok(true) => found.push(index),
                Ok(false) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(_) => self.note_unreadable(&c.path),
            }
        }
        self.listing = Some(listing);
        self.predecessors.insert(key, found.clone());
        Ok(found)
    }

    fn candidate(&self, index: usize) -> (&Path, &Entry) {
        let c = &self.listing.as_ref().expect("listed before use")[index];
        (&c.path, &c.root)
    }

    /// `from`: the identity of the conversation `cur` (whose root is `r`) continues.
    fn resolve_root(
        &mut self,
        cur: &Path,
        r: &Entry,
        in_path: &mut HashSet<String>,
        depth: usize,
    ) -> Result<Identity, TranscriptError> {
        if depth >= MAX_RESTART_HOPS {
            return Ok(Identity::degraded(
                &r.uuid,
                Degraded::ChainRunaway {
                    detail: format!(
                        "the chain from {} ran past {MAX_RESTART_HOPS} restarts",
                        cur.display()
                    ),
                },
            ));
        }
        let predecessors = self.predecessors_of(cur, r)?;
        in_path.insert(r.uuid.clone());
        let result = self.resolve_candidates(cur, r, &predecessors, in_path, depth);
        in_path.remove(&r.uuid);
        result
    }

    fn resolve_candidates(
        &mut self,
        cur: &Path,
        r: &Entry,
        predecessors: &[usize],
        in_path: &mut HashSet<String>,
        depth: usize,
    ) -> Result<Identity, TranscriptError> {
        let mut looped: Option<PathBuf> = None;
        let mut fallback: Option<Identity> = None;
        for &index in predecessors {
            let (c_path, c_root) = self.candidate(index);
            let (c_path, c_root) = (c_path.to_path_buf(), c_root.clone());
            if in_path.contains(&c_root.uuid) {
                looped = Some(c_path);
                continue;
            }
            self.visits += 1;
            if self.visits > MAX_WALK_VISITS {
                return Ok(Identity::degraded(
                    &r.uuid,
                    Degraded::ChainRunaway {
                        detail: format!(
                            "resolving what {} continues gave up after opening {MAX_WALK_VISITS} transcripts",
                            cur.display()
                        ),
                    },
                ));
            }
            let id = if c_root.logical_parent_uuid.is_empty() {
                Identity::origin(&c_root.uuid)
            } else {
                self.resolve_root(&c_path, &c_root, in_path, depth + 1)?
            };
            if id.degraded.is_none() {
                return Ok(id);
            }
            if fallback.is_none() {
                fallback = Some(id);
            }
        }
        if let Some(fallback) = fallback {
            return Ok(fallback);
        }
        if let Some(looped) = looped {
            return Ok(Identity::degraded(
                &r.uuid,
                Degraded::ChainRunaway {
                    detail: format!(
                        "{} continues {}, and the only transcript holding it, {}, is one the walk already crossed",
                        cur.display(),
                        r.logical_parent_uuid,
                        looped.display()
                    ),
                },
            ));
        }
        let mut detail = format!(
            "{} continues {} (its own root is {}), and no other transcript in {} holds either",
            cur.display(),
            r.logical_parent_uuid,
            r.uuid,
            self.dir.display()
        );
        if !self.unreadable.is_empty() {
            detail.push_str(&format!(
                " ({} file(s) in that directory could not be read and were skipped rather than assumed to hold it: {})",
                self.unreadable.len(),
                join_paths(&self.unreadable)
            ));
        }
        Ok(Identity::degraded(
            &r.uuid,
            Degraded::ContinuationMissing { detail },
        ))
    }
}

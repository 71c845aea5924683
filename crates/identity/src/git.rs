//! Reading repositories with gix, answering what five `git` commands would print.
//!
//! | git command (run with `-C folder`)                      | here                       |
//! |---------------------------------------------------------|----------------------------|
//! | `rev-parse --path-format=absolute --git-common-dir`     | [`GitFacts::common_dir`]  |
//! | `rev-parse --show-toplevel`                             | [`GitFacts::toplevel`]    |
//! | `remote get-url origin`                                 | [`GitFacts::origin_url`]  |
//! | `rev-parse --abbrev-ref HEAD`                           | [`live_branch`]            |
//! | `rev-list --max-parents=0 --reverse --date-order HEAD`  | [`root_commit`] (first line) |
//!
//! No process is spawned: gix is opened with `git_binary = false`, so it does not even ask
//! `git` where its installation config lives. Configuration is otherwise loaded as git does
//! (system, global, repository, worktree, includes, `GIT_CONFIG_*` variables), so remotes
//! and `url.<base>.insteadOf` rewrites from the user's config are honoured. A repository that
//! git would refuse as unsafe (`safe.directory`, ownership) is refused here too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::sec::trust::DefaultForLevel;

use crate::paths;

/// What git says about the repository a folder is in; see [`git_facts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitFacts {
    /// `git rev-parse --path-format=absolute --git-common-dir`, a real path.
    pub common_dir: PathBuf,
    /// `git rev-parse --show-toplevel`, or `None` where git fails ("must be run in a work
    /// tree": bare repositories and folders inside a git directory).
    pub toplevel: Option<PathBuf>,
    /// `git remote get-url origin`, or `None` where git fails (no such remote).
    pub origin_url: Option<String>,
}

/// Opens the repository containing `dir` the way `git -C dir` finds it, or `None` when git
/// would fail (not a directory, not in a repository, broken gitfile, unsafe repository).
fn open(dir: &Path) -> Option<(gix::Repository, PathBuf)> {
    // `git -C` needs to chdir into the folder, which fails for a path the kernel does
    // not take (`ENAMETOOLONG`: not worth asking); it then works on its real path.
    if dir.as_os_str().len() >= paths::PATH_MAX {
        return None;
    }
    let dir = std::fs::canonicalize(dir).ok()?;
    if !dir.is_dir() {
        return None;
    }
    let options = |level| {
        let mut permissions = gix::open::Permissions::default_for_level(level);
        permissions.config.git_binary = false;
        permissions.attributes.git_binary = false;
        gix::open::Options::default_for_level(level)
            .permissions(permissions)
            .bail_if_untrusted(true)
    };
    let mapping = gix::sec::trust::Mapping {
        full: options(gix::sec::Trust::Full),
        reduced: options(gix::sec::Trust::Reduced),
    };
    let repo = gix::ThreadSafeRepository::discover_opts(&dir, Default::default(), mapping)
        .ok()?
        .to_thread_local();
    stops_where_git_stops(&dir, repo.git_dir()).then_some((repo, dir))
}

/// git stops its upward search at the first `.git` *file* and dies if that gitfile does not
/// lead to a repository, while gix skips it and searches on. Walking from `dir` up to the
/// repository gix found, any `.git` file on the way must be the one gix used.
fn stops_where_git_stops(dir: &Path, git_dir: &Path) -> bool {
    let git_dir = paths::real_or_same(git_dir);
    for folder in dir.ancestors() {
        if folder == git_dir {
            return true;
        }
        let dot_git = folder.join(".git");
        match std::fs::metadata(&dot_git) {
            Ok(meta) if meta.is_file() => {
                return std::fs::read_to_string(&dot_git)
                    .ok()
                    .and_then(|text| {
                        let target = text.strip_prefix("gitdir:")?.trim();
                        std::fs::canonicalize(folder.join(target)).ok()
                    })
                    .is_some_and(|target| target == git_dir);
            }
            Ok(meta) if meta.is_dir() && paths::real_or_same(&dot_git) == git_dir => return true,
            _ => {}
        }
    }
    true
}

/// `true` when `dir` was found as a git directory itself (a bare repository, or a folder
/// inside some `.git`), where git runs without a work tree unless `core.worktree` says one.
fn inside_git_dir(repo: &gix::Repository, dir: &Path) -> bool {
    let git_dir = paths::real_or_same(repo.git_dir());
    dir.starts_with(&git_dir)
}

/// What `git -C dir` would print for `rev-parse --path-format=absolute --git-common-dir`,
/// `rev-parse --show-toplevel` and `remote get-url origin`, read without running git;
/// `None` where git fails to find a repository (not a directory, not in a repository, a broken
/// gitfile, an unsafe repository).
///
/// `dir` is used as given (relative to the process directory, no `~` expansion), like
/// `git -C`. [`GitResolver`](crate::GitResolver) calls this once per resolved folder.
pub fn git_facts(dir: &Path) -> Option<GitFacts> {
    let (repo, dir) = open(dir)?;
    let common_dir = paths::real_or_same(repo.common_dir());
    let toplevel = if inside_git_dir(&repo, &dir)
        && repo.config_snapshot().string("core.worktree").is_none()
    {
        None
    } else {
        repo.workdir().map(paths::real_or_same)
    };
    Some(GitFacts {
        common_dir,
        toplevel,
        origin_url: remote_url(&repo, "origin"),
    })
}

/// `git remote get-url <name>`: the first configured URL (all config scopes, in order; an
/// empty value clears the list), rewritten by the longest matching `url.<base>.insteadOf`.
/// git only knows a remote with at least one `remote.<name>.*` value in the repository's own
/// config (local or worktree scope); one with no URL prints its own name.
fn remote_url(repo: &gix::Repository, name: &str) -> Option<String> {
    let snapshot = repo.config_snapshot();
    let config = snapshot.plumbing();
    let mut configured_in_repo = false;
    let mut urls: Vec<String> = Vec::new();
    for section in config.sections_by_name("remote").into_iter().flatten() {
        if section.header().subsection_name() != Some(BStr::new(name)) {
            continue;
        }
        if matches!(
            section.meta().source,
            gix::config::Source::Local | gix::config::Source::Worktree
        ) && section.value_names().next().is_some()
        {
            configured_in_repo = true;
        }
        for value in section.values("url") {
            if value.is_empty() {
                urls.clear();
            } else {
                urls.push(value.to_str_lossy().into_owned());
            }
        }
    }
    if !configured_in_repo {
        return None;
    }
    let url = urls.into_iter().next().unwrap_or_else(|| name.to_owned());
    Some(rewrite_url(config, url))
}

/// git's `alias_url`: the longest `insteadOf` prefix wins; among equals, the first base.
fn rewrite_url(config: &gix::config::File, url: String) -> String {
    let mut best: Option<(usize, String)> = None;
    // git groups `insteadOf` values by base in order of the base's first appearance.
    let mut bases: Vec<(String, Vec<String>)> = Vec::new();
    for section in config.sections_by_name("url").into_iter().flatten() {
        let Some(base) = section.header().subsection_name() else {
            continue;
        };
        let base = base.to_str_lossy().into_owned();
        let values: Vec<String> = section
            .values("insteadOf")
            .iter()
            .map(|v| v.to_str_lossy().into_owned())
            .collect();
        match bases.iter_mut().find(|(b, _)| *b == base) {
            Some((_, list)) => list.extend(values),
            None => bases.push((base, values)),
        }
    }
    for (base, prefixes) in &bases {
        for prefix in prefixes {
            if url.starts_with(prefix.as_str())
                && !matches!(&best, Some((len, _)) if *len >= prefix.len())
            {
                best = Some((prefix.len(), base.clone()));
            }
        }
    }
    match best {
        Some((len, base)) => format!("{base}{}", &url[len..]),
        None => url,
    }
}

/// The live branch of `folder`: exactly what `git -C folder rev-parse --abbrev-ref HEAD`
/// prints, without running git.
///
/// * a branch gives its short name (`feature`), or `heads/feature` / the full name when the
///   short one is ambiguous (git's `shorten_unambiguous_ref`, strict unless
///   `core.warnAmbiguousRefs=false`);
/// * a detached HEAD gives `"HEAD"`;
/// * an unborn branch gives `""`, except where git echoes the argument because a file named
///   `HEAD` exists in the folder (e.g. at the top of a bare repository): then `"HEAD"`;
/// * an empty path, a folder outside any repository, or any error gives `""`.
///
/// Linked worktrees have their own HEAD, and it is the one read.
///
/// ```
/// use transcope_identity::live_branch;
///
/// assert_eq!(live_branch(std::path::Path::new("")), "");
/// ```
pub fn live_branch(folder: &Path) -> String {
    if folder.as_os_str().is_empty() {
        return String::new();
    }
    let Some((repo, dir)) = open(folder) else {
        return String::new();
    };
    match head_full_name(&repo) {
        Some(full) => {
            let strict = repo
                .config_snapshot()
                .boolean("core.warnAmbiguousRefs")
                .unwrap_or(true);
            shorten_unambiguous(&full, strict, |name| ref_exists(&repo, name))
        }
        None if dir.join("HEAD").symlink_metadata().is_ok() => "HEAD".to_owned(),
        None => String::new(),
    }
}

/// The full name HEAD resolves to (`"HEAD"` when detached), or `None` when it does not
/// resolve (unborn, broken).
fn head_full_name(repo: &gix::Repository) -> Option<String> {
    let head = repo.head().ok()?;
    match head.kind {
        gix::head::Kind::Detached { .. } => Some("HEAD".to_owned()),
        gix::head::Kind::Unborn(_) => None,
        gix::head::Kind::Symbolic(mut reference) => {
            // Follow symbolic refs to the end, as `dwim_ref` does (git's SYMREF_MAXDEPTH 5).
            for _ in 0..5 {
                match reference.target {
                    gix::refs::Target::Object(_) => {
                        return Some(reference.name.as_bstr().to_str_lossy().into_owned())
                    }
                    gix::refs::Target::Symbolic(ref next) => {
                        let next = next.clone();
                        reference = repo.try_find_reference(next.as_ref()).ok()??.detach();
                    }
                }
            }
            None
        }
    }
}

/// Whether exactly the reference `full` exists (gix looks partial names up like git's DWIM,
/// so the found name is compared). A root-level name is only a ref if it is a pseudo-ref
/// spelling (upper case and `_`), as in git's `refname_is_safe`.
fn ref_exists(repo: &gix::Repository, full: &str) -> bool {
    if !full.starts_with("refs/") && !full.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
        return false;
    }
    let Ok(partial) = <&gix::refs::PartialNameRef>::try_from(full) else {
        return false;
    };
    match repo.try_find_reference(partial) {
        Ok(Some(reference)) => reference.name().as_bstr() == full,
        _ => false,
    }
}

/// git's `refs_shorten_unambiguous_ref`.
pub(crate) fn shorten_unambiguous(
    full: &str,
    strict: bool,
    mut exists: impl FnMut(&str) -> bool,
) -> String {
    const RULES: [(&str, &str); 6] = [
        ("", ""),
        ("refs/", ""),
        ("refs/tags/", ""),
        ("refs/heads/", ""),
        ("refs/remotes/", ""),
        ("refs/remotes/", "/HEAD"),
    ];
    for i in (1..RULES.len()).rev() {
        let (prefix, suffix) = RULES[i];
        let Some(short) = full
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(suffix))
        else {
            continue;
        };
        if short.is_empty() {
            continue;
        }
        let rules_to_fail = if strict { RULES.len() } else { i };
        let ambiguous = (0..rules_to_fail)
            .filter(|&j| j != i)
            .any(|j| exists(&format!("{}{short}{}", RULES[j].0, RULES[j].1)));
        if !ambiguous {
            return short.to_owned();
        }
    }
    full.to_owned()
}

/// Why [`root_commit`] has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RootCommitError {
    /// `ErrNotARepository`: git would find no repository there.
    #[error("gitrepo: not a repository")]
    NotARepository,
    /// `ErrNoCommits`: `HEAD` is unborn.
    #[error("gitrepo: the repository has no commits")]
    NoCommits,
    /// The answer is not a full object name.
    #[error("gitrepo: root commit resolved to {0:?}, not an object name")]
    NotAnObjectName(String),
    /// Reading the repository failed.
    #[error("gitrepo: {0}")]
    Git(String),
}

/// `gitrepo.RootCommit`: what `git rev-list --max-parents=0 --reverse --date-order HEAD`
/// prints first in `repo_root` — the parentless commit reachable from `HEAD` that comes last
/// in git's date-ordered topological order (normally the oldest root by commit date), read
/// with gix. Shallow boundary commits count as parentless, as they do for git.
///
/// # Errors
/// [`RootCommitError::NotARepository`], [`RootCommitError::NoCommits`] for an unborn `HEAD`,
/// [`RootCommitError::Git`] when objects cannot be read, [`RootCommitError::NotAnObjectName`]
/// should the answer not be 40 or 64 lowercase hex digits.
pub fn root_commit(repo_root: &Path) -> Result<String, RootCommitError> {
    // `git_facts`' discovery decides, with git's rules, whether git would work here at all.
    if repo_root.as_os_str().is_empty() || git_facts(repo_root).is_none() {
        return Err(RootCommitError::NotARepository);
    }
    let dir = std::fs::canonicalize(repo_root).map_err(|_| RootCommitError::NotARepository)?;
    let options = gix::open::Options::isolated();
    let mapping = gix::sec::trust::Mapping {
        full: options.clone(),
        reduced: options,
    };
    let repo = gix::ThreadSafeRepository::discover_opts(&dir, Default::default(), mapping)
        .map_err(|_| RootCommitError::NotARepository)?
        .to_thread_local();
    let git = |e: &dyn std::fmt::Display| RootCommitError::Git(e.to_string());
    let mut head = repo.head().map_err(|e| git(&e))?;
    if head.is_unborn() {
        return Err(RootCommitError::NoCommits);
    }
    let tip = head.peel_to_commit().map_err(|e| git(&e))?.id;
    let shallow: std::collections::HashSet<gix::ObjectId> = repo
        .shallow_commits()
        .map_err(|e| git(&e))?
        .map(|commits| commits.iter().copied().collect())
        .unwrap_or_default();

    // Every commit reachable from HEAD: its date and parents.
    struct Node {
        id: gix::ObjectId,
        date: i64,
        parents: Vec<usize>,
    }
    let mut index: HashMap<gix::ObjectId, usize> = HashMap::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut add = |id: gix::ObjectId, nodes: &mut Vec<Node>, pending: &mut Vec<usize>| -> usize {
        *index.entry(id).or_insert_with(|| {
            nodes.push(Node {
                id,
                date: 0,
                parents: Vec::new(),
            });
            pending.push(nodes.len() - 1);
            nodes.len() - 1
        })
    };
    add(tip, &mut nodes, &mut pending);
    while let Some(i) = pending.pop() {
        let id = nodes[i].id;
        let commit = repo.find_commit(id).map_err(|e| git(&e))?;
        let date = commit.time().map(|t| t.seconds).unwrap_or(0);
        let parent_ids: Vec<gix::ObjectId> = if shallow.contains(&id) {
            Vec::new()
        } else {
            commit.parent_ids().map(|p| p.detach()).collect()
        };
        let parents = parent_ids
            .into_iter()
            .map(|p| add(p, &mut nodes, &mut pending))
            .collect();
        nodes[i].date = date;
        nodes[i].parents = parents;
    }

    // git's sort_in_topological_order with REV_SORT_BY_COMMIT_DATE: a commit is emitted once
    // all its children are; among the ready ones the newest first, ties in insertion order.
    let mut children = vec![0usize; nodes.len()];
    for node in &nodes {
        for &p in &node.parents {
            children[p] += 1;
        }
    }
    let mut queue = std::collections::BinaryHeap::new();
    let mut counter = 0u64;
    queue.push((nodes[0].date, std::cmp::Reverse(counter), 0usize));
    let mut last_root: Option<usize> = None;
    while let Some((_, _, i)) = queue.pop() {
        if nodes[i].parents.is_empty() {
            last_root = Some(i);
        }
        for &p in &nodes[i].parents {
            children[p] -= 1;
            if children[p] == 0 {
                counter += 1;
                queue.push((nodes[p].date, std::cmp::Reverse(counter), p));
            }
        }
    }
    let root = last_root
        .map(|i| nodes[i].id.to_hex().to_string())
        .ok_or(RootCommitError::NoCommits)?;
    let is_name = (root.len() == 40 || root.len() == 64)
        && root
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !is_name {
        return Err(RootCommitError::NotAnObjectName(root));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_prefers_the_shortest_unambiguous_name() {
        let none = |_: &str| false;
        assert_eq!(shorten_unambiguous("refs/heads/main", true, none), "main");
        assert_eq!(shorten_unambiguous("HEAD", true, none), "HEAD");
        assert_eq!(
            shorten_unambiguous("refs/remotes/origin/HEAD", true, none),
            "origin"
        );
        let tag = |n: &str| n == "refs/tags/main";
        assert_eq!(
            shorten_unambiguous("refs/heads/main", true, tag),
            "heads/main"
        );
        // Not strict: only rules before refs/heads/ count, and refs/tags/ is one of them.
        assert_eq!(
            shorten_unambiguous("refs/heads/main", false, tag),
            "heads/main"
        );
        let remote = |n: &str| n == "refs/remotes/main";
        assert_eq!(
            shorten_unambiguous("refs/heads/main", false, remote),
            "main"
        );
        assert_eq!(
            shorten_unambiguous("refs/heads/main", true, remote),
            "heads/main"
        );
        let everything = |_: &str| true;
        assert_eq!(
            shorten_unambiguous("refs/heads/main", true, everything),
            "refs/heads/main"
        );
    }
}

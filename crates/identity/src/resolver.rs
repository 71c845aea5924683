//! Folder → [`ProjectIdentity`]: the [`ProjectResolver`] trait and the git-backed
//! [`GitResolver`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::git::{self, GitFacts};
use crate::{canonical_remote, paths, remote, AliasMap, ProjectIdentity, ResolveError};

/// An environment, passed explicitly (the resolver never reads the process environment for
/// these variables). Only non-empty values count, as in the reference's truthiness tests.
pub use transcope_core::env::Env;

/// The registered project id of a folder outside git: `local:<name>`.
pub const PROJECT_ID_VAR: &str = "AGENTIHOOKS_PROJECT_ID";
/// The swarm whose `config.json` names the session's repository.
pub const SWARM_VAR: &str = "AGENTIHOOKS_SWARM";
/// The agentihooks home (default `~/.agentihooks`).
pub const AGENTIHOOKS_HOME_VAR: &str = "AGENTIHOOKS_HOME";

fn var<'e>(env: &'e Env, name: &str) -> Option<&'e str> {
    env.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// Settings fixed for one run: where `~` is, where the agentihooks home is, and the alias
/// map. Build it once (for example with [`ResolverConfig::from_env`]) and share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolverConfig {
    /// The user's home: `~` expansion and the `~/scratchpad` rule.
    pub user_home: PathBuf,
    /// `$AGENTIHOOKS_HOME`: swarm configs live in `<it>/swarm/<swarm>/config.json`.
    pub agentihooks_home: PathBuf,
    /// Project id rewrites applied to every identity, already validated.
    pub aliases: Option<AliasMap>,
}

impl ResolverConfig {
    /// A configuration without aliases.
    pub fn new(user_home: impl Into<PathBuf>, agentihooks_home: impl Into<PathBuf>) -> Self {
        ResolverConfig {
            user_home: user_home.into(),
            agentihooks_home: agentihooks_home.into(),
            aliases: None,
        }
    }

    /// The same configuration with an alias map.
    pub fn with_aliases(mut self, aliases: AliasMap) -> Self {
        self.aliases = Some(aliases);
        self
    }

    /// Builds the configuration from an environment: `HOME` (required, non-empty),
    /// `AGENTIHOOKS_HOME` (`~`-expanded; unset or empty means `~/.agentihooks`), and the alias
    /// map file `$AGENTIHOOKS_HOME/project-aliases.json` when it exists.
    ///
    /// # Errors
    /// [`ResolveError::NoHome`] without `HOME`; an alias file that exists but cannot be read
    /// or is invalid gives its error here, once, rather than on every resolution.
    pub fn from_env(env: &Env) -> Result<Self, ResolveError> {
        let user_home = PathBuf::from(var(env, "HOME").ok_or(ResolveError::NoHome)?);
        let agentihooks_home = match var(env, AGENTIHOOKS_HOME_VAR) {
            Some(home) => paths::expand_user(home, &user_home),
            None => user_home.join(".agentihooks"),
        };
        let mut config = ResolverConfig::new(user_home, agentihooks_home);
        config.aliases = AliasMap::load_optional(&config.alias_file())?;
        Ok(config)
    }

    /// `<user_home>/scratchpad`.
    pub fn scratchpad(&self) -> PathBuf {
        self.user_home.join("scratchpad")
    }

    /// `<agentihooks_home>/swarm/<swarm>/config.json`.
    pub fn swarm_config_path(&self, swarm: &str) -> PathBuf {
        self.agentihooks_home
            .join("swarm")
            .join(swarm)
            .join("config.json")
    }

    /// `<agentihooks_home>/project-aliases.json`, read by [`ResolverConfig::from_env`].
    pub fn alias_file(&self) -> PathBuf {
        self.agentihooks_home.join(crate::alias::ALIAS_FILE_NAME)
    }
}

/// Resolves a folder (as written in a transcript or hook payload) to its project identity.
///
/// `Ok(None)` means the folder has no identity (not in a repository, not under
/// `~/scratchpad/<name>/…`, no registered id). Implementations must take every environment
/// variable from `env`.
pub trait ProjectResolver {
    /// The identity of `folder` under `env`.
    ///
    /// # Errors
    /// Where the reference raises `ValueError`: an invalid `AGENTIHOOKS_PROJECT_ID`.
    fn resolve(&mut self, folder: &str, env: &Env)
        -> Result<Option<ProjectIdentity>, ResolveError>;
}

impl<R: ProjectResolver + ?Sized> ProjectResolver for &mut R {
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        (**self).resolve(folder, env)
    }
}

impl<R: ProjectResolver + ?Sized> ProjectResolver for Box<R> {
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        (**self).resolve(folder, env)
    }
}

/// A resolver made of a closure, for stubs in tests and callers that already know the answer.
///
/// ```
/// use transcope_identity::{Env, FnResolver, ProjectIdentity, ProjectResolver};
///
/// let mut calls = Vec::new();
/// let mut stub = FnResolver(|folder: &str, _env: &Env| {
///     calls.push(folder.to_owned());
///     Ok(Some(ProjectIdentity::new("alpha", "alpha")))
/// });
/// let id = stub.resolve("/work/alpha", &Env::new()).unwrap().unwrap();
/// assert_eq!(id.project, "alpha");
/// drop(stub);
/// assert_eq!(calls, ["/work/alpha"]);
/// ```
#[derive(Debug, Clone)]
pub struct FnResolver<F>(pub F);

impl<F> ProjectResolver for FnResolver<F>
where
    F: FnMut(&str, &Env) -> Result<Option<ProjectIdentity>, ResolveError>,
{
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        (self.0)(folder, env)
    }
}

/// The real resolver: reads repositories with gix (never runs `git`) and follows
/// scope-log.md §3.3 (folder identity, scratchpad, registered id, swarm, aliases).
///
/// **Caching.** Everything read from disk is cached for the resolver's lifetime, which is
/// meant to be one run: the resolved path of each folder string, the git facts of each
/// resolved path (common dir, top level, origin URL), and each swarm's configured repo.
/// Environment-dependent rules are re-applied on every call, so the same folder under another
/// `env` is answered correctly from the cache.
///
/// **Sharing.** `GitResolver` is `Clone + Send + Sync`; clones share one cache behind an
/// `Arc<Mutex<…>>`. The lock is held only to look up or insert, never while reading a
/// repository, so two threads missing the same folder at once may both probe it (the answers
/// are equal; the second insert wins). Give each worker thread a clone.
#[derive(Debug, Clone)]
pub struct GitResolver {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ResolverConfig,
    cache: Mutex<Cache>,
    probes: AtomicUsize,
}

#[derive(Debug, Default)]
struct Cache {
    /// Folder string as given → resolved path.
    resolved: HashMap<String, PathBuf>,
    /// Resolved path → what git says about it.
    repos: HashMap<PathBuf, Option<Arc<GitFacts>>>,
    /// Swarm name → `repo` from its config (`None`: no usable repo).
    swarms: HashMap<String, Option<String>>,
}

/// A folder after `~` expansion, resolution and probing.
struct Folder {
    resolved: PathBuf,
    repo: Option<Arc<GitFacts>>,
}

impl GitResolver {
    /// A resolver with an empty cache.
    pub fn new(config: ResolverConfig) -> Self {
        GitResolver {
            inner: Arc::new(Inner {
                config,
                cache: Mutex::new(Cache::default()),
                probes: AtomicUsize::new(0),
            }),
        }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &ResolverConfig {
        &self.inner.config
    }

    /// How many times a repository was looked up on disk (cache misses), across all clones.
    pub fn probes(&self) -> usize {
        self.inner.probes.load(Ordering::Relaxed)
    }

    /// Forgets everything cached (for a long-lived process starting a new run).
    pub fn clear_cache(&self) {
        *self.inner.lock() = Cache::default();
    }

    /// [`ProjectResolver::resolve`] through a shared reference.
    ///
    /// # Errors
    /// An `AGENTIHOOKS_PROJECT_ID` that applies but is invalid.
    pub fn resolve_shared(
        &self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        let identity = match self.inner.swarm_identity(folder, env)? {
            Some(identity) => Some(identity),
            None => self.inner.registered_project(folder, env)?,
        };
        Ok(identity.map(|mut identity| {
            if let Some(aliases) = &self.inner.config.aliases {
                identity.project_id = aliases.rewrite(&identity.project_id).to_owned();
            }
            identity
        }))
    }
}

impl ProjectResolver for GitResolver {
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        self.resolve_shared(folder, env)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `Path(folder).expanduser().resolve()` and the git facts there, cached.
    fn folder(&self, folder: &str) -> Folder {
        let cached = self.lock().resolved.get(folder).cloned();
        let resolved = match cached {
            Some(resolved) => resolved,
            None => {
                let resolved = paths::resolve(&paths::expand_user(folder, &self.config.user_home));
                self.lock()
                    .resolved
                    .insert(folder.to_owned(), resolved.clone());
                resolved
            }
        };
        let repo = self.repo_facts(&resolved);
        Folder { resolved, repo }
    }

    fn repo_facts(&self, resolved: &Path) -> Option<Arc<GitFacts>> {
        // `git -C` cannot enter a path the kernel does not take: no repository, nothing
        // to probe or to keep (such a path can be megabytes long).
        if resolved.as_os_str().len() >= paths::PATH_MAX {
            return None;
        }
        let enclosing = {
            let cache = self.lock();
            if let Some(facts) = cache.repos.get(resolved) {
                return facts.clone();
            }
            enclosing_work_tree(&cache.repos, resolved)
        };
        // A folder inside a work tree already opened, with nothing on the way up that
        // git would stop at, is in that same repository: opening it again (reading every
        // config file) was most of the cost of a subfolder's first resolution.
        if let Some(facts) = enclosing.filter(|f| {
            f.toplevel
                .as_deref()
                .is_some_and(|top| plain_below(resolved, top))
        }) {
            self.lock()
                .repos
                .insert(resolved.to_path_buf(), Some(facts.clone()));
            return Some(facts);
        }
        self.probes.fetch_add(1, Ordering::Relaxed);
        let facts = git::git_facts(resolved).map(Arc::new);
        self.lock()
            .repos
            .insert(resolved.to_path_buf(), facts.clone());
        facts
    }

    /// The reference's `_folder_identity`: repository identity, else scratchpad identity.
    fn folder_identity(&self, folder: &Folder) -> Option<ProjectIdentity> {
        let cwd = paths::display(&folder.resolved);
        if let Some(repo) = &folder.repo {
            let root = repo.common_dir.parent().unwrap_or(&repo.common_dir);
            let name = paths::base_name(root);
            let worktree = match &repo.toplevel {
                Some(top) if top != root => paths::base_name(top),
                _ => String::new(),
            };
            let project_id = match &repo.origin_url {
                Some(url) => canonical_remote(url),
                None => crate::UNKNOWN_PROJECT_ID.to_owned(),
            };
            return Some(ProjectIdentity {
                project: name.clone(),
                repo: name,
                worktree,
                cwd,
                remote: remote::remote_slug(&project_id),
                project_id,
            });
        }
        let scratch = self.config.scratchpad();
        let relative = folder.resolved.strip_prefix(&scratch).ok()?;
        let mut parts = relative.components();
        let project = parts.next()?.as_os_str().to_string_lossy().into_owned();
        parts.next()?;
        let mut identity = ProjectIdentity::new(project.clone(), project);
        identity.cwd = cwd;
        Some(identity)
    }

    /// The reference's `_registered_project`.
    fn registered_project(
        &self,
        cwd: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        if cwd.is_empty() {
            return Ok(None);
        }
        let folder = self.folder(cwd);
        let identity = self.folder_identity(&folder);
        let Some(registered) = var(env, PROJECT_ID_VAR) else {
            return Ok(identity);
        };
        if folder.repo.is_some() {
            return Ok(identity);
        }
        if !is_registered_id(registered) {
            return Err(ResolveError::InvalidProjectId {
                id: registered.to_owned(),
            });
        }
        let mut identity = identity.unwrap_or_else(|| {
            let name = paths::base_name(&folder.resolved);
            let mut identity = ProjectIdentity::new(name.clone(), name);
            identity.cwd = paths::display(&folder.resolved);
            identity
        });
        identity.project_id = registered.to_owned();
        Ok(Some(identity))
    }

    /// The reference's `_swarm_identity`.
    fn swarm_identity(
        &self,
        cwd: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        let Some(swarm) = var(env, SWARM_VAR) else {
            return Ok(None);
        };
        let Some(repo) = self.swarm_repo(swarm) else {
            return Ok(None);
        };
        let Some(mut identity) = self.registered_project(&repo, env)? else {
            return Ok(None);
        };
        let working = if cwd.is_empty() {
            None
        } else {
            self.folder_identity(&self.folder(cwd))
        };
        if let Some(working) = working {
            if self.same_checkout(&working, &repo) {
                identity.worktree = working.worktree;
            }
        }
        identity.cwd = if cwd.is_empty() { repo } else { cwd.to_owned() };
        Ok(Some(identity))
    }

    /// The reference's `_same_checkout`: same git common dir, or (repo outside git) the
    /// working folder lies under the repo path.
    fn same_checkout(&self, working: &ProjectIdentity, repo: &str) -> bool {
        let repo_folder = self.folder(repo);
        match &repo_folder.repo {
            Some(facts) => self
                .folder(&working.cwd)
                .repo
                .is_some_and(|w| w.common_dir == facts.common_dir),
            None => self
                .folder(&working.cwd)
                .resolved
                .starts_with(&repo_folder.resolved),
        }
    }

    /// `repo` from `$AGENTIHOOKS_HOME/swarm/<swarm>/config.json`, cached per swarm.
    fn swarm_repo(&self, swarm: &str) -> Option<String> {
        if let Some(repo) = self.lock().swarms.get(swarm) {
            return repo.clone();
        }
        let repo = read_swarm_repo(&self.config.swarm_config_path(swarm));
        self.lock().swarms.insert(swarm.to_owned(), repo.clone());
        repo
    }
}

/// A missing or unreadable file, invalid JSON, a document that is not an object, or a `repo`
/// that is not a non-empty string all mean "no swarm repo".
fn read_swarm_repo(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let document: serde_json::Value = serde_json::from_str(&text).ok()?;
    document
        .get("repo")
        .and_then(serde_json::Value::as_str)
        .filter(|repo| !repo.is_empty())
        .map(str::to_owned)
}

/// `local:[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, the whole string.
pub fn is_registered_id(id: &str) -> bool {
    let Some(name) = id.strip_prefix("local:") else {
        return false;
    };
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The facts of the innermost known work tree that contains `dir`.
fn enclosing_work_tree(
    repos: &HashMap<PathBuf, Option<Arc<GitFacts>>>,
    dir: &Path,
) -> Option<Arc<GitFacts>> {
    repos
        .values()
        .flatten()
        .filter(|f| {
            f.toplevel
                .as_deref()
                .is_some_and(|top| dir.starts_with(top))
        })
        .max_by_key(|f| f.toplevel.as_deref().map_or(0, |t| t.as_os_str().len()))
        .cloned()
}

/// `true` when git, searching upwards from `dir` (a real path), would reach the work
/// tree `top` without stopping earlier: `dir` is a folder (`git -C` fails on anything
/// else, a missing one included), and no folder on the way (`dir` included, `top`
/// excluded) is or holds a `.git`, or has a `HEAD` (could be a git directory itself).
/// Anything unusual answers `false`, and the repository is opened as usual.
///
/// The walk is as deep as `dir` below `top`, and `dir` is a folder the kernel can look
/// up, so under `PATH_MAX` bytes: a path that does not exist, however deep, costs one
/// `stat`.
fn plain_below(dir: &Path, top: &Path) -> bool {
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return false;
    }
    for folder in dir.ancestors() {
        if folder == top {
            return true;
        }
        if folder.file_name().is_some_and(|n| n == ".git")
            || folder.join(".git").symlink_metadata().is_ok()
            || folder.join("HEAD").symlink_metadata().is_ok()
        {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_id_grammar() {
        assert!(is_registered_id("local:a"));
        assert!(is_registered_id(&format!("local:{}", "a".repeat(128))));
        assert!(!is_registered_id(&format!("local:{}", "a".repeat(129))));
        assert!(!is_registered_id("local:"));
        assert!(!is_registered_id("local:-a"));
        assert!(!is_registered_id("local:a/b"));
        assert!(!is_registered_id("github.com/a/b"));
        assert!(!is_registered_id("LOCAL:a"));
    }

    #[test]
    fn resolver_is_shareable() {
        fn assert_send_sync<T: Send + Sync + Clone>() {}
        assert_send_sync::<GitResolver>();
    }
}

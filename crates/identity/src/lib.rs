//! Which project, worktree and branch a folder belongs to — read from the repository on disk,
//! never by running `git`.
//!
//! This is the port of the reference's project identity (scope-log.md §3.3) and live branch
//! (§3.1). The reference shells out to `git` once per question; here gix and plain file reads
//! give the same answers as
//! `git rev-parse --path-format=absolute --git-common-dir`, `git rev-parse --show-toplevel`,
//! `git remote get-url origin` and `git rev-parse --abbrev-ref HEAD` run in that folder.
//!
//! # Principal types and data flow
//!
//! ```text
//!  Env (explicit map) ─┐
//!  folder: &str ───────┼─▶ ProjectResolver::resolve ──▶ Option<ProjectIdentity> ─▶ attributes()
//!  ResolverConfig ─────┘      (GitResolver: cached gix probes)      │
//!    user_home, agentihooks_home, AliasMap                          └─ project_id via canonical_remote
//!  folder: &Path ─────────▶ live_branch ──▶ String
//! ```
//!
//! * [`canonical_remote`] turns an origin URL into a `project_id` (`host/owner/repo`) or
//!   `"unknown"`.
//! * [`ProjectIdentity`] is the six-attribute record (project, repo, worktree, cwd, remote,
//!   project_id).
//! * [`ProjectResolver`] is the injectable trait; [`GitResolver`] is the real one and
//!   [`FnResolver`] wraps a closure (stubs). [`ResolverConfig`] is built once per run
//!   ([`ResolverConfig::from_env`]); [`Env`] carries `AGENTIHOOKS_PROJECT_ID` and
//!   `AGENTIHOOKS_SWARM` into each call.
//! * [`AliasMap`] is the validated alias document; [`ResolveError`] the failures the
//!   reference raises as `ValueError`.
//! * [`live_branch`] is the branch at session start; [`git_facts`] exposes the three other
//!   git answers ([`GitFacts`]) for one folder; [`root_commit`] is a repository's first
//!   commit (what check results are keyed on), or a [`RootCommitError`]. These are the
//!   workspace's only readers of git.
//!
//! # Resolution rules (in the reference's order)
//!
//! 1. **Swarm**: with `AGENTIHOOKS_SWARM=s`, `repo` is read from
//!    `$AGENTIHOOKS_HOME/swarm/s/config.json`. When it is a non-empty string and resolves to an
//!    identity (by rule 2), that identity is used with `cwd` = the folder as given (or `repo`
//!    when the folder is empty) and `worktree` = the folder's own worktree when the folder is in
//!    the same checkout (same git common dir; for a repo outside git: the folder lies under
//!    it), else the repo's. Otherwise fall through.
//! 2. **Registered / folder identity**: the folder is `~`-expanded and resolved like Python's
//!    `Path.resolve()`. Inside a repository: `project` = `repo` = name of the common dir's
//!    parent (the main checkout), `worktree` = basename of the top level when it differs from
//!    that root, `project_id` = `canonical_remote(origin)`, `remote` = its `owner/repo`. Else,
//!    under `~/scratchpad/<name>/<more>`: `project` = `repo` = `<name>`, `project_id`
//!    `"unknown"`. Else nothing. When `AGENTIHOOKS_PROJECT_ID` is set and the folder is not in a
//!    repository, it must match `local:[A-Za-z0-9][A-Za-z0-9._-]{0,127}` (else
//!    [`ResolveError::InvalidProjectId`]) and replaces `project_id`; a folder with no identity
//!    then gets its basename as project and repo.
//! 3. **Aliases**: the final `project_id` is rewritten through the [`AliasMap`], transitively.
//!
//! # Choices where the reference is silent or accidental
//!
//! * The alias map lives in `$AGENTIHOOKS_HOME/project-aliases.json` (format: see
//!   [`AliasMap`]); [`ResolverConfig::from_env`] loads and validates it once, so a bad map is a
//!   [`ResolveError`] at configuration time instead of on every call.
//! * A swarm `config.json` that is not a JSON object, or whose `repo` is not a string, means
//!   "no swarm repo" (the reference crashes with `AttributeError`/`TypeError`).
//! * In the swarm same-checkout test for a repo outside git, the repo path is `~`-expanded
//!   (the reference resolves a literal `~` against the process directory).
//! * `~user/…` is not expanded; `AGENTIHOOKS_HOME=""` counts as unset; a symlink loop leaves
//!   the rest of the path unresolved (Python 3.11 raises `RuntimeError`).
//! * Submodules are answered as git answers them: the common dir is
//!   `<super>/.git/modules/<name>`, so `project` is `modules` and `worktree` is the
//!   submodule's folder name.
//! * [`GitResolver`] caches, for its lifetime (one run), each folder string's resolved path,
//!   each resolved path's [`GitFacts`] and each swarm's `repo`; clones share the cache through
//!   an `Arc<Mutex<…>>` (not held while reading a repository), so it is `Clone + Send + Sync`
//!   and one clone per worker thread is the intended use. [`GitResolver::probes`] counts the
//!   repository look-ups; [`GitResolver::clear_cache`] starts a new run.
//! * [`live_branch`] copies git exactly, including two quirks: an unborn branch gives
//!   `"HEAD"` when the folder holds a file named `HEAD` (git echoes its argument; this is the
//!   case at the top of a bare repository), and a branch whose short name is ambiguous gives
//!   `heads/<name>`.
//! * Paths that are not UTF-8 are converted lossily in `cwd` and names.
//! * Git's `GIT_DIR`, `GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES` and
//!   `GIT_DISCOVERY_ACROSS_FILESYSTEM` are not consulted (discovery stops at file system
//!   boundaries, as by default); legacy `.git/remotes/` and `.git/branches/` files are not
//!   read. Git *configuration* is read as git reads it (system, global, local, worktree,
//!   includes), so `url.<base>.insteadOf` rewrites apply to `origin`.
//!
//! # Example
//!
//! ```
//! use transcope_identity::{canonical_remote, Env, GitResolver, ProjectResolver, ResolverConfig};
//!
//! assert_eq!(canonical_remote("git@github.com:Owner/Repo.git"), "github.com/owner/repo");
//! assert_eq!(canonical_remote("ssh://git@gitlab.example.com/team/app"), "gitlab.example.com/team/app");
//! assert_eq!(canonical_remote("http://github.com/o/r"), "unknown");
//!
//! let home = tempfile::tempdir().unwrap();
//! let home = home.path().canonicalize().unwrap();
//! let folder = home.join("scratchpad/demo/notes");
//! std::fs::create_dir_all(&folder).unwrap();
//!
//! let mut resolver = GitResolver::new(ResolverConfig::new(&home, home.join(".agentihooks")));
//! let identity = resolver.resolve("~/scratchpad/demo/notes", &Env::new()).unwrap().unwrap();
//! assert_eq!(identity.project, "demo");
//! assert_eq!(identity.project_id, "unknown");
//! assert_eq!(identity.attributes()[3], ("cwd", folder.to_str().unwrap()));
//! ```
//!
//! # What this crate is not
//!
//! It answers for a *folder*, never for a hook's caller: which transcript identifies the
//! caller of a hook, the conversation's stable identity and where a session's state lives are
//! in `transcope-caller`, which builds on this crate (the dependency runs that way only).
//! Nor does it read transcripts.
#![warn(missing_docs)]

mod alias;
mod error;
mod git;
mod identity;
mod paths;
mod remote;
mod resolver;

pub use alias::{AliasMap, ALIAS_FILE_NAME, ALIAS_SCHEMA_VERSION};
pub use error::ResolveError;
pub use git::{git_facts, live_branch, root_commit, GitFacts, RootCommitError};
pub use identity::ProjectIdentity;
pub use remote::{canonical_remote, UNKNOWN_PROJECT_ID};
pub use resolver::{
    is_registered_id, Env, FnResolver, GitResolver, ProjectResolver, ResolverConfig,
    AGENTIHOOKS_HOME_VAR, PROJECT_ID_VAR, SWARM_VAR,
};

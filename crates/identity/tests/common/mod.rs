//! Test helpers: run the real `git` CLI (tests may; the library may not) and compute what the
//! Python reference would answer from git's output.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use transcope_identity::{canonical_remote, Env, GitResolver, ProjectIdentity, ResolverConfig};

/// `git -C dir args…` in an isolated, reproducible environment.
pub fn git_raw(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CEILING_DIRECTORIES")
        .output()
        .expect("git runs")
}

/// Runs git and insists it succeeds.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_raw(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The reference's `_git`: trimmed stdout, or `""` on a non-zero exit.
pub fn git_answer(dir: &Path, args: &[&str]) -> String {
    let out = git_raw(dir, args);
    if out.status.success() {
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    } else {
        String::new()
    }
}

/// A fresh temporary directory with its real path (tempdirs may sit behind symlinks).
pub fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

/// `git init -b <branch>` at `path` (created), with one empty commit when `commit`.
pub fn init_repo(path: &Path, branch: &str, commit: bool) {
    std::fs::create_dir_all(path).unwrap();
    git(path, &["init", "-q", "-b", branch]);
    if commit {
        git(path, &["commit", "-q", "--allow-empty", "-m", "initial"]);
    }
}

/// What git prints for the three identity questions.
#[derive(Debug, PartialEq, Eq)]
pub struct GitSays {
    pub common_dir: String,
    pub toplevel: String,
    pub origin: String,
}

pub fn git_says(dir: &Path) -> GitSays {
    GitSays {
        common_dir: git_answer(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        ),
        toplevel: git_answer(dir, &["rev-parse", "--show-toplevel"]),
        origin: git_answer(dir, &["remote", "get-url", "origin"]),
    }
}

/// The reference's `_folder_identity` for a folder inside a repository, computed from git's
/// own output (`path` already resolved). `None` when git finds no repository.
pub fn reference_identity(path: &Path) -> Option<ProjectIdentity> {
    let says = git_says(path);
    if says.common_dir.is_empty() {
        return None;
    }
    let root = Path::new(&says.common_dir).parent().unwrap().to_path_buf();
    let name = root.file_name().unwrap().to_string_lossy().into_owned();
    let worktree = if says.toplevel != root.to_string_lossy() {
        Path::new(&says.toplevel)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    } else {
        String::new()
    };
    let project_id = canonical_remote(&says.origin);
    let remote = if project_id == "unknown" {
        String::new()
    } else {
        project_id.split_once('/').unwrap().1.to_owned()
    };
    Some(ProjectIdentity {
        project: name.clone(),
        repo: name,
        worktree,
        cwd: path.to_string_lossy().into_owned(),
        remote,
        project_id,
    })
}

/// An environment from `(name, value)` pairs.
pub fn env(pairs: &[(&str, &str)]) -> Env {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A resolver with `home` as the user's home and `home/.agentihooks` as the tool's.
pub fn resolver(home: &Path) -> GitResolver {
    GitResolver::new(ResolverConfig::new(home, home.join(".agentihooks")))
}

/// A path as the `&str` folder the resolver takes.
pub fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

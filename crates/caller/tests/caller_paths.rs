//! identity.md §6.5 (sub-agent paths), §6.6 (paths and relocation), §3 (session paths, with
//! real git repositories made by the git CLI), the tests §6 asks a port to add, and the §6.9
//! store-per-session case.

mod caller_support;
// The git helpers of transcope-identity's tests (this crate builds on that one).
#[path = "../../identity/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use caller_support::*;
use common::{env, git, init_repo};
use serde_json::json;
use transcope_caller::claudepath::{
    config_dir, encode_project_dir, project_dir, relocate_record, resolve_work_dir,
    session_dir_of_subagent, subagent_transcript_path,
};
use transcope_caller::hookinput::{record, state_cwd, HookInput};
use transcope_caller::sessionpath::{
    checks_db, data_home, encode_workspace, project_dir_of, root_commit, state_db,
    workspace_anchor, RootCommitError, SessionPathError, APP_NAME,
};
use transcope_caller::stable::stable_identity;
use transcope_caller::{Env, TranscriptError};

/// `..` applied lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

// ---- §6.5 sub-agent paths ----

/// 66.
#[test]
fn subagent_transcript_path_layout() {
    assert_eq!(
        subagent_transcript_path(
            Path::new("/cfg/projects/-a-project/7173666c.jsonl"),
            "a6e302233716d506d"
        )
        .unwrap(),
        PathBuf::from("/cfg/projects/-a-project/7173666c/subagents/agent-a6e302233716d506d.jsonl")
    );
    // A parent without the suffix is used as the session directory as is.
    assert_eq!(
        subagent_transcript_path(Path::new("/cfg/projects/-p/sess"), "a1").unwrap(),
        PathBuf::from("/cfg/projects/-p/sess/subagents/agent-a1.jsonl")
    );
}

/// 67.
#[test]
fn subagent_transcript_path_refuses_traversal() {
    let parent = Path::new("/cfg/projects/-a-project/7173666c.jsonl");
    let naive = PathBuf::from(format!(
        "/cfg/projects/-a-project/7173666c/subagents/agent-{}.jsonl",
        "../../../../../-another-project/victim"
    ));
    assert_eq!(
        lexical(&naive),
        PathBuf::from("/cfg/projects/-another-project/victim.jsonl"),
        "a naive join would leave the conversation's directory"
    );
    for id in [
        "../../../../../-another-project/victim",
        "../../../-another-project/victim",
        "..",
        ".",
        "a/b",
        "a\\b",
        "../sibling",
        "..\\sibling",
        "",
    ] {
        let err = subagent_transcript_path(parent, id).unwrap_err();
        assert!(
            matches!(err, TranscriptError::NotAnAgentId { .. }),
            "{id:?}"
        );
    }
    assert!(subagent_transcript_path(parent, "")
        .unwrap_err()
        .to_string()
        .contains("it is empty"));
}

/// 68.
#[test]
fn subagent_transcript_path_needs_a_parent() {
    assert!(matches!(
        subagent_transcript_path(Path::new(""), "agent1"),
        Err(TranscriptError::NoTranscriptPath)
    ));
}

/// 69 and 70, and the flat path winning over a workflow copy.
#[test]
fn workflow_subagents() {
    let (_t, d) = tempdir();
    let parent = d.join("session.jsonl");
    assert_eq!(
        subagent_transcript_path(&parent, "abc").unwrap(),
        d.join("session/subagents/agent-abc.jsonl"),
        "70: nothing exists"
    );
    write_lines(
        &d.join("session/subagents/workflows/wf_123/agent-abc.jsonl"),
        &[root("x")],
    );
    write_lines(
        &d.join("session/subagents/workflows/wf_200/agent-abc.jsonl"),
        &[root("y")],
    );
    write_lines(
        &d.join("session/subagents/workflows/wf_000/agent-other.jsonl"),
        &[root("z")],
    );
    assert_eq!(
        subagent_transcript_path(&parent, "abc").unwrap(),
        d.join("session/subagents/workflows/wf_123/agent-abc.jsonl"),
        "69: the first workflow match in sorted order"
    );
    write_lines(
        &d.join("session/subagents/agent-abc.jsonl"),
        &[root("flat")],
    );
    assert_eq!(
        subagent_transcript_path(&parent, "abc").unwrap(),
        d.join("session/subagents/agent-abc.jsonl")
    );
}

#[test]
fn session_dir_of_subagent_climbs_to_the_nearest_subagents() {
    let s = |p: &str| session_dir_of_subagent(Path::new(p));
    assert_eq!(
        s("/p/S/subagents/agent-x.jsonl"),
        Some(PathBuf::from("/p/S"))
    );
    assert_eq!(
        s("/p/S/subagents/workflows/wf_1/agent-x.jsonl"),
        Some(PathBuf::from("/p/S"))
    );
    assert_eq!(s("/p/S.jsonl"), None);
    assert_eq!(s("rel/S/subagents/a.jsonl"), Some(PathBuf::from("rel/S")));
    assert_eq!(s("a.jsonl"), None);
    assert_eq!(s(""), None);
    assert_eq!(s("/subagents/a.jsonl"), Some(PathBuf::from("/")));
    assert_eq!(
        s("/home/subagents/cfg/projects/-p/S.jsonl"),
        Some(PathBuf::from("/home")),
        "any ancestor named subagents qualifies"
    );
}

// ---- §6.6 paths ----

/// 71.
#[test]
fn resolve_work_dir_resolves_symlinks() {
    let (_t, base) = tempdir();
    std::fs::create_dir_all(base.join("real/dir")).unwrap();
    std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
    let once = resolve_work_dir(&base.join("link/dir"));
    assert_eq!(once, base.join("real/dir"));
    assert_eq!(resolve_work_dir(&once), once, "a fixed point");
    // Relative stays relative.
    assert_eq!(resolve_work_dir(Path::new(".")), PathBuf::from("."));
}

/// 72.
#[test]
fn resolve_work_dir_handles_a_path_not_yet_on_disk() {
    let (_t, base) = tempdir();
    std::fs::create_dir_all(base.join("real")).unwrap();
    std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
    let got = resolve_work_dir(&base.join("not/there/yet"));
    assert!(got.ends_with("yet") && got.is_absolute() && got.starts_with(&base));
    assert_eq!(
        resolve_work_dir(&base.join("link/not/there")),
        base.join("real/not/there")
    );
    assert_eq!(
        resolve_work_dir(&base.join("link/new/")),
        base.join("real/new"),
        "a trailing separator is not a component"
    );
}

/// 73.
#[test]
fn resolve_work_dir_empty() {
    assert_eq!(resolve_work_dir(Path::new("")), PathBuf::new());
}

/// 74.
#[test]
fn project_dir_is_derived_not_searched() {
    let want = PathBuf::from("/cfg/projects/")
        .join(encode_project_dir(&resolve_work_dir(Path::new("/w/p"))));
    assert_eq!(
        project_dir(Path::new("/cfg"), Path::new("/w/p")),
        Some(want)
    );
    assert_eq!(
        project_dir(Path::new("/cfg"), Path::new("")),
        Some(PathBuf::from("/cfg/projects"))
    );
}

/// 75.
#[test]
fn project_dir_without_a_config_dir() {
    assert_eq!(project_dir(Path::new(""), Path::new("/w/p")), None);
}

#[test]
fn config_dir_from_the_environment() {
    assert_eq!(
        config_dir(&env(&[
            ("CLAUDE_CONFIG_DIR", "  /my/cfg \n"),
            ("HOME", "/home/u")
        ])),
        Some(PathBuf::from("/my/cfg"))
    );
    assert_eq!(
        config_dir(&env(&[("CLAUDE_CONFIG_DIR", ""), ("HOME", "/home/u/")])),
        Some(PathBuf::from("/home/u/.claude"))
    );
    assert_eq!(config_dir(&env(&[("HOME", "")])), None);
}

#[test]
fn encodings_collide_as_documented() {
    for (a, b) in [
        ("/a/b-c", "/a/b/c"),
        ("/a/b_c", "/a/b-c"),
        ("/a/b.c", "/a/b/c"),
        ("/home/u/x y", "/home/u/x-y"),
        ("/base/proj/pkg", "/base/proj-pkg"),
    ] {
        assert_eq!(
            encode_project_dir(Path::new(a)),
            encode_project_dir(Path::new(b))
        );
    }
}

/// The resumed-session layout of §6.6: the real record under
/// `-repo--claude-worktrees-feature`, reported under `-repo`.
fn resumed(cfg: &Path, tail: &str, session: &str) -> (PathBuf, PathBuf) {
    let real = write_lines(
        &cfg.join("projects/-repo--claude-worktrees-feature")
            .join(tail),
        &[
            json!({"type": "summary", "summary": "no session here"}),
            with(root("origin"), json!({"sessionId": session})),
        ],
    );
    std::fs::create_dir_all(cfg.join("projects/-repo")).unwrap();
    (cfg.join("projects/-repo").join(tail), real)
}

/// 76.
#[test]
fn relocate_record_finds_a_resume_from_another_directory() {
    let (_t, cfg) = tempdir();
    let (reported, real) = resumed(&cfg, "sid-76.jsonl", "sid-76");
    let found = relocate_record(&cfg, &reported);
    assert_eq!(found, real);
    let id = transcope_caller::stable::resolve_stable_session_id(found.parent().unwrap(), &found)
        .unwrap();
    assert_eq!(id.id, "origin");
}

/// 77.
#[test]
fn relocate_record_leaves_what_it_cannot_confirm_alone() {
    let (_t, cfg) = tempdir();
    let projects = cfg.join("projects");
    // An unwritten record.
    let unwritten = projects.join("-repo/never.jsonl");
    std::fs::create_dir_all(projects.join("-repo")).unwrap();
    assert_eq!(relocate_record(&cfg, &unwritten), unwritten);
    // A file of another session.
    write_lines(
        &projects.join("-other/other-s.jsonl"),
        &[with(root("o"), json!({"sessionId": "someone-else"}))],
    );
    let reported = projects.join("-repo/other-s.jsonl");
    assert_eq!(relocate_record(&cfg, &reported), reported);
    // A file naming no session.
    let mut plain = root("o");
    plain.as_object_mut().unwrap().remove("sessionId");
    write_lines(&projects.join("-other/plain-s.jsonl"), &[plain]);
    let reported = projects.join("-repo/plain-s.jsonl");
    assert_eq!(relocate_record(&cfg, &reported), reported);
    // An unreadable file (oversized first line).
    write_raw(
        &projects.join("-other/big-s.jsonl"),
        &[
            oversized_line(json!({})),
            line(&with(root("o"), json!({"sessionId": "big-s"}))),
        ],
    );
    let reported = projects.join("-repo/big-s.jsonl");
    assert_eq!(relocate_record(&cfg, &reported), reported);
    // A present path.
    let present = write_lines(
        &projects.join("-repo/present.jsonl"),
        &[with(root("o"), json!({"sessionId": "present"}))],
    );
    write_lines(
        &projects.join("-other/present.jsonl"),
        &[with(root("o"), json!({"sessionId": "present"}))],
    );
    assert_eq!(relocate_record(&cfg, &present), present);
    // Empty inputs, no `projects` ancestor, too few components, a foreign `projects`.
    assert_eq!(relocate_record(Path::new(""), &reported), reported);
    assert_eq!(relocate_record(&cfg, Path::new("")), PathBuf::new());
    assert_eq!(
        relocate_record(&cfg, Path::new("/given/path.jsonl")),
        PathBuf::from("/given/path.jsonl")
    );
    let shallow = projects.join("present.jsonl");
    assert_eq!(relocate_record(&cfg, &shallow), shallow);
    let (_o, other_cfg) = tempdir();
    let foreign = other_cfg.join("projects/-repo/present-elsewhere.jsonl");
    write_lines(
        &other_cfg.join("projects/-x/present-elsewhere.jsonl"),
        &[with(root("o"), json!({"sessionId": "present-elsewhere"}))],
    );
    assert_eq!(
        relocate_record(&cfg, &foreign),
        foreign,
        "not under the config dir"
    );
}

/// 78.
#[test]
fn relocate_record_finds_a_subagents_record() {
    let (_t, cfg) = tempdir();
    let (reported, real) = resumed(&cfg, "sid-78/subagents/agent-a1.jsonl", "sid-78");
    assert_eq!(relocate_record(&cfg, &reported), real);
    // Nested workflow tails too.
    let (reported, real) = resumed(
        &cfg,
        "sid-78/subagents/workflows/wf_1/agent-a2.jsonl",
        "sid-78",
    );
    assert_eq!(relocate_record(&cfg, &reported), real);
}

/// Added test: a found relocation is memoised for the process; a miss is not.
#[test]
fn relocation_memo() {
    let (_t, cfg) = tempdir();
    let (reported, real) = resumed(&cfg, "sid-memo.jsonl", "sid-memo");
    assert_eq!(relocate_record(&cfg, &reported), real);
    let moved = real.with_extension("moved");
    std::fs::rename(&real, &moved).unwrap();
    assert_eq!(relocate_record(&cfg, &reported), real, "the memo answers");

    let missed = cfg.join("projects/-repo/sid-miss.jsonl");
    assert_eq!(relocate_record(&cfg, &missed), missed);
    let later = write_lines(
        &cfg.join("projects/-later/sid-miss.jsonl"),
        &[with(root("o"), json!({"sessionId": "sid-miss"}))],
    );
    assert_eq!(
        relocate_record(&cfg, &missed),
        later,
        "a miss was not memoised"
    );
}

/// Added test: confirmation through a symlinked config directory, both ways.
#[test]
fn relocation_through_a_symlinked_config_dir() {
    let (_t, base) = tempdir();
    let real_cfg = base.join("real-cfg");
    std::fs::create_dir_all(&real_cfg).unwrap();
    std::os::unix::fs::symlink(&real_cfg, base.join("cfg-link")).unwrap();
    let (_, real) = resumed(&real_cfg, "sid-sym.jsonl", "sid-sym");
    // Reported through the link, config named by its real path.
    let reported = base.join("cfg-link/projects/-repo/sid-sym.jsonl");
    assert_eq!(
        relocate_record(&real_cfg, &reported),
        base.join("cfg-link/projects/-repo--claude-worktrees-feature/sid-sym.jsonl")
    );
    // Reported under the real path, config named through the link.
    let reported = real_cfg.join("projects/-repo/sid-sym.jsonl");
    assert_eq!(relocate_record(&base.join("cfg-link"), &reported), real);
}

// ---- §3 session paths ----

#[test]
fn data_home_follows_the_platform_rules() {
    assert_eq!(
        data_home(&env(&[
            ("XDG_DATA_HOME", "relative/not/cleaned/"),
            ("HOME", "/h")
        ]))
        .unwrap(),
        PathBuf::from("relative/not/cleaned/"),
        "verbatim"
    );
    if cfg!(target_os = "linux") {
        assert_eq!(
            data_home(&env(&[("XDG_DATA_HOME", ""), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.local/share")
        );
    }
    assert!(matches!(
        data_home(&Env::new()),
        Err(SessionPathError::NoHome)
    ));
    assert_eq!(APP_NAME, "transcope");
}

/// Added test: EncodeWorkspace on non-ASCII input (a directory outside git, not on disk).
#[test]
fn encode_workspace_on_non_ascii_input() {
    let (_t, base) = tempdir();
    let dir = base.join("ünïcode 😀/x");
    let prefix = encode_project_dir(&base);
    assert_eq!(encode_workspace(&dir), format!("{prefix}--n-code---x"));
}

#[test]
fn workspace_anchor_is_the_git_root_or_the_resolved_folder() {
    let (_t, base) = tempdir();
    let repo = base.join("repo");
    init_repo(&repo, "main", true);
    std::fs::create_dir_all(repo.join("a/b")).unwrap();
    assert_eq!(workspace_anchor(&repo.join("a/b")), repo);
    // A linked worktree is its own anchor.
    let wt = base.join("wt");
    git(&repo, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    std::fs::create_dir_all(wt.join("sub")).unwrap();
    assert_eq!(workspace_anchor(&wt.join("sub")), wt);
    assert_eq!(
        encode_workspace(&repo.join("a")),
        encode_project_dir(&repo),
        "the state key is the repository's, from any subdirectory"
    );
    // Outside git: the folder with symlinks resolved; missing: unchanged.
    let plain = base.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::os::unix::fs::symlink(&plain, base.join("plain-link")).unwrap();
    assert_eq!(workspace_anchor(&base.join("plain-link")), plain);
    let missing = base.join("missing/../x");
    assert_eq!(workspace_anchor(&missing), missing, "not cleaned");
    // Through a symlink into the repository: git's answer, resolved.
    std::os::unix::fs::symlink(&repo, base.join("repo-link")).unwrap();
    assert_eq!(workspace_anchor(&base.join("repo-link/a")), repo);
}

#[test]
fn state_db_layout_and_guards() {
    let (_t, data) = tempdir();
    let (_w, work) = tempdir();
    let e = env(&[("XDG_DATA_HOME", data.to_str().unwrap())]);
    assert_eq!(
        state_db(&work, "s1", &e).unwrap(),
        data.join("transcope/sessions")
            .join(encode_project_dir(&work))
            .join("s1/state.db")
    );
    assert!(matches!(
        state_db(&work, "", &e),
        Err(SessionPathError::NoSessionId)
    ));
    for bad in ["a/b", "a\\b", ".", ".."] {
        let err = state_db(&work, bad, &e).unwrap_err();
        assert!(
            matches!(err, SessionPathError::NotASessionId { .. }),
            "{bad}"
        );
        assert!(err.to_string().contains("would resolve outside"));
    }
    // The id checks come before the data home.
    assert!(matches!(
        state_db(&work, "..", &Env::new()),
        Err(SessionPathError::NotASessionId { .. })
    ));
    assert!(matches!(
        state_db(&work, "s", &Env::new()),
        Err(SessionPathError::NoHome)
    ));
    // An empty cwd is the process directory.
    let here = state_db(Path::new(""), "s1", &e).unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        here,
        data.join("transcope/sessions")
            .join(encode_workspace(&cwd))
            .join("s1/state.db")
    );
}

/// The git CLI's answer for the root commit.
fn git_root_commit(dir: &Path) -> String {
    git(
        dir,
        &[
            "rev-list",
            "--max-parents=0",
            "--reverse",
            "--date-order",
            "HEAD",
        ],
    )
    .lines()
    .find(|l| !l.trim().is_empty())
    .unwrap_or_default()
    .to_owned()
}

fn commit_at(dir: &Path, message: &str, date: &str) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["commit", "-q", "--allow-empty", "-m", message])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "A")
        .env("GIT_AUTHOR_EMAIL", "a@example.com")
        .env("GIT_COMMITTER_NAME", "C")
        .env("GIT_COMMITTER_EMAIL", "c@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn checks_db_is_keyed_by_the_root_commit() {
    let (_t, base) = tempdir();
    let (_d, data) = tempdir();
    let e = env(&[("XDG_DATA_HOME", data.to_str().unwrap())]);
    let repo = base.join("repo");
    init_repo(&repo, "main", false);
    commit_at(&repo, "first", "2020-01-01T00:00:00Z");
    commit_at(&repo, "second", "2020-01-02T00:00:00Z");
    let root = git_root_commit(&repo);
    assert_eq!(root_commit(&repo).unwrap(), root);
    assert_eq!(
        checks_db(&repo, &e).unwrap(),
        data.join("transcope/checks")
            .join(&root)
            .join("results.jsonl")
    );
    // A subdirectory and a linked worktree share it.
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    assert_eq!(root_commit(&repo.join("sub")).unwrap(), root);
    let wt = base.join("wt");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    commit_at(&wt, "on the worktree", "2020-01-03T00:00:00Z");
    assert_eq!(root_commit(&wt).unwrap(), root);

    // Several roots (an unrelated history merged in): git's first line, the oldest root.
    git(&repo, &["checkout", "-q", "--orphan", "other"]);
    commit_at(&repo, "older unrelated root", "2019-06-01T00:00:00Z");
    commit_at(&repo, "on other", "2021-01-01T00:00:00Z");
    git(&repo, &["checkout", "-q", "main"]);
    git(
        &repo,
        &[
            "merge",
            "-q",
            "--allow-unrelated-histories",
            "-m",
            "merge",
            "other",
        ],
    );
    let merged = git_root_commit(&repo);
    assert_ne!(merged, root, "the older root wins");
    assert_eq!(root_commit(&repo).unwrap(), merged);
    // Equal dates: git's order again.
    let twins = base.join("twins");
    init_repo(&twins, "main", false);
    commit_at(&twins, "a", "2020-01-01T00:00:00Z");
    git(&twins, &["checkout", "-q", "--orphan", "b"]);
    commit_at(&twins, "b", "2020-01-01T00:00:00Z");
    git(&twins, &["checkout", "-q", "main"]);
    git(
        &twins,
        &["merge", "-q", "--allow-unrelated-histories", "-m", "m", "b"],
    );
    assert_eq!(root_commit(&twins).unwrap(), git_root_commit(&twins));
    // Clock skew: git's answer is the last root of its date-ordered topological order, which
    // here is not the root with the oldest date.
    let skew = base.join("skew");
    init_repo(&skew, "main", false);
    commit_at(&skew, "root a", "2020-01-10T00:00:00Z");
    commit_at(&skew, "a", "2020-01-01T00:00:00Z");
    git(&skew, &["checkout", "-q", "--orphan", "b"]);
    commit_at(&skew, "root b", "2020-01-05T00:00:00Z");
    commit_at(&skew, "b", "2020-02-19T00:00:00Z");
    git(&skew, &["checkout", "-q", "main"]);
    git(
        &skew,
        &["merge", "-q", "--allow-unrelated-histories", "-m", "m", "b"],
    );
    let answer = git_root_commit(&skew);
    assert_eq!(root_commit(&skew).unwrap(), answer);
    let subject = git(&skew, &["log", "-1", "--format=%s", &answer]);
    assert_eq!(subject, "root a");
}

/// Added test: ChecksDB with a repository that has no commits, and outside any repository.
#[test]
fn checks_db_needs_a_commit_and_a_repository() {
    let (_t, base) = tempdir();
    let (_d, data) = tempdir();
    let e = env(&[("XDG_DATA_HOME", data.to_str().unwrap())]);
    let empty = base.join("empty");
    init_repo(&empty, "main", false);
    assert_eq!(root_commit(&empty), Err(RootCommitError::NoCommits));
    let err = checks_db(&empty, &e).unwrap_err();
    assert!(matches!(
        err,
        SessionPathError::NoRepositoryIdentity {
            source: RootCommitError::NoCommits,
            ..
        }
    ));
    assert!(err.to_string().contains("no repository identity for"));
    let plain = base.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    assert_eq!(root_commit(&plain), Err(RootCommitError::NotARepository));
    assert_eq!(
        root_commit(&base.join("missing")),
        Err(RootCommitError::NotARepository)
    );
}

/// Added test: ProjectDirOf on every layout.
#[test]
fn project_dir_of_every_layout() {
    let (_t, cfg) = tempdir();
    let e = cfg_env(&cfg);
    let ignored = Path::new("/ignored");
    assert_eq!(
        project_dir_of(Path::new("/c/projects/-p/s.jsonl"), ignored, &e),
        Some(PathBuf::from("/c/projects/-p"))
    );
    assert_eq!(
        project_dir_of(
            Path::new("/c/projects/-p/s/subagents/agent-a.jsonl"),
            ignored,
            &e
        ),
        Some(PathBuf::from("/c/projects/-p"))
    );
    assert_eq!(
        project_dir_of(
            Path::new("/c/projects/-p/s/subagents/workflows/wf_1/agent-a.jsonl"),
            ignored,
            &e
        ),
        Some(PathBuf::from("/c/projects/-p"))
    );
    assert_eq!(
        project_dir_of(Path::new(""), Path::new("/w/p"), &e),
        project_dir(&cfg, Path::new("/w/p"))
    );
    assert_eq!(
        project_dir_of(Path::new(""), Path::new("/w/p"), &Env::new()),
        None
    );
    // A workflow sub-agent's identity is read from its own file, its siblings from the project.
    let agent = write_lines(
        &cfg.join("projects/-p/s/subagents/workflows/wf_1/agent-a.jsonl"),
        &[with(root("wf-origin"), json!({"isSidechain": true}))],
    );
    assert_eq!(stable_identity(&agent, ignored).unwrap().id, "wf-origin");
}

/// Added test: StateCwd with a sub-agent record, an empty record, a record with no cwd, and
/// an unreadable record.
#[test]
fn state_cwd_falls_back_to_the_hook_cwd() {
    use transcope_caller::sessionpath::state_cwd as sp_state_cwd;
    let (_t, d) = tempdir();
    let cwd = Path::new("/hook/cwd");
    let rooted = write(
        &d,
        "root",
        &[preamble(), with(root("u"), json!({"cwd": "/began"}))],
    );
    assert_eq!(sp_state_cwd(&rooted, cwd), PathBuf::from("/began"));
    let agent = write_lines(
        &d.join("root/subagents/agent-a.jsonl"),
        &[with(root("u"), json!({"cwd": "/began"}))],
    );
    assert_eq!(sp_state_cwd(&agent, cwd), cwd);
    assert_eq!(sp_state_cwd(Path::new(""), cwd), cwd);
    let nocwd = write(&d, "nocwd", &[root("u")]);
    assert_eq!(sp_state_cwd(&nocwd, cwd), cwd);
    assert_eq!(sp_state_cwd(&d.join("missing.jsonl"), cwd), cwd);
}

/// The transcript path is never derived through EncodeWorkspace: from a subdirectory of a
/// repository the guess encodes the directory itself, not the git root.
#[test]
fn the_transcript_encoding_is_not_the_state_encoding() {
    let (_t, base) = tempdir();
    let (_c, cfg) = tempdir();
    let repo = base.join("repo");
    init_repo(&repo, "main", true);
    let sub = repo.join("pkg");
    std::fs::create_dir_all(&sub).unwrap();
    let p = HookInput::parse(
        serde_json::to_string(&json!({"session_id": "s", "cwd": sub}))
            .unwrap()
            .as_bytes(),
    );
    let got = record(&p, &cfg_env(&cfg)).unwrap().unwrap();
    assert_eq!(
        got,
        cfg.join("projects")
            .join(encode_project_dir(&sub))
            .join("s.jsonl")
    );
    assert_ne!(encode_project_dir(&sub), encode_workspace(&sub));
}

/// §6.9: a root session that moved into another worktree keeps exactly one store.
#[test]
fn a_root_that_moved_to_another_worktree_keeps_its_store() {
    let (_t, base) = tempdir();
    let (_c, cfg) = tempdir();
    let (_d, data) = tempdir();
    let repo = base.join("repo");
    init_repo(&repo, "main", true);
    let wt = base.join("repo-feature");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    let mut e = cfg_env(&cfg);
    e.insert("XDG_DATA_HOME".into(), data.to_str().unwrap().into());
    let path = write_lines(
        &pd(&cfg, &repo).join("s1.jsonl"),
        &[
            with(root("o"), json!({"sessionId": "s1", "cwd": repo})),
            with(
                caller_support::record("r", "o"),
                json!({"sessionId": "s1", "cwd": wt}),
            ),
        ],
    );
    let mut stores = std::collections::BTreeSet::new();
    for (event, cwd) in [
        ("SessionStart", &repo),
        ("PreToolUse", &repo),
        ("Stop", &wt),
    ] {
        let p = HookInput::parse(
            serde_json::to_string(&json!({"hook_event_name": event, "session_id": "s1",
                                          "transcript_path": path, "cwd": cwd}))
            .unwrap()
            .as_bytes(),
        );
        stores.insert(state_db(&state_cwd(&p, &e), "s1", &e).unwrap());
    }
    assert_eq!(stores.len(), 1, "{stores:?}");
    // Keyed by the hook's cwd instead, the worktree would have been a second store.
    assert_ne!(
        state_db(&wt, "s1", &e).unwrap(),
        state_db(&repo, "s1", &e).unwrap()
    );
}

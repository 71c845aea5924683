//! Session start (§7.2 cases 18, 25, 39): the launch scope, the session index, and a
//! scope log that cannot be written never stopping either.

use std::path::Path;

use transcope_change_detect::{Env, NoProjects};
use transcope_core::{Instant, ScopeField};
use transcope_engine::Buffers;
use transcope_identity::ProjectIdentity;
use transcope_observe::{observe, Observe};
use transcope_scopelog::ScopeLog;
use transcope_stop::session_start::{launch_scope, lookup, record_session};

fn alpha() -> ProjectIdentity {
    let mut p = ProjectIdentity::new("alpha", "fixture/alpha");
    p.worktree = "one".into();
    p.cwd = "/work/alpha/one".into();
    p.project_id = "github.com/fixture/alpha".into();
    p
}

fn env() -> Env {
    let mut e = Env::new();
    e.insert("AGENTIHOOKS_SWARM".into(), "fixture".into());
    e.insert("AGENTIHOOKS_SWARM_TASK".into(), "first".into());
    e.insert("AGENTIHOOKS_SWARM_LANE".into(), "eng".into());
    e
}

#[test]
fn case18_session_start_records_the_launch_scope() {
    let home = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(home.path(), "live");
    let mut asked = Vec::new();
    for _ in 0..2 {
        record_session(
            home.path(),
            &log,
            Some(&alpha()),
            &env(),
            Instant::now(),
            &mut |p: &Path| {
                asked.push(p.to_owned());
                "one".into()
            },
        );
    }
    let rows = log.transitions();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (
            r["project_id"].as_str(),
            r["task"].as_str(),
            r["lane"].as_str(),
            r["branch"].as_str()
        ),
        (
            Some("github.com/fixture/alpha"),
            Some("first"),
            Some("eng"),
            Some("one")
        )
    );
    assert!(asked.iter().all(|p| p == Path::new("/work/alpha/one")));
    let index = std::fs::read_to_string(home.path().join("brain/project-sessions.jsonl")).unwrap();
    assert_eq!(
        index.lines().count(),
        1,
        "at most one index row for the same identity"
    );
    // No identity: project, cwd and branch empty; the swarm variables still recorded.
    record_session(home.path(), &log, None, &env(), Instant::now(), &mut |_| {
        panic!("no git without a folder")
    });
    let rows = log.transitions();
    let last = rows.last().unwrap();
    assert_eq!(
        (
            last["project_id"].as_str(),
            last["cwd"].as_str(),
            last["branch"].as_str(),
            last["task"].as_str()
        ),
        (Some(""), Some(""), Some(""), Some("first"))
    );
}

#[test]
fn case25_scope_carries_the_identity_and_swarm_variables() {
    let s = launch_scope(Some(&alpha()), "feat", &env());
    assert_eq!(s.get(ScopeField::Project), "alpha");
    assert_eq!(s.get(ScopeField::Worktree), "one");
    assert_eq!(s.get(ScopeField::Cwd), "/work/alpha/one");
    assert_eq!(s.get(ScopeField::Branch), "feat");
    assert_eq!(s.get(ScopeField::Swarm), "fixture");
    assert_eq!(
        s.get(ScopeField::TaskRevision),
        "",
        "live code never sets a revision"
    );
    let bare = launch_scope(None, "", &Env::new());
    assert!(bare.iter().all(|(_, v)| v.is_empty()));
}

#[test]
fn case39_an_unwritable_scope_log_never_stops_session_start_or_stop() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("brain")).unwrap();
    std::fs::write(
        home.path().join("brain/session-scopes"),
        b"a file, not a folder",
    )
    .unwrap();
    let log = ScopeLog::open(home.path(), "live");
    let r = record_session(
        home.path(),
        &log,
        Some(&alpha()),
        &env(),
        Instant::now(),
        &mut |_| "one".into(),
    );
    assert!(!r.recorded);
    assert!(!r.errors.is_empty(), "the failure is reported, not raised");
    assert_eq!(lookup(home.path(), "live").unwrap()[0].1, "alpha");
    let t = home.path().join("t.jsonl");
    std::fs::write(
        &t,
        "{\"type\":\"user\",\"timestamp\":\"2026-10-08T10:00:00Z\",\"cwd\":\"/a\"}\n",
    )
    .unwrap();
    let report = observe(
        &transcope_testkit::engine::pipeline(home.path()),
        &Observe::new(&log, &t, &Env::new()),
        NoProjects,
        &mut Buffers::default(),
    )
    .unwrap();
    assert_eq!(report.outcome.recorded, 0);
    assert_eq!(report.outcome.io_errors, 1);
}

#[test]
fn case24_branch_is_read_from_git_only_for_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(args)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@e")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@e")
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    git(&["init", "-q", "-b", "feature"]);
    git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    assert_eq!(transcope_identity::live_branch(dir.path()), "feature");
    assert_eq!(transcope_identity::live_branch(Path::new("")), "");
}

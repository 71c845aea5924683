//! The §7.2 cases about `observe_transcript` that concern the stage itself (entries
//! already decoded): 14, 15, 41, 42 and the Codex branch rules of §3.2.

use std::borrow::Cow;

use transcope_change_detect::{ChangeDetect, Env, ProjectResolver, Seen};
use transcope_core::{Entry, Scope, ScopeField, TimeValue};
use transcope_identity::{ProjectIdentity, ResolveError};
use transcope_scopelog::ScopeLog;

/// The §7.1 stub: three known folders, everything else nothing; records its calls.
#[derive(Default)]
struct Stub {
    calls: Vec<String>,
    env_seen: Vec<Option<String>>,
    fixed: Option<ProjectIdentity>,
}

fn ident(project: &str, repo: &str, worktree: &str, cwd: &str, id: &str) -> ProjectIdentity {
    let mut p = ProjectIdentity::new(project, repo);
    p.worktree = worktree.into();
    p.cwd = cwd.into();
    p.project_id = id.into();
    p
}

impl ProjectResolver for Stub {
    fn resolve(
        &mut self,
        folder: &str,
        env: &Env,
    ) -> Result<Option<ProjectIdentity>, ResolveError> {
        self.calls.push(folder.to_owned());
        self.env_seen.push(env.get("MARK").cloned());
        if let Some(f) = &self.fixed {
            return Ok(Some(f.clone()));
        }
        Ok(match folder {
            "/work/alpha/one" => Some(ident(
                "alpha",
                "fixture/alpha",
                "one",
                folder,
                "github.com/fixture/alpha",
            )),
            "/work/alpha/two" => Some(ident(
                "alpha",
                "fixture/alpha",
                "two",
                folder,
                "github.com/fixture/alpha",
            )),
            "/work/beta" => Some(ident(
                "beta",
                "fixture/beta",
                "beta",
                folder,
                "github.com/fixture/beta",
            )),
            _ => None,
        })
    }
}

fn entry<'a>(t: &'a str, cwd: Option<&'a str>, branch: Option<&'a str>) -> Entry<'a> {
    Entry {
        time: TimeValue::Str(Cow::Borrowed(t)),
        cwd: cwd.map(Cow::Borrowed),
        branch: branch.map(Cow::Borrowed),
        ..Entry::default()
    }
}

fn env() -> Env {
    let mut e = Env::new();
    for (k, v) in [
        ("AGENTIHOOKS_SWARM", "fixture"),
        ("AGENTIHOOKS_SWARM_TASK", "first"),
        ("AGENTIHOOKS_SWARM_LANE", "eng"),
        ("MARK", "same-env"),
    ] {
        e.insert(k.into(), v.into());
    }
    e
}

fn fixture_entries() -> Vec<Entry<'static>> {
    vec![
        entry("2026-10-08T09:59:00Z", Some("/scratch"), None),
        entry("2026-10-08T10:05:00Z", Some("/work/alpha/one"), Some("one")),
        entry("2026-10-08T10:15:00Z", Some("/work/alpha/two"), Some("two")),
        entry("2026-10-08T10:25:00Z", Some("/work/alpha/two"), Some("two")),
        entry("2026-10-08T10:35:00Z", Some("/work/beta"), Some("main")),
        entry("2026-10-08T10:40:00Z", Some("/work/beta"), Some("main")),
    ]
}

fn run(log: &ScopeLog, env: &Env, stub: &mut Stub, entries: &[Entry<'_>]) -> u64 {
    let mut stage = ChangeDetect::begin(log, env, stub);
    for e in entries {
        stage.entry(e);
    }
    stage.finish().recorded
}

fn col(log: &ScopeLog, key: &str) -> Vec<String> {
    log.transitions()
        .iter()
        .map(|r| r[key].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn case14_transcript_observation_records_the_worktree_switch() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "live");
    let env = env();
    let mut stub = Stub::default();
    assert_eq!(run(&log, &env, &mut stub, &fixture_entries()), 4);
    let pairs: Vec<(String, String)> = col(&log, "worktree")
        .into_iter()
        .zip(col(&log, "branch"))
        .collect();
    assert_eq!(
        pairs,
        [("", ""), ("one", "one"), ("two", "two"), ("beta", "main")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
    );
    assert_eq!(col(&log, "cwd")[0], "/scratch");
    assert!(col(&log, "task").iter().all(|t| t == "first"));
    assert_eq!(
        stub.calls,
        [
            "/scratch",
            "/work/alpha/one",
            "/work/alpha/two",
            "/work/beta"
        ]
    );
    assert!(stub
        .env_seen
        .iter()
        .all(|m| m.as_deref() == Some("same-env")));
    // A re-run records nothing and calls the resolver no more.
    assert_eq!(run(&log, &env, &mut stub, &fixture_entries()), 0);
    assert_eq!(stub.calls.len(), 4);
    assert_eq!(log.transitions().len(), 4);
}

#[test]
fn case15_entries_without_a_folder_or_time_are_skipped() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "skip");
    log.record(
        &Scope::default().with(ScopeField::Cwd, "/start"),
        "2026-10-08T10:00:00+00:00",
        None,
    )
    .unwrap();
    let entries = vec![
        Entry {
            time: TimeValue::Str("2026-10-08T10:01:00Z".into()),
            ..Entry::default()
        },
        entry("bad", Some("/bad-time"), None),
        Entry {
            time: TimeValue::Other("7".into()),
            cwd: Some("/numeric-time".into()),
            ..Entry::default()
        },
        entry("2026-10-08T09:00:00Z", Some("/older"), None),
        entry("2026-10-08T10:00:00Z", Some("/same-instant"), None),
        entry("2026-10-08T10:03:00Z", Some("/later"), None),
    ];
    let mut stub = Stub::default();
    assert_eq!(run(&log, &Env::new(), &mut stub, &entries), 2);
    assert_eq!(stub.calls, ["/same-instant", "/later"]);
    assert_eq!(col(&log, "cwd"), ["/start", "/same-instant", "/later"]);
}

#[test]
fn case41_transcript_branch_changes_are_recorded_never_read_from_live_git() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "br");
    let mut stub = Stub {
        fixed: Some(ident(
            "alpha",
            "fixture/alpha",
            "one",
            "/work/alpha/one",
            "github.com/fixture/alpha",
        )),
        ..Stub::default()
    };
    // turn_context entries carry no branch (the Codex adapter gives branch None).
    let entries = vec![
        entry("2026-10-08T10:00:00Z", Some("one"), Some("main")),
        entry("2026-10-08T10:05:00Z", Some("one"), Some("feat")),
        entry("2026-10-08T10:10:00Z", Some("one"), None),
        entry("2026-10-08T10:15:00Z", Some("two"), None),
        entry("2026-10-08T10:20:00Z", Some("two"), None),
    ];
    assert_eq!(run(&log, &Env::new(), &mut stub, &entries), 3);
    let got: Vec<(String, String)> = col(&log, "at")
        .into_iter()
        .map(|a| a[11..16].to_owned())
        .zip(col(&log, "branch"))
        .collect();
    assert_eq!(
        got,
        [("10:00", "main"), ("10:05", "feat"), ("10:15", "")].map(|(a, b)| (a.into(), b.into()))
    );
}

#[test]
fn case42_a_branchless_entry_keeps_the_launch_branch_of_the_same_folder() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "launch");
    // The launch scope session start records (branch from live git: feat).
    log.record(
        &Scope::default()
            .with(ScopeField::Cwd, "/work/alpha/one")
            .with(ScopeField::Branch, "feat"),
        "2026-10-08T10:00:00+00:00",
        None,
    )
    .unwrap();
    let mut stub = Stub::default();
    let entries = vec![entry("2999-01-01T00:00:00Z", Some("/work/alpha/one"), None)];
    assert_eq!(run(&log, &Env::new(), &mut stub, &entries), 0);
    assert_eq!(col(&log, "branch"), ["feat"]);
    assert!(stub.calls.is_empty());
}

#[test]
fn codex_branch_rules() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "codex");
    let mut stub = Stub::default();
    let entries = vec![
        // Claude entry with a branch, then a turn_context in the same folder: kept.
        entry("2026-10-08T10:00:00Z", Some("/a"), Some("feat")),
        entry("2026-10-08T10:01:00Z", Some("/a"), None),
        // A new folder without a branch: "" and a transition.
        entry("2026-10-08T10:02:00Z", Some("/b"), None),
        // A later turn_context there keeps "".
        entry("2026-10-08T10:03:00Z", Some("/b"), None),
    ];
    assert_eq!(run(&log, &Env::new(), &mut stub, &entries), 2);
    assert_eq!(col(&log, "branch"), ["feat", ""]);
    assert_eq!(stub.calls, ["/a", "/b"]);
}

#[test]
fn seen_is_updated_before_the_record_attempt() {
    // §8 item 10, kept deliberately: an out-of-order entry that is refused as older
    // still becomes `seen`, so the next entry in the original folder is a change again.
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "order");
    let mut stub = Stub::default();
    let entries = vec![
        entry("2026-10-08T10:00:00Z", Some("/a"), None),
        entry("2026-10-08T10:05:00Z", Some("/b"), None),
        entry("2026-10-08T10:01:00Z", Some("/a"), None), // refused: older than 10:05
        entry("2026-10-08T10:06:00Z", Some("/b"), None), // seen is /a now: records nothing new
    ];
    let env = Env::new();
    let mut stage = ChangeDetect::begin(&log, &env, &mut stub);
    for e in &entries {
        stage.entry(e);
    }
    let out = stage.finish();
    assert_eq!(out.recorded, 2);
    assert_eq!(out.refused, 1);
    assert_eq!(stub.calls, ["/a", "/b", "/a", "/b"]);
    assert_eq!(
        out.seen,
        Some(Seen {
            cwd: "/b".into(),
            branch: "".into()
        })
    );
}

#[test]
fn swarm_variables_come_only_from_the_map_passed_in() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "envmap");
    let mut stub = Stub::default();
    run(
        &log,
        &Env::new(),
        &mut stub,
        &[entry("2026-10-08T10:00:00Z", Some("/a"), None)],
    );
    assert_eq!(col(&log, "swarm"), [""]);
    assert_eq!(col(&log, "task"), [""]);
}

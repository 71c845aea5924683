//! The real-data shapes of identity.md §7, as fixtures (`tests/fixtures/compaction/`) and as
//! files generated in temporary config and project directories.

mod caller_support;

use std::path::{Path, PathBuf};

use caller_support::*;
use serde_json::json;
use transcope_caller::belongs::{belongs_to_session, belongs_to_tree};
use transcope_caller::claudepath::subagent_transcript_path;
use transcope_caller::hookinput::{caller, record as hook_record, HookInput};
use transcope_caller::stable::{resolve_stable_session_id, stable_identity};
use transcope_caller::TranscriptError;

const FIXTURE_ORIGIN: &str = "3ba4c16c-6d62-5736-a30c-2f43fd0838cb";
const FIXTURE_BOUNDARY: &str = "d0103595-83e9-534a-8cac-5a0d30abb2ee";

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compaction")
}

fn payload(v: serde_json::Value) -> HookInput {
    HookInput::parse(serde_json::to_string(&v).unwrap().as_bytes())
}

/// A compaction appended mid-file, and one compaction resumed into 8 files all opening on the
/// same boundary: every file resolves to the original's origin, none degraded.
#[test]
fn a_compaction_and_eight_forks_sharing_its_boundary_converge() {
    let dir = fixture_dir();
    let mut names: Vec<String> = (1..=8).map(|k| format!("fork-{k}")).collect();
    names.push("original".into());
    for name in &names {
        let path = dir.join(format!("{name}.jsonl"));
        let id = resolve_stable_session_id(&dir, &path).unwrap();
        assert_eq!(id.id, FIXTURE_ORIGIN, "{name}");
        assert_eq!(id.degraded, None, "{name}");
        assert!(id.unreadable_siblings.is_empty());
        // Through the hook entry point too.
        let c = caller(
            &payload(json!({"transcript_path": path, "session_id": "x"})),
            &Default::default(),
        );
        assert_eq!(c.stable_id.as_deref(), Some(FIXTURE_ORIGIN), "{name}");
    }
    // The sub-agent record beside them is its own conversation.
    let agent =
        dir.join("7f3c2a10-0000-4000-8000-000000000001/subagents/agent-a0123456789abcdef.jsonl");
    let id = stable_identity(&agent, Path::new("")).unwrap();
    assert_ne!(id.id, FIXTURE_ORIGIN);
    assert_ne!(id.id, FIXTURE_BOUNDARY);
}

/// The same forks with the original deleted (Claude Code's cleanup): each degrades to the
/// shared boundary, consistently, without an error.
#[test]
fn forks_whose_original_was_cleaned_up_degrade_to_the_boundary() {
    let (_t, d) = tempdir();
    for k in 1..=8 {
        let name = format!("fork-{k}.jsonl");
        std::fs::copy(fixture_dir().join(&name), d.join(&name)).unwrap();
    }
    for k in 1..=8 {
        let id = resolve_stable_session_id(&d, &d.join(format!("fork-{k}.jsonl"))).unwrap();
        assert_eq!(id.id, FIXTURE_BOUNDARY);
        assert!(id.degraded.is_some());
    }
}

/// One transcript opens with 303 records of an older session's id and reaches its own on line
/// 304: the containment rule accepts it, and the guess resolves to the older origin.
#[test]
fn a_transcript_opening_with_303_records_of_an_older_session() {
    let (_t, cfg) = tempdir();
    let (_w, cwd) = tempdir();
    let mut lines = vec![with(
        root("older-origin"),
        json!({"sessionId": "older", "cwd": cwd}),
    )];
    for i in 1..303 {
        let parent = if i == 1 {
            "older-origin".to_owned()
        } else {
            format!("o{}", i - 1)
        };
        lines.push(with(
            record(&format!("o{i}"), &parent),
            json!({"sessionId": "older", "cwd": cwd}),
        ));
    }
    assert_eq!(lines.len(), 303);
    lines.push(with(
        record("mine", "o302"),
        json!({"sessionId": "current", "cwd": cwd}),
    ));
    let path = write_lines(&pd(&cfg, &cwd).join("current.jsonl"), &lines);
    assert!(belongs_to_session(&path, "current").is_ok());
    assert!(belongs_to_tree(&path, &cwd).is_ok());
    let env = cfg_env(&cfg);
    let p = payload(json!({"session_id": "current", "cwd": cwd}));
    assert_eq!(hook_record(&p, &env).unwrap(), Some(path.clone()));
    let c = caller(&p, &env);
    assert_eq!(c.stable_id.as_deref(), Some("older-origin"));
    assert_eq!(c.scope_key.as_deref(), Some("current"));
    // A first-record rule would have refused it; so does asking for the older id's neighbour.
    assert!(matches!(
        belongs_to_session(&path, "someone-else"),
        Err(TranscriptError::WrongSession { found, .. }) if found == "older"
    ));
}

/// The self-match trap: a file opening on a parentless record whose logical parent is in the
/// same file 756 lines further down resolves through the original, not through itself.
#[test]
fn the_self_match_trap_756_lines_down() {
    let (_t, d) = tempdir();
    write(
        &d,
        "original",
        &[root("true-origin"), record("x", "true-origin")],
    );
    let mut lines = vec![boundary("continuation-root", "x")];
    let mut parent = "continuation-root".to_owned();
    for i in 0..755 {
        let u = format!("c{i}");
        lines.push(record(&u, &parent));
        parent = u;
    }
    lines.push(record("x", "true-origin"));
    let cont = write(&d, "trap", &lines);
    let id = resolve_stable_session_id(&d, &cont).unwrap();
    assert_eq!(
        (id.id.as_str(), id.degraded.is_none()),
        ("true-origin", true)
    );
    std::fs::remove_file(d.join("original.jsonl")).unwrap();
    let id = resolve_stable_session_id(&d, &cont).unwrap();
    assert_eq!(
        id.id, "continuation-root",
        "alone, it does not answer itself"
    );
    assert!(id.degraded.is_some());
}

/// A sub-agent recording a sibling worktree outside the parent's tree is never refused its own
/// record, whether reported by path or reconstructed from its id.
#[test]
fn a_subagent_in_a_sibling_worktree() {
    let (_t, cfg) = tempdir();
    let (_b, base) = tempdir();
    let parent_tree = base.join("proj");
    let sibling_wt = base.join("proj-agent-wt");
    std::fs::create_dir_all(&parent_tree).unwrap();
    std::fs::create_dir_all(&sibling_wt).unwrap();
    let parent = write_lines(
        &pd(&cfg, &parent_tree).join("sess.jsonl"),
        &[with(
            root("P"),
            json!({"sessionId": "sess", "cwd": parent_tree}),
        )],
    );
    let agent = write_lines(
        &subagent_transcript_path(&parent, "a0123456789abcdef").unwrap(),
        &[with(
            root("A"),
            json!({"sessionId": "sess", "cwd": sibling_wt, "isSidechain": true, "agentId": "a0123456789abcdef"}),
        )],
    );
    assert!(
        belongs_to_tree(&agent, &parent_tree).is_err(),
        "the tree check would refuse it, which is why it is never asked"
    );
    let env = cfg_env(&cfg);
    for p in [
        payload(json!({"session_id": "sess", "agent_id": "a0123456789abcdef", "cwd": parent_tree})),
        payload(
            json!({"session_id": "sess", "agent_id": "a0123456789abcdef", "transcript_path": parent, "cwd": sibling_wt}),
        ),
        payload(json!({"session_id": "sess", "agent_transcript_path": agent, "cwd": parent_tree})),
    ] {
        let c = caller(&p, &env);
        assert_eq!(c.record.as_ref(), Some(&agent), "{p:?}");
        assert_eq!(c.stable_id.as_deref(), Some("A"));
        assert_eq!(c.scope_key.as_deref(), Some("sess.a0123456789abcdef"));
        assert_eq!(c.error, None);
    }
}

/// `<base>/proj/pkg` and `<base>/proj-pkg` encode alike: a guess from one landing on the
/// other's real transcript is refused by the tree, while the other's own guess resolves.
#[test]
fn colliding_project_encodings() {
    let (_t, cfg) = tempdir();
    let (_b, base) = tempdir();
    let sub = base.join("proj/pkg");
    let sibling = base.join("proj-pkg");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(&sibling).unwrap();
    assert_eq!(pd(&cfg, &sub), pd(&cfg, &sibling));
    let path = write_lines(
        &pd(&cfg, &sibling).join("s-1.jsonl"),
        &[
            json!({"type": "file-history-snapshot", "isSnapshotUpdate": false, "messageId": "m", "snapshot": {}}),
            with(
                root("SIBLING-ORIGIN"),
                json!({"sessionId": "s-1", "cwd": sibling}),
            ),
            with(
                record("r", "SIBLING-ORIGIN"),
                json!({"sessionId": "s-1", "cwd": sibling.join("deeper")}),
            ),
        ],
    );
    let env = cfg_env(&cfg);
    let refused = caller(&payload(json!({"session_id": "s-1", "cwd": sub})), &env);
    assert_eq!(
        (refused.record, refused.stable_id, refused.scope_key),
        (None, None, None)
    );
    assert!(refused.error.unwrap().contains("written in another tree"));
    let own = caller(&payload(json!({"session_id": "s-1", "cwd": sibling})), &env);
    assert_eq!(own.record, Some(path));
    assert_eq!(own.stable_id.as_deref(), Some("SIBLING-ORIGIN"));
}

/// Records whose cwd changes part-way (the agent `cd`s) still belong to the tree they began
/// in, and a file with no cwd at all is allowed.
#[test]
fn several_cwds_and_no_cwd() {
    let (_t, base) = tempdir();
    let a = base.join("a");
    let b = base.join("b");
    let path = write(
        &base,
        "t",
        &[
            json!({"type": "file-history-snapshot", "isSnapshotUpdate": false, "messageId": "m", "snapshot": {}}),
            with(root("u"), json!({"cwd": a})),
            with(record("v", "u"), json!({"cwd": b})),
        ],
    );
    assert!(belongs_to_tree(&path, &a).is_ok());
    assert!(belongs_to_tree(&path, &b).is_ok());
    let none = write(&base, "none", &[root("u"), record("v", "u")]);
    assert!(belongs_to_tree(&none, &a).is_ok());
}

/// §6.10, the survey (not a regression test): runs only when `TRANSCOPE_SURVEY_PROJECTS`
/// names a Claude Code `projects` directory, and buckets every transcript's outcome.
#[test]
fn survey_stable_session_id() {
    let Some(projects) = std::env::var_os("TRANSCOPE_SURVEY_PROJECTS") else {
        return;
    };
    let mut buckets: std::collections::BTreeMap<String, usize> = Default::default();
    let mut files = Vec::new();
    for project in std::fs::read_dir(&projects).into_iter().flatten().flatten() {
        for entry in walk(&project.path()) {
            if entry.extension().is_some_and(|e| e == "jsonl") {
                files.push(entry);
            }
        }
    }
    for path in files {
        let bucket = match stable_identity(&path, Path::new("")) {
            Ok(id) => match id.degraded {
                None => "ok".to_owned(),
                Some(transcope_caller::Degraded::ContinuationMissing { .. }) => {
                    "degraded: continuation missing".to_owned()
                }
                Some(_) => "degraded: chain runaway".to_owned(),
            },
            Err(TranscriptError::NoOriginRecord { .. }) => "no origin record".to_owned(),
            Err(e) if e.is_not_found() => "record missing".to_owned(),
            Err(_) => "other".to_owned(),
        };
        *buckets.entry(bucket).or_default() += 1;
    }
    eprintln!("{buckets:#?}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

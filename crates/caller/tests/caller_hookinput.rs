//! identity.md §6.1 (hookinput), §6.7 (the sr-session payload cases), §1 (payload parsing)
//! and the `caller` entry point.

mod caller_support;

use std::path::{Path, PathBuf};

use caller_support::*;
use serde_json::json;
use transcope_caller::claudepath::subagent_transcript_path;
use transcope_caller::hookinput::{
    caller, record, record_with_locator, session_record, session_record_with_locator, state_cwd,
    HookInput, TranscriptLocator,
};
use transcope_caller::stable::stable_identity;
use transcope_caller::{Env, TranscriptError};

fn payload(v: serde_json::Value) -> HookInput {
    HookInput::parse(serde_json::to_string(&v).unwrap().as_bytes())
}

/// `stableID(p)`: `Record(p)`; an empty result is an error; then the stable identity's id.
fn stable_id(p: &HookInput, env: &Env) -> Result<String, String> {
    let path = record(p, env)
        .map_err(|e| e.to_string())?
        .ok_or("no record")?;
    stable_identity(&path, Path::new(&p.cwd))
        .map(|i| i.id)
        .map_err(|e| e.to_string())
}

// ---- §1: the payload ----

#[test]
fn an_empty_or_invalid_body_is_an_empty_input() {
    for body in [
        &b""[..],
        b"   ",
        b"{",
        b"not json",
        b"[1,2]",
        b"\"s\"",
        b"5",
        b"null",
        b"{\"session_id\":\"s\"} trailing",
    ] {
        let p = HookInput::parse(body);
        assert_eq!(p.session_id, "", "{:?}", String::from_utf8_lossy(body));
        assert_eq!(p.transcript_path, "");
        assert!(!p.is_subagent());
    }
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("broken pipe"))
        }
    }
    assert_eq!(HookInput::from_reader(Failing), HookInput::default());
    assert_eq!(
        HookInput::from_reader(&br#"{"session_id":"s"}"#[..]).session_id,
        "s"
    );
}

#[test]
fn payload_fields_are_read_tolerantly() {
    let p = HookInput::parse(
        br#"{"hook_event_name":"SubagentStop","session_id":"sid","transcript_path":"/cfg/projects/-repo/sid.jsonl",
            "agent_id":"a0123456789abcdef","agent_type":"general-purpose",
            "agent_transcript_path":"/cfg/projects/-repo/sid/subagents/agent-a0123456789abcdef.jsonl",
            "cwd":"/repo","source":"resume","last_assistant_message":"done \ud800 half","stop_hook_active":true,
            "tool_input":{"deep":[1,{"x":null}]},"worktree_path":"/wt","tool_name":"Bash","tool_use_id":"t1"}"#,
    );
    assert_eq!(p.hook_event_name, "SubagentStop");
    assert_eq!(p.session_id, "sid");
    assert_eq!(p.agent_id, "a0123456789abcdef");
    assert_eq!(p.agent_type, "general-purpose");
    assert!(p
        .agent_transcript_path
        .ends_with("agent-a0123456789abcdef.jsonl"));
    assert_eq!(p.cwd, "/repo");
    assert_eq!(p.source, "resume");
    assert_eq!(
        p.last_assistant_message, "done \u{FFFD} half",
        "a lone surrogate is replaced, not fatal"
    );
    assert!(p.stop_hook_active);
    assert_eq!(
        (
            p.worktree_path.as_str(),
            p.tool_name.as_str(),
            p.tool_use_id.as_str()
        ),
        ("/wt", "Bash", "t1")
    );
    assert_eq!(p.raw["tool_input"]["deep"][0], 1);
    assert!(p.is_subagent());

    // A mismatched field is left empty, the others are read; keys fold; the last duplicate wins.
    let p = HookInput::parse(
        br#"{"session_id":5,"CWD":"/a","Transcript_Path":"/t","agent_id":"x","AGENT_ID":"y","source":null}"#,
    );
    assert_eq!(p.session_id, "");
    assert_eq!(p.cwd, "/a");
    assert_eq!(p.transcript_path, "/t");
    assert_eq!(p.agent_id, "y");
    assert_eq!(p.source, "");
    // Only an agent id makes a sub-agent too.
    assert!(HookInput::parse(br#"{"agent_id":"a1"}"#).is_subagent());
    // Invalid UTF-8 is replaced rather than failing the payload.
    let mut body = br#"{"session_id":"s","cwd":"/x"#.to_vec();
    body.push(0xff);
    body.extend_from_slice(br#""}"#);
    let p = HookInput::parse(&body);
    assert_eq!((p.session_id.as_str(), p.cwd.as_str()), ("s", "/x\u{FFFD}"));
}

// ---- §6.1 ----

/// 1.
#[test]
fn path_on_the_payload_wins() {
    let (_t, cfg) = tempdir();
    let p = payload(
        json!({"transcript_path": "/given/path.jsonl", "session_id": "sid", "cwd": "/proj"}),
    );
    assert_eq!(
        record(&p, &cfg_env(&cfg)).unwrap(),
        Some(PathBuf::from("/given/path.jsonl"))
    );
}

/// 2.
#[test]
fn reconstructed_from_the_session_id() {
    let (_t, cfg) = tempdir();
    let p = payload(json!({"session_id": "sess-1", "cwd": "/proj"}));
    let got = record(&p, &cfg_env(&cfg)).unwrap().unwrap();
    assert_eq!(got, pd(&cfg, Path::new("/proj")).join("sess-1.jsonl"));
    assert_eq!(got, cfg.join("projects/-proj/sess-1.jsonl"));
}

/// 3 and 12.
#[test]
fn nothing_to_go_on_is_empty() {
    let (_t, cfg) = tempdir();
    let p = payload(json!({"cwd": "/proj"}));
    assert_eq!(record(&p, &cfg_env(&cfg)).unwrap(), None);
    assert_eq!(session_record(&p, &cfg_env(&cfg)).unwrap(), None);
    // No config directory at all: a session id alone names nothing either.
    let p = payload(json!({"session_id": "s", "cwd": "/proj"}));
    assert_eq!(record(&p, &Env::new()).unwrap(), None);
}

/// 4.
#[test]
fn a_session_id_with_a_separator_is_refused() {
    let (_t, cfg) = tempdir();
    write_lines(
        &cfg.join("projects/-some-other-project/secret.jsonl"),
        &[with(root("THEIR-ORIGIN"), json!({"sessionId": "secret"}))],
    );
    let p = payload(json!({"session_id": "../-some-other-project/secret", "cwd": "/proj"}));
    let env = cfg_env(&cfg);
    let err = record(&p, &env).unwrap_err();
    assert!(
        matches!(err, TranscriptError::NotASessionId { .. }),
        "{err}"
    );
    assert!(err
        .to_string()
        .contains("\"../-some-other-project/secret\""));
    let id = stable_id(&p, &env);
    assert!(id.is_err());
    assert_ne!(id.unwrap_or_default(), "THEIR-ORIGIN");
}

/// 5.
#[test]
fn a_backslash_is_refused_too() {
    let (_t, cfg) = tempdir();
    let p = payload(json!({"session_id": "..\\other\\secret", "cwd": "/proj"}));
    assert!(matches!(
        record(&p, &cfg_env(&cfg)),
        Err(TranscriptError::NotASessionId { .. })
    ));
}

/// 6.
#[test]
fn dot_ids_name_a_file_inside_the_project_dir() {
    let (_t, cfg) = tempdir();
    let (_w, work) = tempdir();
    let dir = pd(&cfg, &work);
    std::fs::create_dir_all(&dir).unwrap();
    let env = cfg_env(&cfg);
    for (id, file) in [(".", "..jsonl"), ("..", "...jsonl")] {
        let p = payload(json!({"session_id": id, "cwd": work}));
        let got = record(&p, &env).unwrap().unwrap();
        assert_eq!(got, dir.join(file));
        assert_eq!(got.parent().unwrap(), dir);
    }
}

/// 7.
#[test]
fn a_guess_landing_on_another_conversation_is_refused() {
    let (_t, cfg) = tempdir();
    write_lines(
        &pd(&cfg, Path::new("/proj")).join("guessed.jsonl"),
        &[with(
            root("UNRELATED-ORIGIN"),
            json!({"sessionId": "someone-else"}),
        )],
    );
    let p = payload(json!({"session_id": "guessed", "cwd": "/proj"}));
    let env = cfg_env(&cfg);
    let err = record(&p, &env).unwrap_err();
    assert!(matches!(err, TranscriptError::WrongSession { .. }), "{err}");
    assert!(session_record(&p, &env).is_err());
    assert!(stable_id(&p, &env).is_err());
}

/// 8.
#[test]
fn a_guess_landing_on_its_own_record_resolves() {
    let (_t, cfg) = tempdir();
    let path = write_lines(
        &pd(&cfg, Path::new("/proj")).join("mine.jsonl"),
        &[with(root("MY-ORIGIN"), json!({"sessionId": "mine"}))],
    );
    let p = payload(json!({"session_id": "mine", "cwd": "/proj"}));
    let env = cfg_env(&cfg);
    assert_eq!(record(&p, &env).unwrap(), Some(path));
    assert_eq!(stable_id(&p, &env).unwrap(), "MY-ORIGIN");
}

/// 9.
#[test]
fn a_guess_landing_on_a_forked_record_resolves() {
    let (_t, cfg) = tempdir();
    let path = write_lines(
        &pd(&cfg, Path::new("/proj")).join("forked.jsonl"),
        &[
            with(root("MY-ORIGIN"), json!({"sessionId": "old-session"})),
            with(
                caller_support::record("B", "MY-ORIGIN"),
                json!({"sessionId": "old-session"}),
            ),
            with(
                caller_support::record("C", "B"),
                json!({"sessionId": "forked"}),
            ),
        ],
    );
    let p = payload(json!({"session_id": "forked", "cwd": "/proj"}));
    let env = cfg_env(&cfg);
    assert_eq!(record(&p, &env).unwrap(), Some(path));
    assert_eq!(stable_id(&p, &env).unwrap(), "MY-ORIGIN");
}

/// 10.
#[test]
fn a_record_carrying_no_session_id_still_resolves() {
    let (_t, cfg) = tempdir();
    let mut origin = root("ORIGIN");
    origin.as_object_mut().unwrap().remove("sessionId");
    write_lines(&pd(&cfg, Path::new("/proj")).join("plain.jsonl"), &[origin]);
    let p = payload(json!({"session_id": "plain", "cwd": "/proj"}));
    assert_eq!(stable_id(&p, &cfg_env(&cfg)).unwrap(), "ORIGIN");
}

/// 11.
#[test]
fn a_given_path_is_never_cross_checked() {
    let (_t, cfg) = tempdir();
    let path = write_lines(
        &pd(&cfg, Path::new("/proj")).join("handed-over.jsonl"),
        &[with(
            root("O"),
            json!({"sessionId": "a-different-name", "cwd": "/elsewhere"}),
        )],
    );
    let p = payload(json!({"transcript_path": path, "session_id": "handed-over", "cwd": "/proj"}));
    assert_eq!(record(&p, &cfg_env(&cfg)).unwrap(), Some(path));
}

/// 13.
#[test]
fn a_guess_at_a_file_not_written_yet_still_resolves() {
    let (_t, cfg) = tempdir();
    let p = payload(json!({"session_id": "not-yet", "cwd": "/proj"}));
    assert_eq!(
        record(&p, &cfg_env(&cfg)).unwrap(),
        Some(pd(&cfg, Path::new("/proj")).join("not-yet.jsonl"))
    );
}

/// The colliding checkouts of tests 14 and 17: `base/proj/pkg` and `base/proj-pkg`.
fn colliding(cfg: &Path, base: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let sub = base.join("proj/pkg");
    let sibling = base.join("proj-pkg");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(&sibling).unwrap();
    assert_eq!(pd(cfg, &sub), pd(cfg, &sibling));
    let path = pd(cfg, &sibling).join("s-1.jsonl");
    (sub, sibling, path)
}

/// 14.
#[test]
fn refuses_a_guess_from_a_colliding_sibling_checkout() {
    let (_t, cfg) = tempdir();
    let (_b, base) = tempdir();
    let (sub, sibling, path) = colliding(&cfg, &base);
    write_lines(
        &path,
        &[with(
            root("SIBLING-ORIGIN"),
            json!({"sessionId": "s-1", "cwd": sibling}),
        )],
    );
    let p = payload(json!({"session_id": "s-1", "cwd": sub}));
    let env = cfg_env(&cfg);
    let err = record(&p, &env).unwrap_err();
    assert!(matches!(err, TranscriptError::WrongTree { .. }), "{err}");
    assert!(stable_id(&p, &env).is_err());
}

/// 17.
#[test]
fn the_tree_check_still_guards_a_guessed_root_path() {
    let (_t, cfg) = tempdir();
    let (_b, base) = tempdir();
    let (sub, sibling, path) = colliding(&cfg, &base);
    let raw = format!(
        r#"{{"type":"user","uuid":"SIBLING-ORIGIN","parentUuid":null,"sessionId":"s-1","cwd":"{}","timestamp":"2026-08-13T09:00:00.000Z"}}"#,
        sibling.display()
    );
    write_raw(&path, &[raw]);
    let p = payload(json!({"session_id": "s-1", "cwd": sub, "hook_event_name": "PreToolUse"}));
    assert!(matches!(
        record(&p, &cfg_env(&cfg)),
        Err(TranscriptError::WrongTree { .. })
    ));
}

/// 15.
#[test]
fn accepts_a_guess_from_the_same_tree() {
    let (_t, cfg) = tempdir();
    let (_w, cwd) = tempdir();
    let path = write_lines(
        &pd(&cfg, &cwd).join("s-1.jsonl"),
        &[with(
            root("OWN-ORIGIN"),
            json!({"sessionId": "s-1", "cwd": cwd}),
        )],
    );
    let p = payload(json!({"session_id": "s-1", "cwd": cwd}));
    let env = cfg_env(&cfg);
    assert_eq!(record(&p, &env).unwrap(), Some(path));
    assert_eq!(stable_id(&p, &env).unwrap(), "OWN-ORIGIN");
}

/// 16.
#[test]
fn an_isolated_subagent_is_never_asked_about_its_tree() {
    let (_t, cfg) = tempdir();
    let (_b, base) = tempdir();
    let parent_tree = base.join("proj");
    let agent_tree = base.join("proj-worktrees/agent-1");
    std::fs::create_dir_all(&parent_tree).unwrap();
    std::fs::create_dir_all(&agent_tree).unwrap();
    let parent_path = write_lines(
        &pd(&cfg, &parent_tree).join("sess-1.jsonl"),
        &[with(
            root("PARENT-ORIGIN"),
            json!({"sessionId": "sess-1", "cwd": parent_tree}),
        )],
    );
    let agent_path = write_lines(
        &subagent_transcript_path(&parent_path, "a1").unwrap(),
        &[with(
            root("AGENT-ORIGIN"),
            json!({"sessionId": "sess-1", "cwd": agent_tree, "isSidechain": true, "agentId": "a1"}),
        )],
    );
    let env = cfg_env(&cfg);
    let by_path = payload(json!({"agent_transcript_path": agent_path, "cwd": parent_tree}));
    assert_eq!(record(&by_path, &env).unwrap(), Some(agent_path.clone()));
    let by_id =
        payload(json!({"transcript_path": parent_path, "agent_id": "a1", "cwd": parent_tree}));
    assert_eq!(record(&by_id, &env).unwrap(), Some(agent_path.clone()));
    let agent = stable_id(&by_path, &env).unwrap();
    let parent = stable_id(&payload(json!({"transcript_path": parent_path})), &env).unwrap();
    assert_eq!(agent, "AGENT-ORIGIN");
    assert_eq!(parent, "PARENT-ORIGIN");
    // A sub-agent keeps its own cwd for state; the session keeps where it began.
    assert_eq!(
        state_cwd(
            &payload(json!({"agent_transcript_path": agent_path, "cwd": agent_tree})),
            &env
        ),
        agent_tree
    );
    assert_eq!(
        state_cwd(
            &payload(json!({"transcript_path": parent_path, "cwd": agent_tree})),
            &env
        ),
        parent_tree
    );
}

/// §2.1 branch 1: an invalid agent id is irrelevant when the agent's path is reported.
#[test]
fn a_reported_agent_path_ignores_the_agent_id() {
    let p = payload(
        json!({"agent_transcript_path": "/x/agent-a.jsonl", "agent_id": "../../evil", "session_id": "a/b"}),
    );
    assert_eq!(
        record(&p, &Env::new()).unwrap(),
        Some(PathBuf::from("/x/agent-a.jsonl"))
    );
}

/// §2.1 branch 4: a sub-agent named only by an id that is not a name is refused.
#[test]
fn a_subagent_id_that_is_not_a_name_is_refused() {
    for id in ["..", "../x", "a\\b", "."] {
        let p = payload(json!({"transcript_path": "/cfg/projects/-p/s.jsonl", "agent_id": id}));
        assert!(
            matches!(
                record(&p, &Env::new()),
                Err(TranscriptError::NotAnAgentId { .. })
            ),
            "{id}"
        );
        // The session's own record is unaffected.
        assert_eq!(
            session_record(&p, &Env::new()).unwrap(),
            Some(PathBuf::from("/cfg/projects/-p/s.jsonl"))
        );
        // state_cwd falls back to the payload's cwd on an error.
        assert_eq!(state_cwd(&p, &Env::new()), PathBuf::from(""));
    }
    // An agent id with no session record names nothing (branch 3).
    let p = payload(json!({"agent_id": "a1", "cwd": "/proj"}));
    assert_eq!(record(&p, &Env::new()).unwrap(), None);
}

/// §2.1 branch 4 on a guessed session record: the sub-agent path is built under the guess.
#[test]
fn a_subagent_named_by_id_under_a_guessed_session_record() {
    let (_t, cfg) = tempdir();
    let p = payload(json!({"session_id": "s9", "agent_id": "a1", "cwd": "/proj"}));
    assert_eq!(
        record(&p, &cfg_env(&cfg)).unwrap(),
        Some(pd(&cfg, Path::new("/proj")).join("s9/subagents/agent-a1.jsonl"))
    );
}

/// 18.
#[test]
fn a_harness_locator_finds_a_record_the_payload_did_not_name() {
    let locator = |p: &HookInput| Some(PathBuf::from(format!("/found/{}.jsonl", p.session_id)));
    let env = Env::new();
    let p = payload(json!({"session_id": "s1", "cwd": "/proj"}));
    assert_eq!(
        session_record_with_locator(&p, &env, Some(&locator)).unwrap(),
        Some(PathBuf::from("/found/s1.jsonl"))
    );
    assert_eq!(
        record_with_locator(&p, &env, Some(&locator)).unwrap(),
        Some(PathBuf::from("/found/s1.jsonl"))
    );
    let given = payload(json!({"transcript_path": "/given.jsonl", "session_id": "s1"}));
    let asked = std::cell::Cell::new(false);
    let spy = |_: &HookInput| {
        asked.set(true);
        Some(PathBuf::from("/found/x.jsonl"))
    };
    assert_eq!(
        session_record_with_locator(&given, &env, Some(&spy)).unwrap(),
        Some(PathBuf::from("/given.jsonl"))
    );
    assert!(
        !asked.get(),
        "the locator is not consulted when a path is given"
    );
    // An empty answer counts as none.
    let empty = |_: &HookInput| Some(PathBuf::new());
    assert_eq!(
        session_record_with_locator(&p, &env, Some(&empty)).unwrap(),
        None
    );
    let none: &dyn TranscriptLocator = &|_: &HookInput| None;
    assert_eq!(
        session_record_with_locator(&p, &env, Some(none)).unwrap(),
        None
    );
}

// ---- §6.7: resumed sessions ----

/// The resume-from-another-directory layout: the real file under
/// `-repo--claude-worktrees-feature`, the reported one under `-repo`.
fn resumed(cfg: &Path, sid: &str) -> (PathBuf, PathBuf) {
    let real = write_lines(
        &cfg.join(format!(
            "projects/-repo--claude-worktrees-feature/{sid}.jsonl"
        )),
        &[
            json!({"type": "attachment", "uuid": "origin", "parentUuid": null, "sessionId": sid,
                   "cwd": "/repo/.claude/worktrees/feature", "timestamp": TS_ROOT}),
            with(
                caller_support::record("r1", "origin"),
                json!({"sessionId": sid}),
            ),
        ],
    );
    std::fs::create_dir_all(cfg.join("projects/-repo")).unwrap();
    (cfg.join(format!("projects/-repo/{sid}.jsonl")), real)
}

/// 83.
#[test]
fn resume_from_another_directory_resolves() {
    let (_t, cfg) = tempdir();
    let (reported, real) = resumed(&cfg, "sid-83");
    let p = payload(
        json!({"hook_event_name": "SessionStart", "source": "resume", "session_id": "sid-83",
                           "transcript_path": reported, "cwd": "/repo"}),
    );
    let env = cfg_env(&cfg);
    assert_eq!(record(&p, &env).unwrap(), Some(real));
    assert_eq!(stable_id(&p, &env).unwrap(), "origin");
}

/// 84 and 85.
#[test]
fn startup_and_clear_do_not_relocate() {
    let (_t, cfg) = tempdir();
    let (reported, real) = resumed(&cfg, "sid-84");
    let env = cfg_env(&cfg);
    for source in ["startup", "clear"] {
        let p = payload(json!({"source": source, "transcript_path": reported, "cwd": "/repo"}));
        assert_eq!(
            record(&p, &env).unwrap(),
            Some(reported.clone()),
            "{source}"
        );
    }
    for source in ["resume", "compact", "fork", ""] {
        let p = payload(json!({"source": source, "transcript_path": reported, "cwd": "/repo"}));
        assert_eq!(record(&p, &env).unwrap(), Some(real.clone()), "{source:?}");
    }
}

/// 86.
#[test]
fn subagent_of_a_resumed_session_is_relocated() {
    let (_t, cfg) = tempdir();
    let (reported, real) = resumed(&cfg, "sid-86");
    let real_agent = write_lines(
        &subagent_transcript_path(&real, "a1").unwrap(),
        &[with(
            root("sub-origin"),
            json!({"sessionId": "sid-86", "isSidechain": true, "agentId": "a1"}),
        )],
    );
    let reported_agent = cfg.join("projects/-repo/sid-86/subagents/agent-a1.jsonl");
    let env = cfg_env(&cfg);
    let by_path = payload(json!({"session_id": "sid-86", "transcript_path": reported,
                                 "agent_transcript_path": reported_agent, "agent_id": "a1", "cwd": "/repo"}));
    assert_eq!(record(&by_path, &env).unwrap(), Some(real_agent.clone()));
    assert_eq!(stable_id(&by_path, &env).unwrap(), "sub-origin");
    let by_id = payload(
        json!({"session_id": "sid-86", "transcript_path": reported, "agent_id": "a1", "cwd": "/repo"}),
    );
    assert_eq!(record(&by_id, &env).unwrap(), Some(real_agent));
    assert_eq!(stable_id(&by_id, &env).unwrap(), "sub-origin");
}

// ---- caller ----

#[test]
fn caller_of_a_root_session() {
    let (_t, cfg) = tempdir();
    let (_w, repo) = tempdir();
    let moved = repo.join("sub");
    std::fs::create_dir_all(&moved).unwrap();
    let path = write_lines(
        &pd(&cfg, &repo).join("s1.jsonl"),
        &[
            preamble(),
            with(root("origin-1"), json!({"sessionId": "s1", "cwd": repo})),
            with(
                caller_support::record("r", "origin-1"),
                json!({"sessionId": "s1", "cwd": moved}),
            ),
        ],
    );
    let env = cfg_env(&cfg);
    let c = caller(&payload(json!({"session_id": "s1", "cwd": repo})), &env);
    assert_eq!(c.record.as_ref(), Some(&path));
    assert_eq!(c.session_record.as_ref(), Some(&path));
    assert_eq!(c.state_cwd, repo);
    assert_eq!(c.stable_id.as_deref(), Some("origin-1"));
    assert_eq!(c.degraded, None);
    assert_eq!(c.scope_key.as_deref(), Some("s1"));
    assert_eq!(c.error, None);
    // Keys, in order.
    let v = serde_json::to_value(&c).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "record",
            "session_record",
            "state_cwd",
            "stable_id",
            "degraded",
            "scope_key",
            "error"
        ]
    );
    // The session moved into a subdirectory: its state stays where it began.
    let later = caller(
        &payload(json!({"session_id": "s1", "transcript_path": path, "cwd": moved})),
        &env,
    );
    assert_eq!(later.state_cwd, repo);
}

#[test]
fn caller_of_a_subagent_and_of_a_refused_guess() {
    let (_t, cfg) = tempdir();
    let env = cfg_env(&cfg);
    let parent = write_lines(
        &cfg.join("projects/-repo/s2.jsonl"),
        &[with(root("P"), json!({"sessionId": "s2", "cwd": "/repo"}))],
    );
    let agent = write_lines(
        &subagent_transcript_path(&parent, "a0123456789abcdef").unwrap(),
        &[with(
            root("A"),
            json!({"sessionId": "s2", "cwd": "/wt", "isSidechain": true}),
        )],
    );
    let c = caller(
        &payload(
            json!({"session_id": "s2", "transcript_path": parent, "agent_id": "a0123456789abcdef", "cwd": "/wt"}),
        ),
        &env,
    );
    assert_eq!(c.record.as_ref(), Some(&agent));
    assert_eq!(c.session_record.as_ref(), Some(&parent));
    assert_eq!(c.stable_id.as_deref(), Some("A"));
    assert_eq!(c.state_cwd, PathBuf::from("/wt"));
    assert_eq!(c.scope_key.as_deref(), Some("s2.a0123456789abcdef"));
    // Only the agent's path reported: the id comes from its file name.
    let c = caller(
        &payload(json!({"session_id": "s2", "agent_transcript_path": agent, "cwd": "/wt"})),
        &env,
    );
    assert_eq!(c.scope_key.as_deref(), Some("s2.a0123456789abcdef"));
    assert_eq!(
        c.session_record,
        Some(cfg.join("projects/-wt/s2.jsonl")),
        "the session's record is guessed from the id in the tree the call reports"
    );

    // A refused guess: error set, nothing established.
    write_lines(
        &cfg.join("projects/-repo/guess.jsonl"),
        &[with(root("X"), json!({"sessionId": "someone-else"}))],
    );
    let c = caller(
        &payload(json!({"session_id": "guess", "cwd": "/repo"})),
        &env,
    );
    assert_eq!(c.record, None);
    assert_eq!(c.stable_id, None);
    assert_eq!(c.scope_key, None);
    assert!(c
        .error
        .as_deref()
        .unwrap()
        .contains("belongs to another session"));
    assert_eq!(c.state_cwd, PathBuf::from("/repo"));
    let json = serde_json::to_string(&c).unwrap();
    assert!(json.contains(r#""record":null"#) && json.contains(r#""scope_key":null"#));

    // Nothing named at all.
    let c = caller(&payload(json!({"cwd": "/repo"})), &env);
    assert_eq!((c.record, c.scope_key, c.error), (None, None, None));
    // A session id that is not a name never becomes a scope key.
    let c = caller(
        &payload(json!({"session_id": "..", "transcript_path": parent})),
        &env,
    );
    assert_eq!(c.scope_key, None);
    assert_eq!(c.stable_id.as_deref(), Some("P"));
}

#[test]
fn caller_reports_a_degraded_identity_and_a_record_not_written_yet() {
    let (_t, cfg) = tempdir();
    let env = cfg_env(&cfg);
    let path = write_lines(
        &cfg.join("projects/-repo/s3.jsonl"),
        &[with(
            boundary("continuation-root", "gone"),
            json!({"sessionId": "s3"}),
        )],
    );
    let c = caller(
        &payload(json!({"session_id": "s3", "transcript_path": path})),
        &env,
    );
    assert_eq!(c.stable_id.as_deref(), Some("continuation-root"));
    assert!(c
        .degraded
        .as_deref()
        .unwrap()
        .contains("in no other transcript"));
    // SessionStart before the first write: a record, no identity yet, no error.
    let c = caller(
        &payload(json!({"session_id": "s4", "cwd": "/repo", "source": "startup"})),
        &env,
    );
    assert_eq!(c.record, Some(cfg.join("projects/-repo/s4.jsonl")));
    assert_eq!((c.stable_id, c.degraded, c.error), (None, None, None));
    assert_eq!(c.scope_key.as_deref(), Some("s4"));
}

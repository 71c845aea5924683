//! Copilot CLI's hook wiring, by the real binary under a temporary `$HOME`:
//! `hook install --agent copilot` writes transcope's own hooks file,
//! `~/.copilot/hooks/transcope.json`, in Copilot's dialect (a second install changes
//! nothing, uninstall takes exactly it out and leaves other files), `doctor` reads it
//! back; and the command it installs, fed Copilot's camelCase payload (a `sessionId`
//! and no transcript path), finds the session's file under `~/.copilot/session-state`,
//! checks that the file is that session's, and records what `backfill` records — or,
//! for an id that is not a session's, writes nothing, exits 0 and says why.

mod common;

use std::path::{Path, PathBuf};

use common::reliability::*;
use common::{copy_tree, parse_json_lines};
use serde_json::{json, Value};

const SID: &str = "7c1e0f2a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";
const FLAT: &str = "3a4b5c6d-0000-4000-8000-00000000aaaa";

/// The file install writes, byte for byte.
const GOLDEN: &str = r#"{
  "version": 1,
  "hooks": {
    "sessionStart": [
      {
        "type": "command",
        "bash": "transcope hook session-start --agent=copilot",
        "timeoutSec": 60
      }
    ],
    "agentStop": [
      {
        "type": "command",
        "bash": "transcope hook stop --agent=copilot",
        "timeoutSec": 60
      }
    ],
    "subagentStop": [
      {
        "type": "command",
        "bash": "transcope hook stop --agent=copilot",
        "timeoutSec": 60
      }
    ]
  }
}
"#;

/// A sandbox whose user has a `~/.copilot` holding both fixture sessions.
fn with_copilot() -> Sandbox {
    let sb = Sandbox::new();
    copy_tree(
        &common::testdata().join("public/copilot/home/.copilot"),
        &sb.user.join(".copilot"),
    );
    sb
}

fn hook_file(sb: &Sandbox) -> PathBuf {
    sb.user.join(".copilot/hooks/transcope.json")
}

fn ok(sb: &Sandbox, args: &[&str], stdin: &[u8]) -> (String, String) {
    let out = run(sb.cmd(args), stdin);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    (text(&out.stdout), text(&out.stderr))
}

/// Every file under `dir` but transcope's lock files, with its bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    common::tree(dir)
        .into_iter()
        .filter(|p| !p.ends_with(".transcope.lock") && dir.join(p).is_file())
        .map(|p| {
            let b = std::fs::read(dir.join(&p)).unwrap();
            (p, b)
        })
        .collect()
}

#[test]
fn install_writes_copilots_hook_file_once_and_uninstall_takes_out_only_it() {
    let sb = with_copilot();
    let hooks = sb.user.join(".copilot/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let theirs = br#"{"version":1,"hooks":{"agentStop":[{"type":"command","bash":"./lint.sh"}]}}"#;
    std::fs::write(hooks.join("team.json"), theirs).unwrap();

    let (_, err) = ok(&sb, &["hook", "install", "--agent", "copilot"], b"");
    assert!(
        err.contains("Copilot CLI: wired sessionStart, agentStop, subagentStop"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(hook_file(&sb)).unwrap(), GOLDEN);
    let file: Value = serde_json::from_str(GOLDEN).unwrap();
    assert_eq!(file["version"], 1);
    for event in ["sessionStart", "agentStop", "subagentStop"] {
        assert_eq!(file["hooks"][event][0]["type"], "command", "{event}");
    }

    // A second install, alone or for every agent, changes nothing of Copilot's.
    let wired = files(&hooks);
    let (_, err) = ok(&sb, &["hook", "install", "--agent", "copilot"], b"");
    assert!(err.contains("already wired"), "{err}");
    let (_, err) = ok(&sb, &["hook", "install"], b"");
    assert!(err.contains("Copilot CLI: already wired"), "{err}");
    assert_eq!(files(&hooks), wired);

    // Uninstall removes transcope's file (a backup of it kept beside), never the team's.
    let (_, err) = ok(&sb, &["hook", "uninstall", "--agent", "copilot"], b"");
    assert!(err.contains("removed") && err.contains("backup"), "{err}");
    assert!(!hook_file(&sb).exists());
    let left = files(&hooks);
    assert_eq!(left[0], ("team.json".to_owned(), theirs.to_vec()));
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left[1].0.starts_with("transcope.json.transcope-") && left[1].0.ends_with(".bak"));
    assert_eq!(left[1].1, GOLDEN.as_bytes());
    let (_, err) = ok(&sb, &["hook", "uninstall", "--agent", "copilot"], b"");
    assert!(err.contains("nothing to remove"), "{err}");
}

/// A handler the user added to transcope's file stays, in place, through a second
/// install and an uninstall, which then leaves the file.
#[test]
fn a_users_own_handler_in_the_file_is_kept() {
    let sb = with_copilot();
    ok(&sb, &["hook", "install", "--agent", "copilot"], b"");
    let mine = GOLDEN.replace(
        r#"    "agentStop": ["#,
        r#"    "agentStop": [
      {
        "type": "command",
        "bash": "./notify.sh"
      },"#,
    );
    std::fs::write(hook_file(&sb), &mine).unwrap();
    ok(&sb, &["hook", "install", "--agent", "copilot"], b"");
    assert_eq!(std::fs::read_to_string(hook_file(&sb)).unwrap(), mine);
    ok(&sb, &["hook", "uninstall", "--agent", "copilot"], b"");
    let after: Value = serde_json::from_str(&std::fs::read_to_string(hook_file(&sb)).unwrap())
        .expect("still JSON");
    assert_eq!(
        after,
        json!({"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./notify.sh"}]}})
    );
}

/// `--agent all` wires Copilot CLI where `~/.copilot` exists (its `hooks/` need not),
/// and not where it does not.
#[test]
fn all_wires_copilot_only_where_it_is_installed() {
    let sb = Sandbox::new();
    ok(&sb, &["hook", "install"], b"");
    assert!(!sb.user.join(".copilot").exists());
    let sb = with_copilot();
    assert!(!sb.user.join(".copilot/hooks").exists());
    ok(&sb, &["hook", "install", "--agent", "all"], b"");
    assert_eq!(std::fs::read_to_string(hook_file(&sb)).unwrap(), GOLDEN);
}

#[test]
fn doctor_reports_copilots_wiring() {
    let sb = with_copilot();
    let doctor = |sb: &Sandbox| -> Value {
        let out = run(sb.cmd(&["doctor", "--json"]), b"");
        parse_json_lines(&text(&out.stdout))
            .into_iter()
            .find(|c| c["check"] == "Copilot CLI hooks")
            .expect("a Copilot CLI hooks check")
    };
    let before = doctor(&sb);
    assert!(
        before["detail"].as_str().unwrap().contains("not wired"),
        "{before}"
    );
    ok(&sb, &["hook", "install", "--agent", "copilot"], b"");
    let after = doctor(&sb);
    assert_eq!(after["status"], "ok", "{after}");
    assert_eq!(
        after["detail"],
        format!(
            "sessionStart, agentStop, subagentStop wired in {}",
            hook_file(&sb).display()
        )
    );
}

/// A hook's summary: its last line on stderr, after the program's name.
fn summary_of(err: &str) -> Value {
    let line = err.trim().lines().last().unwrap_or_default();
    serde_json::from_str(line.strip_prefix("transcope: ").unwrap_or(line))
        .unwrap_or_else(|e| panic!("{e}: {err}"))
}

/// Copilot's payload: camelCase, the session by its id, no transcript.
fn copilot_payload(session: &str) -> Vec<u8> {
    json!({"sessionId": session, "cwd": "/work/demo", "timestamp": 1_746_090_000_000u64})
        .to_string()
        .into_bytes()
}

/// What a session shows: its scope log's rows and its timeline.
fn seen(sb: &Sandbox, session: &str) -> (Option<Vec<[String; 3]>>, Vec<Value>) {
    let timeline = parse_json_lines(&stdout_of(
        sb,
        &["timeline", "--session", session, "--json", "--no-sync"],
    ));
    let log = sb.log(session).exists().then(|| scopes(sb, session));
    (log, timeline)
}

#[test]
fn a_copilot_stop_records_what_backfill_records() {
    let hooked = with_copilot();
    for session in [SID, FLAT] {
        let (_, err) = ok(
            &hooked,
            &["hook", "stop", "--agent=copilot"],
            &copilot_payload(session),
        );
        let summary = summary_of(&err);
        assert_eq!(summary["error"], Value::Null, "{summary}");
        assert_eq!(summary["scope_key"], session, "{summary}");
    }
    let filled = with_copilot();
    ok(&filled, &["backfill", "--json"], b"");

    let (scopes_hooked, timeline_hooked) = seen(&hooked, SID);
    let rows = scopes_hooked.clone().expect("a scope log");
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0][1], "/work/demo");
    assert!(timeline_hooked.iter().any(|i| i["kind"] == "transition"));
    assert_eq!((scopes_hooked, timeline_hooked), seen(&filled, SID));
    assert_eq!(seen(&hooked, FLAT), seen(&filled, FLAT));

    // Again: nothing new, nothing recorded twice.
    let before = std::fs::read(hooked.log(SID)).unwrap();
    ok(
        &hooked,
        &["hook", "stop", "--agent=copilot"],
        &copilot_payload(SID),
    );
    assert_eq!(std::fs::read(hooked.log(SID)).unwrap(), before);
}

#[test]
fn a_copilot_session_start_is_keyed_by_its_session_id() {
    let sb = with_copilot();
    let (_, err) = ok(
        &sb,
        &["hook", "session-start", "--agent=copilot"],
        &copilot_payload(SID),
    );
    let summary = summary_of(&err);
    assert_eq!(summary["scope_key"], SID, "{summary}");
    // A session whose file is not written yet is keyed by its id all the same.
    let fresh = "0b0e5d1c-1111-4222-8333-444455556666";
    let (_, err) = ok(
        &sb,
        &["hook", "session-start", "--agent=copilot"],
        &copilot_payload(fresh),
    );
    let summary = summary_of(&err);
    assert_eq!(summary["scope_key"], fresh, "{summary}");
}

/// Everything under the sandbox's transcope home (nothing may be written there).
fn written(sb: &Sandbox) -> Vec<String> {
    common::tree(&sb.home)
}

#[test]
fn a_session_id_the_file_does_not_name_or_no_id_writes_nothing_and_says_why() {
    let sb = with_copilot();
    // A file where the session's would be, which starts another session.
    let other = "5e5e5e5e-0000-4000-8000-000000000001";
    let dir = sb.user.join(format!(".copilot/session-state/{other}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        sb.user
            .join(format!(".copilot/session-state/{SID}/events.jsonl")),
        dir.join("events.jsonl"),
    )
    .unwrap();
    let before = written(&sb);
    let cases: [(Vec<u8>, &str); 5] = [
        (copilot_payload(other), "refused"),
        (copilot_payload("../x"), "is not a session id"),
        (
            json!({"cwd": "/work/demo"}).to_string().into_bytes(),
            "is not a session id",
        ),
        (
            copilot_payload("9f9f9f9f-0000-4000-8000-000000000002"),
            "no transcript of Copilot CLI session",
        ),
        // The common payload's key is not Copilot's.
        (
            payload(SID, &dir.join("events.jsonl")),
            "is not a session id",
        ),
    ];
    for (stdin, why) in &cases {
        for sub in ["stop", "session-start"] {
            if sub == "session-start" && why.starts_with("no transcript") {
                continue;
            }
            let (_, err) = ok(&sb, &["hook", sub, "--agent=copilot"], stdin);
            let summary = summary_of(&err);
            let msg = summary["error"].as_str().unwrap_or_default();
            assert!(
                msg.contains(why) && msg.ends_with("nothing written"),
                "{sub} {}: {summary}",
                text(stdin)
            );
        }
    }
    assert!(!sb.log(other).exists());
    assert_eq!(written(&sb), before);
    // `--strict` makes the refusal an exit status.
    let out = run(
        sb.cmd(&["hook", "stop", "--strict", "--agent=copilot"]),
        &copilot_payload(other),
    );
    assert_ne!(out.status.code(), Some(0));
}

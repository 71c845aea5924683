//! `transcope mcp` driven by a real MCP client: the `mcp` Python SDK
//! (`tests/mcp_client.py`), in the Python `TRANSCOPE_TEST_MCP_PYTHON` names —
//! `.ci/py-clients` installs it into a venv under `target/` and prints that path;
//! `.ci/run` does so. Without the variable a test here is skipped with a notice, except
//! under CI (`CI` set, not `false` or `0`), where it fails: the MCP tests must not skip
//! there.
//!
//! Over the sample archive's index, every tool's answer is the CLI's `--json` output
//! for the same question; a bad argument is a tool error (`isError`) and the server
//! answers the next call; no tool syncs the index.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bin, output, parse_json_lines, run, succeeded, testdata, text};
use serde_json::{json, Value};

const PYTHON: &str = "TRANSCOPE_TEST_MCP_PYTHON";
/// The sample session with transitions and markers.
const SESSION: &str = "0f0e0d0c-0000-4000-8000-000000000001";
/// A sample session with usage.
const SPENT: &str = "29ccd257-68b1-427f-ae5f-6524b7cb6f20";
/// The name usage gives this machine, in the CLI and the server alike.
const MACHINE: &str = "mcp-test-box";

/// The Python with the `mcp` package, or `None` (skip) outside CI.
fn python() -> Option<PathBuf> {
    match std::env::var_os(PYTHON).filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            transcope_testkit::missing(
                &format!(
                    "{PYTHON} is not set under CI: the MCP tests must not skip under CI: run \
                     them through .ci/run, or `export {PYTHON}=$(.ci/py-clients)`"
                ),
                &format!(
                    "this test needs the mcp Python SDK; run it with `export {PYTHON}=$(.ci/py-clients)` first"
                ),
            );
            None
        }
    }
}

/// A home holding the sample archive's index, and a user home whose Claude folder
/// holds a transcript no one has read (a sync would find it).
struct Sample {
    _dir: tempfile::TempDir,
    home: PathBuf,
    user: PathBuf,
}

fn sample() -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let user = dir.path().join("user");
    let archive = testdata().join("sample-archive");
    let archive = archive.canonicalize().unwrap();
    succeeded(
        &run(&home, &["backfill", archive.to_str().unwrap()], "", &[]),
        &"backfill",
    );
    let projects = user.join(".claude/projects/-unread");
    std::fs::create_dir_all(&projects).unwrap();
    let claude = archive.join("claude/projects");
    let one = first_file(&claude);
    std::fs::copy(
        &one,
        projects.join("11111111-2222-4333-8444-555555555555.jsonl"),
    )
    .unwrap();
    Sample {
        _dir: dir,
        home,
        user,
    }
}

/// Some root session's `.jsonl` file under `dir` (not a sub-agent's).
fn first_file(dir: &Path) -> PathBuf {
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "jsonl")
                && !p
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("agent-")
            {
                return p;
            }
        }
    }
    panic!("no transcript under {}", dir.display())
}

/// The CLI's output for `args` (no sync: the server reads the index as it is).
fn cli(s: &Sample, args: &[&str], stdin: &str) -> String {
    let out = run(
        &s.home,
        args,
        stdin,
        &[
            ("HOME", s.user.to_str().unwrap()),
            ("TRANSCOPE_MACHINE", MACHINE),
        ],
    );
    succeeded(&out, &args)
}

/// The CLI's NDJSON for `args`, as the array a tool answers.
fn cli_lines(s: &Sample, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--json", "--no-sync"]);
    Value::Array(parse_json_lines(&cli(s, &a, "")))
}

/// The CLI's one JSON object for `args`.
fn cli_object(s: &Sample, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--json", "--no-sync"]);
    serde_json::from_str(&cli(s, &a, "")).unwrap()
}

/// Run the client over `transcope --home HOME mcp` with `env` for the server: the
/// tools listed and each call's answer.
fn client(python: &Path, s: &Sample, env: Value, calls: &[(&str, Value)]) -> Value {
    let plan = json!({
        "command": bin(),
        "args": ["--home", s.home, "mcp"],
        "env": env,
        "calls": calls.iter().map(|(n, a)| json!({"name": n, "arguments": a})).collect::<Vec<_>>(),
    });
    let mut cmd = Command::new(python);
    cmd.arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py"));
    let out = output(cmd, plan.to_string().as_bytes());
    assert!(
        out.status.success(),
        "the MCP client failed: {}",
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A call's answer, which must not be an error, as JSON.
fn answer(call: &Value) -> Value {
    assert_eq!(call["is_error"], false, "{call}");
    let texts = call["text"].as_array().unwrap();
    assert_eq!(texts.len(), 1, "{call}");
    serde_json::from_str(texts[0].as_str().unwrap()).unwrap()
}

/// A call's error text, which must be a tool error.
fn tool_error(call: &Value) -> String {
    assert_eq!(call["is_error"], true, "not a tool error: {call}");
    call["text"][0].as_str().unwrap().to_owned()
}

fn server_env(s: &Sample, session: Option<&str>) -> Value {
    let mut env = json!({
        "HOME": s.user,
        "TRANSCOPE_MACHINE": MACHINE,
    });
    if let Some(id) = session {
        env["CLAUDE_CODE_SESSION_ID"] = json!(id);
    }
    env
}

/// Every tool is listed with an agent-readable description and a strict schema, and
/// each answers what its command prints with `--json` over the same index.
#[test]
fn each_tool_answers_what_its_command_prints_as_json() {
    let Some(python) = python() else { return };
    let s = sample();
    let timeline = cli_lines(&s, &["timeline", "--session", SESSION]);
    let marker_at = timeline
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == "marker" && i["type"] == "signal")
        .expect("a signal in the sample")["at"]
        .as_str()
        .unwrap()
        .to_owned();
    let calls: Vec<(&str, Value)> = vec![
        ("sessions", json!({})),
        (
            "sessions",
            json!({"since": "2025-10-01", "until": "2026-10-08T10:00:00Z"}),
        ),
        ("timeline", json!({})),
        ("timeline", json!({"session": SPENT})),
        ("ledger", json!({})),
        (
            "ledger",
            json!({"type": "lesson", "session": SESSION, "pending": true}),
        ),
        ("usage", json!({})),
        (
            "usage",
            json!({"by": ["session", "model", "day", "machine"]}),
        ),
        (
            "usage",
            json!({"by": ["root-session"], "since": "2025-10-01"}),
        ),
        ("explain", json!({"at": marker_at, "grant": ""})),
        (
            "explain",
            json!({"session": SPENT, "at": "2030-01-01T00:00:00Z"}),
        ),
        ("current_scope", json!({"at": marker_at})),
        ("current_scope", json!({})),
        ("status", json!({})),
        ("status", json!({"session": SPENT})),
        ("ledger", json!({"branch": "two"})),
        ("sessions", json!({"agent": "codex"})),
    ];
    let got = client(&python, &s, server_env(&s, Some(SESSION)), &calls);
    assert_eq!(got["server"], "transcope");

    // Listed: each tool, read-only, its schema closed and every argument described.
    let tools = got["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "current_scope",
            "explain",
            "sessions",
            "timeline",
            "ledger",
            "usage",
            "status"
        ]
    );
    for t in tools {
        assert!(t["description"].as_str().unwrap().len() > 80, "{t}");
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert_eq!(schema["additionalProperties"], false, "{t}");
        for (name, p) in schema["properties"].as_object().unwrap() {
            assert!(
                p["description"].as_str().is_some_and(|d| d.len() > 10),
                "{}: {name} undescribed",
                t["name"]
            );
        }
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["at"]));

    let answers: Vec<Value> = got["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(answer)
        .collect();
    let want = [
        cli_lines(&s, &["sessions"]),
        cli_lines(
            &s,
            &[
                "sessions",
                "--since",
                "2025-10-01",
                "--until",
                "2026-10-08T10:00:00Z",
            ],
        ),
        timeline.clone(),
        cli_lines(&s, &["timeline", "--session", SPENT]),
        cli_lines(&s, &["ledger"]),
        cli_lines(
            &s,
            &[
                "ledger",
                "--type",
                "lesson",
                "--session",
                SESSION,
                "--pending",
            ],
        ),
        cli_lines(&s, &["usage"]),
        cli_lines(
            &s,
            &[
                "usage", "--by", "session", "--by", "model", "--by", "day", "--by", "machine",
            ],
        ),
        cli_lines(
            &s,
            &["usage", "--by", "root-session", "--since", "2025-10-01"],
        ),
        cli_object(
            &s,
            &[
                "explain",
                "--session",
                SESSION,
                "--at",
                &marker_at,
                "--grant",
                "",
            ],
        ),
        cli_object(
            &s,
            &[
                "explain",
                "--session",
                SPENT,
                "--at",
                "2030-01-01T00:00:00Z",
            ],
        ),
    ];
    for (i, w) in want.iter().enumerate() {
        assert_eq!(&answers[i], w, "call {i}: {:?}", calls[i]);
    }
    // The answers are not empty where the sample has rows.
    for i in [0, 2, 4, 5, 6, 7] {
        assert!(
            !answers[i].as_array().unwrap().is_empty(),
            "call {i} is empty"
        );
    }
    assert_eq!(answers[7][0]["machine"], MACHINE);
    assert_eq!(answers[9]["markers"][0]["type"], "signal");
    assert!(answers[9]["grant"]["admits"].is_boolean());

    // The scope in force: `scope at`'s object, for the session the agent named.
    for i in [11, 12] {
        let a = &answers[i];
        assert_eq!(a["session"], SESSION);
        let at = a["at"].as_str().unwrap();
        let scope: Value = serde_json::from_str(&cli(
            &s,
            &["scope", "at", "--session", SESSION, "--at", at],
            "",
        ))
        .unwrap();
        assert_eq!(a["scope"], scope, "call {i}");
    }
    assert_eq!(answers[11]["scope"]["cwd"], "/work/beta");

    // The status line's figures: `statusline --json`'s, but for the moment read.
    for (i, session) in [(13, SESSION), (14, SPENT)] {
        let payload = json!({"session_id": session}).to_string();
        let mut line: Value =
            serde_json::from_str(&cli(&s, &["statusline", "--json"], &payload)).unwrap();
        let mut a = answers[i].clone();
        for v in [&mut line, &mut a] {
            v.as_object_mut().unwrap().remove("at");
        }
        assert_eq!(a, line, "status of {session}");
    }
    assert!(answers[14]["session_cost_usd"].as_f64().unwrap() > 0.0);

    // A branch's markers: those written while it was in force, and only those.
    let two = cli_lines(&s, &["ledger", "--branch", "two"]);
    assert_eq!(answers[15], two);
    let rows = two.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{two}");
    assert!(rows.iter().all(|r| r["branch"] == "two"), "{two}");

    // One agent's sessions.
    let codex = cli_lines(&s, &["sessions", "--agent", "codex"]);
    assert_eq!(answers[16], codex);
    let rows = codex.as_array().unwrap();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r["agent"] == "codex"),
        "{codex}"
    );
}

/// A bad argument, a missing one, an unknown tool or argument: each a tool error that
/// says what was wrong, and the server answers the next call.
#[test]
fn a_bad_argument_is_a_tool_error_and_the_server_keeps_serving() {
    let Some(python) = python() else { return };
    let s = sample();
    let calls: Vec<(&str, Value)> = vec![
        ("usage", json!({"by": ["colour"]})),
        ("sessions", json!({})),
        ("sessions", json!({"since": "last tuesday"})),
        ("explain", json!({"session": SESSION})),
        ("ledger", json!({"pending": "yes"})),
        ("timeline", json!({"session": SESSION, "colour": "red"})),
        ("current_scope", json!({"session": "../../etc/passwd"})),
        ("nope", json!({})),
        ("timeline", json!({})),
        ("current_scope", json!({})),
        ("ledger", json!({"type": "lesson"})),
    ];
    let got = client(&python, &s, server_env(&s, None), &calls);
    let c = got["calls"].as_array().unwrap();
    assert_eq!(c.len(), calls.len());
    let says = |i: usize, words: &[&str]| {
        let e = tool_error(&c[i]);
        for w in words {
            assert!(e.contains(w), "call {i} said {e:?}, not {w:?}");
        }
    };
    says(0, &["\"by\"", "colour", "root-session"]);
    assert!(!answer(&c[1]).as_array().unwrap().is_empty());
    says(2, &["\"since\"", "last tuesday", "not a time"]);
    says(3, &["\"at\"", "required"]);
    says(4, &["\"pending\"", "true or false"]);
    says(5, &["\"colour\"", "timeline takes no such argument"]);
    says(6, &["not a session id"]);
    says(7, &["no tool \"nope\"", "sessions"]);
    // No session given, and none in the environment: say which variable was read.
    says(8, &["\"session\"", "CLAUDE_CODE_SESSION_ID"]);
    says(9, &["\"session\"", "CLAUDE_CODE_SESSION_ID"]);
    // Still serving.
    assert_eq!(
        answer(&c[10]),
        cli_lines(&s, &["ledger", "--type", "lesson"])
    );
}

/// No tool syncs: a transcript in the agents' folders that no Stop or backfill read is
/// not in the answers (the query command itself would read it first), and the index is
/// left as it was; with no index at all a tool says how to make one.
#[test]
fn no_tool_syncs_the_index_or_makes_one() {
    let Some(python) = python() else { return };
    let s = sample();
    let before = cli_lines(&s, &["sessions"]);
    let got = client(
        &python,
        &s,
        server_env(&s, None),
        &[
            ("sessions", json!({})),
            (
                "timeline",
                json!({"session": "11111111-2222-4333-8444-555555555555"}),
            ),
        ],
    );
    let c = got["calls"].as_array().unwrap();
    assert_eq!(answer(&c[0]), before);
    assert_eq!(answer(&c[1]), json!([]));
    // The query command syncs first, and finds it.
    let synced = Value::Array(parse_json_lines(&cli(&s, &["sessions", "--json"], "")));
    assert_eq!(
        synced.as_array().unwrap().len(),
        before.as_array().unwrap().len() + 1
    );

    let empty = Sample {
        home: s.home.with_file_name("no-home"),
        ..sample()
    };
    let got = client(
        &python,
        &empty,
        server_env(&empty, None),
        &[("sessions", json!({}))],
    );
    let e = tool_error(&got["calls"][0]);
    assert!(
        e.contains("no index at") && e.contains("transcope backfill"),
        "{e}"
    );
    assert!(!empty.home.join("transcope/index.sqlite").exists());
}

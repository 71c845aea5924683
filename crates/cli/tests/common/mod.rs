//! Shared helpers of the CLI tests: run the real binary in a clean environment.
//! [`reliability`] adds what the reliability and security tests need (sandboxed
//! homes, measured and killed children, scope-log invariants, fleet helpers).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub mod reliability;

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `testdata/`.
pub fn testdata() -> PathBuf {
    workspace().join("testdata")
}

/// The `transcope` binary cargo built for these tests (`CARGO_BIN_EXE_transcope`), or
/// the one `TRANSCOPE_BIN` names when it is set and not empty (to test another build).
pub fn bin() -> PathBuf {
    match std::env::var_os("TRANSCOPE_BIN").filter(|p| !p.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_BIN_EXE_transcope")),
    }
}

/// Run `transcope --home HOME ARGS` with `stdin`, the agentihooks variables of the
/// test process removed and `env` set.
pub fn run(home: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.arg("--home").arg(home).args(args);
    clean_env(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    output(cmd, stdin.as_bytes())
}

/// Run `c` with `stdin` (fed from another thread: the child may stop reading early, a
/// capped payload, and a broken pipe is fine), collecting its output.
pub fn output(mut c: Command, stdin: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning transcope");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    out
}

/// The standard output of `out`, which must have succeeded (`what` names it when not).
pub fn succeeded(out: &Output, what: &dyn std::fmt::Debug) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A copy of the tree at `from` as `to` (created, with its parents).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// Every path under `dir`, relative, sorted (symbolic links not followed).
pub fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Remove from `cmd`'s environment every variable of agentihooks, the brain writer and
/// the agents' folders (each registered agent's declared home variable, and every
/// variable a layout asks for its default folders) that the test process may have: a
/// test sets what it means.
pub fn clean_env(cmd: &mut Command) {
    let adapters = transcope::compose::adapters();
    for (_, hooks) in adapters.hooks() {
        cmd.env_remove(hooks.home.var);
    }
    // Asked with every variable unset, a layout asks for each it could use.
    let asked = std::cell::RefCell::new(Vec::new());
    let lookup = |k: &str| {
        asked.borrow_mut().push(k.to_owned());
        None
    };
    for (_, layout) in adapters.layouts() {
        layout.default_roots(&lookup, std::path::Path::new("/"));
    }
    for k in asked.into_inner() {
        cmd.env_remove(k);
    }
    for k in [
        "AGENTIHOOKS_HOME",
        "AGENTIHOOKS_PROJECT_ID",
        "AGENTIHOOKS_SWARM",
        "AGENTIHOOKS_SWARM_TASK",
        "AGENTIHOOKS_SWARM_LANE",
        "AGENTIHOOKS_SESSION_SCOPE",
        "AGENTICORE_AGENT_NAME",
        "BRAIN_WRITER_ENABLED",
        "BRAIN_URL",
        "BRAIN_WRITER_OUTBOX",
        "BRAIN_WRITER_MAX_MARKERS",
        "CLAUDE_PROJECT_DIR",
        "TRANSCOPE",
        "TRANSCOPE_FLEET_URL",
        "TRANSCOPE_MACHINE",
    ] {
        cmd.env_remove(k);
    }
}

/// Each line of `s` (a command's `--json` output, a JSONL file) as a JSON value.
pub fn parse_json_lines(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `usage --by session --json` rows as session → (total tokens, messages).
pub fn tokens_and_messages_by_session(
    rows: &[serde_json::Value],
) -> std::collections::BTreeMap<String, (u64, u64)> {
    rows.iter()
        .map(|v| {
            let n = |k: &str| v[k].as_u64().unwrap();
            let session = v["session"].as_str().unwrap().to_owned();
            (session, (n("total_tokens"), n("messages")))
        })
        .collect()
}

/// `timeline --json` items as (kind, at).
pub fn kinds_and_times(items: &[serde_json::Value]) -> Vec<(&str, &str)> {
    items
        .iter()
        .map(|i| (i["kind"].as_str().unwrap(), i["at"].as_str().unwrap()))
        .collect()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Append, to the first `n` Claude transcripts under `dir` (in path order) that have
/// one, a later line of their first assistant request counting 1000 more output
/// tokens — a streamed answer read mid-stream, then whole (the index keeps the
/// largest count). Returns how many it grew.
pub fn grow_streamed_requests(dir: &Path, n: usize) -> usize {
    let mut files = Vec::new();
    transcope_testkit::jsonl_files(dir, &mut files);
    files.sort();
    let mut grown = 0;
    for f in &files {
        if grown == n {
            break;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let Some(line) = text
            .lines()
            .find(|l| l.contains("\"output_tokens\"") && l.contains("\"assistant\""))
        else {
            continue;
        };
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(out) = v.pointer_mut("/message/usage/output_tokens") else {
            continue;
        };
        *out = serde_json::json!(out.as_u64().unwrap() + 1000);
        let mut text = text;
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&v.to_string());
        text.push('\n');
        std::fs::write(f, text).unwrap();
        grown += 1;
    }
    grown
}

//! Differential tests against Python itself: for generated scopes (non-ASCII, quotes,
//! backslashes, controls, emoji, astral characters) the appended row bytes and the
//! `transition_id` equal what `json.dumps` and `hashlib` produce.

use std::io::Write;
use std::process::{Command, Stdio};

use transcope_core::{Scope, ScopeField};
use transcope_scopelog::ScopeLog;
use transcope_testkit::python311;

const POOL: &[&str] = &[
    "a",
    "Z",
    "0",
    " ",
    "/",
    "\"",
    "'",
    "\\",
    "\n",
    "\r",
    "\t",
    "\u{8}",
    "\u{c}",
    "\u{0}",
    "\u{1}",
    "\u{1f}",
    "\u{7f}",
    "\u{80}",
    "é",
    "ß",
    "中",
    "😀",
    "𝄞",
    "\u{2028}",
    "\u{feff}",
    "\u{ffff}",
    "\u{10ffff}",
    "-",
    ".",
    "<",
    ">",
    "&",
];

const PY: &str = r#"
import sys, json, hashlib
FIELDS = ["project_id","project","repo","worktree","cwd","remote","branch","swarm","task","task_revision","lane"]
for line in sys.stdin:
    sid, at, scope = json.loads(line)
    tid = hashlib.sha256(json.dumps([sid, at, scope], sort_keys=True).encode()).hexdigest()
    row = {"session_id": sid, "sequence": 0, "at": at, "transition_id": tid}
    for k in FIELDS:
        row[k] = scope[k]
    print(json.dumps(json.dumps(row) + "\n"))
"#;

#[test]
fn rows_and_transition_ids_equal_pythons() {
    if !python311() {
        return;
    }
    let mut rng = transcope_testkit::Rng::new(42);
    let home = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for i in 0..400 {
        let mut scope = Scope::default();
        for f in ScopeField::ALL {
            if rng.index(3) == 0 {
                continue;
            }
            let n = rng.index(8);
            let v: String = (0..n).map(|_| POOL[rng.index(POOL.len())]).collect();
            scope.set(f, v);
        }
        let at = [
            "2026-10-08T10:00:00Z",
            "2026-10-08T10:00:00.123456+00:00",
            "2026-10-08 10:00",
            "20261008T100000+0530",
        ][rng.index(4)];
        cases.push((format!("s{i}.x-{}", rng.index(1000)), at.to_owned(), scope));
    }
    let mut child = Command::new("python3")
        .args(["-c", PY])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        for (sid, at, scope) in &cases {
            let v = serde_json::json!([sid, at, serde_json::Value::Object(scope.to_json_map())]);
            writeln!(stdin, "{v}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<String>(l).unwrap())
        .collect();
    assert_eq!(lines.len(), cases.len());
    for ((sid, at, scope), want) in cases.iter().zip(lines) {
        let log = ScopeLog::open(home.path(), sid.clone());
        log.record(scope, at, None).unwrap().unwrap();
        let got = std::fs::read(log.path().unwrap()).unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{scope:?}");
    }
}

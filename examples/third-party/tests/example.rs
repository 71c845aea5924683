//! The example run for real: the built binary over a copy of the bundled fixtures,
//! its output asserted, then run again over the same bytes (the cursor store: nothing
//! new) and over appended bytes (the activity stage resumes from its checkpoint and
//! counts what one pass over the whole file counts).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

const PLOG: &str = "plainlog/logs/pl-0001.plog";
const CLAUDE: &str = "claude/projects/-work-gamma/5d3c2b1a-0000-4000-8000-00000000000a.jsonl";

/// A copy of the bundled fixtures under `dir` (the tests append to it).
fn fixtures_in(dir: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let dst = to.join(p.file_name().unwrap());
            if p.is_dir() {
                copy(&p, &dst);
            } else {
                std::fs::copy(&p, &dst).unwrap();
            }
        }
    }
    let to = dir.join("fixtures");
    copy(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"), &to);
    to
}

fn example(home: &Path, args: &[&str], paths: &[&Path]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_transcope-example-third-party"))
        .arg("--home")
        .arg(home)
        .args(args)
        .args(paths)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The `--json` lines, by the transcript's path relative to `root`.
fn runs(home: &Path, root: &Path) -> Vec<(String, Value)> {
    example(home, &["--json"], &[root])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let path = Path::new(v["path"].as_str().unwrap());
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            (rel, v)
        })
        .collect()
}

fn append(path: &Path, lines: &[&str]) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    for l in lines {
        f.write_all(format!("{l}\n").as_bytes()).unwrap();
    }
}

#[test]
fn the_binary_reports_each_transcript_then_nothing_new() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures_in(dir.path());
    let home = dir.path().join("home");
    let first = example(&home, &[], &[&root]);
    let want = format!(
        "{root}/{CLAUDE}
  claude session 5d3c2b1a-0000-4000-8000-00000000000a: read 2 entries, 439 bytes (from the start)
    /work/gamma: messages 2, tool calls 0, words 6
{root}/{PLOG}
  plainlog session pl-0001: read 7 entries, 607 bytes (from the start)
    /work/alpha: messages 3, tool calls 1, words 11
    /work/beta: messages 1, tool calls 1, words 7
",
        root = root.display()
    );
    assert_eq!(first, want);

    // The same bytes again: the cursor store has them all; the stage is not run.
    let again = example(&home, &[], &[&root]);
    assert_eq!(
        again,
        format!(
            "{root}/{CLAUDE}\n  claude session 5d3c2b1a-0000-4000-8000-00000000000a: up to date\n\
             {root}/{PLOG}\n  plainlog session pl-0001: up to date\n",
            root = root.display()
        )
    );
}

#[test]
fn appended_bytes_resume_from_the_stage_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixtures_in(dir.path());
    let home = dir.path().join("home");
    let first = runs(&home, &root);
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|(_, v)| v["resumed"] == false));

    // No `in` on the first new line: it happened in /work/beta, the folder in force,
    // which only the restored checkpoint knows.
    append(
        &root.join(PLOG),
        &[
            r#"{"t":"2026-05-01T09:03:00Z","who":"tool","tool":"test","say":"1 passed"}"#,
            r#"{"t":"2026-05-01T09:04:00Z","in":"/work/gamma","who":"agent","say":"All green now."}"#,
        ],
    );
    let second = runs(&home, &root);
    let (claude, plog) = (&second[0], &second[1]);
    assert_eq!(claude.0, CLAUDE);
    assert_eq!(claude.1["up_to_date"], true);
    assert_eq!(plog.0, PLOG);
    assert_eq!(plog.1["resumed"], true);
    assert_eq!(plog.1["entries"], 2);
    assert_eq!(
        plog.1["activity"],
        json!({
            "/work/alpha": {"messages": 3, "tool_calls": 1, "words": 11},
            "/work/beta": {"messages": 1, "tool_calls": 2, "words": 7},
            "/work/gamma": {"messages": 1, "tool_calls": 0, "words": 3},
        })
    );

    // Exactly what one pass over the whole file counts, in a home with no cursors.
    let fresh = runs(&dir.path().join("fresh"), &root);
    assert_eq!(fresh[1].1["resumed"], false);
    assert_eq!(fresh[1].1["activity"], plog.1["activity"]);
}

#[test]
fn a_plain_log_without_a_header_is_named_by_no_session_and_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("headless.plog");
    std::fs::write(
        &bad,
        r#"{"t":"2026-05-01T09:00:01Z","who":"human","say":"hi"}"#,
    )
    .unwrap();
    let runs = transcope_example_third_party::run(&dir.path().join("home"), &[bad]).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].layout, Some("plainlog"));
    assert_eq!(runs[0].key, Err("the plain log has no header".to_owned()));
    assert_eq!((runs[0].entries, runs[0].activity.is_none()), (0, true));
}

//! `transcope report` through the real binary: where it writes, what it syncs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::testdata;
use serde_json::Value;

/// The binary with a fresh `$HOME` (`user`) whose Claude and Codex folders are
/// `archive`'s (none when `None`).
fn transcope(home: &Path, user: &Path, archive: Option<&Path>, args: &[&str]) -> Output {
    let a = archive.map_or_else(|| user.to_path_buf(), Path::to_path_buf);
    let (claude, codex) = (a.join("claude"), a.join("codex"));
    let env = [
        ("HOME", user.to_str().unwrap()),
        ("GEMINI_CLI_HOME", user.to_str().unwrap()),
        ("CLAUDE_CONFIG_DIR", claude.to_str().unwrap()),
        ("CODEX_HOME", codex.to_str().unwrap()),
    ];
    common::run(home, args, "", &env)
}

fn json_lines(o: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_unwritable_path_is_a_clear_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let missing = dir.path().join("missing").join("r.html");
    let under_file = file.join("r.html");
    let cases: Vec<(PathBuf, &str)> = vec![
        (missing.clone(), "is not a folder"),
        (under_file, "is not a folder"),
        (dir.path().to_path_buf(), "it is a folder"),
    ];
    for (path, says) in cases {
        let o = transcope(
            &home,
            dir.path(),
            None,
            &["report", "--no-sync", "--html", path.to_str().unwrap()],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{path:?}: {err}");
        assert!(err.contains("cannot write the report to"), "{err}");
        assert!(err.contains(says), "{path:?}: {err}");
    }
    assert!(!missing.parent().unwrap().exists());
    // A folder that refuses the file (even to root): the write's own error, said once.
    if Path::new("/proc/self").is_dir() {
        let o = transcope(
            &home,
            dir.path(),
            None,
            &["report", "--no-sync", "--html", "/proc/self/report.html"],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(
            err.starts_with("transcope: writing the report to /proc/self/report.html: "),
            "{err}"
        );
    }
}

/// Issue 34: without `--html` the report is `transcope-report.html` in the current
/// folder, and the path written is the first thing printed.
#[test]
fn issue34_report_without_html_writes_transcope_report_html_here_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (home, user, here) = (
        dir.path().join("home"),
        dir.path().join("user"),
        dir.path().join("here"),
    );
    std::fs::create_dir_all(&here).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_transcope"));
    cmd.arg("--home")
        .arg(&home)
        .args(["report", "--no-sync"])
        .current_dir(&here)
        .env("HOME", &user);
    common::clean_env(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let said = common::text(&out.stdout);
    assert!(
        said.starts_with("transcope-report.html: 0 sessions, "),
        "{said}"
    );
    let page = std::fs::read_to_string(here.join("transcope-report.html")).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page:.100}");
}

#[test]
fn no_sync_on_an_empty_home_writes_an_empty_report() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let out = dir.path().join("r.html");
    let o = transcope(
        &home,
        dir.path(),
        Some(&testdata().join("sample-archive")),
        &[
            "report",
            "--no-sync",
            "--json",
            "--html",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = &json_lines(&o)[0];
    // --no-sync: the archive the environment names was not read.
    assert_eq!(summary["sessions"], 0);
    assert_eq!(summary["markers"], 0);
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.contains("default-src 'none'"));
    assert_eq!(summary["bytes"].as_u64(), Some(page.len() as u64));
}

#[test]
fn report_syncs_the_archive_first_and_counts_what_the_queries_count() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let out = dir.path().join("r.html");
    let archive = testdata().join("sample-archive");
    let o = transcope(
        &home,
        dir.path(),
        Some(&archive),
        &["report", "--json", "--html", out.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = &json_lines(&o)[0];
    let sessions = json_lines(&transcope(
        &home,
        dir.path(),
        None,
        &["sessions", "--json", "--no-sync"],
    ));
    let ledger = json_lines(&transcope(
        &home,
        dir.path(),
        None,
        &["ledger", "--json", "--no-sync"],
    ));
    assert!(!sessions.is_empty());
    assert_eq!(summary["sessions"].as_u64(), Some(sessions.len() as u64));
    let transitions: u64 = sessions
        .iter()
        .map(|s| s["transitions"].as_u64().unwrap())
        .sum();
    assert_eq!(summary["transitions"].as_u64(), Some(transitions));
    assert_eq!(summary["markers"].as_u64(), Some(ledger.len() as u64));
    assert_eq!(summary["not_drawn"], 0);
    // A window after everything keeps nothing; a reversed one is a usage error.
    let windowed = |window: &[&str]| {
        let mut args = vec!["report", "--no-sync", "--json", "--html"];
        args.push(out.to_str().unwrap());
        args.extend(window);
        transcope(&home, dir.path(), None, &args)
    };
    let o = windowed(&["--since", "2099-01-01"]);
    assert!(o.status.success());
    assert_eq!(json_lines(&o)[0]["sessions"], 0);
    let o = windowed(&["--since", "2026-02-01", "--until", "2026-01-01"]);
    assert_eq!(o.status.code(), Some(2));
}

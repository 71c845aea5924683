//! The README's set-up, run as a newcomer would: the fenced block marked `sh setup`
//! and the one marked `sh demo`, exactly as written, in a fresh copy of the repository
//! (its tracked and not-ignored files) with a new HOME; then what the README says they
//! print is checked against what they printed.
//!
//! `cargo install` builds in release: the target folder is this build's (so a second
//! run rebuilds nothing), the registry cache the machine's, and the install root the
//! new HOME's `~/.cargo`, where the README says the binary lands.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The lines of the fenced block whose info string is `info`.
fn block(readme: &str, info: &str) -> String {
    let fence = format!("```{info}");
    let mut lines = readme.lines().skip_while(|l| l.trim() != fence);
    assert!(lines.next().is_some(), "the README has a ```{info} block");
    let body: Vec<&str> = lines.take_while(|l| l.trim() != "```").collect();
    body.join("\n") + "\n"
}

/// The plain block (no info string) that follows the first line containing `after`.
fn text_block_after(readme: &str, after: &str) -> Vec<String> {
    let mut lines = readme.lines().skip_while(|l| !l.contains(after));
    lines.next().expect("the README says it");
    let mut lines = lines.skip_while(|l| l.trim() != "```");
    lines.next();
    lines
        .take_while(|l| l.trim() != "```")
        .map(str::to_owned)
        .collect()
}

/// Copy the repository's files (tracked, and untracked but not ignored) into `to`.
fn fresh_copy(to: &Path) {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(repo())
        .output()
        .expect("git");
    assert!(out.status.success());
    for name in out.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let rel = Path::new(std::str::from_utf8(name).unwrap());
        let from = repo().join(rel);
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&from, &dest).unwrap();
    }
}

/// This build's target folder (`…/target` of `…/target/debug/transcope`).
fn target_dir() -> PathBuf {
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(t);
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_transcope"));
    bin.parent().unwrap().parent().unwrap().to_path_buf()
}

fn real_home() -> PathBuf {
    PathBuf::from(std::env::var_os("HOME").expect("HOME"))
}

/// `bash -eu -o pipefail -c SCRIPT` in `dir` with HOME `home`, as a new user has it.
fn run_script(script: &str, dir: &Path, home: &Path) -> (bool, String, String) {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home().join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home().join(".rustup"));
    let mut cmd = Command::new("bash");
    cmd.args(["-eu", "-o", "pipefail", "-c", script])
        .current_dir(dir)
        .env("HOME", home)
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .env("CARGO_INSTALL_ROOT", home.join(".cargo"))
        .env("CARGO_TARGET_DIR", target_dir())
        .env("TMPDIR", home)
        .env("TZ", "UTC");
    common::clean_env(&mut cmd);
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `"key": "value"` pairs of a (possibly shortened) scope-log line.
fn field(line: &str, key: &str) -> Option<String> {
    let at = line.find(&format!("\"{key}\": "))? + key.len() + 4;
    let rest = &line[at..];
    let end = rest.find([',', '}'])?;
    Some(rest[..end].trim().trim_matches('"').to_owned())
}

fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_readme_set_up_runs_as_written_and_prints_what_it_says() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let setup = block(&readme, "sh setup");
    assert!(setup.starts_with("cargo install --locked --path crates/cli\n"));

    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("transcope");
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    fresh_copy(&copy);

    let (ok, stdout, stderr) = run_script(&setup, &copy, &home);
    assert!(ok, "the set-up block failed:\n{stdout}\n{stderr}");

    // Installed where the README says, a release build under 15 MB (issue 16), and
    // wired into Claude Code's settings.
    let installed = home.join(".cargo/bin/transcope");
    let size = std::fs::metadata(&installed).expect("installed").len();
    assert!(size < 15 << 20, "the release binary is {size} bytes");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        "transcope hook stop"
    );
    assert!(
        stderr.contains("transcope: Claude Code: wired SessionStart, Stop, SubagentStop in "),
        "{stderr}"
    );

    // doctor: `ok` before every check.
    let doctor: Vec<&str> = stdout
        .lines()
        .take_while(|l| !l.starts_with('{'))
        .filter(|l| !l.starts_with("      fix:"))
        .collect();
    assert!(doctor.len() >= 6, "{stdout}");
    for l in &doctor {
        assert!(l.starts_with("ok "), "doctor: {l}\n{stdout}");
    }

    // The backfill summary, as the README shows it, but for its time and speed.
    let said = text_block_after(&readme, "ends with its summary on stderr");
    let said = said[0].split(", 0 errors,").next().unwrap().to_owned();
    assert!(stderr.contains(&said), "README: {said}\nprinted: {stderr}");

    // The scope log: four rows, the folders and branches the README lists.
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with('{')).collect();
    let said = text_block_after(&readme, "The last command prints the sample session");
    assert_eq!(rows.len(), said.len(), "{stdout}");
    for (row, claim) in rows.iter().zip(&said) {
        let v: Value = serde_json::from_str(row).unwrap();
        for key in ["sequence", "at", "cwd", "branch", "remote"] {
            if let Some(want) = field(claim, key) {
                assert_eq!(v[key].to_string().trim_matches('"'), want, "{key}: {row}");
            }
        }
        // Exactly what it shows: no project, worktree or task resolves.
        for key in ["project_id", "worktree", "task"] {
            assert_eq!(v[key], "", "{key}: {row}");
        }
    }

    // The demo: two worktrees and two tasks, its timeline as the README shows it.
    let demo = block(&readme, "sh demo");
    let path = format!(
        "{}:{}",
        home.join(".cargo/bin").display(),
        std::env::var("PATH").unwrap()
    );
    let (ok, stdout, stderr) = run_script(&format!("export PATH='{path}'\n{demo}"), &copy, &home);
    assert!(ok, "the demo block failed:\n{stdout}\n{stderr}");
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("== everything is under "))
        .expect("the demo says where it worked")
        .to_owned();
    let printed: Vec<String> = stdout
        .lines()
        .skip_while(|l| *l != "== timeline")
        .skip(1)
        .take_while(|l| !l.starts_with("== "))
        .map(|l| squash(&l.replace(&dir, "/tmp/transcope-demo.…")))
        .collect();
    let said: Vec<String> = text_block_after(&readme, "It prints the scope log and this timeline")
        .iter()
        .map(|l| squash(l))
        .filter(|l| !l.starts_with("===="))
        .collect();
    let printed: Vec<String> = printed
        .into_iter()
        .filter(|l| !l.starts_with("===="))
        .collect();
    assert_eq!(printed, said);
}

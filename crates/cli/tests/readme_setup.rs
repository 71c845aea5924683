//! The README's first screen, run as a newcomer would (issue 34): the fenced block
//! marked `sh try`, exactly as written, in a fresh copy of the repository with a HOME
//! that holds a real-looking Claude Code set-up of its own (settings with an `env`
//! block and hooks, and a transcript); then what the README says it prints is compared
//! with what it printed, and the HOME is checked to be exactly as it was. The `sh test`
//! block is checked to be what CI runs (running it here would run this test again).
//! The `sh demo` block runs too, with this build's binary as the installed `transcope`.
//!
//! `sh try` builds with `cargo run -q -p transcope` (debug): in the copy, with its files'
//! times kept and this build's target folder, that is the binary this test was built
//! with, so the test builds nothing a second time, as a user's `cargo test` after the
//! try-out does not.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

const SESSION: &str = "0f0e0d0c-0000-4000-8000-000000000001";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The lines of the fenced block whose info string is `info`.
fn block(readme: &str, info: &str) -> String {
    let fence = format!("```{info}");
    let mut lines = readme.lines().skip_while(|l| l.trim() != fence);
    assert!(lines.next().is_some(), "the README has a ```{info} block");
    let body: Vec<&str> = lines.take_while(|l| l.trim() != "```").collect();
    body.join("\n") + "\n"
}

/// The plain block (no info string) that follows the first line containing `after`
/// (a fenced block's own closing fence included).
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

/// Copy the repository's files (tracked, and untracked but not ignored) into `to`,
/// their modification times kept (as `cp -p` keeps them).
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
        let modified = std::fs::metadata(&from).unwrap().modified().unwrap();
        std::fs::File::options()
            .write(true)
            .open(&dest)
            .unwrap()
            .set_modified(modified)
            .unwrap();
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

/// `bash -eu -o pipefail -c SCRIPT` in `dir` with HOME `home`, as a new user has it
/// (the machine's toolchain and registry cache, this build's target folder), with
/// `path` before the PATH.
fn run_script(script: &str, dir: &Path, home: &Path, path: &Path) -> (bool, String, String) {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home().join(".cargo"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| real_home().join(".rustup"));
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = Command::new("bash");
    cmd.args(["-eu", "-o", "pipefail", "-c", script])
        .current_dir(dir)
        .env("HOME", home)
        .env("CARGO_HOME", cargo_home)
        .env("RUSTUP_HOME", rustup_home)
        .env("CARGO_TARGET_DIR", target_dir())
        .env(
            "PATH",
            format!("{}:{}", path.display(), std::env::var("PATH").unwrap()),
        )
        .env("TMPDIR", &tmp)
        .env("TZ", "UTC");
    common::clean_env(&mut cmd);
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every file under `dir` with its bytes, sorted.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

/// A HOME as a Claude Code user has it: settings with an `env` block and hooks of
/// their own, and one transcript of their own under `~/.claude/projects`.
fn users_home(home: &Path) -> PathBuf {
    let settings = home.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "env": {
    "ANTHROPIC_MODEL": "claude-opus-4-7",
    "DISABLE_TELEMETRY": "1"
  },
  "permissions": {
    "allow": ["Bash(git status:*)", "Read(~/notes/**)"]
  },
  "hooks": {
    "Stop": [
      {
        "hooks": [
          { "type": "command", "command": "notify-send 'Claude is done'" }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{ "type": "command", "command": "~/bin/guard.sh" }]
      }
    ]
  },
  "statusLine": { "type": "command", "command": "~/bin/status.sh" }
}
"#,
    )
    .unwrap();
    let own = "7d3f1c2a-5b6e-4f80-9a1b-2c3d4e5f6a7b";
    let transcript = home.join(format!(".claude/projects/-home-me-work-shop/{own}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let line = |t: &str, branch: &str, text: &str| {
        format!(
            r#"{{"type": "assistant", "sessionId": "{own}", "timestamp": "2026-11-02T{t}Z", "cwd": "/home/me/work/shop", "gitBranch": "{branch}", "message": {{"role": "assistant", "content": [{{"type": "text", "text": "{text}"}}]}}}}"#
        ) + "\n"
    };
    std::fs::write(
        &transcript,
        line("08:00:00", "main", "Looking at the checkout.")
            + &line(
                "08:30:00",
                "fix-cart",
                "<!-- @lesson -->Mine, not the sample's.<!-- @/lesson -->",
            ),
    )
    .unwrap();
    settings
}

/// Issue 34: the README's try-out, as written, in a fresh copy with a HOME of the
/// user's own: it prints exactly what the README shows, and leaves every file of that
/// HOME (settings, transcript) as it was, reading none of it.
#[test]
fn issue34_the_readme_try_out_runs_as_written_and_touches_nothing_of_the_users() {
    let readme = readme();
    let try_out = block(&readme, "sh try");
    assert!(
        !try_out.contains("hook install") && try_out.contains("--no-sync"),
        "{try_out}"
    );

    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("transcope");
    let home = work.path().join("home");
    let bin = work.path().join("bin");
    fresh_copy(&copy);
    let settings = users_home(&home);
    let before = std::fs::read(&settings).unwrap();
    let users_files = snapshot(&home);

    // An empty folder before the PATH: the try-out needs nothing installed.
    std::fs::create_dir_all(&bin).unwrap();
    let (ok, stdout, stderr) = run_script(&try_out, &copy, &home, &bin);
    assert!(ok, "the try-out failed:\n{stdout}\n{stderr}");

    // What the README shows: the backfill's summary on stderr (but for its time and
    // speed), then the timeline, line for line.
    let said = text_block_after(&readme, "It prints, times in your local time");
    let (summary, timeline) = said.split_first().unwrap();
    let (summary, _speed) = summary.split_once(", 0 errors, ").unwrap();
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("transcope:"))
        .collect();
    assert_eq!(ours.len(), 1, "{stderr}");
    assert!(
        ours[0].starts_with(&format!("{summary}, 0 errors, ")),
        "README: {summary}\nprinted: {stderr}"
    );
    let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    let timeline: Vec<&str> = timeline.iter().map(|l| l.trim_end()).collect();
    assert_eq!(printed, timeline, "{stdout}");

    // The user's HOME, byte for byte, and no file more; their transcript not read.
    assert_eq!(std::fs::read(&settings).unwrap(), before);
    let after = snapshot(&home);
    let changed: Vec<_> = after
        .iter()
        .filter(|f| !users_files.contains(f) && !f.0.starts_with(home.join("tmp")))
        .map(|f| &f.0)
        .collect();
    assert!(changed.is_empty(), "written in the HOME: {changed:?}");
    let logs = copy.join("target/demo-home/brain/session-scopes");
    let mut keys: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    keys.sort();
    assert!(keys.contains(&format!("{SESSION}.jsonl")), "{keys:?}");
    assert!(
        !keys.iter().any(|k| k.starts_with("7d3f1c2a")),
        "the user's transcript was read: {keys:?}"
    );

    // Issue 34, friction 2: the README's report, as written, with `transcope` this
    // build's binary, counts the sample alone though the user's transcript is there.
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_transcope"), bin.join("transcope")).unwrap();
    // The queries (the archive's walkthrough reads a folder it names, not yours).
    let queries: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix("$ "))
        .filter(|q| {
            [
                "sessions", "timeline", "ledger", "explain", "usage", "report",
            ]
            .iter()
            .any(|c| q.split_whitespace().any(|w| w == *c))
        })
        .collect();
    assert!(queries.len() >= 6, "{queries:?}");
    for q in &queries {
        assert!(
            q.contains(" --no-sync"),
            "the README's `{q}` syncs your folders"
        );
    }
    let report = queries
        .iter()
        .find(|q| q.contains(" report "))
        .expect("the README shows report");
    let said = text_block_after(&readme, "## See it: the report");
    let (said, _size) = said[1].split_once(" (").unwrap();
    let (ok, stdout, stderr) = run_script(report, &copy, &home, &bin);
    assert!(ok, "{report}: {stderr}");
    assert!(stdout.starts_with(&format!("{said} (")), "{said}\n{stdout}");
    assert_eq!(std::fs::read(&settings).unwrap(), before);
}

/// Issue 34: the README's second command runs every test, as CI does.
#[test]
fn issue34_the_readme_test_command_is_what_ci_runs() {
    let test = block(&readme(), "sh test");
    assert_eq!(test, "cargo test --workspace\n");
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(ci.lines().any(|l| l == test.trim_end()), "{ci}");
}

/// Issue 34: the README's synopsis names every command `transcope --help` lists.
#[test]
fn issue34_the_readme_synopsis_names_every_command() {
    let readme = readme();
    let synopsis = text_block_after(&readme, "documents every flag. In short:");
    let out = Command::new(env!("CARGO_BIN_EXE_transcope"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 18, "{help}");
    for c in commands {
        assert!(
            synopsis
                .iter()
                .any(|l| l.replace("[--home DIR] ", "").split_whitespace().nth(1) == Some(c)),
            "the README's synopsis lacks `{c}`"
        );
    }
}

/// The demo: two worktrees and two tasks, its timeline as the README shows it; and
/// (issue 34) it leaves no temporary folder behind.
#[test]
fn the_readme_demo_prints_its_timeline_and_leaves_no_temporary_folder() {
    let readme = readme();
    let demo = block(&readme, "sh demo");
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("transcope");
    let home = work.path().join("home");
    let bin = work.path().join("bin");
    fresh_copy(&copy);
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_transcope"), bin.join("transcope")).unwrap();
    let (ok, stdout, stderr) = run_script(&demo, &copy, &home, &bin);
    assert!(ok, "the demo block failed:\n{stdout}\n{stderr}");
    let dir = stdout
        .lines()
        .find_map(|l| l.strip_prefix("== working in "))
        .expect("the demo says where it worked")
        .to_owned();
    assert!(dir.starts_with(home.join("tmp").to_str().unwrap()), "{dir}");
    let printed: Vec<String> = stdout
        .lines()
        .skip_while(|l| *l != "== timeline")
        .skip(1)
        .take_while(|l| !l.starts_with("== "))
        .map(|l| squash(&l.replace(&dir, "/tmp/transcope-demo.…")))
        .filter(|l| !l.starts_with("===="))
        .collect();
    let said: Vec<String> = text_block_after(&readme, "It prints the scope log and this timeline")
        .iter()
        .map(|l| squash(l))
        .filter(|l| !l.starts_with("===="))
        .collect();
    assert_eq!(printed, said);
    let left: Vec<_> = std::fs::read_dir(home.join("tmp"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "the demo left {left:?} behind");
    assert!(!Path::new(&dir).exists());
}

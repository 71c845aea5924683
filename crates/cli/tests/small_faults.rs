//! Issue 13, items 10 and 11, against the real binary: bounded echoes of untrusted
//! values, no environment values on stderr, and the smaller faults (a `--jobs` cap, a
//! cause said once, exit codes and counts after write errors, an oversized payload).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

use common::reliability::*;
use serde_json::{json, Value};

fn exited(out: &Output, code: i32, what: &str) {
    assert_eq!(out.status.signal(), None, "{what}: killed by a signal");
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: stdout {} stderr {}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn write_lines(p: &Path, lines: &[String]) {
    std::fs::write(p, lines.join("\n") + "\n").unwrap();
}

/// Where Claude Code keeps the record of a session started in `cwd`.
fn claude_project_dir(config: &Path, cwd: &Path) -> std::path::PathBuf {
    let encoded: String = cwd
        .to_str()
        .unwrap()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    config.join("projects").join(encoded)
}

/// Item 10: a guessed record naming another session (or tree) with a 2 MB value was
/// echoed in full: 2 MB in, 2 MB out. The echo is cut and escaped, with its length.
#[test]
fn a_refused_guess_echoes_a_bounded_value() {
    let sb = Sandbox::new();
    let config = sb.user.join(".claude");
    let cwd = sb.user.join("proj");
    std::fs::create_dir_all(&cwd).unwrap();
    let dir = claude_project_dir(&config, &cwd);
    std::fs::create_dir_all(&dir).unwrap();
    let huge = "A\"\u{1b}".repeat(700_000);
    let cases = [
        // Another session: WrongSession.
        ("s1", json!({"type": "user", "sessionId": huge, "cwd": cwd})),
        // This session, another tree: WrongTree (a wide path, one component).
        (
            "s2",
            json!({"type": "user", "sessionId": "s2", "cwd": format!("/{}", "e".repeat(2 << 20))}),
        ),
    ];
    for (session, record) in cases {
        std::fs::write(dir.join(format!("{session}.jsonl")), format!("{record}\n")).unwrap();
        for hook in ["stop", "session-start"] {
            let mut c = sb.cmd(&["hook", hook]);
            c.env("CLAUDE_CONFIG_DIR", &config);
            let out = run(
                c,
                json!({"session_id": session, "cwd": cwd, "hook_event_name": "Stop"})
                    .to_string()
                    .as_bytes(),
            );
            exited(&out, 0, hook);
            let err = text(&out.stderr);
            assert!(err.contains("refused"), "{hook} {session}: {err}");
            assert!(
                err.len() < 4096,
                "{hook} {session}: {} bytes of stderr",
                err.len()
            );
            assert!(
                err.contains(" bytes)"),
                "{hook} {session}: the length is said: {err}"
            );
            assert!(!err.contains('\u{1b}'), "escaped: {err}");
        }
        let mut c = sb.cmd(&["identity"]);
        c.env("CLAUDE_CONFIG_DIR", &config);
        let out = run(
            c,
            json!({"session_id": session, "cwd": cwd})
                .to_string()
                .as_bytes(),
        );
        exited(&out, 0, "identity");
        assert!(
            out.stdout.len() < 4096,
            "identity: {} bytes",
            out.stdout.len()
        );
    }
}

/// Item 10: an invalid `AGENTIHOOKS_PROJECT_ID` was echoed on stderr. The message names
/// the variable and the value's length, never the value.
#[test]
fn an_invalid_project_id_is_not_echoed() {
    let sb = Sandbox::new();
    let plain = sb.user.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let t = sb.user.join("t.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, plain.to_str().unwrap(), "main"),
            claude_line(60, sb.user.to_str().unwrap(), "main"),
        ],
    );
    let secret = "token-SECRET-VALUE-1234";
    let runs: [(&[&str], Vec<u8>); 3] = [
        (&["hook", "stop"], payload("pid1", &t)),
        (
            &["hook", "session-start"],
            json!({"session_id": "pid2", "cwd": plain, "transcript_path": t})
                .to_string()
                .into_bytes(),
        ),
        (
            &["observe", "--session", "pid3", t.to_str().unwrap()],
            Vec::new(),
        ),
    ];
    for (args, stdin) in runs {
        let mut c = sb.cmd(args);
        c.env("AGENTIHOOKS_PROJECT_ID", secret);
        let out = run(c, &stdin);
        let (o, e) = (text(&out.stdout), text(&out.stderr));
        assert!(
            !o.contains("SECRET") && !e.contains("SECRET"),
            "{args:?}: {o} {e}"
        );
        assert!(
            e.contains("AGENTIHOOKS_PROJECT_ID"),
            "{args:?}: the reason is said: {e}"
        );
    }
}

/// Item 11: `backfill --jobs 100000` started 15,000 threads and died. It is a usage
/// error, said before anything starts.
#[test]
fn jobs_over_the_cap_is_a_usage_error() {
    let sb = Sandbox::new();
    let started = std::time::Instant::now();
    let out = run(
        sb.cmd(&["backfill", "--jobs", "100000", sb.user.to_str().unwrap()]),
        b"",
    );
    exited(&out, 2, "--jobs 100000");
    let err = text(&out.stderr);
    assert!(err.contains("--jobs") && err.contains("256"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(!sb.home.exists(), "nothing written");
    let out = run(
        sb.cmd(&["backfill", "--jobs", "256", sb.user.to_str().unwrap()]),
        b"",
    );
    exited(&out, 0, "--jobs 256");
}

/// Item 11: a thread pool that cannot be built (a memory limit) panicked in rayon's
/// builder. It is the run's error: exit 1, said on stderr, no panic.
#[test]
fn a_pool_that_cannot_start_is_an_error() {
    let sb = Sandbox::new();
    let t = sb.user.join("t.jsonl");
    write_lines(&t, &[claude_line(0, "/w/a", "main")]);
    let mut c = sb.cmd(&["backfill", "--jobs", "256", t.to_str().unwrap()]);
    // Room for the binary, not for 256 stacks of 2 MiB.
    limit_memory(&mut c, 192 << 20);
    let out = run(c, b"");
    let err = text(&out.stderr);
    assert!(!err.contains("panick"), "{err}");
    exited(&out, 1, "backfill under a memory limit");
    assert!(err.contains("cannot start 256 worker threads"), "{err}");
}

/// Item 11: `scope record` on a full disk printed its cause twice.
#[test]
fn scope_record_says_its_cause_once() {
    let sb = Sandbox::new();
    let mut c = sb.cmd(&[
        "scope",
        "record",
        "--session",
        "full",
        "--at",
        "2026-10-08T10:00:00Z",
        "--cwd",
        "/w/a",
    ]);
    limit_file_size(&mut c, 10);
    let out = run(c, b"");
    exited(&out, 1, "record on a full disk");
    let err = text(&out.stderr);
    assert_eq!(err.matches("File too large").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// Item 11: `observe` exited 0 after a write error. It is a runtime error that says how
/// much was recorded before it.
#[test]
fn observe_fails_after_a_write_error() {
    let sb = Sandbox::new();
    let t = two_folders(&sb);
    let mut c = sb.cmd(&[
        "observe",
        "--no-env",
        "--session",
        "obs",
        t.to_str().unwrap(),
    ]);
    limit_file_size(&mut c, 10);
    let out = run(c, b"");
    exited(&out, 1, "observe on a full disk");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("File too large"), "{err}");
    assert!(err.contains("transition(s) recorded"), "{err}");
    // Space again: the same command records both and exits 0.
    let out = run(
        sb.cmd(&[
            "observe",
            "--no-env",
            "--session",
            "obs",
            t.to_str().unwrap(),
        ]),
        b"",
    );
    exited(&out, 0, "observe after");
    assert_eq!(text(&out.stdout), "2\n");
}

/// Item 11: backfill counted markers it could not deliver as `markers`, and reported
/// one error per file (the log's failure hid the markers', or the reverse).
#[test]
fn backfill_counts_undelivered_markers_and_every_error() {
    let sb = Sandbox::new();
    let t = sb.user.join("t.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            claude_marker_line(30, "/w/a", "one"),
            claude_marker_line(40, "/w/a", "two"),
        ],
    );
    // The logs' folder is a file: the markers cannot be attributed against the log as
    // it should stand, so they are not recorded (a ledger row keeps its attribution
    // for good); the cursor stays, and the next run records them.
    std::fs::create_dir_all(sb.home.join("brain")).unwrap();
    std::fs::write(sb.home.join("brain/session-scopes"), b"").unwrap();
    let c = sb.cmd(&["backfill", "--json", t.to_str().unwrap()]);
    let out = run(c, b"");
    exited(&out, 1, "backfill");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["markers"], 2, "{v}");
    assert_eq!(v["markers_recorded"], 0, "{v}");
    assert_eq!(v["markers_not_recorded"], 2, "{v}");
    assert_eq!(v["transitions_written"], 0, "{v}");
    assert_eq!(v["errors"], 1, "{v}");
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines.iter().all(|l| l.contains(t.to_str().unwrap())),
        "{err}"
    );
    assert!(lines.iter().any(|l| l.contains("session-scopes")), "{err}");
    // The folder is a folder again: the same command records both markers.
    std::fs::remove_file(sb.home.join("brain/session-scopes")).unwrap();
    let out = run(sb.cmd(&["backfill", "--json", t.to_str().unwrap()]), b"");
    exited(&out, 0, "backfill after");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["markers_recorded"].clone(), v["markers_pending"].clone()),
        (2.into(), 2.into()),
        "{v}"
    );
}

/// Item 11: a payload over the 16 MiB cap (a huge `last_assistant_message`) dropped
/// the whole Stop, transitions included. The Stop runs on the payload's identity
/// fields and says what it left out.
#[test]
fn an_oversized_payload_still_records_the_stop() {
    let sb = Sandbox::new();
    let t = two_folders(&sb);
    let body = json!({
        "session_id": "big",
        "hook_event_name": "Stop",
        "last_assistant_message": "x".repeat(17 << 20),
        "transcript_path": t,
        "tool_input": {"nested": ["y".repeat(1 << 20)]},
    })
    .to_string();
    let out = run(sb.cmd(&["hook", "stop", "--json"]), body.as_bytes());
    exited(&out, 0, "hook stop");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["transitions_recorded"], 2, "{v}");
    assert_eq!(v["payload"]["bytes"], body.len(), "{v}");
    assert_eq!(v["payload"]["fields_left_out"], 2, "{v}");
    assert_eq!(cwds(&sb, "big"), ["/w/a", "/w/b"]);
}

/// A transcript at `t.jsonl` that moves from `/w/a` to `/w/b`.
fn two_folders(sb: &Sandbox) -> std::path::PathBuf {
    let t = sb.user.join("t.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            claude_line(60, "/w/b", "main"),
        ],
    );
    t
}

/// A tmpfs of a few pages mounted at a fresh folder (a real full disk), unmounted when
/// dropped; `None` when this process may not mount one (not root, no tmpfs).
struct SmallFs {
    dir: std::path::PathBuf,
}

impl SmallFs {
    fn mount(dir: std::path::PathBuf, size: &str) -> Option<SmallFs> {
        std::fs::create_dir_all(&dir).ok()?;
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallFs { dir })
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Fill the file system holding `dir` until `room` bytes (rounded to pages) are left.
fn leave_room(dir: &Path, room: u64) {
    use std::io::Write as _;
    let filler = dir.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let page = [b'f'; 4096];
    while f.write_all(&page).is_ok() {}
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(room)).unwrap();
}

/// Item 11: after a disk-full write that took part of the batch, the Stop's summary
/// said `transitions_recorded: 0` while rows were in the log. It counts the rows that
/// reached the log whole, and the next Stop (with room again) adds the rest.
#[test]
fn a_partial_write_counts_what_reached_the_log() {
    let sb = Sandbox::new();
    // Room for the home's two databases (cursors, index) and the 150 KB of rows.
    let Some(fs) = SmallFs::mount(sb.root.join("small"), "2m") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let home = fs.dir.join("home");
    // A first Stop makes the home, its folders and the cursor store.
    let t0 = sb.user.join("t0.jsonl");
    write_lines(&t0, &[claude_line(0, "/w/first", "main")]);
    let out = run(
        cmd_in(&home, &sb.user, &["hook", "stop", "--json"]),
        &payload("warm", &t0),
    );
    exited(&out, 0, "first stop");
    // 400 transitions, about 150 KB of rows, with about 16 KB of room.
    let t = sb.user.join("t.jsonl");
    let lines: Vec<String> = (0..400)
        .map(|i| claude_line(i * 2, &format!("/w/folder-{i:04}"), "main"))
        .collect();
    write_lines(&t, &lines);
    leave_room(&fs.dir, 16 * 1024);
    let out = run(
        cmd_in(&home, &sb.user, &["hook", "stop", "--json"]),
        &payload("part", &t),
    );
    exited(&out, 0, "stop on a full disk");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].is_string(), "{v}");
    let log = std::fs::read(log_path(&home, "part")).unwrap_or_default();
    let rows = check_log(&log);
    assert!(
        !rows.is_empty() && rows.len() < 400,
        "a prefix: {} rows",
        rows.len()
    );
    assert_eq!(v["transitions_recorded"], rows.len(), "{v}");
    // Room again: the next Stop adds exactly the rest.
    std::fs::remove_file(fs.dir.join("filler")).unwrap();
    let out = run(
        cmd_in(&home, &sb.user, &["hook", "stop", "--json"]),
        &payload("part", &t),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].is_null(), "{v}");
    assert_eq!(v["transitions_recorded"], 400 - rows.len(), "{v}");
    let all = check_log(&std::fs::read(log_path(&home, "part")).unwrap());
    assert_eq!(all.len(), 400);
}

/// Item 11: a disk with no room left an empty log file behind (the append creates it,
/// then its first byte is refused). The Stop, `session-start`, `observe` and
/// `scope record` leave no log; a log that holds rows is never removed.
#[test]
fn a_full_disk_leaves_no_empty_log() {
    let sb = Sandbox::new();
    let Some(fs) = SmallFs::mount(sb.root.join("small"), "128k") else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let home = fs.dir.join("home");
    let t = two_folders(&sb);
    let out = run(
        cmd_in(&home, &sb.user, &["hook", "stop"]),
        &payload("warm", &t),
    );
    exited(&out, 0, "first stop");
    let kept = std::fs::read(log_path(&home, "warm")).unwrap();
    leave_room(&fs.dir, 0);
    let out = run(
        cmd_in(&home, &sb.user, &["hook", "stop", "--json"]),
        &payload("none", &t),
    );
    exited(&out, 0, "stop with no room");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].is_string(), "{v}");
    assert!(
        !log_path(&home, "none").exists(),
        "the Stop left an empty log"
    );
    let out = run(
        cmd_in(
            &home,
            &sb.user,
            &["observe", "--session", "none2", t.to_str().unwrap()],
        ),
        b"",
    );
    exited(&out, 1, "observe with no room");
    let out = run(
        cmd_in(
            &home,
            &sb.user,
            &[
                "scope",
                "record",
                "--session",
                "none3",
                "--at",
                "2026-10-08T10:00:00Z",
                "--cwd",
                "/w",
            ],
        ),
        b"",
    );
    exited(&out, 1, "scope record with no room");
    let mut c = cmd_in(&home, &sb.user, &["hook", "session-start", "--json"]);
    c.env("AGENTIHOOKS_SESSION_SCOPE", "1");
    let out = run(
        c,
        json!({"session_id": "none4", "cwd": sb.user, "source": "startup"})
            .to_string()
            .as_bytes(),
    );
    exited(&out, 0, "session-start with no room");
    for s in ["none", "none2", "none3", "none4"] {
        let p = log_path(&home, s);
        assert!(!p.exists(), "{s}: an empty log was left at {}", p.display());
    }
    // A run that fails on a log holding rows leaves it whole.
    let out = run(
        cmd_in(&home, &sb.user, &["hook", "stop"]),
        &payload("warm", &two_more(&sb)),
    );
    exited(&out, 0, "stop on a full log");
    assert!(std::fs::read(log_path(&home, "warm"))
        .unwrap()
        .starts_with(&kept));
}

/// A transcript at `t2.jsonl` that moves on from `/w/b` to two new folders.
fn two_more(sb: &Sandbox) -> std::path::PathBuf {
    let t = sb.user.join("t2.jsonl");
    write_lines(
        &t,
        &[
            claude_line(600, "/w/c", "main"),
            claude_line(660, "/w/d", "main"),
        ],
    );
    t
}

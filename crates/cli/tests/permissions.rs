//! Files and permissions: everything transcope creates is private — files 0600,
//! directories 0700, whatever the umask — and its own files (scope logs, their locks,
//! cursors, the session index, outbox files) are never written through a symbolic link,
//! nor read through one, nor opened in a way that blocks on a FIFO planted in their place.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::reliability::*;
use serde_json::Value;

/// Every path under `dir` (and `dir` itself) with a mode other than 0600 for files and
/// 0700 for directories.
fn not_private(dir: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    let mut all = vec![String::new()];
    all.extend(tree(dir));
    for rel in all {
        let p = if rel.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(&rel)
        };
        let meta = std::fs::symlink_metadata(&p).unwrap();
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        let got = mode(&p);
        if got != want || meta.file_type().is_symlink() {
            bad.push(format!("{rel}: {got:o}"));
        }
    }
    bad
}

#[test]
fn files_0600_and_folders_0700_whatever_the_umask() {
    for umask in [0o000, 0o022, 0o077] {
        let sb = Sandbox::new();
        let repo = sb.user.join("alpha");
        git_repo(&repo);
        let t = sb.user.join("t.jsonl");
        std::fs::write(
            &t,
            [
                claude_line(0, repo.to_str().unwrap(), "main"),
                claude_marker_line(30, repo.to_str().unwrap(), "private"),
                claude_line(60, "/w/b", "main"),
            ]
            .join("\n")
                + "\n",
        )
        .unwrap();
        let custom_outbox = sb.root.join("custom-outbox");
        let mut runs: Vec<(Command, Vec<u8>)> = Vec::new();
        let start =
            serde_json::json!({"session_id": "perm", "cwd": repo, "source": "startup"}).to_string();
        runs.push((sb.cmd(&["hook", "session-start"]), start.into_bytes()));
        let mut c = sb.cmd(&["hook", "stop"]);
        c.env("BRAIN_WRITER_ENABLED", "1");
        runs.push((c, payload("perm", &t)));
        let mut c = sb.cmd(&["hook", "stop"]);
        c.env("BRAIN_WRITER_ENABLED", "1")
            .env("BRAIN_WRITER_OUTBOX", &custom_outbox);
        runs.push((c, payload("perm2", &t)));
        runs.push((
            sb.cmd(&[
                "scope",
                "record",
                "--session",
                "rec",
                "--at",
                "2026-10-08T10:00:00Z",
                "--cwd",
                "/x",
            ]),
            vec![],
        ));
        runs.push((
            sb.cmd(&[
                "backfill",
                testdata().join("sample-archive").to_str().unwrap(),
            ]),
            vec![],
        ));
        for (mut c, stdin) in runs {
            with_umask(&mut c, umask);
            let out = run(c, &stdin);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        }
        let files = tree(&sb.home);
        for want in [
            "brain/session-scopes/perm.jsonl",
            "brain/session-scopes/perm.jsonl.lock",
            "brain/session-scopes/rec.jsonl",
            "transcope/cursors.sqlite",
            "brain-outbox",
        ] {
            assert!(
                files.iter().any(|f| f.starts_with(want)),
                "{want} missing: {files:?}"
            );
        }
        assert!(!tree(&sb.home.join("brain-outbox")).is_empty());
        assert!(
            files.iter().any(|f| f == "brain/project-sessions.jsonl"),
            "{files:?}"
        );
        assert!(files
            .iter()
            .any(|f| f == "brain/project-sessions.jsonl.lock"));
        let bad = not_private(&sb.home);
        assert!(bad.is_empty(), "umask {umask:03o}: not private: {bad:?}");
        let bad = not_private(&custom_outbox);
        assert!(
            bad.is_empty(),
            "umask {umask:03o}: outbox not private: {bad:?}"
        );
    }
}

/// A file outside the home that must stay as it is.
fn precious(sb: &Sandbox, name: &str) -> (PathBuf, Vec<u8>) {
    let p = sb.outside.join(name);
    let body = b"{\"precious\": true}\n".to_vec();
    std::fs::write(&p, &body).unwrap();
    (p, body)
}

#[test]
fn own_files_are_never_followed_through_a_symlink() {
    let sb = Sandbox::new();
    let scopes = sb.home.join("brain/session-scopes");
    std::fs::create_dir_all(&scopes).unwrap();
    let t = sb.user.join("t.jsonl");
    std::fs::write(&t, claude_line(0, "/w/a", "main") + "\n").unwrap();

    // The log itself is a symlink (to an existing file, and to a file not yet there).
    let (target, body) = precious(&sb, "log-target.jsonl");
    std::os::unix::fs::symlink(&target, scopes.join("linked.jsonl")).unwrap();
    let dangling = sb.outside.join("created-through-a-link.jsonl");
    std::os::unix::fs::symlink(&dangling, scopes.join("dangling.jsonl")).unwrap();
    for session in ["linked", "dangling"] {
        let out = run(
            sb.cmd(&[
                "scope",
                "record",
                "--session",
                session,
                "--at",
                "2026-10-08T10:00:00Z",
                "--cwd",
                "/x",
            ]),
            b"",
        );
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("symbolic links"),
            "{}",
            text(&out.stderr)
        );
        let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload(session, &t));
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            v["error"].as_str().unwrap().contains("symbolic links"),
            "{v}"
        );
        // Nor is it read through the link.
        let out = run(sb.cmd(&["scope", "log", "--session", session]), b"");
        assert_eq!(out.status.code(), Some(0));
        assert!(
            out.stdout.is_empty(),
            "read through a symlink: {}",
            text(&out.stdout)
        );
    }
    assert_eq!(std::fs::read(&target).unwrap(), body);
    assert!(!dangling.exists());

    // The lock sidecar is a symlink: the target is neither created nor truncated, and
    // without its lock the log is not written (contention.rs has the other things that
    // can stand there).
    let (lock_target, lock_body) = precious(&sb, "lock-target");
    std::os::unix::fs::symlink(&lock_target, scopes.join("locked.jsonl.lock")).unwrap();
    let out = run(
        sb.cmd(&[
            "scope",
            "record",
            "--session",
            "locked",
            "--at",
            "2026-10-08T10:00:00Z",
            "--cwd",
            "/x",
        ]),
        b"",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("symbolic links"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(&lock_target).unwrap(), lock_body);
    assert!(!sb.log("locked").exists());

    // The cursor database and its sidecars replaced by symlinks: the links are removed
    // (never written or read through) and the store starts again, empty.
    let out = run(sb.cmd(&["hook", "stop"]), &payload("cur", &t));
    assert_eq!(out.status.code(), Some(0));
    let db = sb.home.join("transcope/cursors.sqlite");
    assert!(db.is_file());
    let (cursor_target, cursor_body) = precious(&sb, "cursor-target.json");
    let (wal_target, wal_body) = precious(&sb, "wal-target");
    for (name, target) in [
        ("cursors.sqlite", &cursor_target),
        ("cursors.sqlite-wal", &wal_target),
    ] {
        let link = sb.home.join("transcope").join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, &link).unwrap();
    }
    let _ = std::fs::remove_file(sb.home.join("transcope/cursors.sqlite-shm"));
    std::fs::write(
        &t,
        [
            claude_line(0, "/w/a", "main"),
            claude_line(60, "/w/b", "main"),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload("cur", &t));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // No cursor: the file is read from its start, and the log (which has /w/a) takes
    // only what is new.
    assert_eq!(v["transitions_recorded"], 1, "{v}");
    assert_eq!(std::fs::read(&cursor_target).unwrap(), cursor_body);
    assert_eq!(std::fs::read(&wal_target).unwrap(), wal_body);
    // The database is a private file again; its write-ahead log, gone with the last
    // connection, is no link either.
    assert!(std::fs::symlink_metadata(&db)
        .unwrap()
        .file_type()
        .is_file());
    assert_eq!(mode(&db), 0o600);
    let wal = sb.home.join("transcope/cursors.sqlite-wal");
    assert!(std::fs::symlink_metadata(&wal).map_or(true, |m| !m.file_type().is_symlink()));
    // And the new store works: the same bytes again are nothing new.
    let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload("cur", &t));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["transitions_recorded"], 0, "{v}");

    // The session index is a symlink.
    let repo = sb.user.join("alpha");
    git_repo(&repo);
    {
        let (index_target, index_body) = precious(&sb, "index-target.jsonl");
        std::os::unix::fs::symlink(&index_target, sb.home.join("brain/project-sessions.jsonl"))
            .unwrap();
        let p =
            serde_json::json!({"session_id": "idx", "cwd": repo, "source": "startup"}).to_string();
        let out = run(sb.cmd(&["hook", "session-start", "--json"]), p.as_bytes());
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["indexed"], false, "{v}");
        assert!(
            v["error"].as_str().unwrap().contains("session index"),
            "{v}"
        );
        assert_eq!(std::fs::read(&index_target).unwrap(), index_body);
    }

    // Nothing else outside the home was touched.
    let outside: Vec<String> = sb
        .outside_home()
        .into_iter()
        .filter(|p| p.starts_with("outside/"))
        .collect();
    assert_eq!(
        outside,
        [
            "outside/cursor-target.json",
            "outside/index-target.jsonl",
            "outside/lock-target",
            "outside/log-target.jsonl",
            "outside/wal-target"
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
    );
}

#[test]
fn fifos_planted_in_the_home_do_not_hang_a_hook() {
    let sb = Sandbox::new();
    let scopes = sb.home.join("brain/session-scopes");
    std::fs::create_dir_all(&scopes).unwrap();
    let t = sb.user.join("t.jsonl");
    std::fs::write(&t, claude_line(0, "/w/a", "main") + "\n").unwrap();
    mkfifo(&scopes.join("fifo.jsonl"));
    mkfifo(&scopes.join("fifolock.jsonl.lock"));
    for session in ["fifo", "fifolock"] {
        let started = Instant::now();
        let mut child = sb
            .cmd(&["hook", "stop", "--json"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(&payload(session, &t))
                .unwrap();
        }
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(5) {
                child.kill().unwrap();
                panic!("hook stop hung on a FIFO planted as {session}'s log or lock");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["error"].is_string(), "{v}");
        assert_eq!(v["transitions_recorded"], 0, "{v}");
        if session == "fifolock" {
            // Without its lock the log is not written.
            assert!(!sb.log(session).exists());
        }
    }
}

//! Hostile input: every case gives a clear error or the documented no-op, never a
//! crash (a signal), and nothing is ever written outside the home.
//!
//! Ids (session, agent) with separators, `..`, NUL, 129 characters, non-ASCII; transcript
//! paths that are a FIFO, a directory, `/dev/zero`, a symlink loop, or outside the
//! config folder; lines at and over the 16 MiB cap; a 1 GiB line without a newline (from
//! a sparse file and through a pipe; peak RSS measured with `wait4`); a million `[`;
//! invalid UTF-8, huge numbers, duplicate keys, a BOM, CRLF; an unwritable home; a full
//! disk (`RLIMIT_FSIZE`).

mod common;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::reliability::*;
use serde_json::{json, Value};

/// Exited normally (no signal), with this code.
fn exited(out: &Output, code: i32, what: &str) {
    assert_eq!(
        out.status.signal(),
        None,
        "{what}: killed by a signal; stderr: {}",
        text(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: stderr: {}",
        text(&out.stderr)
    );
}

fn write_lines(p: &Path, lines: &[String]) {
    std::fs::write(p, lines.join("\n") + "\n").unwrap();
}

fn scopes_dir_is_empty(home: &Path) -> bool {
    tree(&home.join("brain/session-scopes")).is_empty()
}

/// The session-id grammar, `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`, written independently.
fn is_valid_key(k: &str) -> bool {
    let b = k.as_bytes();
    (1..=128).contains(&b.len())
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(c))
}

const HOSTILE_IDS: &[&str] = &[
    "a/b",
    "a\\b",
    "..",
    "../escape",
    "../../outside/escape",
    "/abs",
    ".hidden",
    "-lead",
    "",
    "a b",
    "a\nb",
    "é",
    "séance",
    "日本",
    "a\u{202e}b",
];

fn long_id() -> String {
    "a".repeat(129)
}

#[test]
fn hostile_session_ids_write_nothing() {
    let sb = Sandbox::new();
    let t = sb.user.join("t.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            claude_marker_line(30, "/w/a", "x"),
        ],
    );
    let long = long_id();
    let mut ids: Vec<&str> = HOSTILE_IDS.to_vec();
    ids.push(&long);
    for id in &ids {
        // scope record: an invalid session id writes nothing and exits 0.
        let out = run(
            sb.cmd(&[
                "scope",
                "record",
                "--session",
                id,
                "--at",
                "2026-10-08T10:00:00Z",
                "--cwd",
                "/x",
            ]),
            b"",
        );
        exited(&out, 0, id);
        assert!(out.stdout.is_empty(), "{id:?}");
        let out = run(sb.cmd(&["scope", "log", "--session", id]), b"");
        exited(&out, 0, id);
        assert!(out.stdout.is_empty());
        let out = run(
            sb.cmd(&[
                "scope",
                "at",
                "--session",
                id,
                "--at",
                "2026-10-08T10:00:00Z",
            ]),
            b"",
        );
        exited(&out, 0, id);
        assert_eq!(text(&out.stdout), "null\n");
        let out = run(
            sb.cmd(&["observe", "--session", id, t.to_str().unwrap()]),
            b"",
        );
        exited(&out, 0, id);
        assert_eq!(text(&out.stdout), "0\n", "{id:?}");
        // Hooks: a clear error on stderr, exit 0, nothing written.
        for hook in ["stop", "session-start"] {
            let out = run(sb.cmd(&["hook", hook]), &payload(id, &t));
            exited(&out, 0, id);
            assert!(
                text(&out.stderr).contains("session"),
                "{id:?}: {}",
                text(&out.stderr)
            );
        }
    }
    // NUL cannot be an argument; it can be in a payload.
    for id in ["a\0b", "\0", "ok\0/../../x"] {
        for hook in ["stop", "session-start"] {
            let out = run(sb.cmd(&["hook", hook]), &payload(id, &t));
            exited(&out, 0, id);
            assert!(
                text(&out.stderr).contains("session"),
                "{}",
                text(&out.stderr)
            );
        }
    }
    assert!(scopes_dir_is_empty(&sb.home), "{:?}", tree(&sb.home));
    assert!(
        !sb.home.join("transcope/cursors").exists()
            || tree(&sb.home.join("transcope/cursors")).is_empty()
    );
    assert!(
        sb.outside_home().iter().all(|p| p == "user/t.jsonl"),
        "{:?}",
        sb.outside_home()
    );
    assert!(!sb.root.join("escape.jsonl").exists());
    // With the brain writer on, a Stop with no valid session still delivers its
    // markers, unattributed and naming no session — inside the home.
    let mut c = sb.cmd(&["hook", "stop", "--json"]);
    c.env("BRAIN_WRITER_ENABLED", "1");
    let out = run(c, &payload("../escape", &t));
    exited(&out, 0, "brain");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["written"]["outbox"], 1, "{v}");
    assert!(scopes_dir_is_empty(&sb.home));
    for f in tree(&sb.home.join("brain-outbox")) {
        let body: Value =
            serde_json::from_slice(&std::fs::read(sb.home.join("brain-outbox").join(&f)).unwrap())
                .unwrap();
        assert!(body.get("session_id").is_none(), "{body}");
    }
    assert!(sb.outside_home().iter().all(|p| p == "user/t.jsonl"));
}

#[test]
fn hostile_agent_ids_write_nothing() {
    let sb = Sandbox::new();
    let root_t = sb.user.join("projects/-w/sess.jsonl");
    std::fs::create_dir_all(root_t.parent().unwrap()).unwrap();
    write_lines(&root_t, &[claude_line(0, "/w/a", "main")]);
    let long = long_id();
    let mut ids: Vec<&str> = HOSTILE_IDS
        .iter()
        .copied()
        .filter(|i| !i.is_empty())
        .collect();
    ids.push(&long);
    ids.push("a\0b");
    for id in &ids {
        for hook in ["stop", "session-start"] {
            let p = json!({"session_id": "sess", "agent_id": id, "transcript_path": root_t, "hook_event_name": "SubagentStop"});
            let out = run(sb.cmd(&["hook", hook]), p.to_string().as_bytes());
            exited(&out, 0, id);
            // Refused ("not an agent id"), or — for an id that is a file name and makes
            // a valid key, like `.hidden` — a transcript that does not exist.
            let err = text(&out.stderr);
            let v: Value =
                serde_json::from_str(err.trim().strip_prefix("transcope: ").unwrap()).unwrap();
            let key_ok = v["scope_key"]
                .as_str()
                .is_some_and(|k| is_valid_key(k) && k.starts_with("sess."));
            assert!(v["error"].is_string() || key_ok, "{id:?}: {err}");
        }
        // The sub-agent named by its own transcript path instead.
        let p = json!({"session_id": "sess", "agent_transcript_path": format!("{}/agent-{id}.jsonl", sb.user.display()), "hook_event_name": "SubagentStop"});
        let out = run(sb.cmd(&["hook", "stop"]), p.to_string().as_bytes());
        exited(&out, 0, id);
    }
    // An agent id that is a plain file name and makes a valid key (`.hidden` →
    // `sess..hidden`) may get a log; nothing else is ever written, and every log is
    // named by a valid key under the session-scopes folder.
    for f in tree(&sb.home.join("brain/session-scopes")) {
        let key = f
            .strip_suffix(".jsonl.lock")
            .or_else(|| f.strip_suffix(".jsonl"))
            .unwrap();
        assert!(is_valid_key(key) && key.starts_with("sess."), "{f}");
    }
    assert!(
        sb.outside_home()
            .iter()
            .all(|p| p.starts_with("user/projects")),
        "{:?}",
        sb.outside_home()
    );
}

#[test]
fn hostile_transcript_paths() {
    let sb = Sandbox::new();
    let fifo = sb.user.join("fifo.jsonl");
    mkfifo(&fifo);
    let dir = sb.user.join("dir.jsonl");
    std::fs::create_dir(&dir).unwrap();
    let loop1 = sb.user.join("loop1.jsonl");
    let loop2 = sb.user.join("loop2.jsonl");
    std::os::unix::fs::symlink(&loop2, &loop1).unwrap();
    std::os::unix::fs::symlink(&loop1, &loop2).unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (fifo.clone(), "not a regular file"),
        (dir.clone(), "not a regular file"),
        (PathBuf::from("/dev/zero"), "not a regular file"),
        (PathBuf::from("/dev/null"), "not a regular file"),
        (PathBuf::from("/dev/stdin"), "not a regular file"),
        (loop1.clone(), "symbolic links"),
        (sb.user.join("missing.jsonl"), "No such file"),
    ];
    for (p, expect) in &cases {
        for brain in ["0", "1"] {
            let mut c = sb.cmd(&["hook", "stop", "--json"]);
            c.env("BRAIN_WRITER_ENABLED", brain);
            let out = run(c, &payload("paths", p));
            exited(&out, 0, &p.display().to_string());
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let err = v["error"].as_str().unwrap_or_default();
            assert!(
                !err.is_empty() && err.contains(expect),
                "{}: {v}",
                p.display()
            );
        }
        let out = run(
            sb.cmd(&["observe", "--session", "paths", p.to_str().unwrap()]),
            b"",
        );
        exited(&out, 1, &p.display().to_string());
        assert!(text(&out.stderr).contains(expect), "{}", text(&out.stderr));
        let out = run(sb.cmd(&["markers", p.to_str().unwrap()]), b"");
        exited(&out, 1, &p.display().to_string());
        let out = run(sb.cmd(&["identity"]), &payload("paths", p));
        exited(&out, 0, &p.display().to_string());
        // backfill: a folder is a folder of transcripts (this one is empty).
        let out = run(
            sb.cmd(&["backfill", "--no-markers", p.to_str().unwrap()]),
            b"",
        );
        exited(
            &out,
            if *p == dir { 0 } else { 1 },
            &p.display().to_string(),
        );
        // A sub-agent's own path.
        let pl = json!({"session_id": "paths", "agent_transcript_path": p, "agent_id": "a1"});
        let out = run(sb.cmd(&["hook", "stop"]), pl.to_string().as_bytes());
        exited(&out, 0, &p.display().to_string());
    }
    assert!(scopes_dir_is_empty(&sb.home), "{:?}", tree(&sb.home));
    // A "regular file" of size 0 that is not (procfs): read as of its size, i.e. empty.
    let out = run(
        sb.cmd(&["hook", "stop", "--json"]),
        &payload("paths", Path::new("/proc/self/environ")),
    );
    exited(&out, 0, "procfs");
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["transitions_recorded"],
        0
    );

    // A transcript outside the config folder: a reported path is authoritative
    // (identity.md §2.2), so it is read — and still nothing is written outside the home.
    let config = sb.user.join(".claude");
    std::fs::create_dir_all(config.join("projects")).unwrap();
    let elsewhere = sb.outside.join("t.jsonl");
    write_lines(
        &elsewhere,
        &[
            claude_line(0, "/w/a", "main"),
            claude_line(60, "/w/b", "main"),
        ],
    );
    // And a symlink to it from inside the config folder.
    let link = config.join("projects/link.jsonl");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let before = std::fs::read(&elsewhere).unwrap();
    for (session, path) in [("outside", &elsewhere), ("linked", &link)] {
        let mut c = sb.cmd(&["hook", "stop", "--json"]);
        c.env("CLAUDE_CONFIG_DIR", &config)
            .env("BRAIN_WRITER_ENABLED", "1");
        let out = run(c, &payload(session, path));
        exited(&out, 0, session);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["transitions_recorded"], 2, "{v}");
        assert_eq!(cwds(&sb, session), ["/w/a", "/w/b"]);
    }
    assert_eq!(std::fs::read(&elsewhere).unwrap(), before);
    let outside: Vec<String> = sb
        .outside_home()
        .into_iter()
        .filter(|p| !p.starts_with("user"))
        .collect();
    assert_eq!(outside, ["outside/t.jsonl"]);
}

/// A Claude record padded to exactly `len` bytes.
fn padded_line(len: usize, secs: u64, cwd: &str) -> Vec<u8> {
    let head = format!(
        "{{\"type\":\"user\",\"timestamp\":\"{}\",\"cwd\":\"{cwd}\",\"gitBranch\":\"main\",\"pad\":\"",
        iso(secs, "Z")
    );
    let mut v = head.into_bytes();
    v.resize(len - 2, b'x');
    v.extend_from_slice(b"\"}");
    assert_eq!(v.len(), len);
    v
}

#[test]
fn lines_at_and_over_the_cap() {
    const CAP: usize = 16 * 1024 * 1024;
    let sb = Sandbox::new();
    let t = sb.user.join("big.jsonl");
    let mut f = std::fs::File::create(&t).unwrap();
    for (i, l) in [
        claude_line(0, "/w/a", "main").into_bytes(),
        padded_line(CAP, 60, "/w/at-cap"),
        padded_line(CAP + 1, 120, "/w/over-cap"),
        claude_line(180, "/w/c", "main").into_bytes(),
    ]
    .iter()
    .enumerate()
    {
        f.write_all(l).unwrap();
        f.write_all(if i == 2 { b"\r\n" } else { b"\n" }).unwrap();
    }
    drop(f);
    // A Stop reads for half its deadline: a slow (debug) decoding of the 16 MiB line
    // may leave the rest to the next Stop, which goes on from there.
    for _ in 0..3 {
        let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload("cap", &t));
        exited(&out, 0, "hook");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["read_cut"] != true {
            break;
        }
    }
    assert_eq!(cwds(&sb, "cap"), ["/w/a", "/w/at-cap", "/w/c"]);
    let out = run(
        sb.cmd(&["observe", "--session", "cap2", t.to_str().unwrap()]),
        b"",
    );
    exited(&out, 0, "observe");
    assert_eq!(text(&out.stdout), "3\n");
    let out = run(sb.cmd(&["markers", t.to_str().unwrap()]), b"");
    exited(&out, 0, "markers");
    let out = run(
        sb.cmd(&["backfill", "--no-markers", "--json", t.to_str().unwrap()]),
        b"",
    );
    exited(&out, 0, "backfill");
    assert_eq!(cwds(&sb, "big"), ["/w/a", "/w/at-cap", "/w/c"]);
}

/// Feed `bytes` to a child's stdin (a broken pipe is the child's right).
fn feed(bytes: Vec<u8>) -> Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>> {
    Some(Box::new(move |mut i| {
        let _ = i.write_all(&bytes);
    }))
}

/// Stream `total` bytes of `fill` (after `head`) into a child's stdin, never holding
/// more than 1 MiB.
fn stream(
    head: Vec<u8>,
    fill: u8,
    total: u64,
) -> Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>> {
    Some(Box::new(move |mut i| {
        if i.write_all(&head).is_err() {
            return;
        }
        let chunk = vec![fill; 1 << 20];
        let mut sent = head.len() as u64;
        while sent < total {
            let n = chunk.len().min((total - sent) as usize);
            if i.write_all(&chunk[..n]).is_err() {
                return;
            }
            sent += n as u64;
        }
    }))
}

const GIB: u64 = 1 << 30;
/// Peak RSS allowed for a child reading a 1 GiB line: the 16 MiB line cap, the
/// framer's buffer and the format probe, with room for the allocator.
const RSS_LIMIT_KIB: u64 = 128 * 1024;

#[test]
fn a_gigabyte_line_keeps_memory_bounded() {
    let sb = Sandbox::new();
    // Sparse files: 1 GiB of zeros after a record's opening, no newline, no disk used.
    let sparse = |name: &str, head: &[u8]| {
        let p = sb.user.join(name);
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(head).unwrap();
        f.set_len(GIB).unwrap();
        p
    };
    let first = claude_line(0, "/w/a", "main") + "\n";
    let mut head = first.clone().into_bytes();
    head.extend_from_slice(
        b"{\"type\":\"user\",\"timestamp\":\"2026-10-08T10:01:00Z\",\"cwd\":\"/w/huge\",\"pad\":\"",
    );
    let jsonl = sparse("huge.jsonl", &head);
    // A file whose first byte is `[` is the reference's JSON-array form, read whole.
    let array = sparse("huge-array.jsonl", b"[{\"type\":\"user\",\"pad\":\"");
    // The other readers share the hook's reader; a 256 MiB line (over the cap, and
    // over the RSS limit were it buffered) proves them bounded in less time.
    let quarter = sparse("quarter.jsonl", &head);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&quarter)
        .unwrap()
        .set_len(GIB / 4)
        .unwrap();
    let mut report = Vec::new();
    for (t, session, want, all) in [
        (&jsonl, "huge", vec!["/w/a"], false),
        (&quarter, "quarter", vec!["/w/a"], true),
        (&array, "huge-array", vec![], true),
    ] {
        for (what, args, stdin) in [
            (
                "hook stop",
                vec!["hook", "stop", "--json"],
                payload(session, t),
            ),
            (
                "observe",
                vec!["observe", "--session", session, t.to_str().unwrap()],
                vec![],
            ),
            ("markers", vec!["markers", t.to_str().unwrap()], vec![]),
            (
                "backfill",
                vec!["backfill", "--no-markers", t.to_str().unwrap()],
                vec![],
            ),
        ] {
            if !all && what != "hook stop" {
                continue;
            }
            let mut c = sb.cmd(&args);
            c.env("BRAIN_WRITER_ENABLED", "1");
            let m = run_measured(c, feed(stdin));
            assert_eq!(m.status.signal(), None, "{what}: {}", text(&m.stderr));
            assert_eq!(
                m.status.code(),
                Some(0),
                "{what} {}: {}",
                t.display(),
                text(&m.stderr)
            );
            report.push(format!(
                "{what} {}: peak RSS {} MiB in {:.2?}",
                t.file_name().unwrap().to_string_lossy(),
                m.max_rss_kib / 1024,
                m.elapsed
            ));
            assert!(
                m.max_rss_kib < RSS_LIMIT_KIB,
                "{what} on {}: peak RSS {} KiB",
                t.display(),
                m.max_rss_kib
            );
        }
        assert_eq!(cwds(&sb, session), want);
    }
    // Through a pipe: a 1 GiB hook payload (capped at 16 MiB) and a 1 GiB event line.
    let m = run_measured(
        sb.cmd(&["hook", "stop"]),
        stream(b"{\"session_id\":\"pipe\",\"x\":\"".to_vec(), b'a', GIB),
    );
    assert_eq!(m.status.code(), Some(0), "{}", text(&m.stderr));
    assert!(text(&m.stderr).contains("not JSON"), "{}", text(&m.stderr));
    report.push(format!(
        "hook stop, 1 GiB payload: peak RSS {} MiB in {:.2?}",
        m.max_rss_kib / 1024,
        m.elapsed
    ));
    assert!(m.max_rss_kib < RSS_LIMIT_KIB, "{} KiB", m.max_rss_kib);
    let m = run_measured(
        sb.cmd(&["attribute", "--session", "pipe"]),
        stream(
            b"{\"at\":\"2026-10-08T10:00:00Z\",\"attrs\":{\"x\":\"".to_vec(),
            b'a',
            GIB,
        ),
    );
    assert_eq!(m.status.code(), Some(1), "{}", text(&m.stderr));
    assert!(
        text(&m.stderr).contains("over the line cap"),
        "{}",
        text(&m.stderr)
    );
    report.push(format!(
        "attribute, 1 GiB event line: peak RSS {} MiB in {:.2?}",
        m.max_rss_kib / 1024,
        m.elapsed
    ));
    assert!(m.max_rss_kib < RSS_LIMIT_KIB, "{} KiB", m.max_rss_kib);
    for r in report {
        eprintln!("{r}");
    }
}

#[test]
fn deeply_nested_json() {
    let sb = Sandbox::new();
    let deep = "[".repeat(1_000_000);
    let objects = "{\"a\":".repeat(300_000);
    let t = sb.user.join("deep.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            deep.clone(),
            objects.clone(),
            claude_line(60, "/w/b", "main"),
        ],
    );
    let whole = sb.user.join("deep-array.jsonl");
    std::fs::write(&whole, &deep).unwrap();
    for (p, session, want) in [
        (&t, "deep", vec!["/w/a", "/w/b"]),
        (&whole, "deeparr", vec![]),
    ] {
        let mut c = sb.cmd(&["hook", "stop", "--json"]);
        c.env("BRAIN_WRITER_ENABLED", "1");
        let out = run(c, &payload(session, p));
        exited(&out, 0, session);
        assert_eq!(cwds(&sb, session), want);
        let out = run(
            sb.cmd(&[
                "observe",
                "--session",
                &format!("{session}2"),
                p.to_str().unwrap(),
            ]),
            b"",
        );
        exited(&out, 0, session);
        let out = run(sb.cmd(&["markers", p.to_str().unwrap()]), b"");
        exited(&out, 0, session);
        let out = run(sb.cmd(&["identity"]), &payload(session, p));
        exited(&out, 0, session);
    }
    // As a hook payload, an event line, a --scope value, and inside the scope log.
    let out = run(sb.cmd(&["hook", "stop"]), deep.as_bytes());
    exited(&out, 0, "payload");
    assert!(text(&out.stderr).contains("not JSON"));
    let out = run(sb.cmd(&["attribute", "--session", "deep"]), deep.as_bytes());
    exited(&out, 1, "attribute");
    let arg = "[".repeat(100_000);
    let out = run(
        sb.cmd(&[
            "scope",
            "record",
            "--session",
            "deep",
            "--at",
            "2026-10-08T11:00:00Z",
            "--scope",
            &arg,
        ]),
        b"",
    );
    exited(&out, 2, "--scope");
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(sb.log("deep"))
        .unwrap();
    log.write_all(deep.as_bytes()).unwrap();
    log.write_all(b"\n").unwrap();
    drop(log);
    let out = run(sb.cmd(&["scope", "log", "--session", "deep"]), b"");
    exited(&out, 0, "scope log");
    assert_eq!(text(&out.stdout).lines().count(), 2);
    let out = run(
        sb.cmd(&[
            "scope",
            "record",
            "--session",
            "deep",
            "--at",
            "2026-10-08T11:00:00Z",
            "--cwd",
            "/w/c",
        ]),
        b"",
    );
    exited(&out, 0, "record after a deep line");
    assert!(
        text(&out.stdout).contains("\"sequence\": 2"),
        "{}",
        text(&out.stdout)
    );
    assert!(sb.outside_home().iter().all(|p| p.starts_with("user/deep")));
}

#[test]
fn odd_bytes_in_transcripts() {
    let sb = Sandbox::new();
    let rec = |ts: &str, cwd: &str| -> Vec<u8> {
        format!(
            "{{\"type\":\"user\",\"timestamp\":\"{ts}\",\"cwd\":\"{cwd}\",\"gitBranch\":\"main\"}}"
        )
        .into_bytes()
    };
    let join = |lines: Vec<Vec<u8>>, sep: &[u8]| -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines {
            out.extend_from_slice(&l);
            out.extend_from_slice(sep);
        }
        out
    };
    let t0 = "2026-10-08T10:00:00Z";
    let t1 = "2026-10-08T10:01:00Z";
    let t2 = "2026-10-08T10:02:00Z";
    let cases: Vec<(&str, Vec<u8>, Vec<&str>)> = vec![
        // Invalid UTF-8 in a value: that line is skipped, the others are read.
        ("utf8", {
            let mut a = rec(t0, "/w/x");
            a.splice(a.len() - 22..a.len() - 22, [0xff, 0xfe]);
            join(vec![a, rec(t1, "/w/b"), b"\xc3\x28\xa0\xa1".to_vec()], b"\n")
        }, vec!["/w/b"]),
        // A lone surrogate escape and an escaped NUL are valid JSON strings.
        ("escapes", join(vec![rec(t0, "/w/\\ud800"), rec(t1, "/w/a\\u0000b"), b"\x00\x00\x00".to_vec()], b"\n"),
            vec!["/w/a\u{0}b"]),
        // Numbers out of every range: the line is skipped or the number is a string.
        ("numbers", join(vec![
            b"{\"type\":\"user\",\"timestamp\":1e400,\"cwd\":\"/w/n1\"}".to_vec(),
            b"{\"type\":\"user\",\"timestamp\":123456789012345678901234567890123,\"cwd\":\"/w/n2\"}".to_vec(),
            format!("{{\"type\":\"user\",\"timestamp\":\"{t0}\",\"cwd\":\"/w/n3\",\"gitBranch\":-1e999}}").into_bytes(),
            format!("{{\"type\":\"user\",\"timestamp\":\"{t1}\",\"cwd\":\"/w/n4\",\"gitBranch\":\"main\",\"n\":{}}}", "9".repeat(5000)).into_bytes(),
            rec(t2, "/w/n5"),
        ], b"\n"), vec!["/w/n4", "/w/n5"]),
        // Duplicate keys: the last one wins, as in Python's json.
        ("dup", join(vec![format!("{{\"type\":\"user\",\"timestamp\":\"{t0}\",\"cwd\":\"/w/x\",\"cwd\":\"/w/y\",\"gitBranch\":\"main\"}}").into_bytes()], b"\n"),
            vec!["/w/y"]),
        // A BOM on the first line is stripped (a deliberate deviation: the reference
        // would skip that line); anywhere else it spoils the line.
        ("bom", {
            let mut a = b"\xef\xbb\xbf".to_vec();
            a.extend(rec(t0, "/w/a"));
            let mut b = b"\xef\xbb\xbf".to_vec();
            b.extend(rec(t1, "/w/b"));
            join(vec![a, b, rec(t2, "/w/c")], b"\n")
        }, vec!["/w/a", "/w/c"]),
        // CRLF: the same transitions as LF.
        ("crlf", join(vec![rec(t0, "/w/a"), rec(t1, "/w/b"), rec(t2, "/w/c")], b"\r\n"), vec!["/w/a", "/w/b", "/w/c"]),
        // Lone CRs and blank lines.
        ("cr", join(vec![rec(t0, "/w/a"), b"\r".to_vec(), b"".to_vec(), rec(t1, "/w/b")], b"\n"), vec!["/w/a", "/w/b"]),
    ];
    for (name, bytes, want) in &cases {
        let t = sb.user.join(format!("{name}.jsonl"));
        std::fs::write(&t, bytes).unwrap();
        let mut c = sb.cmd(&["hook", "stop", "--json"]);
        c.env("BRAIN_WRITER_ENABLED", "1");
        let out = run(c, &payload(name, &t));
        exited(&out, 0, name);
        assert_eq!(&cwds(&sb, name), want, "{name}");
        let out = run(
            sb.cmd(&[
                "observe",
                "--session",
                &format!("{name}-whole"),
                t.to_str().unwrap(),
            ]),
            b"",
        );
        exited(&out, 0, name);
        assert_eq!(
            &cwds(&sb, &format!("{name}-whole")),
            want,
            "{name} (whole read)"
        );
        let out = run(sb.cmd(&["markers", t.to_str().unwrap()]), b"");
        exited(&out, 0, name);
        let out = run(sb.cmd(&["identity"]), &payload(name, &t));
        exited(&out, 0, name);
    }
    // Hook payloads with the same oddities.
    for p in [
        b"\xef\xbb\xbf{\"session_id\":\"p1\"}".to_vec(),
        b"{\"session_id\":\"p\xff\"}".to_vec(),
        b"{\"session_id\":\"x\",\"session_id\":\"y\"}".to_vec(),
        b"{\"session_id\":1e999}".to_vec(),
        b"{\"session_id\":\"\\ud800\"}".to_vec(),
        b"{\"session_id\":\"p2\"}\r\n".to_vec(),
    ] {
        let out = run(sb.cmd(&["hook", "stop"]), &p);
        exited(&out, 0, &text(&p));
        assert!(!out.stderr.is_empty());
    }
    assert!(sb
        .outside_home()
        .iter()
        .all(|p| p.starts_with("user/") && p.ends_with(".jsonl")));
}

#[test]
fn an_unwritable_home() {
    let sb = Sandbox::new();
    let t = sb.user.join("t.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            claude_marker_line(30, "/w/a", "x"),
        ],
    );
    let file_home = sb.root.join("home-is-a-file");
    std::fs::write(&file_home, b"").unwrap();
    // As root, permissions do not stop writes: use paths no one can create.
    for home in [
        file_home.as_path(),
        Path::new("/proc/transcope-home"),
        Path::new("/dev/null/home"),
    ] {
        let record = run(
            cmd_in(
                home,
                &sb.user,
                &[
                    "scope",
                    "record",
                    "--session",
                    "s",
                    "--at",
                    "2026-10-08T10:00:00Z",
                    "--cwd",
                    "/x",
                ],
            ),
            b"",
        );
        exited(&record, 1, "scope record");
        assert!(
            text(&record.stderr).contains("session-scopes directory"),
            "{}",
            text(&record.stderr)
        );
        for hook in ["stop", "session-start"] {
            let mut c = cmd_in(home, &sb.user, &["hook", hook, "--json"]);
            c.env("BRAIN_WRITER_ENABLED", "1");
            let out = run(c, &payload("s", &t));
            exited(&out, 0, hook);
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(v["error"].is_string(), "{hook}: {v}");
            let mut c = cmd_in(home, &sb.user, &["hook", hook, "--strict"]);
            c.env("BRAIN_WRITER_ENABLED", "1");
            let out = run(c, &payload("s", &t));
            if hook == "stop" {
                exited(&out, 1, "--strict");
            }
        }
        let out = run(
            cmd_in(home, &sb.user, &["backfill", t.to_str().unwrap()]),
            b"",
        );
        exited(&out, 1, "backfill");
        // observe: a runtime error (exit 1), or nothing recorded (exit 0, "0") with the
        // reason on stderr — either way said clearly.
        let out = run(
            cmd_in(
                home,
                &sb.user,
                &["observe", "--session", "s", t.to_str().unwrap()],
            ),
            b"",
        );
        assert_eq!(out.status.signal(), None);
        match out.status.code() {
            Some(0) => assert_eq!(text(&out.stdout), "0\n"),
            Some(1) => assert!(out.stdout.is_empty()),
            other => panic!("observe: {other:?}"),
        }
        assert!(!out.stderr.is_empty());
    }
    assert_eq!(std::fs::read(&file_home).unwrap(), b"");
}

#[test]
fn a_full_disk() {
    let sb = Sandbox::new();
    let session = "full";
    let record = |at: &str, cwd: &str, limit: Option<u64>| {
        let mut c = sb.record_cmd(session, at, cwd);
        if let Some(l) = limit {
            limit_file_size(&mut c, l);
        }
        run(c, b"")
    };
    for i in 0..3 {
        exited(
            &record(&iso(i * 60, "+00:00"), &format!("/w/{i}"), None),
            0,
            "record",
        );
    }
    let before = std::fs::read(sb.log(session)).unwrap();
    // Room for 40 more bytes: the row is torn, the error is clear.
    let out = record(
        &iso(600, "+00:00"),
        "/w/torn",
        Some(before.len() as u64 + 40),
    );
    exited(&out, 1, "record on a full disk");
    assert!(
        text(&out.stderr).contains("appending to the scope log"),
        "{}",
        text(&out.stderr)
    );
    let torn = std::fs::read(sb.log(session)).unwrap();
    assert!(torn.starts_with(&before));
    assert_eq!(
        torn.len(),
        before.len() + 40,
        "a partial row was left, as on a real full disk"
    );
    // Not even a byte of room.
    let out = record(&iso(660, "+00:00"), "/w/none", Some(torn.len() as u64));
    exited(&out, 1, "record with no room");
    assert_eq!(std::fs::read(sb.log(session)).unwrap(), torn);
    // Space again: the next row starts on a fresh line, the torn one is skipped, and
    // `sequence` counts readable rows.
    let out = record(&iso(720, "+00:00"), "/w/after", None);
    exited(&out, 0, "record after");
    let after = std::fs::read(sb.log(session)).unwrap();
    assert!(after.starts_with(&torn));
    assert_eq!(after[torn.len()], b'\n', "fresh-line rule");
    let rows = check_log(&after);
    let got: Vec<&str> = rows.iter().map(|r| r["cwd"].as_str().unwrap()).collect();
    assert_eq!(got, ["/w/0", "/w/1", "/w/2", "/w/after"]);

    // A hook on a full disk: exit 0, a clear error, and the next Stop catches up.
    let t = sb.user.join("t.jsonl");
    write_lines(
        &t,
        &[
            claude_line(0, "/w/a", "main"),
            claude_line(60, "/w/b", "main"),
            claude_marker_line(90, "/w/b", "full"),
        ],
    );
    let mut c = sb.cmd(&["hook", "stop", "--json"]);
    c.env("BRAIN_WRITER_ENABLED", "1");
    limit_file_size(&mut c, 0);
    let out = run(c, &payload("hookfull", &t));
    exited(&out, 0, "hook on a full disk");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("File too large")),
        "{v}"
    );
    assert!(std::fs::read(sb.log("hookfull"))
        .unwrap_or_default()
        .is_empty());
    let mut c = sb.cmd(&["hook", "stop", "--json"]);
    c.env("BRAIN_WRITER_ENABLED", "1");
    let out = run(c, &payload("hookfull", &t));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["transitions_recorded"], 2, "{v}");
    assert!(v["error"].is_null(), "{v}");
    assert_eq!(cwds(&sb, "hookfull"), ["/w/a", "/w/b"]);
    // The marker that could not be written is delivered by the Stop that caught up,
    // and the failed attempt left no temporary file behind.
    assert_eq!(v["written"]["outbox"], 1, "{v}");
    let outbox = tree(&sb.home.join("brain-outbox"));
    assert_eq!(outbox.len(), 1, "{outbox:?}");
    assert!(tree(&sb.home.join("transcope/cursors"))
        .iter()
        .all(|f| !f.ends_with(".tmp")));
}

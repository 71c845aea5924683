//! Issue 33, item 2: `index rebuild` rebuilds everything the index knew — the folders a
//! backfill was named (relative ones from the folder they were named from), the
//! transcripts a Stop recorded outside the default folders — with the ledger's
//! delivery states, and it does so over an index that cannot be used (truncated,
//! garbage, garbage behind a valid header, a directory, a newer schema, empty, a link,
//! another program's), which it moves aside and never deletes. Every other command
//! that meets such an index says so and leaves it as it is.
//!
//! Each case answers every query before and after the rebuild and compares the JSON.

mod common;

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::copy_tree;
use common::reliability::*;
use serde_json::Value;
use transcope_sqlite::rusqlite;

/// A brain that accepts every marker (200).
fn brain() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || accept_all(stream));
        }
    });
    url
}

fn accept_all(stream: TcpStream) {
    let mut out = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while read_request(&mut reader).is_some() {
        if out
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
            .is_err()
        {
            return;
        }
    }
}

/// The session of the Stop recorded outside the default folders.
const STOPPED: &str = "0f0e0d0c-0000-4000-8000-0000000000aa";

/// The hook's Stop for [`STOPPED`], the brain writer on and no brain: what it cannot
/// send goes to the outbox.
fn stop(sb: &Sandbox) -> std::process::Output {
    let t = sb.root.join("elsewhere").join(format!("{STOPPED}.jsonl"));
    let mut c = sb.cmd(&["hook", "stop"]);
    c.env("BRAIN_WRITER_ENABLED", "1");
    run(c, &payload(STOPPED, &t))
}

/// A home as the README's flow leaves it, with the three delivery states:
/// `backfill arch` (a relative folder, from `$HOME`), its 6 markers delivered to a
/// brain; then a Stop for a transcript outside `~/.claude/projects`, whose markers go
/// to the outbox but the one past the Stop's cap, which stays pending.
fn home_with_an_archive() -> Sandbox {
    let sb = Sandbox::new();
    copy_tree(&testdata().join("sample-archive"), &sb.user.join("arch"));
    let out = run(sb.cmd(&["backfill", "arch"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut c = sb.cmd(&["deliver", "--json"]);
    c.env("BRAIN_URL", brain());
    let out = run(c, b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sent"], 6, "{v}");
    // The fixture transcript again, as another session, read by a Stop.
    let fixture =
        std::fs::read_to_string(sb.user.join(
            "arch/claude/projects/-work-alpha-one/0f0e0d0c-0000-4000-8000-000000000001.jsonl",
        ))
        .unwrap()
        .replace("0f0e0d0c-0000-4000-8000-000000000001", STOPPED);
    std::fs::create_dir_all(sb.root.join("elsewhere")).unwrap();
    std::fs::write(
        sb.root.join("elsewhere").join(format!("{STOPPED}.jsonl")),
        fixture,
    )
    .unwrap();
    let out = stop(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    sb
}

/// `transcope args… --json` from `$HOME`: its exit status, stdout, stderr.
fn ask(sb: &Sandbox, args: &[&str]) -> (Option<i32>, String, String) {
    let out = run(sb.cmd(args), b"");
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Every query's JSON answer, by the command line asked.
fn answers(sb: &Sandbox) -> BTreeMap<String, String> {
    let mut asked: Vec<Vec<String>> = [
        &["sessions", "--json"][..],
        &["ledger", "--json"],
        &["ledger", "--json", "--pending"],
        &["usage", "--json"],
        &[
            "usage", "--json", "--by", "session", "--by", "model", "--by", "day",
        ],
        &["usage", "--json", "--by", "root-session", "--by", "task"],
        &["deliver", "--dry-run", "--json"],
    ]
    .iter()
    .map(|a| a.iter().map(|s| s.to_string()).collect())
    .collect();
    let (code, sessions, err) = ask(sb, &["sessions", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    for line in sessions.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = v["session"].as_str().unwrap().to_owned();
        asked.push(vec![
            "timeline".into(),
            "--session".into(),
            key,
            "--json".into(),
        ]);
    }
    asked
        .into_iter()
        .map(|a| {
            let args: Vec<&str> = a.iter().map(String::as_str).collect();
            let (code, out, err) = ask(sb, &args);
            assert_eq!(code, Some(0), "{a:?}: {err}");
            (a.join(" "), out)
        })
        .collect()
}

/// The ledger's states, counted.
fn states(answers: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in answers["ledger --json"].lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        *out.entry(v["state"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    out
}

/// `index rebuild --json` from a folder other than the one the backfill ran in.
fn rebuild(sb: &Sandbox) -> Value {
    let cwd = sb.root.join("another-folder");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut c: Command = sb.cmd(&["index", "rebuild", "--json"]);
    c.current_dir(&cwd);
    let out = run(c, b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn index(sb: &Sandbox) -> PathBuf {
    sb.home.join("transcope/index.sqlite")
}

fn remove_sidecars(sb: &Sandbox) {
    for s in ["-wal", "-shm", "-journal"] {
        let mut p = index(sb).into_os_string();
        p.push(s);
        let _ = std::fs::remove_file(p);
    }
}

/// What sits at `p` (a link, a directory, a file's bytes by their hash), to tell it
/// was left as it was.
fn what_is_at(p: &Path) -> (bool, bool, Option<u64>) {
    use std::hash::{Hash, Hasher};
    let m = std::fs::symlink_metadata(p).unwrap();
    let bytes = m.is_file().then(|| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        std::fs::read(p).unwrap().hash(&mut h);
        h.finish()
    });
    (m.file_type().is_symlink(), m.is_dir(), bytes)
}

/// The case: the answers before, `damage` done to the index, every command that meets
/// it says so and leaves it, then the rebuild answers as before.
fn rebuilt_after(damaged: bool, damage: impl FnOnce(&Sandbox)) {
    let sb = home_with_an_archive();
    let before = answers(&sb);
    assert_eq!(
        states(&before),
        BTreeMap::from([
            ("delivered".to_owned(), 6),
            ("outbox".to_owned(), 5),
            ("pending".to_owned(), 1),
        ]),
        "{}",
        before["ledger --json"]
    );
    assert!(before["usage --json"].contains("\"messages\""));
    damage(&sb);
    if damaged {
        let path = index(&sb).display().to_string();
        let was = what_is_at(&index(&sb));
        for q in [
            &["ledger", "--json"][..],
            &["usage", "--json"],
            &["sessions", "--json"],
        ] {
            let (code, _, err) = ask(&sb, q);
            assert_eq!(code, Some(1), "{q:?}: {err}");
            assert!(
                err.contains(&path) && err.contains("transcope index rebuild"),
                "{err}"
            );
        }
        let out = stop(&sb);
        assert_eq!(out.status.code(), Some(0));
        let err = text(&out.stderr);
        assert!(
            err.contains(&path) && err.contains("transcope index rebuild"),
            "{err}"
        );
        let (code, doctor, _) = ask(&sb, &["doctor", "--json"]);
        assert_eq!(code, Some(1));
        let check: Value = doctor
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["check"] == "index")
            .unwrap();
        assert_eq!(check["status"], "fail", "{check}");
        assert!(
            check["fix"].as_str().unwrap().contains("index rebuild"),
            "{check}"
        );
        assert_eq!(what_is_at(&index(&sb)), was, "left as it was");
    }
    let v = rebuild(&sb);
    assert_eq!(v["files"], 13, "{v}");
    assert_eq!(v["gone"], 0, "{v}");
    match v["moved_aside"].as_str() {
        Some(p) => {
            assert!(damaged, "{v}");
            assert!(std::fs::symlink_metadata(p).is_ok(), "{p} kept");
        }
        None => assert!(!damaged, "{v}"),
    }
    let after = answers(&sb);
    for (q, a) in &before {
        assert_eq!(&after[q], a, "{q}");
    }
    assert_eq!(after.len(), before.len());
}

/// The README's flow: `backfill <folder>`, then `index rebuild` (it read 0
/// transcripts and kept 0 of the markers).
#[test]
fn rebuild_after_a_backfill_of_a_named_folder_answers_every_query_as_before() {
    rebuilt_after(false, |_| {});
}

#[test]
fn rebuild_over_a_truncated_index_answers_as_before() {
    rebuilt_after(true, |sb| {
        let bytes = std::fs::read(index(sb)).unwrap();
        std::fs::write(index(sb), &bytes[..bytes.len() / 2]).unwrap();
        remove_sidecars(sb);
    });
}

#[test]
fn rebuild_over_garbage_answers_as_before() {
    rebuilt_after(true, |sb| {
        let garbage: Vec<u8> = (0..65536u32).map(|i| (i * 7919 % 251) as u8).collect();
        std::fs::write(index(sb), garbage).unwrap();
        remove_sidecars(sb);
    });
}

#[test]
fn rebuild_over_garbage_behind_a_valid_header_answers_as_before() {
    rebuilt_after(true, |sb| {
        let mut bytes = std::fs::read(index(sb)).unwrap();
        for (i, b) in bytes.iter_mut().enumerate().skip(100) {
            *b = (i * 7919 % 251) as u8;
        }
        std::fs::write(index(sb), bytes).unwrap();
        remove_sidecars(sb);
    });
}

#[test]
fn rebuild_over_a_directory_in_its_place_answers_as_before() {
    rebuilt_after(true, |sb| {
        std::fs::remove_file(index(sb)).unwrap();
        remove_sidecars(sb);
        std::fs::create_dir(index(sb)).unwrap();
    });
}

#[test]
fn rebuild_over_a_newer_schema_answers_as_before() {
    rebuilt_after(true, |sb| {
        let c = rusqlite::Connection::open(index(sb)).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    });
}

#[test]
fn rebuild_over_a_zero_length_index_answers_as_before() {
    rebuilt_after(true, |sb| {
        std::fs::write(index(sb), b"").unwrap();
        remove_sidecars(sb);
    });
}

#[test]
fn rebuild_over_a_link_in_its_place_answers_as_before() {
    rebuilt_after(true, |sb| {
        // The real index, moved where the link points: never read through it.
        let away = sb.root.join("linked.sqlite");
        std::fs::rename(index(sb), &away).unwrap();
        remove_sidecars(sb);
        std::os::unix::fs::symlink(&away, index(sb)).unwrap();
    });
}

#[test]
fn rebuild_over_another_programs_database_answers_as_before() {
    rebuilt_after(true, |sb| {
        std::fs::remove_file(index(sb)).unwrap();
        remove_sidecars(sb);
        let c = rusqlite::Connection::open(index(sb)).unwrap();
        c.execute_batch("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1);")
            .unwrap();
    });
}

/// With neither the old index nor the states journal, a marker waiting in the outbox
/// is `outbox` again; the ones the brain took are pending, and counted.
#[test]
fn without_index_or_journal_the_outbox_gives_the_states_and_the_rest_are_counted() {
    let sb = home_with_an_archive();
    std::fs::write(index(&sb), b"garbage").unwrap();
    remove_sidecars(&sb);
    std::fs::remove_file(sb.home.join("transcope/index-states.jsonl")).unwrap();
    let v = rebuild(&sb);
    assert_eq!(v["states_unknown"], 7, "{v}");
    assert_eq!(
        states(&answers(&sb)),
        BTreeMap::from([("outbox".to_owned(), 5), ("pending".to_owned(), 7)])
    );
}

/// A recorded transcript that is gone is read from the transcope archive (issue 36);
/// one that is not there either is counted and named, not an error.
#[test]
fn a_recorded_transcript_that_is_gone_is_counted() {
    let sb = home_with_an_archive();
    let gone = sb.root.join("elsewhere").join(format!("{STOPPED}.jsonl"));
    std::fs::remove_file(&gone).unwrap();
    let v = rebuild(&sb);
    assert_eq!(
        (v["gone"].as_u64(), v["from_archive"].as_u64()),
        (Some(0), Some(1)),
        "{v}"
    );
    assert_eq!(v["files"], 13, "{v}");
    // Out of the archive too: then it is gone, and said.
    std::fs::remove_dir_all(sb.home.join("transcope/archive")).unwrap();
    let v = rebuild(&sb);
    assert_eq!(
        (v["gone"].as_u64(), v["from_archive"].as_u64()),
        (Some(1), Some(0)),
        "{v}"
    );
    assert_eq!(v["files"], 12, "{v}");
}

/// A rebuild keys each request as the backfill did: a request without an id of its
/// own (Codex's) is keyed by its session and place, so two sessions' requests at the
/// same place stay two requests, and the keys an export receiver was sent stay valid.
#[test]
fn rebuild_keys_every_request_as_the_backfill_did() {
    let corpus = tempfile::tempdir().unwrap();
    let mut spec = transcope_corpus::CorpusSpec::new(41, 2 << 20);
    spec.codex_share = 1.0;
    transcope_corpus::generate(&spec, corpus.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let path = corpus.path().to_str().unwrap();
    common::succeeded(
        &common::run(home.path(), &["backfill", path], "", &[]),
        &"backfill",
    );
    let keys = || -> Vec<(String, i64)> {
        let db = rusqlite::Connection::open(home.path().join("transcope/index.sqlite")).unwrap();
        let mut st = db
            .prepare("SELECT hex(message_key), output_tokens FROM usage ORDER BY 1")
            .unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let before = keys();
    assert!(before.len() > 50, "{}", before.len());
    common::succeeded(
        &common::run(home.path(), &["index", "rebuild"], "", &[]),
        &"rebuild",
    );
    let after = keys();
    let moved = before.iter().filter(|k| !after.contains(k)).count();
    assert_eq!(
        (moved, after.len()),
        (0, before.len()),
        "requests keyed otherwise (or lost) by the rebuild"
    );
}

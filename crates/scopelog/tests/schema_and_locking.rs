//! Case 43 (every row and attribution result matches `urn:swarm-v2:session-scope`,
//! checked by a strict decoder written from §1.3) and the locking behaviour of §2.4.

mod common;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::Fixture;
use serde_json::{Map, Value};
use transcope_core::{Label, Scope, ScopeField};
use transcope_scopelog::{Event, LockWait, RecordError, ScopeLog};

const ROW_KEYS: [&str; 15] = [
    "session_id",
    "sequence",
    "at",
    "transition_id",
    "project_id",
    "project",
    "repo",
    "worktree",
    "cwd",
    "remote",
    "branch",
    "swarm",
    "task",
    "task_revision",
    "lane",
];

/// The `transition` branch of the schema, strictly (and key order, which the schema
/// does not require but the byte format does).
fn is_transition(row: &Map<String, Value>) -> bool {
    let keys: Vec<&str> = row.keys().map(String::as_str).collect();
    keys == ROW_KEYS
        && row["session_id"]
            .as_str()
            .is_some_and(transcope_core::session::is_valid_session_id)
        && row["sequence"].as_u64().is_some()
        && row["at"].as_str().is_some_and(|s| !s.is_empty())
        && row["transition_id"].as_str().is_some_and(|s| {
            s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
        && ROW_KEYS[4..].iter().all(|k| row[*k].is_string())
}

/// The `attribution` branch of the schema.
fn is_attribution(v: &Map<String, Value>) -> bool {
    let Some(label) = v.get("attribution").and_then(Value::as_str) else {
        return false;
    };
    if !["scoped", "explicit", "fleet", "unknown", "refused"].contains(&label) {
        return false;
    }
    let others_ok = v.iter().filter(|(k, _)| *k != "attribution").all(|(k, x)| {
        ScopeField::from_key(k).is_some() && x.as_str().is_some_and(|s| !s.is_empty())
    });
    let size_ok = !matches!(label, "fleet" | "refused") || v.len() == 1;
    let id_ok = !matches!(label, "scoped" | "explicit") || v.contains_key("project_id");
    others_ok && size_ok && id_ok
}

#[test]
fn case43_transitions_and_attributions_match_the_schema() {
    let fx = Fixture::load();
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "first");
    fx.record_all(&log);
    let rows = log.transitions();
    assert_eq!(rows.len(), 4);
    assert!(rows.iter().all(is_transition));
    let results = log.attribute(&fx.marker_events(), Some(&fx.grant()));
    for r in &results {
        assert!(is_attribution(&r.to_json_map()), "{r:?}");
    }
    let refused = transcope_core::Attribution::bare(Label::Refused).to_json_map();
    assert!(is_attribution(&refused));
    // Invalid examples.
    let bad: [Value; 2] = [
        serde_json::json!({"attribution": "fleet", "project_id": "x"}),
        serde_json::json!({"attribution": "scoped", "task": "only"}),
    ];
    for b in bad {
        assert!(!is_attribution(b.as_object().unwrap()));
    }
    let mut extra = rows[0].clone();
    extra.insert("grant_ref".into(), "x".into());
    assert!(!is_transition(&extra));
}

#[test]
fn concurrent_writers_serialise_through_the_lock() {
    let h = tempfile::tempdir().unwrap();
    let threads = 8;
    let per = 10;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let home = h.path().to_owned();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let log = ScopeLog::open(&home, "busy");
                barrier.wait();
                for i in 0..per {
                    let s = Scope::default().with(ScopeField::Worktree, format!("t{t}-{i}"));
                    // Same instant for everyone: never "older", always a change.
                    log.record(&s, "2026-10-08T10:00:00Z", None).unwrap();
                }
            })
        })
        .collect();
    for th in handles {
        th.join().unwrap();
    }
    let log = ScopeLog::open(h.path(), "busy");
    let rows = log.transitions();
    assert_eq!(rows.len(), threads * per);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["sequence"].as_u64(), Some(i as u64));
    }
    let text = std::fs::read_to_string(log.path().unwrap()).unwrap();
    assert_eq!(text.lines().count(), threads * per);
}

#[test]
fn a_held_lock_times_out_when_asked_to() {
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "held")
        .with_lock_wait(LockWait::AtMost(Duration::from_millis(50)));
    let s = Scope::default().with(ScopeField::Worktree, "one");
    log.record(&s, "2026-10-08T10:00:00Z", None).unwrap();
    let mut lock_path = log.path().unwrap().as_os_str().to_owned();
    lock_path.push(".lock");
    let holder = std::fs::OpenOptions::new()
        .write(true)
        .open(&lock_path)
        .unwrap();
    holder.lock().unwrap();
    let two = Scope::default().with(ScopeField::Worktree, "two");
    let err = log.record(&two, "2026-10-08T10:01:00Z", None).unwrap_err();
    assert!(matches!(err, RecordError::LockTimeout(_)), "{err}");
    holder.unlock().unwrap();
    assert!(log
        .record(&two, "2026-10-08T10:01:00Z", None)
        .unwrap()
        .is_some());
    let _ = Event::default();
}

#[test]
fn files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let h = tempfile::tempdir().unwrap();
    let log = ScopeLog::open(h.path(), "perm");
    log.record(
        &Scope::default().with(ScopeField::Cwd, "/x"),
        "2026-10-08T10:00:00Z",
        None,
    )
    .unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(log.path().unwrap()), 0o600);
    assert_eq!(mode(log.path().unwrap().parent().unwrap()), 0o700);
}

#[test]
fn the_log_is_never_followed_through_a_symlink() {
    let h = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim");
    std::fs::write(&target, b"").unwrap();
    let log = ScopeLog::open(h.path(), "sym");
    std::fs::create_dir_all(log.path().unwrap().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, log.path().unwrap()).unwrap();
    let err = log
        .record(
            &Scope::default().with(ScopeField::Cwd, "/x"),
            "2026-10-08T10:00:00Z",
            None,
        )
        .unwrap_err();
    assert!(matches!(err, RecordError::Io { .. }));
    assert_eq!(std::fs::read(&target).unwrap(), b"");
}

#[test]
fn a_transaction_writes_the_same_bytes_as_the_same_calls_one_by_one() {
    // A deterministic mix of changes, repeats, older times, revisions and bad times.
    let mut seed = 7u64;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for round in 0..30 {
        let calls: Vec<(Scope, String)> = (0..25)
            .map(|_| {
                let s = Scope::default()
                    .with(ScopeField::Worktree, format!("w{}", next(3)))
                    .with(ScopeField::Swarm, "s")
                    .with(ScopeField::Task, format!("t{}", next(2)))
                    .with(ScopeField::TaskRevision, format!("{}", next(4)));
                let at = if next(10) == 0 {
                    "bad".to_owned()
                } else {
                    format!("2026-10-08T10:{:02}:00Z", next(30))
                };
                (s, at)
            })
            .collect();
        let one = tempfile::tempdir().unwrap();
        let batch = tempfile::tempdir().unwrap();
        let a = ScopeLog::open(one.path(), "x");
        let b = ScopeLog::open(batch.path(), "x");
        // Both start from the same torn line, to exercise the fresh-line rule.
        for log in [&a, &b] {
            std::fs::create_dir_all(log.path().unwrap().parent().unwrap()).unwrap();
            std::fs::write(log.path().unwrap(), b"{\"torn").unwrap();
        }
        let mut txn = b.transaction();
        for (s, at) in &calls {
            let r1 = a
                .record(s, at, None)
                .map(|r| r.map(|w| w.line))
                .map_err(|e| e.to_string());
            let r2 = txn
                .record(s, at, None)
                .map(|r| r.map(|w| w.line))
                .map_err(|e| e.to_string());
            assert_eq!(r1, r2, "round {round}");
        }
        txn.commit().unwrap();
        assert_eq!(
            std::fs::read(a.path().unwrap()).unwrap(),
            std::fs::read(b.path().unwrap()).unwrap(),
            "round {round}"
        );
    }
}

/// A lock sidecar that is not a lockable file (here a folder, a symbolic link) is an
/// error, never a write without the lock; a batch gives up at its first record and
/// every later one fails the same way, without trying again.
#[test]
fn an_unusable_sidecar_is_an_error_and_nothing_is_written() {
    let h = tempfile::tempdir().unwrap();
    for (session, plant) in [
        (
            "folder",
            (|p: &std::path::Path| std::fs::create_dir(p).unwrap()) as fn(&_),
        ),
        ("link", |p| {
            std::os::unix::fs::symlink("elsewhere", p).unwrap()
        }),
    ] {
        let log = ScopeLog::open(h.path(), session);
        let path = log.path().unwrap().to_owned();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        plant(&transcope_scopelog::lockfile::sidecar_path(&path));
        let s = Scope::default().with(ScopeField::Worktree, "one");
        let err = log.record(&s, "2026-10-08T10:00:00Z", None).unwrap_err();
        assert!(matches!(err, RecordError::LockUnusable(_)), "{err}");
        assert!(err.to_string().contains("nothing written"), "{err}");
        let mut txn = log.transaction();
        for i in 0..3 {
            let s = Scope::default().with(ScopeField::Worktree, format!("w{i}"));
            let err = txn.record(&s, "2026-10-08T10:00:00Z", None).unwrap_err();
            assert!(matches!(err, RecordError::LockUnusable(_)), "{err}");
        }
        assert_eq!(txn.commit().unwrap(), 0);
        assert!(!path.exists(), "{session}: written without the lock");
    }
}

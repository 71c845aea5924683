//! Backfill is exact (the logs `observe --no-env` writes file by file), idempotent,
//! resumable, and never stopped by one bad file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use transcope_backfill::{backfill, discover, scope_key, MarkersOut, Options};
use transcope_change_detect::{Env, NoProjects};
use transcope_engine::Buffers;
use transcope_observe::{observe, Observe};
use transcope_scopelog::ScopeLog;

/// How a test observes: the reference's whole file, or through the cursor store.
#[derive(Clone, Copy)]
#[allow(dead_code)]
enum ReadMode {
    Whole,
    Incremental,
}

fn archive() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/sample-archive")
}

/// Every scope log under `home`, by file name.
fn logs(home: &Path) -> BTreeMap<String, String> {
    let dir = home.join("brain/session-scopes");
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".jsonl") {
            out.insert(name, std::fs::read_to_string(e.path()).unwrap());
        }
    }
    out
}

/// What a Stop (`observe --no-env`) records for `path` under `key`.
fn observe_as(
    home: &Path,
    key: &str,
    path: &Path,
    mode: ReadMode,
) -> transcope_observe::ObserveReport {
    let p = match mode {
        ReadMode::Whole => transcope_testkit::engine::pipeline_full(),
        ReadMode::Incremental => transcope_testkit::engine::pipeline(home),
    };
    let env = Env::new();
    let log = ScopeLog::open(home, key);
    observe(
        &p,
        &Observe::new(&log, path, &env),
        NoProjects,
        &mut Buffers::default(),
    )
    .unwrap()
}

fn run(home: &Path, paths: &[PathBuf], jobs: usize) -> transcope_backfill::Summary {
    let (files, problems) = discover(paths, &transcope_testkit::engine::adapters());
    assert!(problems.is_empty(), "{problems:?}");
    let mut o = Options::new(home, transcope_testkit::engine::pipeline(home));
    o.jobs = jobs;
    backfill(files, &o, &|_, _| {})
}

#[test]
fn discovery_finds_every_layout_with_its_key() {
    let (jobs, problems) = discover(&[archive()], &transcope_testkit::engine::adapters());
    assert!(problems.is_empty());
    let keys: BTreeMap<String, String> = jobs
        .iter()
        .map(|j| {
            let rel = j
                .path
                .strip_prefix(archive())
                .unwrap()
                .display()
                .to_string();
            (
                rel,
                scope_key(&transcope_testkit::engine::adapters(), &j.path).unwrap(),
            )
        })
        .collect();
    let want = [
        ("claude/projects/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl", "ef958aa1-0e93-49f0-bb71-150f63befcd1"),
        ("claude/projects/-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl", "ef958aa1-0e93-49f0-bb71-150f63befcd1.a4ca7529859c158c2"),
        ("claude/projects/-Users-dain-workspace-danieldemmel-me-next/agent-3ea04571.jsonl", "7864f562-717b-4d70-a1cb-b588f7826a1a.3ea04571"),
        ("codex/sessions/2025/12/10/rollout-2025-12-10T04-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl", "019b04ae-b1c6-7c72-a134-a4c2de66058c"),
        ("codex/sessions/2025/08/01/rollout-2025-08-20T09-15-00-1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b.jsonl", "1b7c2e44-0d1f-4e55-9a8b-6c2f0e3d4a5b"),
    ];
    for (rel, key) in want {
        assert_eq!(keys.get(rel).map(String::as_str), Some(key), "{rel}");
    }
    assert_eq!(
        jobs.len(),
        12,
        "the .meta.json sidecars are not transcripts"
    );
}

#[test]
fn logs_equal_observe_no_env_file_by_file() {
    let a = tempfile::tempdir().unwrap();
    let s = run(a.path(), &[archive()], 2);
    assert!(s.errors.is_empty());
    assert!(s.transitions > 10);
    let b = tempfile::tempdir().unwrap();
    let (jobs, _) = discover(&[archive()], &transcope_testkit::engine::adapters());
    for j in jobs {
        observe_as(
            b.path(),
            &scope_key(&transcope_testkit::engine::adapters(), &j.path).unwrap(),
            &j.path,
            ReadMode::Whole,
        );
    }
    assert_eq!(logs(a.path()), logs(b.path()));
}

#[test]
fn the_mmap_policy_gives_the_same_logs() {
    let a = tempfile::tempdir().unwrap();
    run(a.path(), &[archive()], 2);
    let b = tempfile::tempdir().unwrap();
    let (jobs, _) = discover(&[archive()], &transcope_testkit::engine::adapters());
    let mut o = Options::new(b.path(), transcope_testkit::engine::pipeline(b.path()));
    o.io = transcope_backfill::IoPolicy::MapQuiet {
        quiet: std::time::Duration::ZERO,
        min_size: 0,
    };
    backfill(jobs, &o, &|_, _| {});
    assert_eq!(logs(a.path()), logs(b.path()));
}

#[test]
fn a_second_backfill_writes_nothing_and_threads_do_not_matter() {
    let a = tempfile::tempdir().unwrap();
    run(a.path(), &[archive()], 1);
    let first = logs(a.path());
    let again = run(a.path(), &[archive()], 2);
    assert_eq!(again.transitions, 0);
    assert_eq!(logs(a.path()), first);
    let b = tempfile::tempdir().unwrap();
    run(b.path(), &[archive()], 2);
    assert_eq!(logs(b.path()), first);
}

#[test]
fn an_interrupted_backfill_resumes_to_the_same_logs() {
    let full = tempfile::tempdir().unwrap();
    run(full.path(), &[archive()], 2);
    let (jobs, _) = discover(&[archive()], &transcope_testkit::engine::adapters());
    // Killed after any prefix of files (a file's rows, under 1 MiB here, are written in
    // one piece, so a kill leaves whole files done or not done), then run again.
    for cut in 0..=jobs.len() {
        let home = tempfile::tempdir().unwrap();
        let mut o = Options::new(
            home.path(),
            transcope_testkit::engine::pipeline(home.path()),
        );
        o.jobs = 1;
        backfill(jobs[..cut].to_vec(), &o, &|_, _| {});
        run(home.path(), &[archive()], 2);
        assert_eq!(
            logs(home.path()),
            logs(full.path()),
            "cut after {cut} files"
        );
    }
}

#[test]
fn after_live_hooks_backfill_adds_only_what_the_rules_admit() {
    let t = archive()
        .join("claude/projects/-work-alpha-one/0f0e0d0c-0000-4000-8000-000000000001.jsonl");
    let bytes = std::fs::read(&t).unwrap();
    let home = tempfile::tempdir().unwrap();
    // A live Stop saw the first three lines.
    let part = home.path().join("live.jsonl");
    let cut = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(2)
        .unwrap()
        .0
        + 1;
    std::fs::write(&part, &bytes[..cut]).unwrap();
    let key = "0f0e0d0c-0000-4000-8000-000000000001";
    let log = ScopeLog::open(home.path(), key);
    assert_eq!(
        observe_as(home.path(), key, &part, ReadMode::Incremental)
            .outcome
            .recorded,
        3
    );
    let s = run(home.path(), std::slice::from_ref(&t), 1);
    assert_eq!(s.transitions, 1, "only the later folder change is new");
    let rows = log.transitions();
    assert_eq!(rows.len(), 4);
    let seqs: Vec<u64> = rows
        .iter()
        .map(|r| r["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [0, 1, 2, 3]);
}

#[test]
fn one_bad_file_is_reported_and_never_stops_the_others() {
    let src = tempfile::tempdir().unwrap();
    let projects = src.path().join("projects/-w");
    std::fs::create_dir_all(&projects).unwrap();
    let good = "{\"type\":\"user\",\"timestamp\":\"2026-10-08T10:00:00Z\",\"cwd\":\"/w\"}\n";
    std::fs::write(projects.join("good-1.jsonl"), good).unwrap();
    std::fs::write(projects.join("good-2.jsonl"), good).unwrap();
    // A name that is no valid scope-log key, and a flat agent file with no session.
    std::fs::write(projects.join("-bad name.jsonl"), good).unwrap();
    std::fs::write(projects.join("agent-x1.jsonl"), "not json\n").unwrap();
    // Unreadable (the test may run as root, where permissions do not stop reads:
    // use a FIFO-named file replaced by a directory instead).
    std::fs::create_dir_all(projects.join("dir.jsonl")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let s = run(home.path(), &[src.path().join("projects")], 2);
    assert_eq!(s.transitions, 2);
    assert_eq!(s.errors.len(), 2, "{:?}", s.errors);
    assert!(s.errors.iter().any(|e| e.path.ends_with("-bad name.jsonl")));
    assert!(s.errors.iter().any(|e| e.path.ends_with("agent-x1.jsonl")));
    let missing = discover(
        &[src.path().join("nope")],
        &transcope_testkit::engine::adapters(),
    );
    assert_eq!(missing.1.len(), 1);
}

#[test]
fn markers_go_to_ndjson_in_one_piece_per_file() {
    let home = tempfile::tempdir().unwrap();
    let out = home.path().join("markers.ndjson");
    let (jobs, _) = discover(&[archive()], &transcope_testkit::engine::adapters());
    let mut o = Options::new(
        home.path(),
        transcope_testkit::engine::pipeline(home.path()),
    );
    o.markers = MarkersOut::Ndjson(out.clone());
    let s = backfill(jobs, &o, &|_, _| {});
    assert_eq!(s.markers, 6);
    assert_eq!(
        s.unattributed, 5,
        "no grant, no resolver: the fixture's folders have no project"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    assert!(lines
        .iter()
        .all(|l| l["attrs"]["session_id"] == "0f0e0d0c-0000-4000-8000-000000000001"));
    assert_eq!(lines[4]["attrs"]["attribution"], "fleet");
    // The process's swarm variables never reach archived sessions.
    assert!(lines.iter().all(|l| l["attrs"].get("swarm").is_none()));
    // Each line has its marker's time and key.
    assert_eq!(lines[0]["at"], "2026-10-08T09:59:00Z");
    assert!(lines
        .iter()
        .all(|l| l["idempotency_key"].as_str().is_some_and(|k| k.len() == 32)));
    assert_eq!(s.markers_recorded, 6, "into the ledger too");

    // Run again, over a fresh home (no cursors, no ledger) into the same file: each
    // marker stays once in it.
    let again = tempfile::tempdir().unwrap();
    let (jobs, _) = discover(&[archive()], &transcope_testkit::engine::adapters());
    let mut o = Options::new(
        again.path(),
        transcope_testkit::engine::pipeline(again.path()),
    );
    o.markers = MarkersOut::Ndjson(out.clone());
    let s = backfill(jobs, &o, &|_, _| {});
    assert_eq!((s.markers, s.markers_recorded), (6, 6));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        text,
        "each marker once"
    );
}

#[test]
fn an_unclosed_marker_at_the_end_is_counted() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |t: &str, text: &str| {
        serde_json::json!({"type": "assistant", "timestamp": t, "cwd": "/w", "sessionId": "u1",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
        .to_string()
    };
    std::fs::write(
        dir.join("u1.jsonl"),
        format!(
            "{}\n{}\n",
            line(
                "2026-10-08T10:00:00Z",
                "<!-- @lesson -->closed<!-- @/lesson -->"
            ),
            line("2026-10-08T10:01:00Z", "<!-- @lesson -->never closed")
        ),
    )
    .unwrap();
    let (jobs, _) = discover(
        &[home.path().join("projects")],
        &transcope_testkit::engine::adapters(),
    );
    let ah = home.path().join("ah");
    let mut o = Options::new(&ah, transcope_testkit::engine::pipeline(&ah));
    o.markers = MarkersOut::Ledger;
    let s = backfill(jobs, &o, &|_, _| {});
    assert_eq!((s.markers, s.unclosed), (1, 1), "{s:?}");
    assert_eq!(s.to_json()["unclosed"], 1);
}

/// The key comes from the first line that answers, wherever it starts: after blank and
/// invalid lines, past the first read of the file, on a line that is cut off by the end
/// of the file. Lines after it are never needed.
#[test]
fn the_key_comes_from_the_first_line_that_answers() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(200_000);
    // A Codex rollout whose session_meta follows junk and a long non-object line.
    let rollout = dir
        .path()
        .join("rollout-2025-08-20T09-15-00-00000000-0000-4000-8000-000000000000.jsonl");
    std::fs::write(
        &rollout,
        format!(
            "\n  \nnot json\n[\"{long}\"]\n{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"0199aaaa-bbbb-4ccc-8ddd-eeeeffff0000\"}}}}\n{{\"type\":\"session_meta\",\"payload\":{{\"id\":\"ignored\"}}}}\n"
        ),
    )
    .unwrap();
    assert_eq!(
        scope_key(&transcope_testkit::engine::adapters(), &rollout).unwrap(),
        "0199aaaa-bbbb-4ccc-8ddd-eeeeffff0000"
    );
    // A flat sub-agent whose sessionId first appears on a line far into the file, and
    // on a last line with no newline.
    let flat = dir.path().join("agent-5eed.jsonl");
    std::fs::write(
        &flat,
        format!(
            "{{\"type\":\"user\",\"pad\":\"{long}\"}}\n{{\"type\":\"user\",\"sessionId\":\"7864f562-717b-4d70-a1cb-b588f7826a1a\"}}"
        ),
    )
    .unwrap();
    assert_eq!(
        scope_key(&transcope_testkit::engine::adapters(), &flat).unwrap(),
        "7864f562-717b-4d70-a1cb-b588f7826a1a.5eed"
    );
    // No line names one: an error, not a guess.
    let orphan = dir.path().join("agent-0rphan.jsonl");
    std::fs::write(
        &orphan,
        format!("{{\"type\":\"user\",\"pad\":\"{long}\"}}\n"),
    )
    .unwrap();
    assert!(scope_key(&transcope_testkit::engine::adapters(), &orphan)
        .unwrap_err()
        .contains("sessionId"));
}

/// Files that share a scope-log key (one session id in two project folders) are taken
/// one after the other in path order, as `observe` file by file in discovery order
/// takes them, whatever else runs beside them; the other order gives another log.
/// A Claude Code user line of session `sid` in folder `cwd` at `at`, with its `\n`.
fn user_line(sid: &str, cwd: &str, at: &str) -> String {
    serde_json::json!({
        "type": "user", "cwd": cwd, "gitBranch": "main", "sessionId": sid,
        "timestamp": at, "message": {"role": "user", "content": "go"},
    })
    .to_string()
        + "\n"
}

#[test]
fn files_that_share_a_key_are_taken_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let sid = "0a0b0c0d-0000-4000-8000-00000000beef";
    let line = |cwd: &str, at: &str| user_line(sid, cwd, at);
    // In path order each row is newer than the last, so all three are written; in any
    // other order a row older than the latest is refused. The first file is long, so
    // the other two wait behind its key while it is read.
    for (folder, cwd, at, repeat) in [
        ("-w-a", "/w/a", "2026-10-08T09:00:00Z", 4_000),
        ("-w-b", "/w/b", "2026-10-08T10:00:00Z", 1),
        ("-w-c", "/w/c", "2026-10-08T11:00:00Z", 1),
    ] {
        std::fs::create_dir_all(projects.join(folder)).unwrap();
        std::fs::write(
            projects.join(folder).join(format!("{sid}.jsonl")),
            line(cwd, at).repeat(repeat),
        )
        .unwrap();
    }
    // Other sessions to run beside them.
    for i in 0..8 {
        let other = format!("0a0b0c0d-0000-4000-8000-0000000000{i:02}");
        std::fs::write(
            projects.join("-w-a").join(format!("{other}.jsonl")),
            line("/w/c", "2026-10-08T08:00:00Z").replace(sid, &other),
        )
        .unwrap();
    }
    let by_observe = |order: &mut dyn Iterator<Item = PathBuf>| {
        let home = tempfile::tempdir().unwrap();
        for p in order {
            observe_as(
                home.path(),
                &scope_key(&transcope_testkit::engine::adapters(), &p).unwrap(),
                &p,
                ReadMode::Whole,
            );
        }
        logs(home.path())
    };
    let (jobs, _) = discover(
        std::slice::from_ref(&projects),
        &transcope_testkit::engine::adapters(),
    );
    let paths: Vec<PathBuf> = jobs.iter().map(|j| j.path.clone()).collect();
    let in_order = by_observe(&mut paths.iter().cloned());
    let reversed = by_observe(&mut paths.iter().rev().cloned());
    let log_name = format!("{sid}.jsonl");
    assert_ne!(
        in_order[&log_name], reversed[&log_name],
        "the order matters here"
    );
    assert_eq!(in_order[&log_name].lines().count(), 3);
    for jobs in [1, 2] {
        let home = tempfile::tempdir().unwrap();
        run(home.path(), std::slice::from_ref(&projects), jobs);
        assert_eq!(logs(home.path()), in_order, "--jobs {jobs}");
    }
}

/// Issue 37, item 4: a file that waits behind its key's other file keeps the open that
/// named it, and its read goes on from that open and the head read then — the file is
/// not opened nor its head read again. Shown by removing the waiting file's name once
/// it is queued: its read still finds every byte it had.
#[test]
fn a_file_waiting_behind_its_key_is_read_from_the_open_that_named_it() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let sid = "0a0b0c0d-0000-4000-8000-00000000cafe";
    let line = |cwd: &str, at: &str| user_line(sid, cwd, at);
    for (folder, cwd, at) in [
        ("-w-a", "/w/a", "2026-10-08T09:00:00Z"),
        ("-w-b", "/w/b", "2026-10-08T10:00:00Z"),
    ] {
        std::fs::create_dir_all(projects.join(folder)).unwrap();
        let path = projects.join(folder).join(format!("{sid}.jsonl"));
        std::fs::write(path, line(cwd, at).repeat(200)).unwrap();
    }
    let (jobs, _) = discover(
        std::slice::from_ref(&projects),
        &transcope_testkit::engine::adapters(),
    );
    assert_eq!(jobs.len(), 2);
    let waiting = jobs[1].path.clone();
    // The stream asks for a third file only once the second is named and queued (a
    // run that reads no usage reads the stream no further ahead than its workers).
    let queued = AtomicBool::new(false);
    let mut given = jobs.into_iter();
    let stream = std::iter::from_fn(|| {
        let next = given.next();
        if next.is_none() {
            queued.store(true, Ordering::Release);
        }
        next.map(Ok)
    });
    let home = tempfile::tempdir().unwrap();
    let mut o = Options::new(
        home.path(),
        transcope_testkit::engine::pipeline(home.path()),
    );
    o.jobs = 2;
    o.usage = false;
    // When the first file is read (its key's next file not yet taken), the second is
    // queued behind it: its name goes.
    let progress = |files: u64, _: u64| {
        if files == 1 {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !queued.load(Ordering::Acquire) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            std::fs::remove_file(&waiting).unwrap();
        }
    };
    let s = transcope_backfill::backfill_iter(stream, &o, &progress);
    assert!(queued.load(Ordering::Acquire), "the second file was queued");
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.files, 2);
    let log = &logs(home.path())[&format!("{sid}.jsonl")];
    assert!(log.contains("/w/a") && log.contains("/w/b"), "{log}");
    assert!(!waiting.exists());
}

/// The streaming walk yields every transcript once, in path order, however the paths
/// given overlap (a folder twice, a folder inside another, a file inside a folder).
#[test]
fn the_walk_yields_each_file_once_in_path_order() {
    let mut expected: Vec<PathBuf> = Vec::new();
    transcope_testkit::jsonl_files(&archive(), &mut expected);
    expected.sort();
    let claude = archive().join("claude");
    let given = [
        archive(),
        claude.join("projects"),
        archive(),
        expected[3].clone(),
    ];
    let walked: Vec<PathBuf> =
        transcope_backfill::walk(&given, &transcope_testkit::engine::adapters())
            .map(|r| r.unwrap().path)
            .collect();
    assert_eq!(walked, expected);
    // Folders, a missing path and a file named directly, in one sorted stream.
    let missing = archive().join("nope");
    let items: Vec<_> = transcope_backfill::walk(
        &[missing.clone(), claude.clone()],
        &transcope_testkit::engine::adapters(),
    )
    .collect();
    assert_eq!(items.iter().filter(|r| r.is_err()).count(), 1);
    assert!(items
        .iter()
        .any(|r| matches!(r, Err(p) if p.path == missing)));
    let files: Vec<&PathBuf> = items.iter().flatten().map(|j| &j.path).collect();
    assert!(files.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
    assert_eq!(
        files.len(),
        expected.iter().filter(|p| p.starts_with(&claude)).count()
    );
}

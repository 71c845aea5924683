//! Issue 35: `backfill --shard K/N`. N runs of the real binary over one archive, each
//! in its own home, write what one run writes: every file of the scope-log folder, by
//! relative path and byte for byte, each written by one shard only; each shard's index
//! holds its sessions as the one run's does; and no file goes unaccounted for (read by
//! one shard, counted by the others as another shard's). A family (a session with its
//! sub-agents, a Codex fork and a Codex sub-agent thread with their source) is in the
//! shard its root's key hashes to, by the documented hash computed here independently.
//! Pushed to one fleet, N shards give the rows one run's push gives, copies of a
//! request in two families included (a real PostgreSQL, `TRANSCOPE_TEST_PG`).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::reliability::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Every file under `home`'s scope-log folder, by relative path.
fn scope_files(home: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = home.join("brain/session-scopes");
    tree(&dir)
        .into_iter()
        .filter(|f| dir.join(f).is_file())
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

/// A backfill of `roots` into `home` (with `--shard` when given): its `--json` summary.
fn backfill(sb: &Sandbox, home: &Path, roots: &[PathBuf], shard: Option<&str>) -> Value {
    let mut args = backfill_args(roots);
    if let Some(s) = shard {
        args.extend(["--shard".to_owned(), s.to_owned()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_str(&stdout_in(home, &sb.user, &args)).unwrap()
}

/// The scope-log files of `n` shards are one run's: the same paths, byte for byte.
fn same_logs(got: &BTreeMap<String, Vec<u8>>, want: &BTreeMap<String, Vec<u8>>, n: u64) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "{n} shards' scope-log files"
    );
    for (path, bytes) in want {
        assert!(got[path] == *bytes, "{path}: {n} shards wrote other bytes");
    }
}

/// What the index of `home` answers: its sessions, usage by session and model, and
/// ledger (each query's `--json --no-sync` lines), each line with its session.
fn index_rows(sb: &Sandbox, home: &Path) -> Vec<(String, String)> {
    let queries: [&[&str]; 3] = [
        &["sessions"],
        &["usage", "--by", "session", "--by", "model"],
        &["ledger"],
    ];
    let mut rows = Vec::new();
    for q in queries {
        let mut args = q.to_vec();
        args.extend(["--json", "--no-sync"]);
        for l in stdout_in(home, &sb.user, &args).lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            let session = v["session"].as_str().unwrap().to_owned();
            rows.push((session, format!("{q:?} {l}")));
        }
    }
    rows
}

/// The shard of `count` the family with root key `root` goes to, as documented: the
/// first 8 bytes of SHA-256 of the key, big-endian, modulo the count.
fn shard_of(root: &str, count: u64) -> u64 {
    let d = Sha256::digest(root.as_bytes());
    u64::from_be_bytes(d[..8].try_into().unwrap()) % count
}

/// The root of a scope-log key, for the keys of this archive: a sub-agent's
/// (`<root>.<agent>`, Claude Code and Gemini CLI) its parent's, the Codex family's
/// fork and sub-agent thread their source's, any other its own.
fn root_of(key: &str) -> &str {
    let [source, fork, thread] = transcope_testkit::CODEX_FAMILY;
    if key == fork || key == thread {
        return source;
    }
    key.split_once('.').map_or(key, |(root, _)| root)
}

/// The archive the shards split: every layout (the sample archive's Claude Code and
/// Codex folders, Gemini CLI's public fixtures, the Codex family of a source, its
/// fork and its sub-agent thread) and a generated corpus of 8 MB, its folders kept in
/// the returned corpus; with `copies`, `public/claude` too, whose fixtures copy the
/// sample archive's transcripts under other names (the same requests in two
/// families).
fn archive(sb: &Sandbox, copies: bool) -> (tempfile::TempDir, Vec<PathBuf>) {
    let corpus = generated_corpus(35, 8_000_000);
    let forks = sb.root.join("forks/codex/sessions");
    transcope_testkit::codex_family(&forks).unwrap();
    let mut roots = vec![
        testdata().join("sample-archive/claude/projects"),
        testdata().join("sample-archive/codex/sessions"),
        testdata().join("public/gemini/home/.gemini/tmp"),
        forks,
    ];
    if copies {
        roots.push(testdata().join("public/claude"));
    }
    roots.extend(["claude/projects", "codex/sessions"].map(|d| corpus.path().join(d)));
    (corpus, roots)
}

#[test]
fn n_shards_write_the_scope_logs_and_index_rows_one_run_writes() {
    let sb = Sandbox::new();
    // Each transcript once: the same requests in two families would be kept by two
    // shards' indexes, one per family, where one run keeps the earliest copy.
    let (_corpus, roots) = archive(&sb, false);

    let whole_home = sb.root.join("whole");
    let whole = backfill(&sb, &whole_home, &roots, None);
    let total = whole["files"].as_u64().unwrap();
    let want = scope_files(&whole_home);
    let mut want_rows: Vec<String> = index_rows(&sb, &whole_home)
        .into_iter()
        .map(|(_, row)| row)
        .collect();
    want_rows.sort();
    for q in ["[\"sessions\"]", "[\"usage\"", "[\"ledger\"]"] {
        let n = want_rows.iter().filter(|r| r.starts_with(q)).count();
        assert!(n >= 3, "{n} rows of {q}");
    }
    // The archive has families to split: sub-agents of several roots, and the Codex
    // fork and thread.
    let families = want
        .keys()
        .filter_map(|f| f.strip_suffix(".jsonl"))
        .filter(|k| root_of(k) != *k)
        .map(root_of)
        .collect::<std::collections::BTreeSet<_>>();
    assert!(families.len() >= 5, "families: {families:?}");
    assert!(families.contains(transcope_testkit::CODEX_FAMILY[0]));
    assert_eq!(whole["other_shards"], 0);

    for n in 1..=4u64 {
        let mut got: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut got_rows = Vec::new();
        let mut files = 0;
        for k in 0..n {
            let shard = format!("{k}/{n}");
            let home = sb.root.join(format!("shard-{k}-of-{n}"));
            let s = backfill(&sb, &home, &roots, Some(&shard));
            assert_eq!(s["shard"], shard.as_str());
            assert_eq!(s["errors"], 0, "{shard}: {s}");
            let read = s["files"].as_u64().unwrap();
            assert_eq!(
                read + s["other_shards"].as_u64().unwrap(),
                total,
                "{shard}: every file read or left to another shard: {s}"
            );
            files += read;
            for (path, bytes) in scope_files(&home) {
                // `<key>.jsonl` and its lock file `<key>.jsonl.lock`.
                let key = path.split(".jsonl").next().unwrap_or(&path);
                assert_eq!(
                    shard_of(root_of(key), n),
                    k,
                    "{path} is in shard {shard}, not its family's"
                );
                let again = got.insert(path.clone(), bytes);
                assert!(again.is_none(), "{path} written by two shards of {n}");
            }
            for (session, row) in index_rows(&sb, &home) {
                assert_eq!(shard_of(root_of(&session), n), k, "{session} in {shard}");
                got_rows.push(row);
            }
        }
        assert_eq!(files, total, "{n} shards read every file once");
        same_logs(&got, &want, n);
        got_rows.sort();
        assert_eq!(got_rows, want_rows, "{n} shards' indexes");
    }
    eprintln!(
        "{total} files, {} bytes, {} scope-log files, {} index rows, {} families with sub-agents or forks",
        whole["bytes"],
        want.len(),
        want_rows.len(),
        families.len()
    );
}

/// The fleet's answers to the questions a sharded backfill must not change: sessions,
/// the ledger, usage by session and model and by project, each line without its
/// `machine` (which names the shard that pushed it), sorted (the ledger's order is
/// the order the fleet was told of its rows: machine by machine).
fn fleet_answers(sb: &Sandbox, url: &str) -> Vec<String> {
    let queries: [&[&str]; 4] = [
        &["sessions"],
        &["ledger"],
        &["usage", "--by", "session", "--by", "model"],
        &["usage", "--by", "project"],
    ];
    let mut rows = Vec::new();
    for q in queries {
        let mut args = q.to_vec();
        args.extend(["--json", "--fleet", url]);
        for row in fleet::json_lines(&sb.home, &sb.user, &args) {
            rows.push(format!("{q:?} {}", fleet::without_machine(row).0));
        }
    }
    rows.sort();
    rows
}

/// Issue 35: N = 1, 2, 3, 4 shards of one archive, each pushed to one fleet as a
/// machine of its own, give the fleet one run's push gives, and the scope logs one
/// run writes. The archive has the requests copied into two families that the local
/// comparison above leaves out (`public/claude` copies sample transcripts under other
/// names): two shards' indexes each keep their copy, and the fleet must keep the one
/// the one run keeps (the copy read first, where time and root-ness tie).
#[test]
fn n_shards_pushed_to_one_fleet_give_the_rows_one_runs_push_gives() {
    let Some(whole_fleet) = transcope_testkit::pg::database("shards_whole") else {
        return;
    };
    let sb = Sandbox::new();
    let (_corpus, roots) = archive(&sb, true);

    let whole_home = sb.root.join("whole");
    let whole = backfill(&sb, &whole_home, &roots, None);
    let pushed = fleet::push(&whole_home, &sb.user, whole_fleet.url(), "whole");
    let want_logs = scope_files(&whole_home);
    let want = fleet_answers(&sb, whole_fleet.url());
    let requests = fleet::sent(&pushed)[3];
    // Requests the shards' indexes hold between them beyond the one run's: copies
    // in two families that two shards each keep, for each N.
    let mut copies = Vec::new();

    for n in 1..=4u64 {
        let db = transcope_testkit::pg::database(&format!("shards_{n}")).unwrap();
        // Pushed last shard first: the fleet's choice of a copy must not depend on
        // which machine pushed first.
        let mut held = 0;
        for k in (0..n).rev() {
            let shard = format!("{k}/{n}");
            let home = sb.root.join(format!("shard-{k}-of-{n}"));
            let s = backfill(&sb, &home, &roots, Some(&shard));
            assert_eq!(s["errors"], 0, "{shard}: {s}");
            let pushed = fleet::push(&home, &sb.user, db.url(), &format!("shard-{k}-of-{n}"));
            held += fleet::sent(&pushed)[3];
        }
        copies.push(held - requests);
        let mut logs = BTreeMap::new();
        for k in 0..n {
            logs.extend(scope_files(&sb.root.join(format!("shard-{k}-of-{n}"))));
        }
        same_logs(&logs, &want_logs, n);
        // Each row names the shard that holds its session.
        for q in [&["sessions"][..], &["ledger"]] {
            let mut args = q.to_vec();
            args.extend(["--json", "--fleet", db.url()]);
            for row in fleet::json_lines(&sb.home, &sb.user, &args) {
                let (row, machine) = fleet::without_machine(row);
                if let Some(session) = row["session"].as_str() {
                    let k = shard_of(root_of(session), n);
                    assert_eq!(
                        machine.as_deref(),
                        Some(format!("shard-{k}-of-{n}").as_str()),
                        "{q:?} {row}"
                    );
                }
            }
        }
        let got = fleet_answers(&sb, db.url());
        let missing: Vec<_> = want.iter().filter(|r| !got.contains(r)).collect();
        let extra: Vec<_> = got.iter().filter(|r| !want.contains(r)).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{n} shards' fleet differs from one run's:\nonly one run's: {missing:#?}\nonly the shards': {extra:#?}"
        );
    }
    assert_eq!(copies[0], 0, "one shard is the one run");
    assert!(
        copies.iter().any(|c| *c > 0),
        "no request was kept by two shards: the archive tests no copies ({copies:?})"
    );
    eprintln!(
        "{} files, {} scope-log files, {} fleet answer rows, {requests} requests; \
         copies two shards both kept, N = 1..4: {copies:?}",
        whole["files"],
        want_logs.len(),
        want.len(),
    );
}

/// `--shard` takes K/N with 0 ≤ K < N, else it is a usage error (exit 2) that says
/// so and reads nothing; `0/1` is the whole archive.
#[test]
fn a_bad_shard_is_a_usage_error_and_0_of_1_is_the_whole_archive() {
    let sb = Sandbox::new();
    let archive = testdata().join("sample-archive");
    for (bad, why) in [
        ("4/4", "K must be less than N"),
        ("0/0", "N must be at least 1"),
        ("3", "no '/'"),
        ("a/2", "K and N must be whole numbers"),
    ] {
        let out = run(
            sb.cmd(&["backfill", "--shard", bad, &archive.display().to_string()]),
            b"",
        );
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("invalid value '{bad}' for '--shard <K/N>': {why}"))
                && err.contains("0 ≤ K < N"),
            "{bad}: {err}"
        );
        assert!(!sb.home.exists(), "{bad}: nothing written");
    }
    let roots = [archive];
    let whole = backfill(&sb, &sb.root.join("one"), &roots, Some("0/1"));
    let plain = backfill(&sb, &sb.root.join("plain"), &roots, None);
    assert_eq!(whole["other_shards"], 0);
    assert_eq!(whole["files"], plain["files"]);
    assert_eq!(
        scope_files(&sb.root.join("one")),
        scope_files(&sb.root.join("plain"))
    );
}

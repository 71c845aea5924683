//! Issue 36: the archive gives back every transcript byte for byte, keeps a growing
//! transcript frame by frame and a rewritten one as two generations, and lets `index
//! rebuild` (and `backfill --from-archive` in a fresh home) answer as before once the
//! originals are gone. Killed writes: `archive_crash.rs`.
//!
//! The round trip's generated archive is `TRANSCOPE_ARCHIVE_TEST_BYTES` big (64 MB by
//! default, so CI stays quick; `1GB` for the issue's size), or the existing corpus at
//! `TRANSCOPE_ARCHIVE_TEST_CORPUS` (read only; e.g. `target/bench/corpus-1GB`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::reliability::*;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Every regular file under `dir`, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn sha_of(p: &Path) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    std::io::copy(&mut f, &mut h).unwrap();
    h.finalize().into()
}

/// The standard output of `args` in `sb`, which must succeed.
fn ok(sb: &Sandbox, args: &[&str]) -> String {
    stdout_of(sb, args)
}

fn json_of(s: &str) -> Value {
    serde_json::from_str(s.trim()).unwrap_or_else(|e| panic!("{e}: {s}"))
}

/// `cp -r from to`.
fn copy_tree(from: &Path, to: &Path) {
    let st = std::process::Command::new("cp")
        .arg("-r")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success(), "cp -r {} {}", from.display(), to.display());
}

fn test_bytes() -> u64 {
    std::env::var("TRANSCOPE_ARCHIVE_TEST_BYTES")
        .ok()
        .and_then(|v| transcope_corpus::parse_size(&v))
        .unwrap_or(64 << 20)
}

/// `archive ls --json`: each archived original with its row.
fn listed(sb: &Sandbox) -> BTreeMap<PathBuf, Value> {
    ok(sb, &["archive", "ls", "--json"])
        .lines()
        .map(|l| {
            let v = json_of(l);
            (PathBuf::from(v["original"].as_str().unwrap()), v)
        })
        .collect()
}

#[test]
fn a_generated_archive_and_the_public_transcripts_restore_byte_for_byte() {
    let sb = Sandbox::new();
    let started = Instant::now();
    let generated;
    let corpus = match std::env::var_os("TRANSCOPE_ARCHIVE_TEST_CORPUS").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir).canonicalize().unwrap(),
        None => {
            generated = generated_corpus(3601, test_bytes());
            generated.path().to_path_buf()
        }
    };
    let public = sb.user.join("public");
    copy_tree(&testdata().join("public"), &public);
    eprintln!("corpus ready in {:.1?}", started.elapsed());

    // 1. A backfill keeps every transcript it reads.
    let t = Instant::now();
    let args = backfill_args(&[corpus.clone(), public.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = json_of(&ok(&sb, &args));
    assert!(v["archived_bytes"].as_u64().unwrap() > 0, "{v}");
    eprintln!("backfill {:.1?}: {v}", t.elapsed());
    // … all a walk of those folders claims: keeping them again adds nothing.
    let again = json_of(&ok(
        &sb,
        &[
            "archive",
            "--json",
            corpus.to_str().unwrap(),
            public.to_str().unwrap(),
        ],
    ));
    assert_eq!(
        (
            again["added_bytes"].as_u64(),
            again["stored_bytes"].as_u64()
        ),
        (Some(0), Some(0)),
        "{again}"
    );
    // Every JSONL file is a transcript of some agent's layout, and was kept — but
    // Qwen Code's prompt ledger beside a chat (`<id>.ledger.jsonl`), which its layout
    // disowns: the prompts alone, no transcript.
    let transcripts: BTreeSet<PathBuf> = files_under(&corpus)
        .into_iter()
        .filter(|p| !p.starts_with(corpus.join("repos")))
        .chain(files_under(&public))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter(|p| !p.to_string_lossy().ends_with(".ledger.jsonl"))
        .collect();
    let kept: BTreeSet<PathBuf> = listed(&sb).into_keys().collect();
    let missing: Vec<_> = transcripts.difference(&kept).collect();
    assert!(
        missing.is_empty(),
        "not archived by the backfill: {missing:?}"
    );

    // 2. Every other file of testdata/public (licences, Gemini documents outside an
    // agent's folder, sidecars) is kept when named.
    let named: Vec<String> = files_under(&public)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut args = vec!["archive", "--json"];
    args.extend(named.iter().map(String::as_str));
    let v = json_of(&ok(&sb, &args));
    assert_eq!(v["errors"], 0, "{v}");

    // 3. Restored under a new folder: exactly the originals, each byte for byte at
    // DIR/<absolute path>.
    let expected: BTreeSet<PathBuf> = transcripts
        .iter()
        .cloned()
        .chain(files_under(&public))
        .collect();
    let rows = listed(&sb);
    let originals: BTreeSet<PathBuf> = rows.keys().cloned().collect();
    assert_eq!(originals, expected, "the archive holds exactly these files");
    assert!(rows.values().all(|r| r["generations"] == 1), "one each");
    let t = Instant::now();
    let restored = sb.root.join("restored");
    let r = json_of(&ok(
        &sb,
        &[
            "archive",
            "restore",
            "--to",
            restored.to_str().unwrap(),
            "--json",
        ],
    ));
    assert_eq!(
        (r["written"].as_u64(), r["failed"].as_u64()),
        (Some(expected.len() as u64), Some(0)),
        "{r}"
    );
    eprintln!("restore {:.1?}: {r}", t.elapsed());
    let t = Instant::now();
    let back: BTreeSet<PathBuf> = files_under(&restored)
        .into_iter()
        .map(|p| Path::new("/").join(p.strip_prefix(&restored).unwrap()))
        .collect();
    assert_eq!(
        back, expected,
        "the restored folder holds exactly the originals"
    );
    let mut bytes = 0;
    for o in &expected {
        let copy = restored.join(o.strip_prefix("/").unwrap());
        assert_eq!(sha_of(&copy), sha_of(o), "{}", o.display());
        bytes += std::fs::metadata(o).unwrap().len();
    }
    eprintln!(
        "{} files, {bytes} bytes: SHA-256 of each equal ({:.1?})",
        expected.len(),
        t.elapsed()
    );
    let v = ok(&sb, &["archive", "verify", "--json"]);
    assert_eq!(v.lines().count(), 1, "no problem: {v}");
    let last = json_of(&v);
    assert_eq!(
        (last["damaged"].as_u64(), last["torn_repaired"].as_u64()),
        (Some(0), Some(0))
    );
    eprintln!("round trip in {:.1?}", started.elapsed());
}

#[test]
fn a_transcript_grown_over_fifty_stops_restores_identical() {
    let sb = Sandbox::new();
    let t = sb.user.join("projects/-w/s50.jsonl");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    let mut whole = Vec::new();
    for i in 0..50u64 {
        let turn = format!(
            "{}\n{}\n",
            claude_line(i * 60, if i % 2 == 0 { "/w/a" } else { "/w/b" }, "main"),
            spend_line(
                i * 60 + 1,
                "/w/a",
                "main",
                &format!("m{i}"),
                [100 + i, 20, 3]
            )
        );
        whole.extend_from_slice(turn.as_bytes());
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&t)
            .unwrap();
        std::io::Write::write_all(&mut f, turn.as_bytes()).unwrap();
        drop(f);
        let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload("s50", &t));
        assert_eq!(out.status.code(), Some(0));
        let v = json_of(&text(&out.stdout));
        assert_eq!(v["archive"]["added"], turn.len(), "stop {i}: {v}");
        assert_eq!(v["archive"]["new_generation"], i == 0, "stop {i}: {v}");
    }
    let ls = json_of(&ok(&sb, &["archive", "ls", "--json"]));
    assert_eq!(
        (ls["generations"].as_u64(), ls["bytes"].as_u64()),
        (Some(1), Some(whole.len() as u64))
    );
    assert_eq!(ls["session"], "s50");
    let to = sb.root.join("back");
    ok(
        &sb,
        &[
            "archive",
            "restore",
            "--session",
            "s50",
            "--to",
            to.to_str().unwrap(),
        ],
    );
    assert_eq!(
        std::fs::read(to.join(t.strip_prefix("/").unwrap())).unwrap(),
        whole
    );
    // Gone from where it was, and put back in place.
    std::fs::remove_file(&t).unwrap();
    ok(&sb, &["archive", "restore", "--in-place"]);
    assert_eq!(std::fs::read(&t).unwrap(), whole);
}

#[test]
fn a_truncated_and_rewritten_transcript_keeps_both_generations() {
    let sb = Sandbox::new();
    let t = sb.user.join("projects/-w/rw.jsonl");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    let first = format!(
        "{}\n{}\n",
        claude_line(0, "/w/a", "main"),
        claude_line(60, "/w/b", "x")
    );
    std::fs::write(&t, &first).unwrap();
    ok(&sb, &["archive", t.to_str().unwrap()]);
    // Cut, then written again with other content.
    std::fs::write(&t, "").unwrap();
    let second = format!("{}\n", claude_line(120, "/w/c", "y"));
    std::fs::write(&t, &second).unwrap();
    let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload("rw", &t));
    let v = json_of(&text(&out.stdout));
    assert_eq!(v["archive"]["new_generation"], true, "{v}");
    let ls = json_of(&ok(&sb, &["archive", "ls", "--json"]));
    assert_eq!(ls["generations"], 2, "{ls}");
    assert_eq!(ls["all_bytes"], (first.len() + second.len()) as u64, "{ls}");
    let to = sb.root.join("gens");
    ok(
        &sb,
        &[
            "archive",
            "restore",
            "--all-generations",
            "--to",
            to.to_str().unwrap(),
        ],
    );
    let back = to.join(t.strip_prefix("/").unwrap());
    assert_eq!(std::fs::read_to_string(&back).unwrap(), second);
    let old = back.with_file_name("rw.jsonl.gen0");
    assert_eq!(std::fs::read_to_string(old).unwrap(), first);
    assert_eq!(
        files_under(&to).len(),
        2,
        "the two generations, nothing more"
    );
}

/// `sessions`, `ledger` and `usage` of a home, as JSON lines.
fn answers(home: &Path, user: &Path) -> BTreeMap<&'static str, String> {
    let mut out = BTreeMap::new();
    for (name, args) in [
        ("sessions", vec!["sessions", "--json", "--no-sync"]),
        ("ledger", vec!["ledger", "--json", "--no-sync"]),
        (
            "usage",
            vec![
                "usage",
                "--json",
                "--no-sync",
                "--by",
                "session",
                "--by",
                "model",
            ],
        ),
        (
            "usage by project",
            vec!["usage", "--json", "--no-sync", "--by", "project"],
        ),
    ] {
        out.insert(name, stdout_in(home, user, &args));
    }
    out
}

/// `after` answers as `before` did (each JSON line the same; in the same order, but
/// for the ledger, whose order is the order its markers were found in, which a rebuild
/// reads in another), or the lines that differ.
fn same_answers(
    after: &BTreeMap<&'static str, String>,
    before: &BTreeMap<&'static str, String>,
    what: &str,
) {
    let mut diff = String::new();
    for (name, b) in before {
        let a = &after[name];
        let (mut bl, mut al): (Vec<&str>, Vec<&str>) = (b.lines().collect(), a.lines().collect());
        if *name == "ledger" {
            bl.sort_unstable();
            al.sort_unstable();
        }
        if al == bl {
            continue;
        }
        diff.push_str(&format!("{name}:\n"));
        for l in bl.iter().filter(|l| !al.contains(l)) {
            diff.push_str(&format!("  before only: {l}\n"));
        }
        for l in al.iter().filter(|l| !bl.contains(l)) {
            diff.push_str(&format!("  after only:  {l}\n"));
        }
        if diff.ends_with(":\n") {
            diff.push_str("  the same lines in another order\n");
        }
    }
    assert!(diff.is_empty(), "after {what}, the answers differ:\n{diff}");
}

/// The agents' clean-up: every transcript under `corpus` goes; the repositories they
/// ran in stay.
fn delete_transcripts(corpus: &Path) {
    for d in std::fs::read_dir(corpus).unwrap().flatten() {
        if d.file_name() != "repos" && d.path().is_dir() {
            std::fs::remove_dir_all(d.path()).unwrap();
        }
    }
}

#[test]
fn with_the_originals_deleted_a_rebuild_answers_as_before() {
    let sb = Sandbox::new();
    let corpus = generated_corpus(3602, 6 << 20);
    let sample = sb.user.join("sample");
    copy_tree(&testdata().join("sample-archive"), &sample);
    let args = backfill_args(&[corpus.path().to_path_buf(), sample.clone()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&sb, &args);
    let before = answers(&sb.home, &sb.user);
    // Sub-agents, markers and spend are all in the answers compared.
    assert!(before["sessions"].contains("\"parent\":\""), "sub-agents");
    assert!(before["ledger"].lines().count() > 3, "markers");
    assert!(before["usage"].lines().count() > 10, "spend");
    std::fs::remove_dir_all(&sample).unwrap();
    delete_transcripts(corpus.path());
    let ls = listed(&sb);
    assert!(ls.len() > 20, "{ls:?}");
    assert!(ls.values().all(|r| r["original_exists"] == false), "{ls:?}");
    let out = run(sb.cmd(&["index", "rebuild", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = json_of(&text(&out.stdout));
    assert_eq!(v["gone"], 0, "{v}");
    assert_eq!(v["from_archive"].as_u64(), Some(ls.len() as u64), "{v}");
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    same_answers(&answers(&sb.home, &sb.user), &before, "index rebuild");

    // And a fresh home given only the archive reads them with `backfill --from-archive`.
    let fresh = Sandbox::new();
    copy_tree(
        &sb.home.join("transcope/archive"),
        &fresh.root.join("archive"),
    );
    let mut c = fresh.cmd(&["backfill", "--from-archive", "--json"]);
    c.env("TRANSCOPE_ARCHIVE_DIR", fresh.root.join("archive"));
    let out = run(c, b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    same_answers(
        &answers(&fresh.home, &fresh.user),
        &before,
        "backfill --from-archive",
    );
}

/// Issue 36's rebuild, the backfill having been named a folder by a relative path (as
/// `transcope backfill .` or `backfill corpus` from the folder above): the sessions'
/// transcripts are recorded relative, their archive entries absolute.
#[test]
fn a_rebuild_after_a_backfill_of_a_relative_folder_answers_as_before() {
    let sb = Sandbox::new();
    let corpus = sb.user.join("corpus");
    transcope_corpus::generate(&transcope_corpus::CorpusSpec::new(3605, 2 << 20), &corpus)
        .expect("generating the corpus");
    // `cmd` runs in `sb.user`: `corpus` is the folder above.
    ok(&sb, &["backfill", "--json", "corpus"]);
    let before = answers(&sb.home, &sb.user);
    assert!(
        before["sessions"].contains("\"transcript\":\"corpus/"),
        "recorded relative"
    );
    delete_transcripts(&corpus);
    let out = run(sb.cmd(&["index", "rebuild", "--json"]), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = json_of(&text(&out.stdout));
    assert!(v["from_archive"].as_u64().unwrap() > 5, "{v}");
    same_answers(&answers(&sb.home, &sb.user), &before, "index rebuild");
    assert!(
        text(&out.stderr).is_empty(),
        "every gone transcript was read from the archive: {}",
        text(&out.stderr)
    );
    assert_eq!(v["gone"], 0, "{v}");
}

/// An empty transcript kept again is unchanged, not a new generation each time (a
/// Stop's summary and `archive --json` count it so).
#[test]
fn an_empty_transcript_kept_again_is_unchanged() {
    let sb = Sandbox::new();
    let t = sb.user.join("projects/-w/empty.jsonl");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    std::fs::write(&t, "").unwrap();
    let first = json_of(&ok(&sb, &["archive", "--json", t.to_str().unwrap()]));
    assert_eq!(first["new_generations"], 1, "{first}");
    let again = json_of(&ok(&sb, &["archive", "--json", t.to_str().unwrap()]));
    assert_eq!(
        (
            again["unchanged"].as_u64(),
            again["new_generations"].as_u64()
        ),
        (Some(1), Some(0)),
        "{again}"
    );
    let out = run(sb.cmd(&["hook", "stop", "--json"]), &payload("empty", &t));
    let v = json_of(&text(&out.stdout));
    assert_eq!(v["archive"]["new_generation"], false, "{v}");
}

//! Issue 36: the archive gives back every transcript byte for byte, keeps a growing
//! transcript frame by frame and a rewritten one as two generations, lets `index
//! rebuild` answer as before once the originals are gone, and loses no earlier frame
//! to a killed write.
//!
//! The round trip's generated archive is `TRANSCOPE_ARCHIVE_TEST_BYTES` big (64 MB by
//! default, so CI stays quick; `1GB` for the issue's size).

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use sha2::{Digest, Sha256};

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

fn sha_of(p: &Path) -> String {
    let mut h = Sha256::new();
    let mut f = std::fs::File::open(p).unwrap();
    std::io::copy(&mut f, &mut h).unwrap();
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn ok(sb: &Sandbox, args: &[&str]) -> String {
    let out = run(sb.cmd(args), b"");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn test_bytes() -> u64 {
    std::env::var("TRANSCOPE_ARCHIVE_TEST_BYTES")
        .ok()
        .and_then(|v| transcope_testkit::parse_size(&v))
        .unwrap_or(64 << 20)
}

/// The transcripts a layout claims under `dir` (what the archive keeps).
fn transcripts(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl" || e == "json"))
        .collect()
}

#[test]
fn a_generated_archive_and_the_public_transcripts_restore_byte_for_byte() {
    let sb = Sandbox::new();
    let corpus = generated_corpus(3601, test_bytes());
    let public = sb.user.join("public");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(testdata().join("public"))
        .arg(&public)
        .status()
        .unwrap();
    assert!(copied.success());
    let roots = [corpus.path().to_path_buf(), public.clone()];
    let args = backfill_args(&roots);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v: serde_json::Value = serde_json::from_str(ok(&sb, &args).trim()).unwrap();
    assert!(v["archived_bytes"].as_u64().unwrap() > 0, "{v}");
    let mut kept = ok(&sb, &["archive", "--json"]);
    // Whatever the backfill did not claim (a file no layout reads) is not a transcript.
    let k: serde_json::Value = serde_json::from_str(kept.trim()).unwrap();
    assert_eq!(
        k["added_bytes"], 0,
        "everything was kept by the backfill: {k}"
    );
    kept.clear();
    let restored = sb.root.join("restored");
    let out = ok(
        &sb,
        &[
            "archive",
            "restore",
            "--to",
            restored.to_str().unwrap(),
            "--json",
        ],
    );
    let r: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(r["failed"], 0, "{r}");
    // Every original the archive holds, byte for byte at DIR/<absolute path>; nothing
    // more.
    let ls = ok(&sb, &["archive", "ls", "--json"]);
    let originals: Vec<PathBuf> = ls
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            PathBuf::from(v["original"].as_str().unwrap())
        })
        .collect();
    let mut expected: Vec<PathBuf> = transcripts(corpus.path())
        .into_iter()
        .chain(transcripts(&public))
        .filter(|p| originals.contains(p))
        .collect();
    expected.sort();
    let mut sorted = originals.clone();
    sorted.sort();
    assert_eq!(expected, sorted, "the archive holds every transcript read");
    assert!(originals.len() > 20, "{}", originals.len());
    let back: Vec<PathBuf> = files_under(&restored);
    assert_eq!(back.len(), originals.len());
    for o in &originals {
        let copy = restored.join(o.strip_prefix("/").unwrap());
        assert_eq!(sha_of(&copy), sha_of(o), "{}", o.display());
    }
    let v = ok(&sb, &["archive", "verify", "--json"]);
    let last: serde_json::Value = serde_json::from_str(v.lines().last().unwrap()).unwrap();
    assert_eq!(
        (last["damaged"].as_u64(), last["torn_repaired"].as_u64()),
        (Some(0), Some(0))
    );
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
        let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
        assert_eq!(v["archive"]["added"], turn.len(), "stop {i}: {v}");
        assert_eq!(v["archive"]["new_generation"], i == 0, "stop {i}: {v}");
    }
    let ls: serde_json::Value =
        serde_json::from_str(ok(&sb, &["archive", "ls", "--json"]).trim()).unwrap();
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
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["archive"]["new_generation"], true, "{v}");
    let ls: serde_json::Value =
        serde_json::from_str(ok(&sb, &["archive", "ls", "--json"]).trim()).unwrap();
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
}

/// `sessions`, `ledger` and `usage` of a home, as JSON lines (the ledger's sorted).
fn answers(sb: &Sandbox) -> BTreeMap<&'static str, String> {
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
        let mut lines: Vec<String> = ok(sb, &args).lines().map(str::to_owned).collect();
        if name == "ledger" {
            // The ledger lists rows in the order found, which a parallel read decides:
            // the same rows are the same answer.
            lines.sort();
        }
        out.insert(name, lines.join("\n"));
    }
    out
}

#[test]
fn with_the_originals_deleted_a_rebuild_answers_as_before() {
    let sb = Sandbox::new();
    let corpus = generated_corpus(3602, 6 << 20);
    let sample = sb.user.join("sample");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(testdata().join("sample-archive"))
        .arg(&sample)
        .status()
        .unwrap();
    assert!(copied.success());
    let roots = [corpus.path().to_path_buf(), sample.clone()];
    let args = backfill_args(&roots);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&sb, &args);
    let before = answers(&sb);
    assert!(before["ledger"].lines().count() > 3 && before["sessions"].contains("\"parent\":\""));
    // The agents' clean-up: the transcripts go; the repositories they ran in stay.
    std::fs::remove_dir_all(&sample).unwrap();
    for d in std::fs::read_dir(corpus.path()).unwrap().flatten() {
        if d.file_name() != "repos" && d.path().is_dir() {
            std::fs::remove_dir_all(d.path()).unwrap();
        }
    }
    let ls = ok(&sb, &["archive", "ls", "--json"]);
    assert!(
        ls.lines().count() > 20 && !ls.contains("\"original_exists\":true"),
        "{ls}"
    );
    let v: serde_json::Value =
        serde_json::from_str(ok(&sb, &["index", "rebuild", "--json"]).trim()).unwrap();
    assert_eq!(v["gone"], 0, "{v}");
    assert!(v["from_archive"].as_u64().unwrap() > 20, "{v}");
    assert_eq!(answers(&sb), before);

    // And a fresh home reads them from the archive with `backfill --from-archive`.
    let fresh = Sandbox::new();
    let copy = std::process::Command::new("cp")
        .arg("-r")
        .arg(sb.home.join("transcope/archive"))
        .arg(fresh.root.join("archive"))
        .status()
        .unwrap();
    assert!(copy.success());
    let mut c = fresh.cmd(&["backfill", "--from-archive", "--json"]);
    c.env("TRANSCOPE_ARCHIVE_DIR", fresh.root.join("archive"));
    let out = run(c, b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(answers(&fresh), before);
}

/// The bytes of `g`'s file up to the end of its last whole record, read from the
/// archive's own reader of the format: a prefix every later state must keep.
fn whole_prefix(g: &Path) -> Vec<u8> {
    let bytes = std::fs::read(g).unwrap_or_default();
    let n = transcope_archive::RECORD_LEN;
    // The last record ends the whole part: find the last place a record decodes.
    let mut end = bytes.len();
    while end >= n {
        if transcope_archive::Record::decode(&bytes[end - n..end]).is_some() {
            return bytes[..end].to_vec();
        }
        end -= 1;
    }
    Vec::new()
}

#[test]
fn writes_killed_at_random_moments_lose_no_earlier_frame() {
    let sb = Sandbox::new();
    let t = sb.user.join("projects/-w/big.jsonl");
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    let mut rng = Rng::from_env(3603);
    // Lines that compress poorly, so a keep of a few MB takes long enough to be cut.
    let mut line_of = |i: u64| -> String {
        let noise: String = (0..40).map(|_| format!("{:016x}", rng.next())).collect();
        format!(
            "{{\"type\":\"user\",\"timestamp\":\"2026-10-08T10:00:00Z\",\"cwd\":\"/w\",\"n\":{i},\"pad\":\"{noise}\"}}\n"
        )
    };
    let archive = sb.home.join("transcope/archive");
    let mut n = 0u64;
    let mut grow = |bytes: usize| {
        let mut chunk = String::new();
        while chunk.len() < bytes {
            chunk.push_str(&line_of(n));
            n += 1;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&t)
            .unwrap();
        std::io::Write::write_all(&mut f, chunk.as_bytes()).unwrap();
    };
    grow(1 << 20);
    ok(&sb, &["archive", t.to_str().unwrap()]);
    // How long a keep of a round's growth takes, to kill within it.
    grow(6 << 20);
    let started = std::time::Instant::now();
    ok(&sb, &["archive", t.to_str().unwrap()]);
    let took = started.elapsed().max(Duration::from_millis(20));
    let generation = || -> PathBuf {
        let mut g: Vec<PathBuf> = files_under(&archive)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "zst"))
            .collect();
        assert_eq!(g.len(), 1, "{g:?}");
        g.pop().unwrap()
    };
    let mut rng2 = Rng::from_env(3604);
    let (mut cut, mut torn_seen) = (0, 0);
    for round in 0..20 {
        grow(6 << 20);
        let g = generation();
        let prefix = whole_prefix(&g);
        let keep = sb.cmd(&["archive", t.to_str().unwrap()]);
        let killed = if round % 2 == 0 {
            // `kill -9` at a random moment of the keep.
            let delay = Duration::from_micros(rng2.below(took.as_micros() as u64 + 1));
            kill_after(keep, b"", delay).is_none()
        } else {
            // Killed at a random byte of the generation's growth (the kernel stops
            // the write there, as a SIGKILL inside a write leaves it).
            let mut keep = keep;
            let at = prefix.len() as u64 + 1 + rng2.below(3 << 20);
            kill_at_file_size(&mut keep, at);
            let st = run(keep, b"").status;
            st.signal().is_some()
        };
        let after = std::fs::read(&g).unwrap();
        assert!(
            after.starts_with(&prefix),
            "round {round}: an earlier frame changed"
        );
        if killed && after.len() > whole_prefix(&g).len() {
            torn_seen += 1;
        }
        // verify: passes, or names and cuts only a torn last frame.
        let out = run(sb.cmd(&["archive", "verify", "--json"]), b"");
        assert_eq!(
            out.status.code(),
            Some(0),
            "round {round}: {}",
            text(&out.stderr)
        );
        let lines: Vec<serde_json::Value> = text(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for p in &lines[..lines.len() - 1] {
            assert_eq!(
                (p["torn"].as_bool(), p["repaired"].as_bool()),
                (Some(true), Some(true)),
                "{p}"
            );
            cut += 1;
        }
        let summary = lines.last().unwrap();
        assert_eq!(summary["damaged"], 0, "{summary}");
        let kept = std::fs::read(&g).unwrap();
        assert!(
            kept.starts_with(&prefix),
            "round {round}: verify cut an earlier frame"
        );
    }
    // Some kills landed mid-write (a torn end was there to cut).
    assert!(cut > 0 && torn_seen > 0, "cut {cut}, torn {torn_seen}");
    // Then a whole keep, and the archive gives the file back byte for byte.
    ok(&sb, &["archive", t.to_str().unwrap()]);
    let to = sb.root.join("back");
    ok(&sb, &["archive", "restore", "--to", to.to_str().unwrap()]);
    assert_eq!(sha_of(&to.join(t.strip_prefix("/").unwrap())), sha_of(&t));
}

//! Issue 36: `kill -9` at random moments of archive writes never loses an earlier
//! frame; `archive verify` then passes, or names and cuts only the torn last frame; the
//! next keep completes and the archive gives the transcript back byte for byte.
//!
//! Real `transcope archive <file>` processes keep a transcript that grows by a few MB
//! of poorly compressible lines a round (two data frames: 4 MiB of the original at
//! most each), killed with `SIGKILL` at a random moment of the keep, or at a random
//! moment after its first write began (so that some kills land inside a write).
//! `TRANSCOPE_REL_SEED` changes the moments.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::reliability::*;
use serde_json::Value;
use transcope_archive::{Record, RECORD_LEN};

/// The whole frame-and-record pairs at the start of a generation file's `bytes`: the
/// last record found from the end whose `stored` sizes lead back to the start, and
/// whose original offsets follow on from 0. Returns the length they take and the
/// original bytes they hold. Read from the format's definition, not the archive's own
/// reader.
fn whole_part(bytes: &[u8]) -> (usize, u64) {
    let mut end = bytes.len();
    while end >= RECORD_LEN {
        if let Some(kept) = pairs_back_to_start(bytes, end) {
            return (end, kept);
        }
        end -= 1;
    }
    (0, 0)
}

/// The original bytes the pairs ending at `end` hold, when they lead back to byte 0.
fn pairs_back_to_start(bytes: &[u8], end: usize) -> Option<u64> {
    let last = Record::decode(&bytes[end - RECORD_LEN..end])?;
    let mut at = end;
    let mut start = last.end();
    while at > 0 {
        let r = Record::decode(&bytes[at.checked_sub(RECORD_LEN)?..at])?;
        if r.end() != start {
            return None;
        }
        start = r.start;
        at = (at - RECORD_LEN).checked_sub(r.stored as usize)?;
    }
    (start == 0).then_some(last.end())
}

/// `n` random characters of a 64-letter alphabet (they compress to about 3/4: a data
/// frame is about 3 MB, a write long enough to be cut).
fn noise(rng: &mut Rng, n: usize) -> String {
    const LETTERS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = Vec::with_capacity(n + 10);
    while s.len() < n {
        let mut r = rng.next();
        for _ in 0..10 {
            s.push(LETTERS[(r & 63) as usize]);
            r >>= 6;
        }
    }
    String::from_utf8(s).unwrap()
}

/// A Claude Code transcript in its own sandbox, kept by `transcope archive`.
struct Subject {
    sb: Sandbox,
    transcript: PathBuf,
    lines: u64,
}

impl Subject {
    fn new() -> Subject {
        let sb = Sandbox::new();
        let transcript = sb.user.join("projects/-w/big.jsonl");
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        Subject {
            sb,
            transcript,
            lines: 0,
        }
    }

    /// Append about `bytes` of user lines with a random pad.
    fn grow(&mut self, rng: &mut Rng, bytes: usize) {
        let mut chunk = String::with_capacity(bytes + 1024);
        while chunk.len() < bytes {
            chunk.push_str(&format!(
                "{{\"type\":\"user\",\"timestamp\":\"{}\",\"cwd\":\"/w\",\"sessionId\":\"big\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}}}}\n",
                iso(self.lines, "Z"),
                noise(rng, 640)
            ));
            self.lines += 1;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.transcript)
            .unwrap();
        std::io::Write::write_all(&mut f, chunk.as_bytes()).unwrap();
    }

    fn keep_cmd(&self) -> Command {
        self.sb
            .cmd(&["archive", "--json", self.transcript.to_str().unwrap()])
    }

    /// A keep to its end: its summary.
    fn keep(&self) -> Value {
        let out = run(self.keep_cmd(), b"");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_str(text(&out.stdout).trim()).unwrap()
    }

    /// The entry's one generation file.
    fn generation(&self) -> PathBuf {
        let dir = self.sb.home.join("transcope/archive");
        let mut g: Vec<PathBuf> = tree(&dir)
            .into_iter()
            .filter(|p| p.ends_with(".zst"))
            .map(|p| dir.join(p))
            .collect();
        assert_eq!(g.len(), 1, "one generation: {g:?}");
        g.pop().unwrap()
    }

    /// The archive's copy, restored to a new folder, is the transcript byte for byte.
    fn restores_identical(&self, round: usize) {
        let to = self.sb.root.join(format!("back-{round}"));
        let out = stdout_of(
            &self.sb,
            &["archive", "restore", "--to", to.to_str().unwrap(), "--json"],
        );
        assert!(out.contains("\"failed\":0"), "{out}");
        let copy = to.join(self.transcript.strip_prefix("/").unwrap());
        assert!(
            std::fs::read(&copy).unwrap() == std::fs::read(&self.transcript).unwrap(),
            "round {round}: the restored copy differs from the transcript"
        );
        std::fs::remove_dir_all(&to).unwrap();
    }
}

/// Spawn `c`; once `g` has grown past `from` bytes (its first write began), wait
/// `extra` (spinning: a sleep's own delay is longer than a write) and `SIGKILL` it.
/// Whether it was killed (not already done).
fn kill_in_write(mut c: Command, g: &Path, from: u64, extra: Duration) -> bool {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning transcope");
    loop {
        if std::fs::metadata(g).map(|m| m.len()).unwrap_or(0) > from {
            break;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::hint::spin_loop();
    }
    let grew = Instant::now();
    while grew.elapsed() < extra {
        std::hint::spin_loop();
    }
    let _ = child.kill();
    child.wait().unwrap().signal() == Some(libc::SIGKILL)
}

/// Kills to make, and how many subjects (each its own sandbox, so that `verify` and
/// `restore` read a few tens of MB each round, not the sum).
const KILLS: usize = 20;
const SUBJECTS: usize = 5;
/// A round's growth: two data frames.
const GROWTH: usize = 5 << 20;

#[test]
fn twenty_kill_9s_at_random_moments_of_archive_writes_lose_no_earlier_frame() {
    let started = Instant::now();
    let mut rng = Rng::from_env(3603);
    let (mut kills, mut torn, mut torn_by_delay, mut rounds) = (0usize, 0usize, 0usize, 0usize);
    for subject in 0..SUBJECTS {
        let mut s = Subject::new();
        s.grow(&mut rng, 1 << 20);
        s.keep();
        // How long a keep of a round's growth takes, to kill within it.
        s.grow(&mut rng, GROWTH);
        let t = Instant::now();
        s.keep();
        let took = t.elapsed();
        let g = s.generation();
        let mut mine = 0;
        // The last subject goes on until a kill landed inside a write (the count is
        // asserted below; rarely more than its share of rounds).
        while mine < KILLS / SUBJECTS || (subject + 1 == SUBJECTS && torn == 0) {
            rounds += 1;
            assert!(
                rounds <= 3 * KILLS,
                "only {kills} kills landed in {rounds} rounds"
            );
            s.grow(&mut rng, GROWTH);
            let before = std::fs::read(&g).unwrap();
            assert_eq!(
                whole_part(&before).0,
                before.len(),
                "whole before the round"
            );
            let by_delay = rng.below(2) == 0;
            let killed = if by_delay {
                // At a random moment of the keep.
                let at = Duration::from_micros(rng.below(took.as_micros() as u64));
                kill_after(s.keep_cmd(), b"", at).is_none()
            } else {
                // At a random moment of its first write (a 3 MB write takes a few
                // hundred µs; a kill, tens of them to land).
                let extra = Duration::from_micros(rng.below(100));
                kill_in_write(s.keep_cmd(), &g, before.len() as u64, extra)
            };
            let after = std::fs::read(&g).unwrap();
            // Every frame that was whole before the kill: the same bytes.
            assert!(
                after.starts_with(&before),
                "round {rounds}: an earlier frame changed"
            );
            let (whole, kept) = whole_part(&after);
            let tore = after.len() > whole;
            if killed {
                kills += 1;
                mine += 1;
                torn += usize::from(tore);
                torn_by_delay += usize::from(tore && by_delay);
            } else {
                assert!(!tore, "round {rounds}: a keep that ended left a torn end");
            }
            // verify: passes, or names and cuts only the torn last frame.
            let out = run(s.sb.cmd(&["archive", "verify", "--json"]), b"");
            assert_eq!(
                out.status.code(),
                Some(0),
                "round {rounds}: {}",
                text(&out.stderr)
            );
            let lines: Vec<Value> = text(&out.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            let (summary, problems) = lines.split_last().unwrap();
            assert_eq!(
                problems.len(),
                usize::from(tore),
                "round {rounds}: {lines:?}"
            );
            for p in problems {
                assert_eq!(
                    (
                        p["torn"].as_bool(),
                        p["repaired"].as_bool(),
                        p["offset"].as_u64(),
                        p["generation_file"].as_str()
                    ),
                    (Some(true), Some(true), Some(whole as u64), g.to_str()),
                    "round {rounds}: only the torn last frame: {p}"
                );
            }
            assert_eq!(
                (
                    summary["damaged"].as_u64(),
                    summary["torn_repaired"].as_u64()
                ),
                (Some(0), Some(u64::from(tore))),
                "round {rounds}: {summary}"
            );
            assert!(
                std::fs::read(&g).unwrap() == after[..whole],
                "round {rounds}: verify cut anything but the torn end"
            );
            // A further keep completes, from where the whole frames end.
            let size = std::fs::metadata(&s.transcript).unwrap().len();
            let v = s.keep();
            assert_eq!(
                (v["added_bytes"].as_u64(), v["errors"].as_u64()),
                (Some(size - kept), Some(0)),
                "round {rounds}: {v}"
            );
            assert!(
                std::fs::read(&g).unwrap().starts_with(&after[..whole]),
                "round {rounds}: the keep after the kill changed an earlier frame"
            );
            s.restores_identical(rounds);
        }
        eprintln!(
            "subject {subject}: a keep of {GROWTH} bytes took {took:.1?}; {} MB kept",
            std::fs::metadata(&s.transcript).unwrap().len() >> 20
        );
    }
    eprintln!(
        "{kills} kills in {rounds} rounds: {torn} torn ends ({torn_by_delay} of the random \
         delays), each cut by verify; no earlier frame changed ({:.1?})",
        started.elapsed()
    );
    assert!(kills >= KILLS, "{kills} kills");
    // Some kills landed mid-write: a torn end was there to cut.
    assert!(torn > 0, "no kill landed inside a write");
}

/// A rewritten transcript's first keep into its new generation, killed: the older
/// generation is still the newest whole copy (what `ls` reports, what `restore` and a
/// rebuild read once the original is gone).
#[test]
fn a_killed_first_keep_of_a_rewrite_leaves_the_older_copy_the_newest() {
    let mut rng = Rng::from_env(3606);
    let mut s = Subject::new();
    s.grow(&mut rng, 300_000);
    let first = std::fs::read(&s.transcript).unwrap();
    s.keep();
    // Rewritten: other content from its first byte.
    std::fs::remove_file(&s.transcript).unwrap();
    s.grow(&mut rng, 300_000);
    let mut keep = s.keep_cmd();
    kill_at_file_size(&mut keep, 1000);
    let st = run(keep, b"").status;
    assert!(st.signal().is_some(), "killed in its first write: {st:?}");
    let v = stdout_of(&s.sb, &["archive", "verify", "--json"]);
    assert!(v.contains("\"torn_repaired\":1"), "{v}");
    // The agent's clean-up before any other keep.
    std::fs::remove_file(&s.transcript).unwrap();
    let ls: Value =
        serde_json::from_str(stdout_of(&s.sb, &["archive", "ls", "--json"]).trim()).unwrap();
    assert_eq!(ls["bytes"].as_u64(), Some(first.len() as u64), "{ls}");
    let to = s.sb.root.join("back");
    stdout_of(&s.sb, &["archive", "restore", "--to", to.to_str().unwrap()]);
    let copy = to.join(s.transcript.strip_prefix("/").unwrap());
    assert!(
        std::fs::read(copy).unwrap() == first,
        "the restored transcript is not the last whole copy"
    );
}

//! A Stop reads each transcript byte once in each of its passes (issue 37, item 4),
//! seen from outside: `strace` records every read of the transcript by the real
//! binary, a first Stop and then a Stop after one more turn.
//!
//! The identity of the caller, the archive and the read each open the transcript once
//! (the archive only when it is on); within each, no byte is read twice: not the
//! head the caller's identity needs twice over (its start folder and its root record),
//! not the head the cursor is checked by and the format sniffed from, not the archive's
//! head and tail prints beside the bytes it keeps.
//!
//! Needs `strace` (Debian's `strace`, which `.ci/run` installs): under CI the test fails
//! without it, elsewhere it says it skipped.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{clean_env, output, testdata, text};

/// A public Claude Code transcript (266 KB; testdata/public/SOURCES.md).
const SESSION: &str = "07f2e15c-a38b-454b-9148-60edc06de401";

/// Whether `strace` runs here (a notice when it does not; a panic under CI).
fn strace_runs() -> bool {
    let runs = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !runs {
        transcope_testkit::missing(
            "strace is not installed: under CI this test must run (.ci/run installs it)",
            "this test needs strace (apt-get install strace)",
        );
    }
    runs
}

/// One open of the transcript: the byte ranges each read took, in order.
#[derive(Debug, Default)]
struct Open {
    pos: u64,
    ranges: Vec<(u64, u64)>,
}

/// Runs `hook stop` for `transcript` under strace; returns each open of the transcript
/// with what it read.
fn traced_stop(home: &Path, transcript: &Path, archive: bool) -> Vec<Open> {
    let log = home.join("strace.log");
    let mut cmd = Command::new("strace");
    cmd.args(["-qq", "-f", "-y", "-s", "0", "-o"]).arg(&log);
    cmd.args([
        "-e",
        "trace=open,openat,read,pread64,readv,preadv,preadv2,lseek,close,mmap,sendfile,copy_file_range,splice",
    ]);
    cmd.arg(common::bin())
        .arg("--home")
        .arg(home)
        .args(["hook", "stop"]);
    clean_env(&mut cmd);
    cmd.env("TRANSCOPE_ARCHIVE", if archive { "on" } else { "off" });
    cmd.env("BRAIN_WRITER_ENABLED", "1");
    let payload = serde_json::json!({
        "session_id": SESSION,
        "transcript_path": transcript,
        "cwd": "/Users/dain/workspace/claude-code-log",
    });
    let out = output(cmd, payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("\"error\":null"),
        "the Stop did its work: {}",
        text(&out.stderr)
    );
    let trace = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_file(&log).unwrap();
    opens_of(&trace, &transcript.canonicalize().unwrap())
}

/// The opens of `path` in an `strace -f -y` log, split calls joined.
fn opens_of(trace: &str, path: &Path) -> Vec<Open> {
    let tag = format!("<{}>", path.display());
    let mut pending: BTreeMap<&str, String> = BTreeMap::new();
    let mut live: BTreeMap<u64, Open> = BTreeMap::new();
    let mut done = Vec::new();
    for raw in trace.lines() {
        let (pid, rest) = raw.split_once(' ').unwrap_or(("", raw));
        let rest = rest.trim_start();
        // `-f` splits a call another thread interrupts: join its halves.
        let line = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid, head.to_owned());
            continue;
        } else if rest.starts_with("<... ") {
            let Some(head) = pending.remove(pid) else {
                continue;
            };
            let tail = rest.split_once(" resumed>").map_or("", |(_, t)| t);
            format!("{head}{tail}")
        } else {
            rest.to_owned()
        };
        if !line.contains(&tag) {
            continue;
        }
        let (call, after) = line.split_once('(').unwrap();
        // `call(args)   = ret`: strace pads before the `=`.
        let Some((args, ret)) = after
            .rsplit_once(" = ")
            .and_then(|(a, r)| Some((a.trim_end().strip_suffix(')')?, r)))
        else {
            panic!("an strace line this test cannot read: {line}");
        };
        let ret = ret.split(['<', ' ']).next().unwrap();
        let Ok(ret) = ret.parse::<i64>() else {
            panic!("{line}");
        };
        let args: Vec<&str> = args.split(", ").collect();
        let fd = |a: &str| a.split('<').next().unwrap().parse::<u64>().unwrap();
        match call {
            "openat" | "open" if ret >= 0 => {
                live.insert(ret as u64, Open::default());
            }
            "read" if ret > 0 => {
                let o = live.get_mut(&fd(args[0])).expect("a read of an open file");
                o.ranges.push((o.pos, o.pos + ret as u64));
                o.pos += ret as u64;
            }
            "pread64" if ret > 0 => {
                let o = live.get_mut(&fd(args[0])).expect("a read of an open file");
                let at: u64 = args[3].parse().unwrap();
                o.ranges.push((at, at + ret as u64));
            }
            "lseek" => {
                live.get_mut(&fd(args[0])).unwrap().pos = ret as u64;
            }
            "close" => {
                if let Some(o) = live.remove(&fd(args[0])) {
                    done.push(o);
                }
            }
            "read" | "pread64" | "openat" | "open" => {}
            other => {
                panic!("the transcript was read by {other}, which this test cannot follow: {line}")
            }
        }
    }
    done.extend(live.into_values());
    done
}

/// No byte of `o` read twice.
fn each_byte_once(o: &Open, what: &str) {
    let mut ranges = o.ranges.clone();
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "{what}: bytes {}..{} read twice in one open ({:?})",
            w[1].0,
            w[0].1.min(w[1].1),
            o.ranges
        );
    }
}

#[test]
fn a_stop_reads_each_transcript_byte_once_in_each_pass() {
    if !strace_runs() {
        return;
    }
    let source = testdata().join(format!(
        "public/claude/handgemacht-ai__claude-code-log__{SESSION}.jsonl"
    ));
    let whole = std::fs::read(&source).unwrap();
    // The first Stop sees the first 200 KB (to a line's end); the second, the rest.
    let cut = whole[..200_000].iter().rposition(|b| *b == b'\n').unwrap() + 1;
    for archive in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let project = dir
            .path()
            .join(".claude/projects/-Users-dain-workspace-claude-code-log");
        std::fs::create_dir_all(&project).unwrap();
        let transcript = project.join(format!("{SESSION}.jsonl"));
        std::fs::write(&transcript, &whole[..cut]).unwrap();
        let passes = if archive { 3 } else { 2 };
        for (turn, what) in [(0, "first Stop"), (1, "Stop after one more turn")] {
            if turn == 1 {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&transcript)
                    .unwrap();
                f.write_all(&whole[cut..]).unwrap();
            }
            let what = format!("{what}, archive {}", if archive { "on" } else { "off" });
            let opens = traced_stop(&home, &transcript, archive);
            assert_eq!(
                opens.len(),
                passes,
                "{what}: one open each for the caller's identity{}, and the read: {opens:?}",
                if archive { ", the archive" } else { "" }
            );
            for o in &opens {
                each_byte_once(o, &what);
            }
            // The read's pass (the last) took every byte it had not read before, once.
            let size = std::fs::metadata(&transcript).unwrap().len();
            let read = opens.last().unwrap();
            let from = if turn == 0 { 0 } else { cut as u64 };
            let mut new: Vec<_> = read.ranges.iter().filter(|r| r.1 > from).copied().collect();
            new.sort();
            assert_eq!(new.first().map(|r| r.0.max(from)), Some(from), "{what}");
            assert_eq!(new.last().map(|r| r.1), Some(size), "{what}: {new:?}");
        }
    }
}

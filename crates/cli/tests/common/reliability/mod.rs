//! The helpers of the reliability and security tests: sandboxed homes, running children
//! with a clean environment, measuring them, killing them at chosen moments, and
//! checking scope logs. They drive the real binary ([`super::bin`]: the one cargo built
//! for these tests, or `TRANSCOPE_BIN`).
//!
//! | file | proves |
//! | --- | --- |
//! | `contention.rs` | concurrent `scope record` and `hook stop` keep the log whole, ordered and free of duplicates |
//! | `crash.rs` | SIGKILL at random points loses nothing already written; torn lines are skipped; backfill re-runs converge |
//! | `hostile.rs` | hostile ids, paths and transcript bytes give a clear error or the documented no-op, bounded memory, nothing outside the home |
//! | `never_block.rs` | hooks give up on a held lock or an endless transcript within the bound, and the next Stop catches up |
//! | `permissions.rs` | 0600 files, 0700 directories, no symlink followed out of the home |
//! | `shards.rs` | N `backfill --shard K/N` runs write what one run writes; pushed to one fleet, they give the rows one run's push gives |
//! | `fleet_push.rs` | two machines pushing at once, killed at random moments and pushed again, leave every row in the fleet once, its answers the two indexes' combined |
//! | `fleet_stop.rs` | a Stop pushes its own rows; an unreachable or silent fleet costs it one line and at most its bound, and the rows wait for the next push |
#![allow(unsafe_code)]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

pub use super::{output as run, testdata, text, tree};

pub mod count;
pub mod fleet;

/// A sandbox: `root/home` is the agentihooks home, `root/user` is `$HOME`, and
/// `root/outside` is a folder nothing may ever write to.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub user: PathBuf,
    pub outside: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("transcope-rel-")
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let user = root.join("user");
        let outside = root.join("outside");
        for d in [&user, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        Sandbox {
            dir,
            root,
            home,
            user,
            outside,
        }
    }

    /// `transcope args…` whose agents' home folders are those of a generated corpus
    /// at `root` (`transcope-corpus`'s layout: every agent's default folder there).
    pub fn corpus_cmd(&self, root: &Path, args: &[&str]) -> Command {
        let mut c = self.cmd(args);
        c.env("CLAUDE_CONFIG_DIR", root.join("claude"))
            .env("CODEX_HOME", root.join("codex"))
            .env("GEMINI_CLI_HOME", root.join("gemini"))
            .env("QWEN_HOME", root.join("qwen/.qwen"))
            .env("COPILOT_HOME", root.join("copilot/.copilot"))
            .env("XDG_DATA_HOME", root.join("opencode/.local/share"));
        c
    }

    /// `transcope --home <home> args…` with a scrubbed environment and `HOME=<user>`.
    pub fn cmd(&self, args: &[&str]) -> Command {
        cmd_in(&self.home, &self.user, args)
    }

    /// `transcope scope record --session S --at AT --cwd CWD`.
    pub fn record_cmd(&self, session: &str, at: &str, cwd: &str) -> Command {
        self.cmd(&[
            "scope",
            "record",
            "--session",
            session,
            "--at",
            at,
            "--cwd",
            cwd,
        ])
    }

    /// The scope log of `session`.
    pub fn log(&self, session: &str) -> PathBuf {
        log_path(&self.home, session)
    }

    /// Every path under the sandbox except the home, for "nothing outside the home".
    pub fn outside_home(&self) -> Vec<String> {
        tree(&self.root)
            .into_iter()
            .filter(|p| {
                !matches!(p.as_str(), "home" | "user" | "outside") && !p.starts_with("home/")
            })
            .collect()
    }
}

/// `transcope --home HOME args…` with a scrubbed environment and `HOME=user`.
pub fn cmd_in(home: &Path, user: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(super::bin());
    c.arg("--home").arg(home).args(args);
    super::clean_env(&mut c);
    c.env("HOME", user)
        .env("USER", "tester")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .current_dir(user);
    c
}

/// `<home>/brain/session-scopes/<session>.jsonl`.
pub fn log_path(home: &Path, session: &str) -> PathBuf {
    home.join("brain/session-scopes")
        .join(format!("{session}.jsonl"))
}

/// A hook payload for a root session.
pub fn payload(session: &str, transcript: &Path) -> Vec<u8> {
    serde_json::json!({
        "session_id": session,
        "transcript_path": transcript,
        "hook_event_name": "Stop",
    })
    .to_string()
    .into_bytes()
}

/// A Claude Code transcript record in folder `cwd` at `2026-10-08T10:00:00Z + secs`.
pub fn claude_line(secs: u64, cwd: &str, branch: &str) -> String {
    serde_json::json!({
        "type": "user",
        "timestamp": iso(secs, "Z"),
        "cwd": cwd,
        "gitBranch": branch,
        "sessionId": "ignored-by-the-key",
        "message": {"role": "user", "content": "hello"},
    })
    .to_string()
}

/// A Claude assistant line at `secs` in `cwd` on `branch`: message `id` (request
/// `req-<id>`) with `input` and `output` tokens, `cache` cache writes and `3 × cache`
/// cache reads.
pub fn spend_line(secs: u64, cwd: &str, branch: &str, id: &str, tokens: [u64; 3]) -> String {
    let [input, output, cache] = tokens;
    serde_json::json!({
        "type": "assistant",
        "timestamp": iso(secs, "Z"),
        "cwd": cwd,
        "gitBranch": branch,
        "sessionId": "ignored-by-the-key",
        "requestId": format!("req-{id}"),
        "message": {"id": id, "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "working"}],
            "usage": {"input_tokens": input, "output_tokens": output,
                "cache_creation_input_tokens": cache, "cache_read_input_tokens": cache * 3}},
    })
    .to_string()
}

/// Claude `user` lines alternating between two folders, one a second: every line a
/// transition (issue 13's input for a large batch).
pub fn alternating(n: u64) -> String {
    let mut t = String::new();
    for i in 0..n {
        t.push_str(&claude_line(
            i,
            if i % 2 == 0 { "/w/a" } else { "/w/b" },
            "main",
        ));
        t.push('\n');
    }
    t
}

/// A Claude Code assistant record holding a brain marker.
pub fn claude_marker_line(secs: u64, cwd: &str, lesson: &str) -> String {
    serde_json::json!({
        "type": "assistant",
        "timestamp": iso(secs, "Z"),
        "cwd": cwd,
        "gitBranch": "main",
        "message": {"role": "assistant", "content": [
            {"type": "text", "text": format!("<!-- @lesson -->{lesson}<!-- @/lesson -->")}
        ]},
    })
    .to_string()
}

/// The `cwd` of each readable row of `session`'s scope log (none when it has no log).
pub fn cwds(sb: &Sandbox, session: &str) -> Vec<String> {
    check_log(&std::fs::read(sb.log(session)).unwrap_or_default())
        .iter()
        .map(|r| r["cwd"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The scope log of `session` as `[at, cwd, branch]` rows (a missing branch is "").
pub fn scopes(sb: &Sandbox, session: &str) -> Vec<[String; 3]> {
    check_log(&std::fs::read(sb.log(session)).unwrap())
        .iter()
        .map(|r| ["at", "cwd", "branch"].map(|k| r[k].as_str().unwrap_or("").to_owned()))
        .collect()
}

/// `2026-10-08T10:00:00<suffix>` plus `secs` seconds (fixed width, so the strings
/// sort as the instants do within one suffix).
pub fn iso(secs: u64, suffix: &str) -> String {
    let h = 10 + secs / 3600;
    let m = (secs / 60) % 60;
    let s = secs % 60;
    format!("2026-10-08T{h:02}:{m:02}:{s:02}{suffix}")
}

/// The readable rows of a log's bytes (what a reader sees): every `\n`-separated line
/// that parses as a JSON object.
pub fn readable_rows(bytes: &[u8]) -> Vec<Map<String, Value>> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| match serde_json::from_slice::<Value>(l) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        })
        .collect()
}

/// The invariants every scope log must keep, whatever happened to its writers:
/// readable rows have `sequence` equal to their index among readable rows, unique
/// `transition_id`s and non-decreasing `at` (all `at`s here share one format, so string
/// order is time order); every line but possibly the last is newline-terminated, and an
/// unreadable line is only ever a torn fragment (it is followed by a fresh line).
/// Returns the rows.
pub fn check_log(bytes: &[u8]) -> Vec<Map<String, Value>> {
    let rows = readable_rows(bytes);
    let mut ids = HashSet::new();
    let mut last: Option<(i128, String)> = None;
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            r["sequence"].as_u64(),
            Some(i as u64),
            "sequence of row {i}: {r:?}"
        );
        let id = r["transition_id"].as_str().expect("transition_id");
        assert!(ids.insert(id.to_owned()), "duplicate transition_id {id}");
        let at = r["at"].as_str().expect("at").to_owned();
        let t = instant(&at).unwrap_or_else(|| panic!("unparsed time {at:?}"));
        if let Some((prev, prev_at)) = &last {
            assert!(t >= *prev, "time went back: {at} after {prev_at}");
        }
        last = Some((t, at));
    }
    // Every unreadable line is a fragment of a row that was being written: a prefix of
    // a row (starts with the row's opening), never a mix of two rows.
    for l in bytes.split(|b| *b == b'\n') {
        if l.is_empty() {
            continue;
        }
        if serde_json::from_slice::<Value>(l).is_err() {
            const OPENING: &[u8] = b"{\"session_id\": ";
            assert!(
                l.starts_with(OPENING) || OPENING.starts_with(l),
                "an unreadable line that is not a torn row: {:?}",
                text(&l[..l.len().min(200)])
            );
            assert_eq!(
                memchr_count(l, b'{'),
                1,
                "two rows on one line: {:?}",
                text(l)
            );
        }
    }
    rows
}

/// Nanoseconds since 1970 of the ISO 8601 forms transcope writes and these tests use:
/// `YYYY-MM-DD[T ]HH:MM[:SS[.f…]]` then `Z`, `±HH:MM` or nothing (read as UTC).
pub fn instant(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i128> {
        let t = s.get(r)?;
        (!t.is_empty() && t.bytes().all(|c| c.is_ascii_digit())).then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !matches!(b.get(10), Some(b'T' | b' '))
    {
        return None;
    }
    let (h, mi) = (num(11..13)?, num(14..16)?);
    let mut i = 16;
    let mut sec = 0;
    let mut nanos = 0i128;
    if b.get(i) == Some(&b':') {
        sec = num(17..19)?;
        i = 19;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let frac = &s[start..i];
            let digits: String = frac.chars().chain(std::iter::repeat('0')).take(9).collect();
            nanos = digits.parse().ok()?;
        }
    }
    let offset = match &s[i..] {
        "" | "Z" | "z" => 0,
        o if o.len() == 6 && matches!(o.as_bytes()[0], b'+' | b'-') => {
            let v = num(i + 1..i + 3)? * 3600 + num(i + 4..i + 6)? * 60;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset;
    Some(secs * 1_000_000_000 + nanos)
}

fn memchr_count(hay: &[u8], b: u8) -> usize {
    hay.iter().filter(|x| **x == b).count()
}

/// The permission bits of `p` (not following a final symlink).
pub fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// Inode identity (dev, ino) of `p`.
pub fn inode(p: &Path) -> (u64, u64) {
    let m = std::fs::symlink_metadata(p).unwrap();
    (m.dev(), m.ino())
}

/// A child's result with its resource use.
pub struct Measured {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Peak resident set size of the child, in KiB (`ru_maxrss` from `wait4`).
    pub max_rss_kib: u64,
    pub elapsed: Duration,
    /// CPU time the child used, user and system (from `wait4`): steadier than the
    /// wall time on a busy machine.
    pub cpu: Duration,
}

/// Spawn `c` (stdin from `stdin`), let `feed` write to its stdin on another thread,
/// and reap it with `wait4` to get its own peak RSS.
pub fn run_measured(
    mut c: Command,
    feed: Option<Box<dyn FnOnce(std::process::ChildStdin) + Send>>,
) -> Measured {
    let started = Instant::now();
    let mut child = c
        .stdin(if feed.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning transcope");
    let feeder = feed.map(|f| {
        let input = child.stdin.take().unwrap();
        std::thread::spawn(move || f(input))
    });
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let (status, ru) = wait4(child.id() as libc::pid_t);
    let elapsed = started.elapsed();
    // The child is reaped: `Child` must not wait again.
    std::mem::forget(child);
    if let Some(f) = feeder {
        let _ = f.join();
    }
    Measured {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
        max_rss_kib: ru.ru_maxrss as u64,
        elapsed,
        cpu: timeval(ru.ru_utime) + timeval(ru.ru_stime),
    }
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// `wait4(pid)`: the exit status and the child's own resource usage.
pub fn wait4(pid: libc::pid_t) -> (ExitStatus, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain data; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    (ExitStatus::from_raw(status), ru)
}

/// Make the child's writes fail past `bytes` (a full disk): `RLIMIT_FSIZE`, with
/// `SIGXFSZ` ignored so `write` returns `EFBIG` instead of killing the process.
pub fn limit_file_size(c: &mut Command, bytes: u64) {
    set_limit(c, libc::RLIMIT_FSIZE, bytes);
}

/// Run the child with at most `bytes` of address space (`RLIMIT_AS`).
pub fn limit_memory(c: &mut Command, bytes: u64) {
    set_limit(c, libc::RLIMIT_AS, bytes);
}

/// Set the child's `resource` limit to `bytes` (soft and hard); for `RLIMIT_FSIZE`,
/// ignore `SIGXFSZ` too.
fn set_limit(c: &mut Command, resource: libc::__rlimit_resource_t, bytes: u64) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if resource == libc::RLIMIT_FSIZE {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
            Ok(())
        });
    }
}

/// Kill the child (`SIGXFSZ`, no core file) at its first write past `bytes` of any file,
/// after the part of that write that fits: a kill at an exact byte of a write, as a
/// `SIGKILL` landing in the middle of one leaves.
pub fn kill_at_file_size(c: &mut Command, bytes: u64) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let lim = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_CORE, &no_core) != 0
                || libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// Run the child with this umask.
pub fn with_umask(c: &mut Command, mask: libc::mode_t) {
    // SAFETY: umask is async-signal-safe.
    unsafe {
        c.pre_exec(move || {
            libc::umask(mask);
            Ok(())
        });
    }
}

/// Make a FIFO at `p`.
pub fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let r = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(r, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// A deterministic random stream for random kill points ([`transcope_testkit::Rng`]).
pub struct Rng(transcope_testkit::Rng);

impl Rng {
    /// Seeded from `TRANSCOPE_REL_SEED` when set, else `default`; the seed is printed.
    pub fn from_env(default: u64) -> Rng {
        let seed = std::env::var("TRANSCOPE_REL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default);
        eprintln!("random seed {seed} (set TRANSCOPE_REL_SEED to change)");
        Rng(transcope_testkit::Rng::new(seed))
    }

    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }
}

/// Spawn `c` with stdin from `stdin` bytes, output discarded, and SIGKILL it after
/// `after`. Returns how it ended (`None`: it was killed by our signal).
pub fn kill_after(mut c: Command, stdin: &[u8], after: Duration) -> Option<ExitStatus> {
    let mut child: Child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawning transcope");
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(stdin);
    }
    std::thread::sleep(after);
    let _ = child.kill();
    let st = child.wait().unwrap();
    (st.signal() != Some(libc::SIGKILL)).then_some(st)
}

/// A git repository at `dir` with an origin remote (written by testkit, no git CLI), so
/// session start has a project identity and writes the session index.
pub fn git_repo(dir: &Path) {
    transcope_testkit::git_repo(dir, "https://github.com/fixture/alpha.git", "main")
        .expect("a fixture repository");
}

/// A generated corpus (`transcope_corpus::generate`) of about `bytes` bytes in a
/// temporary folder.
pub fn generated_corpus(seed: u64, bytes: u64) -> tempfile::TempDir {
    let corpus = tempfile::tempdir().unwrap();
    transcope_corpus::generate(
        &transcope_corpus::CorpusSpec::new(seed, bytes),
        corpus.path(),
    )
    .expect("generating the corpus");
    corpus
}

/// `backfill --json` over `roots`, as arguments.
pub fn backfill_args(roots: &[PathBuf]) -> Vec<String> {
    let mut args = vec!["backfill".to_owned(), "--json".to_owned()];
    args.extend(roots.iter().map(|p| p.display().to_string()));
    args
}

/// Run `args` in `sb` to a successful end, and how long that took.
pub fn run_timed(sb: &Sandbox, args: &[&str]) -> Duration {
    let started = Instant::now();
    let out = run(sb.cmd(args), b"");
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    took
}

/// One HTTP request read from `reader` (a keep-alive connection): its
/// `Idempotency-Key` header and its body; `None` once the connection is closed or cut.
pub fn read_request(reader: &mut impl std::io::BufRead) -> Option<(Option<String>, Vec<u8>)> {
    let mut key = None;
    let mut len = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return None;
        }
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            if first {
                continue;
            }
            break;
        }
        first = false;
        if let Some(v) = l.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if let Some(v) = l.strip_prefix("idempotency-key:") {
            key = Some(v.trim().to_owned());
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((key, body))
}

/// The standard output of `args` run in `sb`, which must succeed.
pub fn stdout_of(sb: &Sandbox, args: &[&str]) -> String {
    stdout_in(&sb.home, &sb.user, args)
}

/// `sessions --json --no-sync` in `sb`: each row by its session key.
pub fn sessions_by_key(sb: &Sandbox) -> std::collections::BTreeMap<String, Value> {
    super::parse_json_lines(&stdout_of(sb, &["sessions", "--json", "--no-sync"]))
        .into_iter()
        .map(|v| (v["session"].as_str().unwrap().to_owned(), v))
        .collect()
}

/// The standard output of `transcope --home HOME args…` ([`cmd_in`]), which must
/// succeed.
pub fn stdout_in(home: &Path, user: &Path, args: &[&str]) -> String {
    super::succeeded(&run(cmd_in(home, user, args), b""), &args)
}

//! Test kits for transcope: what the tests of every crate check their parts with.
//!
//! * [`compliance`]: the contract every adapter ([`compliance::AdapterKit`]) and every
//!   stage ([`compliance::check_stage`]) meets, checked with the real framing, engine
//!   and cursor store.
//! * [`engine`]: the built-in adapters and a pipeline, as tests compose them.
//! * [`decode`]: bytes decoded by one adapter through the real framing, nothing else.
//! * [`framing`]: the framing layer's equivalence tester (every way of framing the same
//!   bytes gives the same lines) and its recording sink.
//! * [`mutate`]: lines changed a byte at a time, for quick paths checked against the
//!   full decode.
//! * [`store_kit`]: every question a command asks, put to two stores holding the same
//!   rows.
//! * [`pg`]: a fresh database of a test's own on a real PostgreSQL (the server
//!   `TRANSCOPE_TEST_PG` names; a skip without it, a failure under CI).
//! * Fixtures: [`testdata`], [`jsonl_files`], [`git_repo`], [`codex_family`], and
//!   [`python311`] for the comparisons with the Python reference.
//!
//! The synthetic corpora are `transcope-corpus`'s (its generator and its binary); the
//! deterministic [`Rng`] and [`git_repo`] are that crate's, named here for the kits'
//! users.
//!
//! # Example
//!
//! ```
//! use transcope_testkit::mutate::edited;
//! assert_eq!(edited(b"abc", &[(1, b'x')]), b"axc");
//! assert!(transcope_testkit::testdata("public").is_dir());
//! ```
#![warn(missing_docs)]

pub mod compliance;
pub mod decode;
pub mod engine;
pub mod framing;
pub mod mutate;
pub mod pg;
pub mod store_kit;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use transcope_corpus::{git_repo, Rng};

/// `rel` under the workspace's `testdata/` (the fixtures every crate's tests share).
pub fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

/// Every `.jsonl` file below `dir`, appended to `out` (for tests walking corpora).
pub fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Every `.jsonl` and `.json` file below `dir`, but those in a `licenses` folder,
/// appended to `out` (a public corpus's transcripts, not its licence texts or notes).
pub fn transcript_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "licenses") {
                transcript_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "jsonl" || x == "json") {
            out.push(p);
        }
    }
}

/// The first line of the file at `path` that is not blank (what a sniffer is shown);
/// empty when there is none.
pub fn first_non_empty_line(path: &Path) -> Vec<u8> {
    let data = fs::read(path).unwrap();
    data.split(|b| *b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())
        .unwrap_or_default()
        .to_vec()
}

/// Whether the tests run under CI: `CI` set and not empty, `false` or `0`. There a test
/// that needs an outside tool or service fails when it is missing; elsewhere it says it
/// skipped.
pub fn under_ci() -> bool {
    says_ci(std::env::var("CI").ok().as_deref())
}

/// What a test does when an outside tool or service it needs is missing: under CI
/// ([`under_ci`]) it fails with `under_ci_why`; elsewhere it prints `skipped:
/// {skip_why}` and returns, and the test returns early.
pub fn missing(under_ci_why: &str, skip_why: &str) {
    if under_ci() {
        panic!("{under_ci_why}");
    }
    eprintln!("skipped: {skip_why}");
}

/// Whether a value of `CI` says CI (see [`under_ci`]).
pub(crate) fn says_ci(ci: Option<&str>) -> bool {
    ci.is_some_and(|v| !matches!(v.trim(), "" | "false" | "0"))
}

/// Whether `python3` is Python 3.11 or later (the reference's version), for the tests
/// that compare with Python itself; prints a notice when it is not, so a skipped
/// comparison is seen.
pub fn python311() -> bool {
    let ok = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("NOTICE: python3 >= 3.11 not found; the comparison with Python is skipped");
    }
    ok
}

/// The session ids of [`codex_family`]'s rollouts: the source, its fork and its
/// sub-agent thread.
pub const CODEX_FAMILY: [&str; 3] = [
    "0199aaaa-0000-7000-8000-000000000001",
    "0199aaaa-0000-7000-8000-000000000002",
    "0199aaaa-0000-7000-8000-000000000003",
];

/// Writes a Codex session's family under the sessions folder `sessions`, in
/// `2026/01/02/`: a source rollout, a fork of it (`session_meta.forked_from_id`) and a
/// sub-agent thread it spawned (`parent_thread_id`), each moving between two folders
/// under `/w` (not created); their ids are [`CODEX_FAMILY`]. Returns the files, in
/// that order.
pub fn codex_family(sessions: &Path) -> io::Result<Vec<PathBuf>> {
    let dir = sessions.join("2026/01/02");
    fs::create_dir_all(&dir)?;
    let [source, fork, child] = CODEX_FAMILY;
    let spawned =
        serde_json::json!({"subagent": {"thread_spawn": {"parent_thread_id": source, "depth": 1}}});
    let metas = [
        serde_json::json!({"id": source, "cwd": "/w/a", "source": "cli"}),
        serde_json::json!({"id": fork, "cwd": "/w/b", "source": "cli", "forked_from_id": source}),
        serde_json::json!({"id": child, "cwd": "/w/c", "source": spawned, "parent_thread_id": source}),
    ];
    let mut files = Vec::new();
    for (i, (id, meta)) in CODEX_FAMILY.iter().zip(metas).enumerate() {
        let at = |m: usize| format!("2026-01-02T10:{:02}:{m:02}.000Z", i * 10);
        let turn = |m: usize, cwd: &str| {
            serde_json::json!({"timestamp": at(m), "type": "turn_context",
                "payload": {"cwd": cwd, "model": "gpt-5-codex"}})
        };
        let lines = [
            serde_json::json!({"timestamp": at(0), "type": "session_meta", "payload": meta}),
            turn(1, &format!("/w/{}", ["a", "b", "c"][i])),
            turn(2, "/w/shared"),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let path = dir.join(format!("rollout-2026-01-02T10-{:02}-00-{id}.jsonl", i * 10));
        fs::write(&path, text)?;
        files.push(path);
    }
    Ok(files)
}

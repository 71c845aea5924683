//! Issue 13, items 3 and 4, through the real binary: inputs that cost the square of
//! their size now cost time linear in it, with memory bounded by it.
//!
//! * A Stop over Claude `user` lines alternating between two folders (every line a
//!   transition): the replay check scanned every row for each new one, and every row
//!   was kept as a JSON map (20,000 took 5.5 s and 116 MB; from about 47,000 a hook hit
//!   its deadline at every Stop and never progressed). The log written is what the
//!   Python model of the reference (`testdata/reference/observe_model.py`) writes,
//!   byte for byte.
//! * A `cwd` 2^16 and 2^18 components deep: resolving it `lstat`ed every prefix.
//!
//! Growth is judged on CPU time (user + system, from `wait4`), which a busy machine
//! disturbs far less than wall time: four times the input must cost less than eight
//! times the CPU (linear is about four, quadratic sixteen).

mod common;

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use common::reliability::*;

/// What a hook's Stop costs over `transcript` for `session`, in a fresh home.
fn stop_measured(session: &str, transcript: &[u8]) -> (Sandbox, Measured) {
    let sb = Sandbox::new();
    let t = sb.user.join("t.jsonl");
    std::fs::write(&t, transcript).unwrap();
    let body = payload(session, &t);
    let m = run_measured(
        sb.cmd(&["hook", "stop", "--json"]),
        Some(Box::new(move |mut stdin| {
            let _ = stdin.write_all(&body);
        })),
    );
    assert_eq!(m.status.code(), Some(0), "{}", text(&m.stderr));
    let v: serde_json::Value = serde_json::from_slice(&m.stdout).unwrap();
    assert!(v["error"].is_null(), "{v}");
    (sb, m)
}

/// Peak RSS allowed: 64 MiB plus the input.
fn rss_bound_kib(input: usize) -> u64 {
    64 * 1024 + input as u64 / 1024
}

fn grows_linearly(what: &str, small: Duration, large: Duration) {
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-3);
    eprintln!("{what}: CPU {small:?} → {large:?} for 4× the input ({ratio:.2}×)");
    assert!(
        ratio < 8.0,
        "{what}: 4× the input cost {ratio:.1}× the CPU ({small:?} → {large:?})"
    );
}

#[test]
fn a_batch_of_alternating_folders_costs_linear_time_and_writes_pythons_rows() {
    let mut cpu = Vec::new();
    for n in [5_000u64, 20_000] {
        let input = alternating(n).into_bytes();
        let (sb, m) = stop_measured("batch", &input);
        let log = std::fs::read(sb.log("batch")).unwrap();
        let rows = check_log(&log);
        assert_eq!(rows.len() as u64, n, "every line is a transition");
        assert!(
            m.max_rss_kib < rss_bound_kib(input.len()),
            "{n} transitions: peak RSS {} KiB",
            m.max_rss_kib
        );
        eprintln!(
            "{n} transitions: {:?} wall, {:?} CPU, {} KiB peak RSS, {} KB log",
            m.elapsed,
            m.cpu,
            m.max_rss_kib,
            log.len() / 1000
        );
        if transcope_testkit::python311() {
            let out = Command::new("python3")
                .arg(testdata().join("reference/observe_model.py"))
                .arg("batch")
                .arg(sb.user.join("t.jsonl"))
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", text(&out.stderr));
            assert!(
                out.stdout == log,
                "{n} transitions: not the reference's bytes"
            );
        }
        cpu.push(m.cpu);
    }
    grows_linearly("a batch of transitions", cpu[0], cpu[1]);
}

#[test]
fn a_deep_cwd_costs_linear_time() {
    let mut cpu = Vec::new();
    for depth in [65_536usize, 262_144] {
        let cwd = format!("/{}", "e/".repeat(depth));
        let line = claude_line(0, &cwd, "main") + "\n";
        let (sb, m) = stop_measured("deep", line.as_bytes());
        let rows = check_log(&std::fs::read(sb.log("deep")).unwrap());
        // No project: the folder is recorded as the transcript wrote it.
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0]["cwd"],
            cwd.as_str(),
            "the folder as the transcript names it"
        );
        assert!(
            m.max_rss_kib < rss_bound_kib(line.len()),
            "depth {depth}: peak RSS {} KiB",
            m.max_rss_kib
        );
        cpu.push(m.cpu);
    }
    grows_linearly("a deep cwd", cpu[0], cpu[1]);
}

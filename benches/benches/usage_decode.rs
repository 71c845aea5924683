//! An assistant line read for its usage alone: serde (`decode_claude_usage`, the
//! message's content skipped by `IgnoredAny`) against the checked walk
//! (`quick::usage_entry`), over the same lines (`Throughput::Bytes` = their length).
//!
//! Inputs: the public corpus's Claude assistant lines (`testdata/public/claude`), and
//! generated ones shaped as the bench corpus writes them (a `tool_use` block with a
//! command and a usage object with its cache split).
//!
//! Run: `cargo bench -p transcope-benches --bench usage_decode -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use transcope_core::{Entry, LinePos};

fn public_assistant_lines() -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for f in transcope_benches::public_files("claude") {
        for line in std::fs::read(&f).unwrap().split(|b| *b == b'\n') {
            let v: Result<serde_json::Value, _> = serde_json::from_slice(line);
            let usage = v
                .ok()
                .is_some_and(|v| v["type"] == "assistant" && v["message"]["usage"].is_object());
            if usage {
                lines.push(line.to_vec());
            }
        }
    }
    lines
}

fn generated_lines(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            serde_json::to_vec(&serde_json::json!({
                "parentUuid": format!("c25d5c7a-d5cd-4cfa-866e-{i:012}"),
                "isSidechain": false,
                "userType": "external",
                "cwd": "/home/dev/repos/kestrel/tests/fixtures",
                "sessionId": "6fa4e5c4-d53c-4da2-914d-67073dcd673c",
                "version": "2.1.17",
                "gitBranch": "main",
                "message": {
                    "id": format!("msg_01rkV2P1aGK2jWU{i:08}"),
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "content": [{"type": "tool_use", "id": format!("toolu_01JW7q6v{i:08}"), "name": "Bash",
                        "input": {"command": format!("cat src/marker_{i}.rs | head -100\ngit status --short"), "description": "Run a command"}}],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {"input_tokens": 30, "cache_creation_input_tokens": 793, "cache_read_input_tokens": 69197,
                        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 793},
                        "output_tokens": 1117, "service_tier": "standard"}
                },
                "requestId": format!("req_011CQtgVi9oC8k{i:06}"),
                "type": "assistant",
                "uuid": format!("68eb2b70-7237-4fdb-a41f-{i:012}"),
                "timestamp": "2025-11-21T23:53:38.370Z"
            }))
            .unwrap()
        })
        .collect()
}

const POS: LinePos = LinePos { offset: 1, line: 2 };

fn bench_set(c: &mut Criterion, name: &str, lines: &[Vec<u8>]) {
    let bytes: usize = lines.iter().map(Vec::len).sum();
    let answered = lines
        .iter()
        .filter(|l| transcope_adapter_claude::quick::usage_entry(l, POS).is_some())
        .count();
    eprintln!(
        "{name}: {} lines, {bytes} bytes, {answered} read by the walk",
        lines.len()
    );
    let mut g = c.benchmark_group(format!("usage_decode/{name}"));
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function(BenchmarkId::from_parameter("serde"), |b| {
        b.iter(|| {
            let mut n = 0u64;
            for l in lines {
                let _ = transcope_adapter_claude::decode_claude_usage(
                    l,
                    POS,
                    &mut transcope_core::adapter::from_fn(|e: &Entry<'_>| {
                        n += e
                            .usage
                            .as_ref()
                            .and_then(|u| u.tokens)
                            .map_or(0, |t| t.output)
                    }),
                );
            }
            black_box(n)
        })
    });
    g.bench_function(BenchmarkId::from_parameter("walk"), |b| {
        b.iter(|| {
            let mut n = 0u64;
            for l in lines {
                if let Some(e) = transcope_adapter_claude::quick::usage_entry(l, POS) {
                    n += e.usage.and_then(|u| u.tokens).map_or(0, |t| t.output);
                }
            }
            black_box(n)
        })
    });
    g.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_set(&mut c, "public", &public_assistant_lines());
    bench_set(&mut c, "generated", &generated_lines(2000));
    c.final_summary();
}

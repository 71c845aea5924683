//! Line decoding throughput: the transcript adapters against other ways to read the
//! same lines.
//!
//! Cases, each over the same lines (`Throughput::Bytes` = their total length):
//!
//! * `adapter`: `ClaudeAdapter` / `CodexAdapter` (serde_json, borrowed typed fields,
//!   `&RawValue` for `message`/`payload`, second decode only where the type needs it)
//!   — the full work: entry with folder, branch, time, ids and marker texts;
//! * `serde_json_value`: `serde_json::from_slice::<Value>` — the DOM baseline (no
//!   extraction at all);
//! * `simd_json_serde_typed`: `simd_json::serde::from_slice_with_buffers` on a mutable
//!   copy of the line into a borrowed typed struct of the top-level keys, `message` and
//!   `payload` ignored — a lower bound for a simd-json backend (it extracts no texts);
//! * `simd_json_borrowed_value`: `simd_json::to_borrowed_value_with_buffers` (simd-json's
//!   own DOM);
//! * `utf8_validate`: `std::str::from_utf8` alone — the first thing the adapters do
//!   (a line must be UTF-8), shown to size its share;
//! * `key_scan`: a hand-rolled, non-validating top-level key scanner (memchr over
//!   strings) that only finds the raw `type`/`cwd`/`timestamp`/`gitBranch` slices — a
//!   floor for any approach that must at least look at every byte.
//!
//! Inputs: every public corpus line (`real/claude`, `real/codex`), and generated lines
//! with big payloads: Claude tool results of 100 KB and 1 MB inside `message.content`,
//! an assistant line with a 200 KB `tool_use` input, a Codex `function_call_output` of
//! 500 KB.
//!
//! Run: `cargo bench -p transcope-benches --bench decode -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput};
use serde::de::{IgnoredAny, MapAccess};
use transcope_adapter_claude::ClaudeAdapter;
use transcope_adapter_codex::CodexAdapter;
use transcope_adapter_common::de::{skip_value, FromMap, Loose, Obj};
use transcope_core::adapter::Adapter;
use transcope_core::{Entry, LinePos};

// ---------------------------------------------------------------------------------
// Inputs

fn corpus_lines(dir: &str) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for f in transcope_benches::public_files(dir) {
        let data = std::fs::read(&f).unwrap();
        let first = data.split(|b| *b == b'\n').next().unwrap_or(b"");
        if transcope_adapter_codex::detect::classify(first)
            == transcope_adapter_codex::detect::FirstLine::CodexLegacyHeader
        {
            continue; // the Codex adapter's mode is per file; keep the stream envelope-only
        }
        for line in data.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            // Only valid JSON lines, so every case does comparable work.
            if serde_json::from_slice::<serde_json::Value>(line).is_ok() {
                lines.push(line.to_vec());
            }
        }
    }
    lines
}

/// Deterministic tool-output-like text: code lines with quotes, tabs, backslashes and
/// some non-ASCII, so escapes are as frequent as in real tool results.
fn tool_text(len: usize, seed: u64) -> String {
    let words = [
        "fn",
        "let",
        "mut",
        "self",
        "return",
        "match",
        "Some(x)",
        "None",
        "=>",
        "{",
        "}",
        "\"quoted\"",
        "path\\to\\file",
        "\tindent",
        "café",
        "données",
        "->",
        "0x2f",
        "//",
        "println!(\"{}\",",
        "value);",
        "<div>",
        "</div>",
        "résumé",
        "42",
    ];
    let mut s = String::with_capacity(len + 64);
    let mut x = seed | 1;
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(words[(x % words.len() as u64) as usize]);
        s.push(if x & 0xf == 0 { '\n' } else { ' ' });
    }
    s
}

fn claude_tool_result(len: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "parentUuid": "6f1c2a1e-5d43-4a51-9b0e-2f7c1f0e9a11",
        "isSidechain": false,
        "userType": "external",
        "cwd": "/Users/dev/workspace/project",
        "sessionId": "ef958aa1-0e93-49f0-bb71-150f63befcd1",
        "version": "2.1.114",
        "gitBranch": "main",
        "type": "user",
        "message": {"role": "user", "content": [
            {"tool_use_id": "toolu_01ABC", "type": "tool_result", "content": tool_text(len, 7), "is_error": false}
        ]},
        "uuid": "72a4c0de-1111-4a2b-8c3d-0e0f10111213",
        "timestamp": "2025-07-14T22:59:30.699Z",
        "toolUseResult": {"stdout": tool_text(len / 4, 9), "stderr": "", "interrupted": false}
    }))
    .unwrap()
}

fn claude_assistant_tool_use(len: usize) -> Vec<u8> {
    // `type` after `message`, as in most real assistant lines.
    serde_json::to_vec(&serde_json::json!({
        "parentUuid": "72a4c0de-1111-4a2b-8c3d-0e0f10111213",
        "isSidechain": false,
        "message": {"id": "msg_013s", "type": "message", "role": "assistant", "model": "claude-sonnet-4",
            "content": [
                {"type": "thinking", "thinking": tool_text(4_000, 3), "signature": "sig"},
                {"type": "text", "text": format!("{}<!-- @lesson -->Keep it small.<!-- @/lesson -->", tool_text(2_000, 5))},
                {"type": "tool_use", "id": "toolu_02", "name": "Write", "input": {"file_path": "/x/y.rs", "content": tool_text(len, 11)}}
            ],
            "stop_reason": null, "usage": {"input_tokens": 4, "output_tokens": 5}},
        "type": "assistant",
        "cwd": "/Users/dev/workspace/project",
        "sessionId": "ef958aa1-0e93-49f0-bb71-150f63befcd1",
        "gitBranch": "main",
        "uuid": "2685aaaa-1111-4a2b-8c3d-0e0f10111213",
        "timestamp": "2025-07-14T22:59:31.001Z"
    }))
    .unwrap()
}

fn codex_function_output(len: usize) -> Vec<u8> {
    let output = serde_json::to_string(&serde_json::json!({
        "output": tool_text(len, 13), "metadata": {"exit_code": 0, "duration_seconds": 0.4}
    }))
    .unwrap();
    serde_json::to_vec(&serde_json::json!({
        "timestamp": "2025-12-09T19:55:20.000Z",
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "call_1", "output": output}
    }))
    .unwrap()
}

// ---------------------------------------------------------------------------------
// Cases

fn run_adapter(adapter: &mut dyn Adapter, lines: &[Vec<u8>]) -> usize {
    adapter.reset();
    let mut n = 0usize;
    let mut sink = transcope_core::adapter::from_fn(|e: &Entry<'_>| {
        n += e.texts.len() + usize::from(e.cwd.is_some()) + 1;
    });
    for (i, l) in lines.iter().enumerate() {
        let _ = adapter.decode(
            l,
            LinePos {
                offset: 1,
                line: i as u64 + 1,
            },
            &mut sink,
        );
    }
    n
}

fn run_serde_value(lines: &[Vec<u8>]) -> usize {
    lines
        .iter()
        .map(|l| {
            serde_json::from_slice::<serde_json::Value>(l)
                .map_or(0, |v| v.as_object().map_or(0, |m| m.len()))
        })
        .sum()
}

/// The top-level keys a simd-json backend would read; `message`/`payload` skipped.
#[derive(Default)]
struct SimdTop<'a> {
    ty: Loose<'a>,
    timestamp: Loose<'a>,
    cwd: Loose<'a>,
    git_branch: Loose<'a>,
    session_id: Loose<'a>,
    uuid: Loose<'a>,
    parent_uuid: Loose<'a>,
    is_sidechain: Loose<'a>,
}

impl<'de> FromMap<'de> for SimdTop<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.ty = map.next_value()?,
            "timestamp" => self.timestamp = map.next_value()?,
            "cwd" => self.cwd = map.next_value()?,
            "gitBranch" => self.git_branch = map.next_value()?,
            "sessionId" => self.session_id = map.next_value()?,
            "uuid" => self.uuid = map.next_value()?,
            "parentUuid" => self.parent_uuid = map.next_value()?,
            "isSidechain" => self.is_sidechain = map.next_value()?,
            "message" | "payload" => {
                map.next_value::<IgnoredAny>()?;
            }
            _ => skip_value(map)?,
        }
        Ok(())
    }
}

fn run_simd_typed(lines: &[Vec<u8>], buf: &mut Vec<u8>, buffers: &mut simd_json::Buffers) -> usize {
    let mut n = 0;
    for l in lines {
        buf.clear();
        buf.extend_from_slice(l);
        if let Ok(Obj(Some(top))) =
            simd_json::serde::from_slice_with_buffers::<Obj<SimdTop<'_>>>(buf, buffers)
        {
            n += usize::from(top.cwd.truthy()) + usize::from(top.ty.as_str().is_some());
            black_box((
                &top.timestamp,
                &top.git_branch,
                &top.session_id,
                &top.uuid,
                &top.parent_uuid,
                &top.is_sidechain,
            ));
        }
    }
    n
}

fn run_simd_value(lines: &[Vec<u8>], buf: &mut Vec<u8>, buffers: &mut simd_json::Buffers) -> usize {
    use simd_json::prelude::*;
    let mut n = 0;
    for l in lines {
        buf.clear();
        buf.extend_from_slice(l);
        if let Ok(v) = simd_json::to_borrowed_value_with_buffers(buf, buffers) {
            n += v.as_object().map_or(0, |m| m.len());
        }
    }
    n
}

/// Non-validating scan of the top-level object: the raw value slices of four keys.
mod scan {
    use memchr::{memchr2, memchr3};

    fn skip_ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        i
    }

    /// `i` is just past an opening quote; returns the index just past the closing one.
    fn skip_str(b: &[u8], mut i: usize) -> usize {
        loop {
            match memchr2(b'"', b'\\', &b[i.min(b.len())..]) {
                Some(k) if b[i + k] == b'\\' => i += k + 2,
                Some(k) => return i + k + 1,
                None => return b.len(),
            }
        }
    }

    fn skip_container(b: &[u8], mut i: usize) -> usize {
        let mut depth = 1usize;
        while depth > 0 && i < b.len() {
            match memchr3(b'"', b'{', b'}', &b[i..]).map(|k| i + k) {
                // brackets nest the same way; count them in the byte loop below
                Some(j) => {
                    for &c in &b[i..j] {
                        match c {
                            b'[' => depth += 1,
                            b']' => depth -= 1,
                            _ => {}
                        }
                    }
                    i = match b[j] {
                        b'"' => skip_str(b, j + 1),
                        b'{' => {
                            depth += 1;
                            j + 1
                        }
                        _ => {
                            depth -= 1;
                            j + 1
                        }
                    };
                }
                None => return b.len(),
            }
        }
        i
    }

    fn skip_value(b: &[u8], i: usize) -> usize {
        match b.get(i) {
            Some(b'"') => skip_str(b, i + 1),
            Some(b'{' | b'[') => skip_container(b, i + 1),
            _ => {
                let mut j = i;
                while j < b.len() && !matches!(b[j], b',' | b'}' | b']') {
                    j += 1;
                }
                j
            }
        }
    }

    /// Raw slices of `type`, `cwd`, `timestamp`, `gitBranch` at the top level.
    pub fn top_keys(b: &[u8]) -> [Option<&[u8]>; 4] {
        let mut out = [None; 4];
        let mut i = skip_ws(b, 0);
        if b.get(i) != Some(&b'{') {
            return out;
        }
        i += 1;
        loop {
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b'"') => {}
                _ => return out,
            }
            let k0 = i + 1;
            i = skip_str(b, k0);
            let key = &b[k0..i.saturating_sub(1).max(k0)];
            i = skip_ws(b, i);
            if b.get(i) != Some(&b':') {
                return out;
            }
            i = skip_ws(b, i + 1);
            let v0 = i;
            i = skip_value(b, i);
            let slot = match key {
                b"type" => Some(0),
                b"cwd" => Some(1),
                b"timestamp" => Some(2),
                b"gitBranch" => Some(3),
                _ => None,
            };
            if let Some(s) = slot {
                out[s] = Some(&b[v0..i.min(b.len())]);
            }
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b',') => i += 1,
                _ => return out,
            }
        }
    }
}

fn run_scan(lines: &[Vec<u8>]) -> usize {
    lines
        .iter()
        .map(|l| scan::top_keys(l).iter().filter(|x| x.is_some()).count())
        .sum()
}

fn bench_set(c: &mut Criterion, name: &str, lines: &[Vec<u8>], codex: bool) {
    let bytes: usize = lines.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group(format!("decode/{name}"));
    g.throughput(Throughput::Bytes(bytes as u64));
    if bytes > 1_000_000 {
        g.sample_size(20);
    }
    g.bench_function(BenchmarkId::from_parameter("adapter"), |b| {
        if codex {
            let mut a = CodexAdapter::new();
            b.iter(|| run_adapter(&mut a, black_box(lines)))
        } else {
            let mut a = ClaudeAdapter::new();
            b.iter(|| run_adapter(&mut a, black_box(lines)))
        }
    });
    g.bench_function(BenchmarkId::from_parameter("serde_json_value"), |b| {
        b.iter(|| run_serde_value(black_box(lines)))
    });
    let max = lines.iter().map(Vec::len).max().unwrap_or(0);
    let mut buf = Vec::with_capacity(max);
    let mut buffers = simd_json::Buffers::new(max);
    g.bench_function(BenchmarkId::from_parameter("simd_json_serde_typed"), |b| {
        b.iter(|| run_simd_typed(black_box(lines), &mut buf, &mut buffers))
    });
    g.bench_function(
        BenchmarkId::from_parameter("simd_json_borrowed_value"),
        |b| b.iter(|| run_simd_value(black_box(lines), &mut buf, &mut buffers)),
    );
    g.bench_function(BenchmarkId::from_parameter("utf8_validate"), |b| {
        b.iter(|| {
            black_box(lines)
                .iter()
                .filter(|l| std::str::from_utf8(l).is_ok())
                .count()
        })
    });
    g.bench_function(BenchmarkId::from_parameter("utf8_validate_simdutf8"), |b| {
        b.iter(|| {
            black_box(lines)
                .iter()
                .filter(|l| simdutf8::basic::from_utf8(l).is_ok())
                .count()
        })
    });
    g.bench_function(BenchmarkId::from_parameter("key_scan"), |b| {
        b.iter(|| run_scan(black_box(lines)))
    });
    // The structural probe the adapters run before deciding to decode a line, with the
    // instruction set chosen at run time and with the x86_64 baseline (SSE2).
    use transcope_adapter_common::probe::{fields_with, Isa};
    for (name, isa) in [
        ("probe_fields", Isa::detect()),
        ("probe_fields_baseline", Isa::Baseline),
    ] {
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                black_box(lines)
                    .iter()
                    .filter(|l| fields_with(isa, l).is_some())
                    .count()
            })
        });
    }
    g.finish();
}

fn decode(c: &mut Criterion) {
    let claude = corpus_lines("claude");
    let codex = corpus_lines("codex");
    assert!(run_scan(&claude) > 0 && run_adapter(&mut ClaudeAdapter::new(), &claude) > 0);

    bench_set(c, "real/claude", &claude, false);
    bench_set(c, "real/codex", &codex, true);
    bench_set(
        c,
        "gen/claude_tool_result_100k",
        &vec![claude_tool_result(100_000); 8],
        false,
    );
    bench_set(
        c,
        "gen/claude_tool_result_1m",
        &[claude_tool_result(1_000_000)],
        false,
    );
    bench_set(
        c,
        "gen/claude_assistant_tool_use_200k",
        &vec![claude_assistant_tool_use(200_000); 4],
        false,
    );
    bench_set(
        c,
        "gen/codex_function_output_500k",
        &vec![codex_function_output(500_000); 2],
        true,
    );
}

// Equivalent to `criterion_group!` + `criterion_main!`, whose generated `pub fn` would
// trip the workspace's `missing_docs` lint.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    decode(&mut c);
    c.final_summary();
}

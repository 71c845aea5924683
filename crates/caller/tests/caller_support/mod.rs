//! Transcript fixtures for the caller-identity tests (identity.md §6, `fixture_test.go`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use transcope_caller::claudepath::project_dir;
use transcope_caller::Env;

pub const TS_ROOT: &str = "2026-08-13T09:00:00.000Z";
pub const TS_RECORD: &str = "2026-08-13T09:01:00.000Z";
pub const TS_BOUNDARY: &str = "2026-08-13T10:00:00.000Z";

/// A fresh temporary directory and its real path.
pub fn tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().canonicalize().unwrap();
    (dir, real)
}

/// An environment naming only `CLAUDE_CONFIG_DIR`.
pub fn cfg_env(cfg: &Path) -> Env {
    Env::from([(
        "CLAUDE_CONFIG_DIR".to_owned(),
        cfg.to_str().unwrap().to_owned(),
    )])
}

/// `PD(x)`: `ProjectDir(cfg, x)`.
pub fn pd(cfg: &Path, dir: &Path) -> PathBuf {
    project_dir(cfg, dir).unwrap()
}

/// `preamble`: a uuid-less custom-title line.
pub fn preamble() -> Value {
    json!({"type": "custom-title", "customTitle": "a title", "sessionId": "s"})
}

/// `root(u)`: a user record with `parentUuid: null`.
pub fn root(u: &str) -> Value {
    json!({"type": "user", "uuid": u, "parentUuid": null, "timestamp": TS_ROOT, "sessionId": "s",
           "message": {"role": "user", "content": "hello"}})
}

/// `record(u, p)`: an assistant record.
pub fn record(u: &str, parent: &str) -> Value {
    json!({"type": "assistant", "uuid": u, "parentUuid": parent, "timestamp": TS_RECORD, "sessionId": "s",
           "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}})
}

/// `boundary(u, lp)`: a parentless compact boundary continuing `lp`.
pub fn boundary(u: &str, lp: &str) -> Value {
    compact_at(u, lp, TS_BOUNDARY)
}

/// `compactAt(u, lp, ts)`.
pub fn compact_at(u: &str, lp: &str, ts: &str) -> Value {
    json!({"type": "system", "subtype": "compact_boundary", "uuid": u, "parentUuid": null,
           "logicalParentUuid": lp, "timestamp": ts, "sessionId": "s",
           "compactMetadata": {"trigger": "auto", "preTokens": 123456}})
}

/// `originAt(u, ts)`.
pub fn origin_at(u: &str, ts: &str) -> Value {
    json!({"type": "user", "uuid": u, "parentUuid": null, "timestamp": ts, "sessionId": "s"})
}

/// `turnAt(u, parent, ts)`.
pub fn turn_at(u: &str, parent: &str, ts: &str) -> Value {
    json!({"type": "assistant", "uuid": u, "parentUuid": parent, "timestamp": ts, "sessionId": "s"})
}

/// `queueOp`: a uuid-less queue operation.
pub fn queue_op() -> Value {
    json!({"type": "queue-operation", "operation": "enqueue", "sessionId": "s"})
}

/// A record with the given fields.
pub fn with(mut v: Value, fields: Value) -> Value {
    for (k, val) in fields.as_object().unwrap() {
        v[k] = val.clone();
    }
    v
}

/// Writes `lines` (one JSON value each) to `path`, creating its directory.
pub fn write_lines(path: &Path, lines: &[Value]) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut body = String::new();
    for line in lines {
        body.push_str(&serde_json::to_string(line).unwrap());
        body.push('\n');
    }
    std::fs::write(path, body).unwrap();
    path.to_path_buf()
}

/// Writes `<dir>/<name>.jsonl`.
pub fn write(dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    write_lines(&dir.join(format!("{name}.jsonl")), lines)
}

/// A line longer than the scanner accepts (16 MiB + 1 bytes of JSON), with `fields`.
pub fn oversized_line(fields: Value) -> String {
    let head = serde_json::to_string(&fields).unwrap();
    let head = head.strip_suffix('}').unwrap();
    let sep = if head.len() > 1 { "," } else { "" };
    let pad = "x".repeat(transcope_caller::transcript::MAX_RECORD_BYTES + 1);
    format!("{head}{sep}\"padding\":\"{pad}\"}}")
}

/// Writes raw text lines.
pub fn write_raw(path: &Path, lines: &[String]) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut body = lines.join("\n");
    body.push('\n');
    std::fs::write(path, body).unwrap();
    path.to_path_buf()
}

/// A JSON line as a string.
pub fn line(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

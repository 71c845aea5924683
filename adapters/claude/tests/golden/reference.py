#!/usr/bin/env python3
"""Regenerate reference.json: what the reference implementation extracts from each
test transcript, computed from the rules of scope-log.md (§3.2 context extraction,
§5.2 format detection and marker-eligible records), written independently of the Rust
code so the Rust tests compare against Python's own JSON decoding and str()/truthiness.

Run from the workspace root: python3 adapters/claude/tests/golden/reference.py
Ports deliberately skip non-object entries in the marker scan (scope-log.md §8 item 20),
so this generator does the same.
"""
import glob
import json
import os
import sys

ROOT = os.getcwd()
FILES = sorted(
    glob.glob("testdata/public/claude/*.jsonl")
    + glob.glob("testdata/public/codex/*.jsonl")
    + glob.glob("testdata/codex-legacy/*.jsonl")
    + ["testdata/fixtures/session-scope.transcript.jsonl"]
)
CODEX_TYPES = ("session_meta", "response_item", "event_msg", "turn_context")


# The transcript loader of the reference model (JSON-array form, blank and invalid lines
# skipped), shared rather than written twice.
sys.path.insert(0, os.path.join(ROOT, "testdata", "reference"))
from observe_model import entries as load  # noqa: E402


def detect(path):
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line:
            continue
        if line.startswith("["):
            return "claude"
        try:
            first = json.loads(line)
        except ValueError:
            return "claude"
        if isinstance(first, dict) and first.get("type") in CODEX_TYPES:
            return "codex"
        return "claude"
    return "claude"


def context(entry):
    source = entry.get("payload") if entry.get("type") == "turn_context" else entry
    folder = source.get("cwd") if isinstance(source, dict) else None
    return str(folder or ""), entry.get("timestamp"), str(entry.get("gitBranch") or "")


def claude_texts(entry):
    if entry.get("type") != "assistant":
        return []
    message = entry.get("message")
    content = message.get("content", []) if isinstance(message, dict) else []
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        b.get("text", "")
        for b in content
        if isinstance(b, dict) and b.get("type") == "text"
    ]


def codex_texts(entry):
    payload = entry.get("payload", {})
    if not isinstance(payload, dict):
        return []
    kind = entry.get("type")
    if kind == "response_item" and payload.get("type") == "message":
        if payload.get("role", "") != "assistant":
            return []
        parts = [
            b.get("text", "")
            for b in payload.get("content", [])
            if isinstance(b, dict) and b.get("type") in ("input_text", "output_text", "text")
        ]
        return ["\n".join(parts)] if parts else []
    if kind == "event_msg" and payload.get("type") == "task_complete":
        return [payload.get("last_agent_message") or ""]
    return []


def main():
    out = {}
    for path in FILES:
        fmt = detect(path)
        entries = [e for e in load(path) if isinstance(e, dict)]
        ctx = []
        for e in entries:
            folder, at, branch = context(e)
            if folder or branch or at is not None:
                ctx.append([folder, at, branch])
        texts = []
        for e in entries:
            for t in claude_texts(e) if fmt == "claude" else codex_texts(e):
                if t and isinstance(t, str):
                    texts.append([t, e.get("timestamp")])
        out[path] = {"format": fmt, "context": ctx, "texts": texts}
    with open(os.path.join(os.path.dirname(__file__), "reference.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""An independent model of the reference's transcript marker scan (scope-log.md §5.1,
§5.2) using Python's own `re`, for golden files and differential tests. Non-object JSON
lines are skipped (the reference crashes there, §8 item 20).

usage: markers_model.py TRANSCRIPT  -> one JSON marker per line (json.dumps defaults)
"""
import json, re, sys

BLOCK = re.compile(r'<!--\s*@(\w+)((?:\s+\w+=(?:"[^"]*"|[^\s>]+))*)\s*-->(.*?)<!--\s*@/\1\s*-->', re.DOTALL)
ATTR = re.compile(r'(\w+)=(?:"([^"]*)"|([^\s>]+))')
TYPES = {"lesson", "milestone", "signal", "decision"}
CODEX = {"session_meta", "response_item", "event_msg", "turn_context"}


def lines(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append(None)
    return out


def records(entries):
    first = next((e for e in entries), None)
    codex = isinstance(first, dict) and first.get("type") in CODEX
    for e in entries:
        if not isinstance(e, dict):
            continue
        if codex:
            p = e.get("payload")
            if not isinstance(p, dict):
                continue
            if e.get("type") == "response_item" and p.get("type") == "message" and p.get("role") == "assistant":
                parts = [b.get("text") for b in p.get("content") or [] if isinstance(b, dict)
                         and b.get("type") in ("input_text", "output_text", "text") and isinstance(b.get("text"), str)]
                if parts:
                    yield "\n".join(parts), e.get("timestamp")
            elif e.get("type") == "event_msg" and p.get("type") == "task_complete":
                m = p.get("last_agent_message")
                if isinstance(m, str) and m:
                    yield m, e.get("timestamp")
        elif e.get("type") == "assistant":
            msg = e.get("message")
            c = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(c, str):
                yield c, e.get("timestamp")
            elif isinstance(c, list):
                for b in c:
                    if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b.get("text"):
                        yield b["text"], e.get("timestamp")


def main(path):
    texts, starts = [], []
    pos = 0
    for text, ts in records(lines(path)):
        starts.append((pos, ts))
        texts.append(text)
        pos += len(text) + 1
    joined = "\n".join(texts)
    for m in BLOCK.finditer(joined):
        kind = m.group(1).lower()
        content = m.group(3).strip()
        if kind not in TYPES or not content:
            continue
        attrs = {}
        for a in ATTR.finditer(m.group(2)):
            attrs[a.group(1)] = a.group(2) or a.group(3) or None
        attrs.pop("ts", None)
        ts = None
        for s, t in starts:
            if s <= m.start():
                ts = t
        out = {"type": kind, "attrs": attrs, "content": content}
        if ts:
            out["at"] = ts
        print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])

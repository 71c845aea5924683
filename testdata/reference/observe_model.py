#!/usr/bin/env python3
"""An independent model of the reference's observe_transcript (scope-log.md §3.2) and
record_scope (§2.1), written from the specification for golden files and differential
tests. No project resolver (every folder resolves to nothing) and an empty environment,
i.e. what `transcope observe --no-env` does for folders that are not repositories.

usage: observe_model.py SESSION TRANSCRIPT [SESSION TRANSCRIPT ...]  -> the log bytes on stdout
"""
import hashlib, json, sys
from datetime import datetime, timezone

FIELDS = ["project_id", "project", "repo", "worktree", "cwd", "remote", "branch",
          "swarm", "task", "task_revision", "lane"]


def parse(v):
    if not isinstance(v, str):
        return None
    try:
        d = datetime.fromisoformat(v)
    except ValueError:
        return None
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def rows(text):
    out = []
    for line in text.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            out.append(v)
    return out


def record(log, sid, scope, at):
    scope = {k: (str(scope.get(k)) if scope.get(k) else "") for k in FIELDS}
    t = parse(at)
    if t is None:
        return None
    existing = rows(log[0])
    tid = hashlib.sha256(json.dumps([sid, at, scope], sort_keys=True).encode()).hexdigest()
    if any(r.get("transition_id") == tid for r in existing):
        return None
    if existing:
        latest = existing[-1]
        lt = parse(latest.get("at"))
        if lt is not None and t < lt:
            return None  # refused: older
        if all(latest.get(k) == scope[k] for k in FIELDS):
            return None
    row = {"session_id": sid, "sequence": len(existing), "at": at, "transition_id": tid}
    row.update(scope)
    prefix = "\n" if log[0] and not log[0].endswith("\n") else ""
    log[0] += prefix + json.dumps(row) + "\n"
    return row


def entries(path):
    try:
        text = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError):
        return []
    text = text.strip()
    if not text:
        return []
    if text.startswith("["):
        try:
            v = json.loads(text)
        except ValueError:
            return []
        return v if isinstance(v, list) else []
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def observe(log, sid, path):
    existing = rows(log[0])
    after = parse(existing[-1].get("at")) if existing else None
    seen = (existing[-1].get("cwd"), existing[-1].get("branch")) if existing else None
    count = 0
    for e in entries(path):
        if not isinstance(e, dict):
            continue
        if e.get("type") == "turn_context":
            p = e.get("payload")
            folder = p.get("cwd") if isinstance(p, dict) else None
        else:
            folder = e.get("cwd")
        folder = str(folder or "")
        t = parse(e.get("timestamp"))
        if not folder or t is None or (after is not None and t < after):
            continue
        if e.get("gitBranch"):
            branch = str(e.get("gitBranch"))
        elif seen is not None and seen[0] == folder:
            branch = seen[1]
        else:
            branch = ""
        if (folder, branch) == seen:
            continue
        seen = (folder, branch)
        scope = {"cwd": folder, "branch": branch, "swarm": "", "task": "", "lane": ""}
        if record(log, sid, scope, e.get("timestamp")):
            count += 1
    return count


if __name__ == "__main__":
    log = [""]
    args = sys.argv[1:]
    for sid, path in zip(args[::2], args[1::2]):
        observe(log, sid, path)
    sys.stdout.write(log[0])

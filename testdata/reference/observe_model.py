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


class Log:
    """One log as the rules read it: its text, and what record_scope reads of its rows
    (how many, their transition ids, the latest), kept as rows are appended rather than
    parsed again at every record, so a model run is linear in its transcripts."""

    def __init__(self):
        self.parts = []
        self.count = 0
        self.ids = set()
        self.latest = None

    def append(self, row):
        # Every row ends its line: the fresh-line rule never applies to a model log.
        self.parts.append(json.dumps(row) + "\n")
        self.count += 1
        self.ids.add(row["transition_id"])
        self.latest = row

    def text(self):
        return "".join(self.parts)


def record(log, sid, scope, at):
    scope = {k: (str(scope.get(k)) if scope.get(k) else "") for k in FIELDS}
    t = parse(at)
    if t is None:
        return None
    tid = hashlib.sha256(json.dumps([sid, at, scope], sort_keys=True).encode()).hexdigest()
    if tid in log.ids:
        return None
    if log.latest is not None:
        latest = log.latest
        lt = parse(latest.get("at"))
        if lt is not None and t < lt:
            return None  # refused: older
        if all(latest.get(k) == scope[k] for k in FIELDS):
            return None
    row = {"session_id": sid, "sequence": log.count, "at": at, "transition_id": tid}
    row.update(scope)
    log.append(row)
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
    last = log.latest
    after = parse(last.get("at")) if last else None
    seen = (last.get("cwd"), last.get("branch")) if last else None
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
    log = Log()
    args = sys.argv[1:]
    for sid, path in zip(args[::2], args[1::2]):
        observe(log, sid, path)
    sys.stdout.write(log.text())

#!/usr/bin/env python3
"""Regenerate fuzz/seeds/<target>/ from the repository's testdata (deterministic).

Run from anywhere: python3 fuzz/make_seeds.py. Seeds are small (a few KB each) and
committed; the working corpus (fuzz/corpus/, git-ignored) grows from them.
"""
import hashlib
import json
import pathlib
import re
import shutil

ROOT = pathlib.Path(__file__).resolve().parent.parent
TD = ROOT / "testdata"
OUT = ROOT / "fuzz" / "seeds"


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def lines_of(path):
    return [l for l in path.read_bytes().split(b"\n") if l.strip()]


def transcripts():
    files = sorted((TD / "public" / "claude").glob("*.jsonl"))
    files += sorted((TD / "public" / "codex").glob("*.jsonl"))
    files += sorted((TD / "codex-legacy").glob("*.jsonl"))
    files += [TD / "fixtures" / "session-scope.transcript.jsonl"]
    files += sorted((TD / "markers").glob("*-markers.jsonl"))
    return files


def signature(line):
    try:
        v = json.loads(line)
    except Exception:
        return ("invalid",)
    if not isinstance(v, dict):
        return ("non-object",)
    sig = [v.get("type"), v.get("record_type"), "id" in v, "payload" in v]
    p = v.get("payload")
    if isinstance(p, dict):
        sig += [p.get("type"), p.get("role")]
    m = v.get("message")
    if isinstance(m, dict):
        c = m.get("content")
        sig += [m.get("role"), type(c).__name__]
        if isinstance(c, list):
            sig += sorted({x.get("type") for x in c if isinstance(x, dict)} - {None})
    return tuple(str(x) for x in sig)


def adapters():
    seen = set()
    for f in transcripts():
        ls = lines_of(f)
        head = b"\n".join(ls[:6]) + b"\n"
        if ls and len(head) <= 16384:
            write("adapters", head)
        for l in ls:
            s = (f.parent.name, signature(l))
            if s in seen or len(l) > 4096:
                continue
            seen.add(s)
            write("adapters", l + b"\n")
    for extra in [b"", b"\n\n", b"{}\n", b"[1]\n", b'{"type":"user"}\r\n{"type":"assist',
                  b'{"type":"assistant","message":{"content":"\\ud800"}}\n', b"\xff\xfe\n"]:
        write("adapters", extra)


def framing():
    # Header: [max_line, flags, start, stop] (see fuzz_targets/framing.rs).
    samples = [b"", b"\n", b"\r\n", b"\n\n\r\n", b"a\rb\n", b"abc", b"abc\r", b"x\r\r\ny\n",
               b'{"type":"user"}\r\n\n{"type":"assist']
    for f in transcripts()[:12:3]:
        data = f.read_bytes()[:1500]
        samples += [data, data[: data.rfind(b"\n") + 1]]
    for i, s in enumerate(samples):
        for h in ([8, 0, 0, 0], [3, 1, 7, 0], [31, 0x1f, 1, 2], [0, 0xe1, 0, 0]):
            write("framing", bytes(h) + s)
        if i > 6:
            break
    for s in samples[7:]:
        write("framing", bytes([16, (len(s) * 2 + 1) & 0xff, 3, 0]) + s)


def timestamp():
    src = (ROOT / "crates" / "core" / "tests" / "timestamps.rs").read_text()
    strs = set(re.findall(r'"((?:[^"\\]|\\.)*)"', src))
    strs = {re.sub(r"\\u\{([0-9a-fA-F]+)\}", lambda m: chr(int(m.group(1), 16)), s) for s in strs}
    strs = {s.replace("\\0", "\0") for s in strs}
    strs = {s for s in strs if re.search(r"\d{4}", s) or s in ("", "not a time")}
    shapes = set()
    for f in transcripts():
        for m in re.finditer(rb'"timestamp":\s*"([^"]{4,40})"', f.read_bytes()):
            t = m.group(1).decode()
            shape = re.sub(r"\d", "0", t)
            if shape not in shapes:
                shapes.add(shape)
                strs.add(t)
    for s in sorted(strs):
        write("timestamp", s)


def markers():
    texts = set()
    for f in sorted((TD / "markers").glob("*-markers.jsonl")):
        for l in lines_of(f):
            for m in re.finditer(r'"(?:text|content)":\s*("(?:[^"\\]|\\.)*")', l.decode()):
                t = json.loads(m.group(1))
                if "<!--" in t:
                    texts.add(t)
    texts |= {
        "<!-- @lesson -->Cache the probe.<!-- @/lesson -->",
        "Done. <!-- @lesson topic=x -->Cache the probe.<!-- @/lesson -->",
        '<!--@decision owner="ops team" ts=1 a="" b=y-->Use gix.<!--  @/decision  -->',
        "<!-- @milestone -->outer <!-- @lesson -->inner<!-- @/lesson --> tail<!-- @/milestone -->",
        "<!-- @signal a=b>c -->x<!-- @/signal -->",
        "<!-- @Lesson x=1 y=2 z=3 -->caf\u00e9 \U0001F600<!-- @/Lesson -->",
        "<!-- @lesson\u2028a=1\u3000-->unicode spaces<!-- @/lesson\u00a0-->",
        "<!-- @lesson -->unclosed",
        "<!-- @other -->dropped<!-- @/other --><!-- @lesson -->kept<!-- @/lesson -->",
        "<!-- @lesson -->a<!-- @/lesson -->\0<!-- @decision -->b\0c<!-- @/decision -->",
        "<!-- @lesson a=\"x -->y\" -->z<!-- @/lesson -->",
        "<!-- @lesson -->   <!-- @/lesson -->",
    }
    # Issue 13, cut to fit -max_len: distinct TYPEs whose attribute lists run through
    # each other, closed after (item 1) and before all their openings; a value-less
    # `name=` after a long word (item 2).
    n = 150
    opens = "".join(f"<!--@t{i} x=" for i in range(n))
    closes = "".join(f"<!--@/t{i}-->" for i in range(n))
    texts |= {
        opens + " " + closes,
        closes + opens + "1 -->c",
        '<!-- @lesson a="x b=y"' + "w" * 4000 + "= c=d -->c<!-- @/lesson -->",
    }
    for t in sorted(texts):
        write("markers", t)


def scopelog():
    for f in sorted((TD / "golden").rglob("*.scope.jsonl")):
        if f.stat().st_size:
            write("scopelog_reader", f.read_bytes())
    first = (TD / "golden" / "first.scope.jsonl").read_bytes()
    ls = first.split(b"\n")
    write("scopelog_reader", ls[0] + b"\n" + ls[1][:40])  # torn last line
    write("scopelog_reader", b"\r\n".join(ls[:2]) + b"\x0b" + ls[2] + "\u2028".encode())
    write("scopelog_reader", b'{"at": "2026-10-08T10:00:00Z", "project_id": 1e400, "cwd": [1.5, null]}\n'
                             b'{"at": 5}\n[]\n\xff\n{"at": "2026-10-08T10:01:00+01:00", "attrs": {"share": "fleet"}}\n')


def hook_payload():
    base = {"session_id": "s1", "transcript_path": "/cfg/projects/-repo/s1.jsonl", "cwd": "/repo"}
    payloads = [
        dict(base, hook_event_name="Stop", stop_hook_active=True,
             last_assistant_message="<!-- @lesson -->x<!-- @/lesson -->"),
        dict(base, hook_event_name="SessionStart", source="resume"),
        dict(base, hook_event_name="PreToolUse", tool_name="Bash", tool_use_id="toolu_1"),
        dict(base, hook_event_name="SubagentStop", agent_id="a0123456789abcdef", agent_type="x",
             agent_transcript_path="/cfg/projects/-repo/s1/subagents/agent-a0123456789abcdef.jsonl"),
        {"Session_ID": "s2", "CWD": 5, "worktree_path": None, "session_id": "s3"},
    ]
    for p in payloads:
        write("hook_payload", json.dumps(p))
    for raw in [b"", b"null", b"[]", b"{not json", b'{"session_id":"\\ud800x","cwd":"\xff"}',
                b'{"s\xc5\xbfssion_id":"fold","SESSION_ID":"k"}']:
        write("hook_payload", raw)


if __name__ == "__main__":
    if OUT.exists():
        shutil.rmtree(OUT)
    adapters()
    framing()
    timestamp()
    markers()
    scopelog()
    hook_payload()
    for d in sorted(OUT.iterdir()):
        files = list(d.iterdir())
        print(f"{d.name}: {len(files)} seeds, {sum(f.stat().st_size for f in files)} bytes")

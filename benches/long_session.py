#!/usr/bin/env python3
"""Long sessions (issue 33, item 5): what one step costs once a session is long.

For each size N (250k, 500k and 1M by default; SIZES=250000,500000 to choose) a Claude
Code transcript of N user lines whose `cwd` alternates between two folders (N folder
changes, so a scope log of N rows) is written under `projects/<folder>/<stem>.jsonl`,
and each binary (this build's release `transcope`, and BASELINE=path's if given) runs
the STEPS below in a fresh home: `backfill` builds the log and the index (once,
untimed beyond its own wall time), then each timed step runs RUNS times (at least 5),
its `before` hook first (a Stop's: one more line appended to the transcript, the other
folder, a later time: one new row). Wall time is the median (with min–max) of the runs;
peak RSS is the child's `ru_maxrss` from `os.wait4` (the largest of the runs; Linux
counts the spawning Python's own high-water mark in it, shown as the floor), and once
more by `/usr/bin/time -f %M` for one extra run.

Steps are a list (`STEPS`): a name, the command (a function of the context: binary,
home, folder, transcript, session key, N), whether it is timed, its stdin and a hook
run before each run. Rows for other commands (sync, explain, timeline, report) are one
`Step(...)` each.

The table is printed and appended to benches/results-long-session.md.
"""
import json, os, platform, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import timed  # noqa: E402  (one way of spawning and timing a child)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(TARGET, "release", "transcope")
BASELINE = os.environ.get("BASELINE")
RUNS = max(5, int(os.environ.get("RUNS", "5")))
SIZES = [int(s) for s in os.environ.get("SIZES", "250000,500000,1000000").split(",")]
WORK = os.environ.get("WORK_DIR", os.path.join(TARGET, "bench", "long-session"))
HOMES = os.environ.get("HOME_DIR", os.path.join(WORK, "homes"))
RESULTS = os.path.join(ROOT, "benches", "results-long-session.md")
FOLDERS = ("/w/a", "/w/b")


def claude_user(i):
    """Line i: a user record at second i, in the folder i's parity names, chained as
    Claude Code chains them (`uuid`, `parentUuid`: the first line is the session's origin
    record, which a hook's caller finds at once)."""
    ts = "2026-10-%02dT%02d:%02d:%02dZ" % (1 + i // 86400, (i // 3600) % 24, (i // 60) % 60, i % 60)
    return json.dumps({"type": "user", "uuid": "u%d" % i, "parentUuid": "u%d" % (i - 1) if i else None,
                       "timestamp": ts, "cwd": FOLDERS[i % 2], "gitBranch": "main",
                       "sessionId": "bench", "message": {"role": "user", "content": "hello"}}) + "\n"


def base_transcript(n):
    """The N-line transcript, written once per size and copied for each home."""
    path = os.path.join(WORK, f"alternating-chained-{n}.jsonl")
    if not os.path.exists(path):
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            for i in range(n):
                f.write(claude_user(i))
        os.rename(tmp, path)
    return path


class Step:
    """One command of the run. `argv(ctx)` gives it; `timed`: run RUNS times and
    reported (else once, as setup, its wall time reported); `stdin(ctx)`: its input;
    `before(ctx)`: run before each run (not timed)."""

    def __init__(self, name, argv, timed=True, stdin=None, before=None):
        self.name, self.argv, self.timed, self.stdin, self.before = name, argv, timed, stdin, before


def append_line(ctx):
    """One more transcript line: the other folder, one second later (one new row)."""
    i = ctx["next"]
    ctx["next"] = i + 1
    with open(ctx["transcript"], "a") as f:
        f.write(claude_user(i))


def stop_payload(ctx):
    return json.dumps({"session_id": ctx["key"], "transcript_path": ctx["transcript"],
                       "hook_event_name": "Stop"}).encode()


def stop_once(ctx):
    """One more line and the Stop that records its row: what a sync then has to mirror."""
    append_line(ctx)
    timed([ctx["bin"], "--home", ctx["home"], "hook", "stop"], stop_payload(ctx),
          env_for(ctx["home"]))


def middle(ctx):
    """An instant half way through the transcript (`explain --at`)."""
    i = ctx["n"] // 2
    return "2026-10-%02dT%02d:%02d:%02d.5Z" % (1 + i // 86400, (i // 3600) % 24, (i // 60) % 60, i % 60)


def q(*args):
    """A query of the session, its index not synced first."""
    return lambda c: [c["bin"], "--home", c["home"], *[a(c) if callable(a) else a for a in args]]


STEPS = [
    Step("backfill (builds the log and index)",
         lambda c: [c["bin"], "--home", c["home"], "backfill", c["dir"]], timed=False),
    Step("index sync, first (mirrors the whole log)",
         lambda c: [c["bin"], "--home", c["home"], "index", "sync"], timed=False),
    Step("hook stop, one new line",
         lambda c: [c["bin"], "--home", c["home"], "hook", "stop"],
         stdin=stop_payload, before=append_line),
    Step("index sync after a one-line Stop",
         lambda c: [c["bin"], "--home", c["home"], "index", "sync"], before=stop_once),
    Step("explain --at (half way)",
         q("explain", "--session", lambda c: c["key"], "--at", middle, "--json", "--no-sync")),
    Step("timeline --json",
         q("timeline", "--session", lambda c: c["key"], "--json", "--no-sync")),
    Step("sessions --json", q("sessions", "--json", "--no-sync")),
    Step("report",
         q("report", "--html", lambda c: os.path.join(c["home"], "report.html"), "--no-sync")),
]


def env_for(home):
    return {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def spawn(cmd, stdin, env):
    """(wall seconds, ru_maxrss KB) of one run (bench.timed: spawned directly, reaped
    with wait4)."""
    wall, ru = timed(cmd, stdin, env)
    return wall, ru.ru_maxrss


def time_rss_kb(cmd, stdin, env):
    p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, input=stdin, capture_output=True, env=env)
    return int(p.stderr.decode().strip().splitlines()[-1])


def session_key(ctx):
    """The key the backfill gave the transcript (its file stem, for a Claude file under
    projects/<folder>/), as `sessions --json --no-sync` lists it."""
    out = subprocess.run([ctx["bin"], "--home", ctx["home"], "sessions", "--json", "--no-sync"],
                         capture_output=True, env=env_for(ctx["home"]), check=True).stdout
    stem = os.path.splitext(os.path.basename(ctx["transcript"]))[0]
    text = out.decode()
    if stem not in text:
        raise SystemExit(f"the backfill did not list {stem}: {text[:500]}")
    return stem


def run_binary(label, binary, n, rows):
    ctx = {"bin": binary, "n": n, "next": n}
    home = tempfile.mkdtemp(prefix=f"{label}-{n}-", dir=HOMES)
    ctx["home"] = home
    ctx["dir"] = os.path.join(home, "archive", "projects")
    folder = os.path.join(ctx["dir"], "-w-a")
    os.makedirs(folder)
    ctx["transcript"] = os.path.join(folder, f"long-{n}.jsonl")
    shutil.copyfile(base_transcript(n), ctx["transcript"])
    env = env_for(home)
    try:
        for step in STEPS:
            stdin = (lambda: step.stdin(ctx)) if step.stdin else (lambda: None)
            if not step.timed:
                wall, rss = spawn(step.argv(ctx), stdin(), env)
                rows.append((label, n, step.name, [wall], rss, None))
                if "key" not in ctx:
                    ctx["key"] = session_key(ctx)
                # What the setup wrote reaches the disk now, not in the fsyncs of the
                # timed runs (on ext4 a commit waits for other files' dirty data).
                os.sync()
                continue
            log = os.path.join(home, "brain", "session-scopes", ctx["key"] + ".jsonl")
            size = os.path.getsize(log)
            walls, peak = [], 0
            for _ in range(RUNS):
                if step.before:
                    step.before(ctx)
                wall, rss = spawn(step.argv(ctx), stdin(), env)
                walls.append(wall)
                peak = max(peak, rss)
            if step.before:
                step.before(ctx)
            extra = time_rss_kb(step.argv(ctx), stdin(), env)
            rows.append((label, n, step.name, walls, peak, extra))
            if step.before is append_line:
                # Each run recorded its line's folder change: one row more per run.
                with open(log, "rb") as f:
                    f.seek(size)
                    grew = f.read().count(b"\n")
                if grew != RUNS + 1:
                    raise SystemExit(f"{label} N={n}: {RUNS + 1} Stops added {grew} rows")
            print(f"  {label} N={n:,} {step.name}: median {statistics.median(walls)*1e3:.1f} ms, "
                  f"log {os.path.getsize(log)/1e6:.0f} MB", file=sys.stderr)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main():
    if not os.path.exists(BIN):
        raise SystemExit(f"no release binary at {BIN} (cargo build --release -p transcope)")
    os.makedirs(HOMES, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    binaries = [("this build", BIN)] + ([("baseline", BASELINE)] if BASELINE else [])
    rows = []
    for n in SIZES:
        base_transcript(n)
        for label, b in binaries:
            print(f"{label}, N={n:,} …", file=sys.stderr)
            run_binary(label.replace(" ", "-"), b, n, rows)
    import resource
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    load = os.getloadavg()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.machine())
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M')} — long session (benches/long_session.py), "
             f"{os.cpu_count()} CPUs ({cpu}), load {load[0]:.2f}, homes in {HOMES}, {RUNS} runs each"
             + (f"; baseline {BASELINE}" if BASELINE else ""), "",
             f"N = folder changes in the transcript = rows in the scope log. Peak RSS: wait4's "
             f"`ru_maxrss` (largest run; this Python's own {floor/1024:.1f} MB is its floor) and "
             f"`/usr/bin/time` (one more run).", "",
             "| binary | N | step | median ms | min–max ms | peak RSS MB (wait4) | peak RSS MB (time) |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for label, n, name, walls, rss, extra in rows:
        lines.append(f"| {label} | {n:,} | {name} | {statistics.median(walls)*1e3:.1f} | "
                     f"{min(walls)*1e3:.1f}–{max(walls)*1e3:.1f} | {rss/1024:.1f} | "
                     + (f"{extra/1024:.1f} |" if extra is not None else "– |"))
    text = "\n".join(lines) + "\n"
    print(text)
    new = not os.path.exists(RESULTS)
    with open(RESULTS, "a") as f:
        if new:
            f.write("# Long sessions (benches/long_session.py)\n\n"
                    "What a step costs once a session is long: a Stop appending one line must not\n"
                    "grow with the log (issue 33, item 5).\n\n")
        f.write(text + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Scaling benchmark for the scope-log inputs that used to cost the square of their size
(issue 13, items 3 and 4), behind benches/scaling_scope.sh (see there).

Each case runs `transcope hook stop` (a fresh home per run) over a transcript built at
sizes n, 2n and 4n, and reports per size the median wall time, the median and the
least CPU time (user + system of the child, from wait4), the peak RSS of one more run
(`/usr/bin/time -v`), and the growth per doubling. Growth is judged on the least CPU
time of the runs, the one a busy machine disturbed least (the medians are shown
beside it). Linear growth is at most 2.3x per doubling; peak RSS must stay under
64 MB + the input size.
The table is printed and appended to benches/results.md.
"""
import json, os, platform, shutil, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import timed  # noqa: E402  (one way of spawning and timing a child)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(TARGET, "release", "transcope")
RUNS = int(os.environ.get("RUNS", "5"))
WORK = os.environ.get("WORK_DIR", os.path.join(ROOT, "target", "bench", "scaling"))
HOMES = os.environ.get("HOME_DIR", "/dev/shm/transcope-scaling-homes")
# BASELINE=path: an earlier build's transcope, timed once at the smallest size of each
# case (it may take minutes there: that is the point), its hook deadline lifted.
BASELINE = os.environ.get("BASELINE")
LINEAR = 2.3
RSS_SLACK_MB = 64


def claude_user(i, cwd):
    ts = "2026-10-%02dT%02d:%02d:%02dZ" % (1 + i // 86400, (i // 3600) % 24, (i // 60) % 60, i % 60)
    return json.dumps({"type": "user", "timestamp": ts, "cwd": cwd, "gitBranch": "main",
                       "sessionId": "bench", "message": {"role": "user", "content": "hello"}}) + "\n"


def alternating(path, n):
    """Issue 13's input for item 4: n Claude user lines alternating between two folders
    with increasing times (every line a transition)."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(claude_user(i, "/w/a" if i % 2 == 0 else "/w/b"))


def deep(path, n):
    """Item 3: one line whose cwd is '/' + 'e/' * n (nothing of it exists)."""
    with open(path, "w") as f:
        f.write(claude_user(0, "/" + "e/" * n))


REPO = os.path.join(WORK, "repo")


def deep_in_repo(path, n):
    """Item 3, below a work tree: the work tree first (so it is opened and cached), then a
    folder n components below it that does not exist."""
    with open(path, "w") as f:
        f.write(claude_user(0, REPO))
        f.write(claude_user(1, REPO + "/e" * n))


CASES = [
    # (name, builder, n, unit)
    ("batch: alternating folders, n transitions", alternating, 20_000, "transitions"),
    ("deep cwd, nothing exists: n components", deep, 1 << 18, "components"),
    ("deep cwd below a work tree: n components", deep_in_repo, 1 << 18, "components"),
]


def run(cmd, stdin, env):
    """(wall seconds, CPU seconds: user + system of the child) of one run."""
    wall, ru = timed(cmd, stdin, env)
    return wall, ru.ru_utime + ru.ru_stime


def peak_rss_kb(cmd, stdin, env):
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, input=stdin, capture_output=True, env=env)
    for line in p.stderr.decode().splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1])
    raise SystemExit(f"no RSS from /usr/bin/time -v: {p.stderr.decode()[-500:]}")


def measure(binary, transcript, runs, extra_env=None):
    env = {"HOME": HOMES, "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    env.update(extra_env or {})
    payload = json.dumps({"session_id": "bench", "transcript_path": transcript}).encode()
    walls, cpus, rss = [], [], None
    for i in range(runs + 1):
        home = tempfile.mkdtemp(dir=HOMES)
        cmd = [binary, "--home", home, "hook", "stop"]
        if i < runs:
            w, c = run(cmd, payload, env)
            walls.append(w)
            cpus.append(c)
        else:
            rss = peak_rss_kb(cmd, payload, env)
        shutil.rmtree(home, ignore_errors=True)
    return statistics.median(walls), statistics.median(cpus), min(cpus), rss


def main():
    if not os.path.exists(BIN):
        raise SystemExit(f"no release binary at {BIN} (run benches/scaling_scope.sh)")
    os.makedirs(WORK, exist_ok=True)
    os.makedirs(HOMES, exist_ok=True)
    if not os.path.isdir(os.path.join(REPO, ".git")):
        subprocess.run(["git", "init", "-q", REPO], check=True)
    lines = []
    load = os.getloadavg()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.machine())
    lines += [f"## {time.strftime('%Y-%m-%d %H:%M')} — scaling (benches/scaling_scope.sh), "
              f"{os.cpu_count()} CPUs ({cpu}), load {load[0]:.2f}, homes in {HOMES}, {RUNS} runs each"
              + (f"; baseline {BASELINE}" if BASELINE else ""), "",
              "| case | n | input MB | median wall ms | median / least CPU ms | × per doubling: wall, least CPU | peak RSS MB | RSS bound MB |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    worst = 0.0
    over = []
    for name, build, n, unit in CASES:
        prev = None
        for k in (1, 2, 4):
            size = n * k
            path = os.path.join(WORK, f"{build.__name__}-{size}.jsonl")
            if not os.path.exists(path):
                build(path, size)
            mb = os.path.getsize(path) / 1e6
            wall, cpu_med, cpu_min, rss = measure(BIN, path, RUNS)
            bound = RSS_SLACK_MB + mb
            growth = "–"
            if prev:
                gw, gc = wall / prev[0], cpu_min / max(prev[1], 1e-6)
                worst = max(worst, gc)
                growth = f"{gw:.2f}, **{gc:.2f}**"
            if rss / 1024 > bound:
                over.append(f"{name} at {size}")
            lines.append(f"| {name} | {size:,} {unit} | {mb:.1f} | {wall*1e3:.1f} | {cpu_med*1e3:.1f} / {cpu_min*1e3:.1f} | "
                         f"{growth} | {rss/1024:.1f} | {bound:.0f} |")
            prev = (wall, cpu_min)
            print(lines[-1], flush=True)
        if BASELINE:
            path = os.path.join(WORK, f"{build.__name__}-{n}.jsonl")
            wall, cpu_med, _, rss = measure(BASELINE, path, 1, {"TRANSCOPE_HOOK_DEADLINE_SECS": "3600"})
            lines.append(f"| {name} [baseline] | {n:,} {unit} | {os.path.getsize(path)/1e6:.1f} | "
                         f"{wall*1e3:.1f} | {cpu_med*1e3:.1f} | – | {rss/1024:.1f} | – |")
            print(lines[-1], flush=True)
    lines += ["", f"Largest growth of the least CPU time per doubling: {worst:.2f}× (linear: ≤ {LINEAR}×); "
              + ("every peak RSS under 64 MB + input." if not over else f"over the RSS bound: {', '.join(over)}."), ""]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(ROOT, "benches", "results.md"), "a") as fh:
        fh.write(text + "\n")
    if worst > LINEAR or over:
        sys.exit(1)


if __name__ == "__main__":
    main()

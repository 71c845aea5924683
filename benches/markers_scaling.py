#!/usr/bin/env python3
"""The whole-CLI scaling bench behind benches/markers_scaling.sh (see there).

For each input of issue 13 that cost the square of its size (items 1 and 2), writes
the issue's one-line Claude transcript at sizes n, 2n, 4n (4n is the issue's size) and
on to 32n, runs `transcope markers FILE` on each (median of RUNS, the child spawned
directly as bench.py does: wall time, and the CPU time, user + system, of its rusage)
takes its peak RSS from `/usr/bin/time -v` and, when valgrind is installed, the
instructions it executes (callgrind: the same on a loaded machine as on a quiet one).
Checks that the instructions (the CPU time without valgrind) grow at most 2.3x per
doubling (wall and CPU time on this shared 2-core VM follow the other sessions' load;
they are recorded beside them) and that the peak RSS stays under 64 MB + the input's
size, prints a table and appends it to benches/results.md. IR=0 skips callgrind.
"""
import json, os, platform, shutil, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ beside bench.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (BIN and ROOT, as bench.sh builds them)

RUNS = int(os.environ.get("RUNS", "11"))
MAX_RATIO = 2.3
RSS_BUDGET = 64 * 1024 * 1024


def many_types(n):
    """Item 1: n opening tags of distinct TYPEs, then their closing tags."""
    return "".join(f"<!--@t{i} x=" for i in range(n)) + " " + "".join(f"<!--@/t{i}-->" for i in range(n))


def attr_rescan(w):
    """Item 2: a value-less `name=` after w word characters."""
    return '<!-- @lesson a="x b=y"' + "w" * w + "= c=d -->c<!-- @/lesson -->"


LESSON = {"type": "lesson", "attrs": {"a": "x b=y", "c": "d"}, "content": "c", "at": "2026-01-01T00:00:00Z"}
CASES = [
    # (label, text maker, n, markers expected)
    ("many types closed later (item 1), TYPEs", many_types, 4_000, []),
    ("attribute re-scan (item 2), word characters", attr_rescan, 100_000, [LESSON]),
]
DOUBLINGS = 6  # n .. 32n


def transcript(text):
    return json.dumps({"type": "assistant", "timestamp": "2026-01-01T00:00:00Z",
                       "message": {"content": [{"type": "text", "text": text}]}}) + "\n"


def run(cmd):
    """Wall and CPU seconds of one run, spawned directly and reaped with wait4."""
    with open(os.devnull, "wb") as null:
        actions = [(os.POSIX_SPAWN_DUP2, null.fileno(), 1), (os.POSIX_SPAWN_DUP2, null.fileno(), 2)]
        t = time.perf_counter()
        pid = os.posix_spawn(shutil.which(cmd[0]) or cmd[0], cmd, os.environ, file_actions=actions)
        _, status, ru = os.wait4(pid, 0)
        wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}")
    return wall, ru.ru_utime + ru.ru_stime


def median(xs):
    return sorted(xs)[len(xs) // 2]


def instructions(cmd):
    """Instructions of one run under callgrind (None without valgrind, or with IR=0)."""
    if os.environ.get("IR") == "0" or not shutil.which("valgrind"):
        return None
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                       capture_output=True, text=True)
    for line in p.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1])
    raise SystemExit(f"no instruction count from callgrind: {p.stderr[-500:]}")


def peak_rss_kb(cmd):
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    for line in p.stderr.splitlines():
        if "Maximum resident set size" in line:
            return int(line.rsplit(":", 1)[1])
    raise SystemExit(f"no peak RSS from /usr/bin/time -v: {p.stderr}")


def main():
    rows, ok = [], True
    with tempfile.TemporaryDirectory() as d:
        for label, make, n0, expected in CASES:
            prev = (None, None, None)
            for k in range(DOUBLINGS):
                n = n0 << k
                path = os.path.join(d, f"{make.__name__}-{n}.jsonl")
                with open(path, "w") as f:
                    f.write(transcript(make(n)))
                size = os.path.getsize(path)
                cmd = [bench.BIN, "markers", path]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                found = [json.loads(line) for line in out.splitlines()]
                if found != expected:
                    raise SystemExit(f"{label} {n}: wrong markers {found[:2]}")
                walls, cpus = zip(*(run(cmd) for _ in range(RUNS)))
                wall, cpu = median(walls), median(cpus)
                rss = peak_rss_kb(cmd)
                ir = instructions(cmd)
                over = lambda x, before: x / before if before else None  # noqa: E731
                ratios = (over(wall, prev[0]), over(cpu, prev[1]), over(ir, prev[2]))
                # The work's growth: instructions when counted (exact), else CPU time.
                growth = ratios[2] if ir is not None else ratios[1]
                good = (growth is None or growth <= MAX_RATIO) and rss * 1024 <= RSS_BUDGET + size
                ok &= good
                rows.append((label, n, size, wall, cpu, ir, ratios, rss, good))
                prev = (wall, cpu, ir)
    load = os.getloadavg()
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
                 platform.machine())
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M')} — marker scaling (issue 13), `transcope markers`, "
             f"{os.cpu_count()} CPUs ({model}), load {load[0]:.2f}, median of {RUNS}", "",
             "| input | n | file KB | wall ms | × previous | CPU ms | × previous | instructions M | × previous "
             "| peak RSS MB | RSS budget MB | ok |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    x = lambda r: f"{r:.2f}" if r else "–"  # noqa: E731
    for label, n, size, wall, cpu, ir, (rw, rc, ri), rss, good in rows:
        irm = f"{ir / 1e6:.1f}" if ir else "–"
        lines.append(f"| {label} | {n:,} | {size / 1024:.0f} | {wall * 1e3:.2f} | {x(rw)} | {cpu * 1e3:.1f} | {x(rc)} | "
                     f"{irm} | {x(ri)} | {rss / 1024:.1f} | {(RSS_BUDGET + size) / 1024 / 1024:.1f} | "
                     f"{'yes' if good else 'NO'} |")
    lines += ["", f"Linear growth: instructions (callgrind; CPU time without it) at most {MAX_RATIO}× a "
              f"doubling (a run has ≈ 1 M instructions of start-up); peak RSS at most 64 MB + the file "
              f"(`/usr/bin/time -v`, Maximum resident set size). {'All met.' if ok else 'NOT MET.'}", ""]
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(bench.ROOT, "benches", "results.md"), "a") as fh:
        fh.write(text + "\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
